"""KernelBuilder / ModuleBuilder: generated instruction methods, registers, arguments, ABI
values, LDS, blocks and loops, errors pointing at the Python line."""

from __future__ import annotations

import inspect

import pytest

from asterism.builder import KernelBuilder, ModuleBuilder, parse_register_range
from asterism.errors import VerifyError
from asterism.ir import lower_module, parse_ir, print_ir
from asterism.ir.ops import DSOp, KernargOffsetOp, SOPPOp, VOP2Op, VOP3Op
from asterism.ir.types import SGPRType, VGPRType
from asterism.isa import get_isa
from asterism.mc.inst import Inst
from asterism.mc.operands import Imm, Label, Reg
from asterism.mc.printer import format_inst
from asterism.mc.program import LabelDef


def asm(module) -> list[str]:
    return [format_inst(i) if isinstance(i, Inst) else f"{i.name}:"
            for k in lower_module(module).kernels for i in k.body]


def test_one_method_per_instruction_with_docs():
    kb = KernelBuilder("k")
    names = set(dir(kb))
    assert set(get_isa("gfx942").instructions) <= names
    doc = inspect.getdoc(kb.v_add_u32)
    assert "v_add_u32_e32 v30, v10, v20" in doc and "amdgcn.vop2" in doc
    assert "vdst: VGPR [dest]" in doc and "src0: VGPR/SGPR/inline/literal (i32)" in doc
    assert str(inspect.signature(kb.v_add_u32)) == "(vdst, src0, vsrc1, /, *, enc=None, " \
                                                   "**modifiers)"
    mfma = inspect.getdoc(kb.v_mfma_f32_16x16x16_f16)
    assert "src0: VGPR/AGPR x2 (align 2)" in mfma and "4 passes" in mfma
    # Targets differ: gfx950-only instructions exist only on gfx950 builders.
    assert "ds_read_b64_tr_b16" not in names
    assert "ds_read_b64_tr_b16" in dir(KernelBuilder("k", target="gfx950"))
    with pytest.raises(AttributeError, match="gfx942 has no instruction"):
        kb.ds_read_b64_tr_b16  # noqa: B018


def test_registers_follow_destination_passing():
    kb = KernelBuilder("k")
    r1 = kb.v_add_u32(kb.v(1), 1, kb.v(0))
    assert kb.v(1) is r1  # the current value of v1 is what the add wrote
    r2 = kb.v_add_u32(kb.v(1), 2, kb.v(1))
    assert r2.owner.args[0] is r1 and r2.owner.args[2] is r1
    assert kb.v[8:12].type == VGPRType(8, 4) and kb.s(4).type == SGPRType(4)
    kb.s_endpgm()
    assert asm(kb.finish()) == ["v_add_u32 v1, 1, v0", "v_add_u32 v1, 2, v1", "s_endpgm"]


def test_encoding_choice():
    kb = KernelBuilder("k")
    kb.v_add_u32(kb.v(1), kb.s(2), kb.v(0))  # SGPR in src0: VOP2 still fits
    kb.v_add_u32(kb.v(1), kb.v(0), kb.s(2))  # SGPR in src1: only VOP3 fits
    kb.v_add_u32(kb.v(1), kb.v(0), kb.v(2), enc="vop3")
    kb.v_add_u32_e64(kb.v(1), kb.v(0), kb.v(2))
    kb.v_add_u32(kb.v(1), kb.v(0), kb.v(2), clamp=True)
    kb.v_mov_b32(kb.v(1), kb.v(0), dpp_ctrl=0x1B, row_mask=0xF, bank_mask=0xF)
    ops = list(kb.kernel.body.blocks[0].ops)
    fams = [op.name for op in ops if op.name.startswith("amdgcn.v") or op.name == "amdgcn.dpp"]
    assert fams == ["amdgcn.vop2", "amdgcn.vop3", "amdgcn.vop3", "amdgcn.vop3", "amdgcn.vop3",
                    "amdgcn.dpp"]
    kb.s_endpgm()
    assert asm(kb.finish()) == [
        "v_add_u32 v1, s2, v0", "v_add_u32 v1, v0, s2", "v_add_u32_e64 v1, v0, v2",
        "v_add_u32_e64 v1, v0, v2", "v_add_u32 v1, v0, v2 clamp",
        # The DPP controls already say DPP: no suffix needed for the text to mean it.
        "v_mov_b32 v1, v0 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf", "s_endpgm"]


def test_memory_ops_modifiers_and_tokens():
    kb = KernelBuilder("k")
    v = kb.global_load_dword(kb.v(1), kb.v[2:4], kb.off, offset=16, sc0=True)
    tok = kb.last_token
    assert tok is not None and tok.owner is v.owner
    kb.s_waitcnt(vmcnt=0)
    kb.ds_write_b32(kb.v(0), kb.v(1), offset=8)
    assert isinstance(kb.last_token.owner, DSOp)
    kb.s_endpgm()
    assert asm(kb.finish()) == ["global_load_dword v1, v[2:3], off offset:16 sc0",
                                "s_waitcnt vmcnt(0)", "ds_write_b32 v0, v1 offset:8",
                                "s_endpgm"]


