"""Pre-decoding: each instruction becomes a Python closure once, before the run.

`compile_program` turns decoded instructions (anything with `.address`, `.size`, `.inst`) into
`Op`s: a function `run(group) -> next index` with its operand accessors resolved, plus an
`OpInfo` (text, registers read and written, counters) for the sanitizer, the hazard checker
and error messages. Semantics live in the `sem_*` modules, which register builders here by
mnemonic. An instruction without a builder compiles to an op that raises
`UnsupportedInstruction` when (and only when) it is executed.
"""

from __future__ import annotations

from collections.abc import Callable

from asterism.emu.core import Group
from asterism.emu.errors import CompileError, EmulatorFault, UnsupportedInstruction
from asterism.emu.info import OpInfo, operand_keys
from asterism.mc.operands import Label, Operand

# emu/timing.py (being moved to asterism/timing/ by another room) still imports OpInfo and
# operand_keys from here; the names stay until it imports them from asterism.emu.info.
_unused = (operand_keys,)

Op = Callable[[Group], int]
Builder = Callable[["OpInfo"], Op]

BUILDERS: dict[str, Builder] = {}


def builder(*mnemonics: str) -> Callable[[Builder], Builder]:
    """Register a semantics builder for the given base mnemonics."""
    def deco(fn: Builder) -> Builder:
        for m in mnemonics:
            BUILDERS[m] = fn
        return fn
    return deco


# ---------------------------------------------------------------------------- compile

def unsupported_op(info: OpInfo, why: str) -> Op:
    """An op that raises UnsupportedInstruction naming the instruction when executed."""
    def run(g: Group) -> int:
        raise UnsupportedInstruction(f"the emulator does not implement {info.mnemonic}: {why}",
                                     pc=info.address, inst=info.text)
    return run


def error_op(info: OpInfo, exc: Exception) -> Op:
    """An op that raises a compile-time problem when executed."""
    def run(g: Group) -> int:
        raise EmulatorFault(f"cannot execute: {exc}", pc=info.address, inst=info.text)
    return run


def _load_semantics() -> None:
    # The sem_* modules register their builders on import.
    from asterism.emu import sem_branch, sem_cvt, sem_lds, sem_mem, sem_mfma, sem_salu, sem_valu

    del sem_branch, sem_cvt, sem_lds, sem_mem, sem_mfma, sem_salu, sem_valu


def build_op(info: OpInfo) -> Op:
    """The op for one instruction (an unsupported/error op if it cannot be built)."""
    _load_semantics()
    if info.isa is None or info.form is None:
        return unsupported_op(info, "not an instruction of " + info.target)
    fn = BUILDERS.get(info.mnemonic)
    if fn is None:
        return unsupported_op(info, "no semantics yet")
    try:
        return fn(info)
    except CompileError as exc:
        return error_op(info, exc)


def label_free(op: Operand) -> bool:
    """True unless the operand is an unresolved label (programs must be decoded code)."""
    return not isinstance(op, Label)

