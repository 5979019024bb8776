"""Emulator fp8/bf8/fp6/fp4 conversions (through numerics.py): operand selects, packing,
scales, and known codes of both fp8 flavours (gfx942 FNUZ, gfx950 OCP)."""

from __future__ import annotations

import numpy as np
import pytest
from test_emu_asm import descriptor, f32, vrun

from asterism.emu import numerics as nx

rng = np.random.default_rng(5)


@pytest.mark.parametrize(("target", "fp8_one", "bf8_one"), [
    ("gfx942", 0x40, 0x40),     # e4m3fnuz / e5m2fnuz: bias 8 / 16
    ("gfx950", 0x38, 0x3C),     # OCP e4m3fn / e5m2: bias 7 / 15
])
def test_pk_fp8_codes_and_word_select(target, fp8_one, bf8_one):
    body = ("v_mov_b32 v3, 0x11223344\nv_cvt_pk_fp8_f32 v3, v1, v2 op_sel:[0,0,1]\n"
            "v_mov_b32 v4, 0x11223344\nv_cvt_pk_bf8_f32 v4, v1, v2")
    out = vrun(body, {"v1": np.float32(1.0), "v2": np.float32(-1.0)}, ("v3", "v4"),
               target=target)
    assert out["v3"][0] == ((fp8_one | 0x80) << 24 | fp8_one << 16 | 0x3344)
    assert out["v4"][0] == (0x1122 << 16 | (bf8_one | 0x80) << 8 | bf8_one)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_fp8_round_trip_matches_numerics(target):
    x = (rng.normal(size=64) * 10).astype(np.float32)
    x[:4] = [0.0, 1e-9, 1e6, -1e6]
    body = ("v_cvt_pk_fp8_f32 v3, v1, v1\nv_cvt_f32_fp8 v4, v3\n"
            "v_cvt_pk_f32_fp8 v[6:7], v3\n"
            "v_cvt_pk_bf8_f32 v8, v1, v2\nv_cvt_pk_f32_bf8 v[10:11], v8")
    out = vrun(body, {"v1": x, "v2": -x, "v3": np.zeros(64, np.uint32),
                      "v8": np.zeros(64, np.uint32)},
               ("v3", "v4", "v[6:7]", "v[10:11]"), target=target)
    fmt = nx.fp8_formats(target)
    codes = nx.encode(x, fmt["fp8"])
    assert np.array_equal(out["v3"] & 0xFF, codes)
    want = nx.decode(codes, fmt["fp8"]).astype(np.float32)
    got = f32(out["v4"])
    nan = np.isnan(want)
    assert np.array_equal(got[~nan], want[~nan]) and np.isnan(got[nan]).all()
    pk = f32(out["v[6:7]"])
    assert np.array_equal(pk[~nan, 0], want[~nan]) and np.array_equal(pk[~nan, 1], want[~nan])
    b = nx.decode(nx.encode(x, fmt["bf8"]), fmt["bf8"]).astype(np.float32)
    bb = f32(out["v[10:11]"])
    ok = ~np.isnan(b)
    assert np.array_equal(bb[ok, 0], b[ok]) and np.array_equal(bb[ok, 1], -b[ok])


def test_sr_fp8_writes_the_selected_byte():
    x = np.full(64, 1.0, np.float32)
    out = vrun("v_mov_b32 v3, 0\nv_cvt_sr_fp8_f32 v3, v1, v2 op_sel:[0,0,1,1]",
               {"v1": x, "v2": np.zeros(64, np.uint32)}, ("v3",), target="gfx942")
    assert (out["v3"] == 0x40 << 24).all()


