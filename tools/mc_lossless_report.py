#!/usr/bin/env python3
"""Lossless text over many random words: read -> print (lossless) -> parse -> encode.

Random instructions of every ISA database form (our encoder) and `--mutants` copies of each
with 1-3 bits flipped; every word the decoder accepts is printed losslessly, the text is
parsed and encoded again. Printed per target: words decoded, how many print as LLVM's text
and how many need `.long` (per family), and any word that does not come back identical
(there should be none). No LLVM needed.

    python tools/mc_lossless_report.py [--per-form 4] [--mutants 4] [--seed 7]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mc_lossless_words import decoded, random_words, round_trip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-form", type=int, default=4, help="instructions per form")
    ap.add_argument("--mutants", type=int, default=4, help="bit-flipped copies per encoding")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    bad = 0
    for target in ("gfx942", "gfx950"):
        words = random_words(target, args.per_form, args.mutants, args.seed)
        result = round_trip(decoded(words, target), target)
        bad += len(result.mismatches)
        print(f"{target}: {len(words)} words, {result.total} decoded; {result.llvm_text} print "
              f"as LLVM text, {result.words} as .long; {len(result.mismatches)} not identical")
        print("  .long by family: " + ", ".join(f"{f} {n}"
                                               for f, n in result.by_family.most_common()))
        for raw, text, again in result.mismatches[:10]:
            print(f"    {raw}: {text} -> {again}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
