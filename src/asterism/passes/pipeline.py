"""Pipelines: mlir-opt-style strings -> passes with typed options, and running them.

A pipeline string is a comma-separated list of pass names, each with optional options in
braces: `inline,regalloc{reserve=v32-v95,max-vgprs=128},waits`. A named pipeline (e.g.
`auto`) expands to its passes. `builtin.module(...)` around the list is allowed. The empty
pipeline is the identity: what was written is what is emitted. The passes and named
pipelines are `passes.registry`'s; each option's type is its pass's (`passes.base`), and a
bad pipeline is a ParseError at its place in the string (`<pipeline>:1:COL`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from asterism.errors import ParseError, SourceLocation, shown
from asterism.ir.dominance import check_dominance
from asterism.ir.loop_lowering import lower_structured_module
from asterism.ir.loops import has_structured
from asterism.passes.base import OptionText, Pass, parse_options
from asterism.passes.registry import PASSES, PIPELINES, known_names, load_pass

_NAME_RE = re.compile(r"[A-Za-z_][\w-]*")
_WRAPPER = "builtin.module("


class _Text:
    """The pipeline string and where its pieces are (for located errors)."""

    def __init__(self, text: str, source: str):
        self.text = text
        self.source = source

    def at(self, pos: int) -> SourceLocation:
        """The 1-based line and column of offset `pos`."""
        line_start = self.text.rfind("\n", 0, pos) + 1
        return SourceLocation(self.source, self.text.count("\n", 0, pos) + 1, pos - line_start + 1)

    def error(self, message: str, pos: int) -> ParseError:
        """A ParseError at offset `pos`."""
        return ParseError(message, self.at(pos))

    def skip_space(self, pos: int, end: int) -> int:
        """The first offset from `pos` that is not whitespace (at most `end`)."""
        while pos < end and self.text[pos].isspace():
            pos += 1
        return pos


def _options(t: _Text, pass_name: str, start: int, end: int) -> list[OptionText]:
    """The `key=value` items of the braces' inside text[start:end], with their places."""
    if not t.text[start:end].strip():
        return []  # `regalloc{}`
    items = []
    pos = start
    for part in t.text[start:end].split(","):
        key, sep, value = part.partition("=")
        key_pos = t.skip_space(pos, pos + len(part))
        if not sep or not key.strip():
            raise t.error(f"expected OPTION=VALUE in the options of '{pass_name}', got "
                          f"{shown(part.strip())}", key_pos)
        value_start = pos + len(key) + 1
        value_pos = t.skip_space(value_start, pos + len(part))
        items.append(OptionText(key.strip(), value.strip(), t.at(key_pos), t.at(value_pos)))
        pos += len(part) + 1
    return items


def _steps(t: _Text, name: str, name_pos: int, options: list[OptionText] | None,
           brace_pos: int) -> list[Pass]:
    """The passes one pipeline item stands for."""
    if name in PIPELINES:
        if options:
            raise t.error(f"'{name}' is a named pipeline ({','.join(PIPELINES[name])}): it "
                          "takes no options", brace_pos)
        return [load_pass(p)() for p in PIPELINES[name]]
    if name not in PASSES:
        raise t.error(f"unknown pass {shown(name)}; known: {', '.join(known_names())}",
                      name_pos)
    return [parse_options(load_pass(name), options or [])]


def parse_pipeline(text: str, source: str = "<pipeline>") -> list[Pass]:
    """Parse a pipeline string into passes (named pipelines expanded); a ParseError names
    the place (`source`:line:column) of what is wrong."""
    t = _Text(text, source)
    pos, end = t.skip_space(0, len(text)), len(text.rstrip())
    if text.startswith(_WRAPPER, pos) and end - pos > len(_WRAPPER) and text[end - 1] == ")":
        pos, end = pos + len(_WRAPPER), end - 1
    steps: list[Pass] = []
    while True:
        pos = t.skip_space(pos, end)
        if pos >= end:  # the end (an empty pipeline, or after a trailing comma)
            return steps
        m = _NAME_RE.match(text, pos, end)
        if not m:
            raise t.error(f"expected a pass name at {shown(text[pos:end])} (e.g. "
                          "'inline,regalloc,waits')", pos)
        name, name_pos = m.group(), pos
        pos = brace_pos = t.skip_space(m.end(), end)
        options = None
        if pos < end and text[pos] == "{":
            close = text.find("}", pos, end)
            if close < 0:
                raise t.error(f"missing '}}' after the options of '{name}'", pos)
            options = _options(t, name, pos + 1, close)
            pos = t.skip_space(close + 1, end)
        steps += _steps(t, name, name_pos, options, brace_pos)
        if pos >= end:
            return steps
        if text[pos] != ",":
            raise t.error(f"expected ',' between passes at {shown(text[pos:end])}", pos)
        pos += 1


@dataclass
class PassTiming:
    """Wall time of one pass run."""

    name: str
    seconds: float


def run_pipeline(module, pipeline: str | list[Pass], *, print_after_all=None,
                 timings: list[PassTiming] | None = None):
    """Run the passes on `module`; returns the resulting module.

    `print_after_all(name, module)` is called after every pass; `timings` collects times.
    Every value must be defined before its uses (checked first, a VerifyError): the passes
    follow def-use chains, and a cycle would never end liveness. (The rest of verification
    happens where a module comes in: parse_ir, the builder's finish, api.optimize.)
    """
    # (imported here: importing the pipeline and the registry imports no pass)
    from asterism.passes.machine import shared_machine_facts

    steps = parse_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
    if steps:
        check_dominance(module)
    with shared_machine_facts() as machine_facts:
        for step in steps:
            start = time.perf_counter()
            if not step.structured and has_structured(module):
                lower_structured_module(module)
                machine_facts.clear()
            result = step.apply(module)
            if result is not None:
                module = result
            if not step.keeps_machine_facts or result is not None:
                machine_facts.clear()
            if timings is not None:
                timings.append(PassTiming(step.name, time.perf_counter() - start))
            if print_after_all is not None:
                print_after_all(step.name, module)
    return module


__all__ = ["PassTiming", "parse_pipeline", "run_pipeline"]
