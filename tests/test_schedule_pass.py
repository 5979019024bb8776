"""The schedule pass (asterism.passes.schedule): dependencies it must keep, regions it must
not cross, keep-order spans, the cycle model (hand-computed estimates), options.

Timing numbers used below (target/data/timing.toml, gfx942): one issue slot every 4 cycles;
v_mfma_f32_16x16x16_f16 has 4 passes = 16 cycles on the matrix core and its result is ready
16 + 4 cycles after issue; a DS read's result 64 cycles after issue, ds_read_b64 keeps the
LDS 4 cycles; a global load's result 600 cycles after issue (memory.hbm)."""

from __future__ import annotations

import random

import pytest

import asterism
from asterism.builder import KernelBuilder, unit_sequence
from asterism.errors import ParseError
from asterism.ir import verify_module
from asterism.ir.ops import InstructionOp, KernelOp
from asterism.isa import get_isa
from asterism.passes import schedule as ps
from asterism.passes.pipeline import parse_pipeline
from asterism.target.hazards import rules_for
from asterism.target.timing import get_timing


def nodes_of(module, block: int = 0) -> list[ps.Node]:
    kernel = next(op for op in module.walk() if isinstance(op, KernelOp))
    isa = get_isa("gfx942")
    facts = ps._Facts(isa)
    return [facts.node(op, i) for i, op in enumerate(kernel.body.blocks[block].ops)]


def edges(module, counters: set[str] = frozenset()) -> tuple[list[str], set[tuple[int, int]]]:
    """(mnemonics, reachability) over the instructions of the first block (one region)."""
    nodes = [n for n in nodes_of(module) if not n.pure and not n.barrier]
    deps = ps._Deps(nodes, get_timing("gfx942"), set(counters))
    index = {n: k for k, n in enumerate(nodes)}
    reach: set[tuple[int, int]] = set()
    for n in reversed(nodes):
        for e in deps.succ[n]:
            if e.dst in index:
                reach.add((index[n], index[e.dst]))
                reach |= {(index[n], j) for (i, j) in set(reach) if i == index[e.dst]}
    return [n.mnemonic for n in nodes], reach


def test_register_dependencies_count_sub_register_overlap():
    kb = KernelBuilder("k")
    kb.v_lshlrev_b64(kb.v[10:12], 1, kb.v[4:6])  # 0 writes v10, v11
    kb.ds_read_b32(kb.v(20), kb.v(11))  # 1 reads v11: RAW on 0
    kb.ds_read_b32(kb.v(21), kb.v(12))  # 2 independent
    kb.v_mov_b32(kb.v(10), 0)  # 3 WAW on 0 (v10); 1 does not read v10
    kb.v_mov_b32(kb.v(11), 0)  # 4 WAR on 1 (v11), WAW on 0
    kb.v_add_u32(kb.v(22), kb.v(20), kb.v(21))  # 5 RAW on 1 and 2
    _names, reach = edges(kb.finish())
    for pair in [(0, 1), (0, 3), (0, 4), (1, 4), (1, 5), (2, 5)]:
        assert pair in reach, pair
    for pair in [(0, 2), (1, 3), (2, 3), (2, 4), (3, 4), (3, 5)]:
        assert pair not in reach, pair


def test_relocatable_values_depend_through_their_chain():
    kb = KernelBuilder("k")
    r = kb.vreg()
    x1 = kb.v_mov_b32(r, 1)  # 0
    kb.v_add_u32(kb.v(5), x1, x1)  # 1 reads the chain
    kb.v_mov_b32(x1, 2)  # 2 rewrites the chain (one register after allocation): WAR on 1
    q = kb.vreg()
    kb.v_mov_b32(q, 3)  # 3 another value
    acc = kb.vregs(4, align=4)
    m = kb.v_mfma_f32_16x16x16_f16(acc, kb.v[0:2], kb.v[2:4], 0)  # 4
    kb.ds_write_b64(kb.v(9), kb.v[6:8])  # 5 independent
    kb.v_mfma_f32_16x16x16_f16(m, kb.v[0:2], kb.v[2:4], m)  # 6 SrcC chain on 4
    _names, reach = edges(kb.finish())
    assert {(0, 1), (0, 2), (1, 2), (4, 6)} <= reach
    assert not {(0, 3), (1, 3), (2, 3), (4, 5), (3, 6)} & reach


