"""The opt-in cleanup passes: inline (fragments, loops, recursion and argument errors), dce
(what is and is not removed) and copy-prop (availability, operand slots), with emulator runs
of inlined kernels."""

from __future__ import annotations

import numpy as np
import pytest

import asterism
from asterism.errors import AsterismError
from asterism.ir import parse_ir, print_ir
from asterism.ir.ops import InstructionOp
from asterism.passes.copyprop import copy_prop_module
from asterism.passes.dce import dce_module
from asterism.passes.inline import InlineError, inline_module
from asterism.passes.pipeline import run_pipeline

V = "!amdgcn.vgpr"
S = "!amdgcn.sgpr"


def module_of(body: str, fragments: str = "", args: str = "", filename: str = "t.mlir"):
    return parse_ir('amdgcn.module @m target = "gfx942" {\n' + fragments +
                    f'  amdgcn.kernel @k args({args}) workgroup_size(64, 1, 1) {{\n'
                    f'{body}  }}\n}}\n', filename)


def mnemonics(module) -> list[str]:
    return [op.mnemonic_text for op in module.walk() if isinstance(op, InstructionOp)]


def asm_lines(module) -> list[str]:
    text = asterism.translate(module)
    body = text.split(":\n", 1)[1].split(".Lfunc_end")[0]
    return [line.strip() for line in body.splitlines() if line.strip()]


# --- inline -------------------------------------------------------------------------------

ADD2 = f"""\
  func.func @add2(%x : {V}, %y : {V}) -> {V} {{
    %t = amdgcn.alloca : {V}
    %t1 = amdgcn.vop2 v_add_u32 %t, %x, %y : ({V}, {V}, {V}) -> {V}
    %x1 = amdgcn.vop2 v_add_u32 %x, %t1, %x : ({V}, {V}, {V}) -> {V}
    func.return %x1 : {V}
  }}
"""


def test_inline_single_block_fragment_twice():
    module = module_of(f"""\
    %a = amdgcn.alloca : {V}
    %b = amdgcn.alloca : {V}
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : ({V}, i32) -> {V}
    %b1 = amdgcn.vop1 v_mov_b32 %b, %c2 : ({V}, i32) -> {V}
    %r = func.call @add2(%a1, %b1) : ({V}, {V}) -> {V}
    %q = func.call @add2(%b1, %r) : ({V}, {V}) -> {V}
    amdgcn.sopp s_endpgm
""", ADD2)
    assert inline_module(module) == 2
    text = print_ir(module)
    assert "func.func" not in text and "func.call" not in text
    run_pipeline(module, "regalloc")
    mov_a, mov_b, add1, add2, add3, add4, end = asm_lines(module)
    va, vb = mov_a.split()[1].rstrip(","), mov_b.split()[1].rstrip(",")
    # In the fragment %x1 continues the chain of its argument: the caller's register.
    t = add1.split()[1].rstrip(",")
    assert add1 == f"v_add_u32 {t}, {va}, {vb}" and add2 == f"v_add_u32 {va}, {t}, {va}"
    t2 = add3.split()[1].rstrip(",")
    assert add3 == f"v_add_u32 {t2}, {vb}, {va}" and add4 == f"v_add_u32 {vb}, {t2}, {vb}"
    assert end == "s_endpgm"


LOOP_FRAGMENT = f"""\
  func.func @plus_n(%x : {V}, %n : {S}) -> {V} {{
    %c1 = arith.constant 1 : i32
    %i = amdgcn.alloca : {S}
    %i0 = amdgcn.sop1 s_mov_b32 %i, %n : ({S}, {S}) -> {S}
    amdgcn.fallthrough ^body
  ^body:
    %x1 = amdgcn.vop2 v_add_u32 %x, %c1, %x : ({V}, i32, {V}) -> {V}
    %i1 = amdgcn.sop2 s_sub_u32 %i0, %i0, %c1 : ({S}, {S}, i32) -> {S}
    amdgcn.sopc s_cmp_lg_u32 %i1, %c1 : ({S}, i32) -> ()
    amdgcn.branch s_cbranch_scc1 ^body fallthrough ^done
  ^done:
    func.return %x1 : {V}
  }}
"""


