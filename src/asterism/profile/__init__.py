"""asterism.profile: what ran. Thread traces in rocprofv3's decoded ATT layout (read and
write), hotspot reports and pictures.

Modules: ``att`` (format model + reader), ``att_writer`` (writer), ``waitcnt`` (which memory
instructions each s_waitcnt waited for), ``report`` (analyzer + renderers), ``plot``
(matplotlib pictures, optional dependency), ``isa_text`` (instruction facts read from the
trace's disassembly text).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from asterism.profile.att import Trace, TraceError, read_att
from asterism.profile.att_writer import write_att
from asterism.profile.report import (
    RANKS,
    Report,
    analyze,
    load_source_map,
    render_json,
    render_markdown,
)


def trace_report(path: str | Path, top: int = 10, as_json: bool = False,
                 source_map: Mapping[int, str] | str | Path | None = None,
                 rank: str = "stall") -> str:
    """Read the ATT folder `path` and return its report (Markdown, or JSON if `as_json`),
    hotspots ranked by `rank` ("stall" or "cycles")."""
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
