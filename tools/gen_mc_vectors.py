#!/usr/bin/env python3
"""Generate the committed MC test vectors (tests/data/mc_vectors/<target>.jsonl.gz) with LLVM 22.

Each record holds an assembly line, the bytes llvm-mc encodes it to and the text llvm-objdump
prints for those bytes, so tests/test_mc_vectors.py checks the encoder and the decoder
without LLVM. Two kinds of records:
  * "asm": random instructions of every database form (asterism.mc.random_inst), as LLVM
    encodes them;
  * "word": random machine words of every form that LLVM decodes (random operand fields and
    modifier bits), as llvm-objdump prints them.

Usage: python tools/gen_mc_vectors.py [--per-form 2] [--words-per-form 2] [--seed 1]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from asterism.isa import get_isa  # noqa: E402
from asterism.isa.formats import FORMATS, SRC_DPP, SRC_SDWA  # noqa: E402
from asterism.mc.llvm_oracle import llvm_disassemble, llvm_encode  # noqa: E402
from asterism.mc.printer import format_inst  # noqa: E402
from asterism.mc.random_inst import random_inst  # noqa: E402

OUT = REPO / "tests" / "data" / "mc_vectors"


def random_word(form, rng: random.Random) -> bytes:
    """Random bits in every field of `form`'s format, with its opcode and variant bits."""
    fmt = FORMATS[form.format]
    w = rng.getrandbits(fmt.size * 8)
    lo, width, val = fmt.ident
    w = (w & ~(((1 << width) - 1) << lo)) | (val << lo)
    w = fmt.fields["op"].put(w, form.opcode)
    for name, value in form.fixed.items():
        w = fmt.fields[name].put(w, value)
    data = w.to_bytes(fmt.size, "little")
    if form.enc in ("DPP", "SDWA"):
        w = fmt.fields["src0"].put(w, SRC_DPP if form.enc == "DPP" else SRC_SDWA)
        data = w.to_bytes(fmt.size, "little") + rng.getrandbits(32).to_bytes(4, "little")
    return data + rng.getrandbits(32).to_bytes(4, "little")  # a literal, if one is read


def generate(target: str, per_form: int, words_per_form: int, seed: int) -> list[dict]:
    """Vectors for one target."""
    from asterism.mc.decoder import get_decoder

    rng = random.Random(f"{seed}-{target}")
    isa = get_isa(target)
    forms = [f for inst in isa.instructions.values() for f in inst.forms]
    lines = [format_inst(random_inst(f, rng)) for f in forms for _ in range(per_form)]
    records = []
    encoded = llvm_encode(lines, target)
    accepted = [(t, e) for t, e in zip(lines, encoded) if isinstance(e, bytes)]
    texts = llvm_disassemble([e for _t, e in accepted], target)
    for (line, data), text in zip(accepted, texts):
        records.append({"kind": "asm", "asm": line, "bytes": data.hex(), "objdump": text})
    dec = get_decoder(target)
    blobs = []
    for f in forms:
        if f.enc == "MAI_SCALE":
            continue
        for _ in range(words_per_form):
            data = random_word(f, rng)
            try:
                size = dec.decode(data, 0, 0).size
            except Exception:
                size = len(data) - 4
            blobs.append(data[:size])
    for data, text in zip(blobs, llvm_disassemble(blobs, target)):
        if text.startswith(("<", ".long")) or "/*" in text:
            continue  # not a valid instruction for LLVM
        records.append({"kind": "word", "bytes": data.hex(), "objdump": text})
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", nargs="+", default=["gfx942", "gfx950"])
    ap.add_argument("--per-form", type=int, default=2)
    ap.add_argument("--words-per-form", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for t in args.targets:
        records = generate(t, args.per_form, args.words_per_form, args.seed)
        path = OUT / f"{t}.jsonl.gz"
        with gzip.open(path, "wt") as f:
            f.write(json.dumps({"generated_by": "tools/gen_mc_vectors.py", "target": t,
                                "seed": args.seed}) + "\n")
            for r in records:
                f.write(json.dumps(r) + "\n")
        print(f"{t}: {len(records)} vectors -> {path} ({path.stat().st_size} bytes)",
              file=sys.stderr)


if __name__ == "__main__":
    main()
