"""The fast path of the IR text parser (ir.text_fast) against xDSL's parser (the reference):
the same module (ops, values, names, locations) from every input, or the same error at the
same file:line:col."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from ir_samples import module_text, per_family, sample

from asterism.errors import AsterismError
from asterism.ir import text as ir_text
from asterism.ir.ops import op_location, value_name, walk_ops
from asterism.ir.raising import raise_kernel
from asterism.ir.text import parse_text, print_ir

REPO = Path(__file__).resolve().parent.parent
GEMM = REPO / "tests" / "data" / "shared" / "codeobjects" / \
    "aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co"


def _describe(module) -> tuple:
    """Everything the parser decides: the generic text (ops, types, attributes, block names)
    and per op its location and the spelled names of its results and operands."""
    per_op = []
    for op in walk_ops(module):
        per_op.append((op.name, op_location(op), tuple(value_name(r) for r in op.results),
                       tuple(value_name(v) for v in op.operands),
                       tuple(r.name_hint for r in op.results)))
    return print_ir(module, generic=True), tuple(per_op)


def _outcome(text: str, fast: bool, monkeypatch) -> tuple:
    """(module description) or (error class, message, location) of parsing `text`."""
    monkeypatch.setattr(ir_text, "FAST_PATH", fast)
    try:
        return ("ok", _describe(parse_text(text, "t.mlir")))
    except AsterismError as err:
        return ("error", type(err).__name__, err.message, err.location)


def _same(text: str, monkeypatch) -> tuple:
    slow = _outcome(text, False, monkeypatch)
    fast = _outcome(text, True, monkeypatch)
    assert fast == slow, text
    return fast


def _fast_ops(text: str, monkeypatch) -> int:
    """How many ops the fast path reads in `text` (so a test can tell it was used)."""
    monkeypatch.setattr(ir_text, "FAST_PATH", True)
    count = 0
    original = ir_text.FastOps.read

    def counting(self, start):
        nonlocal count
        op = original(self, start)
        count += op is not None
        return op

    monkeypatch.setattr(ir_text.FastOps, "read", counting)
    try:
        parse_text(text, "t.mlir")
    except AsterismError:
        pass
    monkeypatch.setattr(ir_text.FastOps, "read", original)
    return count


@pytest.fixture(scope="module")
def raised_gemm() -> str:
    """A raised AITER kernel (fixed registers), as `asterism raise` prints it."""
    return print_ir(raise_kernel(GEMM))


def _lit_cases() -> list[tuple[str, str]]:
    cases = []
    for path in sorted((REPO / "tests" / "lit").glob("*.mlir")):
        for k, chunk in enumerate(path.read_text().split("// -----")):
            cases.append((f"{path.name}#{k}", chunk))
    return cases


@pytest.mark.parametrize("name,text", _lit_cases(), ids=[n for n, _ in _lit_cases()])
def test_lit_inputs_read_alike(name, text, monkeypatch):
    """Every lit input (valid and invalid) parses to the same module or the same error."""
    _same(text, monkeypatch)


def test_raised_kernel_reads_alike_and_fast(raised_gemm, monkeypatch):
    """A raised AITER kernel: the same module, and nearly every op read by the fast path."""
    _same(raised_gemm, monkeypatch)
    ops = raised_gemm.count(" = amdgcn.") + raised_gemm.count("    amdgcn.sopp")
    assert _fast_ops(raised_gemm, monkeypatch) > 0.9 * ops


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_every_family_reads_alike(target, monkeypatch):
    """One instance of forms of every encoding (operands, modifiers, tokens)."""
    samples = [s for k, f in enumerate(per_family(target, 3)) if (s := sample(f, f"x{k}"))]
    text = module_text(target, samples)
    _same(text, monkeypatch)
    assert _fast_ops(text, monkeypatch) > len(samples)


# Edits that keep a line's shape or break it in the ways the fast path must recognise:
# spacing, names used before their definition or with another type, missing or extra
# pieces, things xDSL reads after an op (attributes, loc, modifiers on the next line).
_EDITS = [
    lambda s, r: s.replace(" ", "  ", 1),
    lambda s, r: s.replace(", ", ",", 1),
    lambda s, r: s.replace(" : ", " :", 1),
    lambda s, r: s.replace("%", "%u", 1),
    lambda s, r: s.replace("%", "%12", 1),
    lambda s, r: re.sub(r"<(\d+)>", lambda m: f"<{int(m.group(1)) + 1}>", s, count=1),
    lambda s, r: s.replace("i32", "i64", 1),
    lambda s, r: s.replace("i32", "si32", 1),
    lambda s, r: s.replace("-> ", "-> (", 1) + ")" if "-> (" not in s else s,
    lambda s, r: s.rstrip() + " {foo = 1 : i64}",
    lambda s, r: s.rstrip() + ' loc("x.mlir":1:2)',
    lambda s, r: s.rstrip() + "\n    clamp",
    lambda s, r: s.rstrip() + "\n    : ",
    lambda s, r: s.rstrip() + " // a comment",
    lambda s, r: s.replace(" : (", " offset = 4 : (", 1),
    lambda s, r: s.replace(" : (", " offset = 99999999999999 : (", 1),
    lambda s, r: s.replace(" : (", " offset = -0x10 : (", 1),
    lambda s, r: s.replace(" : (", " nosuchmod : (", 1),
    lambda s, r: s.replace(" : (", " offset : (", 1),
    lambda s, r: s.replace(" : (", " clamp clamp : (", 1),
    lambda s, r: s.replace(" : (", " op_sel = [1, true] : (", 1),
    lambda s, r: s.replace(" : (", " dst_sel = WORD_1 : (", 1),
    lambda s, r: s.replace(" : (", ' dst_sel = "x" : (', 1),
    lambda s, r: s.replace(" = ", ", %extra = ", 1),
    lambda s, r: s.replace("0 : i32", "-0 : f32", 1),
    lambda s, r: s.replace("0 : i32", "1.5 : i32", 1),
    lambda s, r: s.replace("0 : i32", "4294967296 : i32", 1),
    lambda s, r: s.replace("amdgcn.literal 0x", "amdgcn.literal 0x1ffffffff", 1),
    lambda s, r: s.replace("\n", "\t\n", 1),
    lambda s, r: s.replace(" : (", " clamp = true : (", 1),
    lambda s, r: s.replace(" : (", " offset = false : (", 1),
    lambda s, r: s + "\n    %fz = arith.constant -0 : f32",
    lambda s, r: s + "\n    %fz = arith.constant 7 : si32",
    lambda s, r: s + "\n    %fz = amdgcn.literal 0x1ffffffff",
    lambda s, r: s + "\n    %fz = arith.constant -0.0 : f16",
    lambda s, r: s + "\n    %fz = arith.constant 1.000000e+00 : bf16",
    lambda s, r: s + "\n    %fz = arith.constant 0x3f : f32",
    lambda s, r: s + "\n    %fz = arith.constant 7 : i1",
    lambda s, r: s + "\n    %fz = arith.constant -7 : index",
    lambda s, r: s + "\n    %fz, %fy = amdgcn.alloca : !amdgcn.vgpr<1>",
    lambda s, r: s + "\n    %fz = amdgcn.literal 0x00000001",
    lambda s, r: s + "\n    %fz = amdgcn.literal true",
    lambda s, r: s + "\n    %fz = amdgcn.alloca : !amdgcn.vgpr<[? + 4], align 4>",
    lambda s, r: s + "\n    %fz = amdgcn.alloca : !amdgcn.vgpr<[4:4]>",
    lambda s, r: s + "\n    %fz = amdgcn.alloca : !amdgcn.vgpr",
    lambda s, r: s + "\n    %fz = amdgcn.alloca : i2000000000",
    lambda s, r: s[:r.randrange(len(s) + 1)] + s[r.randrange(len(s) + 1):],
    lambda s, r: (lambda k: s[:k] + r.choice("%^:,()<>[]{}= x0!-\"") + s[k:])(
        r.randrange(len(s) + 1)),
]


@pytest.mark.parametrize("after", [
    "clamp", "{foo = 1 : i64}", ": () -> ()", 'loc("x.mlir":3:4)', "// note\n    clamp",
    "amdgcn.sopp s_nop %c", "^bb1:", "%v = amdgcn.alloca : !amdgcn.vgpr<1>", "offset = 4"])
@pytest.mark.parametrize("line", [
    "amdgcn.sopp s_waitcnt lgkmcnt = 0", "amdgcn.sopp s_barrier",
    "%c = arith.constant 0 : i32", "%l = amdgcn.literal 0x10",
    "%a = amdgcn.alloca : !amdgcn.vgpr<2>",
    "%b = amdgcn.vop1 v_mov_b32_e32 %a, %c : (!amdgcn.vgpr<2>, i32) -> !amdgcn.vgpr<2>"])
def test_op_continued_on_the_next_line_reads_alike(line, after, monkeypatch):
    """What follows a line can belong to its op (a modifier, attributes, types, a location on
    the next line): the fast path leaves such ops to xDSL."""
    text = ('amdgcn.module @m target = "gfx942" {\n  amdgcn.kernel @k args() '
            "workgroup_size(64, 1, 1) {\n    %a = amdgcn.alloca : !amdgcn.vgpr<2>\n"
            f"    %c = arith.constant 0 : i32\n    {line}\n    {after}\n"
            "    amdgcn.sopp s_endpgm\n  }\n}\n")
    _same(text.replace(f"    {line}\n", f"    {line}\n", 1), monkeypatch)


@pytest.mark.parametrize("alias", ["!v = !amdgcn.vgpr<1>", "!amdgcn.vgpr = i32",
                                   "!i32 = !amdgcn.vgpr<1>", "#a = 1 : i32"])
def test_aliases_read_alike(alias, monkeypatch):
    """Type and attribute aliases (which may stand for any type text)."""
    text = (f'{alias}\namdgcn.module @m target = "gfx942" {{\n  amdgcn.kernel @k args() '
            "workgroup_size(64, 1, 1) {\n    %a = amdgcn.alloca : !amdgcn.vgpr<1>\n"
            "    %v = amdgcn.alloca : !v\n    %c = arith.constant 0 : i32\n"
            "    %b = amdgcn.vop1 v_mov_b32_e32 %a, %c : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr\n"
            "    amdgcn.sopp s_endpgm\n  }\n}\n")
    _same(text, monkeypatch)
    _same(text.replace("%v = amdgcn.alloca : !v\n", ""), monkeypatch)


_USE = re.compile(r"amdgcn\.\w+ \S+ (%[^ ,]+(?:, %[^ ,]+)*)[^:]* : \(([^()]*)\)")
_DEF = re.compile(r"(%[^ ,]+)(?=[^=]* = )")


def _window(lines: list[str], start: int, size: int) -> list[str]:
    """`size` body lines from `start`, each value they use but do not define first declared
    by an amdgcn.alloca of its type in front of them (unverified text: any type will do)."""
    window = lines[start:start + size]
    defined: set[str] = set()
    declared: dict[str, str] = {}
    for line in window:
        m = _USE.search(line)
        if m is not None:
            for name, t in zip(m.group(1).split(", "), m.group(2).split(", ")):
                if name not in defined and name not in declared:
                    declared[name] = t
        defined.update(_DEF.findall(line.split(" = ")[0] + " = ") if " = " in line else [])
    return [f"    {n} = amdgcn.alloca : {t}" for n, t in declared.items()] + window


def test_edited_lines_read_alike(raised_gemm, monkeypatch):
    """Hundreds of edited lines of a raised kernel: each gives the same module or the same
    located error either way (one line of the text edited in the middle of a window of it)."""
    rng = random.Random(7)
    lines = raised_gemm.split("\n")
    # (without the raised kernel's metadata attributes, which xDSL reads slowly)
    header = ['amdgcn.module @m target = "gfx942" {',
              "  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {"]
    body = [k for k, line in enumerate(lines) if line.startswith("    %s") and "alloca" not in
            line or line.startswith("    amdgcn.sopp")]
    used = 0
    for _ in range(200):
        window = _window(lines, rng.choice(body) - 10, 20)
        k = len(window) - 10
        window[k] = rng.choice(_EDITS)(window[k], rng)
        text = "\n".join([*header, *window]) + "\n    amdgcn.sopp s_endpgm\n  }\n}\n"
        used += _same(text, monkeypatch)[0] == "ok"
    assert 20 < used < 200  # (both valid and invalid texts were compared)
