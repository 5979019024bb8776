"""One barrier per workgroup: two workgroups resident on one CU release their barriers
independently, in the functional model and in a capture's replay, where the workgroups are
inferred from the measured barrier releases and launch times (asterism.profile.workgroups).

References: cycles hand-computed from the model's rules and target/data/timing.toml; the
functional model's own trace, which must replay record for record; the vendored capture
flash_attn_func_small (its two traced CUs, each one 4-wave workgroup, put on one CU)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import asterism
from asterism.builder import KernelBuilder
from asterism.profile.att import InstRecord, Wave, read_att
from asterism.profile.replay import ReplayError, _program, replay, replay_trace
from asterism.profile.workgroups import (
    BY_BARRIERS,
    BY_LAUNCH,
    RELEASE_SKEW,
    infer_workgroups,
)
from asterism.target import get_target
from asterism.target.timing import get_timing
from asterism.timing.params import TimingOptions
from asterism.timing.replay import StreamWave, TraceDrivenModel
from asterism.timing.result import CAT_IMMED

SHARED = Path(__file__).resolve().parent / "data" / "shared" / "att"
TM = get_timing("gfx942")
START = TM.dispatch["wave_start"]
LAUNCH = TM.dispatch["wave_launch_interval"]
BARRIER = TM.dispatch["barrier"]
TAKEN = TM.dispatch["taken_branch"]
NOPS = 5  # workgroup 0 spends NOPS s_nop 15 (16 issue cycles each) before its barrier


def skewed_kernel():
    """Workgroup 0 waits NOPS x 64 cycles before its barrier, the others go straight to it."""
    kb = KernelBuilder("skew", workgroup_size=(128, 1, 1))
    kb.s_cmp_eq_u32(kb.workgroup_id("x"), 0)
    barrier = kb.new_label("barrier")
    kb.s_cbranch_scc0(barrier)
    for _ in range(NOPS):
        kb.s_nop(15)
    kb.place(barrier)
    kb.s_barrier()
    kb.s_endpgm()
    return kb.finish()


def _barrier_record(res, wave):
    (rec,) = [r for r in wave.records if res.code[r[4] - 1][1].startswith("s_barrier")]
    return rec


def test_two_resident_workgroups_release_their_barriers_independently(tmp_path):
    res = asterism.launch(skewed_kernel(), "skew", grid=2, block=128, args=[],
                          timing=TimingOptions(compute_units=1)).timing
    assert {w.cu for w in res.waves} == {0} and len(res.waves) == 4
    # Both workgroups are resident at once: their 4 waves launch LAUNCH apart, one per SIMD.
    begins = {(w.workgroup[0], w.wave): w.begin for w in res.waves}
    assert begins == {(0, 0): 0, (0, 1): LAUNCH, (1, 0): 2 * LAUNCH, (1, 1): 3 * LAUNCH}
    # By hand: s_cmp and s_cbranch take an issue cycle each from the first attempt (START
    # after the launch); workgroup 1's branch is taken (+TAKEN fetch), workgroup 0's is not
    # and its s_nops take NOPS * 16 issue cycles. Each barrier goes BARRIER cycles after the
    # last arrival of its own workgroup.
    arrive = {k: b + START + 8 + (TAKEN if k[0] == 1 else NOPS * 64)
              for k, b in begins.items()}
    release = {g: max(a for k, a in arrive.items() if k[0] == g) + BARRIER for g in (0, 1)}
    assert release[1] < min(arrive[(0, 0)], arrive[(0, 1)])  # 1 does not wait for 0
    for w in res.waves:
        k = (w.workgroup[0], w.wave)
        rec = _barrier_record(res, w)
        assert rec[:4] == (arrive[k], CAT_IMMED, release[k[0]] - arrive[k],
                           release[k[0]] - arrive[k])
        assert (w.barriers, w.barrier_stall) == (1, release[k[0]] - arrive[k])
    groups = res.barrier_groups()
    assert [(g["cu"], g["workgroup"][0], g["waves"], g["barrier_stall"]) for g in groups] == [
        (0, g, 2, sum(release[g] - a for k, a in arrive.items() if k[0] == g)) for g in (0, 1)]
    text = res.summary()
    assert "workgroups per CU: CU 0: 2" in text and "barrier stall" in text
    assert res.to_json()["barrier_groups"] == groups


def test_one_barrier_per_cu_makes_resident_workgroups_wait_for_each_other():
    """TimingOptions.off "wg_barriers" (the model before issue 23): every wave resident on
    the CU is one barrier group, so workgroup 1 waits for workgroup 0's late arrival; by
    hand as in the test above, one release for all four waves."""
    on = asterism.launch(skewed_kernel(), "skew", grid=2, block=128, args=[],
                         timing=TimingOptions(compute_units=1)).timing
    res = asterism.launch(skewed_kernel(), "skew", grid=2, block=128, args=[],
                          timing=TimingOptions(compute_units=1,
                                               off=frozenset({"wg_barriers"}))).timing
    begins = {(w.workgroup[0], w.wave): w.begin for w in res.waves}
    assert begins == {(0, 0): 0, (0, 1): LAUNCH, (1, 0): 2 * LAUNCH, (1, 1): 3 * LAUNCH}
    arrive = {k: b + START + 8 + (TAKEN if k[0] == 1 else NOPS * 64)
              for k, b in begins.items()}
    release = max(arrive.values()) + BARRIER
    for w in res.waves:
        k = (w.workgroup[0], w.wave)
        rec = _barrier_record(res, w)
        assert rec[:4] == (arrive[k], CAT_IMMED, release - arrive[k], release - arrive[k])
    stall = {g["workgroup"][0]: g["barrier_stall"] for g in res.barrier_groups()}
    assert stall[1] == sum(release - a for k, a in arrive.items() if k[0] == 1)
    assert stall[1] > {g["workgroup"][0]: g["barrier_stall"]
                       for g in on.barrier_groups()}[1]
    assert "one per CU (wg_barriers off" in res.summary()


def test_modeled_trace_of_two_workgroups_per_cu_replays_exactly(tmp_path):
    """The functional model's trace (two workgroups on one CU) replays record for record
    once its workgroups are inferred; as one barrier group per CU (the replay before
    workgroups were inferred) workgroup 1 waits for workgroup 0."""
    asterism.launch(skewed_kernel(), "skew", grid=2, block=128, args=[],
                    timing=TimingOptions(compute_units=1), trace_dir=tmp_path / "t")
    r = replay(tmp_path / "t", target="gfx942")
    assert [len(g.waves) for g in r.barrier_groups] == [2, 2]
    assert {g.evidence for g in r.barrier_groups} == {BY_BARRIERS}
    for name, recs in r.measured_records.items():
        assert r.modeled_records[name] == recs
    assert r.cycles_error == 0
    assert [g.modeled_stall for g in r.barrier_groups] == \
        [g.measured_stall for g in r.barrier_groups]
    whole = replay(tmp_path / "t", target="gfx942", barrier_groups="cu")
    (group,) = whole.barrier_groups
    assert len(group.waves) == 4
    assert whole.modeled.cycles > whole.measured.cycles  # workgroup 1 waited for 0
    assert "barrier groups" in r.summary() and r.to_json()["barrier_grouping"] == "workgroup"


def _merged_capture():
    """flash_attn_func_small with SE 3's traced CU moved onto SE 2's (slot 1): two 4-wave
    workgroups on one CU, with their real (measured) barrier releases."""
    trace = read_att(SHARED / "flash_attn_func_small")
    waves = [w if w.se == 2 else replace(w, se=2, slot=1) for w in trace.waves]
    return replace(trace, waves=waves)


def test_workgroups_inferred_from_measured_barrier_releases():
    trace = _merged_capture()
    prog = _program(trace, "gfx950", get_timing("gfx950"))
    groups = infer_workgroups(trace.waves, prog.barrier_lines)
    # The reference: which SE each wave was captured on (slot 1 = SE 3's workgroup).
    assert sorted(sorted(trace.waves[i].slot for i in g.waves) for g in groups) == \
        [[0] * 4, [1] * 4]
    assert all((g.se, g.cu, g.evidence) == (2, 1, BY_BARRIERS) for g in groups)
    # Replay: per workgroup the barrier stall stays near the measured one; one group for
    # the whole CU makes each workgroup wait for the other (the 17 % vs 4 %).
    per_wg = replay_trace(trace)
    per_cu = replay_trace(trace, barrier_groups="cu")
    measured = per_wg.measured.stall_shares()["barrier"]
    assert abs(per_wg.modeled.stall_shares()["barrier"] - measured) < 3
    assert per_cu.modeled.stall_shares()["barrier"] > 3 * measured
    assert abs(per_wg.cycles_error) < abs(per_cu.cycles_error)


def _wave(se, simd, slot, begin, end, releases=(), line=7):
    """A wave whose records are its s_barrier instructions (code line `line`), each left
    at the given time."""
    recs = [InstRecord(t - 8, CAT_IMMED, 4, 8, line) for t in releases]
    return Wave(se=se, simd=simd, slot=slot, id=0, cu=0, begin=begin, end=end,
                instructions=recs)


def test_inference_rules_by_hand():
    skew = RELEASE_SKEW
    waves = [
        _wave(0, 0, 0, 0, 900, (100, 200)), _wave(0, 1, 0, 4, 900, (100 + skew, 200)),
        # same launch burst, other releases: another workgroup
        _wave(0, 2, 0, 8, 900, (100 + skew + 1, 200)), _wave(0, 3, 0, 12, 900, (109, 204)),
        # still running at the first group's second release without taking part: another
        # workgroup (an ended wave drops out, a running one is waited for)
        _wave(0, 0, 1, 16, 250, (100,)),
        # ended before the first release, no barrier, same burst: joins a barrier group only
        # when exactly one fits (here both do): a launch-burst group of its own
        _wave(0, 1, 1, 20, 90),
        # another CU (SE 1): grouped on its own
        _wave(1, 0, 0, 0, 500, (100,)),
    ]
    groups = infer_workgroups(waves, {7})
    got = sorted((g.se, g.waves, g.evidence) for g in groups)
    assert got == [(0, (0, 1), BY_BARRIERS), (0, (2, 3), BY_BARRIERS), (0, (4,), BY_BARRIERS),
                   (0, (5,), BY_LAUNCH), (1, (6,), BY_BARRIERS)]
    # A barrier-free wave that ended before the only barrier group of its burst released
    # belongs to it; one launched long after (another burst) does not.
    lone = [_wave(0, 0, 0, 0, 900, (100,)), _wave(0, 1, 0, 4, 60), _wave(0, 2, 0, 500, 600)]
    assert sorted(g.waves for g in infer_workgroups(lone, {7})) == [(0, 1), (2,)]


def test_trace_driven_groups_by_hand():
    """Two workgroups of two waves on one CU: s_barrier then s_endpgm, workgroup B starts
    400 cycles later. Per workgroup each releases BARRIER after its own last arrival; as
    one group, A waits for B."""
    from test_replay import _statics

    tm, statics = _statics(["s_barrier", "s_endpgm"])
    begins = [0, 4, 400, 404]
    start = tm.dispatch["wave_start"]
    delay = tm.dispatch["barrier"]

    def run(groups):
        waves = [StreamWave(0, k, 0, b, [0, 1], workgroup=g)
                 for k, (b, g) in enumerate(zip(begins, groups, strict=True))]
        model = TraceDrivenModel(get_target("gfx950"), tm, statics, [1, 2], waves)
        return sorted(model.run(), key=lambda w: w.wave)

    per_wg = run([0, 0, 1, 1])
    for w, b in zip(per_wg, begins, strict=True):
        last = (4 if b < 400 else 404) + start
        assert w.records[0][:4] == (b + start, CAT_IMMED, last + delay - b - start,
                                    last + delay - b - start)
        assert w.barrier_stall == last + delay - b - start
    one = run([None] * 4)
    assert all(w.records[0][0] + w.records[0][3] == 404 + start + delay for w in one)


def test_bad_barrier_groups_option():
    with pytest.raises(ReplayError, match="barrier groups must be one of workgroup, cu"):
        replay(SHARED / "pa_mqa_logits_fp4_small", barrier_groups="wave")


def test_kernel_outputs_unchanged_by_the_barrier_model():
    """The skewed kernel has no outputs; a second workgroup per CU must not change what an
    exchange through LDS computes (functional results are the plain emulator's)."""
    from test_timing_trace import exchange_expected, exchange_kernel

    out = np.zeros(64 * 2 * 4, np.uint32)
    asterism.launch(exchange_kernel(2), "exchange", grid=4, block=128, args=[out],
                    timing=TimingOptions(compute_units=1))
    assert (out == exchange_expected(4, 2)).all()
