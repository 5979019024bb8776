"""Memory in the timing model: the counters (vmcnt, lgkmcnt) and when their entries
complete, what a vector memory instruction costs the CU's path, the cache-line helper.

* Static facts (per instruction): the counter streams its entries go to (the sanitizer's
  classification; an LDS DMA load holds vmcnt only) and how long it keeps the CU's vector
  memory path busy: max(``occupancy``, 64 lanes * 4 bytes * dwords /
  ``memory.vmem_bytes_per_cycle``).
* Counters: an instruction's entries complete `latency` cycles after its issue; vmcnt and
  LDS entries in issue order, SMEM out of order; ``s_waitcnt`` waits until at most N
  entries of each counter are outstanding (`wait`); ``s_endpgm`` until none are.
* Cache lines, with addresses (`LineMemory`, the functional model): a vector memory
  instruction whose active lanes touch L distinct ``memory.line_bytes`` (128 B) lines keeps
  the CU's vector memory path busy max(the bytes rule above, L * ``memory.cycles_per_line``)
  and completes the cycles beyond the bytes rule later (its last line is looked up that
  much later). Source: rocprofiler-compute's speed-of-light config gives the vL1D peak as
  128 B/clk/CU, one 128-byte line lookup per clock (gfx942 and gfx950
  0200_system-speed-of-light.yaml); the vL1D line is 128 B on MI300 (rocprofiler-compute
  docs/conceptual/vector-l1-cache.rst). So a coalesced dwordx4 (1 KiB, 8 lines) stays
  bandwidth bound (16 cycles at 64 B/clk on gfx942, 8 at gfx950's fitted 128 B/clk), a
  dword load whose 64 lanes hit 64 lines takes 64 cycles instead of 4. Not chosen: a rate
  of one 4-lane quad per clock in the TA (16 clocks for any wave64 instruction), inferred
  only from the profiler's coalescing metric (16 TCP accesses per ideal wave instruction);
  it contradicts the MI350X captures, where a dwordx4 issues every 8 cycles
  (timing.toml's gfx950 vmem_bytes_per_cycle fit). Whether the TA skips quads with no
  active lane is not known: the bytes rule charges the whole wave, lines count active lanes
  only. Scalar loads are unchanged. `costs` collects the lines per instruction
  (result.LineCost).
* Latency, with addresses (`LineMemory`): ``memory.lds`` for LDS (and a FLAT access that
  went to LDS) plus the bank-conflict cycles lds.py adds, ``smem`` (scalar cache) or
  ``l2_hit`` for a line read before, ``hbm`` for a line touched for the first time in the
  dispatch (or the rest of a fill still in flight), ``l2_hit`` for stores (acknowledged by
  the L2); plus the line lookups' extra cycles above, and an LDS DMA's write conflicts. The
  vector L1 is not modeled.
* Latency, without addresses (`StreamMemory`, a capture's replay): the measured latency of
  that access where the capture has it; else LDS ``memory.lds``, a scalar load
  ``memory.smem_miss`` on its first execution on the CU then the scalar cache, a vector store
  the write-out queue below, a vector load ``memory.vmem_unknown``. A replay knows lines only
  where the lanes' address pattern follows from the code (lanes.py): there a store pays its
  64-byte write requests and a load its line lookups (as `LineMemory`); elsewhere its vector
  memory costs the bytes rule, or with the capture's measured acceptance
  (``--memory accept|measured``) only its issue cycle (`StreamMemory.cost`).
* Scalar misses: a scalar load of a line not read before in the dispatch pays
  ``memory.smem_miss`` (measured on MI350X, 776-1476 cycles: longer than a vector load's
  first touch, ``memory.hbm``); `scalar_miss`; TimingOptions.off "smem_miss": memory.hbm.
* Stores: a vector store completes ``l2_hit`` after its data has left the CU through the
  write-out queue (stores.py: 64-byte requests, one per clock, in acceptance order);
  TimingOptions.off "store_queue": l2_hit after issue (plus the line lookups).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from asterism.emu import sanitizer as san
from asterism.emu.info import OpInfo
from asterism.target.timing import TimingModel
from asterism.timing import lds
from asterism.timing.lanes import lane_bytes
from asterism.timing.result import LineCost, PathUse
from asterism.timing.state import ModelWave
from asterism.timing.stores import StoreQueue, lanes_per_clock, write_requests

if TYPE_CHECKING:
    from asterism.timing.bandwidth import Bandwidth
    from asterism.timing.static import Static


def counter_streams(info: OpInfo) -> tuple[tuple[str, bool], ...]:
    """(counter, in order) of each counter entry the instruction makes (none: not memory).
    [att] An LDS DMA load (buffer_load ... lds) holds only vmcnt on the hardware: in
    flash_attn_func_small, `s_waitcnt lgkmcnt(3)` right after four of them never stalls."""
    mc = san.classify(info)
    return mc.streams if mc is not None else ()


def vmem_busy(timing_cls: str, data_dwords: int, tm: TimingModel) -> int:
    """Cycles a vector memory instruction moving `data_dwords` per lane keeps the CU's
    vector memory path busy (the path moves 64 lanes * dwords * 4 bytes)."""
    bw = tm.memory["vmem_bytes_per_cycle"]
    return max(tm.occupancy[timing_cls], -(-64 * 4 * data_dwords // bw))


# ---------------------------------------------------------------------------- counters


def queue(w: ModelWave, streams: Sequence[tuple[str, bool]], done: int) -> None:
    """Queue an instruction's counter entries, completing at `done` (in-order streams no
    sooner than the entry before)."""
    for ctr, in_order in streams:
        t = done
        if in_order:
            t = max(t, w.last_in_order.get(ctr, 0))
            w.last_in_order[ctr] = t
        (w.vm if ctr == san.VM else w.lgkm).append(t)


def wait(w: ModelWave, limits: tuple[int, int]) -> int:
    """s_waitcnt vmcnt(limits[0]) lgkmcnt(limits[1]): when the counters are met; the
    entries done by then are retired."""
    done = max(_counter_ready(w.vm, limits[0]), _counter_ready(w.lgkm, limits[1]))
    w.vm = [c for c in w.vm if c > done]
    w.lgkm = [c for c in w.lgkm if c > done]
    return done


def outstanding(w: ModelWave) -> int:
    """When the wave's last outstanding counter entry completes (0 if none)."""
    return max(max(w.vm, default=0), max(w.lgkm, default=0))


