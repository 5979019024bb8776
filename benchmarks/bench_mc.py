#!/usr/bin/env python3
"""Assembler and disassembler speed against LLVM 22, side by side.

Builds a 100k-instruction kernel with the instruction mix of a real hand-written kernel (the
shared aiter GEMM sample) and random operands, then times:
  * assemble: `asterism` (parse + encode + HSACO write, in process) vs `llvm-mc -filetype=obj`
    + `ld.lld -shared` on the same .s file;
  * disassemble: asterism (read + decode + print the objdump-style listing, what `asterism
    disasm` does) vs `llvm-objdump -d` on the same code object.
Prints instructions/s and the ratio LLVM time / asterism time (higher is better for
asterism; the goal is >= 1), by the wall clock and by CPU time (user + system: less
sensitive to other work on a busy machine). asterism runs in this process (warm: the best of
`--repeat` runs); the LLVM tools are fresh processes, as a user runs them.

Usage: python benchmarks/bench_mc.py [--instructions 100000] [--repeat 3] [--source FILE.s]
"""

from __future__ import annotations

import argparse
import os
import resource
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


def best(fns, repeat: int) -> list[tuple[float, float]]:
    """The best wall time and the best CPU time (this process and its children, user +
    system) of `repeat` runs of each function, the functions run in turn (so that a busy
    spell of the machine slows all of them)."""
    walls: list[list[float]] = [[] for _ in fns]
    cpus: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            before = _cpu()
            start = time.perf_counter()
            fn()
            walls[k].append(time.perf_counter() - start)
            cpus[k].append(_cpu() - before)
    return [(min(w), min(c)) for w, c in zip(walls, cpus, strict=True)]


def _cpu() -> float:
    """CPU seconds used so far by this process and its waited-for children."""
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=Path,
                    help="time this assembly file instead of a generated kernel (e.g. one "
                         "written by an earlier run with --keep)")
    ap.add_argument("--keep", type=Path, help="write the generated kernel's source here")
    args = ap.parse_args()
    llvm_mc, ld_lld = require_llvm_tool("llvm-mc"), require_llvm_tool("ld.lld")
    objdump = require_llvm_tool("llvm-objdump")
    if args.source is not None:
        src = args.source.read_text()
        n = sum(1 for line in src.splitlines()  # (build_source's instruction lines)
                if line.startswith("  ") and not line.startswith("  ."))
    else:
        n = args.instructions
        src = build_source(n)
        if args.keep is not None:
            args.keep.write_text(src)
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

        t_ours_asm, t_llvm_asm = best([ours_asm, llvm_asm], args.repeat)
        same = api.disassemble(h_ours)[0].text == api.disassemble(h_llvm)[0].text

        def ours_dis() -> None:
            api.disassembly_listing(h_llvm)  # (what `asterism disasm` prints)

        def llvm_dis() -> None:
            subprocess.run([objdump, "-d", h_llvm], check=True, stdout=subprocess.DEVNULL)

        t_ours_dis, t_llvm_dis = best([ours_dis, llvm_dis], args.repeat)
        listed = api.disassembly_listing(h_llvm) == subprocess.run(
            [objdump, "-d", h_llvm], check=True, capture_output=True, text=True).stdout
    print(f"{n} instructions (best of {args.repeat}); .text identical to LLVM's: {same}; "
          f"listing identical to llvm-objdump's: {listed}")
    for what, peer, (ours, ours_cpu), (llvm, llvm_cpu) in (
            ("assemble   ", "llvm-mc+ld.lld", t_ours_asm, t_llvm_asm),
            ("disassemble", "llvm-objdump  ", t_ours_dis, t_llvm_dis)):
        print(f"{what} asterism {n / ours:10,.0f} inst/s ({ours:6.3f} s, CPU {ours_cpu:6.3f})"
              f"   {peer} {n / llvm:10,.0f} inst/s ({llvm:6.3f} s, CPU {llvm_cpu:6.3f})"
              f"   ratio {llvm / ours:5.2f}x (CPU {llvm_cpu / ours_cpu:5.2f}x; goal >= 1)")


if __name__ == "__main__":
    main()
