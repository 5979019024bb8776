"""Shared pieces of the MC differential tests (vectors and live LLVM runs)."""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter
from pathlib import Path

from asterism.isa import get_isa
from asterism.mc.asm_syntax import InstParser
from asterism.mc.decoder import get_decoder
from asterism.mc.encoder import encode_inst
from asterism.mc.matcher import select_form
from asterism.mc.printer import format_inst
from asterism.mc.random_inst import random_inst, slot_alternatives

VECTORS = Path(__file__).parent / "data" / "mc_vectors"
TARGETS = ["gfx942", "gfx950"]


def load_vectors(target: str) -> list[dict]:
    """The committed vectors of a target (records after the header line)."""
    with gzip.open(VECTORS / f"{target}.jsonl.gz", "rt") as f:
        lines = f.read().splitlines()
    return [json.loads(line) for line in lines[1:]]


def our_encoding(line: str, target: str) -> bytes | str:
    """Our bytes for an assembly line, or the error text."""
    try:
        inst = InstParser().parse(line)
        inst.form = select_form(inst, target)
        return encode_inst(inst)
    except Exception as err:
        return f"{type(err).__name__}: {err}"


def our_text(data: bytes, target: str) -> str:
    """Our printed text for one instruction's bytes, or the error text."""
    try:
        return format_inst(get_decoder(target).decode(data, 0, 0).inst)
    except Exception as err:
        return f"{type(err).__name__}: {err}"


def family_of(line_or_bytes, target: str) -> str:
    """The encoding family of an instruction (for per-family figures)."""
    try:
        if isinstance(line_or_bytes, bytes):
            return get_decoder(target).decode(line_or_bytes, 0, 0).inst.form.enc
        inst = InstParser().parse(line_or_bytes)
        return select_form(inst, target).enc
    except Exception:
        return "?"


def random_lines(target: str, per_form: int, seed: int) -> list[str]:
    """Random instructions of every form of the target, printed."""
    rng = random.Random(f"{seed}-{target}")
    isa = get_isa(target)
    return [format_inst(random_inst(f, rng)) for inst in isa.instructions.values()
            for f in inst.forms for _ in range(per_form)]


def forced_alternative_lines(target: str, per_class: int, seed: int) -> dict[str, list[str]]:
    """alternative -> up to `per_class` random instructions (a seeded sample of all forms and
    slots) whose slot is forced to that operand alternative, printed."""
    rng = random.Random(f"{seed}-{target}-alternatives")
    slots: dict[str, list] = {}
    for inst in get_isa(target).instructions.values():
        for form in inst.forms:
            for k, spec in enumerate(form.operands):
                for alt in slot_alternatives(form, spec):
                    slots.setdefault(alt, []).append((form, k))
    out = {}
    for alt, places in sorted(slots.items()):
        sample = rng.sample(places, min(per_class, len(places)))
        out[alt] = [format_inst(random_inst(form, rng, {k: alt})) for form, k in sample]
    return out


def summarize(results: list[tuple[str, bool]]) -> dict[str, tuple[int, int]]:
    """(matches, total) per family."""
    total, ok = Counter(), Counter()
    for fam, good in results:
        total[fam] += 1
        ok[fam] += good
    return {fam: (ok[fam], total[fam]) for fam in sorted(total)}
