"""Number formats of asterism.emu.numerics against references computed from first principles.

The references here use other methods than the implementation: values of codes from Python
fractions over (sign, exponent, mantissa) fields, rounding by searching the sorted list of
every representable value (ties by the parity of the candidates' codes), bf16 rounding by
the integer carry trick, packing by Python big-integer concatenation, and NumPy's own
float16 conversion as an independent f16 implementation.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from asterism.emu import numerics as nm

SMALL = [nm.E4M3FNUZ, nm.E5M2FNUZ, nm.E4M3FN, nm.E5M2, nm.E2M3, nm.E3M2, nm.E2M1]
RNG = np.random.default_rng(20240607)


# --------------------------------------------------------------------------- references


def ref_value(code: int, fmt: nm.FloatFormat) -> float:
    """Value of one code from its fields (Fraction arithmetic; specials by the spec)."""
    sign = -1 if code >> (fmt.bits - 1) & 1 else 1
    exp = (code >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    man = code & ((1 << fmt.man_bits) - 1)
    all_ones_exp = exp == (1 << fmt.exp_bits) - 1
    if fmt.kind == "fnuz" and code == 1 << (fmt.bits - 1):
        return float("nan")
    if fmt.kind == "ieee" and all_ones_exp:
        return sign * float("inf") if man == 0 else float("nan")
    if fmt.kind == "fn" and all_ones_exp and man == (1 << fmt.man_bits) - 1:
        return float("nan")
    if exp == 0:
        frac = Fraction(man, 1 << fmt.man_bits) * Fraction(2) ** (1 - fmt.bias)
    else:
        frac = (1 + Fraction(man, 1 << fmt.man_bits)) * Fraction(2) ** (exp - fmt.bias)
    return sign * float(frac)


def grid(fmt: nm.FloatFormat) -> tuple[np.ndarray, np.ndarray]:
    """Sorted nonnegative magnitudes of every (exp, man) field pair as if all were numbers,
    plus the next power of two, with each candidate's code (-1 for that power)."""
    vals, codes = [], []
    for exp in range(1 << fmt.exp_bits):
        for man in range(1 << fmt.man_bits):
            scale = Fraction(2) ** (max(exp, 1) - fmt.bias)
            v = (Fraction(man, 1 << fmt.man_bits) + (1 if exp else 0)) * scale
            vals.append(float(v))
            codes.append((exp << fmt.man_bits) | man)
    vals.append(2.0 ** ((1 << fmt.exp_bits) - fmt.bias))
    codes.append(-1)
    return np.array(vals), np.array(codes)


def ref_round(x: np.ndarray, fmt: nm.FloatFormat, saturate: bool = False) -> np.ndarray:
    """Round-to-nearest-even by searching the candidate grid; specials per the documented
    conversion rules (overflow to inf/NaN or +-max, fnuz without -0)."""
    vals, codes = grid(fmt)
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape, dtype=np.int64)
    for pos, xv in np.ndenumerate(x):
        neg = np.signbit(xv)
        a = abs(xv)
        if np.isnan(xv):
            code = {"ieee": fmt.nan_code, "fn": fmt.nan_code, "fnuz": fmt.nan_code,
                    "finite": fmt.max_code}[fmt.kind]
        elif np.isinf(xv) or a > vals[-1]:
            code = None
        else:
            hi = int(np.searchsorted(vals, a, side="left"))
            if vals[hi] == a:
                pick = hi
            else:
                lo = hi - 1
                dl, dh = a - vals[lo], vals[hi] - a
                if dl != dh:
                    pick = lo if dl < dh else hi
                else:  # tie: the candidate with the even code (the power of two is even)
                    pick = lo if (codes[lo] & 1) == 0 else hi
            code = int(codes[pick])
            if code == -1 or vals[pick] > fmt.max_finite:
                code = None
        if code is None:  # overflow or infinity
            if saturate or fmt.kind == "finite":
                code = fmt.max_code
            elif fmt.kind == "ieee":
                code = fmt.inf_code
            else:
                code = fmt.nan_code
            nan_or_inf_special = code != fmt.max_code
        else:
            nan_or_inf_special = False
        if np.isnan(xv):
            nan_or_inf_special = fmt.kind != "finite"
        if neg and not (fmt.kind == "fnuz" and (code == 0 or nan_or_inf_special)):
            code |= fmt.sign_bit
        out[pos] = code
    return out


