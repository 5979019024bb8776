"""The emulator's timing model: MFMA issue rate and matrix-core sharing, s_waitcnt stalls for
the modeled memory latencies, barriers, s_memtime on the model clock, dispatch to CUs, and
the timing data it reads. Expected cycles are computed by hand from the model's rules
(asterism/timing/) and the parameters in target/data/timing.toml."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import asterism
from asterism.builder import KernelBuilder
from asterism.errors import TargetError
from asterism.isa import get_isa
from asterism.target import timing as tt
from asterism.timing.params import TimingError, TimingOptions, parse_latencies
from asterism.timing.result import CAT_FLAT, CAT_IMMED, CAT_JUMP, CAT_NEXT, CAT_VALU, PathUse

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo"
TM = tt.get_timing("gfx942")
START = TM.dispatch["wave_start"]  # cycles from a wave's launch to its first attempt
LAUNCH = TM.dispatch["wave_launch_interval"]
MFMA_CYCLES = 4 * get_isa("gfx942").get("v_mfma_f32_16x16x16_f16").passes  # 4 passes of 4


def _demo(name: str):
    spec = importlib.util.spec_from_file_location(name, DEMO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mfma_gen = _demo("generate_mfma_10")


def mfma_kernel(n: int, block: int):
    """The demo's kernel (n independent v_mfma_f32_16x16x16_f16) for `block` work-items."""
    kb = KernelBuilder(f"mfma_{n}", workgroup_size=(block, 1, 1))
    for i in range(n):
        kb.v_mfma_f32_16x16x16_f16(kb.v[4 + 4 * i:8 + 4 * i], kb.v[0:2], kb.v[2:4], 0)
    kb.s_endpgm()
    return kb.finish()


def timed(module, kernel: str, grid=1, block=64, args=(), **options):
    """Launch with the timing model; returns the TimingResult."""
    res = asterism.launch(module, kernel, grid=grid, block=block, args=list(args),
                          timing=TimingOptions(**options) if options else True)
    return res.timing


def records_of(wave, result, mnemonic: str):
    """The wave's records of instructions whose text starts with `mnemonic`."""
    return [r for r in wave.records if result.code[r[4] - 1][1].startswith(mnemonic)]


def issue(rec) -> int:
    return rec[0] + rec[2]  # time + stall


def test_one_wave_mfmas_issue_16_cycles_apart_and_the_first_at_once():
    assert MFMA_CYCLES == 16
    res = timed(mfma_gen.build(10), "mfma_10")
    (wave,) = res.waves
    mfmas = records_of(wave, res, "v_mfma_f32_16x16x16_f16")
    assert len(mfmas) == 10 and all(r[1] == CAT_VALU for r in mfmas)
    first = mfmas[0]
    # The first MFMA is the wave's first instruction: tried when the wave starts, issued at
    # once (no stall), its issue takes one issue cycle (4 clocks).
    assert (first[0] - wave.begin, first[2], first[3]) == (START, 0, 4)
    issues = [issue(r) for r in mfmas]
    assert np.diff(issues).tolist() == [MFMA_CYCLES] * 9
    # Each later one is tried after the previous issue cycle and waits for the matrix core.
    assert all((r[2], r[3]) == (MFMA_CYCLES - 4, MFMA_CYCLES) for r in mfmas[1:])
    # s_endpgm waits for the last MFMA's result (passes * 4 + result_extra after its issue).
    end = wave.records[-1]
    assert wave.end == issues[-1] + MFMA_CYCLES + TM.mfma.result_extra == end[0] + end[3]


