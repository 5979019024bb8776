"""The whole-grid bandwidth ceiling (asterism/timing/bandwidth.py): all CUs share the chip's
L2 and HBM bandwidth. References: cycles and bytes hand-computed from the kernels' access
patterns and the parameters in target/data/timing.toml (HBM GB/s, L2 bytes per clock per
channel x channels x XCDs, the clock)."""

from __future__ import annotations

import numpy as np
import pytest

import asterism
from asterism.builder import KernelBuilder
from asterism.errors import TargetError
from asterism.target import get_target
from asterism.target import timing as tt
from asterism.timing.bandwidth import Footprint, Level
from asterism.timing.params import TimingOptions

TM = tt.get_timing("gfx942")
CHIP_CUS = get_target("gfx942").compute_units  # 304
LINE = TM.memory["line_bytes"]


def hbm_bytes_per_clock(device_cus: int) -> float:
    """The device's HBM bandwidth in bytes per shader clock (its part of the chip's)."""
    return TM.bandwidth["hbm_gbps"] * 1e9 / (TM.clock_mhz * 1e6) * device_cus / CHIP_CUS


def copy_kernel():
    """out = inp, 16 bytes per work-item (one dwordx4 load and store per lane)."""
    kb = KernelBuilder("copy", workgroup_size=(256, 1, 1))
    inp = kb.arg_buffer("inp", "u32", access="read_only")
    kb.arg_buffer("out", "u32", access="write_only")
    kp, tid, wg = kb.kernarg_ptr(), kb.workitem_id("x"), kb.workgroup_id("x")
    kb.s_load_dwordx4(kb.s[4:8], kp, inp)  # inp and out pointers (adjacent)
    kb.s_lshl_b32(kb.s(8), wg, 12)  # 4 KB per workgroup
    kb.v_lshlrev_b32(kb.v(1), 4, tid)
    kb.v_add_u32(kb.v(1), kb.s(8), kb.v(1))
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_load_dwordx4(kb.v[4:8], kb.v(1), kb.s[4:6])
    kb.s_waitcnt(vmcnt=0)
    kb.global_store_dwordx4(kb.v(1), kb.v[4:8], kb.s[6:8])
    kb.s_endpgm()
    return kb.finish()


def run_copy(workgroups: int, device_cus: int, bandwidth: bool = True):
    inp = np.arange(workgroups * 1024, dtype=np.uint32)
    out = np.zeros_like(inp)
    res = asterism.launch(copy_kernel(), "copy", grid=workgroups, block=256, args=[inp, out],
                          timing=TimingOptions(compute_units=device_cus,
                                               off=() if bandwidth else {"bandwidth"}))
    assert (out == inp).all()  # the functional result is the plain emulator's
    return res.timing


def test_streaming_copy_runs_at_the_hbm_share():
    """64 workgroups on a 2-CU device (2/304 of MI300X's 5.3 TB/s): CU 0 copies 32 x 4 KB
    and the grid moves 2 x 256 KB through HBM, so the modeled time is about the grid's bytes
    over the device's HBM bandwidth, plus the first workgroup's cold kernel-argument load (a
    scalar-cache miss, memory.smem_miss) to start: within 3 %."""
    res = run_copy(64, 2)
    grid_bytes = 2 * 64 * 4096
    by_hand = grid_bytes / hbm_bytes_per_clock(2) + TM.memory["smem_miss"]  # 32 641 cycles
    assert abs(res.cycles - by_hand) / by_hand < 0.03, (res.cycles, by_hand)
    bw = res.bandwidth
    hbm, l2 = bw.levels
    assert (hbm.name, l2.name, bw.active_cus) == ("HBM", "L2", 2)
    # bytes: the copied data, and the kernel argument lines (one allocation of a few lines)
    assert 0 <= hbm.grid_bytes - grid_bytes <= 4 * LINE
    assert hbm.binds and not l2.binds and bw.binds
    assert hbm.percent > 95 and hbm.peak_gbps == pytest.approx(5300 * 2 / 304, abs=0.1)
    assert hbm.delayed > 0.9 * hbm.accesses
    text = res.summary()
    assert "bandwidth (modeled, not measured; whole grid, 2 CUs active): HBM " in text
    assert text.rstrip().endswith("HBM binds")
    assert res.to_json()["bandwidth"]["HBM"]["binds"] is True
    # Without the ceiling only the CU's own memory path limits it: far faster.
    free = run_copy(64, 2, bandwidth=False)
    assert free.bandwidth is None and free.cycles < by_hand / 3
    assert "bandwidth" not in free.summary()


def test_few_workgroups_get_a_large_share():
    """4 workgroups keep 4 CUs of 304 busy: each gets a quarter of the HBM bandwidth, far
    more than its memory path moves; the ceiling does not bind and changes nothing."""
    res, free = run_copy(4, 304), run_copy(4, 304, bandwidth=False)
    assert res.bandwidth.active_cus == 4 and not res.bandwidth.binds
    assert res.cycles == free.cycles


