"""A 64x64 fp16 MFMA GEMM tile per workgroup with LDS double buffering, written for the
`auto` pipeline: relocatable registers, no s_waitcnt, no s_nop. C = A @ B (f16 in, f32 out).

    python examples/auto/gemm_lds_64x64.py              # 128^3 on the emulator vs NumPy
    python examples/auto/gemm_lds_64x64.py --print      # the assembly `auto` produced

Each workgroup (4 waves, 256 work-items) computes a 64x64 tile of C, K in tiles of 16.
Per K tile the workgroup copies a 64x16 slice of A and of B^T (taken transposed, N x K)
from global memory to LDS, one global_load_dwordx2 + ds_write_b64 per work-item and
matrix; each wave then reads its fragments from LDS and runs 2x2 v_mfma_f32_16x16x16_f16
for its 32x32 quarter. Two LDS buffers alternate: while the waves compute on one, the
next tile is loaded into registers and written to the other, one s_barrier per tile. The
K loop is a real loop over pairs of tiles (buffer 0, then buffer 1), with tile 0 peeled
(its MFMAs start from C = 0) and the last tile in an epilogue.

Everything the hardware needs besides the program order is left to `auto`: registers,
vmcnt waits before the LDS writes, lgkmcnt waits before each barrier (the other waves read
what this wave wrote) and before the MFMAs (the fragments), and the nops between the last
MFMAs and the stores of their results. With B^T as the MFMA's first operand each lane
holds 4 consecutive floats of one row of C: one global_store_dwordx4 per 16x16 block.
"""

from __future__ import annotations

import argparse

import numpy as np

import asterism
from asterism.builder import KernelBuilder

TILE_MN = 64  # C tile of a workgroup
TILE_K = 16  # K per LDS tile (one MFMA per 16x16 block)
SLICE = TILE_MN * TILE_K * 2  # bytes of one 64x16 f16 slice in LDS
BUFFER = 2 * SLICE  # A slice, then B^T slice
THREADS = 256