def test_implicit_registers_come_from_the_database():
    kb = KernelBuilder("k")
    kb.s_add_u32(kb.s(4), kb.s(5), 1)  # 0 writes scc
    kb.s_cselect_b32(kb.s(6), kb.s(7), kb.s(8))  # 1 reads scc
    kb.s_mov_b32(kb.m0, kb.s(9))  # 2 writes m0
    kb.ds_read_b32(kb.v(3), kb.v(1))  # 3 reads m0 (gfx9 LDS instructions)
    kb.v_cmp_eq_u32_e64(kb.s[12:14], kb.v(1), kb.v(2))  # 4 VOP3: writes s[12:13], not vcc
    kb.v_cndmask_b32(kb.v(4), kb.v(1), kb.v(2), kb.vcc)  # 5 reads vcc
    kb.v_cmp_eq_u32(kb.vcc, kb.v(1), kb.v(2))  # 6 VOPC: writes vcc
    kb.v_cndmask_b32(kb.v(5), kb.v(1), kb.v(2), kb.vcc)  # 7 reads vcc
    kb.s_mov_b64(kb.exec, kb.s[10:12])  # 8 writes exec
    kb.v_add_u32(kb.v(6), kb.v(1), kb.v(2))  # 9 reads exec
    kb.s_add_u32(kb.s(20), kb.s(21), 1)  # 10 writes scc again: after 1 read it
    names, reach = edges(kb.finish())
    assert names[4] == "v_cmp_eq_u32" and names[6] == "v_cmp_eq_u32"
    assert {(0, 1), (2, 3), (6, 7), (5, 6), (8, 9), (1, 10), (0, 10)} <= reach
    assert not {(4, 5), (4, 7), (2, 5), (0, 3)} & reach
    assert (5, 8) in reach and (3, 8) in reach  # exec readers before its write stay before


def test_memory_order_by_space():
    kb = KernelBuilder("k")
    kb.ds_write_b32(kb.v(1), kb.v(2))  # 0 LDS store
    kb.ds_read_b32(kb.v(3), kb.v(1))  # 1 LDS load: after 0
    kb.global_store_dword(kb.v[4:6], kb.v(2), kb.off)  # 2 global store: free of LDS
    kb.ds_read_b32(kb.v(7), kb.v(1), offset=4)  # 3 LDS load: after 0, not 2
    kb.global_load_dword(kb.v(8), kb.v[4:6], kb.off)  # 4 global load: after 2
    kb.global_load_dword(kb.v(9), kb.v[4:6], kb.off, offset=4)  # 5 after 2, not 4
    kb.s_load_dword(kb.s(4), kb.s[0:2], 0)  # 6 scalar load of global memory: after 2
    kb.flat_store_dword(kb.v[10:12], kb.v(2))  # 7 FLAT: any space, after every load above
    kb.ds_read_b32(kb.v(13), kb.v(1), offset=8)  # 8 after 7
    kb.buffer_load_dword(kb.v(1), kb.s[16:20], 0, offen=True, lds=True)  # 9 writes LDS
    kb.ds_read_b32(kb.v(14), kb.v(1), offset=12)  # 10 after 9
    _names, reach = edges(kb.finish())
    assert {(0, 1), (0, 3), (2, 4), (2, 5), (2, 6), (1, 7), (4, 7), (6, 7), (7, 8),
            (9, 10)} <= reach
    assert not {(2, 3), (4, 5), (1, 3), (0, 2)} & reach


