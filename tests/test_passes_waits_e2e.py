"""End to end: kernels written without any s_waitcnt or s_nop compile with `waits,hazards`
(or `auto`) and run on the emulator with the sanitizer on, matching NumPy; with one of the
placed waits or nops removed, the sanitizer catches it (so these tests can fail).

The GEMM kernel: D(32x32) = 2 * sum over k-steps of A_k(32x8) @ B_k(8x32) with
v_mfma_f32_32x32x8_f16 (8 passes), the A/B fragments of step k+1 prefetched while step k
computes (a software-pipelined loop: the MFMA of step k waits for its own fragments with the
next two loads still in flight, vmcnt(2)), SMEM kernel arguments, a VALU epilogue on the
accumulators right after the loop (MFMA result read: 11 wait states on gfx942, 12 on gfx950)
and 128-bit stores.
"""

from __future__ import annotations

import numpy as np
import pytest

import asterism
from asterism import api
from asterism.builder import KernelBuilder
from asterism.emu import mfma as mf
from asterism.emu.errors import SanitizerError
from asterism.ir import parse_ir, print_ir
from asterism.mc.printer import format_inst

MFMA = "v_mfma_f32_32x32x8_f16"
STEPS = 3


def gemm_fixed(target: str):
    """The GEMM kernel with fixed registers and no waits or nops."""
    kb = KernelBuilder("gemm", target)
    a = kb.arg_buffer("a", "f16", "read_only")
    b = kb.arg_buffer("b", "f16", "read_only")
    d = kb.arg_buffer("d", "f32", "write_only")
    steps = kb.arg_value("steps", "i32")
    kp = kb.kernarg_ptr()
    kb.s_load_dwordx2(kb.s[4:6], kp, a)
    kb.s_load_dwordx2(kb.s[6:8], kp, b)
    kb.s_load_dwordx2(kb.s[8:10], kp, d)
    kb.s_load_dword(kb.s(10), kp, steps)
    tid = kb.workitem_id("x")
    kb.v_lshlrev_b32(kb.v(1), 3, tid)            # 8 bytes of A (and of B) per lane and step
    kb.v_lshlrev_b32(kb.v(6), 6, tid)            # 64 bytes of D per lane
    kb.global_load_dwordx2(kb.v[2:4], kb.v(1), kb.s[4:6])
    kb.global_load_dwordx2(kb.v[4:6], kb.v(1), kb.s[6:8])
    for r in range(16, 32):
        kb.v_mov_b32(kb.v(r), 0)
    top = kb.label("loop")
    kb.v_add_u32(kb.v(1), 512, kb.v(1))         # the next step (the last one prefetches a pad)
    kb.global_load_dwordx2(kb.v[12:14], kb.v(1), kb.s[4:6])
    kb.global_load_dwordx2(kb.v[14:16], kb.v(1), kb.s[6:8])
    kb.v_mfma_f32_32x32x8_f16(kb.v[16:32], kb.v[2:4], kb.v[4:6], kb.v[16:32])
    for r in range(4):
        kb.v_mov_b32(kb.v(2 + r), kb.v(12 + r))
    kb.s_sub_u32(kb.s(10), kb.s(10), 1)
    kb.s_cmp_lg_u32(kb.s(10), 0)
    kb.s_cbranch_scc1(top)
    for r in range(16, 32):
        kb.v_mul_f32(kb.v(r), 2.0, kb.v(r))
    for i in range(4):
        kb.global_store_dwordx4(kb.v(6), kb.v[16 + 4 * i:20 + 4 * i], kb.s[8:10],
                                offset=16 * i)
    kb.s_endpgm()
    return kb.finish()


