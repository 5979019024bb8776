"""Live differential tests against LLVM 22 (skip without it; CI has it).

Fresh random instructions of every database form are encoded by llvm-mc and by asterism
(bit-identical), and their bytes are decoded by llvm-objdump and by asterism (same text).
The default run uses one instance per form; `-m sweep` runs more (CI bounds it with
ASTERISM_SWEEP_PER_FORM).
"""

from __future__ import annotations

import os

import pytest
from mc_differential import TARGETS, family_of, our_encoding, our_text, random_lines, summarize

from asterism.mc.llvm_oracle import llvm_disassemble, llvm_encode

pytestmark = pytest.mark.llvm


def _differential(target: str, per_form: int, seed: int) -> tuple[dict, dict, list, list]:
    lines = random_lines(target, per_form, seed)
    llvm = llvm_encode(lines, target)
    accepted = [(line, data) for line, data in zip(lines, llvm) if isinstance(data, bytes)]
    enc_results, enc_bad = [], []
    for line, data in accepted:
        ours = our_encoding(line, target)
        good = ours == data
        enc_results.append((family_of(line, target), good))
        if not good:
            enc_bad.append((line, data.hex(), ours))
    texts = llvm_disassemble([d for _l, d in accepted], target)
    dec_results, dec_bad = [], []
    for (_line, data), text in zip(accepted, texts):
        ours = our_text(data, target)
        good = ours == text
        dec_results.append((family_of(data, target), good))
        if not good:
            dec_bad.append((data.hex(), text, ours))
    return summarize(enc_results), summarize(dec_results), enc_bad, dec_bad


@pytest.mark.parametrize("target", TARGETS)
def test_random_instructions_match_llvm(llvm_mc, llvm_objdump, target):
    enc, dec, enc_bad, dec_bad = _differential(target, per_form=1, seed=20261123)
    assert sum(t for _ok, t in enc.values()) > 1500
    assert not enc_bad, f"encoding mismatches: {enc_bad[:5]}"
    assert not dec_bad, f"decoding mismatches: {dec_bad[:5]}"


@pytest.mark.sweep
@pytest.mark.parametrize("target", TARGETS)
def test_random_instruction_sweep(llvm_mc, llvm_objdump, target):
    per_form = int(os.environ.get("ASTERISM_SWEEP_PER_FORM", "8"))
    enc, dec, enc_bad, dec_bad = _differential(target, per_form=per_form, seed=7)
    assert not enc_bad, f"encoding mismatches: {enc_bad[:5]}"
    assert not dec_bad, f"decoding mismatches: {dec_bad[:5]}"


@pytest.mark.parametrize("target", TARGETS)
def test_database_examples_reassemble_identically(llvm_mc, target):
    """A broad re-check of the ISA database against llvm-mc: every form's example encodes
    to LLVM's bytes through asterism."""
    from asterism.isa import get_isa

    lines = sorted({f.example for i in get_isa(target).instructions.values() for f in i.forms})
    llvm = llvm_encode(lines, target)
    rejected = [line for line, data in zip(lines, llvm) if not isinstance(data, bytes)]
    assert not rejected, f"LLVM rejects database examples: {rejected[:5]}"
    bad = [(line, data.hex()) for line, data in zip(lines, llvm)
           if our_encoding(line, target) != data]
    assert not bad, bad[:5]
