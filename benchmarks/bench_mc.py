#!/usr/bin/env python3
"""Assembler and disassembler speed against LLVM 22, side by side.

Builds a 100k-instruction kernel with the instruction mix of a real hand-written kernel (the
shared aiter GEMM sample) and random operands, then times:
  * assemble: `asterism` (parse + encode + HSACO write, in process) vs `llvm-mc -filetype=obj`
    + `ld.lld -shared` on the same .s file;
  * disassemble: asterism (read + decode + print the objdump-style listing, what `asterism
    disasm` does) vs `llvm-objdump -d` on the same code object.
Prints instructions/s and the ratio asterism / LLVM (higher is better for asterism).

Usage: python benchmarks/bench_mc.py [--instructions 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from asterism import api  # noqa: E402
from asterism.mc.decoder import DecodedInst  # noqa: E402
from asterism.mc.llvm_tools import require_llvm_tool  # noqa: E402
from asterism.mc.printer import format_inst  # noqa: E402

SAMPLE = REPO / "tests" / "data" / "shared" / "codeobjects" / \
    "aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co"


def build_source(n: int, seed: int = 1) -> str:
    """A kernel of `n` instructions with the instruction mix of a real hand-written kernel
    (the shared aiter GEMM sample) but random operands, so that lines rarely repeat; lines
    LLVM rejects (e.g. two SGPRs on the constant bus) are dropped before timing."""
    import random

    from asterism.mc.llvm_oracle import llvm_encode
    from asterism.mc.random_inst import random_inst

    _obj, items = api.disassemble(SAMPLE)
    forms = [d.inst.form for d in items if isinstance(d, DecodedInst)
             and d.inst.form.enc != "SOPP" and d.inst.mnemonic != "s_code_end"]
    rng = random.Random(seed)
    lines: list[str] = []
    while len(lines) < n - 1:
        batch = [format_inst(random_inst(rng.choice(forms), rng)) for _ in range(20000)]
        ok = llvm_encode(batch, "gfx942")
        lines += [line for line, e in zip(batch, ok) if isinstance(e, bytes)]
    lines = lines[:n - 1] + ["s_endpgm"]
    return "\n".join([
        '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"', ".amdhsa_code_object_version 5",
        ".text", ".globl bench", ".p2align 8", ".type bench,@function", "bench:",
        *("  " + line for line in lines),
        ".rodata", ".p2align 6", ".amdhsa_kernel bench", "  .amdhsa_next_free_vgpr 256",
        "  .amdhsa_next_free_sgpr 96", "  .amdhsa_accum_offset 256", ".end_amdhsa_kernel", ""])


def best(fn, repeat: int) -> float:
    """The best wall time of `repeat` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.instructions
    llvm_mc, ld_lld = require_llvm_tool("llvm-mc"), require_llvm_tool("ld.lld")
    objdump = require_llvm_tool("llvm-objdump")
    src = build_source(n)
    with tempfile.TemporaryDirectory() as tmp:
        s_path, o_path = os.path.join(tmp, "bench.s"), os.path.join(tmp, "bench.o")
        h_llvm, h_ours = os.path.join(tmp, "llvm.hsaco"), os.path.join(tmp, "ours.hsaco")
        Path(s_path).write_text(src)

        def ours_asm() -> None:
            Path(h_ours).write_bytes(api.assemble(Path(s_path).read_text(), None, s_path))

        def llvm_asm() -> None:
            subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942",
                            "-filetype=obj", s_path, "-o", o_path], check=True)
            subprocess.run([ld_lld, "-shared", o_path, "-o", h_llvm], check=True)

        t_ours_asm = best(ours_asm, args.repeat)
        t_llvm_asm = best(llvm_asm, args.repeat)
        same = api.disassemble(h_ours)[0].text == api.disassemble(h_llvm)[0].text

        def ours_dis() -> None:
            api.disassembly_listing(h_llvm)  # (what `asterism disasm` prints)

        def llvm_dis() -> None:
            subprocess.run([objdump, "-d", h_llvm], check=True, stdout=subprocess.DEVNULL)

        t_ours_dis = best(ours_dis, args.repeat)
        t_llvm_dis = best(llvm_dis, args.repeat)
        listed = api.disassembly_listing(h_llvm) == subprocess.run(
            [objdump, "-d", h_llvm], check=True, capture_output=True, text=True).stdout
    print(f"{n} instructions (best of {args.repeat}); .text identical to LLVM's: {same}; "
          f"listing identical to llvm-objdump's: {listed}")
    print(f"assemble    asterism {n / t_ours_asm:12,.0f} inst/s ({t_ours_asm:6.3f} s)   "
          f"llvm-mc+ld.lld {n / t_llvm_asm:12,.0f} inst/s ({t_llvm_asm:6.3f} s)   "
          f"ratio {t_llvm_asm / t_ours_asm:5.2f}x")
    print(f"disassemble asterism {n / t_ours_dis:12,.0f} inst/s ({t_ours_dis:6.3f} s)   "
          f"llvm-objdump   {n / t_llvm_dis:12,.0f} inst/s ({t_llvm_dis:6.3f} s)   "
          f"ratio {t_llvm_dis / t_ours_dis:5.2f}x")


if __name__ == "__main__":
    main()
