"""Vector add, hand-written with the builder: c[i] = a[i] + b[i] for i < n (f32).

    python examples/vector_add/vector_add.py            # build, run on the emulator, check
    python examples/vector_add/vector_add.py --print    # print the assembly instead

Registers are allocated by hand and the waits written explicitly: what is printed is what
runs. Work-items past n are switched off through EXEC (s_and_saveexec), the usual guard.
"""

from __future__ import annotations

import argparse

import numpy as np

import asterism
from asterism.builder import KernelBuilder

BLOCK = 256


def build(target: str = "gfx942"):
    """The kernel as an xDSL module."""
    kb = KernelBuilder("vector_add", target=target, workgroup_size=(BLOCK, 1, 1))
    a = kb.arg_buffer("a", "f32", access="read_only")
    b = kb.arg_buffer("b", "f32", access="read_only")
    c = kb.arg_buffer("c", "f32", access="write_only")
    n = kb.arg_value("n", "i32")
    kernarg, wg, tid = kb.kernarg_ptr(), kb.workgroup_id("x"), kb.workitem_id("x")
    kb.s_load_dwordx2(kb.s[4:6], kernarg, a)
    kb.s_load_dwordx2(kb.s[6:8], kernarg, b)
    kb.s_load_dwordx2(kb.s[8:10], kernarg, c)
    kb.s_load_dword(kb.s(10), kernarg, n)
    kb.v_lshl_add_u32(kb.v(1), wg, 8, tid)  # i = wg * 256 + tid
    kb.v_lshlrev_b32(kb.v(2), 2, kb.v(1))  # byte offset
    kb.s_waitcnt(lgkmcnt=0)  # pointers and n are in SGPRs now
    kb.v_cmp_gt_u32(kb.vcc, kb.s(10), kb.v(1))  # lanes with i < n
    kb.s_and_saveexec_b64(kb.s[12:14], kb.vcc)
    done = kb.new_label("done")
    kb.s_cbranch_execz(done)
    kb.global_load_dword(kb.v(3), kb.v(2), kb.s[4:6])
    kb.global_load_dword(kb.v(4), kb.v(2), kb.s[6:8])
    kb.s_waitcnt(vmcnt=0)
    kb.v_add_f32(kb.v(3), kb.v(3), kb.v(4))
    kb.global_store_dword(kb.v(2), kb.v(3), kb.s[8:10])
    kb.place(done)
    kb.s_endpgm()
    return kb.finish()


def run(n: int = 1000, target: str = "gfx942", backend: str = "auto") -> np.ndarray:
    """Run on `n` random elements; returns c (and checks it against NumPy)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = np.zeros(n, np.float32)
    code = asterism.compile(build(target))
    asterism.launch(code, "vector_add", grid=(-(-n // BLOCK), 1, 1), block=(BLOCK, 1, 1),
                    args=[a, b, c, n], backend=backend)
    np.testing.assert_array_equal(c, a + b)
    return c


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000, help="number of elements")
    ap.add_argument("--target", default="gfx942")
    ap.add_argument("--print", action="store_true", help="print the assembly and stop")
    args = ap.parse_args()
    if args.print:
        print(asterism.translate(build(args.target)), end="")
        return
    c = run(args.n, args.target)
    print(f"vector_add of {args.n} floats matches NumPy: c[:4] = {c[:4]}")


if __name__ == "__main__":
    main()
