"""What a long emulator run shows on stderr (through asterism.support.progress's line).

    progress = RunProgress()                    # silent for the first 2 s, then 1 line/s
    emu.run(program, kd, grid=..., block=..., progress=progress)

One line per update: the phase (a run, the check that the kernel ends before the timing
model, the timing model of the modeled CUs, the functional rest of a timed run), workgroups
done of the phase's total, wave-instructions and their rate, elapsed time and an ETA; once
the longest wave has used a tenth of the instruction budget (a kernel that may never end),
also how far it is and when the budget would stop it.

The emulator asks `due()` (one clock read) only every few thousand instructions, so a run
with progress is as fast as one without.
"""

from __future__ import annotations

from asterism.support.progress import ProgressLine, clock, count

PHASES = {"run": "emulating", "probe": "checking that it ends",
          "footprint": "noting the lines the modeled workgroups touch",
          "model": "timing model", "rest": "timing model done; running the rest"}


class RunProgress:
    """Progress of emulator dispatches on one `ProgressLine` (see the module docstring)."""

    def __init__(self, line: ProgressLine | None = None):
        self.line = line or ProgressLine()
        self.kernel = ""
        self.phase = "run"
        self.total = 0
        self.budget = 0
        self._start = 0.0
        self._base = 0  # wave-instructions before this phase

    def due(self) -> bool:
        """True when a new line should be drawn (cheap)."""
        return self.line.due()

    def begin(self, kernel: str, phase: str, workgroups: int, budget: int,
              wave_instructions: int = 0) -> None:
        """A new phase of a dispatch starts (`workgroups` to run, per-wave `budget`)."""
        self.kernel, self.phase, self.total, self.budget = kernel, phase, workgroups, budget
        self._start = self.line.elapsed()
        self._base = wave_instructions

    def text(self, wave_instructions: int, done: int, longest: int) -> str:
        """The progress line for the counts so far (see the module docstring)."""
        seconds = max(1e-9, self.line.elapsed() - self._start)
        ran = wave_instructions - self._base
        parts = [f"{self.kernel}: {PHASES.get(self.phase, self.phase)}",
                 f"{done}/{self.total} workgroups",
                 f"{count(ran)} wave-instructions ({count(ran / seconds)}/s)",
                 f"elapsed {clock(self.line.elapsed())}"]
        if 0 < done < self.total:
            parts.append(f"ETA {clock(seconds * (self.total - done) / done)}")
        elif done < self.total:
            parts.append("ETA ?")
        if self.budget and longest * 10 >= self.budget:
            left = seconds * (self.budget - longest) / max(1, longest)
            parts.append(f"longest wave {count(longest)} of the {count(self.budget)}-"
                         f"instruction budget (reached in ~{clock(left)})")
        return ", ".join(parts)

    def update(self, wave_instructions: int, done: int, longest: int) -> None:
        """Draw the line (callers check `due()` first)."""
        self.line.show(self.text(wave_instructions, done, longest))

    def end(self) -> None:
        """The dispatch is over: erase the terminal line."""
        self.line.close()


__all__ = ["PHASES", "RunProgress"]
