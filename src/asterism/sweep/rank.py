"""How the points of a sweep are ranked: the figure each is ranked by, and the order (below
both the result, which ranks, and the picture, which draws the figure)."""

from __future__ import annotations

import math

from asterism.sweep.worker import PointResult

RANK_BY = ("tflops", "per_cu", "time")
RANK_LABELS = {"tflops": "TFLOPS", "per_cu": "per-CU TFLOPS", "time": "time"}


def rank_value(r: PointResult, by: str = "tflops") -> float | None:
    """The figure a point is ranked by: TFLOPS of the launch, the modeled per-CU rate
    (what the kernel would reach on a grid that fills every CU), or the time (seconds)."""
    if by == "per_cu":
        return r.per_cu_tflops if r.per_cu_tflops is not None else r.tflops
    if by == "time":
        return r.seconds
    return r.tflops


def rank_key(r: PointResult, by: str = "tflops") -> tuple:
    """Best first: the highest `by` figure (the shortest time for "time"), then the shortest
    time, then the point's order."""
    value = rank_value(r, by)
    seconds = r.seconds if r.seconds is not None else math.inf
    if by == "time":
        return (seconds, r.index)
    return (-value if value is not None else math.inf, seconds, r.index)


__all__ = ["RANK_BY", "RANK_LABELS", "rank_key", "rank_value"]
