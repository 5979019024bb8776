"""The `asterism` command: verbs, exit codes, error messages, no partial outputs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

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


# ----------------------------------------------------------------------------- bad bytes

# Line 2 is "  // café " then the byte 0xff: the bad byte is at line 2, column 11 (counted
# in characters, as the parsers count; "é" is two bytes, so a byte count would say 12).
BAD_UTF8 = b"amdgcn.module @m {\n  // caf\xc3\xa9 \xff}\n"
BAD_AT = "2:11"


@pytest.mark.parametrize("argv,suffix", [
    (["translate", "{src}", "-o", "{out}"], ".mlir"),
    (["compile", "{src}", "-o", "{out}"], ".mlir"),
    (["opt", "{src}", "-o", "{out}"], ".mlir"),
    (["hazards", "{src}", "-o", "{out}"], ".mlir"),
    (["hazards", "{src}", "-o", "{out}"], ".s"),
    (["asm", "{src}", "-o", "{out}"], ".s"),
    (["stats", "{src}", "-o", "{out}"], ".mlir"),
    (["stats", "{src}", "-o", "{out}"], ".s"),
    (["stats", DEMO, "--diff", "{src}", "-o", "{out}"], ".mlir"),
    (["run", "{src}", "--save-dir", "{out}"], ".mlir"),
    (["run", "{src}", "--save-dir", "{out}"], ".s"),
    (["run", "{src}", "--timing", "--trace-dir", "{out}"], ".mlir"),
    (["run", "{src}", "--timing", "--trace-dir", "{out}"], ".s"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_input_that_is_not_utf8_is_located(argv, suffix, tmp_path, capsys):
    src, out = tmp_path / f"bad{suffix}", tmp_path / "out"
    src.write_bytes(BAD_UTF8)
    code, _out, err = run([a.format(src=src, out=out) for a in argv], capsys)
    assert code == 1 and "Traceback" not in err
    assert err == f"{src}:{BAD_AT}: error: not UTF-8 text: byte 0xff invalid start byte\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]  # no (partial) output


def test_stdin_that_is_not_utf8_is_located(monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BAD_UTF8)))
    code, out, err = run(["translate", "-"], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(f"<stdin>:{BAD_AT}: error: not UTF-8 text")


def test_truncated_utf8_sequence_at_the_end(tmp_path, capsys):
    src = tmp_path / "cut.s"
    src.write_bytes(b"s_endpgm\n\xc3")  # the first byte of a two-byte character, then EOF
    code, _out, err = run(["asm", str(src), "-o", str(tmp_path / "o.hsaco")], capsys)
    assert code == 1
    assert err == f"{src}:2:1: error: not UTF-8 text: byte 0xc3 unexpected end of data\n"


def test_trace_files_that_are_not_utf8_are_located(tmp_path, capsys):
    capture = Path(__file__).parent / "data" / "shared" / "att" / "pa_mqa_logits_fp4_small"
    if not capture.is_dir():
        pytest.skip(f"shared ATT capture not found at {capture}")
    folder = tmp_path / "capture"
    shutil.copytree(capture, folder)
    smap = tmp_path / "map.json"
    smap.write_bytes(b'{"0x100":\n "k.mlir:3"\xff}')
    code, out, err = run(["trace", "report", str(folder), "--source-map", str(smap)], capsys)
    assert (code, out) == (1, "")
    assert err == f"{smap}:2:12: error: not UTF-8 text: byte 0xff invalid start byte\n"
    code_json = folder / "code.json"
    raw = code_json.read_bytes()
    assert raw[:10].isascii() and b"\n" not in raw[:10]
    code_json.write_bytes(raw[:10] + b"\xfe" + raw[10:])  # line 1, column 11
    for argv in (["trace", "report", str(folder)],
                 ["trace", "plot", str(folder), "-o", str(tmp_path / "t.png")]):
        code, out, err = run(argv, capsys)
        assert (code, out) == (1, "")
        assert err == f"{code_json}:1:11: error: not UTF-8 text: byte 0xfe invalid start byte\n"
    assert not (tmp_path / "t.png").exists()


def test_ir_driver_and_api_locate_bad_bytes(tmp_path, capsys):
    from asterism import api
    from asterism.errors import ParseError
    from asterism.ir.tool import main as ir_main

    src = tmp_path / "bad.mlir"
    src.write_bytes(BAD_UTF8)
    assert ir_main([str(src)]) == 1
    assert capsys.readouterr().err.startswith(f"{src}:{BAD_AT}: error: not UTF-8 text")
    for source, name in ((BAD_UTF8, "<input>"), (str(src), str(src))):
        with pytest.raises(ParseError, match="not UTF-8") as exc:
            api.parse(source)
        assert str(exc.value.location) == f"{name}:{BAD_AT}"


def test_arg_file_that_is_not_npy(tmp_path, capsys):
    fake = tmp_path / "a.npy"
    fake.write_bytes(BAD_UTF8)
    code, _out, err = run(["run", DEMO, "--arg", f"out={fake}"], capsys)
    assert code == 1 and "Traceback" not in err
    assert f"error: --arg out: {fake} is not a NumPy .npy file" in err


# ----------------------------------------------------------------------------- layout, start-up


def test_cli_package_has_no_import_circle():
    """Verb modules import only asterism.cli.io from the CLI; main imports them by name."""
    import ast
    import importlib

    main_module = importlib.import_module("asterism.cli.main")

    cli_dir = Path(main_module.__file__).parent
    groups = set(main_module.VERB_GROUPS)
    for file in cli_dir.glob("*.py"):
        tree = ast.parse(file.read_text())
        used = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        cli_deps = {m for m in used if m.startswith("asterism.cli")}
        if file.stem in groups or file.stem == "io":
            assert cli_deps <= {"asterism.cli.io"}, (file.name, cli_deps)
        assert (cli_dir / f"{file.stem}.py").exists()
    assert groups <= {f.stem for f in cli_dir.glob("*.py")}


def test_each_group_registers_the_verbs_main_lists():
    """`asterism VERB` builds only VERB's group: the verb lists in VERB_GROUPS must be true."""
    import argparse
    import importlib

    main_module = importlib.import_module("asterism.cli.main")
    for group, verbs in main_module.VERB_GROUPS.items():
        parser = main_module.build_parser((group,))
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        assert tuple(sub.choices) == verbs, group
        assert main_module.groups_of([verbs[-1], "--help"]) == (group,)
    assert main_module.groups_of(["--help"]) == tuple(main_module.VERB_GROUPS)


