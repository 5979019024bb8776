"""The passes and named pipelines by name: an explicit table of lazy loaders (xDSL's
`get_all_passes`). Importing this module imports no pass; `load_pass(name)` imports the one
module that defines it. A new pass is a `Pass` subclass in its module plus its line here.
"""

from __future__ import annotations

from collections.abc import Callable

from asterism.passes.base import Pass, describe


def _copy_prop() -> type[Pass]:
    from asterism.passes.copyprop import CopyPropPass
    return CopyPropPass


def _dce() -> type[Pass]:
    from asterism.passes.dce import DcePass
    return DcePass


def _hazards() -> type[Pass]:
    from asterism.passes.hazards import HazardsPass
    return HazardsPass


def _inline() -> type[Pass]:
    from asterism.passes.inline import InlinePass
    return InlinePass


def _liveness() -> type[Pass]:
    from asterism.passes.liveness import LivenessPass
    return LivenessPass


def _lower_upstream() -> type[Pass]:
    from asterism.passes.upstream import LowerUpstreamPass
    return LowerUpstreamPass


def _regalloc() -> type[Pass]:
    from asterism.passes.regalloc import RegallocPass
    return RegallocPass


def _scf_pipeline() -> type[Pass]:
    from asterism.passes.stages import ScfPipelinePass
    return ScfPipelinePass


def _schedule() -> type[Pass]:
    from asterism.passes.schedule import SchedulePass
    return SchedulePass


def _waits() -> type[Pass]:
    from asterism.passes.waits import WaitsPass
    return WaitsPass


# name -> function returning the pass class (the name is also the class's `name`).
PASSES: dict[str, Callable[[], type[Pass]]] = {
    "copy-prop": _copy_prop,
    "dce": _dce,
    "hazards": _hazards,
    "inline": _inline,
    "liveness": _liveness,
    "lower-upstream": _lower_upstream,
    "regalloc": _regalloc,
    "schedule": _schedule,
    "scf-pipeline": _scf_pipeline,
    "waits": _waits,
}

# Named pipelines: a name that expands to these passes (with their default options).
PIPELINES: dict[str, tuple[str, ...]] = {
    "auto": ("scf-pipeline", "inline", "regalloc", "waits", "hazards"),
}


def load_pass(name: str) -> type[Pass]:
    """The pass class registered as `name` (KeyError if there is none)."""
    cls = PASSES[name]()
    assert cls.name == name, f"registry entry {name!r} loads pass {cls.name!r}"
    return cls


def known_names() -> list[str]:
    """Every name a pipeline may use: the passes, then the named pipelines."""
    return sorted(PASSES) + sorted(PIPELINES)


def describe_passes() -> str:
    """Every pass with its options, and the named pipelines (`asterism opt --list-passes`)."""
    lines = ["passes (in a pipeline: NAME or NAME{OPTION=VALUE,...}, separated by commas):"]
    for name in PASSES:
        lines += describe(load_pass(name))
    lines.append("named pipelines:")
    lines += [f"  {name:<16}{','.join(steps)}" for name, steps in PIPELINES.items()]
    return "\n".join(lines) + "\n"


__all__ = ["PASSES", "PIPELINES", "describe_passes", "known_names", "load_pass"]
