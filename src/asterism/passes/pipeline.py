"""Pass registry and pipelines: named passes, named pipelines, mlir-opt-style strings.

A pipeline string is a comma-separated list of pass names, each with optional options in
braces: `inline,regalloc{reserve=v32-v95},waits`. A named pipeline (e.g. `auto`) expands to
its passes. The empty pipeline is the identity: what was written is what is emitted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from asterism.errors import ParseError
from asterism.ir.dominance import check_dominance

PassFn = Callable[..., object]  # (module, **options) -> None (in place) or a new module


@dataclass(frozen=True)
class PassInfo:
    """A registered pass: its name, what it does, and the function running it."""

    name: str
    summary: str
    run: PassFn


PASSES: dict[str, PassInfo] = {}
PIPELINES: dict[str, list[str]] = {}


def register_pass(name: str, summary: str) -> Callable[[PassFn], PassFn]:
    """Decorator: make `fn(module, **options)` available as pass `name`."""

    def wrap(fn: PassFn) -> PassFn:
        PASSES[name] = PassInfo(name, summary, fn)
        return fn

    return wrap


def register_pipeline(name: str, passes: list[str]) -> None:
    """Make `name` expand to `passes` in pipeline strings."""
    PIPELINES[name] = list(passes)


@dataclass
class PassStep:
    """One pass of a parsed pipeline, with its options."""

    name: str
    options: dict[str, str] = field(default_factory=dict)


def _load_builtin_passes() -> None:
    # Passes live in their own modules and register themselves on import.
    import importlib
    import pkgutil

    import asterism.passes as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name not in ("pipeline", "__init__"):
            importlib.import_module(f"asterism.passes.{info.name}")
    from asterism.frontend import lower as frontend  # the front end's pass: lower-upstream
    register_pass("lower-upstream", frontend.SUMMARY)(frontend.lower_upstream)


_ITEM_RE = re.compile(r"\s*([A-Za-z_][\w-]*)\s*(\{([^}]*)\})?\s*")


def parse_pipeline(text: str) -> list[PassStep]:
    """Parse a pipeline string into steps (named pipelines expanded)."""
    _load_builtin_passes()
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module("):-1]
    steps: list[PassStep] = []
    if not text:
        return steps
    pos = 0
    while pos < len(text):
        m = _ITEM_RE.match(text, pos)
        if not m or m.end() == pos:
            raise ParseError(f"bad pipeline near '{text[pos:]}' (expected e.g. "
                             "'inline,regalloc,waits')")
        name = m.group(1)
        options = {}
        if m.group(3):
            for part in m.group(3).split(","):
                key, sep, value = part.partition("=")
                if not sep:
                    raise ParseError(f"bad option '{part}' for pass {name} (expected key=value)")
                options[key.strip()] = value.strip()
        if name in PIPELINES:
            steps += [PassStep(p) for p in PIPELINES[name]]
        elif name in PASSES:
            steps.append(PassStep(name, options))
        else:
            known = sorted(PASSES) + sorted(PIPELINES)
            raise ParseError(f"unknown pass '{name}'; known: {', '.join(known) or 'none yet'}")
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                raise ParseError(f"expected ',' between passes at '{text[pos:]}'")
            pos += 1
    return steps


@dataclass
class PassTiming:
    """Wall time of one pass run."""

    name: str
    seconds: float


def run_pipeline(module, pipeline: str | list[PassStep], *, print_after_all=None,
                 timings: list[PassTiming] | None = None):
    """Run the passes on `module`; returns the resulting module.

    `print_after_all(name, module)` is called after every pass; `timings` collects times.
    Every value must be defined before its uses (checked first, a VerifyError): the passes
    follow def-use chains, and a cycle would never end liveness. (The rest of verification
    happens where a module comes in: parse_ir, the builder's finish, api.optimize.)
    """
    steps = parse_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
    if steps:
        check_dominance(module)
    for step in steps:
        start = time.perf_counter()
        result = PASSES[step.name].run(module, **step.options)
        if result is not None:
            module = result
        if timings is not None:
            timings.append(PassTiming(step.name, time.perf_counter() - start))
        if print_after_all is not None:
            print_after_all(step.name, module)
    return module
