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
    # the bank and line mechanisms' figures per instruction (issue 23)
    assert "LDS bank conflicts (modeled, not measured):" in out
    assert "cache lines (modeled, not measured):" in out
    rc = main(["kernels", "run", "flash_attention_fwd", "--backend", "emu", "--shape",
               "1x1x64x64", "--param", "block_n=32", "--timing", "--json"])
    timing = json.loads(capsys.readouterr().out)["timing"]
    assert rc == 0 and timing["lds_conflicts"] and timing["cache_lines"]
    assert all(d["executions"] > 0 for d in timing["lds_conflicts"])
    assert any(d["instruction"].startswith("ds_read") for d in timing["lds_conflicts"])


def test_build_writes_a_code_object(tmp_path):
    out = tmp_path / "g.hsaco"
    assert main(["kernels", "build", "gemm", "--shape", "64x64x64", "--param", "tile_m=64",
                 "--param", "tile_n=64", "-o", str(out)]) == 0
    assert [k.name for k in read_code_object(out.read_bytes()).kernels]


def test_build_writes_by_extension(tmp_path):
    # .mlir: the kernel's IR before the pipeline (it parses back); .s: the assembly after
    # it (LLVM's assembler reads it elsewhere; here: the kernel's label and s_endpgm); .co:
    # the same code object as .hsaco.
    from asterism.ir import parse_ir

    base = ["kernels", "build", "gemm", "--shape", "64x64x64", "--param", "tile_m=64",
            "--param", "tile_n=64", "-o"]
    for ext in (".mlir", ".s", ".co", ".hsaco"):
        assert main(base + [str(tmp_path / f"g{ext}")]) == 0
    ir = (tmp_path / "g.mlir").read_text()
    assert "amdgcn.kernel" in ir and "s_waitcnt" not in ir  # before waits
    parse_ir(ir, "g.mlir")
    asm = (tmp_path / "g.s").read_text()
    assert ".amdhsa_kernel" in asm and "s_endpgm" in asm and "s_waitcnt" in asm
    assert (tmp_path / "g.co").read_bytes() == (tmp_path / "g.hsaco").read_bytes()


