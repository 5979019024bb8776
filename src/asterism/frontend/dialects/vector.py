"""The `vector` ops of MLIR 22 asterism reads that xDSL 0.74 lacks (loaded beside xDSL's own
`vector` ops by asterism.frontend.parse)."""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, VectorType
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser


@irdl_op_definition
class ExtractStridedSliceOp(IRDLOperation):
    """`vector.extract_strided_slice %v {offsets = [..], sizes = [..], strides = [..]}`."""

    name = "vector.extract_strided_slice"
    source = operand_def(VectorType)
    offsets = prop_def(ArrayAttr)
    sizes = prop_def(ArrayAttr)
    strides = prop_def(ArrayAttr)
    result = result_def(VectorType)

    @classmethod
    def parse(cls, parser: Parser) -> ExtractStridedSliceOp:
        """`%v {offsets.., sizes.., strides..} : T to T`."""
        source = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_keyword("to")
        res_type = parser.parse_type()
        props = {k: attrs.pop(k) for k in ("offsets", "sizes", "strides") if k in attrs}
        return cls.create(operands=[parser.resolve_operand(source, src_type)],
                          properties=props, attributes=attrs, result_types=[res_type])


@irdl_op_definition
class FromElementsOp(IRDLOperation):
    """`vector.from_elements %a, %b : vector<2xf32>`."""

    name = "vector.from_elements"
    elements = var_operand_def()
    result = result_def(VectorType)

    @classmethod
    def parse(cls, parser: Parser) -> FromElementsOp:
        """`%a, %b, ... attr-dict : vector type`."""
        names = parser.parse_comma_separated_list(parser.Delimiter.NONE,
                                                  parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        vtype = parser.parse_type()
        if not isinstance(vtype, VectorType):
            parser.raise_error("vector.from_elements: expected a vector type")
        operands = [parser.resolve_operand(n, vtype.element_type) for n in names]
        return cls.create(operands=operands, attributes=attrs, result_types=[vtype])


@irdl_op_definition
class SplatOp(IRDLOperation):
    """`vector.splat %x : vector<4xf32>` (older MLIR; MLIR 22 uses vector.broadcast)."""

    name = "vector.splat"
    input = var_operand_def()
    result = result_def(VectorType)

    @classmethod
    def parse(cls, parser: Parser) -> SplatOp:
        """`%x : vector type`."""
        name = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        vtype = parser.parse_type()
        if not isinstance(vtype, VectorType):
            parser.raise_error("vector.splat: expected a vector type")
        return cls.create(operands=[parser.resolve_operand(name, vtype.element_type)],
                          attributes=attrs, result_types=[vtype])


VECTOR_EXTRA_OPS = [ExtractStridedSliceOp, FromElementsOp, SplatOp]

__all__ = ["VECTOR_EXTRA_OPS", "ExtractStridedSliceOp", "FromElementsOp", "SplatOp"]
