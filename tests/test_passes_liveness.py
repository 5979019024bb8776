"""Liveness on register classes: hand-made CFGs (loops, branches), DPS chains, fixed ranges
with sub-register overlap, ABI inputs, pressure; live sets are computed by hand in comments."""

from __future__ import annotations

import pytest

from asterism.ir import parse_ir
from asterism.passes.liveness import (
    KernelLiveness,
    analyze_kernel,
    analyze_module,
    iter_bits,
)
from asterism.passes.machine import kernels_of
from asterism.target.hazards import soft_clause_kinds


def kernel_of(body: str, args: str = "", filename: str = "t.mlir") -> KernelLiveness:
    text = ('amdgcn.module @m target = "gfx942" {\n'
            f'  amdgcn.kernel @k args({args}) workgroup_size(64, 1, 1) {{\n'
            f'{body}'
            '  }\n}\n')
    module = parse_ir(text, filename)
    return analyze_kernel(kernels_of(module)[0])


def names(live: KernelLiveness, classes) -> set[str]:
    """The name hint of each class's first value (the alloca)."""
    return {c.first_value.name_hint for c in classes}


def op_named(live: KernelLiveness, result_name: str):
    for op in live.ops:
        if any(r.name_hint == result_name for r in op.results):
            return op
    raise KeyError(result_name)


LOOP = """\
    %i = amdgcn.alloca : !amdgcn.sgpr
    %x = amdgcn.alloca : !amdgcn.vgpr
    %t = amdgcn.alloca : !amdgcn.vgpr
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c10 = arith.constant 10 : i32
    %i0 = amdgcn.sop1 s_mov_b32 %i, %c0 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %x0 = amdgcn.vop1 v_mov_b32 %x, %c0 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    amdgcn.fallthrough ^loop
  ^loop:
    %t1 = amdgcn.vop2 v_add_u32 %t, %c1, %x0 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %x1 = amdgcn.vop2 v_add_u32 %x0, %t1, %x0 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %i1 = amdgcn.sop2 s_add_u32 %i0, %i0, %c1 : (!amdgcn.sgpr, !amdgcn.sgpr, i32) -> !amdgcn.sgpr
    amdgcn.sopc s_cmp_lt_u32 %i1, %c10 : (!amdgcn.sgpr, i32) -> ()
    amdgcn.branch s_cbranch_scc1 ^loop fallthrough ^exit
  ^exit:
    %y = amdgcn.alloca : !amdgcn.sgpr
    %y1 = amdgcn.vop1 v_readfirstlane_b32 %y, %x1 : (!amdgcn.sgpr, !amdgcn.vgpr) -> !amdgcn.sgpr
    amdgcn.end_kernel
"""


def test_loop_live_sets_by_hand():
    live = kernel_of(LOOP)
    entry, loop, exit_ = live.blocks
    # The counter i and the accumulator x go around the back edge; the temporary t is
    # written fresh in every iteration before it is read, so it is not live into the loop.
    assert names(live, live.live_in(entry)) == set()
    assert names(live, live.live_out(entry)) == {"i", "x"}
    assert names(live, live.live_in(loop)) == {"i", "x"}
    assert names(live, live.live_out(loop)) == {"i", "x"}
    assert names(live, live.live_in(exit_)) == {"x"}
    assert names(live, live.live_out(exit_)) == set()
    t1 = op_named(live, "t1")
    assert names(live, live.live_before(t1)) == {"i", "x"}
    assert names(live, live.live_after(t1)) == {"i", "x", "t"}
    x1 = op_named(live, "x1")
    assert names(live, live.live_after(x1)) == {"i", "x"}  # t dies at its only read
    y1 = op_named(live, "y1")
    assert names(live, live.live_before(y1)) == {"x"}
    assert names(live, live.live_after(y1)) == set()  # y is written and never read


def test_dps_chains_are_one_class_around_loops():
    live = kernel_of(LOOP)
    by_name = {v.name_hint: c for v, c in live.class_of.items()}
    assert by_name["x"] is by_name["x0"] is by_name["x1"]
    assert by_name["i"] is by_name["i0"] is by_name["i1"]
    assert by_name["t"] is by_name["t1"] and by_name["t"] is not by_name["x"]
    assert len(live.classes) == 4  # i, x, t, y
    assert all(c.relocatable for c in live.classes)


