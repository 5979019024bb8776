"""The `amdgcn` dialect object and the xDSL context the IR is parsed in."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.ir import Dialect

from asterism.ir.loops import SCF, TOKEN_VAR_OPS
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
    "amdgcn", [*AMDGCN_OPS, *TOKEN_VAR_OPS],
    [VGPRType, AGPRType, SGPRType, TTMPType, SpecialRegType, TokenType, OffType, KernelArgAttr])


def make_context(loops: bool = True) -> Context:
    """A context with the dialects asterism IR may use: builtin, arith, func, amdgcn, and
    (with `loops`) scf in the kernel forms of ir.loops (upstream input loads xDSL's own)."""
    ctx = Context()
    for dialect in (Builtin, Arith, Func, AMDGCN, *((SCF,) if loops else ())):
        ctx.load_dialect(dialect)
    return ctx
