"""Emulator scheduling and checking: dispatch ABI, divergence, barriers, budget, the
sanitizer (missing s_waitcnt) and the hazard checker (missing s_nop), unsupported ops."""

from __future__ import annotations

import numpy as np
import pytest
from test_emu_asm import descriptor, program, run, vrun

from asterism.emu import (
    BudgetExceeded,
    DeviceMemory,
    Emulator,
    SanitizerError,
    UnsupportedInstruction,
)
from asterism.target.hazards import RULES, rules_for

# ---------------------------------------------------------------------------- dispatch ABI


def test_dispatch_abi_sgprs_and_packed_workitem_ids():
    src = """
s_load_dwordx2 s[20:21], s[2:3], 0
s_waitcnt lgkmcnt(0)
v_and_b32 v1, 0x3ff, v0
v_bfe_u32 v2, v0, 10, 10
v_bfe_u32 v3, v0, 20, 10
v_mov_b32 v4, s4
v_mov_b32 v5, s5
v_mov_b32 v6, s6
s_load_dword s9, s[0:1], 4
s_waitcnt lgkmcnt(0)
v_mov_b32 v7, s9
v_mov_b32 v8, 0
v_mov_b32 v12, v1
v_mov_b32 v13, v2
v_mov_b32 v14, v3
v_mov_b32 v15, v4
v_mov_b32 v16, v5
v_mov_b32 v17, v6
v_mov_b32 v18, v7
v_mov_b32 v19, v8
v_lshlrev_b32 v9, 5, v0
v_and_b32 v10, 0x3ff, v0
v_lshlrev_b32 v10, 5, v10
v_readfirstlane_b32 s10, v0
v_lshl_add_u32 v11, v2, 8, v10
v_lshl_add_u32 v11, v3, 10, v11
s_mul_i32 s11, s5, 3
s_add_u32 s11, s11, s4
s_mul_i32 s11, s11, 2048
v_add_u32 v11, s11, v11
global_store_dwordx4 v11, v[12:15], s[20:21]
global_store_dwordx4 v11, v[16:19], s[20:21] offset:16
s_endpgm
"""
    # User SGPRs: dispatch ptr s[0:1], kernarg ptr s[2:3]; then workgroup ids x/y/z s4..s6.
    kd = descriptor(sgprs=32, enable_sgpr_dispatch_ptr=1, enable_sgpr_workgroup_id_x=1,
                    enable_sgpr_workgroup_id_y=1, enable_sgpr_workgroup_id_z=1, dims=2)
    grid, block = (3, 2, 1), (8, 4, 2)
    emu, addrs, stats = run(src, args=[np.zeros(6 * 2048 // 4, np.uint32)],
                            grid=grid, block=block, kd=kd)
    assert stats.workgroups == 6 and stats.waves == 6
    raw = emu.memory.download(addrs[0], 6 * 2048 // 4, np.uint32)
    for wy in range(2):
        for wx in range(3):
            base = (wy * 3 + wx) * 2048 // 4
            for z in range(2):
                for y in range(4):
                    for x in range(8):
                        rec = raw[base + (z * 1024 + y * 256 + x * 32) // 4:][:8]
                        assert list(rec[:7]) == [x, y, z, wx, wy, 0, (8 | 4 << 16)], (
                            wx, wy, x, y, z, list(rec))


def test_partial_waves_and_block_not_a_multiple_of_64():
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
s_lshl_b32 s6, s2, 9
v_add_u32 v1, s6, v1
v_mov_b32 v2, 1
global_store_dword v1, v2, s[4:5]
s_endpgm
"""
    out = np.zeros(4 * 128, np.uint32)
    kd = descriptor(enable_sgpr_workgroup_id_x=1)
    emu, addrs, stats = run(src, args=[out], grid=4, block=100, kd=kd)
    got = emu.memory.download(addrs[0], 512, np.uint32).reshape(4, 128)
    assert (got[:, :100] == 1).all() and (got[:, 100:] == 0).all()
    assert stats.waves == 8


# ---------------------------------------------------------------------------- divergence


def test_divergent_waves_split_and_merge():
    # Each wave loops s2 + 1 times (workgroup id): waves diverge, then re-merge at the end.
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_mov_b32 v1, 0
s_mov_b32 s6, 0
loop:
v_add_u32 v1, 3, v1
s_add_u32 s6, s6, 1
s_cmp_le_u32 s6, s2
s_cbranch_scc1 loop
v_lshlrev_b32 v2, 2, v0
s_lshl_b32 s7, s2, 8
v_add_u32 v2, s7, v2
global_store_dword v2, v1, s[4:5]
s_endpgm
"""
    out = np.zeros(8 * 64, np.uint32)
    kd = descriptor(enable_sgpr_workgroup_id_x=1)
    emu, addrs, stats = run(src, args=[out], grid=8, kd=kd)
    got = emu.memory.download(addrs[0], 512, np.uint32).reshape(8, 64)
    assert np.array_equal(got[:, 0], 3 * (np.arange(8) + 1))
    assert stats.splits >= 1 and stats.merges >= 1
    assert stats.max_wave_instructions > stats.wave_instructions / 8


def test_lane_divergence_inside_a_wave_uses_exec():
    body = """
v_and_b32 v2, 1, v1
v_cmp_eq_u32 vcc, 0, v2
s_and_saveexec_b64 s[4:5], vcc
v_mul_lo_u32 v3, v1, 10
s_xor_b64 exec, exec, s[4:5]
v_mov_b32 v3, 1
s_or_b64 exec, exec, s[4:5]
"""
    x = np.arange(64, dtype=np.uint32)
    out = vrun(body, {"v1": x}, ("v3",))
    assert np.array_equal(out["v3"], np.where(x % 2 == 0, x * 10, 1))


def test_barrier_orders_the_waves_of_a_workgroup():
    # Wave 0 stalls in a loop before the barrier; the others must wait for it.
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
v_readfirstlane_b32 s6, v0
s_cmp_eq_u32 s6, 0
s_cbranch_scc0 skip
s_mov_b32 s7, 50
spin:
s_sub_u32 s7, s7, 1
s_cmp_lg_u32 s7, 0
s_cbranch_scc1 spin
v_mov_b32 v1, 0
v_mov_b32 v2, 77
s_waitcnt lgkmcnt(0)
global_store_dword v1, v2, s[4:5]
skip:
s_waitcnt vmcnt(0) lgkmcnt(0)
s_barrier
v_mov_b32 v1, 0
global_load_dword v3, v1, s[4:5]
v_lshlrev_b32 v4, 2, v0
s_waitcnt vmcnt(0)
global_store_dword v4, v3, s[4:5] offset:4
s_endpgm
"""
    out = np.zeros(1 + 256, np.uint32)
    emu, addrs, _ = run(src, args=[out], block=256)
    got = emu.memory.download(addrs[0], 257, np.uint32)
    assert (got[1:] == 77).all()


def test_waves_that_ended_do_not_block_a_barrier():
    src = """
v_readfirstlane_b32 s6, v0
s_cmp_eq_u32 s6, 0
s_cbranch_scc1 done
s_barrier
done:
s_endpgm
"""
    _, _, stats = run(src, block=256)
    assert stats.waves == 4


# ---------------------------------------------------------------------------- budget etc.


def test_instruction_budget_stops_runaway_loops():
    with pytest.raises(BudgetExceeded) as info:
        run("loop:\ns_branch loop", instruction_budget=1000)
    e = info.value
    assert e.pc is not None and "budget" in str(e) and e.workgroup == (0, 0, 0)


def test_unimplemented_instructions_stop_with_their_name():
    with pytest.raises(UnsupportedInstruction, match="s_sendmsg"):
        run("s_sendmsg sendmsg(MSG_INTERRUPT)\ns_endpgm")


def test_falling_off_the_end_is_an_error():
    from asterism.emu import EmulatorError

    with pytest.raises(EmulatorError, match="s_endpgm"):
        run("s_nop 0")


# ---------------------------------------------------------------------------- sanitizer

LOADS = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
global_load_dword v2, v1, s[4:5]
global_load_dword v3, v1, s[4:5] offset:256
"""


def _data():
    return [np.arange(128, dtype=np.uint32)]


def test_sanitizer_catches_a_missing_vmcnt_wait():
    with pytest.raises(SanitizerError) as info:
        run(LOADS + "v_add_u32 v4, v2, v3\ns_endpgm", args=_data())
    e = info.value
    assert e.needed == "s_waitcnt vmcnt(0)"
    assert e.pc == 0x10020 and e.inst.startswith("v_add_u32")
    assert "s_waitcnt vmcnt(0)" in str(e) and "0x10020" in str(e)


def test_sanitizer_accepts_in_order_partial_waits():
    # vmcnt(1): the first load (v2) is complete, the second may not be.
    run(LOADS + "s_waitcnt vmcnt(1)\nv_mov_b32 v4, v2\ns_waitcnt vmcnt(0)\n"
        "v_add_u32 v4, v4, v3\ns_endpgm", args=_data())
    with pytest.raises(SanitizerError) as info:
        run(LOADS + "s_waitcnt vmcnt(1)\nv_mov_b32 v4, v3\ns_endpgm", args=_data())
    assert info.value.needed == "s_waitcnt vmcnt(0)"


def test_sanitizer_treats_smem_as_out_of_order():
    src = """
s_load_dword s4, s[0:1], 0
s_load_dword s5, s[0:1], 4
s_waitcnt lgkmcnt(1)
s_mov_b32 s6, s4
s_endpgm
"""
    with pytest.raises(SanitizerError) as info:
        run(src, args=[1, 2])
    assert info.value.needed == "s_waitcnt lgkmcnt(0)"


def test_sanitizer_catches_overwriting_a_pending_load_destination():
    with pytest.raises(SanitizerError, match="vmcnt"):
        run(LOADS + "v_mov_b32 v2, 0\ns_endpgm", args=_data())


def test_sanitizer_catches_clobbered_store_data_in_strict_mode():
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
global_store_dword v1, v0, s[4:5]
v_mov_b32 v0, 0
s_endpgm
"""
    run(src, args=_data())     # the hardware reads store data at issue: fine by default
    with pytest.raises(SanitizerError, match="store"):
        run(src, args=_data(), strict_store_data=True)


def test_sanitizer_quiet_on_a_correct_kernel_and_off_switch():
    run(LOADS + "s_waitcnt vmcnt(0)\nv_add_u32 v4, v2, v3\n"
        "global_store_dword v1, v4, s[4:5]\ns_endpgm", args=_data())
    run(LOADS + "v_add_u32 v4, v2, v3\ns_endpgm", args=_data(), sanitizer=False)


def test_lds_waits_are_checked_too():
    src = """
v_lshlrev_b32 v1, 2, v0
ds_write_b32 v1, v0
ds_read_b32 v2, v1
v_add_u32 v3, 1, v2
s_endpgm
"""
    with pytest.raises(SanitizerError) as info:
        run(src, kd=descriptor(lds=256))
    assert info.value.needed == "s_waitcnt lgkmcnt(0)"


# ---------------------------------------------------------------------------- hazards


def test_hazard_table_is_data_with_docs_and_differs_per_target():
    assert all(r.doc and r.name for r in RULES)
    names942 = {r.name for r in rules_for("gfx942")}
    names950 = {r.name for r in rules_for("gfx950")}
    assert names942 != names950
    assert len({r.name for r in RULES}) == len(RULES)


def test_missing_nop_for_readlane_lane_select_written_by_valu():
    bad = "v_readfirstlane_b32 s4, v1\nv_readlane_b32 s5, v1, s4"
    with pytest.raises(SanitizerError) as info:
        vrun(bad, {"v1": np.arange(64, dtype=np.uint32)}, ("s5",))
    assert info.value.needed.startswith("s_nop")
    out = vrun("v_readfirstlane_b32 s4, v1\ns_nop 3\nv_readlane_b32 s5, v1, s4",
               {"v1": np.arange(64, dtype=np.uint32) + 5}, ("s5",))
    assert out["s5"][0] == 10


def test_missing_nop_for_valu_sgpr_used_by_vmem_address():
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_readfirstlane_b32 s6, v0
v_lshlrev_b32 v1, 2, v0
global_store_dword v1, v0, s[4:5] offset:0
v_readfirstlane_b32 s4, v2
global_store_dword v1, v0, s[4:5]
s_endpgm
"""
    with pytest.raises(SanitizerError) as info:
        run(src, args=_data())
    assert "s_nop 4" in info.value.needed
    run(src.replace("v_readfirstlane_b32 s4, v2\n", "v_readfirstlane_b32 s4, v2\ns_nop 4\n")
        .replace("v_readfirstlane_b32 s4, v2", "v_readfirstlane_b32 s7, v2"), args=_data())


def test_hazards_can_be_switched_off_separately():
    bad = "v_readfirstlane_b32 s4, v1\nv_readlane_b32 s5, v1, s4"
    vrun(bad, {"v1": np.arange(64, dtype=np.uint32)}, ("s5",), hazards=False)


def test_compiled_program_reused_across_runs():
    emu = Emulator("gfx942", DeviceMemory())
    prog = program("v_mov_b32 v1, 1\ns_endpgm")
    comp = emu.compile(prog)
    for _ in range(2):
        stats = emu.run(comp, descriptor(), grid=2, block=64)
        assert stats.wave_instructions == 4
