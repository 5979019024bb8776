"""Emulator SALU / SOPP semantics: results, SCC, 64-bit ops, branches, EXEC manipulation."""

from __future__ import annotations

import numpy as np
import pytest
from test_emu_asm import vrun


def sgprs(body: str, names, **kw) -> dict[str, int]:
    """Run a scalar snippet; return each named SGPR (or s[a:b] pair, or scc) as an int."""
    outs = []
    pre = []
    for n in names:
        if n == "scc":
            pre.append("s_cselect_b32 s39, 1, 0")
            outs.append("s39")
        else:
            outs.append(n)
    out = vrun(body + ("\n" + "\n".join(pre) if pre else ""), {}, tuple(outs), **kw)
    res = {}
    for n, o in zip(names, outs):
        v = out[o]
        res[n] = int(v[0]) if v.ndim == 1 else int(v[0, 0]) | int(v[0, 1]) << 32
    return res


@pytest.mark.parametrize(("body", "want"), [
    ("s_mov_b32 s4, -5\ns_add_u32 s5, s4, 7", {"s5": 2, "scc": 1}),
    ("s_mov_b32 s4, 0x7fffffff\ns_add_i32 s5, s4, 1", {"s5": 0x80000000, "scc": 1}),
    ("s_mov_b32 s4, 3\ns_sub_u32 s5, s4, 5", {"s5": 0xFFFFFFFE, "scc": 1}),
    ("s_mov_b32 s4, 3\ns_sub_u32 s5, 5, s4", {"s5": 2, "scc": 0}),
    ("s_mov_b32 s4, -1\ns_add_u32 s5, s4, 1\ns_addc_u32 s6, 0, 0", {"s5": 0, "s6": 1}),
    ("s_mov_b32 s4, -7\ns_ashr_i32 s5, s4, 1", {"s5": 0xFFFFFFFC, "scc": 1}),
    ("s_mov_b32 s4, 0x80000000\ns_lshr_b32 s5, s4, 31", {"s5": 1, "scc": 1}),
    ("s_mov_b32 s4, 1\ns_lshl_b32 s5, s4, 32", {"s5": 1}),          # shift amount mod 32
    ("s_mov_b32 s4, 5\ns_max_i32 s5, s4, -3", {"s5": 5, "scc": 1}),
    ("s_mov_b32 s4, 5\ns_max_u32 s5, s4, 5", {"s5": 5, "scc": 1}),   # SCC: s0 >= s1
    ("s_mov_b32 s4, 5\ns_min_u32 s5, s4, -1", {"s5": 5, "scc": 1}),
    ("s_mov_b32 s4, 0x12345678\ns_bfe_u32 s5, s4, 0x80004", {"s5": 0x67, "scc": 1}),
    ("s_mov_b32 s4, 0xF0\ns_bfe_i32 s5, s4, 0x40004", {"s5": 0xFFFFFFFF, "scc": 1}),
    ("s_mov_b32 s4, 0x00010000\ns_ff1_i32_b32 s5, s4", {"s5": 16}),
    ("s_mov_b32 s4, 0\ns_ff1_i32_b32 s5, s4", {"s5": 0xFFFFFFFF}),
    ("s_mov_b32 s4, 0x00010000\ns_flbit_i32_b32 s5, s4", {"s5": 15}),
    ("s_mov_b32 s4, 0xFFFF0000\ns_flbit_i32 s5, s4", {"s5": 16}),
    ("s_mov_b32 s4, 0x0F0F\ns_bcnt1_i32_b32 s5, s4", {"s5": 8, "scc": 1}),
    ("s_mov_b32 s4, 0x80\ns_sext_i32_i8 s5, s4", {"s5": 0xFFFFFF80}),
    ("s_mov_b32 s4, 0x1\ns_brev_b32 s5, s4", {"s5": 0x80000000}),
    ("s_mov_b32 s4, -1\ns_mul_hi_u32 s5, s4, s4", {"s5": 0xFFFFFFFE}),
    ("s_mov_b32 s4, -2\ns_mul_hi_i32 s5, s4, 3", {"s5": 0xFFFFFFFF}),
    ("s_mov_b32 s4, 100000\ns_mul_i32 s5, s4, s4", {"s5": (100000 * 100000) % 2 ** 32}),
    ("s_mov_b32 s4, 3\ns_lshl2_add_u32 s5, s4, 10", {"s5": 22, "scc": 0}),
    ("s_mov_b32 s4, 0x7ff\ns_lshl4_add_u32 s5, s4, 0x7ffff800", {"s5": 0x800077F0, "scc": 0}),
    ("s_mov_b32 s4, 3\ns_movk_i32 s5, 0x8000", {"s5": 0xFFFF8000}),
    ("s_movk_i32 s5, 7\ns_addk_i32 s5, 0xffff", {"s5": 6}),
    ("s_movk_i32 s5, 7\ns_mulk_i32 s5, 3", {"s5": 21}),
    ("s_mov_b32 s4, 5\ns_cmpk_lt_u32 s4, 6", {"scc": 1}),
    ("s_mov_b32 s4, -1\ns_cmp_lt_i32 s4, 0", {"scc": 1}),
    ("s_mov_b32 s4, -1\ns_cmp_lt_u32 s4, 0", {"scc": 0}),
    ("s_mov_b32 s4, 9\ns_bitcmp1_b32 s4, 3", {"scc": 1}),
    ("s_mov_b32 s4, 9\ns_cmp_eq_u32 s4, 9\ns_cselect_b32 s5, 11, 22", {"s5": 11}),
    ("s_mov_b32 s4, 0x0000FFFF\ns_mov_b32 s6, 0xFF00FF00\ns_andn2_b32 s5, s4, s6",
     {"s5": 0x00FF, "scc": 1}),
    ("s_mov_b32 s4, 0\ns_mov_b32 s6, 0\ns_nor_b32 s5, s4, s6", {"s5": 0xFFFFFFFF}),
    ("s_mov_b32 s4, 0x12\ns_pack_ll_b32_b16 s5, s4, 0x34", {"s5": 0x00340012}),
    ("s_mov_b32 s4, 0x12345678\ns_pack_hh_b32_b16 s5, s4, s4", {"s5": 0x12341234}),
    ("s_mov_b32 s4, 0xAB\ns_bitset1_b32 s4, 4", {"s4": 0xBB}),
    ("s_mov_b32 s4, 5\ns_absdiff_i32 s5, s4, 9", {"s5": 4, "scc": 1}),
    ("s_mov_b32 s4, -5\ns_abs_i32 s5, s4", {"s5": 5, "scc": 1}),
])
def test_sop_32_bit(body, want):
    got = sgprs(body, list(want))
    assert got == want


