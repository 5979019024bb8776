"""One point of a sweep, as a worker runs it: build, compile, stats, launch, check, measure.

`run_point(task)` never raises for a problem of the point itself: a point that fails to
build, compile, run or check comes back as a `PointResult` with `stage` and `error` set, so a
sweep always finishes. It runs in a process-pool worker or a Ray task; `PointTask` and
`PointResult` are plain dataclasses so both engines can ship them.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

METRICS = ("modeled", "measured")
STAGES = ("build", "compile", "stats", "run", "check", "worker")


@dataclass
class PointTask:
    """What a worker needs to run one point.

    `generator` is a library kernel's name (looked up in the worker) or the user's callable;
    `params` are the point's values (library kernels: every parameter, defaults filled in).
    """

    index: int
    generator: Any
    params: dict[str, Any]
    target: str | None
    metric: str = "modeled"
    backend: str = "emu"
    check: bool = False
    iterations: int = 10
    pipeline: str | None = None  # None: the case's own (notes["pipeline"]) or "auto"
    version: str = ""  # the driver's code_version(): a worker with other code refuses
    key: str = ""  # the result cache key (set by the driver)
    # modeled: a parameter file over timing.toml (target.timing.TimingParams: its values
    # travel with the task, so a remote worker needs no file; they are part of the key)
    timing_params: Any = None


@dataclass
class PointResult:
    """The outcome of one point: its figures and stats, or the stage that failed and why."""

    index: int
    params: dict[str, Any]
    ok: bool = False
    stage: str | None = None  # the failed stage (build, compile, stats, run, check, worker)
    error: str | None = None
    target: str | None = None
    kernel: str | None = None
    metric: str = "modeled"
    backend: str = ""
    device: str = ""
    tflops: float | None = None  # modeled (whole grid, CU 0's time) or measured
    per_cu_tflops: float | None = None  # modeled: CU 0's rate times the CU count
    peak_tflops: float | None = None
    cycles: int | None = None  # modeled: CU 0's cycles
    seconds: float | None = None  # modeled: cycles / clock; measured: time per launch
    flops: int = 0
    vgprs: int | None = None
    agprs: int | None = None
    sgprs: int | None = None
    lds_bytes: int | None = None
    waves_per_simd: int | None = None  # occupancy
    occupancy_limited_by: list[str] = field(default_factory=list)
    checked: bool = False
    max_abs_error: float | None = None
    wall_seconds: float = 0.0  # what the point cost the worker
    worker: str = ""  # host:pid
    cached: bool = False  # filled from the result cache, not run

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PointResult:
        """A result from `to_json` output (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """asterism's version plus a digest of its package files (source and data).

    The digest is part of every cache key, so editing a kernel or the timing model makes old
    results stale instead of silently reused, and a Ray worker with other code is detected.
    """
    from asterism.version import PACKAGE_DIR, __version__

    root = PACKAGE_DIR
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def generator_id(generator: Any) -> str:
    """A stable name for the cache key: the kernel name, or module.qualname plus a digest of
    the function's source (so editing a user generator invalidates its results)."""
    if isinstance(generator, str):
        return generator
    name = f"{getattr(generator, '__module__', '?')}.{getattr(generator, '__qualname__', '?')}"
    try:
        source = inspect.getsource(generator)
    except (OSError, TypeError):
        return name
    return f"{name}#{hashlib.sha256(source.encode()).hexdigest()[:12]}"


def run_point(task: PointTask) -> PointResult:
    """Build, compile, launch and measure one point; failures are recorded, never raised."""
    start = time.perf_counter()
    result = PointResult(task.index, dict(task.params), metric=task.metric,
                         backend=task.backend, target=task.target,
                         worker=f"{os.uname().nodename}:{os.getpid()}")
    stage = "worker"
    try:
        if task.version and task.version != code_version():
            raise RuntimeError(f"this worker runs asterism {code_version()}, the driver "
                               f"{task.version}: install the same asterism on every node")
        stage = "build"
        case = build_case(task.generator, task.params, task.target)
        result.kernel, result.target, result.flops = case.kernel, case.target, case.flops
        stage = "compile"
        from asterism.kernels.run import compile_case

        code = compile_case(case, task.pipeline)
        if not case.target:
            from asterism.mc.codeobject import read_code_object

            case.target = result.target = read_code_object(code).target.name
        stage = "stats"
        _add_stats(result, code, case.kernel)
        if task.check and not case.outputs:
            stage = "check"
            raise ValueError("nothing to check: the generator gave no outputs and reference "
                             "(return a KernelCase to use check)")
        stage = "run"
        run = _launch(task, case, code)
        _add_figures(result, run)
        stage = "check"
        if task.check:
            _check(result, case, run)
        result.ok, stage = True, ""
    except Exception as err:  # a failing point is a result, not a crash of the sweep
        result.stage, result.error = stage, _describe(err)
    result.wall_seconds = time.perf_counter() - start
    return result


def build_case(generator: Any, params: dict[str, Any], target: str | None):
    """The KernelCase of one point: a library kernel by name, or the user's callable."""
    from asterism.kernels.base import KernelCase, get

    if isinstance(generator, str):
        return get(generator).build(target, params)
    if hasattr(generator, "build_case") and hasattr(generator, "params"):  # KernelGenerator
        return generator.build(target, params)
    kwargs = dict(params)
    if target is not None and _takes_target(generator):
        kwargs["target"] = target
    made = generator(**kwargs)
    if isinstance(made, KernelCase):
        return made
    return case_from(made, params, target, getattr(generator, "__name__", "kernel"))


def _takes_target(fn) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return "target" in sig.parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())


