"""Emulator cross-lane operations: DPP, readlane/writelane, permlane swaps, LDS permutes."""

from __future__ import annotations

import numpy as np
import pytest
from test_emu_asm import vrun

LANES = np.arange(64, dtype=np.uint32)
L = np.arange(64)
X = LANES * 3 + 100


def dpp(ctrl: str, *, old=None, extra: str = "") -> np.ndarray:
    body = (f"v_mov_b32 v3, v2\ns_nop 1\nv_mov_b32_dpp v3, v1 {ctrl} {extra}").strip()
    ins = {"v1": X, "v2": LANES * 0 + 7 if old is None else old}
    return vrun(body, ins, ("v3",))["v3"]


def row_map(fn) -> np.ndarray:
    """Source lane for each lane under a per-row (16 lanes) mapping, -1 = none."""
    out = np.full(64, -1)
    for lane in range(64):
        r, i = divmod(lane, 16)
        j = fn(i)
        if 0 <= j < 16:
            out[lane] = r * 16 + j
    return out


def expect(src: np.ndarray, fill=7) -> np.ndarray:
    return np.where(src >= 0, X[np.clip(src, 0, 63)], fill).astype(np.uint32)


@pytest.mark.parametrize(("ctrl", "src"), [
    ("quad_perm:[1,0,3,2]", np.array([(ln & ~3) | [1, 0, 3, 2][ln & 3] for ln in range(64)])),
    ("row_shl:1", row_map(lambda i: i + 1)),
    ("row_shr:3", row_map(lambda i: i - 3)),
    ("row_ror:4", row_map(lambda i: (i - 4) % 16)),
    ("row_mirror", row_map(lambda i: 15 - i)),
    ("row_half_mirror", row_map(lambda i: (i & 8) | (7 - (i & 7)))),
    ("wave_shl:1", np.array([ln + 1 if ln < 63 else -1 for ln in range(64)])),
    ("wave_shr:1", np.array([ln - 1 for ln in range(64)])),
    ("wave_rol:1", np.array([(ln + 1) % 64 for ln in range(64)])),
    ("wave_ror:1", np.array([(ln - 1) % 64 for ln in range(64)])),
])
def test_dpp_patterns(ctrl, src):
    assert np.array_equal(dpp(ctrl + " row_mask:0xf bank_mask:0xf"), expect(src))


