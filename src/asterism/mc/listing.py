"""Disassembly listings in llvm-objdump's layout (and as JSON)."""

from __future__ import annotations

import bisect
import copy
import os
import struct
from dataclasses import dataclass, field

from asterism.errors import AsterismError
from asterism.mc.codeobject import load_code_object
from asterism.mc.codeobject.elf import (
    SHN_ABS,
    SHN_UNDEF,
    SHT_DYNSYM,
    SHT_SYMTAB,
    STT_FILE,
    STT_NOTYPE,
    STT_SECTION,
    ElfFile,
    parse_elf,
)
from asterism.mc.decoded_text import text_of
from asterism.mc.decoder import DecodedInst, get_decoder
from asterism.mc.operands import Imm, Label
from asterism.mc.per_form import PerForm
from asterism.mc.printer import format_inst
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc

TEXT_COLUMN = 59  # llvm-objdump pads the instruction text to this width before "//"


@dataclass
class ListingSymbols:
    """The symbols of a code object as llvm-objdump -d uses them, sorted as it sorts them
    (address, then name, then type):
    - `headers`: .text address -> the name of its header line (the last symbol there; at
      the start of .text, `.text` if no symbol is there, as llvm-objdump names it);
    - `labels`: .text address -> the untyped symbol (label) a branch there is named by (the
      first there), as LLVM's AMDGPU symbolizer names branch targets;
    - `sections`: (start address, its symbols) of every section in address order, and
      `absolute` symbols: the other branch targets are annotated <symbol+0xoffset> by the
      last symbol at or before the target in the last section starting at or before it."""

    headers: dict[int, str] = field(default_factory=dict)
    labels: dict[int, str] = field(default_factory=dict)
    sections: list[tuple[int, list[tuple[int, str]]]] = field(default_factory=list)
    absolute: list[tuple[int, str]] = field(default_factory=list)

    @classmethod
    def of_elf(cls, elf: ElfFile) -> ListingSymbols:
        """The symbols of a parsed code object (its .symtab, else its .dynsym)."""
        tables = elf.sections_of_type(SHT_SYMTAB) or elf.sections_of_type(SHT_DYNSYM)
        symbols = sorted((s.value, s.name, s.type, s.shndx)
                         for s in (elf.symbols(tables[0])[1:] if tables else [])
                         if s.name and s.type not in (STT_SECTION, STT_FILE))
        text = elf.section(".text")
        text_index = elf.sections.index(text) if text is not None else -1
        by_section: dict[int, list[tuple[int, str]]] = {}
        out = cls()
        for addr, name, type_, shndx in symbols:
            if shndx == SHN_ABS:
                out.absolute.append((addr, name))
            elif shndx != SHN_UNDEF:
                by_section.setdefault(shndx, []).append((addr, name))
            if shndx == text_index:
                out.headers[addr] = name
                if type_ == STT_NOTYPE:
                    out.labels.setdefault(addr, name)
        if text is not None:
            out.headers.setdefault(text.addr, ".text")  # (bytes before the first symbol)
        out.sections = sorted(((sec.addr, by_section.get(i, []))
                               for i, sec in enumerate(elf.sections)), key=lambda e: e[0])
        return out

    def annotation(self, target: int) -> str:
        """" <symbol>" or " <symbol+0xoffset>" for a branch target ("" if none applies)."""
        target &= (1 << 64) - 1  # (llvm-objdump computes it unsigned)
        starts = [start for start, _syms in self.sections]
        k = bisect.bisect_right(starts, target)
        candidates = []
        if k:  # (the sections that start where the last one at or before the target does)
            first = starts[k - 1]
            while k and starts[k - 1] == first:
                candidates.append(self.sections[k - 1][1])
                k -= 1
        for symbols in (*candidates, self.absolute):
            j = bisect.bisect_right(symbols, (target, chr(0x10FFFF)))
            if j:
                addr, name = symbols[j - 1]
                return f" <{name}+0x{target - addr:x}>" if target != addr else f" <{name}>"
        return ""


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


