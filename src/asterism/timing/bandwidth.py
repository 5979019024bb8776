"""The whole-grid bandwidth ceiling: every CU of the chip shares its L2s and its HBM.
Modeled, not measured.

The model times the first CU(s) of a dispatch in detail and takes every other CU to run like
them (functional.py); a grid keeps ``active = min(device CUs, workgroups)`` CUs busy, and
each active CU gets an equal share of each shared level ([<target>.bandwidth] in
target/data/timing.toml):

* L2: ``l2_bytes_per_clock x l2_channels x xcds`` bytes per clock for the chip (one L2 per
  XCD; workgroups go to the XCDs in turn, so the active CUs spread evenly over them);
* HBM: ``hbm_gbps`` GB/s, in bytes per shader clock at ``clock_mhz``.

A device of fewer CUs (TimingOptions.compute_units) has that part of the chip's L2 and HBM
bandwidth, so a CU's share of a full grid is the same on it as on the whole chip.

Each modeled CU has a queue per level that moves its share's bytes per clock: a transfer of
B bytes asked for at t starts once the queue has moved what was asked before, takes B /
share cycles, and the access completes no sooner than its transfer has (memory.py still
applies its latency: the later of the two counts). A stream of accesses thus runs at the
share's rate; a few accesses wait for nothing.

What moves (memory.LineMemory knows the cache lines of each access):

* L2: every vector access, its lines (``memory.line_bytes`` each), loads and stores (the
  vector L1 is not modeled, so every vector access goes to the L2); a scalar load only for
  a line touched for the first time (the scalar cache keeps the others).
* HBM: a line's first touch (its fill) and a line's first store (its write-back, counted
  when the line is dirtied). A store is acknowledged once its transfers are done: the L2 is
  write-back, but its dirty lines must reach memory by the end-of-kernel release (the L2s of
  the XCDs are not coherent with each other) and a stream of stores cannot run ahead of
  HBM for long; how much the L2 buffers in between is not modeled.
* Lines the grid shares: a line several CUs read is fetched from HBM once, not once per CU
  (the L2s and the MALL serve the other touches). A `Footprint` weighs the lines of each
  allocation by min(1, lines of the allocation / (its lines the modeled workgroups touch x
  workgroups / modeled workgroups)): a streaming kernel's lines weigh 1, a GEMM operand
  tile that 8 workgroups read weighs 1/8. The touched lines come from a functional pass of
  the modeled workgroups before the model (functional.py), their writes undone.

The result (`report`) states per level the bytes the whole grid moves (the modeled CUs'
bytes, times workgroups / modeled workgroups), the rate that is over the modeled run, the
peak, and whether the level bound the run: its share was busy BINDS_AT of the run or more.

Not modeled: the MALL's own bandwidth, L2 channel and HBM bank conflicts, the fabric between
XCDs, a share that grows when fewer CUs remain busy at the end of the grid.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from asterism.target.timing import TimingModel
from asterism.timing.memory import Recorder
from asterism.timing.result import BandwidthUse, LevelUse

# [stream] A kernel that keeps a level busy 80 % of the run is at its practical ceiling:
# STREAM reaches 4.1-4.3 of MI300X's 5.3 TB/s (target/data/timing.toml [gfx942.bounds]).
BINDS_AT = 0.8
FOLD_EVERY = 256  # accesses the footprint pass keeps before folding them into its line set


class Footprint:
    """HBM weights of cache lines by allocation (see the module docstring)."""

    def __init__(self, allocations: Iterable[tuple[int, int]], touched: Iterable[int],
                 scale: float, line_bytes: int) -> None:
        lines = np.unique(np.fromiter(touched, np.int64))
        spans = sorted((base // line_bytes, (base + max(size, 1) - 1) // line_bytes + 1)
                       for base, size in allocations)
        self.starts = np.array([lo for lo, _ in spans], np.int64)
        self.ends = np.array([hi for _, hi in spans], np.int64)
        weights = []
        for lo, hi in spans:
            seen = int(np.searchsorted(lines, hi) - np.searchsorted(lines, lo))
            weights.append(min(1.0, (hi - lo) / (seen * scale)) if seen else 1.0)
        self.weights = np.array(weights, np.float64)

    def weight(self, lines: Sequence[int]) -> float:
        """The HBM lines `lines` stand for: the sum of their weights (1 outside every
        allocation)."""
        if not lines:
            return 0.0
        a = np.asarray(lines, np.int64)
        k = np.searchsorted(self.starts, a, side="right") - 1
        inside = (k >= 0) & (a < self.ends[np.maximum(k, 0)])
        return float(np.where(inside, self.weights[np.maximum(k, 0)], 1.0).sum())


class LineSet(Recorder):
    """A Recorder that keeps the set of lines every access touched (the footprint pass)."""

    def __init__(self, memory: Any, line_bytes: int) -> None:
        super().__init__(memory)
        self.line_bytes = line_bytes
        self.lines: set[int] = set()

    def _fold(self) -> None:
        if len(self.spans) >= FOLD_EVERY:
            self.lines |= self.take_lines(self.line_bytes)

    def all_lines(self) -> set[int]:
        """Every line touched so far."""
        self.lines |= self.take_lines(self.line_bytes)
        return self.lines

    def resolve(self, addrs: np.ndarray, nbytes: int):
        """As Recorder.resolve."""
        out = super().resolve(addrs, nbytes)
        self._fold()
        return out

    def load_bytes(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """As Recorder.load_bytes."""
        out = super().load_bytes(addrs, nbytes)
        self._fold()
        return out

    def load_dwords(self, addrs: np.ndarray, ndw: int) -> np.ndarray:
        """As Recorder.load_dwords."""
        out = super().load_dwords(addrs, ndw)
        self._fold()
        return out

    def store_bytes(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """As Recorder.store_bytes."""
        super().store_bytes(addrs, data)
        self._fold()

    def store_dwords(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """As Recorder.store_dwords."""
        super().store_dwords(addrs, data)
        self._fold()


class Level:
    """One shared level (L2 or HBM): a queue per modeled CU at its share's rate, and what
    went through them."""

    def __init__(self, name: str, bytes_per_clock: float, active: int) -> None:
        self.name = name
        self.bytes_per_clock = bytes_per_clock  # the device's
        self.share = bytes_per_clock / active  # one active CU's
        self.free: dict[int, float] = {}  # CU -> when its queue has moved everything asked
        self.bytes = 0.0
        self.accesses = self.delayed = 0
        self.delay = 0.0

    def take(self, cu: int, now: int, nbytes: float, due: int) -> int:
        """Move `nbytes` for CU `cu` asked at `now`; returns when they are moved (`due`:
        when the access would complete without this level's limit)."""
        if nbytes <= 0:
            return now
        done = max(float(now), self.free.get(cu, 0.0)) + nbytes / self.share
        self.free[cu] = done
        self.bytes += nbytes
        self.accesses += 1
        if done > due:
            self.delayed += 1
            self.delay += done - due
        return math.ceil(done)


class Bandwidth:
    """The modeled CUs' shares of the chip's L2 and HBM bandwidth (see the module
    docstring); memory.LineMemory asks it how long an access's transfers take."""

    def __init__(self, tm: TimingModel, chip_cus: int, device_cus: int, workgroups: int,
                 modeled_workgroups: int, footprint: Footprint | None) -> None:
        bw: Mapping[str, float] = tm.bandwidth
        self.clock_mhz = tm.clock_mhz
        self.line_bytes = tm.memory["line_bytes"]
        self.active = max(1, min(device_cus, workgroups))
        part = device_cus / chip_cus  # a device of fewer CUs: that part of the chip
        hbm = bw["hbm_gbps"] * 1000.0 / tm.clock_mhz  # GB/s -> bytes per clock
        l2 = bw["l2_bytes_per_clock"] * bw["l2_channels"] * bw["xcds"]
        self.hbm = Level("HBM", hbm * part, self.active)
        self.l2 = Level("L2", l2 * part, self.active)
        self.scale = workgroups / max(1, modeled_workgroups)
        self.footprint = footprint
        self.dirty: set[int] = set()

    def _hbm_lines(self, lines: Sequence[int]) -> float:
        if self.footprint is None:
            return float(len(lines))
        return self.footprint.weight(lines)

    def read(self, cu: int, now: int, lines: set[int], line_ready: Mapping[int, int],
             hit: int, miss: int, scalar: bool) -> tuple[int, int]:
        """The hit and miss latencies of a load of `lines` asked at `now` (`line_ready`:
        lines touched before; `scalar`: a scalar load), after the CU's shares have moved
        its bytes."""
        new = [line for line in lines if line not in line_ready]
        l2_lines = len(new) if scalar else len(lines)
        l2 = self.l2.take(cu, now, l2_lines * self.line_bytes, now + (miss if new else hit))
        hbm = self.hbm.take(cu, now, self._hbm_lines(new) * self.line_bytes, now + miss)
        return max(hit, l2 - now), max(miss, l2 - now, hbm - now)

    def store(self, cu: int, now: int, lines: set[int], ack: int) -> int:
        """The latency of a store to `lines` asked at `now` (`ack`: the L2's
        acknowledgement without the limits): its L2 transfer, and the write-back of the
        lines it dirties first."""
        dirtied = [line for line in lines if line not in self.dirty]
        self.dirty.update(dirtied)
        l2 = self.l2.take(cu, now, len(lines) * self.line_bytes, now + ack)
        hbm = self.hbm.take(cu, now, self._hbm_lines(dirtied) * self.line_bytes, now + ack)
        return max(ack, l2 - now, hbm - now)

    def report(self, cycles: int) -> BandwidthUse:
        """The levels' use over a modeled run of `cycles` (the whole grid: see the module
        docstring)."""
        seconds = cycles / (self.clock_mhz * 1e6) if cycles > 0 else 0.0
        levels = []
        for lv in (self.hbm, self.l2):
            grid = lv.bytes * self.scale
            peak = lv.bytes_per_clock * self.clock_mhz * 1e6 / 1e9
            achieved = grid / seconds / 1e9 if seconds else 0.0
            levels.append(LevelUse(lv.name, round(grid), round(lv.bytes), achieved,
                                   round(peak, 1), lv.accesses, lv.delayed, round(lv.delay),
                                   bool(peak) and achieved >= BINDS_AT * peak))
        how = ("lines several CUs share count once (weights by allocation from the modeled "
               "workgroups' footprint)" if self.footprint is not None else
               "every CU's first touch counts (footprint unknown)")
        return BandwidthUse(self.active, tuple(levels), how)


__all__ = ["BINDS_AT", "Bandwidth", "Footprint", "Level", "LineSet"]
