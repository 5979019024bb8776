"""The `auto` pipeline: `inline,regalloc,waits,hazards`, limited to the passes that exist.

The waits and hazards passes live in their own modules (and a checkout may not have all of
them yet), so the list is not fixed when this module is imported: `auto` expands, each time
a pipeline string is parsed, to those of the four passes that are registered, in that order.
Nothing here runs unless a pipeline names `auto`; the default pipeline stays empty.
"""

from __future__ import annotations

from asterism.passes.pipeline import PASSES, PIPELINES

AUTO_PASSES = ("inline", "regalloc", "waits", "hazards")


class _RegisteredPasses(list):
    """A pipeline list computed when it is read: the registered passes among `names`."""

    def __init__(self, names: tuple[str, ...]):
        super().__init__()
        self.names = names

    def _current(self) -> list[str]:
        return [name for name in self.names if name in PASSES]

    def __iter__(self):
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    def __getitem__(self, index):
        return self._current()[index]

    def __repr__(self) -> str:
        return repr(self._current())


def auto_passes() -> list[str]:
    """The passes `auto` stands for right now."""
    return list(PIPELINES["auto"])


# Set directly (register_pipeline copies its list, which would freeze it at import time).
PIPELINES["auto"] = _RegisteredPasses(AUTO_PASSES)

__all__ = ["AUTO_PASSES", "auto_passes"]
