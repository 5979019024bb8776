"""The picture of a sweep: the metric against each swept parameter, one panel per parameter.

Each panel puts the parameter's values on x and every successful point's TFLOPS on y (a dot
per point, so the spread caused by the other parameters shows); a line joins the best point
of each value, and the overall best point is ringed. Failed points are counted in the title.

matplotlib is imported only when plotting (the optional `plot` extra), and the picture is
written as asterism.profile's are (profile.pictures: `require_matplotlib`, `save_png`): the Agg
canvas used directly, no pyplot state, the picture written beside its target and renamed, so a
failure leaves no partial file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from asterism.sweep.points import SweepError
from asterism.sweep.rank import rank_value


def require_matplotlib() -> tuple[Any, Any]:
    """matplotlib's Figure and Agg canvas, or a SweepError saying how to install it."""
    from asterism.profile.pictures import require_matplotlib as load

    figure_cls, canvas_cls, _patch = load(SweepError)
    return figure_cls, canvas_cls


def _value(r, by: str) -> float | None:
    """The y value of a point: the figure it is ranked by (time in us)."""
    value = rank_value(r, by)
    return value * 1e6 if by == "time" and value is not None else value


def plot_sweep(result, out_png: str | os.PathLike) -> Path:
    """Draw `result` (a SweepResult) into the PNG `out_png`; returns its path."""
    figure_cls, canvas_cls = require_matplotlib()
    out = Path(out_png)
    if not out.parent.is_dir():
        raise SweepError(f"{out.parent}: no such folder for the picture")
    by = result.rank_by if any(r.tflops is not None for r in result.ok) else "time"
    ok = [r for r in result.ranked() if _value(r, by) is not None]
    if not ok:
        raise SweepError("nothing to plot: no point of the sweep succeeded")
    higher = by != "time"
    kind = "modeled" if result.metric == "modeled" else "measured"
    ylabel = {"tflops": f"{kind} TFLOPS", "per_cu": f"{kind} per-CU TFLOPS (x CU count)",
              "time": f"{kind} time per launch (us)"}[by]
    cols = result.columns()
    best = ok[0]
    ncols = 2 if len(cols) == 4 else min(3, len(cols))
    nrows = -(-len(cols) // ncols)
    fig = figure_cls(figsize=(max(4.6 * ncols, 6), 3.8 * nrows + 0.6), dpi=110)
    for i, col in enumerate(cols):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        values = result.space[col]
        xs = {v: j for j, v in enumerate(values)}
        tops: dict[Any, float] = {}
        for r in ok:
            x, y = xs[r.params[col]], _value(r, by)
            ax.scatter([x], [y], color="#1f77b4", s=22, alpha=0.7, zorder=2)
            better = y > tops.get(x, -1.0) if higher else y < tops.get(x, float("inf"))
            if better:
                tops[x] = y
        line = sorted(tops.items())
        ax.plot([x for x, _ in line], [y for _, y in line], color="#d62728", linewidth=1.2,
                zorder=1, label="best per value")
        ax.scatter([xs[best.params[col]]], [_value(best, by)], s=140,
                   facecolors="none", edgecolors="#2ca02c", linewidths=1.8, zorder=3,
                   label="best point")
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels([str(v) for v in values])
        ax.set_xlabel(col)
        if i % ncols == 0:
            ax.set_ylabel(ylabel)
        if i == 0:
            ax.legend(fontsize=7, loc="best")
        ax.grid(axis="y", alpha=0.3)
    best_text = " ".join(f"{c}={best.params[c]}" for c in cols)
    failed = f", {len(result.failed)} failed" if result.failed else ""
    fig.suptitle(f"{result.kernel} on {result.target or best.target}: {len(result.points)} "
                 f"points{failed}; best {best_text}", fontsize=10)
    fig.tight_layout()
    from asterism.profile.pictures import save_png

    return save_png(fig, canvas_cls, out, error=SweepError, tight=False)


__all__ = ["plot_sweep", "require_matplotlib"]