def _counter_ready(entries: list[int], limit: int) -> int:
    """When at most `limit` of the entries (completion times) are still outstanding."""
    if len(entries) <= limit:
        return 0
    return sorted(entries)[len(entries) - limit - 1]


# ---------------------------------------------------------------------------- latency


def cached_latency(line_ready: dict[int, int], lines: Iterable[int], now: int, hit: int,
                   miss: int) -> int:
    """Latency of a read of `lines` issued at `now`: `miss` when a line is touched for the
    first time (its fill then arrives at now + miss), else `hit`, or later when a fill it
    needs is still in flight (requests to a missing line wait for the same fill)."""
    ready = now + hit
    for line in lines:
        fill = line_ready.get(line)
        if fill is None:
            line_ready[line] = fill = now + miss
        ready = max(ready, fill)
    return ready - now


def scalar_miss(mem: Mapping[str, int], off: frozenset[str]) -> int:
    """Latency of a scalar load of a line the dispatch has not read before: the measured
    scalar-cache miss (``memory.smem_miss``), or with the mechanism "smem_miss" off the
    vector path's first touch (``memory.hbm``, the model before it was measured)."""
    return mem["hbm"] if "smem_miss" in off else mem["smem_miss"]


def path_use(memory: Any, valu: Any, icache: Any = None, coexec: Any = None) -> PathUse:
    """What the scalar-miss, store write-out, VALU-path, instruction-cache and packed-VALU
    mechanisms did in a run (from its memory model, LineMemory or StreamMemory, its
    valu.ValuPaths, its icache.InstructionCache and its mfma.CoExec)."""
    q = memory.stores
    return PathUse(memory.scalar_misses, memory.scalar_misses * memory.smem_miss,
                   q.stores if q else 0, q.cycles if q else 0, q.queued if q else 0,
                   valu.waits, valu.wait_cycles, icache.misses if icache else 0,
                   icache.wait_cycles if icache else 0,
                   coexec.packed_waits if coexec else 0,
                   coexec.packed_wait_cycles if coexec else 0,
                   coexec.memory_waits if coexec else 0,
                   coexec.memory_wait_cycles if coexec else 0)


