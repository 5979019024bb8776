"""Emulator LDS (DS) instructions: loads/stores of every width, read2/write2, atomics,
transposed reads (gfx950), LDS bounds, and LDS shared by the waves of a workgroup."""

from __future__ import annotations

import numpy as np
import pytest
from test_emu_asm import descriptor, run, vrun

from asterism.emu import EmulatorFault, SanitizerError

LANES = np.arange(64, dtype=np.uint32)


def lds_kd(size: int = 4096, target: str = "gfx942"):
    return descriptor(target, vgprs=64, sgprs=48, lds=size)


def test_ds_write_read_widths_and_offsets():
    body = """
v_lshlrev_b32 v10, 4, v0
v_mov_b32 v2, v1
v_add_u32 v3, 1, v1
v_add_u32 v4, 2, v1
v_add_u32 v5, 3, v1
ds_write_b128 v10, v[2:5]
ds_write_b16 v10, v1 offset:1026
s_waitcnt lgkmcnt(0)
ds_read_b128 v[12:15], v10
ds_read_b64 v[16:17], v10 offset:8
ds_read_u16 v18, v10 offset:1026
ds_read_i8 v19, v10 offset:1027
s_waitcnt lgkmcnt(0)
"""
    x = LANES * 0x01010101 + 0x80
    out = vrun(body, {"v1": x}, ("v[12:15]", "v[16:17]", "v18", "v19"), kd=lds_kd(2048))
    want = np.stack([x, x + 1, x + 2, x + 3], axis=1)
    assert np.array_equal(out["v[12:15]"], want)
    assert np.array_equal(out["v[16:17]"], want[:, 2:])
    assert np.array_equal(out["v18"], x & 0xFFFF)
    assert np.array_equal(out["v19"], ((x >> 8) & 0xFF).astype(np.uint8).astype(np.int8)
                          .astype(np.int32).view(np.uint32))


def test_read2_write2_and_st64():
    body = """
v_lshlrev_b32 v10, 2, v0
v_add_u32 v2, 1000, v1
ds_write2_b32 v10, v1, v2 offset1:64
ds_write2st64_b32 v10, v2, v1 offset0:2 offset1:3
s_waitcnt lgkmcnt(0)
ds_read2_b32 v[12:13], v10 offset1:64
ds_read2st64_b32 v[14:15], v10 offset0:2 offset1:3
s_waitcnt lgkmcnt(0)
"""
    out = vrun(body, {"v1": LANES}, ("v[12:13]", "v[14:15]"), kd=lds_kd(4096))
    assert np.array_equal(out["v[12:13]"], np.stack([LANES, LANES + 1000], 1))
    assert np.array_equal(out["v[14:15]"], np.stack([LANES + 1000, LANES], 1))


def test_lds_atomics_serialize_colliding_lanes():
    body = """
v_mov_b32 v10, 0
v_mov_b32 v2, 0
ds_write_b32 v10, v2
ds_write_b32 v10, v2 offset:4
ds_write_b32 v10, v2 offset:8
s_waitcnt lgkmcnt(0)
v_mov_b32 v3, 1
ds_add_u32 v10, v3
ds_add_rtn_u32 v4, v10, v3 offset:4
ds_max_u32 v10, v1 offset:8
s_waitcnt lgkmcnt(0)
ds_read_b32 v5, v10
ds_read_b32 v6, v10 offset:8
s_waitcnt lgkmcnt(0)
"""
    out = vrun(body, {"v1": LANES * 7}, ("v4", "v5", "v6"), kd=lds_kd(64))
    assert (out["v5"] == 64).all() and (out["v6"] == 63 * 7).all()
    assert sorted(out["v4"].tolist()) == list(range(64))     # lane order: 0, 1, 2, ...
    assert np.array_equal(out["v4"], LANES)


def test_lds_out_of_bounds_faults_with_lane_and_address():
    with pytest.raises(EmulatorFault) as info:
        vrun("v_lshlrev_b32 v10, 4, v0\nds_read_b32 v2, v10\ns_waitcnt lgkmcnt(0)", {},
             ("v2",), kd=lds_kd(512))
    e = info.value
    assert e.lane == 32 and e.address == 512 and "LDS" in str(e)


