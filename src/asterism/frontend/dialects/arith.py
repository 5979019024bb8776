"""The `arith` ops whose MLIR 22 forms xDSL 0.74 does not take: `arith.select`, `arith.cmpf`
and `arith.cmpi` on vectors (an i1 vector condition / result of the operands' shape, and
select's custom form `%c, %a, %b : vector<4xi1>, vector<4xf32>`). Loaded in place of xDSL's
definitions of the same ops by asterism.frontend.parse; the other arith ops are xDSL's."""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.arith import (
    CMPF_COMPARISON_OPERATIONS,
    CMPI_COMPARISON_OPERATIONS,
    Arith,
    FastMathFlagsAttr,
)
from xdsl.dialects.builtin import IntegerAttr, IntegerType, VectorType, i64
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


def bool_like(t: Attribute) -> Attribute:
    """i1, or a vector of i1 of the shape of `t` when `t` is a vector (MLIR's BoolLike
    result of a comparison)."""
    if isinstance(t, VectorType):
        return VectorType(IntegerType(1), t.get_shape())
    return IntegerType(1)


def _is_bool_like(t: Attribute) -> bool:
    base = t.element_type if isinstance(t, VectorType) else t
    return isinstance(base, IntegerType) and base.width.data == 1


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`arith.select %c, %a, %b : T` or, with a vector condition, `: vector<4xi1>, T`."""

    name = "arith.select"
    cond = operand_def()
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        """`%c, %a, %b attr-dict : (cond type ,)? type` (MLIR's custom form)."""
        c = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        first = parser.parse_type()
        if parser.parse_optional_punctuation(",") is not None:
            cond_t, t = first, parser.parse_type()
        else:
            cond_t, t = IntegerType(1), first
        operands = [parser.resolve_operand(c, cond_t), parser.resolve_operand(a, t),
                    parser.resolve_operand(b, t)]
        return cls.create(operands=operands, attributes=attrs, result_types=[t])

    def print(self, printer: Printer) -> None:
        """MLIR's custom form (the condition type only when it is a vector)."""
        printer.print_string(" ")
        printer.print_list([self.cond, self.lhs, self.rhs], printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if isinstance(self.cond.type, VectorType):
            printer.print_attribute(self.cond.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        """The operands and result share a type; the condition is i1 or an i1 vector of
        the result's shape."""
        if not (self.lhs.type == self.rhs.type == self.result.type):
            raise VerifyException("the true value, false value and result types differ")
        if not _is_bool_like(self.cond.type):
            raise VerifyException(f"the condition is {self.cond.type}, not i1")
        if isinstance(self.cond.type, VectorType) and \
                self.cond.type != bool_like(self.result.type):
            raise VerifyException(f"a {self.cond.type} condition for a {self.result.type} "
                                  "result (the shapes differ)")


class _Compare(IRDLOperation):
    """Shared custom form of arith.cmpi / arith.cmpf."""

    NAMES: ClassVar[tuple[str, ...]] = ()

    lhs = operand_def()
    rhs = operand_def()
    predicate = prop_def(IntegerAttr)
    result = result_def()
    traits = traits_def(Pure())

    @classmethod
    def _parse_compare(cls, parser: Parser, with_fastmath: bool):
        pred = parser.parse_identifier()
        if pred not in cls.NAMES:
            parser.raise_error(f"{cls.name}: unknown predicate {pred!r} (one of "
                               f"{', '.join(cls.NAMES)})")
        parser.parse_punctuation(",")
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {"predicate": IntegerAttr(cls.NAMES.index(pred), i64)}
        if with_fastmath and parser.parse_optional_keyword("fastmath") is not None:
            props["fastmath"] = FastMathFlagsAttr(FastMathFlagsAttr.parse_parameter(parser))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.create(operands=[parser.resolve_operand(a, t), parser.resolve_operand(b, t)],
                          properties=props, attributes=attrs, result_types=[bool_like(t)])

    def print(self, printer: Printer) -> None:
        """`pred, %a, %b (fastmath<..>)? : T`."""
        printer.print_string(f" {self.NAMES[self.predicate.value.data]}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        fm = self.properties.get("fastmath")
        if fm is not None and fm != FastMathFlagsAttr("none"):
            printer.print_string(" fastmath")
            fm.print_parameter(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    def verify_(self) -> None:
        """Operands of one type; the result i1 of the operands' shape; a known predicate."""
        if self.lhs.type != self.rhs.type:
            raise VerifyException("the operands' types differ")
        if self.result.type != bool_like(self.lhs.type):
            raise VerifyException(f"the result is {self.result.type}, expected "
                                  f"{bool_like(self.lhs.type)}")
        if not 0 <= self.predicate.value.data < len(self.NAMES):
            raise VerifyException(f"predicate {self.predicate.value.data} is out of range")


@irdl_op_definition
class CmpiOp(_Compare):
    """`arith.cmpi slt, %a, %b : T` (T an integer, index, or a vector of them)."""

    name = "arith.cmpi"
    NAMES: ClassVar[tuple[str, ...]] = tuple(CMPI_COMPARISON_OPERATIONS)

    @classmethod
    def parse(cls, parser: Parser) -> CmpiOp:
        """`pred, %a, %b attr-dict : T`."""
        return cls._parse_compare(parser, with_fastmath=False)


@irdl_op_definition
class CmpfOp(_Compare):
    """`arith.cmpf ogt, %a, %b : T` (T a float or a vector of floats)."""

    name = "arith.cmpf"
    NAMES: ClassVar[tuple[str, ...]] = tuple(CMPF_COMPARISON_OPERATIONS)
    fastmath = opt_prop_def(FastMathFlagsAttr)

    @classmethod
    def parse(cls, parser: Parser) -> CmpfOp:
        """`pred, %a, %b (fastmath<..>)? attr-dict : T`."""
        return cls._parse_compare(parser, with_fastmath=True)


ARITH_OVERRIDES = [SelectOp, CmpiOp, CmpfOp]


def upstream_arith() -> Dialect:
    """xDSL's arith dialect with the ops above in place of its own."""
    names = {op.name for op in ARITH_OVERRIDES}
    ops = [op for op in Arith.operations if op.name not in names] + ARITH_OVERRIDES
    return Dialect("arith", ops, list(Arith.attributes))


__all__ = ["ARITH_OVERRIDES", "CmpfOp", "CmpiOp", "SelectOp", "bool_like", "upstream_arith"]