def random_f32(n: int, lo: float, hi: float) -> np.ndarray:
    """Random float32 with log-uniform magnitudes in [2**lo, 2**hi] and random signs."""
    mags = np.exp2(RNG.uniform(lo, hi, n))
    return (mags * RNG.choice([-1.0, 1.0], n)).astype(np.float32)


# --------------------------------------------------------------------------- decode


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_every_code_decodes_like_the_field_formula(fmt: nm.FloatFormat) -> None:
    codes = np.arange(1 << fmt.bits)
    got = nm.decode(codes, fmt)
    want = np.array([ref_value(int(c), fmt) for c in codes])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    # signs of zeros are part of the value set
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


def test_f16_and_bf16_decode_all_codes() -> None:
    codes = np.arange(1 << 16, dtype=np.uint32)
    got = nm.decode(codes, nm.F16)
    want = codes.astype(np.uint16).view(np.float16).astype(np.float64)  # NumPy's own decoder
    np.testing.assert_array_equal(got, want)
    with np.errstate(invalid="ignore"):  # widening signaling NaNs warns; they stay NaN
        np.testing.assert_array_equal(nm.f16_to_f32(codes).astype(np.float64), want)
    bf = nm.decode(codes, nm.BF16)
    want_bf = np.array([ref_value(int(c), nm.BF16) for c in codes[::97]])
    np.testing.assert_array_equal(bf[::97], want_bf)
    np.testing.assert_array_equal(nm.bf16_to_f32(codes).view(np.uint32), codes << 16)


@pytest.mark.parametrize(("fmt", "facts"), [
    # (code, value) from the format definitions: OCP 8-bit FP spec, AMD's FNUZ (MI300 ISA,
    # "FP8" section), OCP MX spec for fp6/fp4.
    (nm.E4M3FNUZ, [(0x7F, 240.0), (0x01, 2.0 ** -10), (0x08, 2.0 ** -7), (0xFF, -240.0),
                   (0x40, 1.0)]),
    (nm.E5M2FNUZ, [(0x7F, 57344.0), (0x01, 2.0 ** -17), (0x40, 1.0), (0xC0, -1.0)]),
    (nm.E4M3FN, [(0x7E, 448.0), (0x01, 2.0 ** -9), (0x38, 1.0), (0x80, -0.0)]),
    (nm.E5M2, [(0x7B, 57344.0), (0x7C, np.inf), (0xFC, -np.inf), (0x01, 2.0 ** -16),
               (0x3C, 1.0)]),
    (nm.E2M3, [(0x1F, 7.5), (0x01, 0.125), (0x08, 1.0), (0x3F, -7.5)]),
    (nm.E3M2, [(0x1F, 28.0), (0x01, 0.0625), (0x0C, 1.0)]),
    (nm.E2M1, [(0x1, 0.5), (0x2, 1.0), (0x3, 1.5), (0x4, 2.0), (0x5, 3.0), (0x6, 4.0),
               (0x7, 6.0), (0xF, -6.0), (0x8, -0.0)]),
])
def test_known_codes(fmt: nm.FloatFormat, facts: list[tuple[int, float]]) -> None:
    for code, value in facts:
        got = float(nm.decode(np.array([code]), fmt)[0])
        assert got == value and np.signbit(got) == np.signbit(value), (fmt.name, hex(code))


def test_nan_codes_and_format_limits() -> None:
    assert np.isnan(nm.decode(np.array([0x80]), nm.E4M3FNUZ)[0])
    assert np.isnan(nm.decode(np.array([0x80]), nm.E5M2FNUZ)[0])
    assert np.isnan(nm.decode(np.array([0x7F, 0xFF]), nm.E4M3FN)).all()
    assert np.isnan(nm.decode(np.array([0x7D, 0x7E, 0x7F, 0xFF]), nm.E5M2)).all()
    limits = {f.name: f.max_finite for f in SMALL}
    assert limits == {"e4m3fnuz": 240.0, "e5m2fnuz": 57344.0, "e4m3fn": 448.0,
                      "e5m2": 57344.0, "e2m3": 7.5, "e3m2": 28.0, "e2m1": 6.0}


def test_e8m0_all_codes() -> None:
    got = nm.e8m0_to_float(np.arange(256))
    assert np.isnan(got[255])
    for code in range(255):
        assert got[code] == float(Fraction(2) ** (code - 127))


