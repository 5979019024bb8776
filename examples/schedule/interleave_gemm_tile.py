"""A 32x32 GEMM tile whose inner loop is written as interleaved instruction streams.

    python examples/schedule/interleave_gemm_tile.py            # the assembly
    python examples/schedule/interleave_gemm_tile.py --ir       # the IR
    python examples/schedule/interleave_gemm_tile.py --run      # run on the emulator, check
    python examples/schedule/interleave_gemm_tile.py --nk 8 --target gfx950

D = A @ B + C for A (32 x K, f16), B (K x 32, f16, passed transposed), C and D (32 x 32, f32,
in the MFMA register layout: lane l of tile t holds rows 4*(l//16)+r, r < 4, of column
l%16), K = 16 * nk, one wave. The tile is 2 x 2 v_mfma_f32_16x16x16_f16 per k-slice.

Each k-step is three streams merged by one pattern:
    mfma  - the 4 MFMAs of this k-slice (unroll(2, 2): i outer, j inner),
    ds    - the 4 DS reads of the next k-slice's fragments (double-buffered registers),
    gl    - global loads of the C tile (one per 16x16 tile, spread over the first steps),
"after every MFMA one DS read; after every 4th MFMA one load of C while any is left",
checked as groups of exactly 1 MFMA + 1 DS read (+ 1 VMEM load), kept in order by later
passes. The LDS round trip (each lane reads back what it wrote) stands in for the exchange
between waves a multi-wave kernel does.
"""

from __future__ import annotations

import argparse

import numpy as np

from asterism.builder import Group, I, KernelBuilder, Stream, after, unroll

MAX_NK = 31  # 4 * nk staged fragments of 512 bytes: DS offsets stay below 64 KiB


def build(nk: int = 4, target: str = "gfx942", keep: bool = True):
    """The kernel as an xDSL module (keep=False lets the schedule pass reorder the loop)."""
    kb = KernelBuilder("gemm_tile", target, lds_size=64 * 8 * 4 * nk)
    a = kb.arg_buffer("a", "f16", "read_only")
    bt = kb.arg_buffer("bt", "f16", "read_only")
    c = kb.arg_buffer("c", "f32", "read_only")
    d = kb.arg_buffer("d", "f32", "write_only")
    kp, tid = kb.kernarg_ptr(), kb.workitem_id("x")
    for pair, arg in zip((4, 6, 8, 10), (a, bt, c, d)):
        kb.s_load_dwordx2(kb.s[pair:pair + 2], kp, arg)
    # Lane l reads row 16*t + l%16, elements 4*(l//16) .. +3 of each 16-wide k-slice.
    kb.v_and_b32(kb.v(1), 15, tid)
    kb.v_lshrrev_b32(kb.v(2), 4, tid)
    kb.v_lshlrev_b32(kb.v(2), 2, kb.v(2))
    kb.v_mul_u32_u24(kb.v(3), 16 * nk, kb.v(1))
    kb.v_add_u32(kb.v(3), kb.v(3), kb.v(2))
    kb.v_lshlrev_b32(kb.v(3), 1, kb.v(3))  # byte offset in A / Bt
    kb.v_lshlrev_b32(kb.v(4), 3, tid)  # this lane's 8-byte LDS slot
    kb.v_lshlrev_b32(kb.v(5), 4, tid)  # this lane's 16 bytes of a C/D tile
    row_bytes = 16 * 16 * nk * 2  # 16 rows of A (or Bt) per tile
    kb.v_add_u32(kb.v(6), row_bytes, kb.v(3))  # ... of the second tile
    kb.s_waitcnt(lgkmcnt=0)

    # Stage every fragment through LDS: slot (operand, tile, k) at 512 bytes apart.
    def slot(operand: int, tile: int, k: int) -> int:
        return 512 * ((operand * 2 + tile) * nk + k)

    for operand, base in ((0, kb.s[4:6]), (1, kb.s[6:8])):
        for tile in range(2):
            for k in range(nk):
                kb.global_load_dwordx2(kb.v[12:14], kb.v(3 + 3 * tile), base, offset=32 * k)
                kb.s_waitcnt(vmcnt=0)
                kb.ds_write_b64(kb.v(4), kb.v[12:14], offset=slot(operand, tile, k))
    kb.s_waitcnt(lgkmcnt=0)

    # Fragments: bank b holds A tiles 0, 1 and B tiles 0, 1 of one k-slice.
    def frag(bank: int, operand: int, tile: int):
        r = 16 + 8 * bank + 4 * operand + 2 * tile
        return kb.v[r:r + 2]

    acc = {(i, j): kb.a[8 * i + 4 * j:8 * i + 4 * j + 4] for i, j in unroll(2, 2)}
    for r in range(16):
        kb.v_accvgpr_write_b32(kb.a(r), 0)
    for operand, tile in unroll(2, 2):  # slice 0 into bank 0
        kb.ds_read_b64(frag(0, operand, tile), kb.v(4), offset=slot(operand, tile, 0))
    kb.s_waitcnt(lgkmcnt=0)

    c_in = Stream("vmem_read", [I.global_load_dwordx4(f"v[{40 + 4 * t}:{43 + 4 * t}]", "v5",
                                                      "s[8:9]", offset=1024 * t)
                                for t in range(4)])
    for k in range(nk):
        bank, nxt = k % 2, (k + 1) % 2
        mfma = Stream.over("mfma", unroll(2, 2), lambda kb, i, j, bank=bank:
                           kb.v_mfma_f32_16x16x16_f16(acc[i, j], frag(bank, 0, i),
                                                      frag(bank, 1, j), acc[i, j]))
        steps = []
        if k + 1 < nk:
            ds = Stream.over("ds_read", unroll(2, 2), lambda kb, operand, tile, k=k, nxt=nxt:
                             kb.ds_read_b64(frag(nxt, operand, tile), kb.v(4),
                                            offset=slot(operand, tile, k + 1)))
            steps.append(after(ds))
        steps.append(after(c_in, every=4, exhausted="stop"))
        group = Group(mfma=1, ds_read=1) if k + 1 < nk else Group(mfma=1)
        loads = Group(mfma=1, ds_read=1, vmem_read=1) if k + 1 < nk else \
            Group(mfma=1, vmem_read=1)
        expect = [group] * 3 + [loads if k < 4 else group]
        # The C loads carry over from step to step; the last step takes what is left.
        kb.interleave(mfma, *steps, expect=expect, keep=keep,
                      leftover="append" if k + 1 == nk else "keep")
        kb.s_waitcnt(lgkmcnt=0)

    kb.s_nop(7)  # MFMA results are read below: 4 passes + 3 wait states, and then some
    kb.s_nop(7)
    for r in range(16):
        kb.v_accvgpr_read_b32(kb.v(56 + r), kb.a(r))
    kb.s_waitcnt(vmcnt=0)
    for r in range(16):
        kb.v_add_f32(kb.v(56 + r), kb.v(56 + r), kb.v(40 + r))
    for t in range(4):  # tile t = (i, j) -> accumulators a[4t:4t+4]
        kb.global_store_dwordx4(kb.v(5), kb.v[56 + 4 * t:60 + 4 * t], kb.s[10:12],
                                offset=1024 * t)
    kb.s_endpgm()
    kb.assert_counts(mfma=4 * nk, vmem_read=4 * nk + 4)
    return kb.finish()


