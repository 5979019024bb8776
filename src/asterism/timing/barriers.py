"""s_barrier: one barrier per workgroup. A wave that reaches it waits until every wave of
its workgroup that has not ended has arrived; they all go on ``dispatch.barrier`` cycles after
the last arrival (rounded up to the issue-cycle grid). Workgroups that share a CU do not wait
for each other (llvm/docs/AMDGPUExecutionSynchronization.rst: one barrier object per
workgroup, expecting its waves; an ended wave drops out). The group is the workgroup in the
functional model; in a capture's replay, the workgroup its reader inferred
(asterism.profile.workgroups: a capture carries no workgroup ids). Each wave records the
barrier as one WAIT from its arrival.

``per_cu=True`` (TimingOptions.off "wg_barriers") is the model before issue 23: one barrier
for every wave resident on a CU, whatever its workgroup (a wave counts from its launch on
the CU until it ends; waves still queued do not). It is not the hardware's rule; it is kept
to measure what per-workgroup barriers change on a CU that holds several workgroups.
"""

from __future__ import annotations

from collections.abc import Sequence

from asterism.target.timing import TimingModel
from asterism.timing.result import CAT_IMMED, WAIT
from asterism.timing.state import Cu, ModelWave, round_up


class Barriers:
    """The barrier state of the groups of a model run (`running`: workgroup -> waves of it
    that have not ended, kept up to date by the engine); `per_cu`: one group per CU (see
    the module docstring; `bind` names the CUs)."""

    def __init__(self, tm: TimingModel, running: dict[int, int], per_cu: bool = False
                 ) -> None:
        self.issue_cycles = tm.issue_cycles
        self.delay = tm.dispatch["barrier"]
        self.running = running
        self.per_cu = per_cu
        self.cus: dict[int, Cu] = {}
        self.arrived: dict[int, list[ModelWave]] = {} if per_cu else {g: [] for g in running}

    def bind(self, cus: Sequence[Cu]) -> None:
        """The modeled CUs (per-CU groups count the waves resident on them)."""
        self.cus = {cu.index: cu for cu in cus}
        if self.per_cu:
            self.arrived = {cu.index: [] for cu in cus}

    def group(self, w: ModelWave) -> int:
        """The barrier group of a wave: its workgroup, or its CU (per_cu)."""
        return w.cu if self.per_cu else w.wg

    def expected(self, group: int) -> int:
        """How many waves the group's barrier waits for: its waves that have not ended."""
        if not self.per_cu:
            return self.running[group]
        cu = self.cus[group]
        return sum(1 for s in range(cu.simds) for w in cu.resident[s] if w.state != "done")

    def arrive(self, w: ModelWave, now: int, index: int) -> None:
        """The wave reached the s_barrier at instruction `index` at `now`."""
        w.state = "barrier"
        w.arrive = now
        w.barrier_index = index
        group = self.group(w)
        self.arrived[group].append(w)
        self.release(group, now)

    def ended(self, w: ModelWave, now: int) -> None:
        """The wave ended (the engine has counted it out): its group's barrier may go."""
        self.release(self.group(w), now)

    def release(self, group: int, now: int) -> None:
        """Let the group's waiting waves go if every running wave of it has arrived."""
        waiting = self.arrived[group]
        if not waiting or len(waiting) < self.expected(group):
            return
        q = self.issue_cycles
        release = round_up(now + self.delay, q)
        for w in waiting:
            cycles = max(q, release - w.arrive)
            w.records.append((w.arrive, CAT_IMMED, cycles, cycles, w.barrier_index + 1))
            w.barriers += 1
            w.barrier_stall += cycles
            w.stall_states.append(WAIT)
            w.ready = w.arrive + cycles
            w.state = "run"
        self.arrived[group] = []

    def waiting(self, group: int) -> int:
        """How many waves of the group wait at a barrier now."""
        return len(self.arrived[group])


__all__ = ["Barriers"]