def test_fp8_formats_per_target() -> None:
    assert nm.fp8_formats("gfx942") == {"fp8": nm.E4M3FNUZ, "bf8": nm.E5M2FNUZ}
    assert nm.fp8_formats("gfx950") == {"fp8": nm.E4M3FN, "bf8": nm.E5M2}
    assert nm.fp8_formats("amdgcn-amd-amdhsa--gfx942:sramecc+") == nm.fp8_formats("gfx942")
    with pytest.raises(ValueError, match="gfx1201"):
        nm.fp8_formats("gfx1201")
    assert [nm.f8f6f4_format(i).name for i in range(5)] == [
        "e4m3fn", "e5m2", "e2m3", "e3m2", "e2m1"]
    with pytest.raises(ValueError):
        nm.f8f6f4_format(5)


# --------------------------------------------------------------------------- encode


def _interesting_inputs(fmt: nm.FloatFormat) -> np.ndarray:
    """Every value, every midpoint (ties), midpoints nudged by one f32 ulp, the region past
    the largest value, tiny values, zeros and specials."""
    vals, _ = grid(fmt)
    mids = (vals[:-1] + vals[1:]) / 2
    mids32 = mids.astype(np.float32)
    assert np.array_equal(mids32.astype(np.float64), mids)  # midpoints are exact in f32
    up = np.nextafter(mids32, np.float32(np.inf))
    down = np.nextafter(mids32, np.float32(0))
    beyond = np.linspace(fmt.max_finite, 2 * vals[-1], 64)
    tiny = np.array([fmt.min_subnormal / 2, fmt.min_subnormal / 4, 1e-30, 1e-45])
    pos = np.concatenate([vals, mids, up, down, beyond, tiny]).astype(np.float32)
    pos = pos[np.isfinite(pos)]
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    return np.concatenate([pos, -pos, specials, random_f32(4000, -30, 20)])


@pytest.mark.parametrize("saturate", [False, True], ids=["nosat", "sat"])
@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_rne_encode_matches_nearest_search(fmt: nm.FloatFormat, saturate: bool) -> None:
    x = _interesting_inputs(fmt)
    got = nm.encode(x, fmt, saturate=saturate).astype(np.int64)
    want = ref_round(x, fmt, saturate=saturate)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_round_trip_every_code(fmt: nm.FloatFormat) -> None:
    codes = np.arange(1 << fmt.bits)
    vals = nm.decode(codes, fmt)
    back = nm.encode(vals.astype(np.float32), fmt)
    keep = ~np.isnan(vals)
    np.testing.assert_array_equal(back[keep], codes[keep])


@pytest.mark.parametrize(("fmt", "x", "sat", "code"), [
    # FNUZ: 248 is the tie between 240 (odd mantissa) and 256 -> overflow -> NaN 0x80.
    (nm.E4M3FNUZ, 248.0, False, 0x80), (nm.E4M3FNUZ, 248.0, True, 0x7F),
    (nm.E4M3FNUZ, 247.9, False, 0x7F), (nm.E4M3FNUZ, -1e-30, False, 0x00),
    (nm.E4M3FNUZ, -0.0, False, 0x00), (nm.E4M3FNUZ, np.inf, True, 0x7F),
    (nm.E4M3FNUZ, -np.inf, True, 0xFF), (nm.E4M3FNUZ, np.nan, True, 0x80),
    (nm.E5M2FNUZ, 61440.0, False, 0x80), (nm.E5M2FNUZ, 61439.0, False, 0x7F),
    # OCP E4M3FN: 464 is the tie between 448 (even mantissa 110) and 480 -> 448.
    (nm.E4M3FN, 464.0, False, 0x7E), (nm.E4M3FN, 464.1, False, 0x7F),
    (nm.E4M3FN, 464.1, True, 0x7E), (nm.E4M3FN, -np.inf, False, 0xFF),
    (nm.E4M3FN, -0.0, False, 0x80),
    # OCP E5M2: 61440 ties 57344 (odd) and 65536 -> inf; saturated -> max.
    (nm.E5M2, 61440.0, False, 0x7C), (nm.E5M2, -61440.0, True, 0xFB),
    (nm.E5M2, 61439.0, False, 0x7B), (nm.E5M2, -np.inf, False, 0xFC),
    # fp4: ties to even, always saturating.
    (nm.E2M1, 0.25, False, 0x0), (nm.E2M1, 0.75, False, 0x2), (nm.E2M1, 5.0, False, 0x6),
    (nm.E2M1, 7.0, False, 0x7), (nm.E2M1, -100.0, False, 0xF), (nm.E2M1, 2.5, False, 0x4),
    (nm.E2M3, 7.75, False, 0x1F), (nm.E3M2, 30.0, False, 0x1F), (nm.E2M3, 0.0625, False, 0),
])
def test_boundaries_and_ties(fmt: nm.FloatFormat, x: float, sat: bool, code: int) -> None:
    assert int(nm.encode(np.float32(x), fmt, saturate=sat)) == code


