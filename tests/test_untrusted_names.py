"""Names from input (kernel and argument names in a code object, target names in IR text,
paths in a capture) never make asterism read or write outside what the user named: the one
rule of asterism.paths, and every place a name from input becomes part of a path."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from importlib import resources
from pathlib import Path

import pytest

from asterism import api
from asterism.cli import main
from asterism.errors import AsterismError, TargetError, shown
from asterism.paths import NAME_MAX, check_file_name, safe_child_path, unsafe_reason

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "examples" / "demo" / "add_10.mlir"


# ------------------------------------------------------------------------------ the rule


@pytest.mark.parametrize(("name", "reason"), [
    ("../../x", "path separator '/'"),
    ("/etc/passwd", "path separator '/'"),
    ("a\\b", "path separator '\\\\'"),
    ("..", "parent folder"),
    (".", "folder itself"),
    ("", "empty"),
    ("x\0y", "NUL"),
    ("x\ny", "control character"),
    ("x" * (NAME_MAX + 1), f"{NAME_MAX + 1} bytes long"),
    ("é" * 128, "256 bytes long"),  # (bytes, not characters: 128 x 2 bytes)
    (None, "not text"),
])
def test_unsafe_names_are_refused(name, reason):
    assert reason in unsafe_reason(name)
    with pytest.raises(AsterismError) as err:
        safe_child_path("folder", name, "kernel argument")
    assert err.value.message.startswith("kernel argument ")
    assert "is not a safe file name: " in err.value.message and reason in err.value.message
    assert "\n" not in err.value.message and len(err.value.message) < 250  # (one line)


@pytest.mark.parametrize("name", ["out", "a.b", "x" * NAME_MAX, "naïve", "-x", "...", "a b"])
def test_plain_names_are_kept(name):
    assert unsafe_reason(name) is None
    assert check_file_name(name, "x") == name
    assert safe_child_path("folder", name, "x") == os.path.join("folder", name)


# ------------------------------------------------------------------------------ run


def _renamed(kernel: str = "add_10", arg: str = "out") -> bytes:
    """The demo's code object with its kernel and its argument renamed (as a code object
    made elsewhere may name them)."""
    from asterism.mc.codeobject import read_code_object, write_code_object

    obj = read_code_object(api.compile(DEMO))
    k = obj.kernels[0]
    meta = copy.deepcopy(dict(k.metadata))
    meta[".name"], meta[".symbol"] = kernel, kernel + ".kd"
    meta[".args"][0][".name"] = arg
    k = dataclasses.replace(k, name=kernel, metadata=meta)
    return write_code_object(dataclasses.replace(obj, kernels=[k], metadata=None))


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _work(tmp_path: Path, monkeypatch, data: bytes) -> Path:
    """tmp/a/b as the working directory, with k.hsaco in it."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    (work / "k.hsaco").write_bytes(data)
    monkeypatch.chdir(work)
    return work


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("arg", ["../../x", "ABSOLUTE", "a\0b", "x" * NAME_MAX])
def test_save_dir_refuses_argument_names_that_are_not_file_names(tmp_path, monkeypatch,
                                                                 capsys, arg):
    name = str(tmp_path / "abs") if arg == "ABSOLUTE" else arg
    _work(tmp_path, monkeypatch, _renamed(arg=name))
    before = _files(tmp_path)
    assert main(["run", "k.hsaco", "--grid", "4", "--arg", "zeros:256:i32",
                 "--save-dir", "sd"]) == 1
    err = _one_line_error(capsys)
    assert "--save-dir: kernel argument " in err and "is not a safe file name" in err
    assert _files(tmp_path) == before  # (nothing written: not even sd/)


def test_save_dir_keeps_plain_argument_names(tmp_path, monkeypatch, capsys):
    import numpy as np

    _work(tmp_path, monkeypatch, _renamed(arg="a.b"))
    assert main(["run", "k.hsaco", "--grid", "4", "--arg", "zeros:256:i32",
                 "--save-dir", "sd"]) == 0
    assert "saved to sd/a.b.npy" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load("sd/a.b.npy"), np.arange(256) + 10)


@pytest.mark.parametrize("kernel", ["../evil", "ABSOLUTE"])
def test_timing_trace_folder_refuses_kernel_names_that_escape(tmp_path, monkeypatch, capsys,
                                                              kernel):
    name = str(tmp_path / "evil") if kernel == "ABSOLUTE" else kernel
    _work(tmp_path, monkeypatch, _renamed(kernel=name))
    before = _files(tmp_path)
    assert main(["run", "k.hsaco", "--arg", "zeros:256:i32", "--timing"]) == 1
    err = _one_line_error(capsys)
    assert f"kernel name {shown(name)} is not a safe file name" in err and "--trace-dir" in err
    assert _files(tmp_path) == before
    # --trace-dir names the folder: the same kernel then runs.
    assert main(["run", "k.hsaco", "--arg", "zeros:256:i32", "--timing",
                 "--trace-dir", "t"]) == 0
    assert (Path("t") / "code.json").is_file()


# ------------------------------------------------------------------------------ targets


def _ir_with_target(target: str) -> str:
    return DEMO.read_text().replace('target = "gfx942"', f'target = "{target}"')


