"""The `memref` ops of MLIR 22 whose custom form xDSL 0.74 does not parse (loaded in place of
xDSL's own by asterism.frontend.parse)."""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    I64,
    AnyFloatConstr,
    IndexType,
    IntegerAttr,
    MemRefType,
    SignlessIntegerConstraint,
)
from xdsl.ir import Dialect
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer

# MLIR 22's AtomicRMWKind (mlir/include/mlir/Dialect/Arith/IR/ArithBase.td), by number as the
# generic form `<{kind = N : i64}>` writes it (checked with mlir-opt-22 --mlir-print-op-generic)
ATOMIC_RMW_KINDS = ("addf", "addi", "andi", "assign", "maximumf", "maxnumf", "maxs", "maxu",
                    "minimumf", "minnumf", "mins", "minu", "mulf", "muli", "ori", "xori")


@irdl_op_definition
class AtomicRMWOp(IRDLOperation):
    """`%r = memref.atomic_rmw addf %v, %m[%i] : (f32, memref<16xf32>) -> f32`: MLIR's
    memref.atomic_rmw ("reads the memref at the indices, applies the kind to it and the value,
    writes the result back atomically and returns the value it read"); its declared format is
    `$kind $value , $memref [ $indices ] attr-dict : ( type($value) , type($memref) ) ->
    type($result)` (https://mlir.llvm.org/docs/Dialects/MemRef/#memrefatomic_rmw-memrefatomicrmwop)."""

    name = "memref.atomic_rmw"
    T: ClassVar = VarConstraint("T", AnyFloatConstr | SignlessIntegerConstraint)
    value = operand_def(T)
    memref = operand_def(MemRefType.constr(T))
    indices = var_operand_def(IndexType)
    kind = prop_def(IntegerAttr[I64])
    result = result_def(T)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicRMWOp:
        """The declared custom form above."""
        pos = parser.pos
        word = parser.parse_identifier()
        if word not in ATOMIC_RMW_KINDS:
            parser.raise_error(f"memref.atomic_rmw: unknown kind '{word}' (expected one of "
                               f"{', '.join(ATOMIC_RMW_KINDS)})", pos, parser.pos)
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        mem = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                    parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_punctuation("(")
        value_type = parser.parse_type()
        parser.parse_punctuation(",")
        mem_type = parser.parse_type()
        parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        operands = [parser.resolve_operand(value, value_type),
                    parser.resolve_operand(mem, mem_type),
                    *(parser.resolve_operand(i, IndexType()) for i in indices)]
        return cls.create(operands=operands, result_types=[result_type], attributes=attrs,
                          properties={"kind": IntegerAttr(ATOMIC_RMW_KINDS.index(word), 64)})

    def print(self, printer: Printer) -> None:
        """The declared custom form above."""
        printer.print_string(f" {self.kind_name()} ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        printer.print_operand(self.memref)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(f" : ({self.value.type}, {self.memref.type}) -> "
                             f"{self.result.type}")

    def kind_name(self) -> str:
        """The kind as MLIR writes it (its number if out of range)."""
        kind = self.kind.value.data
        return ATOMIC_RMW_KINDS[kind] if 0 <= kind < len(ATOMIC_RMW_KINDS) else str(kind)


MEMREF_OVERRIDES = [AtomicRMWOp]


def upstream_memref() -> Dialect:
    """xDSL's memref dialect with the ops above in place of its own."""
    names = {op.name for op in MEMREF_OVERRIDES}
    ops = [op for op in memref.MemRef.operations if op.name not in names] + MEMREF_OVERRIDES
    return Dialect("memref", ops, list(memref.MemRef.attributes))


__all__ = ["ATOMIC_RMW_KINDS", "MEMREF_OVERRIDES", "AtomicRMWOp", "upstream_memref"]
