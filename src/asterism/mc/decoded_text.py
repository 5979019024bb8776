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
from asterism.isa.formats import FORMATS
from asterism.mc.decoder import (
    _INVALID,
    _LITERAL,
    _mods_buffer,
    _mods_ds,
    _mods_flat,
    _mods_mfma,
    _mods_smem,
    _Plan,
    _Table,
    _Word,
    reserved_tests,
    slot_index,
)
from asterism.mc.inst import Inst
from asterism.mc.operands import literal_text
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


def full_text(plan: _Plan) -> TextOfWord:
    """The text through the instruction: build, then print."""
    def text(value: int, extra: int | None, literal: int | None,
             prefix: _Word | None) -> str | None:
        inst = plan.build(value, extra, literal, prefix)
        return None if inst is None else format_inst(inst)

    return text


def _modifier_text(plan: _Plan) -> TextOfWord:
    """" " and the modifier tokens of a word ("" if none), by the plan's reader and the
    printer; remembered per value of the word's bits outside the table slots' fields
    (`tail_bits`) when the reader reads neither the DPP/SDWA dword nor a prefix."""
    read, fmt, mnemonic, form = plan.modifiers, FORMATS[plan.form.format], plan.mnemonic, \
        plan.form

    def tail(value: int, extra: int | None, literal: int | None,
             prefix: _Word | None) -> str:
        mods: dict[str, object] = {}
        if read is not None:
            read(plan, _Word(fmt, value, extra, literal), prefix, _NO_OPERANDS, mods)
        tokens = format_modifiers(Inst(mnemonic, [], mods, form))
        return " " + " ".join(tokens) if tokens else ""

    if form.enc in ("DPP", "SDWA", "MAI_SCALE"):
        return tail
    bits = tail_bits(plan)
    known: dict[int, str] = {}

    def remembered_tail(value: int, extra: int | None, literal: int | None,
                        prefix: _Word | None) -> str:
        text = known.get(value & bits)
        if text is None:
            text = tail(value, extra, literal, prefix)
            if len(known) < _TAIL_LIMIT:
                known[value & bits] = text
        return text

    return remembered_tail


_TAIL_LIMIT = 1 << 14  # tails remembered per plan


def tail_bits(plan: _Plan) -> int:
    """The bits of a plan's words that its modifier reader may read: all but the fields of
    its table slots (operands; no reader reads them, tested over every form)."""
    bits = (1 << 8 * FORMATS[plan.form.format].size) - 1
    for slot in plan.slots:
        if slot.table is not None:
            bits &= ~(slot.mask << slot.lo)
    return bits


# ---------------------------------------------------------------------- generated tails
#
# The modifiers of memory instructions hold offsets, which take too many values for
# remembered tails to help: for the readers whose tokens each follow one field (or two, for a
# DS offset), the tail is generated code, the reader and the printer's family printer read
# together (decoder._mods_buffer and printer._buffer_modifiers, ...), in the printer's order
# (MFMA's too: its tail bits include the AGPR selects, too many values again).
# tests/test_mc_listing.py holds it equal to the reader and the printer over every form.


def tail_code(plan: _Plan, env: dict[str, object]) -> list[str] | None:
    """Lines (indented once) that set `tail` to what _modifier_text gives for the word
    `value`, or None for the readers this does not generate (their tails are remembered)."""
    maker = _TAIL_MAKERS.get(plan.modifiers)
    if maker is None:
        return None
    fields = FORMATS[plan.form.format].fields

    def field(name: str) -> str:
        f = fields[name]
        return f"(value >> {f.lo}) & {f.mask}" if f.lo else f"value & {f.mask}"

    def flag(name: str) -> list[str]:
        f = fields[name]
        return [f"    if value & {f.mask << f.lo:#x}:", f"        tail += ' {name}'"]

    return maker(plan, env, field, flag)


