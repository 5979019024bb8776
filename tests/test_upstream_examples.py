"""examples/upstream/: kernels written only in upstream MLIR dialects, run on the emulator at a
small shape against NumPy on both targets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from upstream_inputs import TARGETS

import asterism
from asterism import api

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "upstream"


@pytest.mark.parametrize("target", TARGETS)
def test_flash_attention_matches_numpy(target):
    module = api.parse(EXAMPLES / "flash_attention.mlir")
    api.retarget(module, target)
    code = asterism.compile(module)
    rng = np.random.default_rng(26)
    q = rng.standard_normal((32, 16)).astype(np.float16)
    k = rng.standard_normal((64, 16)).astype(np.float16)
    v = rng.standard_normal((64, 16)).astype(np.float16)
    o = np.zeros((32, 16), np.float32)
    asterism.launch(code, "flash_attention", grid=(2, 1, 1), block=(64, 1, 1),
                    args=[q, k, v, o], backend="emu")
    s = q.astype(np.float64) @ k.astype(np.float64).T / np.sqrt(16.0)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    # P is rounded to f16 for the second MFMA (as flash attention kernels do)
    np.testing.assert_allclose(o, want, rtol=0, atol=2e-3)


@pytest.mark.llvm
def test_flash_attention_custom_and_generic_forms_give_the_same_code_object(mlir_opt):
    import subprocess

    text = (EXAMPLES / "flash_attention.mlir").read_text()
    forms = [subprocess.run([mlir_opt, *flags, "-"], input=text, capture_output=True,
                            text=True, check=True).stdout
             for flags in ([], ["--mlir-print-op-generic"])]
    assert '"amdgpu.mfma"' in forms[1] and '"gpu.shuffle"' in forms[1]
    custom, generic = (asterism.compile(api.parse(f)) for f in forms)
    assert custom == generic
