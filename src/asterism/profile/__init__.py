"""asterism.profile: what ran. Thread traces in rocprofv3's decoded ATT layout (read and
write), hotspot reports and pictures.

Modules: ``att`` (format model + reader), ``att_writer`` (writer), ``waitcnt`` (which memory
instructions each s_waitcnt waited for), ``report`` (analyzer + renderers), ``plot``
(matplotlib pictures, optional dependency), ``isa_text`` (instruction facts read from the
trace's disassembly text).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asterism.profile.att import Trace, TraceError, read_att
    from asterism.profile.att_writer import write_att
    from asterism.profile.report import Report, analyze, render_json, render_markdown

# The names this package exports and their modules, loaded on first use: `asterism stats`
# imports asterism.profile.stats and needs none of the trace reader and analyzer.
_EXPORTS = {"Trace": "att", "TraceError": "att", "read_att": "att", "write_att": "att_writer",
            "Report": "report", "analyze": "report", "render_json": "report",
            "render_markdown": "report"}


def __getattr__(name: str):
    """An exported name, imported from its module on first use."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"asterism.profile.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def trace_report(path: str | Path, top: int = 10, as_json: bool = False,
                 source_map: Mapping[int, str] | str | Path | None = None,
                 rank: str = "stall") -> str:
    """Read the ATT folder `path` and return its report (Markdown, or JSON if `as_json`),
    hotspots ranked by `rank` ("stall" or "cycles")."""
    from asterism.profile.att import TraceError, read_att
    from asterism.profile.report import (
        RANKS,
        analyze,
        load_source_map,
        render_json,
        render_markdown,
    )

    if top < 0:
        raise TraceError(f"--top must be 0 or more, got {top}")
    if rank not in RANKS:
        raise TraceError(f"--rank must be one of {', '.join(RANKS)}, got {rank!r}")
    trace = read_att(path)
    if isinstance(source_map, (str, Path)):
        source_map = load_source_map(source_map)
    report = analyze(trace, source_map)
    if as_json:
        return render_json(report, top=top, rank=rank)
    return render_markdown(report, top=top, rank=rank)


def trace_plot(path: str | Path, out_png: str | Path) -> None:
    """Read the ATT folder `path` and draw its wave timeline and stall chart into `out_png`."""
    from asterism.profile.att import read_att
    from asterism.profile.plot import plot_trace  # matplotlib only loads when plotting

    plot_trace(read_att(path), out_png)


__all__ = [
    "Report",
    "Trace",
    "TraceError",
    "analyze",
    "read_att",
    "render_json",
    "render_markdown",
    "trace_plot",
    "trace_report",
    "write_att",
]