def loop_kernel(calls: int = 2):
    body = """\
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[? + 2]>
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr
    %p = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %o = amdgcn.kernarg_offset out
    %p1, %tk = amdgcn.smem s_load_dwordx2 %p, %kp, %o : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[? + 2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
    %c2 = arith.constant 2 : i32
    %c4 = arith.constant 4 : i32
    %n = amdgcn.alloca : !amdgcn.sgpr
    %n1 = amdgcn.sop1 s_mov_b32 %n, %c4 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %ad = amdgcn.alloca : !amdgcn.vgpr
    %ad1 = amdgcn.vop2 v_lshlrev_b32 %ad, %c2, %tid : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v = amdgcn.alloca : !amdgcn.vgpr
    %v1 = amdgcn.vop1 v_mov_b32 %v, %tid : (!amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
"""
    value = "%v1"
    for k in range(calls):
        body += (f"    %r{k} = func.call @plus_n({value}, %n1) : (!amdgcn.vgpr, !amdgcn.sgpr) "
                 "-> !amdgcn.vgpr\n")
        value = f"%r{k}"
    body += f"""\
    amdgcn.sopp s_waitcnt lgkmcnt = 0
    %st = amdgcn.global global_store_dword %ad1, {value}, %p1 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.sgpr<[? + 2]>) -> !amdgcn.token
    amdgcn.sopp s_endpgm
"""
    return module_of(body, LOOP_FRAGMENT, "out: buffer<u32, write_only>")


def test_inline_loop_fragment_runs_on_the_emulator():
    module = loop_kernel(calls=2)
    hsaco = asterism.compile(module, pipeline="inline,regalloc")
    lines = asm_lines(module)
    assert sum(line.startswith("s_cbranch_scc1") for line in lines) == 2
    assert "s_branch" not in " ".join(lines)  # the returns are the last blocks: fall through
    out = np.zeros(64, np.uint32)
    asterism.launch(hsaco, "k", grid=1, block=64, args=[out], backend="emu")
    # Each call adds 1 per iteration; the counter runs 4 -> 1 (s_cmp_lg with 1): 3 times.
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.uint32) + 6)


def test_inline_keeps_fragments_on_request_and_nested_calls():
    inner = f"""\
  func.func @inc(%x : {V}) -> {V} {{
    %c1 = arith.constant 1 : i32
    %x1 = amdgcn.vop2 v_add_u32 %x, %c1, %x : ({V}, i32, {V}) -> {V}
    func.return %x1 : {V}
  }}
  func.func @inc2(%x : {V}) -> {V} {{
    %a = func.call @inc(%x) : ({V}) -> {V}
    %b = func.call @inc(%a) : ({V}) -> {V}
    func.return %b : {V}
  }}
"""
    module = module_of(f"""\
    %v = amdgcn.alloca : {V}
    %c0 = arith.constant 0 : i32
    %v1 = amdgcn.vop1 v_mov_b32 %v, %c0 : ({V}, i32) -> {V}
    %r = func.call @inc2(%v1) : ({V}) -> {V}
    amdgcn.sopp s_endpgm
""", inner)
    run_pipeline(module, "inline{keep=1},regalloc")
    text = print_ir(module)
    assert text.count("func.func") == 2 and "func.call" not in text.split("amdgcn.kernel")[1]
    assert asm_lines(module) == ["v_mov_b32 v0, 0", "v_add_u32 v0, 1, v0", "v_add_u32 v0, 1, v0",
                                 "s_endpgm"]


def test_recursive_calls_are_an_error_naming_the_cycle():
    frags = f"""\
  func.func @f(%x : {V}) -> {V} {{
    %y = func.call @g(%x) : ({V}) -> {V}
    func.return %y : {V}
  }}
  func.func @g(%x : {V}) -> {V} {{
    %y = func.call @f(%x) : ({V}) -> {V}
    func.return %y : {V}
  }}
"""
    module = module_of(f"""\
    %v = amdgcn.alloca : {V}
    %r = func.call @f(%v) : ({V}) -> {V}
    amdgcn.sopp s_endpgm
""", frags, filename="rec.mlir")
    with pytest.raises(InlineError) as info:
        inline_module(module)
    assert "recursive call: @f -> @g -> @f" in info.value.message
    assert str(info.value.location).startswith("rec.mlir:")


