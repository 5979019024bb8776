"""LDS DMA loads (`buffer_load_dword ... lds`) in the emulator: the counter they complete on
(vmcnt, not lgkmcnt) for the sanitizer and the timing model, and the bytes a DS read is
checked against (its width, not 16 bytes). Expected results by hand from the counting rules
(LLVM SIInsertWaitcnts: an LDS DMA needs vmcnt before the LDS it writes is read)."""

from __future__ import annotations

import numpy as np
import pytest

import asterism
from asterism import api
from asterism.builder import KernelBuilder
from asterism.emu.errors import SanitizerError
from asterism.timing.params import TimingOptions
from asterism.timing.result import CAT_IMMED


def dma_kernel(wait: dict, read_offset: int, lds_offset: int = 0, between=None):
    """One wave: lane l DMAs src[l] to LDS byte lds_offset + 4 l, `s_waitcnt **wait`, then
    lane l reads LDS byte read_offset + 4 l (ds_read_b32) and stores it to out[l]."""
    kb = KernelBuilder("dma", "gfx950", workgroup_size=(64, 1, 1), lds_size=1024)
    src = kb.arg_buffer("src", "i32", "read_only")
    out = kb.arg_buffer("out", "i32", "write_only")
    kp = kb.kernarg_ptr()
    kb.s_load_dwordx2(kb.s[4:6], kp, src)
    kb.s_load_dwordx2(kb.s[6:8], kp, out)
    kb.v_lshlrev_b32(kb.v(1), 2, kb.workitem_id("x"))
    kb.s_mov_b32(kb.s(10), 256)
    kb.s_mov_b32(kb.s(11), 0x00027000)
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_mov_b32(kb.s(8), kb.s(4))
    kb.s_mov_b32(kb.s(9), kb.s(5))
    kb.s_mov_b32(kb.special("m0"), lds_offset)
    kb.s_nop(0)
    kb.buffer_load_dword(kb.v(1), kb.s[8:12], 0, offen=True, lds=True)
    if between is not None:
        between(kb)
    kb.s_waitcnt(**wait)
    kb.ds_read_b32(kb.v(4), kb.v(1), offset=read_offset)
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_store_dword(kb.v(1), kb.v(4), kb.s[6:8])
    kb.s_endpgm()
    return api.compile(api.optimize(kb.finish(), "hazards"))


def run(code, timing=False):
    src = np.arange(64, dtype=np.int32) + 100
    out = np.zeros(64, np.int32)
    res = asterism.launch(code, "dma", grid=1, block=64, args=[src, out], backend="emu",
                          timing=TimingOptions(latency={"hbm": 600}) if timing else False)
    return out, res


def test_vmcnt_completes_an_lds_dma():
    out, _ = run(dma_kernel({"vmcnt": 0}, 0))
    np.testing.assert_array_equal(out, np.arange(64) + 100)


def test_lgkmcnt_does_not_complete_an_lds_dma():
    with pytest.raises(SanitizerError, match=r"LDS bytes \[0, 256\).*needs s_waitcnt vmcnt"):
        run(dma_kernel({"lgkmcnt": 0}, 0))


def test_a_read_next_to_the_dma_bytes_is_not_flagged():
    # The DMA writes [256, 512); lane 63 reads [252, 256) with ds_read_b32 (4 bytes, not 16).
    out, _ = run(dma_kernel({"lgkmcnt": 0}, 0, lds_offset=256))
    np.testing.assert_array_equal(out, 0)
    with pytest.raises(SanitizerError, match=r"LDS bytes \[256, 512\)"):
        run(dma_kernel({"lgkmcnt": 0}, 4, lds_offset=256))  # lane 63 reads [256, 260)


