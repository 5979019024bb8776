"""The IR layer's speed-ups must not change answers.

* form selection is cached by an exact operand key: an op that differs from an accepted one
  only in what the loose shape leaves out (alignment, immediate value or kind, which SGPRs
  are the same value, modifier value types) is still rejected, with the message it gets when
  checked first;
* lowered instructions are cached by the same key: registers the ABI places, kernel-argument
  offsets and source locations still come from each op and kernel, and the instructions
  handed out do not share mutable state;
* verification skips xDSL's generic checks only for ops that certainly pass them.
"""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr, UnitAttr, i32
from xdsl.utils.exceptions import VerifyException

from asterism.errors import VerifyError
from asterism.ir import lower_module, parse_ir
from asterism.ir import verify as ir_verify
from asterism.ir.ops import INSTRUCTION_OPS, AllocaOp, InstructionOp
from asterism.ir.verify import verify_module
from asterism.mc.inst import Inst
from asterism.mc.operands import Imm, Reg

DECLS = """\
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %v4 = amdgcn.alloca : !amdgcn.vgpr<[4:6]>
    %v5 = amdgcn.alloca : !amdgcn.vgpr<[5:7]>
    %s4 = amdgcn.alloca : !amdgcn.sgpr<4>
    %s6 = amdgcn.alloca : !amdgcn.sgpr<6>
    %sa = amdgcn.alloca : !amdgcn.sgpr
    %sb = amdgcn.alloca : !amdgcn.sgpr
    %off = amdgcn.off
    %c1 = arith.constant 1 : i32
    %c100 = arith.constant 100 : i32
    %c200 = arith.constant 200 : i32
    %big = arith.constant 70000 : i32
    %f1 = arith.constant 1.0 : f32
"""


def module_text(body: str) -> str:
    return ('amdgcn.module @m target = "gfx942" {\n'
            "  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {\n"
            f"{DECLS}{body}    amdgcn.sopp s_endpgm\n  }}\n}}\n")


def fresh_error(body: str) -> str:
    """The message `body` gets when nothing was cached before."""
    ir_verify._MATCH_CACHES.clear()
    with pytest.raises(VerifyError) as info:
        parse_ir(module_text(body), "t.mlir")
    return info.value.message


# (accepted op, rejected op that has the same register files, widths and immediate kinds)
NEAR_MISSES = {
    "alignment": (
        "%r, %t = amdgcn.global global_load_dword %v1, %v4, %off : (!amdgcn.vgpr<1>, "
        "!amdgcn.vgpr<[4:6]>, !amdgcn.off) -> (!amdgcn.vgpr<1>, !amdgcn.token)",
        "%r2, %t2 = amdgcn.global global_load_dword %v1, %v5, %off : (!amdgcn.vgpr<1>, "
        "!amdgcn.vgpr<[5:7]>, !amdgcn.off) -> (!amdgcn.vgpr<1>, !amdgcn.token)"),
    "constant bus, fixed SGPRs": (
        "%r = amdgcn.vop3 v_add_u32 %v1, %s4, %s4 : (!amdgcn.vgpr<1>, !amdgcn.sgpr<4>, "
        "!amdgcn.sgpr<4>) -> !amdgcn.vgpr<1>",
        "%r2 = amdgcn.vop3 v_add_u32 %v1, %s4, %s6 : (!amdgcn.vgpr<1>, !amdgcn.sgpr<4>, "
        "!amdgcn.sgpr<6>) -> !amdgcn.vgpr<1>"),
    "constant bus, relocatable SGPRs": (
        "%r = amdgcn.vop3 v_add_u32 %v1, %sa, %sa : (!amdgcn.vgpr<1>, !amdgcn.sgpr, "
        "!amdgcn.sgpr) -> !amdgcn.vgpr<1>",
        "%r2 = amdgcn.vop3 v_add_u32 %v1, %sa, %sb : (!amdgcn.vgpr<1>, !amdgcn.sgpr, "
        "!amdgcn.sgpr) -> !amdgcn.vgpr<1>"),
    "one literal": (
        "%r = amdgcn.sop2 s_add_u32 %s4, %c100, %c100 : (!amdgcn.sgpr<4>, i32, i32) -> "
        "!amdgcn.sgpr<4>",
        "%r2 = amdgcn.sop2 s_add_u32 %s4, %c100, %c200 : (!amdgcn.sgpr<4>, i32, i32) -> "
        "!amdgcn.sgpr<4>"),
    "immediate range": (
        "%r = amdgcn.sopk s_movk_i32 %s4, %c100 : (!amdgcn.sgpr<4>, i32) -> !amdgcn.sgpr<4>",
        "%r2 = amdgcn.sopk s_movk_i32 %s4, %big : (!amdgcn.sgpr<4>, i32) -> !amdgcn.sgpr<4>"),
    "integer vs float immediate": (
        "%r = amdgcn.sopk s_movk_i32 %s4, %c1 : (!amdgcn.sgpr<4>, i32) -> !amdgcn.sgpr<4>",
        "%r2 = amdgcn.sopk s_movk_i32 %s4, %f1 : (!amdgcn.sgpr<4>, f32) -> !amdgcn.sgpr<4>"),
    "result type": (
        "%r = amdgcn.vop1 v_mov_b32 %v1, %c1 : (!amdgcn.vgpr<1>, i32) -> !amdgcn.vgpr<1>",
        "%r2 = amdgcn.vop1 v_mov_b32 %v1, %c1 : (!amdgcn.vgpr<1>, i32) -> !amdgcn.vgpr<2>"),
}