def test_inline_errors():
    # The verifier already rejects unknown callees and mismatched argument types in parsed
    # IR; the inliner checks again for modules built without verification.
    text = ('amdgcn.module @m target = "gfx942" {\n' + ADD2 +
            '  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {\n'
            f'    %v = amdgcn.alloca : {V}\n'
            f'    %r = func.call @nope(%v) : ({V}) -> {V}\n'
            '    amdgcn.sopp s_endpgm\n  }\n}\n')
    module = parse_ir(text, "e.mlir", verify=False)
    with pytest.raises(InlineError, match=r"no fragment named @nope .*fragments: @add2") as info:
        inline_module(module)
    assert str(info.value.location) == "e.mlir:10:5"
    module = parse_ir(text.replace("@nope(%v) : ({V})".replace("{V}", V), "@p(%v) : (" + V + ")")
                      .replace(ADD2, "  func.func @p(%x : !amdgcn.vgpr<7>) -> !amdgcn.vgpr {\n"
                               "    func.return %x : !amdgcn.vgpr<7>\n  }\n"), "e.mlir",
                      verify=False)
    with pytest.raises(InlineError, match=r"argument #0 of @p has type !amdgcn.vgpr<7>, the "
                                          r"call passes !amdgcn.vgpr"):
        inline_module(module)
    with pytest.raises(AsterismError, match="unknown option 'deep' of pass 'inline'"):
        run_pipeline(module, "inline{deep=1}")


# --- dce ----------------------------------------------------------------------------------


def test_dce_removes_dead_pure_instructions_and_chains():
    module = module_of(f"""\
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %a = amdgcn.alloca : {V}
    %b = amdgcn.alloca : {V}
    %d = amdgcn.alloca : {V}
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c7 = arith.constant 7 : i32
    %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : ({V}, i32) -> {V}
    %d1 = amdgcn.vop2 v_add_u32 %d, %c7, %a1 : ({V}, i32, {V}) -> {V}
    %d2 = amdgcn.vop3 v_mul_lo_u32 %d1, %d1, %d1 : ({V}, {V}, {V}) -> {V}
    %b1 = amdgcn.vop2 v_add_u32 %b, %c1, %a1 : ({V}, i32, {V}) -> {V}
    %off = amdgcn.off
    %z = amdgcn.alloca : !amdgcn.vgpr<[? + 2]>
    %z1 = amdgcn.vop1 v_mov_b64 %z, %c1 : (!amdgcn.vgpr<[? + 2]>, i32) -> !amdgcn.vgpr<[? + 2]>
    %st = amdgcn.global global_store_dword %z1, %b1, %off : (!amdgcn.vgpr<[? + 2]>, {V}, !amdgcn.off) -> !amdgcn.token
    %vcc = amdgcn.alloca : !amdgcn.special<vcc>
    %vcc1 = amdgcn.vopc v_cmp_eq_u32 %vcc, %c1, %a1 : (!amdgcn.special<vcc>, i32, {V}) -> !amdgcn.special<vcc>
    amdgcn.sopp s_waitcnt vmcnt = 0
    amdgcn.sopp s_nop %c0 : (i32) -> ()
    amdgcn.sopp s_endpgm
""")
    removed = dce_module(module)
    names = mnemonics(module)
    # d1 and d2 are never read: both go (the chain in one pass); the store, the compare
    # writing vcc, s_waitcnt and s_nop stay; the unused alloca %d and constant %c7 go too.
    assert names == ["v_mov_b32", "v_add_u32", "v_mov_b64", "global_store_dword",
                     "v_cmp_eq_u32", "s_waitcnt", "s_nop", "s_endpgm"]
    text = print_ir(module)
    assert removed >= 4 and "%c7" not in text and "%d =" not in text
    assert "amdgcn.kernarg_ptr" in text  # ABI inputs shape the descriptor


