#!/usr/bin/env python3
"""The decoder against llvm-objdump 22 on words one to three bits away from valid ones.

Random instructions of every ISA database form are encoded by llvm-mc; each encoding gets
`--mutants` copies with 1-3 random bits flipped. llvm-objdump and asterism decode every
copy. Printed per target: how many copies LLVM decodes and how many of those asterism prints
the same, and the copies LLVM rejects that asterism still decodes, per family (the decoder's
leniency). `--list N` shows N examples of each kind of difference. Needs llvm-22.

Copies are decoded alone, so a copy whose new length runs past its bytes is "truncated" for
asterism while LLVM reads on into the padding: those are counted apart, as are the words
LLVM prints with a /*...*/ comment that an operand or control is invalid.

    python tools/mc_word_fuzz_report.py [--mutants 2] [--seed 5] [--list 5]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mc_differential import TARGETS, family_of, our_text, random_lines

from asterism.mc.llvm_oracle import llvm_disassemble, llvm_encode


def mutants(encodings: list[bytes], count: int, rng: random.Random) -> list[bytes]:
    """`count` copies of each encoding with 1-3 random bits flipped."""
    out = []
    for data in encodings:
        for _ in range(count):
            b = bytearray(data)
            for _k in range(rng.randint(1, 3)):
                bit = rng.randrange(len(b) * 8)
                b[bit // 8] ^= 1 << (bit % 8)
            out.append(bytes(b))
    return out


def llvm_rejects(text: str) -> bool:
    """True if llvm-objdump showed no instruction for the word."""
    return text.startswith((".long", "<")) or "<unknown>" in text


def report(target: str, count: int, seed: int, show: int) -> None:
    """Print the figures of one target."""
    rng = random.Random(f"{seed}-{target}")
    lines = random_lines(target, 1, seed)
    encodings = [d for d in llvm_encode(lines, target) if isinstance(d, bytes)]
    words = mutants(encodings, count, rng)
    texts = llvm_disassemble(words, target)
    same = decoded = truncated = flagged = 0
    lenient: Counter[str] = Counter()
    examples: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for word, theirs in zip(words, texts):
        ours = our_text(word, target)
        ours_rejects = ours.startswith("DecodeError")
        if llvm_rejects(theirs):
            if not ours_rejects:
                family = family_of(word, target)
                lenient[family] += 1
                examples[f"we decode, LLVM rejects ({family})"].append((word.hex(), theirs, ours))
            continue
        decoded += 1
        if ours == theirs:
            same += 1
        elif "truncated" in ours:
            truncated += 1
        elif "/*" in theirs:  # LLVM prints it but marks an operand or control invalid
            flagged += 1
            examples["LLVM marks invalid"].append((word.hex(), theirs, ours))
        else:
            examples["different text"].append((word.hex(), theirs, ours))
    print(f"{target}: {len(words)} words off by 1-3 bits; llvm-objdump decodes {decoded}, "
          f"asterism prints {same} of them the same ({100 * same / max(decoded, 1):.1f}%), "
          f"{truncated} run past their bytes, {flagged} LLVM marks /*invalid*/, "
          f"{decoded - same - truncated - flagged} differ")
    print(f"  words LLVM rejects that asterism decodes: {sum(lenient.values())} "
          f"({', '.join(f'{f} {n}' for f, n in lenient.most_common())})")
    for kind, items in examples.items():
        for word, theirs, ours in items[:show]:
            print(f"    {kind}: {word}\n      llvm:     {theirs}\n      asterism: {ours}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=2, help="copies per encoding (default 2)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--list", type=int, default=0, metavar="N",
                    help="show N examples of each kind of difference")
    args = ap.parse_args()
    for target in TARGETS:
        report(target, args.mutants, args.seed, args.list)


if __name__ == "__main__":
    main()
