"""Vector add with relocatable registers and no waits or nops: c[i] = a[i] + b[i], i < n.

    python examples/auto/vector_add.py            # compile with `auto`, run, check vs NumPy
    python examples/auto/vector_add.py --print    # the assembly `auto` produced

Every register is chosen by the allocator and every s_waitcnt placed by the `waits` pass
(compare examples/vector_add/vector_add.py, where both are written by hand).
"""

from __future__ import annotations

import argparse

import numpy as np

import asterism
from asterism.builder import KernelBuilder

BLOCK = 256


def build(target: str = "gfx942"):
    """The kernel as an xDSL module (relocatable registers, no waits)."""
    kb = KernelBuilder("vector_add", target=target, workgroup_size=(BLOCK, 1, 1))
    a = kb.arg_buffer("a", "f32", access="read_only")
    b = kb.arg_buffer("b", "f32", access="read_only")
    c = kb.arg_buffer("c", "f32", access="write_only")
    n = kb.arg_value("n", "i32")
    kernarg, wg, tid = kb.kernarg_ptr(), kb.workgroup_id("x"), kb.workitem_id("x")
    pa = kb.s_load_dwordx2(None, kernarg, a)
    pb = kb.s_load_dwordx2(None, kernarg, b)
    pc = kb.s_load_dwordx2(None, kernarg, c)
    count = kb.s_load_dword(None, kernarg, n)
    i = kb.v_lshl_add_u32(None, wg, 8, tid)  # i = wg * 256 + tid
    offset = kb.v_lshlrev_b32(None, 2, i)
    kb.v_cmp_gt_u32(kb.vcc, count, i)  # lanes with i < n
    kb.s_and_saveexec_b64(None, kb.vcc)
    done = kb.new_label("done")
    kb.s_cbranch_execz(done)
    x = kb.global_load_dword(None, offset, pa)
    y = kb.global_load_dword(None, offset, pb)
    kb.global_store_dword(offset, kb.v_add_f32(None, x, y), pc)
    kb.place(done)
    kb.s_endpgm()
    return kb.finish()


def run(n: int = 1000, target: str = "gfx942", backend: str = "auto",
        pipeline: str = "auto") -> np.ndarray:
    """Compile with `pipeline`, run on `n` random elements and check c against NumPy."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = np.zeros(n, np.float32)
    code = asterism.compile(build(target), pipeline=pipeline)
    asterism.launch(code, "vector_add", grid=(-(-n // BLOCK), 1, 1), block=(BLOCK, 1, 1),
                    args=[a, b, c, n], backend=backend)
    np.testing.assert_array_equal(c, a + b)
    return c


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000, help="number of elements")
    ap.add_argument("--target", default="gfx942", choices=["gfx942", "gfx950"])
    ap.add_argument("--print", action="store_true", help="print the assembly and stop")
    args = ap.parse_args()
    if args.print:
        print(asterism.translate(build(args.target), pipeline="auto"), end="")
        return
    c = run(args.n, args.target)
    print(f"vector_add of {args.n} floats matches NumPy: c[:4] = {c[:4]}")


if __name__ == "__main__":
    main()