def test_dce_keeps_what_is_read_through_registers():
    module = module_of(f"""\
    %q = amdgcn.alloca : !amdgcn.vgpr<[8:12]>
    %v10 = amdgcn.alloca : !amdgcn.vgpr<10>
    %x = amdgcn.alloca : {V}
    %s = amdgcn.alloca : {S}
    %t = amdgcn.alloca : {S}
    %addr = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %off = amdgcn.off
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %w = amdgcn.vop1 v_mov_b32 %v10, %c1 : (!amdgcn.vgpr<10>, i32) -> !amdgcn.vgpr<10>
    %st = amdgcn.global global_store_dwordx4 %addr, %q, %off : (!amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[8:12]>, !amdgcn.off) -> !amdgcn.token
    %x1 = amdgcn.vop1 v_mov_b32 %x, %c1 : ({V}, i32) -> {V}
    %x2 = amdgcn.vop1 v_mov_b32 %x1, %c2 : ({V}, i32) -> {V}
    %s1 = amdgcn.sop1 s_mov_b32 %s, %c1 : ({S}, i32) -> {S}
    %s2 = amdgcn.sop1 s_mov_b32 %s1, %c2 : ({S}, i32) -> {S}
    %t1 = amdgcn.sop2 s_add_u32 %t, %s2, %c1 : ({S}, {S}, i32) -> {S}
    %t2 = amdgcn.sop2 s_add_u32 %t1, %s2, %c2 : ({S}, {S}, i32) -> {S}
    amdgcn.branch s_cbranch_scc1 ^end fallthrough ^mid
  ^mid:
    amdgcn.fallthrough ^end
  ^end:
    %st3 = amdgcn.global global_store_dword %addr, %x2, %off : (!amdgcn.vgpr<[0:2]>, {V}, !amdgcn.off) -> !amdgcn.token
    amdgcn.end_kernel
""")
    dce_module(module)
    text = print_ir(module)
    # v10 is stored as part of v[8:12]; x1 may leave lanes that x2's write keeps (a vector
    # chain): all three v_mov_b32 stay. s1 is overwritten by s2 before any read (scalar
    # writes are whole); t1 is overwritten by t2 and so is its SCC; t2's value is never
    # read, but the branch reads its SCC.
    assert mnemonics(module).count("v_mov_b32") == 3
    assert "%s1 = " not in text and "%s2 = amdgcn.sop1 s_mov_b32 %s, %c2" in text
    assert "%t1 = " not in text and "%t2 = amdgcn.sop2 s_add_u32 %t, %s2, %c2" in text


def test_dce_keeps_exec_writes_and_indexed_kernels():
    module = module_of(f"""\
    %x = amdgcn.alloca : {V}
    %e = amdgcn.alloca : !amdgcn.special<exec>
    %c1 = arith.constant 1 : i32
    %x1 = amdgcn.vop1 v_mov_b32 %x, %c1 : ({V}, i32) -> {V}
    %e1 = amdgcn.sop1 s_mov_b64 %e, %c1 : (!amdgcn.special<exec>, i32) -> !amdgcn.special<exec>
    amdgcn.sopp s_endpgm
""")
    dce_module(module)
    assert mnemonics(module) == ["s_mov_b64", "s_endpgm"]
    module = module_of(f"""\
    %x = amdgcn.alloca : {V}
    %m = amdgcn.alloca : !amdgcn.vgpr<4>
    %c1 = arith.constant 1 : i32
    %x1 = amdgcn.vop1 v_mov_b32 %x, %c1 : ({V}, i32) -> {V}
    %m1 = amdgcn.sop1 s_movrels_b32 %m, %y : (!amdgcn.sgpr<4>, !amdgcn.sgpr<6>) -> !amdgcn.sgpr<4>
    amdgcn.sopp s_endpgm
""".replace("%m = amdgcn.alloca : !amdgcn.vgpr<4>", "%m = amdgcn.alloca : !amdgcn.sgpr<4>\n"
            "    %y = amdgcn.alloca : !amdgcn.sgpr<6>"))
    dce_module(module)
    assert mnemonics(module) == ["v_mov_b32", "s_movrels_b32", "s_endpgm"]


# --- copy-prop ----------------------------------------------------------------------------