def test_two_waves_on_one_simd_serialize_on_the_matrix_core():
    # One workgroup of 8 waves: SIMD s gets waves s and s + 4 (slots 0 and 1).
    res = timed(mfma_kernel(10, 512), "mfma_10", block=512)
    assert sorted((w.simd, w.slot) for w in res.waves) == [(s, k) for s in range(4)
                                                           for k in range(2)]
    for s in range(4):
        old, young = sorted((w for w in res.waves if w.simd == s), key=lambda w: w.slot)
        assert young.begin - old.begin == 4 * LAUNCH  # launched after the first four waves
        old_issue = [issue(r) for r in records_of(old, res, "v_mfma")]
        young_recs = records_of(young, res, "v_mfma")
        young_issue = [issue(r) for r in young_recs]
        # The older wave keeps the unit (oldest first); the younger one's first MFMA waits
        # until the older one's last MFMA left the matrix core, then runs at the same rate.
        assert young_issue[0] == old_issue[-1] + MFMA_CYCLES
        assert young_recs[0][2] == young_issue[0] - (young.begin + START)
        assert np.diff(young_issue).tolist() == [MFMA_CYCLES] * 9
        # Waves on different SIMDs do not interfere: every older wave runs as if alone.
        assert old_issue == [old.begin + START + MFMA_CYCLES * k for k in range(10)]
        assert old.begin == s * LAUNCH


def test_waves_on_different_simds_do_not_wait_for_each_other():
    res = timed(mfma_kernel(6, 256), "mfma_6", block=256)  # 4 waves, one per SIMD
    assert sorted(w.simd for w in res.waves) == [0, 1, 2, 3]
    for w in res.waves:
        stalls = [r[2] for r in records_of(w, res, "v_mfma")]
        assert stalls == [0] + [MFMA_CYCLES - 4] * 5


def test_one_wave_workgroups_fill_the_cus_round_robin():
    # The seed's experiment: 8 waves per CU as 8 one-wave workgroups per CU on all CUs.
    cus = 4
    res = timed(mfma_gen.build(3), "mfma_3", grid=8 * cus, compute_units=cus, cus=2)
    assert res.modeled_workgroups == 16 and res.workgroups == 32
    on_cu0 = sorted(w.workgroup[0] for w in res.waves if w.cu == 0)
    assert on_cu0 == [k * cus for k in range(8)]  # workgroup i goes to CU i mod 4
    assert sorted(w.workgroup[0] for w in res.waves if w.cu == 1) == [1 + k * cus
                                                                     for k in range(8)]
    for cu in (0, 1):
        waves = sorted((w for w in res.waves if w.cu == cu), key=lambda w: w.begin)
        assert [w.simd for w in waves] == [0, 1, 2, 3] * 2
        assert [w.begin for w in waves] == [LAUNCH * k for k in range(8)]


