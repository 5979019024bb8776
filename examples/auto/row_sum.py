"""Row reduction with relocatable registers and no waits or nops: out[r] = sum of row r.

    python examples/auto/row_sum.py              # compile with `auto`, run, check vs NumPy
    python examples/auto/row_sum.py --print      # the assembly `auto` produced

One row per work-item; `unroll` partial sums go around the loop (loop-carried values the
allocator keeps in place) and are combined at the end. The loads of one iteration are
waited for by the `waits` pass at their first use, across the loop's back edge.
"""

from __future__ import annotations

import argparse

import numpy as np

import asterism
from asterism.builder import KernelBuilder

BLOCK = 64


def build(cols: int = 32, unroll: int = 4, target: str = "gfx942"):
    """The kernel for rows of `cols` u32 (a multiple of `unroll`)."""
    if cols % unroll:
        raise ValueError("cols must be a multiple of unroll")
    kb = KernelBuilder("row_sum", target=target, workgroup_size=(BLOCK, 1, 1))
    x = kb.arg_buffer("x", "u32", access="read_only")
    out = kb.arg_buffer("out", "u32", access="write_only")
    kernarg, wg, tid = kb.kernarg_ptr(), kb.workgroup_id("x"), kb.workitem_id("x")
    px = kb.s_load_dwordx2(None, kernarg, x)
    po = kb.s_load_dwordx2(None, kernarg, out)
    row = kb.v_lshl_add_u32(None, wg, BLOCK.bit_length() - 1, tid)
    addr = kb.v_mul_u32_u24(None, cols * 4, row)  # byte offset of the row
    parts = [kb.v_mov_b32(None, 0) for _ in range(unroll)]
    count = kb.s_mov_b32(None, cols // unroll)
    loop = kb.label("loop")
    vals = [kb.global_load_dword(None, addr, px, offset=4 * k) for k in range(unroll)]
    for k in range(unroll):
        parts[k] = kb.v_add_u32(parts[k], parts[k], vals[k])  # the chain goes around
    addr = kb.v_add_u32(addr, 4 * unroll, addr)
    count = kb.s_sub_u32(count, count, 1)
    kb.s_cmp_lg_u32(count, 0)
    kb.s_cbranch_scc1(loop)
    while len(parts) > 1:
        parts = [kb.v_add_u32(None, p, q) for p, q in zip(parts[::2], parts[1::2])]
    kb.global_store_dword(kb.v_lshlrev_b32(None, 2, row), parts[0], po)
    kb.s_endpgm()
    return kb.finish()


def run(rows: int = 256, cols: int = 32, unroll: int = 4, target: str = "gfx942",
        backend: str = "auto", pipeline: str = "auto") -> np.ndarray:
    """Compile with `pipeline`, run on a random rows x cols matrix, check against NumPy."""
    if rows % BLOCK:
        raise ValueError(f"rows must be a multiple of {BLOCK}")
    rng = np.random.default_rng(unroll)
    x = rng.integers(0, 1 << 20, size=(rows, cols), dtype=np.uint32)
    out = np.zeros(rows, np.uint32)
    code = asterism.compile(build(cols, unroll, target), pipeline=pipeline)
    asterism.launch(code, "row_sum", grid=(rows // BLOCK, 1, 1), block=(BLOCK, 1, 1),
                    args=[x, out], backend=backend)
    np.testing.assert_array_equal(out, x.sum(axis=1, dtype=np.uint32))
    return out


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=256, help="rows (a multiple of 64)")
    ap.add_argument("--cols", type=int, default=32, help="columns (a multiple of --unroll)")
    ap.add_argument("--unroll", type=int, default=4, help="partial sums per work-item")
    ap.add_argument("--target", default="gfx942", choices=["gfx942", "gfx950"])
    ap.add_argument("--print", action="store_true", help="print the assembly and stop")
    args = ap.parse_args()
    if args.print:
        code = asterism.translate(build(args.cols, args.unroll, args.target), pipeline="auto")
        print(code, end="")
        return
    out = run(args.rows, args.cols, args.unroll, args.target)
    print(f"row sums of a {args.rows}x{args.cols} matrix match NumPy: out[:4] = {out[:4]}")


if __name__ == "__main__":
    main()
