"""Shared pieces of the lossless-text checks: random words and the read -> print (lossless)
-> parse -> encode round trip (tests/test_mc_lossless.py, tools/mc_lossless_report.py)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from asterism.errors import AsterismError
from asterism.isa import get_isa
from asterism.mc.decoder import DecodedInst, get_decoder
from asterism.mc.encoder import encode_inst
from asterism.mc.inst import DATA
from asterism.mc.lossless import decoded_text
from asterism.mc.parser import parse_asm
from asterism.mc.random_inst import random_inst


def random_words(target: str, per_form: int, mutants: int, seed: int) -> list[bytes]:
    """Encodings of `per_form` random instructions of every form (our encoder), each with
    `mutants` copies with 1-3 random bits flipped (most decoder-accepted words that LLVM's
    text cannot carry are such neighbours of valid ones)."""
    rng = random.Random(f"{seed}-{target}")
    out = []
    for instr in get_isa(target).instructions.values():
        for form in instr.forms:
            for _ in range(per_form):
                try:
                    inst = random_inst(form, rng)
                    inst.form = form
                    data = encode_inst(inst)
                except AsterismError:
                    continue  # (a form the generator cannot fill: counted by the MC tests)
                out.append(data)
                for _k in range(mutants):
                    b = bytearray(data)
                    for _f in range(rng.randint(1, 3)):
                        bit = rng.randrange(len(b) * 8)
                        b[bit // 8] ^= 1 << (bit % 8)
                    out.append(bytes(b))
    return out


def decoded(words: list[bytes], target: str) -> list[DecodedInst]:
    """The words our decoder accepts (decoded alone, at address 0, read on into zeros when a
    flipped bit makes the instruction longer)."""
    decode = get_decoder(target).decode
    out = []
    for data in words:
        try:
            out.append(decode(data + bytes(16), 0, 0))
        except AsterismError:
            continue
    return out


@dataclass
class RoundTrip:
    """What the round trip of a set of decoded instructions gave."""

    total: int = 0
    llvm_text: int = 0  # printed as LLVM's text
    words: int = 0  # printed as .long (LLVM's text cannot carry their bits)
    by_family: Counter = field(default_factory=Counter)  # .long lines per encoding family
    mismatches: list[tuple[str, str, str]] = field(default_factory=list)  # (raw, text, again)


def round_trip(items: list[DecodedInst], target: str) -> RoundTrip:
    """Print every instruction losslessly, parse the whole text once and encode it: each
    line's bytes must equal the instruction's."""
    lines = [decoded_text(d) for d in items]
    header = [f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"', ".text"]
    module = parse_asm("\n".join(header + lines) + "\n", "lossless.s")
    again: dict[int, bytearray] = {}
    for inst in module.kernels[0].body:
        line = inst.loc.line - len(header) - 1
        again.setdefault(line, bytearray()).extend(encode_inst(inst))
    out = RoundTrip(total=len(items))
    for k, (d, text) in enumerate(zip(items, lines)):
        if text.startswith(DATA):
            out.words += 1
            out.by_family[d.inst.form.enc if d.inst.form else "?"] += 1
        else:
            out.llvm_text += 1
        got = bytes(again.get(k, b""))
        if got != d.raw:
            out.mismatches.append((d.raw.hex(), text, got.hex()))
    return out
