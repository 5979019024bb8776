"""Emulator packed 16-bit integer math, dot products, mixed-precision FMA and misc VALU ops."""

from __future__ import annotations

import numpy as np
from test_emu_asm import f32, u64, vrun

rng = np.random.default_rng(21)
A = rng.integers(0, 2 ** 32, 64, dtype=np.uint32)
B = rng.integers(0, 2 ** 32, 64, dtype=np.uint32)
C = rng.integers(0, 2 ** 32, 64, dtype=np.uint32)


def halves(x: np.ndarray, signed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = (x & 0xFFFF).astype(np.uint16), (x >> 16).astype(np.uint16)
    if signed:
        return lo.view(np.int16).astype(np.int64), hi.view(np.int16).astype(np.int64)
    return lo.astype(np.int64), hi.astype(np.int64)


def pack(lo, hi) -> np.ndarray:
    return ((np.asarray(lo, np.int64) & 0xFFFF) | ((np.asarray(hi, np.int64) & 0xFFFF) << 16)
            ).astype(np.uint32)


def test_packed_int16_ops_with_op_sel():
    out = vrun("v_pk_add_u16 v3, v1, v2\nv_pk_mul_lo_u16 v4, v1, v2\n"
               "v_pk_max_i16 v5, v1, v2\nv_pk_lshlrev_b16 v6, v1, v2\n"
               "v_pk_sub_i16 v7, v1, v2 op_sel:[1,0] op_sel_hi:[0,1]\n"
               "v_pk_add_u16 v8, v1, v2 clamp",
               {"v1": A, "v2": B}, ("v3", "v4", "v5", "v6", "v7", "v8"))
    al, ah = halves(A)
    bl, bh = halves(B)
    asl, ash = halves(A, True)
    bsl, bsh = halves(B, True)
    assert np.array_equal(out["v3"], pack(al + bl, ah + bh))
    assert np.array_equal(out["v4"], pack(al * bl, ah * bh))
    assert np.array_equal(out["v5"], pack(np.maximum(asl, bsl), np.maximum(ash, bsh)))
    assert np.array_equal(out["v6"], pack(bl << (al & 15), bh << (ah & 15)))
    # op_sel [1,0]: low result uses a.hi and b.lo; op_sel_hi [0,1]: high uses a.lo and b.hi.
    assert np.array_equal(out["v7"], pack(ash - bsl, asl - bsh))
    assert np.array_equal(out["v8"], pack(np.minimum(al + bl, 0xFFFF), np.minimum(ah + bh,
                                                                                   0xFFFF)))


def test_integer_dot_products():
    out = vrun("v_dot4_i32_i8 v4, v1, v2, v3\nv_dot2_i32_i16 v5, v1, v2, v3\n"
               "v_dot8_u32_u4 v6, v1, v2, v3\nv_dot4_u32_u8 v7, v1, v2, v3",
               {"v1": A, "v2": B, "v3": C}, ("v4", "v5", "v6", "v7"))
    ab = A.view(np.uint8).reshape(64, 4)
    bb = B.view(np.uint8).reshape(64, 4)
    c = C.view(np.int32).astype(np.int64)
    d4 = (ab.view(np.int8).astype(np.int64) * bb.view(np.int8)).sum(1) + c
    assert np.array_equal(out["v4"], (d4 & 0xFFFFFFFF).astype(np.uint32))
    ah = A.view(np.int16).reshape(64, 2).astype(np.int64)
    bh = B.view(np.int16).reshape(64, 2).astype(np.int64)
    assert np.array_equal(out["v5"], (((ah * bh).sum(1) + c) & 0xFFFFFFFF).astype(np.uint32))
    nib = lambda x: np.stack([(x >> (4 * k)) & 15 for k in range(8)], 1).astype(np.int64)
    d8 = (nib(A) * nib(B)).sum(1) + C.astype(np.int64)
    assert np.array_equal(out["v6"], (d8 & 0xFFFFFFFF).astype(np.uint32))
    du = (ab.astype(np.int64) * bb).sum(1) + C.astype(np.int64)
    assert np.array_equal(out["v7"], (du & 0xFFFFFFFF).astype(np.uint32))


def test_fma_mix_takes_f16_or_f32_operands():
    x = rng.normal(size=64).astype(np.float32)
    h = rng.normal(size=(64, 2)).astype(np.float16)
    hw = h.view(np.uint32).reshape(64)
    # op_sel_hi selects f16 for a source; op_sel then picks its half. src0 = h.hi (f16),
    # src1 = x (f32), src2 = h.lo (f16).
    out = vrun("v_fma_mix_f32 v4, v1, v2, v1 op_sel:[1,0,0] op_sel_hi:[1,0,1]",
               {"v1": hw, "v2": x}, ("v4",))
    want = (h[:, 1].astype(np.float64) * x + h[:, 0]).astype(np.float32)
    np.testing.assert_allclose(f32(out["v4"]), want, rtol=1e-7, atol=1e-7)


def test_mbcnt_bfm_and_pack_conversions():
    x = np.array([1.5, -2.25, 70000.0, np.nan] * 16, np.float32)
    out = vrun("v_mbcnt_lo_u32_b32 v3, -1, 0\nv_mbcnt_hi_u32_b32 v3, -1, v3\n"
               "v_bfm_b32 v4, 5, 3\nv_cvt_pkrtz_f16_f32 v5, v1, v1\n"
               "v_cvt_pknorm_i16_f32 v6, v7, v8\nv_lshl_add_u64 v[10:11], v[12:13], 3, v[12:13]",
               {"v1": x, "v7": np.float32(0.5), "v8": np.float32(-2.0),
                "v[12:13]": np.arange(64, dtype=np.uint64) << np.uint64(33)},
               ("v3", "v4", "v5", "v6", "v[10:11]"))
    assert np.array_equal(out["v3"], np.arange(64))
    assert (out["v4"] == 0b11111000).all()
    rtz = out["v5"].view(np.uint16).reshape(64, 2).view(np.float16)
    assert rtz[0, 0] == 1.5 and rtz[1, 1] == -2.25
    assert rtz[2, 0] == np.float16(65504)          # RTZ: overflow saturates to max finite
    assert np.isnan(rtz[3, 0])
    assert (out["v6"] == (np.uint32(0x8001) << 16 | 16384)).all()
    base = np.arange(64, dtype=np.uint64) << np.uint64(33)
    assert np.array_equal(u64(out["v[10:11]"]), base * np.uint64(9))


def test_dpp_on_vop2_with_masks_and_bound_ctrl():
    x = np.arange(64, dtype=np.uint32) + 100
    y = np.full(64, 1000, np.uint32)
    out = vrun("v_mov_b32 v3, 7\ns_nop 1\n"
               "v_add_u32_dpp v3, v1, v2 row_shr:1 row_mask:0xf bank_mask:0x5 bound_ctrl:1",
               {"v1": x, "v2": y}, ("v3",))
    for lane in range(64):
        bank = (lane % 16) // 4
        if not (0x5 >> bank) & 1:
            assert out["v3"][lane] == 7
        elif lane % 16 == 0:
            assert out["v3"][lane] == 1000           # bound_ctrl: invalid source reads 0
        else:
            assert out["v3"][lane] == x[lane - 1] + 1000
