"""Lowering amdgcn IR to mc.Inst (operands, forms, labels, kernel facts) and raising MC back
to IR, including real hand-written kernels decoded from shipped code objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from asterism.errors import VerifyError
from asterism.ir import lower_module, parse_ir, print_ir, raise_module
from asterism.ir.tool import asm_listing
from asterism.mc.inst import Inst
from asterism.mc.kernel_abi import kernel_directives
from asterism.mc.operands import OFF, FloatImm, Imm, Label, Literal, Mod, Reg, Special, Syntax
from asterism.mc.printer import format_inst
from asterism.mc.program import AbiRequest, KernelArg, LabelDef, McKernel, McModule

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "examples" / "demo" / "add_10.mlir"
CODEOBJECTS = REPO / "tests" / "data" / "shared" / "codeobjects"


def lower_text(text: str, target: str = "gfx942") -> McModule:
    return lower_module(parse_ir(text, "t.mlir"))


def one_kernel(body: str, target: str = "gfx942", sig: str = "args() workgroup_size(64, 1, 1)"):
    return (f'amdgcn.module @m target = "{target}" {{\n  amdgcn.kernel @k {sig} {{\n{body}'
            "  }\n}\n")


def insts(mc: McModule, k: int = 0) -> list[Inst]:
    return [i for i in mc.kernels[k].body if isinstance(i, Inst)]


def test_demo_lowers_to_the_hand_written_assembly():
    mc = lower_module(parse_ir(DEMO.read_text(), str(DEMO)))
    assert asm_listing(mc).splitlines() == [
        "add_10:",
        "  s_load_dwordx2 s[4:5], s[0:1], 0",
        "  v_lshl_add_u32 v1, s2, 6, v0",
        "  v_lshlrev_b32 v2, 2, v1",
        *["  v_add_u32 v1, 1, v1"] * 10,
        "  s_waitcnt lgkmcnt(0)",
        "  global_store_dword v2, v1, s[4:5]",
        "  s_endpgm",
    ]
    kernel = mc.kernels[0]
    assert kernel.abi == AbiRequest(kernarg_ptr=True, workgroup_ids=(True, False, False))
    assert kernel.args == [KernelArg("out", "buffer", 8, 0, access="write_only", dtype="i32")]
    assert kernel.workgroup_size == (64, 1, 1) and kernel.lds_size == 0
    add = kernel.body[3]
    assert add.operands == [Reg("v", 1), Imm(1), Reg("v", 1)]
    assert (add.form.enc, add.form.suffix) == ("VOP2", "_e32")
    assert add.loc.file == str(DEMO) and add.loc.line > 1
    # The MC layer computes the descriptor from what the IR said.
    d = kernel_directives(kernel, "gfx942")
    assert d["user_sgpr_kernarg_segment_ptr"] == 1 and d["system_sgpr_workgroup_id_x"] == 1
    assert d["user_sgpr_count"] == 2 and d["next_free_sgpr"] >= 6


def test_operand_kinds_and_modifiers():
    body = """\
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %v2 = amdgcn.alloca : !amdgcn.vgpr<2>
    %v4 = amdgcn.alloca : !amdgcn.vgpr<[4:6]>
    %s4 = amdgcn.alloca : !amdgcn.sgpr<[4:6]>
    %vcc = amdgcn.alloca : !amdgcn.special<vcc>
    %off = amdgcn.off
    %half = arith.constant 0.5 : f32
    %inv2pi = arith.constant 0.15915494 : f16
    %lit = amdgcn.literal 0x3f800001
    %hw = arith.constant 6145 : i32
    %a = amdgcn.vop3 v_fma_f32 %v1, %v2, %half, %v2 neg = [1, 0, 0] abs = [0, 0, 1] clamp : (!amdgcn.vgpr<1>, !amdgcn.vgpr<2>, f32, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>
    %b = amdgcn.vop2 v_add_f32 %v1, %lit, %v2 : (!amdgcn.vgpr<1>, i32, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>
    %c = amdgcn.vop3 v_add_f16 %v1, %inv2pi, %v2 : (!amdgcn.vgpr<1>, f16, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>
    %d = amdgcn.vopc v_cmp_eq_u32 %vcc, %v1, %v2 : (!amdgcn.special<vcc>, !amdgcn.vgpr<1>, !amdgcn.vgpr<2>) -> !amdgcn.special<vcc>
    %e = amdgcn.vop2 v_cndmask_b32 %v1, %v1, %v2, %d : (!amdgcn.vgpr<1>, !amdgcn.vgpr<1>, !amdgcn.vgpr<2>, !amdgcn.special<vcc>) -> !amdgcn.vgpr<1>
    %f, %t = amdgcn.global global_load_dword %v1, %v4, %off offset = -8 sc0 nt : (!amdgcn.vgpr<1>, !amdgcn.vgpr<[4:6]>, !amdgcn.off) -> (!amdgcn.vgpr<1>, !amdgcn.token)
    %g = amdgcn.sopk s_getreg_b32 %s4, %hw : (!amdgcn.sgpr<[4:6]>, i32) -> !amdgcn.sgpr<[4:6]>
    amdgcn.sopp s_waitcnt vmcnt = 0 lgkmcnt = 3
    amdgcn.sopp s_endpgm
"""
    body = body.replace("s_getreg_b32 %s4, %hw : (!amdgcn.sgpr<[4:6]>", "s_getreg_b32 %s5, %hw "
                        ": (!amdgcn.sgpr<5>").replace("-> !amdgcn.sgpr<[4:6]>\n",
                                                       "-> !amdgcn.sgpr<5>\n")
    body = "    %s5 = amdgcn.alloca : !amdgcn.sgpr<5>\n" + body
    fma, add, add16, cmp, cnd, load, getreg, wait, end = insts(lower_text(one_kernel(body)))
    assert fma.operands == [Reg("v", 1), Mod(Reg("v", 2), neg=True), FloatImm(0.5),
                            Mod(Reg("v", 2), abs=True)]
    assert fma.modifiers == {"clamp": True} and fma.form.enc == "VOP3"
    assert add.operands[1] == Literal(0x3F800001)
    # An f16 constant rounds 1/(2*pi); it still is the inline constant.
    assert add16.operands[1] == FloatImm(0.15915494309189535)
    assert cmp.operands[0] == Special("vcc") and cnd.operands[3] == Special("vcc")
    assert load.operands == [Reg("v", 1), Reg("v", 4, 2), OFF]
    assert load.modifiers == {"offset": -8, "sc0": True, "nt": True}
    assert load.form.variant == "global_off"
    assert isinstance(getreg.operands[1], Syntax) and getreg.operands[1].value == 6145
    assert getreg.operands[1].text.startswith("hwreg(")
    assert wait.operands == [Syntax(0x370, "vmcnt(0) lgkmcnt(3)")]
    assert format_inst(wait) == "s_waitcnt vmcnt(0) lgkmcnt(3)"
    assert end.operands == []


def test_encoding_suffix_is_added_when_the_text_would_mean_another_encoding():
    body = """\
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %v2 = amdgcn.alloca : !amdgcn.vgpr<2>
    %a = amdgcn.vop3 v_add_u32 %v1, %v1, %v2 : (!amdgcn.vgpr<1>, !amdgcn.vgpr<1>, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>
    %b = amdgcn.sdwa v_add_u32 %v1, %v1, %v2 : (!amdgcn.vgpr<1>, !amdgcn.vgpr<1>, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>
    %c = amdgcn.vop3 v_add_u32 %v1, %v1, %v2 clamp : (!amdgcn.vgpr<1>, !amdgcn.vgpr<1>, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>
    %d = amdgcn.vop2 v_add_u32_e32 %v1, %v1, %v2 : (!amdgcn.vgpr<1>, !amdgcn.vgpr<1>, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>
"""
    a, b, c, d = insts(lower_text(one_kernel(body)))
    assert (a.mnemonic, a.form.enc) == ("v_add_u32_e64", "VOP3")
    assert (b.mnemonic, b.form.enc) == ("v_add_u32_sdwa", "SDWA")
    assert (c.mnemonic, c.form.enc) == ("v_add_u32", "VOP3")  # clamp already says VOP3
    assert (d.mnemonic, d.form.enc) == ("v_add_u32_e32", "VOP2")  # as written


LOOP = """\
amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args(n: i32) workgroup_size(64, 1, 1) {
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %s2 = amdgcn.alloca : !amdgcn.sgpr<2>
    %n = amdgcn.kernarg_offset n
    %c1 = arith.constant 1 : i32
    %cnt, %t = amdgcn.smem s_load_dword %s2, %kp, %n : (!amdgcn.sgpr<2>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<2>, !amdgcn.token)
    amdgcn.sopp s_waitcnt lgkmcnt = 0
    amdgcn.fallthrough ^loop
  ^loop:
    %next = amdgcn.sop2 s_sub_u32 %s2, %s2, %c1 : (!amdgcn.sgpr<2>, !amdgcn.sgpr<2>, i32) -> !amdgcn.sgpr<2>
    amdgcn.sopc s_cmp_lg_u32 %next, %c1 : (!amdgcn.sgpr<2>, i32) -> ()
    amdgcn.branch s_cbranch_scc1 ^loop fallthrough ^done
  ^done:
    amdgcn.end_kernel
  }
}
"""


def test_blocks_become_labels_and_branches_take_them():
    mc = lower_text(LOOP)
    body = mc.kernels[0].body
    assert [type(i).__name__ for i in body] == ["Inst", "Inst", "LabelDef", "Inst", "Inst",
                                                "Inst", "LabelDef", "Inst"]
    assert body[2] == LabelDef("loop") and body[6] == LabelDef("done")
    assert body[5].mnemonic == "s_cbranch_scc1" and body[5].operands == [Label("loop")]
    assert body[7].mnemonic == "s_endpgm" and body[7].form.enc == "SOPP"
    assert body[0].operands == [Reg("s", 2), Reg("s", 0, 2), Imm(0)]  # kernarg offset of n
    assert asm_listing(mc).splitlines()[3:5] == ["loop:", "  s_sub_u32 s2, s2, 1"]


def test_labels_are_unique_across_kernels():
    kernel = LOOP.split("\n", 1)[1].rsplit("}\n", 1)[0]
    text = ('amdgcn.module @m target = "gfx942" {\n' + kernel
            + kernel.replace("@k ", "@k2 ") + "}\n")
    mc = lower_text(text)
    labels = [i.name for k in mc.kernels for i in k.body if isinstance(i, LabelDef)]
    assert labels == ["k_loop", "k_done", "k2_loop", "k2_done"]
    assert insts(mc, 1)[4].operands == [Label("k2_loop")]


def test_relocatable_registers_need_register_allocation():
    body = """\
    %v = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %r = amdgcn.vop2 v_add_u32 %v, %c1, %v : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
"""
    module = parse_ir(one_kernel(body), "t.mlir")  # valid IR ...
    with pytest.raises(VerifyError) as info:
        lower_module(module)  # ... but not yet lowerable
    err = info.value
    assert "operand #0 (vdst) %v has the relocatable type !amdgcn.vgpr" in err.message
    assert "register allocation pass (--pipeline regalloc)" in err.message
    assert (err.location.line, err.location.col) == (5, 5)


def test_relocatable_abi_values_are_placed_by_the_abi():
    body = """\
    %wg = amdgcn.workgroup_id y : !amdgcn.sgpr
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[? + 2]>
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %r = amdgcn.vop1 v_mov_b32 %v1, %wg : (!amdgcn.vgpr<1>, !amdgcn.sgpr) -> !amdgcn.vgpr<1>
"""
    (mov,) = insts(lower_text(one_kernel(body)))
    assert mov.operands == [Reg("v", 1), Reg("s", 2)]  # s[0:1] kernarg pointer, then wg id y


def test_calls_must_be_inlined_first():
    text = """amdgcn.module @m target = "gfx942" {
  func.func @frag() {
    func.return
  }
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    func.call @frag() : () -> ()
    amdgcn.sopp s_endpgm
  }
}
"""
    module = parse_ir(text, "t.mlir")
    with pytest.raises(VerifyError, match=r"t\.mlir:6:5: func\.call: calls to @frag are not "
                                          r"lowered: run the inline pass"):
        lower_module(module)


def test_kernel_facts():
    text = """amdgcn.module @m target = "gfx950" features = ":sramecc+" {
  amdgcn.kernel @k args(a: buffer<f16, read_only>, n: i32, x: f64) workgroup_size(16, 4, 2) {
    %l0 = amdgcn.lds_alloc a size 100 align 4
    %l1 = amdgcn.lds_alloc b size 64 align 128
    %tid = amdgcn.workitem_id z : !amdgcn.vgpr<0>
    %wg = amdgcn.workgroup_id z : !amdgcn.sgpr<0>
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %r = amdgcn.vop1 v_mov_b32 %v1, %l1 : (!amdgcn.vgpr<1>, i32) -> !amdgcn.vgpr<1>
    amdgcn.sopp s_endpgm
  }
}
"""
    mc = lower_text(text)
    assert (mc.target, mc.features) == ("gfx950", ":sramecc+")
    k = mc.kernels[0]
    assert [(a.name, a.kind, a.size, a.offset, a.dtype) for a in k.args] == [
        ("a", "buffer", 8, 0, "f16"), ("n", "value", 4, 8, "i32"), ("x", "value", 8, 16, "f64")]
    assert k.workgroup_size == (16, 4, 2) and k.lds_size == 192
    assert k.abi == AbiRequest(workgroup_ids=(False, False, True), workitem_id_dims=3)
    assert insts(mc)[0].operands == [Reg("v", 1), Imm(128)]  # the aligned LDS offset


def _key(item):
    if isinstance(item, Inst):
        return (item.mnemonic, item.operands, item.modifiers, item.form.enc, item.form.opcode)
    return item


def test_raise_round_trip_of_branches_and_labels():
    mc = lower_text(LOOP)
    ir = raise_module(mc)
    text = print_ir(ir)
    assert "amdgcn.branch s_cbranch_scc1 ^loop fallthrough ^done" in text
    assert "amdgcn.end_kernel" in text and "amdgcn.fallthrough ^loop" in text
    again = lower_module(parse_ir(text, "raised.mlir"))
    assert [_key(i) for i in again.kernels[0].body] == [_key(i) for i in mc.kernels[0].body]
    assert again.kernels[0].abi == mc.kernels[0].abi


def test_raise_handles_a_label_at_the_start_and_code_after_branches():
    body = [LabelDef("top"), Inst("s_nop", [Imm(0)]), Inst("s_branch", [Label("top")]),
            Inst("s_nop", [Imm(1)]), Inst("s_endpgm", [])]
    mc = McModule("gfx942", [McKernel("k", body)])
    ir = raise_module(mc)
    # The entry block cannot be a branch target: it falls through to ^top.
    assert "amdgcn.fallthrough ^top" in print_ir(ir)
    again = lower_module(ir).kernels[0].body
    assert [_key(i)[:2] if isinstance(i, Inst) else i for i in again] == [
        LabelDef("top"), ("s_nop", [Imm(0)]), ("s_branch", [Label("top")]),
        ("s_nop", [Imm(1)]), ("s_endpgm", [])]


def test_raise_drops_end_labels_but_rejects_a_branch_to_one():
    end = [LabelDef("done"), LabelDef(".Lfunc_end0")]
    body = [Inst("s_cbranch_execz", [Label("skip")]), Inst("s_nop", [Imm(0)]),
            LabelDef("skip"), Inst("s_endpgm", [])]
    ir = raise_module(McModule("gfx942", [McKernel("k", body + end)]))
    again = lower_module(ir).kernels[0].body
    assert [(i.mnemonic, i.operands) if isinstance(i, Inst) else i for i in again] == [
        (i.mnemonic, i.operands) if isinstance(i, Inst) else i for i in body]
    body[0] = Inst("s_cbranch_execz", [Label("done")])
    with pytest.raises(VerifyError, match="branches to 'done', which ends the kernel"):
        raise_module(McModule("gfx942", [McKernel("k", body + end)]))


def _decoded_module(path: Path) -> McModule:
    """An McModule from a shipped code object: decoded instructions, labels at branch targets,
    the ABI inputs the descriptor enables and the arguments the metadata lists."""
    from asterism.mc.codeobject import read_code_object
    from asterism.mc.decoder import decode_code

    co = read_code_object(path.read_bytes())
    decoded = decode_code(co.text, co.target.name, base=co.text_address)
    targets: dict[int, str] = {}
    for d in decoded:
        if d.inst.form is not None and any(s.syntax == "label" for s in d.inst.form.operands):
            words = d.inst.operands[0].value
            words -= 1 << 16 if words >= 1 << 15 else 0
            addr = d.address + 4 + 4 * words
            d.inst.operands = [Label(targets.setdefault(addr, f"L{addr:x}"))]
    body: list = []
    for d in decoded:
        if d.address in targets:
            body.append(LabelDef(targets[d.address]))
        body.append(d.inst)
    sym = co.kernels[0]
    kd = sym.descriptor
    rsrc2 = kd.compute_pgm_rsrc2
    abi = AbiRequest(
        kernarg_ptr=bool(kd.kernel_code_properties.enable_sgpr_kernarg_segment_ptr),
        workgroup_ids=(bool(rsrc2.enable_sgpr_workgroup_id_x),
                       bool(rsrc2.enable_sgpr_workgroup_id_y),
                       bool(rsrc2.enable_sgpr_workgroup_id_z)),
        workitem_id_dims=rsrc2.enable_vgpr_workitem_id + 1)
    args = [KernelArg(a[".name"], "buffer" if a[".value_kind"] == "global_buffer" else "value",
                      a[".size"], a[".offset"], access=a.get(".actual_access"))
            for a in sym.metadata.get(".args", [])]
    return McModule(co.target.name, [McKernel("kernel", body, args,
                                              lds_size=kd.group_segment_fixed_size, abi=abi)])


# A gfx942 flash-attention kernel and a gfx950 GEMM (the gfx942 GEMM is the same code).
@pytest.mark.parametrize("name", ["aiter_gfx942_fmha_fwd_hd128_bf16_rtz.co",
                                  "aiter_gfx950_bf16gemm_tn_32x64_bshuffle_splitk.co"])
def test_real_kernels_round_trip_through_ir_text(name):
    mc = _decoded_module(CODEOBJECTS / name)
    text = print_ir(raise_module(mc))
    again = lower_module(parse_ir(text, name + ".mlir"))
    assert [_key(i) for i in again.kernels[0].body] == [_key(i) for i in mc.kernels[0].body]
    k0, k1 = mc.kernels[0], again.kernels[0]
    assert (k1.abi, k1.lds_size) == (k0.abi, k0.lds_size)
    assert [(a.name, a.offset, a.size) for a in k1.args] == [
        (a.name, a.offset, a.size) for a in k0.args]
