"""How waves reach the CUs: which workgroups the modeled CUs get, how many fit at once
(occupancy), when their waves launch, and freeing their slots when they end.

* Workgroups go to CUs round-robin (workgroup i to CU i mod N, N = the device's CUs), as the
  dispatcher fills the device; the first `cus` CUs are modeled, the others' workgroups run
  functionally (untimed).
* Residency: a CU takes the next workgroup of its queue when every SIMD its waves go to has
  a free wave slot (slots per SIMD: the kernel's occupancy from its registers and LDS, at
  most 8), its LDS fits and fewer than the occupancy's workgroups per CU are resident. The
  waves of a workgroup go to SIMDs round-robin (continuing where the previous workgroup
  stopped), one wave launch every ``dispatch.wave_launch_interval`` cycles per CU; a wave
  tries its first instruction ``dispatch.wave_start`` cycles after its launch.
* A capture's replay places every traced wave where and when it ran (`Dispatcher` admits
  nothing more).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from asterism.errors import AsterismError
from asterism.target import occupancy as target_occupancy
from asterism.target.registers import extra_sgprs
from asterism.target.timing import TimingModel
from asterism.timing.state import Cu, ModelWave


def occupancy(target: Any, kd: Any, uses_agprs: bool, waves_per_wg: int,
              lds_size: int) -> tuple[int, int]:
    """(wave slots per SIMD, workgroups per CU) of a kernel with descriptor `kd` (the
    target's maxima if its resources cannot be read); a workgroup always fits an empty CU."""
    t = target
    try:
        total, acc = kd.next_free_vgpr(t), kd.accum_offset(t)
        agprs = max(0, total - acc) if uses_agprs else 0
        vgprs = acc if agprs else total
        sgprs = max(0, kd.sgprs(t) - extra_sgprs(t))
        occ = target_occupancy(t, vgprs=min(vgprs, t.vgpr.arch), agprs=min(agprs, t.vgpr.acc),
                               sgprs=min(sgprs, t.sgpr.addressable),
                               lds_bytes=min(lds_size, t.lds.bytes_per_workgroup),
                               waves_per_workgroup=min(waves_per_wg, t.max_waves_per_workgroup))
        per_simd, wgs = occ.waves_per_simd, occ.workgroups_per_cu
    except AsterismError:
        per_simd, wgs = t.max_waves_per_simd, t.max_workgroups_per_cu
    # A workgroup always fits an empty CU (the hardware would not launch it otherwise).
    per_simd = max(per_simd, -(-waves_per_wg // t.simds_per_cu))
    return per_simd, max(1, wgs)


def modeled_workgroups(n_wg: int, num_cus: int, cus: int) -> np.ndarray:
    """The workgroups of CUs 0..cus-1 (workgroup i runs on CU i mod num_cus), in order."""
    modeled = (np.arange(0, n_wg, num_cus)[:, None] + np.arange(cus)).ravel()
    return modeled[modeled < n_wg]


def other_workgroups(n_wg: int, num_cus: int, cus: int, per_batch: int
                     ) -> Iterator[np.ndarray]:
    """The workgroups of the CUs not modeled, `per_batch` at a time, in order (made as
    needed: a large grid is never listed whole)."""
    pending: list[np.ndarray] = []
    count = 0
    for base in range(0, n_wg, num_cus):
        ids = np.arange(base + cus, min(n_wg, base + num_cus))
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


class Dispatcher:
    """Frees the slots of ended waves; admits nothing (every wave is resident from the
    start, at its recorded place: a capture's replay). `alive`: group -> waves holding a
    slot."""

    def __init__(self, alive: dict[int, int], lds_size: int = 0) -> None:
        self.alive = alive
        self.lds_size = lds_size

    def release(self, cu: Cu, now: int) -> int:
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

    def admit(self, cu: Cu, now: int) -> None:
        """Launch the waves that reach `cu` by `now`."""


class QueueDispatcher(Dispatcher):
    """Each CU launches the workgroups of its queue as they fit (see the module docstring)."""

    def __init__(self, tm: TimingModel, target: Any, alive: dict[int, int], lds_size: int,
                 workgroups_per_cu: int) -> None:
        super().__init__(alive, lds_size)
        self.interval = tm.dispatch["wave_launch_interval"]
        self.start = tm.dispatch["wave_start"]
        self.lds_per_cu = target.lds.bytes_per_cu
        self.workgroups_per_cu = workgroups_per_cu
        self.order = 0  # launch order of the next wave

    def admit(self, cu: Cu, now: int) -> None:
        """Launch the workgroups at the head of the CU's queue that fit by `now`."""
        while cu.queue:
            wg = cu.queue[0]
            if cu.workgroups >= self.workgroups_per_cu or \
                    cu.lds_used + self.lds_size > self.lds_per_cu:
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
                self._launch(cu, w, now)

    def _launch(self, cu: Cu, w: ModelWave, now: int) -> None:
        s = cu.next_simd
        cu.next_simd = (cu.next_simd + 1) % cu.simds
        slot = cu.slots[s].index(None)
        cu.slots[s][slot] = w
        w.cu, w.simd, w.slot = cu.index, s, slot
        w.wv = cu.occupants.get((s, slot), 0)
        cu.occupants[(s, slot)] = w.wv + 1
        w.begin = max(now, cu.last_launch + self.interval)
        cu.last_launch = w.begin
        w.ready = w.begin + self.start
        w.state = "run"
        w.order = self.order
        self.order += 1
        cu.resident[s].append(w)


__all__ = ["Dispatcher", "QueueDispatcher", "modeled_workgroups", "occupancy",
           "other_workgroups"]
