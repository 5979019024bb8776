"""Fast pictures of a thread trace: wave timeline, stall breakdown, hotspot bars, source-line
heat list (PNG, matplotlib), and an interactive HTML view (no dependency, no network).

The timeline is rasterized with NumPy before matplotlib sees it: one image row band per wave
slot (waves that occupied the same SIMD slot one after another share a row), one column per
pixel. A pixel of the upper band is colored by the wave state with the most cycles in it, a
pixel of the middle band by the unit with the most instruction cycles, lighter where the
pixel is only partly covered; the thin lower band is red in proportion to the stalled
cycles. So the cost is one pass over the records (NumPy) plus one image, whatever the
capture's length, and a pixel holding many instructions shows what dominated it. The top
hotspot instructions are marked where they executed (one marker per pixel column).

matplotlib is imported only here (the ``plot`` extra); the Agg canvas is used directly.
"""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from asterism.errors import AsterismError
from asterism.profile.att import RECORD_COLUMNS, Trace, record_array, source_files
from asterism.profile.escape import mpl_text, script_json
from asterism.profile.isa_text import mnemonic, unit_name
from asterism.profile.report import STALL_CAUSES, Report
from asterism.timing.result import WaveState

STATE_COLORS = {"EMPTY": "#ffffff", "IDLE": "#d9d9d9", "EXEC": "#66c2a5", "WAIT": "#fc8d62",
                "STALL": "#e7298a"}
UNIT_COLORS = {"VALU": "#1f77b4", "MFMA": "#9467bd", "SALU": "#17becf", "SMEM": "#bcbd22",
               "VMEM": "#d62728", "FLAT": "#8c564b", "LDS": "#ff7f0e", "WAITCNT": "#7f7f7f",
               "IMMED": "#b0b0b0", "JUMP": "#2ca02c", "NEXT": "#98df8a",
               "MESSAGE": "#000000"}
OTHER_COLOR = "#aaaaaa"
CAUSE_COLORS = {"vmcnt wait": "#d62728", "lgkmcnt wait": "#ff7f0e", "barrier": "#8c564b",
                "MFMA dependency": "#9467bd", "VMEM issue": "#e377c2", "LDS": "#bcbd22",
                "SMEM": "#17becf", "other": "#7f7f7f"}
HOTSPOT_COLORS = ("#000000", "#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4")
TIMELINE_WIDTH = 1600  # pixel columns of the timeline raster
HTML_RECORD_LIMIT = 1_500_000  # records embedded in the HTML view
# Lanes (SIMD slots) drawn: a capture with thousands of slots would otherwise ask for a
# picture (and a canvas) thousands of rows tall; the rest are counted in the title.
TIMELINE_LANE_LIMIT = 64
HTML_LANE_LIMIT = 512  # 26 pixels each: within the browsers' canvas height limit
HTML_CONTEXT = 4  # ISA rows either side of a hotspot in the HTML view (source: twice that)


class PlotError(AsterismError):
    """A picture cannot be drawn (matplotlib missing, output not writable)."""


def require_matplotlib(error: type[AsterismError] = PlotError) -> tuple[Any, Any, Any]:
    """matplotlib's Figure, Agg canvas and Patch, or `error` saying how to install it."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        raise error("plotting needs matplotlib, which is not installed; install it with "
                    "`pip install 'asterism[plot]'` (or `pip install matplotlib`)") from None
    return Figure, FigureCanvasAgg, Patch


def _rgb(color: str) -> tuple[float, float, float]:
    return tuple(int(color[i:i + 2], 16) / 255.0 for i in (1, 3, 5))  # type: ignore[return-value]


def write_beside(out: Path, write: Callable[[Path], None], error: type[AsterismError],
                 what: str = "") -> Path:
    """Write `out` through `write(tmp)` on a temporary file beside it, then rename it into
    place, so a failure leaves no partial file; an OSError becomes `error`
    ("<out>: cannot write<what>: <reason>")."""
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex}"
    try:
        write(tmp)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise error(f"{out}: cannot write{what}: {exc.strerror or exc}") from None
    return out


def save_png(fig: Any, canvas_cls: Any, out: Path, *, error: type[AsterismError] = PlotError,
             tight: bool = True) -> Path:
    """Write the figure as the PNG `out` (cropped to its contents when `tight`) beside it and
    rename, so a failure leaves no partial picture."""
    if not out.parent.is_dir():
        raise error(f"{out.parent}: no such folder for the picture")
    canvas_cls(fig)
    options = {"bbox_inches": "tight"} if tight else {}

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            fig.savefig(fh, format="png", **options)

    return write_beside(out, write, error, " the picture")


# ---------------------------------------------------------------------------- arrays


@dataclass
class Lane:
    """The waves that occupied one SIMD slot, as arrays (times relative to the origin)."""

    label: str
    waves: list[int]  # indices into trace.waves
    start: np.ndarray  # instruction first-issue attempt
    stall: np.ndarray
    dur: np.ndarray
    line: np.ndarray
    unit: np.ndarray  # index into TraceArrays.units
    span_start: np.ndarray  # wave-state runs
    span_len: np.ndarray
    span_state: np.ndarray


@dataclass
class TraceArrays:
    """A trace's records as NumPy arrays, grouped by lane (SE/CU/SIMD/slot)."""

    origin: int
    end: int
    lanes: list[Lane]
    units: list[str]
    line_unit: dict[int, str] = field(default_factory=dict)

    @property
    def span(self) -> int:
        """Cycles from the first wave's start to the last wave's end."""
        return max(self.end - self.origin, 1)


