"""Which memory instructions each executed ``s_waitcnt`` waited for.

A hardware capture answers this itself: rocprofv3's ATT decoder writes a ``waitcnt`` list
in every wave file (``[line, [[producer_line, 0], ...]]`` per executed s_waitcnt that
drained something; a wait on both counters gives two entries, lgkmcnt first).
:func:`capture_events` reads those. Only a modeled trace (asterism's timing model, written
by :mod:`asterism.profile.att_writer`) has to be worked out, by :func:`wait_events`:

GFX9 counts outstanding memory operations per wave in counters: ``vmcnt`` (vector memory:
buffer_*, global_*, scratch_* loads and stores, returned in issue order), ``lgkmcnt`` (LDS,
GDS and messages, each in order; scalar memory *out of order*) and both for FLAT.
``s_waitcnt vmcnt(N)`` blocks until at most N are outstanding, so with in-order returns it
waits for all but the N most recent.

The walk over a wave's executed instructions keeps a pending list per counter. At a wait
with threshold N the oldest ``len - N`` entries are the producers it waited for. The order
is unknown, so only a wait for 0 can be attributed, while a counter holds a scalar load, a
FLAT op (``flat_*``, which may go to either path) or a mix of kinds (LDS with messages: the
rule LLVM's SIInsertWaitcnts follows). The hardware files global_*/scratch_* under the
FLAT category, but they only reach vector memory, so they count as in-order VMEM
(:func:`~asterism.profile.isa_text.memory_kind`). :func:`decoder_links` writes the result
in the decoder's form; on both shared MI350X captures it equals the decoder's own links.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asterism.profile.att import CodeListing, TraceError, WaitcntLink, Wave
from asterism.profile.isa_text import (
    counters_of,
    is_waitcnt,
    memory_kind,
    mnemonic,
    waitcnt_counts,
)


@dataclass(frozen=True, slots=True)
class WaitEvent:
    """One executed s_waitcnt draining one counter.

    ``index`` is the s_waitcnt's position in ``wave.instructions``; ``producers`` are the
    positions of the memory instructions it waited for, oldest first.
    """

    index: int
    line: int
    counter: str  # "lgkmcnt" or "vmcnt"
    producers: tuple[int, ...]


# Kinds whose returns a counter cannot order (see the module docstring).
_UNORDERED_KINDS = ("SMEM", "FLAT")


class _Counter:
    def __init__(self) -> None:
        self.pending: list[int] = []
        self.kinds: set[str] = set()
        self.unordered = False

    def push(self, index: int, kind: str) -> None:
        if kind in _UNORDERED_KINDS or (self.pending and kind not in self.kinds):
            self.unordered = True
        self.pending.append(index)
        self.kinds.add(kind)

    def drain(self, threshold: int) -> list[int]:
        if threshold == 0:
            self.unordered = False
        if self.unordered:
            return []
        n = max(len(self.pending) - threshold, 0)
        done, self.pending = self.pending[:n], self.pending[n:]
        if not self.pending:
            self.kinds.clear()
        return done


def wait_events(wave: Wave, code: CodeListing) -> list[WaitEvent]:
    """Every (s_waitcnt, counter) of the wave that drained at least one producer."""
    counters = {"lgkmcnt": _Counter(), "vmcnt": _Counter()}
    events: list[WaitEvent] = []
    for i, rec in enumerate(wave.instructions):
        row = code.row(rec.line)
        if row is None or row.is_label:
            continue
        mn = mnemonic(row.isa)
        if is_waitcnt(mn):
            counts = waitcnt_counts(row.isa)
            drained: set[int] = set()
            # lgkmcnt first, as the decoder lists them.
            for name in ("lgkmcnt", "vmcnt"):
                if name not in counts:
                    continue
                done = counters[name].drain(counts[name])
                if done:
                    events.append(WaitEvent(i, rec.line, name, tuple(done)))
                    drained.update(done)
            if drained:
                # A FLAT op sits in both lists; once waited for it is complete in both.
                for counter in counters.values():
                    counter.pending = [p for p in counter.pending if p not in drained]
            continue
        kind = memory_kind(mn, rec.category)
        for name in counters_of(kind):
            counters[name].push(i, kind or "")
    return events


def _link_counter(link: WaitcntLink, last: dict[int, int], wave: Wave,
                  code: CodeListing, kinds_of: dict[tuple[int, int], str | None]
                  ) -> str | None:
    """The counter a recorded link drained, from its producers' kinds (None: either);
    `kinds_of` keeps the memory kind of each (line, category) once worked out."""
    kinds = set()
    for line in link.producers:
        index = last.get(line)
        if index is not None:
            key = (line, wave.instructions[index].category)
            if key not in kinds_of:
                row = code.row(line)
                kinds_of[key] = memory_kind(mnemonic(row.isa) if row else "", key[1])
            kinds.add(kinds_of[key])
    counters = {c for k in kinds for c in counters_of(k)}
    if counters == {"vmcnt"} or counters == {"lgkmcnt"}:
        return counters.pop()
    if kinds & {"SMEM", "LDS", "MSG"}:
        return "lgkmcnt"
    return None


def _named_counters(isa: str) -> list[str]:
    """The counters an s_waitcnt's text names, lgkmcnt first (a text that names neither,
    e.g. a raw immediate, may drain either)."""
    named = waitcnt_counts(isa)
    return [c for c in ("lgkmcnt", "vmcnt") if c in named] or ["lgkmcnt", "vmcnt"]


@dataclass
class LineKinds:
    """What :func:`capture_events` works out of the code rows, kept across the waves of one
    code listing: per line 0 (not an instruction), 1 (other) or the counters an
    s_waitcnt's text names; per (line, category) the memory kind."""

    kind: dict[int, int | list[str]] = field(default_factory=dict)
    memory: dict[tuple[int, int], str | None] = field(default_factory=dict)