@pytest.mark.parametrize(("body", "want"), [
    ("s_mov_b32 s4, 0\ns_mov_b32 s5, 1\ns_lshl_b64 s[6:7], s[4:5], 4", {"s[6:7]": 1 << 36}),
    ("s_mov_b32 s4, 0\ns_mov_b32 s5, 0x80000000\ns_ashr_i64 s[6:7], s[4:5], 63",
     {"s[6:7]": 2 ** 64 - 1, "scc": 1}),
    ("s_mov_b64 s[4:5], -1\ns_and_b64 s[6:7], s[4:5], 0", {"s[6:7]": 0, "scc": 0}),
    ("s_mov_b32 s4, 0\ns_mov_b32 s5, 1\ns_bcnt1_i32_b64 s6, s[4:5]", {"s6": 1}),
    ("s_mov_b32 s4, 0\ns_mov_b32 s5, 8\ns_ff1_i32_b64 s6, s[4:5]", {"s6": 35}),
    ("s_mov_b32 s4, 0x12345678\ns_mov_b32 s5, 0x9abcdef0\ns_bfe_u64 s[6:7], s[4:5], "
     "0x100018", {"s[6:7]": 0xF012}),
    ("s_mov_b32 s4, 0\ns_mov_b32 s5, 0\ns_cmp_eq_u64 s[4:5], 0", {"scc": 1}),
    ("s_mov_b64 s[4:5], 7\ns_not_b64 s[6:7], s[4:5]", {"s[6:7]": 2 ** 64 - 8, "scc": 1}),
    ("s_mov_b32 s4, 1\ns_mov_b32 s5, 0\ns_cmp_eq_u32 s4, 1\n"
     "s_cselect_b64 s[6:7], s[4:5], -1", {"s[6:7]": 1}),
])
def test_sop_64_bit(body, want):
    assert sgprs(body, list(want)) == want