def load_kernel(second_offset: int = 4):
    """s_load (kernarg), wait, two global loads of the input with a wait after each."""
    kb = KernelBuilder("loads", workgroup_size=(64, 1, 1))
    inp = kb.arg_buffer("inp", "u32", access="read_only")
    out = kb.arg_buffer("out", "u32", access="write_only")
    kp = kb.kernarg_ptr()
    kb.s_load_dwordx4(kb.s[4:8], kp, inp)  # inp and out pointers (adjacent in the kernargs)
    assert out.offset == inp.offset + 8
    kb.s_waitcnt(lgkmcnt=0)
    kb.v_mov_b32(kb.v(1), 0)
    kb.global_load_dword(kb.v(2), kb.v(1), kb.s[4:6])  # first touch of the line: HBM
    kb.s_waitcnt(vmcnt=0)
    kb.global_load_dword(kb.v(3), kb.v(1), kb.s[4:6], offset=second_offset)
    kb.s_waitcnt(vmcnt=0)
    kb.v_add_u32(kb.v(2), kb.v(2), kb.v(3))
    kb.global_store_dword(kb.v(1), kb.v(2), kb.s[6:8])
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("hbm, l2, miss", [(600, 200, 1064), (1000, 252, 800)])
def test_load_then_waitcnt_stalls_for_the_modeled_latency(hbm, l2, miss):
    inp, out = np.array([5, 7, 0, 0], np.uint32), np.zeros(1, np.uint32)
    res = asterism.launch(load_kernel(), "loads", grid=1, block=64, args=[inp, out],
                          timing=TimingOptions(latency={"hbm": hbm, "l2_hit": l2,
                                                        "smem_miss": miss}))
    assert out[0] == 12
    (wave,) = res.timing.waves
    recs = wave.records
    names = [res.timing.code[r[4] - 1][1].split()[0] for r in recs]
    assert names == ["s_load_dwordx4", "s_waitcnt", "v_mov_b32_e32", "global_load_dword",
                     "s_waitcnt", "global_load_dword", "s_waitcnt", "v_add_u32_e32",
                     "global_store_dword", "s_endpgm"]
    t0 = wave.begin + START
    # By hand: s_load issues at t0 and its kernarg line is new to the scalar cache (a miss:
    # memory.smem_miss); the wait after it is tried at t0 + 4 and ends at t0 + miss.
    assert recs[0][:4] == (t0, 1, 0, 4)
    assert recs[1][:4] == (t0 + 4, CAT_IMMED, miss - 4, miss - 4)
    # v_mov at t1; the first global load issues dispatch.valu_to_memory (12) after the VALU
    # (valu.py), its record starting then (the wait is a gap before it, as in the captures),
    # and touches a new line: HBM.
    t1 = t0 + miss
    gap = TM.dispatch["valu_to_memory"]
    assert (recs[2][0], recs[3][0], recs[3][2]) == (t1, t1 + gap, 0)
    assert recs[4][:4] == (t1 + gap + 4, CAT_IMMED, hbm - 4, hbm - 4)
    t2 = t1 + gap + hbm  # the second load reads the same 128-byte line: an L2 hit
    assert recs[5][:3] == (t2, CAT_FLAT, 0)
    assert recs[6][:4] == (t2 + 4, CAT_IMMED, l2 - 4, l2 - 4)
    # v_add at t2 + l2; the store 12 after it. All 64 lanes write out[0]: one 64-byte write
    # request per clock group of 16 lanes (stores.py: the address path takes 64 bytes of
    # lane data a clock), 4 requests, acknowledged l2_hit after the last left; s_endpgm
    # waits for it.
    t3 = t2 + l2 + gap
    assert (recs[7][0], recs[8][0], recs[8][2]) == (t2 + l2, t2 + l2 + gap, 0)
    assert wave.end == t3 + 4 + l2
    # the report: one scalar miss, one store of 4 requests, two instructions held 8 cycles
    # each by the VALU result path
    assert res.timing.paths == PathUse(1, miss, 1, 4, 0, 2, 2 * (gap - 4))
    text = res.timing.summary()
    assert f"1 scalar loads of a line not read before, {miss} cycles" in text
    assert "2 instructions waited 16 cycles for a VALU result" in text


def test_the_old_model_without_the_mechanisms_of_issue_23():
    """With smem_miss, store_queue and valu_paths off: a cold scalar load pays hbm, every
    reader one issue cycle after a VALU, a store l2_hit after its issue."""
    hbm, l2 = 600, 200
    res = asterism.launch(load_kernel(), "loads", grid=1, block=64,
                          args=[np.array([5, 7, 0, 0], np.uint32), np.zeros(1, np.uint32)],
                          timing=TimingOptions(latency={"hbm": hbm, "l2_hit": l2},
                                               off={"smem_miss", "store_queue",
                                                    "valu_paths"}))
    (wave,) = res.timing.waves
    recs = wave.records
    t0 = wave.begin + START
    assert recs[1][:4] == (t0 + 4, CAT_IMMED, hbm - 4, hbm - 4)
    t1 = t0 + hbm
    assert (recs[2][0], recs[3][0], recs[3][2]) == (t1, t1 + 4, 0)
    t2 = t1 + 4 + hbm
    assert recs[5][0] == t2
    t3 = t2 + l2 + 4
    assert recs[8][0] == t3 and recs[8][2] == 0
    assert wave.end == t3 + l2


def test_a_new_line_costs_hbm_again():
    res = asterism.launch(load_kernel(second_offset=256), "loads", grid=1, block=64,
                          args=[np.zeros(128, np.uint32), np.zeros(1, np.uint32)],
                          timing=TimingOptions(latency={"hbm": 800, "l2_hit": 100}))
    waits = [r for r in res.timing.waves[0].records if r[1] == CAT_IMMED]
    assert [r[2] for r in waits] == [TM.memory["smem_miss"] - 4, 796, 796]


