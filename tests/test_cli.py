"""The `asterism` command: verbs, exit codes, error messages, no partial outputs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from asterism.cli import main

DEMO = "examples/demo/add_10.mlir"


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_translate_compile_disasm_roundtrip(tmp_path, capsys):
    s, h = tmp_path / "a.s", tmp_path / "a.hsaco"
    assert run(["translate", DEMO, "-o", str(s)], capsys)[0] == 0
    assert ".amdhsa_kernel add_10" in s.read_text()
    assert run(["compile", DEMO, "-o", str(h)], capsys)[0] == 0
    h2 = tmp_path / "b.hsaco"
    assert run(["asm", str(s), "-o", str(h2)], capsys)[0] == 0
    assert h.read_bytes() == h2.read_bytes()
    code, out, _ = run(["disasm", str(h)], capsys)
    assert code == 0 and out.count("v_add_u32_e32 v1, 1, v1") == 10
    code, out, _ = run(["disasm", "--json", str(h)], capsys)
    data = json.loads(out)
    assert data["kernels"][0]["name"] == "add_10"
    assert data["instructions"][-1]["text"] == "s_endpgm"


def test_run_prints_results(tmp_path, capsys):
    code, out, err = run(["run", DEMO, "--grid", "4", "--arg", "out=zeros:256:i32",
                          "--save-dir", str(tmp_path)], capsys)
    assert code == 0, err
    assert "out (int32, shape (256,)): [ 10  11" in out
    import numpy as np

    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), np.arange(256) + 10)


def test_isa_verb(capsys):
    code, out, _ = run(["isa", "v_mfma_f32_16x16x16_f16", "--target", "gfx942"], capsys)
    assert code == 0 and "4 MFMA passes" in out and "MAI opcode 77" in out
    code, out, _ = run(["isa", "--json", "ds_read_b64_tr_b16"], capsys)
    assert [d["target"] for d in json.loads(out)] == ["gfx950"]


@pytest.mark.parametrize("argv,message", [
    (["translate", "missing.mlir"], "cannot read missing.mlir"),
    (["run", DEMO, "--arg", "out=zeros:256:f32"], "argument 'out': expected an array of int32"),
    (["run", DEMO, "--arg", "nope=1"], "has no argument 'nope'"),
    (["isa", "v_add_u33"], "unknown instruction 'v_add_u33'"),
    (["opt", DEMO, "--pipeline", "bogus"], "unknown pass 'bogus'"),
])
def test_user_errors_exit_1_without_traceback(argv, message, capsys):
    code, _out, err = run(argv, capsys)
    assert code == 1
    assert message in err and "Traceback" not in err


def test_bad_asm_leaves_no_output_file(tmp_path, capsys):
    src, out = tmp_path / "bad.s", tmp_path / "bad.hsaco"
    src.write_text('.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\nk:\n  v_add_u32 v1, v2, s[4:5]\n')
    code, _o, err = run(["asm", str(src), "-o", str(out)], capsys)
    assert code == 1 and f"{src}:3:21: error:" in err  # at the bad operand, as llvm-mc
    assert not out.exists()


def test_corrupt_code_object_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.hsaco"
    bad.write_bytes(b"\x7fELF" + bytes(20))
    code, _o, err = run(["disasm", str(bad)], capsys)
    assert code == 1 and "error:" in err and "Traceback" not in err


def test_entry_point_and_help():
    res = subprocess.run([sys.executable, "-m", "asterism.cli", "--help"], capture_output=True,
                         text=True)
    assert res.returncode == 0 and "examples:" in res.stdout
    res = subprocess.run([sys.executable, "-m", "asterism.cli", "run", "--help"],
                         capture_output=True, text=True)
    assert "zeros:256[:i32]" in res.stdout