def _buffer_tail(plan: _Plan, env: dict[str, object], field, flag) -> list[str] | None:
    form = plan.form
    if form.enc == "MTBUF":
        # (the format token, as the printer prints each of the 128 values)
        env["format_texts"] = [_tokens(plan, {"format": value}) for value in range(128)]
        lines = [f"    tail = format_texts[{field('dfmt')} | ({field('nfmt')}) << 4]"]
    else:
        lines = ["    tail = ''"]
    lines += flag("idxen") + flag("offen")
    if "offset" in form.modifiers:
        lines += [f"    offset = {field('offset')}", "    if offset:",
                  "        tail += f' offset:{offset}'"]
    fixed_sc0 = form.fixed.get("sc0")
    for name in ("sc0", "nt", "sc1"):
        if name == "sc0" and fixed_sc0:
            lines.append("    tail += ' sc0'")  # (the returning atomic)
        elif name in FORMATS[form.format].fields and name in form.modifiers:
            lines += flag(name)
    if form.base_variant == "lds":
        lines.append("    tail += ' lds'")
    return lines


def _ds_tail(plan: _Plan, env: dict[str, object], field, flag) -> list[str] | None:
    form = plan.form
    if form.mnemonic == "ds_swizzle_b32":
        return None  # (the offset prints as swizzle(...))
    if "offset0" in form.modifiers or "offset1" in form.modifiers:
        lines = [f"    offset = {field('offset0')}",
                 "    tail = f' offset0:{offset}' if offset else ''",
                 f"    offset = {field('offset1')}",
                 "    if offset:", "        tail += f' offset1:{offset}'"]
    else:
        lines = [f"    offset = {field('offset0')} | ({field('offset1')}) << 8",
                 "    tail = f' offset:{offset}' if offset else ''"]
    if "gds" in form.modifiers:
        lines += flag("gds")
    return lines


def _flat_tail(plan: _Plan, env: dict[str, object], field, flag) -> list[str] | None:
    lines = [f"    offset = {field('offset')}"]
    if plan.form.enc != "FLAT":  # (GLOBAL and SCRATCH offsets are signed 13-bit)
        lines += ["    if offset & 0x1000:", "        offset -= 0x2000"]
    lines.append("    tail = f' offset:{offset}' if offset else ''")
    for name in ("sc0", "nt", "sc1"):
        lines += flag(name)
    return lines


def _smem_tail(plan: _Plan, env: dict[str, object], field, flag) -> list[str] | None:
    form = plan.form
    if form.base_variant == "soff":
        return None  # (an immediate offset besides the SGPR one, printed as Imm)
    lines = ["    tail = ''"]
    for name in ("glc", "nv"):
        if name in form.modifiers or form.fixed.get(name):
            lines += flag(name)
    return lines


def _mfma_tail(plan: _Plan, env: dict[str, object], field, flag) -> list[str] | None:
    form = plan.form
    if form.enc != "MAI":
        return None  # (a scaled MFMA's modifiers come from its prefix)
    lines = ["    tail = ''"]
    for name in ("cbsz", "abid", "blgp"):
        if name in form.modifiers:
            lines += [f"    v = {field(name)}", "    if v:", f"        tail += f' {name}:{{v}}'"]
    if "neg" in form.modifiers:  # (an f64 MFMA's neg:[a,b,c] is the BLGP field)
        lines += [f"    v = {field('blgp')}", "    if v:",
                  "        tail += f' neg:[{v & 1},{v >> 1 & 1},{v >> 2 & 1}]'"]
    return lines


def _tokens(plan: _Plan, mods: dict[str, object]) -> str:
    """" " and the printer's tokens for these modifiers of the plan's form ("" if none)."""
    tokens = format_modifiers(Inst(plan.mnemonic, [], mods, plan.form))
    return " " + " ".join(tokens) if tokens else ""


_TAIL_MAKERS = {_mods_buffer: _buffer_tail, _mods_ds: _ds_tail, _mods_flat: _flat_tail,
                _mods_smem: _smem_tail, _mods_mfma: _mfma_tail}