def test_counter_order_policy():
    def kernel(partial: bool):
        kb = KernelBuilder("k")
        kb.global_load_dword(kb.v(8), kb.v[4:6], kb.off)  # 0
        kb.global_load_dword(kb.v(9), kb.v[4:6], kb.off, offset=4)  # 1
        kb.ds_read_b32(kb.v(3), kb.v(1))  # 2
        kb.ds_read_b32(kb.v(7), kb.v(1), offset=4)  # 3
        kb.s_waitcnt(vmcnt=1 if partial else 0)
        kb.s_endpgm()
        return kb.finish()

    for partial, want in ((False, set()), (True, {"vmcnt"})):
        blocks = [b for op in kernel(partial).walk() if isinstance(op, KernelOp)
                  for b in op.body.blocks]
        assert ps._keep_counters(blocks, "auto") == want
    assert ps._keep_counters([], "keep") == {"vmcnt", "lgkmcnt", "expcnt"}
    assert ps._keep_counters([], "free") == set()
    _n, reach = edges(kernel(True), {"vmcnt"})
    assert (0, 1) in reach and (2, 3) not in reach
    _n, reach = edges(kernel(True), {"vmcnt", "lgkmcnt"})
    assert {(0, 1), (2, 3)} <= reach
    _n, reach = edges(kernel(True), set())
    assert not reach


def mfma_ds_kernel(n_mfma: int, n_ds: int, n_gl: int = 0, *, target: str = "gfx942",
                   barrier: str | None = None, keep: bool = False):
    """n_mfma independent MFMAs, then n_ds DS reads and n_gl global loads (the next
    iteration's operands): the naive order of a GEMM inner loop."""
    kb = KernelBuilder("k", target)
    ctx = kb.keep_order() if keep else None
    if ctx:
        ctx.__enter__()
    for i in range(n_mfma):
        kb.v_mfma_f32_16x16x16_f16(kb.a[4 * i:4 * i + 4], kb.v[0:2], kb.v[2:4],
                                   kb.a[4 * i:4 * i + 4])
    if ctx:
        ctx.__exit__(None, None, None)
    if barrier:
        kb.emit(barrier, 0) if barrier in ("s_nop", "s_setprio", "s_sleep") else \
            kb.emit(barrier)
    for i in range(n_ds):
        kb.ds_read_b64(kb.v[10 + 2 * i:12 + 2 * i], kb.v(4), offset=8 * i)
    for i in range(n_gl):
        kb.global_load_dwordx4(kb.v[40 + 4 * i:44 + 4 * i], kb.v[6:8], kb.off, offset=16 * i)
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_mfma_ds_example_cycles_by_hand(target):
    """4 MFMAs then 4 DS reads; L = the LDS latency (64 on both: timing.toml's sourced value,
    gfx950 inheriting gfx942's since no fitted value is a default).

    Input order: the MFMAs issue at 0, 16, 32, 48 (each waits for the matrix core), the DS
    reads at 52, 56, 60, 64; the last read lands at 64 + L (128).
    Scheduled: MFMA at 0; DS reads at 4, 8, 12, 16 in its shadow; MFMAs at 20, 36, 52 (at 16
    the last DS read has the longer path: 64 vs the 3 MFMAs' 48 cycles of work); last DS
    read lands at 16 + 64 = 80, last MFMA at 52 + 20 = 72: 80.
    """
    lds = get_timing(target).memory["lds"]
    module = mfma_ds_kernel(4, 4, target=target)
    assert ps.estimate_cycles(module)[0].cycles == 64 + lds
    stats = ps.schedule_module(module)
    assert lds == 64
    after, order = 80, ["mfma"] + ["ds_read"] * 4 + ["mfma"] * 3 + ["branch"]
    assert (stats.cycles_before, stats.cycles_after, stats.reordered) == (64 + lds, after, 1)
    assert unit_sequence(module) == order
    assert ps.estimate_cycles(module)[0].cycles == after
    verify_module(module)