def test_constants_are_typed_by_the_operand():
    kb = KernelBuilder("k")
    kb.v_add_f16(kb.v(1), 0.5, kb.v(0))
    kb.v_add_f32(kb.v(1), 0.5, kb.v(0))
    kb.v_mov_b32(kb.v(2), 1234567)
    consts = [op for op in kb.kernel.walk() if op.name == "arith.constant"]
    assert [str(c.result.type) for c in consts] == ["f16", "f32", "i32"]
    kb.s_endpgm()
    assert asm(kb.finish())[:3] == ["v_add_f16 v1, 0.5, v0", "v_add_f32 v1, 0.5, v0",
                                    "v_mov_b32 v2, 1234567"]


def test_arguments_abi_values_and_lds():
    kb = KernelBuilder("k", workgroup_size=(128, 1, 1))
    wg = kb.workgroup_id("x")
    assert wg.type == SGPRType(0)  # nothing else requested yet
    a = kb.arg_buffer("a", "f32", access="read_only")
    n = kb.arg_value("n", "i32")
    assert (a.offset, n.offset) == (0, 8)
    kp = kb.kernarg_ptr()
    # The kernarg pointer is a user SGPR pair: the workgroup id moves after it.
    assert kp.type == SGPRType(0, 2)
    tile = kb.lds_alloc("tile", 256, align=16)
    other = kb.lds_alloc("other", 8)
    assert (tile.offset, other.offset) == (0, 256)
    kb.s_load_dword(kb.s(4), kp, n)
    kb.v_mov_b32(kb.v(1), wg)
    kb.v_mov_b32(kb.v(2), other)
    kb.s_endpgm()
    module = kb.finish()
    assert [op.results[0].type for op in module.walk() if op.name == "amdgcn.workgroup_id"] \
        == [SGPRType(2)]
    assert any(isinstance(op, KernargOffsetOp) for op in module.walk())
    mc = lower_module(module)
    assert asm(module)[:3] == ["s_load_dword s4, s[0:1], 8", "v_mov_b32 v1, s2",
                               "v_mov_b32 v2, 256"]
    assert wg.type == SGPRType(2)  # the Python handle follows
    assert mc.kernels[0].lds_size == 264 and mc.kernels[0].workgroup_size == (128, 1, 1)


def test_loops_with_labels():
    kb = KernelBuilder("k")
    kb.s_mov_b32(kb.s(2), 8)
    loop = kb.label("loop")
    kb.v_add_u32(kb.v(1), 1, kb.v(1))
    kb.s_sub_u32(kb.s(2), kb.s(2), 1)
    kb.s_cmp_lg_u32(kb.s(2), 0)
    kb.s_cbranch_scc1(loop)
    done = kb.new_label("done")
    kb.s_branch(done)
    kb.s_nop(0)  # unreachable, but kept: WYSIWYG
    kb.place(done)
    kb.s_endpgm()
    module = kb.finish()
    text = print_ir(module)
    assert "amdgcn.branch s_cbranch_scc1 ^loop fallthrough ^" in text
    assert "amdgcn.end_kernel" in text
    parse_ir(text)  # the printed IR is valid
    mc = lower_module(module)
    body = mc.kernels[0].body
    assert body[1] == LabelDef("loop") and body[5].operands == [Label("loop")]
    assert asm(module) == ["s_mov_b32 s2, 8", "loop:", "v_add_u32 v1, 1, v1",
                           "s_sub_u32 s2, s2, 1", "s_cmp_lg_u32 s2, 0", "s_cbranch_scc1 loop",
                           "s_branch done", "s_nop 0", "done:", "s_endpgm"]


def test_python_loops_unroll():
    kb = KernelBuilder("k")
    for i in range(4):
        kb.v_mfma_f32_16x16x16_f16(kb.v[8 + 4 * i:12 + 4 * i], kb.v[0:2], kb.v[2:4], 0)
    kb.s_endpgm()
    lines = asm(kb.finish())
    assert lines[0] == "v_mfma_f32_16x16x16_f16 v[8:11], v[0:1], v[2:3], 0"
    assert len(lines) == 5 and lines[3].startswith("v_mfma_f32_16x16x16_f16 v[20:23]")


def test_relocatable_registers_and_reserved_regions():
    kb = KernelBuilder("k")
    acc = kb.vregs(4, align=2)
    assert acc.type == VGPRType.relocatable(4, 2)
    out = kb.v_add_u32(None, 1, kb.vreg())
    assert out.type == VGPRType.relocatable()
    region = kb.reserve("S", "v32-v95")
    assert len(region) == 64 and region[0].type == VGPRType(32)
    assert region[4:8].type == VGPRType(36, 4) and region[-1].type == VGPRType(95)
    kb.reserve("m0s", "s[63:67]")
    kb.s_endpgm()
    module = kb.finish()
    assert "reserved(S = !amdgcn.vgpr<[32:96]>, m0s = !amdgcn.sgpr<[63:68]>)" \
        in print_ir(module)
    with pytest.raises(VerifyError, match="register allocation pass"):
        lower_module(module)
    assert parse_register_range("v[8:11]") == VGPRType(8, 4)
    with pytest.raises(VerifyError):
        parse_register_range("q5")


