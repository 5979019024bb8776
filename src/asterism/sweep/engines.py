"""Where the points run: a local process pool (default) or Ray (the optional `cluster` extra).

Both take a list of `PointTask`s and yield `(task, PointResult)` as points finish, in the
order they finish; the caller caches and reports them. asterism ships no scheduler of its
own: the pool is `concurrent.futures.ProcessPoolExecutor`, the cluster is Ray's.

With the HIP backend each worker owns one GPU: Ray gives every task `num_gpus=1` (Ray then
sets HIP_VISIBLE_DEVICES for it), and the local pool pins worker i to the i-th visible device
through HIP_VISIBLE_DEVICES before HIP is loaded.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

from asterism.sweep.points import SweepError
from asterism.sweep.worker import PointResult, PointTask, run_point

ENGINES = ("local", "ray")


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def visible_gpus() -> list[str]:
    """The HIP device ids this process may use, from HIP_VISIBLE_DEVICES (or ["0"])."""
    env = os.environ.get("HIP_VISIBLE_DEVICES") or os.environ.get("ROCR_VISIBLE_DEVICES")
    if env:
        return [d.strip() for d in env.split(",") if d.strip()]
    return ["0"]


def lost(task: PointTask, err: BaseException) -> PointResult:
    """The result of a point whose worker died (not cached: it may work on a re-run)."""
    return PointResult(task.index, dict(task.params), stage="worker", target=task.target,
                       metric=task.metric, backend=task.backend,
                       error=f"the worker running this point was lost: "
                             f"{type(err).__name__}: {err}")


class LocalEngine:
    """A process pool on this machine (`workers` processes; default one per core)."""

    name = "local"

    def __init__(self, workers: int | None = None, backend: str = "emu"):
        self.backend = backend
        if workers is None:
            # A GPU is timed by one process at a time; on the emulator every core works.
            workers = len(visible_gpus()) if backend == "hip" else default_workers()
        if workers < 1:
            raise SweepError(f"--workers must be at least 1, got {workers}")
        self.workers = workers

    def describe(self) -> str:
        """A short description for the report."""
        return f"local pool, {self.workers} worker{'s' * (self.workers != 1)}"

    def run(self, tasks: Sequence[PointTask], heartbeat: float | None = None
            ) -> Iterator[tuple[PointTask, PointResult] | None]:
        """Run `tasks`, yielding each with its result as it finishes (and None after every
        `heartbeat` seconds in which none did)."""
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        if not tasks:
            return
        workers = min(self.workers, len(tasks))
        initializer = initargs = None
        if self.backend == "hip":
            devices = multiprocessing.Queue()
            gpus = visible_gpus()
            for i in range(workers):
                devices.put(gpus[i % len(gpus)])
            initializer, initargs = _pin_gpu, (devices,)
        pool = ProcessPoolExecutor(max_workers=workers, initializer=initializer,
                                   initargs=initargs or ())
        try:
            futures = {pool.submit(run_point, t): t for t in tasks}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=heartbeat,
                                         return_when=FIRST_COMPLETED)
                if not finished:
                    yield None
                for future in finished:
                    task = futures[future]
                    try:
                        yield task, future.result()
                    except Exception as err:  # BrokenProcessPool: a worker died (signal, OOM)
                        yield task, lost(task, err)
        finally:
            # Interrupted (Ctrl-C, or the caller stopped iterating): drop queued points.
            pool.shutdown(wait=True, cancel_futures=True)


def _pin_gpu(devices) -> None:
    """Pool initializer: this worker uses one GPU (before HIP is loaded in it)."""
    os.environ["HIP_VISIBLE_DEVICES"] = devices.get()


class RayEngine:
    """Ray: a local Ray started with `workers` CPUs (listening on loopback only), or the
    cluster at `address`.

    Each point is a Ray task with one CPU (and one GPU with the HIP backend). The workers
    import asterism, so on a remote cluster every node needs the same asterism installed
    (a worker with other code reports it as the point's error).
    """

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None,
                 backend: str = "emu"):
        if workers is not None and workers < 1:
            raise SweepError(f"--workers must be at least 1, got {workers}")
        self.ray = import_ray()
        self.workers, self.address, self.backend = workers, address, backend

    def describe(self) -> str:
        """A short description for the report."""
        if self.address:
            return f"ray at {self.address}"
        return f"local ray, {self.workers or default_workers()} CPUs"

    def _start(self) -> bool:
        """Connect to or start Ray; True if this call started it (and must stop it)."""
        import logging

        ray = self.ray
        if ray.is_initialized():
            return False
        options = dict(include_dashboard=False, log_to_driver=False,
                       logging_level=logging.ERROR, configure_logging=True)
        try:
            if self.address:
                ray.init(address=self.address, **options)
            else:
                with _same_asterism(), _loopback_node(ray):
                    ray.init(num_cpus=self.workers or default_workers(),
                             **{**options, **LOCAL_RAY_OPTIONS})
        except Exception as err:  # Ray's own errors: connection refused, bad address...
            where = self.address or "a local Ray"
            raise SweepError(f"cannot start or reach {where}: {type(err).__name__}: "
                             f"{err}") from None
        if not self.address:
            _check_loopback(ray)
        return True

    def run(self, tasks: Sequence[PointTask], heartbeat: float | None = None
            ) -> Iterator[tuple[PointTask, PointResult] | None]:
        """Run `tasks` as Ray tasks, yielding each with its result as it finishes (and None
        after every `heartbeat` seconds in which none did)."""
        if not tasks:
            return
        ray = self.ray
        started = self._start()
        try:
            remote = ray.remote(run_point).options(
                num_cpus=1, num_gpus=1 if self.backend == "hip" else 0, max_retries=0)
            refs = {remote.remote(t): t for t in tasks}
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1, timeout=heartbeat)
                if not done:
                    yield None
                for ref in done:
                    task = refs[ref]
                    try:
                        yield task, ray.get(ref)
                    except Exception as err:  # the worker process died, the node was lost
                        yield task, lost(task, err)
        finally:
            if started:
                ray.shutdown()


# ray.init options for the Ray this engine starts itself (no --address): it serves this
# process only, so nothing of it may listen beyond the loopback interface. Ray's servers
# (GCS, raylet, object manager, workers) listen on the node address; the dashboard (with
# its job-submission API) stays off. Joining a cluster on the network takes --address.
LOCAL_RAY_OPTIONS = {"include_dashboard": False, "dashboard_host": "127.0.0.1",
                     "_node_ip_address": "127.0.0.1"}
LOOPBACK = ("127.0.0.1", "::1", "localhost")

# Ray replaces a loopback node address by the machine's reachable one when its cluster mode
# is on (ray._private.ray_constants.ENABLE_RAY_CLUSTER, from this variable at import; on by
# default on Linux; off, Ray's single-machine mode, it keeps and listens on 127.0.0.1).
_RAY_CLUSTER_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def _loopback_node(ray):
    """Ray's single-machine mode while a local Ray starts (its processes inherit it)."""
    try:
        from ray._private import ray_constants
    except ImportError:  # (another Ray layout: _check_loopback still checks the result)
        ray_constants = None
    old_flag = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    old_env = os.environ.get(_RAY_CLUSTER_ENV)
    os.environ[_RAY_CLUSTER_ENV] = "0"
    if old_flag is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if old_flag is not None:
            ray_constants.ENABLE_RAY_CLUSTER = old_flag
        if old_env is None:
            del os.environ[_RAY_CLUSTER_ENV]
        else:
            os.environ[_RAY_CLUSTER_ENV] = old_env


def _check_loopback(ray) -> None:
    """Stop a just-started local Ray whose node address is not loopback (a Ray that ignores
    LOCAL_RAY_OPTIONS would serve the network): a SweepError says what to do instead."""
    try:
        node = ray.util.get_node_ip_address()
    except Exception as err:  # (a Ray without this call: cannot tell, so do not run)
        node = f"unknown ({type(err).__name__})"
    if node not in LOOPBACK:
        ray.shutdown()
        raise SweepError(f"the local Ray started on address {node}, not loopback: it would "
                         "serve the network; start a Ray yourself (e.g. `ray start --head "
                         "--node-ip-address 127.0.0.1`) and pass its --address")


@contextlib.contextmanager
def _same_asterism():
    """PYTHONPATH names the folder this asterism was imported from while a local Ray starts:
    its workers (started by the raylet with this environment) then import the same code
    even when the driver found it through sys.path (a source checkout, a script's path)."""
    from asterism.version import PACKAGE_DIR

    root = str(PACKAGE_DIR.resolve().parent)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([root, old] if old else [root])
    try:
        yield
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old


def import_ray():
    """The `ray` module, or a SweepError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SweepError("--engine ray needs Ray, which is not installed; install it with "
                         "`pip install 'asterism[cluster]'` (or `pip install ray`)") from None
    return ray


def make_engine(engine: str, workers: int | None = None, address: str | None = None,
                backend: str = "emu"):
    """The engine called `engine` ("local" or "ray")."""
    if engine == "local":
        if address:
            raise SweepError("--address names a Ray cluster: use it with --engine ray")
        return LocalEngine(workers, backend)
    if engine == "ray":
        return RayEngine(workers, address, backend)
    raise SweepError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


__all__ = ["ENGINES", "LOCAL_RAY_OPTIONS", "LocalEngine", "RayEngine", "default_workers",
           "import_ray", "make_engine", "visible_gpus"]
