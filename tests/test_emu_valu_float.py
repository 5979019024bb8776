"""Emulator VALU floating-point semantics against NumPy references (edge cases included)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from test_emu_asm import f32, f64, vrun

# 64 interesting f32 values: signed zeros, denormals, infinities, NaN, ordinary numbers.
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45,
                    1.1754942e-38, 3.4028235e38, -3.4028235e38, 0.5, 2.0, 1e30, -1e30],
                   np.float32)
rng = np.random.default_rng(7)
A = np.concatenate([SPECIAL, SPECIAL[::-1], rng.normal(size=32).astype(np.float32)])
B = np.concatenate([SPECIAL[::-1], SPECIAL, rng.normal(size=32).astype(np.float32) * 4])
C = rng.normal(size=64).astype(np.float32)


def same_f32(got: np.ndarray, want: np.ndarray) -> bool:
    """Bitwise equality, any NaN matching any NaN."""
    got = f32(got)
    want = np.asarray(want, np.float32)
    nan = np.isnan(want)
    return bool((np.isnan(got) == nan).all() and
                (got[~nan].view(np.uint32) == want[~nan].view(np.uint32)).all())


@pytest.mark.parametrize(("asm", "ref"), [
    ("v_add_f32 v3, v1, v2", lambda a, b: a + b),
    ("v_sub_f32 v3, v1, v2", lambda a, b: a - b),
    ("v_subrev_f32 v3, v1, v2", lambda a, b: b - a),
    ("v_mul_f32 v3, v1, v2", lambda a, b: a * b),
    ("v_add_f32_e64 v3, -v1, |v2|", lambda a, b: -a + np.abs(b)),
    ("v_mul_f32_e64 v3, v1, v2 mul:2", lambda a, b: a * b * np.float32(2)),
    ("v_mul_f32_e64 v3, v1, v2 div:2", lambda a, b: a * b * np.float32(0.5)),
])
def test_f32_arithmetic_is_ieee_with_denormals(asm, ref):
    out = vrun(asm, {"v1": A, "v2": B}, ("v3",))
    with np.errstate(all="ignore"):
        assert same_f32(out["v3"], ref(A, B))


def test_f32_denormals_flushed_when_mode_says_so():
    # float_denorm_mode_32 = 0: inputs and outputs flushed (sign preserved).
    a = np.array([1e-45, -1e-45, 1e-40, 1.0] * 16, np.float32)
    out = vrun("v_mul_f32 v3, v1, v2", {"v1": a, "v2": np.ones(64, np.float32)}, ("v3",),
               kd_fields={"float_denorm_mode_32": 0})
    got = f32(out["v3"])
    assert (got[:3] == 0).all() and np.signbit(got[1]) and got[3] == 1.0


def test_clamp_saturates_to_unit_interval_and_nan_to_zero():
    out = vrun("v_add_f32_e64 v3, v1, v2 clamp", {"v1": A, "v2": B}, ("v3",))
    with np.errstate(all="ignore"):
        want = np.clip(A + B, 0, 1)
    want = np.where(np.isnan(want), np.float32(0), want).astype(np.float32)
    assert np.array_equal(f32(out["v3"]), want)


def test_min_max_follow_ieee_minnum_maxnum():
    out = vrun("v_min_f32 v3, v1, v2\nv_max_f32 v4, v1, v2", {"v1": A, "v2": B}, ("v3", "v4"))
    assert same_f32(out["v3"], np.fmin(A, B))
    assert same_f32(out["v4"], np.fmax(A, B))
    # One NaN operand: the other operand wins.
    nan_lane = np.flatnonzero(np.isnan(A) & ~np.isnan(B))[0]
    assert f32(out["v3"])[nan_lane] == B[nan_lane]
    # -0 < +0.
    z = vrun("v_min_f32 v3, v1, v2\nv_max_f32 v4, v1, v2",
             {"v1": np.float32(0.0), "v2": np.float32(-0.0)}, ("v3", "v4"))
    assert np.signbit(f32(z["v3"])[0]) and not np.signbit(f32(z["v4"])[0])


def test_fma_is_fused_and_mac_accumulates():
    a = np.float32(1 + 2 ** -23)
    b = np.float32(1 - 2 ** -23)
    c = np.float32(-1)
    out = vrun("v_fma_f32 v4, v1, v2, v3\nv_mov_b32 v5, v3\nv_fmac_f32 v5, v1, v2",
               {"v1": a, "v2": b, "v3": c}, ("v4", "v5"))
    exact = np.float32(float(a) * float(b) + float(c))   # -2^-46, lost by an unfused a*b+c
    assert f32(out["v4"])[0] == exact and exact != a * b + c
    assert f32(out["v5"])[0] == exact


def test_transcendentals_are_close_and_handle_specials():
    x = np.abs(C) + np.float32(0.25)
    out = vrun("v_rcp_f32 v3, v1\nv_sqrt_f32 v4, v1\nv_log_f32 v5, v1\nv_exp_f32 v6, v1\n"
               "v_rsq_f32 v7, v1\nv_sin_f32 v8, v1\nv_cos_f32 v9, v1",
               {"v1": x}, ("v3", "v4", "v5", "v6", "v7", "v8", "v9"))
    np.testing.assert_allclose(f32(out["v3"]), 1 / x, rtol=2e-7)
    np.testing.assert_allclose(f32(out["v4"]), np.sqrt(x), rtol=2e-7)
    np.testing.assert_allclose(f32(out["v5"]), np.log2(x), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(f32(out["v6"]), np.exp2(x), rtol=2e-7)
    np.testing.assert_allclose(f32(out["v7"]), 1 / np.sqrt(x), rtol=2e-7)
    # v_sin/v_cos take revolutions: sin(2*pi*x).
    np.testing.assert_allclose(f32(out["v8"]), np.sin(2 * np.pi * x.astype(np.float64)),
                               atol=1e-6)
    np.testing.assert_allclose(f32(out["v9"]), np.cos(2 * np.pi * x.astype(np.float64)),
                               atol=1e-6)
    s = vrun("v_rcp_f32 v3, v1\nv_sqrt_f32 v4, v1\nv_log_f32 v5, v1",
             {"v1": np.array([0.0, -0.0, np.inf, -1.0] * 16, np.float32)}, ("v3", "v4", "v5"))
    rcp, sq, lg = f32(s["v3"]), f32(s["v4"]), f32(s["v5"])
    assert rcp[0] == np.inf and rcp[1] == -np.inf and rcp[2] == 0
    assert sq[0] == 0 and np.signbit(sq[1]) and sq[2] == np.inf and np.isnan(sq[3])
    assert lg[0] == -np.inf and lg[2] == np.inf and np.isnan(lg[3])


def test_f32_division_sequence_matches_numpy():
    # The standard LLVM fdiv expansion: div_scale / rcp / fma chain / div_fmas / div_fixup.
    body = """
