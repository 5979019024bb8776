"""Disassembly listings in llvm-objdump's layout (and as JSON)."""

from __future__ import annotations

import bisect
import copy
import struct

from asterism.mc.bulk import pause_cyclic_gc, resume_cyclic_gc
from asterism.mc.decoder import DecodedInst
from asterism.mc.operands import Imm, Label
from asterism.mc.per_form import PerForm
from asterism.mc.printer import format_inst

TEXT_COLUMN = 59  # llvm-objdump pads the instruction text to this width before "//"


def text_symbols(obj) -> dict[int, str]:
    """Address -> name of the kernels and labels that live in .text."""
    syms = {k.address or (obj.text_address + k.offset): k.name for k in obj.kernels}
    for s in getattr(obj, "symbols", []):
        if s.section == ".text":
            syms.setdefault(obj.text_address + s.offset, s.name)
    return syms


def branch_target(d: DecodedInst) -> int | None:
    """The address a branch jumps to (None for other instructions)."""
    form = d.inst.form
    if form is None:
        return None
    ops = d.inst.operands
    for pos in _LABEL_SLOTS(form):
        if pos >= len(ops):
            break
        op = ops[pos]
        if isinstance(op, Imm):
            simm = op.value - 0x10000 if op.value & 0x8000 else op.value
            return d.address + 4 + 4 * simm
    return None


# Positions of a form's branch-target operands (most forms have none).
_LABEL_SLOTS = PerForm(lambda form: tuple(pos for pos, spec in enumerate(form.operands)
                                          if spec.syntax == "label"))


def format_line(d: DecodedInst, symbols: dict[int, str] | None = None) -> str:
    """One instruction like llvm-objdump -d prints it (text, address, raw dwords), with
    branch targets named by the symbol there or annotated as <symbol+offset>."""
    inst, note = d.inst, ""
    form = inst.form
    target = branch_target(d) if form is not None and _LABEL_SLOTS(form) else None
    if target is not None and symbols:
        if target in symbols:
            inst = copy.copy(inst)
            inst.operands = [Label(symbols[target]) if s.syntax == "label" else o
                             for s, o in zip(inst.form.operands, inst.operands)]
        else:
            addrs = sorted(symbols)
            k = bisect.bisect_right(addrs, target) - 1
            if k >= 0:
                note = f" <{symbols[addrs[k]]}+0x{target - addrs[k]:x}>"
    text = format_inst(inst)
    pad = text.ljust(TEXT_COLUMN)  # (longer text runs straight into the comment, as in objdump)
    return f"\t{pad}// {d.address:012X}: {_hex_words(d)}{note}"


def _hex_words(d: DecodedInst) -> str:
    """The instruction's dwords as objdump shows them ("BF8C0070 7E000280")."""
    raw = d.raw
    words = None if len(raw) & 3 else _WORDS.get(len(raw) >> 2)
    if words is None:
        return " ".join(f"{w:08X}" for w in d.words)
    text, unpack = words
    return text % unpack(raw)


# dword count -> (its "%08X %08X..." text, its unpacker) for instruction sizes
_WORDS = {n: (" ".join(["%08X"] * n), struct.Struct(f"<{n}I").unpack) for n in range(1, 5)}
_HEX_OF_SIZE = {4 * n: words for n, words in _WORDS.items()}  # the same by size in bytes


def listing(obj, items: list, filename: str = "") -> str:
    """The whole .text of a code object with kernel labels, objdump style."""
    starts = text_symbols(obj)
    out = [f"{filename}:\tfile format elf64-amdgpu", "", "Disassembly of section .text:"]
    paused = pause_cyclic_gc()  # (see there: the items are many collector-tracked objects)
    try:
        _list_items(items, starts, out)
    finally:
        resume_cyclic_gc(paused)
    return "\n".join(out) + "\n"


def _list_items(items: list, starts: dict[int, str], out: list[str]) -> None:
    append = out.append
    label_slots = _LABEL_SLOTS
    hex_of_size = _HEX_OF_SIZE
    for item in items:
        if type(item) is DecodedInst:
            addr = item.address
            if addr in starts:
                out += ["", f"{addr:016x} <{starts[addr]}>:"]
            inst = item.inst
            form = inst.form
            # (only SOPP has branch targets: the other forms skip the per-form lookup)
            if form is not None and form.enc == "SOPP" and label_slots(form):
                append(format_line(item, starts))
                continue
            raw = item.raw
            words = hex_of_size.get(len(raw))
            hexed = words[0] % words[1](raw) if words else _hex_words(item)
            # (format_line without the branch handling: nearly every instruction)
            append(f"\t{format_inst(inst):<{TEXT_COLUMN}}// {addr:012X}: {hexed}")
        else:
            addr, word = item
            if addr in starts:
                out += ["", f"{addr:016x} <{starts[addr]}>:"]
            text = f".long 0x{word:08x}"
            append(f"\t{text:<{TEXT_COLUMN}}// {addr:012X}: {word:08X}")


def listing_json(obj, items: list) -> dict:
    """A JSON-ready description: target, kernels, and every instruction."""
    insts = []
    for item in items:
        if isinstance(item, DecodedInst):
            insts.append({"address": item.address, "size": item.size, "words": item.words,
                          "text": format_inst(item.inst), "mnemonic": item.inst.mnemonic,
                          "encoding": item.inst.form.enc if item.inst.form else None})
        else:
            addr, word = item
            insts.append({"address": addr, "size": 4, "words": [word], "text": None,
                          "error": "undecodable"})
    return {
        "target": obj.target.target_id,
        "text_address": obj.text_address,
        "kernels": [{"name": k.name, "address": k.address or obj.text_address + k.offset,
                     "size": k.size} for k in obj.kernels],
        "instructions": insts,
    }