def reference(nk: int, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """Random inputs (a, bt, c in the MFMA layout) and the expected d, in launch order."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((32, 16 * nk)).astype(np.float16)
    B = rng.standard_normal((16 * nk, 32)).astype(np.float16)
    C = rng.standard_normal((32, 32)).astype(np.float32)
    D = A.astype(np.float64) @ B.astype(np.float64) + C
    return [A, np.ascontiguousarray(B.T), to_layout(C)], to_layout(D)


def to_layout(m: np.ndarray) -> np.ndarray:
    """A 32x32 matrix as 4 tiles (i, j) x 64 lanes x 4 rows (the MFMA accumulator layout)."""
    out = np.zeros((4, 64, 4), np.float32)
    for t, (i, j) in enumerate(unroll(2, 2)):
        for lane in range(64):
            for r in range(4):
                out[t, lane, r] = m[16 * i + 4 * (lane // 16) + r, 16 * j + lane % 16]
    return out.reshape(-1)


def run(module, nk: int, pipeline: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Run on the emulator: (d, expected d)."""
    import asterism

    args, want = reference(nk)
    d = np.zeros_like(want)
    asterism.launch(asterism.compile(module, pipeline=pipeline), "gemm_tile", grid=1,
                    block=64, args=[*args, d], backend="emu")
    return d, want


def main() -> None:
    """Command line."""
    import asterism
    from asterism.ir import print_ir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nk", type=int, default=4, help="k-slices of 16 (default 4)")
    parser.add_argument("--target", default="gfx942")
    parser.add_argument("--ir", action="store_true", help="print the IR instead of assembly")
    parser.add_argument("--run", action="store_true", help="run on the emulator and check")
    args = parser.parse_args()
    if not 1 <= args.nk <= MAX_NK:
        parser.error(f"--nk must be 1 to {MAX_NK} (the LDS staging area and DS offsets)")
    module = build(args.nk, args.target)
    if args.run:
        d, want = run(module, args.nk)
        err = float(np.max(np.abs(d - want)))
        print(f"max |D - NumPy| = {err:.2e} ({'ok' if err < 1e-2 else 'WRONG'})")
    elif args.ir:
        print(print_ir(module), end="")
    else:
        print(asterism.translate(module), end="")


if __name__ == "__main__":
    main()