def test_gemm_loop_shape_cycles_by_hand():
    """16 MFMAs, 8 DS reads, 4 global loads. Input: MFMAs at 0..240 (16 apart), DS reads at
    244..272, loads at 276..288: the last load lands at 288 + 600 = 888 (a vector read costs
    memory.hbm). Scheduled, the loads go first (0, 4, 8, 12: the longest paths) and land by
    12 + 600 = 612; the 16 MFMAs (256
    cycles of matrix core work) and the DS reads in their shadows finish long before."""
    module = mfma_ds_kernel(16, 8, 4)
    stats = ps.schedule_module(module)
    assert (stats.cycles_before, stats.cycles_after) == (888, 612)
    seq = unit_sequence(module)
    assert seq[:4] == ["vmem_read"] * 4 and seq[4] == "mfma"
    # No two MFMAs back to back while DS reads were waiting: each gap is filled.
    first_ds_run = seq.index("ds_read")
    assert seq[first_ds_run - 1] == "mfma"
    mfma_pos = [i for i, k in enumerate(seq) if k == "mfma"]
    last_ds = max(i for i, k in enumerate(seq) if k == "ds_read")
    assert all(b - a > 1 for a, b in zip(mfma_pos, mfma_pos[1:]) if b < last_ds)


@pytest.mark.parametrize("barrier", ["s_waitcnt", "s_nop", "s_barrier", "s_setprio",
                                     "s_sleep", "s_memtime"])
def test_nothing_crosses_a_barrier(barrier):
    if barrier == "s_memtime":
        kb = KernelBuilder("k")
        for i in range(4):
            kb.v_mfma_f32_16x16x16_f16(kb.a[4 * i:4 * i + 4], kb.v[0:2], kb.v[2:4],
                                       kb.a[4 * i:4 * i + 4])
        kb.s_memtime(kb.s[20:22])
        for i in range(4):
            kb.ds_read_b64(kb.v[10 + 2 * i:12 + 2 * i], kb.v(4), offset=8 * i)
        kb.s_endpgm()
        module = kb.finish()
    else:
        module = mfma_ds_kernel(4, 4, barrier=barrier)
    before = unit_sequence(module, mnemonics=True)
    stats = ps.schedule_module(module)
    assert unit_sequence(module, mnemonics=True) == before
    assert stats.reordered == 0
    # Control: without the barrier the same code is reordered (previous test).


def test_keep_order_spans_are_untouched():
    module = mfma_ds_kernel(4, 4, keep=True)
    before = unit_sequence(module, mnemonics=True)
    ps.schedule_module(module)
    assert unit_sequence(module, mnemonics=True) == before
    # A span in the middle: ops around it move, but none crosses it or enters it.
    kb = KernelBuilder("k")
    kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
    kb.v_mfma_f32_16x16x16_f16(kb.a[4:8], kb.v[0:2], kb.v[2:4], kb.a[4:8])
    kb.ds_read_b64(kb.v[10:12], kb.v(4))
    with kb.keep_order("span"):
        kb.v_mfma_f32_16x16x16_f16(kb.a[8:12], kb.v[0:2], kb.v[2:4], kb.a[8:12])
        kb.v_mfma_f32_16x16x16_f16(kb.a[12:16], kb.v[0:2], kb.v[2:4], kb.a[12:16])
        kb.ds_read_b64(kb.v[12:14], kb.v(4), offset=8)
    kb.v_mfma_f32_16x16x16_f16(kb.a[16:20], kb.v[0:2], kb.v[2:4], kb.a[16:20])
    kb.ds_read_b64(kb.v[14:16], kb.v(4), offset=16)
    kb.s_endpgm()
    module = kb.finish()
    ps.schedule_module(module)
    ops = [op for op in module.walk() if isinstance(op, InstructionOp)]
    text = [(op.mnemonic_text, ps._keep_key(op)) for op in ops]
    assert text[3:6] == [("v_mfma_f32_16x16x16_f16", "span"),
                         ("v_mfma_f32_16x16x16_f16", "span"), ("ds_read_b64", "span")]
    # Before the span the DS read (64-cycle path vs 32 cycles of MFMA work) moves first: it
    # lands at 64 instead of 32 + 64; after the span likewise. Nothing crossed the span.
    assert [m for m, _k in text[:3]] == ["ds_read_b64", "v_mfma_f32_16x16x16_f16",
                                         "v_mfma_f32_16x16x16_f16"]
    assert [m for m, _k in text[6:8]] == ["ds_read_b64", "v_mfma_f32_16x16x16_f16"]
    assert [k for _m, k in text] == [None] * 3 + ["span"] * 3 + [None] * 3


