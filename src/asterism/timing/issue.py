"""The issue engine: issue cycles, issue ports, register dependencies, execution units, and
the order in which waves try their instructions. Modeled, not measured.

Time advances in issue cycles of ``issue_cycles`` (4) clocks, all SIMDs aligned (a
capture's timestamps are all multiples of 4). In each, every SIMD issues at most one
instruction per wave and one per issue port (``[issue]``: VALU incl. MFMA, scalar = SALU +
SMEM, LDS, VMEM, branch), oldest wave first; waves issue in order. An instruction issues when
its source registers are ready and its execution unit is free (the SIMD's waves try in
arbitration order: priority.py, s_setprio then age): per SIMD (valu, xdl, salu,
smem, branch: busy for the instruction's static occupancy) or per CU (lds, vmem: busy for
what the LDS or memory mechanism says the instruction costs), and a DS instruction's SIMD-pair
LDS port too (lds.py). Memory results are not
interlocked (the program waits with s_waitcnt, as on the hardware).

The engine knows no mechanism's internals; it asks them:
* `memory` (memory.py: LineMemory or StreamMemory): `latency` of a memory instruction's
  counter entries, `accepted` (when the vector memory path takes it), `cost` (how long the
  CU's vector memory path is busy); memory.py's `queue`, `wait`, `outstanding` keep the
  counters;
* `lds` (lds.py): `cost` of a DS instruction on the CU's LDS;
* mfma.py: `issued`, `drained` (when the last MFMA result is written); `coexec`
  (mfma.CoExec): `earliest` a packed-FP32 / DOT VALU or a DS / vector memory instruction
  may issue after its SIMD's MFMA;
* `barriers` (barriers.py): `arrive`, `release`;
* `dispatch` (dispatch.py): `admit` waves to a CU, `release` the slots of ended waves;
* `valu` (valu.py): `earliest` a VALU's result reaches a non-VALU reader, `issued`;
* `icache` (icache.py): `branched` (when a taken branch's target may be tried: its
  instruction line fetched, or a miss), `executed` (sequential fetch).

A driver subclass says where each wave's next instruction comes from (`_advance`, `_taken`,
`_past_end`, `_before_issue`, `_after_issue`): the emulator's functional execution
(functional.py) or a capture's recorded instruction stream (replay.py).

Records follow the ATT decoder's conventions (asterism/timing/result.py): ``time`` is when
the wave first tried the instruction, ``stall`` until it issued, ``duration`` = stall + issue
cycles; s_waitcnt, s_nop and s_barrier count as stall for their whole duration. ``s_nop N``
takes N + 1 issue cycles, ``s_sleep N`` 64 N clocks, a taken branch ``dispatch.taken_branch``
extra cycles (instruction fetch), or ``dispatch.icache_miss`` when its target's instruction
line is not fetched yet (icache.py); ``s_endpgm`` ends the wave after ``dispatch.endpgm`` cycles
or when its outstanding memory and MFMA results are done.
"""

from __future__ import annotations

from typing import Any

from asterism.emu.errors import DeadlockError, EmulatorError
from asterism.target.timing import TimingModel
from asterism.timing import memory, mfma
from asterism.timing.barriers import Barriers
from asterism.timing.dispatch import Dispatcher
from asterism.timing.icache import InstructionCache
from asterism.timing.lds import Lds
from asterism.timing.priority import issue_order
from asterism.timing.result import CAT_IMMED, CAT_JUMP, CAT_NEXT, STALL, WAIT
from asterism.timing.state import NEVER, Cu, ModelWave, round_up
from asterism.timing.static import Static
from asterism.timing.valu import ValuPaths

# Execution units shared by the SIMDs of a CU (the others are per SIMD).
CU_UNITS = ("lds", "vmem")


