"""The emulator: dispatch ABI, scheduling of wave groups, barriers, budget and sanitizer.

`Emulator.run` executes a decoded program for a grid of workgroups. Waves start as one group
per batch of workgroups (all at pc 0) and run as NumPy arrays of shape (waves, 64). The
scheduler always runs the group with the lowest program counter, until it passes the next
group's counter, reaches a barrier, ends, or its waves disagree on a branch (then the group
splits by target). Groups that meet at the same counter with the same state merge again, so
divergent loops reconverge.

The dispatch ABI follows AMDGPUUsage "Initial Kernel Execution State" for GFX9 (gfx942/950):
user SGPRs from s0 in order (private segment buffer 4, dispatch ptr 2, queue ptr 2, kernarg
segment ptr 2, dispatch id 2, flat scratch init 2, private segment size 1, then preloaded
kernargs), then system SGPRs at USER_SGPR_COUNT (workgroup id x, y, z, workgroup info,
private segment wave offset, each if enabled); v0 holds the work-item ids packed as
x | y << 10 | z << 20 (GFX90A+), EXEC the lanes of the wave that hold work-items, MODE the
descriptor's float modes.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from asterism.emu import sanitizer as san
from asterism.emu.compiler import build_op
from asterism.emu.core import (
    BARRIER,
    END,
    EXEC,
    KEY_AGPR,
    KEY_SGPR,
    SGPR_FILE,
    SPLIT,
    Group,
    LaunchInfo,
    bits_to_mask,
)
from asterism.emu.errors import (
    BudgetExceeded,
    DeadlockError,
    EmulatorError,
    EmulatorFault,
    SanitizerError,
    SanitizerWarning,
    budget_message,
    with_context,
)
from asterism.emu.hazard_check import HazardChecker, HazardState
from asterism.emu.info import OpInfo, ProgramInst, make_infos
from asterism.emu.memory import DeviceMemory
from asterism.mc.codeobject.descriptor import KernelDescriptor
from asterism.target import Target, get_target

SHARED_APERTURE = 1 << 48  # flat address of LDS byte 0 (src_shared_base)
PRIVATE_APERTURE = 2 << 48  # flat address of scratch byte 0 (src_private_base)
DEFAULT_CODE_BASE = 0x7F00_0000_0000
# HSA's AQL dispatch packet holds the grid size in work-items as a uint32 per dimension.
MAX_GRID_SIZE = 2**32 - 1
# Emulator state of one batch of waves (registers, LDS and its sanitizer shadow, scratch) is
# kept under this (and under half the memory budget) by running fewer workgroups at a time.
BATCH_STATE_BYTES = 1 << 30
QUICK_BATCH_BYTES = 64 << 20  # a batch this small is never shrunk
# Instructions a group runs before the scheduler looks up again (progress, Ctrl-C); the
# choice of the next group is the same, so this changes no result.
CHUNK = 1 << 14


@dataclass
class RunStats:
    """What one dispatch did."""

    kernel: str
    workgroups: int
    waves: int
    wave_instructions: int = 0  # instructions executed, counted once per wave
    group_steps: int = 0  # instructions executed, counted once per group of waves
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # process CPU time of the run (on a shared machine the wall
    # time also counts other work)
    splits: int = 0
    merges: int = 0
    max_wave_instructions: int = 0
    timing: Any = None  # what a dispatch hook made of the run (asterism.timing.functional:
    # the timing model's TimingResult, modeled, not measured)
    sanitizer: Any = None  # emu.sanitizer.SanitizerReport of a warn-mode run

    @property
    def wave_instructions_per_second(self) -> float:
        """Throughput of the run (wave-instructions per wall-clock second)."""
        return self.wave_instructions / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Compiled:
    """A program prepared for execution (ops, infos and register layout)."""

    ops: list
    infos: list[OpInfo]
    vgprs: int  # rows of VGPRs
    agprs: int  # rows of AGPRs (after the VGPRs)
    code_base: int
    max_v: int = -1
    max_a: int = -1
    first_use: dict = field(default_factory=dict)


@dataclass
class Dispatch:
    """One dispatch as `Emulator.run` prepared it (checked, compiled, batch size chosen),
    handed to a dispatch hook that runs its workgroups (asterism.timing.functional)."""

    emulator: Emulator
    comp: Compiled
    descriptor: KernelDescriptor
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    lds_size: int
    stats: RunStats
    per_batch: int  # workgroups per functional batch
    progress: Any  # the emu.progress.RunProgress of the run, or None
    # run_batch(workgroup ids, schedule=None, memory=None, run_stats=None): run a batch;
    # `schedule` replaces the emulator's scheduler, `memory` its DeviceMemory
    run_batch: Callable[..., None]

    def batches_done(self, workgroups: int) -> None:
        """Workgroups finished before the next batch (for the progress line)."""
        self.emulator._done = workgroups


class DispatchHook(Protocol):
    """Runs the workgroups of a dispatch in place of the emulator's batch loop."""

    def run_dispatch(self, dispatch: Dispatch) -> None:
        """Run every workgroup of `dispatch` (through dispatch.run_batch)."""


