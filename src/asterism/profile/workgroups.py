"""Which traced waves of a capture belong to one workgroup (inferred: a capture does not say).

rocprofv3's ATT decoder gives each traced wave its SE, CU, SIMD, slot, the count of waves
that used that slot before (``wv``), its begin and end, and its instruction records; the
occupancy events carry the same place and a time. No record carries a workgroup id (the
decoder's ``rocprofiler_thread_trace_decoder_wave_t`` and ``..._occupancy_t`` have none).
Two facts of the hardware let the workgroups be recovered (llvm/docs/
AMDGPUExecutionSynchronization.rst: one barrier per workgroup, expecting every wave of it that
has not ended; the waves of a workgroup go to one CU and are launched together):

* **Barrier releases** (decisive when the waves execute ``s_barrier``): the waves of one
  workgroup leave each barrier at the same time, within an issue cycle per SIMD (the
  vendored captures: within 4 cycles; waves of different workgroups do not). Waves of one CU
  whose k-th ``s_barrier`` ends (time + duration) within ``RELEASE_SKEW`` cycles of each
  other for every barrier both executed are one workgroup; a wave that executed fewer
  barriers than its group must have ended before the group's next release (an ended wave
  drops out of the barrier), and every wave of a group launched before its first release
  (a barrier cannot complete before all waves of its workgroup have launched), or it is not
  of that group.
* **Launch bursts** (for waves that execute no barrier, where the grouping changes nothing
  for the model but is reported): waves of one CU launched within ``LAUNCH_GAP`` cycles of
  the previous launch form a burst; a barrier-free wave joins the one barrier group of its
  burst that it could belong to (it ended before that group's first release), else the
  barrier-free waves of a burst form a workgroup of their own.

Waves the capture did not trace (a SIMD left out of the trace) cannot be seen: a barrier
group then holds only the traced waves of its workgroup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from asterism.profile.att import Wave

# [att] flash_attn_func_small: the 4 waves of each traced CU leave each of their 12 (20)
# barriers within 4 cycles of each other; two issue cycles of slack.
RELEASE_SKEW = 8
# [att] both vendored captures: a workgroup's waves start 0-8 cycles apart on the CU
# (occupancy.json); target/data/timing.toml dispatch.wave_launch_interval.
LAUNCH_GAP = 16

BY_BARRIERS = "barrier releases"
BY_LAUNCH = "launch burst"


@dataclass(frozen=True)
class WorkgroupGuess:
    """One inferred workgroup: its CU (SE, CU), its waves (indices into the wave list, by
    launch), and what the grouping rests on (BY_BARRIERS or BY_LAUNCH)."""

    se: int
    cu: int
    waves: tuple[int, ...]
    evidence: str


def barrier_releases(wave: Wave, barrier_lines: set[int]) -> list[int]:
    """When the wave left each of its s_barrier instructions (record time + duration)."""
    return [r.time + r.duration for r in wave.instructions if r.line in barrier_lines]


class _Group:
    """A workgroup being inferred: its members and the release times of its barriers."""

    def __init__(self, index: int, wave: Wave, releases: list[int]) -> None:
        self.members = [index]
        self.ends = [wave.end]
        self.counts = [len(releases)]
        self.releases = list(releases)

    def admits(self, wave: Wave, releases: list[int]) -> bool:
        """Whether the wave can be of this group (see the module docstring)."""
        if self.releases and wave.begin > self.releases[0] + RELEASE_SKEW:
            return False  # launched after the group's first barrier completed
        common = min(len(releases), len(self.releases))
        if any(abs(a - b) > RELEASE_SKEW for a, b in zip(releases[:common],
                                                        self.releases[:common],
                                                        strict=True)):
            return False
        if not releases and not self.releases:
            return True
        # A wave that executed fewer barriers than the group has dropped out: it ended
        # before the next release; a longer newcomer makes the same demand of the members.
        if len(releases) < len(self.releases) and \
                wave.end > self.releases[len(releases)] + RELEASE_SKEW:
            return False
        return all(end <= releases[count] + RELEASE_SKEW
                   for end, count in zip(self.ends, self.counts, strict=True)
                   if count < len(releases))

    def add(self, index: int, wave: Wave, releases: list[int]) -> None:
        """Make the wave a member."""
        self.members.append(index)
        self.ends.append(wave.end)
        self.counts.append(len(releases))
        if len(releases) > len(self.releases):
            self.releases = list(releases)


def _bursts(order: list[int], waves: Sequence[Wave]) -> list[int]:
    """Burst number of each wave of `order` (sorted by begin): a new burst starts after a
    gap of more than LAUNCH_GAP cycles."""
    out, burst, prev = [], 0, None
    for i in order:
        if prev is not None and waves[i].begin - prev > LAUNCH_GAP:
            burst += 1
        out.append(burst)
        prev = waves[i].begin
    return out


def _by_releases(order: list[int], waves: Sequence[Wave],
                 releases: dict[int, list[int]]) -> list[_Group]:
    """The workgroups of the waves of one CU that passed a barrier (`order`: by launch)."""
    groups: list[_Group] = []
    open_groups: list[_Group] = []  # those a wave launched from now on may still join
    for i in order:
        if not releases[i]:
            continue
        # (waves come by launch: a group whose first barrier completed is closed)
        open_groups = [g for g in open_groups if waves[i].begin <= g.releases[0] + RELEASE_SKEW]
        home = next((g for g in open_groups if g.admits(waves[i], releases[i])), None)
        if home is None:
            groups.append(_Group(i, waves[i], releases[i]))
            open_groups.append(groups[-1])
        else:
            home.add(i, waves[i], releases[i])
    return groups


def _by_launch(order: list[int], waves: Sequence[Wave], releases: dict[int, list[int]],
               groups: list[_Group]) -> list[_Group]:
    """The barrier-free waves of one CU put into the barrier `groups` or into groups of
    their own launch bursts; returns the new groups."""
    burst_of = dict(zip(order, _bursts(order, waves), strict=True))
    in_burst: dict[int, list[_Group]] = {}  # burst -> the barrier groups launched in it
    for g in groups:
        for b in sorted({burst_of[m] for m in g.members}):
            in_burst.setdefault(b, []).append(g)
    plain: dict[int, _Group] = {}  # burst -> the barrier-free waves of no barrier group
    for i in order:
        if releases[i]:
            continue
        burst = burst_of[i]
        fits = [g for g in in_burst.get(burst, []) if g.admits(waves[i], [])]
        if len(fits) == 1:
            fits[0].add(i, waves[i], [])
        elif burst in plain:
            plain[burst].add(i, waves[i], [])
        else:
            plain[burst] = _Group(i, waves[i], [])
    return list(plain.values())


def infer_workgroups(waves: Sequence[Wave], barrier_lines: set[int]) -> list[WorkgroupGuess]:
    """The workgroups of the traced waves (see the module docstring), per CU in launch
    order; `barrier_lines`: the code.json lines that are s_barrier."""
    by_cu: dict[tuple[int, int], list[int]] = {}
    for i, w in enumerate(waves):
        by_cu.setdefault((w.se, w.cu), []).append(i)
    out: list[WorkgroupGuess] = []
    for (se, cu), members in by_cu.items():
        order = sorted(members, key=lambda i: (waves[i].begin, i))
        releases = {i: barrier_releases(waves[i], barrier_lines) for i in order}
        groups = _by_releases(order, waves, releases)
        groups += _by_launch(order, waves, releases, groups)
        for g in sorted(groups, key=lambda g: min(waves[m].begin for m in g.members)):
            mem = tuple(sorted(g.members, key=lambda i: (waves[i].begin, i)))
            out.append(WorkgroupGuess(se, cu, mem, BY_BARRIERS if g.releases else BY_LAUNCH))
    return out


__all__ = ["BY_BARRIERS", "BY_LAUNCH", "LAUNCH_GAP", "RELEASE_SKEW", "WorkgroupGuess",
           "barrier_releases", "infer_workgroups"]
