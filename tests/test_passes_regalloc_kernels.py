"""End-to-end kernels written with relocatable registers only (explicit waits, no pinned
registers but the ABI inputs), allocated by `regalloc` and run on the emulator (sanitizer
on) against NumPy: a row reduction with loop-carried partial sums and an MFMA GEMM tile
whose accumulator goes around a K loop."""

from __future__ import annotations

import numpy as np
import pytest

import asterism
from asterism.builder import KernelBuilder

ROWS, COLS = 64, 32


def build_row_sum(unroll: int = 4):
    """out[r] = sum of row r of a ROWS x COLS u32 matrix; one row per work-item, `unroll`
    partial sums carried around the loop, combined at the end."""
    kb = KernelBuilder("row_sum")
    x = kb.arg_buffer("x", "u32", "read_only")
    out = kb.arg_buffer("out", "u32", "write_only")
    kp = kb.kernarg_ptr()
    px = kb.s_load_dwordx2(None, kp, x)
    po = kb.s_load_dwordx2(None, kp, out)
    tid = kb.workitem_id("x")
    addr = kb.v_mul_u32_u24(None, COLS * 4, tid)  # byte offset of the row
    parts = [kb.v_mov_b32(None, 0) for _ in range(unroll)]
    count = kb.s_mov_b32(None, COLS // unroll)
    kb.s_waitcnt(lgkmcnt=0)
    loop = kb.label("loop")
    vals = [kb.global_load_dword(None, addr, px, offset=4 * k) for k in range(unroll)]
    kb.s_waitcnt(vmcnt=0)
    for k in range(unroll):
        parts[k] = kb.v_add_u32(parts[k], parts[k], vals[k])  # the chain goes around
    addr = kb.v_add_u32(addr, 4 * unroll, addr)
    count = kb.s_sub_u32(count, count, 1)
    kb.s_cmp_lg_u32(count, 0)
    kb.s_cbranch_scc1(loop)
    while len(parts) > 1:
        parts = [kb.v_add_u32(None, a, b) for a, b in zip(parts[::2], parts[1::2])]
    oaddr = kb.v_lshlrev_b32(None, 2, tid)
    kb.global_store_dword(oaddr, parts[0], po)
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("unroll", [1, 4, 8])
def test_row_reduction(unroll):
    module = build_row_sum(unroll)
    # hazards: the last kernel-argument load may overwrite the kernarg pointer it reads in
    # the same SMEM soft clause (XNACK: an s_nop 0 between them)
    hsaco = asterism.compile(module, pipeline="regalloc,hazards")
    rng = np.random.default_rng(unroll)
    x = rng.integers(0, 1 << 20, size=(ROWS, COLS), dtype=np.uint32)
    out = np.zeros(ROWS, np.uint32)
    asterism.launch(hsaco, "row_sum", grid=1, block=64, args=[x, out], backend="emu")
    np.testing.assert_array_equal(out, x.sum(axis=1, dtype=np.uint32))


K = 64


def build_gemm_tile():
    """Ct = (A @ B)^T for A 16 x K and B given transposed (Bt 16 x K), f16 in, f32 out,
    with v_mfma_f32_16x16x16_f16 over K/16 loop iterations. Lane l loads A[l % 16][16 kb +
    4 (l // 16) + 0..3] (and the same of Bt) and holds C[4 (l // 16) + 0..3][l % 16]."""
    kb = KernelBuilder("gemm16")
    a = kb.arg_buffer("a", "f16", "read_only")
    bt = kb.arg_buffer("bt", "f16", "read_only")
    ct = kb.arg_buffer("ct", "f32", "write_only")
    kp = kb.kernarg_ptr()
    pa = kb.s_load_dwordx2(None, kp, a)
    pb = kb.s_load_dwordx2(None, kp, bt)
    pc = kb.s_load_dwordx2(None, kp, ct)
    tid = kb.workitem_id("x")
    row = kb.v_and_b32(None, 15, tid)
    quad = kb.v_lshrrev_b32(None, 4, tid)
    off = kb.v_add_u32(None, kb.v_mul_u32_u24(None, 2 * K, row),
                       kb.v_lshlrev_b32(None, 3, quad))
    zero_a, zero_b = kb.v_mov_b64(None, 0), kb.v_mov_b64(None, 0)
    kb.s_nop(1)  # VALU result read by an MFMA: 2 wait states (placed by hand)
    acc = kb.v_mfma_f32_16x16x16_f16(kb.vregs(4, align=2), zero_a, zero_b, 0)
    count = kb.s_mov_b32(None, K // 16)
    kb.s_waitcnt(lgkmcnt=0)
    loop = kb.label("k")
    fa = kb.global_load_dwordx2(None, off, pa)
    fb = kb.global_load_dwordx2(None, off, pb)
    kb.s_waitcnt(vmcnt=0)
    acc = kb.v_mfma_f32_16x16x16_f16(acc, fa, fb, acc)
    off = kb.v_add_u32(off, 32, off)
    count = kb.s_sub_u32(count, count, 1)
    kb.s_cmp_lg_u32(count, 0)
    kb.s_cbranch_scc1(loop)
    caddr = kb.v_add_u32(None, kb.v_lshlrev_b32(None, 6, row), kb.v_lshlrev_b32(None, 4, quad))
    kb.s_nop(7)  # MFMA result read by a store: the pass count of wait states
    kb.global_store_dwordx4(caddr, acc, pc)
    kb.s_endpgm()
    return kb.finish()


def test_mfma_gemm_tile():
    module = build_gemm_tile()
    hsaco = asterism.compile(module, pipeline="regalloc,hazards")  # (XNACK clause: see above)
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, size=(16, K)).astype(np.float16)
    b = rng.integers(-3, 4, size=(K, 16)).astype(np.float16)
    ct = np.zeros((16, 16), np.float32)
    asterism.launch(hsaco, "gemm16", grid=1, block=64,
                    args=[a, np.ascontiguousarray(b.T), ct], backend="emu")
    expected = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(ct.T, expected)