def test_loop_interference_and_pressure():
    live = kernel_of(LOOP)
    by_name = {v.name_hint: c for v, c in live.class_of.items()}
    graph = live.interference_graph()
    assert graph[by_name["t"]] == {by_name["x"]}
    assert graph[by_name["x"]] == {by_name["t"]}
    assert graph[by_name["i"]] == set()  # alone in the SGPR file while live (y comes after)
    assert live.interferes(by_name["t"], by_name["x"])
    assert not live.interferes(by_name["i"], by_name["y"])
    assert not live.interferes(by_name["t"], by_name["i"])  # different files
    p = live.pressure()
    assert (p["v"].peak, p["s"].peak, p["a"].peak) == (2, 1, 0)
    assert names(live, p["v"].live) == {"x", "t"}
    assert p["v"].location.line == 14 and not p["v"].after  # right before %x1 (line 14)
    assert live.loop_depth(live.blocks[1]) == 1 and live.loop_depth(live.blocks[0]) == 0


def test_interference_graph_matches_ranges():
    live = kernel_of(LOOP)
    graph = live.interference_graph()
    for a in live.classes:
        for b in live.classes:
            if a is not b:
                assert live.interferes(a, b) == (b in graph[a]), (a, b)


DIAMOND = """\
    %a = amdgcn.alloca : !amdgcn.vgpr
    %b = amdgcn.alloca : !amdgcn.vgpr
    %s = amdgcn.alloca : !amdgcn.sgpr
    %c1 = arith.constant 1 : i32
    %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %s1 = amdgcn.sop1 s_mov_b32 %s, %c1 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    amdgcn.sopc s_cmp_eq_u32 %s1, %c1 : (!amdgcn.sgpr, i32) -> ()
    amdgcn.branch s_cbranch_scc1 ^else fallthrough ^then
  ^then:
    %b1 = amdgcn.vop2 v_add_u32 %b, %c1, %a1 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    amdgcn.branch s_branch ^join
  ^else:
    %b2 = amdgcn.vop1 v_mov_b32 %b, %s1 : (!amdgcn.vgpr, !amdgcn.sgpr) -> !amdgcn.vgpr
    amdgcn.fallthrough ^join
  ^join:
    %b3 = amdgcn.vop2 v_add_u32 %b, %c1, %b : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    amdgcn.end_kernel
"""


def test_branches_join_live_sets():
    live = kernel_of(DIAMOND)
    entry, then, else_, join = live.blocks
    # a is read only in ^then, s only in ^else; b is written on both paths, read in ^join.
    assert names(live, live.live_out(entry)) == {"a", "s"}
    assert names(live, live.live_in(then)) == {"a"}
    assert names(live, live.live_in(else_)) == {"s"}
    assert names(live, live.live_in(join)) == {"b"}
    assert names(live, live.live_out(then)) == {"b"}
    assert live.succs == [[2, 1], [3], [3], []]


def test_sub_register_overlap_of_fixed_ranges():
    live = kernel_of("""\
    %q = amdgcn.alloca : !amdgcn.vgpr<[8:12]>
    %v10 = amdgcn.alloca : !amdgcn.vgpr<10>
    %r = amdgcn.alloca : !amdgcn.vgpr
    %addr = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %off = amdgcn.off
    %c1 = arith.constant 1 : i32
    %q1, %tok = amdgcn.global global_load_dwordx4 %q, %addr, %off : (!amdgcn.vgpr<[8:12]>, !amdgcn.vgpr<[0:2]>, !amdgcn.off) -> (!amdgcn.vgpr<[8:12]>, !amdgcn.token)
    %r1 = amdgcn.vop2 v_add_u32 %r, %c1, %v10 : (!amdgcn.vgpr, i32, !amdgcn.vgpr<10>) -> !amdgcn.vgpr
    %tok2 = amdgcn.global global_store_dwordx4 %addr, %q1, %off : (!amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[8:12]>, !amdgcn.off) -> !amdgcn.token
    %tok3 = amdgcn.global global_store_dword %addr, %r1, %off : (!amdgcn.vgpr<[0:2]>, !amdgcn.vgpr, !amdgcn.off) -> !amdgcn.token
    amdgcn.sopp s_endpgm
""")
    by_name = {v.name_hint: c for v, c in live.class_of.items()}
    q, v10, r = by_name["q"], by_name["v10"], by_name["r"]
    assert list(q.units) == [8, 9, 10, 11] and list(v10.units) == [10]
    # v10 is read (through its own class) before any write: live from the entry.
    assert v10 in live.live_in(live.blocks[0])
    # r is written while q (v8..v11) is live: they interfere, so r may not go to v8..v11;
    # the class of v10 itself ends at the read by r's own instruction.
    assert live.interferes(r, q) and not live.interferes(r, v10)
    # Pressure counts v8..v11 once although v10 is a second class over v10.
    p = live.pressure()["v"]
    assert p.peak == 2 + 4 + 1  # addr pair, q, r