def test_scalef32_fp8_pairs_gfx950():
    x = np.array([1.0, -2.0, 448.0, 0.0625] * 16, np.float32)
    body = ("v_mov_b32 v5, 0\nv_cvt_scalef32_pk_fp8_f32 v5, v1, v2, v3 op_sel:[0,0,0,1]\n"
            "s_nop 0\nv_cvt_scalef32_pk_f32_fp8 v[6:7], v5, v3 op_sel:[1,0,0]\n"
            "v_cvt_scalef32_f32_fp8 v8, v5, v3 op_sel:[1,1,0]")
    scale = np.full(64, 4.0, np.float32)        # exponent field only: 2**2
    out = vrun(body, {"v1": x, "v2": -x, "v3": scale}, ("v5", "v[6:7]", "v8"),
               target="gfx950")
    codes = nx.encode(x / 4, nx.E4M3FN).astype(np.uint32)
    ncodes = nx.encode(-x / 4, nx.E4M3FN).astype(np.uint32)
    assert np.array_equal(out["v5"], (codes | ncodes << 8) << 16)
    back = f32(out["v[6:7]"])
    assert np.array_equal(back[:, 0], x) and np.array_equal(back[:, 1], -x)
    assert np.array_equal(f32(out["v8"]), -x)      # byte 3 = the second code


def test_scalef32_fp4_and_f16_paths_gfx950():
    vals = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -6.0], np.float32)
    x = np.resize(vals, 64)
    y = np.resize(vals[::-1], 64)
    body = ("v_mov_b32 v5, 0\nv_cvt_scalef32_pk_fp4_f32 v5, v1, v2, v3\n"
            "s_nop 0\nv_cvt_scalef32_pk_f32_fp4 v[6:7], v5, v3\n"
            "v_cvt_scalef32_pk_f16_fp4 v8, v5, v3")
    out = vrun(body, {"v1": x, "v2": y, "v3": np.full(64, 1.0, np.float32)},
               ("v5", "v[6:7]", "v8"), target="gfx950")
    back = f32(out["v[6:7]"])
    assert np.array_equal(back[:, 0], x) and np.array_equal(back[:, 1], y)
    h = out["v8"].view(np.uint16).reshape(64, 2).view(np.float16)
    assert np.array_equal(h[:, 0], x.astype(np.float16))
    assert np.array_equal(h[:, 1], y.astype(np.float16))
    assert (out["v5"] >> 8 == 0).all()


def test_scalef32_fp6_vectors_round_trip_gfx950():
    # Exactly representable fp6 (e2m3) values survive 2xpk16 -> pk32_f32.
    grid = np.array([0, 0.125, 0.5, 1.0, 1.25, 2.0, 3.5, 7.5, -7.5, -0.25], np.float32)
    a = np.stack([np.roll(np.resize(grid, 16), k) for k in range(64)])     # (64, 16)
    b = -a
    body = ("v_cvt_scalef32_2xpk16_fp6_f32 v[70:75], v[0:15], v[16:31], v32\n"
            "v_cvt_scalef32_pk32_f32_fp6 v[0:31], v[70:75], v32\n"
            "v_cvt_scalef32_pk32_f16_fp6 v[76:91], v[70:75], v32")
    ins = {"v[0:15]": a, "v[16:31]": b, "v32": np.full(64, 1.0, np.float32)}
    kd = descriptor("gfx950", vgprs=128, sgprs=48)
    out = vrun(body, ins, ("v[0:31]", "v[76:91]"), target="gfx950", kd=kd)
    got = f32(out["v[0:31]"])
    want = np.stack([a, b], axis=-1).reshape(64, 32)
    assert np.array_equal(got, want)
    h = out["v[76:91]"].view(np.uint16).reshape(64, 32).view(np.float16)
    assert np.array_equal(h, want.astype(np.float16))


def test_sr_pk32_fp6_stays_within_one_quantum_gfx950():
    x = rng.uniform(-7, 7, size=(64, 32)).astype(np.float32)
    kd = descriptor("gfx950", vgprs=128, sgprs=48)
    body = ("v_cvt_scalef32_sr_pk32_fp6_f32 v[70:75], v[0:31], v33, v32\n"
            "v_cvt_scalef32_pk32_f32_fp6 v[0:31], v[70:75], v32")
    out = vrun(body, {"v[0:31]": x, "v32": np.full(64, 1.0, np.float32),
                      "v33": rng.integers(0, 2 ** 32, 64, dtype=np.uint32)},
               ("v[0:31]",), target="gfx950", kd=kd)
    got = f32(out["v[0:31]"])
    # e2m3 spacing is at most 0.5 in [4, 8): SR lands on a neighbour of x.
    assert (np.abs(got - x) <= 0.5).all()
    assert not np.array_equal(got, nx.decode(nx.encode(x, nx.E2M3), nx.E2M3))
