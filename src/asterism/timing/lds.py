"""What an LDS instruction costs: its bandwidth and its bank conflicts. Modeled, not measured.

Bandwidth (static, every driver): a DS instruction keeps the CU's LDS busy
max(``occupancy``, bytes / ``lds.bytes_per_cycle``) cycles per wave instruction (a wave64
moves 64 lanes * 4 bytes per dword) and its lgkmcnt entry completes ``memory.lds`` cycles
after issue, in order.

Bank conflicts (the functional driver, which knows each active lane's address; `LdsAccesses`
notes them through the emulator's ``ctx.lds_observer``). The LDS has ``lds.banks`` banks of
4 bytes (bank = dword address mod banks: 32 on gfx942, 64 on gfx950). The hardware serves
the lanes of one access in *phases*, groups of lanes fixed per DS form and target
(``[<target>.lds.phases]`` in target/data/timing.toml, each rule a list of lane-bit masks:
bit j of a lane's phase number is the parity of lane & mask[j]). In one phase every bank
serves one dword address per clock; lanes on the same dword share it (broadcast). So a phase
whose busiest bank holds k distinct dword addresses takes 1 + ``lds.conflict_cycles`` *
(k - 1) clocks, phases without an active lane none, and the access needs the sum over its
phases. The instruction keeps the LDS busy max(bandwidth cost, that sum), and its lgkmcnt
entry completes as many cycles later than the bandwidth cost alone says. Its *conflict
cycles* (reported per instruction, `asterism run --timing`) are conflict_cycles * sum over
phases of (k - 1): what the hardware counter SQ_LDS_BANK_CONFLICT counts.

Which rule an access uses (inferred where marked; the rules' sources are in timing.toml):
* ds_read_* / ds_write_* of 8, 16, 32, 64, 96, 128 bits: read_bN / write_bN (sub-dword
  accesses as b32: each lane occupies the bank of its dword).
* ds_read2* / ds_write2* (and st64): each half is its own access with the b32 / b64 rule, one
  after the other ([nod]: ds_read2_b64 runs 8 phases, the two b64 halves in turn).
* ds_read_b64_tr_b16 / _b8 / _b4, ds_read_b96_tr_b6 (gfx950 transposed reads): read_tr_b64 /
  read_tr_b96. (inferred: no source gives their phases; the banks see each lane's address as
  ds_read_b64 / b96 would, only the returned data is shuffled across 16 lanes.)
* LDS atomics (ds_add_u32, ds_max_f32, ... and the _rtn forms): the write rule of their width,
  without broadcast: every lane's read-modify-write is its own bank access. (inferred.)
* LDS DMA writes (buffer_load ... lds, global_load_lds_*): the write rule of the width each
  lane writes (inferred; the address is M0 + instruction offset + lane * size, CDNA3/CDNA4
  ISA 9.1.9 as quoted in ROCm/rocm-systems PR #10192, so one wave writes a contiguous block
  that no rule makes conflict). The DMA's write happens when its data returns: the model adds
  its conflict cycles to the load's vmcnt latency and does not occupy the LDS unit then (no
  source gives the DMA's LDS port cost).
* A FLAT access that went to LDS: the ds_read / ds_write rule of its width.
SIMD-pair ports (`port_cycles`, `Lds.port_free` / `Lds.take_port`; TimingOptions.off
"lds_ports" turns them off). The SIMDs reach the LDS in pairs (SIMDs 0-1, 2-3; which SIMDs
pair is not documented), each pair through one port ([hip-hw] in timing.toml: "each pair
sharing a 64-byte bidirectional port", one wave at most 64 B/clk; gfx950 reads of b64/b128:
128 B/clk, [rocroller]). One wave's DS instruction holds its pair's port
max(issue_cycles + ``lds.write_cycles_per_dword`` * dwords for a write, 64 * bytes per lane /
``lds.port_read_bytes`` or ``port_write_bytes``) cycles: a DS instruction issues when both the
banks (above) and its pair's port are free. So one wave's ds_read_b128 stream runs at 64 B/clk
on gfx942 (16 cycles each, [pyhip] measured) and 128 B/clk on gfx950 (8 cycles), while the
banks serve two such streams at once. LDS DMA writes come from the vector memory return path,
not a SIMD port: they hold none. Not modeled: ds_swizzle / ds_permute use no bank.

Trace replay (replay.py) has no addresses: there `Lds` has no `LdsAccesses` and every DS
instruction costs its bandwidth and its SIMD-pair port only (no bank conflicts).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from asterism.isa import Instruction
from asterism.target.timing import TimingModel
from asterism.timing.result import LdsCost
from asterism.timing.state import Cu, ModelWave

if TYPE_CHECKING:
    from asterism.timing.static import Static


def busy_cycles(isa: Instruction, data_dwords: int, tm: TimingModel) -> int:
    """Cycles a DS instruction moving `data_dwords` per lane keeps the CU's LDS busy (its
    bandwidth cost, without bank conflicts)."""
    return tm.occupancy_of(isa, data_dwords)


# The SIMD pairs' LDS ports, as keys of the CU's unit table (Cu.units: free at).
PORTS = ("lds_port0", "lds_port1")


def port_cycles(kind: str, data_dwords: int, tm: TimingModel) -> int:
    """Cycles one wave's DS instruction of `kind` "ds_read" / "ds_write" moving `data_dwords`
    per lane holds its SIMD pair's LDS port (see the module docstring)."""
    dwords = max(data_dwords, 1)
    nbytes = 64 * 4 * dwords  # a wave64: 64 lanes
    if kind == "ds_write":
        issue = tm.issue_cycles + tm.lds_write_cycles_per_dword * dwords
        return max(issue, -(-nbytes // tm.lds_port_write_bytes))
    return max(tm.issue_cycles, -(-nbytes // tm.lds_port_read_bytes))


def port_of(simd: int) -> str:
    """The LDS port key of a SIMD (its pair: SIMDs 0-1 port 0, 2-3 port 1, ...)."""
    return PORTS[(simd >> 1) % len(PORTS)]


def latency(tm: TimingModel) -> int:
    """Cycles from a DS instruction's issue until its lgkmcnt entry completes (no conflict)."""
    return tm.memory["lds"]


def form_of(mnemonic: str) -> str:
    """The phase-rule family of a DS instruction: "tr" for the transposed reads, else ""."""
    return "tr" if mnemonic.startswith("ds_read_") and "_tr_b" in mnemonic else ""


def rule_of(kind: str, nbytes: int, form: str = "") -> str:
    """The phase rule of one LDS access: kind "load", "store" or "atomic" of `nbytes` per
    lane, `form` from `form_of`."""
    width = 32 if nbytes <= 4 else 64 if nbytes <= 8 else 96 if nbytes <= 12 else 128
    if form == "tr":
        return f"read_tr_b{width}"
    return f"{'read' if kind == 'load' else 'write'}_b{width}"


@cache
def lane_phases(masks: tuple[int, ...]) -> np.ndarray:
    """The phase number of each of the 64 lanes under a rule's lane-bit masks."""
    phase = np.array([sum(((lane & m).bit_count() & 1) << j for j, m in enumerate(masks))
                      for lane in range(64)], np.int64)
    phase.flags.writeable = False
    return phase


def bank_cycles(lanes: np.ndarray, addrs: np.ndarray, nbytes: int, masks: tuple[int, ...],
                banks: int, broadcast: bool = True) -> tuple[int, int]:
    """(phases, conflicts) of one wave's LDS access: the phases with an active lane, and the
    sum over them of (distinct dword addresses in the busiest bank - 1). `lanes`: the active
    lanes, `addrs` their byte addresses; `broadcast`: lanes on the same dword share it."""
    if lanes.size == 0:
        return 0, 0
    a = np.asarray(addrs, np.int64)
    first = a // 4
    span = (a + max(nbytes, 1) - 1) // 4 - first  # extra dwords after the first, per lane
    phase = lane_phases(masks)[np.asarray(lanes, np.int64)]
    width = int(span.max()) + 1
    dwords = first[:, None] + np.arange(width, dtype=np.int64)[None, :]
    valid = np.arange(width)[None, :] <= span[:, None]
    ph = np.broadcast_to(phase[:, None], dwords.shape)[valid]
    dw = dwords[valid]
    if broadcast:
        # one entry per (phase, dword): same-address lanes are served together
        key = np.unique((ph << 40) | dw)
        ph, dw = key >> 40, key & ((1 << 40) - 1)
    slot = ph * banks + dw % banks
    per_bank = np.bincount(slot)
    nphase = int(ph.max()) + 1
    per_bank = np.pad(per_bank, (0, nphase * banks - per_bank.size))
    busiest = per_bank.reshape(nphase, banks).max(axis=1)
    used = busiest > 0
    return int(used.sum()), int((busiest[used] - 1).sum())


class LdsAccesses:
    """The LDS accesses of the instruction issuing now, as the emulator does them (`note` is
    the emulator's ``ctx.lds_observer``; the functional driver calls `clear` before each
    issue). Only active lanes are kept."""

    def __init__(self) -> None:
        self.accesses: list[tuple[str, np.ndarray, np.ndarray, int]] = []
        self.serial = 0  # counts issues: a mechanism's per-issue result is computed once

    def note(self, kind: str, mask: np.ndarray, addr: np.ndarray, nbytes: int) -> None:
        """One access: kind "load"/"store"/"atomic", (n, 64) active lanes, byte addresses."""
        m = np.asarray(mask, bool)
        for row in range(m.shape[0]):  # the model's groups hold one wave each
            lanes = np.flatnonzero(m[row])
            if lanes.size:
                a = np.asarray(addr)[row, lanes].astype(np.int64)
                self.accesses.append((kind, lanes, a, int(nbytes)))

    def clear(self) -> None:
        """Forget the accesses: a new instruction issues."""
        self.accesses.clear()
        self.serial += 1


class Lds:
    """The CU's LDS as the engine sees it: what one wave's DS instruction costs at issue and
    when its counter entry completes. With `accesses` (the functional driver) bank conflicts
    count; `costs` collects them per instruction index (see result.LdsCost)."""

    def __init__(self, tm: TimingModel, accesses: LdsAccesses | None = None,
                 ports: bool = True) -> None:
        self.tm = tm
        self.accesses = accesses
        self.ports = ports  # the SIMD-pair ports (TimingOptions.off "lds_ports")
        self.port_busy: dict[str, int] = {}  # port -> cycles DS instructions held it
        self.costs: dict[int, LdsCost] = {}
        self._serial = -1
        self._added = 0

    def cost(self, w: ModelWave, st: Static, now: int) -> int:
        """Cycles the instruction keeps the CU's LDS busy."""
        return st.occupancy + self.added(st)

    def port_free(self, cu: Cu, w: ModelWave, st: Static) -> int:
        """When the wave's SIMD-pair LDS port can take `st` (0: no port to wait for)."""
        if not (self.ports and st.lds_port):
            return 0
        return cu.units.get(port_of(w.simd), 0)

    def take_port(self, cu: Cu, w: ModelWave, st: Static, now: int) -> None:
        """`st` issued at `now`: it holds its SIMD pair's port for st.lds_port cycles."""
        if self.ports and st.lds_port:
            key = port_of(w.simd)
            cu.units[key] = now + st.lds_port
            if cu.index == 0:  # the report's figure: CU 0's ports
                self.port_busy[key] = self.port_busy.get(key, 0) + st.lds_port

    def latency(self, w: ModelWave, st: Static) -> int:
        """Cycles from issue until the instruction's lgkmcnt entry completes."""
        return latency(self.tm) + self.added(st)

    def added(self, st: Static) -> int:
        """Cycles the bank conflicts of the instruction issuing now add to its bandwidth cost
        (0 without addresses or LDS accesses); computed once per issue."""
        rec = self.accesses
        if rec is None:
            return 0
        if rec.serial != self._serial:
            self._serial = rec.serial
            self._added = self._measure(st, rec.accesses) if rec.accesses else 0
        return self._added

    def _measure(self, st: Static, accesses: list) -> int:
        """Bank cycles of the accesses beyond the bandwidth cost; noted in `costs`."""
        tm = self.tm
        phases = conflicts = 0
        for kind, lanes, addrs, nbytes in accesses:
            rule = rule_of(kind, nbytes, st.lds_form)
            masks = tm.lds_phases.get(rule)
            if masks is None:
                raise NotImplementedError(f"no LDS phase rule {rule} for {tm.target} "
                                          "(target/data/timing.toml)")
            p, c = bank_cycles(lanes, addrs, nbytes, masks, tm.lds_banks,
                               broadcast=kind != "atomic")
            phases += p
            conflicts += c
        conflict_cycles = tm.lds_conflict_cycles * conflicts
        if st.unit == "lds":
            base = st.occupancy
        else:  # an LDS DMA write or a FLAT access to LDS: the bandwidth cost of its bytes
            nbytes = max(a[3] for a in accesses)
            base = max(tm.occupancy["ds_write"],
                       -(-64 * max(nbytes, 4) // tm.lds_bytes_per_cycle))
        added = max(0, phases + conflict_cycles - base)
        cost = self.costs.get(st.index)
        if cost is None:
            cost = self.costs[st.index] = LdsCost()
        cost.executions += 1
        cost.conflict_cycles += conflict_cycles
        cost.added_cycles += added
        return added


__all__ = ["PORTS", "Lds", "LdsAccesses", "bank_cycles", "busy_cycles", "form_of",
           "lane_phases", "latency", "port_cycles", "port_of", "rule_of"]
