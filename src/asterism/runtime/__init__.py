"""Launch kernels: NumPy arrays in and out, on the emulator (default) or a GPU through HIP.

    times = asterism.launch("add_10.hsaco", "add_10", grid=(4, 1, 1), block=(64, 1, 1),
                            args=[out]).times
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from asterism.errors import AsterismError
from asterism.mc.codeobject import CodeObject, read_code_object
from asterism.runtime.kernargs import ArgumentError, describe_signature, pack_kernargs

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


def _dim3(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, int):
        value = (value,)
    vals = tuple(int(v) for v in value)
    if not 1 <= len(vals) <= 3 or any(v < 1 for v in vals):
        raise ArgumentError(f"{what} must be 1 to 3 positive integers, got {value}")
    return vals + (1,) * (3 - len(vals))


def load_code_object(source) -> tuple[CodeObject, bytes]:
    """A CodeObject and its bytes from bytes, a path (.hsaco, .s or .mlir) or a CodeObject."""
    if isinstance(source, CodeObject):
        from asterism.mc.codeobject import write_code_object

        return source, write_code_object(source)
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        path = os.fspath(source)
        if path.endswith((".mlir", ".s")):
            from asterism import api

            data = api.compile(path) if path.endswith(".mlir") else api.assemble(path)
        else:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as err:
                raise AsterismError(f"cannot read {path}: {err.strerror}") from None
    return read_code_object(data), data


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
           backend: str = "auto", iterations: int = 1) -> LaunchResult:
    """Run `kernel` of a code object (bytes, path to .hsaco/.s/.mlir, or CodeObject).

    `grid` counts workgroups, `block` work-items per workgroup. `args` lists the explicit
    arguments in order (or maps names to values): NumPy arrays for buffers, scalars for
    by-value arguments. Arrays the kernel may write (access qualifier not read_only) receive
    the results. Returns per-launch times.
    """
    obj, data = load_code_object(code_object)
    entry = next((k for k in obj.kernels if k.name == kernel), None)
    if entry is None:
        names = ", ".join(k.name for k in obj.kernels) or "none"
        raise AsterismError(f"no kernel '{kernel}' in the code object (kernels: {names})")
    if iterations < 1:
        raise ArgumentError("iterations must be at least 1")
    grid3, block3 = _dim3(grid, "grid"), _dim3(block, "block")
    meta = entry.metadata or {}
    reqd = meta.get(".reqd_workgroup_size")
    if reqd and tuple(reqd) != block3:
        raise ArgumentError(f"{kernel} requires workgroups of {tuple(reqd)} work-items, "
                            f"got block={block3}")
    packed = pack_kernargs(meta, args if isinstance(args, dict) else list(args), grid3, block3)
    be = select_backend(backend, obj.target.name)
    if be.name == "hip":
        times, stats = be.launch(obj, entry, packed, grid3, block3, iterations, data)
    else:
        times, stats = be.launch(obj, entry, packed, grid3, block3, iterations)
    return LaunchResult(times, be.name, be.device_name(), kernel, stats,
                        [b.name for b in packed.buffers if b.copy_out])


__all__ = ["ArgumentError", "LaunchResult", "describe_signature", "launch", "load_code_object",
           "select_backend"]
