"""Emulator memory: the allocator, SMEM / GLOBAL / FLAT / SCRATCH / MUBUF accesses, faults."""

from __future__ import annotations

import numpy as np
import pytest
from test_emu_asm import descriptor, run

from asterism.emu import DeviceMemory, EmulatorFault, MemoryAccessError
from asterism.errors import AsterismError

# ---------------------------------------------------------------------------- allocator


def test_allocator_aligns_separates_and_checks_bounds():
    mem = DeviceMemory()
    a = mem.alloc(100, align=4096, name="a")
    b = mem.alloc(8, name="b")
    assert a % 4096 == 0 and b % 256 == 0 and b >= a + 100
    assert a >= 2 ** 32          # 64-bit addresses
    mem.write(a, np.arange(25, dtype=np.uint32))
    assert np.array_equal(mem.download(a, 25, np.uint32), np.arange(25))
    v = mem.view(a, np.uint32, 4)
    v[0] = 99                     # views write through
    assert mem.read(a, 4) == (99).to_bytes(4, "little")
    with pytest.raises(MemoryAccessError, match="past the end of allocation 'a'"):
        mem.read(a + 96, 8)
    mem.free(b)
    with pytest.raises(MemoryAccessError, match="freed allocation 'b'"):
        mem.read(b, 4)
    with pytest.raises(MemoryAccessError):
        mem.free(a + 4)
    assert issubclass(MemoryAccessError, AsterismError)


def test_lane_gathers_span_allocations():
    mem = DeviceMemory()
    a = mem.upload(np.arange(16, dtype=np.uint32))
    b = mem.upload(np.arange(100, 116, dtype=np.uint32))
    addrs = np.array([a, b + 8, a + 60, b], np.uint64)
    assert list(mem.load_dwords(addrs, 1)[:, 0]) == [0, 102, 15, 100]
    with pytest.raises(MemoryAccessError) as info:
        mem.load_dwords(np.array([a, a + 64], np.uint64), 1)
    assert info.value.index == 1 and info.value.address == a + 64


# ---------------------------------------------------------------------------- kernels

LOAD_ADDR = """
s_load_dwordx4 s[4:7], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
"""


def test_global_fault_names_kernel_pc_inst_workgroup_wave_lane_and_address():
    src = LOAD_ADDR + """
v_add_u32 v1, 0x100, v1
global_load_dword v2, v1, s[4:5]
s_waitcnt vmcnt(0)
s_endpgm
"""
    data = np.zeros(100, np.uint32)   # 400 bytes: lanes 36.. run past the end
    with pytest.raises(EmulatorFault) as info:
        run(src, grid=3, args=[data, data])
    e = info.value
    assert e.kernel == "kernel" and e.pc == 0x10018
    assert e.inst.startswith("global_load_dword v2, v1, s[4:5]")
    assert e.workgroup == (0, 0, 0) and e.wave == 0 and e.lane == 36
    assert e.address is not None and "past the end" in str(e)
    assert "pc 0x10018" in str(e) and "lane 36" in str(e)


def test_global_loads_and_stores_of_all_widths():
    src = LOAD_ADDR + """
v_lshlrev_b32 v1, 4, v0
global_load_dwordx4 v[4:7], v1, s[4:5]
global_load_ubyte v8, v1, s[4:5] offset:1
global_load_sbyte v9, v1, s[4:5] offset:3
global_load_ushort v10, v1, s[4:5] offset:2
global_load_short_d16_hi v11, v1, s[4:5]
s_waitcnt vmcnt(0)
global_store_dwordx4 v1, v[4:7], s[6:7]
v_mov_b32 v12, 0
global_store_dword v1, v8, s[6:7] offset:1024
global_store_dword v1, v9, s[6:7] offset:1028
global_store_dword v1, v10, s[6:7] offset:1032
global_store_short_d16_hi v1, v11, s[6:7] offset:1036
global_store_byte v1, v12, s[6:7] offset:1037
s_endpgm
"""
    src_data = np.random.default_rng(1).integers(0, 2 ** 32, 256, dtype=np.uint32)
    out = np.zeros(512, np.uint32)
    emu, addrs, _ = run(src, args=[src_data, out])
    got = emu.memory.download(addrs[1], 512, np.uint32)
    assert np.array_equal(got[:256], src_data)
    b = src_data.view(np.uint8).reshape(64, 16)
    ext = got[256:].reshape(64, 4)
    assert np.array_equal(ext[:, 0], b[:, 1])
    assert np.array_equal(ext[:, 1], b[:, 3].astype(np.int8).astype(np.int32).view(np.uint32))
    assert np.array_equal(ext[:, 2], b[:, 2].astype(np.uint32) | b[:, 3].astype(np.uint32) << 8)
    assert np.array_equal(ext[:, 3] & 0xFF, b[:, 0])      # low byte of the short, high byte 0
    assert ((ext[:, 3] >> 8) & 0xFF == 0).all()


