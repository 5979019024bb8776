#!/usr/bin/env python3
"""Exact-match figures of asterism's encoder and decoder against LLVM 22, per target and
encoding family (the numbers quoted in closing notes).

Random instructions of every ISA database form (`--per-form` each) are encoded by llvm-mc
and by asterism; LLVM's bytes are decoded by llvm-objdump and by asterism. Lines LLVM rejects
are counted apart (and listed with --list when asterism accepts them). Needs llvm-22.

    python tools/mc_differential_report.py [--per-form 8] [--seed 7] [--list]

`--coverage` instead counts, per target, the forms with an operand alternative (a class of
operand LLVM's assembler accepts in a slot: SGPR, TTMP, named register, inline float, an SGPR
pair for an SDWA compare's vcc...) that the random generator never drew in `--draws`
instances of the form; each such alternative is confirmed by llvm-mc accepting an instance
of it. `--generator FILE` measures another version of mc/random_inst.py (e.g. an older one
from git show) with today's classification:

    python tools/mc_differential_report.py --coverage [--draws 256] [--generator old.py]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
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

from asterism.isa import get_isa
from asterism.mc import random_inst as current_generator
from asterism.mc.llvm_oracle import llvm_disassemble, llvm_encode
from asterism.mc.printer import format_inst


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


def load_generator(path: str | None):
    """The random-instruction module to measure: today's, or the one in a file."""
    if path is None:
        return current_generator
    spec = importlib.util.spec_from_file_location("measured_random_inst", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def undrawn_alternatives(target: str, generator, draws: int, seed: int) -> list:
    """(form, the (slot, alternative) pairs of slot_alternatives the generator never drew)
    for the forms with some."""
    classify = current_generator
    rng = random.Random(f"{seed}-{target}-coverage")
    out = []
    for form in (f for inst in get_isa(target).instructions.values() for f in inst.forms):
        want = {(k, alt) for k, spec in enumerate(form.operands)
                for alt in classify.slot_alternatives(form, spec)}
        for _ in range(draws):
            inst = generator.random_inst(form, rng)
            want -= {(k, classify.alternative_of(spec, op))
                     for k, (spec, op) in enumerate(zip(form.operands, inst.operands))}
            if not want:
                break
        if want:
            out.append((form, want))
    return out


def accepted_by_llvm(target: str, missing: list, tries: int, seed: int) -> dict:
    """The part of `missing` LLVM accepts: some of `tries` instances forcing the alternative
    (other operands random) assemble with llvm-mc."""
    rng = random.Random(f"{seed}-{target}-confirm")
    keys, lines = [], []
    for form, pairs in missing:
        for k, alt in sorted(pairs):
            for _ in range(tries):
                keys.append((form, k, alt))
                lines.append(format_inst(current_generator.random_inst(form, rng, {k: alt})))
    confirmed: dict = {}  # id(form) -> pairs (a Form is not hashable)
    for (form, k, alt), data in zip(keys, llvm_encode(lines, target)):
        if isinstance(data, bytes):
            confirmed.setdefault(id(form), set()).add((k, alt))
    return confirmed


def coverage(target: str, generator, draws: int, seed: int) -> int:
    """Print and return how many forms had an LLVM-accepted alternative never drawn."""
    forms = [f for inst in get_isa(target).instructions.values() for f in inst.forms]
    missing = undrawn_alternatives(target, generator, draws, seed)
    confirmed = accepted_by_llvm(target, missing, tries=8, seed=seed)
    by_class = Counter(alt for pairs in confirmed.values() for _k, alt in pairs)
    by_class_forms = Counter(alt for pairs in confirmed.values() for alt in {a for _k, a in pairs})
    print(f"{target}: {len(confirmed)} of {len(forms)} forms have an operand alternative LLVM "
          f"accepts that {draws} draws never produced ({len(missing)} with any undrawn)")
    for alt, n in by_class_forms.most_common():
        print(f"  {alt:14} {n:>5} forms {by_class[alt]:>5} slots")
    return len(confirmed)


def main() -> int:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-form", type=int, default=8, help="random instances per form")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--targets", nargs="+", default=TARGETS)
    ap.add_argument("--list", action="store_true",
                    help="list the lines asterism accepts and LLVM rejects")
    ap.add_argument("--coverage", action="store_true",
                    help="count the forms with an operand alternative never drawn")
    ap.add_argument("--draws", type=int, default=256, help="instances per form (--coverage)")
    ap.add_argument("--generator", help="a random_inst.py to measure (--coverage)")
    args = ap.parse_args()
    if args.coverage:
        generator = load_generator(args.generator)
        for t in args.targets:
            coverage(t, generator, args.draws, args.seed)
        return 0
    ok = all([report(t, args.per_form, args.seed, args.list) for t in args.targets])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