def test_getpc_and_setpc_jump():
    body = """
s_getpc_b64 s[4:5]
s_add_u32 s4, s4, 16
s_addc_u32 s5, s5, 0
s_setpc_b64 s[4:5]
s_mov_b32 s6, 1
s_mov_b32 s6, 2
s_mov_b32 s7, 3
"""
    got = sgprs("s_mov_b32 s6, 0\n" + body, ["s6", "s7"])
    # getpc returns the address of the next instruction (the s_add); +16 lands on s6 = 2.
    assert got == {"s6": 2, "s7": 3}


def test_swappc_calls_and_returns():
    body = """
s_mov_b32 s8, 0
s_getpc_b64 s[4:5]
s_add_u32 s4, s4, 24
s_addc_u32 s5, s5, 0
s_swappc_b64 s[30:31], s[4:5]
s_add_u32 s8, s8, 100
s_branch done
func:
s_add_u32 s8, s8, 1
s_setpc_b64 s[30:31]
done:
"""
    assert sgprs(body, ["s8"]) == {"s8": 101}


def test_loop_with_scc_branch():
    body = """
s_mov_b32 s4, 0
s_mov_b32 s5, 0
loop:
s_add_u32 s5, s5, s4
s_add_u32 s4, s4, 1
s_cmp_lt_u32 s4, 10
s_cbranch_scc1 loop
"""
    assert sgprs(body, ["s5"]) == {"s5": 45}


def test_saveexec_and_exec_branches():
    body = """
v_mov_b32 v3, 0
v_cmp_gt_u32 vcc, 8, v1
s_and_saveexec_b64 s[4:5], vcc
s_cbranch_execz skip
v_mov_b32 v3, 1
skip:
s_or_b64 exec, exec, s[4:5]
v_cmp_gt_u32 vcc, 0, v1
s_and_saveexec_b64 s[6:7], vcc
s_cbranch_execz skip2
v_mov_b32 v3, 2
skip2:
s_mov_b64 exec, s[6:7]
"""
    out = vrun(body, {"v1": np.arange(64, dtype=np.uint32)}, ("v3", "s[4:5]", "s[6:7]"))
    assert np.array_equal(out["v3"], (np.arange(64) < 8).astype(np.uint32))
    assert int(out["s[4:5]"][0, 0]) == 0xFFFFFFFF and int(out["s[4:5]"][0, 1]) == 0xFFFFFFFF


def test_partial_wave_exec_and_vccz():
    # A block of 40 work-items: EXEC covers lanes 0..39.
    out = vrun("s_mov_b64 s[4:5], exec\nv_cmp_eq_u32 vcc, 99, v0\ns_cbranch_vccz novcc\n"
               "s_mov_b32 s6, 1\nnovcc:", {}, ("s[4:5]", "s6"), block=40)
    assert int(out["s[4:5]"][0, 0]) == 0xFFFFFFFF and int(out["s[4:5]"][0, 1]) == 0xFF
    assert int(out["s6"][0]) != 1


def test_s_trap_faults():
    from asterism.emu import EmulatorFault

    with pytest.raises(EmulatorFault) as info:
        vrun("s_trap 2", {}, ())
    assert info.value.pc is not None and "s_trap" in str(info.value)


def test_s_memtime_is_monotonic():
    out = sgprs("s_memtime s[4:5]\ns_waitcnt lgkmcnt(0)\ns_nop 0\ns_memtime s[6:7]\n"
                "s_waitcnt lgkmcnt(0)", ["s[4:5]", "s[6:7]"])
    assert out["s[6:7]"] > out["s[4:5]"]