def test_vector_write_continuing_a_chain_keeps_older_lanes_live():
    live = kernel_of("""\
    %x = amdgcn.alloca : !amdgcn.vgpr
    %t = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %x1 = amdgcn.vop1 v_mov_b32 %x, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %t1 = amdgcn.vop1 v_mov_b32 %t, %c2 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %x2 = amdgcn.vop1 v_mov_b32 %x1, %t1 : (!amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %x3 = amdgcn.vop2 v_add_u32 %x2, %c1, %x2 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    amdgcn.sopp s_endpgm
""")
    by_name = {v.name_hint: c for v, c in live.class_of.items()}
    x, t = by_name["x"], by_name["t"]
    # %x2's destination is %x1 (an earlier result): the write may leave lanes of %x1, so x
    # is live from %x1 on and t cannot take its register.
    assert x in live.live_after(op_named(live, "t1"))
    assert live.interferes(x, t)


def test_fresh_destination_does_not_keep_the_old_value():
    live = kernel_of("""\
    %x = amdgcn.alloca : !amdgcn.vgpr
    %t = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %x1 = amdgcn.vop1 v_mov_b32 %x, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %t1 = amdgcn.vop1 v_mov_b32 %t, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %x2 = amdgcn.vop1 v_mov_b32 %x, %t1 : (!amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    amdgcn.sopp s_endpgm
""")
    by_name = {v.name_hint: c for v, c in live.class_of.items()}
    # %x2 = v_mov_b32 %x (the alloca): a new value, the dead %x1 does not stay live.
    assert by_name["x"] not in live.live_after(op_named(live, "x1"))
    assert not live.interferes(by_name["x"], by_name["t"])


def test_tied_destination_is_read():
    live = kernel_of("""\
    %acc = amdgcn.alloca : !amdgcn.vgpr
    %a = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1.0 : f32
    %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : (!amdgcn.vgpr, f32) -> !amdgcn.vgpr
    %acc1 = amdgcn.vop2 v_fmac_f32 %acc, %a1, %a1 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    amdgcn.sopp s_endpgm
""")
    acc = live.class_of[op_named(live, "acc1").results[0]]
    # v_fmac reads its destination: the (never written) accumulator is live from the entry.
    assert acc in live.live_in(live.blocks[0])
    assert acc in live.reads_of(op_named(live, "acc1"))


def test_abi_inputs_are_live_from_the_entry():
    live = kernel_of("""\
    %v = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %v1 = amdgcn.vop2 v_add_u32 %v, %c1, %v : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr
    %v2 = amdgcn.vop2 v_add_u32 %v1, %c1, %tid : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    amdgcn.sopp s_endpgm
""")
    tid = live.class_of[op_named(live, "tid").results[0]]
    assert tid.abi and tid.fixed == 0 and not tid.relocatable
    assert tid in live.live_in(live.blocks[0])  # the hardware wrote v0 before the kernel
    assert tid in live.live_at(0)


def test_mfma_wide_destination_is_early_clobber():
    live = kernel_of("""\
    %a = amdgcn.alloca : !amdgcn.vgpr<[? + 2], align 2>
    %b = amdgcn.alloca : !amdgcn.vgpr<[? + 2], align 2>
    %d = amdgcn.alloca : !amdgcn.vgpr<[? + 16], align 2>
    %z = arith.constant 0 : i32
    %a1 = amdgcn.vop1 v_mov_b64 %a, %z : (!amdgcn.vgpr<[? + 2], align 2>, i32) -> !amdgcn.vgpr<[? + 2], align 2>
    %b1 = amdgcn.vop1 v_mov_b64 %b, %z : (!amdgcn.vgpr<[? + 2], align 2>, i32) -> !amdgcn.vgpr<[? + 2], align 2>
    %d1 = amdgcn.mai v_mfma_f32_32x32x8_f16 %d, %a1, %b1, %z : (!amdgcn.vgpr<[? + 16], align 2>, !amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr<[? + 2], align 2>, i32) -> !amdgcn.vgpr<[? + 16], align 2>
    amdgcn.sopp s_endpgm
""")
    by_name = {v.name_hint: c for v, c in live.class_of.items()}
    # a and b die at the MFMA, but a 16-register result may not overlap its sources.
    assert live.interferes(by_name["d"], by_name["a"])
    assert live.interferes(by_name["d"], by_name["b"])
    assert by_name["d"].align == 2 and by_name["a"].align == 2
    assert live.pressure()["v"].peak == 20


def test_iter_bits_and_module_analysis():
    assert list(iter_bits(0)) == [] and list(iter_bits(0b1010_0001)) == [0, 5, 7]
    assert list(iter_bits(1 << 300)) == [300]
    module = parse_ir('amdgcn.module @m target = "gfx942" {\n'
                      '  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {\n'
                      '    amdgcn.sopp s_endpgm\n  }\n}\n')
    result = analyze_module(module)
    assert list(result) == ["k"]
    assert result["k"].pressure()["v"].peak == 0


