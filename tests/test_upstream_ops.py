"""Upstream MLIR kernels (tests/upstream/*.mlir) lowered with `lower-upstream,auto` and run on
the emulator against NumPy: gpu ids and sizes, arith, scf.for/scf.if (uniform and per-lane),
memref and amdgpu buffer accesses in and out of range, atomics, DPP, fp8 conversions,
barriers across several waves, func.call, and the errors for input asterism cannot lower."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from upstream_inputs import DIR, TARGETS

import asterism
from asterism import api
from asterism.errors import AsterismError

RNG = np.random.default_rng(15)


def compile_file(name: str, target: str) -> bytes:
    """The code object of tests/upstream/<name> for `target`."""
    module = api.parse(DIR / name)
    api.retarget(module, target)
    return asterism.compile(module)


def launch(code: bytes, kernel: str, grid, block, args) -> None:
    """Run on the emulator with the sanitizer (the default)."""
    asterism.launch(code, kernel, grid=grid, block=block, args=args, backend="emu")


@pytest.mark.parametrize("target", TARGETS)
def test_saxpy_guarded_by_a_per_lane_if(target):
    code = compile_file("saxpy.mlir", target)
    x = RNG.standard_normal(256).astype(np.float32)
    y = RNG.standard_normal(256).astype(np.float32)
    want = y.copy()
    want[:200] = np.float32(2.5) * x[:200] + y[:200]
    launch(code, "saxpy", (4, 1, 1), (64, 1, 1), [x, y, np.float32(2.5), 200])
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("target", TARGETS)
def test_loops_ifs_and_integer_ops(target):
    code = compile_file("loops.mlir", target)
    x = RNG.integers(-1000, 1000, (128, 32)).astype(np.int32)
    f = RNG.standard_normal((128, 32)).astype(np.float32)
    out = np.zeros((128, 9), np.int32)
    fo = np.zeros(128, np.float32)
    launch(code, "row_stats", (2, 1, 1), (64, 1, 1), [x, f, out, fo])
    s = x.sum(axis=1).astype(np.int64)
    mx = x.max(axis=1)
    odd_block = (np.arange(128) // 64) % 2 == 1
    q = np.trunc(s / 8).astype(np.int64)
    want = np.stack([s, mx, np.where(odd_block, mx, s), np.abs(s), q, s - 8 * q, s // 8,
                     np.where(s < 0, q, s - 8 * q), np.full(128, 496)], axis=1)
    np.testing.assert_array_equal(out, want)
    acc = np.zeros(128, np.float32)
    for j in range(32):  # the loop's order of f32 additions
        acc = acc + f[:, j]
    np.testing.assert_array_equal(fo, acc)


@pytest.mark.parametrize("target", TARGETS)
def test_buffer_ops_and_out_of_range(target):
    code = compile_file("buffers.mlir", target)
    src = RNG.standard_normal(64).astype(np.float32)
    dst = np.full(128, -7.0, np.float32)
    acc = np.zeros(4, np.float32)
    imax = np.array([-(2 ** 31), -1], np.int32)  # smax from the minimum, umin from 0xffffffff
    cas = np.arange(64, dtype=np.int32)
    cas[1::2] += 5  # odd lanes compare unequal: no swap
    cas0 = cas.copy()
    old = np.zeros(64, np.int32)
    clip = np.full(64, -9.0, np.float32)
    launch(code, "buffers", (1, 1, 1), (64, 1, 1), [src, dst, acc, imax, cas, old, clip])
    lanes = np.arange(64)
    v = np.where(lanes + 32 < 64, src[np.minimum(lanes + 32, 63)], 0)  # past the end: 0
    w = np.where(lanes + 1 < 64, src[np.minimum(lanes + 1, 63)], 0)
    want = np.full(128, -7.0, np.float32)
    want[2 * lanes] = v
    keep = lanes + 100 < 128  # stores past the end are dropped
    want[(lanes + 100)[keep]] = w[keep]
    np.testing.assert_array_equal(dst, want)
    want_acc = np.array([w[k::4].astype(np.float64).sum() for k in range(4)])
    np.testing.assert_allclose(acc, want_acc, rtol=1e-6, atol=1e-6)
    iv = lanes * 7 - 200
    assert imax[0] == iv.max()
    assert imax[1] == np.min(iv.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(old, cas0)  # the returned value is the old one
    np.testing.assert_array_equal(cas, np.where(lanes % 2 == 0, lanes + 1000, cas0))
    # validBytes(128): 32 floats of the buffer are visible, the rest reads 0
    np.testing.assert_array_equal(clip, np.where(lanes < 32, src, 0))