def format_line(d: DecodedInst, symbols: ListingSymbols | None = None) -> str:
    """One instruction like llvm-objdump -d prints it (text, address, raw dwords), a branch
    to a label named by it, another branch annotated with its target's symbol."""
    inst, note = d.inst, ""
    form = inst.form
    target = branch_target(d) if form is not None and _LABEL_SLOTS(form) else None
    if target is not None and symbols is not None:
        if target in symbols.labels:
            inst = copy.copy(inst)
            inst.operands = [Label(symbols.labels[target]) if s.syntax == "label" else o
                             for s, o in zip(form.operands, inst.operands)]
        else:
            note = symbols.annotation(target)
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


def listing(source: bytes | str | os.PathLike[str], filename: str | None = None) -> str:
    """The whole .text of a code object (bytes or path) in llvm-objdump -d's layout: symbol
    headers, and words that do not decode listed as `.long`, as llvm-objdump lists them.
    `filename` is the name in the header line (default: the path)."""
    obj, data = load_code_object(source)  # (its errors name the file)
    if filename is None:
        filename = "" if isinstance(source, bytes | bytearray | memoryview) else \
            os.fspath(source)
    symbols = ListingSymbols.of_elf(parse_elf(data))
    # (the layout of llvm-objdump -d, from its leading empty line)
    out = ["", f"{filename}:\tfile format elf64-amdgpu", "", "Disassembly of section .text:"]
    paused = pause_cyclic_gc()  # (see there: the listing is many collector-tracked objects)
    try:
        _list_code(get_decoder(obj.target.name), obj.text, obj.text_address, symbols, out)
    finally:
        resume_cyclic_gc(paused)
    return "\n".join(out) + "\n"


def _list_code(decoder, code: bytes, base: int, symbols: ListingSymbols, out: list[str]
               ) -> None:
    """Decode `code` (the .text at `base`) and append its listing lines: each word goes from
    its bits to its text (mc/decoded_text.py) without an instruction object, except
    branches, whose targets are named (format_line)."""
    append = out.append
    locate = decoder.locate
    label_slots = _LABEL_SLOTS
    headers = symbols.headers
    hexed_words = _dword_texts(code)
    pos, end = 0, len(code)
    while pos < end:
        addr = base + pos
        if addr in headers:
            out += ["", f"{addr:016x} <{headers[addr]}>:"]
        try:
            plan, value, extra, literal, prefix, size = locate(code, pos, addr)
        except AsterismError:
            plan = None
        text = None
        if plan is not None:
            form = plan.form
            # (only SOPP has branch targets: the other forms skip the per-form lookup)
            if form.enc == "SOPP" and label_slots(form):
                inst = plan.build(value, extra, literal, prefix)
                if inst is not None:
                    raw = bytes(code[pos:pos + size])
                    append(format_line(DecodedInst(addr, size, inst, raw), symbols))
                    pos += size
                    continue
            else:
                text = text_of(plan)(value, extra, literal, prefix)
        if text is None:
            word = int.from_bytes(code[pos:pos + 4].ljust(4, b"\0"), "little")
            text, size = f".long 0x{word:08x}", 4
        k = pos >> 2
        hexed = hexed_words[k] if size == 4 else " ".join(hexed_words[k:k + (size >> 2)])
        append(f"\t{text:<{TEXT_COLUMN}}// {addr:012X}: {hexed}")
        pos += size


def _dword_texts(code: bytes) -> list[str]:
    """The objdump text ("%08X") of each little-endian dword of `code` (zero-padded)."""
    n = (len(code) + 3) >> 2
    if not n:
        return []
    return (("%08X " * n) % struct.unpack(f"<{n}I", bytes(code).ljust(4 * n, b"\0"))).split()


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