def test_flat_addresses_reach_global_memory():
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
v_mov_b32 v2, s4
v_mov_b32 v3, s5
v_add_co_u32 v2, vcc, v2, v1
s_nop 1
v_addc_co_u32 v3, vcc, 0, v3, vcc
flat_load_dword v4, v[2:3]
s_waitcnt vmcnt(0) lgkmcnt(0)
v_add_u32 v4, 1, v4
flat_store_dword v[2:3], v4
s_endpgm
"""
    data = np.arange(64, dtype=np.uint32)
    emu, addrs, _ = run(src, args=[data])
    assert np.array_equal(emu.memory.download(addrs[0], 64, np.uint32), data + 1)


def test_smem_loads_and_buffer_loads():
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
s_load_dwordx8 s[8:15], s[4:5], 0x10
s_mov_b32 s20, s4
s_and_b32 s21, s5, 0xffff
s_mov_b32 s22, 64
s_mov_b32 s23, 0x00020000
s_waitcnt lgkmcnt(0)
s_buffer_load_dword s16, s[20:23], 0x8
s_waitcnt lgkmcnt(0)
v_mov_b32 v1, s15
v_add_u32 v1, s16, v1
v_lshlrev_b32 v2, 2, v0
s_load_dwordx2 s[6:7], s[0:1], 8
s_waitcnt lgkmcnt(0)
global_store_dword v2, v1, s[6:7]
s_endpgm
"""
    data = np.arange(100, 164, dtype=np.uint32)
    out = np.zeros(64, np.uint32)
    emu, addrs, _ = run(src, args=[data, out])
    # s15 = data[4 + 7], s16 = data[2]
    assert (emu.memory.download(addrs[1], 64, np.uint32) == 111 + 102).all()


BUFFER = """
s_load_dwordx4 s[4:7], s[0:1], 0
s_load_dword s12, s[0:1], 16
s_waitcnt lgkmcnt(0)
s_mov_b32 s8, s4
s_and_b32 s9, s5, 0xffff
s_mov_b32 s10, s12
s_mov_b32 s11, 0x00020000
v_lshlrev_b32 v1, 2, v0
"""


def test_buffer_out_of_range_loads_return_zero_and_stores_are_dropped():
    src = BUFFER + """
buffer_load_dword v2, v1, s[8:11], 0 offen
buffer_load_dwordx2 v[4:5], v1, s[8:11], 0 offen offset:4
s_waitcnt vmcnt(0)
v_add_u32 v3, v2, v5
buffer_store_dword v3, v1, s[8:11], 0 offen
s_endpgm
"""
    data = np.arange(1, 65, dtype=np.uint32) * 10
    emu, addrs, _ = run(src, args=[data, data.copy(), 100])   # num_records = 100 bytes
    got = emu.memory.download(addrs[0], 64, np.uint32)
    want = data.copy()
    # Lane i: v2 = data[i] if 4i < 100; v5 = data[i + 2] if 4i + 8 < 100.
    for i in range(64):
        v2 = data[i] if 4 * i < 100 else 0
        v5 = data[i + 2] if 4 * i + 8 < 100 else 0
        if 4 * i < 100:
            want[i] = v2 + v5
    assert np.array_equal(got, want)


