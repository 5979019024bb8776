"""One builder method per ISA instruction, generated from the database of a target.

`instruction_methods(target)` returns {mnemonic: function}; each function has the mnemonic
as its name, a signature listing the operands of the instruction's main form and a docstring
with every form (encoding, IR op, LLVM's example text, operand names/kinds/widths, modifiers).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from types import MethodType

from asterism.ir.match import FAMILY_OF_ENCODING, IR_SKIPPED_SYNTAX, allowed_modifiers, ir_specs
from asterism.isa import Form, Instruction, OperandSpec, get_isa

_KIND_WORDS = {"v": "VGPR", "a": "AGPR", "s": "SGPR", "i": "inline", "l": "literal",
               "k": "imm", "off": "off"}


def describe_operand(spec: OperandSpec) -> str:
    """`name: VGPR/SGPR x2 (align 2, i32)` for a docstring."""
    if spec.fixed:
        return f"{spec.name}: {spec.fixed}"
    if spec.syntax == "waitcnt":
        return f"{spec.name}: wait counters (vmcnt=, expcnt=, lgkmcnt= keywords)"
    if spec.syntax == "label":
        return f"{spec.name}: branch target (a label)"
    kinds = "/".join(_KIND_WORDS.get(k, k) for k in spec.kinds)
    extra = []
    if spec.width > 1:
        kinds += f" x{spec.width}"
    if spec.align > 1:
        extra.append(f"align {spec.align}")
    if spec.type:
        extra.append(spec.type)
    if spec.syntax:
        extra.append(f"{spec.syntax}(...) value")
    if spec.mods:
        extra.append("neg/abs/sext")
    if spec.tied:
        extra.append("also read")
    if spec.optional:
        extra.append("optional")
    text = f"{spec.name}: {kinds}"
    if extra:
        text += f" ({', '.join(extra)})"
    if spec.role == "def":
        text += " [dest]"
    return text


def _form_doc(inst: Instruction, form: Form) -> str:
    from asterism.ir.match import Match

    family = FAMILY_OF_ENCODING[form.enc]
    head = f"  {form.enc}{' ' + form.suffix if form.suffix else ''}"
    if form.variant:
        head += f" [{form.variant}]"
    head += f"  (amdgcn.{family}): {form.example}"
    lines = [head]
    ops = [describe_operand(s) for s in form.operands]
    if ops:
        lines.append("      " + "; ".join(ops))
    mods = sorted(allowed_modifiers(Match(inst, form, "", ir_specs(form))))
    if mods:
        lines.append(f"      modifiers: {', '.join(mods)}")
    if form.counters:
        lines.append(f"      counted by: {', '.join(form.counters)} (returns a token)")
    return "\n".join(lines)


def instruction_doc(inst: Instruction, target: str) -> str:
    """The docstring of a builder instruction method."""
    facts = [f"unit {inst.unit}"]
    if inst.flags:
        facts.append(", ".join(sorted(inst.flags)))
    if inst.passes:
        facts.append(f"{inst.passes} passes")
    if inst.implicit_defs:
        facts.append(f"writes {', '.join(inst.implicit_defs)}")
    if inst.implicit_uses:
        facts.append(f"reads {', '.join(inst.implicit_uses)}")
    lines = [f"Emit {inst.mnemonic} ({target}; {'; '.join(facts)}).", "", "Forms:"]
    lines += [_form_doc(inst, f) for f in inst.forms]
    if inst.aliases:
        lines.append(f"Aliases: {', '.join(inst.aliases)}")
    lines += [
        "",
        "Operands are positional in assembly order: registers (kb.v(1), kb.s[4:6], values",
        "returned earlier), Python ints/floats (become arith.constant), kb.off, labels for",
        "branches, None for a fresh relocatable destination. Modifiers are keywords",
        "(offset=16, sc0=True, op_sel=(0, 1)); enc='vop3' or a suffixed name",
        f"(kb.{inst.mnemonic}_e64) picks the encoding. Returns the destination value (a",
        "tuple if several); a memory instruction's token is kb.last_token.",
    ]
    return "\n".join(lines)


def _signature(inst: Instruction) -> inspect.Signature:
    form = inst.forms[0]
    params = []
    seen: set[str] = set()
    for spec in form.operands:
        if spec.syntax in IR_SKIPPED_SYNTAX and spec.syntax != "label":
            continue
        name = spec.name if spec.name.isidentifier() else f"op{len(params)}"
        while name in seen:
            name += "_"
        seen.add(name)
        default = None if spec.optional else inspect.Parameter.empty
        params.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY,
                                        default=default))
    params.insert(0, inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY))
    params.append(inspect.Parameter("enc", inspect.Parameter.KEYWORD_ONLY, default=None))
    params.append(inspect.Parameter("modifiers", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)


class _InstructionMethod:
    # The builder method of one instruction: calling it emits the instruction. Its docstring
    # and signature are made from the database on first look (help(), inspect), not for all
    # ~1,200 instructions when the first builder of a target is made (a third of a second).

    def __init__(self, mnemonic: str, target: str):
        self.mnemonic = mnemonic
        self.target = target
        self.__name__ = self.__qualname__ = mnemonic

    def __get__(self, obj, objtype=None):
        return self if obj is None else MethodType(self, obj)

    def __call__(self, kb, *operands, enc=None, **modifiers):
        return kb.emit(self.mnemonic, *operands, enc=enc, **modifiers)

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        return _doc(self.target, self.mnemonic)

    @property
    def __signature__(self) -> inspect.Signature:
        return _method_signature(self.target, self.mnemonic)

    def __repr__(self) -> str:
        return f"<builder method {self.mnemonic} ({self.target})>"


@cache
def _doc(target: str, mnemonic: str) -> str:
    return instruction_doc(get_isa(target).instructions[mnemonic], target)


@cache
def _method_signature(target: str, mnemonic: str) -> inspect.Signature:
    return _signature(get_isa(target).instructions[mnemonic])


@cache
def instruction_methods(target: str) -> dict[str, Callable]:
    """{mnemonic: builder method} for every instruction of `target`."""
    isa = get_isa(target)
    return {m: _InstructionMethod(m, isa.target) for m in isa.instructions}
