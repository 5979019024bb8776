"""The schedule pass does not change results: scheduled kernels run on the emulator (sanitizer
and hazard checker on) and match NumPy and the unscheduled kernel. Also shows the tests can
fail: without the hazard guard, or with counter order freed under a partial s_waitcnt, the
emulator's checks catch the scheduled code."""

from __future__ import annotations

import random

import numpy as np
import pytest

import asterism
from asterism.builder import KernelBuilder, unit_sequence
from asterism.emu.errors import SanitizerError
from asterism.passes.schedule import schedule_module

TARGETS = ("gfx942", "gfx950")


def run(module, pipeline: str, kernel: str, args: list, grid: int = 1) -> None:
    asterism.launch(asterism.compile(module, pipeline=pipeline), kernel, grid=grid, block=64,
                    args=args, backend="emu")


# --------------------------------------------------------------------------- GEMM via LDS


def gemm_kernel(target: str, nk: int, tiles: int):
    """C[t] = A[t] @ B[t] for `tiles` independent 16x16 tiles, K = 16 * nk: fragments are
    loaded from global memory, staged through LDS and read back with ds_read_b64, one
    v_mfma_f32_16x16x16_f16 per k-step and tile; lane l of the output holds the 4 rows
    4*(l//16)+r of column l%16 (the MFMA layout), stored as one dwordx4 per lane and tile."""
    kb = KernelBuilder("gemm", target, workgroup_size=(64, 1, 1),
                       lds_size=64 * 8 * 2 * nk * tiles)
    a = kb.arg_buffer("a", "f16", "read_only")
    b = kb.arg_buffer("bt", "f16", "read_only")
    c = kb.arg_buffer("c", "f32", "write_only")
    kp, tid = kb.kernarg_ptr(), kb.workitem_id("x")
    kb.s_load_dwordx2(kb.s[4:6], kp, a)
    kb.s_load_dwordx2(kb.s[6:8], kp, b)
    kb.s_load_dwordx2(kb.s[8:10], kp, c)
    kb.v_and_b32(kb.v(1), 15, tid)  # row i = l % 16
    kb.v_lshrrev_b32(kb.v(2), 4, tid)
    kb.v_lshlrev_b32(kb.v(2), 2, kb.v(2))  # k-group 4 * (l // 16)
    kb.v_mul_u32_u24(kb.v(3), 16 * nk, kb.v(1))
    kb.v_add_u32(kb.v(3), kb.v(3), kb.v(2))
    kb.v_lshlrev_b32(kb.v(3), 1, kb.v(3))  # byte offset of this lane's first fragment
    kb.v_lshlrev_b32(kb.v(4), 3, tid)  # LDS slot of this lane (8 bytes)
    kb.v_lshlrev_b32(kb.v(5), 4, tid)  # output offset (16 bytes per lane)
    kb.s_waitcnt(lgkmcnt=0)
    tile_bytes = 16 * 16 * nk * 2

    def frag(t: int, k: int, which: int) -> int:
        return 10 + 4 * (t * nk + k) + 2 * which

    for t in range(tiles):
        for k in range(nk):
            for which, base in ((0, kb.s[4:6]), (1, kb.s[6:8])):
                kb.global_load_dwordx2(kb.v[frag(t, k, which):frag(t, k, which) + 2], kb.v(3),
                                       base, offset=t * tile_bytes + 32 * k)
    kb.s_waitcnt(vmcnt=0)
    lds = 0
    for t in range(tiles):
        for k in range(nk):
            for which in (0, 1):
                kb.ds_write_b64(kb.v(4), kb.v[frag(t, k, which):frag(t, k, which) + 2],
                                offset=512 * lds)
                lds += 1
    kb.s_waitcnt(lgkmcnt=0)
    acc = [kb.a[4 * t:4 * t + 4] for t in range(tiles)]
    for t in range(tiles):
        for j in range(4):
            kb.v_accvgpr_write_b32(kb.a(4 * t + j), 0)
    # Reading back: each k-step's DS reads of all tiles, one wait, then the MFMAs (the
    # scheduler may move the next step's reads into the MFMA shadows only where the
    # registers allow: the fragments double-buffer in v[80:...].
    lds = 0
    for k in range(nk):
        regs = []
        for t in range(tiles):
            r = 80 + 8 * t + 4 * (k % 2) * tiles * 2 // tiles
            r = 80 + 4 * (2 * t + k % 2)
            kb.ds_read_b64(kb.v[r:r + 2], kb.v(4), offset=512 * (2 * (t * nk + k)))
            kb.ds_read_b64(kb.v[r + 2:r + 4], kb.v(4), offset=512 * (2 * (t * nk + k) + 1))
            regs.append(r)
        kb.s_waitcnt(lgkmcnt=0)
        for t, r in enumerate(regs):
            kb.v_mfma_f32_16x16x16_f16(acc[t], kb.v[r:r + 2], kb.v[r + 2:r + 4], acc[t])
    kb.s_nop(7)
    kb.s_nop(7)
    for t in range(tiles):
        for j in range(4):
            kb.v_accvgpr_read_b32(kb.v(64 + 4 * t + j), kb.a(4 * t + j))
    kb.s_nop(1)
    for t in range(tiles):
        kb.global_store_dwordx4(kb.v(5), kb.v[64 + 4 * t:68 + 4 * t], kb.s[8:10],
                                offset=1024 * t)
    kb.s_endpgm()
    return kb.finish()