def test_f32_to_f16_matches_numpy_on_random_bit_patterns() -> None:
    bits = RNG.integers(0, 2 ** 32, size=400_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = np.concatenate([x, random_f32(100_000, -30, 17)])
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    got = nm.f32_to_f16(x)
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(got[finite], want[finite])
    # NaNs stay NaNs, keep their sign, become quiet and keep the top payload bits.
    nan_bits = x[~finite].view(np.uint32)
    g = got[~finite].astype(np.uint32)
    assert ((g & 0x7E00) == 0x7E00).all()
    np.testing.assert_array_equal(g >> 15, nan_bits >> 31)
    np.testing.assert_array_equal(g & 0x1FF, (nan_bits >> 13) & 0x1FF)


def test_f32_to_f16_every_tie() -> None:
    h = np.arange(0, 0x7C00, dtype=np.uint32).astype(np.uint16).view(np.float16)
    lo, hi = h[:-1].astype(np.float64), h[1:].astype(np.float64)
    mids = ((lo + hi) / 2).astype(np.float32)
    want = mids.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(nm.f32_to_f16(mids), want)
    np.testing.assert_array_equal(nm.f32_to_f16(-mids), want | 0x8000)
    assert int(nm.f32_to_f16(np.float32(65520.0))) == 0x7C00  # tie past max -> inf
    assert int(nm.f32_to_f16(np.float32(65520.0), rounding="rtz")) == 0x7BFF
    assert int(nm.f32_to_f16(np.float32(-65520.0), rounding="up")) == 0xFBFF
    assert int(nm.f32_to_f16(np.float32(-65505.0), rounding="down")) == 0xFC00
    assert int(nm.f32_to_f16(np.float32(1e9), saturate=True)) == 0x7BFF


def _bf16_carry_trick(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def test_f32_to_bf16_rne_and_truncation() -> None:
    bits = RNG.integers(0, 2 ** 32, size=400_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), random_f32(50_000, -140, 127)])
    finite = np.isfinite(x) & (np.abs(x) < np.float32(3.3895e38))
    np.testing.assert_array_equal(nm.f32_to_bf16(x)[finite], _bf16_carry_trick(x[finite]))
    trunc = (x.view(np.uint32) >> 16).astype(np.uint16)
    notnan = ~np.isnan(x)
    np.testing.assert_array_equal(nm.f32_to_bf16(x, rounding="rtz")[notnan], trunc[notnan])
    nan_out = nm.f32_to_bf16(x[~notnan]).astype(np.uint32)
    assert ((nan_out & 0x7FC0) == 0x7FC0).all()
    assert int(nm.f32_to_bf16(np.float32(3.4e38))) == 0x7F80  # rounds past max -> inf


def test_denormals_kept() -> None:
    assert int(nm.f32_to_f16(np.float32(2.0 ** -24))) == 0x0001
    assert int(nm.f32_to_f16(np.float32(2.0 ** -25))) == 0x0000  # tie to even (zero)
    assert int(nm.f32_to_f16(np.float32(3 * 2.0 ** -26))) == 0x0001
    assert int(nm.encode(np.float32(2.0 ** -10), nm.E4M3FNUZ)) == 0x01
    assert int(nm.encode(np.float32(2.0 ** -149), nm.BF16)) == 0x0000
    assert int(nm.encode(np.float32(2.0 ** -133), nm.BF16)) == 0x0001


# --------------------------------------------------------------------------- stochastic


@pytest.mark.parametrize("fmt", [nm.E4M3FNUZ, nm.E5M2FNUZ, nm.E4M3FN, nm.E5M2, nm.F16,
                                 nm.BF16, nm.E2M1, nm.E3M2], ids=lambda f: f.name)