v_div_scale_f32 v3, s[2:3], v2, v2, v1
v_div_scale_f32 v4, vcc, v1, v2, v1
v_rcp_f32 v5, v3
s_nop 0
v_fma_f32 v6, -v3, v5, 1.0
v_fma_f32 v5, v6, v5, v5
v_mul_f32 v6, v4, v5
v_fma_f32 v7, -v3, v6, v4
v_fma_f32 v6, v7, v5, v6
v_fma_f32 v3, -v3, v6, v4
v_div_fmas_f32 v3, v3, v5, v6
v_div_fixup_f32 v8, v3, v2, v1
"""
    a = np.concatenate([A[:32], rng.normal(size=32).astype(np.float32)])
    b = np.concatenate([B[:32], rng.normal(size=32).astype(np.float32)])
    b[40] = np.float32(1e-40)      # denormal divisor
    a[41], b[41] = np.float32(3e38), np.float32(1e-30)   # overflow
    out = vrun(body, {"v1": a, "v2": b}, ("v8",))
    with np.errstate(all="ignore"):
        assert same_f32(out["v8"], a / b)


def test_f64_arithmetic_and_division():
    a = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1.0, 3.0]),
                        rng.normal(size=56)])
    b = np.concatenate([np.array([1.0, -2.0, 2.0, np.inf, 1.0, 2.0, 3.0, 7.0]),
                        rng.normal(size=56)])
    body = """
