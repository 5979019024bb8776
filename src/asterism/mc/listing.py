"""Disassembly listings in llvm-objdump's layout (and as JSON)."""

from __future__ import annotations

import array
import bisect
import copy
import os
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from asterism.cache import compile_cached
from asterism.errors import AsterismError
from asterism.isa.formats import FORMATS, SRC_DPP, SRC_SDWA
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
from asterism.mc.decoded_text import full_text, text_code, text_of
from asterism.mc.decoder import (
    DecodedInst,
    PlanDispatch,
    get_decoder,
    needs_literal_tests,
    short_vop,
)
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
    its bits to its line without an instruction object (the plan's line function, found by
    the word's first bits: _line_dispatch), else through `_list_one` (which locates it and
    teaches the dispatch the plan)."""
    append = out.append
    n = len(code) >> 2
    words = list(struct.unpack(f"<{n}I", bytes(code[:4 * n])))
    hexed = _hex_dwords(code)
    heads = {(addr - base) >> 2: name for addr, name in symbols.headers.items()
             if addr >= base and not (addr - base) & 3}
    starts = sorted(heads) + [len(code)]  # (the dwords with a header line, in order)
    dispatch = _line_dispatch(decoder)
    routes, learn = dispatch.routes, dispatch.learn
    k = 0
    head = 0
    next_head = starts[0]
    fast_end = n - 2  # (the line functions read up to three dwords)
    while k < fast_end:
        if k >= next_head:
            if k == next_head:
                out += ["", f"{base + (k << 2):016x} <{heads[k]}>:"]
            while starts[head] <= k:
                head += 1
            next_head = starts[head]
        w0 = words[k]
        mask, table = routes[w0 >> 23]
        line = table.get(w0 & mask)
        if line is not None:
            after = line(words, k, base, hexed, append)
            if after >= 0:
                k = after
                continue
        k = _list_one(decoder, code, words, k, base, hexed, symbols, append, learn)
    end = len(code)
    while k << 2 < end:
        if k in heads:
            out += ["", f"{base + (k << 2):016x} <{heads[k]}>:"]
        k = _list_one(decoder, code, words, k, base, hexed, symbols, append, None)


def _list_one(decoder, code: bytes, words: list[int], k: int, base: int, hexed: str,
              symbols: ListingSymbols, append, learn) -> int:
    """Append the line of the word at dword `k` (located and printed through its plan's
    line function or text function or, for a branch, format_line; `.long` if it decodes to
    nothing); `learn` (if given, and then words[k + 2] exists) is told the plan. Returns the
    next dword's index."""
    pos = k << 2
    addr = base + pos
    try:
        plan, value, extra, literal, prefix, size = decoder.locate(code, pos, addr)
    except AsterismError:
        plan = None
    text = None
    if plan is not None:
        line = learn(plan, value, extra, prefix) if learn is not None else None
        if line is not None:
            after = line(words, k, base, hexed, append)
            if after >= 0:
                return after
        form = plan.form
        # (only SOPP has branch targets: the other forms skip the per-form lookup)
        if form.enc == "SOPP" and _LABEL_SLOTS(form):
            inst = plan.build(value, extra, literal, prefix)
            if inst is not None:
                raw = bytes(code[pos:pos + size])
                append(format_line(DecodedInst(addr, size, inst, raw), symbols))
                return k + (size >> 2)
        else:
            text = text_of(plan)(value, extra, literal, prefix)
    if text is None:
        word = int.from_bytes(code[pos:pos + 4].ljust(4, b"\0"), "little")
        text, size = f".long 0x{word:08x}", 4
    after = k + (size >> 2)
    append(f"\t{text:<{TEXT_COLUMN}}// {addr:012X}: {hexed[9 * k:9 * after - 1]}")
    return after


_DISPATCHES: dict[int, tuple[object, PlanDispatch]] = {}  # id(decoder) -> its line dispatch


