"""A code object the library does not own is an entry like any other: a user's entry made
from the compiled demo kernel (examples/demo/add_10.mlir: out[i] = i + 10), registered from
Python (register_code_object) and from a manifest (`asterism kernels --library FILE`), run
and checked as the library's own kernels are; bad manifests are one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from asterism import api, kernels
from asterism.errors import AsterismError
from asterism.kernels.base import KernelParamError, unregister
from asterism.kernels.codeobject import load_library, register_code_object

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = np.arange(256, dtype=np.int32) + 10  # by hand: 10 increments of i


@pytest.fixture(scope="module")
def add_10() -> bytes:
    return api.compile(str(ROOT / "examples" / "demo" / "add_10.mlir"))


@pytest.fixture
def entries():
    """Names registered by a test, removed after it."""
    names: list[str] = []
    yield names
    for name in names:
        unregister(name)


def test_python_registration_runs_and_checks(add_10, entries, tmp_path):
    path = tmp_path / "add_10.hsaco"
    path.write_bytes(add_10)
    gen = register_code_object(
        "add_10_py", path, grid=(4, 1, 1),
        args=lambda target, p: {"out": np.zeros(256, np.int32)}, outputs=("out",),
        reference=lambda args, p: {"out": EXPECTED}, description="out[i] = i + 10",
        origin="examples/demo/add_10.mlir, compiled by asterism")
    entries.append("add_10_py")
    assert kernels.get("add_10_py") is gen and gen.targets == ("gfx942",)
    assert gen.describe_origin() == "code object: examples/demo/add_10.mlir, compiled by asterism"
    case = gen.build()
    assert case.module is None and case.code == add_10 and case.block == (64, 1, 1)
    run = kernels.run_case(case, backend="emu", check=True)
    assert run.passed and run.checks[0].max_abs_error == 0
    assert run.sanitizer is None  # asterism made it: error mode, and it is clean
    assert "add_10_py  [gfx942]  out[i] = i + 10" in kernels.format_list(kernels.generators())


def test_a_wrong_reference_fails_the_check(add_10, entries):
    register_code_object("add_10_wrong", add_10, grid=4,
                         args=lambda target, p: {"out": np.zeros(256, np.int32)},
                         outputs=("out",), reference=lambda args, p: {"out": EXPECTED + 1})
    entries.append("add_10_wrong")
    run = kernels.run_case(kernels.get("add_10_wrong").build(), backend="emu", check=True)
    assert not run.passed and run.checks[0].max_abs_error == 1


def test_registration_errors(add_10, entries):
    register_code_object("add_10_once", add_10, grid=4,
                         args=lambda target, p: {"out": np.zeros(256, np.int32)})
    entries.append("add_10_once")
    with pytest.raises(KernelParamError, match="registered twice"):
        register_code_object("add_10_once", add_10, grid=4, args=lambda t, p: {})
    with pytest.raises(KernelParamError, match="no reference"):
        kernels.run_case(kernels.get("add_10_once").build(), backend="emu", check=True)
    with pytest.raises(KernelParamError, match="no kernel 'nope'"):
        register_code_object("add_10_nope", add_10, kernel="nope", grid=4,
                             args=lambda t, p: {}).build()
    unregister("add_10_nope")
    with pytest.raises(KernelParamError, match="targets="):
        register_code_object("x", lambda t, p: add_10, grid=4, args=lambda t, p: {})
    with pytest.raises(KernelParamError, match="supports targets gfx942"):
        kernels.get("add_10_once").build("gfx950")


# ------------------------------------------------------------------------------ manifest


def _manifest(folder: Path, add_10: bytes, want=EXPECTED, **changes) -> Path:
    (folder / "add_10.hsaco").write_bytes(add_10)
    np.save(folder / "add_10_expected.npy", want)
    entry = {"name": "add_10_user", "code_object": "add_10.hsaco", "kernel": "add_10",
             "grid": [4], "args": {"out": "zeros:256:i32"},
             "expected": {"out": "add_10_expected.npy"},
             "description": "out[i] = i + 10 (the demo kernel)",
             "origin": "examples/demo/add_10.mlir, compiled by asterism"}
    entry.update(changes)
    path = folder / "lib.json"
    path.write_text(json.dumps({"asterism_kernels": 1, "kernels": [entry]}))
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "asterism.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_manifest_entry_through_the_api(add_10, entries, tmp_path):
    (gen,) = load_library(_manifest(tmp_path, add_10))
    entries.append(gen.name)
    assert gen.describe_origin() == \
        "code object: examples/demo/add_10.mlir, compiled by asterism"
    run = kernels.run_case(gen.build(), backend="emu", check=True)
    assert run.passed and [c.output for c in run.checks] == ["out"]


def test_manifest_entry_through_the_cli(add_10, tmp_path):
    _manifest(tmp_path, add_10)
    listed = _cli("kernels", "list", "--library", "lib.json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "add_10_user  [gfx942]  out[i] = i + 10 (the demo kernel)" in listed.stdout
    assert "origin: code object: examples/demo/add_10.mlir, compiled by asterism" in \
        listed.stdout
    assert "origin: code object: AITER fmha_v3_fwd" in listed.stdout
    ran = _cli("kernels", "run", "add_10_user", "--library", "lib.json", "--check",
               "--backend", "emu", "--timing", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "check out: max abs error 0" in ran.stdout and "modeled:" in ran.stdout
    built = _cli("kernels", "build", "add_10_user", "--library", "lib.json", "-o", "x.hsaco",
                 cwd=tmp_path)
    assert built.returncode == 0 and (tmp_path / "x.hsaco").read_bytes() == add_10


def test_manifest_with_a_wrong_expectation_fails_the_check(add_10, tmp_path):
    _manifest(tmp_path, add_10, want=EXPECTED * 2)
    ran = _cli("kernels", "run", "add_10_user", "--library", "lib.json", "--check",
               "--backend", "emu", cwd=tmp_path)
    assert ran.returncode == 1 and "FAILED" in ran.stdout


@pytest.mark.parametrize("changes, match", [
    ({"code_object": "../add_10.hsaco"}, "not a safe file name"),
    ({"code_object": "/etc/passwd"}, "not a safe file name"),
    ({"code_object": "missing.hsaco"}, "is missing"),
    ({"args": {}}, "missing out"),
    ({"args": {"out": "zeros:256:i32", "extra": "1"}}, "unknown extra"),
    ({"args": {"out": "zeros:-5:i32"}}, "bad shape or dtype|negative"),
    ({"grid": [0]}, "grid must be 1 to 3 positive integers"),
    ({"expected": {"nope": "add_10_expected.npy"}}, "not an argument"),
    ({"tolerance": [1]}, "tolerance"),
    ({"kernel": "other"}, "no kernel 'other'"),
    ({"colour": "blue"}, "unknown key"),
])
def test_bad_manifest_entries(add_10, tmp_path, changes, match):
    path = _manifest(tmp_path, add_10, **changes)
    with pytest.raises(AsterismError, match=match):
        gens = load_library(path)
        for gen in gens:  # (argument specs are read when the case's arguments are made)
            try:
                kernels.run_case(gen.build(), backend="emu", check=True)
            finally:
                unregister(gen.name)
    ran = _cli("kernels", "run", "add_10_user", "--library", "lib.json", "--check",
               "--backend", "emu", "--quiet", cwd=tmp_path)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert ran.stderr.startswith("error: ")


def test_bad_manifest_files(add_10, tmp_path):
    (tmp_path / "lib.json").write_text("{not json")
    with pytest.raises(KernelParamError):
        load_library(tmp_path / "lib.json")
    (tmp_path / "lib.json").write_text(json.dumps({"kernels": []}))
    with pytest.raises(KernelParamError, match="not a kernel library manifest"):
        load_library(tmp_path / "lib.json")
    deep = {"asterism_kernels": 1, "kernels": [{"args": {"a": [[[[[[[[1]]]]]]]]}}]}
    (tmp_path / "lib.json").write_text(json.dumps(deep))
    with pytest.raises(KernelParamError, match="nested deeper than 8 levels"):
        load_library(tmp_path / "lib.json")
    # a code object reached through a symbolic link is not followed
    _manifest(tmp_path, add_10)
    os.rename(tmp_path / "add_10.hsaco", tmp_path / "real.hsaco")
    os.symlink(tmp_path / "real.hsaco", tmp_path / "add_10.hsaco")
    with pytest.raises(KernelParamError, match="symbolic link"):
        load_library(tmp_path / "lib.json")
