#!/usr/bin/env python3
"""Exact-match figures of asterism's encoder and decoder against LLVM 22, per target and
encoding family (the numbers quoted in closing notes).

Random instructions of every ISA database form (`--per-form` each) are encoded by llvm-mc
and by asterism; LLVM's bytes are decoded by llvm-objdump and by asterism. Lines LLVM rejects
are counted apart (and listed with --list when asterism accepts them). Needs llvm-22.

    python tools/mc_differential_report.py [--per-form 8] [--seed 7] [--list]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mc_differential import (
    TARGETS,
    family_of,
    our_encoding,
    our_text,
    random_lines,
    summarize,
)

from asterism.mc.llvm_oracle import llvm_disassemble, llvm_encode


def report(target: str, per_form: int, seed: int, show: bool) -> bool:
    """Print one target's table; True if everything LLVM accepted matched."""
    lines = random_lines(target, per_form, seed)
    llvm = llvm_encode(lines, target)
    enc, dec, bad = [], [], []
    only_ours: Counter = Counter()
    accepted = []
    for line, data in zip(lines, llvm):
        if not isinstance(data, bytes):
            if isinstance(our_encoding(line, target), bytes):
                only_ours[family_of(line, target)] += 1
                if show:
                    print(f"  accepted by asterism, rejected by LLVM: {line}")
            continue
        accepted.append((line, data))
        ours = our_encoding(line, target)
        enc.append((family_of(line, target), ours == data))
        if ours != data:
            bad.append(f"encode {line}: LLVM {data.hex()}, asterism {ours!r}")
    texts = llvm_disassemble([d for _l, d in accepted], target)
    for (_line, data), text in zip(accepted, texts):
        ours = our_text(data, target)
        dec.append((family_of(data, target), ours == text))
        if ours != text:
            bad.append(f"decode {data.hex()}: LLVM {text!r}, asterism {ours!r}")
    e, d = summarize(enc), summarize(dec)
    print(f"{target}: {len(lines)} random lines, {len(accepted)} accepted by llvm-mc")
    print(f"  {'family':10} {'encode':>15} {'decode':>15} {'LLVM rejects, we accept':>24}")
    for fam in sorted(set(e) | set(d)):
        eo, et = e.get(fam, (0, 0))
        do, dt = d.get(fam, (0, 0))
        print(f"  {fam:10} {eo:>6}/{et:<6} {100 * eo / max(et, 1):5.1f}% "
              f"{do:>6}/{dt:<6} {100 * do / max(dt, 1):5.1f}% {only_ours.get(fam, 0):>10}")
    eo, et = sum(v[0] for v in e.values()), sum(v[1] for v in e.values())
    do, dt = sum(v[0] for v in d.values()), sum(v[1] for v in d.values())
    print(f"  {'all':10} {eo:>6}/{et:<6} {100 * eo / max(et, 1):5.1f}% "
          f"{do:>6}/{dt:<6} {100 * do / max(dt, 1):5.1f}% {sum(only_ours.values()):>10}")
    for line in bad:
        print("  MISMATCH", line)
    return not bad


def main() -> int:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-form", type=int, default=8, help="random instances per form")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--targets", nargs="+", default=TARGETS)
    ap.add_argument("--list", action="store_true",
                    help="list the lines asterism accepts and LLVM rejects")
    args = ap.parse_args()
    ok = all([report(t, args.per_form, args.seed, args.list) for t in args.targets])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
