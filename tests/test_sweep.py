"""`asterism sweep` and `asterism.sweep(...)`: points, engines, cache, failures, bad --param.

The GEMM points are small (128x128x64, 4 points) so the emulator runs each in about a second;
their figures are checked against `kernels.run_case` run directly in this process (the
independent path), and the Ray engine against the local one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import asterism
from asterism.cli import main
from asterism.kernels.base import KernelCase
from asterism.sweep import SweepError, check_space, parse_space, points
from asterism.sweep.rank import rank_key

GEMM_SHAPE = {"m": 128, "n": 128, "k": 64}
GEMM_ARGS = ["gemm", "--shape", "128x128x64", "--param", "tile_m=64,128",
             "--param", "tile_n=64,128"]


# ------------------------------------------------------------------------------ points


def test_product_order_and_size():
    space = parse_space(_gemm(), ["tile_m=64,128", "tile_n=32,64,128", "dtype=bf16"])
    pts = points(space)
    assert len(pts) == 6
    assert pts[0] == {"tile_m": 64, "tile_n": 32, "dtype": "bf16"}
    assert pts[1] == {"tile_m": 64, "tile_n": 64, "dtype": "bf16"}  # last varies fastest
    assert pts[-1] == {"tile_m": 128, "tile_n": 128, "dtype": "bf16"}
    assert len({tuple(p.values()) for p in pts}) == 6


def test_sample_is_seeded_distinct_and_in_the_product():
    space = {"a": list(range(10)), "b": list(range(10)), "c": list(range(10))}
    every = [tuple(p.values()) for p in points(space)]
    one = points(space, sample=7, seed=3)
    assert one == points(space, sample=7, seed=3)
    assert one != points(space, sample=7, seed=4)
    keys = [tuple(p.values()) for p in one]
    assert len(set(keys)) == 7 and set(keys) <= set(every)
    assert keys == sorted(keys, key=every.index)  # product order
    assert len(points(space, sample=5000)) == 1000  # more than the product: every point


def _gemm():
    from asterism import kernels

    return kernels.get("gemm")


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("param, message", [
    ("tile_q=64,128", "gemm has no parameter 'tile_q'"),
    ("tile_m=", "tile_m: empty list of values"),
    ("tile_m=64,,128", "tile_m: empty value"),
    ("tile_m=64,big", "parameter tile_m: expected int, got 'big'"),
    ("interleave=true,maybe", "parameter interleave: expected bool"),
    ("mfma=8,16", "parameter mfma: 8 is not one of 16, 32"),
    ("tile_m", "--param expects name=v1,v2"),
])
def test_bad_param_is_a_clear_error_before_any_work(tmp_path, capsys, param, message):
    out = tmp_path / "results.json"
    rc = main(["sweep", "gemm", "--param", param, "--cache", str(tmp_path / "cache"),
               "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 1
    assert message in err and "Traceback" not in err
    assert "sweeping" not in err  # nothing started
    assert not out.exists() and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("argv, message", [
    (["--param", "tile_m=64", "--param", "tile_m=128"], "--param tile_m is given twice"),
    (["--metric", "measured", "--backend", "emu"], "--metric measured times launches"),
    (["--backend", "hip"], "--metric modeled runs the timing model on the emulator"),
    (["--target", "gfx90a"], "supports targets gfx942, gfx950"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--sample", "0", "--param", "tile_m=64,128"], "--sample must be at least 1"),
    (["--address", "10.0.0.1:6379"], "--address names a Ray cluster"),
    (["--plot", "/nonexistent/dir/p.png"], "no such folder"),
])
def test_bad_options_are_clear_errors(tmp_path, capsys, argv, message):
    rc = main(["sweep", "gemm", *argv, "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert rc == 1 and message in err and "Traceback" not in err


def test_unknown_kernel(capsys):
    assert main(["sweep", "nope", "--param", "m=1"]) == 1
    assert "unknown kernel 'nope'" in capsys.readouterr().err


def test_ray_missing_says_how_to_install(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    assert main(["sweep", "gemm", "--engine", "ray", "--no-cache"]) == 1
    assert "pip install 'asterism[cluster]'" in capsys.readouterr().err


def test_python_space_is_checked():
    with pytest.raises(SweepError, match="empty list"):
        check_space(_gemm(), {"tile_m": []})
    with pytest.raises(SweepError, match="expected int"):
        check_space(_gemm(), {"tile_m": [64, 1.5]})
    with pytest.raises(SweepError, match="vector_case has no parameter 'nn'"):
        check_space(vector_case, {"nn": [1]})


# ------------------------------------------------------------------------------ GEMM, local


@pytest.fixture(scope="module")
def local_gemm(tmp_path_factory):
    """The 4-point GEMM sweep through the CLI on 2 local workers: (report, plot path)."""
    tmp = tmp_path_factory.mktemp("sweep")
    out, png = tmp / "results.json", tmp / "sweep.png"
    rc = main(["sweep", *GEMM_ARGS, "--workers", "2", "--check", "--cache", str(tmp / "c"),
               "-o", str(out), "--plot", str(png), "-q"])
    assert rc == 0
    return json.loads(out.read_text()), png, tmp / "c"


def test_local_sweep_matches_direct_runs(local_gemm):
    from asterism.kernels.run import run_case

    report, png, _cache = local_gemm
    assert report["points"] == 4 and report["failed"] == 0 and report["modeled"]
    rows = report["results"]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    direct = {}
    for r in rows:
        params = {**GEMM_SHAPE, **{k: r["params"][k] for k in ("tile_m", "tile_n")}}
        run = run_case(_gemm().build("gfx942", params), backend="emu", check=True,
                       timing=True)
        direct[(params["tile_m"], params["tile_n"])] = run
        assert r["cycles"] == run.cycles and r["tflops"] == pytest.approx(run.tflops)
        assert r["checked"] and r["max_abs_error"] <= run.checks[0].atol
        assert r["lds_bytes"] == run.registers["lds"]
    # best first: by TFLOPS computed in this process
    want = sorted(direct, key=lambda p: -direct[p].tflops)
    assert [(r["params"]["tile_m"], r["params"]["tile_n"]) for r in rows] == want
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rerun_is_served_from_the_cache_as_a_ranked_table(capsys, local_gemm):
    report, _png, cache = local_gemm
    assert main(["sweep", *GEMM_ARGS, "--workers", "2", "--check", "--cache", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "4 points (0 run, 4 cached), 0 failed" in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("rank"))
    assert lines[head].split()[:5] == ["rank", "tile_m", "tile_n", "TFLOPS", "per-CU"]
    table = [line.split()[:4] for line in lines[head + 1:head + 5]]
    assert table == [[str(r["rank"]), str(r["params"]["tile_m"]), str(r["params"]["tile_n"]),
                      f"{r['tflops']:.2f}"] for r in report["results"]]


def test_ray_ranks_the_same_points_the_same_way(local_gemm):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'asterism[cluster]')")
    report, _png, _cache = local_gemm
    result = asterism.sweep("gemm", {**GEMM_SHAPE, "tile_m": [64, 128], "tile_n": [64, 128]},
                            engine="ray", workers=2, check=True, cache=False,
                            progress=False)
    assert result.engine == "local ray, 2 CPUs" and not result.failed
    ray_rows = [(r.params["tile_m"], r.params["tile_n"], r.cycles, r.tflops, r.vgprs,
                 r.agprs, r.lds_bytes, r.waves_per_simd) for r in result.ranked()]
    local_rows = [(r["params"]["tile_m"], r["params"]["tile_n"], r["cycles"], r["tflops"],
                   r["vgprs"], r["agprs"], r["lds_bytes"], r["waves_per_simd"])
                  for r in report["results"]]
    assert ray_rows == local_rows
    assert len({r.worker for r in result.points}) >= 1


# ------------------------------------------------------------------------------ user generators


def _vector_module(target: str):
    """c[i] = a[i] + b[i] (f32, 64 work-items per workgroup), written with the builder."""
    from asterism.builder import KernelBuilder

    kb = KernelBuilder("vadd", target=target, workgroup_size=(64, 1, 1))
    a = kb.arg_buffer("a", "f32", access="read_only")
    b = kb.arg_buffer("b", "f32", access="read_only")
    c = kb.arg_buffer("c", "f32", access="write_only")
    kernarg, wg, tid = kb.kernarg_ptr(), kb.workgroup_id("x"), kb.workitem_id("x")
    kb.s_load_dwordx2(kb.s[4:6], kernarg, a)
    kb.s_load_dwordx2(kb.s[6:8], kernarg, b)
    kb.s_load_dwordx2(kb.s[8:10], kernarg, c)
    kb.v_lshl_add_u32(kb.v(1), wg, 6, tid)
    kb.v_lshlrev_b32(kb.v(2), 2, kb.v(1))
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_load_dword(kb.v(3), kb.v(2), kb.s[4:6])
    kb.global_load_dword(kb.v(4), kb.v(2), kb.s[6:8])
    kb.s_waitcnt(vmcnt=0)
    kb.v_add_f32(kb.v(3), kb.v(3), kb.v(4))
    kb.global_store_dword(kb.v(2), kb.v(3), kb.s[8:10])
    kb.s_endpgm()
    return kb.finish()


def vector_case(n: int = 64, mode: str = "good", target: str = "gfx942"):
    """A user generator: every failure stage on demand, and a build log for the cache test."""
    log = os.environ.get("ASTERISM_TEST_SWEEP_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{n} {mode}\n")
    if os.environ.get("ASTERISM_TEST_SWEEP_STOP") == str(n):
        raise KeyboardInterrupt  # as Ctrl-C would, in the middle of the sweep
    if mode == "bad_build":
        raise ValueError("no such variant")
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    args = {"a": a, "b": b, "c": np.zeros(n, np.float32)}
    if mode == "bad_compile":
        return ("this is not amdgcn IR", "vadd", n // 64, 64, args, n)
    if mode == "tuple":
        return (_vector_module(target), "vadd", n // 64, 64, args, n)
    off = 1.0 if mode == "bad_ref" else 0.0
    return KernelCase("vadd", target, {"n": n}, _vector_module(target), "vadd",
                      (n // 64, 1, 1), (64, 1, 1), args, ("c",),
                      lambda: {"c": a + b + off}, 1e-6, 0.0, n)


def test_failing_points_are_recorded_with_their_stage(tmp_path):
    result = asterism.sweep(vector_case, {"mode": ["good", "bad_build", "bad_compile",
                                                   "bad_ref", "tuple"]},
                            check=True, workers=2, cache=tmp_path, progress=False)
    by_mode = {r.params["mode"]: r for r in result.points}
    assert by_mode["good"].ok and by_mode["good"].cycles > 0
    assert by_mode["good"].max_abs_error == 0.0
    assert by_mode["bad_build"].stage == "build"
    assert "ValueError: no such variant" in by_mode["bad_build"].error
    assert by_mode["bad_compile"].stage == "compile"
    assert "<input>:1:6: Operation this is not registered" in by_mode["bad_compile"].error
    bad = by_mode["bad_ref"]
    assert bad.stage == "check" and not bad.ok
    assert bad.max_abs_error == pytest.approx(1.0, abs=1e-6)
    assert bad.cycles is not None  # measured before the check failed
    assert by_mode["tuple"].stage == "check" and "return a KernelCase" in by_mode["tuple"].error
    assert [r.params["mode"] for r in result.ranked()] == ["good"]
    table = result.table()
    assert "failed (4):" in table and "mode=bad_build: build: ValueError" in table
    # without check, a tuple generator is a valid point, ranked like the KernelCase one
    plain = asterism.sweep(vector_case, {"mode": ["good", "tuple"]}, workers=1,
                           cache=False, progress=False)
    assert [r.ok for r in plain.points] == [True, True]
    assert plain.points[0].cycles == plain.points[1].cycles


def test_cache_resumes_an_interrupted_sweep(tmp_path, monkeypatch):
    log = tmp_path / "builds.log"
    monkeypatch.setenv("ASTERISM_TEST_SWEEP_LOG", str(log))
    space = {"n": [64, 128, 192, 256]}
    # one worker: the points finish in order, so 64 and 128 are done when 192 stops the sweep
    monkeypatch.setenv("ASTERISM_TEST_SWEEP_STOP", "192")
    with pytest.raises(KeyboardInterrupt):
        asterism.sweep(vector_case, space, workers=1, cache=tmp_path / "c", progress=False)
    monkeypatch.delenv("ASTERISM_TEST_SWEEP_STOP")
    log.write_text("")
    second = asterism.sweep(vector_case, space, workers=1, cache=tmp_path / "c",
                            progress=False)
    assert sorted(log.read_text().split("\n")[:-1]) == ["192 good", "256 good"]
    assert second.cached == 2 and second.ran == 2 and not second.failed
    log.write_text("")
    third = asterism.sweep(vector_case, space, workers=2, cache=tmp_path / "c",
                           progress=False)
    assert log.read_text() == "" and third.cached == 4 and third.ran == 0
    assert [r.cycles for r in third.points] == [r.cycles for r in second.points]
    # another option (check) is another key: every point runs again
    fourth = asterism.sweep(vector_case, space, workers=2, check=True, cache=tmp_path / "c",
                            progress=False)
    assert fourth.ran == 4 and len(log.read_text().split("\n")[:-1]) == 4


def test_ranking_prefers_tflops_then_time():
    from asterism.sweep.worker import PointResult

    rows = [PointResult(0, {}, ok=True, tflops=1.0, seconds=2.0),
            PointResult(1, {}, ok=True, tflops=3.0, seconds=9.0),
            PointResult(2, {}, ok=True, tflops=1.0, seconds=1.0),
            PointResult(3, {}, ok=True, tflops=None, seconds=0.1)]
    assert [r.index for r in sorted(rows, key=rank_key)] == [1, 2, 0, 3]
    assert [r.index for r in sorted(rows, key=lambda r: rank_key(r, "time"))] == [3, 2, 0, 1]
    rows[0].per_cu_tflops, rows[1].per_cu_tflops, rows[2].per_cu_tflops = 50.0, 20.0, 30.0
    assert [r.index for r in sorted(rows, key=lambda r: rank_key(r, "per_cu"))] == [0, 2, 1, 3]


def test_example_sweeps_the_gemm(tmp_path):
    from test_examples import load

    mod = load("examples/sweep/sweep_gemm.py")
    result = mod.run((64, 64, 64), {"tile_m": [64], "tile_n": [64], "waves": [1, 4]}, workers=2,
                     cache=tmp_path, progress=False, rank_by="per_cu")
    assert len(result.points) == 2 and not result.failed
    assert result.points[0].checked and result.best.per_cu_tflops == max(
        r.per_cu_tflops for r in result.points)
    assert result.plot(tmp_path / "s.png").stat().st_size > 0


def test_cache_dir_from_environment(monkeypatch, tmp_path):
    from asterism.sweep.cache import default_cache_dir

    monkeypatch.setenv("ASTERISM_CACHE_DIR", str(tmp_path / "x"))
    assert default_cache_dir() == Path(tmp_path / "x")
    monkeypatch.delenv("ASTERISM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "asterism" / "sweep"


class _FakeRay:
    """Records what RayEngine asks of Ray, without starting it (the node address is what
    ray.util.get_node_ip_address would report)."""

    def __init__(self, node: str = "127.0.0.1"):
        import types

        self.calls: list[dict] = []
        self.stopped = False
        self.cluster_env_during_init: str | None = None
        self.util = types.SimpleNamespace(get_node_ip_address=lambda: node)

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs) -> None:
        self.calls.append(kwargs)
        self.cluster_env_during_init = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")

    def shutdown(self) -> None:
        self.stopped = True


def _ray_engine(monkeypatch, fake: _FakeRay, address: str | None = None):
    from asterism.sweep import engines

    monkeypatch.setattr(engines, "import_ray", lambda: fake)
    return engines.RayEngine(workers=2, address=address)


def test_local_ray_listens_on_loopback_only(monkeypatch):
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    fake = _FakeRay()
    assert _ray_engine(monkeypatch, fake)._start()
    (kwargs,) = fake.calls
    assert "address" not in kwargs and kwargs["num_cpus"] == 2
    assert kwargs["_node_ip_address"] == "127.0.0.1"
    assert kwargs["include_dashboard"] is False and kwargs["dashboard_host"] == "127.0.0.1"
    # (Ray's single-machine mode while it starts, so it keeps the loopback node address)
    assert fake.cluster_env_during_init == "0"
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ  # (restored)


def test_ray_cluster_address_is_joined_as_given(monkeypatch):
    fake = _FakeRay(node="10.0.0.2")
    assert _ray_engine(monkeypatch, fake, address="10.0.0.1:6379")._start()
    (kwargs,) = fake.calls
    assert kwargs["address"] == "10.0.0.1:6379" and "_node_ip_address" not in kwargs
    assert "num_cpus" not in kwargs and not fake.stopped


def test_local_ray_on_a_network_address_is_stopped(monkeypatch):
    fake = _FakeRay(node="192.0.2.7")  # (a Ray that ignored the options)
    with pytest.raises(SweepError, match="started on address 192.0.2.7, not loopback"):
        _ray_engine(monkeypatch, fake)._start()
    assert fake.stopped


def slow_point(n: int = 1) -> tuple:
    """A user generator that takes a while (so the sweep's heartbeat comes)."""
    import time

    time.sleep(0.5)
    raise ValueError(f"point {n} is only slow")


def test_long_points_keep_the_progress_alive(tmp_path):
    # The engine yields None when no point finished within the heartbeat; the bar redraws.
    import io

    from asterism.sweep.engines import LocalEngine
    from asterism.sweep.progress import Progress
    from asterism.sweep.worker import PointTask

    engine = LocalEngine(workers=1)
    items = list(engine.run([PointTask(0, slow_point, {"n": 1}, None)], heartbeat=0.05))
    assert items[:-1] and all(item is None for item in items[:-1])
    task, point = items[-1]
    assert point.stage == "build" and "point 1 is only slow" in point.error

    class Log(io.StringIO):
        def isatty(self) -> bool:
            return False
    log = Log()
    bar = Progress(3, stream=log)
    bar.tick()  # the sweep is young: nothing yet
    bar._quiet_until = 0
    bar.tick()
    bar.tick()  # a log gets one "still running" line per LOG_INTERVAL
    assert log.getvalue().count("still running") == 1
    assert log.getvalue().startswith("[........................] 0/3  elapsed 0:00  ETA ?")