def _compile_text(plan: _Plan) -> TextOfWord:
    full = full_text(plan)
    env: dict[str, object] = {"full": full}
    body = text_code(plan, env, bail="return full(value, extra, literal, prefix)",
                     invalid="return None")
    if body is None:
        return full
    source = "\n".join(["def text(value, extra, literal, prefix):", *body,
                        "    return text"]) + "\n"
    exec(compile_cached(source, f"<text of {plan.form.mc_name or plan.mnemonic}>"), env)
    return env["text"]  # type: ignore[return-value]


def text_code(plan: _Plan, env: dict[str, object], bail: str, invalid: str
              ) -> list[str] | None:
    """The body lines (indented once) of a generated function of `value`, `extra`,
    `literal` and `prefix` that set `text` to the word's text, with the names they use put
    in `env`; `bail` is the statement run for a word the table path cannot print (a reserved
    bit, operand-wrapping modifier bits: the instruction path prints it), `invalid` the one
    for a code the operand cannot have. None if the plan's words all take the instruction
    path."""
    form = plan.form
    if not form.enc or (form.operands and form.operands[-1].optional):
        return None
    touches = plan.modifiers is not None and plan.modifiers_touch_operands
    if touches and plan.quiet_bits is None:
        return None
    env.update({"_Word": _Word, "fmt": FORMATS[form.format], "LITERAL_TEXT": _LITERAL_TEXT,
                "INVALID": _INVALID, "literal_text": literal_text,
                "tail": _modifier_text(plan)})
    lines = []
    # (a reserved bit off its value; modifier bits a wrapping reader would read)
    tests = reserved_tests(plan)
    if touches:
        tests.append(f"value & {plan.quiet_bits:#x}")
    if tests:
        lines += [f"    if {' or '.join(tests)}:", f"        {bail}"]
    if any(slot.table is None for slot in plan.slots):
        lines.append("    word = _Word(fmt, value, extra, literal)")
    checks = []
    for k, slot in enumerate(plan.slots):
        if slot.table is None:
            env[f"read{k}"] = slot.read
            lines += [f"    t{k} = read{k}(word, prefix)",
                      f"    if t{k} is INVALID:",
                      f"        {invalid}  # (a code the operand cannot have)",
                      f"    t{k} = str(t{k})"]
            continue
        env[f"texts{k}"] = _text_table(slot.table)
        lines.append(f"    t{k} = texts{k}[{slot_index(slot)}]")
        if isinstance(slot.table, _Table) and slot.table.literal:
            _width, type_ = slot.table.literal
            lines += [f"    if t{k} is LITERAL_TEXT:",
                      f"        t{k} = literal_text(literal or 0, {type_!r})"]
        if isinstance(slot.table, _Table) and slot.table.checked:
            checks.append(f"t{k} is None")
    if checks:
        lines += [f"    if {' or '.join(checks)}:",
                  f"        {invalid}  # (a code the operand cannot have)"]
    joined = ", ".join(f"{{t{k}}}" for k in range(len(plan.slots)))
    head = plan.mnemonic.replace("{", "{{").replace("}", "}}")
    text = f"f{head + (' ' + joined if joined else '')!r}"
    # (the tokens the printer shows for an instruction without modifiers: DPP, scaled MFMA)
    defaults = format_modifiers(Inst(plan.mnemonic, [], {}, form))
    tail = tail_code(plan, env) if not defaults else None
    if plan.modifiers is None and not defaults:
        lines.append(f"    text = {text}")
    elif tail is not None and plan.quiet_bits is not None:
        lines += [f"    if value & {plan.quiet_bits:#x}:",
                  *("    " + line for line in tail),
                  f"        text = {text} + tail",
                  "    else:",
                  f"        text = {text}"]
    elif tail is not None:
        lines += [*tail, f"    text = {text} + tail"]
    elif plan.quiet_bits is not None and not defaults:
        lines += [f"    text = {text}",
                  f"    if value & {plan.quiet_bits:#x}:",
                  "        text += tail(value, extra, literal, prefix)"]
    else:
        lines.append(f"    text = {text} + tail(value, extra, literal, prefix)")
    return lines
