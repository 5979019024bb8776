"""Wave state: groups of waves that share a program counter, as NumPy arrays.

A `Group` holds n waves that execute the same instruction together:

* `v`: VGPRs and AGPRs, shape (registers, n, 64) uint32. AGPR a[i] lives at row
  `agpr_base + i`; v[i] at row i. One register across all waves is a contiguous (n, 64) slab.
* `s`: SGPRs, shape (n, 128) uint32, indexed by the hardware's scalar operand codes: s0..s101,
  flat_scratch 102-103, xnack_mask 104-105, vcc 106-107, ttmp0-15 108-123, m0 124,
  exec 126-127. `s64` is the same memory viewed as (n, 64) uint64 register pairs.
* `scc`: (n,) bool. `exec`: the EXEC mask unpacked to (n, 64) bool (kept in sync with
  s[126:128]); `exec_full` is True when every lane of every wave is active (a fast path).

Register keys (ints) name single 32-bit registers for the sanitizer and hazard checker:
v[i] -> i, a[i] -> 256 + i, s[j] -> 1024 + j (so vcc_lo is 1130), scc -> 1200.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from asterism.target.hazards import KEY_AGPR, KEY_SGPR, register_key_name

if TYPE_CHECKING:
    from asterism.emu.memory import DeviceMemory

SGPR_FILE = 128
VCC = 106
M0 = 124
EXEC = 126
FLAT_SCRATCH = 102
XNACK_MASK = 104
TTMP = 108


LANES = 64
LANE_IDS = np.arange(LANES, dtype=np.uint32)
_BIT = np.uint64(1) << np.arange(LANES, dtype=np.uint64)

# Next-instruction codes an op returns besides an instruction index.
END = -1  # every wave of the group executed s_endpgm
BARRIER = -2  # the group arrived at s_barrier
SPLIT = -3  # waves disagree on the next instruction: see Group.split_to


def mask_to_bits(mask: np.ndarray) -> np.ndarray:
    """(n, 64) bool lane masks -> (n,) uint64."""
    return np.packbits(mask, axis=1, bitorder="little").view(np.uint64)[:, 0]


def bits_to_mask(bits: np.ndarray) -> np.ndarray:
    """(n,) uint64 -> (n, 64) bool lane masks."""
    b = np.ascontiguousarray(bits, np.uint64).view(np.uint8).reshape(-1, 8)
    return np.unpackbits(b, axis=1, bitorder="little").astype(bool)


def reg_keys(kind: str, index: int, count: int) -> range:
    """The register keys of a register range (see the module docstring)."""
    base = {"v": 0, "a": KEY_AGPR, "s": KEY_SGPR, "ttmp": KEY_SGPR + TTMP}[kind]
    return range(base + index, base + index + count)


key_name = register_key_name


def keys_text(keys) -> str:
    """Compact register list text, e.g. 'v[4:7]' or 'v5, s2'."""
    ks = sorted(keys)
    out = []
    i = 0
    while i < len(ks):
        j = i
        while j + 1 < len(ks) and ks[j + 1] == ks[j] + 1 and _same_file(ks[i], ks[j + 1]):
            j += 1
        first = key_name(ks[i])
        if j == i:
            out.append(first)
        else:
            prefix = first.rstrip("0123456789")
            if prefix in ("v", "a", "s", "ttmp"):
                out.append(f"{prefix}[{first[len(prefix):]}:{key_name(ks[j])[len(prefix):]}]")
            else:
                out.extend(key_name(k) for k in ks[i:j + 1])
        i = j + 1
    return ", ".join(out)


def _same_file(a: int, b: int) -> bool:
    def f(k: int) -> int:
        return 0 if k < KEY_AGPR else 1 if k < KEY_SGPR else 2
    return f(a) == f(b)


@dataclass
class LaunchInfo:
    """Per-dispatch facts shared by every group (the ops read them through `Group.ctx`)."""

    kernel: str
    target: str
    memory: DeviceMemory
    lds: np.ndarray  # (workgroup slots, lds bytes) uint8
    lds_size: int  # bytes each workgroup may address
    private: np.ndarray | None  # (waves, 64, private bytes) uint8 scratch
    private_size: int
    wg_ids: np.ndarray  # (waves,) x, y, z workgroup id rows: (waves, 3)
    wave_in_wg: np.ndarray  # (waves,) index of the wave inside its workgroup
    wg_slot: np.ndarray  # (waves,) LDS row of the wave's workgroup
    code_base: int  # address of instruction index 0
    shared_base: int  # flat aperture of LDS
    private_base: int  # flat aperture of scratch
    options: Any = None
    cycle: int = 0  # a monotonic counter for s_memtime / s_memrealtime
    sanitizer: Any = None  # per-dispatch sanitizer state (LDS DMA ranges...)
    # fn(kind, mask, addr, nbytes) told of every LDS access (kind "load", "store" or "atomic";
    # the (n, 64) active-lane mask and per-lane byte addresses): the timing model's bank model
    lds_observer: Any = None
    # fn(info, mask, addr, nbytes) told of every global-memory store (the (n, 64) active-lane
    # mask, the per-lane byte addresses, the bytes each lane writes): the timing model counts
    # a store's write requests per clock group of lanes, so it needs the lanes, not only the
    # addresses the memory sees
    store_observer: Any = None
    dispatch_ptr: int = 0
    mode_default: int = 0
    stats: dict = field(default_factory=dict)


class Group:
    """Waves that share a program counter (see the module docstring)."""

    __slots__ = (
        "agpr_base",
        "ctx",
        "exec",
        "exec_full",
        "hz",
        "idx",
        "lds_rows",
        "mode",
        "n",
        "priv_rows",
        "s",
        "s64",
        "scc",
        "split_to",
        "status",
        "steps",
        "tracker",
        "trap",
        "v",
        "waves",
    )

    def __init__(self, ctx: LaunchInfo, waves: np.ndarray, v: np.ndarray, s: np.ndarray,
                 scc: np.ndarray, exec_mask: np.ndarray, idx: int, agpr_base: int,
                 mode: int):
        self.ctx = ctx
        self.waves = waves
        self.n = int(waves.size)
        self.v = v
        self.s = s
        self.s64 = s.view(np.uint64)
        self.scc = scc
        self.exec = exec_mask
        self.exec_full = bool(exec_mask.all())
        self.idx = idx
        self.agpr_base = agpr_base
        self.mode = int(mode)  # MODE register (kept uniform across the group's waves)
        self.split_to: np.ndarray | None = None
        self.steps = 0
        self.tracker = None
        self.hz = None
        self.status = "run"
        self.trap = None
        self.lds_rows = ctx.wg_slot[waves]
        self.priv_rows = waves

    # ------------------------------------------------------------------ exec

    def set_exec_bits(self, bits: np.ndarray) -> None:
        """Write EXEC from (n,) uint64 and refresh the lane mask."""
        self.s64[:, EXEC // 2] = bits
        self.exec = bits_to_mask(self.s64[:, EXEC // 2])
        self.exec_full = bool(self.exec.all())

    def set_exec_mask(self, mask: np.ndarray) -> None:
        """Write EXEC from an (n, 64) bool mask."""
        self.exec = np.ascontiguousarray(mask, bool)
        self.s64[:, EXEC // 2] = mask_to_bits(self.exec)
        self.exec_full = bool(self.exec.all())

    def refresh_exec(self) -> None:
        """Recompute the lane mask after s[126:127] were written directly."""
        self.exec = bits_to_mask(self.s64[:, EXEC // 2])
        self.exec_full = bool(self.exec.all())

    # ------------------------------------------------------------------ split / merge

    def take(self, sel: np.ndarray) -> Group:
        """A new group with the waves at positions `sel` (copies of their state)."""
        g = Group.__new__(Group)
        g.ctx = self.ctx
        g.waves = self.waves[sel]
        g.n = int(g.waves.size)
        g.v = np.ascontiguousarray(self.v[:, sel])
        g.s = np.ascontiguousarray(self.s[sel])
        g.s64 = g.s.view(np.uint64)
        g.scc = self.scc[sel].copy()
        g.exec = np.ascontiguousarray(self.exec[sel])
        g.exec_full = bool(g.exec.all())
        g.idx = self.idx
        g.agpr_base = self.agpr_base
        g.mode = self.mode
        g.split_to = None
        g.steps = self.steps
        g.tracker = self.tracker.copy() if self.tracker is not None else None
        g.hz = self.hz.copy() if self.hz is not None else None
        g.status = self.status
        g.trap = None
        g.lds_rows = self.lds_rows[sel]
        g.priv_rows = self.priv_rows[sel]
        return g

    def absorb(self, other: Group) -> None:
        """Append `other`'s waves to this group (same idx and status)."""
        self.waves = np.concatenate([self.waves, other.waves])
        self.n = int(self.waves.size)
        self.v = np.concatenate([self.v, other.v], axis=1)
        self.s = np.concatenate([self.s, other.s], axis=0)
        self.s64 = self.s.view(np.uint64)
        self.scc = np.concatenate([self.scc, other.scc])
        self.exec = np.concatenate([self.exec, other.exec])
        self.exec_full = self.exec_full and other.exec_full
        self.steps = max(self.steps, other.steps)
        if self.hz is not None and other.hz is not None:
            self.hz.merge(other.hz)
        self.lds_rows = np.concatenate([self.lds_rows, other.lds_rows])
        self.priv_rows = np.concatenate([self.priv_rows, other.priv_rows])
