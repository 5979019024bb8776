"""The emulator's timing model: cycle estimates for the waves of the first CU(s). Modeled,
not measured.

Enabled by ``Emulator(..., timing=True)`` (or a :class:`TimingOptions`), ``launch(...,
timing=True)`` or ``asterism run --timing``. Functional results are exactly those of the
plain emulator; only ``s_memtime`` / ``s_memrealtime`` change: they return the model's
clock (cycles; s_memrealtime converts them to its 100 MHz clock).

Scope. Workgroups go to CUs round-robin (workgroup i to CU i mod N, N = the device's CUs,
MI300X 304), as the dispatcher fills the device. The waves of the first ``cus`` CUs (default
1) are modeled in full detail: each runs as its own group of one wave, one instruction at a
time, in the order the model issues them (so memory effects between waves happen in model
time). Every other workgroup runs functionally afterwards, batched as usual, untimed. The
model's figures therefore describe the modeled CU(s); the other CUs are assumed to behave the
same (no contention between CUs is modeled).

A kernel that never ends: the model logs the memory its waves overwrite, and when a modeled
wave passes 1/PROBE_FRACTION of the instruction budget (no kernel the model is used for comes
near), the model stops, the writes are undone and the modeled workgroups run functionally
(batched, fast; their writes undone again): a kernel that does not end reaches the budget
there, at the plain emulator's speed instead of after budget x waves model steps; one that
does end is then modeled again from the start, in full. (Waves that wait for each other
through memory, which the plain emulator cannot run either, stop there too.) The model keeps
one record per modeled wave-instruction; their memory is bounded by the memory budget
(asterism.support.limits).

The model (parameters: asterism/target/data/timing.toml, with sources):

* Residency: a CU takes the next workgroup of its queue when every SIMD its waves go to has
  a free wave slot (slots per SIMD: the kernel's occupancy from its registers and LDS, at
  most 8), its LDS fits and fewer than the occupancy's workgroups per CU are resident. The
  waves of a workgroup go to SIMDs round-robin (continuing where the previous workgroup
  stopped), one wave launch every ``dispatch.wave_launch_interval`` cycles per CU; a wave
  tries its first instruction ``dispatch.wave_start`` cycles after its launch.
* Issue: time advances in issue cycles of ``issue_cycles`` (4) clocks, all SIMDs aligned
  (the capture's timestamps are all multiples of 4). In each, every SIMD issues at most one
  instruction per wave and one per issue port (``[issue]``: VALU incl. MFMA, scalar =
  SALU + SMEM, LDS, VMEM, branch), oldest wave first; waves issue in order, one instruction
  per wave per issue cycle.
* An instruction issues when its source registers are ready and its execution unit is free:
  VALU results after ``latency.valu``, transcendentals ``latency.trans``, SALU
  ``latency.salu``; MFMA results after passes * 4 (+ ``mfma.result_extra`` for readers
  other than a dependent MFMA's SrcC). Units stay busy for their occupancy: the matrix core
  (xdl, per SIMD) passes * 4 cycles (v_mfma_f32_16x16x16_f16: 4 passes = 16 cycles), the
  VALU for transcendentals 16, the CU's LDS max(4, bytes / lds.bytes_per_cycle), the CU's
  vector memory path max(4, bytes / memory.vmem_bytes_per_cycle). Memory results are not
  interlocked (the program waits with s_waitcnt, as on the hardware).
* Memory: an instruction's counter entry completes after ``memory.lds`` (LDS), ``smem``
  (scalar cache) or, for vector memory, ``hbm`` when it touches a 128-byte line for the
  first time in the dispatch and ``l2_hit`` otherwise (the vector L1 is not modeled; stores
  complete after ``l2_hit``). vmcnt and LDS entries complete in issue order, SMEM out of
  order; ``s_waitcnt`` blocks until its counters are met, then takes its issue cycle.
* ``s_nop N``: N + 1 issue cycles; ``s_sleep N``: 64 N clocks; ``s_barrier``: released
  ``dispatch.barrier`` cycles after the last wave of the workgroup arrives; a taken branch
  costs ``dispatch.taken_branch`` extra cycles (instruction fetch); ``s_endpgm`` ends the wave
  after ``dispatch.endpgm`` cycles or when its outstanding memory and MFMA results are done.
* Not modeled: instruction cache and fetch bandwidth (beyond the above), bank conflicts,
  the vector L1 and TLB, memory bandwidth and contention beyond the per-CU paths, other CUs,
  clock changes, s_setprio.

Records follow the ATT decoder's conventions (see asterism/profile/att.py): ``time`` is when
the wave first tried the instruction, ``stall`` until it issued, ``duration`` = stall + issue
cycles; s_waitcnt, s_nop and s_barrier count as stall for their whole duration.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asterism.emu import sanitizer as san
from asterism.emu.core import BARRIER, END, SPLIT, Group, LaunchInfo
from asterism.emu.errors import (
    BudgetExceeded,
    DeadlockError,
    EmulatorError,
    EmulatorFault,
    budget_message,
)
from asterism.errors import AsterismError
from asterism.target import occupancy
from asterism.target.timing import TimingModel
from asterism.timing.params import (
    TimingError,
    TimingOptions,
    model_for,
    parameters,
)
from asterism.timing.result import (
    CAT_IMMED,
    CAT_JUMP,
    CAT_NEXT,
    STALL,
    WAIT,
    TimingResult,
    WaveTiming,
)
from asterism.timing.static import Static, make_static

_NEVER = 1 << 62
TICK = 4096  # modeled instructions between two looks at the clock (progress) and memory
RECORD_BYTES = 160  # host memory of one instruction record of the modeled trace (measured)
PROBE_UNDO_BYTES = 256 << 20  # memory writes the functional check may undo, at most
PROBE_FRACTION = 16  # a modeled wave past budget / 16 instructions: check that the kernel ends


class _LongWave(Exception):
    """A modeled wave passed the check point (internal: TimedDispatch catches it)."""


# ---------------------------------------------------------------------------- run state


class _Recorder:
    """Stands in for the dispatch's DeviceMemory to note the addresses each access touches
    (everything else is delegated)."""

    def __init__(self, memory) -> None:
        self._memory = memory
        self.spans: list[tuple[np.ndarray, int]] = []

    def __getattr__(self, name: str):
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


@dataclass(eq=False)
class _Wave:
    row: int  # wave index in the dispatch batch (trace-driven: in the replay)
    group: Group | None  # functional state (None when trace-driven)
    wg: int  # workgroup slot in the batch
    order: int = 0  # launch order: lower = older = higher issue priority
    cu: int = 0
    simd: int = 0
    slot: int = 0
    wv: int = 0
    begin: int = 0
    ready: int = 0  # when the next instruction may first be tried
    idx: int = 0
    state: str = "wait"  # wait (not launched), run, barrier, done
    regs: dict[int, tuple[int, int]] = field(default_factory=dict)
    vm: list[int] = field(default_factory=list)  # completion times of vmcnt entries
    lgkm: list[int] = field(default_factory=list)
    last_in_order: dict[str, int] = field(default_factory=dict)
    xdl_done: int = 0
    arrive: int = 0
    barrier_index: int = 0
    end: int = 0
    steps: int = 0
    released: bool = False
    records: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    stall_states: list[int] = field(default_factory=list)
    stream: list[int] = field(default_factory=list)  # trace-driven: instruction indices
    pos: int = 0  # trace-driven: position of the current instruction in `stream`
    issue_pos: int = 0  # trace-driven: position of the instruction issuing now


@dataclass(eq=False)
class _Cu:
    index: int
    simds: int
    slots_per_simd: int
    queue: deque = field(default_factory=deque)  # workgroups (lists of _Wave) to admit
    units: dict[str, int] = field(default_factory=dict)  # lds, vmem: free at
    simd_units: list[dict[str, int]] = field(default_factory=list)
    slots: list[list[_Wave | None]] = field(default_factory=list)
    resident: list[list[_Wave]] = field(default_factory=list)  # per SIMD, oldest first
    next_simd: int = 0
    last_launch: int = -(1 << 30)
    workgroups: int = 0
    lds_used: int = 0
    occupants: dict[tuple[int, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.simd_units = [{} for _ in range(self.simds)]
        self.slots = [[None] * self.slots_per_simd for _ in range(self.simds)]
        self.resident = [[] for _ in range(self.simds)]


def _up(t: int, q: int) -> int:
    return -(-t // q) * q


class IssueModel:
    """The model's core: issue, dependencies, units, counters, waits, barriers, s_endpgm.

    A driver subclass says where each wave's next instruction comes from
    (`_advance`: functional execution, or a recorded instruction stream), how waves reach
    the CUs (`_admit`) and when a memory access completes (`_memory_latency`); everything
    else is this one piece of code, for the functional timed run and for trace replay.
    """

    tm: TimingModel
    target: Any
    statics: list[Static]
    lds_size: int = 0
    wgs_per_cu: int = 1
    kernel: str = ""

    # ------------------------------------------------------------------ driver hooks

    def _advance(self, w: _Wave) -> int:
        """Move the wave to its next instruction; returns END, BARRIER or the next index."""
        raise NotImplementedError

    def _taken(self, w: _Wave, index: int, nxt: int) -> bool:
        """Whether the branch at `index` went somewhere other than the next instruction."""
        raise NotImplementedError

    def _memory_latency(self, w: _Wave, st: Static, now: int) -> int:
        """Cycles from issue until the memory instruction's counter entries complete."""
        raise NotImplementedError

    def _admit(self, cu: _Cu, now: int, order: list[int]) -> None:
        """Launch the waves that reach `cu` by `now`."""
        raise NotImplementedError

    def _accepted(self, w: _Wave, st: Static) -> int:
        """The earliest time the memory path accepts the wave's next memory instruction
        (beyond its unit; 0 in the functional model, measured in a replay)."""
        return 0

    def _past_end(self, w: _Wave, now: int) -> None:
        """The wave ran past its last instruction (functional: the op raises)."""
        self._advance(w)

    def _before_issue(self, w: _Wave) -> None:
        """Called just before an issuing instruction runs (functional: reset the recorder)."""

    def _after_issue(self, w: _Wave, st: Static, now: int) -> None:
        """Called after an instruction issued (functional: s_memtime's clock value)."""

    def _deadlock_error(self, w: _Wave | None) -> EmulatorError:
        """The error for a model that cannot progress (`w`: a wave stuck at a barrier)."""
        if w is not None:
            return DeadlockError("waves wait at s_barrier but the other waves of their "
                                 f"workgroup can never arrive ({len(self.arrived[w.wg])} of "
                                 f"{self.running[w.wg]} arrived)", kernel=self.kernel)
        return DeadlockError("the timing model cannot make progress (no wave can issue)",
                             kernel=self.kernel)

    # ------------------------------------------------------------------ the model

    def _loop(self, cus: list[_Cu], waves: list[_Wave]) -> None:
        q = self.tm.issue_cycles
        now = 0
        order = [0]
        left = len(waves)
        while left:
            for cu in cus:
                left -= self._release(cu, now)
                self._admit(cu, now, order)
            if not left:
                break
            for cu in cus:
                for s in range(cu.simds):
                    used: set[str] = set()
                    for w in list(cu.resident[s]):
                        if w.state == "run" and w.ready <= now:
                            self._step(cu, w, now, used)
            nxt = _NEVER
            for cu in cus:
                for s in range(cu.simds):
                    for w in cu.resident[s]:
                        if w.state == "run":
                            nxt = min(nxt, self._earliest(cu, w))
                        elif w.state == "done" and not w.released:
                            nxt = min(nxt, w.end)
            if nxt >= _NEVER:
                stuck = next((w for cu in cus for s in range(cu.simds)
                              for w in cu.resident[s] if w.state == "barrier"), None)
                raise self._deadlock_error(stuck)
            now = max(now + q, _up(nxt, q))

    def _release(self, cu: _Cu, now: int) -> int:
        """Free the slots of waves that ended by `now`; returns how many."""
        freed = 0
        for s in range(cu.simds):
            for w in list(cu.resident[s]):
                if w.state == "done" and not w.released and w.end <= now:
                    w.released = True
                    cu.resident[s].remove(w)
                    cu.slots[s][w.slot] = None
                    freed += 1
                    self.alive[w.wg] -= 1
                    if self.alive[w.wg] == 0:
                        cu.workgroups -= 1
                        cu.lds_used -= self.lds_size
        return freed

    def _unit_free(self, cu: _Cu, w: _Wave, unit: str | None) -> int:
        if unit is None:
            return 0
        if unit in ("lds", "vmem"):
            return cu.units.get(unit, 0)
        return cu.simd_units[w.simd].get(unit, 0)

    @staticmethod
    def _deps(w: _Wave, st: Static) -> int:
        t = 0
        regs = w.regs
        for k in st.uses:
            r = regs.get(k)
            if r is not None and r[0] > t:
                t = r[0]
        for k in st.srcc:
            r = regs.get(k)
            if r is not None and r[1] > t:
                t = r[1]
        return t

    def _earliest(self, cu: _Cu, w: _Wave) -> int:
        if w.idx >= len(self.statics):
            return w.ready
        st = self.statics[w.idx]
        if st.port is None:
            return w.ready
        return max(w.ready, self._deps(w, st), self._unit_free(cu, w, st.unit),
                   self._accepted(w, st))

    def _step(self, cu: _Cu, w: _Wave, now: int, used: set[str]) -> None:
        index = w.idx
        if index >= len(self.statics):
            self._past_end(w, now)
            return
        st = self.statics[index]
        kind = st.kind
        q = self.tm.issue_cycles
        if kind == "waitcnt":
            done = max(_counter_ready(w.vm, st.wait[0]), _counter_ready(w.lgkm, st.wait[1]))
            w.vm = [c for c in w.vm if c > done]
            w.lgkm = [c for c in w.lgkm if c > done]
            self._advance(w)
            self._record(w, index, CAT_IMMED, max(q, _up(done, q) - w.ready), WAIT)
            return
        if kind == "nop":
            self._advance(w)
            self._record(w, index, st.category, st.cycles, STALL)
            return
        if kind == "barrier":
            self._advance(w)
            w.state = "barrier"
            w.arrive = now
            w.barrier_index = index
            self.arrived[w.wg].append(w)
            self._try_release(w.wg, now)
            return
        if st.port is not None:
            if max(self._deps(w, st), self._unit_free(cu, w, st.unit),
                   self._accepted(w, st)) > now:
                return
            if st.port in used:
                return  # an older wave of this SIMD took the port in this issue cycle
            used.add(st.port)
        start = w.ready
        self._before_issue(w)
        nxt = self._advance(w)
        category = st.category
        issue = q
        if kind == "endpgm":
            drain = max([w.xdl_done, *w.vm, *w.lgkm, 0])
            issue = max(self.tm.dispatch["endpgm"], drain - now)
        elif kind == "branch":
            taken = st.taken_always or self._taken(w, index, nxt)
            category = CAT_JUMP if taken else CAT_NEXT
        if st.unit is not None:
            busy = now + st.occupancy
            if st.unit in ("lds", "vmem"):
                cu.units[st.unit] = busy
            else:
                cu.simd_units[w.simd][st.unit] = busy
        for k in st.defs:
            w.regs[k] = (now + st.ready, now + st.ready_srcc)
        if st.xdl_result:
            w.xdl_done = max(w.xdl_done, now + st.xdl_result)
        self._after_issue(w, st, now)
        if st.streams:
            self._memory(w, st, now)
        w.records.append((start, category, now - start, now - start + issue, index + 1))
        w.stall_states.append(STALL)
        w.ready = now + issue
        if category == CAT_JUMP:
            w.ready += self.tm.dispatch["taken_branch"]
        if kind == "endpgm":
            w.state = "done"
            w.end = w.ready
            self.running[w.wg] -= 1
            self._try_release(w.wg, now)

    def _record(self, w: _Wave, index: int, category: int, cycles: int, state: int) -> None:
        """Record an instruction the wave spent `cycles` on without issuing (stall only)."""
        w.records.append((w.ready, category, cycles, cycles, index + 1))
        w.stall_states.append(state)
        w.ready += cycles

    def _try_release(self, wg: int, now: int) -> None:
        waiting = self.arrived[wg]
        if not waiting or len(waiting) < self.running[wg]:
            return
        q = self.tm.issue_cycles
        release = _up(now + self.tm.dispatch["barrier"], q)
        for w in waiting:
            cycles = max(q, release - w.arrive)
            w.records.append((w.arrive, CAT_IMMED, cycles, cycles, w.barrier_index + 1))
            w.stall_states.append(WAIT)
            w.ready = w.arrive + cycles
            w.state = "run"
        self.arrived[wg] = []

    def _memory(self, w: _Wave, st: Static, now: int) -> None:
        """Queue the instruction's counter entries with their completion times."""
        done = now + self._memory_latency(w, st, now)
        for ctr, in_order in st.streams:
            t = done
            if in_order:
                t = max(t, w.last_in_order.get(ctr, 0))
                w.last_in_order[ctr] = t
            (w.vm if ctr == san.VM else w.lgkm).append(t)