def trace_arrays(trace: Trace, records: Sequence[np.ndarray] | None = None) -> TraceArrays:
    """The records of every wave as arrays, one Lane per SIMD slot, in time order
    (`records`: the waves' :func:`~asterism.profile.att.record_arrays` when made already)."""
    waves = trace.waves
    origin = min((w.begin for w in waves), default=0)
    end = max((w.end for w in waves), default=origin + 1)
    mn = {r.line: mnemonic(r.isa) for r in trace.code.rows}
    units: dict[str, int] = {}
    unit_of: dict[tuple[int, int], int] = {}  # (line, category) -> unit index
    groups: dict[tuple[int, int, int, int], list[int]] = {}
    for i, w in enumerate(waves):
        groups.setdefault((w.se, w.cu, w.simd, w.slot), []).append(i)
    lanes = []
    for (se, cu, simd, slot), idx in sorted(groups.items()):
        idx.sort(key=lambda i: waves[i].begin)
        per_wave = [records[i] if records else record_array(waves[i]) for i in idx]
        raw = np.concatenate(per_wave) if per_wave else np.empty((0, 5), dtype=np.int64)
        n = len(raw)
        col = {c: raw[:, k] for k, c in enumerate(RECORD_COLUMNS)}
        codes = np.empty(n, dtype=np.int16)
        keys = col["line"] * 256 + col["category"]  # (the reader bounds categories to 0..255)
        uniq, inverse = np.unique(keys, return_inverse=True)
        table = np.empty(len(uniq), dtype=np.int16)
        for j, key in enumerate(uniq.tolist()):
            line, cat = divmod(key, 256)
            u = unit_of.get((line, cat))
            if u is None:
                name = unit_name(mn.get(line, ""), cat)
                u = unit_of[(line, cat)] = units.setdefault(name, len(units))
            table[j] = u
        codes[:] = table[inverse] if n else codes
        spans = [(s.begin, s.cycles, s.state) for i in idx for s in _spans_from(waves[i])]
        sp = np.array(spans, dtype=np.int64).reshape(-1, 3)
        lanes.append(Lane(
            label=f"se{se} cu{cu} simd{simd} slot{slot}" + (f" ({len(idx)} waves)"
                                                           if len(idx) > 1 else ""),
            waves=idx, start=col["time"] - origin, stall=col["stall"], dur=col["duration"],
            line=col["line"], unit=codes,
            span_start=sp[:, 0] - origin, span_len=sp[:, 1], span_state=sp[:, 2]))
    names = sorted(units, key=lambda k: units[k])
    return TraceArrays(origin, end, lanes, names)


def _spans_from(wave: Any) -> list[Any]:
    """The wave's timeline runs with absolute start times in ``begin`` order."""
    out, t = [], wave.begin
    for s in wave.timeline:
        out.append(_Span(t, s.cycles, s.state))
        t += s.cycles
    return out


@dataclass
class _Span:
    begin: int
    cycles: int
    state: int


