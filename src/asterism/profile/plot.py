"""Pictures of a thread trace: a wave timeline and a stall-cause bar chart, in one PNG.

Layout (one figure, two panels):

- top, "wave timeline": one row per traced wave (y), cycles from the first wave's start
  (x). Each row has two bands: the upper thin band is the wave state from the timeline
  (IDLE/EXEC/WAIT/STALL...), the lower band has one bar per executed instruction from its
  first issue attempt to the end of its issue, colored by unit (VALU, MFMA, VMEM, LDS,
  SMEM, SALU, WAITCNT...); the stalled part of each bar is drawn darker, hatched.
- bottom, "stall cycles by cause": horizontal bars of the analyzer's stall breakdown.

matplotlib is imported only when plotting (it is an optional dependency: the ``plot``
extra); the Agg canvas is used directly so no GUI backend or global pyplot state is touched.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from asterism.errors import AsterismError
from asterism.profile.att import Trace, state_name
from asterism.profile.isa_text import mnemonic, unit_name
from asterism.profile.report import STALL_CAUSES, Report, analyze


class PlotError(AsterismError):
    """A plot cannot be drawn (matplotlib missing, output not writable)."""


# Two palettes that share no color, since both bands sit side by side.
STATE_COLORS = {
    "EMPTY": "#ffffff",
    "IDLE": "#e0e0e0",
    "EXEC": "#66c2a5",
    "WAIT": "#fc8d62",
    "STALL": "#e7298a",
}
UNIT_COLORS = {
    "VALU": "#1f77b4",
    "MFMA": "#9467bd",
    "SALU": "#17becf",
    "SMEM": "#bcbd22",
    "VMEM": "#d62728",
    "FLAT": "#8c564b",
    "LDS": "#ff7f0e",
    "WAITCNT": "#7f7f7f",
    "IMMED": "#b0b0b0",
    "JUMP": "#2ca02c",
    "NEXT": "#98df8a",
    "MESSAGE": "#000000",
}
_OTHER_COLOR = "#aaaaaa"


def _matplotlib() -> tuple[Any, Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        raise PlotError("plotting needs matplotlib, which is not installed; install it with "
                        "`pip install 'asterism[plot]'` (or `pip install matplotlib`)") from None
    return Figure, FigureCanvasAgg, Patch


def _darker(color: str) -> str:
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"#{r * 3 // 5:02x}{g * 3 // 5:02x}{b * 3 // 5:02x}"


def plot_trace(trace: Trace, out_png: str | Path, report: Report | None = None) -> Path:
    """Draw the wave timeline and the stall breakdown of `trace` into the PNG `out_png`."""
    figure_cls, canvas_cls, patch_cls = _matplotlib()
    out = Path(out_png)
    if not out.parent.is_dir():
        raise PlotError(f"{out.parent}: no such folder for the picture")
    if report is None:
        report = analyze(trace)
    waves = trace.waves
    origin = min((w.begin for w in waves), default=0)
    rows = max(len(waves), 1)

    fig = figure_cls(figsize=(14, 2.0 + 0.45 * rows + 3.2), dpi=110)
    grid = fig.add_gridspec(2, 1, height_ratios=[max(0.45 * rows + 1.0, 2.0), 3.0],
                            hspace=0.35)
    ax = fig.add_subplot(grid[0])
    used_units: dict[str, str] = {}
    used_states: dict[str, str] = {}
    for y, wave in enumerate(waves):
        # State band: runs of the timeline, back to back from the wave's start.
        spans: dict[str, list[tuple[int, int]]] = {}
        t = wave.begin - origin
        for span in wave.timeline:
            spans.setdefault(state_name(span.state), []).append((t, span.cycles))
            t += span.cycles
        for name, segs in spans.items():
            color = STATE_COLORS.get(name, _OTHER_COLOR)
            used_states[name] = color
            ax.broken_barh(segs, (y + 0.1, 0.22), facecolors=color, linewidth=0)
        # Instruction band: issue part in the unit color, stalled part darker and hatched.
        issue: dict[str, list[tuple[int, int]]] = {}
        stall: dict[str, list[tuple[int, int]]] = {}
        for rec in wave.instructions:
            row = trace.code.row(rec.line)
            unit = unit_name(mnemonic(row.isa) if row else "", rec.category)
            start = rec.time - origin
            if rec.stall:
                stall.setdefault(unit, []).append((start, rec.stall))
            if rec.duration > rec.stall:
                issue.setdefault(unit, []).append((start + rec.stall,
                                                   rec.duration - rec.stall))
        for unit in sorted(set(issue) | set(stall)):
            color = UNIT_COLORS.get(unit, _OTHER_COLOR)
            used_units[unit] = color
            if unit in stall:
                ax.broken_barh(stall[unit], (y + 0.38, 0.5), facecolors=_darker(color),
                               hatch="///", edgecolor="white", linewidth=0)
            if unit in issue:
                ax.broken_barh(issue[unit], (y + 0.38, 0.5), facecolors=color, linewidth=0)
    ax.set_ylim(0, rows)
    ax.set_yticks([y + 0.5 for y in range(len(waves))])
    ax.set_yticklabels([w.filename.removesuffix(".json") for w in waves], fontsize=8)
    ax.invert_yaxis()
    end = max((w.end for w in waves), default=origin + 1) - origin
    ax.set_xlim(0, max(end, 1))
    ax.set_xlabel(f"cycles since {origin}")
    title = ", ".join(trace.kernel_names()) or "trace"
    kind = "MODELED trace (timing model, not hardware)" if trace.modeled else "hardware capture"
    ax.set_title(f"{title} — wave timeline ({kind}); upper band: wave state, lower band: "
                 "instructions by unit (hatched = stalled)", fontsize=9)
    if used_states:
        states = ax.legend(handles=[patch_cls(facecolor=c, edgecolor="#999999", label=n)
                                    for n, c in used_states.items()],
                           title="wave state", loc="upper left", bbox_to_anchor=(1.005, 1.0),
                           fontsize=7, title_fontsize=7, frameon=False)
        ax.add_artist(states)
    if used_units:
        ax.legend(handles=[patch_cls(facecolor=c, label=n)
                           for n, c in sorted(used_units.items())],
                  title="unit", loc="upper left", bbox_to_anchor=(1.085, 1.0),
                  fontsize=7, title_fontsize=7, frameon=False)

    bx = fig.add_subplot(grid[1])
    causes = list(STALL_CAUSES)
    values = [report.stalls.get(c, 0) for c in causes]
    total = sum(values)
    bars = bx.barh(causes, values, color="#d62728")
    bx.invert_yaxis()
    for bar, value in zip(bars, values, strict=True):
        share = f"{100.0 * value / total:.1f}%" if total else "-"
        bx.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {value} ({share})",
                va="center", fontsize=8)
    bx.set_xlabel("stall cycles (sum over traced waves)")
    bx.set_title("stall cycles by cause", fontsize=9)
    bx.set_xlim(0, max(values + [1]) * 1.25)

    canvas_cls(fig)  # attaches the Agg canvas to the figure
    # Write beside the target and rename, so a failure leaves no partial picture.
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as fh:
            # "tight" keeps the legends to the right of the timeline inside the picture.
            fig.savefig(fh, format="png", bbox_inches="tight")
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise PlotError(f"{out}: cannot write the picture: {exc.strerror or exc}") from None
    return out