class IssueModel:
    """The model's core, for the functional timed run and for trace replay alike (see the
    module docstring); a driver subclass sets the mechanisms and the instruction source."""

    tm: TimingModel
    target: Any
    statics: list[Static]
    kernel: str = ""
    memory: Any  # memory.LineMemory or memory.StreamMemory
    lds: Lds
    barriers: Barriers
    dispatch: Dispatcher
    valu: ValuPaths
    icache: InstructionCache
    coexec: mfma.CoExec
    running: dict[int, int]  # barrier group -> waves of it that have not ended
    priorities: bool = True  # s_setprio orders the arbitration (priority.py)

    # ------------------------------------------------------------------ driver hooks

    def _advance(self, w: ModelWave) -> int:
        """Move the wave to its next instruction; returns END, BARRIER or the next index."""
        raise NotImplementedError

    def _taken(self, w: ModelWave, index: int, nxt: int) -> bool:
        """Whether the branch at `index` went somewhere other than the next instruction."""
        raise NotImplementedError

    def _past_end(self, w: ModelWave, now: int) -> None:
        """The wave ran past its last instruction (functional: the op raises)."""
        self._advance(w)

    def _before_issue(self, w: ModelWave) -> None:
        """Called just before an issuing instruction runs (functional: reset the recorder)."""

    def _after_issue(self, w: ModelWave, st: Static, now: int) -> None:
        """Called after an instruction issued (functional: s_memtime's clock value)."""

    def _deadlock_error(self, w: ModelWave | None) -> EmulatorError:
        """The error for a model that cannot progress (`w`: a wave stuck at a barrier)."""
        if w is not None:
            group = self.barriers.group(w)
            return DeadlockError("waves wait at s_barrier but the other waves of their "
                                 f"workgroup can never arrive ({self.barriers.waiting(group)} "
                                 f"of {self.barriers.expected(group)} arrived)",
                                 kernel=self.kernel)
        return DeadlockError("the timing model cannot make progress (no wave can issue)",
                             kernel=self.kernel)

    # ------------------------------------------------------------------ the model

    def _loop(self, cus: list[Cu], waves: list[ModelWave]) -> None:
        q = self.tm.issue_cycles
        dispatch = self.dispatch
        now = 0
        left = len(waves)
        while left:
            for cu in cus:
                left -= dispatch.release(cu, now)
                dispatch.admit(cu, now)
            if not left:
                break
            for cu in cus:
                for s in range(cu.simds):
                    used: set[str] = set()
                    for w in (issue_order(cu.resident[s]) if self.priorities
                              else list(cu.resident[s])):
                        if w.state == "run" and w.ready <= now:
                            self._step(cu, w, now, used)
            nxt = NEVER
            for cu in cus:
                for s in range(cu.simds):
                    for w in cu.resident[s]:
                        if w.state == "run":
                            nxt = min(nxt, self._earliest(cu, w))
                        elif w.state == "done" and not w.released:
                            nxt = min(nxt, w.end)
            if nxt >= NEVER:
                stuck = next((w for cu in cus for s in range(cu.simds)
                              for w in cu.resident[s] if w.state == "barrier"), None)
                raise self._deadlock_error(stuck)
            now = max(now + q, round_up(nxt, q))

    @staticmethod
    def _unit_free(cu: Cu, w: ModelWave, unit: str | None) -> int:
        if unit is None:
            return 0
        if unit in CU_UNITS:
            return cu.units.get(unit, 0)
        return cu.simd_units[w.simd].get(unit, 0)

    def _deps(self, w: ModelWave, st: Static) -> int:
        """When the registers the wave's current instruction `st` reads are ready (cached
        until the wave moves on or writes registers)."""
        key = (w.idx, w.regs_version)
        if w.deps_key == key and self.statics[w.idx] is st:
            return w.deps_t
        t = self._reg_deps(w, st)
        w.deps_key, w.deps_t = key, t
        return t

    @staticmethod
    def _reg_deps(w: ModelWave, st: Static) -> int:
        t = 0
        regs = w.regs
        for k in st.uses:
            r = regs.get(k)
            if r is not None and r[0] > t:
                t = r[0]
        for k in st.srcc:
            r = regs.get(k)
            if r is not None and r[1] > t:
                t = r[1]
        return t

    def _earliest(self, cu: Cu, w: ModelWave) -> int:
        # max(ready, register deps, unit free, memory accepts), written out: the model's
        # innermost call (every running wave, every step)
        idx = w.idx
        statics = self.statics
        if idx >= len(statics):
            return w.ready
        st = statics[idx]
        if st.port is None:
            return w.ready
        t = w.ready
        d = w.deps_t if w.deps_key == (idx, w.regs_version) else self._deps(w, st)
        if d > t:
            t = d
        unit = st.unit
        if unit is not None:
            f = (cu.units if unit in CU_UNITS else cu.simd_units[w.simd]).get(unit, 0)
            if f > t:
                t = f
            if st.lds_port:
                f = self.lds.port_free(cu, w, st)
                if f > t:
                    t = f
        a = self.memory.accepted(w, st)
        if a > t:
            t = a
        a = self.coexec.earliest(w, st)
        if a > t:
            t = a
        v = self.valu.earliest(w, idx)
        return v if v > t else t

    def _step(self, cu: Cu, w: ModelWave, now: int, used: set[str]) -> None:
        index = w.idx
        if index >= len(self.statics):
            self._past_end(w, now)
            return
        st = self.statics[index]
        kind = st.kind
        q = self.tm.issue_cycles
        if kind == "waitcnt":
            done = memory.wait(w, st.wait)
            self._advance(w)
            self._record(w, index, CAT_IMMED, max(q, round_up(done, q) - w.ready), WAIT)
            return
        if kind == "nop":
            if st.prio >= 0 and self.priorities:
                w.prio = st.prio  # s_setprio (priority.py)
                w.prio_max = max(w.prio_max, st.prio)
            self._advance(w)
            self._record(w, index, st.category, st.cycles, STALL)
            return
        if kind == "barrier":
            self._advance(w)
            self.barriers.arrive(w, now, index)
            return
        if st.port is not None:
            # (any of them later than now blocks the issue: ask no further)
            if self._deps(w, st) > now or self._unit_free(cu, w, st.unit) > now or \
                    self.memory.accepted(w, st) > now or self.valu.earliest(w, index) > now or \
                    (st.lds_port and self.lds.port_free(cu, w, st) > now) or \
                    self.coexec.earliest(w, st) > now:
                return
            if st.port in used:
                return  # an older wave of this SIMD took the port in this issue cycle
            used.add(st.port)
            if self.valu.on:
                self.valu.held(w, index, max(w.ready, self._deps(w, st),
                                             self._unit_free(cu, w, st.unit),
                                             self.memory.accepted(w, st),
                                             self.coexec.earliest(w, st)))
            self.coexec.held(w, st, max(w.ready, self._deps(w, st),
                                        self._unit_free(cu, w, st.unit),
                                        self.memory.accepted(w, st),
                                        self.valu.earliest(w, index)))
        start = w.ready
        if st.port is not None and self.valu.on:
            # [att] a wait for a VALU result path (valu.py) shows in the captures as an idle
            # gap before the record's time, not as stall: the record starts when the path
            # lets the instruction go (see valu.py)
            start = max(start, min(self.valu.earliest(w, index), now))
        self._before_issue(w)
        nxt = self._advance(w)
        category = st.category
        issue = st.issue or q
        if kind == "endpgm":
            drain = max(mfma.drained(w), memory.outstanding(w))
            issue = max(self.tm.dispatch["endpgm"], drain - now)
        elif kind == "branch":
            taken = st.taken_always or self._taken(w, index, nxt)
            category = CAT_JUMP if taken else CAT_NEXT
        unit = st.unit
        if unit is not None:
            if unit == "lds":
                cu.units[unit] = now + self.lds.cost(w, st, now)
                self.lds.take_port(cu, w, st, now)
            elif unit == "vmem":
                cu.units[unit] = now + self.memory.cost(w, st, now)
            else:
                cu.simd_units[w.simd][unit] = now + st.occupancy
        if st.defs:
            w.regs_version += 1
        for k in st.defs:
            w.regs[k] = (now + st.ready, now + st.ready_srcc)
        if st.xdl_result:
            mfma.issued(w, st, now)
            # its SIMD's VALU takes the next instruction mfma.valu_hold after this issue
            valu = cu.simd_units[w.simd]
            valu["valu"] = max(valu.get("valu", 0), now + self.tm.mfma.valu_hold)
            self.coexec.issued(w, st, now, self.tm.mfma.valu_hold)
        self.valu.issued(w, index, now)
        self._after_issue(w, st, now)
        if st.streams:
            memory.queue(w, st.streams, now + self.memory.latency(w, st, now))
        w.records.append((start, category, now - start, now - start + issue, index + 1))
        w.stall_states.append(STALL)
        w.ready = now + issue
        if category == CAT_JUMP:
            # the branch target's instruction line: fetched already, or a miss (icache.py)
            w.ready = self.icache.branched(w, w.idx, w.ready)
        elif self.icache.on:
            self.icache.executed(w, index)
        if kind == "endpgm":
            self._end(w, now)

    def _end(self, w: ModelWave, now: int) -> None:
        """The wave ended (its end is when it is ready again): its group's barrier may go."""
        w.state = "done"
        w.end = w.ready
        self.running[w.wg] -= 1
        self.barriers.ended(w, now)

    def _record(self, w: ModelWave, index: int, category: int, cycles: int,
                state: int) -> None:
        """Record an instruction the wave spent `cycles` on without issuing (stall only)."""
        w.records.append((w.ready, category, cycles, cycles, index + 1))
        w.stall_states.append(state)
        w.ready += cycles


__all__ = ["CU_UNITS", "IssueModel"]
