"""The `gpu` ops of MLIR 22 asterism reads (xDSL 0.74's `gpu` dialect predates them: no
custom forms, `known_block_size` as a discardable attribute), `#gpu.address_space` and the
`#rocdl.target` of a gpu.module. Only the subset asterism lowers is defined
(docs/upstream_mlir.md has the table); both the custom form mlir-opt-22 prints and its generic
form (`--mlir-print-op-generic`) parse.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.dialects.gpu import DimensionAttr, DimensionEnum
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoTerminator, SymbolOpInterface, SymbolTable
from xdsl.utils.str_enum import StrEnum


class AddressSpace(StrEnum):
    """gpu.address_space values."""

    GLOBAL = "global"
    WORKGROUP = "workgroup"
    PRIVATE = "private"


@irdl_attr_definition
class GpuAddressSpaceAttr(EnumAttribute[AddressSpace]):
    """`#gpu.address_space<workgroup>` (the memref memory space of LDS)."""

    name = "gpu.address_space"

    @classmethod
    def parse_parameter(cls, parser) -> AddressSpace:
        """`<name>`."""
        with parser.in_angle_brackets():
            return super().parse_parameter(parser)

    def print_parameter(self, printer: Printer) -> None:
        """`<name>`."""
        with printer.in_angle_brackets():
            super().print_parameter(printer)


# ----------------------------------------------------------------------------- gpu


@irdl_op_definition
class GpuModuleOp(IRDLOperation):
    """`gpu.module @name { ... }`."""

    name = "gpu.module"
    body = region_def("single_block")
    sym_name = prop_def(StringAttr)
    targets = opt_prop_def(ArrayAttr)
    traits = traits_def(NoTerminator(), SymbolOpInterface(), SymbolTable())

    @classmethod
    def parse(cls, parser: Parser) -> GpuModuleOp:
        """`@name [targets]? attributes? region`."""
        name = parser.parse_symbol_name()
        props: dict[str, Attribute] = {"sym_name": name}
        if parser.parse_optional_punctuation("[") is not None:
            items = []
            while parser.parse_optional_punctuation("]") is None:
                items.append(parser.parse_attribute())
                parser.parse_optional_punctuation(",")
            props["targets"] = ArrayAttr(items)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        if not body.blocks:
            body.add_block(Block())
        return cls.create(properties=props, attributes=dict(attrs.data) if attrs else {},
                          regions=[body])

    def print(self, printer: Printer) -> None:
        """Custom form."""
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False,
                             print_empty_block=False)


_FUNC_PROPS = ("function_type", "known_block_size", "known_grid_size", "arg_attrs",
               "res_attrs", "workgroup_attrib_attrs", "private_attrib_attrs")


@irdl_op_definition
class GpuFuncOp(IRDLOperation):
    """`gpu.func @name(args) workgroup(...) private(...) kernel attributes {...} { body }`."""

    name = "gpu.func"
    body = region_def()
    function_type = prop_def(FunctionType)
    known_block_size = opt_prop_def(DenseArrayBase)
    known_grid_size = opt_prop_def(DenseArrayBase)
    arg_attrs = opt_prop_def(ArrayAttr)
    res_attrs = opt_prop_def(ArrayAttr)
    workgroup_attrib_attrs = opt_prop_def(ArrayAttr)
    private_attrib_attrs = opt_prop_def(ArrayAttr)
    traits = traits_def(SymbolOpInterface())

    @property
    def sym_name(self) -> StringAttr:
        """The function's name."""
        return self.attributes["sym_name"]  # type: ignore[return-value]

    @property
    def is_kernel(self) -> bool:
        """Marked `kernel` (the `gpu.kernel` unit attribute)."""
        return "gpu.kernel" in self.attributes

    @property
    def workgroup_count(self) -> int:
        """How many trailing entry-block arguments are workgroup (LDS) attributions."""
        attr = self.attributes.get("workgroup_attributions")
        return attr.value.data if isinstance(attr, IntegerAttr) else 0

    @classmethod
    def parse(cls, parser: Parser) -> GpuFuncOp:
        """MLIR 22's custom form of gpu.func."""
        name = parser.parse_symbol_name()

        def argument():
            arg = parser.parse_argument()
            parser.parse_optional_attr_dict()
            return arg

        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, argument)
        extra: dict[str, list] = {}
        for keyword in ("workgroup", "private"):
            if parser.parse_optional_keyword(keyword) is not None:
                extra[keyword] = parser.parse_comma_separated_list(
                    parser.Delimiter.PAREN, argument)
        attrs: dict[str, Attribute] = {"sym_name": name}
        if parser.parse_optional_keyword("kernel") is not None:
            attrs["gpu.kernel"] = UnitAttr()
        more = parser.parse_optional_attr_dict_with_keyword()
        props: dict[str, Attribute] = {
            "function_type": FunctionType.from_lists([a.type for a in args], [])}
        for key, value in (more.data.items() if more else ()):
            if key in _FUNC_PROPS:
                props[key] = value
            else:
                attrs[key] = value
        if extra.get("workgroup"):
            attrs["workgroup_attributions"] = IntegerAttr(len(extra["workgroup"]), i64)
        body = parser.parse_region(args + extra.get("workgroup", []) + extra.get("private", []))
        return cls.create(properties=props, attributes=attrs, regions=[body])

    def print(self, printer: Printer) -> None:
        """Custom form (arguments, workgroup attributions, `kernel`, attributes)."""
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        args = self.body.blocks[0].args
        nin = len(self.function_type.inputs.data)
        nwg = self.workgroup_count
        printer.print_string("(")
        printer.print_list(args[:nin], printer.print_block_argument)
        printer.print_string(")")
        if nwg:
            printer.print_string(" workgroup(")
            printer.print_list(args[nin:nin + nwg], printer.print_block_argument)
            printer.print_string(")")
        if len(args) > nin + nwg:
            printer.print_string(" private(")
            printer.print_list(args[nin + nwg:], printer.print_block_argument)
            printer.print_string(")")
        if self.is_kernel:
            printer.print_string(" kernel")
        shown = {k: v for k, v in self.attributes.items()
                 if k not in ("sym_name", "gpu.kernel", "workgroup_attributions")}
        for key in ("known_block_size", "known_grid_size"):
            if key in self.properties:
                shown[key] = self.properties[key]
        printer.print_op_attributes(shown, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


class _DimOp(IRDLOperation):
    """`gpu.thread_id x` and its siblings: one index per dimension."""

    dimension = prop_def(DimensionAttr)
    upper_bound = opt_prop_def(IntegerAttr)
    result = result_def(IndexType)

    @classmethod
    def parse(cls, parser: Parser):
        """`x`, `y` or `z`, then an optional `upper_bound N`."""
        dim = parser.parse_keyword_in(("x", "y", "z"), f" after {cls.name}")
        props: dict[str, Attribute] = {"dimension": DimensionAttr(DimensionEnum(dim))}
        if parser.parse_optional_keyword("upper_bound") is not None:
            props["upper_bound"] = IntegerAttr(parser.parse_integer(), IndexType())
        attrs = parser.parse_optional_attr_dict()
        return cls.create(properties=props, attributes=attrs, result_types=[IndexType()])

    def print(self, printer: Printer) -> None:
        """Custom form."""
        printer.print_string(f" {self.dimension.data.value}")
        if self.upper_bound is not None:
            printer.print_string(f" upper_bound {self.upper_bound.value.data}")
        printer.print_op_attributes(self.attributes)


def _dim_op(op_name: str) -> type[IRDLOperation]:
    cls = type(op_name.replace(".", "_"), (_DimOp,), {"name": op_name, "__module__": __name__})
    return irdl_op_definition(cls)


ThreadIdOp = _dim_op("gpu.thread_id")
BlockIdOp = _dim_op("gpu.block_id")
BlockDimOp = _dim_op("gpu.block_dim")
GridDimOp = _dim_op("gpu.grid_dim")


@irdl_op_definition
class LaneIdOp(IRDLOperation):
    """`gpu.lane_id`."""

    name = "gpu.lane_id"
    upper_bound = opt_prop_def(IntegerAttr)
    result = result_def(IndexType)
    assembly_format = "(`upper_bound` $upper_bound^)? attr-dict"


@irdl_op_definition
class GpuBarrierOp(IRDLOperation):
    """`gpu.barrier` (a workgroup barrier that also orders memory)."""

    name = "gpu.barrier"
    assembly_format = "attr-dict"


@irdl_op_definition
class GpuReturnOp(IRDLOperation):
    """`gpu.return` (kernels return nothing)."""

    name = "gpu.return"
    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict ($values^ `:` type($values))?"


class ShuffleMode(StrEnum):
    """The modes of gpu.shuffle."""

    XOR = "xor"
    UP = "up"
    DOWN = "down"
    IDX = "idx"


@irdl_attr_definition
class ShuffleModeAttr(EnumAttribute[ShuffleMode], SpacedOpaqueSyntaxAttribute):
    """`#gpu<shuffle_mode xor>`."""

    name = "gpu.shuffle_mode"


@irdl_op_definition
class ShuffleOp(IRDLOperation):
    """`%r, %valid = gpu.shuffle xor %v, %offset, %width : f32`: a value from another lane
    of the subgroup (and whether that lane is inside the `width`-lane segment)."""

    name = "gpu.shuffle"
    value = operand_def()
    offset = operand_def(IntegerType(32))
    width = operand_def(IntegerType(32))
    mode = prop_def(ShuffleModeAttr)
    shuffleResult = result_def()
    valid = result_def(IntegerType(1))

    @classmethod
    def parse(cls, parser: Parser) -> ShuffleOp:
        """`$mode $value, $offset, $width attr-dict : type($value)`."""
        mode = parser.parse_keyword_in([m.value for m in ShuffleMode], " (a shuffle mode)")
        names = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            names.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        operands = [parser.resolve_operand(names[0], t),
                    parser.resolve_operand(names[1], IntegerType(32)),
                    parser.resolve_operand(names[2], IntegerType(32))]
        return cls.create(operands=operands,
                          properties={"mode": ShuffleModeAttr(ShuffleMode(mode))},
                          attributes=attrs, result_types=[t, IntegerType(1)])

    def print(self, printer: Printer) -> None:
        """Custom form."""
        printer.print_string(f" {self.mode.data.value} ")
        printer.print_list([self.value, self.offset, self.width], printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)


class ReduceKind(StrEnum):
    """The combining operations of gpu.subgroup_reduce (MLIR 22's `#gpu<all_reduce_op>`)."""

    ADD = "add"
    MUL = "mul"
    MINUI = "minui"
    MINSI = "minsi"
    MINNUMF = "minnumf"
    MAXUI = "maxui"
    MAXSI = "maxsi"
    MAXNUMF = "maxnumf"
    AND = "and"
    OR = "or"
    XOR = "xor"
    MINIMUMF = "minimumf"
    MAXIMUMF = "maximumf"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    """`#gpu<all_reduce_op add>`."""

    name = "gpu.all_reduce_op"


@irdl_op_definition
class SubgroupReduceOp(IRDLOperation):
    """`%r = gpu.subgroup_reduce add %x [uniform] [cluster(size = N[, stride = S])] :
    (f32) -> f32`: the value combined over the lanes of each cluster (every lane of the
    subgroup, or clusters of N lanes S apart), given to every lane of the cluster."""

    name = "gpu.subgroup_reduce"
    value = operand_def()
    result = result_def()
    op = prop_def(ReduceKindAttr)
    uniform = opt_prop_def(UnitAttr)
    cluster_size = opt_prop_def(IntegerAttr)
    cluster_stride = opt_prop_def(IntegerAttr)

    @classmethod
    def parse(cls, parser: Parser) -> SubgroupReduceOp:
        """`$op $value (`uniform`)? (`cluster` `(` `size` `=` N (`,` `stride` `=` S)? `)`)?
        attr-dict `:` functional-type`."""
        kind = parser.parse_keyword_in([k.value for k in ReduceKind], " (a reduction)")
        name = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {"op": ReduceKindAttr(ReduceKind(kind))}
        if parser.parse_optional_keyword("uniform") is not None:
            props["uniform"] = UnitAttr()
        if parser.parse_optional_keyword("cluster") is not None:
            parser.parse_punctuation("(")
            parser.parse_keyword("size")
            parser.parse_punctuation("=")
            props["cluster_size"] = IntegerAttr(parser.parse_integer(), IntegerType(32))
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("stride")
                parser.parse_punctuation("=")
                props["cluster_stride"] = IntegerAttr(parser.parse_integer(), IntegerType(32))
            parser.parse_punctuation(")")
        props.setdefault("cluster_stride", IntegerAttr(1, IntegerType(32)))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ft = parser.parse_function_type()
        if len(ft.inputs.data) != 1 or len(ft.outputs.data) != 1:
            parser.raise_error("expected (T) -> T")
        return cls.create(operands=[parser.resolve_operand(name, ft.inputs.data[0])],
                          properties=props, attributes=attrs,
                          result_types=[ft.outputs.data[0]])

    def print(self, printer: Printer) -> None:
        """Custom form."""
        printer.print_string(f" {self.op.data.value} ")
        printer.print_operand(self.value)
        if self.uniform is not None:
            printer.print_string(" uniform")
        if self.cluster_size is not None:
            printer.print_string(f" cluster(size = {self.cluster_size.value.data}")
            stride = self.stride()
            printer.print_string(f", stride = {stride})" if stride != 1 else ")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(f" : ({self.value.type}) -> {self.result.type}")

    def stride(self) -> int:
        """The cluster stride (1 when not given)."""
        return self.cluster_stride.value.data if self.cluster_stride is not None else 1

    def verify_(self) -> None:
        """Result type = operand type (MLIR's AllTypesMatch)."""
        if self.value.type != self.result.type:
            from xdsl.utils.exceptions import VerifyException

            raise VerifyException("gpu.subgroup_reduce: the result type must be the "
                                  "operand's")


@irdl_op_definition
class LaunchFuncOp(IRDLOperation):
    """`gpu.launch_func @mod::@kernel blocks in (..) threads in (..) args(%a : T, ..)`: host
    code launching a kernel. asterism compiles device code only: the host function holding it
    is skipped (asterism.frontend.lower); this definition only reads it."""

    name = "gpu.launch_func"
    args = var_operand_def()
    kernel = prop_def(Attribute)

    @classmethod
    def parse(cls, parser: Parser) -> LaunchFuncOp:
        """`(async)? ([deps])? (<%obj : T>)? @m::@k (clusters in (..))? blocks in (..)
        threads in (..) (: T)? (dynamic_shared_memory_size %s)? (args(%a : T, ..))?
        attr-dict` (the operands are kept in order, their roles are not)."""
        operands = []
        if parser.parse_optional_keyword("async") is not None:
            parser.raise_error("gpu.launch_func: the async form is not supported (asterism "
                               "skips host code; write the launch synchronously)")
        if parser.parse_optional_punctuation("[") is not None:
            parser.raise_error("gpu.launch_func: async dependencies are not supported")
        kernel = parser.parse_attribute()
        index = IndexType()
        for word in ("clusters", "blocks", "threads"):
            if parser.parse_optional_keyword(word) is None:
                if word == "clusters":
                    continue
                parser.raise_error(f"gpu.launch_func: expected `{word} in (...)`")
            parser.parse_keyword("in")
            names = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                      parser.parse_unresolved_operand)
            dim_t = parser.parse_type() if parser.parse_optional_punctuation(":") else index
            operands += [parser.resolve_operand(n, dim_t) for n in names]
        if parser.parse_optional_keyword("dynamic_shared_memory_size") is not None:
            operands.append(parser.resolve_operand(parser.parse_unresolved_operand(),
                                                   IntegerType(32)))
        if parser.parse_optional_keyword("args") is not None:
            def arg():
                name = parser.parse_unresolved_operand()
                parser.parse_punctuation(":")
                return parser.resolve_operand(name, parser.parse_type())

            operands += parser.parse_comma_separated_list(parser.Delimiter.PAREN, arg)
        attrs = parser.parse_optional_attr_dict()
        return cls.create(operands=operands, properties={"kernel": kernel}, attributes=attrs)


@irdl_attr_definition
class RocdlTargetAttr(ParametrizedAttribute):
    """`#rocdl.target<chip = "gfx950", O = 3, ...>` in a gpu.module's targets: its `chip`
    picks the target the module's kernels are lowered for (the other fields are kept)."""

    name = "rocdl.target"
    fields: DictionaryAttr = param_def(DictionaryAttr)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[DictionaryAttr]:
        """`<key = value, ...>` (or nothing)."""
        fields: dict[str, Attribute] = {}
        if parser.parse_optional_punctuation("<") is not None:
            while parser.parse_optional_punctuation(">") is None:
                key = parser.parse_identifier()
                parser.parse_punctuation("=")
                fields[key] = parser.parse_attribute()
                parser.parse_optional_punctuation(",")
        return (DictionaryAttr(fields),)

    def print_parameters(self, printer: Printer) -> None:
        """`<key = value, ...>`."""
        with printer.in_angle_brackets():
            printer.print_list(self.fields.data.items(),
                               lambda kv: (printer.print_string(f"{kv[0]} = "),
                                           printer.print_attribute(kv[1])))

    @property
    def chip(self) -> str | None:
        """The `chip` field (None when absent)."""
        chip = self.fields.data.get("chip")
        return chip.data if isinstance(chip, StringAttr) else None


ROCDL = Dialect("rocdl", [], [RocdlTargetAttr])

GPU = Dialect("gpu", [GpuModuleOp, GpuFuncOp, ThreadIdOp, BlockIdOp, BlockDimOp, GridDimOp,
                      LaneIdOp, GpuBarrierOp, GpuReturnOp, ShuffleOp, SubgroupReduceOp,
                      LaunchFuncOp],
              [DimensionAttr, GpuAddressSpaceAttr, ShuffleModeAttr, ReduceKindAttr])


def memref_space(t: MemRefType) -> str:
    """`global`, `workgroup` or `fat_raw_buffer`: where a memref lives."""
    space = t.memory_space
    if isinstance(space, IntegerAttr):
        return {0: "global", 1: "global", 3: "workgroup", 7: "fat_raw_buffer"}.get(
            space.value.data, f"address space {space.value.data}")
    if isinstance(space, GpuAddressSpaceAttr):
        return space.data.value
    name = getattr(space, "name", "")
    if name == "amdgpu.address_space":
        return space.data.value  # type: ignore[union-attr]
    return "global"


__all__ = ["GPU", "ROCDL", "BlockDimOp", "BlockIdOp", "GpuBarrierOp", "GpuFuncOp", "GpuModuleOp",
           "GpuReturnOp", "GridDimOp", "LaneIdOp", "LaunchFuncOp", "RocdlTargetAttr", "ShuffleOp",
           "ThreadIdOp",
           "memref_space"]