def run_gemm(module, pipeline: str, nk: int, tiles: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((tiles, 16, 16 * nk)).astype(np.float16)
    B = rng.standard_normal((tiles, 16 * nk, 16)).astype(np.float16)
    Bt = np.ascontiguousarray(np.transpose(B, (0, 2, 1)))
    C = np.zeros(tiles * 256, np.float32)
    run(module, pipeline, "gemm", [A, Bt, C])
    D = np.zeros((tiles, 16, 16), np.float32)
    raw = C.reshape(tiles, 64, 4)
    for lane in range(64):
        for r in range(4):
            D[:, 4 * (lane // 16) + r, lane % 16] = raw[:, lane, r]
    ref = np.einsum("tik,tkj->tij", A.astype(np.float64), B.astype(np.float64))
    return D, ref


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("nk,tiles", [(2, 1), (4, 2)])
def test_scheduled_gemm_matches_numpy_and_the_input(target, nk, tiles):
    plain, _ = run_gemm(gemm_kernel(target, nk, tiles), "", nk, tiles)
    module = gemm_kernel(target, nk, tiles)
    before = unit_sequence(module, mnemonics=True)
    stats = schedule_module(module)
    assert stats.reordered > 0 and stats.cycles_after < stats.cycles_before
    assert unit_sequence(module, mnemonics=True) != before
    assert sorted(unit_sequence(module, mnemonics=True)) == sorted(before)
    got, ref = run_gemm(module, "", nk, tiles)
    np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3)
    np.testing.assert_array_equal(got, plain)  # bit-identical to the unscheduled kernel
    # The same through the pipeline string.
    again, _ = run_gemm(gemm_kernel(target, nk, tiles), "schedule", nk, tiles)
    np.testing.assert_array_equal(again, plain)


# --------------------------------------------------------------------------- the guards


def counted_loads_kernel():
    """Two loads, a partial wait `vmcnt(1)` meaning "the first has arrived", then the first
    one's value is stored. The first load's address depends on a transcendental (16 cycles):
    a scheduler free to reorder loads would issue the second load first."""
    kb = KernelBuilder("k", "gfx942")
    a = kb.arg_buffer("a", "f32", "read_only")
    o = kb.arg_buffer("o", "f32", "write_only")
    kb.s_load_dwordx2(kb.s[4:6], kb.kernarg_ptr(), a)
    kb.s_load_dwordx2(kb.s[6:8], kb.kernarg_ptr(), o)
    kb.v_lshlrev_b32(kb.v(1), 2, kb.workitem_id("x"))
    kb.s_waitcnt(lgkmcnt=0)
    kb.v_exp_f32(kb.v(3), 0.0)  # 1.0
    kb.v_mov_b32(kb.v(20), 0)  # the wait state the transcendental's reader needs
    kb.v_cvt_u32_f32(kb.v(3), kb.v(3))
    kb.v_lshl_add_u32(kb.v(2), kb.v(3), 8, kb.v(1))  # tid * 4 + 256
    kb.global_load_dword(kb.v(10), kb.v(2), kb.s[4:6])  # a[64 + tid]
    kb.global_load_dword(kb.v(11), kb.v(1), kb.s[4:6])  # a[tid]
    kb.s_waitcnt(vmcnt=1)
    kb.global_store_dword(kb.v(1), kb.v(10), kb.s[6:8])
    kb.s_waitcnt(vmcnt=0)
    kb.global_store_dword(kb.v(1), kb.v(11), kb.s[6:8], offset=256)
    kb.s_endpgm()
    return kb.finish()


def test_counter_order_is_kept_under_partial_waits():
    want = np.concatenate([np.arange(64, 128), np.arange(64)]).astype(np.float32)
    for pipeline in ("", "schedule", "schedule{counters=keep}"):
        a, o = np.arange(128, dtype=np.float32), np.zeros(128, np.float32)
        run(counted_loads_kernel(), pipeline, "k", [a, o])
        np.testing.assert_array_equal(o, want)
    # Freed, the scheduler issues the second load first and vmcnt(1) no longer covers the
    # first: the sanitizer reports the early read.
    module = counted_loads_kernel()
    asterism.optimize(module, "schedule{counters=free}")
    loads = [m for m in unit_sequence(module, mnemonics=True) if m == "global_load_dword"]
    assert len(loads) == 2
    with pytest.raises(SanitizerError, match="v10 is read before the result"):
        run(module, "", "k", [np.arange(128, dtype=np.float32), np.zeros(128, np.float32)])


def valu_to_mfma_kernel():
    """v_mov writes an MFMA operand 2 instructions before the MFMA (the 2 wait states the
    valu_vgpr_mfma rule asks for); the DS reads in between are what the scheduler wants to
    issue first."""
    kb = KernelBuilder("k", "gfx942", lds_size=512)
    o = kb.arg_buffer("o", "f32", "write_only")
    kb.s_load_dwordx2(kb.s[6:8], kb.kernarg_ptr(), o)
    tid = kb.workitem_id("x")
    kb.v_lshlrev_b32(kb.v(1), 4, tid)
    kb.v_mov_b32(kb.v(2), 0x3C003C00)  # two f16 ones
    kb.v_mov_b32(kb.v(3), 0x3C003C00)
    kb.v_mov_b32(kb.v(8), 0x3C003C00)
    kb.v_lshlrev_b32(kb.v(30), 2, tid)
    kb.s_waitcnt(lgkmcnt=0)
    kb.v_mov_b32(kb.v(9), 0x3C003C00)
    kb.ds_read_b32(kb.v(20), kb.v(30))
    kb.ds_read_b32(kb.v(21), kb.v(30), offset=256)
    kb.v_mfma_f32_16x16x16_f16(kb.v[4:8], kb.v[8:10], kb.v[2:4], 0)
    kb.s_nop(7)
    kb.s_nop(7)
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_store_dwordx4(kb.v(1), kb.v[4:8], kb.s[6:8])
    kb.s_endpgm()
    return kb.finish()


def test_hazard_guard_keeps_wait_states_the_input_had():
    o = np.zeros(256, np.float32)
    run(valu_to_mfma_kernel(), "", "k", [o])
    want = o.copy()
    np.testing.assert_array_equal(want, 16.0)  # sums of 16 products 1 * 1
    guarded = valu_to_mfma_kernel()
    asterism.optimize(guarded, "schedule")
    o = np.zeros(256, np.float32)
    run(guarded, "", "k", [o])
    np.testing.assert_array_equal(o, want)
    # Without the guard the v_mov lands right before the MFMA: the hazard checker objects.
    bare = valu_to_mfma_kernel()
    asterism.optimize(bare, "schedule{guard=off}")
    seq = unit_sequence(bare, mnemonics=True)
    assert seq[seq.index("v_mfma_f32_16x16x16_f16") - 1] == "v_mov_b32"
    with pytest.raises(SanitizerError, match="valu_vgpr_mfma"):
        run(bare, "", "k", [np.zeros(256, np.float32)])
    # ... and the hazards pass after it repairs that.
    o = np.zeros(256, np.float32)
    run(valu_to_mfma_kernel(), "schedule{guard=off},hazards", "k", [o])
    np.testing.assert_array_equal(o, want)


# --------------------------------------------------------------------------- random code


POOL = list(range(8, 24))  # value registers v8..v23; v[24:28], v[28:32] accumulators
VALU = ("v_add_u32", "v_sub_u32", "v_xor_b32", "v_and_b32", "v_or_b32", "v_mul_lo_u32",
        "v_max_u32", "v_min_u32")


class _Gen:
    """Random straight-line (or looped) code on a small register pool with the waits it
    needs, in-order counters tracked as the hardware counts them."""

    def __init__(self, kb: KernelBuilder, rng: random.Random, partial: bool):
        self.kb, self.rng, self.partial = kb, rng, partial
        self.vm: list[set[int]] = []  # outstanding VMEM ops: registers they will write
        self.lgkm: list[set[int]] = []

    def _need(self, regs: set[int]) -> None:
        """Wait until no outstanding load writes any of `regs`."""
        kb = self.kb
        counts = {}
        for name, queue in (("vmcnt", self.vm), ("lgkmcnt", self.lgkm)):
            last = max((i for i, w in enumerate(queue) if w & regs), default=-1)
            if last >= 0:
                left = len(queue) - last - 1 if self.partial else 0
                counts[name] = left
                del queue[:len(queue) - left]
        if counts:
            kb.s_waitcnt(**counts)

    def op(self) -> None:
        kb, rng = self.kb, self.rng
        pick = rng.random()
        a, b, d = rng.choice(POOL), rng.choice(POOL), rng.choice(POOL)
        if pick < 0.35:
            self._need({a, b, d})
            src0 = kb.s(rng.choice((8, 9))) if rng.random() < 0.2 else kb.v(a)
            kb.emit(rng.choice(VALU), kb.v(d), src0, kb.v(b))
        elif pick < 0.42:
            self._need({a, b, d})
            kb.v_cmp_gt_u32(kb.vcc, kb.v(a), kb.v(b))
            kb.v_cndmask_b32(kb.v(d), kb.v(b), kb.v(a), kb.vcc)
        elif pick < 0.50:
            s = rng.choice((8, 9, 10, 11))
            kb.emit(rng.choice(("s_add_u32", "s_xor_b32", "s_mul_i32")), kb.s(s),
                    kb.s(rng.choice((8, 9, 10, 11))), rng.randrange(1, 60))
            if rng.random() < 0.5:
                kb.s_cselect_b32(kb.s(rng.choice((10, 11))), kb.s(8), kb.s(9))
        elif pick < 0.54:
            self._need({a})
            kb.v_readfirstlane_b32(kb.s(rng.choice((10, 11))), kb.v(a))
        elif pick < 0.64:
            self._need({a})
            kb.ds_write_b32(kb.v(1), kb.v(a), offset=256 * rng.randrange(4))
            self.lgkm.append(set())
        elif pick < 0.74:
            self._need({d})
            kb.ds_read_b32(kb.v(d), kb.v(1), offset=256 * rng.randrange(4))
            self.lgkm.append({d})
        elif pick < 0.84:
            self._need({d})
            kb.global_load_dword(kb.v(d), kb.v(1), kb.s[4:6], offset=256 * rng.randrange(4))
            self.vm.append({d})
        elif pick < 0.88:
            self._need({a})
            kb.global_store_dword(kb.v(2), kb.v(a), kb.s[6:8], offset=256 * rng.randrange(8, 12))
            self.vm.append(set())
        else:
            acc = rng.choice((24, 28))
            pa, pb = 8 + 2 * rng.randrange(8), 8 + 2 * rng.randrange(8)
            self._need({pa, pa + 1, pb, pb + 1, *range(acc, acc + 4)})
            kb.v_mfma_i32_16x16x32_i8(kb.v[acc:acc + 4], kb.v[pa:pa + 2], kb.v[pb:pb + 2],
                                      kb.v[acc:acc + 4])


class _NoWaitGen(_Gen):
    """The same random code without any wait: the waits pass places them."""

    def _need(self, regs: set[int]) -> None:
        return None


def random_kernel(seed: int, target: str = "gfx942", loop: bool = False,
                  partial: bool = True, n: int = 60, waits: bool = True):
    rng = random.Random(seed)
    kb = KernelBuilder("fuzz", target, lds_size=1024)
    inp = kb.arg_buffer("inp", "i32", "read_only")
    out = kb.arg_buffer("out", "i32", "write_only")
    kp, tid = kb.kernarg_ptr(), kb.workitem_id("x")
    kb.s_load_dwordx2(kb.s[4:6], kp, inp)
    kb.s_load_dwordx2(kb.s[6:8], kp, out)
    kb.v_lshlrev_b32(kb.v(1), 2, tid)
    kb.v_add_u32(kb.v(2), 4096, kb.v(1))
    for r in POOL:
        kb.v_mul_u32_u24(kb.v(r), 2 * r + 1, tid)
        kb.v_add_u32(kb.v(r), r * 977, kb.v(r))
    for r in range(24, 32):
        kb.v_mov_b32(kb.v(r), r)
    for s in (8, 9, 10, 11):
        kb.s_mov_b32(kb.s(s), 3 * s + 1)
    kb.s_waitcnt(lgkmcnt=0)
    gen = (_Gen if waits else _NoWaitGen)(kb, rng, partial)
    if loop:
        kb.s_mov_b32(kb.s(12), 3)
        head = kb.label("body")
    for _ in range(n):
        gen.op()
    if loop:
        kb.s_waitcnt(vmcnt=0, lgkmcnt=0)
        gen.vm.clear()
        gen.lgkm.clear()
        kb.s_sub_u32(kb.s(12), kb.s(12), 1)
        kb.s_cmp_lg_u32(kb.s(12), 0)
        kb.s_cbranch_scc1(head)
    kb.s_waitcnt(vmcnt=0, lgkmcnt=0)
    for k, r in enumerate(POOL + list(range(24, 32))):
        base, slot = (kb.v(1), k) if k < 16 else (kb.v(2), k - 16)
        kb.global_store_dword(base, kb.v(r), kb.s[6:8], offset=256 * slot)
    kb.s_endpgm()
    return kb.finish()


def run_random(module, pipeline: str) -> np.ndarray:
    inp = (np.arange(256, dtype=np.int64) * 2654435761 % (1 << 31)).astype(np.int32)
    out = np.zeros(64 * 32, np.int32)
    run(module, pipeline, "fuzz", [inp, out])
    return out


@pytest.mark.parametrize("seed", range(12))
def test_random_code_gives_identical_results(seed):
    target = TARGETS[seed % 2]
    loop, partial = seed % 3 == 0, seed % 4 != 1
    # The input is made hazard-free by the hazards pass; the schedule pass must keep it so
    # (the emulator's hazard checker runs) and keep every result.
    want = run_random(random_kernel(seed, target, loop, partial), "hazards")
    module = random_kernel(seed, target, loop, partial)
    asterism.optimize(module, "hazards")
    stats = schedule_module(module)
    assert stats.cycles_after <= stats.cycles_before
    np.testing.assert_array_equal(run_random(module, ""), want)
    for pipeline in ("schedule,hazards", "hazards,schedule{counters=keep}"):
        got = run_random(random_kernel(seed, target, loop, partial), pipeline)
        np.testing.assert_array_equal(got, want)


def test_random_code_is_reordered():
    """The fuzz kernels do give the scheduler work (the equality above is not vacuous)."""
    moved = 0
    for seed in range(12):
        module = random_kernel(seed, TARGETS[seed % 2], seed % 3 == 0, seed % 4 != 1)
        asterism.optimize(module, "hazards")
        moved += schedule_module(module).reordered
    assert moved >= 12


# --------------------------------------------------------------------------- the example


def _example():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "schedule" / \
        "interleave_gemm_tile.py"
    spec = importlib.util.spec_from_file_location("interleave_gemm_tile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


@pytest.mark.parametrize("nk,target", [(1, "gfx942"), (4, "gfx942"), (2, "gfx950")])
def test_example_gemm_tile_matches_numpy_with_and_without_the_pass(nk, target):
    ex, _path = _example()
    d, want = ex.run(ex.build(nk, target), nk)
    np.testing.assert_allclose(d, want, rtol=1e-3, atol=1e-3)
    # keep=True: the pass leaves the interleaved loop exactly as written.
    kept = ex.build(nk, target)
    spans = [(op.mnemonic_text, ps_key(op)) for op in kept.walk() if ps_key(op) is not None]
    schedule_module(kept)
    assert [(op.mnemonic_text, ps_key(op)) for op in kept.walk()
            if ps_key(op) is not None] == spans
    np.testing.assert_array_equal(ex.run(kept, nk)[0], d)
    # keep=False: the pass may reorder the loop; results stay bit-identical.
    free = ex.build(nk, target, keep=False)
    before = unit_sequence(free)
    stats = schedule_module(free)
    assert stats.cycles_after <= stats.cycles_before
    if nk > 1:
        assert unit_sequence(free) != before
    np.testing.assert_array_equal(ex.run(free, nk)[0], d)


def ps_key(op):
    from asterism.passes.schedule import _keep_key

    return _keep_key(op)


def test_example_command_line():
    import subprocess
    import sys

    _ex, path = _example()
    out = subprocess.run([sys.executable, str(path), "--nk", "2"], capture_output=True,
                         text=True, check=True).stdout
    loop = [line.strip() for line in out[out.index("v_mfma"):].splitlines()]
    assert loop[:3] == ["v_mfma_f32_16x16x16_f16 a[0:3], v[16:17], v[20:21], a[0:3]",
                        "ds_read_b64 v[24:25], v4 offset:512",
                        "v_mfma_f32_16x16x16_f16 a[4:7], v[16:17], v[22:23], a[4:7]"]
    ir = subprocess.run([sys.executable, str(path), "--nk", "2", "--ir"], capture_output=True,
                        text=True, check=True).stdout
    assert 'sched.keep_order = "keep0"' in ir and "amdgcn.kernel @gemm_tile" in ir
    ran = subprocess.run([sys.executable, str(path), "--nk", "2", "--run"],
                         capture_output=True, text=True, check=True).stdout
    assert ran.startswith("max |D - NumPy| = ") and ran.rstrip().endswith("(ok)")
    bad = subprocess.run([sys.executable, str(path), "--nk", "0"], capture_output=True,
                         text=True, check=False)
    assert bad.returncode == 2 and "--nk must be 1 to 31" in bad.stderr



@pytest.mark.parametrize("seed", range(6))
def test_schedule_before_the_waits_and_hazards_passes(seed):
    """Code without any s_waitcnt yet (the waits pass places them afterwards) is one region
    per block, so the scheduler has the most freedom; the composed pipeline keeps every
    result."""
    target, loop = TARGETS[seed % 2], seed % 3 == 0
    want = run_random(random_kernel(seed, target, loop, waits=False), "waits,hazards")
    module = random_kernel(seed, target, loop, waits=False)
    stats = schedule_module(module)
    assert stats.reordered >= 1 and stats.cycles_after < stats.cycles_before
    np.testing.assert_array_equal(run_random(module, "waits,hazards"), want)
    got = run_random(random_kernel(seed, target, loop, waits=False), "schedule,waits,hazards")
    np.testing.assert_array_equal(got, want)
