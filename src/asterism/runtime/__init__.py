"""Launch kernels: NumPy arrays in and out, on the emulator (default) or a GPU through HIP.

    times = asterism.launch("add_10.hsaco", "add_10", grid=(4, 1, 1), block=(64, 1, 1),
                            args=[out]).times

With `timing=True` (or an `asterism.timing.params.TimingOptions`) the emulator also runs
the timing model (modeled, not measured; see asterism/timing/): `result.timing` holds the
modeled cycles and `trace_dir=` writes them as an ATT trace folder, with source locations
when the kernel comes from .mlir/.s text or a module (or from `source_map=`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asterism.api import load_code_object, load_with_source_map
from asterism.errors import AsterismError

# (the kernarg packer needs NumPy: it is loaded by launch, not by api.load_code_object, which
# `asterism stats` and the listing use)
_KERNARGS_EXPORTS = ("ArgumentError", "BufferArg", "PackedArgs", "describe_signature")

BACKENDS = ("auto", "emu", "hip")
_EMU = None


@dataclass
class LaunchResult:
    """What a launch did: per-launch wall times (seconds), the backend and its details."""

    times: list[float]
    backend: str
    device: str
    kernel: str
    stats: Any = None  # emulator RunStats of the last launch
    outputs: list[str] = field(default_factory=list)  # arguments copied back
    timing: Any = None  # timing.result.TimingResult of the last launch (timing=...)
    trace_dir: Path | None = None  # where the modeled trace was written


def __getattr__(name: str):
    """The kernarg names this package exports, loaded on first use."""
    if name in _KERNARGS_EXPORTS:
        from asterism.runtime import kernargs

        return getattr(kernargs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _dim3(value, what: str) -> tuple[int, int, int]:
    from asterism.runtime.kernargs import ArgumentError

    if isinstance(value, int):
        value = (value,)
    vals = tuple(int(v) for v in value)
    if not 1 <= len(vals) <= 3 or any(v < 1 for v in vals):
        raise ArgumentError(f"{what} must be 1 to 3 positive integers, got {value}")
    return vals + (1,) * (3 - len(vals))


def select_backend(name: str, target: str):
    """The backend object for `name` ('auto' prefers a matching GPU, else the emulator)."""
    global _EMU
    if name not in BACKENDS:
        raise AsterismError(f"unknown backend '{name}'; choose one of {', '.join(BACKENDS)}")
    if name in ("auto", "hip"):
        from asterism.runtime.hip_backend import HipBackend, hip_device_matches

        if name == "hip" or hip_device_matches(target):
            return HipBackend()
    from asterism.runtime.emu_backend import EmuBackend

    if _EMU is None:
        _EMU = EmuBackend()
    return _EMU


def launch(code_object, kernel: str, grid=(1, 1, 1), block=(64, 1, 1), args=(),
           backend: str = "auto", iterations: int = 1, timing: Any = False,
           trace_dir: str | os.PathLike | None = None,
           source_map: Mapping[int, str] | None = None, *,
           max_instructions: int | None = None, progress: Any = None,
           sanitizer: bool | str | None = None, on_violation: Any = None) -> LaunchResult:
    """Run `kernel` of a code object (bytes, path to .hsaco/.s/.mlir, CodeObject or module).

    `grid` counts workgroups, `block` work-items per workgroup. `args` lists the explicit
    arguments in order (or maps names to values): NumPy arrays for buffers, scalars for
    by-value arguments; or is a `PackedArgs` already laid out (a kernarg segment and the
    buffers whose addresses go into it, for a kernel whose metadata does not describe its
    arguments well enough to pack them by name). Arrays the kernel may write (access
    qualifier not read_only) receive the results. Returns per-launch times. `timing` (True
    or a TimingOptions) runs the emulator's timing model (modeled, not measured):
    `result.timing`, and `trace_dir` writes it as an ATT folder (code.json source column
    from `source_map` or the source).
    Emulator only: `max_instructions` is the per-wave instruction budget (a kernel that
    never ends stops with BudgetExceeded; default the backend's, 10 million),
    `progress` an emu.progress.RunProgress that shows a long run on stderr, `sanitizer`
    the sanitizer mode ("error", "warn", "off"; default `default_sanitizer`: error for a
    code object asterism made, warn for others'), `on_violation` what sees each new
    warn-mode violation (default a SanitizerWarning); `result.stats.sanitizer` holds the
    warn-mode report.
    """
    from asterism.runtime.kernargs import ArgumentError, PackedArgs, pack_kernargs
    from asterism.timing.params import TimingOptions

    options = TimingOptions.of(timing)
    if options is None and trace_dir is not None:
        raise ArgumentError("trace_dir needs timing=True (traces come from the timing model)")
    if options is not None:
        if backend == "hip":
            raise ArgumentError("the timing model runs on the emulator: use backend='emu' "
                                "(or 'auto') with timing=True")
        backend = "emu"
        obj, data, smap = load_with_source_map(code_object)
        if source_map is not None:
            smap = dict(source_map)
    else:
        obj, data = load_code_object(code_object)
    entry = next((k for k in obj.kernels if k.name == kernel), None)
    if entry is None:
        names = ", ".join(k.name for k in obj.kernels) or "none"
        raise AsterismError(f"no kernel '{kernel}' in the code object (kernels: {names})")
    if iterations < 1:
        raise ArgumentError("iterations must be at least 1")
    if max_instructions is not None and max_instructions < 1:
        raise ArgumentError(f"max_instructions must be at least 1, got {max_instructions}")
    grid3, block3 = _dim3(grid, "grid"), _dim3(block, "block")
    from asterism.emu.emulator import check_grid

    check_grid(grid3, block3)  # (the dispatch packet's limit, for the GPU as well)
    meta = entry.metadata or {}
    reqd = meta.get(".reqd_workgroup_size")
    if reqd and tuple(reqd) != block3:
        raise ArgumentError(f"{kernel} requires workgroups of {tuple(reqd)} work-items, "
                            f"got block={block3}")
    if isinstance(args, PackedArgs):
        packed = args
        if len(packed.segment) < meta.get(".kernarg_segment_size", 0):
            raise ArgumentError(f"{kernel}: the packed kernarg segment has "
                                f"{len(packed.segment)} bytes, the kernel reads "
                                f"{meta.get('.kernarg_segment_size')}")
    else:
        packed = pack_kernargs(meta, args if isinstance(args, dict) else list(args), grid3,
                               block3)
    be = select_backend(backend, obj.target.name)
    if be.name == "hip":
        times, stats = be.launch(obj, entry, packed, grid3, block3, iterations, data)
    else:
        times, stats = be.launch(obj, entry, packed, grid3, block3, iterations, timing=options,
                                 max_instructions=max_instructions, progress=progress,
                                 sanitizer=default_sanitizer(obj) if sanitizer is None
                                 else sanitizer, on_violation=on_violation)
    result = LaunchResult(times, be.name, be.device_name(), kernel, stats,
                          [b.name for b in packed.buffers if b.copy_out])
    if options is not None:
        result.timing = stats.timing
        if trace_dir is not None:
            from asterism.profile.att_export import write_trace

            result.trace_dir = write_trace(stats.timing, trace_dir, smap)
    return result


def default_sanitizer(obj) -> str:
    """The sanitizer mode a launch of `obj` (a CodeObject) gets by default: "error" for a
    code object asterism made (our own kernels must be right), "warn" for others' (AITER's,
    LLVM's: report each violation once and run on)."""
    return "error" if obj.made_by_asterism else "warn"


__all__ = ["ArgumentError", "BufferArg", "LaunchResult", "PackedArgs", "default_sanitizer",
           "describe_signature", "launch", "select_backend"]
