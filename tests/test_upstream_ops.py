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


def _dpp_reference(v: np.ndarray, old: float, src_of, row_mask=0xF, bank_mask=0xF,
                   bound_ctrl=False) -> np.ndarray:
    """DPP as the ISA describes it: lane l reads lane src_of(l) (None: invalid); rows and
    banks masked off keep `old`; invalid sources keep `old` or read 0 with bound_ctrl."""
    out = np.empty(64, np.float32)
    for lane in range(64):
        row, bank = lane // 16, (lane % 16) // 4
        src = src_of(lane)
        if not (row_mask >> row) & 1 or not (bank_mask >> bank) & 1:
            out[lane] = old
        elif src is None:
            out[lane] = 0.0 if bound_ctrl else old
        else:
            out[lane] = v[src]
    return out


def _in_row(lane: int, i: int) -> int | None:
    return (lane // 16) * 16 + i if 0 <= i < 16 else None


@pytest.mark.parametrize("target", TARGETS)
def test_dpp_patterns(target):
    code = compile_file("dpp.mlir", target)
    x = RNG.standard_normal(64).astype(np.float32)
    out = np.zeros((8, 64), np.float32)
    launch(code, "dpp", (1, 1, 1), (64, 1, 1), [x, out])
    perm = [1, 0, 3, 2]
    want = [
        _dpp_reference(x, -1, lambda lane: (lane & ~3) + perm[lane & 3]),
        _dpp_reference(x, -1, lambda lane: _in_row(lane, lane % 16 + 1)),
        _dpp_reference(x, -1, lambda lane: _in_row(lane, lane % 16 - 3), bound_ctrl=True),
        _dpp_reference(x, -1, lambda lane: _in_row(lane, (lane % 16 - 5) % 16)),
        _dpp_reference(x, -1, lambda lane: _in_row(lane, 15 - lane % 16)),
        _dpp_reference(x, -1, lambda lane: _in_row(lane, (lane % 16 & 8) | (7 - lane % 8))),
        _dpp_reference(x, -1, lambda lane: lane & ~3, row_mask=5),
        _dpp_reference(x, -1, lambda lane: _in_row(lane, lane % 16 - 1), bank_mask=3),
    ]
    np.testing.assert_array_equal(out, np.stack(want))


FP8 = {"gfx942": {"E": 4, "M": 3, "bias": 8, "fnuz": True},
       "gfx950": {"E": 4, "M": 3, "bias": 7, "fnuz": False}}


def fp8_value(code: int, fmt: dict) -> float:
    """Value of an 8-bit float code (E4M3: FNUZ on gfx942, OCP FN on gfx950); NaN codes
    give NaN."""
    e_bits, m_bits, bias = fmt["E"], fmt["M"], fmt["bias"]
    sign = -1.0 if code & 0x80 else 1.0
    exp = (code >> m_bits) & ((1 << e_bits) - 1)
    man = code & ((1 << m_bits) - 1)
    if fmt["fnuz"] and code == 0x80:
        return float("nan")
    if not fmt["fnuz"] and exp == (1 << e_bits) - 1 and man == (1 << m_bits) - 1:
        return float("nan")
    if exp == 0:
        return sign * man / (1 << m_bits) * 2.0 ** (1 - bias)
    return sign * (1 + man / (1 << m_bits)) * 2.0 ** (exp - bias)


@pytest.mark.parametrize("target", TARGETS)
def test_fp8_conversions(target):
    code = compile_file(f"fp8_{target}.mlir", target)
    fmt = FP8[target]
    codes = [c for c in range(256) if c != 0x80 and not np.isnan(fp8_value(c, fmt))]
    pick = RNG.choice(codes, size=256)
    x = np.array([fp8_value(c, fmt) for c in pick], np.float32)  # exactly representable
    rnd = RNG.integers(0, 2 ** 31, 64).astype(np.int32)
    packed = np.zeros(128, np.int32)
    back = np.zeros((64, 6), np.float32)
    launch(code, "fp8", (1, 1, 1), (64, 1, 1), [x, rnd, packed, back])
    want = (pick.reshape(64, 4) << np.array([0, 8, 16, 24])).sum(axis=1).astype(np.uint32)
    np.testing.assert_array_equal(packed[:64].view(np.uint32), want)
    # stochastic rounding of an exact value is that value, placed in byte 2
    b = pick.reshape(64, 4)[:, 1].astype(np.uint32)
    want_sr = (want & np.uint32(0xFF00FFFF)) | (b << np.uint32(16))
    np.testing.assert_array_equal(packed[64:].view(np.uint32), want_sr)
    xs = x.reshape(64, 4)
    np.testing.assert_array_equal(back[:, :4], xs)
    np.testing.assert_array_equal(back[:, 4:], xs[:, 2:4])  # word 1: bytes 2 and 3


@pytest.mark.parametrize("target", TARGETS)
def test_lds_and_barriers_across_four_waves(target):
    code = compile_file("lds.mlir", target)
    x = RNG.standard_normal(512).astype(np.float32)
    out = np.zeros(512, np.float32)
    out2 = np.zeros(512, np.float32)
    launch(code, "lds", (2, 1, 1), (256, 1, 1), [x, out, out2])
    t = np.arange(256)
    for blk in range(2):
        g = blk * 256 + t
        np.testing.assert_array_equal(out[g], x[blk * 256 + 255 - t])
        np.testing.assert_array_equal(out2[g], 2 * out[blk * 256 + (t + 64) % 256])


@pytest.mark.parametrize("target", TARGETS)
def test_call_and_vector_ops(target):
    code = compile_file("call.mlir", target)
    x = RNG.standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    h = np.zeros(128, np.int32)
    launch(code, "vec", (1, 1, 1), (64, 1, 1), [x, out, h])
    v = x.reshape(64, 4)
    y = v[:, 0] * np.float32(3.0) + np.float32(0.5)
    want = np.stack([v[:, 3], v[:, 1], v[:, 2], y], axis=1) + np.float32(0.5)
    np.testing.assert_array_equal(out.reshape(64, 4), want)
    halves = v[:, 1:3].astype(np.float16).view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(h[:64].view(np.uint32), halves[:, 0] | halves[:, 1] << 16)
    pk = v[:, [0, 3]].astype(np.float16).view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(h[64:].view(np.uint32), pk[:, 0] | pk[:, 1] << 16)


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_in_upstream_dialects(target):
    code = compile_file("gemm.mlir", target)
    a = RNG.standard_normal((64, 64)).astype(np.float16)
    b = RNG.standard_normal((64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    launch(code, "gemm", (4, 4, 1), (64, 1, 1), [a, np.ascontiguousarray(b.T), c])
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4 * np.abs(want).max())


def test_sched_barrier_is_a_fence_with_no_code():
    lowered = api.optimize(api.parse(DIR / "gemm.mlir"), "lower-upstream")
    from asterism.ir import print_ir

    text = print_ir(lowered)
    assert "amdgcn.sched_barrier mask = 0" in text
    scheduled = print_ir(api.optimize(lowered, "schedule,regalloc,waits,hazards"))
    lines = [ln.strip() for ln in scheduled.splitlines()]
    fence = next(i for i, ln in enumerate(lines) if ln.startswith("amdgcn.sched_barrier"))
    mfma = next(i for i, ln in enumerate(lines) if "v_mfma" in ln)
    assert mfma < fence  # nothing moved across: the MFMA written before stays before
    asm = api.translate(api.parse(DIR / "gemm.mlir"))
    assert "sched_barrier" not in asm


# ----------------------------------------------------------------------------- errors


def _error(text: str, target: str = "gfx942") -> AsterismError:
    with pytest.raises(AsterismError) as err:
        module = api.parse(text, "bad.mlir")
        api.retarget(module, target)
        asterism.compile(module)
    return err.value


KERNEL = """module {{
  gpu.module @m {{
    gpu.func @k(%x: memref<64xf32>, %n: i64) kernel {{
      %l = gpu.thread_id x
{body}
      gpu.return
    }}
  }}
}}
"""


@pytest.mark.parametrize("body, message", [
    ("      %v = vector.load %x[%l] : memref<64xf32>, vector<4xf32>\n"
     "      %r = vector.shuffle %v, %v [0, 5] : vector<4xf32>, vector<4xf32>",
     "vector.shuffle: not supported"),
    ("      %v = memref.load %x[%l] : memref<64xf32>\n      %r = arith.remf %v, %v : f32",
     "arith.remf is not supported by asterism's upstream MLIR input"),
    ("      %s = arith.addi %n, %n : i64", "arith.addi: type i64 is not supported"),
    ("      %c0 = arith.constant 0 : index\n      %c1 = arith.constant 1 : index\n"
     "      scf.for %i = %c0 to %l step %c1 {\n      }",
     "scf.for: the bounds and step differ between lanes"),
    ("      %a = arith.constant dense<1.0> : vector<4xf16>\n"
     "      %c = arith.constant dense<0.0> : vector<4xf32>\n"
     "      %d = amdgpu.wmma 16x16x16 %a * %a + %c : vector<4xf16>, vector<4xf16>, "
     "vector<4xf32>", "amdgpu.wmma: WMMA exists only on RDNA"),
    ("      %c3 = arith.constant 3 : index\n      %q = arith.divui %l, %c3 : index",
     "arith.divui: divides by a value that is not a constant power of two"),
])
def test_unsupported_input_is_an_error_with_location(body, message):
    err = _error(KERNEL.format(body=body))
    assert message in err.message
    assert err.location is not None and err.location.file == "bad.mlir"
    assert err.location.line >= 5


def test_fp8_type_of_the_other_chip_is_an_error():
    text = (DIR / "fp8_gfx942.mlir").read_text()
    err = _error(text, "gfx950")
    assert "gfx950 converts f8E4M3FN/f8E5M2, not f8E4M3FNUZ" in err.message


def test_cli_compiles_and_reports_errors(tmp_path):
    out = tmp_path / "saxpy.hsaco"
    ok = subprocess.run([sys.executable, "-m", "asterism.cli", "compile", str(DIR / "saxpy.mlir"),
                         "-o", str(out)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert out.read_bytes() == asterism.compile(api.parse(DIR / "saxpy.mlir"))
    bad = tmp_path / "bad.mlir"
    bad.write_text(KERNEL.format(body="      %s = arith.addi %n, %n : i64"))
    res = subprocess.run([sys.executable, "-m", "asterism.cli", "compile", str(bad), "-o",
                          str(tmp_path / "bad.hsaco")], capture_output=True, text=True)
    assert res.returncode == 1
    assert "bad.mlir:5:" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "bad.hsaco").exists()


@pytest.mark.parametrize("target", TARGETS)
def test_lane_id_grid_dim_float_ops_and_lds_alloc(target):
    code = compile_file("misc.mlir", target)
    x = RNG.standard_normal(128).astype(np.float32)
    y = RNG.standard_normal(128).astype(np.float32) + np.float32(3)
    o = np.zeros((6, 128), np.float32)
    ids = np.zeros((2, 128), np.int32)
    launch(code, "misc", (2, 1, 1), (64, 1, 1), [x, y, o, ids])
    np.testing.assert_array_equal(ids[0], np.arange(128) % 64)
    np.testing.assert_array_equal(ids[1], np.full(128, 2))
    np.testing.assert_array_equal(o[0], np.minimum(x, y))
    np.testing.assert_array_equal(o[1], -x)
    np.testing.assert_allclose(o[2], x / y, rtol=2 ** -22)  # v_rcp: about 1 ulp
    fma = (x.astype(np.float64) * y + x).astype(np.float32)  # exact product, one rounding
    np.testing.assert_array_equal(o[3], fma)
    g = np.arange(128)
    np.testing.assert_array_equal(o[4], x[(g // 64) * 64 + 63 - g % 64])
    np.testing.assert_array_equal(o[5], y - x)


def test_gemm_accumulator_stays_in_place():
    # the MFMA yielded by scf.for writes the loop's register: no copies in the loop body
    asm = api.translate(api.parse(DIR / "gemm.mlir"))
    body = asm.split("for_body:")[1].split("s_cbranch_scc1")[0]
    assert body.count("v_mfma_f32_16x16x16_f16") == 1
    assert "v_mov_b32" not in body and "s_nop" not in body


@pytest.mark.parametrize("target", TARGETS)
def test_raw_buffer_ops_on_2d_memrefs_and_sgpr_offset_in_elements(target):
    # issue 26: the custom form of 2-D raw buffer ops did not parse, and sgprOffset was taken
    # as bytes (MLIR: elements, scaled by the element size)
    code = compile_file("buffers_2d.mlir", target)
    a = RNG.standard_normal((16, 8)).astype(np.float16)
    b = np.full((16, 8), -3.0, np.float16)
    acc = np.zeros((4, 4), np.float32)
    imax = np.array([[-1, 5], [-(2 ** 31), 7]], np.int32)
    cas = np.arange(64, dtype=np.int32).reshape(16, 4)
    cas[:, 1::2] += 5  # odd columns compare unequal: no swap
    cas0 = cas.copy()
    old = np.zeros((16, 4), np.int32)
    dmax = np.full((2, 2), -1.0)
    sh = np.zeros((4, 8), np.float32)
    launch(code, "buffers_2d", (1, 1, 1), (64, 1, 1), [a, b, acc, imax, cas, old, dmax, sh])
    lanes = np.arange(64)
    want_b = np.full(16 * 8, -3.0, np.float16)
    flat_a = a.reshape(-1)
    for lane in lanes:  # lane l: 4 halves at [l, 0] (l < 16) or [l, 4] (past the end: dropped)
        start = lane * 8 + (0 if lane < 16 else 4)
        for k in range(4):
            if start + k < 128:
                want_b[start + k] = flat_a[start + k]
    np.testing.assert_array_equal(b.reshape(-1), want_b)
    want_acc = np.zeros((4, 4), np.float32)
    want_acc[:, 3] = 16.0  # acc[q, 0] + 3 elements: acc[q, 3]
    np.testing.assert_array_equal(acc, want_acc)
    iv = lanes * 7 - 200
    assert imax[1, 0] == iv.max()
    assert imax[0, 1] == np.min(iv.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    assert imax[0, 0] == -1 and imax[1, 1] == 7
    np.testing.assert_array_equal(old, cas0)
    np.testing.assert_array_equal(cas, np.where(lanes.reshape(16, 4) % 2 == 0,
                                                lanes.reshape(16, 4) + 1000, cas0))
    np.testing.assert_array_equal(dmax, [[-1.0, -1.0], [-1.0, 63.0]])
    want_sh = np.zeros((4, 8), np.float32)
    want_sh[:, 2] = np.arange(4)
    np.testing.assert_array_equal(sh, want_sh)


@pytest.mark.parametrize("target", TARGETS)
def test_arith_on_vectors_and_cmpf_with_zero_on_the_right(target):
    # issue 26: cmpf x > 0.0 failed inside the lowering; vector select (custom form), cmpf and
    # negf on vectors and mulf on f16 vectors were not supported
    code = compile_file("arith_vectors.mlir", target)
    x = RNG.standard_normal(64).astype(np.float32)
    x[::7] = 0.0
    relu = np.full(64, -1.0, np.float32)
    v = RNG.standard_normal((64, 4)).astype(np.float32)
    vo = np.zeros((64, 4), np.float32)
    h = RNG.uniform(-2, 2, (64, 4)).astype(np.float16)
    ho = np.zeros((64, 4), np.float16)
    hs = np.zeros((64, 4), np.float16)
    iv = RNG.integers(-10, 20, (64, 4)).astype(np.int32)
    io = np.zeros((64, 4), np.int32)
    launch(code, "arith_vectors", (1, 1, 1), (64, 1, 1), [x, relu, v, vo, h, ho, hs, iv, io])
    np.testing.assert_array_equal(relu, np.where(x > 0, x, np.float32(0)))
    np.testing.assert_array_equal(vo, np.abs(v))
    half = np.float16(0.5)
    mx = np.maximum((h * h) + (-h), half)  # f16 arithmetic, rounded per operation
    np.testing.assert_array_equal(ho, np.where(h >= half, mx, h))
    np.testing.assert_array_equal(hs, h - half)
    np.testing.assert_array_equal(io, np.where(iv > 5, iv, 7))


def test_lowered_instructions_are_located_in_the_users_file():
    # issue 26: an error a later pass found in a lowered instruction pointed into asterism's
    # own source (the builder stamps the Python line that emitted it)
    from xdsl.dialects.builtin import FileLineColLoc

    from asterism.ir.ops import InstructionOp

    module = api.optimize(api.parse(DIR / "arith_vectors.mlir"), "lower-upstream")
    files = {op.location.filename.data for op in module.walk()
             if isinstance(op, InstructionOp) and isinstance(op.location, FileLineColLoc)}
    assert files == {str(DIR / "arith_vectors.mlir")}


@pytest.mark.parametrize("target", TARGETS)
def test_math_ops_and_gpu_shuffle(target):
    code = compile_file("math_shuffle.mlir", target)
    x = RNG.uniform(-4, 4, 64).astype(np.float32)
    o = np.zeros((8, 64), np.float32)
    h = RNG.uniform(-1, 1, (64, 2)).astype(np.float16)
    ho = np.zeros((64, 2), np.float16)
    s = np.zeros((10, 64), np.float32)
    valid = np.full((10, 64), -1, np.int32)
    launch(code, "math_shuffle", (1, 1, 1), (64, 1, 1), [x, o, h, ho, s, valid])
    a = np.abs(x).astype(np.float64)
    x64 = x.astype(np.float64)
    # the transcendental unit: about 1 ulp (exp and log add the rounding of one multiply)
    np.testing.assert_allclose(o[0], np.exp2(x64), rtol=2e-6)
    np.testing.assert_allclose(o[1], np.exp(x64), rtol=5e-6)
    np.testing.assert_allclose(o[2], np.log(a), rtol=5e-6, atol=1e-6)
    np.testing.assert_allclose(o[3], np.log2(a), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(o[4], 1 / np.sqrt(a), rtol=2e-6)
    np.testing.assert_allclose(o[5], np.sqrt(a), rtol=2e-6)
    np.testing.assert_array_equal(o[6], (x64 * x64 + a).astype(np.float32))  # one rounding
    np.testing.assert_allclose(o[7], np.exp2(x64), rtol=2e-6)
    hf = (h.astype(np.float64) * h + h).astype(np.float16)
    np.testing.assert_allclose(ho.astype(np.float64), np.exp2(hf.astype(np.float64)),
                               rtol=2e-3)
    lanes = np.arange(64)
    np.testing.assert_array_equal(s[0], x[lanes ^ 1])
    np.testing.assert_array_equal(s[1], x[lanes ^ 2])
    np.testing.assert_array_equal(s[2], x[lanes ^ 8])
    np.testing.assert_array_equal(s[3], x[lanes ^ 32])
    seg = lanes & ~15
    down = lanes + 3
    ok_down = down < seg + 16
    np.testing.assert_array_equal(s[4], np.where(ok_down, x[np.minimum(down, 63)], x))
    up = lanes - 5
    ok_up = up >= seg
    np.testing.assert_array_equal(s[5], np.where(ok_up, x[np.maximum(up, 0)], x))
    np.testing.assert_array_equal(s[6], np.full(64, x[5]))
    np.testing.assert_array_equal(s[7], x[63 - lanes])
    np.testing.assert_array_equal(s[8], x)  # lane ^ 32 is outside a 16-lane segment
    ok9 = 2 * lanes < 64
    np.testing.assert_array_equal(s[9], np.where(ok9, x[np.minimum(2 * lanes, 63)], x))
    np.testing.assert_array_equal(valid[0], 1)
    np.testing.assert_array_equal(valid[4], ok_down)
    np.testing.assert_array_equal(valid[5], ok_up)
    np.testing.assert_array_equal(valid[8], 0)
    np.testing.assert_array_equal(valid[9], ok9)


@pytest.mark.parametrize("target", TARGETS)
def test_vector_reduction_within_a_lane(target):
    code = compile_file("reduction.mlir", target)
    x = RNG.standard_normal((64, 8)).astype(np.float32)
    h = RNG.standard_normal((64, 4)).astype(np.float16)
    i = RNG.integers(0, 1 << 30, (64, 4)).astype(np.int32)
    o = np.zeros((3, 64), np.float32)
    oi = np.zeros(64, np.int32)
    launch(code, "reduction", (1, 1, 1), (64, 1, 1), [x, h, i, o, oi])
    mx = x.max(axis=1)
    np.testing.assert_array_equal(o[0], mx)
    # pairwise order: ((x0+x1)+(x2+x3)) + ((x4+x5)+(x6+x7)), then the accumulator
    pairs = x[:, 0::2] + x[:, 1::2]
    quads = pairs[:, 0::2] + pairs[:, 1::2]
    np.testing.assert_array_equal(o[1], (quads[:, 0] + quads[:, 1]) + mx)
    np.testing.assert_array_equal(o[2], h.min(axis=1).astype(np.float32))
    np.testing.assert_array_equal(oi, i[:, 0] ^ i[:, 1] ^ i[:, 2] ^ i[:, 3])


def test_host_code_beside_the_gpu_module_is_skipped_with_a_note(tmp_path):
    from asterism.frontend.parse import HostCodeSkipped

    with pytest.warns(HostCodeSkipped, match=r"host function @main \(gpu.launch_func\) "
                                             "skipped") as notes:
        code = compile_file("host_code.mlir", "gfx942")
    assert notes[0].filename == str(DIR / "host_code.mlir") and notes[0].lineno == 12
    out = np.zeros(64, np.float32)
    launch(code, "fill", (1, 1, 1), (64, 1, 1), [out])
    np.testing.assert_array_equal(out, 3.0)
    # the CLI: exit 0, the note on stderr at the user's line
    res = subprocess.run([sys.executable, "-m", "asterism.cli", "compile",
                          str(DIR / "host_code.mlir"), "-o", str(tmp_path / "h.hsaco")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "host_code.mlir:12: HostCodeSkipped: note: host function @main" in res.stderr


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 100])
def test_scf_while_on_a_uniform_condition(target, n):
    code = compile_file("while.mlir", target)
    x = RNG.standard_normal(64).astype(np.float32)
    o = np.full(64, -1.0, np.float32)
    trips = np.full(1, -1, np.int32)
    launch(code, "while_loop", (1, 1, 1), (64, 1, 1), [x, o, trips, np.int32(n)])
    want = np.zeros(64, np.float32)
    i, t = 1, 0
    while i < n:
        want = want + x * np.float32(i)
        i, t = i * 2, t + 1
    np.testing.assert_array_equal(o, want)
    assert trips[0] == t


def _clusters(size: int, stride: int) -> np.ndarray:
    """The lanes of each lane's cluster (MLIR: base + i * stride, i < size)."""
    lane = np.arange(64)
    base = lane // (size * stride) * size * stride + lane % stride
    return base[:, None] + stride * np.arange(size)[None, :]


@pytest.mark.parametrize("target", TARGETS)
def test_subgroup_reduce_over_the_wave_and_clusters(target):
    code = compile_file("subgroup_reduce.mlir", target)
    f = RNG.integers(-50, 50, 64).astype(np.float32)  # integers: sums exact in any order
    i = RNG.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    h = (2.0 ** RNG.integers(-2, 3, (64, 2)) * RNG.choice([-1, 1], (64, 2))).astype(np.float16)
    of, oi, oh = np.zeros((64, 5), np.float32), np.zeros((64, 2), np.int32), np.zeros_like(h)
    launch(code, "sred", (1, 1, 1), (64, 1, 1), [f, i, h, of, oi, oh])
    np.testing.assert_array_equal(of[:, 0], f.sum())
    np.testing.assert_array_equal(of[:, 1], f[_clusters(4, 1)].sum(1))
    np.testing.assert_array_equal(of[:, 2], f[_clusters(8, 4)].max(1))
    np.testing.assert_array_equal(of[:, 3], f[_clusters(16, 2)].min(1))
    np.testing.assert_array_equal(of[:, 4], f[_clusters(2, 32)].sum(1))
    np.testing.assert_array_equal(oi[:, 0], i.max())
    np.testing.assert_array_equal(oi[:, 1], np.bitwise_xor.reduce(i[_clusters(32, 1)], axis=1))
    np.testing.assert_array_equal(oh, h[_clusters(4, 1)].prod(1))


@pytest.mark.parametrize("line, message", [
    ("%r = gpu.subgroup_reduce add %x cluster(size = 3) : (f32) -> f32",
     "the cluster size must be a power of two, got 3"),
    ("%r = gpu.subgroup_reduce add %x cluster(size = 16, stride = 8) : (f32) -> f32",
     "a cluster of 16 lanes 8 apart does not fit the 64-lane wave"),
    ("%r = gpu.subgroup_reduce and %x : (f32) -> f32", "and over f32 is not supported"),
])
def test_subgroup_reduce_errors_are_located(line, message):
    text = f"""module {{
  gpu.module @m {{
    gpu.func @k(%x: f32) kernel {{
      {line}
      gpu.return
    }}
  }}
}}
"""
    with pytest.raises(AsterismError) as err:
        asterism.compile(api.parse(text, "r.mlir"))
    assert f"gpu.subgroup_reduce: {message}" in err.value.message
    assert err.value.location.file == "r.mlir" and err.value.location.line == 4


@pytest.mark.parametrize("target", TARGETS)
def test_scf_while_on_a_per_lane_condition(target):
    # lane l doubles i from 1 while i <= l: 0 to 6 trips, the lanes leave one by one
    code = compile_file("while_lanes.mlir", target)
    x = RNG.standard_normal(64).astype(np.float32)
    o, trips = np.zeros(64, np.float32), np.zeros(64, np.int32)
    launch(code, "while_lanes", (1, 1, 1), (64, 1, 1), [x, o, trips])
    want_o, want_t = np.zeros(64, np.float32), np.zeros(64, np.int32)
    for lane in range(64):
        i, acc = 1, np.float32(0)
        while i <= lane:
            acc = np.float32(acc + x[lane] * np.float32(i))
            i, want_t[lane] = i * 2, want_t[lane] + 1
        want_o[lane] = acc
    np.testing.assert_array_equal(trips, want_t)
    np.testing.assert_array_equal(o, want_o)
