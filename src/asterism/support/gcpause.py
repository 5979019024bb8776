"""Pausing Python's cyclic garbage collector around work that builds many objects at once.

Why: every object an assembly, a disassembly, a lowering or a pass keeps (instructions,
operand lists, small tuples next to a large IR) counts towards the collector's thresholds, so
full collections re-scan the growing program again and again (a quarter to a half of the
running time of a large file or kernel). Reference counting still frees everything as usual;
only cycles wait until the collector resumes, and the work here makes none that matter.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def pause_cyclic_gc() -> bool:
    """Pause the cyclic garbage collector; returns whether it was running (pass that to
    resume_cyclic_gc in a `finally`).

    Plain calls rather than a `with` block: entering or leaving a context manager allocates,
    and an allocation while the collector is on, just after a file's objects were made, makes
    it scan all of them once more. Per-file readers and writers use these; `gc_paused` is for
    work whose objects are made inside the block.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    return was_enabled


def resume_cyclic_gc(was_enabled: bool) -> None:
    """Undo pause_cyclic_gc (a collector that was already paused stays paused)."""
    if was_enabled:
        gc.enable()


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector paused for the `with` block (as pause_cyclic_gc / resume_cyclic_gc)."""
    was_enabled = pause_cyclic_gc()
    try:
        yield
    finally:
        resume_cyclic_gc(was_enabled)


def keep_until_exit() -> None:
    """Exclude every object made so far from the collector's scans for the rest of the
    process (gc.freeze). For the `asterism` command only, right after it has read a large
    input that lives until the process ends (a parsed IR module, a raised one): the passes,
    lowering and encoding that follow, and the collection Python makes at exit, would
    otherwise scan all of it again (a third of `asterism compile` of a 200 KB kernel).
    Cycles among those objects are never freed: not for a caller's long-lived process."""
    gc.freeze()
