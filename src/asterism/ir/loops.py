"""Structured control flow in amdgcn kernels, and its lowering to blocks and branches.

The ops (xDSL's `scf` dialect, with the kernel forms of its loop and branch):

* ``scf.for %i = %lo to %hi step %st iter_args(%a = %x) -> (T) : !amdgcn.sgpr { ... }``:
  a uniform loop; the induction variable and the bounds are SGPRs (the trip count need not
  be known when the kernel is built), the iteration runs while ``%i < %hi`` (signed, as
  MLIR's). `iter_args` carry register values of any kind (fixed, relocatable, ranges, AGPR
  accumulators) and memory tokens (``!amdgcn.token``) across the back edge; ``scf.yield``
  gives the next iteration's values; the results are the last ones.
* ``scf.if %c : !amdgcn.sgpr -> (T) { ... } else { ... }``: taken when the uniform SGPR
  ``%c`` is not zero; ``scf.if %vcc : !amdgcn.special<vcc>``: taken when vcc is not zero
  (a VOPC compare's lanes, tested as one: ``s_cbranch_vccz`` past the branch, no compare).
* ``%t = amdgcn.token_var %init`` / ``amdgcn.token_set %t, %new``: a token variable (what
  a carried token becomes in the lowered form): an `amdgcn.wait %t` waits for the memory
  instruction whose token was last stored in it on the path taken (the waits pass follows
  it; neither op emits code).

`lower_structured(kernel)` turns them into blocks: the loop becomes a bottom-tested block
(``s_add_u32`` on the counter, ``s_cmp_lt_i32``, ``s_cbranch_scc1`` back), with a guard
(``s_cmp_lt_i32`` + ``s_cbranch_scc0`` past the loop) unless the bounds are constants that
run it at least once. A loop from 0 by 1 to a bound known at launch only, whose counter no
op reads and whose bound nothing reads after it, counts the bound's register down instead
(``s_sub_u32``, ``s_cmp_lg_u32``; guard ``s_cmp_lt_i32 n, 1``): no counter to set.
Register iter_args become one register class (destination passing): the yielded value is
made to write that register where nothing reads the old value after the op that starts it
(no copy), else it is copied there at the end of the body
(`v_mov_b32` / `s_mov_b32` / `v_accvgpr_mov_b32`, marked `loops.copy`); the register
allocator gives both sides one register where it can and drops the copies that became
moves of a register onto itself (`drop_coalesced_copies`). The passes run on the lowered
form, so liveness, waits, hazards and the schedule see the back edge as a CFG edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.constraints import AnyAttr
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import RecursiveMemoryEffect, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from asterism.ir.ops import ops_with_regions
from asterism.ir.types import (
    REGISTER_TYPES,
    RegisterType,
    SGPRType,
    SpecialRegType,
    TokenType,
    type_text,
)

COPY_ATTR = "loops.copy"  # marks the copies the lowering adds (entry, latch, branch)
STAGE_ATTR = "sched.stage"  # the software pipelining stage of an op (passes.stages)


# --- ops ------------------------------------------------------------------------------------


def _is_sgpr(t: Attribute) -> bool:
    return type(t) is SGPRType and t.width == 1  # type: ignore[attr-defined]


def _compatible(a: Attribute, b: Attribute) -> bool:
    """Whether a value of type `b` may flow where `a` is carried (same register file and
    width, or both tokens)."""
    if isinstance(a, TokenType) or isinstance(b, TokenType):
        return isinstance(a, TokenType) and isinstance(b, TokenType)
    if isinstance(a, RegisterType) and isinstance(b, RegisterType):
        return type(a) is type(b) and a.width == b.width
    return a == b


def is_vcc(t: Attribute) -> bool:
    """Whether `t` is the vcc pair (an scf.if may branch on it: s_cbranch_vccz)."""
    return type(t) is SpecialRegType and t.reg_name == "vcc"  # type: ignore[attr-defined]


def _carried_ok(t: Attribute) -> bool:
    return isinstance(t, TokenType) or type(t) in REGISTER_TYPES.values()


@irdl_op_definition
class KernelForOp(scf.ForOp):
    """`scf.for` as amdgcn kernels write it: SGPR induction variable and bounds (see the
    module docstring); index and integer loops are upstream input's (frontend/)."""

    name = "scf.for"

    T: ClassVar = VarConstraint("T", base(IndexType) | base(SGPRType) | AnyAttr())

    lb = operand_def(T)
    ub = operand_def(T)
    step = operand_def(T)
    iter_args = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(scf.YieldOp), RecursiveMemoryEffect())

    def verify_(self) -> None:
        block = self.body.block
        if not block.args:
            raise VerifyException("scf.for: the body's first argument is the induction "
                                  "variable")
        iv, *args = block.args
        for what, v in (("lower bound", self.lb), ("upper bound", self.ub),
                        ("step", self.step), ("induction variable", iv)):
            if not _is_sgpr(v.type):
                raise VerifyException(
                    f"scf.for in an amdgcn kernel counts in one SGPR: the {what} is "
                    f"{type_text(v.type)}, expected !amdgcn.sgpr")
        if len(args) != len(self.iter_args):
            raise VerifyException(f"scf.for has {len(self.iter_args)} iter_args but its body "
                                  f"takes {len(args)} loop-carried arguments")
        for k, (arg, init) in enumerate(zip(args, self.iter_args)):
            if not _carried_ok(init.type):
                raise VerifyException(f"scf.for iter_arg #{k} is {type_text(init.type)}: "
                                      "a loop carries registers (vgpr, agpr, sgpr) and tokens")
            if arg.type != init.type:
                raise VerifyException(f"scf.for iter_arg #{k}: the body argument is "
                                      f"{type_text(arg.type)}, the initial value "
                                      f"{type_text(init.type)}")
        _check_yield(self, self.body, [a.type for a in self.iter_args])


