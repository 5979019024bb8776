"""Encoder and decoder against the committed LLVM 22 vectors (no LLVM needed)."""

from __future__ import annotations

import pytest
from mc_differential import TARGETS, load_vectors, our_encoding, our_text


@pytest.mark.parametrize("target", TARGETS)
def test_encoder_matches_llvm_vectors(target):
    records = [r for r in load_vectors(target) if r["kind"] == "asm"]
    assert len(records) > 3000
    bad = [(r["asm"], r["bytes"], our_encoding(r["asm"], target)) for r in records]
    bad = [b for b in bad if not isinstance(b[2], bytes) or b[2].hex() != b[1]]
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


@pytest.mark.parametrize("target", TARGETS)
def test_decoder_matches_llvm_objdump_vectors(target):
    records = load_vectors(target)
    assert any(r["kind"] == "word" for r in records)
    bad = [(r["bytes"], r["objdump"], our_text(bytes.fromhex(r["bytes"]), target))
           for r in records]
    bad = [b for b in bad if b[1] != b[2]]
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"