@pytest.mark.parametrize("case", sorted(NEAR_MISSES))
def test_an_accepted_op_does_not_vouch_for_a_near_miss(case):
    good, bad = NEAR_MISSES[case]
    expected = fresh_error(f"    {bad}\n")
    ir_verify._MATCH_CACHES.clear()
    parse_ir(module_text(f"    {good}\n"), "t.mlir")  # accepted, and now cached
    with pytest.raises(VerifyError) as info:
        parse_ir(module_text(f"    {good}\n    {bad}\n"), "t.mlir")
    assert info.value.message == expected


def test_modifier_value_types_are_part_of_the_key():
    store = ("%t = amdgcn.global global_store_dword %v4, %v1, %off offset = 1 : "
             "(!amdgcn.vgpr<[4:6]>, !amdgcn.vgpr<1>, !amdgcn.off) -> !amdgcn.token")
    module = parse_ir(module_text(f"    {store}\n"), "t.mlir")  # offset = 1 accepted
    op = next(o for o in module.walk() if isinstance(o, InstructionOp)
              and o.mnemonic_text == "global_store_dword")
    # The flag form `offset` decodes to True, which equals 1 in Python.
    op.properties["modifiers"] = DictionaryAttr({"offset": UnitAttr()})
    with pytest.raises(VerifyError, match="modifier offset: expects an integer, got True"):
        verify_module(module)
    op.properties["modifiers"] = DictionaryAttr({"offset": IntegerAttr(1, i32)})
    verify_module(module)


def test_errors_are_the_same_when_repeated():
    bad = NEAR_MISSES["alignment"][1]
    first = fresh_error(f"    {bad}\n")
    with pytest.raises(VerifyError) as info:
        parse_ir(module_text(f"    {bad}\n"), "t.mlir")
    assert info.value.message == first


# --- lowering -------------------------------------------------------------------------------

TWO_KERNELS = """\
amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k1 args(a: i32, b: i32) workgroup_size(64, 1, 1) {
    %dp = amdgcn.dispatch_ptr : !amdgcn.sgpr<[? + 2]>
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[? + 2]>
    %s4 = amdgcn.alloca : !amdgcn.sgpr<4>
    %o = amdgcn.kernarg_offset b
    %r, %t = amdgcn.smem s_load_dword %s4, %kp, %o : (!amdgcn.sgpr<4>, !amdgcn.sgpr<[? + 2]>,
        i32) -> (!amdgcn.sgpr<4>, !amdgcn.token)
    %r2, %t2 = amdgcn.smem s_load_dword %s4, %dp, %o : (!amdgcn.sgpr<4>,
        !amdgcn.sgpr<[? + 2]>, i32) -> (!amdgcn.sgpr<4>, !amdgcn.token)
    amdgcn.sopp s_endpgm
  }
  amdgcn.kernel @k2 args(b: i32) workgroup_size(64, 1, 1) {
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[? + 2]>
    %s4 = amdgcn.alloca : !amdgcn.sgpr<4>
    %o = amdgcn.kernarg_offset b
    %r, %t = amdgcn.smem s_load_dword %s4, %kp, %o : (!amdgcn.sgpr<4>, !amdgcn.sgpr<[? + 2]>,
        i32) -> (!amdgcn.sgpr<4>, !amdgcn.token)
    amdgcn.sopp s_endpgm
  }
}
"""


def insts(mc, k: int) -> list[Inst]:
    return [i for i in mc.kernels[k].body if isinstance(i, Inst)]