def _loaded_top_packages(argv: list[str], cwd: Path) -> set[str]:
    """The top-level packages a fresh `python -m asterism.cli ARGV` imports."""
    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "asterism.cli", *argv],
                         capture_output=True, text=True, cwd=cwd)
    assert res.returncode == 0, res.stderr[-2000:]
    names = set()
    for line in res.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def test_verbs_import_only_what_they_need(tmp_path, capsys):
    """asm, disasm, isa, stats and --help never load the IR framework (xDSL) or NumPy."""
    assert run(["compile", DEMO, "-o", str(tmp_path / "k.hsaco")], capsys)[0] == 0
    assert run(["translate", DEMO, "-o", str(tmp_path / "k.s")], capsys)[0] == 0
    for argv in (["--help"], ["run", "--help"], ["trace", "report", "--help"],
                 ["disasm", "k.hsaco"], ["disasm", "--json", "k.hsaco"],
                 ["asm", "k.s", "-o", "k2.hsaco"], ["isa", "v_add_f32"],
                 ["stats", "k.hsaco"], ["stats", "k.s"]):
        loaded = _loaded_top_packages(argv, tmp_path)
        assert "asterism" in loaded  # (the parse of -X importtime's output works)
        assert not loaded & {"xdsl", "numpy", "matplotlib"}, (argv, loaded)


