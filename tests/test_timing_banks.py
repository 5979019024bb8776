"""LDS bank conflicts and the vector memory cost by cache lines in the timing model
(asterism/timing/lds.py, memory.py). Every expected figure is worked out by hand below from
the rules and their sources (cited in target/data/timing.toml):

* LDS: bank = (byte address / 4) % banks, 32 banks on gfx942 ([rpc-pipe], [nod]), 64 on
  gfx950 ([comgr], [nod]). The lanes of an access are served in phases (gfx942 ds_read_b128:
  8 lanes {0-3, 20-23}, {4-7, 16-19}, ... [ck]; gfx950: 16 lanes {0-3, 12-15, 20-23, 24-27},
  ... [nod] [hk]); a phase takes as many clocks as its busiest bank has distinct dword
  addresses (same-dword lanes broadcast, [rpc-pipe]). The LDS is busy max(bandwidth cost,
  sum over phases), and [pyhip] measured a fully conflicting ds_read_b32 at 64 clocks (2
  phases x 32) on MI308X.
* Vector memory: one 128-byte line lookup per clock ([rpc-sol]: vL1D 128 B/clk/CU): an access
  touching L lines keeps the path busy max(bytes rule, L), the bytes rule being 64 lanes x
  width / 64 B per clock on gfx942.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import asterism
from asterism.builder import KernelBuilder
from asterism.errors import TargetError
from asterism.target import timing as tt
from asterism.timing.lds import bank_cycles, lane_phases, rule_of
from asterism.timing.params import TimingError, TimingOptions

LANES = np.arange(64)
GFX942, GFX950 = tt.get_timing("gfx942"), tt.get_timing("gfx950")


def cycles(tm, rule: str, addrs, nbytes: int, lanes=LANES, broadcast=True):
    """(phases, conflicts) of one wave's access under `tm`'s rule."""
    return bank_cycles(np.asarray(lanes), np.asarray(addrs, np.int64), nbytes,
                       tm.lds_phases[rule], tm.lds_banks, broadcast)


def groups(tm, rule: str) -> list[list[int]]:
    """The lanes of each phase of a rule, in phase order."""
    phase = lane_phases(tm.lds_phases[rule])
    return [np.flatnonzero(phase == p).tolist() for p in range(phase.max() + 1)]


# ---------------------------------------------------------------------------- the rules


def test_phases_are_the_measured_lane_groups():
    def plus32(gs):
        return gs + [[lane + 32 for lane in g] for g in gs]
    # [ck] / [nod]: gfx942 ds_read_b128 serves 8 lanes per phase in these groups
    b128_942 = plus32([[0, 1, 2, 3, 20, 21, 22, 23], [4, 5, 6, 7, 16, 17, 18, 19],
                       [8, 9, 10, 11, 28, 29, 30, 31], [12, 13, 14, 15, 24, 25, 26, 27]])
    assert sorted(groups(GFX942, "read_b128")) == sorted(b128_942)
    # [nod] / [hk]: gfx950 ds_read_b128 serves 16 lanes per phase
    b128_950 = plus32([[0, 1, 2, 3, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25, 26, 27],
                       [4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 28, 29, 30, 31]])
    assert sorted(groups(GFX950, "read_b128")) == sorted(b128_950)
    # [hk]: gfx950 ds_read_b96 keeps gfx942's b128 groups
    assert sorted(groups(GFX950, "read_b96")) == sorted(b128_942)
    # contiguous groups: b32 2 x 32 / 1 x 64, b64 4 x 16 / 2 x 32, b128 writes 8 x 8
    assert sorted(groups(GFX942, "read_b32")) == [list(range(32)), list(range(32, 64))]
    assert groups(GFX950, "read_b32") == [list(range(64))]
    assert sorted(groups(GFX942, "read_b64")) == [list(range(16 * k, 16 * k + 16))
                                                  for k in range(4)]
    assert sorted(groups(GFX950, "read_b64")) == [list(range(32)), list(range(32, 64))]
    assert sorted(groups(GFX942, "write_b128")) == [list(range(8 * k, 8 * k + 8))
                                                    for k in range(8)]
    assert (GFX942.lds_banks, GFX950.lds_banks) == (32, 64)
    assert rule_of("load", 2) == "read_b32" and rule_of("store", 12) == "write_b96"
    assert rule_of("atomic", 8) == "write_b64" and rule_of("load", 8, "tr") == "read_tr_b64"


def test_row_contiguous_b128_reads_are_conflict_free():
    # lane i reads bytes 16i..16i+15: a gfx942 phase {0-3, 20-23} covers dwords 0-15 and
    # 80-95, i.e. banks 0-15 and 16-31 once each; every phase alike: 8 phases, 1 clock each
    # = the bandwidth cost 1 KiB / 128 B. gfx950: 4 phases of 16 lanes x 4 banks, 64 banks.
    addrs = 16 * LANES
    assert cycles(GFX942, "read_b128", addrs, 16) == (8, 0)
    assert cycles(GFX950, "read_b128", addrs, 16) == (4, 0)


def test_the_unpadded_k_tile_column_read_conflicts_8_and_16_way():
    # Flash attention's K tile without padding: 64 lanes read rows 256 bytes apart (128
    # bf16), so every lane's 4 dwords sit in banks 0-3 on both chips. gfx942: each of the 8
    # phases holds 8 lanes -> 8 distinct addresses in bank 0: 8 clocks, 7 conflicts; 64
    # clocks in all, 56 conflicts ([nod]'s b128 saturation: 8 x 7 = 56). gfx950: 4 phases of
    # 16 lanes -> 16 clocks each, 4 x 15 = 60 conflicts, 64 clocks.
    addrs = 256 * LANES
    assert cycles(GFX942, "read_b128", addrs, 16) == (8, 56)
    assert cycles(GFX950, "read_b128", addrs, 16) == (4, 60)
    # Padding each row by 16 bytes (272-byte rows = 68 dwords) moves lane i to banks
    # 4i..4i+3 (mod 32 / 64): in a gfx942 phase {0-3, 20-23} lanes start at banks 0, 4, 8, 12,
    # 16, 20, 24, 28 (80 mod 32 = 16, ...): all distinct; the gfx950 phase {0-3, 12-15, 20-23,
    # 24-27} starts at 0, 4, 8, 12, 48, 52, 56, 60, 16, 20, 24, 28, 32, 36, 40, 44: all
    # distinct. No conflict.
    padded = 272 * LANES
    assert cycles(GFX942, "read_b128", padded, 16) == (8, 0)
    assert cycles(GFX950, "read_b128", padded, 16) == (4, 0)


def test_b32_worst_case_is_64_clocks():
    # 128-byte stride: every lane in bank 0 at its own address. gfx942: 2 phases of 32 lanes,
    # 32 clocks each = 64 ([pyhip] measured 64; [nod]: 62 conflicts = 2 x 31). gfx950 (64
    # banks) alternates banks 0 and 32: one 64-lane phase ([nod]) of 32 clocks, 31 conflicts;
    # its worst case needs a 256-byte stride: 64 clocks, 63 conflicts.
    addrs = 128 * LANES
    assert cycles(GFX942, "read_b32", addrs, 4) == (2, 62)
    assert cycles(GFX950, "read_b32", addrs, 4) == (1, 31)
    assert cycles(GFX950, "read_b32", 2 * addrs, 4) == (1, 63)
    # [pyhip]: at a stride of 8 dwords (32 bytes) 8 lanes share a bank: 2 x 8 = 16 clocks.
    p, c = cycles(GFX942, "read_b32", 32 * LANES, 4)
    assert (p, c, p + c) == (2, 14, 16)


def test_b64_conflicts_by_hand():
    # lane i at 8i: 16 lanes x 2 dwords fill gfx942's 32 banks, 32 lanes x 2 gfx950's 64
    assert cycles(GFX942, "read_b64", 8 * LANES, 8) == (4, 0)
    assert cycles(GFX950, "read_b64", 8 * LANES, 8) == (2, 0)
    # lane i at 16i: dwords 4i, 4i+1; gfx942 lanes i and i+8 share banks (4 * 8 = 32): 2-way
    # in each of the 4 phases of 16; gfx950 lanes i and i+16 (4 * 16 = 64): 2-way in each
    # of the 2 phases of 32
    assert cycles(GFX942, "read_b64", 16 * LANES, 8) == (4, 4)
    assert cycles(GFX950, "read_b64", 16 * LANES, 8) == (2, 2)
    # lane i at 256i: every lane in banks 0-1. gfx942: 4 phases of 16 lanes, 15 conflicts
    # each = 60 ([nod]'s b64 saturation); gfx950: 2 phases of 32 lanes, 31 each = 62
    assert cycles(GFX942, "read_b64", 256 * LANES, 8) == (4, 60)
    assert cycles(GFX950, "read_b64", 256 * LANES, 8) == (2, 62)
    # writes: gfx942 b64 writes as its reads (inferred, 16 lanes per clock); gfx950 writes
    # measured 4 x 16 ([hk]) where its reads are 2 x 32: 4 phases, 15 conflicts each
    assert cycles(GFX942, "write_b64", 256 * LANES, 8) == (4, 60)
    assert cycles(GFX950, "write_b64", 256 * LANES, 8) == (4, 60)


def test_same_address_lanes_are_broadcast_but_atomics_are_not():
    zero = np.zeros(64, np.int64)
    assert cycles(GFX942, "read_b32", zero, 4) == (2, 0)
    # two dwords, 32 lanes each, in one phase of gfx950's b32 read: distinct banks
    assert cycles(GFX950, "read_b32", 4 * (LANES % 2), 4) == (1, 0)
    # an atomic on one address: each lane's read-modify-write is its own access
    assert cycles(GFX942, "write_b32", zero, 4, broadcast=False) == (2, 62)


def test_gfx942_and_gfx950_differ_for_b128():
    # 128-byte stride: gfx942 (32 banks) puts every lane in banks 0-3 -> 8-way, 8 x 7 = 56;
    # gfx950 (64 banks) alternates banks 0-3 / 32-35 -> 8 lanes each in a 16-lane phase,
    # 4 x 7 = 28 (32 clocks instead of 64).
    addrs = 128 * LANES
    assert cycles(GFX942, "read_b128", addrs, 16) == (8, 56)
    assert cycles(GFX950, "read_b128", addrs, 16) == (4, 28)
    # The GEMM's B tile: 8 rows of 1040 bytes (1024 + 16 of padding = 260 dwords, 4 mod 32
    # and mod 64), lane i reads row i % 8 at column chunk (i // 8) % 4 of 64 bytes, + 16 bytes
    # for the upper half-wave. gfx942 phase {0-3, 20-23}: rows 0-3 chunk 0 -> banks 0-15;
    # rows 4-7 chunk 2 (32 dwords = 0 mod 32) -> banks 16-31: free, and likewise every phase.
    # gfx950 phase {0-3, 12-15, 20-23, 24-27}: rows 0-3 chunk 0 -> banks 0-15; rows 4-7
    # chunk 1 -> 16 + 16 = 32-47; rows 4-7 chunk 2 -> 16 + 32 = 48-63; rows 0-3 chunk 3 ->
    # 48-63 again: 2-way, one conflict; each of the 4 phases alike.
    gemm = (LANES % 8) * 1040 + (LANES // 8 % 4) * 64 + (LANES // 32) * 16
    assert cycles(GFX942, "read_b128", gemm, 16) == (8, 0)
    assert cycles(GFX950, "read_b128", gemm, 16) == (4, 4)


def test_transposed_read_b64_tr_b16():
    # (inferred rule: as ds_read_b64, 2 phases of 32 lanes, 64 banks) 16 lanes per block
    # reading 8 bytes each from consecutive addresses: 32 lanes x 2 dwords = 64 banks, free.
    assert cycles(GFX950, "read_tr_b64", 8 * LANES, 8) == (2, 0)
    # A column of 16 rows of 256 bytes: lanes 0-15 all in banks 0-1, lanes 16-31 (8 bytes
    # further) in banks 2-3: 16 distinct addresses per bank, 15 conflicts in each phase.
    addrs = 256 * (LANES % 16) + 8 * (LANES // 16)
    assert cycles(GFX950, "read_tr_b64", addrs, 8) == (2, 30)


def test_inactive_lanes_do_not_count():
    # the worst case above with only lanes 0-7 active: one phase, 8-way
    assert cycles(GFX942, "read_b32", 128 * LANES[:8], 4, lanes=LANES[:8]) == (1, 7)
    assert cycles(GFX942, "read_b32", np.zeros(0), 4, lanes=LANES[:0]) == (0, 0)


# ---------------------------------------------------------------------------- timed runs


def _run(module, target="gfx942", off=(), args=()):
    res = asterism.launch(module, "k", grid=1, block=64, args=list(args),
                          timing=TimingOptions(off=frozenset(off)))
    return res.timing


def _by_text(result, prefix: str) -> list[int]:
    """Instruction indices whose text starts with `prefix`."""
    return [i for i, (_a, t) in enumerate(result.code) if t.startswith(prefix)]


def ds_kernel(target: str, shift: int, op: str, width: int, exec_mask: int | None = None,
              times: int = 2, pad: int = 0):
    """Lane i reads LDS at (i << shift) + pad * i with `op` `times` times back to back, then
    waits for them."""
    kb = KernelBuilder("k", target, workgroup_size=(64, 1, 1), lds_size=65536)
    kb.v_lshlrev_b32(kb.v(1), shift, kb.workitem_id("x"))
    if pad:
        kb.v_mad_u32_u24(kb.v(1), pad, kb.workitem_id("x"), kb.v(1))
    if exec_mask is not None:
        kb.s_mov_b64(kb.exec, exec_mask)
    for k in range(times):
        dst = kb.v(4 + 4 * k) if width == 1 else kb.v[4 + 4 * k:4 + 4 * k + width]
        getattr(kb, op)(dst, kb.v(1))
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_endpgm()
    return kb.finish()


def _ds_times(result, op: str):
    """(issue cycle of each `op`, when the s_waitcnt after them ends)."""
    (wave,) = result.waves
    recs = {r[4] - 1: r for r in wave.records}
    issues = [recs[i][0] + recs[i][2] for i in _by_text(result, op)]
    wait = recs[_by_text(result, "s_waitcnt")[0]]
    return issues, wait[0] + wait[3]


def test_a_conflicting_ds_read_b32_keeps_the_lds_busy_64_clocks():
    lat = GFX942.memory["lds"]
    res = _run(ds_kernel("gfx942", 7, "ds_read_b32", 1))
    (first, second), done = _ds_times(res, "ds_read_b32")
    # the second read waits for the LDS: 64 clocks after the first (not 4)
    assert second - first == 64
    # each completes 60 clocks later than a conflict-free one (64 - the bandwidth cost 4)
    assert done == second + lat + 60
    i, j = _by_text(res, "ds_read_b32")
    assert res.lds_costs[i].conflict_cycles == 62 and res.lds_costs[i].added_cycles == 60
    assert res.lds_costs[j].executions == 1
    # turned off: the bandwidth cost only, as the model had it before
    off = _run(ds_kernel("gfx942", 7, "ds_read_b32", 1), off={"lds_banks"})
    (first, second), done = _ds_times(off, "ds_read_b32")
    assert (second - first, done - second) == (4, lat) and off.lds_costs == {}


def test_inactive_lanes_do_not_conflict_in_a_run():
    # lanes 0-7 only: one phase, 8 clocks (8-way), above the 4-clock slot: + 4
    res = _run(ds_kernel("gfx942", 7, "ds_read_b32", 1, exec_mask=0xFF))
    (first, second), _done = _ds_times(res, "ds_read_b32")
    assert second - first == 8
    cost = res.lds_costs[_by_text(res, "ds_read_b32")[0]]
    assert (cost.conflict_cycles, cost.added_cycles) == (7, 4)


@pytest.mark.parametrize("target, pad, busy, port, conflicts", [
    ("gfx942", 0, 64, 16, 56), ("gfx950", 0, 64, 8, 60),  # 256-byte rows: 8-way / 16-way
    # 272-byte rows: conflict-free: the banks' bandwidth cost (1 KiB at 128 / 256 B per
    # clock), below the wave's SIMD-pair port (1 KiB at 64 / 128 B per clock)
    ("gfx942", 16, 8, 16, 0), ("gfx950", 16, 4, 8, 0)])
def test_k_tile_reads_through_the_emulator(target, pad, busy, port, conflicts):
    res = _run(ds_kernel(target, 8, "ds_read_b128", 4, pad=pad), target)
    (first, second), _done = _ds_times(res, "ds_read_b128")
    assert second - first == max(4, busy, port)
    assert res.lds_costs[_by_text(res, "ds_read_b128")[0]].conflict_cycles == conflicts
    off = _run(ds_kernel(target, 8, "ds_read_b128", 4, pad=pad), target, off={"lds_ports"})
    (first, second), _done = _ds_times(off, "ds_read_b128")
    assert second - first == max(4, busy)


def ds_write_kernel(target: str, op: str, width: int, times: int = 2):
    """Lane i writes `width` dwords at byte 4 * width * i (contiguous, conflict-free)
    `times` times back to back."""
    kb = KernelBuilder("k", target, workgroup_size=(64, 1, 1), lds_size=65536)
    kb.v_lshlrev_b32(kb.v(1), {1: 2, 2: 3, 4: 4}[width], kb.workitem_id("x"))
    for _ in range(times):
        getattr(kb, op)(kb.v(1), kb.v(4) if width == 1 else kb.v[4:4 + width])
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("target, op, width, port, banks", [
    # [hip-hw] / [pyhip]: one wave moves at most 64 B per clock through its SIMD pair's port
    # (gfx942): b128 1 KiB in 16 clocks, b64 in 8; [rocroller]: gfx950 b64 / b128 reads at
    # 128 B per clock (4 / 8 clocks); b32 reads 4 clocks (the issue cycle) on both
    ("gfx942", "ds_read_b128", 4, 16, 8), ("gfx950", "ds_read_b128", 4, 8, 4),
    ("gfx942", "ds_read_b64", 2, 8, 4), ("gfx950", "ds_read_b64", 2, 4, 4),
    ("gfx942", "ds_read_b32", 1, 4, 4),
    # [rocroller] / [hip-hw]: a write's issue takes 4 + 4 * dwords clocks (b32 8, b128 20),
    # on gfx950 too; without the port: the banks' cost (ds_write occupancy 4; 1 KiB / 128)
    ("gfx942", "ds_write_b32", 1, 8, 4), ("gfx942", "ds_write_b128", 4, 20, 8),
    # (gfx950 b128 writes: 8 phases of 8 lanes, gfx942's, at 1 clock each: 8)
    ("gfx950", "ds_write_b64", 2, 12, 4), ("gfx950", "ds_write_b128", 4, 20, 8)])
def test_a_wave_holds_its_simd_pair_lds_port(target, op, width, port, banks):
    # lane i at byte (4 * width) * i: contiguous, conflict-free reads
    make = ds_write_kernel if op.startswith("ds_write") else \
        (lambda t, o, w: ds_kernel(t, {1: 2, 2: 3, 4: 4}[w], o, w))
    res = _run(make(target, op, width), target)
    (first, second), done = _ds_times(res, op)
    assert second - first == port
    # the report: the one wave (SIMD 0) held port 0 for its two instructions
    assert res.lds_ports == {"lds_port0": 2 * port}
    assert res.to_json()["lds_ports"] == {"lds_port0": 2 * port}
    assert f"port0 {2 * port} (" in res.summary()
    off = _run(make(target, op, width), target, off={"lds_ports"})
    (first_off, second_off), done_off = _ds_times(off, op)
    assert second_off - first_off == banks and off.lds_ports == {}
    # the port delays the issue, not the answer: lgkmcnt drains as long after the issue
    assert done - second == done_off - second_off


def test_simd_pairs_share_a_port():
    from asterism.timing.lds import port_of
    # [hip-hw] "The SIMDs connect to the LDS in pairs": SIMDs 0-1 and 2-3 (which SIMDs pair
    # is not documented: inferred)
    assert port_of(0) == port_of(1) != port_of(2) == port_of(3)


@pytest.mark.parametrize("op, width, conflicts", [
    ("ds_read_b32", 1, 0),  # one dword for all lanes: broadcast, 2 phases of 1 clock
    ("ds_add_u32", 0, 62),  # an atomic: 32 read-modify-writes per phase, 2 x 31 conflicts
    ("ds_add_rtn_u32", 1, 62)])
def test_same_address_reads_broadcast_and_atomics_serialize(op, width, conflicts):
    kb = KernelBuilder("k", "gfx942", workgroup_size=(64, 1, 1), lds_size=1024)
    kb.v_mov_b32(kb.v(1), 0)
    kb.v_mov_b32(kb.v(2), 1)
    for k in range(2):
        if width == 0:
            getattr(kb, op)(kb.v(1), kb.v(2))
        elif op.startswith("ds_add"):
            getattr(kb, op)(kb.v(4 + k), kb.v(1), kb.v(2))
        else:
            getattr(kb, op)(kb.v(4 + k), kb.v(1))
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_endpgm()
    res = _run(kb.finish())
    (first, second), _done = _ds_times(res, op)
    assert second - first == max(4, 2 + conflicts)
    assert res.lds_costs[_by_text(res, op)[0]].conflict_cycles == conflicts


def test_transposed_read_through_the_emulator():
    # lane i reads row i % 16 of a 256-byte-row tile at column 8 * (i // 16): the column of
    # test_transposed_read_b64_tr_b16, 30 conflicts; 2 phases of 16 clocks = 32 clocks.
    kb = KernelBuilder("k", "gfx950", workgroup_size=(64, 1, 1), lds_size=65536)
    x = kb.workitem_id("x")
    kb.v_and_b32(kb.v(1), 15, x)
    kb.v_lshlrev_b32(kb.v(1), 8, kb.v(1))
    kb.v_lshrrev_b32(kb.v(2), 4, x)
    kb.v_lshl_add_u32(kb.v(1), kb.v(2), 3, kb.v(1))
    kb.ds_read_b64_tr_b16(kb.v[4:6], kb.v(1))
    kb.ds_read_b64_tr_b16(kb.v[6:8], kb.v(1))
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_endpgm()
    res = _run(kb.finish(), "gfx950")
    (first, second), _done = _ds_times(res, "ds_read_b64_tr_b16")
    assert second - first == 32
    assert res.lds_costs[_by_text(res, "ds_read_b64_tr_b16")[0]].conflict_cycles == 30


def test_read2_halves_are_separate_accesses():
    # ds_read2_b32 offset0:0 offset1:32 (x4 bytes = 128 B apart) at a 256-byte stride: each
    # half is the b32 worst case (2 phases x 32 = 64 clocks): 128 clocks in all, 124 conflicts
    kb = KernelBuilder("k", "gfx942", workgroup_size=(64, 1, 1), lds_size=65536)
    kb.v_lshlrev_b32(kb.v(1), 8, kb.workitem_id("x"))
    kb.ds_read2_b32(kb.v[4:6], kb.v(1), offset0=0, offset1=32)
    kb.ds_read2_b32(kb.v[6:8], kb.v(1), offset0=0, offset1=32)
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_endpgm()
    res = _run(kb.finish())
    (first, second), _done = _ds_times(res, "ds_read2_b32")
    assert second - first == 128
    assert res.lds_costs[_by_text(res, "ds_read2_b32")[0]].conflict_cycles == 124


def test_an_lds_dma_write_is_contiguous_and_conflict_free():
    # buffer_load_dword ... lds writes lane i's dword at M0 + 4i (ISA 9.1.9): 2 phases of 32
    # lanes on 32 distinct banks, no conflict, within the 1-slot bandwidth cost; on gfx950
    # global_load_lds_dwordx4 writes M0 + 16i: 8 phases of 8 lanes x 4 dwords = 32 distinct
    # banks of 64, no conflict, but 8 clocks where the read bandwidth rule (1 KiB at 256 B per
    # clock) says 4: writes keep gfx942's 128 B per clock ([rocroller]).
    for target, load, added in (("gfx942", "buffer", 0), ("gfx950", "global", 4)):
        kb = KernelBuilder("k", target, workgroup_size=(64, 1, 1), lds_size=4096)
        src = kb.arg_buffer("src", "i32", "read_only")
        kp = kb.kernarg_ptr()
        kb.s_load_dwordx2(kb.s[4:6], kp, src)
        kb.v_lshlrev_b32(kb.v(1), 4, kb.workitem_id("x"))
        kb.s_waitcnt(lgkmcnt=0)
        kb.s_mov_b32(kb.m0, 64)
        kb.s_nop(0)
        if load == "buffer":
            kb.s_mov_b32(kb.s(8), kb.s(4))
            kb.s_mov_b32(kb.s(9), kb.s(5))
            kb.s_mov_b32(kb.s(10), 4096)
            kb.s_mov_b32(kb.s(11), 0x00027000)
            kb.buffer_load_dword(kb.v(1), kb.s[8:12], 0, offen=True, lds=True)
            op = "buffer_load_dword"
        else:
            kb.global_load_lds_dwordx4(kb.v(1), kb.s[4:6])
            op = "global_load_lds_dwordx4"
        kb.s_waitcnt(vmcnt=0)
        kb.s_endpgm()
        res = _run(kb.finish(), target, args=[np.zeros(1024, np.int32)])
        (i,) = _by_text(res, op)
        assert (res.lds_costs[i].executions, res.lds_costs[i].conflict_cycles,
                res.lds_costs[i].added_cycles) == (1, 0, added), target


# ---------------------------------------------------------------------------- cache lines


def load_kernel(shift: int, op: str, width: int, exec_mask: int | None = None):
    """Two `op` loads of lane i's address (i << shift) into the input, then a wait."""
    kb = KernelBuilder("k", "gfx942", workgroup_size=(64, 1, 1))
    src = kb.arg_buffer("src", "u32", access="read_only")
    kp = kb.kernarg_ptr()
    kb.s_load_dwordx2(kb.s[4:6], kp, src)
    kb.v_lshlrev_b32(kb.v(1), shift, kb.workitem_id("x"))
    kb.s_waitcnt(lgkmcnt=0)
    if exec_mask is not None:
        kb.s_mov_b64(kb.exec, exec_mask)
    for k in range(2):
        dst = kb.v(4 + 4 * k) if width == 1 else kb.v[4 + 4 * k:4 + 4 * k + width]
        getattr(kb, op)(dst, kb.v(1), kb.s[4:6])
    kb.s_waitcnt(vmcnt=0)
    kb.s_endpgm()
    return kb.finish()