def capture_events(wave: Wave, code: CodeListing, kinds: LineKinds | None = None
                   ) -> list[WaitEvent]:
    """The wave's recorded ``waitcnt`` links (a hardware capture's) as WaitEvents.

    Each link is matched to the executed s_waitcnt it belongs to (links are in execution
    order) and each producer line to its latest execution before that wait. `kinds`: the
    rows' kinds of earlier waves of the same code listing (filled in here).
    """
    links, k = wave.waitcnt, 0
    last: dict[int, int] = {}  # line -> index of its latest execution so far
    events: list[WaitEvent] = []
    kinds = kinds if kinds is not None else LineKinds()
    kind, kinds_of = kinds.kind, kinds.memory
    for i, rec in enumerate(wave.instructions):
        line = rec.line
        what = kind.get(line)
        if what is None:
            row = code.row(line)
            what = kind[line] = (0 if row is None or row.is_label else
                                 _named_counters(row.isa) if is_waitcnt(mnemonic(row.isa))
                                 else 1)
        if what == 1:
            last[line] = i
            continue
        if what == 0:
            continue
        counts = what
        # One link per counter the text names, lgkmcnt before vmcnt; a second link for the
        # same line belongs here only if it can be the vmcnt one after an lgkmcnt one.
        taken: list[str] = []
        while k < len(links) and links[k].line == line and len(taken) < len(counts):
            counter = _link_counter(links[k], last, wave, code, kinds_of)
            choices = [c for c in counts if c not in taken and counter in (None, c)]
            if not choices or (taken and choices[0] != "vmcnt"):
                break
            taken.append(choices[0])
            producers = tuple(last[p] for p in links[k].producers if p in last)
            events.append(WaitEvent(i, rec.line, choices[0], producers))
            k += 1
    if k < len(links):
        raise TraceError(f"{wave.filename}: waitcnt link #{k} (line {links[k].line}) matches "
                         "no executed s_waitcnt in order")
    return events


def trace_wait_events(wave: Wave, code: CodeListing, modeled: bool,
                      kinds: LineKinds | None = None) -> list[WaitEvent]:
    """The wave's wait events: the capture's own links, recomputed for a modeled trace
    (`kinds`: see :func:`capture_events`)."""
    return wait_events(wave, code) if modeled else capture_events(wave, code, kinds)


def decoder_links(wave: Wave, code: CodeListing) -> list[WaitcntLink]:
    """The wave's ``waitcnt`` entries as the decoder writes them."""
    return [
        WaitcntLink(ev.line, tuple((wave.instructions[p].line, 0) for p in ev.producers))
        for ev in wait_events(wave, code)
    ]
