"""The fp16 MFMA GEMM of examples/gemm/gemm_f16.py rewritten for the `auto` pipeline:
relocatable registers, no s_waitcnt, no s_nop. C = A @ B (f16 in, f32 out).

    python examples/auto/gemm_f16.py              # 256^3 on the emulator, checked vs NumPy
    python examples/auto/gemm_f16.py --print      # the assembly `auto` produced

One wave per 16x16 tile of C with v_mfma_f32_16x16x16_f16, K unrolled in steps of 16; B is
taken transposed (BT, N x K) so that each lane loads 4 consecutive f16 of A and of B with
one global_load_dwordx2. With B^T as the MFMA's first operand each lane ends up holding 4
consecutive floats of one row of C, stored with one global_store_dwordx4. The allocator
picks the registers, `waits` puts each wait right before the MFMA that needs the loaded
fragments, `hazards` the nops between the last MFMA and the store of its result.
"""

from __future__ import annotations

import argparse

import numpy as np

import asterism
from asterism.builder import KernelBuilder

TILE = 16


def build(m: int, n: int, k: int, target: str = "gfx942"):
    """The GEMM kernel for fixed sizes (multiples of 16)."""
    if m % TILE or n % TILE or k % TILE:
        raise ValueError("M, N and K must be multiples of 16")
    kb = KernelBuilder("gemm_f16", target=target, workgroup_size=(64, 1, 1))
    a = kb.arg_buffer("a", "f16", access="read_only")
    bt = kb.arg_buffer("bt", "f16", access="read_only")
    c = kb.arg_buffer("c", "f32", access="write_only")
    kernarg = kb.kernarg_ptr()
    wg_n, wg_m, tid = kb.workgroup_id("x"), kb.workgroup_id("y"), kb.workitem_id("x")
    pa = kb.s_load_dwordx2(None, kernarg, a)
    pb = kb.s_load_dwordx2(None, kernarg, bt)
    pc = kb.s_load_dwordx2(None, kernarg, c)
    r = kb.v_and_b32(None, 15, tid)  # lane l: r = l % 16, q = l / 16
    q4 = kb.v_lshlrev_b32(None, 2, kb.v_lshrrev_b32(None, 4, tid))  # 4q
    row0 = kb.s_lshl_b32(None, wg_m, 4)  # wg_m * 16
    col0 = kb.s_lshl_b32(None, wg_n, 4)  # wg_n * 16
    kk = kb.v_mov_b32(None, k)
    # A byte offset: ((wg_m*16 + r) * K + 4q) * 2; B^T: ((wg_n*16 + r) * K + 4q) * 2.
    off_a = kb.v_lshlrev_b32(None, 1, kb.v_mad_u32_u24(None, kb.v_add_u32(None, row0, r),
                                                        kk, q4))
    off_b = kb.v_lshlrev_b32(None, 1, kb.v_mad_u32_u24(None, kb.v_add_u32(None, col0, r),
                                                        kk, q4))
    acc = None
    for step in range(k // TILE):  # unrolled K loop: 16 f16 (32 bytes) per step
        fa = kb.global_load_dwordx2(kb.vregs(2, align=2), off_a, pa, offset=32 * step)
        fb = kb.global_load_dwordx2(kb.vregs(2, align=2), off_b, pb, offset=32 * step)
        # B^T as the MFMA's A operand and A as its B operand: the result is the tile of
        # C^T, so lane l holds C[row0 + r][col0 + 4q + 0..3], one 128-bit store.
        if acc is None:
            acc = kb.v_mfma_f32_16x16x16_f16(kb.vregs(4, align=4), fb, fa, 0)
        else:
            acc = kb.v_mfma_f32_16x16x16_f16(acc, fb, fa, acc)
    # C byte offset of lane l: ((wg_m*16 + r) * N + wg_n*16 + 4q) * 4.
    nn = kb.v_mov_b32(None, n)
    off_c = kb.v_lshlrev_b32(None, 2, kb.v_mad_u32_u24(None, kb.v_add_u32(None, row0, r),
                                                        nn, kb.v_add_u32(None, col0, q4)))
    kb.global_store_dwordx4(off_c, acc, pc)
    kb.s_endpgm()
    return kb.finish()


def run(m: int = 256, n: int = 256, k: int = 256, target: str = "gfx942",
        backend: str = "auto", pipeline: str = "auto", seed: int = 0) -> np.ndarray:
    """Compile with `pipeline`, run the GEMM and check it against NumPy; returns C."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    code = asterism.compile(build(m, n, k, target), pipeline=pipeline)
    asterism.launch(code, "gemm_f16", grid=(n // TILE, m // TILE, 1), block=(64, 1, 1),
                    args=[a, np.ascontiguousarray(b.T), c], backend=backend)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-3 * np.abs(want).max())
    return c


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256, help="M = N = K (multiple of 16)")
    ap.add_argument("--target", default="gfx942", choices=["gfx942", "gfx950"])
    ap.add_argument("--print", action="store_true", help="print the assembly and stop")
    args = ap.parse_args()
    s = args.size
    if args.print:
        print(asterism.translate(build(s, s, s, args.target), pipeline="auto"), end="")
        return
    run(s, s, s, args.target)
    print(f"{s}^3 fp16 GEMM (registers, waits and nops by `auto`) matches NumPy")


if __name__ == "__main__":
    main()
