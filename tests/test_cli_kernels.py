"""`asterism kernels list|run|build`: the kernel library from the command line."""

from __future__ import annotations

import json

import pytest

from asterism.cli import main
from asterism.mc.codeobject import read_code_object


def test_list_names_every_kernel(capsys):
    assert main(["kernels", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in rows}
    assert {"gemm", "flash_attention_fwd"} <= names
    gemm = next(r for r in rows if r["name"] == "gemm")
    assert "gfx942" in gemm["targets"] and "gfx950" in gemm["targets"]


def test_run_check_small_gemm(capsys):
    rc = main(["kernels", "run", "gemm", "--target", "gfx950", "--backend", "emu",
               "--shape", "64x64x64", "--param", "tile_m=64", "--param", "tile_n=64",
               "--check", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert report["checks"][0]["passed"] is True
    assert report["checks"][0]["max_abs_error"] <= report["checks"][0]["atol"]


def test_run_timing_is_labelled_modeled(capsys):
    rc = main(["kernels", "run", "flash_attention_fwd", "--backend", "emu", "--shape",
               "1x1x64x64", "--param", "block_n=32", "--timing"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "modeled" in out and "TFLOPS" in out


def test_build_writes_a_code_object(tmp_path):
    out = tmp_path / "g.hsaco"
    assert main(["kernels", "build", "gemm", "--shape", "64x64x64", "--param", "tile_m=64",
                 "--param", "tile_n=64", "-o", str(out)]) == 0
    assert [k.name for k in read_code_object(out.read_bytes()).kernels]


@pytest.mark.parametrize("argv, message", [
    (["kernels", "run", "gemm", "--param", "tile_m=999"], "parameter tile_m"),
    (["kernels", "run", "gemm", "--param", "bogus=1"], "no parameter 'bogus'"),
    (["kernels", "run", "gemm", "--param", "m=abc"], "expected int"),
    (["kernels", "run", "gemm", "--param", "m"], "name=value"),
    (["kernels", "run", "gemm", "--shape", "12xfoo"], "--shape expects"),
    (["kernels", "run", "nope"], "unknown kernel 'nope'"),
    (["kernels", "run", "gemm", "--target", "gfx90a"], "supports targets"),
    (["kernels", "build", "gemm", "--param", "dtype=f64", "-o", "OUT"], "dtype"),
])
def test_bad_parameters_are_clear_errors(tmp_path, capsys, argv, message):
    argv = [str(tmp_path / "out.hsaco") if a == "OUT" else a for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out.hsaco").exists()