def test_stochastic_rounding_extremes(fmt: nm.FloatFormat) -> None:
    x = random_f32(20_000, -12, 10)
    # Keep at most 32 dropped bits: the random dword has only 32 bits to add.
    x = x[(np.abs(x) < fmt.max_finite) & (np.abs(x) >= fmt.min_subnormal * 2.0 ** -8)]
    zero = np.zeros(x.shape, dtype=np.uint32)
    ones = np.full(x.shape, 0xFFFFFFFF, dtype=np.uint32)
    # rand = 0 adds nothing to the dropped bits: truncation toward zero.
    np.testing.assert_array_equal(nm.encode(x, fmt, rounding="sr", rand=zero),
                                  nm.encode(x, fmt, rounding="rtz"))
    # rand = all ones carries whenever any dropped bit is set: away from zero if inexact.
    up = nm.encode(x, fmt, rounding="sr", rand=ones, saturate=True)
    trunc = nm.encode(x, fmt, rounding="rtz")
    exact = nm.decode(trunc, fmt) == x.astype(np.float64)
    away = np.where(x > 0, nm.encode(x, fmt, rounding="up", saturate=True),
                    nm.encode(x, fmt, rounding="down", saturate=True))
    np.testing.assert_array_equal(up[exact], trunc[exact])
    np.testing.assert_array_equal(up[~exact], away[~exact])


def test_stochastic_rounding_uses_the_low_random_bits() -> None:
    # 1 + 2**-4 in E4M3FNUZ (3 mantissa bits): 20 f32 mantissa bits are dropped and their
    # value is 2**19, so a carry needs (R mod 2**20) >= 2**19.
    x = np.float32(1.0 + 2.0 ** -4)
    lo, hi = 0x40, 0x41  # 1.0 and 1.125
    for rand, want in [(0, lo), (2 ** 19 - 1, lo), (2 ** 19, hi), (2 ** 20 - 1, hi),
                       (0xFFF00000 + 2 ** 19 - 1, lo), (0xFFF00000 + 2 ** 19, hi)]:
        got = int(nm.encode(x, nm.E4M3FNUZ, rounding="sr", rand=np.uint32(rand)))
        assert got == want, hex(rand)


def test_stochastic_rounding_far_below_the_smallest_subnormal_never_carries() -> None:
    # 2**-40 to fp4 drops 39 bits of an f32 whose significand is 2**23: even an all-ones
    # random dword cannot carry into the 0.5 quantum.
    got = nm.encode(np.float32(2.0 ** -40), nm.E2M1, rounding="sr", rand=np.uint32(2**32 - 1))
    assert int(got) == 0


def test_stochastic_rounding_is_unbiased() -> None:
    x = np.full(200_000, 1.0 + 0.3 * 0.125, dtype=np.float32)  # 30% of the way to 1.125
    rand = RNG.integers(0, 2 ** 32, size=x.size, dtype=np.uint64).astype(np.uint32)
    codes = nm.encode(x, nm.E4M3FN, rounding="sr", rand=rand)
    frac_up = np.mean(codes == 0x39)
    assert set(np.unique(codes)) == {0x38, 0x39}
    assert abs(frac_up - 0.3) < 0.005
    exact = np.full(1000, 1.5, dtype=np.float32)
    r = RNG.integers(0, 2 ** 32, size=1000, dtype=np.uint64).astype(np.uint32)
    assert (nm.encode(exact, nm.E4M3FN, rounding="sr", rand=r) == 0x3C).all()


def test_rounding_argument_errors() -> None:
    with pytest.raises(ValueError, match="rand"):
        nm.encode(np.float32(1), nm.E4M3FN, rounding="sr")
    with pytest.raises(ValueError, match="rounding"):
        nm.encode(np.float32(1), nm.E4M3FN, rounding="nearest")


# --------------------------------------------------------------------------- packing


def _pack_bigint(codes: list[int], width: int) -> list[int]:
    total = 0
    for i, c in enumerate(codes):
        total |= c << (i * width)
    nwords = (len(codes) * width + 31) // 32
    return [(total >> (32 * w)) & 0xFFFFFFFF for w in range(nwords)]


@pytest.mark.parametrize(("width", "n"), [(4, 8), (6, 32), (8, 4), (16, 2), (4, 32), (6, 16),
                                          (8, 32)])
def test_pack_codes_against_big_integers(width: int, n: int) -> None:
    codes = RNG.integers(0, 1 << width, size=(50, n))
    words = nm.pack_codes(codes, width)
    want = np.array([_pack_bigint([int(c) for c in row], width) for row in codes])
    np.testing.assert_array_equal(words, want)
    np.testing.assert_array_equal(nm.unpack_codes(words, width, n), codes)