def test_timing_lgkmcnt_wait_does_not_wait_for_an_lds_dma():
    # A DS read issued while the DMA flies: its lgkmcnt(0) waits for the LDS latency only
    # (64 cycles), not for the DMA's HBM latency (600); then vmcnt(0) waits for the DMA.
    def ds_read(kb):
        kb.ds_read_b32(kb.v(5), kb.v(1), offset=512)
        kb.s_waitcnt(lgkmcnt=0)
    _, res = run(dma_kernel({"vmcnt": 0}, 0, between=ds_read), timing=True)
    (wave,) = res.timing.waves
    code = res.timing.code
    waits = [(code[r[4] - 1][1].split("//")[0].strip(), r[2]) for r in wave.records
             if r[1] == CAT_IMMED and code[r[4] - 1][1].startswith("s_waitcnt")]
    lds_wait = next(stall for text, stall in waits[1:] if text == "s_waitcnt lgkmcnt(0)")
    assert lds_wait < 100
    vm_wait = next(stall for text, stall in waits if text == "s_waitcnt vmcnt(0)")
    assert vm_wait > 400


def two_workgroup_dma(fixed_read: bool) -> bytes:
    """Workgroup w DMAs to LDS [256 w, 256 w + 256) and, without waiting, reads the other
    half (or, with `fixed_read`, [256, 512) in every workgroup)."""
    kb = KernelBuilder("dma", "gfx950", workgroup_size=(64, 1, 1), lds_size=1024)
    src = kb.arg_buffer("src", "i32", "read_only")
    out = kb.arg_buffer("out", "i32", "write_only")
    kp = kb.kernarg_ptr()
    kb.s_load_dwordx2(kb.s[4:6], kp, src)
    kb.s_load_dwordx2(kb.s[6:8], kp, out)
    wg = kb.workgroup_id("x")
    kb.v_lshlrev_b32(kb.v(1), 2, kb.workitem_id("x"))
    kb.s_mov_b32(kb.s(10), 256)
    kb.s_mov_b32(kb.s(11), 0x00027000)
    kb.s_lshl_b32(kb.s(12), wg, 8)
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_mov_b32(kb.s(8), kb.s(4))
    kb.s_mov_b32(kb.s(9), kb.s(5))
    kb.s_mov_b32(kb.special("m0"), kb.s(12))
    kb.s_nop(0)
    kb.buffer_load_dword(kb.v(1), kb.s[8:12], 0, offen=True, lds=True)
    if fixed_read:
        kb.s_mov_b32(kb.s(13), 256)
    else:
        kb.s_xor_b32(kb.s(13), kb.s(12), 256)  # the other half
    kb.v_add_u32(kb.v(2), kb.s(13), kb.v(1))
    kb.ds_read_b32(kb.v(4), kb.v(2))
    kb.s_waitcnt(vmcnt=0, lgkmcnt=0)
    kb.v_lshl_add_u32(kb.v(3), kb.v_mov_b32(kb.v(5), wg), 8, kb.v(1))
    kb.global_store_dword(kb.v(3), kb.v(4), kb.s[6:8])
    kb.s_endpgm()
    return api.compile(api.optimize(kb.finish(), "hazards"))


def test_workgroups_of_one_group_are_checked_each_in_its_own_lds():
    # Two one-wave workgroups run as one group. Per workgroup nothing overlaps (the union
    # over the group's waves would: [0, 512)).
    out = np.full(128, -1, np.int32)
    asterism.launch(two_workgroup_dma(False), "dma", grid=2, block=64,
                    args=[np.arange(64, dtype=np.int32), out], backend="emu")
    np.testing.assert_array_equal(out, 0)


@pytest.mark.parametrize("grid", [2, 4])
def test_the_workgroup_that_reads_its_own_dma_bytes_is_named(grid):
    # Every workgroup reads [256, 512): workgroup 0 did not DMA there, workgroup 1 did (and
    # workgroups 2, 3 DMA above the bytes read), so only workgroup 1 reads
    # bytes in flight, even when it runs in one group with many others.
    out = np.full(64 * grid, -1, np.int32)
    with pytest.raises(SanitizerError, match=r"LDS bytes \[256, 512\) written by") as info:
        asterism.launch(two_workgroup_dma(True), "dma", grid=grid, block=64,
                        args=[np.arange(64, dtype=np.int32), out], backend="emu")
    assert info.value.workgroup == (1, 0, 0) and info.value.kind == "lds_dma"