def test_hazard_wait_states_of_linked_pairs():
    def pair(build, target="gfx942"):
        kb = KernelBuilder("k", target)
        build(kb)
        nodes = [n for n in nodes_of(kb.finish()) if not n.pure]
        return ps.hazard_wait_states(rules_for(target), nodes[0], nodes[1])

    def valu_then_mfma(kb):
        kb.v_mov_b32(kb.v(0), 1)
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])

    def mfma_chain(kb):
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])

    def mfma_overlap(kb):
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
        kb.v_mfma_f32_16x16x16_f16(kb.a[2:6], kb.v[0:2], kb.v[2:4], kb.a[2:6])

    def mfma_then_valu(kb):
        kb.v_mfma_f32_16x16x16_f16(kb.v[8:12], kb.v[0:2], kb.v[2:4], kb.v[8:12])
        kb.v_add_f32(kb.v(20), kb.v(9), kb.v(9))

    def unrelated(kb):
        kb.v_mov_b32(kb.v(30), 1)
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])

    assert pair(valu_then_mfma) == 2  # valu_vgpr_mfma
    assert pair(mfma_chain) == 0  # same SrcC range: forwarded
    assert pair(mfma_overlap) == 5  # xdl_srcc_overlap: 4 passes + 1
    assert pair(mfma_then_valu) == 7  # xdl_valu_read: 4 passes + 3
    assert pair(mfma_then_valu, "gfx950") == 8  # CDNA4: one more
    assert pair(unrelated) == 0


def test_hazard_links_follow_program_order(monkeypatch):
    # Several VALU writes feed one MFMA: the links come in program order whatever order a
    # set of the producers iterates in (Node hashes by address; here forced backwards).
    kb = KernelBuilder("k")
    for i in range(4):
        kb.v_mov_b32(kb.v(i), i)
    kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
    nodes = [n for n in nodes_of(kb.finish()) if not n.pure]
    monkeypatch.setattr(ps.Node, "__hash__", lambda n: 1000 - n.pos)
    links = ps._hazard_links([nodes], {}, rules_for("gfx942"))
    producers = [p.pos for p, c, _need in links if c is nodes[-1]]
    assert len(producers) == 4 and producers == sorted(producers)


def test_regions_and_multi_block_kernels_stay_valid():
    kb = KernelBuilder("k")
    kb.s_mov_b32(kb.s(12), 3)
    head = kb.label("loop")
    c = kb.const(7)  # defined mid-block, used below: stays before its user
    for i in range(3):
        kb.v_mfma_f32_16x16x16_f16(kb.a[4 * i:4 * i + 4], kb.v[0:2], kb.v[2:4],
                                   kb.a[4 * i:4 * i + 4])
    for i in range(3):
        kb.ds_read_b64(kb.v[10 + 2 * i:12 + 2 * i], kb.v(4), offset=8 * i)
    kb.v_add_u32(kb.v(20), c, kb.v(21))
    kb.s_sub_u32(kb.s(12), kb.s(12), 1)
    kb.s_cmp_lg_u32(kb.s(12), 0)
    kb.s_cbranch_scc1(head)
    kb.s_endpgm()
    module = kb.finish()
    stats = ps.schedule_module(module)
    assert stats.reordered >= 1
    verify_module(module)
    kernel = next(op for op in module.walk() if isinstance(op, KernelOp))
    for block in kernel.body.blocks:
        seen: set = set()
        for op in block.ops:
            for arg in op.operands:
                assert arg.owner.parent_block() is not block or arg.owner in seen, op
            seen.add(op)
        assert block.last_op is not None and block.last_op.name in (
            "amdgcn.branch", "amdgcn.fallthrough", "amdgcn.end_kernel")
    loop = kernel.body.blocks[1]
    names = [op.mnemonic_text for op in loop.ops if isinstance(op, InstructionOp)]
    # The loop counter: s_sub_u32 writes scc and s12, s_cmp reads s12 and writes scc.
    assert names.index("s_sub_u32") < names.index("s_cmp_lg_u32")
    assert names[0] == "ds_read_b64" and loop.last_op.name == "amdgcn.branch"
    asterism.compile(module)