def _coverage(starts: np.ndarray, lengths: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Cycles of the intervals [start, start+length) in each pixel between `edges`:
    differences of the covered length before each edge (intervals sorted by start)."""
    if not len(starts):
        return np.zeros(len(edges) - 1)
    order = np.argsort(starts, kind="stable")
    s, ln = starts[order].astype(np.float64), lengths[order].astype(np.float64)
    before = np.concatenate(([0.0], np.cumsum(ln)))
    k = np.searchsorted(s, edges, side="right") - 1
    kk = np.clip(k, 0, len(s) - 1)
    covered = np.where(k >= 0, before[kk] + np.clip(edges - s[kk], 0.0, ln[kk]), 0.0)
    return np.diff(covered)


def _band(starts: np.ndarray, lengths: np.ndarray, keys: np.ndarray, colors: list[str],
          edges: np.ndarray) -> np.ndarray:
    """RGB per pixel: the key with the most cycles there, lightened by the uncovered part."""
    width = len(edges) - 1
    per = np.zeros((len(colors), width))
    for k in np.unique(keys).tolist():
        sel = keys == k
        per[k] = _coverage(starts[sel], lengths[sel], edges)
    pixel = np.diff(edges)
    best = per.argmax(axis=0)
    cover = np.clip(per.sum(axis=0) / pixel, 0.0, 1.0)
    palette = np.array([_rgb(c) for c in colors])
    rgb = palette[best]
    return 1.0 - (1.0 - rgb) * cover[:, None]  # blend toward white where not covered


# ---------------------------------------------------------------------------- PNGs


def plot_timeline(trace: Trace, report: Report, out: str | Path, top: int = 5,
                  arrays: TraceArrays | None = None, width: int = TIMELINE_WIDTH) -> Path:
    """The wave timeline PNG: state band, dominant unit band, stall band per lane; the top
    `top` hotspots (by stall) marked where they executed."""
    figure_cls, canvas_cls, _ = require_matplotlib()
    arr = arrays or trace_arrays(trace)
    rows = max(len(shown_lanes(arr)), 1)
    fig = figure_cls(figsize=(15, 1.6 + 0.42 * rows), dpi=100)
    ax = fig.add_axes((0.13, 0.12 if rows > 3 else 0.25, 0.70, 0.78 if rows > 3 else 0.6))
    draw_timeline(ax, trace, report, arr, top, width)
    return save_png(fig, canvas_cls, Path(out))


def draw_timeline(ax: Any, trace: Trace, report: Report, arr: TraceArrays, top: int = 5,
                  width: int = TIMELINE_WIDTH) -> None:
    """Draw the rasterized timeline of `arr` (see the module doc) into the axes `ax`."""
    from matplotlib.legend import Legend
    from matplotlib.patches import Patch as patch_cls

    edges = np.linspace(0.0, float(arr.span), width + 1)
    state_names = [s.name for s in WaveState]
    state_colors = [STATE_COLORS.get(n, OTHER_COLOR) for n in state_names]
    unit_colors = [UNIT_COLORS.get(u, OTHER_COLOR) for u in arr.units]
    band_rows = (3, 5, 2)  # pixel rows of the state, unit and stall bands
    lane_h = sum(band_rows) + 4  # 3 free rows on top for the hotspot markers
    lanes = shown_lanes(arr)
    img = np.ones((lane_h * max(len(lanes), 1), width, 3))
    used_states: set[int] = set()
    for y, lane in enumerate(lanes):
        states = np.clip(lane.span_state, 0, len(state_names) - 1)
        used_states.update(np.unique(states).tolist())
        top_y = y * lane_h + 3
        img[top_y:top_y + band_rows[0]] = _band(lane.span_start, lane.span_len, states,
                                                state_colors, edges)
        img[top_y + 3:top_y + 3 + band_rows[1]] = _band(lane.start, lane.dur, lane.unit,
                                                        unit_colors, edges)
        stalled = _coverage(lane.start, lane.stall, edges) / np.diff(edges)
        red = np.stack([np.ones(width), 1.0 - np.clip(stalled, 0, 1),
                        1.0 - np.clip(stalled, 0, 1)], axis=1)
        img[top_y + 8:top_y + 8 + band_rows[2]] = red
    rows = max(len(lanes), 1)
    # Handed over as 8-bit RGB: matplotlib resamples a float image in float and then
    # converts it, three times the work (a third of the timeline's time) for the same pixels.
    ax.imshow(np.rint(img * 255).astype(np.uint8), aspect="auto", interpolation="nearest",
              extent=(0, arr.span, rows, 0))
    ax.set_yticks([y + 0.5 for y in range(len(lanes))])
    ax.set_yticklabels([mpl_text(lane.label) for lane in lanes], fontsize=7)
    ax.set_xlabel(f"cycles since {arr.origin} (one pixel column = "
                  f"{arr.span / width:.0f} cycles)", fontsize=8)
    kind = "MODELED trace (timing model)" if trace.modeled else "hardware capture"
    title = mpl_text(", ".join(trace.kernel_names()) or "trace")
    if len(lanes) < len(arr.lanes):
        title += f" (first {len(lanes)} of {len(arr.lanes)} SIMD slots)"
    ax.set_title(f"{title}: wave timeline ({kind}). Per lane: wave state | dominant unit | "
                 "stalled share (red); markers: top hotspots", fontsize=9)
    hot = report.hotspots(top, "stall")
    handles = []
    for rank, h in enumerate(hot):
        color = HOTSPOT_COLORS[rank % len(HOTSPOT_COLORS)]
        for y, lane in enumerate(lanes):
            t = lane.start[lane.line == h.line]
            if not len(t):
                continue
            # (in float64: t * width can pass int64 for a long capture; exact below 2^53)
            cols = np.unique((t.astype(np.float64) * width // arr.span).astype(np.int64))
            ax.scatter((cols + 0.5) * arr.span / width, np.full(len(cols), y + 0.1),
                       marker="v", s=22, color=color, linewidths=0, zorder=3)
        handles.append(patch_cls(color=color, label=f"#{rank + 1} line {h.line}: "
                                                    f"{_short(mpl_text(h.isa), 34)}"))
    legends = [("hotspot (by stall)", handles),
               ("wave state", [patch_cls(facecolor=STATE_COLORS.get(state_names[s]),
                                         edgecolor="#999999", label=state_names[s])
                               for s in sorted(used_states)]),
               ("unit", [patch_cls(color=c, label=u)
                         for u, c in zip(arr.units, unit_colors, strict=True)])]
    y0 = 1.0
    for name, hs in legends:
        if not hs:
            continue
        # Legend objects added as artists: a second ax.legend() call would drop the first.
        leg = Legend(ax, hs, [h.get_label() for h in hs], title=name, loc="upper left",
                     bbox_to_anchor=(1.005, y0), fontsize=6, title_fontsize=7, frameon=False)
        ax.add_artist(leg)
        leg.set_clip_on(False)  # add_artist clips to the axes, which would hide it
        # Next legend below this one: entries of ~1.75 font heights, plus title and gap
        # (points at the figure's dpi, as a fraction of the axes height in pixels).
        px = ax.figure.dpi / 72.0
        y0 -= (len(hs) * 6 * 1.75 + 7 * 1.75 + 10) * px / max(ax.get_window_extent().height,
                                                                1.0)
    ax.set_xlim(0, arr.span)




def shown_lanes(arr: TraceArrays) -> list[Lane]:
    """The lanes a timeline picture draws: the first :data:`TIMELINE_LANE_LIMIT`."""
    return arr.lanes[:TIMELINE_LANE_LIMIT]


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def plot_stalls(report: Report, out: str | Path) -> Path:
    """Stall cycles by cause and wave-state shares, side by side."""
    figure_cls, canvas_cls, _ = require_matplotlib()
    fig = figure_cls(figsize=(11, 3.4), dpi=100)
    ax, bx = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    causes = sorted(STALL_CAUSES, key=lambda c: -report.stalls.get(c, 0))
    values = [report.stalls.get(c, 0) for c in causes]
    total = sum(values)
    bars = ax.barh(causes, values, color=[CAUSE_COLORS.get(c, OTHER_COLOR) for c in causes])
    ax.invert_yaxis()
    for bar, v in zip(bars, values, strict=True):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                f" {v} ({100.0 * v / total:.1f}%)" if total else " 0", va="center", fontsize=7)
    ax.set_xlim(0, max(values + [1]) * 1.35)
    ax.set_title("stall cycles by cause (sum over traced waves)", fontsize=9)
    ax.tick_params(labelsize=8)
    states = report.states
    st_total = sum(states.values()) or 1
    names = list(states)
    bx.barh(names, [states[n] for n in names],
            color=[STATE_COLORS.get(n, OTHER_COLOR) for n in names], edgecolor="#999999")
    bx.invert_yaxis()
    for i, n in enumerate(names):
        bx.text(states[n], i, f" {100.0 * states[n] / st_total:.1f}%", va="center", fontsize=7)
    bx.set_xlim(0, max(list(states.values()) + [1]) * 1.3)
    bx.set_title("wave states (cycles)", fontsize=9)
    bx.tick_params(labelsize=8)
    fig.subplots_adjust(wspace=0.45)
    return save_png(fig, canvas_cls, Path(out))


def plot_hotspots(report: Report, out: str | Path, top: int = 15) -> Path:
    """The `top` instructions by stall cycles, bars split by stall cause plus issue."""
    figure_cls, canvas_cls, patch_cls = require_matplotlib()
    hot = report.hotspots(top, "stall")
    fig = figure_cls(figsize=(12, 1.0 + 0.32 * max(len(hot), 1)), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    labels = [f"#{i + 1} L{h.line} {_short(mpl_text(h.isa), 44)}" for i, h in enumerate(hot)]
    left = np.zeros(len(hot))
    for cause in STALL_CAUSES:
        vals = np.array([h.causes.get(cause, 0) for h in hot], dtype=float)
        if vals.any():
            ax.barh(labels, vals, left=left, color=CAUSE_COLORS.get(cause), label=cause)
            left += vals
    issue = np.array([h.issue for h in hot], dtype=float)
    ax.barh(labels, issue, left=left, color="#c7e9c0", label="issue")
    for i, h in enumerate(hot):
        share = report.stall_share(h)
        src = f"  {_short(mpl_text(_base(h.source)), 40)}" if h.source else ""
        ax.text(left[i] + issue[i], i, f" {share:.1f}% of stall{src}" if share is not None
                else "", va="center", fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, max(list(left + issue) + [1]) * 1.6)
    ax.tick_params(labelsize=7)
    ax.set_xlabel("cycles (sum over traced waves)", fontsize=8)
    ax.set_title("top hotspots by stall cycles (bar: stall by cause, then issue)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right", frameon=False)
    return save_png(fig, canvas_cls, Path(out))


def _base(location: str) -> str:
    first = location.split(";")[0].split(", ")[0].strip()
    return first.rsplit("/", 1)[-1]


def source_heat(report: Report, top: int = 20) -> list[dict[str, Any]]:
    """Source lines by stall cycles: location, its text, instructions, hits, cycles, stall."""
    text = {}
    for row in report.listing:
        if row.source and row.source_text:
            text.setdefault(row.source, row.source_text)
    rows = sorted(report.sources, key=lambda s: (-s.stall, -s.cycles, s.location))[:top]
    return [{"location": s.location, "text": text.get(s.location, ""),
             "instructions": s.instructions, "hits": s.hits, "cycles": s.cycles,
             "stall": s.stall} for s in rows]


def plot_source_heat(report: Report, out: str | Path, top: int = 20) -> Path:
    """The source-line heat list: the `top` source lines by stall, with their text."""
    figure_cls, canvas_cls, _ = require_matplotlib()
    heat = source_heat(report, top)
    fig = figure_cls(figsize=(12, 1.0 + 0.3 * max(len(heat), 1)), dpi=100)
    draw_source_heat(fig, heat)
    return save_png(fig, canvas_cls, Path(out))


def draw_source_heat(fig: Any, heat: list[dict[str, Any]]) -> Any:
    """Draw the heat list into `fig`: bars on the left (the x axis ends 5 % past the
    longest bar), each line's text in a panel of its own on the right; the bar axes."""
    if not heat:
        ax = fig.add_subplot(1, 1, 1)
        ax.text(0.5, 0.5, "no source locations in this trace (no line table, no PC map)",
                ha="center", va="center", fontsize=9)
        ax.set_axis_off()
        return ax
    grid = fig.add_gridspec(1, 2, width_ratios=[3, 2], wspace=0.02)
    ax = fig.add_subplot(grid[0])
    tx = fig.add_subplot(grid[1], sharey=ax)
    labels = [_short(mpl_text(_base(h["location"])), 34) for h in heat]
    stall = np.array([h["stall"] for h in heat], dtype=float)
    issue = np.array([h["cycles"] - h["stall"] for h in heat], dtype=float)
    ax.barh(labels, stall, color="#d62728", label="stall")
    ax.barh(labels, issue, left=stall, color="#c7e9c0", label="issue")
    for i, h in enumerate(heat):
        tx.text(0.0, i, f" {_short(mpl_text(h['text']), 70)}", va="center", fontsize=7,
                family="monospace")
    ax.invert_yaxis()
    ax.set_xlim(0, max(float((stall + issue).max()), 1.0) * 1.05)
    tx.set_axis_off()
    ax.tick_params(labelsize=7)
    ax.set_xlabel("cycles (sum over traced waves)", fontsize=8)
    ax.set_title("source lines by stall cycles (text of the line at the right)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right", frameon=False)
    return ax


# ---------------------------------------------------------------------------- HTML


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def html_data(trace: Trace, report: Report, arrays: TraceArrays | None = None,
              limit: int = HTML_RECORD_LIMIT, top: int = 10,
              lane_limit: int = HTML_LANE_LIMIT) -> dict[str, Any]:
    """What the HTML view embeds: per lane typed arrays (base64, little-endian), the code
    rows with source text, and the hotspots; the first `lane_limit` lanes, at most `limit`
    records."""
    arr = arrays or trace_arrays(trace)
    shown = arr.lanes[:max(lane_limit, 0)]
    total = sum(len(lane.start) for lane in shown)
    keep = 1.0 if total <= limit else limit / total
    # Times from the first wave's start: int32 while they fit (half the bytes), else
    # float64, exact to 2^53 (the reader's bound).
    longest = max((int(lane.span_len.max()) for lane in shown if len(lane.span_len)),
                  default=0)
    tdt = "i4" if max(arr.span, longest) + 65535 < 2**31 else "f8"
    lanes = []
    for lane in shown:
        n = int(len(lane.start) * keep)  # a lane's first records when over the limit
        lanes.append({
            "label": lane.label, "n": n,
            "start": _b64(lane.start[:n].astype("<" + tdt)),
            "dur": _b64(np.minimum(lane.dur[:n], 65535).astype("<u2")),
            "stall": _b64(np.minimum(lane.stall[:n], 65535).astype("<u2")),
            "line": _b64(lane.line[:n].astype("<i4")),
            "unit": _b64(lane.unit[:n].astype("<u2")),
            "sstart": _b64(lane.span_start.astype("<" + tdt)),
            "slen": _b64(lane.span_len.astype("<" + tdt)),
            "sstate": _b64(lane.span_state.astype("<u1")),
        })
    code = {r.line: [r.isa, r.source, r.source_text, r.vaddr, r.stall, r.cycles, r.hits,
                     r.cause] for r in report.listing if r.hits}
    hot = report.hotspots(top, "stall")
    files = source_files(trace) if any(h.source for h in hot) else {}
    panels = {}
    for h in hot:
        panels[h.line] = {
            "isa": [[c.line, c.isa[:200], c.stall, c.cycles, c.hits]
                    for c in report.context(h.line, HTML_CONTEXT)],
            "source": _source_snippet(h.source, files)}
    return {
        "title": ", ".join(report.kernels) or "trace",
        "modeled": report.modeled, "origin": arr.origin, "span": arr.span, "time_dtype": tdt,
        "truncated": keep < 1.0, "records": total, "lanes_total": len(arr.lanes),
        "units": arr.units, "unit_colors": [UNIT_COLORS.get(u, OTHER_COLOR) for u in arr.units],
        "states": [s.name for s in WaveState],
        "state_colors": [STATE_COLORS.get(s.name, OTHER_COLOR) for s in WaveState],
        "hotspots": [h.line for h in hot], "panels": panels,
        "stall_total": report.stall_cycles,
        "hot_colors": list(HOTSPOT_COLORS), "code": code, "lanes": lanes,
    }


def _source_snippet(location: str, files: dict[str, list[str]]) -> dict[str, Any] | None:
    """The lines around a ``file:line`` location in a file the capture ships: {"file",
    "line", "first", "lines"} (each line at most 200 characters), or None."""
    first = location.split(";")[0].split(", ")[0].strip()
    path, sep, num = first.rpartition(":")
    if not (sep and num.isascii() and num.isdigit() and len(num) <= 9) or path not in files:
        return None
    text, n = files[path], int(num)
    if not 0 < n <= len(text):
        return None
    lo = max(n - 1 - HTML_CONTEXT * 2, 0)
    return {"file": path[-200:], "line": n, "first": lo + 1,
            "lines": [ln[:200] for ln in text[lo:n + HTML_CONTEXT * 2]]}


def write_html(trace: Trace, report: Report, out: str | Path,
               arrays: TraceArrays | None = None, limit: int = HTML_RECORD_LIMIT) -> Path:
    """The interactive timeline: wheel to zoom, drag to pan, hover for the instruction and
    its source line. One self-contained file (inline script and data, no network)."""
    page = _HTML.replace("/*DATA*/null", script_json(html_data(trace, report, arrays, limit)))
    path = Path(out)
    if not path.parent.is_dir():
        raise PlotError(f"{path.parent}: no such folder for the HTML view")
    return write_beside(path, lambda tmp: tmp.write_text(page, encoding="utf-8"), PlotError)


_HTML = r"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>asterism trace view</title>
<style>
body{font:13px sans-serif;margin:8px;color:#222}
#wrap{position:relative}
canvas{border:1px solid #ccc;cursor:crosshair;display:block}
#tip{position:absolute;pointer-events:none;background:#fffbe6;border:1px solid #aa9;
 padding:4px 6px;font:12px monospace;white-space:pre;display:none;z-index:2}
#status{color:#666;margin:4px 0}
.key span{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px}
#below{display:flex;gap:16px;align-items:flex-start;margin-top:8px}
#hot{border-collapse:collapse;font:12px monospace}
#hot td,#hot th{border:1px solid #ddd;padding:2px 6px;text-align:right}
#hot td.t{text-align:left;max-width:420px;overflow:hidden;white-space:nowrap}
#hot tr.row{cursor:pointer} #hot tr.row:hover{background:#eef}
#hot tr.sel{background:#dde6ff}
#panel{flex:1;min-width:380px}
#panel pre{font:12px monospace;background:#f7f7f7;border:1px solid #ddd;padding:4px;
 margin:4px 0;overflow-x:auto}
#panel .here{background:#ffe08a;display:block}
</style></head><body>
<h3 id="title"></h3>
<div id="status"></div>
<div class="key" id="key"></div>
<div id="wrap"><canvas id="cv" width="1400" height="400"></canvas><div id="tip"></div></div>
<p>Wheel: zoom at the cursor; drag: pan; double-click: reset. Per lane: wave state (thin),
instructions by unit (stalled part darker), triangles: top hotspots by stall. Click a hotspot
below: its source line and ISA, and its executions marked (blue) on the timeline; the
arrows step through them.</p>
<div id="below"><div><b>Hotspots by stall</b><table id="hot"></table></div>
<div id="panel"><b id="ptitle">Select a hotspot</b>
<div id="occ"></div><pre id="psrc"></pre><pre id="pisa"></pre></div></div>
<div id="selftest"></div>
<script>
"use strict";
const D = /*DATA*/null;
function dec(b64, T) {
  const s = atob(b64), u = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
  return new T(u.buffer);
}
const T = D.time_dtype === "f8" ? Float64Array : Int32Array;
const lanes = D.lanes.map(l => ({label: l.label, start: dec(l.start, T),
  dur: dec(l.dur, Uint16Array), stall: dec(l.stall, Uint16Array), line: dec(l.line, Int32Array),
  unit: dec(l.unit, Uint16Array), ss: dec(l.sstart, T), sl: dec(l.slen, T),
  st: dec(l.sstate, Uint8Array)}));
const hotRank = new Map(D.hotspots.map((l, i) => [l, i]));
const cv = document.getElementById("cv"), ctx = cv.getContext("2d");
const tip = document.getElementById("tip");
const LEFT = 190, LANE = 26;
cv.height = Math.max(60, lanes.length * LANE + 30);
let t0 = 0, t1 = D.span;
document.getElementById("title").textContent = D.title + (D.modeled ?
  " (MODELED trace: timing model, not hardware)" : " (hardware capture)");
document.getElementById("status").textContent = D.records + " instruction records" +
  (D.truncated ? " (the view embeds the first part of each lane only)" : "") +
  (D.lanes_total > lanes.length ? " in the first " + lanes.length + " of " + D.lanes_total +
   " SIMD slots" : "") +
  ", " + D.span + " cycles";
D.units.forEach((u, i) => {  // DOM nodes, not innerHTML: names stay text
  const swatch = document.createElement("span");
  swatch.style.background = D.unit_colors[i];
  document.getElementById("key").append(swatch, u);
});
function lowerBound(a, x) { let lo = 0, hi = a.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; }
  return lo; }
