"""MLIR's own AMDGPU dialect test input (tests/data/llvm_mlir_amdgpu/ops.mlir, from the LLVM
sources): every op parses in asterism, asterism's print (the generic form) is accepted by
mlir-opt-22, and mlir-opt-22's custom-form print parses in asterism again, to the same ops."""

from __future__ import annotations

import io
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from xdsl.printer import Printer

from asterism.frontend.parse import parse_upstream, verify_upstream

OPS = Path(__file__).resolve().parent / "data" / "llvm_mlir_amdgpu" / "ops.mlir"


def _parse(text: str, name: str):
    # (top-level func.func, not kernels: xDSL's verification of each op only)
    module = parse_upstream(text, name, verify=False)
    verify_upstream(module)
    return module


def _ops(module) -> Counter:
    return Counter(op.name for op in module.walk() if op.name.startswith("amdgpu."))


def _mlir_opt(tool: str, text: str) -> str:
    res = subprocess.run([tool, "-allow-unregistered-dialect", "-"], input=text,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_every_amdgpu_op_of_the_llvm_test_parses():
    ops = _ops(_parse(OPS.read_text(), str(OPS)))
    written = Counter(name for line in OPS.read_text().splitlines()
                      if not line.lstrip().startswith("//")
                      for name in re.findall(r"(?<![#\w])amdgpu\.\w+", line))
    assert ops == written
    assert len(ops) >= 14


@pytest.mark.llvm
def test_asterism_prints_what_mlir_opt_accepts_and_reads_its_print(mlir_opt):
    module = _parse(OPS.read_text(), str(OPS))
    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    custom = _mlir_opt(mlir_opt, out.getvalue())  # mlir-opt-22 accepts asterism's print
    again = _parse(custom, "mlir-opt.mlir")  # and asterism reads mlir-opt's custom form
    assert _ops(again) == _ops(module)
    # the original read by mlir-opt-22 directly prints the same
    assert _mlir_opt(mlir_opt, OPS.read_text()) == custom
