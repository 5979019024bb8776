"""The amdgcn IR (xDSL): register types, instruction and structure ops, verification
against the ISA database, text round trip, lowering to and raising from the MC layer."""

from asterism.ir.dialect import AMDGCN, make_context
from asterism.ir.text import parse_ir, print_ir
from asterism.ir.verify import verify_module

__all__ = [
    "AMDGCN",
    "lower_module",
    "make_context",
    "parse_ir",
    "print_ir",
    "raise_module",
    "verify_module",
]


def __getattr__(name: str):
    # The MC bridges import the MC layer; load them on first use.
    if name == "lower_module":
        from asterism.ir.to_mc import lower_module

        return lower_module
    if name == "raise_module":
        from asterism.ir.from_mc import raise_module

        return raise_module
    raise AttributeError(name)