function darker(c) { const n = parseInt(c.slice(1), 16);
  const r = (n >> 16) * 0.6 | 0, g = ((n >> 8) & 255) * 0.6 | 0, b = (n & 255) * 0.6 | 0;
  return "rgb(" + r + "," + g + "," + b + ")"; }
function xOf(t) { return LEFT + (t - t0) * (cv.width - LEFT - 10) / (t1 - t0); }
function tOf(x) { return t0 + (x - LEFT) * (t1 - t0) / (cv.width - LEFT - 10); }
function draw() {
  ctx.clearRect(0, 0, cv.width, cv.height);
  ctx.font = "11px sans-serif"; ctx.fillStyle = "#222";
  const cpp = (t1 - t0) / (cv.width - LEFT - 10);
  lanes.forEach((L, y) => {
    const top = 10 + y * LANE;
    ctx.fillStyle = "#222"; ctx.fillText(L.label.slice(0, 30), 4, top + 14);
    for (let i = 0; i < L.ss.length; i++) {
      const a = L.ss[i], b = a + L.sl[i]; if (b < t0 || a > t1) continue;
      ctx.fillStyle = D.state_colors[L.st[i]] || "#aaa";
      ctx.fillRect(xOf(a), top, Math.max(1, xOf(b) - xOf(a)), 4);
    }
    // One drawn record per pixel column: the longest one there (aggregation when zoomed out).
    const lo = Math.max(0, lowerBound(L.start, t0 - 70000)), hi = lowerBound(L.start, t1 + 1);
    let col = -1, best = -1;
    const flush = () => { if (best < 0) return; const i = best;
      const xa = xOf(L.start[i]), xs = xOf(L.start[i] + L.stall[i]),
            xe = xOf(L.start[i] + L.dur[i]);
      const c = D.unit_colors[L.unit[i]] || "#aaa";
      ctx.fillStyle = darker(c); ctx.fillRect(xa, top + 6, Math.max(1, xs - xa), 12);
      ctx.fillStyle = c; ctx.fillRect(xs, top + 6, Math.max(1, xe - xs), 12); };
    for (let i = lo; i < hi; i++) {
      if (L.start[i] + L.dur[i] < t0) continue;
      const c = Math.floor(xOf(L.start[i]));
      if (c !== col) { flush(); col = c; best = i; }
      else if (L.dur[i] > L.dur[best]) best = i;
      const r = hotRank.get(L.line[i]);
      if (r !== undefined && r < 6) { ctx.fillStyle = D.hot_colors[r];
        const x = xOf(L.start[i]); ctx.beginPath(); ctx.moveTo(x - 3, top + 19);
        ctx.lineTo(x + 3, top + 19); ctx.lineTo(x, top + 24); ctx.fill(); }
    }
    flush();
    if (sel !== null) { ctx.fillStyle = "#1f4fff";  // the selected line's executions
      for (let i = lo; i < hi; i++) if (L.line[i] === sel) {
        ctx.fillRect(Math.floor(xOf(L.start[i])), top + 2, 2, 20); } }
  });
  // Bars of a zoomed view start left of the axis: the label column is drawn last.
  ctx.clearRect(0, 0, LEFT, cv.height - 14); ctx.fillStyle = "#222";
  lanes.forEach((L, y) => ctx.fillText(L.label.slice(0, 30), 4, 10 + y * LANE + 14));
  ctx.fillText("cycles " + Math.round(t0) + " .. " + Math.round(t1) + " (" +
    cpp.toFixed(1) + " cycles/pixel)", LEFT, cv.height - 4);
}
function find(x, y) {
  const li = Math.floor((y - 10) / LANE); if (li < 0 || li >= lanes.length) return null;
  const L = lanes[li], t = tOf(x), slack = 2 * (t1 - t0) / (cv.width - LEFT - 10);
  let i = lowerBound(L.start, t + 1) - 1, hit = -1;
  for (let k = i; k >= 0 && k > i - 64; k--) {
    if (L.start[k] <= t + slack && L.start[k] + Math.max(L.dur[k], 1) >= t - slack) {
      hit = k; break; } }
  if (hit < 0) return null;
  const c = D.code[L.line[hit]] || ["?", "", "", 0, 0, 0, 0, ""];
  return {lane: L.label, time: L.start[hit] + D.origin, line: L.line[hit], isa: c[0],
    source: c[1], text: c[2], pc: c[3], stall: L.stall[hit], dur: L.dur[hit],
    tstall: c[4], hits: c[6], cause: c[7]};
}
function describe(h) {
  return h.isa + "\nline " + h.line + "  PC 0x" + h.pc.toString(16) + "  at cycle " + h.time +
    "\nthis execution: " + h.stall + " stall / " + h.dur + " cycles" +
    "\nall executions: " + h.hits + " hits, " + h.tstall + " stall cycles" +
    (h.cause ? " (" + h.cause + ")" : "") +
    (h.source ? "\n" + h.source : "") + (h.text ? "\n  " + h.text : "");
}
cv.addEventListener("mousemove", e => {
  const r = cv.getBoundingClientRect(), h = find(e.clientX - r.left, e.clientY - r.top);
  if (drag) { const dt = (drag - e.clientX) * (t1 - t0) / (cv.width - LEFT - 10);
    t0 += dt; t1 += dt; drag = e.clientX; draw(); }
  if (!h) { tip.style.display = "none"; return; }
  tip.textContent = describe(h); tip.style.display = "block";
  tip.style.left = (e.clientX - r.left + 14) + "px";
  tip.style.top = (e.clientY - r.top + 14) + "px";
});
let drag = 0;
cv.addEventListener("mousedown", e => { drag = e.clientX; });
window.addEventListener("mouseup", () => { drag = 0; });
cv.addEventListener("mouseleave", () => { tip.style.display = "none"; });
cv.addEventListener("wheel", e => { e.preventDefault();
  const r = cv.getBoundingClientRect(), t = tOf(e.clientX - r.left);
  const f = e.deltaY < 0 ? 0.8 : 1.25;
  t0 = t - (t - t0) * f; t1 = t + (t1 - t) * f;
  if (t1 - t0 < 20) t1 = t0 + 20; draw(); }, {passive: false});
