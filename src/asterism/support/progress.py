"""Progress of long work on stderr, shown only once the work turns out to be long.

A `ProgressLine` stays silent for its first `delay` seconds (a short run prints nothing);
after that, on a terminal it redraws one line at most once per `interval` and erases it at
the end, and elsewhere (a log file, CI) it prints a line every `log_interval` seconds. The
caller asks `due()` (one clock read) before composing its text, so checking often is cheap.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

DELAY = 2.0  # seconds of silence: a run shorter than this shows no progress
INTERVAL = 1.0  # terminal redraws
LOG_INTERVAL = 10.0  # lines in a log


def clock(seconds: float) -> str:
    """`seconds` as m:ss (or h:mm:ss)."""
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02}:{s:02}" if h else f"{m}:{s:02}"


def count(n: float) -> str:
    """A count for a progress line: 950, 12.3K, 4.1M, 2.0G."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n:.0f}"


class ProgressLine:
    """One throttled progress line on `stream` (default stderr); see the module docstring."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool = True,
                 delay: float = DELAY, interval: float = INTERVAL,
                 log_interval: float = LOG_INTERVAL):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if self.tty else log_interval
        self.start = time.monotonic()
        self.next_at = self.start + delay if enabled else float("inf")
        self.drawn = False

    def restart(self, delay: float = DELAY) -> None:
        """Start timing anew (a new run through the same line)."""
        self.start = time.monotonic()
        if self.enabled:
            self.next_at = self.start + delay

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.monotonic() - self.start

    def due(self) -> bool:
        """True when the next line should be shown."""
        return time.monotonic() >= self.next_at

    def show(self, text: str) -> None:
        """Draw `text` now (callers check `due()` first)."""
        if not self.enabled:
            return
        self.next_at = time.monotonic() + self.interval
        if self.tty:
            self.stream.write("\r\x1b[2K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """Erase the terminal line (a log keeps its lines)."""
        if self.enabled and self.tty and self.drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
        self.drawn = False


__all__ = ["ProgressLine", "clock", "count"]
