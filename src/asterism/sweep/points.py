"""The points of a sweep: a space (parameter -> values), checked, and its Cartesian product or
a seeded random sample of it.

    space = parse_space(kernels.get("gemm"), ["tile_m=64,128", "tile_n=64,128"])
    points(space)                       # 4 dicts, the last parameter varying fastest
    points(space, sample=2, seed=1)     # 2 distinct points, the same ones for the same seed

A space is checked before any work: every name must be a parameter of the generator, every
list non-empty, every value of the parameter's type (library kernels: `Param.convert`).
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from asterism.errors import AsterismError


class SweepError(AsterismError):
    """A sweep that cannot run as asked (bad space, engine or option)."""


Space = dict[str, list[Any]]


def split_param(text: str) -> tuple[str, list[str]]:
    """`"tile_m=64,128"` -> ("tile_m", ["64", "128"]); an empty name or value is an error."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise SweepError(f"--param expects name=v1,v2,..., got {text!r}")
    items = [v.strip() for v in values.split(",")]
    if not values.strip():
        raise SweepError(f"--param {name}: empty list of values (expected {name}=v1,v2,...)")
    if any(not v for v in items):
        raise SweepError(f"--param {name}: empty value in {values!r} (expected {name}=v1,v2,...)")
    return name, items


def parse_space(generator, pairs: Iterable[str]) -> Space:
    """The checked space of `--param name=v1,v2` texts for a library generator."""
    raw: dict[str, list[str]] = {}
    for text in pairs:
        name, values = split_param(text)
        if name in raw:
            raise SweepError(f"--param {name} is given twice; list all its values in one "
                             f"--param {name}=v1,v2,...")
        raw[name] = values
    return check_space(generator, raw)


def check_space(generator, space: Mapping[str, Any]) -> Space:
    """`space` with each name checked against `generator` and each value converted.

    `generator` is a KernelGenerator (names and types from its Params) or a callable (names
    from its signature; values as given). A single value counts as a one-value list.
    """
    from asterism.kernels.base import KernelGenerator, KernelParamError

    out: Space = {}
    for name, values in space.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            values = [values]
        values = list(values)
        if not values:
            raise SweepError(f"parameter {name}: empty list of values")
        if isinstance(generator, KernelGenerator):
            try:
                param = generator.param(name)
                values = [param.convert(v) for v in values]
            except KernelParamError as err:
                raise SweepError(err.message) from None
        else:
            _check_callable_param(generator, name)
        out[name] = _unique(values)
    return out


def _check_callable_param(fn: Callable, name: str) -> None:
    """An error unless `fn` takes a keyword argument `name`."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin or C callable: nothing to check against
    params = sig.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    usable = [n for n, p in params.items()
              if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
              and n != "target"]
    if name not in usable:
        raise SweepError(f"{getattr(fn, '__name__', fn)} has no parameter {name!r} "
                         f"(known: {', '.join(usable) or 'none'})")


def _unique(values: list[Any]) -> list[Any]:
    """`values` without repeats, in order (a repeated value would run the same point twice)."""
    seen: list[Any] = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def size(space: Space) -> int:
    """Points in the Cartesian product of `space`."""
    return math.prod(len(v) for v in space.values())


def point_at(space: Space, index: int) -> dict[str, Any]:
    """The `index`-th point of the product (mixed radix, the last parameter fastest)."""
    point = {}
    for name in reversed(list(space)):
        values = space[name]
        index, digit = divmod(index, len(values))
        point[name] = values[digit]
    return {name: point[name] for name in space}


def points(space: Space, sample: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """Every point of `space`, or `sample` distinct ones drawn with `seed` (in product order)."""
    total = size(space)
    if sample is None or sample >= total:
        return [point_at(space, i) for i in range(total)]
    if sample < 1:
        raise SweepError(f"--sample must be at least 1, got {sample}")
    # Indices rather than the product itself, so a huge space is never materialized.
    chosen = sorted(random.Random(seed).sample(range(total), sample))
    return [point_at(space, i) for i in chosen]


def varying(space: Space) -> list[str]:
    """The parameters with more than one value (the table's and the plot's columns)."""
    return [name for name, values in space.items() if len(values) > 1]


__all__ = ["Space", "SweepError", "check_space", "parse_space", "point_at", "points", "size",
           "split_param", "varying"]