cv.addEventListener("dblclick", () => { t0 = 0; t1 = D.span; draw(); });
let sel = null, occ = [], at = -1;  // selected line, its executions [lane, index], current
function el(tag, text, cls) { const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; }
function buildTable() {
  const tb = document.getElementById("hot");
  const head = el("tr"); ["#", "line", "stall", "% stall", "cycles", "hits", "cause",
    "instruction", "source"].forEach(h => head.append(el("th", h))); tb.append(head);
  D.hotspots.forEach((line, k) => { const c = D.code[line] || ["?", "", "", 0, 0, 0, 0, ""];
    const tr = el("tr", undefined, "row"); tr.dataset.line = line;
    const pct = D.stall_total ? (100 * c[4] / D.stall_total).toFixed(1) : "-";
    [k + 1, line, c[4], pct, c[5], c[6]].forEach(v => tr.append(el("td", String(v))));
    tr.append(el("td", c[7] || "-", "t"), el("td", c[0], "t"),
              el("td", (c[1] || "").split(";")[0].split("/").pop(), "t"));
    tr.addEventListener("click", () => select(line)); tb.append(tr); });
}
function select(line) {
  sel = line; occ = [];
  lanes.forEach((L, y) => { for (let i = 0; i < L.line.length; i++)
    if (L.line[i] === line) occ.push([y, i]); });
  occ.sort((a, b) => lanes[a[0]].start[a[1]] - lanes[b[0]].start[b[1]]);
  document.querySelectorAll("#hot tr.row").forEach(tr =>
    tr.classList.toggle("sel", Number(tr.dataset.line) === line));
  const c = D.code[line] || ["?", "", "", 0, 0, 0, 0, ""], p = D.panels[line] || {};
  document.getElementById("ptitle").textContent = "line " + line + ": " + c[0];
  const src = document.getElementById("psrc"); src.replaceChildren();
  if (p.source) { src.append(el("span", p.source.file + ":" + p.source.line + "\n"));
    p.source.lines.forEach((t, k) => { const n = p.source.first + k;
      src.append(el("span", String(n).padStart(5) + "  " + t + "\n",
                    n === p.source.line ? "here" : undefined)); });
  } else src.append(el("span", c[1] ? c[1] + " (file not in the capture)" :
                                      "no source location"));
  const isa = document.getElementById("pisa"); isa.replaceChildren();
  (p.isa || []).forEach(r => isa.append(el("span", String(r[0]).padStart(5) + " " +
    String(r[2]).padStart(7) + " " + String(r[3]).padStart(7) + "  " + r[1] + "\n",
    r[0] === line ? "here" : undefined)));
  at = -1; step(1);
}
function step(d) {
  const box = document.getElementById("occ"); box.replaceChildren();
  if (!occ.length) { box.append(el("span", "no execution in the embedded records"));
    draw(); return; }
  at = (at + d + occ.length) % occ.length;
  const [y, i] = occ[at], L = lanes[y];
  t0 = L.start[i] - 200; t1 = L.start[i] + Math.max(400, L.dur[i] * 4); draw();
  const prev = el("button", "<"), next = el("button", ">");
  prev.onclick = () => step(-1); next.onclick = () => step(1);
  box.append(prev, el("span", " execution " + (at + 1) + " of " + occ.length + " (" +
    L.label + ", cycle " + (L.start[i] + D.origin) + ", stall " + L.stall[i] + ") "), next);
}
buildTable();
draw();
window.asterismView = {lanes, find, describe, draw, select, step,
  zoom(a, b) { t0 = a; t1 = b; draw(); }, xOf, range: () => [t0, t1]};
// #selftest: zoom onto the first top hotspot, hover it, and write what the page shows.
if (location.hash === "#selftest") {
  const out = {lanes: lanes.length, records: lanes.reduce((s, L) => s + L.start.length, 0)};
  const line = D.hotspots[0];
  lanes.some((L, y) => { const i = L.line.indexOf(line); if (i < 0) return false;
    window.asterismView.zoom(L.start[i] - 50, L.start[i] + 150);
    const h = find(xOf(L.start[i] + 1), 10 + y * LANE + 10);
    out.hover = h ? describe(h) : null; out.line = h ? h.line : null; return true; });
  // Click the second hotspot's row: the panel and the occurrences follow.
  const row = document.querySelectorAll("#hot tr.row")[1];
  if (row) { row.dispatchEvent(new MouseEvent("click"));
    out.clicked = Number(row.dataset.line); out.occurrences = occ.length;
    out.panel = document.getElementById("psrc").textContent;
    out.here = (document.querySelector("#psrc .here") || {}).textContent || null;
    out.status = document.getElementById("occ").textContent;
    step(1); out.range = [Math.round(t0), Math.round(t1)]; }
  document.getElementById("selftest").textContent = "SELFTEST " + JSON.stringify(out);
}
</script></body></html>
"""
