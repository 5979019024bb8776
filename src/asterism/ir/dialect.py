"""The `amdgcn` dialect object and the xDSL context the IR is parsed in."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.ir import Dialect

from asterism.ir.ops import AMDGCN_OPS
from asterism.ir.types import (
    AGPRType,
    KernelArgAttr,
    OffType,
    SGPRType,
    SpecialRegType,
    TokenType,
    TTMPType,
    VGPRType,
)

AMDGCN = Dialect(
    "amdgcn", list(AMDGCN_OPS),
    [VGPRType, AGPRType, SGPRType, TTMPType, SpecialRegType, TokenType, OffType, KernelArgAttr])


def make_context() -> Context:
    """A context with the dialects asterism IR may use: builtin, arith, func, amdgcn."""
    ctx = Context()
    for dialect in (Builtin, Arith, Func, AMDGCN):
        ctx.load_dialect(dialect)
    return ctx
