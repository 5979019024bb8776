"""Cycle timers in a kernel: `s_memtime` regions whose start/end stamps every wave stores to
its own slot of a buffer argument.

    kb = KernelBuilder("k", workgroup_size=(256, 1, 1))
    timer = kb.cycle_timer("timings", regions=2)       # at the start of the kernel
    with timer.region(0):
        ...                                            # code to time
    with timer.region(1):
        ...
    timer.flush()                                      # before s_endpgm
    kb.s_endpgm()

    stamps = timer.host_buffer(workgroups=304)         # the "timings" argument (uint64)
    asterism.launch(code, "k", grid=304, block=256, args=[..., stamps])
    cycles = timer.cycles(stamps)                      # (waves, regions): end - start

Layout: wave w = workgroup_id.x * waves_per_workgroup + (wave in its workgroup) owns
`regions` pairs of uint64 (start, end) at element 2 * (w * regions + r). Grids must be 1-D
(workgroups with the same x id but other y/z ids share slots); workgroups may be 1-3-D.

Emitted code (exactly this, in place):
  setup (at `cycle_timer`): s_load_dwordx2 of the buffer pointer, v_readfirstlane_b32 of the
  work-item id, a few SALU ops computing the wave's byte offset (they clobber SCC), one
  `s_waitcnt lgkmcnt(0)` and s_add_u32/s_addc_u32 moving the pointer to the wave's slot.
  region start: `s_memtime`; region end: `s_memtime`, `s_waitcnt lgkmcnt(0)`, two
  `s_store_dwordx2`. `flush()`: `s_dcache_wb` + `s_waitcnt lgkmcnt(0)` (scalar stores live in
  the scalar cache until written back).

Registers: fixed SGPRs s[first : first + 2 + 4 * regions] (`sgprs=first`, even); by default
the top of the addressable SGPRs, which may lower the kernel's occupancy when SGPRs limit
it - pass `sgprs=` to place them elsewhere.

On the emulator the stamps are the timing model's cycles with timing on (`launch(...,
timing=True)`), a monotonic counter otherwise; on a GPU, the shader clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from asterism.errors import VerifyError

if TYPE_CHECKING:
    from xdsl.ir import SSAValue

    from asterism.builder.registers import RegisterFile
    from asterism.ir.ops import KernelOp


class TimerHost(Protocol):
    """What a cycle timer needs from the builder it writes into (a KernelBuilder): the
    target, the kernel, the SGPR file, a buffer argument, ABI values, instruction methods."""

    target: str
    kernel: KernelOp
    s: RegisterFile

    def arg_buffer(self, name: str, dtype: str = "", access: str = "") -> Any:
        """Declare a global-buffer argument; its kernarg offset as an operand."""
        ...

    def kernarg_ptr(self) -> SSAValue:
        """The kernarg segment pointer."""
        ...

    def workgroup_id(self, dim: str = "x") -> SSAValue:
        """The workgroup id in `dim`."""
        ...

    def workitem_id(self, dim: str = "x") -> SSAValue:
        """The work-item id register."""
        ...

    def __getattr__(self, mnemonic: str) -> Callable[..., Any]:
        """The builder method of an instruction (kb.s_memtime, kb.s_store_dwordx2, ...)."""
        ...


class CycleTimer:
    """`regions` s_memtime regions of a kernel, stored per wave to the buffer `name`."""

    def __init__(self, kb: TimerHost, name: str, regions: int = 1, *,
                 sgprs: int | None = None):
        if not isinstance(regions, int) or regions < 1:
            raise VerifyError(f"cycle_timer: regions must be a positive integer, got {regions!r}")
        self.kb = kb
        self.name = name
        self.regions = regions
        size = 2 + 4 * regions
        top = _addressable(kb)
        first = (top - size) & ~1 if sgprs is None else sgprs
        if first < 0 or first % 2 or first + size > top:
            raise VerifyError(f"cycle_timer: sgprs={first} must be even and leave room for "
                              f"{size} SGPRs below s{top}")
        self.first = first
        wg = tuple(int(x) for x in kb.kernel.workgroup_size.get_values())
        self.workgroup_size = wg
        self.waves_per_workgroup = -(-(wg[0] * wg[1] * wg[2]) // 64)
        self.arg = kb.arg_buffer(name, "u64", access="write_only")
        self._open: set[int] = set()
        self._emit_setup()

    # ------------------------------------------------------------------ kernel code

    def _s(self, offset: int, count: int = 1):
        return self.kb.s[self.first + offset:self.first + offset + count]

    def _emit_setup(self) -> None:
        kb = self.kb
        ptr_lo, ptr_hi, ptr = self._s(0), self._s(1), self._s(0, 2)
        t0, t1, t2 = self._s(2), self._s(3), self._s(4)  # region 0's stamp registers
        kb.s_load_dwordx2(ptr, kb.kernarg_ptr(), self.arg)
        wg = kb.workgroup_id("x")
        per_wg = self.waves_per_workgroup
        bx, by, bz = self.workgroup_size
        if per_wg > 1:
            dims = "z" if bz > 1 else "y" if by > 1 else "x"
            kb.v_readfirstlane_b32(t0, kb.workitem_id(dims))  # ids of the wave's lane 0
            if by > 1 or bz > 1:
                kb.s_bfe_u32(t1, t0, (10 << 16) | 10)  # y
                if bz > 1:
                    kb.s_lshr_b32(t2, t0, 20)  # z
                    kb.s_mul_i32(t2, t2, by)
                    kb.s_add_u32(t1, t1, t2)  # y + by * z
                kb.s_and_b32(t0, t0, 0x3FF)  # x
                kb.s_mul_i32(t1, t1, bx)
                kb.s_add_u32(t0, t0, t1)  # flat work-item id
            else:
                kb.s_and_b32(t0, t0, 0x3FF)
            kb.s_lshr_b32(t0, t0, 6)  # wave in the workgroup
            kb.s_mul_i32(t1, wg, per_wg)
            kb.s_add_u32(t0, t0, t1)  # wave slot
            kb.s_mul_i32(t0, t0, 16 * self.regions)
        else:
            kb.s_mul_i32(t0, wg, 16 * self.regions)  # byte offset of the wave's slot
        kb.s_waitcnt(lgkmcnt=0)
        kb.s_add_u32(ptr_lo, ptr_lo, t0)
        kb.s_addc_u32(ptr_hi, ptr_hi, 0)

    @contextmanager
    def region(self, r: int) -> Iterator[None]:
        """Time the code emitted inside the `with` block as region `r`."""
        if not isinstance(r, int) or not 0 <= r < self.regions:
            raise VerifyError(f"cycle_timer {self.name}: region {r!r} is not in "
                              f"[0, {self.regions})")
        if r in self._open:
            raise VerifyError(f"cycle_timer {self.name}: region {r} is already open")
        kb = self.kb
        start, end = self._s(2 + 4 * r, 2), self._s(4 + 4 * r, 2)
        self._open.add(r)
        kb.s_memtime(start)
        try:
            yield
        finally:
            self._open.discard(r)
        kb.s_memtime(end)
        kb.s_waitcnt(lgkmcnt=0)
        ptr = self._s(0, 2)
        kb.s_store_dwordx2(start, ptr, 16 * r)
        kb.s_store_dwordx2(end, ptr, 16 * r + 8)

    def flush(self) -> None:
        """Write the scalar cache back so the stamps reach memory (call before s_endpgm)."""
        self.kb.s_dcache_wb()
        self.kb.s_waitcnt(lgkmcnt=0)

    # ------------------------------------------------------------------ host side

    def host_buffer(self, workgroups: int) -> np.ndarray:
        """Zeros for the buffer argument: (waves, regions, 2) uint64 for a 1-D grid."""
        return np.zeros((workgroups * self.waves_per_workgroup, self.regions, 2), np.uint64)

    def cycles(self, stamps: np.ndarray) -> np.ndarray:
        """(waves, regions) cycles, end - start, from a filled buffer."""
        s = np.asarray(stamps, np.uint64).reshape(-1, self.regions, 2)
        return s[..., 1].astype(np.int64) - s[..., 0].astype(np.int64)


def _addressable(kb: TimerHost) -> int:
    from asterism.target import get_target

    return get_target(kb.target).sgpr.addressable


__all__ = ["CycleTimer", "TimerHost"]
