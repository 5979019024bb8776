"""The functional driver: the timing model drives the emulator's execution, one instruction
of one wave at a time, so memory effects between waves happen in model time. Modeled, not
measured.

Enabled by ``asterism.launch(..., timing=True)`` (or a TimingOptions), ``asterism run
--timing``, or ``Emulator(..., dispatch_hook=TimedRun(options))``. Functional results are
exactly those of the plain emulator; only ``s_memtime`` / ``s_memrealtime`` change: they
return the model's clock (cycles; s_memrealtime converts them to its 100 MHz clock).

Scope. Workgroups go to CUs round-robin (dispatch.py). The waves of the first ``cus`` CUs
(default 1) are modeled in full detail: each runs as its own group of one wave, in the order
the model issues them. Every other workgroup runs functionally afterwards, batched as usual,
untimed. The model's figures therefore describe the modeled CU(s); the other CUs are assumed
to behave the same, and they share the chip's L2 and HBM bandwidth with the modeled ones
(bandwidth.py; TimingOptions.off turns it off). For that, before the model, the modeled
workgroups run once functionally (their writes undone) to note the cache lines they touch:
lines the grid shares are fetched from HBM once (bandwidth.Footprint).

A kernel that never ends: the model logs the memory its waves overwrite, and when a modeled
wave passes 1/PROBE_FRACTION of the instruction budget (no kernel the model is used for comes
near), the model stops, the writes are undone and the modeled workgroups run functionally
(batched, fast; their writes undone again): a kernel that does not end reaches the budget
there, at the plain emulator's speed instead of after budget x waves model steps; one that
does end is then modeled again from the start, in full. (Waves that wait for each other
through memory, which the plain emulator cannot run either, stop there too.) When the
bandwidth ceiling is modeled, its footprint pass (the modeled workgroups run functionally
first, see above) is that check: the model then runs without a check point. The model keeps
one record per modeled wave-instruction; their memory is bounded by the memory budget
(asterism.support.limits).
"""

from __future__ import annotations

import numpy as np

from asterism.emu.core import BARRIER, END, SPLIT, Group, LaunchInfo
from asterism.emu.emulator import Dispatch, RunStats
from asterism.emu.errors import (
    BudgetExceeded,
    DeadlockError,
    EmulatorError,
    EmulatorFault,
    budget_message,
    with_context,
)
from asterism.emu.memory import UndoLog, UndoLogFull
from asterism.support.limits import MemoryBudgetError, check_memory, format_bytes, memory_budget
from asterism.timing import dispatch
from asterism.timing.bandwidth import Bandwidth, Footprint, LineSet
from asterism.timing.barriers import Barriers
from asterism.timing.icache import InstructionCache
from asterism.timing.issue import IssueModel
from asterism.timing.lds import Lds, LdsAccesses
from asterism.timing.memory import LineMemory, Recorder, path_use
from asterism.timing.mfma import CoExec
from asterism.timing.params import TimingError, TimingOptions, model_for, parameters
from asterism.timing.result import TimingResult, WaveTiming
from asterism.timing.state import NEVER, Cu, ModelWave
from asterism.timing.static import Static, make_static
from asterism.timing.valu import ValuPaths

TICK = 4096  # modeled instructions between two looks at the clock (progress) and memory
RECORD_BYTES = 160  # host memory of one instruction record of the modeled trace (measured)
PROBE_UNDO_BYTES = 256 << 20  # memory writes the functional check may undo, at most
PROBE_FRACTION = 16  # a modeled wave past budget / 16 instructions: check that the kernel ends


class _LongWave(Exception):
    """A modeled wave passed the check point (internal: TimedDispatch catches it)."""


class TimedRun:
    """The emulator's dispatch hook for a timed run: each dispatch is a TimedDispatch
    (`Emulator(..., dispatch_hook=TimedRun(options))`; stats.timing holds the result)."""

    def __init__(self, options: TimingOptions) -> None:
        self.options = options

    @staticmethod
    def of(value: bool | TimingOptions | None) -> TimedRun | None:
        """The hook for a `timing=` argument (True, a TimingOptions; False/None: none)."""
        options = TimingOptions.of(value)
        return TimedRun(options) if options is not None else None

    def run_dispatch(self, d: Dispatch) -> None:
        """Model the dispatch (see the module docstring); the result goes to d.stats.timing."""
        TimedDispatch(d, self.options).run()


