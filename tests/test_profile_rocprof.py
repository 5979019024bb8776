"""`asterism profile`: rocprofv3 command construction, missing tool, and a faked capture."""

from __future__ import annotations

import os
import shutil
import stat
import sys

import pytest

from asterism.cli import main
from asterism.profile.rocprof import ProfileError, ProfileRequest, build_command


def test_command_captures_the_requested_launch():
    req = ProfileRequest("k.hsaco", "gemm", grid="8,8", args=["a.npy"], iterations=5,
                         capture=3, output_dir="out", target_cu=1)
    cmd = build_command(req, "/opt/rocm/bin/rocprofv3")
    assert cmd[:8] == ["/opt/rocm/bin/rocprofv3", "--att", "--kernel-include-regex", "^gemm$",
                       "--kernel-iteration-range", "[3-3]", "-d", "out"]
    assert cmd[8:10] == ["--att-target-cu", "1"]
    app = cmd[cmd.index("--") + 1:]
    assert app[:4] == [sys.executable, "-m", "asterism.cli", "run"]
    assert "--backend" in app and app[app.index("--backend") + 1] == "hip"
    with pytest.raises(ProfileError, match="between 1 and"):
        build_command(ProfileRequest("k", "k", iterations=2, capture=3), "rocprofv3")


def test_missing_rocprofv3_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("ROCM_PATH", "/nonexistent")
    monkeypatch.setattr("asterism.profile.rocprof.Path.exists", lambda self: False)
    code = main(["profile", "examples/demo/add_10.mlir", "--kernel", "add_10"])
    err = capsys.readouterr().err
    assert code == 1 and "rocprofv3 not found" in err and "Traceback" not in err


def test_fake_rocprofv3_capture_is_reported(tmp_path, monkeypatch, capsys, shared_data):
    # A stand-in for rocprofv3 that "captures" by copying the shared ATT folder.
    capture = shared_data / "att" / "pa_mqa_logits_fp4_small"
    fake = tmp_path / "bin" / "rocprofv3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n"
                    "while [ \"$1\" != \"-d\" ]; do shift; done\n"
                    f"mkdir -p \"$2\" && cp -r {capture} \"$2/ui_output_agent_1_dispatch_3\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    out_dir = tmp_path / "prof"
    code = main(["profile", "examples/demo/add_10.mlir", "--kernel", "add_10", "-d",
                 str(out_dir), "--top", "3"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "s_waitcnt lgkmcnt(0)" in out.out
    assert shutil.which("rocprofv3") == str(fake)