def test_waits_count_each_counter_separately_and_in_order():
    kb = KernelBuilder("partial", workgroup_size=(64, 1, 1))
    inp = kb.arg_buffer("inp", "u32", access="read_only")
    n = kb.arg_value("n", "u32")
    kp = kb.kernarg_ptr()
    kb.s_load_dwordx2(kb.s[4:6], kp, inp)
    kb.s_waitcnt(lgkmcnt=0)
    kb.v_mov_b32(kb.v(1), 0)
    kb.global_load_dword(kb.v(2), kb.v(1), kb.s[4:6])  # line A (new)
    kb.global_load_dword(kb.v(3), kb.v(1), kb.s[4:6], offset=256)  # line B (new)
    kb.s_load_dword(kb.s(8), kp, n)  # kernarg line again: scalar cache hit
    kb.s_waitcnt(lgkmcnt=0)  # only the scalar load
    kb.s_waitcnt(vmcnt=1)  # only the first vector load
    kb.s_waitcnt(vmcnt=0)
    kb.s_endpgm()
    hbm, smem = 600, TM.memory["smem"]
    res = asterism.launch(kb.finish(), "partial", grid=1, block=64,
                          args=[np.zeros(128, np.uint32), 3],
                          timing=TimingOptions(latency={"hbm": hbm, "smem_miss": hbm},
                                               off={"valu_paths"}))
    (wave,) = res.timing.waves
    waits = [r for r in wave.records if r[1] == CAT_IMMED]
    t1 = wave.begin + START + hbm  # after the first wait: v_mov, then the loads every 4
    assert [(r[0] - t1, r[2]) for r in waits[1:]] == [
        (16, 12 + smem - 16),  # s_load issued at t1 + 12
        (12 + smem, 4 + hbm - 12 - smem),  # load A issued at t1 + 4
        (4 + hbm, 4)]  # load B returned 4 cycles after A (in order)


def test_loops_nops_and_taken_branches():
    kb = KernelBuilder("counted", workgroup_size=(64, 1, 1))
    kb.s_mov_b32(kb.s(2), 3)
    loop = kb.label("loop")
    kb.s_nop(2)
    kb.s_sub_u32(kb.s(2), kb.s(2), 1)
    kb.s_cmp_lg_u32(kb.s(2), 0)
    kb.s_cbranch_scc1(loop)
    kb.s_endpgm()
    res = timed(kb.finish(), "counted")
    (wave,) = res.waves
    names = [res.code[r[4] - 1][1].split()[0] for r in wave.records]
    assert names == ["s_mov_b32"] + ["s_nop", "s_sub_u32", "s_cmp_lg_u32",
                                     "s_cbranch_scc1"] * 3 + ["s_endpgm"]
    nops = [r for r in wave.records if r[4] == 2]
    assert all((r[1], r[2], r[3]) == (CAT_IMMED, 12, 12) for r in nops)  # 3 issue cycles
    branches = [r for r in wave.records if r[4] == 5]
    assert [r[1] for r in branches] == [CAT_JUMP, CAT_JUMP, CAT_NEXT]
    follow = [wave.records[i + 1][0] - (r[0] + r[3])
              for i, r in enumerate(wave.records) if r[4] == 5]
    assert follow == [TM.dispatch["taken_branch"]] * 2 + [0]  # refetch after a taken branch


