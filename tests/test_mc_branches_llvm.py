"""Branches to labels far away: past 128 KiB of .text and at the limits of the 16-bit
word offset, against llvm-mc-22 + ld.lld-22 (.text byte for byte); out of range is an error
that names the line, as llvm-mc's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from asterism import api
from asterism.errors import AsterismError
from asterism.mc.codeobject.elf import parse_elf

pytestmark = pytest.mark.llvm

HEADER = ('\t.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n\t.text\n\t.globl k\n\t.p2align 8\n'
          "\t.type k,@function\nk:\n")
NOP = "\ts_nop 0\n"
FAR = 33000  # nops before the branches: they sit past 128 KiB (32,768 words)
LIMIT = 32767  # the largest forward offset in words (simm16)


def _limits_source() -> str:
    """The issue's minimal case (a short forward branch past 128 KiB), then a forward branch
    of +32767 words and a backward one of -32768 words (both limits of simm16)."""
    return (HEADER + NOP * FAR
            + "\ts_cbranch_scc1 L1\n" + NOP + "L1:\n"
            + "\ts_cbranch_scc0 L2\nL3:\n" + NOP * LIMIT
            + "L2:\n\ts_cbranch_vccz L3\n\ts_endpgm\n")


def _llvm_text(source: str, tmp_path: Path, llvm_mc: str, ld_lld: str) -> bytes:
    (tmp_path / "k.s").write_text(source)
    subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                    str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")], check=True)
    subprocess.run([ld_lld, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.co")],
                   check=True)
    return parse_elf((tmp_path / "k.co").read_bytes()).section(".text").data


def test_far_branches_at_the_limits_equal_llvm(llvm_mc, ld_lld, tmp_path) -> None:
    """Before the fix the sizing pass range-checked a placeholder offset (-address), so
    every label branch past 128 KiB failed: 'offset (words) -33000 is out of range'."""
    source = _limits_source()
    ours = parse_elf(api.assemble(source, None, "k.s")).section(".text").data
    theirs = _llvm_text(source, tmp_path, llvm_mc, ld_lld)
    assert ours == theirs
    words = [int.from_bytes(ours[i:i + 4], "little") for i in range(0, len(ours), 4)]
    assert words[FAR] == 0xBF850001  # s_cbranch_scc1 +1
    assert words[FAR + 2] == 0xBF847FFF  # s_cbranch_scc0 +32767
    assert words[FAR + 3 + LIMIT] == 0xBF868000  # s_cbranch_vccz -32768


@pytest.mark.parametrize("body, line, label", [
    ("\ts_cbranch_scc0 L2\n" + NOP * (LIMIT + 1) + "L2:\n\ts_endpgm\n", 7, "L2"),
    ("L3:\n" + NOP * (LIMIT + 1) + "\ts_cbranch_scc0 L3\n\ts_endpgm\n", 7 + LIMIT + 2, "L3"),
], ids=["forward", "backward"])
def test_out_of_range_branch_names_its_line(body, line, label, llvm_mc, tmp_path) -> None:
    """One word past either limit: llvm-mc refuses it ('branch size exceeds simm16') at the
    same line, and so do we, naming the label and the offset."""
    source = HEADER + body
    (tmp_path / "k.s").write_text(source)
    llvm = subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", "-mcpu=gfx942",
                           "-filetype=obj", str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True)
    assert llvm.returncode != 0 and f"k.s:{line}:" in llvm.stderr
    with pytest.raises(AsterismError) as err:
        api.assemble(source, None, "k.s")
    assert err.value.location.line == line
    assert f"branch to '{label}'" in err.value.message
    assert "out of range" in err.value.message


def test_cli_reports_out_of_range_branch(tmp_path) -> None:
    """`asterism asm`: exit 1, file:line:col and no output file."""
    source = HEADER + "\ts_branch L2\n" + NOP * (LIMIT + 1) + "L2:\n\ts_endpgm\n"
    (tmp_path / "k.s").write_text(source)
    run = subprocess.run([sys.executable, "-m", "asterism.cli", "asm", str(tmp_path / "k.s"), "-o",
                          str(tmp_path / "k.hsaco")], capture_output=True, text=True)
    assert run.returncode == 1
    assert "k.s:7:" in run.stderr and "out of range" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "k.hsaco").exists()
