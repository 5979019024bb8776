"""The printed text of a decoded word, straight from its bits (for listings).

A listing needs each instruction's text, not the instruction. The text is the mnemonic,
the operands' texts and the modifier tokens; `text_of(plan)` compiles, per decoder plan
(mc/decoder.py), a function that makes it without building the `mc.Inst`:
- each table slot's text is looked up in a table of operand texts, made from the decoder's
  operand table by the printer's `str` (the literal marker becomes the printed literal);
  reader slots are read and printed as the decoder reads them;
- the modifier tokens are the printer's (`format_modifiers`) for the modifiers the decoder's
  reader finds, skipped when the plan's quiet bits are all zero (the reader then adds
  nothing, and build skips it too).
What this cannot shortcut takes the one printing path, decode to `mc.Inst` and then
`format_inst`: words with an invalid code or bit, forms whose modifier reader wraps the
operands in source modifiers while modifier bits are set (VOP3, VOP3P, DPP, SDWA), and forms
ending in an optional immediate (the printer drops a zero one). The result equals
`format_inst(decoder.decode(...).inst)` for every word (tested over the vector files).
"""

from __future__ import annotations

from collections.abc import Callable

from asterism.cache import compile_cached
from asterism.isa.formats import FORMATS, SRC_LITERAL
from asterism.mc.decoder import (
    _INVALID,
    _LITERAL,
    _Plan,
    _Table,
    _Word,
    reserved_tests,
    slot_index,
)
from asterism.mc.inst import Inst
from asterism.mc.operand_codes import decode_src
from asterism.mc.printer import format_inst, format_modifiers

# text(value, extra, literal, prefix) -> the text, or None for a word the form cannot have
TextOfWord = Callable[[int, "int | None", "int | None", "_Word | None"], "str | None"]

_LITERAL_TEXT = object()  # text-table entry of the literal code: printed from the literal
_NO_OPERANDS = ()  # (what readers that only add modifiers get: they must not write to it)


class _TextTable(dict):
    """index -> the text of the operand table's entry (None for an invalid code: the word
    then takes the full path; _LITERAL_TEXT for the literal code)."""

    def __init__(self, table: dict):
        super().__init__()
        self._table = table

    def __missing__(self, index: int) -> object:
        op = self._table[index]
        text = _LITERAL_TEXT if op is _LITERAL else None if op is _INVALID else str(op)
        self[index] = text
        return text


_TEXT_TABLES: dict[int, tuple[dict, _TextTable]] = {}  # id(operand table) -> its texts
_TEXTS: dict[_Plan, TextOfWord] = {}  # plan -> its text function


def _text_table(table: dict) -> _TextTable:
    entry = _TEXT_TABLES.get(id(table))
    if entry is None:
        # (the entry holds the table, so its id is not reused while the entry lives)
        entry = _TEXT_TABLES[id(table)] = (table, _TextTable(table))
    return entry[1]


def text_of(plan: _Plan) -> TextOfWord:
    """The text function of a decoder plan (compiled on first use)."""
    fn = _TEXTS.get(plan)
    if fn is None:
        fn = _TEXTS[plan] = _compile_text(plan)
    return fn


def _full_text(plan: _Plan) -> TextOfWord:
    """The text through the instruction: build, then print."""
    def text(value: int, extra: int | None, literal: int | None,
             prefix: _Word | None) -> str | None:
        inst = plan.build(value, extra, literal, prefix)
        return None if inst is None else format_inst(inst)

    return text


def _modifier_text(plan: _Plan) -> TextOfWord:
    """" " and the modifier tokens of a word ("" if none), by the plan's reader and the
    printer."""
    read, fmt, mnemonic, form = plan.modifiers, FORMATS[plan.form.format], plan.mnemonic, \
        plan.form

    def tail(value: int, extra: int | None, literal: int | None,
             prefix: _Word | None) -> str:
        mods: dict[str, object] = {}
        if read is not None:
            read(plan, _Word(fmt, value, extra, literal), prefix, _NO_OPERANDS, mods)
        tokens = format_modifiers(Inst(mnemonic, [], mods, form))
        return " " + " ".join(tokens) if tokens else ""

    return tail


def _compile_text(plan: _Plan) -> TextOfWord:
    form = plan.form
    full = _full_text(plan)
    if not form.enc or (form.operands and form.operands[-1].optional):
        return full
    touches = plan.modifiers is not None and plan.modifiers_touch_operands
    if touches and plan.quiet_bits is None:
        return full
    env: dict[str, object] = {"full": full, "_Word": _Word, "fmt": FORMATS[form.format],
                              "LITERAL_TEXT": _LITERAL_TEXT, "INVALID": _INVALID,
                              "decode_src": decode_src,
                              "SRC_LITERAL": SRC_LITERAL, "tail": _modifier_text(plan)}
    lines = ["def text(value, extra, literal, prefix):"]
    # (a reserved bit off its value; modifier bits a wrapping reader would read)
    bail = reserved_tests(plan)
    if touches:
        bail.append(f"value & {plan.quiet_bits:#x}")
    if bail:
        lines += [f"    if {' or '.join(bail)}:",
                  "        return full(value, extra, literal, prefix)"]
    if any(slot.table is None for slot in plan.slots):
        lines.append("    word = _Word(fmt, value, extra, literal)")
    invalid = []
    for k, slot in enumerate(plan.slots):
        if slot.table is None:
            env[f"read{k}"] = slot.read
            lines += [f"    t{k} = read{k}(word, prefix)",
                      f"    if t{k} is INVALID:",
                      "        return None  # (a code the operand cannot have)",
                      f"    t{k} = str(t{k})"]
            continue
        env[f"texts{k}"] = _text_table(slot.table)
        lines.append(f"    t{k} = texts{k}[{slot_index(slot)}]")
        if isinstance(slot.table, _Table) and slot.table.literal:
            width, type_ = slot.table.literal
            lines += [f"    if t{k} is LITERAL_TEXT:",
                      f"        t{k} = str(decode_src(SRC_LITERAL, {width}, type_={type_!r}, "
                      "literal=literal))"]
        if isinstance(slot.table, _Table) and slot.table.checked:
            invalid.append(f"t{k} is None")
    if invalid:
        lines += [f"    if {' or '.join(invalid)}:",
                  "        return None  # (a code the operand cannot have)"]
    joined = ", ".join(f"{{t{k}}}" for k in range(len(plan.slots)))
    head = plan.mnemonic.replace("{", "{{").replace("}", "}}")
    text = f"f{head + (' ' + joined if joined else '')!r}"
    # (the tokens the printer shows for an instruction without modifiers: DPP, scaled MFMA)
    defaults = format_modifiers(Inst(plan.mnemonic, [], {}, form))
    if plan.modifiers is None and not defaults:
        lines.append(f"    return {text}")
    elif plan.quiet_bits is not None and not defaults:
        lines += [f"    if value & {plan.quiet_bits:#x}:",
                  f"        return {text} + tail(value, extra, literal, prefix)",
                  f"    return {text}"]
    else:
        lines.append(f"    return {text} + tail(value, extra, literal, prefix)")
    source = "\n".join(lines) + "\n"
    exec(compile_cached(source, f"<text of {form.mc_name or plan.mnemonic}>"), env)
    return env["text"]  # type: ignore[return-value]
