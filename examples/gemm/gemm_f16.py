"""An fp16 MFMA GEMM written by hand with the builder: C = A @ B (f16 in, f32 out).

    python examples/gemm/gemm_f16.py                 # 256^3 on the emulator, checked vs NumPy
    python examples/gemm/gemm_f16.py --print         # the assembly

Each workgroup is one wave computing a 16x16 tile of C with v_mfma_f32_16x16x16_f16, looping
over K in steps of 16. The kernel takes B transposed (BT, N x K row-major) so that every lane
loads its 4 consecutive f16 of A and of B with one global_load_dwordx2. MFMA operand layout
(CDNA3 ISA / AMD matrix instruction calculator, 16x16x16 f16): lane l holds A[l % 16][4*(l//16)
+ 0..3] and B[4*(l//16) + 0..3][l % 16]; D lane l, register j is C[4*(l//16) + j][l % 16].
Registers, waits and nops are written by hand: what is printed is what runs.
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
    kb.s_load_dwordx2(kb.s[4:6], kernarg, a)
    kb.s_load_dwordx2(kb.s[6:8], kernarg, bt)
    kb.s_load_dwordx2(kb.s[8:10], kernarg, c)
    # Per lane: r = l % 16, q = l / 16.
    kb.v_and_b32(kb.v(1), 15, tid)  # r
    kb.v_lshrrev_b32(kb.v(2), 4, tid)  # q
    # A byte offset: ((wg_m*16 + r) * K + 4q) * 2; B^T: ((wg_n*16 + r) * K + 4q) * 2.
    kb.s_lshl_b32(kb.s(12), wg_m, 4)  # wg_m * 16
    kb.s_lshl_b32(kb.s(13), wg_n, 4)  # wg_n * 16
    kb.v_add_u32(kb.v(3), kb.s(12), kb.v(1))  # row of A
    kb.v_add_u32(kb.v(4), kb.s(13), kb.v(1))  # row of B^T (= column of C)
    kb.v_lshlrev_b32(kb.v(5), 2, kb.v(2))  # 4q
    kb.v_mov_b32(kb.v(6), k)
    kb.v_mad_u32_u24(kb.v(7), kb.v(3), kb.v(6), kb.v(5))  # row_a * K + 4q
    kb.v_mad_u32_u24(kb.v(8), kb.v(4), kb.v(6), kb.v(5))  # row_b * K + 4q
    kb.v_lshlrev_b32(kb.v(7), 1, kb.v(7))  # bytes
    kb.v_lshlrev_b32(kb.v(8), 1, kb.v(8))
    for j in range(4):  # zero the accumulator v[12:15]
        kb.v_mov_b32(kb.v(12 + j), 0)
    kb.s_waitcnt(lgkmcnt=0)
    for step in range(k // TILE):  # unrolled K loop: 16 f16 (32 bytes) per step
        kb.global_load_dwordx2(kb.v[16:18], kb.v(7), kb.s[4:6], offset=32 * step)
        kb.global_load_dwordx2(kb.v[18:20], kb.v(8), kb.s[6:8], offset=32 * step)
        kb.s_waitcnt(vmcnt=0)
        kb.v_mfma_f32_16x16x16_f16(kb.v[12:16], kb.v[16:18], kb.v[18:20], kb.v[12:16])
    # C byte offset of lane l, register j: ((wg_m*16 + 4q + j) * N + wg_n*16 + r) * 4.
    kb.v_add_u32(kb.v(9), kb.s(12), kb.v(5))  # wg_m*16 + 4q
    kb.v_mov_b32(kb.v(6), n)
    kb.v_mad_u32_u24(kb.v(10), kb.v(9), kb.v(6), kb.v(4))  # row * N + col
    kb.v_lshlrev_b32(kb.v(10), 2, kb.v(10))
    # A VMEM read of an XDL MFMA result needs NumPasses + 3 = 7 wait states for this 4-pass
    # MFMA on gfx942 (8 on gfx950); the four VALU instructions above provide 4 of them.
    kb.s_nop(2 if target == "gfx942" else 3)
    for j in range(4):
        kb.global_store_dword(kb.v(10), kb.v(12 + j), kb.s[8:10], offset=4 * n * j)
    kb.s_endpgm()
    return kb.finish()


def run(m: int = 256, n: int = 256, k: int = 256, target: str = "gfx942",
        backend: str = "auto", seed: int = 0) -> tuple[np.ndarray, float]:
    """Run the GEMM and check it against NumPy; returns (C, seconds per launch)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    code = asterism.compile(build(m, n, k, target))
    res = asterism.launch(code, "gemm_f16", grid=(n // TILE, m // TILE, 1), block=(64, 1, 1),
                          args=[a, np.ascontiguousarray(b.T), c], backend=backend)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-3 * np.abs(want).max())
    return c, res.times[0]


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256, help="M = N = K (multiple of 16)")
    ap.add_argument("--target", default="gfx942")
    ap.add_argument("--print", action="store_true", help="print the assembly and stop")
    args = ap.parse_args()
    s = args.size
    if args.print:
        print(asterism.translate(build(s, s, s, args.target)), end="")
        return
    _c, seconds = run(s, s, s, args.target)
    print(f"{s}^3 fp16 GEMM matches NumPy ({seconds:.2f} s per launch on the backend)")


if __name__ == "__main__":
    main()
