#!/usr/bin/env python3
"""`raise` and `compile` speed on a 200 KB code object made of real AITER kernels.

The shared AITER code objects are 15-32 KB; the 200 KB case is built from the largest
(tests/data/shared/codeobjects/aiter_gfx950_fmha_fwd_hd128_bf16_causal.co, 30 KB, ~3,000
instructions): it is raised once, its amdgcn.kernel op is repeated `--copies` times (7 by
default) under new symbol names (`<name>_1`, `<name>_2`, ...; the first keeps its name) in
one amdgcn.module, and `asterism.compile` makes one code object of it: the same
instructions, descriptor and metadata per kernel, each kernel 256-byte aligned as the
assembler lays them out (about 206 KB, ~21,000 instructions). That code object is the input
of `raise`, a valid one (raising it and compiling the result gives it back byte for byte,
which this script checks).

Times (best of `--repeat`, in this process after a warm-up, wall and CPU; CPU is what a
loaded machine distorts least):
  * raise: code object bytes -> verified IR module (asterism.raise_kernel), and printing it;
  * compile of the raised .mlir text, as `asterism compile` does it (parse, lower to MC with
    its verification, encode, write the code object), and its phases timed apart: parse
    (text -> module, unverified), verify (of which dominance; lowering verifies once more
    here), lower to MC, encode (.text), write (descriptors, metadata, ELF);
  * with `--cli` (default on): the two verbs in fresh processes, as a user runs them.
There is no LLVM peer for raising IR, so the figures are times and KB/s of code object
(goal on the 2-core development machine: < 1 s each for the 200 KB case).

Usage: python benchmarks/bench_compile.py [--copies 7] [--repeat 3] [--no-cli]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from asterism import api  # noqa: E402
from asterism.ir import print_ir  # noqa: E402

SAMPLE = REPO / "tests" / "data" / "shared" / "codeobjects" / \
    "aiter_gfx950_fmha_fwd_hd128_bf16_causal.co"


def build_code_object(copies: int) -> bytes:
    """The code object of `copies` copies of the AITER sample's kernel (see the docstring)."""
    text = print_ir(api.raise_kernel(SAMPLE))
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("  amdgcn.kernel @"))
    end = max(i for i, line in enumerate(lines) if line == "}")  # (the module's brace)
    kernel = lines[start:end]
    name = re.match(r"  amdgcn\.kernel @(\S+) ", kernel[0]).group(1)  # type: ignore[union-attr]
    out = lines[:start]
    for k in range(copies):
        header = kernel[0].replace(f"@{name} ", f"@{name}_{k} " if k else f"@{name} ", 1)
        out += [header, *kernel[1:]]
    out += lines[end:]
    return api.compile("\n".join(out))


class Timer:
    """Best wall and CPU time per named step over the repeats."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def __call__(self, name: str, fn):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        self.wall[name] = min(self.wall.get(name, 1e9), time.perf_counter() - wall)
        self.cpu[name] = min(self.cpu.get(name, 1e9), time.process_time() - cpu)
        return result

    def line(self, name: str, label: str, kb: float | None = None) -> str:
        """One printed figure: wall and CPU ms (and KB/s of code object on CPU time)."""
        rate = f"  {kb / self.cpu[name]:7.0f} KB/s" if kb else ""
        return (f"  {label:<34} {self.wall[name] * 1000:8.0f} ms  {self.cpu[name] * 1000:8.0f} "
                f"ms{rate}")


def compile_phases(timer: Timer, text: str, out_path: str) -> bytes:
    """`asterism compile` of `text`, phase by phase (the sum is close to `compile`)."""
    from asterism.ir.dominance import check_dominance
    from asterism.ir.text import parse_text
    from asterism.ir.to_mc import lower_module
    from asterism.ir.verify import verify_module
    from asterism.mc.assembler import assemble_module, encode_text
    from asterism.mc.codeobject import write_code_object
    from asterism.textio import write_file_atomic

    module = timer("parse", lambda: parse_text(text, "bench.mlir"))
    timer("dominance", lambda: check_dominance(module))
    timer("verify", lambda: verify_module(module))
    mc = timer("lower", lambda: lower_module(module))
    timer("encode", lambda: encode_text(mc))
    obj = timer("assemble", lambda: assemble_module(mc))  # (encode again + descriptors)
    data = timer("elf", lambda: write_code_object(obj))
    timer("file", lambda: write_file_atomic(out_path, data))
    return data


def run_cli(verb: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of `python -m asterism.cli VERB...` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    subprocess.run([sys.executable, "-m", "asterism.cli", *verb], check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    """Build the code object, time raise and compile (and their phases), check the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=7, help="copies of the AITER kernel")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cli", dest="cli", action="store_false",
                        help="skip the fresh-process runs of the two verbs")
    args = parser.parse_args()
    from asterism.ir.to_mc import lower_module

    t0 = time.perf_counter()
    original = build_code_object(args.copies)
    kb = len(original) / 1024
    module = api.raise_kernel(original)
    count = sum(len(k.body) for k in lower_module(module).kernels)
    print(f"input: {args.copies} copies of {SAMPLE.name}: {kb:.0f} KB code object, {count} "
          f"instructions (built and warmed up in {time.perf_counter() - t0:.1f} s)")
    timer = Timer()
    with tempfile.TemporaryDirectory() as tmp:
        co_path, ir_path, out_path = (os.path.join(tmp, n) for n in ("k.co", "k.mlir", "o.co"))
        with open(co_path, "wb") as f:
            f.write(original)
        for _ in range(args.repeat):
            module = timer("raise", lambda: api.raise_kernel(original))
            text = timer("print", lambda: print_ir(module) + "\n")  # noqa: B023
            # (as `asterism compile` does it: parsed, verified once while lowering)
            data = timer("compile", lambda: api.compile(text))  # noqa: B023
            if data != original:
                sys.exit("compile of the raised IR does not give the code object back")
            phased = compile_phases(timer, text, out_path)
            if phased != original:
                sys.exit("the phase-by-phase compile does not give the code object back")
        with open(ir_path, "w") as f:
            f.write(text)
        print(f"best of {args.repeat} (wall / CPU; KB/s of code object on CPU time; raised IR "
              f"{len(text) / 1e6:.1f} MB):")
        print(timer.line("raise", "raise (code object -> IR module)", kb))
        print(timer.line("print", "print the IR"))
        print(timer.line("compile", "compile (.mlir text -> code object)", kb))
        for name, label in [("parse", "parse (unverified)"), ("verify", "verify"),
                            ("dominance", "  of which dominance"),
                            ("lower", "lower to MC (its verify included)"),
                            ("encode", "encode .text"),
                            ("assemble", "encode + descriptors + metadata"),
                            ("elf", "write the ELF"), ("file", "write the file")]:
            print(timer.line(name, "  " + label))
        if args.cli:
            print("fresh processes (wall / CPU, interpreter start and imports included):")
            for label, verb in [("asterism raise", ["raise", co_path, "-o", ir_path]),
                                ("asterism compile", ["compile", ir_path, "-o", out_path])]:
                wall, cpu = run_cli(verb)
                print(f"  {label:<34} {wall * 1000:8.0f} ms  {cpu * 1000:8.0f} ms  "
                      f"{kb / cpu:7.0f} KB/s")
            with open(out_path, "rb") as f:
                if f.read() != original:
                    sys.exit("asterism compile of the raised file does not give the code "
                             "object back")
    print("round trip: raise + compile gives the code object back byte for byte")


if __name__ == "__main__":
    main()