def _check_yield(op: Operation, region: Region, types: Sequence[Attribute]) -> None:
    block = region.blocks.first
    last = block.last_op if block is not None else None
    if not isinstance(last, scf.YieldOp):
        raise VerifyException(f"{op.name}: the region ends with scf.yield")
    if len(last.arguments) != len(types):
        raise VerifyException(f"{op.name} yields {len(last.arguments)} values, expected "
                              f"{len(types)}")
    for k, (v, t) in enumerate(zip(last.arguments, types)):
        if not _compatible(t, v.type):
            raise VerifyException(f"{op.name}: yielded value #{k} is {type_text(v.type)}, "
                                  f"expected {type_text(t)}")


@irdl_op_definition
class KernelIfOp(scf.IfOp):
    """`scf.if %c : !amdgcn.sgpr -> (types) {...} else {...}`: taken when the uniform SGPR
    `%c` is not zero (or `%vcc : !amdgcn.special<vcc>`: when vcc is not zero)."""

    name = "scf.if"

    output = var_result_def()
    cond = operand_def(AnyAttr())
    true_region = region_def("single_block")
    false_region = region_def()

    traits = traits_def(SingleBlockImplicitTerminator(scf.YieldOp), RecursiveMemoryEffect())

    @classmethod
    def parse(cls, parser: Parser) -> KernelIfOp:
        unresolved = parser.parse_unresolved_operand()
        parser.parse_punctuation(":", " and the condition's type (scf.if %c : !amdgcn.sgpr)")
        cond = parser.resolve_operand(unresolved, parser.parse_type())
        types: list[Attribute] = []
        if parser.parse_optional_punctuation("->"):
            types = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                      parser.parse_type)
        then_region = scf.IfOp.parse_region_with_yield(parser)
        else_region = (scf.IfOp.parse_region_with_yield(parser)
                       if parser.parse_optional_keyword("else") else Region())
        attrs = parser.parse_optional_attr_dict()
        return cls(cond, types, then_region, else_region, attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.cond)
        printer.print_string(" : ")
        printer.print_attribute(self.cond.type)
        if self.output:
            printer.print_string(" -> (")
            printer.print_list(self.output.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.true_region, print_entry_block_args=False,
                             print_block_terminators=bool(self.output))
        if self.false_region.blocks:
            printer.print_string(" else ")
            printer.print_region(self.false_region, print_entry_block_args=False,
                                 print_block_terminators=bool(self.output))
        if self.attributes:
            printer.print_attr_dict(self.attributes)

    def verify_(self) -> None:
        if not (_is_sgpr(self.cond.type) or is_vcc(self.cond.type)):
            raise VerifyException(f"scf.if in an amdgcn kernel branches on one SGPR or vcc "
                                  f"(taken when not zero), not {type_text(self.cond.type)}")
        types = [r.type for r in self.output]
        for k, t in enumerate(types):
            if not _carried_ok(t):
                raise VerifyException(f"scf.if result #{k} is {type_text(t)}: results are "
                                      "registers (vgpr, agpr, sgpr) and tokens")
        _check_yield(self, self.true_region, types)
        if self.false_region.blocks:
            _check_yield(self, self.false_region, types)
        elif types:
            raise VerifyException("scf.if with results needs an else region")


@irdl_op_definition
class TokenVarOp(IRDLOperation):
    """`%t = amdgcn.token_var %init`: a token variable (emits nothing); `amdgcn.wait %t`
    waits for the instruction whose token it holds on the path taken."""

    name = "amdgcn.token_var"

    init = opt_operand_def(TokenType)
    result = result_def(TokenType)
    assembly_format = "($init^)? attr-dict"

    def __init__(self, init: SSAValue | None = None):
        super().__init__(operands=[init], result_types=[TokenType()])


@irdl_op_definition
class TokenSetOp(IRDLOperation):
    """`amdgcn.token_set %t, %new`: from here on the token variable `%t` holds `%new`."""

    name = "amdgcn.token_set"

    var = operand_def(TokenType)
    value = operand_def(TokenType)
    assembly_format = "$var `,` $value attr-dict"

    def __init__(self, var: SSAValue, value: SSAValue):
        super().__init__(operands=[var, value])


STRUCTURED_OPS: tuple[type[Operation], ...] = (KernelForOp, KernelIfOp)
TOKEN_VAR_OPS: tuple[type[IRDLOperation], ...] = (TokenVarOp, TokenSetOp)

# The scf dialect of amdgcn IR: the kernel forms of for/if, xDSL's other scf ops.
SCF = Dialect("scf", [KernelForOp, KernelIfOp, scf.YieldOp, scf.WhileOp, scf.ConditionOp,
                      scf.ExecuteRegionOp, scf.IndexSwitchOp, scf.ParallelOp, scf.ReduceOp,
                      scf.ReduceReturnOp], [])


def has_structured(kernel: Operation) -> bool:
    """Whether a kernel (or module) holds scf ops still to lower."""
    # (scf ops have regions: ops_with_regions skips the instructions; the pipeline asks
    # before every pass)
    return any(isinstance(op, STRUCTURED_OPS) for op in ops_with_regions(kernel))


__all__ = ["COPY_ATTR", "SCF", "STAGE_ATTR", "STRUCTURED_OPS", "TOKEN_VAR_OPS", "KernelForOp",
           "KernelIfOp", "TokenSetOp", "TokenVarOp", "has_structured", "is_vcc"]
