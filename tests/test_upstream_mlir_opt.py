"""mlir-opt-22 as the oracle of upstream MLIR: every upstream test input (tests/upstream/*.mlir
and the generated MFMA kernels) is accepted by mlir-opt-22, and its custom-form and
generic-form (`--mlir-print-op-generic`) prints compile to the same code object (mlir-opt
renames values to %argN/%N in both, so the kernel argument names agree; in a file of one
gpu.func: the generic print numbers a second function's arguments on from the first's, which
changes the kernel argument names, so each input holds one kernel)."""

from __future__ import annotations

import subprocess

import pytest
from upstream_inputs import all_inputs

import asterism
from asterism import api

pytestmark = pytest.mark.llvm

INPUTS = all_inputs()


def _mlir_opt(tool: str, text: str, *flags: str) -> str:
    res = subprocess.run([tool, *flags, "-"], input=text, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _target(name: str) -> str:
    if name.startswith("gfx950") or name == "fp8_gfx950.mlir":
        return "gfx950"
    return "gfx942"


def _code(text: str, target: str) -> bytes:
    module = api.parse(text)
    api.retarget(module, target)
    return asterism.compile(module)


@pytest.mark.filterwarnings("ignore::asterism.frontend.parse.HostCodeSkipped")
@pytest.mark.parametrize("name, text", INPUTS, ids=[n for n, _ in INPUTS])
def test_mlir_opt_accepts_and_generic_form_compiles_the_same(name, text, mlir_opt):
    custom = _mlir_opt(mlir_opt, text)
    generic = _mlir_opt(mlir_opt, text, "--mlir-print-op-generic")
    assert '"gpu.module"' in generic
    target = _target(name)
    assert _code(generic, target) == _code(custom, target)


def test_every_static_input_is_covered():
    names = {n for n, _ in INPUTS}
    assert {"saxpy.mlir", "gemm.mlir", "buffers.mlir", "dpp.mlir", "lds.mlir",
            "fp8_gfx942.mlir", "fp8_gfx950.mlir", "loops.mlir", "call.mlir",
            "gfx950_lanes.mlir", "gfx950_gather.mlir",
            "gfx950_transpose.mlir", "dpp_wave.mlir"} <= names
    assert sum(n.startswith("gfx950:scaled_mfma") for n in names) == 8
    assert sum(n.startswith("gfx950:scaled_ext_packed") for n in names) == 9
    assert sum(n.startswith("gfx950:packed_scaled_trunc") for n in names) == 9
