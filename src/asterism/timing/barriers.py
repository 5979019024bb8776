"""s_barrier: one barrier per workgroup. A wave that reaches it waits until every wave of
its workgroup that has not ended has arrived; they all go on ``dispatch.barrier`` cycles after
the last arrival (rounded up to the issue-cycle grid). Workgroups that share a CU do not wait
for each other (llvm/docs/AMDGPUExecutionSynchronization.rst: one barrier object per
workgroup, expecting its waves; an ended wave drops out). The group is the workgroup in the
functional model; in a capture's replay, the workgroup its reader inferred
(asterism.profile.workgroups: a capture carries no workgroup ids). Each wave records the
barrier as one WAIT from its arrival.
"""

from __future__ import annotations

from asterism.target.timing import TimingModel
from asterism.timing.result import CAT_IMMED, WAIT
from asterism.timing.state import ModelWave, round_up


class Barriers:
    """The barrier state of the groups of a model run (`running`: group -> waves of the
    group that have not ended, kept up to date by the engine)."""

    def __init__(self, tm: TimingModel, running: dict[int, int]) -> None:
        self.issue_cycles = tm.issue_cycles
        self.delay = tm.dispatch["barrier"]
        self.running = running
        self.arrived: dict[int, list[ModelWave]] = {g: [] for g in running}

    def arrive(self, w: ModelWave, now: int, index: int) -> None:
        """The wave reached the s_barrier at instruction `index` at `now`."""
        w.state = "barrier"
        w.arrive = now
        w.barrier_index = index
        self.arrived[w.wg].append(w)
        self.release(w.wg, now)

    def release(self, group: int, now: int) -> None:
        """Let the group's waiting waves go if every running wave of it has arrived."""
        waiting = self.arrived[group]
        if not waiting or len(waiting) < self.running[group]:
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