def test_copy_prop_then_dce_removes_the_copy():
    module = module_of(f"""\
    %s = amdgcn.alloca : {V}
    %d = amdgcn.alloca : {V}
    %r = amdgcn.alloca : {V}
    %addr = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %off = amdgcn.off
    %c1 = arith.constant 1 : i32
    %s1 = amdgcn.vop1 v_mov_b32 %s, %c1 : ({V}, i32) -> {V}
    %d1 = amdgcn.vop1 v_mov_b32 %d, %s1 : ({V}, {V}) -> {V}
    %r1 = amdgcn.vop2 v_add_u32 %r, %d1, %d1 : ({V}, {V}, {V}) -> {V}
    %st = amdgcn.global global_store_dword %addr, %r1, %off : (!amdgcn.vgpr<[0:2]>, {V}, !amdgcn.off) -> !amdgcn.token
    amdgcn.sopp s_endpgm
""")
    # %d1 -> %s1 twice in the add; %s1 -> 1 in the copy itself (a copy of an immediate).
    assert copy_prop_module(module) == 3
    text = print_ir(module)
    assert f"v_add_u32 %r, %s1, %s1 : ({V}, {V}, {V})" in text
    assert "v_mov_b32 %d, %c1" in text  # the copy stays (WYSIWYG) ...
    run_pipeline(module, "dce")
    assert "%d1" not in print_ir(module)  # ... until dce runs
    assert mnemonics(module) == ["v_mov_b32", "v_add_u32", "global_store_dword", "s_endpgm"]


def test_copy_prop_respects_redefinitions_slots_and_joins():
    module = module_of(f"""\
    %s = amdgcn.alloca : {S}
    %d = amdgcn.alloca : {V}
    %e = amdgcn.alloca : {V}
    %k = amdgcn.alloca : {V}
    %r = amdgcn.alloca : {V}
    %c1 = arith.constant 1 : i32
    %f = arith.constant 2.0 : f32
    %s1 = amdgcn.sop1 s_mov_b32 %s, %c1 : ({S}, i32) -> {S}
    %d1 = amdgcn.vop1 v_mov_b32 %d, %s1 : ({V}, {S}) -> {V}
    %k1 = amdgcn.vop1 v_mov_b32 %k, %f : ({V}, f32) -> {V}
    %r1 = amdgcn.vop2 v_add_u32 %r, %c1, %d1 : ({V}, i32, {V}) -> {V}
    %r2 = amdgcn.vop2 v_add_u32 %r1, %d1, %r1 : ({V}, {V}, {V}) -> {V}
    %r3 = amdgcn.vop2 v_add_f32 %r2, %k1, %r2 : ({V}, {V}, {V}) -> {V}
    %s2 = amdgcn.sop1 s_mov_b32 %s1, %c1 : ({S}, i32) -> {S}
    %r4 = amdgcn.vop2 v_add_u32 %r3, %d1, %r3 : ({V}, {V}, {V}) -> {V}
    amdgcn.sopc s_cmp_eq_u32 %s2, %c1 : ({S}, i32) -> ()
    amdgcn.branch s_cbranch_scc1 ^b fallthrough ^a
  ^a:
    %e1 = amdgcn.vop1 v_mov_b32 %e, %r4 : ({V}, {V}) -> {V}
    amdgcn.fallthrough ^b
  ^b:
    %r5 = amdgcn.vop2 v_add_u32 %r4, %e, %r4 : ({V}, {V}, {V}) -> {V}
    amdgcn.end_kernel
""")
    copy_prop_module(module)
    text = print_ir(module)
    # vsrc1 of v_add_u32 takes only VGPRs: %d1 stays there.
    assert f"v_add_u32 %r, %c1, %d1 : ({V}, i32, {V})" in text
    # src0 takes an SGPR: %s1 replaces %d1 (s is not written in between) ...
    assert f"v_add_u32 %r1, %s1, %r1 : ({V}, {S}, {V})" in text
    # ... and the inline constant 2.0 replaces %k1.
    assert f"v_add_f32 %r2, %f, %r2 : ({V}, f32, {V})" in text
    # After s is written again, %d1 is read as it is.
    assert f"v_add_u32 %r3, %d1, %r3 : ({V}, {V}, {V})" in text
    # The copy in ^a does not reach ^b along the other path. (^b reads e's register by its
    # entry-block name: ^a does not dominate ^b, so %e1 may not be used there.)
    assert f"v_add_u32 %r4, %e, %r4 : ({V}, {V}, {V})" in text


@pytest.mark.parametrize("seed", range(4))
def test_cleanup_keeps_what_random_kernels_compute(seed):
    from test_passes_regalloc_random import build, run

    reference = build(seed)
    cleaned = reference.clone()
    before = len(mnemonics(cleaned))
    run_pipeline(cleaned, "copy-prop,dce")
    assert len(mnemonics(cleaned)) < before  # the generator leaves dead values behind
    run_pipeline(reference, "regalloc")
    run_pipeline(cleaned, "regalloc")
    np.testing.assert_array_equal(run(cleaned), run(reference))