v_add_f64 v[10:11], v[2:3], v[4:5]
v_mul_f64 v[12:13], v[2:3], v[4:5]
v_fma_f64 v[14:15], v[2:3], v[4:5], v[2:3]
v_max_f64 v[16:17], v[2:3], v[4:5]
v_div_scale_f64 v[20:21], s[2:3], v[4:5], v[4:5], v[2:3]
v_rcp_f64 v[22:23], v[20:21]
s_nop 0
v_fma_f64 v[24:25], -v[20:21], v[22:23], 1.0
v_fma_f64 v[22:23], v[22:23], v[24:25], v[22:23]
v_fma_f64 v[24:25], -v[20:21], v[22:23], 1.0
v_div_scale_f64 v[26:27], vcc, v[2:3], v[4:5], v[2:3]
v_fma_f64 v[22:23], v[22:23], v[24:25], v[22:23]
v_mul_f64 v[24:25], v[26:27], v[22:23]
v_fma_f64 v[20:21], -v[20:21], v[24:25], v[26:27]
s_nop 0
v_div_fmas_f64 v[20:21], v[20:21], v[22:23], v[24:25]
v_div_fixup_f64 v[30:31], v[20:21], v[4:5], v[2:3]
"""
    out = vrun(body, {"v[2:3]": a, "v[4:5]": b},
               ("v[10:11]", "v[12:13]", "v[14:15]", "v[16:17]", "v[30:31]"))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(f64(out["v[10:11]"]), a + b)
        np.testing.assert_array_equal(f64(out["v[12:13]"]), a * b)
        np.testing.assert_array_equal(f64(out["v[16:17]"]), np.fmax(a, b))
        np.testing.assert_array_equal(f64(out["v[30:31]"]), a / b)
        fma = f64(out["v[14:15]"])
        exact = [float(Fraction(x) * Fraction(y) + Fraction(x)) for x, y in zip(a[8:], b[8:])]
        np.testing.assert_array_equal(fma[8:], exact)


def test_f16_arithmetic_rounds_to_nearest_even_and_keeps_denormals():
    a = np.concatenate([np.array([0.0, -0.0, np.inf, np.nan, 6e-8, 65504.0, 1.0, 2049.0],
                                 np.float16), rng.normal(size=56).astype(np.float16)])
    b = np.concatenate([np.array([1.0, 0.0, -np.inf, 1.0, 6e-8, 65504.0, 2 ** -11, 1.0],
                                 np.float16), rng.normal(size=56).astype(np.float16)])
    out = vrun("v_add_f16 v3, v1, v2\nv_mul_f16 v4, v1, v2\nv_fma_f16 v5, v1, v2, v1",
               {"v1": a.view(np.uint16).astype(np.uint32),
                "v2": b.view(np.uint16).astype(np.uint32)}, ("v3", "v4", "v5"))
    with np.errstate(all="ignore"):
        for reg, want in (("v3", a + b), ("v4", a * b)):
            got = (out[reg] & 0xFFFF).astype(np.uint16).view(np.float16)
            nan = np.isnan(want)
            assert (np.isnan(got) == nan).all()
            assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))
        fma = (out["v5"] & 0xFFFF).astype(np.uint16).view(np.float16)
        want = (a.astype(np.float64) * b + a).astype(np.float16)
        ok = ~np.isnan(want)
        assert np.array_equal(fma[ok], want[ok])


def test_packed_f16_math_with_op_sel():
    a = rng.normal(size=(64, 2)).astype(np.float16)
    b = rng.normal(size=(64, 2)).astype(np.float16)
    wa = a.view(np.uint32).reshape(64)
    wb = b.view(np.uint32).reshape(64)
    out = vrun("v_pk_add_f16 v3, v1, v2\nv_pk_mul_f16 v4, v1, v2 op_sel:[1,0] op_sel_hi:[0,1]\n"
               "v_pk_fma_f16 v5, v1, v2, v1 neg_lo:[1,0,0]",
               {"v1": wa, "v2": wb}, ("v3", "v4", "v5"))
    add = out["v3"].view(np.float16).reshape(64, 2)
    assert np.array_equal(add, a + b)
    mul = out["v4"].view(np.float16).reshape(64, 2)
    # op_sel picks a.hi for the low half, op_sel_hi picks a.lo for the high half.
    assert np.array_equal(mul[:, 0], a[:, 1] * b[:, 0])
    assert np.array_equal(mul[:, 1], a[:, 0] * b[:, 1])
    fma = out["v5"].view(np.float16).reshape(64, 2)
    want_lo = (-a[:, 0].astype(np.float64) * b[:, 0] + a[:, 0]).astype(np.float16)
    want_hi = (a[:, 1].astype(np.float64) * b[:, 1] + a[:, 1]).astype(np.float16)
    assert np.array_equal(fma[:, 0], want_lo) and np.array_equal(fma[:, 1], want_hi)


def test_packed_f32_ops():
    a = rng.normal(size=(64, 2)).astype(np.float32)
    b = rng.normal(size=(64, 2)).astype(np.float32)
    out = vrun("v_pk_add_f32 v[6:7], v[2:3], v[4:5]\nv_pk_mul_f32 v[8:9], v[2:3], v[4:5]\n"
               "v_pk_fma_f32 v[10:11], v[2:3], v[4:5], v[2:3]",
               {"v[2:3]": a, "v[4:5]": b}, ("v[6:7]", "v[8:9]", "v[10:11]"))
    assert np.array_equal(f32(out["v[6:7]"]), a + b)
    assert np.array_equal(f32(out["v[8:9]"]), a * b)
    want = (a.astype(np.float64) * b + a).astype(np.float32)
    assert np.array_equal(f32(out["v[10:11]"]), want)


def test_conversions_saturate_and_round():
    x = np.array([1.5, 2.5, -1.5, -2.5, 3e9, -3e9, np.nan, np.inf, -np.inf, 0.49999997,
                  -0.0, 65519.0, 65520.0, 1e-8, 4294967296.0, -1.0] * 4, np.float32)
    out = vrun("v_cvt_i32_f32 v3, v1\nv_cvt_u32_f32 v4, v1\nv_cvt_f16_f32 v5, v1\n"
               "v_rndne_f32 v6, v1\nv_cvt_rpi_i32_f32 v7, v1\nv_cvt_flr_i32_f32 v8, v1",
               {"v1": x}, ("v3", "v4", "v5", "v6", "v7", "v8"))
    i32 = out["v3"].view(np.int32)
    assert list(i32[:10]) == [1, 2, -1, -2, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, 0]
    u32 = out["v4"]
    assert list(u32[:9]) == [1, 2, 0, 0, 3000000000, 0, 0, 2 ** 32 - 1, 0]
    assert u32[14] == 2 ** 32 - 1
    h = (out["v5"] & 0xFFFF).astype(np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    assert np.array_equal(h[~nan].view(np.uint16), want[~nan].view(np.uint16))
    assert h[11] == np.float16(65504) and h[12] == np.inf
    assert list(f32(out["v6"])[:4]) == [2.0, 2.0, -2.0, -2.0]
    assert list(out["v7"].view(np.int32)[:4]) == [2, 3, -1, -2]
    assert list(out["v8"].view(np.int32)[:4]) == [1, 2, -2, -3]


def test_bf16_conversion_and_dot():
    x = np.array([1.0, 1.00390625, 1.01171875, -3.5, np.inf, np.nan, 1e-40, 3.3895314e38]
                 * 8, np.float32)
    out = vrun("v_cvt_pk_bf16_f32 v3, v1, v2", {"v1": x, "v2": -x}, ("v3",), target="gfx950")
    lo = (out["v3"] & 0xFFFF).astype(np.uint32) << 16
    hi = out["v3"] & 0xFFFF0000
    bits = x.view(np.uint32)
    rne = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    ok = ~np.isnan(x)
    assert np.array_equal(lo[ok], rne[ok])
    assert np.isnan(f32(lo[~ok])).all() and np.isnan(f32(hi[~ok])).all()
    assert np.array_equal(f32(hi[ok]), -f32(rne[ok]))


def test_dot2_f32_f16():
    a = rng.normal(size=(64, 2)).astype(np.float16)
    b = rng.normal(size=(64, 2)).astype(np.float16)
    c = rng.normal(size=64).astype(np.float32)
    out = vrun("v_dot2_f32_f16 v4, v1, v2, v3",
               {"v1": a.view(np.uint32).reshape(64), "v2": b.view(np.uint32).reshape(64),
                "v3": c}, ("v4",))
    want = (a.astype(np.float64) * b).sum(axis=1) + c
    np.testing.assert_allclose(f32(out["v4"]), want, rtol=1e-6, atol=1e-6)


def test_fract_frexp_ldexp_and_class():
    x = np.concatenate([np.array([-1.25, 3.75, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45],
                                 np.float32), rng.normal(size=56).astype(np.float32) * 100])
    body = ("v_fract_f32 v3, v1\nv_frexp_mant_f32 v4, v1\nv_frexp_exp_i32_f32 v5, v1\n"
            "v_ldexp_f32 v6, v1, 3\nv_cmp_class_f32 vcc, v1, v2\ns_nop 1\n"
            "v_cndmask_b32 v7, 0, 1, vcc")
    cls = np.full(64, 0x3FF, np.uint32)   # every class: always true
    cls[:8] = [0x008, 0x100, 0x200, 0x200, 0x003, 0x020, 0x020, 0x080]
    out = vrun(body, {"v1": x, "v2": cls}, ("v3", "v4", "v5", "v6", "v7"))
    fr = f32(out["v3"])
    assert fr[0] == 0.75 and fr[1] == 0.75
    ok = np.isfinite(x)
    np.testing.assert_allclose(fr[8:], x[8:] - np.floor(x[8:]), atol=1e-5)
    m, e = np.frexp(x[ok])
    assert np.array_equal(f32(out["v4"])[ok], m.astype(np.float32))
    assert np.array_equal(out["v5"].view(np.int32)[ok], e)
    assert np.array_equal(f32(out["v6"])[ok], x[ok] * 8)
    assert list(out["v7"][:8]) == [1, 1, 1, 0, 1, 0, 1, 1]
    assert (out["v7"][8:] == 1).all()


def test_round_trip_f32_f64_and_ints():
    x = rng.normal(size=64) * 1e6
    out = vrun("v_cvt_f32_f64 v4, v[2:3]\nv_cvt_f64_f32 v[6:7], v4\nv_cvt_i32_f64 v8, v[2:3]\n"
               "v_cvt_f64_i32 v[10:11], v8\nv_trunc_f64 v[12:13], v[2:3]\n"
               "v_floor_f64 v[14:15], v[2:3]",
               {"v[2:3]": x}, ("v4", "v[6:7]", "v8", "v[10:11]", "v[12:13]", "v[14:15]"))
    assert np.array_equal(f32(out["v4"]), x.astype(np.float32))
    assert np.array_equal(f64(out["v[6:7]"]), x.astype(np.float32).astype(np.float64))
    assert np.array_equal(out["v8"].view(np.int32), np.trunc(x).astype(np.int32))
    assert np.array_equal(f64(out["v[10:11]"]), np.trunc(x))
    assert np.array_equal(f64(out["v[12:13]"]), np.trunc(x))
    assert np.array_equal(f64(out["v[14:15]"]), np.floor(x))
