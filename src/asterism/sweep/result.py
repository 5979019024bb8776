"""A finished sweep: every point's result, the ranking, the table and the JSON report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asterism.sweep.points import Space, varying
from asterism.sweep.rank import RANK_LABELS, rank_key
from asterism.sweep.worker import PointResult
from asterism.timing.params import params_note

ERROR_WIDTH = 110  # the table shortens errors to this; the JSON keeps them whole


@dataclass
class SweepResult:
    """What `sweep()` returns: the points in order, with `ranked()`, `table()`, `to_json()`
    and `plot()`."""

    kernel: str
    target: str | None
    space: Space
    metric: str
    backend: str
    engine: str
    check: bool
    points: list[PointResult] = field(default_factory=list)
    wall_seconds: float = 0.0
    ran: int = 0  # points computed in this sweep (the rest came from the cache)
    rank_by: str = "tflops"  # one of RANK_BY
    params_file: str | None = None  # modeled: the timing model's parameter file (--params)

    @property
    def ok(self) -> list[PointResult]:
        """The points that built, compiled, ran (and checked)."""
        return [r for r in self.points if r.ok]

    @property
    def failed(self) -> list[PointResult]:
        """The points that failed, with their stage and error."""
        return [r for r in self.points if not r.ok]

    @property
    def cached(self) -> int:
        """Points taken from the result cache."""
        return sum(r.cached for r in self.points)

    def ranked(self) -> list[PointResult]:
        """The successful points, best first (by `rank_by`, then the shortest time)."""
        return sorted(self.ok, key=lambda r: rank_key(r, self.rank_by))

    @property
    def best(self) -> PointResult | None:
        """The best point, or None if every point failed."""
        ranked = self.ranked()
        return ranked[0] if ranked else None

    def columns(self) -> list[str]:
        """The parameters the table and plot show: those with several values."""
        return varying(self.space) or list(self.space)[:1]

    def to_json(self) -> dict[str, Any]:
        """The report with every point (ranked ones first, then failures) as a dict."""
        ranked = self.ranked()
        rank = {r.index: i + 1 for i, r in enumerate(ranked)}
        rows = []
        for r in ranked + sorted(self.failed, key=lambda r: r.index):
            row = r.to_json()
            row["rank"] = rank.get(r.index)
            rows.append(row)
        return {
            "kernel": self.kernel, "target": self.target, "metric": self.metric,
            "modeled": self.metric == "modeled", "backend": self.backend,
            "engine": self.engine, "check": self.check, "space": self.space,
            "rank_by": self.rank_by, "params_file": self.params_file,
            "points": len(self.points), "ran": self.ran, "cached": self.cached,
            "failed": len(self.failed), "wall_seconds": round(self.wall_seconds, 3),
            "results": rows,
        }

    def summary(self) -> str:
        """One line: what was swept, how many points ran, came from the cache, failed."""
        how = ("modeled: timing model on the emulator, not a measurement"
               if self.metric == "modeled" else f"measured on {self.backend}")
        if self.params_file:
            how += f" ({params_note(self.params_file)})"
        return (f"{self.kernel} on {self.target or 'its target'}: {len(self.points)} points "
                f"({self.ran} run, {self.cached} cached), {len(self.failed)} failed; {how}; "
                f"{self.engine}; {self.wall_seconds:.1f} s; ranked by {RANK_LABELS[self.rank_by]}")

    def table(self, top: int | None = None) -> str:
        """The ranked table (best first), then the failed points with their errors."""
        cols = self.columns()
        fixed = {k: v[0] for k, v in self.space.items() if len(v) == 1}
        lines = [self.summary()]
        if fixed:
            lines.append("fixed: " + " ".join(f"{k}={v}" for k, v in fixed.items()))
        ranked = self.ranked()
        shown = ranked[:top] if top else ranked
        if shown:
            head = ["rank", *cols, *self._figure_heads(), "VGPR", "AGPR", "SGPR", "LDS",
                    "waves/SIMD"]
            if self.check:
                head.append("max err")
            body = [[str(i + 1), *(str(r.params.get(c)) for c in cols), *self._figures(r),
                     _num(r.vgprs), _num(r.agprs), _num(r.sgprs), _num(r.lds_bytes),
                     _num(r.waves_per_simd)] + ([f"{r.max_abs_error:.2g}"] if self.check
                                                 else [])
                    for i, r in enumerate(shown)]
            lines += _aligned([head, *body])
            if len(shown) < len(ranked):
                lines.append(f"... {len(ranked) - len(shown)} more (see --json)")
        if self.metric == "modeled":
            lines.append("TFLOPS: the whole grid in CU 0's modeled time; per-CU: CU 0's rate "
                         "times the CU count (a model of one CU, not a measurement)")
        failed = sorted(self.failed, key=lambda r: r.index)
        if failed:
            lines.append(f"failed ({len(failed)}):")
            for r in failed:
                point = " ".join(f"{c}={r.params.get(c)}" for c in cols)
                error = (r.error or "").splitlines()[0] if r.error else ""
                if len(error) > ERROR_WIDTH:
                    error = error[:ERROR_WIDTH - 3] + "..."
                lines.append(f"  {point}: {r.stage}: {error}")
        return "\n".join(lines) + "\n"

    def _figure_heads(self) -> list[str]:
        if self.metric == "modeled":
            return ["TFLOPS", "per-CU TFLOPS", "cycles"]
        return ["TFLOPS", "us/launch"]

    def _figures(self, r: PointResult) -> list[str]:
        tflops = f"{r.tflops:.2f}" if r.tflops is not None else "-"
        if self.metric == "modeled":
            per_cu = f"{r.per_cu_tflops:.1f}" if r.per_cu_tflops is not None else "-"
            return [tflops, per_cu, _num(r.cycles)]
        us = f"{r.seconds * 1e6:.2f}" if r.seconds is not None else "-"
        return [tflops, us]

    def plot(self, path) -> Any:
        """Draw the metric against each swept parameter into the PNG `path`."""
        from asterism.sweep.plot import plot_sweep

        return plot_sweep(self, path)


def _num(value: Any) -> str:
    return "-" if value is None else str(value)


def _aligned(rows: list[list[str]]) -> list[str]:
    """Rows as left-aligned columns two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


__all__ = ["SweepResult"]