def test_dpp_bound_ctrl_writes_zero_for_invalid_lanes_and_masks_rows():
    got = dpp("row_shl:1 row_mask:0xf bank_mask:0xf bound_ctrl:1")
    src = row_map(lambda i: i + 1)
    assert np.array_equal(got, expect(src, fill=0))
    got = dpp("quad_perm:[0,0,0,0] row_mask:0x5 bank_mask:0xf")
    for lane in range(64):
        want = X[lane & ~3] if (0x5 >> (lane // 16)) & 1 else 7
        assert got[lane] == want


def test_dpp_row_broadcasts():
    got = dpp("row_bcast:15 row_mask:0xa bank_mask:0xf")
    for lane in range(64):
        r = lane // 16
        want = X[r * 16 - 1] if r in (1, 3) else 7
        assert got[lane] == want
    got = dpp("row_bcast:31 row_mask:0xc bank_mask:0xf")
    for lane in range(64):
        assert got[lane] == (X[31] if lane >= 32 else 7)


def test_dpp_on_an_alu_op_and_row_newbcast_on_gfx950():
    out = vrun("v_add_u32_dpp v3, v1, v2 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf",
               {"v1": X, "v2": LANES}, ("v3",))
    src = np.array([(ln & ~3) | (3 - (ln & 3)) for ln in range(64)])
    assert np.array_equal(out["v3"], X[src] + LANES)
    out = vrun("v_mov_b32 v3, 7\ns_nop 1\nv_mov_b32_dpp v3, v1 row_newbcast:5 row_mask:0xf bank_mask:0xf",
               {"v1": X}, ("v3",), target="gfx950")
    assert np.array_equal(out["v3"], X[(LANES // 16) * 16 + 5])


def test_readlane_writelane_readfirstlane():
    body = """
s_mov_b32 s4, 37
v_readlane_b32 s5, v1, s4
v_readlane_b32 s6, v1, 63
v_mov_b32 v3, v1
v_writelane_b32 v3, s5, 2
s_mov_b64 exec, 0xF0
v_readfirstlane_b32 s7, v1
"""
    out = vrun(body, {"v1": X}, ("s5", "s6", "s7", "v3"))
    assert out["s5"][0] == X[37] and out["s6"][0] == X[63] and out["s7"][0] == X[4]
    want = X.copy()
    want[2] = X[37]
    assert np.array_equal(out["v3"], want)


def test_permlane_swaps_gfx950():
    y = LANES + 1000
    body = ("v_mov_b32 v3, v1\nv_mov_b32 v4, v2\ns_nop 1\nv_permlane32_swap_b32 v3, v4\n"
            "v_mov_b32 v5, v1\nv_mov_b32 v6, v2\ns_nop 1\nv_permlane16_swap_b32 v5, v6")
    out = vrun(body, {"v1": X, "v2": y}, ("v3", "v4", "v5", "v6"), target="gfx950")
    # permlane32_swap: vdst's upper half <-> src0's lower half.
    assert np.array_equal(out["v3"], np.concatenate([X[:32], y[:32]]))
    assert np.array_equal(out["v4"], np.concatenate([X[32:], y[32:]]))
    # permlane16_swap: vdst rows 1 and 3 <-> src0 rows 0 and 2.
    r = [slice(0, 16), slice(16, 32), slice(32, 48), slice(48, 64)]
    assert np.array_equal(out["v5"], np.concatenate([X[r[0]], y[r[0]], X[r[2]], y[r[2]]]))
    assert np.array_equal(out["v6"], np.concatenate([X[r[1]], y[r[1]], X[r[3]], y[r[3]]]))


def test_ds_bpermute_permute_and_swizzle():
    sel = (63 - LANES) * 4
    body = ("ds_bpermute_b32 v3, v2, v1\nds_permute_b32 v4, v2, v1\n"
            "ds_swizzle_b32 v5, v1 offset:swizzle(QUAD_PERM,3,2,1,0)\n"
            "ds_swizzle_b32 v6, v1 offset:swizzle(BITMASK_PERM,\"00001\")\n"
            "ds_swizzle_b32 v7, v1 offset:swizzle(SWAP,16)\n"
            "s_waitcnt lgkmcnt(0)")
    out = vrun(body, {"v1": X, "v2": sel}, ("v3", "v4", "v5", "v6", "v7"))
    assert np.array_equal(out["v3"], X[::-1])
    assert np.array_equal(out["v4"], X[::-1])
    assert np.array_equal(out["v5"], X[(L & ~3) | (3 - (L & 3))])
    # BITMASK_PERM "00001": and_mask 0x1e? -> lane = (lane & 0) | 1 within groups of 32...
    bm = out["v6"]
    for lane in range(64):
        src = (lane & ~31) | 1
        assert bm[lane] == X[src]
    assert np.array_equal(out["v7"], X[(L & ~31) | ((L & 31) ^ 16)])


def test_bpermute_reads_zero_from_inactive_lanes_hardware_style():
    # Lanes read from lane 0 which is disabled in EXEC: the value comes from the VGPR anyway
    # (bpermute reads the source VGPR of every lane) -> documented as 0 for inactive lanes.
    body = "v_mov_b32 v3, 0\ns_mov_b64 exec, -2\nds_bpermute_b32 v3, v2, v1\ns_waitcnt lgkmcnt(0)"
    out = vrun(body, {"v1": X, "v2": np.zeros(64, np.uint32)}, ("v3",))
    assert out["v3"][0] == 0 and (out["v3"][1:] == 0).all()