def gemm_relocatable(target: str):
    """D(16x16) = sum of A_k(16x16) @ B_k(16x16) with v_mfma_f32_16x16x16_f16 and
    relocatable registers only (for the `auto` pipeline): step 0 peeled (C = 0), the loop
    prefetches the next step, the accumulator is stored right after the loop."""
    kb = KernelBuilder("gemm", target)
    a = kb.arg_buffer("a", "f16", "read_only")
    b = kb.arg_buffer("b", "f16", "read_only")
    d = kb.arg_buffer("d", "f32", "write_only")
    steps = kb.arg_value("steps", "i32")
    kp = kb.kernarg_ptr()
    pa = kb.s_load_dwordx2(None, kp, a)
    pb = kb.s_load_dwordx2(None, kp, b)
    pd = kb.s_load_dwordx2(None, kp, d)
    count = kb.s_load_dword(None, kp, steps)
    tid = kb.workitem_id("x")
    off = kb.v_lshlrev_b32(None, 3, tid)
    out_off = kb.v_lshlrev_b32(None, 4, tid)
    fa = kb.global_load_dwordx2(kb.vregs(2, align=2), off, pa)
    fb = kb.global_load_dwordx2(kb.vregs(2, align=2), off, pb)
    off = kb.v_add_u32(off, 512, off)
    na = kb.global_load_dwordx2(kb.vregs(2, align=2), off, pa)
    nb = kb.global_load_dwordx2(kb.vregs(2, align=2), off, pb)
    acc = kb.v_mfma_f32_16x16x16_f16(kb.vregs(4, align=4), fa, fb, 0)
    fa = kb.v_mov_b64(fa, na)
    fb = kb.v_mov_b64(fb, nb)
    count = kb.s_sub_u32(count, count, 1)
    top = kb.label("loop")
    off = kb.v_add_u32(off, 512, off)
    na = kb.global_load_dwordx2(na, off, pa)
    nb = kb.global_load_dwordx2(nb, off, pb)
    acc = kb.v_mfma_f32_16x16x16_f16(acc, fa, fb, acc)
    fa = kb.v_mov_b64(fa, na)
    fb = kb.v_mov_b64(fb, nb)
    count = kb.s_sub_u32(count, count, 1)
    kb.s_cmp_lg_u32(count, 0)
    kb.s_cbranch_scc1(top)
    kb.global_store_dwordx4(out_off, acc, pd)
    kb.s_endpgm()
    return kb.finish()


def inputs(target: str, mnemonic: str = MFMA, scale: float = 2.0, seed: int = 0):
    """A/B fragments per step (plus one pad step) as the lanes load them, and the reference."""
    info = mf.mfma_info(target, mnemonic)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((STEPS, info.m, info.k)).astype(np.float16)
    b = rng.standard_normal((STEPS, info.k, info.n)).astype(np.float16)
    pad = np.zeros((1, 64, 2), np.uint32)
    fa = np.concatenate([mf.pack_a(target, mnemonic, a[k]) for k in range(STEPS)] + [pad])
    fb = np.concatenate([mf.pack_b(target, mnemonic, b[k]) for k in range(STEPS)] + [pad])
    ref = scale * sum(a[k].astype(np.float32) @ b[k].astype(np.float32)
                      for k in range(STEPS))
    return fa.reshape(-1).view(np.float16), fb.reshape(-1).view(np.float16), ref


def run(code, target: str, mnemonic: str = MFMA, scale: float = 2.0):
    """Launch on the emulator (sanitizer on); returns (D, NumPy's D)."""
    fa, fb, ref = inputs(target, mnemonic, scale)
    regs = mf.mfma_info(target, mnemonic).m * mf.mfma_info(target, mnemonic).n // 64
    d = np.zeros(64 * regs, np.float32)
    asterism.launch(code, "gemm", grid=1, block=64, args=[fa, fb, d, STEPS], backend="emu")
    got = mf.unpack_d(target, mnemonic, d.view(np.uint32).reshape(1, 64, regs))[0]
    return got, ref


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_gemm_without_waits_or_nops_runs_clean(target):
    module = api.optimize(gemm_fixed(target), "waits,hazards")
    text = print_ir(module)
    assert "s_waitcnt vmcnt = 2" in text          # the pipelined MFMA's own fragments
    got, ref = run(api.compile(module), target)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_gemm_fails_without_the_passes(target):
    with pytest.raises(SanitizerError):
        run(api.compile(gemm_fixed(target)), target)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_removing_a_placed_wait_is_caught(target):
    text = print_ir(api.optimize(gemm_fixed(target), "waits,hazards"))
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if "s_waitcnt vmcnt = 2" in line)
    weaker = parse_ir("\n".join(lines[:k] + lines[k + 1:]))
    with pytest.raises(SanitizerError) as err:
        run(api.compile(weaker), target)
    assert err.value.needed == "s_waitcnt vmcnt(2)"


