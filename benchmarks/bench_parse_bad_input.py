#!/usr/bin/env python3
"""IR parse time on bad input of growing size, against valid input of the same size.

Parse time must grow linearly with the input whatever its content. xDSL's lexer once took
18 s on a 60-byte unterminated string literal (its string pattern backtracks exponentially);
this script times pathological inputs from 1 KB to 1 MB (unterminated strings, long escapes,
deep nesting, long comments and identifiers, an error at the very end of a valid file) and
prints, for each, the time per KB and the ratio against parsing a valid kernel of the same
size (the demo kernel with as many adds as fit). Every bad input must fail with asterism's
ParseError; the script checks that too.

Usage: python benchmarks/bench_parse_bad_input.py [--sizes 1,10,100,1000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from asterism import api  # noqa: E402
from asterism.errors import AsterismError  # noqa: E402

HEAD = 'amdgcn.module @m target = "'


def valid_kernel(size: int) -> str:
    """The demo kernel with enough dependent adds to be about `size` bytes."""
    per_add = 120  # bytes of one `%v1_k = amdgcn.vop2 v_add_u32 ...` line
    n = max(1, size // per_add)
    return subprocess.run([sys.executable, str(REPO / "examples/demo/generate_add_10.py"),
                           "--num-add-instructions", str(n)], capture_output=True, text=True,
                          check=True).stdout


def bad_inputs(size: int, valid: str) -> dict[str, str]:
    """Pathological inputs of about `size` bytes, by name."""
    unit = "gf  amdgcn.kernel @k args() {"
    return {
        "unterminated string (issue)": HEAD + unit * (size // len(unit)) + "\n}\n",
        "unterminated string, x*N": HEAD + "x" * size,
        "unterminated escapes \\n*N": HEAD + "\\n" * (size // 2),
        "bad escape after N chars": HEAD + "x" * size + "\\q\"",
        "nested [ * N": "builtin.module attributes {a = " + "[" * size,
        "nested ( * N": "(" * size,
        "nested regions { * N": "builtin.module {" * (size // 16),
        "comment line of N": "//" + "x" * size,
        "whitespace * N": " " * size + "@",
        "identifier of N": "a" * size,
        "valid file + unterminated": valid + '"abc',
        "valid file + stray '.'": valid + ".",
    }


def timed_parse(text: str, expect_error: bool, repeat: int) -> float:
    """Best wall time of api.parse over `repeat` runs (checking the outcome)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            api.parse(text)
            failed = False
        except AsterismError:
            failed = True
        best = min(best, time.perf_counter() - t0)
        if failed != expect_error:
            raise SystemExit(f"unexpected {'error' if failed else 'success'} on {text[:60]!r}")
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,10,100,1000", help="input sizes in KB")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    api.parse(valid_kernel(1024))  # imports and dialect set-up out of the timings
    print(f"{'input':<30} {'KB':>6} {'time s':>9} {'ms/KB':>8} {'vs valid':>9}")
    for kb in (int(s) for s in args.sizes.split(",")):
        valid = valid_kernel(kb * 1024)
        ref = timed_parse(valid, False, args.repeat)
        print(f"{'valid kernel (reference)':<30} {len(valid) / 1024:6.0f} {ref:9.3f} "
              f"{ref * 1e3 / (len(valid) / 1024):8.3f} {1.0:9.2f}")
        for name, text in bad_inputs(kb * 1024, valid).items():
            t = timed_parse(text, True, args.repeat)
            size_kb = len(text) / 1024
            # Ratio against the valid kernel scaled to this input's size.
            ratio = t / (ref * len(text) / len(valid))
            print(f"{name:<30} {size_kb:6.0f} {t:9.3f} {t * 1e3 / size_kb:8.3f} {ratio:9.2f}")
        print()


if __name__ == "__main__":
    main()
