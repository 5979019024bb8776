"""What-if replays: each optimization candidate is a change to the capture's instruction
streams, replayed through the timing model (:func:`asterism.profile.replay.replay_trace`);
its modeled saving is the replay of the unchanged capture minus the replay of the changed
one. Measured figures (stall cycles of a line) come from the capture; savings are modeled.

The changes (each a new :class:`~asterism.profile.att.Trace`, the capture left as it was):

- ``wait-drop``: the ``s_waitcnt`` at a line waits for nothing (its executions point to a
  new code row ``s_waitcnt vmcnt(63) lgkmcnt(15)``). An upper bound of what splitting or
  moving the wait can give.
- ``wait-split``: the wait keeps only its oldest producer (``vmcnt(n-1)`` for the n loads its
  capture links name) and the full wait moves to just before the wave's next ``s_barrier``
  or ``s_waitcnt``: right when the data is first read after that point (a DMA into LDS read
  after the barrier, the common case).
- ``load-earlier``: the loads a wait drains are issued N MFMAs earlier in the stream (N: the
  MFMAs of the phase before them), never before the wait that drains their previous
  instance (one more buffer stage is what makes this valid).
- ``barrier-remove``: the ``s_barrier`` at a line is dropped (the data it orders has to be
  double-buffered for that to be valid).
- ``more-waves``: a second workgroup on every traced CU at once (a copy of its traced
  waves on free slots, 16 cycles later); its saving is two replays of the unchanged
  capture back to back minus this one: what one more wave per SIMD hides. Tried when the
  resources allow it or fewer registers would.
- ``even-out``: every traced wave runs the mean iteration count of the loop whose count
  varies most (full trips between two executions of its head cut or repeated): the
  imbalance evened out.

Memory latencies are the capture's (``memory="measured"``: each load takes as long as it
did; the changed streams keep every record's time, so the latencies stay put) except for
``even-out``, whose repeated iterations have no measured latency: it is replayed, with its
own baseline, with the model's latencies (``memory="model"``).

Dropping a wait bounds what splitting it or moving its loads earlier can save: those two are
replayed only for waits whose removal saves at least :data:`PRUNE_SHARE` of the modeled span.

Every replay is the modeled kernel time on the traced CUs: the span from the first traced
wave's start to the last one's modeled end ("span"), and the sum of the waves' modeled
lifetimes ("wave-cycles"). A big capture is cut to whole CUs (every traced wave of a CU,
longest waves' CUs first) within ``max_records`` records, and says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from asterism.profile.att import CodeListing, CodeRow, InstRecord, Trace, WaitcntLink, Wave
from asterism.profile.escape import md_code
from asterism.profile.isa_text import is_barrier, is_mfma, is_waitcnt, mnemonic
from asterism.profile.report import Report
from asterism.profile.structure import Structure, wave_name
from asterism.timing.result import InstCategory

NO_WAIT = "s_waitcnt vmcnt(63) lgkmcnt(15)"
MAX_RECORDS = 60_000  # records replayed per scenario (a bigger capture is cut to whole CUs)
WAITS_TRIED = 4  # waits (by measured stall) each change is tried on
BARRIERS_TRIED = 2
MAX_SLOTS = 8  # wave slots per SIMD (gfx9)
# A wait whose removal saves less than this share of the modeled span is not split and its
# loads not moved (neither can save more than removing the wait).
PRUNE_SHARE = 0.005
_COUNT_RE = re.compile(r"\b(vmcnt|lgkmcnt)\s*\(\s*\d{1,9}\s*\)", re.ASCII)


@dataclass
class Scenario:
    """One change to try: what it is, on which lines, and how it changes a trace."""

    kind: str  # wait-drop | wait-split | load-earlier | barrier-remove | even-out
    lines: list[int]
    what: str  # the change in words (Markdown: text from the capture escaped)
    change: Change
    memory: str = "measured"
    base_factor: int = 1  # the unchanged replay's span counts this many times (more-waves)


@dataclass
class WhatIf:
    """A scenario's replay against the unchanged capture's (all modeled)."""

    scenario: Scenario
    base_span: int
    span: int
    base_wave_cycles: int
    wave_cycles: int

    @property
    def saved(self) -> int:
        """Modeled cycles of kernel time saved on the traced CUs (span)."""
        return self.base_span - self.span

    @property
    def saved_wave_cycles(self) -> int:
        """Modeled wave-cycles saved (sum over the traced waves)."""
        return self.base_wave_cycles - self.wave_cycles


@dataclass
class WhatIfs:
    """All scenarios tried on one capture."""

    results: list[WhatIf]
    waves: int  # traced waves replayed
    total_waves: int
    records: int  # records replayed per scenario
    target: str
    errors: list[str] = field(default_factory=list)  # scenarios the model could not replay
    pruned: list[str] = field(default_factory=list)  # not replayed: bounded by a dropped wait

    def best(self) -> list[WhatIf]:
        """Most modeled span saved first (then wave-cycles)."""
        return sorted(self.results, key=lambda r: (-r.saved, -r.saved_wave_cycles,
                                                   r.scenario.kind, r.scenario.lines))


# ---------------------------------------------------------------------------- changes


def _with_rows(trace: Trace, texts: list[str]) -> tuple[Trace, list[int]]:
    """The trace with new code rows (after the last one) of `texts`; their lines."""
    last = trace.code.rows[-1]
    rows = list(trace.code.rows)
    lines = []
    for k, text in enumerate(texts, 1):
        line = last.line + k
        rows.append(CodeRow(line, text, codeobj=last.codeobj, vaddr=last.vaddr + 4 * k))
        lines.append(line)
    return replace(trace, code=CodeListing(rows)), lines


@dataclass(frozen=True)
class Change:
    """A change to the traced waves' streams: the code rows it needs added (texts), and
    `waves(trace, lines)`: the changed waves, given the lines those rows got. Calling it on
    a trace gives the changed trace (rows added after the last one)."""

    rows: tuple[str, ...]
    waves: Callable[[Trace, list[int]], list[Wave]]

    def __call__(self, trace: Trace) -> Trace:
        out, lines = _with_rows(trace, list(self.rows))
        out.waves = self.waves(trace, lines)
        return out


def _rewave(w: Wave, records: list[InstRecord], links: list[WaitcntLink]) -> Wave:
    return Wave(se=w.se, simd=w.simd, slot=w.slot, id=w.id, cu=w.cu, begin=w.begin, end=w.end,
                instructions=records, timeline=w.timeline, waitcnt=links)


def _relink(links: list[WaitcntLink], old: int, new: int) -> list[WaitcntLink]:
    return [WaitcntLink(new, ln.deps) if ln.line == old else ln for ln in links]


def drop_wait(line: int) -> Change:
    """The wait at `line` waits for nothing (its capture links kept: latencies stay)."""
    def waves(trace: Trace, lines: list[int]) -> list[Wave]:
        (new,) = lines
        return [_rewave(w, [replace(r, line=new) if r.line == line else r
                            for r in w.instructions], _relink(w.waitcnt, line, new))
                for w in trace.waves]
    return Change((NO_WAIT,), waves)


def split_wait(line: int, isa: str, producers: int) -> Change:
    """The wait at `line` keeps its oldest producer; the full wait moves before the wave's
    next s_barrier or s_waitcnt (see the module doc)."""
    relaxed = _COUNT_RE.sub(lambda m: f"{m.group(1)}({producers - 1})", isa)

    def waves(trace: Trace, lines: list[int]) -> list[Wave]:
        soft, full = lines
        waits = {r.line for r in trace.code.rows if not r.is_label
                 and (is_barrier(mnemonic(r.isa)) or is_waitcnt(mnemonic(r.isa)))}
        out = []
        for w in trace.waves:
            recs: list[InstRecord] = []
            owed = False
            for r in w.instructions:
                if owed and (r.line in waits or r.category == InstCategory.MESSAGE):
                    recs.append(InstRecord(r.time, InstCategory.IMMED, 0, 0, full))
                    owed = False
                if r.line == line:
                    recs.append(replace(r, line=soft))
                    owed = True
                else:
                    recs.append(r)
            out.append(_rewave(w, recs, _relink(w.waitcnt, line, soft)))
        return out
    return Change((relaxed, isa), waves)


def loads_earlier(wait_line: int, producers: set[int], mfmas: int) -> Change:
    """Each execution of the `producers` lines moves `mfmas` MFMA records earlier, never
    before a wait that drains one of them (the previous instance's)."""
    def change(trace: Trace, _lines: list[int]) -> list[Wave]:
        mfma_lines = {r.line for r in trace.code.rows
                      if not r.is_label and is_mfma(mnemonic(r.isa))}
        waves = []
        for w in trace.waves:
            drains = {ln.line for ln in w.waitcnt if producers & set(ln.producers)}
            recs = list(w.instructions)
            k = 0
            while k < len(recs):
                if recs[k].line not in producers:
                    k += 1
                    continue
                j, seen = k, 0
                while j > 0 and seen < mfmas and recs[j - 1].line not in drains \
                        and recs[j - 1].line not in producers:
                    j -= 1
                    seen += recs[j].line in mfma_lines
                if j < k:
                    recs.insert(j, recs.pop(k))
                k += 1
            waves.append(_rewave(w, recs, list(w.waitcnt)))
        return waves
    return Change((), change)


def more_waves(shift: int = 16) -> Change:
    """A second copy of every traced wave on the next free slot of its SIMD, starting
    `shift` cycles later (a second workgroup per CU at once; the shift keeps the two
    workgroups' barrier releases apart, which is how the replay tells workgroups apart)."""
    def change(trace: Trace, _lines: list[int]) -> list[Wave]:
        free = 1 + max(w.slot for w in trace.waves)
        copies = [Wave(se=w.se, simd=w.simd, slot=w.slot + free, id=w.id, cu=w.cu,
                       begin=w.begin + shift, end=w.end + shift,
                       instructions=[replace(r, time=r.time + shift) for r in w.instructions],
                       timeline=w.timeline, waitcnt=list(w.waitcnt)) for w in trace.waves]
        return list(trace.waves) + copies
    return Change((), change)


def remove_barrier(line: int) -> Change:
    """The s_barrier at `line` dropped from every stream."""
    def change(trace: Trace, _lines: list[int]) -> list[Wave]:
        return [_rewave(w, [r for r in w.instructions if r.line != line], list(w.waitcnt))
                for w in trace.waves]
    return Change((), change)


def even_out(head: int, target: int) -> Change:
    """Every wave executes the loop head `head` `target` times: the full trips between two
    head executions are cut or repeated (the wave's last full trip), the way in (before the
    first head) and the way out (from the last head on) kept as they ran."""
    def change(trace: Trace, _lines: list[int]) -> list[Wave]:
        waves = []
        for w in trace.waves:
            recs = w.instructions
            starts = [i for i, r in enumerate(recs) if r.line == head]
            if len(starts) < 2:  # no full trip to repeat
                waves.append(w)
                continue
            trips = [recs[a:b] for a, b in zip(starts, starts[1:], strict=False)]
            want = max(target - 1, 0)
            trips = trips[:want] + [trips[-1]] * max(want - len(trips), 0)
            new = recs[:starts[0]] + [r for t in trips for r in t] + recs[starts[-1]:]
            waves.append(_rewave(w, new, []))
        return waves
    return Change((), change)


# ---------------------------------------------------------------------------- scenarios


def scenarios(trace: Trace, report: Report, structure: Structure | None,
              more: str | None = None) -> list[Scenario]:
    """The changes worth replaying for this capture: its costliest waits (dropped, split,
    their loads issued earlier), its costliest barriers, its imbalance, and (`more`: why
    one more wave per SIMD could be resident, None: not tried) a second workgroup per CU."""
    out: list[Scenario] = []
    waits = sorted((r for r in report.listing if r.hits and r.stall and not r.is_label
                    and is_waitcnt(mnemonic(r.isa))), key=lambda r: (-r.stall, r.line))
    for row in waits[:WAITS_TRIED]:
        links = report.waits_of(row.line)
        prods = sorted({p.line for w in links for p in w.producers})
        out.append(Scenario("wait-drop", [row.line], f"{md_code(row.isa)} at line {row.line} "
                            "waits for nothing", drop_wait(row.line)))
        if len(prods) > 1 and _COUNT_RE.search(row.isa):
            out.append(Scenario(
                "wait-split", [row.line], f"{md_code(row.isa)} at line {row.line} waits for its "
                f"oldest of {len(prods)} loads; the rest before the next barrier or wait",
                split_wait(row.line, row.isa, len(prods))))
        n = _mfmas_before(structure, prods)
        if prods and n:
            out.append(Scenario(
                "load-earlier", [row.line] + prods, f"the {len(prods)} load(s) line "
                f"{row.line} waits for issued {n} MFMAs earlier",
                loads_earlier(row.line, set(prods), n)))
    bars = sorted((r for r in report.listing if r.hits and r.stall and not r.is_label
                   and is_barrier(mnemonic(r.isa))), key=lambda r: (-r.stall, r.line))
    for row in bars[:BARRIERS_TRIED]:
        out.append(Scenario("barrier-remove", [row.line], f"the s_barrier at line {row.line} "
                            "removed", remove_barrier(row.line)))
    if structure is not None:
        varied = [lp for lp in structure.loops if len(set(lp.iterations.values())) > 1]
        if varied:
            lp = max(varied, key=lambda lp: max(lp.iterations.values())
                     - min(lp.iterations.values()))
            counts = list(lp.iterations.values())
            mean = round(sum(counts) / len(counts))
            out.append(Scenario(
                "even-out", [lp.head, lp.tail], f"every traced wave runs the loop at lines "
                f"{lp.head}-{lp.tail} {mean} times (now {min(counts)} to {max(counts)})",
                even_out(lp.head, mean), memory="model"))
    if more is not None and trace.waves and \
            1 + 2 * max(w.slot for w in trace.waves) < MAX_SLOTS:
        out.append(Scenario("more-waves", [], f"a second workgroup on each traced CU at once "
                            f"({more}): both finish against two run back to back",
                            more_waves(), base_factor=2))
    return out


def _mfmas_before(structure: Structure | None, producers: list[int]) -> int:
    """MFMAs of the MFMA phase just before the first producer (0 if none)."""
    if structure is None or not producers:
        return 0
    before = [p for p in structure.phases if p.last < producers[0] and p.kind == "mfma"]
    return before[-1].counts.get("mfma", 0) if before else 0


# ---------------------------------------------------------------------------- replay


def _subset(trace: Trace, max_records: int) -> Trace:
    """Whole CUs of the trace (the CUs of its longest waves first) within `max_records`."""
    total = sum(len(w.instructions) for w in trace.waves)
    if total <= max_records:
        return trace
    by_cu: dict[tuple[int, int], list[Wave]] = {}
    for w in trace.waves:
        by_cu.setdefault((w.se, w.cu), []).append(w)
    order = sorted(by_cu.values(), key=lambda ws: -max(w.duration for w in ws))
    kept: list[Wave] = []
    n = 0
    for ws in order:
        # A CU's waves in time order, as many as fit (a long capture: the first ones).
        for w in sorted(ws, key=lambda w: w.begin):
            if kept and n + len(w.instructions) > max_records:
                break
            kept.append(w)
            n += len(w.instructions)
        if n >= max_records:
            break
    return replace(trace, waves=kept)


def _replay(trace: Trace, target: str, memory: str) -> tuple[int, int]:
    from asterism.profile.replay import replay_trace

    res = replay_trace(trace, target, memory)
    ends = [w.begin + c.modeled for w, c in zip(trace.waves, res.waves, strict=True)]
    begin = min(w.begin for w in trace.waves)
    return max(ends) - begin, sum(c.modeled for c in res.waves)


def run_whatifs(trace: Trace, report: Report, structure: Structure | None,
                target: str = "gfx950", max_records: int = MAX_RECORDS,
                progress: Callable[[str], None] | None = None,
                more: str | None = None) -> WhatIfs:
    """Replay every scenario of :func:`scenarios` (see the module doc). All replays share
    one trace holding every row a change adds, its waves swapped per replay: the replay
    reads the instruction text once."""
    from asterism.errors import AsterismError

    part = _subset(trace, max_records)
    todo = scenarios(trace, report, structure, more)
    work, added = _with_rows(part, [t for sc in todo for t in sc.change.rows])
    lines_of, k = [], 0
    for sc in todo:
        lines_of.append(added[k:k + len(sc.change.rows)])
        k += len(sc.change.rows)
    base: dict[str, tuple[int, int]] = {}
    results, errors = [], []
    dropped: dict[int, int] = {}  # wait line -> modeled saving of dropping it
    pruned: list[str] = []
    for k, (sc, lines) in enumerate(zip(todo, lines_of, strict=True), 1):
        if sc.kind in ("wait-split", "load-earlier") and sc.lines[0] in dropped and \
                dropped[sc.lines[0]] < PRUNE_SHARE * base["measured"][0]:
            # Dropping the wait bounds what splitting it or moving its loads can save.
            pruned.append(f"{sc.kind} of line {sc.lines[0]}")
            continue
        if progress is not None:
            where = f" (line {sc.lines[0]})" if sc.lines else ""
            progress(f"what-if {k}/{len(todo)}: {sc.kind}{where}")
        try:
            if sc.memory not in base:
                work.waves = part.waves
                base[sc.memory] = _replay(work, target, sc.memory)
            work.waves = sc.change.waves(part, lines)
            span, cycles = _replay(work, target, sc.memory)
        except AsterismError as err:
            errors.append(f"{sc.kind} {sc.lines[:1]}: {err.message}")
            continue
        b_span, b_cycles = base[sc.memory]
        results.append(WhatIf(sc, sc.base_factor * b_span, span, sc.base_factor * b_cycles,
                              cycles))
        if sc.kind == "wait-drop":
            dropped[sc.lines[0]] = results[-1].saved
    return WhatIfs(results, len(part.waves), len(trace.waves),
                   sum(len(w.instructions) for w in part.waves), target, errors, pruned)


__all__ = ["MAX_RECORDS", "NO_WAIT", "Change", "Scenario", "WhatIf", "WhatIfs", "drop_wait",
           "even_out", "loads_earlier", "more_waves", "remove_barrier", "run_whatifs",
           "scenarios", "split_wait", "wave_name"]
