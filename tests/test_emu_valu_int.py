"""Emulator VALU integer, bit, compare and carry semantics against NumPy references."""

from __future__ import annotations

import numpy as np
import pytest
from test_emu_asm import f32, u64, vrun

rng = np.random.default_rng(11)
EDGE = np.array([0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFF, 0x10000, 31, 32, 33,
                 0x12345678, 0x80000001, 0xFFFFFFFE, 5, 64], np.uint32)
A = np.concatenate([EDGE, EDGE[::-1], rng.integers(0, 2 ** 32, 32, dtype=np.uint32)])
B = np.concatenate([EDGE[::-1], EDGE, rng.integers(0, 2 ** 32, 32, dtype=np.uint32)])
C = rng.integers(0, 2 ** 32, 64, dtype=np.uint32)
IA = A.view(np.int32)
J = B.view(np.int32)
M = np.uint64(0xFFFFFFFF)


def w(x) -> np.ndarray:
    """Wrap to uint32."""
    return (np.asarray(x, np.int64) & 0xFFFFFFFF).astype(np.uint32)


@pytest.mark.parametrize(("asm", "ref"), [
    ("v_add_u32 v3, v1, v2", lambda: w(A.astype(np.int64) + B)),
    ("v_sub_u32 v3, v1, v2", lambda: w(A.astype(np.int64) - B)),
    ("v_subrev_u32 v3, v1, v2", lambda: w(B.astype(np.int64) - A)),
    ("v_mul_lo_u32 v3, v1, v2",
     lambda: ((A.astype(np.uint64) * B) & M).astype(np.uint32)),
    ("v_mul_hi_u32 v3, v1, v2", lambda: ((A.astype(np.uint64) * B) >> 32).astype(np.uint32)),
    ("v_mul_hi_i32 v3, v1, v2",
     lambda: w((IA.astype(object) * J.astype(object) >> 32).astype(np.int64))),
    ("v_mul_u32_u24 v3, v1, v2", lambda: w((A & 0xFFFFFF).astype(np.int64) * (B & 0xFFFFFF))),
    ("v_lshlrev_b32 v3, v1, v2", lambda: w(B.astype(np.uint64) << (A & 31).astype(np.uint64))),
    ("v_lshrrev_b32 v3, v1, v2", lambda: B >> (A & 31)),
    ("v_ashrrev_i32 v3, v1, v2", lambda: (J >> (A & 31).astype(np.int32)).view(np.uint32)),
    ("v_and_b32 v3, v1, v2", lambda: A & B),
    ("v_or_b32 v3, v1, v2", lambda: A | B),
    ("v_xor_b32 v3, v1, v2", lambda: A ^ B),
    ("v_not_b32 v3, v1", lambda: ~A),
    ("v_min_i32 v3, v1, v2", lambda: np.minimum(IA, J).view(np.uint32)),
    ("v_max_u32 v3, v1, v2", lambda: np.maximum(A, B)),
    ("v_bfrev_b32 v3, v1",
     lambda: np.array([int(f"{x:032b}"[::-1], 2) for x in A], np.uint32)),
    ("v_ffbh_u32 v3, v1",
     lambda: np.array([31 - x.bit_length() + 1 if x else 0xFFFFFFFF for x in map(int, A)],
                      np.uint32)),
    ("v_ffbl_b32 v3, v1",
     lambda: np.array([(x & -x).bit_length() - 1 if x else 0xFFFFFFFF for x in map(int, A)],
                      np.uint32)),
    ("v_bcnt_u32_b32 v3, v1, v2",
     lambda: w(np.array([bin(int(x)).count("1") for x in A]) + B.astype(np.int64))),
    ("v_add3_u32 v3, v1, v2, v4", lambda: w(A.astype(np.int64) + B + C)),
    ("v_lshl_add_u32 v3, v1, 3, v2", lambda: w((A.astype(np.int64) << 3) + B)),
    ("v_add_lshl_u32 v3, v1, v2, 4", lambda: w((A.astype(np.int64) + B) << 4)),
    ("v_lshl_or_b32 v3, v1, 5, v2", lambda: w(A.astype(np.int64) << 5) | B),
    ("v_and_or_b32 v3, v1, v2, v4", lambda: (A & B) | C),
    ("v_or3_b32 v3, v1, v2, v4", lambda: A | B | C),
    ("v_xad_u32 v3, v1, v2, v4", lambda: w((A ^ B).astype(np.int64) + C)),
    ("v_bfe_u32 v3, v1, v2, v4",
     lambda: np.array([(a >> (b & 31)) & ((1 << (c & 31)) - 1)
                       for a, b, c in zip(map(int, A), map(int, B), map(int, C))], np.uint32)),
    ("v_bfi_b32 v3, v1, v2, v4", lambda: (A & B) | (~A & C)),
    ("v_alignbit_b32 v3, v1, v2, v4",
     lambda: (((A.astype(np.uint64) << 32) | B) >> (C & 31).astype(np.uint64)).astype(
         np.uint64).__and__(M).astype(np.uint32)),
    ("v_med3_i32 v3, v1, v2, v4",
     lambda: np.median(np.stack([IA, J, C.view(np.int32)]), axis=0).astype(np.int32).view(
         np.uint32)),
    ("v_sad_u32 v3, v1, v2, v4",
     lambda: w(np.abs(A.astype(np.int64) - B) + C)),
])
def test_int_ops(asm, ref):
    out = vrun(asm, {"v1": A, "v2": B, "v4": C}, ("v3",))
    assert np.array_equal(out["v3"], ref()), asm