def test_output_to_a_fifo_or_device_is_written_not_replaced(tmp_path):
    """`-o /dev/null` (or a FIFO) must be written through: the atomic temp-file-and-rename
    replaced /dev/null with a regular file. Checked on a FIFO with a reader, and through a
    symlink (the link stays a link)."""
    import stat
    import threading

    from asterism.textio import write_file_atomic

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_file_atomic(fifo, b"hello")
    reader.join(10)
    assert got == [b"hello"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    real = tmp_path / "real.s"
    real.write_text("old")
    link = tmp_path / "link.s"
    link.symlink_to(real)
    write_file_atomic(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_run_takes_a_pipeline_for_ir_input(tmp_path, capsys):
    """The relocatable-register error says to pass --pipeline; `run` takes it (as compile)."""
    import numpy as np

    rel = tmp_path / "rel.mlir"
    assert run(["compile", DEMO, "-o", str(tmp_path / "k.hsaco")], capsys)[0] == 0
    assert run(["raise", str(tmp_path / "k.hsaco"), "--relocatable", "-o", str(rel)],
               capsys)[0] == 0
    args = ["run", str(rel), "--grid", "4", "--arg", "out=zeros:256:i32"]
    code, _out, err = run(args, capsys)
    assert code == 1 and "relocatable type" in err and "--pipeline regalloc" in err
    for extra in (["--pipeline", "regalloc"],
                  ["--pipeline", "regalloc", "--timing", "--trace-dir", str(tmp_path / "t")]):
        code, _out, err = run([*args, *extra, "--save-dir", str(tmp_path / "sd")], capsys)
        assert code == 0, err
        np.testing.assert_array_equal(np.load(tmp_path / "sd" / "out.npy"),
                                      np.arange(256) + 10)
    assert (tmp_path / "t" / "code.json").is_file()
    code, _out, err = run(["run", str(tmp_path / "k.hsaco"), "--pipeline", "regalloc"], capsys)
    assert code == 1 and "--pipeline runs passes on IR" in err


@pytest.mark.parametrize("argv,src_name,out_name", [
    (["compile"], "add.mlir", "add.hsaco"),
    (["asm"], "add.s", "add.hsaco"),
    (["compile"], "add.v2.mlir", "add.v2.hsaco"),
])
def test_default_output_is_beside_the_input(tmp_path, monkeypatch, capsys, argv, src_name,
                                            out_name):
    """As --help says (INPUT.hsaco beside the input), not in the working directory."""
    from asterism import api

    folder, cwd = tmp_path / "k", tmp_path / "cwd"
    folder.mkdir()
    cwd.mkdir()
    text = api.translate(DEMO) if src_name.endswith(".s") else Path(DEMO).read_text()
    (folder / src_name).write_text(text)
    expected = api.compile(DEMO)
    monkeypatch.chdir(cwd)
    assert run([*argv, str(folder / src_name)], capsys)[0] == 0
    assert (folder / out_name).read_bytes() == expected
    assert list(cwd.iterdir()) == []
    help_text = subprocess.run([sys.executable, "-m", "asterism.cli", argv[0], "--help"],
                               capture_output=True, text=True, check=True,
                               env={**os.environ, "COLUMNS": "200"}).stdout
    assert "INPUT.hsaco beside the input" in help_text


def test_default_output_needs_a_name_for_stdin_or_a_clash(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", open(DEMO))
    code, _out, err = run(["compile", "-"], capsys)
    assert code == 1 and "name the output file with -o" in err
    same = tmp_path / "k.hsaco"
    same.write_text('.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n')
    code, _out, err = run(["asm", str(same)], capsys)
    assert code == 1 and "is the input itself" in err
    assert same.read_text() == '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n'
