"""Wave priority (s_setprio) in the timing model's issue arbitration (asterism/timing/
priority.py). The rule, from the AMD ISA guides (S_SETPRIO: "The overall wave priority is
{SPIPrio[1:0] + UserPrio[1:0], WaveAge[3:0]}"): of the waves of one SIMD that can issue to a
port in the same issue cycle, the higher user priority goes first, the older wave breaks ties.

The kernel: 5 waves of one workgroup on one CU; the model puts wave i on SIMD i mod 4, so
waves 0 and 4 share SIMD 0 and its VALU port. Wave 4 raises its priority (s_setprio 1), then
every wave runs N independent VALU instructions. Expected by hand from the rule: with
priorities, from the first issue cycle wave 4 tries a VALU instruction, it takes the port on
every issue cycle until its N are done and wave 0 issues none of its VALU instructions in
between; ignoring s_setprio (TimingOptions.off "setprio", the model before), the older wave 0
keeps the port until its N are done and wave 4 waits for it.
"""

from __future__ import annotations

import asterism
from asterism.builder import KernelBuilder
from asterism.target.timing import get_timing
from asterism.timing.params import TimingOptions
from asterism.timing.priority import issue_order, priority_of
from asterism.timing.state import ModelWave

N = 24  # VALU instructions per wave
Q = get_timing("gfx942").issue_cycles


def prio_kernel():
    """Wave 4 of the workgroup sets priority 1; every wave then runs N v_mov_b32."""
    kb = KernelBuilder("prio", workgroup_size=(320, 1, 1))
    wave = kb.s(0)
    kb.v_readfirstlane_b32(wave, kb.workitem_id("x"))
    kb.s_lshr_b32(wave, wave, 6)
    kb.s_cmp_eq_u32(wave, 4)
    skip = kb.new_label("skip")
    kb.s_cbranch_scc0(skip)
    kb.s_setprio(1)
    kb.place(skip)
    for k in range(N):
        kb.v_mov_b32(kb.v(2 + k), k)
    kb.s_endpgm()
    return kb.finish()


def _valu_issues(res, wave_index: int) -> list[int]:
    """Issue cycles of the wave's N v_mov_b32 instructions."""
    (wave,) = [w for w in res.waves if w.wave == wave_index]
    return [r[0] + r[2] for r in wave.records if res.code[r[4] - 1][1].startswith("v_mov_b32")]


def _run(off=()):
    return asterism.launch(prio_kernel(), "prio", grid=1, block=320, args=[],
                           timing=TimingOptions(off=frozenset(off))).timing


def test_the_higher_priority_wave_takes_the_simd_first():
    res = _run()
    assert {w.wave: w.simd for w in res.waves}[4] == {w.wave: w.simd for w in res.waves}[0]
    w0, w4 = _valu_issues(res, 0), _valu_issues(res, 4)
    assert len(w0) == len(w4) == N
    # wave 4: one VALU instruction on every issue cycle from its first
    assert w4 == [w4[0] + Q * k for k in range(N)]
    # wave 0 started first (it launched earlier and skips s_setprio) but issues nothing
    # while wave 4 runs: its instructions are before wave 4's first or after its last
    assert w0[0] < w4[0]
    assert all(t < w4[0] or t > w4[-1] for t in w0)
    assert w0[-1] > w4[-1]
    assert res.raised_priority == 1 and "1 of 5 waves raised theirs" in res.summary()
    # ignoring s_setprio: the older wave 0 keeps the port, wave 4 waits for all of it
    off = _run({"setprio"})
    w0, w4 = _valu_issues(off, 0), _valu_issues(off, 4)
    assert w0 == [w0[0] + Q * k for k in range(N)]
    assert w4[0] == w0[-1] + Q and w4 == [w4[0] + Q * k for k in range(N)]
    assert off.parameters["off"] == ["setprio"] and off.raised_priority == 0


def test_issue_order_is_priority_then_age():
    waves = [ModelWave(row=i, group=None, wg=0, order=i) for i in range(3)]
    assert issue_order(waves) == waves  # all priority 0: by age
    waves[2].prio = priority_of(0x7)  # SIMM16[1:0] only: 3
    waves[1].prio = 1
    assert waves[2].prio == 3
    assert [w.row for w in issue_order(waves)] == [2, 1, 0]