class TimedDispatch(IssueModel):
    """One timed dispatch (built by Emulator.run when timing is on): the model drives the
    emulator's functional execution, one instruction of one wave at a time."""

    def __init__(self, emu, comp, descriptor, kernel: str, grid3, block3, lds_size: int,
                 options: TimingOptions):
        self.emu = emu
        self.comp = comp
        self.descriptor = descriptor
        self.kernel = kernel
        self.grid3 = grid3
        self.block3 = block3
        self.lds_size = lds_size
        self.options = options
        target = emu.target
        self.target = target
        self.tm = model_for(target.name, options)
        self.num_cus = options.compute_units or target.compute_units
        if options.cus < 1 or self.num_cus < 1:
            raise TimingError(f"the timing model needs at least one CU (cus={options.cus}, "
                              f"compute_units={self.num_cus})")
        self.cus = min(options.cus, self.num_cus)
        tpw = block3[0] * block3[1] * block3[2]
        self.waves_per_wg = -(-tpw // target.wave_size)
        self.slots_per_simd, self.wgs_per_cu = self._occupancy(descriptor, lds_size)
        self.statics = [make_static(info, self.tm) for info in comp.infos]
        self.result: TimingResult | None = None
        self._ctx: LaunchInfo | None = None
        self._tick = TICK
        self.record_limit = _NEVER
        self._log = None  # the UndoLog of the model's writes (while a check point is set)
        self._check_point: int | None = None  # instructions of a wave that stop the model

    def _occupancy(self, kd, lds_size: int) -> tuple[int, int]:
        t = self.target
        try:
            total, acc = kd.next_free_vgpr(t), kd.accum_offset(t)
            agprs = max(0, total - acc) if self.comp.max_a >= 0 else 0
            vgprs = acc if agprs else total
            from asterism.target.registers import extra_sgprs

            sgprs = max(0, kd.sgprs(t) - extra_sgprs(t))
            occ = occupancy(t, vgprs=min(vgprs, t.vgpr.arch), agprs=min(agprs, t.vgpr.acc),
                            sgprs=min(sgprs, t.sgpr.addressable),
                            lds_bytes=min(lds_size, t.lds.bytes_per_workgroup),
                            waves_per_workgroup=min(self.waves_per_wg,
                                                    t.max_waves_per_workgroup))
            per_simd, wgs = occ.waves_per_simd, occ.workgroups_per_cu
        except AsterismError:
            per_simd, wgs = t.max_waves_per_simd, t.max_workgroups_per_cu
        # A workgroup always fits an empty CU (the hardware would not launch it otherwise).
        per_simd = max(per_simd, -(-self.waves_per_wg // t.simds_per_cu))
        return per_simd, max(1, wgs)

    # ------------------------------------------------------------------ driver

    def run(self, run_batch: Callable[..., None], stats, per_batch: int) -> TimingResult:
        """Run the modeled workgroups through `run_batch(wgs, schedule)` with this model as
        the scheduler (after the functional check that they end, see the module docstring),
        then the others functionally, `per_batch` workgroups at a time."""
        n_wg = self.grid3[0] * self.grid3[1] * self.grid3[2]
        full, part = divmod(n_wg, self.num_cus)
        n_modeled = full * self.cus + min(self.cus, part)
        self._check_memory(n_modeled)
        # Workgroup i runs on CU i mod num_cus: the modeled ones are those of CUs < cus.
        modeled = (np.arange(0, n_wg, self.num_cus)[:, None] + np.arange(self.cus)).ravel()
        modeled = modeled[modeled < n_wg]
        progress = self.emu._progress
        budget = self.emu.instruction_budget
        if modeled.size:
            self._model(run_batch, modeled, stats, progress)
        if progress is not None:
            progress.begin(self.kernel, "rest", n_wg - int(modeled.size), budget,
                           stats.wave_instructions)
        self.emu._done = 0
        for wgs in self._rest(n_wg, per_batch):
            run_batch(wgs, None)
            self.emu._done += int(wgs.size)
        if self.result is None:
            self.result = self._make_result([], modeled)
        self.result.modeled_workgroups = int(modeled.size)
        stats.timing = self.result
        return self.result

    def _rest(self, n_wg: int, per_batch: int):
        """The workgroups of the CUs not modeled, `per_batch` at a time, in order (made as
        needed: a large grid is never listed whole)."""
        step = self.num_cus
        pending: list[np.ndarray] = []
        count = 0
        for base in range(0, n_wg, step):
            ids = np.arange(base + self.cus, min(n_wg, base + step))
            while ids.size:
                take = ids[:per_batch - count]
                pending.append(take)
                count += take.size
                ids = ids[take.size:]
                if count == per_batch:
                    yield np.concatenate(pending)
                    pending, count = [], 0
        if count:
            yield np.concatenate(pending)

    def _check_memory(self, n_modeled: int) -> None:
        """The modeled workgroups run as one batch: refuse (before allocating) a batch
        whose emulator state does not fit, and note how many trace records may be kept."""
        from asterism.support.limits import check_memory, memory_budget

        per_wg = self.emu.workgroup_state_bytes(self.comp, self.descriptor, self.lds_size,
                                                self.waves_per_wg)
        check_memory(per_wg * n_modeled,
                     f"the timing model of {n_modeled} workgroups (those of CU 0"
                     f"{'-' + str(self.cus - 1) if self.cus > 1 else ''} in a grid of "
                     f"{self.grid3[0]}x{self.grid3[1]}x{self.grid3[2]})",
                     hint="model fewer: a smaller grid or fewer --timing-cus")
        self.record_limit = memory_budget()[0] // 2 // RECORD_BYTES

    def _model(self, run_batch: Callable[..., None], modeled: np.ndarray, stats,
               progress) -> None:
        """Model the modeled workgroups, their memory writes logged; if a wave passes the
        check point, undo, check functionally that the kernel ends (BudgetExceeded if not),
        then model them again without a check point (see the module docstring)."""
        from asterism.emu.memory import UndoLog
        from asterism.support.limits import memory_budget

        budget = self.emu.instruction_budget
        counts = (stats.wave_instructions, stats.group_steps, stats.max_wave_instructions)
        log = UndoLog(self.emu.memory, min(PROBE_UNDO_BYTES, memory_budget()[0] // 4),
                      when_full="stop")
        self._log, self._check_point = log, max(1, budget // PROBE_FRACTION)
        if progress is not None:
            progress.begin(self.kernel, "model", int(modeled.size), budget,
                           stats.wave_instructions)
        try:
            run_batch(modeled, self._schedule, memory=log)
            return
        except _LongWave:
            log.restore()
            stats.wave_instructions, stats.group_steps, stats.max_wave_instructions = counts
        finally:
            self._log, self._check_point = None, None
        self._probe(run_batch, modeled, progress)
        if progress is not None:
            progress.begin(self.kernel, "model", int(modeled.size), budget,
                           stats.wave_instructions)
        run_batch(modeled, self._schedule)

    def _probe(self, run_batch: Callable[..., None], modeled: np.ndarray, progress) -> None:
        """Run the modeled workgroups functionally with their memory writes undone: a kernel
        that does not end stops here at the emulator's speed (BudgetExceeded). Any other
        error is left for the model to find again, where it happens in model order."""
        from asterism.emu.emulator import RunStats
        from asterism.emu.memory import UndoLog, UndoLogFull
        from asterism.support.limits import memory_budget

        log = UndoLog(self.emu.memory, min(PROBE_UNDO_BYTES, memory_budget()[0] // 4))
        probe = RunStats(self.kernel, int(modeled.size), int(modeled.size) * self.waves_per_wg)
        if progress is not None:
            progress.begin(self.kernel, "probe", int(modeled.size),
                           self.emu.instruction_budget)
        self.emu._done = 0
        try:
            run_batch(modeled, None, memory=log, run_stats=probe)
        except BudgetExceeded:
            raise
        except (EmulatorError, UndoLogFull):
            pass
        finally:
            log.restore()

    def _make_result(self, waves: list[_Wave], modeled) -> TimingResult:
        ctx = self._ctx
        out = []
        for w in sorted(waves, key=lambda w: (w.cu, w.simd, w.slot, w.wv)):
            out.append(WaveTiming(w.cu, w.simd, w.slot, w.wv,
                                  tuple(int(x) for x in ctx.wg_ids[w.row]) if ctx else (0, 0, 0),
                                  int(ctx.wave_in_wg[w.row]) if ctx else 0, w.begin, w.end,
                                  w.records, w.stall_states))
        params = parameters(self.tm, self.slots_per_simd, self.wgs_per_cu)
        code = [(info.address, info.text) for info in self.comp.infos]
        n_wg = self.grid3[0] * self.grid3[1] * self.grid3[2]
        return TimingResult(self.target.name, self.kernel, self.num_cus, self.cus, n_wg,
                            int(np.size(modeled)), out, code, params, self.tm.clock_mhz)

    # ------------------------------------------------------------------ the model

    def _schedule(self, comp, groups: list[Group], ctx: LaunchInfo, wg_of_wave: np.ndarray,
                  n_wg: int, kernel: str, stats) -> None:
        """Emulator scheduler replacement: issue the batch's waves one instruction at a time
        in model order."""
        self._ctx = ctx
        self.stats = stats
        self._records = 0
        g0 = groups[0]
        self.recorder = _Recorder(ctx.memory)
        ctx.memory = self.recorder
        self.line_ready: dict[int, int] = {}  # cache line -> when its first fill arrives
        ops = comp.ops
        self.ops = ops
        waves: list[_Wave] = [_Wave(k, g0.take(np.array([k])), int(wg_of_wave[k]))
                              for k in range(g0.n)]
        # Linear grid workgroup id of every wave (it picks the wave's CU).
        lin = ctx.wg_ids[:, 0] + self.grid3[0] * (ctx.wg_ids[:, 1]
                                                   + self.grid3[1] * ctx.wg_ids[:, 2])
        by_wg: dict[int, list[_Wave]] = {}
        for w in waves:
            by_wg.setdefault(w.wg, []).append(w)
        self.alive = {wg: len(ws) for wg, ws in by_wg.items()}  # waves holding a slot
        self.running = dict(self.alive)  # waves that have not executed s_endpgm
        self.arrived: dict[int, list[_Wave]] = {wg: [] for wg in by_wg}
        t = self.target
        cus = [_Cu(i, t.simds_per_cu, self.slots_per_simd) for i in range(self.cus)]
        for wg in sorted(by_wg):
            cu = int(lin[by_wg[wg][0].row]) % self.num_cus
            cus[cu].queue.append(by_wg[wg])
        self._loop(cus, waves)
        self.result = self._make_result(waves, np.arange(n_wg))

    def _admit(self, cu: _Cu, now: int, order: list[int]) -> None:
        t = self.target
        interval = self.tm.dispatch["wave_launch_interval"]
        while cu.queue:
            wg = cu.queue[0]
            if cu.workgroups >= self.wgs_per_cu or \
                    cu.lds_used + self.lds_size > t.lds.bytes_per_cu:
                return
            need: dict[int, int] = {}
            for k in range(len(wg)):
                s = (cu.next_simd + k) % cu.simds
                need[s] = need.get(s, 0) + 1
            if any(cu.slots[s].count(None) < n for s, n in need.items()):
                return
            cu.queue.popleft()
            cu.workgroups += 1
            cu.lds_used += self.lds_size
            for w in wg:
                s = cu.next_simd
                cu.next_simd = (cu.next_simd + 1) % cu.simds
                slot = cu.slots[s].index(None)
                cu.slots[s][slot] = w
                w.cu, w.simd, w.slot = cu.index, s, slot
                w.wv = cu.occupants.get((s, slot), 0)
                cu.occupants[(s, slot)] = w.wv + 1
                w.begin = max(now, cu.last_launch + interval)
                cu.last_launch = w.begin
                w.ready = w.begin + self.tm.dispatch["wave_start"]
                w.state = "run"
                w.order = order[0]
                order[0] += 1
                cu.resident[s].append(w)

    # ------------------------------------------------------------------ one instruction

    def _before_issue(self, w: _Wave) -> None:
        self.recorder.spans.clear()

    def _after_issue(self, w: _Wave, st: Static, now: int) -> None:
        if st.clock:
            self._write_clock(w, st, now)

    def _taken(self, w: _Wave, index: int, nxt: int) -> bool:
        return nxt != self.comp.infos[index].next_index

    def _memory_latency(self, w: _Wave, st: Static, now: int) -> int:
        """Latency by where the touched lines are: first touch in the dispatch pays HBM."""
        mem = self.tm.memory
        lines = self.recorder.take_lines(mem["line_bytes"])
        if st.mem == "lds":
            return mem["lds"]
        if not lines:
            # FLAT that went to LDS (or no active lane): the LDS answers
            return mem["lds"] if st.mem == "flat" else mem["l2_hit"]
        if st.store:
            return mem["l2_hit"]  # stores are acknowledged by the L2 (write-back)
        return cached_latency(self.line_ready, lines, now, mem["smem" if st.mem == "smem"
                                                               else "l2_hit"], mem["hbm"])

    def _advance(self, w: _Wave) -> int:
        """Run the wave's next instruction functionally; returns the op's result."""
        g = w.group
        info = self.comp.infos[w.idx] if w.idx < len(self.comp.infos) else None
        if w.steps >= self.emu.instruction_budget:
            raise BudgetExceeded(
                budget_message(self.stats.wave_instructions, w.steps,
                               self.emu.instruction_budget),
                kernel=self.kernel, pc=info.address if info else None,
                inst=info.text if info else "", workgroup=self._workgroup(w),
                wave=int(self._ctx.wave_in_wg[w.row]))
        self._tick -= 1
        if self._tick <= 0:
            self._every_tick()
        try:
            nxt = self.ops[w.idx](g)
        except EmulatorError as exc:
            from asterism.emu.emulator import _with_context

            raise _with_context(exc, self.kernel, g) from None
        except (FloatingPointError, ValueError, IndexError, TypeError) as exc:
            raise EmulatorFault(f"internal error while executing: {exc!r}", kernel=self.kernel,
                                pc=info.address if info else None,
                                inst=info.text if info else "") from exc
        w.steps += 1
        g.steps = w.steps
        stats = self.stats
        stats.group_steps += 1
        stats.wave_instructions += 1
        stats.max_wave_instructions = max(stats.max_wave_instructions, w.steps)
        self._ctx.stats["wave_insts"] = stats.wave_instructions
        if nxt == BARRIER:
            w.idx = g.idx
        elif nxt == SPLIT:
            raise EmulatorFault("internal error: a one-wave group split", kernel=self.kernel,
                                pc=info.address if info else None)
        elif nxt != END:
            w.idx = nxt
        return nxt

    def _workgroup(self, w: _Wave) -> tuple[int, ...]:
        return tuple(int(x) for x in self._ctx.wg_ids[w.row])

    def _every_tick(self) -> None:
        """Every TICK modeled instructions: bound the trace's memory, show progress."""
        from asterism.support.limits import MemoryBudgetError, format_bytes

        self._tick = TICK
        self._records += TICK
        if self._check_point is not None and not self._log.overflowed and \
                self.stats.max_wave_instructions >= self._check_point:
            raise _LongWave
        if self._records > self.record_limit:
            raise MemoryBudgetError(
                f"the timing model's trace holds {self._records} instruction records (about "
                f"{format_bytes(self._records * RECORD_BYTES)}), half the memory budget: "
                "model fewer workgroups (a smaller grid, fewer --timing-cus) or stop a loop "
                "that never ends sooner with --max-instructions")
        progress = self.emu._progress
        if progress is not None and progress.due():
            done = sum(1 for n in self.running.values() if n == 0)
            progress.update(self.stats.wave_instructions, done,
                            self.stats.max_wave_instructions)

    def _write_clock(self, w: _Wave, st: Static, now: int) -> None:
        """s_memtime: the model's cycle; s_memrealtime: the same on its 100 MHz clock."""
        if st.sdata < 0:
            return
        value = now if st.clock == "memtime" else now * 100 // self.tm.clock_mhz
        g = w.group
        g.s[:, st.sdata] = np.uint32(value & 0xFFFFFFFF)
        g.s[:, st.sdata + 1] = np.uint32(value >> 32)

    def _deadlock_error(self, w: _Wave | None) -> EmulatorError:
        if w is None:
            return super()._deadlock_error(None)
        info = self.comp.infos[w.barrier_index]
        return DeadlockError(
            "waves wait at s_barrier but the other waves of their workgroup "
            f"can never arrive ({len(self.arrived[w.wg])} of "
            f"{self.running[w.wg]} arrived)", kernel=self.kernel,
            pc=info.address, inst=info.text, workgroup=self._workgroup(w),
            wave=int(self._ctx.wave_in_wg[w.row]))


@dataclass
class StreamWave:
    """One wave to replay: where it ran, when it started, the instructions it executed.

    `stream` lists instruction indices (into the model's statics) in execution order;
    `latency` optionally maps a position of the stream to the measured cycles from that
    memory instruction's issue to its completion, and `accept` a vector memory
    instruction's position to its measured issue stall: how long the memory path took to
    accept it (`--memory measured`).
    """

    cu: int  # waves with the same cu share its units and form one workgroup for barriers
    simd: int
    slot: int
    begin: int
    stream: list[int]
    latency: Mapping[int, int] | None = None
    accept: Mapping[int, int] | None = None  # position -> measured issue stall (vector memory)


class TraceDrivenModel(IssueModel):
    """The timing model driven by recorded instruction streams instead of functional
    execution: no registers' values, no addresses, no kernel arguments needed.

    Memory completes after the model's latency for its kind (LDS; scalar: HBM the first
    time a CU runs that load, the scalar cache after; vector store: L2; a vector load, whose
    addresses are unknown: ``memory.vmem_unknown``) or, for stream positions with a
    measured latency, after that."""

    def __init__(self, target, tm: TimingModel, statics: list[Static],
                 fallthrough: list[int], waves: list[StreamWave], kernel: str = ""):
        self.target = target
        self.tm = tm
        self.statics = statics
        self.fallthrough = fallthrough
        self.inputs = waves
        self.kernel = kernel
        self.line_ready: dict[int, int] = {}

    def run(self) -> list[WaveTiming]:
        """Replay every wave together (same CU: shared units and barriers)."""
        t = self.target
        cus: dict[int, _Cu] = {}
        waves: list[_Wave] = []
        for k, sw in enumerate(self.inputs):
            if not sw.stream:
                continue
            cu = cus.setdefault(sw.cu, _Cu(sw.cu, t.simds_per_cu, t.max_waves_per_simd))
            w = _Wave(k, None, sw.cu, order=k, cu=sw.cu, simd=sw.simd % t.simds_per_cu,
                      slot=sw.slot % t.max_waves_per_simd, begin=sw.begin,
                      ready=sw.begin + self.tm.dispatch["wave_start"], idx=sw.stream[0],
                      state="run", stream=sw.stream)
            cu.slots[w.simd][w.slot] = w
            cu.resident[w.simd].append(w)
            waves.append(w)
        for cu in cus.values():
            for resident in cu.resident:
                resident.sort(key=lambda w: (w.begin, w.order))
            cu.workgroups = 1
        self.alive = {c: sum(1 for w in waves if w.wg == c) for c in cus}
        self.running = dict(self.alive)
        self.arrived = {c: [] for c in cus}
        self._loop(list(cus.values()), waves)
        return [WaveTiming(w.cu, w.simd, w.slot, 0, (0, 0, 0), w.row, w.begin, w.end,
                           w.records, w.stall_states) for w in waves]

    def _advance(self, w: _Wave) -> int:
        w.pos += 1
        if w.pos < len(w.stream):
            w.idx = w.stream[w.pos]
            return w.idx
        w.idx = len(self.statics)
        return END

    def _past_end(self, w: _Wave, now: int) -> None:
        # A stream that stops without s_endpgm (a truncated capture): the wave ends here.
        w.state = "done"
        w.end = w.ready
        self.running[w.wg] -= 1
        self._try_release(w.wg, now)

    def _taken(self, w: _Wave, index: int, nxt: int) -> bool:
        return nxt != self.fallthrough[index]

    def _accepted(self, w: _Wave, st: Static) -> int:
        accept = self.inputs[w.row].accept
        if accept is None or st.unit != "vmem":
            return 0
        return w.ready + accept.get(w.pos, 0)

    def _before_issue(self, w: _Wave) -> None:
        w.issue_pos = w.pos

    def _memory_latency(self, w: _Wave, st: Static, now: int) -> int:
        measured = self.inputs[w.row].latency
        if measured is not None and w.issue_pos in measured:
            return measured[w.issue_pos]
        mem = self.tm.memory
        if st.mem == "smem":
            # Without addresses, a scalar load instruction stands for the lines it reads
            # (kernel arguments, constants): its first execution on a CU is a first touch
            # and pays HBM like the functional model's cold line, later ones hit the scalar
            # cache, or wait for the fill still in flight.
            key = (w.cu << 32) | w.stream[w.issue_pos]
            return cached_latency(self.line_ready, (key,), now, mem["smem"], mem["hbm"])
        if st.mem == "lds":
            return mem["lds"]
        return mem["l2_hit"] if st.store else mem["vmem_unknown"]

    def _admit(self, cu: _Cu, now: int, order: list[int]) -> None:
        return  # every wave is resident from the start, at its recorded place


def cached_latency(line_ready: dict[int, int], lines, now: int, hit: int, miss: int) -> int:
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


def _counter_ready(entries: list[int], limit: int) -> int:
    """When at most `limit` of the entries (completion times) are still outstanding."""
    if len(entries) <= limit:
        return 0
    return sorted(entries)[len(entries) - limit - 1]


__all__ = ["IssueModel", "StreamWave", "TimedDispatch", "TraceDrivenModel", "make_static"]