def skip_kernel(nops: int):
    """A taken s_cbranch_scc1 at 0x8 over `nops` s_nop 0 (4 bytes each) to an s_mov, then
    s_endpgm."""
    kb = KernelBuilder("skip", workgroup_size=(64, 1, 1))
    over = kb.new_label("over")
    kb.s_mov_b32(kb.s(2), 0)
    kb.s_cmp_eq_u32(kb.s(2), 0)
    kb.s_cbranch_scc1(over)
    for _ in range(nops):
        kb.s_nop(0)
    kb.place(over)
    kb.s_mov_b32(kb.s(3), 0)
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("nops, line, miss", [(700, 43, False), (800, 50, True)])
def test_a_branch_past_the_fetched_lines_misses_the_instruction_cache(nops, line, miss):
    """icache.py in the functional model, by hand: the launch fetched the entry line and the
    dispatch.icache_ahead (46) lines after it; a taken branch at 0x8 over 700 s_nop (target
    at 12 + 2800 bytes: line 43 of 64 bytes) finds its target fetched and the s_mov is tried
    dispatch.taken_branch (16) after the branch; over 800 (line 50) it misses, tried
    dispatch.icache_miss (888) after (gfx942: MI350X's figures). Off: 16 both."""
    d = TM.dispatch
    assert (d["icache_line"], d["icache_ahead"], d["icache_miss"]) == (64, 46, 888)
    for off in ((), ("icache",)):
        res = timed(skip_kernel(nops), "skip", off=set(off))
        (wave,) = res.waves
        branch, mov = wave.records[2], wave.records[3]
        assert res.code[mov[4] - 1][0] - res.code[0][0] == 12 + 4 * nops
        assert (res.code[mov[4] - 1][0] // 64) - (res.code[0][0] // 64) == line
        gap = mov[0] - (branch[0] + branch[3])
        assert gap == (d["icache_miss"] if miss and not off else d["taken_branch"])
        assert res.paths.icache_misses == int(miss and not off)


def packed_after_mfma_kernel(packed: bool):
    """One v_mfma_f32_16x16x16_f16 (4 passes) then a v_pk_mul_f32 (or a v_mul_f32)."""
    kb = KernelBuilder("pk", workgroup_size=(64, 1, 1))
    kb.v_mfma_f32_16x16x16_f16(kb.v[4:8], kb.v[0:2], kb.v[2:4], 0)
    if packed:
        kb.v_pk_mul_f32(kb.v[10:12], kb.v[12:14], kb.v[14:16])
    else:
        kb.v_mul_f32(kb.v[10], kb.v[12], kb.v[14])
    kb.s_endpgm()
    return kb.finish()


def test_the_functional_model_holds_packed_f32_after_an_mfma():
    """mfma.py's packed hold in the functional model (gfx942), by hand: the v_pk_mul_f32
    issues 16 (4 passes) + mfma.packed_extra (8) cycles after the MFMA, a v_mul_f32
    mfma.valu_hold (4) after; with "packed_valu" off, the packed one too."""
    gaps = {}
    for packed, off in ((True, ()), (False, ()), (True, ("packed_valu",))):
        res = timed(packed_after_mfma_kernel(packed), "pk", off=set(off))
        (wave,) = res.waves
        mfma, valu = wave.records[0], wave.records[1]
        gaps[packed, off] = issue(valu) - issue(mfma)
    assert gaps == {(True, ()): 24, (False, ()): 4, (True, ("packed_valu",)): 4}
    assert TM.mfma.packed_extra == 8 and TM.mfma.valu_hold == 4


def barrier_kernel(waves: int):
    kb = KernelBuilder("bar", workgroup_size=(64 * waves, 1, 1))
    kb.s_barrier()
    kb.s_endpgm()
    return kb.finish()


def test_barrier_waits_for_the_last_wave():
    res = timed(barrier_kernel(3), "bar", block=192)
    # Waves launch LAUNCH apart and reach the barrier START after their launch; the last one
    # arrives at 2 * LAUNCH + START and everyone leaves `barrier` cycles later.
    release = 2 * LAUNCH + START + TM.dispatch["barrier"]
    for w in res.waves:
        bar = w.records[0]
        arrive = w.begin + START
        assert bar[:4] == (arrive, CAT_IMMED, release - arrive, release - arrive)
        assert w.records[1][0] == release  # s_endpgm tried right after the release


def memtime_kernel(n_add: int):
    kb = KernelBuilder("clock", workgroup_size=(64, 1, 1))
    timer = kb.cycle_timer("stamps", regions=2, sgprs=20)
    with timer.region(0):
        for _ in range(n_add):
            kb.v_add_u32(kb.v(1), 1, kb.v(1))
    with timer.region(1):
        kb.v_exp_f32(kb.v(2), kb.v(1))
        kb.v_exp_f32(kb.v(3), kb.v(2))  # reads the first result: waits for the trans latency
    timer.flush()
    kb.s_endpgm()
    return kb.finish(), timer


@pytest.mark.parametrize("n_add", [0, 5, 17])
def test_s_memtime_deltas_are_the_modeled_cycles(n_add):
    module, timer = memtime_kernel(n_add)
    stamps = timer.host_buffer(1)
    res = asterism.launch(module, "clock", grid=1, block=64, args=[stamps], timing=True)
    cycles = timer.cycles(stamps)
    (wave,) = res.timing.waves
    times = [issue(r) for r in records_of(wave, res.timing, "s_memtime")]
    assert stamps[0, :, 0].tolist() == times[0::2] and stamps[0, :, 1].tolist() == times[1::2]
    # By hand: back-to-back independent VALU ops issue every 4 cycles; a dependent
    # transcendental waits latency.trans after the first one, and holds the wave for its
    # occupancy.trans before the closing s_memtime.
    assert cycles.tolist() == [[4 * (n_add + 1),
                                4 + TM.latency["trans"] + TM.occupancy["trans"]]]
    # Without the model s_memtime is a monotonic counter.
    stamps[:] = 0
    asterism.launch(module, "clock", grid=1, block=64, args=[stamps])
    assert (timer.cycles(stamps) > 0).all()


def test_waves_of_other_cus_run_functionally():
    module, timer = memtime_kernel(3)
    stamps = timer.host_buffer(3)
    res = asterism.launch(module, "clock", grid=3, block=64, args=[stamps],
                          timing=TimingOptions(compute_units=2))
    assert [w.workgroup[0] for w in res.timing.waves] == [0, 2]  # CU 0 of 2
    assert res.timing.cycles == max(w.end for w in res.timing.waves)
    assert timer.cycles(stamps)[0, 0] == timer.cycles(stamps)[2, 0] == 16
    assert (stamps[1] > 0).all()  # CU 1's workgroup ran (counter stamps)


def test_options_and_latency_names():
    assert parse_latencies("lds=128, hbm=0x100") == {"lds": 128, "hbm": 256}
    with pytest.raises(TimingError, match="expected NAME=CYCLES"):
        parse_latencies("hbm")
    with pytest.raises(TimingError, match="unknown memory latency dram; choose from lds"):
        timed(mfma_gen.build(1), "mfma_1", latency={"dram": 5})
    with pytest.raises(TimingError, match="at least one CU"):
        timed(mfma_gen.build(1), "mfma_1", cus=0)
    with pytest.raises(TimingError, match="TimingOptions"):
        TimingOptions.of("yes")
    assert TimingOptions.of(False) is None and TimingOptions.of(True) == TimingOptions()
    with pytest.raises(asterism.runtime.ArgumentError, match="trace_dir needs timing"):
        asterism.launch(mfma_gen.build(1), "mfma_1", trace_dir="x")
    with pytest.raises(asterism.runtime.ArgumentError, match="runs on the emulator"):
        asterism.launch(mfma_gen.build(1), "mfma_1", timing=True, backend="hip")


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_timing_data_for_the_emulator(target):
    tm = tt.get_timing(target)
    assert set(tm.issue_ports) == set(tt.TIMING_CLASSES)
    assert tm.issue_ports["mfma"] == tm.issue_ports["valu"] == "valu"
    assert tm.issue_ports["smem"] == tm.issue_ports["salu"] == "scalar"
    assert set(tm.memory) == set(tt.MEMORY_KEYS) and set(tm.dispatch) == set(tt.DISPATCH_KEYS)
    assert tm.memory["lds"] < tm.memory["l2_hit"] < tm.memory["hbm"]
    assert tm.memory["hbm"] == 600  # [pyhip]; no fit is a default (gfx950 inherits it)
    assert tm.with_memory(hbm=1).memory["hbm"] == 1  # --latency: a what-if, not bounded
    with pytest.raises(TargetError, match="whole number"):
        tm.with_memory(lds=-1)


def test_bad_issue_ports_are_reported(monkeypatch):
    good = tt._raw()
    bad = {**good, "gfx942": {**good["gfx942"], "issue": {**good["gfx942"]["issue"],
                                                          "mfma": "matrix"}}}
    monkeypatch.setattr(tt, "_raw", lambda: bad)
    tt._timing.cache_clear()
    try:
        with pytest.raises(TargetError, match=r"\[gfx942.issue\]: unknown ports"):
            tt.get_timing("gfx942")
    finally:
        monkeypatch.undo()
        tt._timing.cache_clear()
