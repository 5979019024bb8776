"""`sweep(generator, space, ...)`: run every point of a parameter space and rank the results.

    import asterism
    result = asterism.sweep("gemm", {"tile_m": [64, 128], "tile_n": [64, 128]}, workers=2)
    print(result.table())                # best first; result.to_json(), result.plot("s.png")

`generator` is one of

* a library kernel's name (`"gemm"`) or a `KernelGenerator`: the space's names and values are
  checked against its parameters, the other parameters keep their defaults;
* a function of the swept parameters (keyword arguments; it also gets `target=` when it has
  such a parameter) returning either a `KernelCase` (module, kernel, grid, block, args,
  outputs, reference, atol, rtol, flops: what the library's kernels return, needed for
  `check`) or a tuple `(module, kernel, grid, block, args)` or `(module, kernel, grid,
  block, args, flops)`, where `module` is what `asterism.compile` takes (a builder/xDSL
  module or amdgcn IR text), `args` the launch arguments (a list in order or a dict by name:
  NumPy arrays and scalars) and `flops` the useful operations of one launch (for TFLOPS;
  without it the points rank by time). The local engine pickles the function by name, so it
  must be defined at module level (Ray also ships closures).

Every point is built, compiled (the case's pipeline, default `auto`), measured and
optionally checked in a worker; a point that fails is recorded with its stage and error.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from asterism.sweep.cache import ResultCache, cache_key
from asterism.sweep.engines import make_engine
from asterism.sweep.points import Space, SweepError, check_space, points
from asterism.sweep.progress import Progress
from asterism.sweep.rank import RANK_BY
from asterism.sweep.result import SweepResult
from asterism.sweep.worker import METRICS, PointResult, PointTask, code_version

HEARTBEAT = 1.0  # seconds without a finished point after which the progress line is redrawn


def resolve_generator(generator: Any):
    """A KernelGenerator for a library name, else `generator` itself (checked callable)."""
    from asterism.kernels.base import KernelGenerator, KernelParamError, get

    if isinstance(generator, str):
        try:
            return get(generator)
        except KernelParamError as err:
            raise SweepError(err.message) from None
    if isinstance(generator, KernelGenerator) or callable(generator):
        return generator
    raise SweepError(f"a sweep needs a kernel name, a KernelGenerator or a function, not "
                     f"{type(generator).__name__}")


def check_options(metric: str, backend: str | None) -> str:
    """The backend for `metric` (emu for modeled, hip for measured); errors for a mismatch."""
    if metric not in METRICS:
        raise SweepError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if backend is None:
        return "emu" if metric == "modeled" else "hip"
    if backend not in ("emu", "hip"):
        raise SweepError(f"unknown backend {backend!r}; choose emu or hip")
    if metric == "modeled" and backend != "emu":
        raise SweepError("--metric modeled runs the timing model on the emulator: use "
                         "--backend emu, or --metric measured to time on the GPU")
    if metric == "measured" and backend != "hip":
        raise SweepError("--metric measured times launches on a GPU: use --backend hip, or "
                         "--metric modeled for the emulator's timing model")
    return backend


def _target(gen, target: str | None) -> str | None:
    """The target of the sweep (a library kernel's first one by default), checked."""
    from asterism.kernels.base import KernelGenerator

    if isinstance(gen, KernelGenerator):
        return gen.pick_target(target, SweepError)
    return target


def _shipped(gen) -> Any:
    """What the tasks carry: a registered kernel's name (cheap), else the generator."""
    from asterism.kernels.base import KernelGenerator, get

    if isinstance(gen, KernelGenerator):
        try:
            if get(gen.name) is gen:
                return gen.name
        except Exception:  # not registered: ship the object itself
            pass
    return gen


def _check_picklable(generator: Any, engine: str) -> None:
    """The local pool sends the generator by name: say so before any work if it cannot."""
    if engine != "local" or isinstance(generator, str):
        return
    try:
        pickle.dumps(generator)
    except Exception as err:
        name = getattr(generator, "__qualname__", repr(generator))
        raise SweepError(f"the local engine cannot send {name} to its workers ({err}): define "
                         f"the generator at module level (or use --engine ray)") from None


def _cache(cache: Any) -> ResultCache | None:
    if cache is None or cache is False:
        return None
    if cache is True:
        return ResultCache()
    if isinstance(cache, ResultCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return ResultCache(Path(cache))
    raise SweepError(f"cache must be True, False, a folder or a ResultCache, not {cache!r}")


def make_tasks(gen, space: Space, target: str | None, sample: int | None, seed: int,
               **options: Any) -> list[PointTask]:
    """One task per point of `space`, with the full parameters and the cache key."""
    from asterism.kernels.base import KernelGenerator

    shipped, version = _shipped(gen), code_version()
    tasks = []
    for index, point in enumerate(points(space, sample, seed)):
        params = gen.resolve(point) if isinstance(gen, KernelGenerator) else dict(point)
        task = PointTask(index, shipped, params, target, version=version, **options)
        task.key = cache_key(task)
        tasks.append(task)
    return tasks


def sweep(generator: str | Callable, space: Mapping[str, Any], *, target: str | None = None,
          sample: int | None = None, seed: int = 0, check: bool = False,
          metric: str = "modeled", backend: str | None = None, workers: int | None = None,
          engine: str = "local", address: str | None = None, cache: Any = True,
          iterations: int = 10, pipeline: str | None = None, rank_by: str = "tflops",
          progress: bool = True, params: Any = None) -> SweepResult:
    """Run every point of `space` (or `sample` random ones) of `generator`; see the module
    docstring for what `generator` may be. Returns a SweepResult (ranked(), table(),
    to_json(), plot()), ranked by `rank_by`: "tflops" (of the launch), "per_cu" (modeled:
    CU 0's rate times the CU count, what a grid filling every CU would reach) or "time".
    `params`: a timing-model parameter file (path or target.timing.TimingParams) for the
    modeled metric."""
    if rank_by not in RANK_BY:
        raise SweepError(f"unknown ranking {rank_by!r}; choose one of {', '.join(RANK_BY)}")
    gen = resolve_generator(generator)
    space = check_space(gen, space)
    backend = check_options(metric, backend)
    target = _target(gen, target)
    if iterations < 1:
        raise SweepError(f"iterations must be at least 1, got {iterations}")
    timing_params = _timing_params(params, metric)
    tasks = make_tasks(gen, space, target, sample, seed, metric=metric, backend=backend,
                       check=check, iterations=iterations, pipeline=pipeline,
                       timing_params=timing_params)
    _check_picklable(tasks[0].generator if tasks else None, engine)
    runner = make_engine(engine, workers, address, backend)
    store = _cache(cache)
    name = gen if isinstance(gen, str) else getattr(gen, "name", None) or \
        getattr(gen, "__name__", "kernel")
    result = SweepResult(name, target, space, metric, backend, runner.describe(), check,
                         rank_by=rank_by,
                         params_file=timing_params.source if timing_params else None)
    start = time.perf_counter()
    bar = Progress(len(tasks), enabled=progress)
    done: dict[int, PointResult] = {}
    todo = []
    for task in tasks:
        hit = store.get(task.key) if store else None
        if hit is None:
            todo.append(task)
            continue
        hit.index, hit.cached = task.index, True
        done[task.index] = hit
        bar.add_cached(hit.ok)
    bar.start_line(f"sweeping {name}: {len(tasks)} points ({len(tasks) - len(todo)} cached) "
                   f"on {runner.describe()}")
    try:
        for item in runner.run(todo, heartbeat=HEARTBEAT):
            if item is None:  # nothing finished for a while: keep the progress alive
                bar.tick()
                continue
            task, point = item
            done[task.index] = point
            if store is not None and point.stage != "worker":
                store.put(task.key, task, point)
            bar.update(point.ok, label=_label(point, space))
    finally:
        bar.close()
        result.points = [done[i] for i in sorted(done)]
        result.ran = sum(not r.cached for r in result.points)
        result.wall_seconds = time.perf_counter() - start
    return result


def _timing_params(params: Any, metric: str):
    """The checked parameter file of the modeled metric (None without one)."""
    if params is None:
        return None
    if metric != "modeled":
        raise SweepError("params sets the timing model's parameters: it needs --metric "
                         "modeled")
    from asterism.target.timing import TimingParams, load_params

    return params if isinstance(params, TimingParams) else load_params(params)


def _label(point: PointResult, space: Space) -> str:
    """A finished point in one line (the non-terminal progress output)."""
    params = " ".join(f"{k}={point.params.get(k)}" for k, v in space.items() if len(v) > 1)
    if not point.ok:
        return f"{params}: {point.stage} failed"
    figure = f"{point.tflops:.2f} TFLOPS" if point.tflops is not None else \
        f"{(point.seconds or 0) * 1e6:.2f} us"
    return f"{params}: {figure}"


__all__ = ["check_options", "make_tasks", "resolve_generator", "sweep"]