class TimedDispatch(IssueModel):
    """One timed dispatch: the model drives the emulator's functional execution, one
    instruction of one wave at a time."""

    def __init__(self, d: Dispatch, options: TimingOptions):
        self.d = d
        self.emu = d.emulator
        self.comp = d.comp
        self.kernel = d.kernel
        self.grid3 = d.grid
        self.lds_size = d.lds_size
        self.options = options
        target = self.emu.target
        self.target = target
        self.tm = model_for(target.name, options)
        self.num_cus = options.compute_units or target.compute_units
        if options.cus < 1 or self.num_cus < 1:
            raise TimingError(f"the timing model needs at least one CU (cus={options.cus}, "
                              f"compute_units={self.num_cus})")
        self.cus = min(options.cus, self.num_cus)
        block3 = d.block
        tpw = block3[0] * block3[1] * block3[2]
        self.waves_per_wg = -(-tpw // target.wave_size)
        self.slots_per_simd, self.wgs_per_cu = dispatch.occupancy(
            target, d.descriptor, self.comp.max_a >= 0, self.waves_per_wg, self.lds_size)
        self.statics = [make_static(info, self.tm) for info in self.comp.infos]
        self.lds = Lds(self.tm)  # replaced by one that sees the addresses in _schedule
        self.footprint: Footprint | None = None
        self.bandwidth: Bandwidth | None = None
        self.result: TimingResult | None = None
        self._ctx: LaunchInfo | None = None
        self._tick = TICK
        self.record_limit = NEVER
        self._log: UndoLog | None = None  # the model's writes (while a check point is set)
        self._check_point: int | None = None  # instructions of a wave that stop the model

    # ------------------------------------------------------------------ driver

    def run(self) -> TimingResult:
        """Run the modeled workgroups with this model as the scheduler (after the functional
        check that they end, see the module docstring), then the others functionally."""
        d, stats = self.d, self.d.stats
        n_wg = self.grid3[0] * self.grid3[1] * self.grid3[2]
        full, part = divmod(n_wg, self.num_cus)
        self._check_memory(full * self.cus + min(self.cus, part))
        modeled = dispatch.modeled_workgroups(n_wg, self.num_cus, self.cus)
        progress = d.progress
        if modeled.size:
            if "bandwidth" not in self.options.off:
                self.footprint = self._footprint(modeled, progress)
            self._model(modeled, progress, checked=self.footprint is not None)
        if progress is not None:
            progress.begin(self.kernel, "rest", n_wg - int(modeled.size),
                           self.emu.instruction_budget, stats.wave_instructions)
        done = 0
        d.batches_done(done)
        for wgs in dispatch.other_workgroups(n_wg, self.num_cus, self.cus, d.per_batch):
            d.run_batch(wgs, None)
            done += int(wgs.size)
            d.batches_done(done)
        if self.result is None:
            self.result = self._make_result([], modeled)
        self.result.modeled_workgroups = int(modeled.size)
        stats.timing = self.result
        return self.result

    def _check_memory(self, n_modeled: int) -> None:
        """The modeled workgroups run as one batch: refuse (before allocating) a batch
        whose emulator state does not fit, and note how many trace records may be kept."""
        per_wg = self.emu.workgroup_state_bytes(self.comp, self.d.descriptor, self.lds_size,
                                                self.waves_per_wg)
        check_memory(per_wg * n_modeled,
                     f"the timing model of {n_modeled} workgroups (those of CU 0"
                     f"{'-' + str(self.cus - 1) if self.cus > 1 else ''} in a grid of "
                     f"{self.grid3[0]}x{self.grid3[1]}x{self.grid3[2]})",
                     hint="model fewer: a smaller grid or fewer --timing-cus")
        self.record_limit = memory_budget()[0] // 2 // RECORD_BYTES

    def _model(self, modeled: np.ndarray, progress, checked: bool = False) -> None:
        """Model the modeled workgroups, their memory writes logged; if a wave passes the
        check point, undo, check functionally that the kernel ends (BudgetExceeded if not),
        then model them again without a check point (see the module docstring).
        `checked`: the kernel is known to end (the footprint pass ran it): no check point."""
        run_batch, stats = self.d.run_batch, self.d.stats
        budget = self.emu.instruction_budget
        if checked:
            if progress is not None:
                progress.begin(self.kernel, "model", int(modeled.size), budget,
                               stats.wave_instructions)
            run_batch(modeled, self._schedule)
            return
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
        self._probe(modeled, progress)
        if progress is not None:
            progress.begin(self.kernel, "model", int(modeled.size), budget,
                           stats.wave_instructions)
        run_batch(modeled, self._schedule)

    def _probe(self, modeled: np.ndarray, progress) -> None:
        """Run the modeled workgroups functionally with their memory writes undone: a kernel
        that does not end stops here at the emulator's speed (BudgetExceeded). Any other
        error is left for the model to find again, where it happens in model order."""
        log = UndoLog(self.emu.memory, min(PROBE_UNDO_BYTES, memory_budget()[0] // 4))
        probe = RunStats(self.kernel, int(modeled.size), int(modeled.size) * self.waves_per_wg)
        if progress is not None:
            progress.begin(self.kernel, "probe", int(modeled.size),
                           self.emu.instruction_budget)
        self.d.batches_done(0)
        try:
            self.d.run_batch(modeled, None, memory=log, run_stats=probe)
        except BudgetExceeded:
            raise
        except (EmulatorError, UndoLogFull):
            pass
        finally:
            log.restore()

    def _footprint(self, modeled: np.ndarray, progress) -> Footprint | None:
        """The lines the modeled workgroups touch, from a functional run of them with their
        writes undone, as HBM weights per allocation (bandwidth.Footprint); None when that
        run fails (the model finds the error again, in model order) or its writes are too
        many to undo: every line then counts in full."""
        mem = self.emu.memory
        log = UndoLog(mem, min(PROBE_UNDO_BYTES, memory_budget()[0] // 4))
        lines = LineSet(log, self.tm.memory["line_bytes"])
        probe = RunStats(self.kernel, int(modeled.size), int(modeled.size) * self.waves_per_wg)
        if progress is not None:
            progress.begin(self.kernel, "footprint", int(modeled.size),
                           self.emu.instruction_budget)
        self.d.batches_done(0)
        try:
            self.d.run_batch(modeled, None, memory=lines, run_stats=probe)
        except BudgetExceeded:
            raise
        except (EmulatorError, UndoLogFull):
            return None
        finally:
            log.restore()
        n_wg = self.grid3[0] * self.grid3[1] * self.grid3[2]
        return Footprint([(a.base, a.size) for a in mem.allocations()], lines.all_lines(),
                         n_wg / modeled.size, self.tm.memory["line_bytes"])

    def _make_result(self, waves: list[ModelWave], modeled) -> TimingResult:
        ctx = self._ctx
        out = []
        for w in sorted(waves, key=lambda w: (w.cu, w.simd, w.slot, w.wv)):
            out.append(WaveTiming(w.cu, w.simd, w.slot, w.wv,
                                  tuple(int(x) for x in ctx.wg_ids[w.row]) if ctx else (0, 0, 0),
                                  int(ctx.wave_in_wg[w.row]) if ctx else 0, w.begin, w.end,
                                  w.records, w.stall_states, w.barriers, w.barrier_stall))
        params = parameters(self.tm, self.slots_per_simd, self.wgs_per_cu)
        params["off"] = sorted(self.options.off)
        code = [(info.address, info.text) for info in self.comp.infos]
        n_wg = self.grid3[0] * self.grid3[1] * self.grid3[2]
        memory = getattr(self, "memory", None)
        result = TimingResult(self.target.name, self.kernel, self.num_cus, self.cus, n_wg,
                              int(np.size(modeled)), out, code, params, self.tm.clock_mhz,
                              dict(self.lds.costs), dict(memory.costs) if memory else {})
        if self.bandwidth is not None:
            result.bandwidth = self.bandwidth.report(result.cycles)
        if memory is not None:
            result.paths = path_use(memory, self.valu, self.icache, self.coexec)
        result.lds_ports = dict(self.lds.port_busy)
        result.raised_priority = sum(1 for w in waves if w.prio_max > 0)
        return result

    # ------------------------------------------------------------------ the model

    def _schedule(self, comp, groups: list[Group], ctx: LaunchInfo, wg_of_wave: np.ndarray,
                  n_wg: int, kernel: str, stats) -> None:
        """Emulator scheduler replacement: issue the batch's waves one instruction at a time
        in model order."""
        self._ctx = ctx
        self.stats = stats
        self._records = 0
        g0 = groups[0]
        self.recorder = Recorder(ctx.memory)
        ctx.memory = self.recorder
        ctx.store_observer = self.recorder.note_store
        off = self.options.off
        self.lds_accesses = LdsAccesses()
        if "lds_banks" not in off:
            ctx.lds_observer = self.lds_accesses.note
        self.lds = Lds(self.tm, None if "lds_banks" in off else self.lds_accesses,
                       ports="lds_ports" not in off)
        self.priorities = "setprio" not in off
        if "bandwidth" not in off:
            grid = self.grid3[0] * self.grid3[1] * self.grid3[2]
            self.bandwidth = Bandwidth(self.tm, self.target.compute_units, self.num_cus, grid,
                                       n_wg, self.footprint)
        self.valu = ValuPaths(self.statics, self.tm, on="valu_paths" not in off)
        self.coexec = CoExec(packed="packed_valu" not in off, memory="mfma_memory" not in off)
        self.icache = InstructionCache(self.tm, [info.address for info in comp.infos], (0,),
                                       on="icache" not in off)
        self.memory = LineMemory(self.tm, self.recorder, self.lds,
                                 lines="vmem_lines" not in off, bandwidth=self.bandwidth,
                                 off=off)
        self.ops = comp.ops
        waves = [ModelWave(k, g0.take(np.array([k])), int(wg_of_wave[k])) for k in range(g0.n)]
        by_wg: dict[int, list[ModelWave]] = {}
        for w in waves:
            by_wg.setdefault(w.wg, []).append(w)
        alive = {wg: len(ws) for wg, ws in by_wg.items()}  # waves holding a slot
        self.running = dict(alive)  # waves that have not executed s_endpgm
        self.barriers = Barriers(self.tm, self.running, per_cu="wg_barriers" in off)
        self.dispatch = dispatch.QueueDispatcher(self.tm, self.target, alive, self.lds_size,
                                                 self.wgs_per_cu)
        cus = self._place(by_wg, ctx)
        self.barriers.bind(cus)
        self._loop(cus, waves)
        self.result = self._make_result(waves, np.arange(n_wg))

    def _place(self, by_wg: dict[int, list[ModelWave]], ctx: LaunchInfo) -> list[Cu]:
        """The modeled CUs, each with the queue of its workgroups (workgroup i to CU i mod
        the device's CUs)."""
        # Linear grid workgroup id of every wave (it picks the wave's CU).
        lin = ctx.wg_ids[:, 0] + self.grid3[0] * (ctx.wg_ids[:, 1]
                                                   + self.grid3[1] * ctx.wg_ids[:, 2])
        t = self.target
        cus = [Cu(i, t.simds_per_cu, self.slots_per_simd) for i in range(self.cus)]
        for wg in sorted(by_wg):
            cu = int(lin[by_wg[wg][0].row]) % self.num_cus
            cus[cu].queue.append(by_wg[wg])
        return cus

    # ------------------------------------------------------------------ one instruction

    def _before_issue(self, w: ModelWave) -> None:
        self.recorder.clear()
        self.lds_accesses.clear()

    def _after_issue(self, w: ModelWave, st: Static, now: int) -> None:
        if st.clock:
            self._write_clock(w, st, now)

    def _taken(self, w: ModelWave, index: int, nxt: int) -> bool:
        return nxt != self.comp.infos[index].next_index

    def _advance(self, w: ModelWave) -> int:
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
            raise with_context(exc, self.kernel, g) from None
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

    def _workgroup(self, w: ModelWave) -> tuple[int, ...]:
        return tuple(int(x) for x in self._ctx.wg_ids[w.row])

    def _every_tick(self) -> None:
        """Every TICK modeled instructions: bound the trace's memory, show progress."""
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
        progress = self.d.progress
        if progress is not None and progress.due():
            done = sum(1 for n in self.running.values() if n == 0)
            progress.update(self.stats.wave_instructions, done,
                            self.stats.max_wave_instructions)

    def _write_clock(self, w: ModelWave, st: Static, now: int) -> None:
        """s_memtime: the model's cycle; s_memrealtime: the same on its 100 MHz clock."""
        if st.sdata < 0:
            return
        value = now if st.clock == "memtime" else now * 100 // self.tm.clock_mhz
        g = w.group
        g.s[:, st.sdata] = np.uint32(value & 0xFFFFFFFF)
        g.s[:, st.sdata + 1] = np.uint32(value >> 32)

    def _deadlock_error(self, w: ModelWave | None) -> EmulatorError:
        if w is None:
            return super()._deadlock_error(None)
        info = self.comp.infos[w.barrier_index]
        group = self.barriers.group(w)
        return DeadlockError(
            "waves wait at s_barrier but the other waves of their workgroup "
            f"can never arrive ({self.barriers.waiting(group)} of "
            f"{self.barriers.expected(group)} arrived)", kernel=self.kernel,
            pc=info.address, inst=info.text, workgroup=self._workgroup(w),
            wave=int(self._ctx.wave_in_wg[w.row]))


__all__ = ["PROBE_FRACTION", "RECORD_BYTES", "TICK", "TimedDispatch", "TimedRun"]