def test_buffer_structured_index_and_soffset():
    src = BUFFER + """
s_or_b32 s9, s9, 0x00080000
v_mov_b32 v2, v0
s_movk_i32 s13, 0x4
buffer_load_dword v3, v2, s[8:11], s13 idxen offset:0
s_waitcnt vmcnt(0)
v_lshlrev_b32 v4, 2, v0
global_store_dword v4, v3, s[6:7]
s_endpgm
"""
    data = np.arange(256, dtype=np.uint32)
    out = np.zeros(64, np.uint32)
    emu, addrs, _ = run(src, args=[data, out, 20])     # stride 8, 20 records
    got = emu.memory.download(addrs[1], 64, np.uint32)
    want = np.where(np.arange(64) < 20, 2 * np.arange(64) + 1, 0)
    assert np.array_equal(got, want)


def test_scratch_is_private_per_lane():
    src = """
v_lshlrev_b32 v1, 2, v0
v_mul_u32_u24 v2, 3, v0
scratch_store_dword off, v2, off offset:8
scratch_store_dword v1, v0, off offset:16
s_waitcnt vmcnt(0)
scratch_load_dword v3, off, off offset:8
s_waitcnt vmcnt(0)
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
global_store_dword v1, v3, s[4:5]
s_endpgm
"""
    out = np.zeros(128, np.uint32)
    kd = descriptor(scratch=512, enable_private_segment=1)
    emu, addrs, _ = run(src, args=[out], grid=2, kd=kd)
    assert np.array_equal(emu.memory.download(addrs[0], 64, np.uint32), 3 * np.arange(64))
    with pytest.raises(EmulatorFault, match="private segment"):
        run("scratch_store_dword off, v0, off offset:600\ns_endpgm", kd=kd)


def test_global_atomics_with_and_without_return():
    # The s_nop 0: an atomic may not join a VMEM soft clause after one that returns a value
    # (XNACK replay, on for gfx942's default "any"; llc puts the same nop there).
    src = LOAD_ADDR + """
v_mov_b32 v2, 1
v_mov_b32 v5, 0
global_atomic_add v5, v2, s[4:5]
global_atomic_add v3, v5, v2, s[4:5] offset:4 sc0
s_nop 0
global_atomic_umax v5, v0, s[4:5] offset:8
s_waitcnt vmcnt(0)
global_store_dword v1, v3, s[6:7]
s_endpgm
"""
    data = np.array([0, 1000, 0], np.uint32)
    out = np.zeros(128, np.uint32)
    emu, addrs, _ = run(src, args=[data, out], grid=2)
    got = emu.memory.download(addrs[0], 3, np.uint32)
    assert list(got) == [128, 1128, 63]
    ret = emu.memory.download(addrs[1], 64, np.uint32)
    # Returned values are the distinct pre-op values of the serialized adds.
    assert len(set(ret.tolist())) == 64 and ret.min() >= 1000


def test_float_and_cmpswap_atomics():
    src = LOAD_ADDR + """
v_mov_b32 v2, 0.5
v_mov_b32 v5, 0
global_atomic_add_f32 v5, v2, s[4:5]
v_mov_b32 v6, 7
v_mov_b32 v7, 0
global_atomic_cmpswap v9, v5, v[6:7], s[4:5] offset:4 sc0
s_waitcnt vmcnt(0)
global_store_dword v1, v9, s[6:7]
s_endpgm
"""
    data = np.array([0, 0], np.uint32)
    out = np.zeros(64, np.uint32)
    emu, addrs, _ = run(src, args=[data, out])
    got = emu.memory.download(addrs[0], 2, np.uint32)
    assert got[0] == np.float32(32.0).view(np.uint32) and got[1] == 7
    ret = emu.memory.download(addrs[1], 64, np.uint32)
    assert sorted(ret.tolist()) == [0] + [7] * 63


def test_fixed_address_allocations_for_code_object_images():
    mem = DeviceMemory()
    a = mem.alloc(64)
    img = mem.alloc_at(0x1000, 0x3000, name="image")
    assert img == 0x1000 and mem.find(0x2FFF).name == "image"
    mem.write(0x2000, np.arange(4, dtype=np.uint32))
    addrs = np.array([0x2004, a], np.uint64)
    assert list(mem.load_dwords(addrs, 1)[:, 0]) == [1, 0]
    with pytest.raises(MemoryAccessError, match="overlaps"):
        mem.alloc_at(0x3FF0, 0x100)
    b = mem.alloc(16)
    assert b > a and mem.find(b) is not None
