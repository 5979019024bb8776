"""The memory budget: checked before an allocation whose size a user-given value decides.

Kernel parameters, `--arg` specs (zeros:N:dtype), grid sizes and the LDS / scratch sizes of a
kernel descriptor all decide how much memory the kernel library, the runtime and the emulator
allocate. Each such allocation is checked here first, so a size that cannot fit is a
one-line error naming what asked for it and how much, instead of a MemoryError traceback or
the system's out-of-memory killer half-way through a run.

The budget is $ASTERISM_MEMORY_LIMIT when set (bytes, or with a K, M, G or T suffix: `8G`),
else what the system can give this process now: the smallest of MemAvailable
(/proc/meminfo), the cgroup's memory.max less its memory.current, and the address-space limit
(`ulimit -v`) less what the process already maps. Where none of these can be read (not
Linux), only $ASTERISM_MEMORY_LIMIT bounds allocations. Without it, sizes up to QUICK_BYTES
pass without asking the system.
"""

from __future__ import annotations

import os

from asterism.errors import AsterismError

ENV = "ASTERISM_MEMORY_LIMIT"
# Without ASTERISM_MEMORY_LIMIT, sizes up to this pass without asking the system (reading
# it takes ~0.1 ms, and the emulator allocates small buffers often).
QUICK_BYTES = 1 << 20
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_UNLIMITED = 1 << 62  # no readable limit


class MemoryBudgetError(AsterismError):
    """An allocation larger than the memory budget (what asked for it and how much)."""


def format_bytes(n: int) -> str:
    """`n` bytes for people: 512 bytes, 3.0 KiB, 1.5 GiB."""
    if n < 1024:
        return f"{n} bytes"
    value, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB", "TiB", "PiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"


def parse_size(text: str) -> int:
    """`8G`, `512M`, `1048576` -> bytes (binary units), or a MemoryBudgetError."""
    body = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = body[-1:] if body[-1:] in _UNITS else ""
    number = body[:-1] if unit else body
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1 << 70 or value != value:
        raise MemoryBudgetError(f"{ENV}={text!r}: expected a size like 8G, 512M or 1048576")
    return int(value * _UNITS[unit])


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return _UNLIMITED


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_left() -> int:
    limit = _read_int("/sys/fs/cgroup/memory.max")  # "max" (no limit) reads as None
    used = _read_int("/sys/fs/cgroup/memory.current")
    if limit is None or used is None:
        return _UNLIMITED
    return max(0, limit - used)


def _address_space_left() -> int:
    """RLIMIT_AS less the process's current virtual size (ulimit -v)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return _UNLIMITED
    if soft == resource.RLIM_INFINITY:
        return _UNLIMITED
    size = 0
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    size = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - size)


def memory_budget() -> tuple[int, str]:
    """(bytes an allocation may take now, where that figure comes from)."""
    text = os.environ.get(ENV, "").strip()
    if text:
        return parse_size(text), f"the {ENV}={text} budget"
    left = min(_meminfo_available(), _cgroup_left(), _address_space_left())
    return left, "the memory available"


def check_memory(nbytes: int, what: str, hint: str = "") -> None:
    """Raise a MemoryBudgetError when `what` (e.g. "--arg out (zeros:1e9:f32)") would need
    more than the budget; `hint` says how to ask for less."""
    if nbytes <= QUICK_BYTES and not os.environ.get(ENV, "").strip():
        return
    budget, source = memory_budget()
    if nbytes <= budget:
        return
    advice = f"; {hint}" if hint else ""
    raise MemoryBudgetError(f"{what} needs {format_bytes(nbytes)}, more than "
                            f"{source} ({format_bytes(budget)}){advice} (set {ENV} to "
                            "change the budget)")


__all__ = ["ENV", "MemoryBudgetError", "check_memory", "format_bytes", "memory_budget",
           "parse_size"]
