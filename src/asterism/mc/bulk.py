"""Helpers for work over whole files (thousands of instructions at once)."""

from __future__ import annotations

import gc


def pause_cyclic_gc() -> bool:
    """Pause the cyclic garbage collector while a file's instructions are built; returns
    whether it was running (pass that to resume_cyclic_gc in a `finally`).

    Why: every object an assembly or disassembly keeps (instructions, operand lists...) counts
    towards the collector's thresholds, so full collections re-scan the growing program again
    and again (about a quarter of the time of a 100k-instruction file). Reference counting
    still frees everything as usual; cycles wait until the collector resumes.

    Plain calls rather than a `with` block: entering or leaving a context manager allocates,
    and an allocation while the collector is on, just after a file's objects were made, makes
    it scan all of them once more.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    return was_enabled


def resume_cyclic_gc(was_enabled: bool) -> None:
    """Undo pause_cyclic_gc (a collector that was already paused stays paused)."""
    if was_enabled:
        gc.enable()