class Recorder:
    """Stands in for the dispatch's DeviceMemory to note the addresses each access touches
    (everything else is delegated): the cache-line helper of the functional model."""

    def __init__(self, memory: Any) -> None:
        self._memory = memory
        self.spans: list[tuple[np.ndarray, int]] = []
        # the issuing store's global writes: (lane ids, addresses, bytes per lane), and the
        # bytes per lane of the instruction (a buffer store writes dword by dword)
        self.stored: list[tuple[np.ndarray, np.ndarray, int]] = []
        self.store_lane_bytes = 4
        self.serial = 0  # counts issues: a mechanism's per-issue result is computed once

    def clear(self) -> None:
        """Forget the accesses noted: a new instruction issues."""
        self.spans.clear()
        self.stored.clear()
        self.serial += 1

    def note_store(self, info: OpInfo, mask: np.ndarray, addr: np.ndarray, nbytes: int) -> None:
        """The emulator's ``ctx.store_observer``: a global store's active lanes and addresses
        (the store queue counts its write requests per clock group of lanes)."""
        lanes = np.flatnonzero(np.asarray(mask).reshape(-1))
        self.stored.append((lanes, np.asarray(addr).reshape(-1)[lanes], nbytes))
        self.store_lane_bytes = lane_bytes(info.mnemonic)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def resolve(self, addrs: np.ndarray, nbytes: int):
        """As DeviceMemory.resolve, noting the access."""
        self.spans.append((addrs, nbytes))
        return self._memory.resolve(addrs, nbytes)

    def load_bytes(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """As DeviceMemory.load_bytes, noting the access."""
        self.spans.append((addrs, nbytes))
        return self._memory.load_bytes(addrs, nbytes)

    def load_dwords(self, addrs: np.ndarray, ndw: int) -> np.ndarray:
        """As DeviceMemory.load_dwords, noting the access."""
        self.spans.append((addrs, 4 * ndw))
        return self._memory.load_dwords(addrs, ndw)

    def store_bytes(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """As DeviceMemory.store_bytes, noting the access."""
        self.spans.append((addrs, int(data.shape[1])))
        self._memory.store_bytes(addrs, data)

    def store_dwords(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """As DeviceMemory.store_dwords, noting the access."""
        self.spans.append((addrs, 4 * int(data.shape[1])))
        self._memory.store_dwords(addrs, data)

    def take_lines(self, line_bytes: int) -> set[int]:
        """The cache lines touched since the last call."""
        lines: set[int] = set()
        for addrs, nbytes in self.spans:
            a = np.asarray(addrs, np.uint64).astype(np.int64, copy=False)
            if a.size:
                lines.update(np.unique(a // line_bytes).tolist())
                lines.update(np.unique((a + max(nbytes, 1) - 1) // line_bytes).tolist())
        self.spans.clear()
        return lines


class LineMemory:
    """Memory with addresses (the functional model): cost and latency by the cache lines the
    instruction issuing now touched (the recorder notes them) and where they are; LDS and
    LDS DMA writes ask `lds` for their bank conflicts. `lines=False` turns the line cost off
    (the bytes rule alone, as before it was modeled). `bandwidth`: the CUs' shares of the
    chip's L2 and HBM bandwidth (None: not modeled). `off`: mechanisms left out ("smem_miss":
    a cold scalar load pays memory.hbm; "store_queue": no store write-out queue)."""

    def __init__(self, tm: TimingModel, recorder: Recorder, lds_model: lds.Lds,
                 lines: bool = True, bandwidth: Bandwidth | None = None,
                 off: frozenset[str] = frozenset()) -> None:
        self.tm = tm
        self.mem = tm.memory
        self.recorder = recorder
        self.lds = lds_model
        self.line_cost = lines
        self.bandwidth = bandwidth
        self.smem_miss = scalar_miss(self.mem, off)
        self.stores = None if "store_queue" in off else StoreQueue()
        self.scalar_misses = 0  # scalar loads that missed (for the report)
        self._stored: list[tuple[np.ndarray, np.ndarray, int]] = []
        self.line_ready: dict[int, int] = {}  # cache line -> when its first fill arrives
        self.costs: dict[int, LineCost] = {}
        self._serial = -1
        self._lines: set[int] = set()

    def touched(self) -> set[int]:
        """The cache lines the instruction issuing now touched (computed once per issue)."""
        rec = self.recorder
        if rec.serial != self._serial:
            self._serial = rec.serial
            self._stored = list(rec.stored)  # (the store queue counts its write requests)
            self._lines = rec.take_lines(self.mem["line_bytes"])
        return self._lines

    def _lookup(self, st: Static) -> int:
        """Cycles the vector instruction's line lookups take beyond its bytes rule."""
        if not self.line_cost:
            return 0
        return max(0, len(self.touched()) * self.mem["cycles_per_line"] - st.occupancy)

    def latency(self, w: ModelWave, st: Static, now: int) -> int:
        """Cycles from issue until the instruction's counter entries complete."""
        mem = self.mem
        lines = self.touched()
        if st.mem == "lds":
            return self.lds.latency(w, st)
        if not lines:
            # FLAT that went to LDS (or no active lane): the LDS answers
            return self.lds.latency(w, st) if st.mem == "flat" else mem["l2_hit"]
        smem = st.mem == "smem"
        # scalar memory is unchanged by the line and bank mechanisms; vector memory adds its
        # line lookups and an LDS DMA / FLAT-LDS write's bank conflicts
        extra = 0 if smem else self._lookup(st) + self.lds.added(st)
        bw = self.bandwidth
        if st.store:
            # stores are acknowledged by the L2 (write-back) once their data has left the CU
            ack = mem["l2_hit"] + extra
            if self.stores is not None and not smem:
                per_clock = lanes_per_clock(self.recorder.store_lane_bytes,
                                            mem["vmem_bytes_per_cycle"])
                left = self.stores.write(w.cu, now + extra, write_requests(
                    self._stored, mem["write_bytes"], per_clock))
                ack = left - now + mem["l2_hit"]
            return ack if bw is None else bw.store(w.cu, now, lines, ack)
        hit = mem["smem" if smem else "l2_hit"]
        miss = self.smem_miss if smem else mem["hbm"]
        if smem and any(line not in self.line_ready for line in lines):
            self.scalar_misses += 1
        if bw is not None:
            hit, miss = bw.read(w.cu, now, lines, self.line_ready, hit, miss, smem)
        return cached_latency(self.line_ready, lines, now, hit, miss) + extra

    def accepted(self, w: ModelWave, st: Static) -> int:
        """The earliest time the memory path accepts the wave's next instruction beyond its
        unit (no back-pressure modeled: 0)."""
        return 0

    def cost(self, w: ModelWave, st: Static, now: int) -> int:
        """Cycles the instruction keeps the CU's vector memory path busy."""
        added = self._lookup(st)
        cost = self.costs.get(st.index)
        if cost is None:
            cost = self.costs[st.index] = LineCost()
        cost.executions += 1
        cost.lines += len(self.touched())
        cost.added_cycles += added
        return st.occupancy + added


def scalar_line_keys(stream: Sequence[int], statics: Sequence[Static], cu: int,
                     line_bytes: int) -> dict[int, tuple]:
    """Stream position -> which cache line each scalar load reads, for a stream without
    addresses: loads whose base (and offset register) hold the same value and whose
    immediate offsets fall in one `line_bytes` line read the same line.

    A register's value is named by the instruction that last wrote it in the wave (or, never
    written, the value the wave started with: kernel argument and dispatch pointers, the
    same for every wave of the dispatch). A value written by the same instruction is taken
    to be the same in every wave of the CU (a wave-uniform pointer), as the replay assumed
    per load instruction before."""
    writer: dict[int, int] = {}  # register key -> index of the instruction that wrote it
    out: dict[int, tuple] = {}
    for pos, index in enumerate(stream):
        st = statics[index]
        if st.mem == "smem" and not st.store and st.sbase:
            regs = st.sbase + st.soffset
            out[pos] = (cu, regs, tuple(writer.get(k, -1) for k in regs),
                        st.offset // line_bytes)
        for k in st.defs:
            writer[k] = index
    return out


class StreamMemory:
    """Memory without addresses (a capture's replay): measured latencies where the capture
    has them (`latency`: stream position -> cycles), measured acceptance of vector memory
    instructions (`accept`: stream position -> issue stall), the model's otherwise; scalar
    loads hit or miss by the lines `scalar_line_keys` tells apart (`lines`, per wave);
    stores leave through the write-out queue (stores.py) at memory.store_unknown cycles each,
    or, where the lanes' address pattern follows from the code (`blocks`, per wave: stream
    position -> 64-byte blocks of a store / 128-byte lines of a load, timing/lanes.py), one
    cycle per 64-byte block as in the functional model; such a load costs its line lookups
    beyond the bytes rule as LineMemory does (when the path's acceptance is not measured).
    `off`: mechanisms left out, as for LineMemory."""

    def __init__(self, tm: TimingModel, latency: Sequence[Any], accept: Sequence[Any],
                 lines: Sequence[dict[int, tuple]] | None = None,
                 off: frozenset[str] = frozenset(),
                 blocks: Sequence[Mapping[int, int] | None] | None = None) -> None:
        self.tm = tm
        self.mem = tm.memory
        self.measured = latency  # per replayed wave (by row): position -> cycles, or None
        self.accept = accept  # per replayed wave: position -> measured issue stall, or None
        self.lines = lines
        self.line_ready: dict[Any, int] = {}
        self.smem_miss = scalar_miss(self.mem, off)
        self.stores = None if "store_queue" in off else StoreQueue()
        self.scalar_misses = 0  # scalar loads that missed (for the report)
        self.blocks = blocks

    def _blocks(self, w: ModelWave) -> int | None:
        """The blocks (store) or lines (load) the instruction issuing now touches, where its
        lanes' address pattern is known."""
        b = self.blocks[w.row] if self.blocks else None
        return b.get(w.issue_pos) if b else None

    def _lookup(self, w: ModelWave, st: Static) -> int:
        """Cycles a load's line lookups take beyond its bytes rule (LineMemory's rule; 0
        when its lines are not known or the path's acceptance is measured)."""
        lines = self._blocks(w)
        if lines is None or st.store or self.accept[w.row] is not None:
            return 0
        return max(0, lines * self.mem["cycles_per_line"] - st.occupancy)

    def latency(self, w: ModelWave, st: Static, now: int) -> int:
        """Cycles from issue until the instruction's counter entries complete."""
        measured = self.measured[w.row]
        if measured is not None and w.issue_pos in measured:
            return measured[w.issue_pos]
        mem = self.mem
        if st.mem == "smem":
            # Without addresses, a scalar load instruction stands for the lines it reads
            # (kernel arguments, constants): its first execution on a CU is a first touch
            # and pays HBM like the functional model's cold line, later ones hit the scalar
            # cache, or wait for the fill still in flight.
            key = self.lines[w.row].get(w.issue_pos) if self.lines else None
            if key is None:
                key = (w.cu, w.stream[w.issue_pos])
            if key not in self.line_ready:
                self.scalar_misses += 1
            return cached_latency(self.line_ready, (key,), now, mem["smem"], self.smem_miss)
        if st.mem == "lds":
            return lds.latency(self.tm)
        if not st.store:
            return mem["vmem_unknown"] + self._lookup(w, st)
        if self.stores is None:
            return mem["l2_hit"]
        requests = self._blocks(w)
        return self.stores.write(w.cu, now, mem["store_unknown"] if requests is None else
                                 requests) - now + mem["l2_hit"]

    def accepted(self, w: ModelWave, st: Static) -> int:
        """The earliest time the vector memory path accepts the wave's next instruction:
        as long after the wave was ready as the capture measured."""
        accept = self.accept[w.row]
        if accept is None or st.unit != "vmem":
            return 0
        return w.ready + accept.get(w.pos, 0)

    def cost(self, w: ModelWave, st: Static, now: int) -> int:
        """Cycles the instruction keeps the CU's vector memory path busy: the bytes rule
        (`vmem_busy`) when the model decides the path's back-pressure; only the issue cycle
        (``occupancy.vmem_read`` / ``vmem_write``) when the capture's acceptance of the wave
        is used (`accepted`): its measured issue stall already holds what the path's
        occupancy by the CU's other accesses cost it (charging the bytes rule too counted
        it twice; [att] two back-to-back buffer_load_dwordx4 of one CU issue 4 cycles
        apart, 176 times across waves in flash_attn_func_small, where the bytes rule at
        64 B/clk keeps the path 16)."""
        if self.accept[w.row] is None:
            return st.occupancy + self._lookup(w, st)
        return self.tm.occupancy["vmem_write" if st.store else "vmem_read"]


__all__ = ["LineMemory", "Recorder", "StreamMemory", "cached_latency", "counter_streams",
           "path_use", "scalar_line_keys", "scalar_miss",
           "outstanding", "queue", "vmem_busy", "wait"]
