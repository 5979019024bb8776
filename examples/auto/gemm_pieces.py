"""Sub-registers with relocatable registers: the fp16 MFMA GEMM of `gemm_f16.py` written with
register pieces (`kb.sub`, `kb.split`, `kb.join`) instead of whole ranges. C = A @ B (f16 in,
f32 out), one wave per 16x16 tile of C, K unrolled in steps of 16.

    python examples/auto/gemm_pieces.py              # 64x48x32 on the emulator, vs NumPy
    python examples/auto/gemm_pieces.py --print      # the assembly `auto` produced

What the pieces do here:
* the A tile's base address is 64-bit SGPR arithmetic on the halves of the pointer that
  `s_load_dwordx2` loaded: `s_add_u32` on the low half, `s_addc_u32` on the high one, the two
  results joined again as the `saddr` of the loads;
* each lane's A fragment (4 f16) is two `global_load_dword`s joined into the 64-bit MFMA
  operand;
* the accumulator is stored one dword at a time with `global_store_dword`, in the C layout
  of v_mfma_f32_16x16x16_f16 (lane l, register j holds C[4*(l//16) + j][l % 16]), through a
  64-bit VGPR address per store: `v_add_co_u32` on the low half of a relocatable pair and
  `v_addc_co_u32` on its high half, written in place.
The allocator places every piece in its range's registers (no copies), `waits` waits for the
loads into the pieces, `hazards` puts the nops between the last MFMA and the reads of its
result's registers.
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
    kb = KernelBuilder("gemm_pieces", target=target, workgroup_size=(64, 1, 1))
    a = kb.arg_buffer("a", "f16", access="read_only")
    bt = kb.arg_buffer("bt", "f16", access="read_only")
    c = kb.arg_buffer("c", "f32", access="write_only")
    kernarg = kb.kernarg_ptr()
    wg_n, wg_m, tid = kb.workgroup_id("x"), kb.workgroup_id("y"), kb.workitem_id("x")
    pa = kb.s_load_dwordx2(None, kernarg, a)
    pb = kb.s_load_dwordx2(None, kernarg, bt)
    pc = kb.s_load_dwordx2(None, kernarg, c)
    # A rows of this tile start at byte (wg_m * 16) * K * 2: a 64-bit add on the halves.
    a_lo, a_hi = kb.split(pa)
    row_bytes = kb.s_mul_i32(None, wg_m, TILE * k * 2)
    pa_tile = kb.join(kb.s_add_u32(None, a_lo, row_bytes), kb.s_addc_u32(None, a_hi, 0))
    r = kb.v_and_b32(None, 15, tid)  # lane l: r = l % 16, q = l / 16
    q4 = kb.v_lshlrev_b32(None, 2, kb.v_lshrrev_b32(None, 4, tid))  # 4q
    col0 = kb.s_lshl_b32(None, wg_n, 4)  # wg_n * 16
    # Lane l's fragments: A[row0 + r][k0 + 4q ..], B^T[col0 + r][k0 + 4q ..] (4 f16 each).
    off_a = kb.v_lshlrev_b32(None, 1, kb.v_mad_u32_u24(None, r, k, q4))
    off_b = kb.v_lshlrev_b32(None, 1, kb.v_mad_u32_u24(None, kb.v_add_u32(None, col0, r),
                                                        kb.v_mov_b32(None, k), q4))
    acc = None
    for step in range(k // TILE):  # unrolled K loop: 16 f16 (32 bytes) per step
        lo = kb.global_load_dword(None, off_a, pa_tile, offset=32 * step)
        hi = kb.global_load_dword(None, off_a, pa_tile, offset=32 * step + 4)
        fa = kb.join(lo, hi)  # two dwords as the 64-bit A operand
        fb = kb.global_load_dwordx2(kb.vregs(2, align=2), off_b, pb, offset=32 * step)
        if acc is None:
            acc = kb.v_mfma_f32_16x16x16_f16(kb.vregs(4, align=4), fa, fb, 0)
        else:
            acc = kb.v_mfma_f32_16x16x16_f16(acc, fa, fb, acc)
    # Register j of lane l is C[row0 + 4q + j][col0 + r]: byte (row * N + col0 + r) * 4.
    c_lo, c_hi = kb.split(pc)
    row0 = kb.s_lshl_b32(None, wg_m, 4)
    for j in range(4):
        row = kb.v_add_u32(None, row0, kb.v_add_u32(None, j, q4))
        byte = kb.v_lshlrev_b32(None, 2, kb.v_add3_u32(None, kb.v_mul_lo_u32(None, row, n),
                                                         col0, r))
        addr = kb.join(kb.v_mov_b32(None, c_lo), kb.v_mov_b32(None, c_hi))
        lo, hi = kb.split(addr)
        lo, _carry = kb.v_add_co_u32(lo, lo, byte)  # low dword, carry out in vcc
        hi, _carry = kb.v_addc_co_u32(hi, 0, hi)  # high dword + carry
        kb.global_store_dword(kb.join(lo, hi), kb.sub(acc, j), kb.off)
    kb.s_endpgm()
    return kb.finish()


def run(m: int = 64, n: int = 48, k: int = 32, target: str = "gfx942",
        backend: str = "auto", pipeline: str = "auto", seed: int = 0) -> np.ndarray:
    """Compile with `pipeline`, run the GEMM and check it against NumPy; returns C."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    code = asterism.compile(build(m, n, k, target), pipeline=pipeline)
    asterism.launch(code, "gemm_pieces", grid=(n // TILE, m // TILE, 1), block=(64, 1, 1),
                    args=[a, np.ascontiguousarray(b.T), c], backend=backend)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-3 * np.abs(want).max())
    return c


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, nargs=3, default=[64, 48, 32], metavar=("M", "N", "K"),
                    help="M N K (multiples of 16)")
    ap.add_argument("--target", default="gfx942", choices=["gfx942", "gfx950"])
    ap.add_argument("--print", action="store_true", help="print the assembly and stop")
    args = ap.parse_args()
    m, n, k = args.size
    if args.print:
        print(asterism.translate(build(m, n, k, args.target), pipeline="auto"), end="")
        return
    run(m, n, k, args.target)
    print(f"{m}x{n}x{k} fp16 GEMM with register pieces (registers, waits and nops by `auto`) "
          "matches NumPy")


if __name__ == "__main__":
    main()