def test_lds_is_shared_by_the_waves_of_a_workgroup_across_a_barrier():
    # 4 waves: each writes its lane ids, barrier, then reads the neighbouring wave's slot.
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
v_lshlrev_b32 v1, 2, v0
v_add_u32 v2, 0x1000, v0
ds_write_b32 v1, v2
s_waitcnt lgkmcnt(0)
s_barrier
v_add_u32 v3, 256, v1
v_and_b32 v3, 0x3ff, v3
ds_read_b32 v4, v3
s_waitcnt lgkmcnt(0)
global_store_dword v1, v4, s[4:5]
s_endpgm
"""
    out = np.zeros(256, np.uint32)
    emu, addrs, stats = run(src, args=[out], block=256, kd=lds_kd(1024))
    got = emu.memory.download(addrs[0], 256, np.uint32)
    assert np.array_equal(got, 0x1000 + (np.arange(256) + 64) % 256)
    assert stats.waves == 4


SHARE_SRC = """
s_load_dwordx2 s[4:5], s[0:1], 0
v_lshlrev_b32 v1, 2, v0
v_add_u32 v2, 0x1000, v0
ds_write_b32 v1, v2
ds_read_b32 v5, v1
{wait}s_barrier
v_add_u32 v3, {shift}, v1
v_and_b32 v3, 0x3ff, v3
ds_read_b32 v4, v3
s_waitcnt lgkmcnt(0)
global_store_dword v1, v4, s[4:5]
global_store_dword v1, v5, s[4:5] offset:1024
s_endpgm
"""


@pytest.mark.parametrize("wait, shift, caught", [
    ("s_waitcnt lgkmcnt(0)\n", 256, False),  # the writer waited: visible after the barrier
    ("", 256, True),  # the neighbour's slot, written but not waited for: caught
    ("", 0, False),  # a wave's own slot: its LDS operations complete in order
])
def test_lds_write_is_visible_to_other_waves_after_the_writers_wait(wait, shift, caught):
    # Also the own-slot read right after the write (v5) needs no wait in between.
    out = np.zeros(512, np.uint32)
    src = SHARE_SRC.format(wait=wait, shift=shift)
    if caught:
        with pytest.raises(SanitizerError, match="before its s_barrier") as info:
            run(src, args=[out], block=256, kd=lds_kd(1024))
        assert info.value.needed == "s_waitcnt lgkmcnt(0)" and info.value.wave == 0
        assert "of wave 1 of the workgroup" in str(info.value)
        return
    emu, addrs, _ = run(src, args=[out], block=256, kd=lds_kd(1024))
    got = emu.memory.download(addrs[0], 512, np.uint32)
    assert np.array_equal(got[:256], 0x1000 + (np.arange(256) + shift // 4) % 256)
    assert np.array_equal(got[256:], 0x1000 + np.arange(256))


def test_each_workgroup_has_its_own_lds():
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
v_lshlrev_b32 v1, 2, v0
v_mov_b32 v2, s2
ds_write_b32 v1, v2
s_waitcnt lgkmcnt(0)
s_barrier
ds_read_b32 v3, v1
v_mov_b32 v4, 0x400
v_mad_u32_u24 v5, s2, v4, v1
s_waitcnt lgkmcnt(0)
global_store_dword v5, v3, s[4:5]
s_endpgm
"""
    out = np.zeros(256 * 3, np.uint32)
    kd = descriptor(lds=1024, enable_sgpr_workgroup_id_x=1)
    emu, addrs, _ = run(src, args=[out], grid=3, block=256, kd=kd)
    got = emu.memory.download(addrs[0], 768, np.uint32).reshape(3, 256)
    assert np.array_equal(got, np.repeat(np.arange(3), 256).reshape(3, 256))


def _tr_expected(tile: np.ndarray, per: int) -> np.ndarray:
    """Lane j of each 16-lane group gets column j of the (per x 16) tile."""
    return tile.T


@pytest.mark.parametrize(("mnem", "elem_bits", "regs"), [
    ("ds_read_b64_tr_b16", 16, 2),
    ("ds_read_b64_tr_b8", 8, 2),
])
def test_transposed_lds_reads_gfx950(mnem, elem_bits, regs):
    # Each 16-lane group reads a (E x 16) tile stored row-major; lane i addresses 8 bytes at
    # group_base + 8 i, so row r is read by lanes r*16/E .. and lane j receives column j.
    per = 64 // elem_bits
    dt = {16: np.uint16, 8: np.uint8}[elem_bits]
    tiles = np.random.default_rng(3).integers(0, 2 ** elem_bits, (4, per, 16)).astype(dt)
    words = tiles.reshape(-1).view(np.uint32)
    body = f"""
v_lshlrev_b32 v10, 2, v0
ds_write_b32 v10, v1
ds_write_b32 v10, v2 offset:256
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v11, 3, v0
{mnem} v[12:13], v11
s_waitcnt lgkmcnt(0)
"""
    out = vrun(body, {"v1": words[:64], "v2": words[64:]}, ("v[12:13]",),
               kd=lds_kd(1024, "gfx950"), target="gfx950")
    got = np.ascontiguousarray(out["v[12:13]"]).view(dt).reshape(64, per)
    for grp in range(4):
        assert np.array_equal(got[grp * 16:(grp + 1) * 16], _tr_expected(tiles[grp], per))