class Emulator:
    """Runs decoded AMDGPU kernels on NumPy (see the module docstring)."""

    def __init__(self, target: str | Target = "gfx942", memory: DeviceMemory | None = None, *,
                 sanitizer: bool | str = True, hazards: bool | None = None,
                 strict_store_data: bool = False, instruction_budget: int = 10_000_000,
                 max_batch_waves: int = 4096, dynamic_stack: int = 1024,
                 dispatch_hook: DispatchHook | None = None, on_violation: Any = None):
        self.target = get_target(target)
        self.memory = memory if memory is not None else DeviceMemory()
        # "error" (True) raises the first violation, "warn" reports each distinct one once
        # and runs on (emu/sanitizer.py KINDS: what is computed then), "off" (False) checks
        # nothing. `on_violation(Violation)` sees each new one in warn mode (default: a
        # SanitizerWarning through the warnings module).
        self.sanitizer_mode = san.sanitizer_mode(sanitizer)
        self.sanitizer = self.sanitizer_mode != "off"
        self.hazards = self.sanitizer if hazards is None else hazards
        self.on_violation = on_violation
        self._report: san.SanitizerReport | None = None  # the warn-mode run's report
        self.strict_store_data = strict_store_data
        self.instruction_budget = instruction_budget
        self.max_batch_waves = max_batch_waves
        self.dynamic_stack = dynamic_stack
        self._cache: dict = {}
        # The Target, not its name: whether XNACK is enabled decides the soft-clause rules.
        self._checker = HazardChecker(self.target) if self.hazards else None
        # Runs each dispatch's workgroups instead of the plain loop (the timing model:
        # asterism.timing.functional.TimedRun); None: functional only.
        if dispatch_hook is not None and not callable(getattr(dispatch_hook, "run_dispatch",
                                                              None)):
            raise EmulatorError("dispatch_hook must be an object with a run_dispatch(dispatch) "
                                "method (the timing model: asterism.timing.functional."
                                f"TimedRun(options)), got {dispatch_hook!r}")
        self.dispatch_hook = dispatch_hook
        self._progress: Any = None  # the RunProgress of the dispatch running now
        self._done = 0  # workgroups finished before the current batch (for the progress)

    # ------------------------------------------------------------------ compile

    def compile(self, program: Sequence[ProgramInst], *, code_base: int | None = None,
                kernel: str = "kernel") -> Compiled:
        """Pre-decode a program into ops (cached per program object and code base)."""
        base = code_base if code_base is not None else (
            program[0].address if program and program[0].address else DEFAULT_CODE_BASE)
        key = (id(program), len(program), base, kernel)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is program:
            return hit[1]
        max_v, max_a, first_use = _register_usage(program)
        nv = max(max_v + 1, 3)
        na = max(max_a + 1, 0)
        infos = make_infos(program, self.target.name, base, agpr_base=nv)
        ops = [build_op(info) for info in infos]
        if self.sanitizer or self.hazards:
            preps = self._checker.prepare_program(infos) if self._checker is not None else \
                [None] * len(infos)
            ops = [self._wrap(op, info, kernel, prep)
                   for op, info, prep in zip(ops, infos, preps, strict=True)]
        ops.append(_fall_off(infos, base, kernel))
        comp = Compiled(ops, infos, nv, na, base, max_v, max_a, first_use)
        self._cache[key] = (program, comp)
        return comp

    def _wrap(self, op, info: OpInfo, kernel: str, prep: Any):
        mc = san.classify(info) if self.sanitizer else None
        checker = self._checker
        strict = self.strict_store_data
        is_wait = info.mnemonic == "s_waitcnt"
        simm = info.op("simm16").value if is_wait else 0
        sanitize = self.sanitizer
        ds_read = info.isa is not None and info.isa.unit == "lds" and \
            "may_load" in info.isa.flags and info.has("addr")
        dma = mc is not None and mc.lds_dma
        ds_store = mc is not None and san.is_plain_ds(info, "may_store")
        # (the hazard check of an instruction no rule of the program can fire for, and
        # without a soft clause to join, finds nothing: only its record is needed)
        check_hz = prep is not None and bool(prep.checks or prep.member is not None)

        if mc is None and not ds_read and not (is_wait and sanitize):
            # Most instructions: no memory counter, no LDS read, no wait.
            uses, defs = info.uses, info.defs
            advance = prep is not None and checker.records_nothing(prep)

            def run_plain(g: Group) -> int:
                if sanitize:
                    tr = g.tracker
                    # (C-speed test first: san.check finds nothing unless these intersect)
                    if (tr.dst and not (uses.isdisjoint(tr.dst) and defs.isdisjoint(tr.dst))
                            or tr.locked and not defs.isdisjoint(tr.locked)):
                        try:
                            san.check(tr, info, None, g, kernel)
                        except SanitizerError as err:
                            _warn_or_raise(g, err)
                if check_hz:
                    try:
                        checker.check(g.hz, prep, info, g, kernel)
                    except SanitizerError as err:
                        _warn_or_raise(g, err)
                r = op(g)
                if advance:
                    checker.advance(g.hz, prep)
                elif prep is not None:
                    checker.record(g.hz, prep, info)
                return r
            return run_plain

        def run(g: Group) -> int:
            tr = g.tracker
            # (warn mode: each check reports and the instruction executes all the same)
            if sanitize and (tr.dst or tr.locked):
                try:
                    san.check(tr, info, mc, g, kernel)
                except SanitizerError as err:
                    _warn_or_raise(g, err)
            if check_hz:
                try:
                    checker.check(g.hz, prep, info, g, kernel)
                except SanitizerError as err:
                    _warn_or_raise(g, err)
            if ds_read and g.ctx.sanitizer["dma"]:
                try:
                    _check_lds_dma(info, g, kernel)
                except SanitizerError as err:
                    _warn_or_raise(g, err)
            r = op(g)
            if mc is not None:
                p = tr.issue(info, mc, strict)
                if ds_store:
                    g.ctx.sanitizer["lds"].issued(p)
                if dma:
                    rows, lo, hi = san.lds_dma_ranges(info, g)
                    if rows.size:
                        g.ctx.sanitizer["dma"].append(san.DmaWrite(rows, lo, hi, p, tr))
            if is_wait and sanitize:
                retired = tr.retire(simm)
                if retired:
                    g.ctx.sanitizer["lds"].retired(g, retired)
            if prep is not None:
                checker.record(g.hz, prep, info)
            return r
        return run

    # ------------------------------------------------------------------ run

    def run(self, program: Sequence[ProgramInst] | Compiled, descriptor: KernelDescriptor, *,
            grid: tuple[int, ...] | int, block: tuple[int, ...] | int,
            kernarg_address: int = 0, kernel: str = "kernel", dynamic_lds: int = 0,
            code_base: int | None = None, dispatch_ptr: int | None = None,
            queue_ptr: int = 0, dispatch_id: int = 0, progress: Any = None) -> RunStats:
        """Execute a kernel: `grid` counts workgroups (x, y, z), `block` work-items per
        workgroup (x, y, z). Memory effects land in `self.memory`; returns RunStats.
        `progress` (an emu.progress.RunProgress) shows a long run on stderr."""
        grid3 = _dim3(grid, "grid")
        block3 = _dim3(block, "block")
        check_grid(grid3, block3)
        comp = program if isinstance(program, Compiled) else self.compile(
            program, code_base=code_base, kernel=kernel)
        tpw = block3[0] * block3[1] * block3[2]
        if tpw > self.target.max_workgroup_size:
            raise EmulatorError(f"workgroup of {tpw} work-items exceeds the "
                                f"{self.target.max_workgroup_size} of {self.target.name}",
                                kernel=kernel)
        if descriptor.kernel_code_properties.enable_wavefront_size32:
            raise EmulatorError("wave32 kernels are not supported on gfx9 targets",
                                kernel=kernel)
        report = None
        if self.sanitizer_mode == "warn":
            report = san.SanitizerReport(self.on_violation or _warning)
        try:
            self._check_registers(comp, descriptor, kernel)
        except SanitizerError as err:
            if report is None:
                raise
            report.add(err)
        lds_size = descriptor.group_segment_fixed_size + dynamic_lds
        if lds_size > self.target.lds.bytes_per_workgroup:
            raise EmulatorError(f"the kernel needs {lds_size} bytes of LDS per workgroup; "
                                f"{self.target.name} has {self.target.lds.bytes_per_workgroup}",
                                kernel=kernel)
        self._private_bytes(descriptor, kernel)  # (checks the scratch size)
        waves_per_wg = -(-tpw // 64)
        n_wg = grid3[0] * grid3[1] * grid3[2]
        stats = RunStats(kernel, n_wg, n_wg * waves_per_wg, sanitizer=report)
        per_batch = self.batch_workgroups(comp, descriptor, lds_size, waves_per_wg, kernel)
        packet = None
        if dispatch_ptr is None and descriptor.kernel_code_properties.enable_sgpr_dispatch_ptr:
            packet = dispatch_ptr = self._make_dispatch_packet(grid3, block3, descriptor,
                                                               kernarg_address, lds_size)
        start, cpu_start = time.perf_counter(), time.process_time()

        def batch(wgs: np.ndarray, schedule=None, memory=None, run_stats=None) -> None:
            self._run_batch(comp, descriptor, grid3, block3, wgs, kernarg_address, kernel,
                            lds_size, dispatch_ptr or 0, queue_ptr, dispatch_id,
                            run_stats or stats, schedule, memory)
        self._progress = progress
        self._done = 0
        self._report = report
        try:
            if self.dispatch_hook is not None:
                self.dispatch_hook.run_dispatch(Dispatch(
                    self, comp, descriptor, kernel, grid3, block3, lds_size, stats, per_batch,
                    progress, batch))
            else:
                if progress is not None:
                    progress.begin(kernel, "run", n_wg, self.instruction_budget)
                for first in range(0, n_wg, per_batch):
                    self._done = first
                    batch(np.arange(first, min(n_wg, first + per_batch)))
        finally:
            self._progress = None
            self._report = None
            if progress is not None:
                progress.end()
            if packet is not None:
                self.memory.free(packet)
        stats.seconds = time.perf_counter() - start
        stats.cpu_seconds = time.process_time() - cpu_start
        return stats

    def _private_bytes(self, kd: KernelDescriptor, kernel: str) -> int:
        """Scratch bytes per lane (the descriptor's, plus the dynamic stack if it asks for
        one), checked against the target's limit."""
        priv = kd.private_segment_fixed_size
        if kd.kernel_code_properties.uses_dynamic_stack:
            # Dynamic allocas / recursion: the runtime gives each lane more than the fixed size.
            priv += self.dynamic_stack
        limit = self.target.max_scratch_per_lane
        if kd.private_segment_fixed_size > limit:
            raise EmulatorError(f"the kernel descriptor asks for {kd.private_segment_fixed_size}"
                                f" bytes of scratch per work-item; {self.target.name} allows "
                                f"at most {limit}", kernel=kernel)
        return priv

    def workgroup_state_bytes(self, comp: Compiled, kd: KernelDescriptor, lds_size: int,
                              waves_per_wg: int) -> int:
        """Host memory the emulator holds for one workgroup while it runs: VGPRs/AGPRs and
        SGPRs of its waves, their scratch, its LDS (and the sanitizer's shadow of it)."""
        priv = self._private_bytes(kd, "")
        per_wave = (comp.vgprs + comp.agprs) * 64 * 4 + SGPR_FILE * 4 + \
            64 * (priv + (-priv % 4)) + 64 * 8
        lds = max(lds_size, 16) + 16
        return waves_per_wg * per_wave + lds * (5 if self.sanitizer else 1)

    def batch_workgroups(self, comp: Compiled, kd: KernelDescriptor, lds_size: int,
                         waves_per_wg: int, kernel: str) -> int:
        """Workgroups per batch: up to max_batch_waves waves, with the batch's state under
        BATCH_STATE_BYTES and half the memory budget (one workgroup at least, if it fits)."""
        from asterism.support.limits import check_memory, format_bytes, memory_budget

        per_wg = self.workgroup_state_bytes(comp, kd, lds_size, waves_per_wg)
        check_memory(per_wg, f"one workgroup of {kernel} ({waves_per_wg} waves, "
                             f"{self._private_bytes(kd, kernel)} bytes of scratch per lane, "
                             f"{lds_size} bytes of LDS) in the emulator",
                     hint=f"{format_bytes(per_wg)} of registers, scratch and LDS")
        most = max(1, self.max_batch_waves // waves_per_wg)
        if per_wg * most <= QUICK_BATCH_BYTES:
            return most  # (small enough anywhere: no need to ask the system)
        cap = min(BATCH_STATE_BYTES, memory_budget()[0] // 2)
        return max(1, min(most, cap // per_wg))

    def _check_registers(self, comp: Compiled, kd: KernelDescriptor, kernel: str) -> None:
        if not self.sanitizer:
            return
        total = kd.next_free_vgpr(self.target)
        acc = kd.accum_offset(self.target)
        arch = min(total, acc) if comp.max_a >= 0 else total
        if comp.max_v >= arch and comp.max_v >= 0:
            info = comp.first_use.get(("v", comp.max_v))
            raise SanitizerError(
                f"v{comp.max_v} is used but the kernel descriptor allocates {arch} VGPRs "
                f"(next_free_vgpr {total}, accum_offset {acc})",
                kernel=kernel, pc=info[0] if info else None, inst=info[1] if info else "",
                kind="registers", rule=f"VGPRs below {arch}",
                source=san.KINDS["registers"].source)
        if comp.max_a >= 0 and acc + comp.max_a >= total:
            info = comp.first_use.get(("a", comp.max_a))
            raise SanitizerError(
                f"a{comp.max_a} is used but the kernel descriptor allocates "
                f"{max(0, total - acc)} AGPRs (next_free_vgpr {total}, accum_offset {acc})",
                kernel=kernel, pc=info[0] if info else None, inst=info[1] if info else "",
                kind="registers", rule=f"AGPRs below {max(0, total - acc)}",
                source=san.KINDS["registers"].source)

    def _make_dispatch_packet(self, grid3, block3, kd: KernelDescriptor, kernarg: int,
                              lds: int) -> int:
        # hsa_kernel_dispatch_packet_t (64 bytes): grid_size is in work-items.
        pkt = struct.pack("<HHHHHHIIIIIQQQQ", 0, 3, block3[0], block3[1], block3[2], 0,
                          grid3[0] * block3[0], grid3[1] * block3[1], grid3[2] * block3[2],
                          kd.private_segment_fixed_size, lds, 0, kernarg, 0, 0)
        return self.memory.upload(np.frombuffer(pkt, np.uint8), align=64,
                                  name="dispatch packet")

    # ------------------------------------------------------------------ batch

    def _run_batch(self, comp: Compiled, kd: KernelDescriptor, grid3, block3,
                   wgs: np.ndarray, kernarg: int, kernel: str, lds_size: int,
                   dispatch_ptr: int, queue_ptr: int, dispatch_id: int,
                   stats: RunStats, schedule=None, memory=None) -> None:
        tpw = block3[0] * block3[1] * block3[2]
        wpw = -(-tpw // 64)
        n_wg = wgs.size
        n = n_wg * wpw
        wg_of_wave = np.repeat(np.arange(n_wg), wpw)
        wave_in_wg = np.tile(np.arange(wpw), n_wg)
        lin = wgs[wg_of_wave]
        wg_ids = np.stack([lin % grid3[0], (lin // grid3[0]) % grid3[1],
                           lin // (grid3[0] * grid3[1])], axis=1).astype(np.int64)
        priv = self._private_bytes(kd, kernel)
        ctx = LaunchInfo(
            kernel=kernel, target=self.target.name,
            memory=self.memory if memory is None else memory,
            lds=np.zeros((n_wg, max(lds_size, 16) + 16), np.uint8), lds_size=lds_size,
            private=np.zeros((n, 64, priv + (-priv % 4)), np.uint8) if priv else None,
            private_size=priv, wg_ids=wg_ids, wave_in_wg=wave_in_wg, wg_slot=wg_of_wave,
            code_base=comp.code_base, shared_base=SHARED_APERTURE,
            private_base=PRIVATE_APERTURE, dispatch_ptr=dispatch_ptr)
        ctx.sanitizer = {"dma": [], "lds": san.LdsWatch(ctx.lds.shape, wg_of_wave, wave_in_wg)
                         if self.sanitizer else None, "report": self._report}
        if ctx.sanitizer["lds"] is not None:
            ctx.sanitizer["lds"].report = self._report
        ctx.stats = {"wave_insts": stats.wave_instructions}
        v, s, exec_mask = self._initial_state(comp, kd, block3, wg_ids, wave_in_wg, n,
                                              kernarg, dispatch_ptr, queue_ptr, dispatch_id)
        mode = _initial_mode(kd)
        g0 = Group(ctx, np.arange(n), v, s, np.zeros(n, bool), exec_mask, 0, comp.vgprs, mode)
        if self.sanitizer:
            g0.tracker = san.Tracker()
        if self._checker is not None:
            g0.hz = HazardState()
        # `schedule`: the timing model's scheduler (one wave at a time, in model order).
        # Float exceptions (overflow, NaN...) are the ISA's results, never errors or warnings
        # here: one errstate for the batch, not one per instruction.
        with np.errstate(all="ignore"):
            (schedule or self._schedule)(comp, [g0], ctx, wg_of_wave, n_wg, kernel, stats)

    def _initial_state(self, comp: Compiled, kd: KernelDescriptor, block3, wg_ids,
                       wave_in_wg, n: int, kernarg: int, dispatch_ptr: int, queue_ptr: int,
                       dispatch_id: int):
        rows = comp.vgprs + comp.agprs
        v = np.zeros((rows, n, 64), np.uint32)
        s = np.zeros((n, SGPR_FILE), np.uint32)
        props = kd.kernel_code_properties
        r2 = kd.compute_pgm_rsrc2
        i = 0

        def put64(value: int) -> None:
            nonlocal i
            s[:, i] = value & 0xFFFFFFFF
            s[:, i + 1] = (value >> 32) & 0xFFFFFFFF
            i += 2
        if props.enable_sgpr_private_segment_buffer:
            # Scratch is modeled per lane; MUBUF access through this V# is not (base 0 faults).
            s[:, i:i + 4] = 0
            i += 4
        if props.enable_sgpr_dispatch_ptr:
            put64(dispatch_ptr)
        if props.enable_sgpr_queue_ptr:
            put64(queue_ptr)
        if props.enable_sgpr_kernarg_segment_ptr:
            put64(kernarg)
        if props.enable_sgpr_dispatch_id:
            put64(dispatch_id)
        if props.enable_sgpr_flat_scratch_init:
            put64(PRIVATE_APERTURE)
        if props.enable_sgpr_private_segment_size:
            s[:, i] = kd.private_segment_fixed_size
            i += 1
        pre = kd.kernarg_preload
        if pre.length:
            words = self.memory.load_dwords(np.array([kernarg + 4 * pre.offset], np.uint64),
                                            pre.length)[0]
            s[:, i:i + pre.length] = words
            i += pre.length
        j = r2.user_sgpr_count
        for enabled, col in ((r2.enable_sgpr_workgroup_id_x, 0),
                             (r2.enable_sgpr_workgroup_id_y, 1),
                             (r2.enable_sgpr_workgroup_id_z, 2)):
            if enabled:
                s[:, j] = wg_ids[:, col]
                j += 1
        if r2.enable_sgpr_workgroup_info:
            s[:, j] = 0
            j += 1
        if r2.enable_private_segment:
            s[:, j] = 0  # private segment wave byte offset: scratch is per-lane here
            j += 1
        tpw = block3[0] * block3[1] * block3[2]
        tid = wave_in_wg[:, None] * 64 + np.arange(64)[None, :]
        active = tid < tpw
        x = tid % block3[0]
        y = (tid // block3[0]) % block3[1]
        z = tid // (block3[0] * block3[1])
        dims = r2.enable_vgpr_workitem_id
        packed = x.copy()
        if dims >= 1:
            packed |= y << 10
        if dims >= 2:
            packed |= z << 20
        v[0] = np.where(active, packed, 0).astype(np.uint32)
        exec_bits = np.packbits(active, axis=1, bitorder="little").view(np.uint64)[:, 0]
        s.view(np.uint64)[:, EXEC // 2] = exec_bits
        return v, s, bits_to_mask(exec_bits)

    # ------------------------------------------------------------------ scheduling

    def _schedule(self, comp: Compiled, groups: list[Group], ctx: LaunchInfo,
                  wg_of_wave: np.ndarray, n_wg: int, kernel: str, stats: RunStats) -> None:
        alive = np.bincount(wg_of_wave, minlength=n_wg).astype(np.int64)
        arrived = np.zeros(n_wg, np.int64)
        ops = comp.ops
        budget = self.instruction_budget
        progress = self._progress
        while groups:
            if progress is not None and progress.due():
                progress.update(stats.wave_instructions,
                                self._done + int(np.count_nonzero(alive == 0)),
                                stats.max_wave_instructions)
            runnable = [g for g in groups if g.status == "run"]
            if not runnable:
                raise self._deadlock(groups, alive, arrived, comp, kernel)
            g = min(runnable, key=lambda h: h.idx)
            stop = min((h.idx for h in runnable if h is not g and h.idx >= g.idx),
                       default=len(ops) + 1)
            limit = budget - g.steps
            if limit <= 0:
                raise self._budget(g, comp, kernel, stats)
            chunk = min(limit, CHUNK)
            i = g.idx
            count = 0
            try:
                while True:
                    i = ops[i](g)
                    count += 1
                    if i < 0 or i >= stop or count >= chunk:
                        break
            except EmulatorError as exc:
                raise with_context(exc, kernel, g) from None
            except (FloatingPointError, ValueError, IndexError, TypeError) as exc:
                info = comp.infos[g.idx] if g.idx < len(comp.infos) else None
                raise EmulatorFault(f"internal error while executing: {exc!r}", kernel=kernel,
                                    pc=info.address if info else None,
                                    inst=info.text if info else "") from exc
            g.steps += count
            stats.group_steps += count
            stats.wave_instructions += count * g.n
            ctx.stats["wave_insts"] = stats.wave_instructions
            stats.max_wave_instructions = max(stats.max_wave_instructions, g.steps)
            if i >= 0:
                g.idx = i
                if count >= limit and i < stop:
                    raise self._budget(g, comp, kernel, stats)
                continue  # (after a chunk, g is still the group with the lowest counter)
            if i == END:
                groups.remove(g)
                np.add.at(alive, g.lds_rows, -1)
                self._release(groups, alive, arrived, stats)
                self._merge(groups, stats)
            elif i == BARRIER:
                g.status = "barrier"
                np.add.at(arrived, g.lds_rows, 1)
                self._release(groups, alive, arrived, stats)
                self._merge(groups, stats)
            elif i == SPLIT:
                targets = g.split_to
                g.split_to = None
                groups.remove(g)
                for t in np.unique(targets):
                    part = g.take(np.flatnonzero(targets == t))
                    part.idx = int(t)
                    groups.append(part)
                if g.tracker is not None:
                    g.tracker.drop()  # the parts hold copies
                stats.splits += 1
                self._merge(groups, stats)

    def _release(self, groups: list[Group], alive, arrived, stats: RunStats) -> None:
        done = (arrived > 0) & (arrived >= alive)
        if not done.any():
            return
        arrived[done] = 0
        for g in list(groups):
            if g.status != "barrier":
                continue
            r = done[g.lds_rows]
            if r.all():
                g.status = "run"
            elif r.any():
                groups.remove(g)
                go, stay = g.take(np.flatnonzero(r)), g.take(np.flatnonzero(~r))
                if g.tracker is not None:
                    g.tracker.drop()
                go.status, stay.status = "run", "barrier"
                groups.extend([go, stay])
                stats.splits += 1

    def _merge(self, groups: list[Group], stats: RunStats) -> None:
        if len(groups) < 2:
            return
        buckets: dict[tuple, Group] = {}
        for g in list(groups):
            key = (g.idx, g.status, g.mode,
                   g.tracker.signature() if g.tracker is not None else ())
            other = buckets.get(key)
            if other is None:
                buckets[key] = g
                continue
            other.absorb(g)
            if other.tracker is not None and g.tracker is not None:
                _merge_trackers(other.tracker, g.tracker)
            groups.remove(g)
            stats.merges += 1

    def _budget(self, g: Group, comp: Compiled, kernel: str, stats: RunStats
                ) -> EmulatorError:
        info = comp.infos[g.idx] if g.idx < len(comp.infos) else None
        wave = int(g.waves[0])
        return BudgetExceeded(
            budget_message(stats.wave_instructions, g.steps, self.instruction_budget),
            kernel=kernel, pc=info.address if info else None, inst=info.text if info else "",
            workgroup=tuple(int(x) for x in g.ctx.wg_ids[wave]),
            wave=int(g.ctx.wave_in_wg[wave]))

    def _deadlock(self, groups, alive, arrived, comp: Compiled, kernel: str) -> EmulatorError:
        g = groups[0]
        wave = int(g.waves[0])
        slot = int(g.lds_rows[0])
        info = comp.infos[g.idx - 1] if 0 < g.idx <= len(comp.infos) else None
        return DeadlockError(
            f"waves wait at s_barrier but the other waves of their workgroup can never "
            f"arrive ({int(arrived[slot])} of {int(alive[slot])} arrived)",
            kernel=kernel, pc=info.address if info else None, inst=info.text if info else "",
            workgroup=tuple(int(x) for x in g.ctx.wg_ids[wave]),
            wave=int(g.ctx.wave_in_wg[wave]))


# ---------------------------------------------------------------------------- helpers

def _dim3(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, int):
        value = (value,)
    vals = tuple(int(x) for x in value) + (1,) * (3 - len(tuple(value)))
    if len(vals) != 3 or any(x < 1 for x in vals):
        raise EmulatorError(f"{what} must be 1 to 3 positive sizes, got {value!r}")
    return vals


def check_grid(grid3: tuple[int, int, int], block3: tuple[int, int, int]) -> None:
    """Refuse a grid whose size in work-items does not fit the dispatch packet (uint32 per
    dimension, as on the hardware)."""
    for axis, g, b in zip("xyz", grid3, block3):
        if g * b > MAX_GRID_SIZE:
            raise EmulatorError(f"grid {axis}: {g} workgroups of {b} work-items is {g * b} "
                                f"work-items; a dispatch has at most {MAX_GRID_SIZE} per "
                                "dimension")


def _initial_mode(kd: KernelDescriptor) -> int:
    r1 = kd.compute_pgm_rsrc1
    if r1.float_round_mode_32 or r1.float_round_mode_16_64:
        raise EmulatorError("the kernel descriptor selects a non-default float rounding mode; "
                            "the emulator only models round-to-nearest-even")
    return (r1.float_round_mode_32 | (r1.float_round_mode_16_64 << 2)
            | (r1.float_denorm_mode_32 << 4) | (r1.float_denorm_mode_16_64 << 6)
            | (r1.enable_dx10_clamp << 8) | (r1.enable_ieee_mode << 9)
            | (r1.fp16_ovfl << 23))


def _register_usage(program: Sequence[ProgramInst]):
    from asterism.mc.operands import Mod, Reg

    max_v = max_a = -1
    first: dict = {}
    for p in program:
        for op in p.inst.operands:
            if isinstance(op, Mod):
                op = op.operand
            if isinstance(op, Reg) and op.kind in ("v", "a"):
                last = op.index + op.count - 1
                if op.kind == "v" and last > max_v:
                    max_v = last
                    first[("v", last)] = (p.address, p.inst.mnemonic)
                if op.kind == "a" and last > max_a:
                    max_a = last
                    first[("a", last)] = (p.address, p.inst.mnemonic)
        # wide MFMA operands whose width the form fixes (f8f6f4 ranges are explicit already)
    return max_v, max_a, first


def _fall_off(infos: list[OpInfo], base: int, kernel: str):
    end = base + (infos[-1].offset + infos[-1].size if infos else 0)

    def run(g: Group) -> int:
        raise EmulatorFault("execution ran past the last instruction of the program (missing "
                            "s_endpgm?)", kernel=kernel, pc=end)
    return run


def _warn_or_raise(g: Group, err: SanitizerError) -> None:
    """Warn mode: record the violation in the run's report; error mode: raise it."""
    report = g.ctx.sanitizer["report"]
    if report is None:
        raise err
    report.add(err)


def _warning(violation: san.Violation) -> None:
    """The default echo of a warn-mode violation: a SanitizerWarning."""
    import warnings

    warnings.warn(violation.text(), SanitizerWarning, stacklevel=2)


def _merge_trackers(a: san.Tracker, b: san.Tracker) -> None:
    # Same signature: the same instructions are pending; keep a's records (b's follow them,
    # so an LDS DMA b's waves issued stays in flight until a retires it).
    b.merge_into(a)


def _check_lds_dma(info: OpInfo, g: Group, kernel: str) -> None:
    """A DS read of LDS that an LDS DMA (buffer/global load ... lds) may not have written yet."""
    entries = g.ctx.sanitizer["dma"]
    # Liveness by record, not by tracker: the issuing group may have split into copies.
    live = [e for e in entries if e.pending.in_flight()]
    g.ctx.sanitizer["dma"] = live
    if not live:
        return
    from asterism.emu.vops import vreg_row

    ex = g.exec
    active = ex.any(axis=1)
    if not active.any():
        return
    addrs = g.v[vreg_row(info, info.op("addr"))][active].astype(np.int64)
    first, end = _ds_read_span(info)
    lanes = addrs[ex[active]]
    read_lo, read_hi = int(lanes.min()) + first, int(lanes.max()) + end
    live = [e for e in live if e.lo_min < read_hi and read_lo < e.hi_max]
    if not live:
        return  # (the usual case: the read is of the other stage of a double buffer)
    # Per workgroup (LDS row): a group can hold waves of several workgroups reading
    # different places (e.g. different stages of a double buffer).
    big = np.int64(1) << 40
    rows, lo, hi = san.row_spans(g.lds_rows[active].astype(np.int64),
                                 np.where(ex[active], addrs, big).min(axis=1),
                                 np.where(ex[active], addrs, -1).max(axis=1))
    lo, hi = lo + first, hi + end
    # The report names the lowest workgroup row with an overlap, and there the DMA issued
    # first (the order a row-by-row, record-by-record scan finds).
    hit_row, hit = None, None
    for e in live:
        pos = np.minimum(np.searchsorted(e.rows, rows), e.rows.size - 1)
        overlap = (e.rows[pos] == rows) & (lo < e.hi[pos]) & (e.lo[pos] < hi)
        if overlap.any():
            k = int(np.argmax(overlap))
            if hit_row is None or int(rows[k]) < hit_row:
                hit_row, hit = int(rows[k]), (e, int(pos[k]))
    if hit is None:
        return
    e, j = hit
    dlo, dhi, p, tr = int(e.lo[j]), int(e.hi[j]), e.pending, e.tracker
    need = tr.needed_wait(p)
    own = tr is g.tracker
    where = "" if own else " (issued by another wave of the workgroup, which needs " \
                           f"{need} before its s_barrier)"
    wave = int(g.waves[np.flatnonzero(g.lds_rows == hit_row)[0]])
    raise SanitizerError(
        f"LDS bytes [{dlo}, {dhi}) written by `{p.info.text}` (pc 0x{p.info.address:x}) "
        f"are read before the load is guaranteed to have landed{where}: needs {need} "
        f"before pc 0x{info.address:x}", needed=need, kernel=kernel, pc=info.address,
        inst=info.text, workgroup=tuple(int(x) for x in g.ctx.wg_ids[wave]),
        wave=int(g.ctx.wave_in_wg[wave]), kind="lds_dma", rule=f"needs {need}",
        source=san.KINDS["lds_dma"].source)


_DS_WIDTHS = (("b128", 16), ("b96", 12), ("b64", 8), ("b32", 4), ("u16", 2), ("i16", 2),
              ("u8", 1), ("i8", 1))


def _ds_read_span(info: OpInfo) -> tuple[int, int]:
    """[first, end) bytes a DS read touches relative to its address VGPR: the offset(s) and
    the access width (ds_read2*: both elements, offsets in units of the width or 64x it)."""
    m = info.mnemonic
    width = next((w for key, w in _DS_WIDTHS if key in m), 16)
    mods = info.mods
    if m.startswith("ds_read2"):
        unit = width * (64 if "st64" in m else 1)
        offs = [int(mods.get("offset0", 0)) * unit, int(mods.get("offset1", 0)) * unit]
        return min(offs), max(offs) + width
    off = int(mods.get("offset", 0))
    return off, off + width


_unused = (KEY_AGPR, KEY_SGPR)
