"""MLIR 22 amdgpu ops beyond the seed, lowered and run on the emulator against NumPy:
scaled_mfma (gfx950 v_mfma_scale_f32_*_f8f6f4, every fp8/fp6/fp4 format on A and B, scale
byte selects, scalar scales), swizzle_bitmode (ds_swizzle), permlane_swap (gfx950),
gather_to_lds (LDS DMA, in and out of range), transpose_load (gfx950 ds_read_b64_tr_b*),
memory_counter_wait, scaled_ext_packed and packed_scaled_trunc (gfx950 v_cvt_scalef32_pk_*,
fp8/bf8/fp4 with f32/f16/bf16); and the errors for ops or targets that do not apply."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from test_emu_mfma import (
    _rng,
    assert_close,
    c_values,
    decode_values,
    input_formats,
    random_operand,
    ref_input,
    ref_output,
    reference,
    scale_register,
)
from test_upstream_mfma import _codes, _lane_words
from test_upstream_ops import _dpp_reference, compile_file, fp8_value, launch
from upstream_inputs import (
    SCALED_CASES,
    SCALED_CVT_TYPES,
    SCALED_EXT_CASES,
    SCALED_TRUNC_CASES,
    SMALL_FLOAT_BITS,
    SPARSE_CASES,
    bf8_text,
    scaled_ext_text,
    scaled_mfma_text,
    scaled_trunc_text,
    sparse_mfma_text,
)

import asterism
from asterism import api
from asterism.emu import mfma as mf
from asterism.emu import numerics as nm
from asterism.errors import AsterismError

RNG = np.random.default_rng(950)


def _pack_lanes(codes: np.ndarray, info, which: str, width: int, regs: int) -> np.ndarray:
    """(64 * regs,) int32 register words: element (i, k) of A (or (k, j) of B, given as
    (j, k)) at the bits `ref_input` (the calculator's layout) gives, a little-endian bit
    stream per lane (fp6 codes may straddle two registers)."""
    lanes = [0] * 64
    rows, kk = codes.shape
    for i in range(rows):
        for k in range(kk):
            lane, slot = ref_input(info, which, width, 0, i, k)
            lanes[lane] |= int(codes[i, k]) << (slot * width)
    words = [(lanes[lane] >> (32 * r)) & 0xFFFFFFFF for lane in range(64) for r in range(regs)]
    return np.array(words, np.uint32).view(np.int32)


@pytest.mark.parametrize("case", SCALED_CASES, ids=lambda c: "-".join(map(str, c)))
def test_scaled_mfma_matches_numpy(case):
    m, code_a, code_b, byte_a, byte_b, scalar = case
    mnemonic = f"v_mfma_scale_f32_{m}x{m}x{128 if m == 16 else 64}_f8f6f4"
    info = mf.mfma_info("gfx950", mnemonic)
    rng = _rng("upstream-scaled", case)
    fa, fb = nm.F8F6F4_FORMATS[code_a].name, nm.F8F6F4_FORMATS[code_b].name
    wa, wb = SMALL_FLOAT_BITS[code_a], SMALL_FLOAT_BITS[code_b]
    a = random_operand(rng, fa, (info.m, info.k))
    b = random_operand(rng, fb, (info.k, info.n))
    c = (rng.standard_normal((info.m, info.n)) * 4).astype(np.float32)
    kb = info.k // 32
    sa = rng.integers(117, 138, (1, info.m, kb))
    sb = rng.integers(117, 138, (1, kb, info.n))
    # other bytes random, so a wrong byte select shows (scalar scales: bytes extracted first)
    scales = np.concatenate([scale_register(sa, info.m, byte_a, rng, "a")[0],
                             scale_register(sb, info.n, byte_b, rng, "b")[0]]).view(np.int32)
    c_lanes = np.zeros((64, info.c_regs), np.float32)
    for i in range(info.m):
        for j in range(info.n):
            lane, slot = ref_output(info, 0, i, j)
            c_lanes[lane, slot] = c[i, j]
    d_lanes = np.zeros_like(c_lanes)
    module = api.parse(scaled_mfma_text(*case))
    api.retarget(module, "gfx950")
    code = asterism.compile(module)
    launch(code, "scaled", (1, 1, 1), (64, 1, 1),
           [_pack_lanes(a, info, "a", wa, wa), _pack_lanes(b.T, info, "b", wb, wb),
            c_lanes.reshape(-1), scales, d_lanes.reshape(-1)])
    got = np.zeros((info.m, info.n), np.float32)
    for i in range(info.m):
        for j in range(info.n):
            lane, slot = ref_output(info, 0, i, j)
            got[i, j] = d_lanes[lane, slot]
    av = decode_values(a, fa) * np.repeat(np.exp2(sa[0] - 127.0), 32, axis=1)
    bv = decode_values(b, fb) * np.repeat(np.exp2(sb[0] - 127.0), 32, axis=0)
    acc, mag = reference(av, bv, c.astype(np.float64), "f32")
    assert_close(got, acc, mag, "f32")


def test_scaled_mfma_errors():
    text = scaled_mfma_text(16, 0, 0, 0, 0)
    with pytest.raises(AsterismError, match=r"amdgpu.scaled_mfma: scaled MFMAs need gfx950; "
                                            r"gfx942 has none"):
        asterism.compile(api.parse(text))  # the default target is gfx942
    bad = text.replace("16x16x128", "16x16x64")
    module = api.parse(bad)
    api.retarget(module, "gfx950")
    with pytest.raises(AsterismError, match=r"no 16x16x64 scaled MFMA on gfx950 \(it has: "
                                            r"16x16x128, 32x32x64\)") as err:
        asterism.compile(module)
    assert err.value.location is not None and err.value.location.line > 1


def _swizzle_source(lane: int, and_m: int, or_m: int, xor_m: int) -> int:
    """ds_swizzle bit-mask mode (ISA): within each 32 lanes, lane i reads
    ((i & and) | or) ^ xor."""
    return (lane & 32) | (((lane & 31 & and_m) | or_m) ^ xor_m)


def test_swizzle_and_permlane_swap():
    code = compile_file("gfx950_lanes.mlir", "gfx950")
    x = RNG.integers(-2 ** 31, 2 ** 31, 64).astype(np.int32)
    out = np.zeros((6, 64), np.int32)
    launch(code, "lanes", (1, 1, 1), (64, 1, 1), [x, out])
    lanes = np.arange(64)
    np.testing.assert_array_equal(out[0], x[[_swizzle_source(la, 28, 1, 2) for la in lanes]])
    np.testing.assert_array_equal(out[1], x[[_swizzle_source(la, 0, 5, 0) for la in lanes]])
    np.testing.assert_array_equal(out[2], x[lanes ^ 16])  # rows of 16 swapped pairwise
    np.testing.assert_array_equal(out[3], x[lanes ^ 32])  # halves swapped
    src = (lanes ^ 1) ^ 16  # permlane16 swap, then the swizzle xor 1
    np.testing.assert_array_equal(out[4], x[src])
    np.testing.assert_array_equal(out[5], x[src] + 1)


def test_gather_to_lds_in_and_out_of_range():
    code = compile_file("gfx950_gather.mlir", "gfx950")
    src = RNG.standard_normal(320).astype(np.float32)
    out = np.full(320, -5.0, np.float32)
    launch(code, "gather", (1, 1, 1), (64, 1, 1), [src, out])
    lanes = np.arange(64)
    idx = 7 * lanes + 13
    want = np.empty(320, np.float32)
    want[:64] = np.where(idx < 320, src[np.minimum(idx, 319)], 0)  # past the end reads 0
    want[64:] = src[(4 * (63 - lanes))[:, None] + np.arange(4)].reshape(-1)
    np.testing.assert_array_equal(out, want)


def test_transpose_load():
    code = compile_file("gfx950_transpose.mlir", "gfx950")
    h = RNG.integers(0, 2 ** 16, 256).astype(np.uint16).view(np.int16)
    b = RNG.integers(0, 256, 512).astype(np.uint8).view(np.int8)
    oh, ob = np.zeros_like(h), np.zeros_like(b)
    launch(code, "transpose", (1, 1, 1), (64, 1, 1), [h, b, oh, ob])
    # each 16-lane group reads an (E x 16) row-major tile (lane i: 8 bytes at 8 i) and
    # lane j of the group receives column j
    for group in range(4):
        tile_h = h[64 * group:64 * (group + 1)].reshape(4, 16)
        np.testing.assert_array_equal(oh[64 * group:64 * (group + 1)].reshape(16, 4), tile_h.T)
        tile_b = b[128 * group:128 * (group + 1)].reshape(8, 16)
        np.testing.assert_array_equal(ob[128 * group:128 * (group + 1)].reshape(16, 8),
                                      tile_b.T)


SMALL = """module {{ gpu.module @m {{
  gpu.func @k(%g: memref<256xf32>) workgroup(%lds: memref<256xf32, 3>) kernel {{
    %i = gpu.thread_id x
    %v = arith.constant 1.0 : f32
    {body}
    gpu.return
  }} }} }}"""


@pytest.mark.parametrize("body, message", [
    ("%p = amdgpu.permlane_swap %v 16 : f32",
     r"amdgpu.permlane_swap: permlane_swap needs gfx950 \(v_permlane16_swap_b32\); gfx942 "
     "does not have it"),
    ("%t = amdgpu.transpose_load %lds[%i] : memref<256xf32, 3> -> vector<4xf16>",
     r"amdgpu.transpose_load: transpose_load needs gfx950 \(ds_read_b64_tr_b16\)"),
    ("amdgpu.gather_to_lds %g[%i], %lds[%i] : vector<4xf32>, memref<256xf32>, "
     "memref<256xf32, 3>", r"amdgpu.gather_to_lds: a 16-byte gather_to_lds needs gfx950"),
])
def test_gfx950_ops_on_gfx942_are_errors(body, message):
    text = SMALL.format(body=body)
    with pytest.raises(AsterismError, match=message) as err:
        asterism.compile(api.parse(text))
    assert err.value.location is not None and err.value.location.line == 5


@pytest.mark.parametrize("body, message", [
    ("%t = amdgpu.transpose_load %lds[%i] : memref<256xf32, 3> -> vector<2xf32>",
     r"result vector<2xf32> is not supported \(vector<4x 16-bit>"),
    ("%s = amdgpu.swizzle_bitmode %v 32 0 0 : f32", r"masks must be 0..31"),
    ("%p = amdgpu.permlane_swap %v 8 : f32", r"row_length must be 16 or 32, got 8"),
    ("%p = amdgpu.permlane_swap %v 16 {bound_ctrl = true} : f32",
     r"bound_ctrl = true is not supported yet"),
    ("amdgpu.memory_counter_wait tensor(0)", r"the tensor counter exists on gfx1250 only"),
])
def test_unsupported_forms_are_errors(body, message):
    module = api.parse(SMALL.format(body=body))
    api.retarget(module, "gfx950")
    with pytest.raises(AsterismError, match=message):
        asterism.compile(module)


@pytest.mark.parametrize("name", ["scaled_wmma", "make_dma_base", "tensor_load_to_lds",
                                  "scaled_ext_packed_matrix"])
def test_gfx1250_ops_name_the_op_and_the_targets(name):
    text = SMALL.format(body=f'"amdgpu.{name}"() : () -> ()')
    with pytest.raises(AsterismError, match=rf"amdgpu.{name} is an op of gfx1250.*does not "
                                            r"exist on the CDNA targets asterism compiles for "
                                            r"\(gfx942, gfx950\)"):
        api.parse(text)


@pytest.mark.llvm
def test_memory_counter_wait_is_an_s_waitcnt(tmp_path, llvm_objdump):
    text = """module { gpu.module @m {
  gpu.func @k(%x: memref<4xf32>) kernel {
    amdgpu.memory_counter_wait load(3) store(1) ds(2)
    amdgpu.memory_counter_wait exp(0)
    gpu.return
  } } }"""
    path = tmp_path / "k.hsaco"
    path.write_bytes(asterism.compile(api.parse(text)))
    res = subprocess.run([llvm_objdump, "-d", "--mcpu=gfx942", str(path)], capture_output=True,
                         text=True, check=True)
    waits = [ln.split("//")[0].strip() for ln in res.stdout.splitlines() if "s_waitcnt" in ln]
    # gfx9 has one counter for loads and stores: the smaller count wins
    assert waits[-2:] == ["s_waitcnt vmcnt(1) lgkmcnt(2)", "s_waitcnt expcnt(0)"]


def test_rocdl_target_picks_the_chip():
    path = compile_file.__globals__["DIR"] / "gfx950_lanes.mlir"  # [#rocdl.target<gfx950>]
    assert asterism.compile(api.parse(path)) == compile_file("gfx950_lanes.mlir", "gfx950")
    with pytest.raises(AsterismError, match=r"permlane_swap needs gfx950"):
        compile_file("gfx950_lanes.mlir", "gfx942")  # an explicit target overrides it
    text = path.read_text().replace('chip = "gfx950"', 'chip = "gfx1100"')
    with pytest.raises(AsterismError, match=r'#rocdl.target chip "gfx1100" is not supported '
                                            r"\(asterism compiles for gfx942, gfx950\)"):
        asterism.compile(api.parse(text))


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_dpp_wave_shifts_and_row_broadcasts(target):
    code = compile_file("dpp_wave.mlir", target)
    x = RNG.standard_normal(64).astype(np.float32)
    out = np.zeros((6, 64), np.float32)
    launch(code, "dpp_wave", (1, 1, 1), (64, 1, 1), [x, out])
    want = [
        _dpp_reference(x, -1, lambda lane: lane + 1 if lane < 63 else None),
        _dpp_reference(x, -1, lambda lane: (lane + 1) % 64),
        _dpp_reference(x, -1, lambda lane: lane - 1 if lane else None, bound_ctrl=True),
        _dpp_reference(x, -1, lambda lane: (lane - 1) % 64),
        # row_bcast:15: lane 15 of the row before (rows 1 and 3 written)
        _dpp_reference(x, -1, lambda lane: 16 * (lane // 16) - 1, row_mask=0xA),
        # row_bcast:31: lane 31 (rows 2 and 3 written)
        _dpp_reference(x, -1, lambda lane: 31, row_mask=0xC),
    ]
    np.testing.assert_array_equal(out, np.stack(want))


BF8 = {"gfx942": {"E": 5, "M": 2, "bias": 16, "fnuz": True},
       "gfx950": {"E": 5, "M": 2, "bias": 15, "fnuz": False}}


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_bf8_conversions(target):
    module = api.parse(bf8_text(target))
    api.retarget(module, target)
    code = asterism.compile(module)
    fmt = BF8[target]
    # finite codes only (OCP E5M2 has inf and NaN at exponent 31; FNUZ has NaN at 0x80)
    codes = [c for c in range(256) if c != 0x80 and (fmt["fnuz"] or (c >> 2) & 31 != 31)]
    pick = RNG.choice(codes, size=256)
    x = np.array([fp8_value(c, fmt) for c in pick], np.float32)  # exactly representable
    rnd = RNG.integers(0, 2 ** 31, 64).astype(np.int32)
    packed = np.zeros(128, np.int32)
    back = np.zeros((64, 6), np.float32)
    launch(code, "fp8", (1, 1, 1), (64, 1, 1), [x, rnd, packed, back])
    want = (pick.reshape(64, 4) << np.array([0, 8, 16, 24])).sum(axis=1).astype(np.uint32)
    np.testing.assert_array_equal(packed[:64].view(np.uint32), want)
    b = pick.reshape(64, 4)[:, 1].astype(np.uint32)  # stochastic rounding of an exact value
    want_sr = (want & np.uint32(0xFF00FFFF)) | (b << np.uint32(16))
    np.testing.assert_array_equal(packed[64:].view(np.uint32), want_sr)
    xs = x.reshape(64, 4)
    np.testing.assert_array_equal(back[:, :4], xs)
    np.testing.assert_array_equal(back[:, 4:], xs[:, 2:4])


FMAX = """module {{ gpu.module @m {{
  gpu.func @fmax(%x: memref<64x{t}>, %acc: memref<4x{t}>) kernel
      attributes {{known_block_size = array<i32: 64, 1, 1>}} {{
    %l = gpu.thread_id x
    %v = memref.load %x[%l] : memref<64x{t}>
    %c4 = arith.constant 4 : index
    %r = arith.remui %l, %c4 : index
    %i = arith.index_cast %r : index to i32
    amdgpu.raw_buffer_atomic_fmax %v -> %acc[%i] : {t} -> memref<4x{t}>, i32
    gpu.return
  }} }} }}"""


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_raw_buffer_atomic_fmax(target):
    module = api.parse(FMAX.format(t="f64"))
    api.retarget(module, target)
    code = asterism.compile(module)
    x = RNG.standard_normal(64)
    acc = np.full(4, -np.inf)
    launch(code, "fmax", (1, 1, 1), (64, 1, 1), [x, acc])
    np.testing.assert_array_equal(acc, x.reshape(16, 4).max(axis=0))
    # CDNA has buffer_atomic_max_f64 only: f32 is a compare-and-swap loop (16 lanes on each
    # address)
    module = api.parse(FMAX.format(t="f32"))
    api.retarget(module, target)
    code = asterism.compile(module)
    x = RNG.standard_normal(64).astype(np.float32)
    acc = np.full(4, -np.inf, np.float32)
    launch(code, "fmax", (1, 1, 1), (64, 1, 1), [x, acc])
    np.testing.assert_array_equal(acc, x.reshape(16, 4).max(axis=0))


@pytest.mark.parametrize("case", SPARSE_CASES, ids=lambda c: f"{c[0]}-{c[1]}-abid{c[2]}")
def test_sparse_mfma_matches_numpy(case):
    """Random stored values and 2-bit indices laid out by the calculator's dense layout (two
    stored values per group of four K, index field bits 2 s of the lane, the byte or half
    `abid` selects), against the dense product of the rows the indices name."""
    target, mnemonic, abid = case
    info = mf.mfma_info(target, mnemonic)
    rng = _rng("upstream-sparse", case)
    fa, fb = input_formats(info)
    width = 16 if info.a_type in ("f16", "bf16") else 8
    stored = random_operand(rng, fa, (info.m, info.k // 2))
    index = rng.integers(0, 4, (info.m, info.k // 2))
    raw = _codes(stored, fa).astype(np.uint64)
    lanes = [0] * 64
    idx = [0] * 64
    field = 2 * (info.a_regs * 32 // width)  # index bits per lane
    shift = abid * field if field < 32 else 0
    for i, cs in np.ndindex(info.m, info.k // 2):
        lane, dense = ref_input(info, "a", width, 0, i, 4 * (cs // 2))
        slot = (dense // 4) * 2 + cs % 2
        lanes[lane] |= int(raw[i, cs]) << (slot * width)
        idx[lane] |= int(index[i, cs]) << (shift + 2 * slot)
    a_words = np.array([(v >> (32 * r)) & 0xFFFFFFFF for v in lanes
                        for r in range(info.a_regs)], np.uint32).view(np.int32)
    b = random_operand(rng, fb, (1, info.k, info.n))
    b_words = _lane_words(_codes(np.swapaxes(b, 1, 2), fb), info, "b", info.b_regs, width)
    c = c_values(rng, info, (info.m, info.n))
    dtype = np.int32 if info.out_type == "i32" else np.float32
    c_lanes = np.zeros((64, info.c_regs), dtype)
    for i, j in np.ndindex(info.m, info.n):
        lane, slot = ref_output(info, 0, i, j)
        c_lanes[lane, slot] = c[i, j]
    d_lanes = np.zeros_like(c_lanes)
    module = api.parse(sparse_mfma_text(target, mnemonic, abid))
    api.retarget(module, target)
    code = asterism.compile(module)
    launch(code, "sparse", (1, 1, 1), (64, 1, 1),
           [a_words, b_words, c_lanes.reshape(-1), np.array(idx, np.uint32).view(np.int32),
            d_lanes.reshape(-1)])
    got = np.zeros((info.m, info.n), dtype)
    for i, j in np.ndindex(info.m, info.n):
        lane, slot = ref_output(info, 0, i, j)
        got[i, j] = d_lanes[lane, slot]
    sv, bv = decode_values(stored, fa), decode_values(b[0], fb)
    acc = c.astype(np.int64 if info.out_type == "i32" else np.float64)
    mag = np.abs(acc).astype(np.float64)
    for cs in range(info.k // 2):
        brow = bv[4 * (cs // 2) + index[:, cs]]  # (M, N): the B row each stored value meets
        prod = sv[:, cs, None] * brow
        acc = acc + prod
        mag = mag + np.abs(prod)
    assert_close(got, acc, mag, info.out_type)


# (exponent bits, mantissa bits, bias) of the OCP small floats of v_cvt_scalef32_pk_*
SMALL_FORMATS = {"f8E4M3FN": (4, 3, 7), "f8E5M2": (5, 2, 15), "f4E2M1FN": (2, 1, 1)}


def _small_value(code: int, name: str) -> float:
    """Value of a finite OCP small-float code (the OCP MX spec's formula)."""
    e_bits, m_bits, bias = SMALL_FORMATS[name]
    width = 1 + e_bits + m_bits
    sign = -1.0 if code >> (width - 1) & 1 else 1.0
    exp = (code >> m_bits) & ((1 << e_bits) - 1)
    man = code & ((1 << m_bits) - 1)
    if exp == 0:
        return sign * man / (1 << m_bits) * 2.0 ** (1 - bias)
    return sign * (1 + man / (1 << m_bits)) * 2.0 ** (exp - bias)


def _finite_codes(name: str) -> list[int]:
    """Codes of finite values (E4M3FN: NaN at S.1111.111; E5M2: inf/NaN at exponent 31)."""
    width = 1 + sum(SMALL_FORMATS[name][:2])
    if name == "f8E4M3FN":
        return [c for c in range(256) if c & 0x7F != 0x7F]
    if name == "f8E5M2":
        return [c for c in range(256) if (c >> 2) & 31 != 31]
    return list(range(1 << width))


def _scales(wide: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(powers of two, the f32 scale operands): random exponents (small enough that values
    times them are exact in f16), mantissas random too as only the exponent counts."""
    lo, hi = (-4, 0) if wide == "f16" else (-8, 8)
    power = np.exp2(RNG.integers(lo, hi + 1, n)).astype(np.float32)
    return power, (power * RNG.uniform(1.0, 2.0, n)).astype(np.float32)


def _wide_bits(values: np.ndarray, wide: str) -> np.ndarray:
    """uint32 bit patterns of exactly representable values in f32, or 16-bit ones."""
    if wide == "f32":
        return values.astype(np.float32).view(np.uint32)
    if wide == "f16":
        return values.astype(np.float16).view(np.uint16).astype(np.uint32)
    return values.astype(np.float32).view(np.uint32) >> np.uint32(16)  # exact in bf16


@pytest.mark.parametrize("small, wide", SCALED_EXT_CASES)
def test_scaled_ext_packed_matches_numpy(small, wide):
    ne, bits = SCALED_CVT_TYPES[small]
    codes = RNG.choice(_finite_codes(small), size=(64, ne))
    word = (codes.astype(np.uint64) << (bits * np.arange(ne, dtype=np.uint64))).sum(axis=1)
    power, scale = _scales(wide, 64)
    words = 2 if wide == "f32" else 1
    out = np.zeros(64 * (ne // 2) * words, np.int32)
    module = api.parse(scaled_ext_text(small, wide))
    api.retarget(module, "gfx950")
    launch(asterism.compile(module), "ext", (1, 1, 1), (64, 1, 1),
           [word.astype(np.uint32).view(np.int32), scale, out])
    values = np.vectorize(lambda c: _small_value(int(c), small))(codes) * power[:, None]
    want = _wide_bits(values, wide)
    if wide != "f32":  # two 16-bit results per dword, the first one low
        want = want[:, 0::2] | (want[:, 1::2] << np.uint32(16))
    np.testing.assert_array_equal(out.view(np.uint32), want.reshape(-1))


@pytest.mark.parametrize("small, wide", SCALED_TRUNC_CASES)
def test_packed_scaled_trunc_matches_numpy(small, wide):
    """Exactly representable values (code values times the scale's power of two) convert to
    their codes, placed in the word (8-bit) or byte (fp4) `index` names, the other bits of
    `existing` kept; into undef, the low pair."""
    ne, bits = SCALED_CVT_TYPES[small]
    pairs = ne // 2
    codes = RNG.choice(_finite_codes(small), size=(64, pairs + 1, 2))
    power, scale = _scales(wide, 64)
    values = np.vectorize(lambda c: _small_value(int(c), small))(codes) * power[:, None, None]
    x = _wide_bits(values, wide)
    x = x.reshape(-1) if wide == "f32" else (x[..., 0] | (x[..., 1] << np.uint32(16)))
    old = RNG.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(64 * (pairs + 1), np.int32)
    module = api.parse(scaled_trunc_text(wide, small))
    api.retarget(module, "gfx950")
    launch(asterism.compile(module), "trunc", (1, 1, 1), (64, 1, 1),
           [x.reshape(-1).view(np.int32), scale, old.view(np.int32), out])
    got = out.view(np.uint32).reshape(64, pairs + 1)
    pair = (codes[..., 0] | (codes[..., 1] << bits)).astype(np.uint32)
    field = np.uint32((1 << 2 * bits) - 1)
    for i in range(pairs):
        shift = np.uint32(2 * bits * i)
        want = (old & ~(field << shift)) | (pair[:, i] << shift)
        np.testing.assert_array_equal(got[:, i], want, err_msg=f"index {i}")
    np.testing.assert_array_equal(got[:, pairs] & field, pair[:, pairs])


SCALED_CVT = """module { gpu.module @m {
  gpu.func @k(%g: memref<64xi32>) kernel {
    %s = arith.constant 1.0 : f32
    %w = arith.constant dense<0> : vector<1xi32>
    %v = vector.bitcast %w : vector<1xi32> to vector<4xf8E4M3FN>
    %x = arith.constant dense<1.0> : vector<2xf32>
    BODY
    gpu.return
  } } }"""


@pytest.mark.parametrize("body, target, message", [
    ("%r = amdgpu.scaled_ext_packed %v[0], %s : vector<4xf8E4M3FN> to vector<2xf32>",
     "gfx942", r"amdgpu.scaled_ext_packed: scaled_ext_packed needs gfx950 "
               r"\(v_cvt_scalef32_pk_f32_fp8\); gfx942 does not have it"),
    ("%r = amdgpu.packed_scaled_trunc %x into undef[1], %s : vector<2xf32> to "
     "vector<4xf8E5M2>", "gfx942", r"amdgpu.packed_scaled_trunc: packed_scaled_trunc needs "
                                   r"gfx950 \(v_cvt_scalef32_pk_bf8_f32\)"),
    ("%r = amdgpu.scaled_ext_packed %v[2], %s : vector<4xf8E4M3FN> to vector<2xf32>",
     "gfx950", r"index 2 is outside the 2 pairs of 8-bit values"),
    ("%r = amdgpu.packed_scaled_trunc %x into undef[2], %s : vector<2xf32> to "
     "vector<4xf8E5M2>", "gfx950", r"index 2 is outside the 2 pairs of 8-bit values"),
])
def test_scaled_conversion_errors(body, target, message):
    module = api.parse(SCALED_CVT.replace("BODY", body))
    api.retarget(module, target)
    with pytest.raises(AsterismError, match=message) as err:
        asterism.compile(module)
    assert err.value.location is not None and err.value.location.line == 7


SHORT = """module { gpu.module @m {
  gpu.func @short(%w: memref<64xi32>, %x: memref<64xf32>, %out: memref<192xi32>) kernel
      attributes {known_block_size = array<i32: 64, 1, 1>} {
    %l = gpu.thread_id x
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %b = arith.muli %l, %c3 : index
    %s = arith.constant 4.0 : f32
    %wv = vector.load %w[%l] : memref<64xi32>, vector<1xi32>
    %v4 = vector.bitcast %wv : vector<1xi32> to vector<4xf8E4M3FN>
    %v2 = vector.extract_strided_slice %v4 {offsets = [2], sizes = [2], strides = [1]} : vector<4xf8E4M3FN> to vector<2xf8E4M3FN>
    %r = amdgpu.scaled_ext_packed %v2[0], %s : vector<2xf8E4M3FN> to vector<2xf32>
    %ri = vector.bitcast %r : vector<2xf32> to vector<2xi32>
    vector.store %ri, %out[%b] : memref<192xi32>, vector<2xi32>
    %xv = vector.load %x[%l] : memref<64xf32>, vector<1xf32>
    %t = amdgpu.packed_scaled_trunc %xv into undef[1], %s : vector<1xf32> to vector<4xf8E5M2>
    %ti = vector.bitcast %t : vector<4xf8E5M2> to vector<1xi32>
    %o = arith.addi %b, %c2 : index
    vector.store %ti, %out[%o] : memref<192xi32>, vector<1xi32>
    gpu.return
  } } }"""


def test_short_vectors_of_scaled_conversions():
    """A vector<2x fp8> source (a slice) extends its one pair; a vector<1xf32> source
    truncates with 0.0 as the second value (a constant scale 4.0 = 2**2)."""
    codes = RNG.choice(_finite_codes("f8E4M3FN"), size=(64, 4))
    word = (codes.astype(np.uint32) << np.uint32(8) * np.arange(4, dtype=np.uint32)).sum(
        axis=1, dtype=np.uint32)
    tcodes = RNG.choice(_finite_codes("f8E5M2"), size=64)
    x = (np.vectorize(lambda c: _small_value(int(c), "f8E5M2"))(tcodes) * 4).astype(np.float32)
    out = np.zeros(192, np.int32)
    module = api.parse(SHORT)
    api.retarget(module, "gfx950")
    launch(asterism.compile(module), "short", (1, 1, 1), (64, 1, 1),
           [word.view(np.int32), x, out])
    got = out.view(np.uint32).reshape(64, 3)
    values = np.vectorize(lambda c: _small_value(int(c), "f8E4M3FN"))(codes[:, 2:]) * 4
    np.testing.assert_array_equal(got[:, :2], values.astype(np.float32).view(np.uint32))
    np.testing.assert_array_equal(got[:, 2] >> np.uint32(16), tcodes.astype(np.uint32))