def test_errors_point_at_the_python_line():
    kb = KernelBuilder("k")
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(VerifyError) as info:
        kb.v_add_u32_e64(kb.v(1), 100, kb.v(0))
    err = info.value
    assert "takes an inline constant here" in err.message
    assert err.location.file == __file__ and err.location.line == line
    with pytest.raises(VerifyError, match=r"unknown instruction 'v_add_u33'"):
        kb.emit("v_add_u33", kb.v(1), 1, kb.v(0))
    with pytest.raises(VerifyError, match=r"operand #1 \(src0\) expects VGPR or AGPR range"):
        kb.v_mfma_f32_16x16x16_f16(kb.v[8:12], kb.v(0), kb.v[2:4], 0)
    with pytest.raises(VerifyError, match=r"takes 3 operands \(vdst, src0, vsrc1\), got 2"):
        kb.v_add_u32(kb.v(1), 1)


def test_location_of_built_ops_is_the_python_line():
    kb = KernelBuilder("k")
    line = inspect.currentframe().f_lineno + 1
    kb.v_add_u32(kb.v(1), 1, kb.v(0))
    kb.s_endpgm()
    (add, _end) = [i for i in lower_module(kb.finish()).kernels[0].body]
    assert (add.loc.file, add.loc.line) == (__file__, line)


def test_module_builder_with_two_kernels():
    mb = ModuleBuilder("lib", target="gfx950")
    for name in ("a", "b"):
        kb = mb.kernel(name)
        top = kb.label("top")
        kb.s_nop(0)
        kb.s_cbranch_execz(top)
        kb.s_endpgm()
    module = mb.finish()
    mc = lower_module(module)
    assert mc.target == "gfx950" and [k.name for k in mc.kernels] == ["a", "b"]
    assert mc.kernels[1].body[0] == LabelDef("b_top")
    with pytest.raises(VerifyError, match="already defined"):
        mb.kernel("a")


def test_finished_kernels_reject_more_code():
    kb = KernelBuilder("k")
    kb.s_endpgm()
    kb.finish()
    with pytest.raises(VerifyError, match="is finished"):
        kb.s_nop(0)


def test_sopp_and_immediates():
    kb = KernelBuilder("k")
    kb.s_nop(3)
    kb.s_setprio(2)
    kb.s_waitcnt(vmcnt=1, expcnt=0, lgkmcnt=2)
    kb.s_endpgm()
    module = kb.finish()
    assert all(isinstance(op, SOPPOp) for op in module.walk() if op.name.startswith("amdgcn.s"))
    assert asm(module) == ["s_nop 3", "s_setprio 2", "s_waitcnt vmcnt(1) expcnt(0) lgkmcnt(2)",
                           "s_endpgm"]
    inst = lower_module(module).kernels[0].body[0]
    assert inst.operands == [Imm(3)] and inst.form.enc == "SOPP"


def test_builder_output_equals_written_ir():
    kb = KernelBuilder("k")
    kb.v_lshlrev_b32(kb.v(2), 2, kb.workitem_id("x"))
    kb.v_add_u32(kb.v(3), kb.v(2), kb.v(2), enc="vop3")
    kb.s_endpgm()
    built = kb.finish()
    written = parse_ir("""
amdgcn.module @k target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %v2 = amdgcn.alloca : !amdgcn.vgpr<2>
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    %v3 = amdgcn.alloca : !amdgcn.vgpr<3>
    %c2 = arith.constant 2 : i32
    %a = amdgcn.vop2 v_lshlrev_b32 %v2, %c2, %tid : (!amdgcn.vgpr<2>, i32, !amdgcn.vgpr<0>) -> !amdgcn.vgpr<2>
    %b = amdgcn.vop3 v_add_u32 %v3, %a, %a : (!amdgcn.vgpr<3>, !amdgcn.vgpr<2>, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<3>
    amdgcn.sopp s_endpgm
  }
}
""")
    assert built.is_structurally_equivalent(written)
    assert isinstance(list(built.walk())[-2], VOP3Op)
    assert any(isinstance(op, VOP2Op) for op in built.walk())
    assert lower_module(built).kernels[0].body[1].operands == [Reg("v", 3), Reg("v", 2),
                                                               Reg("v", 2)]


def test_implicit_named_registers_can_be_left_out():
    kb = KernelBuilder("k")
    cmp = kb.v_cmp_gt_u32(kb.v(1), kb.v(2))  # VOPC: vcc, src0, vsrc1
    assert cmp.type == kb.vcc.type and kb.vcc is cmp
    kb.v_cndmask_b32(kb.v(3), kb.v(4), kb.v(5))  # ... and reads it
    kb.v_addc_co_u32(kb.v(6), 0, kb.v(7))  # writes and reads vcc
    kb.s_endpgm()
    assert asm(kb.finish()) == ["v_cmp_gt_u32 vcc, v1, v2", "v_cndmask_b32 v3, v4, v5, vcc",
                                "v_addc_co_u32 v6, vcc, 0, v7, vcc", "s_endpgm"]