def test_liveness_pass_reports_on_stderr(capsys):
    from asterism.passes.pipeline import run_pipeline

    text = ('amdgcn.module @m target = "gfx942" {\n'
            '  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {\n' + LOOP + '  }\n}\n')
    module = parse_ir(text, "loop.mlir")
    before = str(module)
    run_pipeline(module, "liveness")
    assert str(module) == before  # analysis only
    err = capsys.readouterr().err
    assert "liveness @k:" in err and "VGPR  peak    2 at loop.mlir:14:5 (before amdgcn.vop2 v_add_u32)" in err


@pytest.mark.parametrize("n", [1, 50])
def test_straight_line_pressure_counts_chains(n):
    # n independent values, each written then all read at the end: peak n.
    lines = ["    %c1 = arith.constant 1 : i32\n"]
    for k in range(n):
        lines.append(f"    %v{k} = amdgcn.alloca : !amdgcn.vgpr\n")
        lines.append(f"    %w{k} = amdgcn.vop1 v_mov_b32 %v{k}, %c1 : (!amdgcn.vgpr, i32) -> "
                     "!amdgcn.vgpr\n")
    lines.append("    %s = amdgcn.alloca : !amdgcn.vgpr\n")
    for k in range(n):
        lines.append(f"    %s{k} = amdgcn.vop2 v_add_u32 %s, %s, %w{k} : (!amdgcn.vgpr, "
                     "!amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr\n")
    lines.append("    amdgcn.sopp s_endpgm\n")
    live = kernel_of("".join(lines))
    # Before the first add: the n values; the sum s (read uninitialized) is live from the
    # entry, so the peak is n + 1.
    assert live.pressure()["v"].peak == n + 1


def clause_kernel(features: str | None = None, *, wait: bool = False, pinned: bool = False):
    """Three global loads back to back (one VMEM soft clause unless a wait parts them); the
    address of the first dies at it, and the second may be pinned."""
    from asterism.builder import ModuleBuilder

    kb = ModuleBuilder("m", "gfx942", features).kernel("k")
    p = kb.s_load_dwordx2(None, kb.kernarg_ptr(), kb.arg_buffer("p", "u32", "read_only"))
    kb.s_waitcnt(lgkmcnt=0)
    off1 = kb.v_lshlrev_b32(None, 2, kb.workitem_id("x"))
    off2 = kb.v_add_u32(None, 256, off1)
    x = kb.global_load_dword(None, off1, p)
    if wait:
        kb.s_waitcnt(vmcnt=0)
    y = kb.global_load_dword(kb.v(20) if pinned else None, off2, p)
    z = kb.global_load_dword(None, off2, p, offset=4)
    kb.s_waitcnt(vmcnt=0)
    kb.global_store_dword(off2, kb.v_add_u32(None, kb.v_add_u32(None, x, y), z), p)
    kb.s_endpgm()
    module = kb.finish()
    return kernels_of(module)[0], (off1, off2, x, y, z)


def test_soft_clause_sources_stay_live_until_later_writes():
    kernel, (off1, off2, x, y, z) = clause_kernel()
    plain = KernelLiveness(kernel)
    held = KernelLiveness(kernel, soft_clauses=soft_clause_kinds("gfx942"))
    c = {name: held.class_of[v] for name, v in
         (("off1", off1), ("off2", off2), ("x", x), ("y", y), ("z", z))}
    cp = {name: plain.class_of[v] for name, v in
          (("off1", off1), ("off2", off2), ("x", x), ("y", y), ("z", z))}
    # Without clauses off1 dies at the first load: y and z may take its register, and the
    # loads' destinations may take their own addresses' registers (x on off1).
    assert not plain.interferes(cp["y"], cp["off1"]) and not plain.interferes(cp["z"], cp["off1"])
    assert not plain.interferes(cp["x"], cp["off1"])
    # In the clause: no destination on a register the clause reads up to it.
    for dest in ("x", "y", "z"):
        for src in ("off1", "off2"):
            assert held.interferes(c[dest], c[src]), (dest, src)
    assert held.pressure()["v"].peak == plain.pressure()["v"].peak + 1  # off1 held over y


def test_soft_clauses_end_at_waits_and_pinned_destinations():
    kernel, (off1, _off2, x, y, z) = clause_kernel(wait=True)
    live = KernelLiveness(kernel, soft_clauses=soft_clause_kinds("gfx942"))
    # the s_waitcnt ends the clause of the first load: y and z may reuse off1's register
    assert not live.interferes(live.class_of[y], live.class_of[off1])
    assert not live.interferes(live.class_of[z], live.class_of[off1])
    kernel, (off1, _off2, x, y, z) = clause_kernel(pinned=True)
    live = KernelLiveness(kernel, soft_clauses=soft_clause_kinds("gfx942"))
    # a pinned destination is left as written and nothing is held across it
    assert not live.interferes(live.class_of[z], live.class_of[off1])
    assert live.interferes(live.class_of[x], live.class_of[off1])