@pytest.mark.parametrize("argv, message", [
    (["kernels", "build", "gemm", "-o", "OUT.txt"],
     "unknown output extension '.txt'; kernels build writes .mlir"),
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
    argv = [str(tmp_path / "out.hsaco") if a == "OUT" else
            str(tmp_path / "out.txt") if a == "OUT.txt" else a for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out.hsaco").exists() and not (tmp_path / "out.txt").exists()


# ---------------------------------------------------------------------------- --shape


@pytest.mark.parametrize("argv, message", [
    (["kernels", "run", "flash_attention_fwd", "--shape", "1024"],
     "--shape for flash_attention_fwd is BATCHxHEADSxSEQxDIM, e.g. 1x8x4096x128 (--shape "
     "expects 4 sizes), got '1024'"),
    (["kernels", "build", "gemm", "--shape", "512x512", "-o", "OUT"],
     "--shape for gemm is MxNxK, e.g. 1024x1024x1024 (--shape expects 3 sizes), got "
     "'512x512'"),
    (["kernels", "run", "gemm", "--shape", "1x2x3x4"], "--shape for gemm is MxNxK"),
    (["kernels", "run", "gemm", "--shape", "64x-64x64"], "--shape for gemm is MxNxK"),
    (["kernels", "run", "gemm", "--shape", "64x\u00b2x64"], "--shape for gemm is MxNxK"),
    (["sweep", "flash_attention_fwd", "--shape", "2x64"],
     "--shape for flash_attention_fwd is BATCHxHEADSxSEQxDIM"),
])
def test_shape_with_the_wrong_dims_names_the_form(tmp_path, capsys, argv, message):
    argv = [str(tmp_path / "out.hsaco") if a == "OUT" else a for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"error: {message}" in err and "Traceback" not in err
    assert not (tmp_path / "out.hsaco").exists()


def test_shape_sets_the_declared_parameters():
    from asterism import kernels

    attention = kernels.get("flash_attention_fwd")
    assert attention.shape.form == "BATCHxHEADSxSEQxDIM"
    assert attention.shape_params("2x4x256x64") == {"batch": "2", "heads": "4",
                                                     "seq_q": "256", "head_dim": "64"}
    assert kernels.get("gemm").shape_params("512x256X128") == {"m": "512", "n": "256",
                                                                "k": "128"}
    # Every declared example is a valid shape for its own kernel.
    for gen in kernels.generators():
        if gen.shape:
            assert set(gen.shape_params(gen.shape.example)) == set(gen.shape.params)
            assert all(gen.param(p) for p in gen.shape.params)


def test_list_and_help_show_each_shape(capsys):
    assert main(["kernels", "list"]) == 0
    out = capsys.readouterr().out
    assert "--shape BATCHxHEADSxSEQxDIM (batch, heads, seq_q, head_dim), e.g. " \
           "1x8x4096x128" in out
    assert "--shape MxNxK (m, n, k), e.g. 1024x1024x1024" in out
    assert main(["kernels", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["gemm"]["shape"] == {"form": "MxNxK", "params": ["m", "n", "k"],
                                     "example": "1024x1024x1024"}
    for verb in ("run", "build"):
        with pytest.raises(SystemExit):
            main(["kernels", verb, "--help"])
        out = capsys.readouterr().out
        assert "flash_attention_fwd: BATCHxHEADSxSEQxDIM" in out and "gemm: MxNxK" in out


# ---------------------------------------------------------------------------- build


def _build_peak(argv: list[str]) -> int:
    """Peak traced memory (bytes) of one CLI build."""
    import tracemalloc

    tracemalloc.start()
    try:
        assert main(argv) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_build_never_makes_inputs_or_the_reference(tmp_path, monkeypatch, capsys):
    # `kernels build` at batch 4096 took 67 s and 18.9 GB to write the code object of
    # batch 1: the inputs and the reference were made. Now the build's memory does not grow
    # with the batch (batch 512 made 134 MB of float64 draws alone), the code objects are
    # the same and the input makers are never called.
    from asterism.kernels import attention, gemm

    base = ["kernels", "build", "flash_attention_fwd", "--target", "gfx942"]
    small, mid, huge = (tmp_path / f"b{n}.hsaco" for n in (1, 512, 32768))
    assert main([*base, "--param", "batch=1", "-o", str(small)]) == 0
    assert _build_peak([*base, "--param", "batch=512", "-o", str(mid)]) < 48 << 20

    def refuse(*args, **kwargs):
        raise AssertionError("a build made the kernel's inputs")
    monkeypatch.setattr(attention, "make_inputs", refuse)
    monkeypatch.setattr(gemm, "make_inputs", refuse)
    assert main([*base, "--param", "batch=32768", "-o", str(huge)]) == 0
    assert small.read_bytes() == mid.read_bytes() == huge.read_bytes()
    out = tmp_path / "g.hsaco"
    assert main(["kernels", "build", "gemm", "--shape", "16384x16384x16384", "-o",
                 str(out)]) == 0
    assert read_code_object(out.read_bytes()).kernels
    capsys.readouterr()


def test_sweep_build_step_makes_no_inputs(monkeypatch):
    from asterism.kernels import attention
    from asterism.kernels.run import compile_case
    from asterism.sweep.worker import build_case

    def refuse(*args, **kwargs):
        raise AssertionError("the build step made the kernel's inputs")
    monkeypatch.setattr(attention, "make_inputs", refuse)
    case = build_case("flash_attention_fwd", {"batch": 32768}, "gfx942")
    assert compile_case(case) and not case.args.made and list(case.args) == list("qkvo")


def test_run_makes_the_inputs_it_needs(capsys):
    # (the lazy arguments are made for a run and the reference of the check)
    rc = main(["kernels", "run", "flash_attention_fwd", "--backend", "emu", "--target",
               "gfx942", "--shape", "1x1x32x64", "--param", "waves=1", "--param", "block_m=32",
               "--param", "block_n=32", "--check", "--json", "--quiet"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0 and report["checks"][0]["passed"] is True
    assert 0 < report["checks"][0]["max_abs_error"] <= report["checks"][0]["atol"]
