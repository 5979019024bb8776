"""Pre-decoding: each instruction becomes a Python closure once, before the run.

`build_op` turns an `OpInfo` (emu/info.py: `make_infos` makes them from decoded
instructions) into an `Op`: a function `run(group) -> next index` with its operand
accessors resolved. The builders are the semantics' (`emu/semantics/`), found by base
mnemonic in the merged table of `semantics/all.py`. An instruction without a builder compiles
to an op that raises `UnsupportedInstruction` when (and only when) it is executed; one whose
operands cannot be set up, to an op that raises `EmulatorFault` then.
"""

from __future__ import annotations

from asterism.emu.core import Group
from asterism.emu.errors import CompileError, EmulatorFault
from asterism.emu.info import OpInfo
from asterism.emu.semantics.registry import Op, unsupported_op
from asterism.mc.operands import Label, Operand


def error_op(info: OpInfo, exc: Exception) -> Op:
    """An op that raises a compile-time problem when executed."""
    def run(g: Group) -> int:
        raise EmulatorFault(f"cannot execute: {exc}", pc=info.address, inst=info.text)
    return run


def build_op(info: OpInfo) -> Op:
    """The op for one instruction (an unsupported/error op if it cannot be built)."""
    # Imported on the first compile, not with the emulator: the family tables are built
    # from both targets' ISA databases.
    from asterism.emu.semantics.all import TABLE

    if info.isa is None or info.form is None:
        return unsupported_op(info, "not an instruction of " + info.target)
    fn = TABLE.get(info.mnemonic)
    if fn is None:
        return unsupported_op(info, "no semantics yet")
    try:
        return fn(info)
    except CompileError as exc:
        return error_op(info, exc)


def label_free(op: Operand) -> bool:
    """True unless the operand is an unresolved label (programs must be decoded code)."""
    return not isinstance(op, Label)