def _line_dispatch(decoder) -> PlanDispatch:
    entry = _DISPATCHES.get(id(decoder))
    if entry is None:
        # (the entry holds the decoder, so its id is not reused while the entry lives)
        entry = _DISPATCHES[id(decoder)] = (decoder, PlanDispatch(decoder, _compile_line))
    return entry[1]


def _refuse(words: list[int], k: int, *args) -> int:
    """The line function of plans whose words all take _list_one."""
    return -1


def _compile_line(plan) -> Callable[..., int]:
    """line(words, k, base, hexed, append): append the listing line of the instruction at
    dword k (at base + 4k; its dwords' text in `hexed` from 9k on, _hex_dwords) and return
    the next dword's index, or -1 if this function cannot print it (_list_one then does).
    The text as decoded_text's text function makes it, in one generated function with the
    decoder's literal test and the line's layout."""
    form = plan.form
    if _LABEL_SLOTS(form) or plan.literal_fields is None:
        return _refuse
    n = FORMATS[form.format].size >> 2
    # (the words the table path cannot print, through the instruction: what _list_one
    # prints for them, without locating them again)
    env: dict[str, object] = {"slow": _slow_line(full_text(plan), n)}
    bail = "return slow(value, literal, k, base, hexed, append)"
    body = text_code(plan, env, bail=bail, invalid="return -1")
    if body is None:
        body = [f"    {bail}"]
    lines = ["def line(words, k, base, hexed, append):",
             "    value = words[k]" if n == 1 else "    value = words[k] | words[k + 1] << 32"]
    if short_vop(plan):
        lines += [f"    if value & 0x1FF in ({SRC_SDWA}, {SRC_DPP}):",
                  "        return -1  # (a DPP or SDWA word: another plan)"]
    tests = needs_literal_tests(form, plan.literal_fields, plan.literal_always)
    if tests and tests[-1] == "True":
        lines.append(f"    literal = words[k + {n}]")
        sizes = [n + 1]
    elif tests:
        lines.append(f"    literal = words[k + {n}] if {' or '.join(tests)} else None")
        sizes = [n, n + 1]
    else:
        lines.append("    literal = None")
        sizes = [n]
    if any("extra" in line or "prefix" in line for line in body):
        lines.append("    extra = prefix = None")
    lines += body
    lines.append("    h = 9 * k")
    for size in sizes:
        step = [f"    append(f'\\t{{text:<{TEXT_COLUMN}}}// {{base + (k << 2):012X}}: "
                f"{{hexed[h:h + {9 * size - 1}]}}')",
                f"    return k + {size}"]
        if size == n and len(sizes) > 1:
            lines += ["    if literal is None:", *("    " + line for line in step)]
        else:
            lines += step
    source = "\n".join(lines) + "\n"
    exec(compile_cached(source, f"<listing line of {form.mc_name or plan.mnemonic}>"), env)
    return env["line"]  # type: ignore[return-value]


def _slow_line(text: Callable[..., str | None], n: int) -> Callable[..., int]:
    """The line function's path for words of its plan that the table path cannot print
    (text(value, None, literal, None) is the plan's text through the instruction; `n` its
    dwords without the literal): -1 for a word the form cannot have."""

    def slow(value: int, literal: int | None, k: int, base: int, hexed: str, append) -> int:
        line_text = text(value, None, literal, None)
        if line_text is None:
            return -1
        after = k + n + (literal is not None)
        append(f"\t{line_text:<{TEXT_COLUMN}}// {base + (k << 2):012X}: "
               f"{hexed[9 * k:9 * after - 1]}")
        return after

    return slow


def _hex_dwords(code: bytes) -> str:
    """The objdump text ("%08X") of each little-endian dword of `code` (zero-padded), each
    followed by a space: dwords k to k + n - 1 are text[9k:9(k + n) - 1]."""
    dwords = array.array("I", bytes(code).ljust(-(-len(code) // 4) * 4, b"\0"))
    assert dwords.itemsize == 4
    if sys.byteorder == "little":
        dwords.byteswap()  # (so that each dword's bytes print most significant first)
    return dwords.tobytes().hex(" ", 4).upper() + " "


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
