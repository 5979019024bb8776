"""LLVM-compiled kernels on the emulator: results against NumPy, and the sanitizer quiet.

The kernels in tests/data/emu/llvm/*.ll are compiled by llc-22 (+ ld.lld) for gfx942 and
gfx950; the code objects are committed next to them (rebuilt when the .ll changes and LLVM is
installed). LLVM's hazard recognizer and waitcnt insertion are the reference for "correct
code": the emulator's s_waitcnt and wait-state checks must accept everything LLVM emits, and
the results must match NumPy. They run through asterism's runtime (code object reader, kernarg
packing from metadata, decoder), as a user's launch does.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from asterism import runtime
from asterism.emu.errors import SanitizerError

DATA = Path(__file__).parent / "data" / "emu" / "llvm"
TARGETS = ("gfx942", "gfx950")
rng = np.random.default_rng(1234)


def launch(*args, **kwargs):
    """runtime.launch in sanitizer error mode: these code objects are LLVM's (foreign, so
    warn by default), and the point here is that the sanitizer accepts them outright."""
    return runtime.launch(*args, sanitizer="error", **kwargs)


def code_object(name: str, target: str) -> bytes:
    """The HSACO of tests/data/emu/llvm/<name>.ll for target (rebuilt if stale)."""
    src = DATA / f"{name}.ll"
    out = DATA / f"{name}_{target}.hsaco"
    manifest_path = DATA / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
    key = f"{name}_{target}"
    if out.exists() and manifest.get(key) == digest:
        return out.read_bytes()
    from asterism.mc.llvm_tools import find_llvm_tool

    llc, lld = find_llvm_tool("llc"), find_llvm_tool("ld.lld")
    if llc is None or lld is None:
        pytest.skip(f"{out.name} is stale and LLVM 22 (llc, ld.lld) is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        obj = Path(tmp) / "k.o"
        subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-O2",
                        "-filetype=obj", str(src), "-o", str(obj)], check=True)
        subprocess.run([lld, "-shared", str(obj), "-o", str(out)], check=True)
    manifest[key] = digest
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return out.read_bytes()


@pytest.mark.parametrize("target", TARGETS)
def test_integer_division_and_bit_ops(target):
    n = 128
    a = rng.integers(1, 2 ** 63, n, dtype=np.uint64)
    b = rng.integers(1, 2 ** 40, n, dtype=np.uint64)
    b[:8] = [1, 3, 7, 2 ** 33 + 5, 2 ** 63, 5, 12345678901, 2]
    a[8:12] = [0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 5]
    b[8:12] = [0xFFFFFFFF, 1, 0xFFFFFFFF, 0xFFFFFFFB]
    out = np.zeros((n, 8), np.uint64)
    launch(code_object("int_math", target), "int_math", grid=2, block=64,
           args=[out, a, b], backend="emu")
    assert np.array_equal(out[:, 0], a // b)
    assert np.array_equal(out[:, 1], a % b)
    w = out.view(np.uint32).reshape(n, 16)
    x32 = a.astype(np.uint32)
    y32 = b.astype(np.uint32)
    xi, yi = x32.view(np.int32).astype(np.int64), y32.view(np.int32).astype(np.int64)
    ok = (yi != 0) & ~((xi == -2 ** 31) & (yi == -1))
    sd = np.where(ok, np.trunc(xi / np.where(yi == 0, 1, yi)), 0).astype(np.int64)
    assert np.array_equal(w[ok, 4].view(np.int32), sd[ok].astype(np.int32))
    assert np.array_equal(w[:, 5], [bin(int(v)).count("1") for v in x32])
    assert np.array_equal(w[:, 6], [int(f"{int(v):032b}"[::-1], 2) for v in y32])
    sh = np.arange(n) % 64 % 32
    fs = [((int(x) << s) | (int(y) >> (32 - s))) & 0xFFFFFFFF if s else int(x)
          for x, y, s in zip(x32, y32, sh)]
    assert np.array_equal(w[:, 7], fs)
    assert np.array_equal(w[:, 8].view(np.int32), np.clip(xi + yi, -2 ** 31, 2 ** 31 - 1))


@pytest.mark.parametrize("target", TARGETS)
def test_ieee_float_math(target):
    x = rng.normal(size=64).astype(np.float32) * 3
    y = rng.normal(size=64).astype(np.float32)
    x[:6] = [1e-40, -0.0, np.inf, 3e38, 1.0, 2.0]
    y[:6] = [3.0, 5.0, 2.0, 1e-30, 0.0, np.inf]
    out = np.zeros((64, 8), np.float64)
    launch(code_object("float_math", target), "float_math", grid=1, block=64,
           args=[out, x, y], backend="emu")
    f = out.view(np.float32).reshape(64, 16)
    with np.errstate(all="ignore"):
        assert np.array_equal(f[:, 0], x / y)
        pos = x >= 0
        assert np.array_equal(f[pos, 1], np.sqrt(x[pos]))
        assert np.isnan(f[~pos & (x != 0), 1]).all()
        xd, yd = x.astype(np.float64), y.astype(np.float64)
        assert np.array_equal(out[:, 1], xd / yd)
        assert np.array_equal(out[pos, 2], np.sqrt(xd[pos]))
        h = x.astype(np.float16)
        want_h = (h * h).astype(np.float32)
        fin = np.isfinite(want_h)
        assert np.array_equal(f[fin, 6], want_h[fin])
        bits = y.view(np.uint32).astype(np.uint64)
        rne = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        assert np.array_equal(f[np.isfinite(y), 7], rne.view(np.float32)[np.isfinite(y)])
        assert np.array_equal(f[:, 8], np.fmax(x, y))
        d = f[:, 0]
        fin = np.isfinite(d) & np.isfinite(x * y)
        exact = np.array([np.float32(float(a) * float(b) + float(c)) for a, b, c in
                          zip(x[fin], y[fin], d[fin])])
        assert np.allclose(f[fin, 9], exact, rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("target", TARGETS)
def test_cross_lane_lds_barrier_and_divergence(target):
    x = rng.integers(0, 1000, 256, dtype=np.uint32)
    out = np.zeros((256, 8), np.uint32)
    res = launch(code_object("lanes", target), "lanes", grid=1, block=256, args=[out, x],
                 backend="emu")
    ids = np.arange(256)
    wave = ids // 64 * 64
    lane = ids % 64
    assert np.array_equal(out[:, 0], x[wave + 5])
    assert np.array_equal(out[:, 1], x[wave])
    shr = np.where(lane % 16 == 0, 0, x[np.maximum(ids - 1, 0)])
    assert np.array_equal(out[:, 2], shr)
    assert np.array_equal(out[:, 3], x[wave + 63 - lane])
    assert np.array_equal(out[:, 4], x[ids ^ 255])
    lim = (x & 15).astype(np.int64)
    want = np.where(x % 2 == 0, lim * (lim - 1) // 2 * (lim > 0), -1).astype(np.int64)
    assert np.array_equal(out[:, 5].view(np.int32), want.astype(np.int32))
    assert res.stats.waves == 4


@pytest.mark.parametrize("target", TARGETS)
def test_lds_exchange_with_a_bare_barrier_is_caught(target):
    # The same kernel with s.barrier but without __syncthreads' fences: LLVM emits no
    # lgkmcnt wait before the s_barrier, so another wave may read the slot too early.
    x = rng.integers(0, 1000, 256, dtype=np.uint32)
    out = np.zeros((256, 8), np.uint32)
    with pytest.raises(SanitizerError, match="before its s_barrier") as err:
        launch(code_object("lanes_nofence", target), "lanes_nofence", grid=1, block=256,
               args=[out, x], backend="emu")
    assert err.value.needed == "s_waitcnt lgkmcnt(0)"
    assert err.value.inst.startswith("ds_read_b32")


@pytest.mark.parametrize("target", TARGETS)
def test_chained_mfma_and_valu_read(target):
    ha = rng.normal(size=(64, 4)).astype(np.float16)
    hb = rng.normal(size=(64, 4)).astype(np.float16)
    out = np.zeros((64, 4), np.float32)
    launch(code_object("mfma", target), "mfma", grid=1, block=64, args=[out, ha, hb],
           backend="emu")

    def operand_a(h):      # A[i][k]: lane l holds row l % 16, k = 4 (l // 16) + e
        m = np.zeros((16, 16))
        for ln in range(64):
            m[ln % 16, 4 * (ln // 16):4 * (ln // 16) + 4] = h[ln]
        return m

    def operand_b(h):      # B[k][j]: lane l holds column l % 16, k = 4 (l // 16) + e
        return operand_a(h).T

    d = operand_a(ha) @ operand_b(hb)
    d = operand_a(hb) @ operand_b(ha) + d
    want = np.zeros((64, 4))
    for ln in range(64):
        for r in range(4):
            want[ln, r] = d[4 * (ln // 16) + r, ln % 16]
    want[:, 0] *= 2
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_buffers_atomics_lds_atomics_and_dynamic_scratch(target):
    a = rng.integers(0, 1000, 64, dtype=np.uint32)
    cnt = np.zeros(4, np.uint32)
    out = np.zeros((64, 8), np.uint32)
    launch(code_object("memory", target), "memory", grid=1, block=64,
           args=[out, a, cnt, 100], backend="emu")
    ids = np.arange(64)
    ext = np.concatenate([a, np.zeros(2, np.uint32)])
    # num_records = 100 bytes: dword k of a lane is in range if its offset (soffset excluded)
    # is below 100.
    assert np.array_equal(out[:, 0], np.where(4 * ids < 100, a, 0))
    assert np.array_equal(out[:, 1], np.where(4 * ids < 100, ext[ids + 1], 0))
    assert np.array_equal(out[:, 2], np.where(4 * ids + 4 < 100, ext[ids + 2], 0))
    assert np.array_equal(out[:, 3], ids)                    # atomic add, lane order
    assert np.array_equal(out[:, 4], (ids >= 2).astype(np.uint32))   # cmpswap 0 -> id
    assert np.array_equal(out[:, 5], ids * (ids - 1) // 2)   # LDS atomic add (prefix sums)
    assert np.array_equal(out[:, 6], (ids & 15) * ids)       # private array
    loaded = np.where(4 * ids < 100, a, 0)
    assert np.array_equal(out[:, 7], np.concatenate([[0], np.maximum.accumulate(loaded)[:-1]]))
    assert list(cnt[:3]) == [64, loaded.max(), 1]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # f16 data read as f64/i8 too
@pytest.mark.parametrize("target", TARGETS)
def test_mixed_mfma_shapes_pass_the_hazard_checks(target):
    a = rng.normal(size=512).astype(np.float16)
    out = np.zeros((64, 16), np.float32)
    res = launch(code_object("mfma_mix", target), "mfma_mix", grid=1, block=64,
                 args=[out, a], backend="emu")
    assert res.stats.wave_instructions > 20


def test_cdna4_lane_swaps_and_scaled_conversions():
    x = rng.integers(0, 100, 64, dtype=np.uint32)
    y = x + 1000
    out = np.zeros((64, 16), np.uint32)
    launch(code_object("cdna4", "gfx950"), "cdna4", grid=1, block=64, args=[out, x],
           backend="emu")
    assert np.array_equal(out[:, 0], np.concatenate([x[:32], y[:32]]))
    assert np.array_equal(out[:, 1], np.concatenate([x[32:], y[32:]]))
    rows = [slice(0, 16), slice(16, 32), slice(32, 48), slice(48, 64)]
    want16 = np.concatenate([x[rows[0]], y[rows[0]], x[rows[2]], y[rows[2]]])
    assert np.array_equal(out[:, 2], want16)
    fx = x.astype(np.float32)
    from asterism.emu import numerics as nx

    lo = nx.encode(fx / 4, nx.E4M3FN).astype(np.uint32)
    hi = nx.encode(-fx / 4, nx.E4M3FN).astype(np.uint32)
    assert np.array_equal(out[:, 3], (lo | hi << 8) << 16)
    back = nx.decode(lo, nx.E4M3FN).astype(np.float32) * 4
    assert np.array_equal(out[:, 4].view(np.float32), back)


@pytest.mark.parametrize("target", TARGETS)
def test_direct_to_lds_loads(target):
    a = rng.integers(0, 2 ** 32, 256, dtype=np.uint32)
    out = np.zeros((64, 2), np.uint32)
    launch(code_object("lds_dma", target), "lds_dma", grid=1, block=64, args=[out, a],
           backend="emu")
    assert np.array_equal(out[:, 0], a[:64][::-1])
    assert np.array_equal(out[:, 1], a[:64][::-1])


def test_direct_to_lds_loads_128_bit_gfx950():
    a = rng.integers(0, 2 ** 31, (64, 4), dtype=np.uint32)
    out = np.zeros((64, 4), np.uint32)
    launch(code_object("lds_dma_x4", "gfx950"), "lds_dma_x4", grid=1, block=64,
           args=[out, a], backend="emu")
    assert np.array_equal(out, 2 * a)


@pytest.mark.parametrize("target", TARGETS)
def test_mfma_gemm_256(target):
    m = n = k = 256
    a = rng.normal(size=(m, k)).astype(np.float16)
    b = rng.normal(size=(k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    res = launch(code_object("gemm", target), "gemm", grid=(n // 32, m // 32), block=64,
                 args=[c, a, np.ascontiguousarray(b.T), n, k], backend="emu")
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3)
    assert res.stats.waves == 64