@pytest.mark.parametrize("target, nop", [("gfx942", "s_nop 1"), ("gfx950", "s_nop 2")])
def test_removing_a_placed_nop_is_caught(target, nop):
    # The first v_mul after the loop reads the accumulator of the MFMA (8 passes): 11
    # (gfx942) / 12 (gfx950) wait states; 9 instructions are already in between (4 v_mov,
    # 2 s_waitcnt, s_sub, s_cmp, s_cbranch).
    module = api.optimize(gemm_fixed(target), "waits,hazards")
    listing = [format_inst(i) if hasattr(i, "mnemonic") else str(i)
               for i in api.lower(module).kernels[0].body]
    first_mul = next(i for i, x in enumerate(listing) if x.startswith("v_mul_f32"))
    assert listing[first_mul - 1] == nop
    text = print_ir(module).splitlines()
    k = max(i for i, line in enumerate(text) if "amdgcn.sopp s_nop" in line
            and i < next(j for j, x in enumerate(text) if "v_mul_f32" in x))
    weaker = parse_ir("\n".join(text[:k] + text[k + 1:]))
    with pytest.raises(SanitizerError) as err:
        run(api.compile(weaker), target)
    assert "xdl_valu" in str(err.value)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_auto_pipeline_with_relocatable_registers(target):
    module = api.optimize(gemm_relocatable(target), "auto")
    got, ref = run(api.compile(module), target, "v_mfma_f32_16x16x16_f16", 1.0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(SanitizerError):
        run(api.compile(api.optimize(gemm_relocatable(target), "inline,regalloc")), target,
            "v_mfma_f32_16x16x16_f16", 1.0)


# ---------------------------------------------------------------------------- LDS


def lds_exchange(target: str, dma: bool):
    """4 waves: each lane puts a value in LDS (ds_write, or an LDS DMA buffer load), the
    workgroup meets at s_barrier, each lane reads the slot of lane 255 - tid and stores it."""
    kb = KernelBuilder("x", target, workgroup_size=(256, 1, 1), lds_size=1024)
    src = kb.arg_buffer("src", "i32", "read_only")
    out = kb.arg_buffer("out", "i32", "write_only")
    kp = kb.kernarg_ptr()
    kb.s_load_dwordx2(kb.s[4:6], kp, src)
    kb.s_load_dwordx2(kb.s[6:8], kp, out)
    tid = kb.workitem_id("x")
    kb.v_lshlrev_b32(kb.v(1), 2, tid)
    if dma:
        # buffer resource over src: base, stride 0, num_records, default format
        kb.s_mov_b32(kb.s(10), 1024)
        kb.s_mov_b32(kb.s(11), 0x00027000)
        kb.s_mov_b32(kb.s(8), kb.s(4))
        kb.s_mov_b32(kb.s(9), kb.s(5))
        kb.v_readfirstlane_b32(kb.s(12), kb.v(1))   # this wave's first byte: tid0 * 4
        kb.s_mov_b32(kb.special("m0"), kb.s(12))
        kb.buffer_load_dword(kb.v(1), kb.s[8:12], 0, offen=True, lds=True)
    else:
        kb.global_load_dword(kb.v(2), kb.v(1), kb.s[4:6])
        kb.v_add_u32(kb.v(2), 1000, kb.v(2))
        kb.ds_write_b32(kb.v(1), kb.v(2))
    kb.s_barrier()
    kb.v_sub_u32(kb.v(3), 1020, kb.v(1))
    kb.ds_read_b32(kb.v(4), kb.v(3))
    kb.global_store_dword(kb.v(1), kb.v(4), kb.s[6:8])
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("dma", [False, True])
@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_lds_exchange_across_waves(target, dma):
    module = api.optimize(lds_exchange(target, dma), "waits,hazards")
    src = np.arange(256, dtype=np.int32) * 3
    out = np.zeros(256, np.int32)
    asterism.launch(api.compile(module), "x", grid=1, block=256, args=[src, out],
                    backend="emu")
    want = src[::-1] + (0 if dma else 1000)
    np.testing.assert_array_equal(out, want)


def test_lds_dma_without_the_wait_is_caught():
    module = api.optimize(lds_exchange("gfx942", True),
                          "waits{barrier=none,lds-dma=tokens},hazards")
    src = np.arange(256, dtype=np.int32)
    out = np.zeros(256, np.int32)
    with pytest.raises(SanitizerError, match="LDS"):
        asterism.launch(api.compile(module), "x", grid=1, block=256, args=[src, out],
                        backend="emu")


def lds_dma_across_branch(wait: bool):
    """2 waves: each lane DMAs a dword of src into LDS, then the waves take different paths
    (the emulator splits the group) before the wait, the barrier and the exchange."""
    kb = KernelBuilder("x", "gfx950", workgroup_size=(128, 1, 1), lds_size=512)
    src = kb.arg_buffer("src", "i32", "read_only")
    out = kb.arg_buffer("out", "i32", "write_only")
    kp = kb.kernarg_ptr()
    kb.s_load_dwordx2(kb.s[4:6], kp, src)
    kb.s_load_dwordx2(kb.s[6:8], kp, out)
    tid = kb.workitem_id("x")
    kb.v_lshlrev_b32(kb.v(1), 2, tid)
    kb.s_mov_b32(kb.s(10), 512)
    kb.s_mov_b32(kb.s(11), 0x00027000)
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_mov_b32(kb.s(8), kb.s(4))
    kb.s_mov_b32(kb.s(9), kb.s(5))
    kb.v_readfirstlane_b32(kb.s(12), kb.v(1))
    kb.s_mov_b32(kb.special("m0"), kb.s(12))
    kb.s_nop(0)
    kb.buffer_load_dword(kb.v(1), kb.s[8:12], 0, offen=True, lds=True)
    kb.v_readfirstlane_b32(kb.s(13), kb.v_lshrrev_b32(kb.v(5), 6, tid))
    kb.s_cmp_eq_u32(kb.s(13), 0)
    join = kb.new_label("join")
    kb.s_cbranch_scc1(join)
    kb.v_mov_b32(kb.v(6), 1)  # wave 1 only
    kb.place(join)
    if wait:
        kb.s_waitcnt(vmcnt=0)
    kb.s_barrier()
    kb.v_sub_u32(kb.v(3), 508, kb.v(1))
    kb.ds_read_b32(kb.v(4), kb.v(3))
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_store_dword(kb.v(1), kb.v(4), kb.s[6:8])
    kb.s_endpgm()
    return kb.finish()


def test_lds_dma_in_flight_across_a_split_group():
    # The DMA's record outlives the group that issued it (the branch splits it into two):
    # the waited exchange runs clean, the unwaited one is still caught.
    src = np.arange(128, dtype=np.int32) * 5
    out = np.zeros(128, np.int32)
    for wait in (True, False):
        code = api.compile(api.optimize(lds_dma_across_branch(wait), "hazards"))
        if wait:
            asterism.launch(code, "x", grid=1, block=128, args=[src, out], backend="emu")
            np.testing.assert_array_equal(out, src[::-1])
            continue
        with pytest.raises(SanitizerError, match="LDS bytes"):
            asterism.launch(code, "x", grid=1, block=128, args=[src, out], backend="emu")