def test_pipeline_options():
    assert [s.name for s in parse_pipeline("schedule{guard=off,counters=keep}")] == ["schedule"]
    module = mfma_ds_kernel(4, 4)
    asterism.optimize(module, "schedule{guard=off,counters=keep}")
    assert unit_sequence(module)[:2] == ["mfma", "ds_read"]
    with pytest.raises(ParseError, match="unknown option 'bogus' of pass 'schedule'"):
        asterism.optimize(mfma_ds_kernel(1, 1), "schedule{bogus=1}")
    with pytest.raises(ParseError, match="option 'guard' of 'schedule' expects one of "
                                         "hazards, off, got 'maybe'"):
        asterism.optimize(mfma_ds_kernel(1, 1), "schedule{guard=maybe}")
    with pytest.raises(ParseError, match="option 'counters' of 'schedule' expects one of "
                                         "auto, keep, free, got 'some'"):
        asterism.optimize(mfma_ds_kernel(1, 1), "schedule{counters=some}")


def random_region_kernel(seed: int):
    rng = random.Random(seed)
    kb = KernelBuilder("k")
    for _ in range(rng.randrange(5, 40)):
        pick = rng.randrange(6)
        r = rng.randrange(8)
        if pick == 0:
            kb.v_mfma_f32_16x16x16_f16(kb.a[4 * r:4 * r + 4], kb.v[2 * r:2 * r + 2],
                                       kb.v[16:18], kb.a[4 * r:4 * r + 4])
        elif pick == 1:
            kb.ds_read_b64(kb.v[2 * r:2 * r + 2], kb.v(40), offset=8 * r)
        elif pick == 2:
            kb.ds_write_b32(kb.v(40), kb.v(20 + r), offset=4 * r)
        elif pick == 3:
            kb.global_load_dword(kb.v(20 + r), kb.v[42:44], kb.off, offset=4 * r)
        elif pick == 4:
            kb.v_exp_f32(kb.v(20 + r), kb.v(20 + rng.randrange(8)))
        else:
            kb.v_add_u32(kb.v(20 + r), kb.v(20 + rng.randrange(8)), kb.v(28))
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("seed", range(20))
def test_never_worse_than_the_input_in_the_model(seed):
    module = random_region_kernel(seed)
    before = ps.estimate_cycles(module)[0].cycles
    names = sorted(unit_sequence(module, mnemonics=True))
    stats = ps.schedule_module(module)
    after = ps.estimate_cycles(module)[0].cycles
    assert after <= before and stats.cycles_after <= stats.cycles_before
    assert sorted(unit_sequence(module, mnemonics=True)) == names
    verify_module(module)


@pytest.mark.parametrize("count,cycles", [(1, 612), (0, 616)])
def test_estimate_waits_for_the_counted_loads(count, cycles):
    """Loads at 0 and 4 land at 600 and 604; s_waitcnt vmcnt(1) issues when the first has
    landed (600), vmcnt(0) when both have (604); then v_add (+4) and s_endpgm (+4, its own 4
    cycles to finish): 600 + 12 = 612 or 604 + 12 = 616."""
    kb = KernelBuilder("k")
    kb.global_load_dword(kb.v(1), kb.v[2:4], kb.off)
    kb.global_load_dword(kb.v(5), kb.v[2:4], kb.off, offset=4)
    kb.s_waitcnt(vmcnt=count)
    kb.v_add_u32(kb.v(4), kb.v(1), kb.v(1))
    kb.s_endpgm()
    est = ps.estimate_cycles(kb.finish())[0]
    assert (est.kernel, est.cycles, est.blocks[0].instructions) == ("k", cycles, 5)