def test_bfe_i32_sign_extends_and_perm_selects_bytes():
    a = np.full(64, 0x00F0_0000, np.uint32)
    out = vrun("v_bfe_i32 v3, v1, 20, 4\nv_perm_b32 v4, v1, v2, v5",
               {"v1": np.full(64, 0x11223344, np.uint32), "v2": np.full(64, 0x55667788,
                                                                       np.uint32),
                "v5": np.full(64, 0x0C0D0704, np.uint32)}, ("v3", "v4"))
    del a
    assert out["v3"][0] == 0x2 or out["v3"][0] == 0x2   # bits 23:20 of 0x11223344 = 0x2
    # perm: selectors 4 -> byte0 of src0 (0x44), 7 -> byte3 of src0 (0x11), 0x0D -> 0xFF,
    # 0x0C -> 0x00 (bytes are little-endian in {src0, src1}).
    assert out["v4"][0] == 0x00FF1144
    sext = vrun("v_bfe_i32 v3, v1, 4, 4", {"v1": np.full(64, 0xF0, np.uint32)}, ("v3",))
    assert sext["v3"][0] == 0xFFFFFFFF


def test_saturating_and_clamped_int_adds():
    out = vrun("v_add_u32_e64 v3, v1, v2 clamp\nv_sub_u32_e64 v4, v1, v2 clamp\n"
               "v_add_i32 v5, v1, v2 clamp\nv_add_u16_e64 v6, v1, v2 clamp",
               {"v1": A, "v2": B}, ("v3", "v4", "v5", "v6"))
    assert np.array_equal(out["v3"], np.minimum(A.astype(np.int64) + B, 0xFFFFFFFF))
    assert np.array_equal(out["v4"], np.maximum(A.astype(np.int64) - B, 0))
    assert np.array_equal(out["v5"].view(np.int32),
                          np.clip(IA.astype(np.int64) + J, -2 ** 31, 2 ** 31 - 1))
    assert np.array_equal(out["v6"] & 0xFFFF,
                          np.minimum((A & 0xFFFF).astype(np.int64) + (B & 0xFFFF), 0xFFFF))


def test_carry_chain_adds_64_bit_values():
    x = np.concatenate([np.array([2 ** 64 - 1, 2 ** 32 - 1, 0, 1], np.uint64),
                        rng.integers(0, 2 ** 63, 60, dtype=np.uint64) * 2])
    y = np.concatenate([np.array([1, 1, 0, 2 ** 64 - 1], np.uint64),
                        rng.integers(0, 2 ** 63, 60, dtype=np.uint64)])
    # A VALU-written VCC/SGPR read by the next VALU needs 2 wait states on CDNA3 (s_nop 1).
    body = ("v_add_co_u32 v6, vcc, v2, v4\ns_nop 1\nv_addc_co_u32 v7, vcc, v3, v5, vcc\n"
            "s_nop 1\nv_cndmask_b32 v8, 0, 1, vcc\n"
            "v_sub_co_u32 v10, s[4:5], v2, v4\ns_nop 1\n"
            "v_subb_co_u32 v11, s[4:5], v3, v5, s[4:5]\ns_nop 1\n"
            "v_cndmask_b32 v12, 0, 1, s[4:5]")
    out = vrun(body, {"v[2:3]": x, "v[4:5]": y}, ("v[6:7]", "v8", "v[10:11]", "v12"))
    with np.errstate(over="ignore"):
        assert np.array_equal(u64(out["v[6:7]"]), x + y)
        assert np.array_equal(u64(out["v[10:11]"]), x - y)
    carry = np.array([int(a) + int(b) >= 2 ** 64 for a, b in zip(x, y)])
    borrow = np.array([int(a) < int(b) for a, b in zip(x, y)])
    assert np.array_equal(out["v8"], carry.astype(np.uint32))
    assert np.array_equal(out["v12"], borrow.astype(np.uint32))


