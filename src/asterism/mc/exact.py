"""Decoded instructions that encode back to exactly their words.

The decoder's `Inst` does not keep the bits no operand or modifier shows (an op_sel bit of a
form without op_sel, a source field a one-source VOP3 does not use, unused SMEM bits...).
`exact_inst` puts them in the `hidden_bits` modifier (the XOR of the words and the
instruction's own encoding), which the encoder folds back in, so the instruction still has
its operands and form for every later consumer and the words come out identical.
`insts_of_words` reads `.long` words in .text back as such instructions (the assembly parser
and the raising use them; lossless text, mc/lossless.py, writes them).
"""

from __future__ import annotations

import copy

from asterism.errors import AsterismError, SourceLocation
from asterism.mc.decoder import DecodedInst, get_decoder
from asterism.mc.encoder import encode_inst
from asterism.mc.inst import HIDDEN_BITS, Inst, data_inst


def exact_inst(decoded: DecodedInst) -> Inst | None:
    """The instruction of a DecodedInst that encodes back to exactly its bytes: a copy with
    the bits the decoder does not model in `hidden_bits` (None if the encoder refuses it or
    makes another size)."""
    try:
        again = encode_inst(decoded.inst, decoded.address)
    except AsterismError:
        return None
    if len(again) != decoded.size:
        return None
    hidden = int.from_bytes(again, "little") ^ int.from_bytes(decoded.raw, "little")
    if not hidden:
        return decoded.inst
    inst = copy.copy(decoded.inst)
    inst.modifiers = {**inst.modifiers, HIDDEN_BITS: hidden}
    return inst


def insts_of_words(words: list[int], target: str, loc: SourceLocation | None = None
                   ) -> list[Inst]:
    """The instructions `.long` words in .text encode, each encoding back to its words
    exactly (bits its text does not show in `hidden_bits`); words that do not decode as
    whole instructions stay `.long` data."""
    data = b"".join(w.to_bytes(4, "little") for w in words)
    decode = get_decoder(target).decode
    out: list[Inst] = []
    pending: list[int] = []  # data words not (yet) part of an instruction
    pos = 0
    while pos < len(data):
        try:
            d = decode(data, pos, pos)
            inst = exact_inst(d)
        except AsterismError:
            inst = None
        if inst is None:
            pending.append(words[pos >> 2])
            pos += 4
            continue
        if pending:
            out.append(_located(data_inst(pending), loc))
            pending = []
        out.append(_located(inst, loc))
        pos += d.size
    if pending:
        out.append(_located(data_inst(pending), loc))
    return out


def _located(inst: Inst, loc: SourceLocation | None) -> Inst:
    inst.loc = loc
    return inst