def _vmem(result, op: str):
    (wave,) = result.waves
    recs = {r[4] - 1: r for r in wave.records}
    idx = _by_text(result, op)
    wait = recs[_by_text(result, "s_waitcnt vmcnt")[0]]
    return [recs[i][0] + recs[i][2] for i in idx], wait[0] + wait[3], result.line_costs[idx[0]]


@pytest.mark.parametrize("shift, op, width, mask, lines, busy", [
    # dwordx4, lane i at 16 i: 1024 contiguous bytes = 8 lines; the bytes rule (1 KiB at
    # 64 B/clk = 16) is the larger
    (4, "global_load_dwordx4", 4, None, 8, 16),
    # dword at a 128-byte stride: 64 lines, 64 clocks instead of the bytes rule's 4
    (7, "global_load_dword", 1, None, 64, 64),
    # the same with 8 active lanes: 8 lines, 8 clocks
    (7, "global_load_dword", 1, 0xFF, 8, 8),
    # coalesced dword: 256 bytes = 2 lines, the 4-clock slot
    (2, "global_load_dword", 1, None, 2, 4)])
def test_vector_loads_cost_their_cache_lines(shift, op, width, mask, lines, busy):
    src = np.zeros(64 * 64, np.uint32)
    res = _run(load_kernel(shift, op, width, mask), args=[src])
    (first, second), done, cost = _vmem(res, op)
    assert (cost.executions, cost.lines, cost.mean_lines) == (1, lines, lines)
    assert second - first == busy  # the second load waits for the vector memory path
    extra = busy - max(4, 64 * 4 * width // 64)  # cycles beyond the bytes rule
    assert cost.added_cycles == extra
    # The second load reads the lines the first one fetches (in flight): it completes when
    # that fill arrives, plus its own lookup cycles.
    assert done == first + GFX942.memory["hbm"] + extra
    off = _run(load_kernel(shift, op, width, mask), off={"vmem_lines"}, args=[src])
    (first, second), done, cost = _vmem(off, op)
    assert second - first == max(4, 64 * 4 * width // 64) and cost.added_cycles == 0


# ---------------------------------------------------------------------------- reports, data


def test_the_report_lists_the_worst_instructions():
    res = _run(ds_kernel("gfx942", 7, "ds_read_b32", 1))
    text = res.summary()
    assert "LDS bank conflicts (modeled, not measured): 124 conflict cycles in 2 executions " \
           "of 2 instructions accessing LDS" in text
    assert "     1               62      62.0     60  ds_read_b32 v4, v1" in text
    data = json.loads(json.dumps(res.to_json()))
    first = data["lds_conflicts"][0]
    assert (first["instruction"], first["conflict_cycles"], first["added_cycles"],
            first["conflict_cycles_per_execution"]) == ("ds_read_b32 v4, v1", 62, 60, 62.0)
    src = np.zeros(64 * 64, np.uint32)
    res = _run(load_kernel(7, "global_load_dword", 1), args=[src])
    text = res.summary()
    assert "cache lines (modeled, not measured): 64.0 lines of 128 B per vector memory " \
           "instruction (2 executions of 2 instructions)" in text
    assert "     1        64.0     60  global_load_dword v4, v1, s[4:5]" in text
    lines = {d["instruction"]: d["mean_lines"] for d in res.to_json()["cache_lines"]}
    assert lines["global_load_dword v4, v1, s[4:5]"] == 64.0


def test_mechanism_names_and_bounds_are_checked(monkeypatch):
    with pytest.raises(TimingError, match="unknown timing mechanism banks to turn off; "
                                          "choose from lds_banks, vmem_lines, bandwidth, "
                                          "wg_barriers"):
        TimingOptions(off={"banks"})
    assert TimingOptions(off=["lds_banks"]).off == frozenset({"lds_banks"})
    for tm, banks in ((GFX942, 32), (GFX950, 64)):
        assert tm.value("lds.banks") == tm.lds_banks == banks
        assert tm.bounds["lds.banks"] == tt.Bound("sourced", banks, banks)
        assert tm.bounds["lds.conflict_cycles"].low <= tm.lds_conflict_cycles <= \
            tm.bounds["lds.conflict_cycles"].high
        assert tm.value("memory.cycles_per_line") == 1
        # a parameter file may set the conflict cost within its bounds (phases are rules)
        assert tm.with_values({"lds.conflict_cycles": 2}).lds_conflict_cycles == 2
    good = tt._raw()

    def use(section: dict) -> None:
        monkeypatch.setattr(tt, "_raw", lambda: {**good, "gfx942": {**good["gfx942"],
                                                                     **section}})
        tt._timing.cache_clear()

    try:
        use({"lds": {**good["gfx942"]["lds"], "banks": 64}})
        with pytest.raises(TargetError, match=r"lds.banks = 64 is outside its bounds "
                                              r"\[32, 32\] \(sourced\)"):
            tt.get_timing("gfx942")
        use({"lds": {**good["gfx942"]["lds"], "phases": {
            **good["gfx942"]["lds"]["phases"], "read_b32": [64]}}})
        with pytest.raises(TargetError, match=r"read_b32: expected a list of at most 6 "
                                              r"lane-bit masks"):
            tt.get_timing("gfx942")
        phases = dict(good["gfx942"]["lds"]["phases"])
        del phases["write_b64"]
        use({"lds": {**good["gfx942"]["lds"], "phases": phases}})
        with pytest.raises(TargetError, match=r"missing \['write_b64'\]"):
            tt.get_timing("gfx942")
    finally:
        monkeypatch.undo()
        tt._timing.cache_clear()


def test_replay_keeps_the_bandwidth_costs():
    # a trace replay has no addresses: the LDS and memory mechanisms there charge what they
    # did before (lds.Lds without accesses, memory.StreamMemory)
    from asterism.timing.lds import Lds
    from asterism.timing.static import Static

    st = Static("mem", "lds", 5, "lds", occupancy=8, mem="lds")
    assert Lds(GFX942).cost(None, st, 0) == 8
    assert Lds(GFX942).latency(None, st) == GFX942.memory["lds"]


def test_cli_timing_off_leaves_a_mechanism_out(tmp_path, capsys):
    """`run --timing --timing-off lds_banks` gives the conflict-free cycles (60 fewer per
    conflicting read, as the API's TimingOptions(off=...)); a bad name is a one-line error."""
    from asterism.cli.main import main

    hsaco = tmp_path / "k.hsaco"
    hsaco.write_bytes(asterism.compile(ds_kernel("gfx942", 7, "ds_read_b32", 1)))
    args = ["run", str(hsaco), "--timing", "--json", "--trace-dir"]
    assert main([*args, str(tmp_path / "t0")]) == 0
    on = json.loads(capsys.readouterr().out)["timing"]
    assert main([*args, str(tmp_path / "t1"), "--timing-off", "lds_banks,vmem_lines"]) == 0
    off = json.loads(capsys.readouterr().out)["timing"]
    # the second read issues 64 - 4 clocks later and completes 60 later than conflict-free
    assert on["cycles"] - off["cycles"] == (64 - 4) + 60
    assert off["parameters"]["off"] == ["lds_banks", "vmem_lines"]
    assert main([*args, str(tmp_path / "t2"), "--timing-off", "banks"]) == 1
    err = capsys.readouterr().err
    assert "unknown timing mechanism banks to turn off" in err and "Traceback" not in err
    assert main(["run", str(hsaco), "--timing-off", "lds_banks"]) == 1
    assert "need --timing" in capsys.readouterr().err
