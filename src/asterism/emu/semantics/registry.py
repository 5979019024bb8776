"""The semantics table type: base mnemonic -> builder, one table per instruction family.

A builder takes an instruction's `OpInfo` and returns its op, a closure `run(group) -> next
instruction index` with the operand accessors resolved (built once per program, run per
wave group). Each family module (`salu.py`, `valu.py`, ...) fills its own `Table`;
`semantics/all.py` merges them and is the only module that imports every family. This module
imports none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from asterism.emu.core import Group
from asterism.emu.errors import UnsupportedInstruction
from asterism.emu.info import OpInfo

Op = Callable[[Group], int]
Builder = Callable[[OpInfo], Op]


class Table(dict[str, Builder]):
    """One family's semantics: base mnemonic (lower case, no _e32/_e64/_dpp/_sdwa) -> builder."""

    def __init__(self, family: str) -> None:
        super().__init__()
        self.family = family

    def builder(self, *mnemonics: str) -> Callable[[Builder], Builder]:
        """Decorator: `fn` builds the ops of these mnemonics (a later entry replaces one)."""
        def deco(fn: Builder) -> Builder:
            for m in mnemonics:
                self[m] = fn
            return fn
        return deco


def merge(*tables: Table) -> Mapping[str, Builder]:
    """One table of every family's builders; a mnemonic in two families is an error."""
    merged: dict[str, Builder] = {}
    owner: dict[str, str] = {}
    for table in tables:
        for mnemonic, fn in table.items():
            if mnemonic in owner:
                raise ValueError(f"{mnemonic} has semantics in two families: "
                                 f"{owner[mnemonic]} and {table.family}")
            merged[mnemonic] = fn
            owner[mnemonic] = table.family
    return merged


def unsupported_op(info: OpInfo, why: str) -> Op:
    """An op that raises UnsupportedInstruction naming the instruction when executed."""
    def run(g: Group) -> int:
        raise UnsupportedInstruction(f"the emulator does not implement {info.mnemonic}: {why}",
                                     pc=info.address, inst=info.text)
    return run
