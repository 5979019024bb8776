"""The `trace plot` picture: the wave timeline and a stall-cause bar chart, in one PNG.

Layout (one figure, two panels):

- top, "wave timeline": one row per SIMD slot (waves that ran one after another on a slot
  share it), cycles from the first wave's start (x); rasterized with NumPy by
  :func:`asterism.profile.pictures.draw_timeline` (per pixel: dominant wave state, dominant
  unit, stalled share), with the top hotspots marked where they executed. Drawing costs one
  pass over the records and one image whatever the capture's length (one bar per
  instruction took 37-41 s on a 3 M-cycle capture).
- bottom, "stall cycles by cause": horizontal bars of the analyzer's stall breakdown.

matplotlib is imported only when plotting (it is an optional dependency: the ``plot``
extra); the Agg canvas is used directly so no GUI backend or global pyplot state is touched.
"""

from __future__ import annotations

from pathlib import Path

from asterism.profile.att import Trace, record_arrays
from asterism.profile.pictures import (
    CAUSE_COLORS,
    OTHER_COLOR,
    STATE_COLORS,
    UNIT_COLORS,
    PlotError,
    draw_timeline,
    require_matplotlib,
    save_png,
    shown_lanes,
    trace_arrays,
)
from asterism.profile.report import STALL_CAUSES, Report, analyze

__all__ = ["CAUSE_COLORS", "OTHER_COLOR", "STATE_COLORS", "UNIT_COLORS", "PlotError",
           "plot_trace"]


def plot_trace(trace: Trace, out_png: str | Path, report: Report | None = None) -> Path:
    """Draw the wave timeline and the stall breakdown of `trace` into the PNG `out_png`."""
    figure_cls, canvas_cls, _ = require_matplotlib()
    out = Path(out_png)
    if not out.parent.is_dir():
        raise PlotError(f"{out.parent}: no such folder for the picture")
    records = record_arrays(trace)  # (read by the analysis and by the picture)
    if report is None:  # (only what the picture draws: a bundle passes its full analysis)
        report = analyze(trace, pictures_only=True, records=records)
    arr = trace_arrays(trace, records)
    rows = max(len(shown_lanes(arr)), 1)
    fig = figure_cls(figsize=(15, 1.6 + 0.42 * rows + 3.0), dpi=100)
    grid = fig.add_gridspec(2, 1, height_ratios=[max(0.42 * rows + 1.0, 2.0), 2.6],
                            hspace=0.35, right=0.82)
    draw_timeline(fig.add_subplot(grid[0]), trace, report, arr)
    bx = fig.add_subplot(grid[1])
    causes = list(STALL_CAUSES)
    values = [report.stalls.get(c, 0) for c in causes]
    total = sum(values)
    bars = bx.barh(causes, values, color=[CAUSE_COLORS.get(c, OTHER_COLOR) for c in causes])
    bx.invert_yaxis()
    for bar, value in zip(bars, values, strict=True):
        share = f"{100.0 * value / total:.1f}%" if total else "-"
        bx.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {value} ({share})",
                va="center", fontsize=8)
    bx.set_xlabel("stall cycles (sum over traced waves)")
    bx.set_title("stall cycles by cause", fontsize=9)
    bx.set_xlim(0, max(values + [1]) * 1.25)
    return save_png(fig, canvas_cls, out)