def case_from(made: Any, params: dict[str, Any], target: str | None, name: str):
    """A KernelCase from a user generator's `(module, kernel, grid, block, args[, flops])`.

    Such a case has no reference, so it cannot be checked (return a KernelCase for --check).
    """
    from asterism.kernels.base import KernelCase

    if not isinstance(made, (tuple, list)) or len(made) not in (5, 6):
        raise TypeError("a sweep generator must return a KernelCase or a tuple (module, "
                        f"kernel, grid, block, args[, flops]), not {type(made).__name__}")
    module, kernel, grid, block, args = made[:5]
    flops = int(made[5]) if len(made) == 6 else 0
    if not isinstance(args, dict):
        args = {f"arg{i}": a for i, a in enumerate(args)}
    # The target is read from the code object once compiled when the caller gave none.
    return KernelCase(name, target or "", dict(params), module, kernel, _dim3(grid),
                      _dim3(block), args, (), _no_reference, 0.0, 0.0, flops)


def _no_reference() -> dict[str, Any]:
    return {}


def _dim3(value) -> tuple[int, int, int]:
    vals = (value,) if isinstance(value, int) else tuple(value)
    return tuple(int(v) for v in vals) + (1,) * (3 - len(vals))


def _add_stats(result: PointResult, code: bytes, kernel: str) -> None:
    """Registers, LDS and occupancy from the code object (asterism.profile.stats)."""
    from asterism.profile.stats import code_object_stats

    stats = next(s for s in code_object_stats(code) if s.name == kernel)
    result.vgprs, result.agprs, result.sgprs = stats.vgprs, stats.agprs, stats.sgprs
    result.lds_bytes = stats.lds_bytes
    result.waves_per_simd = stats.waves_per_simd
    result.occupancy_limited_by = list(stats.occupancy_limited_by)


def _launch(task: PointTask, case, code: bytes):
    """Run the case: timing model on the emulator (modeled) or timed launches (measured)."""
    from asterism.kernels.run import run_case

    if task.metric == "modeled":
        timing: Any = True
        if task.timing_params is not None:
            from asterism.timing.params import TimingOptions

            timing = TimingOptions(params=task.timing_params)
        return run_case(case, backend=task.backend, check=task.check, timing=timing,
                        code=code)
    return run_case(case, backend=task.backend, check=task.check, timing=False,
                    iterations=task.iterations, code=code)


def _add_figures(result: PointResult, run) -> None:
    result.device = run.device
    result.backend = run.backend
    result.tflops, result.peak_tflops = run.tflops, run.peak_tflops
    if run.modeled:
        result.cycles = run.cycles
        result.seconds = run.cycles / (run.clock_mhz * 1e6) if run.clock_mhz else None
        result.per_cu_tflops = run.per_cu_tflops
    elif run.measured_seconds is not None:
        result.seconds = run.measured_seconds
    else:
        raise RuntimeError(f"the {run.backend} backend gave no {result.metric} time")


def _check(result: PointResult, case, run) -> None:
    """Record the NumPy comparison; a failed one fails the point (stage `check`)."""
    result.checked = True
    result.max_abs_error = max((c.max_abs_error for c in run.checks), default=0.0)
    bad = [c for c in run.checks if not c.passed]
    if bad:
        c = bad[0]
        raise AssertionError(f"output {c.output}: max abs error {c.max_abs_error:.3g} at "
                             f"{list(c.worst_index)} exceeds atol {c.atol:.3g} + rtol "
                             f"{c.rtol:.3g} x |ref|")


def _describe(err: BaseException) -> str:
    """An error's message for the report (AsterismErrors carry their location)."""
    from asterism.errors import AsterismError

    if isinstance(err, AsterismError):
        return str(err)
    if isinstance(err, AssertionError) and err.args:
        return str(err)
    return f"{type(err).__name__}: {err}"


__all__ = ["METRICS", "STAGES", "PointResult", "PointTask", "build_case", "case_from",
           "code_version", "generator_id", "run_point"]
