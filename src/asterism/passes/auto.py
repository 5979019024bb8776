"""The `auto` pipeline: `inline,regalloc,waits,hazards`.

Nothing here runs unless a pipeline names `auto`; the default pipeline stays empty.
"""

from __future__ import annotations

from asterism.passes.pipeline import register_pipeline

AUTO_PASSES = ("inline", "regalloc", "waits", "hazards")

register_pipeline("auto", list(AUTO_PASSES))

__all__ = ["AUTO_PASSES"]
