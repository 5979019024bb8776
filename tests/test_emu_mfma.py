"""MFMA / SMFMAC semantics (asterism.emu.mfma) on every instruction of both targets.

Three kinds of checks:
* layouts: `mfma_layout` against the closed-form equations AMD's Matrix Instruction
  Calculator prints (`--detail-instruction`, InstCalcGfx9) and against concrete register /
  lane facts quoted from the calculator README and AMD's "Matrix Core Programming on AMD
  CDNA3 and CDNA4 architecture" blog (cited where used);
* arithmetic: every MFMA on random inputs (negative values, zeros, wide magnitudes, random
  codes for the 8/6/4-bit formats) against an independent NumPy float64 matmul of the
  decoded inputs, within the documented tolerance (a few f32 ulps of sum |a*b| + |c|);
* modifiers: CBSZ/ABID block broadcast, BLGP lane patterns, f64 negation, f8f6f4 formats,
  block scales with byte selects, 2:4 sparsity with index selects.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from asterism.emu import mfma as mf
from asterism.emu import numerics as nm

TARGETS = ("gfx942", "gfx950")
ALL = [(t, m) for t in TARGETS for m in mf.mfma_mnemonics(t)]
DENSE = [(t, m) for t, m in ALL if not mf.mfma_info(t, m).sparse]
SPARSE = [(t, m) for t, m in ALL if mf.mfma_info(t, m).sparse]
MULTI = [(t, m) for t, m in DENSE if mf.mfma_info(t, m).blocks > 1]
F8F6F4 = [(t, m) for t, m in ALL if "f8f6f4" in m]
WAVES = 2


def _ids(case: tuple[str, str]) -> str:
    return f"{case[0]}-{case[1]}"


def _rng(*key: object) -> np.random.Generator:
    # crc32, not hash(): string hashes change from run to run (PYTHONHASHSEED).
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# --------------------------------------------------------------------------- references


def ref_input(info: mf.MfmaInfo, which: str, width: int, b: int, i: int,
              k: int) -> tuple[int, int]:
    """(lane, element slot) of A[b][i][k] or B[b][k][i] (i = column for B).

    Calculator equation (InstCalcGfx9._coord_to_lane_eqn): lane = dim*block +
    dim*blocks*floor(k/epl) + i, element k % epl. gfx950 8-bit operands with 32 elements per
    lane follow AMD's blog section 5.4 (32x32x64 fp8: byte 16*h + j of lane l holds
    k = 32*h + 16*(l//32) + j): 16-element chunks dealt round the lane groups."""
    dim = info.m if which == "a" else info.n
    groups = 64 // (dim * info.blocks)
    epl = info.k // groups
    if width == 8 and epl > 16:
        chunk = k // 16
        return dim * b + dim * info.blocks * (chunk % groups) + i, (chunk // groups) * 16 + k % 16
    return dim * b + dim * info.blocks * (k // epl) + i, k % epl


def ref_output(info: mf.MfmaInfo, b: int, i: int, j: int) -> tuple[int, int]:
    """(lane, register slot) of D[b][i][j]: the calculator's per-shape equations
    (_coord_to_output_reg_eqn / _coord_to_lane_eqn)."""
    m, n = info.m, info.n
    if info.out_type == "f64":
        if info.blocks == 1:
            return 16 * (i % 4) + j, i // 4  # GPR [2*floor(i/4)+1 : 2*floor(i/4)]
        return 16 * (i % 4) + n * b + j, 0  # 4x4x4_4b: GPR [1:0]
    if (m, n) == (4, 4):
        return 4 * b + j, i
    if (m, n) == (16, 16):
        return 16 * (i // 4) + j, 4 * b + i % 4 if info.blocks == 4 else i % 4
    assert (m, n) == (32, 32)
    return (32 * (i // 4)) % 64 + j, 16 * b + 4 * (i // 8) + i % 4


def blgp_source(lane: int, blgp: int) -> int:
    """Lane whose B data lane `lane` receives, from the calculator README's BLGP list."""
    if blgp == 1:  # lanes 0-31 also broadcast into lanes 32-63
        return lane % 32
    if blgp == 2:  # lanes 32-63 broadcast into lanes 0-31
        return lane % 32 + 32
    if blgp == 3:  # rotated down by 16: lane 16's data goes to lane 0
        return (lane + 16) % 64
    if blgp >= 4:  # lanes 16*(blgp-4) .. +15 broadcast to every group
        return 16 * (blgp - 4) + lane % 16
    return lane


def decode_values(codes: np.ndarray, fmt: str) -> np.ndarray:
    """float64 values of codes by format name (NumPy's float16 for f16); float and int8
    arrays are values already."""
    codes = np.asarray(codes)
    if np.issubdtype(codes.dtype, np.floating):
        return codes.astype(np.float64)
    if codes.dtype == np.int8:
        return codes.astype(np.int64)
    if fmt == "f16":
        return codes.astype(np.uint16).view(np.float16).astype(np.float64)
    if fmt == "bf16":
        return (codes.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if fmt in ("f32", "xf32"):
        return codes.astype(np.uint32).view(np.float32).astype(np.float64)
    if fmt == "f64":
        return codes.astype(np.uint64).view(np.float64)
    if fmt == "i8":
        return codes.astype(np.uint8).view(np.int8).astype(np.int64)
    return nm.decode(codes, nm.FORMATS[fmt])


def random_operand(rng: np.random.Generator, fmt: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random raw codes (finite, with zeros and both signs) or values for a format."""
    if fmt == "f64":
        v = rng.standard_normal(shape) * np.exp2(rng.integers(-8, 9, shape))
        return np.where(rng.random(shape) < 0.1, 0.0, v)
    if fmt in ("f32", "xf32"):
        v = (rng.standard_normal(shape) * np.exp2(rng.integers(-12, 13, shape))).astype(
            np.float32)
        v = np.where(rng.random(shape) < 0.1, np.float32(0), v)
        if fmt == "xf32":  # exactly representable: the input rounding is an assumption
            v = (v.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
        return v
    if fmt == "i8":
        return rng.integers(-128, 128, shape).astype(np.int8)
    if fmt == "bf16":  # exponents 2**-17 .. 2**18 keep f32 sums finite
        exp = rng.integers(110, 146, shape)
        codes = (rng.integers(0, 2, shape) << 15) | (exp << 7) | rng.integers(0, 128, shape)
        return np.where(rng.random(shape) < 0.1, 0, codes).astype(np.uint16)
    width = 16 if fmt == "f16" else nm.FORMATS[fmt].bits
    codes = rng.integers(0, 1 << width, shape)
    vals = decode_values(codes, fmt)
    bad = ~np.isfinite(vals)
    codes = np.where(bad, 0, codes)  # zeros replace NaN/inf codes
    return codes.astype(np.uint16 if width > 8 else np.uint8)


def input_formats(info: mf.MfmaInfo, a_code: int = 0, b_code: int = 0) -> tuple[str, str]:
    """Element format names of A and B."""
    def one(ty: str, code: int) -> str:
        if ty == "f8f6f4":
            return nm.F8F6F4_FORMATS[code].name
        if ty in ("fp8", "bf8"):
            return nm.fp8_formats(info.target)[ty].name
        return ty
    return one(info.a_type, a_code), one(info.b_type, b_code)


def reference(a_vals: np.ndarray, b_vals: np.ndarray, c_vals: np.ndarray,
              out_type: str) -> tuple[np.ndarray, np.ndarray]:
    """(exact-ish result, magnitude bound) by explicit per-k accumulation in float64."""
    acc = c_vals.astype(np.float64 if out_type != "i32" else np.int64).copy()
    mag = np.abs(c_vals).astype(np.float64)
    for k in range(a_vals.shape[-1]):
        prod = a_vals[..., :, k, None] * b_vals[..., k, None, :]
        acc = acc + prod
        mag = mag + np.abs(prod)
    return acc, mag


def assert_close(got: np.ndarray, acc: np.ndarray, mag: np.ndarray, out_type: str) -> None:
    """Compare D with the reference within the documented tolerance."""
    if out_type == "i32":
        want = (acc & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        np.testing.assert_array_equal(got, want)
        return
    if out_type == "f64":
        tol = 2.0 ** -50 * mag + 1e-300
        np.testing.assert_array_equal(np.isnan(got), np.isnan(acc))
        ok = ~np.isnan(acc)
        assert np.all(np.abs(got[ok] - acc[ok]) <= tol[ok])
        return
    want = acc.astype(np.float32)
    tol = 2.0 ** -22 * mag + 2.0 ** -149
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = np.isfinite(want)
    np.testing.assert_array_equal(got[~ok & ~np.isnan(want)], want[~ok & ~np.isnan(want)])
    err = np.abs(got[ok].astype(np.float64) - acc[ok])
    assert np.all(err <= tol[ok]), float((err / tol[ok]).max())


def c_values(rng: np.random.Generator, info: mf.MfmaInfo, shape: tuple[int, ...]) -> np.ndarray:
    """Random C matrix in the output type (wrapping-range int32, wide f32, f64)."""
    if info.out_type == "i32":
        return rng.integers(-2 ** 31, 2 ** 31, shape).astype(np.int32)
    if info.out_type == "f64":
        return rng.standard_normal(shape) * 100
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-4, 8, shape))).astype(
        np.float32)


def matrix_shapes(info: mf.MfmaInfo, waves: int = WAVES) -> tuple[tuple[int, ...], ...]:
    blk = (info.blocks,) if info.blocks > 1 else ()
    return ((waves, *blk, info.m, info.k), (waves, *blk, info.k, info.n),
            (waves, *blk, info.m, info.n))


def blocked(x: np.ndarray, info: mf.MfmaInfo) -> np.ndarray:
    """(waves, blocks, rows, cols) view of a test matrix."""
    return x if info.blocks > 1 else x[:, None]


# --------------------------------------------------------------------------- coverage


def test_every_database_mfma_is_covered() -> None:
    # Every MFMA/SMFMAC of the ISA database parses and has layouts matching its widths.
    counts = {t: len(mf.mfma_mnemonics(t)) for t in TARGETS}
    assert counts["gfx942"] >= 46 and counts["gfx950"] >= 68
    for t, m in ALL:
        info = mf.mfma_info(t, m)
        lay = mf.mfma_layout(t, m)
        assert (lay.a.nregs, lay.b.nregs, lay.c.nregs) == (info.a_regs, info.b_regs,
                                                          info.c_regs), m
    names = {m for _, m in ALL}
    assert "v_mfma_f32_16x16x8_xf32" in mf.mfma_mnemonics("gfx942")
    assert "v_mfma_f32_16x16x8_xf32" not in mf.mfma_mnemonics("gfx950")
    assert {"v_mfma_scale_f32_16x16x128_f8f6f4", "v_smfmac_i32_32x32x64_i8",
            "v_mfma_f64_4x4x4_4b_f64", "v_mfma_i32_16x16x64_i8"} <= names


def test_aliases_resolve() -> None:
    info = mf.mfma_info("gfx942", "v_mfma_f32_32x32x4bf16_1k")
    assert info.mnemonic == "v_mfma_f32_32x32x4_2b_bf16" and info.blocks == 2
    assert mf.mfma_info("gfx950", "v_mfma_f32_32x32x1f32").mnemonic == (
        "v_mfma_f32_32x32x1_2b_f32")


# --------------------------------------------------------------------------- layouts


@pytest.mark.parametrize("case", ALL, ids=_ids)
def test_layout_matches_calculator_equations(case: tuple[str, str]) -> None:
    t, m = case
    info = mf.mfma_info(t, m)
    codes = range(5) if info.a_type == "f8f6f4" else [None]
    for code in codes:
        lay = mf.mfma_layout(t, m, a_format=code, b_format=code)
        for which, op in (("a", lay.a), ("b", lay.b)):
            for b, r, c in np.ndindex(op.shape):
                if which == "b":
                    lane, elem = ref_input(info, "b", op.width, b, c, r)
                elif info.sparse:  # stored element c: the (c % 2)-th value of group c // 2
                    lane, dense = ref_input(info, "a", op.width, b, r, 4 * (c // 2))
                    elem = (dense // 4) * 2 + c % 2
                else:
                    lane, elem = ref_input(info, "a", op.width, b, r, c)
                assert (op.lane[b, r, c], op.bit[b, r, c]) == (lane, elem * op.width), (
                    which, b, r, c)
        for b, i, j in np.ndindex(lay.c.shape):
            lane, slot = ref_output(info, b, i, j)
            assert (lay.c.lane[b, i, j], lay.c.bit[b, i, j]) == (lane, slot * lay.c.width)
        # every register slot of every operand holds exactly one element
        for op in (lay.a, lay.b, lay.c):
            emap = op.element_map()
            used = emap[..., 0] >= 0
            assert used.sum() == np.prod(op.shape)
            assert emap.shape[1] * op.width == op.nregs * 32 or op.width == 6


def _reg_lane(op: mf.OperandLayout, *index: int) -> tuple[int, int, int]:
    """(register, lane, low bit in register) of one element."""
    bit = int(op.bit[index])
    return bit // 32, int(op.lane[index]), bit % 32


def test_calculator_readme_examples() -> None:
    # CDNA2 examples of the calculator README; the CDNA3 instructions with the same shape
    # use the same gfx9 equations.
    lay = mf.mfma_layout("gfx942", "v_mfma_f32_4x4x4_16b_f16")
    assert _reg_lane(lay.a, 4, 1, 2) == (1, 17, 0)  # "A[1][2].B4 = v1{17}.[15:0]"
    assert _reg_lane(lay.a, 4, 1, 3) == (1, 17, 16)  # "v1{17}.[31:16] = A[1][3].B4"
    assert _reg_lane(lay.c, 1, 3, 2) == (3, 6, 0)  # "D[3][2].B1 = Vdst_v3{6}"
    assert _reg_lane(lay.c, 8, 2, 1) == (2, 33, 0)  # "v2{33} = D[2][1].B8"
    # "... = Src0_v0{7}.[15:0]*Src1_v0{6}.[15:0] + ..." for D[3][2].B1:
    assert _reg_lane(lay.a, 1, 3, 0) == (0, 7, 0) and _reg_lane(lay.b, 1, 0, 2) == (0, 6, 0)
    f64 = mf.mfma_layout("gfx942", "v_mfma_f64_4x4x4_4b_f64").c  # README D table
    assert [int(f64.lane[b, i, j]) for b, i, j in [(0, 1, 0), (1, 0, 0), (3, 3, 3),
                                                  (2, 2, 1)]] == [16, 4, 63, 41]
    assert int(f64.bit.max()) == 0  # every element in v[1:0]
    # "CBSZ=2, ABID=2: all 4 blocks use the A values in lanes 32-47" (16x16 4-block bf16).
    bc = mf.mfma_layout("gfx942", "v_mfma_f32_16x16x4_4b_bf16", cbsz=2, abid=2)
    assert set(bc.a.lane.reshape(-1).tolist()) == set(range(32, 48))
    # "BLGP=2: blocks 0 and 1 receive the input originally sent to blocks 2 and 3".
    bl = mf.mfma_layout("gfx942", "v_mfma_f32_16x16x4_4b_bf16", blgp=2)
    assert bl.b.lane[0, 0, 5] == 32 + 5 and bl.b.lane[1, 1, 7] == 48 + 7
    # "BLGP=3: lane 16's data is put into lane 0".
    r3 = mf.mfma_layout("gfx942", "v_mfma_f32_32x32x8_f16", blgp=3)
    assert r3.b.lane[0, 0, 0] == 16
    # FP64 on CDNA3: "the middle bit of BLGP negates B"; B[k][j] sits in lane 16k + j.
    neg = mf.mfma_layout("gfx942", "v_mfma_f64_16x16x4_f64", blgp=6)
    assert (neg.a_negate, neg.b_negate, neg.c_negate) == (False, True, True)
    assert neg.b.lane[0, 2, 7] == 39
    # SMFMAC: "K[2][31] = v0{50}.[7:4]" and with --cbsz 0 --abid 3 "v0{50}.[31:28]".
    sp = mf.mfma_layout("gfx942", "v_smfmac_f32_16x16x32_f16")
    assert sp.idx.lane[0, 2, 15] == 50 and {int(sp.idx.bit[0, 2, c]) for c in (14, 15)} == {
        4, 6}
    sp3 = mf.mfma_layout("gfx942", "v_smfmac_f32_16x16x32_f16", abid=3)
    assert {int(sp3.idx.bit[0, 2, c]) for c in (14, 15)} == {28, 30}
    sp_c = mf.mfma_layout("gfx942", "v_smfmac_f32_16x16x32_f16", cbsz=1, abid=3)
    assert {int(sp_c.idx.bit[0, 2, c]) for c in (14, 15)} == {4, 6}  # ABID ignored


def test_blog_examples() -> None:
    # AMD, "Matrix Core Programming on AMD CDNA3 and CDNA4 architecture" (2025), section 5.
    lanes = np.arange(64)
    f32 = mf.mfma_layout("gfx942", "v_mfma_f32_32x32x2_f32")
    # 5.1: A + threadIdx/32 + 2*(threadIdx%32); B + threadIdx%32 + 32*(threadIdx/32)
    for lane in lanes:
        assert f32.a.lane[0, lane % 32, lane // 32] == lane
        assert f32.b.lane[0, lane // 32, lane % 32] == lane
        for i in range(4):
            for r in range(4):  # C[l%32 + (l/32)*4*32 + 32*r + i*32*8] = c_reg[i*4 + r]
                row = (lane // 32) * 4 + r + 8 * i
                assert _reg_lane(f32.c, 0, row, lane % 32) == (4 * i + r, lane, 0)
    f16 = mf.mfma_layout("gfx942", "v_mfma_f32_16x16x16_f16")  # 5.2
    for lane in lanes:
        for e in range(4):
            assert _reg_lane(f16.a, 0, lane % 16, 4 * (lane // 16) + e) == (
                e // 2, lane, 16 * (e % 2))
            assert _reg_lane(f16.b, 0, e + 4 * (lane // 16), lane % 16)[1] == lane
            assert _reg_lane(f16.c, 0, e + 4 * (lane // 16), lane % 16) == (e, lane, 0)
    for t in TARGETS:  # 5.3: a_reg = A + (l/32)*8 + (l%32)*16 as 8 bytes
        fp8 = mf.mfma_layout(t, "v_mfma_f32_32x32x16_fp8_fp8")
        for lane in lanes:
            for e in range(8):
                assert _reg_lane(fp8.a, 0, lane % 32, (lane // 32) * 8 + e) == (
                    e // 4, lane, 8 * (e % 4))
                assert _reg_lane(fp8.b, 0, e + (lane // 32) * 8, lane % 32) == (
                    e // 4, lane, 8 * (e % 4))
    name = "v_mfma_scale_f32_32x32x64_f8f6f4"
    s8 = mf.mfma_layout("gfx950", name)  # 5.4: a_reg[i*16+j] = A[l%32][(l/32)*16 + i*32 + j]
    s4 = mf.mfma_layout("gfx950", name, a_format="fp4", b_format="fp4")  # 5.5
    for lane in lanes:
        for i in range(2):
            for j in range(16):
                byte = i * 16 + j
                k = (lane // 32) * 16 + i * 32 + j
                assert _reg_lane(s8.a, 0, lane % 32, k) == (byte // 4, lane, 8 * (byte % 4))
                assert _reg_lane(s8.b, 0, k, lane % 32) == (byte // 4, lane, 8 * (byte % 4))
        for nib in range(32):  # fp4: nibble n of the lane holds k = 32*(l/32) + n
            k = 32 * (lane // 32) + nib
            assert _reg_lane(s4.a, 0, lane % 32, k) == (nib // 8, lane, 4 * (nib % 8))
            assert _reg_lane(s4.b, 0, k, lane % 32) == (nib // 8, lane, 4 * (nib % 8))
    assert (s8.a.nregs, s4.a.nregs) == (8, 4)
    s6 = mf.mfma_layout("gfx950", name, a_format="fp6", b_format="bf6")
    assert s6.a.nregs == 6 and _reg_lane(s6.a, 0, 0, 5) == (0, 0, 30)  # straddles v0/v1


# --------------------------------------------------------------------------- arithmetic


def run_dense(t: str, m: str, *, cbsz: int = 0, abid: int = 0, blgp: int = 0,
              a_code: int = 0, b_code: int = 0, seed: object = 0) -> None:
    """Random A/B/C through pack -> execute -> unpack against the float64 reference."""
    info = mf.mfma_info(t, m)
    rng = _rng(t, m, cbsz, abid, blgp, a_code, b_code, seed)
    fa, fb = input_formats(info, a_code, b_code)
    sa, sb, sc = matrix_shapes(info)
    a = random_operand(rng, fa, sa)
    b = random_operand(rng, fb, sb)
    c = c_values(rng, info, sc)
    f8 = info.a_type == "f8f6f4"
    ra = mf.pack_a(t, m, a, a_format=a_code if f8 else None)
    rb = mf.pack_b(t, m, b, b_format=b_code if f8 else None)
    rc = mf.pack_c(t, m, c)
    if f8:  # the register file hands over the full 8-dword operand
        ra = np.concatenate([ra, rng.integers(0, 2 ** 32, (WAVES, 64, 8 - ra.shape[2]),
                                              dtype=np.uint64).astype(np.uint32)], axis=2)
        rb = np.concatenate([rb, rng.integers(0, 2 ** 32, (WAVES, 64, 8 - rb.shape[2]),
                                              dtype=np.uint64).astype(np.uint32)], axis=2)
        cbsz, blgp = a_code, b_code
    scale_kw: dict = {}
    av = blocked(decode_values(a, fa), info)
    bv = blocked(decode_values(b, fb), info)
    cv = blocked(c.astype(np.float64) if info.out_type != "i32" else c.astype(np.int64), info)
    if info.scaled:
        kb = info.k // 32
        sa_codes = rng.integers(117, 138, (WAVES, info.m, kb))
        sb_codes = rng.integers(117, 138, (WAVES, kb, info.n))
        byte_a, byte_b = rng.integers(0, 4, 2)
        scale_kw = {
            "scale_a": scale_register(sa_codes, info.m, byte_a, rng, "a"),
            "scale_b": scale_register(sb_codes, info.n, byte_b, rng, "b"),
            "op_sel": (int(byte_a) & 1, int(byte_b) & 1),
            "op_sel_hi": (int(byte_a) >> 1, int(byte_b) >> 1)}
        av = av * np.repeat(np.exp2(sa_codes - 127.0), 32, axis=-1)[:, None]
        bv = bv * np.repeat(np.exp2(sb_codes - 127.0), 32, axis=-2)[:, None]
    if info.blocks > 1 and cbsz:
        group = 1 << cbsz  # README: block `abid` of each group of 2**cbsz replaces them all
        src = [(blk // group) * group + abid for blk in range(info.blocks)]
        av = av[:, src]
    if blgp and info.out_type != "f64" and info.a_type != "f8f6f4":
        bv = blgp_reference(info, rb, blgp, fb)
    if info.out_type == "f64" and blgp:
        av, bv, cv = (-av if blgp & 1 else av), (-bv if blgp & 2 else bv), (
            -cv if blgp & 4 else cv)
    d = mf.execute_mfma(t, m, ra, rb, rc, cbsz=cbsz, abid=abid, blgp=blgp, **scale_kw)
    assert d.shape == (WAVES, 64, info.c_regs) and d.dtype == np.uint32
    got = blocked(mf.unpack_d(t, m, d), info)
    acc, mag = reference(av, bv, cv, info.out_type)
    assert_close(got, acc, mag, info.out_type)


def scale_register(codes: np.ndarray, dim: int, byte: int, rng: np.random.Generator,
                   which: str) -> np.ndarray:
    """Scale VGPR built from the assumed layout (A: lane i + M*kb, B: lane j + N*kb), the
    other three bytes random so that a wrong byte select shows."""
    reg = rng.integers(0, 2 ** 32, (codes.shape[0], 64), dtype=np.uint64).astype(np.uint32)
    reg &= ~np.uint32(0xFF << (8 * int(byte)))
    for w in range(codes.shape[0]):
        if which == "a":
            for i, kb in np.ndindex(codes.shape[1:]):
                reg[w, i + dim * kb] |= np.uint32(int(codes[w, i, kb]) << (8 * int(byte)))
        else:
            for kb, j in np.ndindex(codes.shape[1:]):
                reg[w, j + dim * kb] |= np.uint32(int(codes[w, kb, j]) << (8 * int(byte)))
    return reg


def blgp_reference(info: mf.MfmaInfo, rb: np.ndarray, blgp: int, fmt: str) -> np.ndarray:
    """B values the instruction sees under BLGP: lane l takes lane blgp_source(l)'s data,
    read back through the reference (calculator) layout."""
    width = mf.mfma_layout(info.target, info.mnemonic).b.width
    perm = [blgp_source(lane, blgp) for lane in range(64)]
    moved = rb[:, perm]
    flat = moved.reshape(WAVES, -1).astype(np.uint64)
    out = np.zeros((WAVES, info.blocks, info.k, info.n),
                   dtype=np.int64 if fmt == "i8" else np.float64)
    for b, k, j in np.ndindex(info.blocks, info.k, info.n):
        lane, elem = ref_input(info, "b", width, b, j, k)
        bit = elem * width
        word = flat[:, lane * rb.shape[2] + bit // 32]
        code = (word >> np.uint64(bit % 32)) & np.uint64((1 << width) - 1)
        out[:, b, k, j] = decode_values(code, fmt)
    return out


@pytest.mark.parametrize("case", DENSE, ids=_ids)
def test_dense_mfma_against_numpy(case: tuple[str, str]) -> None:
    run_dense(*case)


@pytest.mark.parametrize("case", MULTI, ids=_ids)
def test_cbsz_abid_broadcast(case: tuple[str, str]) -> None:
    info = mf.mfma_info(*case)
    for cbsz in range(1, info.blocks.bit_length()):
        for abid in sorted({0, (1 << cbsz) - 1, (1 << cbsz) // 2}):
            run_dense(*case, cbsz=cbsz, abid=abid)


BLGP_CASES = [c for c in DENSE if mf.mfma_info(*c).a_type != "f8f6f4"
              and mf.mfma_info(*c).out_type != "f64"]


@pytest.mark.parametrize("case", BLGP_CASES, ids=_ids)
def test_blgp_lane_patterns(case: tuple[str, str]) -> None:
    blgps = range(1, 8) if "_16x16x4_f32" in case[1] or "4x4x4_16b" in case[1] else (
        (int(_rng(*case).integers(1, 8)),))
    for blgp in blgps:
        run_dense(*case, blgp=blgp)


@pytest.mark.parametrize("case", [c for c in DENSE if mf.mfma_info(*c).out_type == "f64"],
                         ids=_ids)
def test_f64_negate_bits(case: tuple[str, str]) -> None:
    for neg in range(1, 8):
        run_dense(*case, blgp=neg)


def test_f64_neg_argument_is_the_blgp_field() -> None:
    t, m = "gfx942", "v_mfma_f64_16x16x4_f64"
    rng = _rng("neg")
    ra = mf.pack_a(t, m, random_operand(rng, "f64", (16, 4)))
    rb = mf.pack_b(t, m, random_operand(rng, "f64", (4, 16)))
    rc = mf.pack_c(t, m, rng.standard_normal((16, 16)))
    for bits in ((1, 0, 1), (0, 1, 1), (1, 1, 0)):
        mask = bits[0] | bits[1] << 1 | bits[2] << 2
        np.testing.assert_array_equal(mf.execute_mfma(t, m, ra, rb, rc, neg=bits),
                                      mf.execute_mfma(t, m, ra, rb, rc, blgp=mask))
    with pytest.raises(ValueError, match="NEG"):
        mf.execute_mfma(t, "v_mfma_f32_16x16x16_f16", ra, rb, rc[..., :4], neg=1)


@pytest.mark.parametrize("case", F8F6F4, ids=_ids)
def test_f8f6f4_every_format_pair(case: tuple[str, str]) -> None:
    for a_code in range(5):
        for b_code in range(5):
            run_dense(*case, a_code=a_code, b_code=b_code)


def test_unscaled_f8f6f4_equals_scale_127() -> None:
    t, m = "gfx950", "v_mfma_f32_16x16x128_f8f6f4"
    rng = _rng("identity-scale")
    a = random_operand(rng, "e4m3fn", (1, 16, 128))
    b = random_operand(rng, "e2m1", (1, 128, 16))
    ra, rb = mf.pack_a(t, m, a), mf.pack_b(t, m, b, b_format=4)
    plain = mf.execute_mfma(t, m, ra, rb, None, blgp=4)
    one = np.full((1, 64), 0x7F7F7F7F, dtype=np.uint32)
    scaled = mf.execute_mfma(t, "v_mfma_scale_f32_16x16x128_f8f6f4", ra, rb, None, blgp=4,
                             scale_a=one, scale_b=one)
    np.testing.assert_array_equal(plain, scaled)
    nan = np.full((1, 64), 0xFF, dtype=np.uint32)  # E8M0 255 is NaN
    d = mf.execute_mfma(t, "v_mfma_scale_f32_16x16x128_f8f6f4", ra, rb, None, blgp=4,
                        scale_a=nan, scale_b=one)
    assert np.isnan(nm.bits_to_f32(d)).all()


# --------------------------------------------------------------------------- sparse


@pytest.mark.parametrize("case", SPARSE, ids=_ids)
def test_smfmac_dense_2_4_matrices(case: tuple[str, str]) -> None:
    t, m = case
    info = mf.mfma_info(t, m)
    rng = _rng(t, m, "sparse")
    fa, fb = input_formats(info)
    a = random_operand(rng, fa, (WAVES, info.m, info.k))
    # zero two (sometimes three or four) of every four K elements
    keep = np.argsort(rng.random((WAVES, info.m, info.k // 4, 4)), axis=-1) < 2
    keep &= rng.random(keep.shape) < 0.9
    a = np.where(keep.reshape(a.shape), a, np.zeros((), a.dtype))
    b = random_operand(rng, fb, (WAVES, info.k, info.n))
    c = c_values(rng, info, (WAVES, info.m, info.n))
    for cbsz, abid in ((0, 0), (0, 1), (1, 1)):
        ra, ridx = mf.pack_sparse_a(t, m, a, cbsz=cbsz, abid=abid)
        d = mf.execute_mfma(t, m, ra, mf.pack_b(t, m, b), mf.pack_c(t, m, c), cbsz=cbsz,
                            abid=abid, sparse_idx=ridx)
        cv = c.astype(np.float64) if info.out_type != "i32" else c.astype(np.int64)
        acc, mag = reference(decode_values(a, fa), decode_values(b, fb), cv, info.out_type)
        assert_close(mf.unpack_d(t, m, d), acc, mag, info.out_type)


@pytest.mark.parametrize("case", SPARSE, ids=_ids)
def test_smfmac_raw_registers_with_any_indices(case: tuple[str, str]) -> None:
    """Random stored values and random 2-bit indices (repeats included): every stored value
    multiplies the B row its index names (calculator README, SMFMAC compression index)."""
    t, m = case
    info = mf.mfma_info(t, m)
    rng = _rng(t, m, "raw")
    fa, fb = input_formats(info)
    lay = mf.mfma_layout(t, m)
    width = lay.a.width
    stored = random_operand(rng, fa, (WAVES, info.m, info.k // 2))
    index = rng.integers(0, 4, (WAVES, info.m, info.k // 2))
    ra = np.zeros((WAVES, 64, info.a_regs), dtype=np.uint64)
    ridx = np.zeros((WAVES, 64), dtype=np.uint64)
    raw = stored.view(np.uint8 if width == 8 else np.uint16).astype(np.uint64)
    for i, cs in np.ndindex(info.m, info.k // 2):
        lane, dense = ref_input(info, "a", width, 0, i, 4 * (cs // 2))
        slot = (dense // 4) * 2 + cs % 2
        bit = slot * width
        ra[:, lane, bit // 32] |= raw[:, i, cs] << np.uint64(bit % 32)
        ridx[:, lane] |= index[:, i, cs].astype(np.uint64) << np.uint64(2 * slot)
    b = random_operand(rng, fb, (WAVES, info.k, info.n))
    c = c_values(rng, info, (WAVES, info.m, info.n))
    d = mf.execute_mfma(t, m, ra.astype(np.uint32), mf.pack_b(t, m, b), mf.pack_c(t, m, c),
                        sparse_idx=ridx.astype(np.uint32))
    sv, bv = decode_values(stored, fa), decode_values(b, fb)
    acc = c.astype(np.float64) if info.out_type != "i32" else c.astype(np.int64)
    mag = np.abs(acc).astype(np.float64)
    for cs in range(info.k // 2):
        rows = 4 * (cs // 2) + index[:, :, cs]  # (waves, M) B row per stored value
        brow = np.take_along_axis(bv, rows[:, :, None], axis=1)  # (waves, M, N)
        prod = sv[:, :, cs, None] * brow
        acc = acc + prod
        mag = mag + np.abs(prod)
    assert_close(mf.unpack_d(t, m, d), acc, mag, info.out_type)


# --------------------------------------------------------------------------- numerics


def test_sum_is_rounded_once() -> None:
    # 1 + 15 * 2**-24: one rounding of the exact sum gives 1 + 2**-20 (7.5 ulps ties to 8);
    # adding the products one by one in f32 would stay at 1.0 (each 2**-24 ties to even).
    t, m = "gfx942", "v_mfma_f32_16x16x16_f16"
    a = np.zeros((16, 16), dtype=np.float16)
    b = np.zeros((16, 16), dtype=np.float16)
    a[0, 0], b[0, 0] = 1.0, 1.0
    a[0, 1:], b[1:, 0] = 2.0 ** -12, 2.0 ** -12
    d = mf.unpack_d(t, m, mf.execute_mfma(t, m, mf.pack_a(t, m, a), mf.pack_b(t, m, b), None))
    assert float(d[0, 0, 0]) == 1.0 + 2.0 ** -20


def test_specials_and_denormals() -> None:
    t, m = "gfx942", "v_mfma_f32_32x32x8_f16"
    a = np.ones((32, 8), dtype=np.float16)
    b = np.zeros((8, 32), dtype=np.float16)
    a[0, 0] = np.inf
    a[1, 0], b[0, 1] = np.inf, 1.0
    a[2, 0], a[2, 1], b[1, 2] = np.inf, -np.inf, 1.0
    b[0, 2] = 1.0
    a[3, 0] = np.nan
    c = np.zeros((32, 32), dtype=np.float32)
    c[4, 4] = 2.0 ** -140  # f32 denormal accumulator survives
    d = mf.unpack_d(t, m, mf.execute_mfma(t, m, mf.pack_a(t, m, a), mf.pack_b(t, m, b),
                                          mf.pack_c(t, m, c)))[0]
    assert np.isnan(d[0, 0])  # inf * 0
    assert d[1, 1] == np.inf
    assert np.isnan(d[2, 2])  # inf - inf
    assert np.isnan(d[3, 0])
    assert d[4, 4] == np.float32(2.0 ** -140)
    f32 = "v_mfma_f32_16x16x4_f32"  # tiny products stay denormal, huge ones overflow
    a32 = np.zeros((16, 4), dtype=np.float32)
    b32 = np.zeros((4, 16), dtype=np.float32)
    a32[0, 0], b32[0, 0] = 2.0 ** -70, 2.0 ** -70
    a32[1, 0], b32[0, 1] = 2.0 ** 100, -(2.0 ** 100)
    d32 = mf.unpack_d(t, f32, mf.execute_mfma(t, f32, mf.pack_a(t, f32, a32),
                                              mf.pack_b(t, f32, b32), None))[0]
    assert d32[0, 0] == np.float32(2.0 ** -140) and d32[1, 1] == -np.inf


def test_integer_mfma_wraps() -> None:
    t, m = "gfx950", "v_mfma_i32_16x16x64_i8"
    a = np.full((16, 64), -128, dtype=np.int8)
    b = np.full((64, 16), -128, dtype=np.int8)
    c = np.full((16, 16), 2 ** 31 - 1, dtype=np.int32)
    d = mf.unpack_d(t, m, mf.execute_mfma(t, m, mf.pack_a(t, m, a), mf.pack_b(t, m, b),
                                          mf.pack_c(t, m, c)))
    assert (d == np.int32(-(2 ** 31) + 64 * 16384 - 1)).all()


def test_xf32_input_rounding_assumption() -> None:
    # Documented assumption: xf32 inputs are f32 rounded to nearest even to 10 mantissa bits.
    t, m = "gfx942", "v_mfma_f32_16x16x8_xf32"
    a = np.zeros((16, 8), dtype=np.float32)
    b = np.zeros((8, 16), dtype=np.float32)
    a[0, 0] = np.float32(1.0 + 2.0 ** -11 + 2.0 ** -20)  # above the tie: rounds up
    a[1, 0] = np.float32(1.0 + 2.0 ** -11)  # tie: stays at 1.0 (even)
    b[0, :] = 1.0
    d = mf.unpack_d(t, m, mf.execute_mfma(t, m, mf.pack_a(t, m, a), mf.pack_b(t, m, b), None))
    assert float(d[0, 0, 0]) == 1.0 + 2.0 ** -10 and float(d[0, 1, 0]) == 1.0


# --------------------------------------------------------------------------- API


@pytest.mark.parametrize("case", ALL, ids=_ids)
def test_pack_c_unpack_d_round_trip(case: tuple[str, str]) -> None:
    info = mf.mfma_info(*case)
    c = c_values(_rng(*case, "c"), info, matrix_shapes(info, 3)[2])
    regs = mf.pack_c(*case, c)
    assert regs.shape == (3, 64, info.c_regs)
    np.testing.assert_array_equal(mf.unpack_d(*case, regs), c)


def test_single_wave_operands_and_errors() -> None:
    t, m = "gfx942", "v_mfma_f32_16x16x16_bf16"
    rng = _rng("api")
    a = random_operand(rng, "bf16", (16, 16))
    b = random_operand(rng, "bf16", (16, 16))
    ra, rb = mf.pack_a(t, m, a)[0], mf.pack_b(t, m, b)[0]
    d = mf.execute_mfma(t, m, ra, rb, np.zeros((64, 4), dtype=np.uint32))
    assert d.shape == (64, 4)
    with pytest.raises(ValueError, match="not an MFMA"):
        mf.execute_mfma(t, "v_add_f32", ra, rb, None)
    with pytest.raises(ValueError, match="did you mean"):
        mf.mfma_info(t, "v_mfma_f32_16x16x16_bf17")
    with pytest.raises(ValueError, match=r"operand B \(src1\)"):
        mf.execute_mfma(t, m, ra, rb[:, :1], None)
    with pytest.raises(ValueError, match="cbsz"):
        mf.execute_mfma(t, m, ra, rb, None, cbsz=1)
    with pytest.raises(ValueError, match="abid"):
        mf.execute_mfma(t, "v_mfma_f32_16x16x4_4b_f16", ra, rb, None, cbsz=1, abid=2)
    with pytest.raises(ValueError, match="BLGP"):
        mf.execute_mfma(t, "v_smfmac_f32_16x16x32_f16", ra, np.zeros((64, 4), np.uint32),
                        None, blgp=1, sparse_idx=np.zeros(64, np.uint32))
    with pytest.raises(ValueError, match="sparse_idx"):
        mf.execute_mfma(t, "v_smfmac_f32_16x16x32_f16", ra, np.zeros((64, 4), np.uint32),
                        None)
    with pytest.raises(ValueError, match="scale"):
        mf.execute_mfma("gfx950", "v_mfma_scale_f32_16x16x128_f8f6f4",
                        np.zeros((64, 8), np.uint32), np.zeros((64, 8), np.uint32), None)
    with pytest.raises(ValueError, match="format code"):
        mf.mfma_layout("gfx950", "v_mfma_f32_16x16x128_f8f6f4", cbsz=5)
    with pytest.raises(ValueError, match="2:4"):
        mf.pack_sparse_a(t, "v_smfmac_f32_16x16x32_f16", np.ones((16, 32), np.float16))
    with pytest.raises(ValueError, match="shaped"):
        mf.pack_a(t, m, np.zeros((16, 8), np.float16))


def test_pack_scale_places_bytes() -> None:
    t, m = "gfx950", "v_mfma_scale_f32_32x32x64_f8f6f4"
    codes = np.arange(64).reshape(32, 2) + 100
    reg = mf.pack_scale(t, m, "a", codes, byte=2)
    assert reg.shape == (1, 64)
    assert int(reg[0, 5 + 32]) == (int(codes[5, 1]) << 16)  # lane i + M*kb
    regb = mf.pack_scale(t, m, "b", codes.reshape(2, 32), byte=1)
    assert int(regb[0, 7 + 32]) == (int(codes.reshape(2, 32)[1, 7]) << 8)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_word_fast_paths_match_the_bit_level_gather_and_scatter(target, monkeypatch):
    """The permutation/narrow-word paths of _gather/_scatter give the bit-level results."""
    rng = np.random.default_rng(7)
    names = sorted({m for t, m in DENSE if t == target})
    for name in names:
        lay = mf.mfma_layout(target, name)
        for op in (lay.a, lay.b, lay.c):
            regs = rng.integers(0, 2 ** 32, (3, 64, op.nregs), dtype=np.uint64).astype(
                np.uint32)
            codes = rng.integers(0, 2 ** min(op.width, 63), (3, *op.lane.shape),
                                 dtype=np.uint64)
            fast = mf._gather(regs, op), mf._scatter(codes, op)
            with monkeypatch.context() as mp:
                mp.setattr(mf, "_aligned_index", lambda *_: None)
                mp.setattr(mf, "_word_permutation", lambda *_: None)
                slow = mf._gather(regs, op), mf._scatter(codes, op)
            np.testing.assert_array_equal(fast[0], slow[0], err_msg=f"{name} {op.role}")
            np.testing.assert_array_equal(fast[1], slow[1], err_msg=f"{name} {op.role}")