def _relative_to_data(package: str, path: Path) -> str:
    """`path` (without .json) relative to a package's data folder, as a target name that a
    loader joining it into data/<name>.json would open."""
    data = Path(str(resources.files(package).joinpath("data")))
    return os.path.relpath(path, data)


@pytest.mark.parametrize("package", ["asterism.isa", "asterism.target"])
def test_ir_target_naming_a_json_file_elsewhere_is_not_opened(tmp_path, package, capsys):
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps({"name": "x"}))
    name = _relative_to_data(package, tmp_path / "evil")
    src = tmp_path / "k.mlir"
    src.write_text(_ir_with_target(name))
    with pytest.raises(AsterismError) as err:
        api.compile(src)
    assert f"unknown target {shown(name)}; known targets: gfx942, gfx950" in err.value.message
    assert err.value.location is not None and err.value.location.line == 2
    assert main(["compile", str(src), "-o", str(tmp_path / "k.hsaco")]) == 1
    assert f"k.mlir:2:1: error: amdgcn.module: unknown target {shown(name)}" in \
        _one_line_error(capsys)
    assert not (tmp_path / "k.hsaco").exists()


@pytest.mark.parametrize("name", ["g" * 300, "gfx942\0", "../../etc/x", "/etc/x", "gfx942/"])
def test_api_target_entry_points_check_names_first(name):
    from asterism.isa import get_isa
    from asterism.target import get_target
    from asterism.target.chip import processor_facts
    from asterism.target.timing import get_timing

    for entry in (get_isa, get_target, processor_facts, get_timing):
        with pytest.raises(TargetError) as err:
            entry(name)
        assert "unknown target" in err.value.message or "cannot read target" in \
            err.value.message
        assert len(err.value.message) < 250 and "\n" not in err.value.message


def test_overlong_ir_target_is_a_located_error(tmp_path):
    src = tmp_path / "k.mlir"
    src.write_text(_ir_with_target("g" * 300))
    with pytest.raises(AsterismError) as err:
        api.compile(src)
    assert "unknown target 'gggg" in err.value.message and "(300 characters)" in \
        err.value.message
    assert err.value.location is not None


@pytest.mark.parametrize("verb", [
    ["translate", str(DEMO)], ["compile", str(DEMO), "-o", "x.hsaco"],
    ["hazards", str(DEMO)], ["isa", "v_add_u32"], ["asm", "k.s"], ["raise", "k.hsaco"],
    ["kernels", "run", "gemm"], ["sweep", "gemm", "--no-cache", "-q"],
    ["trace", "replay", str(REPO / "tests/data/shared/att/flash_attn_func_small")],
])
def test_target_options_name_known_targets(tmp_path, monkeypatch, capsys, verb):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.s").write_text(api.translate(DEMO))
    (tmp_path / "k.hsaco").write_bytes(api.compile(DEMO))
    before = _files(tmp_path)
    assert main([*verb, "--target", "../gfx942"]) == 1
    err = _one_line_error(capsys)
    assert "'../gfx942'" in err and ("unknown target" in err or "supports targets" in err)
    assert _files(tmp_path) == before


# ------------------------------------------------------------------------------ bundle


def _modeled_trace(tmp_path: Path) -> Path:
    import numpy as np

    import asterism

    trace = tmp_path / "modeled"
    asterism.launch(str(DEMO), "add_10", grid=1, block=64, args=[np.zeros(64, np.int32)],
                    timing=True, trace_dir=trace)
    return trace


def test_bundle_copies_no_file_a_capture_names_on_its_own(tmp_path):
    """A capture's row locations are paths from elsewhere: the bundle ships a file they
    name only when the user named it too."""
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the bundle\n")
    trace = _modeled_trace(tmp_path)
    code = json.loads((trace / "code.json").read_text())
    for row in code["code"][:3]:  # (rows point to the secret file: a crafted capture)
        row[3] = f"{secret}:1"
    (trace / "code.json").write_text(json.dumps(code))
    out = tmp_path / "bundle"
    assert main(["trace", "bundle", str(trace), "-o", str(out)]) == 0
    shipped = [p for p in out.rglob("*") if p.is_file()]
    assert not any(p.read_bytes() == secret.read_bytes() for p in shipped)
    # Named by the user, the same file is shipped.
    out2 = tmp_path / "bundle2"
    assert main(["trace", "bundle", str(trace), "-o", str(out2), "--source", str(secret)]) == 0
    assert (out2 / "source" / "secret.txt").read_bytes() == secret.read_bytes()


def test_bundle_names_shipped_sources_with_plain_file_names(tmp_path):
    """A shipped source whose original path ends in "..": its name in the bundle cannot be
    that; it is "source"."""
    trace = _modeled_trace(tmp_path)
    (trace / "snapshots.json").write_text(json.dumps({"x": {"..": "shipped.txt"}}))
    (trace / "shipped.txt").write_text("shipped\n")
    out = tmp_path / "bundle"
    assert main(["trace", "bundle", str(trace), "-o", str(out)]) == 0
    assert (out / "source" / "source").read_text() == "shipped\n"
    assert json.loads((out / "source" / "INDEX.json").read_text()) == {"x/..": "source"}
