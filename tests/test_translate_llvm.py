"""Printed kernels assemble and link with LLVM 22, and our own code objects equal ld.lld's."""

from __future__ import annotations

import subprocess
import sys

import pytest

import asterism
from asterism.mc.codeobject import read_code_object

pytestmark = pytest.mark.llvm


def _kernels():
    yield "add_10", open("examples/demo/add_10.mlir").read()
    out = subprocess.run([sys.executable, "examples/demo/generate_mfma_10.py"],
                         capture_output=True, text=True, check=True).stdout
    yield "mfma_10", out
    yield "mfma_10_gfx950", out.replace('target = "gfx942"', 'target = "gfx950"')


@pytest.mark.parametrize("name,text", list(_kernels()), ids=lambda x: x if len(x) < 30 else "")
def test_printed_asm_links_with_llvm_like_ours(tmp_path, llvm_mc, ld_lld, llvm_readelf, name,
                                              text):
    module = asterism.parse(text)
    asm = asterism.translate(module)
    target = "gfx950" if "gfx950" in asm.split("\n", 1)[0] else "gfx942"
    s, o, h = tmp_path / "k.s", tmp_path / "k.o", tmp_path / "k.hsaco"
    s.write_text(asm)
    subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-filetype=obj",
                    str(s), "-o", str(o)], check=True, capture_output=True, text=True)
    subprocess.run([ld_lld, "-shared", str(o), "-o", str(h)], check=True)
    notes = subprocess.run([llvm_readelf, "--notes", str(h)], capture_output=True, text=True,
                           check=True).stdout
    assert "NT_AMDGPU_METADATA" in notes and "amdhsa.kernels" in notes
    theirs = read_code_object(h.read_bytes())
    ours = read_code_object(asterism.compile(module))
    assert ours.text == theirs.text
    assert [k.descriptor for k in ours.kernels] == [k.descriptor for k in theirs.kernels]
    assert ours.metadata == theirs.metadata
