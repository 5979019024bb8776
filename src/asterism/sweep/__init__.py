"""Parameter sweeps: points, engines (local process pool; Ray as an optional extra), result cache.

    import asterism
    result = asterism.sweep("gemm", {"tile_m": [64, 128], "tile_n": [64, 128]}, workers=2)
    print(result.table())

`asterism.sweep` is this package and is callable: `asterism.sweep(...)` is
`asterism.sweep.sweep(...)` (asterism/sweep/api.py documents the generators it takes).
Sits above `kernels/`, `runtime/` and `profile/`; Ray is imported only by `--engine ray`.
"""

from __future__ import annotations

import sys
import types

from asterism.sweep.api import sweep
from asterism.sweep.cache import ResultCache, cache_key, default_cache_dir
from asterism.sweep.engines import LocalEngine, RayEngine, make_engine
from asterism.sweep.points import SweepError, check_space, parse_space, points
from asterism.sweep.result import SweepResult
from asterism.sweep.worker import PointResult, PointTask, run_point


class _CallableModule(types.ModuleType):
    """This package, callable as `asterism.sweep(...)` (the package and the function share
    the name the issue asked for; a module attribute cannot shadow a subpackage)."""

    def __call__(self, *args, **kwargs) -> SweepResult:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["LocalEngine", "PointResult", "PointTask", "RayEngine", "ResultCache",
           "SweepError", "SweepResult", "cache_key", "check_space", "default_cache_dir",
           "make_engine", "parse_space", "points", "run_point", "sweep"]
