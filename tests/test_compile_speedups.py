"""The compile and raise speed-ups (issue 25) must not change answers or leak state.

* the `asterism` process leaves a parsed or raised module out of the collector's scans
  (gc.freeze), but a caller's in-process `main([...])` never freezes anything;
* the CLI verbs that hand a module to asterism.api verify it once, and still report a rule
  broken by the input at its line.
"""

from __future__ import annotations

import gc
from pathlib import Path

from asterism import api
from asterism.cli import main
from asterism.ir import print_ir

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tests" / "data" / "shared" / "codeobjects" / \
    "aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co"


def test_in_process_main_freezes_nothing(tmp_path):
    raised = tmp_path / "k.mlir"
    before = gc.get_freeze_count()
    assert main(["raise", str(SAMPLE), "-o", str(raised)]) == 0
    assert main(["compile", str(raised), "-o", str(tmp_path / "k.co")]) == 0
    assert main(["translate", str(raised), "-o", str(tmp_path / "k.s")]) == 0
    assert gc.get_freeze_count() == before
    assert gc.isenabled()
    assert (tmp_path / "k.co").read_bytes() == api.compile(api.raise_kernel(SAMPLE))


def test_compile_reports_a_broken_rule_at_its_line(tmp_path, capsys):
    text = print_ir(api.raise_kernel(SAMPLE))
    lines = text.split("\n")
    # an instruction that does not exist on the target, far into the kernel
    k = next(i for i, line in enumerate(lines) if "amdgcn.vop2 v_add_u32_e32" in line)
    lines[k] = lines[k].replace("v_add_u32_e32", "v_add_u32_e99", 1)
    bad = tmp_path / "bad.mlir"
    bad.write_text("\n".join(lines))
    out = tmp_path / "bad.co"
    assert main(["compile", str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:{k + 1}:"), err
    assert "v_add_u32_e99" in err
    assert not out.exists()


def _printed_both_ways(module, monkeypatch) -> tuple[str, str]:
    """print_ir of `module` with the one-string instruction lines and with the printer's
    own piece-by-piece calls (the reference), each from a cold signature cache."""
    from asterism.ir import ops

    out = []
    for line_fn in (ops._instruction_line, lambda *a: None):
        monkeypatch.setattr(ops, "_instruction_line", line_fn)
        monkeypatch.setattr(ops, "_SIGNATURES", {})
        monkeypatch.setattr(ops, "_SIGNATURES_BY_ID", {})
        out.append(print_ir(module))
    return out[0], out[1]


def _lit_modules():
    from asterism.errors import AsterismError
    from asterism.ir.text import parse_text

    for path in sorted((REPO / "tests" / "lit").glob("*.mlir")):
        for chunk in path.read_text().split("// -----"):
            try:
                yield parse_text(chunk, path.name)
            except AsterismError:
                continue


def test_instruction_lines_print_as_the_printer_does(monkeypatch):
    """Raised kernels (both targets, hidden-bits attributes), every lit input, and ops whose
    modifiers or operands need the printer itself print the same text both ways."""
    from ir_samples import module_text, per_family, sample
    from xdsl.dialects.builtin import StringAttr

    from asterism.ir.text import parse_text

    modules = [api.raise_kernel(SAMPLE), api.raise_kernel(
        REPO / "tests" / "data" / "shared" / "codeobjects" /
        "aiter_gfx950_fmha_fwd_hd128_bf16_causal.co"), *_lit_modules()]
    for target in ("gfx942", "gfx950"):
        samples = [s for k, f in enumerate(per_family(target, 3)) if (s := sample(f, f"x{k}"))]
        modules.append(parse_text(module_text(target, samples), "families.mlir"))
    # the printer's own path: an attribute, a modifier written as an identifier, an operand
    # the printer has not named yet (used in the block before its definition)
    odd = parse_text(ODD, "odd.mlir")
    from asterism.ir.ops import InstructionOp, walk_ops

    inst = [op for op in walk_ops(odd) if isinstance(op, InstructionOp)]
    inst[0].attributes["note"] = StringAttr("kept")
    modules.append(odd)
    for module in modules:
        fast, reference = _printed_both_ways(module, monkeypatch)
        assert fast == reference
    assert 'note = "kept"' in fast and "dst_sel = WORD_1" in fast and "%late, %v" in fast


ODD = """\
amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %v = amdgcn.alloca : !amdgcn.vgpr<4>
    %w = amdgcn.alloca : !amdgcn.vgpr<5>
    %a = amdgcn.vop1 v_mov_b32_e32 %w, %v : (!amdgcn.vgpr<5>, !amdgcn.vgpr<4>) -> !amdgcn.vgpr<5>
    %b = amdgcn.sdwa v_mov_b32_sdwa %w, %v dst_sel = WORD_1 : (!amdgcn.vgpr<5>, !amdgcn.vgpr<4>) -> !amdgcn.vgpr<5>
    amdgcn.branch s_branch ^next
  ^use:
    %c = amdgcn.vop2 v_add_u32_e32 %w, %late, %v : (!amdgcn.vgpr<5>, !amdgcn.vgpr<6>, !amdgcn.vgpr<4>) -> !amdgcn.vgpr<5>
    amdgcn.sopp s_endpgm
  ^next:
    %late = amdgcn.alloca : !amdgcn.vgpr<6>
    amdgcn.branch s_branch ^use
  }
}
"""


def test_parsed_locations_are_the_constructors_own():
    """The fast path's locations (fields set directly) equal, hash and print as
    FileLineColLoc(...) made by its constructor, and a parsed module's ops carry them."""
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

    from asterism.ir import text_fast
    from asterism.ir.text import parse_text

    assert text_fast._file_line_col is text_fast._made_directly
    name = StringAttr("k.mlir")
    for line, col in [(1, 1), (7, 5), (123456, 80)]:
        made = text_fast._file_line_col(name, line, IntAttr(col))
        reference = FileLineColLoc(name, IntAttr(line), IntAttr(col))
        assert made == reference and hash(made) == hash(reference)
        assert str(made) == str(reference)
    module = parse_text(ODD, "odd.mlir")
    alloca = next(op for op in module.walk() if op.name == "amdgcn.alloca")
    assert alloca.location == FileLineColLoc(StringAttr("odd.mlir"), IntAttr(3), IntAttr(5))


def test_the_structural_short_cut_for_values_only_accepts_what_xdsl_accepts():
    """arith.constant and amdgcn.literal skip xDSL's generic checks only when they would
    pass: every variant below is either taken and accepted by xDSL, or left to xDSL."""
    import pytest
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import (
        FloatAttr,
        IndexType,
        IntegerAttr,
        IntegerType,
        Signedness,
        StringAttr,
        f16,
        f32,
        i1,
        i32,
        i64,
    )
    from xdsl.ir import Block
    from xdsl.utils.exceptions import VerifyException

    from asterism.ir import verify as ir_verify
    from asterism.ir.ops import EndKernelOp, LiteralOp
    from asterism.ir.types import VGPRType

    assert set(ir_verify._VALUE_OPS) == {arith.ConstantOp, LiteralOp}
    good = [arith.ConstantOp(IntegerAttr(7, i32)), arith.ConstantOp(IntegerAttr(1, i1)),
            arith.ConstantOp(IntegerAttr(-3, i64)), arith.ConstantOp(FloatAttr(0.5, f16)),
            arith.ConstantOp(FloatAttr(-0.0, f32)), LiteralOp(0xFFFFFFFF), LiteralOp(0)]
    bad = [arith.ConstantOp(IntegerAttr(7, i64), i32),
           arith.ConstantOp(FloatAttr(0.5, f32), f16),
           arith.ConstantOp(IntegerAttr(7, IntegerType(32, Signedness.UNSIGNED))),
           arith.ConstantOp(IntegerAttr(7, i32), VGPRType.fixed(1))]
    index = arith.ConstantOp(IntegerAttr(7, IndexType()))  # (xDSL's: left to it)
    extra_attr = arith.ConstantOp(IntegerAttr(7, i32))
    extra_attr.attributes["note"] = StringAttr("x")
    extra_prop = LiteralOp(5)
    extra_prop.properties["stray"] = StringAttr("x")
    literal_f32 = LiteralOp(5)
    literal_f32.results[0]._type = f32
    bad.append(literal_f32)
    for op in [*good, *bad, index, extra_attr, extra_prop]:
        Block([op, EndKernelOp()])
        taken = ir_verify._passes_xdsl_checks(op)
        if taken:
            op.verify(verify_nested_ops=False)  # must not raise
        if op in good:
            assert taken, op
    for op in bad:
        assert not ir_verify._passes_xdsl_checks(op)
        with pytest.raises(VerifyException):
            op.verify(verify_nested_ops=False)
    last = arith.ConstantOp(IntegerAttr(7, i32))
    Block([last])  # the last op of its block: the terminator rule is xDSL's
    assert not ir_verify._passes_xdsl_checks(last)


def test_lower_leaves_the_collector_as_it_found_it():
    """api.lower pauses the cyclic collector for the whole compile (parse, verify, passes,
    lowering) and gives it back as it was: on, off, and after an error."""
    import pytest

    from asterism.errors import AsterismError

    good = "amdgcn.module @m target = \"gfx942\" {\n}\n"
    assert gc.isenabled()
    api.lower(good, "auto")
    assert gc.isenabled()
    with pytest.raises(AsterismError):
        api.lower("amdgcn.module @m target = \"gfx942\" {\n  amdgcn.bogus\n}\n", "auto")
    assert gc.isenabled()
    gc.disable()
    try:
        api.lower(good, "auto")
        assert not gc.isenabled()
    finally:
        gc.enable()
