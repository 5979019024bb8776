"""Physical bounds and kinds of the timing model's parameters (target/data/timing.toml), the
parameter files that `--params FILE` reads, and each command that runs the model reading
them. Expected cycles are worked out by hand from the model's rules (see test_timing.py's
load_kernel for the same arithmetic)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import asterism
from asterism.builder import KernelBuilder
from asterism.cli import main
from asterism.errors import TargetError
from asterism.target import timing as tt
from asterism.timing.params import TimingError, TimingOptions

TM942 = tt.get_timing("gfx942")


def vadd_kernel(target: str = "gfx942"):
    """c = a + b over 64 lanes: three kernarg loads of one line (one HBM fill, one wait),
    two global loads of new lines (one vmcnt wait ending hbm after the second), a store
    that s_endpgm waits for (l2_hit)."""
    kb = KernelBuilder("vadd", target=target, workgroup_size=(64, 1, 1))
    a = kb.arg_buffer("a", "f32", access="read_only")
    b = kb.arg_buffer("b", "f32", access="read_only")
    c = kb.arg_buffer("c", "f32", access="write_only")
    kernarg, tid = kb.kernarg_ptr(), kb.workitem_id("x")
    kb.s_load_dwordx2(kb.s[4:6], kernarg, a)
    kb.s_load_dwordx2(kb.s[6:8], kernarg, b)
    kb.s_load_dwordx2(kb.s[8:10], kernarg, c)
    kb.v_lshlrev_b32(kb.v(2), 2, tid)
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_load_dword(kb.v(3), kb.v(2), kb.s[4:6])
    kb.global_load_dword(kb.v(4), kb.v(2), kb.s[6:8])
    kb.s_waitcnt(vmcnt=0)
    kb.v_add_f32(kb.v(3), kb.v(3), kb.v(4))
    kb.global_store_dword(kb.v(2), kb.v(3), kb.s[8:10])
    kb.s_endpgm()
    return kb.finish()


def vadd_args():
    return [np.arange(64, dtype=np.float32), np.ones(64, np.float32),
            np.zeros(64, np.float32)]


def write(path, text: str):
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------- timing.toml


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_every_number_has_a_kind_and_bounds_that_hold_its_value(target):
    tm = tt.get_timing(target)
    names = tt.number_names(tt._section(tt._raw(), target))
    assert list(tm.bounds) == names and len(names) >= 30
    for name, bound in tm.bounds.items():
        assert bound.kind in tt.PARAMETER_KINDS and bound.low <= bound.high
        assert tm.value(name) in bound, name
    # a fittable parameter has room to move; sourced ones the file fixes
    assert all(tm.bounds[n].low < tm.bounds[n].high for n in tm.fittable())
    assert "dispatch.taken_branch" not in tm.fittable()  # [att] 16, measured
    assert tm.bounds["issue_cycles"] == tt.Bound("sourced", 4, 4)
    assert tm.bounds["memory.hbm"] == tt.Bound("fittable", 500, 800)  # [pyhip]


def _use(monkeypatch, data):
    monkeypatch.setattr(tt, "_raw", lambda: data)
    tt._timing.cache_clear()


def test_a_value_outside_its_bounds_in_timing_toml_is_refused(monkeypatch):
    good = tt._raw()
    try:
        memory = {**good["gfx942"]["memory"], "hbm": 900}
        _use(monkeypatch, {**good, "gfx942": {**good["gfx942"], "memory": memory}})
        with pytest.raises(TargetError, match=r"\[gfx942\]: memory.hbm = 900 is outside its "
                                              r"bounds \[500, 800\] \(fittable\)"):
            tt.get_timing("gfx942")
        bounds = dict(good["gfx942"]["bounds"])
        bounds["memory"] = {k: v for k, v in bounds["memory"].items() if k != "hbm"}
        _use(monkeypatch, {**good, "gfx942": {**good["gfx942"], "bounds": bounds}})
        with pytest.raises(TargetError, match=r"no bounds for \['memory.hbm'\]"):
            tt.get_timing("gfx942")
        bounds["memory"] = {**good["gfx942"]["bounds"]["memory"], "hbm": ["guessed", 1, 2]}
        _use(monkeypatch, {**good, "gfx942": {**good["gfx942"], "bounds": bounds}})
        with pytest.raises(TargetError, match="expected \\[kind, lowest, highest\\]"):
            tt.get_timing("gfx942")
    finally:
        monkeypatch.undo()
        tt._timing.cache_clear()
    assert tt.get_timing("gfx942").memory["hbm"] == 600


def test_with_values_checks_bounds_but_with_memory_is_a_what_if():
    assert TM942.with_values({"memory.hbm": 700}).latency["vmem_read"] == 700
    with pytest.raises(TargetError, match="memory.hbm = 1000 is outside its bounds"):
        TM942.with_values({"memory.hbm": 1000})
    with pytest.raises(TargetError, match="unknown timing parameter 'memory.dram'"):
        TM942.with_values({"memory.dram": 1})
    assert TM942.with_memory(hbm=1000).memory["hbm"] == 1000  # --latency: not bounded


# ---------------------------------------------------------------------------- parameter files


def test_parameter_file_values_replace_timing_toml(tmp_path):
    f = write(tmp_path / "p.toml", "schema = 1\n[gfx942.memory]\nhbm = 700\n"
                                   "[gfx942.dispatch]\nbarrier = 8\n[gfx950.memory]\nlds = 56\n")
    params = tt.load_params(f)
    tm = tt.get_timing("gfx942", params)
    assert (tm.memory["hbm"], tm.latency["vmem_read"], tm.dispatch["barrier"]) == (700, 700, 8)
    assert tm.source == str(f) and TM942.source == ""
    assert tt.get_timing("gfx950", f).memory["lds"] == 56
    assert tt.get_timing("gfx942", f).values() == {**TM942.values(), "memory.hbm": 700,
                                                   "dispatch.barrier": 8}


@pytest.mark.parametrize("text, where, message", [
    ("[gfx942.memory]\nlds = 64\nhbm = 900\n", 3, r"gfx942 memory.hbm = 900 is outside its "
                                                 r"bounds \[500, 800\] \(fittable\)"),
    ("[gfx942.memory]\ndram = 5\n", 2, r"unknown timing parameter 'memory.dram' for gfx942"),
    ("[gfx942.memorie]\nhbm = 700\n", 1, r"unknown key 'memorie' in \[gfx942\]"),
    ("[gfx900.memory]\nhbm = 700\n", 1, r"unknown key 'gfx900': a parameter file has one "
                                        r"table per target"),
    ("[gfx942.bounds.memory]\nhbm = ['fittable', 1, 9000]\n", 1,
     r"\[gfx942.bounds\]: a parameter file cannot set it: the bounds are timing.toml's"),
    ("[gfx942.issue]\nmfma = 'lds'\n", 1, r"cannot set it: the issue ports are sourced"),
    ("[gfx942]\nbase = 'gfx950'\n", 2, r"\[gfx942.base\]: a parameter file cannot set it"),
    ("[gfx942.memory]\nhbm = 700.5\n", 2, r"hbm = 700.5: expected a whole number"),
    ("[gfx942.memory]\nhbm = true\n", 2, r"hbm = True: expected a whole number"),
    ("[gfx942]\nissue_cycles = 8\n", 2, r"issue_cycles = 8 is outside its bounds \[4, 4\] "
                                        r"\(sourced\)"),
    ("[gfx942.dispatch]\ntaken_branch = 0\n", 2, r"taken_branch = 0 is outside its bounds "
                                                 r"\[16, 16\] \(measured\)"),
    ("schema = 2\n", 1, r"schema = 2: this asterism reads schema 1"),
    ("[gfx942.memory]\nhbm = \n", 2, r"invalid TOML: Invalid value"),
])
def test_bad_parameter_files_are_located_errors(tmp_path, text, where, message):
    f = write(tmp_path / "bad.toml", text)
    with pytest.raises(TargetError, match=message) as info:
        tt.load_params(f)
    assert info.value.location is not None
    assert (info.value.location.file, info.value.location.line) == (str(f), where)


def test_parameter_file_limits_and_other_targets(tmp_path):
    with pytest.raises(TargetError, match="parameter file is missing"):
        tt.load_params(tmp_path / "none.toml")
    big = write(tmp_path / "big.toml", "# " + "x" * (2 << 20))
    with pytest.raises(TargetError, match="more than the 1048576 bytes"):
        tt.load_params(big)
    (tmp_path / "bin.toml").write_bytes(b"[gfx942.memory]\nhbm = 7\xff0\n")
    with pytest.raises(TargetError, match="not UTF-8") as info:
        tt.load_params(tmp_path / "bin.toml")
    assert info.value.location.line == 2
    deep = write(tmp_path / "deep.toml", "a = " + "[" * 100000 + "]" * 100000 + "\n")
    with pytest.raises(TargetError, match="nested too deeply|invalid TOML"):
        tt.load_params(deep)
    only950 = write(tmp_path / "950.toml", "[gfx950.memory]\nhbm = 700\n")
    with pytest.raises(TargetError, match="sets timing parameters for gfx950, not gfx942"):
        tt.get_timing("gfx942", only950)
    with pytest.raises(TimingError, match="sets timing parameters for gfx950, not gfx942"):
        asterism.launch(vadd_kernel(), "vadd", block=64, args=vadd_args(),
                        timing=TimingOptions(params=only950))


# ---------------------------------------------------------------------------- each command


def test_api_launch_reads_the_parameter_file(tmp_path):
    """vadd on gfx942: one HBM wait (the vector loads; the kernarg line is a scalar-cache miss,
    memory.smem_miss) and one L2 wait (the store s_endpgm waits for): the modeled cycles move
    by exactly the hbm change plus the l2_hit change."""
    def cycles(params):
        res = asterism.launch(vadd_kernel(), "vadd", block=64, args=vadd_args(),
                              timing=TimingOptions(params=params))
        return res.timing

    base = cycles(None)
    f = write(tmp_path / "p.toml", "[gfx942.memory]\nhbm = 700\nl2_hit = 300\n")
    moved = cycles(f)
    assert moved.cycles - base.cycles == (700 - 600) + (300 - 250)
    assert moved.parameters["params_file"] == str(f) and base.parameters["params_file"] is None
    assert f"modeled with parameters from {f}" in moved.summary()
    same = write(tmp_path / "same.toml", "[gfx942.memory]\nhbm = 600\n")
    assert cycles(same).cycles == base.cycles


def test_cli_run_reads_the_parameter_file(tmp_path, capsys):
    hsaco = tmp_path / "vadd.hsaco"
    hsaco.write_bytes(asterism.compile(vadd_kernel()))
    f = write(tmp_path / "p.toml", "[gfx942.memory]\nhbm = 700\n")  # (on the 4-cycle grid)
    args = ["run", str(hsaco), "--arg", "a=ones:64:f32", "--arg", "b=ones:64:f32",
            "--arg", "c=zeros:64:f32", "--timing", "--json", "--trace-dir"]
    assert main([*args, str(tmp_path / "t0")]) == 0
    base = json.loads(capsys.readouterr().out)["timing"]
    assert main([*args, str(tmp_path / "t1"), "--params", str(f)]) == 0
    moved = json.loads(capsys.readouterr().out)["timing"]
    assert moved["cycles"] - base["cycles"] == 700 - 600
    assert moved["parameters"]["params_file"] == str(f)
    bad = write(tmp_path / "bad.toml", "[gfx942.memory]\nhbm = 5000\n")
    assert main([*args, str(tmp_path / "t2"), "--params", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2:1: error: gfx942 memory.hbm = 5000 is outside its bounds" in err
    assert "Traceback" not in err and not (tmp_path / "t2").exists()
    assert main(["run", str(hsaco), "--params", str(f)]) == 1
    assert "need --timing" in capsys.readouterr().err


def test_kernels_run_and_compare_read_the_parameter_file(tmp_path, capsys):
    gemm = ["--target", "gfx942", "--shape", "64x64x64", "--param", "tile_m=64",
            "--param", "tile_n=64"]
    same = write(tmp_path / "same.toml", "[gfx942.memory]\nhbm = 600\n")
    slow = write(tmp_path / "slow.toml", "[gfx942.memory]\nhbm = 800\nl2_hit = 500\n")
    runs = {}
    for name, extra in (("none", []), ("same", ["--params", str(same)]),
                        ("slow", ["--params", str(slow)])):
        assert main(["kernels", "run", "gemm", *gemm, "--timing", "--json", *extra]) == 0
        runs[name] = json.loads(capsys.readouterr().out)["timing"]
    assert runs["same"]["cycles"] == runs["none"]["cycles"] < runs["slow"]["cycles"]
    assert runs["slow"]["params_file"] == str(slow) and runs["none"]["params_file"] is None
    assert main(["kernels", "run", "gemm", *gemm, "--timing", "--params", str(slow)]) == 0
    assert f"modeled with parameters from {slow}" in capsys.readouterr().out
    assert main(["kernels", "compare", "gemm", "gemm@b", *gemm, "--timing", "--json",
                 "--params", str(slow)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["params_file"] == str(slow)
    assert [k["modeled_cycles"] for k in report["kernels"]] == [runs["slow"]["cycles"]] * 2
    assert main(["kernels", "run", "gemm", *gemm, "--params", str(slow)]) == 1
    assert "--params needs --timing" in capsys.readouterr().err


def test_sweep_reads_the_parameter_file(tmp_path):
    """The sweep's modeled cycles of vadd move as the launch's do; the file's values are
    part of the cache key (a cached default point is not reused)."""
    from test_sweep import vector_case

    f = write(tmp_path / "p.toml", "[gfx942.memory]\nhbm = 700\n")
    cache = tmp_path / "cache"
    base = asterism.sweep(vector_case, {"n": [64]}, workers=1, cache=cache, progress=False)
    moved = asterism.sweep(vector_case, {"n": [64]}, workers=1, cache=cache, progress=False,
                           params=f)
    assert moved.points[0].cycles - base.points[0].cycles == 700 - 600
    assert not moved.points[0].cached and moved.params_file == str(f)
    assert moved.to_json()["params_file"] == str(f)
    assert f"modeled with parameters from {f}" in moved.table()
    from asterism.sweep.points import SweepError

    with pytest.raises(SweepError, match="needs --metric modeled"):
        asterism.sweep(vector_case, {"n": [64]}, metric="measured", backend="hip",
                       cache=False, progress=False, params=f)