def test_fp6_code_straddles_dwords() -> None:
    codes = np.zeros(32, dtype=np.int64)
    codes[5] = 0b110101  # bits 30..35: two bits in dword 0, four in dword 1
    words = nm.pack_codes(codes, 6)
    assert words.shape == (6,)
    assert int(words[0]) == 0b01 << 30 and int(words[1]) == 0b1101


def test_fields() -> None:
    old = np.array([0xAABBCCDD], dtype=np.uint32)
    assert int(nm.insert_field(old, 0x12, 8, 8)[0]) == 0xAABB12DD
    assert int(nm.insert_field(old, 0x1234, 16, 16)[0]) == 0x1234CCDD
    assert int(nm.extract_field(old, 24, 8)[0]) == 0xAA
    assert int(nm.extract_field(old, 4, 4)[0]) == 0xD


# --------------------------------------------------------------------------- instructions


def test_cvt_pk_fp8_word_select_keeps_other_half() -> None:
    old = np.array([0xDEADBEEF, 0xDEADBEEF], dtype=np.uint32)
    src0 = np.array([1.0, 240.0], dtype=np.float32)
    src1 = np.array([-2.0, 1000.0], dtype=np.float32)
    lo = nm.cvt_pk_f8_f32("gfx942", "fp8", src0, src1, old, word_sel=0)
    assert [hex(v) for v in lo] == ["0xdeadc840", "0xdead807f"]  # 1000 -> NaN (no clamp)
    hi = nm.cvt_pk_f8_f32("gfx942", "fp8", src0, src1, old, word_sel=1, saturate=True)
    assert [hex(v) for v in hi] == ["0xc840beef", "0x7f7fbeef"]
    # E5M2: 240 = 1.875 * 2**7 ties to 256 (even); 1000 rounds to 1024.
    ocp = nm.cvt_pk_f8_f32("gfx950", "bf8", src0, src1, old)
    assert [hex(v) for v in ocp] == ["0xdeadc03c", "0xdead645c"]


def test_cvt_f32_fp8_byte_and_word_selects() -> None:
    word = np.array([0x7F40C008], dtype=np.uint32)
    got = [float(nm.cvt_f32_f8("gfx942", "fp8", word, byte_sel=i)[0]) for i in range(4)]
    assert got == [2.0 ** -7, -1.0, 1.0, 240.0]
    lo, hi = nm.cvt_pk_f32_f8("gfx950", "fp8", word, word_sel=1)  # OCP: 0x40 = 2, 0x7F NaN
    assert float(lo[0]) == 2.0 and np.isnan(hi[0])


def test_cvt_sr_fp8_byte_select() -> None:
    old = np.array([0x11223344], dtype=np.uint32)
    got = nm.cvt_sr_f8_f32("gfx942", "bf8", np.float32(1.0), np.uint32(0), old, byte_sel=2)
    assert hex(int(got[0])) == "0x11403344"  # E5M2FNUZ 1.0 = 0x40 into byte 2


def test_scaled_conversions() -> None:
    # Only the exponent of the f32 scale counts: 3.0 and 2.0 both mean 2**1.
    codes = np.arange(16)
    for scale in (np.float32(2.0), np.float32(3.0)):
        got = nm.cvt_scalef32_decode(codes, nm.E2M1, scale)
        np.testing.assert_array_equal(got, (nm.decode(codes, nm.E2M1) * 2).astype(np.float32))
    x = np.array([3.0, 12.0, 100.0, -0.5], dtype=np.float32)
    got = nm.cvt_scalef32_encode(x, nm.E2M1, np.float32(4.0))
    # 3/4 = 0.75 ties to 1.0 (even); 12/4 = 3; 100/4 = 25 saturates to 6; -0.125 -> -0
    np.testing.assert_array_equal(got, [0x2, 0x5, 0x7, 0x8])
    nan = nm.cvt_scalef32_decode(codes, nm.E4M3FN, np.float32(np.inf))
    assert np.isnan(nan).all()
    f16 = nm.cvt_scalef32_decode(np.array([0x7E]), nm.E4M3FN, np.float32(2.0 ** 8), out="f16")
    assert int(f16[0]) == 0x7C00  # 448 * 256 overflows f16
    tiny = nm.cvt_scalef32_decode(np.array([0x01]), nm.E4M3FN, np.float32(2.0 ** -126))
    assert float(tiny[0]) == 2.0 ** -135  # f32 denormal, exact
    with pytest.raises(ValueError):
        nm.cvt_scalef32_decode(codes, nm.E2M1, np.float32(1), out="f64")
