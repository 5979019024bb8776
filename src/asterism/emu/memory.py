"""Device memory for the emulator: a 64-bit address space with its own allocator.

Every allocation is a separate NumPy byte buffer at a fixed address. Addresses start at 4 GiB
(so a pointer truncated to 32 bits faults), allocations are separated by an unmapped guard
gap and freed addresses are never reused, so overruns, truncated pointers and use after free
all fault instead of silently touching another buffer. Bounds are checked against the exact
size that was asked for, not a page: the emulator is a checking tool, not a GPU.

Lane-parallel access (`load_dwords`, `store_bytes`, atomics...) takes a vector of addresses
and raises `MemoryAccessError` naming the first offending element; the emulator turns that
into an `EmulatorFault` with the kernel, PC, instruction, wave and lane.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from asterism.errors import AsterismError

ADDRESS_BASE = 1 << 32  # first allocation address: above every 32-bit pointer
GUARD_BYTES = 1 << 16  # unmapped gap after each allocation
_PAD = 16  # buffers are padded to this so dword views always exist


class MemoryAccessError(AsterismError):
    """An access outside every live allocation (`index` is the element of the access)."""

    def __init__(self, message: str, index: int, address: int):
        self.index = index
        self.address = address
        super().__init__(message)


@dataclass
class Allocation:
    """One live allocation: [base, base + size) backed by `data` (uint8, padded)."""

    base: int
    size: int
    data: np.ndarray
    name: str = ""

    @property
    def end(self) -> int:
        """One past the last valid byte."""
        return self.base + self.size

    @property
    def words(self) -> np.ndarray:
        """The buffer as uint32 (covers the padding)."""
        return self.data.view(np.uint32)


class DeviceMemory:
    """A device address space: alloc/free, host read/write, and lane-parallel access."""

    def __init__(self, base: int = ADDRESS_BASE, guard: int = GUARD_BYTES):
        self._next = base
        self._guard = guard
        self._allocs: list[Allocation] = []  # sorted by base
        self._bases: list[int] = []
        self._freed: list[tuple[int, int, str]] = []  # (base, end, name) of freed blocks
        self._np_bases = np.zeros(0, np.uint64)
        self._np_ends = np.zeros(0, np.uint64)
        self._dirty = False

    # ------------------------------------------------------------------ allocation

    def alloc(self, size: int, *, align: int = 256, name: str = "") -> int:
        """Reserve `size` bytes (zero-filled) aligned to `align`; returns the address.
        A size beyond the memory budget (asterism.support.limits) is a MemoryBudgetError."""
        if size < 0:
            raise ValueError(f"allocation size must be >= 0, got {size}")
        if align <= 0 or align & (align - 1):
            raise ValueError(f"alignment must be a power of two, got {align}")
        _check_size(size, name)
        base = (self._next + align - 1) & ~(align - 1)
        padded = max(_PAD, (size + _PAD - 1) // _PAD * _PAD)
        alloc = Allocation(base, size, np.zeros(padded, np.uint8), name)
        self._next = base + max(size, 1) + self._guard
        self._allocs.append(alloc)  # bases only grow (alloc_at keeps _next above): sorted
        self._bases.append(base)
        self._dirty = True
        return base

    def alloc_at(self, address: int, size: int, *, name: str = "") -> int:
        """Reserve [address, address + size) (zero-filled) at a fixed address, e.g. to map a
        code object image where its code expects its data (s_getpc-relative accesses)."""
        if size <= 0 or address < 0:
            raise ValueError(f"bad fixed allocation of {size} bytes at 0x{address:x}")
        _check_size(size, name)
        i = bisect.bisect_right(self._bases, address)
        prev = self._allocs[i - 1] if i else None
        nxt = self._allocs[i] if i < len(self._allocs) else None
        if (prev is not None and prev.base + max(prev.size, 1) > address) or \
                (nxt is not None and address + size > nxt.base):
            raise MemoryAccessError(f"fixed allocation [0x{address:x}, 0x{address + size:x}) "
                                    "overlaps a live allocation", 0, address)
        padded = max(_PAD, (size + _PAD - 1) // _PAD * _PAD)
        self._allocs.insert(i, Allocation(address, size, np.zeros(padded, np.uint8), name))
        self._bases.insert(i, address)
        # Later automatic allocations stay above every fixed one.
        self._next = max(self._next, address + size + self._guard)
        self._dirty = True
        return address

    def free(self, address: int) -> None:
        """Release the allocation starting at `address` (its addresses are never reused)."""
        i = bisect.bisect_left(self._bases, address)
        if i == len(self._bases) or self._bases[i] != address:
            raise MemoryAccessError(f"free of 0x{address:x}: not the start of an allocation",
                                    0, address)
        alloc = self._allocs.pop(i)
        self._bases.pop(i)
        self._freed.append((alloc.base, alloc.end, alloc.name))
        self._dirty = True

    def allocations(self) -> list[Allocation]:
        """The live allocations, by address."""
        return list(self._allocs)

    def find(self, address: int) -> Allocation | None:
        """The live allocation containing `address`, or None."""
        i = bisect.bisect_right(self._bases, address) - 1
        if i >= 0:
            a = self._allocs[i]
            if a.base <= address < max(a.end, a.base + 1):
                return a
        return None

    # ------------------------------------------------------------------ host access

    def _span(self, address: int, size: int) -> tuple[Allocation, int]:
        a = self.find(address)
        if a is None or address + size > a.end:
            raise MemoryAccessError(self.describe(address, size), 0, address)
        return a, address - a.base

    def write(self, address: int, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        """Copy host bytes (or an array's bytes, in C order) to device memory."""
        if isinstance(data, np.ndarray):
            # A byte view of the array (a copy only when it is not C-contiguous): a buffer
            # near the memory budget must not need a second full copy on its way in.
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        else:
            raw = np.frombuffer(data, np.uint8)
        a, off = self._span(address, raw.size)
        a.data[off:off + raw.size] = raw

    def read(self, address: int, size: int) -> bytes:
        """Copy `size` bytes of device memory to the host."""
        a, off = self._span(address, size)
        return a.data[off:off + size].tobytes()

    def view(self, address: int, dtype: np.dtype | str, count: int | None = None) -> np.ndarray:
        """A writable NumPy view of device memory (count elements; default: to the end)."""
        dt = np.dtype(dtype)
        a = self.find(address)
        if a is None:
            raise MemoryAccessError(self.describe(address, dt.itemsize), 0, address)
        off = address - a.base
        if count is None:
            count = (a.size - off) // dt.itemsize
        self._span(address, count * dt.itemsize)
        if off % dt.itemsize:
            raise ValueError(f"0x{address:x} is not aligned for {dt}")
        return a.data[off:off + count * dt.itemsize].view(dt)

    def upload(self, array: np.ndarray, *, align: int = 256, name: str = "") -> int:
        """Allocate room for `array`, copy it in and return its address."""
        arr = np.ascontiguousarray(array)
        addr = self.alloc(arr.nbytes, align=align, name=name)
        self.write(addr, arr)
        return addr

    def download(self, address: int, shape: int | tuple[int, ...], dtype) -> np.ndarray:
        """A host copy of device memory as an array of `shape` and `dtype`."""
        dt = np.dtype(dtype)
        n = int(np.prod(shape))
        raw = self.read(address, n * dt.itemsize)
        return np.frombuffer(raw, dt).reshape(shape).copy()

    def describe(self, address: int, size: int = 1) -> str:
        """Why an access of `size` bytes at `address` is invalid (for fault messages)."""
        a = self.find(address)
        if a is not None:
            name = f" '{a.name}'" if a.name else ""
            return (f"access of {size} bytes runs {address + size - a.end} bytes past the end of "
                    f"allocation{name} [0x{a.base:x}, 0x{a.end:x})")
        for base, end, name in reversed(self._freed):
            if base <= address < max(end, base + 1):
                label = f" '{name}'" if name else ""
                return f"access to freed allocation{label} [0x{base:x}, 0x{end:x})"
        i = bisect.bisect_right(self._bases, address) - 1
        if i >= 0:
            a = self._allocs[i]
            gap = address - a.end
            where = f"{gap} bytes past the end" if gap else "just past the end"
            return (f"address is not in any allocation ({where} of [0x{a.base:x}, "
                    f"0x{a.end:x}))")
        return "address is not in any allocation"

    # ------------------------------------------------------------------ lane access

    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        if self._dirty:
            self._np_bases = np.array(self._bases, np.uint64)
            self._np_ends = np.array([a.end for a in self._allocs], np.uint64)
            self._dirty = False
        return self._np_bases, self._np_ends

    def resolve(self, addrs: np.ndarray, nbytes: int) -> list[tuple[Allocation, np.ndarray | None,
                                                                   np.ndarray]]:
        """Split an access into (allocation, element indices or None for all, byte offsets).

        Raises MemoryAccessError for the first element outside every live allocation."""
        addrs = addrs.astype(np.uint64, copy=False)
        if addrs.size == 0:
            return []
        lo = int(addrs.min())
        hi = int(addrs.max())
        a = self.find(lo)
        if a is not None and hi + nbytes <= a.end:
            return [(a, None, (addrs - np.uint64(a.base)).astype(np.int64))]
        bases, ends = self._tables()
        idx = np.searchsorted(bases, addrs, side="right").astype(np.int64) - 1
        valid = idx >= 0
        idxc = np.where(valid, idx, 0)
        ok = valid & (addrs + np.uint64(nbytes) <= ends[idxc]) if bases.size else valid
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            addr = int(addrs[bad])
            raise MemoryAccessError(self.describe(addr, nbytes), bad, addr)
        out = []
        for k in np.unique(idx):
            sel = np.flatnonzero(idx == k)
            al = self._allocs[int(k)]
            out.append((al, sel, (addrs[sel] - np.uint64(al.base)).astype(np.int64)))
        return out

    def load_bytes(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Gather `nbytes` at each address: (N, nbytes) uint8."""
        out = np.empty((addrs.size, nbytes), np.uint8)
        for a, sel, off in self.resolve(addrs, nbytes):
            data = gather_bytes(a.data, off, nbytes)
            if sel is None:
                out = data
            else:
                out[sel] = data
        return out

    def load_dwords(self, addrs: np.ndarray, ndw: int) -> np.ndarray:
        """Gather `ndw` dwords at each address: (N, ndw) uint32 (unaligned allowed)."""
        out = np.empty((addrs.size, ndw), np.uint32)
        for a, sel, off in self.resolve(addrs, 4 * ndw):
            data = gather_dwords(a.data, off, ndw)
            if sel is None:
                out = data
            else:
                out[sel] = data
        return out

    def store_bytes(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """Scatter (N, nbytes) uint8 to the addresses (later elements win on overlap)."""
        nbytes = data.shape[1]
        for a, sel, off in self.resolve(addrs, nbytes):
            scatter_bytes(a.data, off, data if sel is None else data[sel])

    def store_dwords(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """Scatter (N, ndw) uint32 dwords to the addresses."""
        self.store_bytes(addrs, np.ascontiguousarray(data, np.uint32).view(np.uint8)
                         .reshape(data.shape[0], -1))


def _check_size(size: int, name: str) -> None:
    from asterism.support.limits import check_memory

    check_memory(size, f"device allocation '{name or 'unnamed'}'")


class UndoLogFull(Exception):
    """An UndoLog reached its limit (internal: the caller restores and gives up)."""


class UndoLog:
    """Stands in for a DeviceMemory and keeps the bytes every store (and atomic) overwrites,
    so `restore()` puts memory back as it was. Host access and loads are delegated.

    Past `limit` bytes kept, it raises UndoLogFull (`when_full="raise"`: the caller restores
    and gives up) or drops what it kept and stops logging (`"stop"`: `overflowed` is then
    True and the memory can no longer be restored)."""

    def __init__(self, memory: DeviceMemory, limit: int, when_full: str = "raise"):
        self._memory = memory
        self._limit = limit
        self._raise = when_full == "raise"
        self._saved: list[tuple[np.ndarray, np.ndarray]] = []
        self._bytes = 0
        self.overflowed = False

    def __getattr__(self, name: str):
        return getattr(self._memory, name)

    def _save(self, addrs: np.ndarray, nbytes: int) -> None:
        if self.overflowed:
            return
        addrs = np.array(addrs, np.uint64)
        self._bytes += addrs.size * (nbytes + 8)
        if self._bytes > self._limit:
            if self._raise:
                raise UndoLogFull(f"more than {self._limit} bytes to undo")
            self.overflowed = True
            self._saved.clear()
            return
        self._saved.append((addrs, self._memory.load_bytes(addrs, nbytes)))

    def resolve(self, addrs: np.ndarray, nbytes: int):
        """As DeviceMemory.resolve (the atomics write through it): the bytes are saved."""
        parts = self._memory.resolve(addrs, nbytes)
        self._save(addrs, nbytes)
        return parts

    def store_bytes(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """As DeviceMemory.store_bytes, saving what it overwrites (a bad address faults in
        the save as it would in the store)."""
        self._save(addrs, int(data.shape[1]))
        self._memory.store_bytes(addrs, data)

    def store_dwords(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """As DeviceMemory.store_dwords, saving what it overwrites."""
        self._save(addrs, 4 * int(data.shape[1]))
        self._memory.store_dwords(addrs, data)

    def restore(self) -> None:
        """Put back every byte saved, newest first."""
        if self.overflowed:
            raise RuntimeError("an overflowed UndoLog cannot restore the memory")
        for addrs, old in reversed(self._saved):
            self._memory.store_bytes(addrs, old)
        self._saved.clear()
        self._bytes = 0


def gather_bytes(buf: np.ndarray, off: np.ndarray, nbytes: int) -> np.ndarray:
    """(N, nbytes) uint8 from byte buffer `buf` at byte offsets `off`."""
    if nbytes == 1:
        return buf[off][:, None]
    return buf[off[:, None] + np.arange(nbytes)]


def gather_dwords(buf: np.ndarray, off: np.ndarray, ndw: int) -> np.ndarray:
    """(N, ndw) uint32 from byte buffer `buf` (length a multiple of 4) at byte offsets."""
    if not (off & 3).any():
        words = buf.view(np.uint32)
        q = off >> 2
        if ndw == 1:
            return words[q][:, None]
        return words[q[:, None] + np.arange(ndw)]
    return np.ascontiguousarray(gather_bytes(buf, off, 4 * ndw)).view(np.uint32)


def scatter_bytes(buf: np.ndarray, off: np.ndarray, data: np.ndarray) -> None:
    """Write (N, nbytes) uint8 `data` into byte buffer `buf` at byte offsets `off`."""
    nbytes = data.shape[1]
    if nbytes % 4 == 0 and not (off & 3).any():
        words = buf.view(np.uint32)
        d = np.ascontiguousarray(data).view(np.uint32)
        q = off >> 2
        if nbytes == 4:
            words[q] = d[:, 0]
        else:
            words[q[:, None] + np.arange(nbytes // 4)] = d
        return
    buf[off[:, None] + np.arange(nbytes)] = data