def build(m: int, n: int, k: int, target: str = "gfx942"):
    """The kernel for fixed sizes: M, N multiples of 64, K a multiple of 32 (>= 64)."""
    if m % TILE_MN or n % TILE_MN or k % (2 * TILE_K) or k < 4 * TILE_K:
        raise ValueError("M and N must be multiples of 64, K a multiple of 32 and >= 64")
    kb = KernelBuilder("gemm_lds", target=target, workgroup_size=(THREADS, 1, 1),
                       lds_size=2 * BUFFER)
    a = kb.arg_buffer("a", "f16", access="read_only")
    bt = kb.arg_buffer("bt", "f16", access="read_only")
    c = kb.arg_buffer("c", "f32", access="write_only")
    kernarg = kb.kernarg_ptr()
    wg_n, wg_m, tid = kb.workgroup_id("x"), kb.workgroup_id("y"), kb.workitem_id("x")
    pa = kb.s_load_dwordx2(None, kernarg, a)
    pb = kb.s_load_dwordx2(None, kernarg, bt)
    pc = kb.s_load_dwordx2(None, kernarg, c)
    row0 = kb.s_lshl_b32(None, wg_m, 6)  # first row of the C tile
    col0 = kb.s_lshl_b32(None, wg_n, 6)  # first column
    # Copy: work-item t moves 4 f16 of row t/4 (chunk t%4) of each slice; its LDS byte
    # offset in a slice is (t/4)*32 + (t%4)*8 = 8t.
    row = kb.v_lshrrev_b32(None, 2, tid)
    chunk8 = kb.v_lshlrev_b32(None, 3, kb.v_and_b32(None, 3, tid))
    k2 = kb.v_mov_b32(None, 2 * k)  # bytes per row of A and B^T
    g_a = kb.v_mad_u32_u24(None, kb.v_add_u32(None, row0, row), k2, chunk8)
    g_b = kb.v_mad_u32_u24(None, kb.v_add_u32(None, col0, row), k2, chunk8)
    lds_w = kb.v_lshlrev_b32(None, 3, tid)
    # Fragments: wave w = t/64 owns rows 32*(w/2).. and columns 32*(w%2).. of the C tile;
    # lane l reads row l%16, f16 4*(l/16)..+3 of a 16-row block: byte 32*(l%16) + 8*(l/16).
    r = kb.v_and_b32(None, 15, tid)
    q = kb.v_bfe_u32(None, tid, 4, 2)
    rq = kb.v_lshl_add_u32(None, r, 5, kb.v_lshlrev_b32(None, 3, q))
    wave_m = kb.v_lshrrev_b32(None, 7, tid)
    wave_n = kb.v_bfe_u32(None, tid, 6, 1)
    lds_a = kb.v_lshl_add_u32(None, wave_m, 10, rq)  # + 512 for the second 16-row block
    lds_b = kb.v_lshl_add_u32(None, wave_n, 10, rq)  # + SLICE (B^T is second)

    def load_slices(offset: int):
        """Global -> registers: this work-item's 8 bytes of the next A and B^T slices."""
        return (kb.global_load_dwordx2(kb.vregs(2, align=2), g_a, pa, offset=offset),
                kb.global_load_dwordx2(kb.vregs(2, align=2), g_b, pb, offset=offset))

    def store_slices(slices, buffer: int) -> None:
        """Registers -> LDS buffer `buffer`."""
        kb.ds_write_b64(lds_w, slices[0], offset=buffer * BUFFER)
        kb.ds_write_b64(lds_w, slices[1], offset=buffer * BUFFER + SLICE)

    def compute(buffer: int, acc):
        """The wave's 2x2 MFMAs on LDS buffer `buffer` (acc None: start from C = 0)."""
        base = buffer * BUFFER
        fa = [kb.ds_read_b64(kb.vregs(2, align=2), lds_a, offset=base + 512 * i)
              for i in range(2)]
        fb = [kb.ds_read_b64(kb.vregs(2, align=2), lds_b, offset=base + SLICE + 512 * j)
              for j in range(2)]
        if acc is None:
            return [kb.v_mfma_f32_16x16x16_f16(kb.vregs(4, align=4), fb[j], fa[i], 0)
                    for i in range(2) for j in range(2)]
        return [kb.v_mfma_f32_16x16x16_f16(acc[2 * i + j], fb[j], fa[i], acc[2 * i + j])
                for i in range(2) for j in range(2)]

    # Tile 0 into buffer 0 and tile 1 into registers; compute tile 0 from C = 0.
    store_slices(load_slices(0), 0)
    nxt = load_slices(2 * TILE_K)
    kb.s_barrier()
    acc = compute(0, None)
    store_slices(nxt, 1)
    # Loop p = 1 .. k/32 - 1: tile 2p-1 from buffer 1, tile 2p from buffer 0, loading
    # tiles 2p and 2p+1 on the way.
    count = kb.s_mov_b32(None, k // (2 * TILE_K) - 1)
    loop = kb.label("k_loop")
    g_a = kb.v_add_u32(g_a, 4 * TILE_K, g_a)
    g_b = kb.v_add_u32(g_b, 4 * TILE_K, g_b)
    nxt = load_slices(0)
    kb.s_barrier()
    acc = compute(1, acc)
    store_slices(nxt, 0)
    nxt = load_slices(2 * TILE_K)
    kb.s_barrier()
    acc = compute(0, acc)
    store_slices(nxt, 1)
    count = kb.s_sub_u32(count, count, 1)
    kb.s_cmp_lg_u32(count, 0)
    kb.s_cbranch_scc1(loop)
    # The last tile, from buffer 1.
    kb.s_barrier()
    acc = compute(1, acc)
    # Block (i, j) of the wave: lane l holds C[row][col..col+3] with row = row0 +
    # 32*wave_m + 16i + l%16 and col = col0 + 32*wave_n + 16j + 4*(l/16).
    c_row = kb.v_add_u32(None, row0, kb.v_lshl_add_u32(None, wave_m, 5, r))
    c_col = kb.v_add_u32(None, col0, kb.v_lshl_add_u32(None, wave_n, 5,
                                                       kb.v_lshlrev_b32(None, 2, q)))
    nn = kb.v_mov_b32(None, n)
    off_c = kb.v_lshlrev_b32(None, 2, kb.v_mad_u32_u24(None, c_row, nn, c_col))
    for i in range(2):
        if i:
            off_c = kb.v_add_u32(None, 16 * n * 4, off_c)
        for j in range(2):
            kb.global_store_dwordx4(off_c, acc[2 * i + j], pc, offset=64 * j)
    kb.s_endpgm()
    return kb.finish()


def run(m: int = 128, n: int = 128, k: int = 128, target: str = "gfx942",
        backend: str = "auto", pipeline: str = "auto", seed: int = 0) -> np.ndarray:
    """Compile with `pipeline`, run the GEMM and check it against NumPy; returns C."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    code = asterism.compile(build(m, n, k, target), pipeline=pipeline)
    asterism.launch(code, "gemm_lds", grid=(n // TILE_MN, m // TILE_MN, 1),
                    block=(THREADS, 1, 1), args=[a, np.ascontiguousarray(b.T), c],
                    backend=backend)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-3 * np.abs(want).max())
    return c


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128, help="M = N = K (multiple of 64)")
    ap.add_argument("--target", default="gfx942", choices=["gfx942", "gfx950"])
    ap.add_argument("--print", action="store_true", help="print the assembly and stop")
    args = ap.parse_args()
    s = args.size
    if args.print:
        print(asterism.translate(build(s, s, s, args.target), pipeline="auto"), end="")
        return
    run(s, s, s, args.target)
    print(f"{s}^3 fp16 GEMM, 64x64 tiles with LDS double buffering, matches NumPy")


if __name__ == "__main__":
    main()