def test_abi_registers_and_argument_offsets_come_from_each_kernel():
    mc = lower_module(parse_ir(TWO_KERNELS, "t.mlir"))
    k1, k2 = insts(mc, 0), insts(mc, 1)
    # k1: dispatch pointer in s[0:1], kernarg pointer in s[2:3]; b at offset 4.
    assert k1[0].operands == [Reg("s", 4), Reg("s", 2, 2), Imm(4)]
    assert k1[1].operands == [Reg("s", 4), Reg("s", 0, 2), Imm(4)]
    # k2: kernarg pointer in s[0:1]; b at offset 0 (same op text as k1's first load).
    assert k2[0].operands == [Reg("s", 4), Reg("s", 0, 2), Imm(0)]


REPEATED = """\
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %v2 = amdgcn.alloca : !amdgcn.vgpr<2>
    %c1 = arith.constant 1 : i32
    %r = amdgcn.vop3 v_add_u32 %v1, %c1, %v2 clamp : (!amdgcn.vgpr<1>, i32, !amdgcn.vgpr<2>)
        -> !amdgcn.vgpr<1>
    %r2 = amdgcn.vop3 v_add_u32 %v1, %c1, %v2 clamp : (!amdgcn.vgpr<1>, i32, !amdgcn.vgpr<2>)
        -> !amdgcn.vgpr<1>
"""


def test_lowered_instructions_are_independent_and_keep_their_locations():
    text = ('amdgcn.module @m target = "gfx942" {\n'
            "  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {\n"
            f"{REPEATED}    amdgcn.sopp s_endpgm\n  }}\n}}\n")
    module = parse_ir(text, "t.mlir")
    first, second, _end = insts(lower_module(module), 0)
    assert first.operands == second.operands and first.modifiers == second.modifiers
    assert (first.loc.line, second.loc.line) == (6, 8)
    first.operands.append(Imm(7))
    first.modifiers["clamp"] = False
    again = insts(lower_module(module), 0)
    assert again[0].operands == second.operands == [Reg("v", 1), Imm(1), Reg("v", 2)]
    assert again[0].modifiers == second.modifiers == {"clamp": True}


# --- structural checks ----------------------------------------------------------------------


def test_the_structural_short_cut_covers_the_common_ops():
    assert ir_verify._TRIVIAL_DEFINITIONS == frozenset({*INSTRUCTION_OPS, AllocaOp})


def _ops_of(body: str):
    module = parse_ir(module_text(body), "t.mlir")
    return module, [op for op in module.walk() if type(op) in ir_verify._TRIVIAL_DEFINITIONS]


def test_the_structural_short_cut_only_accepts_what_xdsl_accepts():
    module, ops = _ops_of(f"    {NEAR_MISSES['alignment'][0]}\n"
                          f"    {NEAR_MISSES['one literal'][0].replace('%r ', '%q ')}\n")
    broken = ops[len(ops) // 2]
    broken.properties["stray"] = StringAttr("x")  # an undeclared property
    alloca = next(op for op in ops if isinstance(op, AllocaOp))
    alloca.results[0]._type = i32  # not a register type (AllocaOp.verify_ rejects it)
    inst = next(op for op in ops if isinstance(op, InstructionOp) and op is not broken)
    inst.properties["mnemonic"] = IntegerAttr(1, i32)  # not a StringAttr
    checked = 0
    for op in module.walk():
        if ir_verify._passes_xdsl_checks(op):
            op.verify(verify_nested_ops=False)  # must not raise
            checked += type(op) in ir_verify._TRIVIAL_DEFINITIONS  # (constants: their own)
    assert len({id(broken), id(alloca), id(inst)}) == 3
    assert checked == len(ops) - 4  # all but the three broken ops and s_endpgm (last)
    for op in (broken, alloca, inst):
        assert not ir_verify._passes_xdsl_checks(op)
        with pytest.raises(VerifyException):
            op.verify(verify_nested_ops=False)
    with pytest.raises(VerifyError, match="amdgcn.alloca makes register values"):
        verify_module(module)  # the first broken op in program order


def test_an_instruction_that_ends_a_kernel_is_still_checked_as_a_terminator():
    text = ('amdgcn.module @m target = "gfx942" {\n'
            "  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {\n"
            "    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>\n"
            "    %c1 = arith.constant 1 : i32\n"
            "    %r = amdgcn.vop1 v_mov_b32 %v1, %c1 : (!amdgcn.vgpr<1>, i32) -> "
            "!amdgcn.vgpr<1>\n  }\n}\n")
    fresh = _structure_error(text, fast=False)
    assert _structure_error(text, fast=True) == fresh


def _structure_error(text: str, fast: bool) -> str | None:
    saved = ir_verify._TRIVIAL_DEFINITIONS
    if not fast:
        ir_verify._TRIVIAL_DEFINITIONS = frozenset()
    try:
        parse_ir(text, "t.mlir")
    except VerifyError as err:
        return err.message
    finally:
        ir_verify._TRIVIAL_DEFINITIONS = saved
    return None