def mfma_chain(n: int):
    """A dependent chain of n MFMAs, no memory access: compute-bound."""
    kb = KernelBuilder("chain", workgroup_size=(256, 1, 1))
    for _ in range(n):
        kb.v_mfma_f32_16x16x16_f16(kb.v[4:8], kb.v[0:2], kb.v[2:4], kb.v[4:8])
    kb.s_endpgm()
    return kb.finish()


def test_compute_bound_mfma_chain_is_unaffected():
    opts = {"compute_units": 8}
    on = asterism.launch(mfma_chain(20), "chain", grid=64, block=256, args=[],
                         timing=TimingOptions(**opts)).timing
    off = asterism.launch(mfma_chain(20), "chain", grid=64, block=256, args=[],
                          timing=TimingOptions(off={"bandwidth"}, **opts)).timing
    assert on.cycles == off.cycles > 0
    assert not on.bandwidth.binds
    assert all(lv.grid_bytes == 0 for lv in on.bandwidth.levels)


def broadcast_kernel():
    """Every workgroup reads the same 4 KB (16 bytes per work-item)."""
    kb = KernelBuilder("bcast", workgroup_size=(256, 1, 1))
    inp = kb.arg_buffer("inp", "u32", access="read_only")
    kp, tid = kb.kernarg_ptr(), kb.workitem_id("x")
    kb.s_load_dwordx2(kb.s[4:6], kp, inp)
    kb.v_lshlrev_b32(kb.v(1), 4, tid)
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_load_dwordx4(kb.v[4:8], kb.v(1), kb.s[4:6])
    kb.s_waitcnt(vmcnt=0)
    kb.s_endpgm()
    return kb.finish()


def test_lines_the_grid_shares_come_from_hbm_once():
    """64 workgroups on 8 CUs all read one 4 KB buffer: HBM moves it once for the grid
    (not once per CU: 8 x 4 KB), while every access still goes to the L2 (64 x 4 KB, and
    the kernel argument line each CU loads)."""
    inp = np.arange(1024, dtype=np.uint32)
    res = asterism.launch(broadcast_kernel(), "bcast", grid=64, block=256, args=[inp],
                          timing=TimingOptions(compute_units=8)).timing
    hbm, l2 = res.bandwidth.levels
    assert 4096 <= hbm.grid_bytes <= 4096 + 4 * LINE  # + the kernel argument allocation
    assert l2.grid_bytes == 64 * 4096 + 8 * LINE
    assert "count once" in res.bandwidth.footprint


def test_footprint_weights_by_hand():
    # allocation A: 8 lines, the modeled workgroups touch 2 of them, the grid is 16 times
    # theirs: 32 touches of 8 lines, each line 1/4; allocation B: 64 lines, 2 touched x 16
    # = 32 < 64: no line is shared, weight 1; a line outside both: 1.
    fp = Footprint([(0, 8 * LINE), (100 * LINE, 64 * LINE)], [0, 1, 100, 101], 16, LINE)
    assert fp.weight([0]) == 0.25 and fp.weight([0, 1, 7]) == 0.75
    assert fp.weight([100, 163]) == 2.0 and fp.weight([50]) == 1.0 and fp.weight([]) == 0.0


def test_level_queue_by_hand():
    lv = Level("HBM", 10.0, 2)  # 5 bytes per clock per CU
    assert lv.take(0, 100, 50, due=200) == 110  # idle: 10 cycles
    assert lv.take(0, 100, 50, due=200) == 120  # behind the first
    assert lv.take(1, 100, 50, due=105) == 110  # another CU, its own queue; 5 late
    assert lv.take(0, 500, 0, due=0) == 500  # nothing to move
    assert (lv.bytes, lv.accesses, lv.delayed, lv.delay) == (150, 3, 1, 5)


def test_bandwidth_parameters_and_bounds(monkeypatch):
    for target, hbm, low in (("gfx942", 5300, 4000), ("gfx950", 8000, 5600)):
        tm = tt.get_timing(target)
        assert tm.bandwidth == {"hbm_gbps": hbm, "l2_bytes_per_clock": 128,
                                "l2_channels": 16, "xcds": 8}
        # the peak is sourced; the bounds reach down to a measured copy kernel's rate
        assert tm.bounds["bandwidth.hbm_gbps"] == tt.Bound("sourced", low, hbm)
        assert tm.value("bandwidth.xcds") == 8
    good = tt._raw()

    def bad(**over):
        sec = {**good["gfx942"], **over}
        monkeypatch.setattr(tt, "_raw", lambda: {**good, "gfx942": sec})
        tt._timing.cache_clear()

    try:
        bad(bandwidth={**good["gfx942"]["bandwidth"], "hbm_gbps": 6000})
        with pytest.raises(TargetError, match=r"bandwidth.hbm_gbps = 6000 is outside its "
                                              r"bounds \[4000, 5300\] \(sourced\)"):
            tt.get_timing("gfx942")
        bad(bandwidth={k: v for k, v in good["gfx942"]["bandwidth"].items() if k != "xcds"})
        with pytest.raises(TargetError, match=r"\[gfx942.bandwidth\]: missing \['xcds'\]"):
            tt.get_timing("gfx942")
    finally:
        monkeypatch.undo()
        tt._timing.cache_clear()