def test_mad_u64_u32_and_64_bit_shifts():
    body = ("v_mad_u64_u32 v[6:7], s[4:5], v1, v2, v[8:9]\ns_nop 1\n"
            "v_cndmask_b32 v10, 0, 1, s[4:5]\n"
            "v_lshlrev_b64 v[12:13], 7, v[8:9]\nv_ashrrev_i64 v[14:15], 9, v[8:9]")
    c64 = np.concatenate([np.array([2 ** 64 - 1] * 4, np.uint64),
                          rng.integers(0, 2 ** 64, 60, dtype=np.uint64)])
    out = vrun(body, {"v1": A, "v2": B, "v[8:9]": c64}, ("v[6:7]", "v10", "v[12:13]",
                                                          "v[14:15]"))
    full = [int(a) * int(b) + int(c) for a, b, c in zip(A, B, c64)]
    assert np.array_equal(u64(out["v[6:7]"]), np.array([v % 2 ** 64 for v in full], np.uint64))
    assert np.array_equal(out["v10"], np.array([v >= 2 ** 64 for v in full], np.uint32))
    assert np.array_equal(u64(out["v[12:13]"]), c64 << np.uint64(7))
    assert np.array_equal(u64(out["v[14:15]"]).view(np.int64), c64.view(np.int64) >> 9)


def test_compares_write_lane_masks_and_cmpx_writes_exec():
    x = rng.normal(size=64).astype(np.float32)
    x[:4] = [np.nan, 0.0, -0.0, np.inf]
    body = ("v_cmp_lt_f32 vcc, v1, 0\nv_cmp_u_f32 s[4:5], v1, v1\n"
            "v_cmp_neq_f32 s[6:7], v1, 0\nv_cmp_gt_i32 s[8:9], v2, 5\n"
            "v_cmp_ne_u64 s[10:11], v[2:3], 0\n"
            "v_cmpx_ge_f32 s[12:13], v1, 0\nv_mov_b32 v5, 7")
    ints = np.arange(64, dtype=np.uint32)
    out = vrun(body, {"v1": x, "v[2:3]": np.stack([ints, np.zeros(64, np.uint32)], 1)},
               ("vcc", "s[4:5]", "s[6:7]", "s[8:9]", "s[10:11]", "exec", "s[12:13]", "v5"))

    def mask(bits) -> int:
        return int(sum(1 << i for i, b in enumerate(bits) if b))

    def got(name) -> int:
        lo, hi = out[name][0]
        return int(lo) | int(hi) << 32

    assert got("vcc") == mask(x < 0)
    assert got("s[4:5]") == mask(np.isnan(x))
    with np.errstate(invalid="ignore"):
        assert got("s[6:7]") == mask(~(x == 0))     # neq is unordered-true: NaN -> 1
    assert got("s[8:9]") == mask(ints.view(np.int32) > 5)
    assert got("s[10:11]") == mask(ints != 0)
    ge = mask(x >= 0)
    assert got("s[12:13]") == ge
    # The harness restores EXEC before the stores; v5 was only written where x >= 0.
    v5 = out["v5"]
    assert all((v5[i] == 7) == bool(ge >> i & 1) for i in range(64))


def test_cndmask_with_sgpr_mask_and_inline_constants():
    out = vrun("s_mov_b32 s4, 0x0F0F0F0F\ns_mov_b32 s5, 0xF0F0F0F0\nv_cndmask_b32_e64 v3, v1, -1.0, s[4:5]",
               {"v1": np.arange(64, dtype=np.uint32)}, ("v3",))
    m = 0xF0F0F0F00F0F0F0F
    for lane in range(64):
        want = 0xBF800000 if m >> lane & 1 else lane
        assert out["v3"][lane] == want


