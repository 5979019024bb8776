"""The progress bar of a sweep, on stderr: done/total, failures, cached points, elapsed, ETA.

On a terminal it redraws one line; otherwise (a log, CI) it prints one line per finished
point. The ETA extrapolates from the points run so far (cached ones cost nothing, so they
are left out of the rate). While points take long, `tick()` (called by the sweep about once
a second) keeps the line alive: on a terminal the elapsed time moves every second, in a
log a "still running" line comes every LOG_INTERVAL seconds.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from asterism.support.progress import DELAY, LOG_INTERVAL, clock

BAR = 24


class Progress:
    """Counts finished points and draws the bar (nothing when `enabled` is False)."""

    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None):
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and getattr(self.stream, "isatty", lambda: False)()
        self.start = time.perf_counter()
        self.done = self.failed = self.cached = 0
        self._quiet_until = self.start + DELAY  # (for tick: nothing while the sweep is young)

    def eta(self) -> float | None:
        """Seconds left, from the rate of the points run (None before the first one)."""
        ran = self.done - self.cached
        if ran <= 0:
            return None
        rate = (time.perf_counter() - self.start) / ran
        return rate * (self.total - self.done)

    def line(self) -> str:
        """The progress text (without the terminal control characters)."""
        filled = BAR * self.done // max(1, self.total)
        bar = "#" * filled + "." * (BAR - filled)
        eta = self.eta()
        parts = [f"[{bar}] {self.done}/{self.total}"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.cached:
            parts.append(f"{self.cached} cached")
        parts.append(f"elapsed {clock(time.perf_counter() - self.start)}")
        parts.append(f"ETA {clock(eta)}" if eta is not None else "ETA ?")
        return "  ".join(parts)

    def add_cached(self, ok: bool) -> None:
        """Count a point taken from the cache (not drawn: the start line says how many)."""
        self.done += 1
        self.cached += 1
        self.failed += not ok

    def update(self, ok: bool, label: str = "") -> None:
        """Count one finished point and redraw."""
        self.done += 1
        self.failed += not ok
        if not self.enabled:
            return
        if not self.tty:
            self._quiet_until = time.perf_counter() + LOG_INTERVAL
        if self.tty:
            self.stream.write("\r\x1b[2K" + self.line())
        else:
            self.stream.write(f"{self.line()}  {label}\n")
        self.stream.flush()

    def tick(self) -> None:
        """No point finished lately: redraw the terminal line (elapsed, ETA) or, in a log,
        say every LOG_INTERVAL seconds that the sweep is still running."""
        now = time.perf_counter()
        if not self.enabled or now < self._quiet_until:
            return
        if self.tty:
            self.stream.write("\r\x1b[2K" + self.line())
        else:
            self.stream.write(f"{self.line()}  still running\n")
            self._quiet_until = now + LOG_INTERVAL
        self.stream.flush()

    def start_line(self, text: str) -> None:
        """Print a line before the bar starts (what is being swept, on which engine)."""
        if self.enabled:
            self.stream.write(text + "\n")
            self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled and self.tty and self.done:
            self.stream.write("\n")
            self.stream.flush()


__all__ = ["Progress", "clock"]
