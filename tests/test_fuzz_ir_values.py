"""Fuzzing the values in IR and assembly text that drive time and memory: use-before-def
mutations of real kernels, huge literals, huge shift counts and deep expressions.

Whatever the input, only `AsterismError` may escape (the CLI: exit 1, `error:`, no traceback,
no output file); a use-before-def mutation is always refused before any pass runs; assembly
expressions agree with llvm-mc-22. Derandomized by default (CI sees the same inputs);
ASTERISM_FUZZ_EXAMPLES=N runs N inputs per test with fresh ones (see test_fuzz_inputs);
tools/fuzz_campaign.py records the time and memory of every input.
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_inputs import ASM_SEEDS, IR_SEEDS, _expect_clean, _run_cli, fuzz_settings

from asterism import api
from asterism.errors import AsterismError, VerifyError
from asterism.frontend.parse import is_upstream_text, parse_upstream
from asterism.ir import parse_ir, print_ir
from asterism.mc.asm_syntax import INT64_MAX, INT64_MIN, eval_int

REPO = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------------------- seeds


def _verified_ir_seeds() -> list[str]:
    """The IR seeds (and the upstream inputs, with scf.for regions) that verify as they are
    (mutations then break exactly one thing)."""
    out = []
    upstream = [p.read_text() for p in sorted((REPO / "tests" / "upstream").glob("*.mlir"))]
    for text in IR_SEEDS + upstream:
        try:
            api.parse(text)
        except AsterismError:
            continue
        out.append(text)
    return out


IR_OK = _verified_ir_seeds()
HUGE_DIGITS = [19, 20, 21, 39, 64, 129, 4300, 4301, 5000, 100_000]
SHIFTS = ["0", "1", "31", "63", "64", "65", "-1", "127", "2147483648", "2000000000",
          "18446744073709551616"]
EDGE_VALUES = ["0", "1", "-1", "2", "63", "64", "0x7fffffffffffffff", "0x8000000000000000",
               "0xffffffffffffffff", "9223372036854775807", "18446744073709551615", "017",
               "0b1010"]
OPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"]


# ----------------------------------------------------------------------------- use before def


_PARSED: dict[str, object] = {}


def _parsed(text: str):
    """The module of a seed (parsed once: each mutation works on a clone)."""
    if text not in _PARSED:
        _PARSED[text] = (parse_upstream(text, "seed.mlir") if is_upstream_text(text)
                         else parse_ir(text, "seed.mlir"))
    return _PARSED[text]


@st.composite
def use_before_def(draw) -> tuple[str, bool]:
    """(IR text, same_block): a verified seed with one operand replaced by a value of the same
    type that its block defines later (or the op's own result; `same_block`), or that is
    defined after it elsewhere (a later block, a nested region, the op's own region)."""
    text = draw(st.sampled_from(IR_OK))
    module = _parsed(text).clone()
    ops = [op for op in module.walk() if op.operands and op.parent is not None]
    op = draw(st.sampled_from(ops))
    k = draw(st.integers(0, len(op.operands) - 1))
    block = op.parent
    later, other = [], []
    found = False
    for o in module.walk():  # (an op before the ops of its regions)
        found = found or o is op
        if found:
            for r in o.results:
                if r.type == op.operands[k].type:
                    (later if o.parent is block else other).append(r)
    same = bool(later) and (not other or draw(st.booleans()))
    pool = later if same else other
    if not pool:
        return text, False  # nothing of that type after it: the seed as it is
    value = draw(st.sampled_from(pool))
    operands = list(op.operands)
    operands[k] = value
    op.operands = operands
    return print_ir(module), same


@fuzz_settings(60)
@given(use_before_def())
def test_use_before_def_is_refused_before_any_pass(case):
    text, same_block = case
    err = _expect_clean(api.parse, text)
    if same_block:
        assert isinstance(err, VerifyError), err
        assert "is used before it is defined" in err.message
    # Every path verifies before its passes: the same error, and never a hang.
    for run in (lambda: api.compile(text, "auto"), lambda: api.optimize(text, "dce")):
        again = _expect_clean(run)
        if err is not None:
            assert again is not None and again.message == err.message


@fuzz_settings(10)
@given(use_before_def())
def test_use_before_def_cli(tmp_path, capsys, case):
    text, _ = case
    src, out = tmp_path / "k.mlir", tmp_path / "k.hsaco"
    src.write_text(text)
    _run_cli(["compile", str(src), "--pipeline", "auto", "-o", str(out)], capsys, out)
    _run_cli(["opt", str(src), "--pipeline", "dce", "-o", str(tmp_path / "o.mlir")], capsys,
             tmp_path / "o.mlir")


# ----------------------------------------------------------------------------- huge literals

_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+")


@st.composite
def huge_number(draw) -> str:
    """A decimal or hex literal of many digits, or a shift (assembly reads it)."""
    n = draw(st.sampled_from(HUGE_DIGITS))
    kind = draw(st.sampled_from(["dec", "hex", "neg", "shift"]))
    if kind == "dec":
        return "9" * n
    if kind == "hex":
        return "0x" + "f" * n
    if kind == "neg":
        return "-" + "1" * n
    return f"1<<{draw(st.sampled_from(SHIFTS))}"


@st.composite
def with_huge_numbers(draw, seeds: list[str]) -> str:
    """A seed with 1-3 of its numbers replaced by huge ones."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        spans = [m.span() for m in _NUMBER_RE.finditer(text)]
        if not spans:
            break
        i, j = draw(st.sampled_from(spans))
        text = text[:i] + draw(huge_number()) + text[j:]
    return text


@fuzz_settings(60)
@given(with_huge_numbers(IR_SEEDS))
def test_ir_huge_literals(text):
    err = _expect_clean(api.parse, text)
    if err is None:
        _expect_clean(api.compile, text, "auto")


@fuzz_settings(60)
@given(with_huge_numbers(ASM_SEEDS))
def test_asm_huge_literals(text):
    _expect_clean(api.assemble, text)


@fuzz_settings(10)
@given(with_huge_numbers(ASM_SEEDS))
def test_asm_huge_literals_cli(tmp_path, capsys, text):
    src, out = tmp_path / "k.s", tmp_path / "k.hsaco"
    src.write_text(text)
    _run_cli(["asm", str(src), "-o", str(out)], capsys, out)


# ----------------------------------------------------------------------------- expressions


@st.composite
def expression(draw, depth: int = 0) -> str:
    """An assembly expression over edge values, huge shifts and `.set` symbols."""
    if depth >= 4 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(EDGE_VALUES + ["a", "b"]))
    kind = draw(st.sampled_from(["binary", "binary", "shift", "unary", "paren", "deep"]))
    if kind == "shift":
        return f"{draw(expression(depth + 1))}{draw(st.sampled_from(['<<', '>>']))}" \
               f"{draw(st.sampled_from(SHIFTS))}"
    if kind == "unary":
        return draw(st.sampled_from(["-", "~", "+"])) + draw(expression(depth + 1))
    if kind == "paren":
        return f"({draw(expression(depth + 1))})"
    if kind == "deep":
        n = draw(st.sampled_from([10, 64, 65, 200, 10_000]))
        return "(" * n + draw(expression(depth + 1)) + ")" * n
    return (f"{draw(expression(depth + 1))} {draw(st.sampled_from(OPS))} "
            f"{draw(expression(depth + 1))}")


@fuzz_settings(200)
@given(expression(), expression())
def test_expressions_stay_64_bit_or_fail_located(a, b):
    symbols = {}
    for name, text in (("a", a), ("b", b)):
        try:
            value = eval_int(text, symbols)
        except AsterismError as err:
            assert err.message
            continue
        assert value is None or INT64_MIN <= value <= INT64_MAX, (text, value)
        if value is not None:
            symbols[name] = value


_SETS = [".set a, {a}\ns_mov_b32 s0, a\n", ".set a, {a}\n.set b, a*a\n.long b\n",
         "s_mov_b64 s[0:1], {a}\n", "s_waitcnt vmcnt({a})\n", "s_nop {a}\n",
         "v_add_u32 v0, lit({a}), v1\n", ".set a, {a}\n.set b, {b}\ns_movk_i32 s0, a+b\n"]


@fuzz_settings(80)
@given(st.sampled_from(_SETS), expression(), expression())
def test_asm_expressions_through_the_assembler(template, a, b):
    text = ('.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.text\n'
            + template.format(a=a, b=b))
    err = _expect_clean(api.assemble, text, filename="k.s")
    if err is not None:
        assert err.location is not None and err.location.file == "k.s", err


def _defined_expression(rng: random.Random, depth: int = 0) -> str:
    """An expression whose value LLVM defines: shift counts 0..63, no division by zero."""
    if depth >= 3 or rng.random() < 0.3:
        return rng.choice(EDGE_VALUES[:-2] + [str(rng.randint(-10**6, 10**6))])
    op = rng.choice(OPS)
    a = _defined_expression(rng, depth + 1)
    if op in ("<<", ">>"):
        return f"({a}){op}{rng.randint(0, 63)}"
    b = _defined_expression(rng, depth + 1)
    if op in ("/", "%"):
        b = f"((({b})&255)|1)"  # 1..255: never zero, never -1 (LLVM crashes on MIN/-1)
    return f"({a}) {op} ({b})"


def test_random_expressions_match_llvm_mc(llvm_mc, tmp_path):
    rng = random.Random(7)
    exprs = [_defined_expression(rng) for _ in range(300)]
    src = tmp_path / "e.s"
    src.write_text("".join(f".set e{k}, {e}\n.quad e{k}\n" for k, e in enumerate(exprs)))
    out = subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", str(src)],
                         capture_output=True, text=True)
    quads = re.findall(r"\.quad\s+(\S+)", out.stdout)
    assert len(quads) == len(exprs), out.stderr[:2000]
    mismatches = [(e, q, eval_int(e)) for e, q in zip(exprs, quads)
                  if q.lstrip("-").isdigit() and int(q) != eval_int(e)]
    assert not mismatches, mismatches[:5]
    assert sum(q.lstrip("-").isdigit() for q in quads) > 250  # (most fold to a number)