def test_16_bit_ops_and_op_sel_writes_preserve_other_half():
    a = rng.integers(0, 2 ** 32, 64, dtype=np.uint32)
    b = rng.integers(0, 2 ** 32, 64, dtype=np.uint32)
    out = vrun("v_mov_b32 v3, v2\nv_add_u16 v4, v1, v2\n"
               "v_mad_u16 v3, v1, v2, 0 op_sel:[1,1,0,1]\n"
               "v_mad_u32_u16 v5, v1, v2, v6 op_sel:[1,0,0,0]",
               {"v1": a, "v2": b, "v6": np.full(64, 100, np.uint32)}, ("v3", "v4", "v5"))
    assert np.array_equal(out["v4"], ((a & 0xFFFF) + (b & 0xFFFF)) & 0xFFFF)
    hi = ((a >> 16) * (b >> 16)) & 0xFFFF
    assert np.array_equal(out["v3"], (hi << 16) | (b & 0xFFFF))
    assert np.array_equal(out["v5"], (a >> 16) * (b & 0xFFFF) + 100)


def test_sdwa_selects_and_sign_extension():
    a = np.full(64, 0x80FF7F01, np.uint32)
    b = np.full(64, 0x00020003, np.uint32)
    out = vrun("v_mov_b32 v3, 0x11111111\n"
               "v_add_u32_sdwa v3, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE "
               "src0_sel:BYTE_3 src1_sel:WORD_1\n"
               "v_or_b32_sdwa v4, sext(v1), v7 dst_sel:DWORD dst_unused:UNUSED_PAD "
               "src0_sel:BYTE_3 src1_sel:DWORD\n"
               "v_cvt_f32_ubyte2 v5, v1",
               {"v1": a, "v2": b, "v7": np.zeros(64, np.uint32)}, ("v3", "v4", "v5"))
    assert out["v3"][0] == ((0x80 + 0x2) << 16) | 0x1111
    assert out["v4"][0] == 0xFFFFFF80
    assert f32(out["v5"])[0] == 255.0


def test_exec_masked_lanes_keep_their_values():
    out = vrun("v_mov_b32 v3, v1\ns_mov_b64 exec, 0xFF\nv_add_u32 v3, 1, v3",
               {"v1": np.arange(64, dtype=np.uint32)}, ("v3",))
    want = np.arange(64, dtype=np.uint32)
    want[:8] += 1
    assert np.array_equal(out["v3"], want)


def test_legacy_sad_and_cube_ops():
    a = rng.integers(0, 2 ** 32, 64, dtype=np.uint32)
    b = rng.integers(0, 2 ** 32, 64, dtype=np.uint32)
    c = rng.integers(0, 2 ** 16, (64, 2), dtype=np.uint32)
    out = vrun("v_qsad_pk_u16_u8 v[10:11], v[2:3], v4, v[6:7]\n"
               "v_mqsad_u32_u8 v[12:15], v[2:3], v4, v[16:19]\n"
               "v_mov_b32 v8, 0x11223344\nv_cvt_pkaccum_u8_f32 v8, v9, 2\n"
               "v_cubeid_f32 v20, v21, v22, v23",
               {"v[2:3]": np.stack([a, b], 1), "v4": b, "v[6:7]": c,
                "v[16:19]": np.zeros((64, 4), np.uint32), "v9": np.float32(200.4),
                "v21": np.float32(-3.0), "v22": np.float32(1.0), "v23": np.float32(2.0)},
               ("v[10:11]", "v[12:15]", "v8", "v20"))
    s0 = a.astype(np.uint64) | (b.astype(np.uint64) << np.uint64(32))

    def sad(x, y, acc, masked):
        t = int(acc)
        for k in range(4):
            p, q = (int(x) >> 8 * k) & 255, (int(y) >> 8 * k) & 255
            if not (masked and q == 0):
                t += abs(p - q)
        return t

    for ln in range(0, 64, 7):
        fields = [sad((int(s0[ln]) >> 8 * k) & 0xFFFFFFFF, b[ln],
                      (int(c[ln, k // 2]) >> 16 * (k % 2)) & 0xFFFF, False) & 0xFFFF
                  for k in range(4)]
        got = [int(out["v[10:11]"][ln, k // 2]) >> 16 * (k % 2) & 0xFFFF for k in range(4)]
        assert got == fields
        m = [sad((int(s0[ln]) >> 8 * k) & 0xFFFFFFFF, b[ln], 0, True) for k in range(4)]
        assert list(out["v[12:15]"][ln]) == m
    assert (out["v8"] == 0x11C83344).all()       # byte 2 <- round(200.4) = 200 = 0xC8
    assert (f32(out["v20"]) == 1.0).all()        # |x| = 3 is the major axis and x < 0
