"""Which memory instructions each executed ``s_waitcnt`` waited for.

GFX9 counts outstanding memory operations per wave in counters: ``vmcnt`` (vector memory
loads and stores, returned in issue order), ``lgkmcnt`` (LDS, GDS, messages in order;
scalar memory *out of order*) and both for FLAT. ``s_waitcnt vmcnt(N)`` blocks until at
most N are outstanding, so with in-order returns it waits for all but the N most recent.

The walk over a wave's executed instructions keeps a pending list per counter. At a wait
with threshold N the oldest ``len - N`` entries are the producers it waited for. While a
scalar load (or a FLAT op, which may go to either path) is pending, completion order is
unknown, so only a wait for 0 can be attributed; that is also what rocprofiler-sdk's
decoder does, and :func:`decoder_links` reproduces its ``waitcnt`` entries.
"""

from __future__ import annotations

from dataclasses import dataclass

from asterism.profile.att import CodeListing, WaitcntLink, Wave
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


class _Counter:
    def __init__(self) -> None:
        self.pending: list[int] = []
        self.unordered = False

    def drain(self, threshold: int) -> list[int]:
        if threshold == 0:
            self.unordered = False
        if self.unordered:
            return []
        n = max(len(self.pending) - threshold, 0)
        done, self.pending = self.pending[:n], self.pending[n:]
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
            counters[name].pending.append(i)
            if kind in ("SMEM", "FLAT"):
                counters[name].unordered = True
    return events


def decoder_links(wave: Wave, code: CodeListing) -> list[WaitcntLink]:
    """The wave's ``waitcnt`` entries as the decoder writes them."""
    return [
        WaitcntLink(ev.line, tuple((wave.instructions[p].line, 0) for p in ev.producers))
        for ev in wait_events(wave, code)
    ]
