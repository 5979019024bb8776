"""The upstream MLIR `amdgpu` dialect (MLIR 22): op definitions with the custom forms
mlir-opt-22 prints and accepts (and the older attribute-dictionary form of `amdgpu.mfma`); the
generic form parses through xDSL. Operand types are checked by the lowering
(asterism.frontend.amdgpu), which names the op and what it supports.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    BoolAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    param_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.str_enum import StrEnum


class DPPPerm(StrEnum):
    """The permutations of amdgpu.dpp."""

    quad_perm = "quad_perm"
    row_shl = "row_shl"
    row_shr = "row_shr"
    row_ror = "row_ror"
    wave_shl = "wave_shl"
    wave_shr = "wave_shr"
    wave_ror = "wave_ror"
    wave_rol = "wave_rol"
    row_mirror = "row_mirror"
    row_half_mirror = "row_half_mirror"
    row_bcast_15 = "row_bcast_15"
    row_bcast_31 = "row_bcast_31"


class MFMAPermB(StrEnum):
    """The blgp lane permutations of amdgpu.mfma's B operand."""

    none = "none"
    bcast_first_32 = "bcast_first_32"
    bcast_second_32 = "bcast_second_32"
    rotate_16_right = "rotate_16_right"
    bcast_first_16 = "bcast_first_16"
    bcast_second_16 = "bcast_second_16"
    bcast_third_16 = "bcast_third_16"
    bcast_fourth_16 = "bcast_fourth_16"


class AmdgpuSpace(StrEnum):
    """#amdgpu.address_space values."""

    fat_raw_buffer = "fat_raw_buffer"
    buffer_rsrc = "buffer_rsrc"
    fat_structured_buffer = "fat_structured_buffer"


@irdl_attr_definition
class DPPPermAttr(EnumAttribute[DPPPerm], SpacedOpaqueSyntaxAttribute):
    """`#amdgpu<dpp_perm row_shl>`."""

    name = "amdgpu.dpp_perm"


@irdl_attr_definition
class MFMAPermBAttr(EnumAttribute[MFMAPermB], SpacedOpaqueSyntaxAttribute):
    """`#amdgpu<mfma_perm_b none>`."""

    name = "amdgpu.mfma_perm_b"


@irdl_attr_definition
class AmdgpuAddressSpaceAttr(EnumAttribute[AmdgpuSpace]):
    """`#amdgpu.address_space<fat_raw_buffer>`."""

    name = "amdgpu.address_space"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> AmdgpuSpace:
        """`<name>`."""
        with parser.in_angle_brackets():
            return super().parse_parameter(parser)

    def print_parameter(self, printer: Printer) -> None:
        """`<name>`."""
        with printer.in_angle_brackets():
            super().print_parameter(printer)


SCHED_BARRIER_OPTS = ("none", "non_mem_non_sideffect", "valu", "salu", "mfma_wmma",
                      "all_vmem", "vmem_read", "vmem_write", "all_ds", "ds_read", "ds_write",
                      "transcendental")


@irdl_attr_definition
class SchedBarrierOptAttr(ParametrizedAttribute):
    """`#amdgpu.sched_barrier_opt<valu|all_vmem>`: what may cross the barrier."""

    name = "amdgpu.sched_barrier_opt"
    flags: StringAttr = param_def(StringAttr)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr]:
        """`<name|name...>`."""
        parser.parse_punctuation("<")
        names = [parser.parse_keyword_in(SCHED_BARRIER_OPTS, " (a sched_barrier option)")]
        while parser.parse_optional_punctuation("|") is not None:
            names.append(parser.parse_keyword_in(SCHED_BARRIER_OPTS))
        parser.parse_punctuation(">")
        return (StringAttr("|".join(names)),)

    def print_parameters(self, printer: Printer) -> None:
        """`<name|name...>`."""
        printer.print_string(f"<{self.flags.data}>")


def _parse_mnk(parser: Parser) -> dict[str, Attribute]:
    """An optional `16x16x16` (m, n, k) prefix (MLIR 22's custom form)."""
    m = parser.parse_optional_integer(allow_boolean=False, allow_negative=False)
    if m is None:
        return {}
    parser.parse_shape_delimiter()
    n = parser.parse_shape_dimension(allow_dynamic=False)
    parser.parse_shape_delimiter()
    k = parser.parse_shape_dimension(allow_dynamic=False)
    return {"m": IntegerAttr(m, i32), "n": IntegerAttr(n, i32), "k": IntegerAttr(k, i32)}


def _split_props(attrs: dict[str, Attribute], names) -> dict[str, Attribute]:
    return {k: attrs.pop(k) for k in list(attrs) if k in names}


def _types(parser: Parser, count: int) -> list[Attribute]:
    types = [parser.parse_type()]
    for _ in range(count - 1):
        parser.parse_punctuation(",")
        types.append(parser.parse_type())
    return types


_MFMA_PROPS = ("m", "n", "k", "blocks", "cbsz", "abid", "blgp", "reducePrecision", "negateA",
               "negateB", "negateC")


@irdl_op_definition
class MFMAOp(IRDLOperation):
    """`amdgpu.mfma 16x16x16 %a * %b + %c blgp = none : tA, tB, tC`."""

    name = "amdgpu.mfma"
    sourceA = operand_def()
    sourceB = operand_def()
    destC = operand_def()
    m = prop_def(IntegerAttr)
    n = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)
    blocks = opt_prop_def(IntegerAttr)
    cbsz = opt_prop_def(IntegerAttr)
    abid = opt_prop_def(IntegerAttr)
    blgp = opt_prop_def(MFMAPermBAttr)
    reducePrecision = opt_prop_def(UnitAttr)
    negateA = opt_prop_def(UnitAttr)
    negateB = opt_prop_def(UnitAttr)
    negateC = opt_prop_def(UnitAttr)
    destD = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> MFMAOp:
        """Both the MLIR 22 form and the older attribute form."""
        props = _parse_mnk(parser)
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation("*")
        b = parser.parse_unresolved_operand()
        parser.parse_punctuation("+")
        c = parser.parse_unresolved_operand()
        attrs = dict(parser.parse_optional_attr_dict())
        parser.parse_keyword("blgp")
        parser.parse_punctuation("=")
        blgp = parser.parse_keyword_in([p.value for p in MFMAPermB], " (an MFMA blgp)")
        attrs.update(parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        ta, tb, tc = _types(parser, 3)
        props.update(_split_props(attrs, _MFMA_PROPS))
        props["blgp"] = MFMAPermBAttr(MFMAPermB(blgp))
        if "m" not in props:
            parser.raise_error("amdgpu.mfma: expected MxNxK (e.g. 16x16x16) or m/n/k "
                               "attributes")
        for key, default in (("blocks", 1), ("cbsz", 0), ("abid", 0)):
            props.setdefault(key, IntegerAttr(default, i32))
        operands = [parser.resolve_operand(a, ta), parser.resolve_operand(b, tb),
                    parser.resolve_operand(c, tc)]
        return cls.create(operands=operands, properties=props, attributes=attrs,
                          result_types=[tc])


@irdl_op_definition
class WMMAOp(IRDLOperation):
    """`amdgpu.wmma 16x16x16 %a * %b + %c : tA, tB, tC` (RDNA only)."""

    name = "amdgpu.wmma"
    sourceA = operand_def()
    sourceB = operand_def()
    destC = operand_def()
    m = opt_prop_def(IntegerAttr)
    n = opt_prop_def(IntegerAttr)
    k = opt_prop_def(IntegerAttr)
    subwordOffset = opt_prop_def(IntegerAttr)
    unsignedA = opt_prop_def(UnitAttr)
    unsignedB = opt_prop_def(UnitAttr)
    clamp = opt_prop_def(UnitAttr)
    destD = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> WMMAOp:
        """`MxNxK? %a * %b + %c attr-dict : tA, tB, tC`."""
        props = _parse_mnk(parser)
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation("*")
        b = parser.parse_unresolved_operand()
        parser.parse_punctuation("+")
        c = parser.parse_unresolved_operand()
        attrs = dict(parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        ta, tb, tc = _types(parser, 3)
        props.update(_split_props(attrs, ("m", "n", "k", "subwordOffset", "unsignedA",
                                          "unsignedB", "clamp")))
        operands = [parser.resolve_operand(a, ta), parser.resolve_operand(b, tb),
                    parser.resolve_operand(c, tc)]
        return cls.create(operands=operands, properties=props, attributes=attrs,
                          result_types=[tc])


_BUFFER_PROPS = ("boundsCheck", "indexOffset")


def _parse_buffer_ref(parser: Parser):
    """`%memref[%i, %j] (sgprOffset %s)?` -> (memref, indices, sgpr offset) unresolved."""
    memref = parser.parse_unresolved_operand()
    indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                parser.parse_unresolved_operand)
    sgpr = None
    if parser.parse_optional_keyword("sgprOffset") is not None:
        sgpr = parser.parse_unresolved_operand()
    return memref, indices, sgpr


def _parse_index_types(parser: Parser, count: int) -> list[Attribute]:
    """`(, type)*` after the memref type: one type per index, as MLIR's declared format
    `type($memref) (`,` type($indices)^)?` prints them (`memref<16x16xf16>, i32, i32`)."""
    types = []
    while parser.parse_optional_punctuation(",") is not None:
        types.append(parser.parse_type())
    if len(types) != count:
        parser.raise_error(f"expected {count} index type(s) after the memref type (one per "
                           f"index), got {len(types)}")
    return types


def _resolve_buffer(parser: Parser, memref, indices, sgpr, mtype, itypes):
    operands = [[parser.resolve_operand(memref, mtype)],
                [parser.resolve_operand(i, t) for i, t in zip(indices, itypes)],
                [parser.resolve_operand(sgpr, i32)] if sgpr is not None else []]
    return operands


class _BufferOp(IRDLOperation):
    boundsCheck = opt_prop_def(BoolAttr)
    indexOffset = opt_prop_def(IntegerAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class RawBufferLoadOp(_BufferOp):
    """`amdgpu.raw_buffer_load %m[%i] : memref<..>, i32 -> T`."""

    name = "amdgpu.raw_buffer_load"
    memref = operand_def()
    indices = var_operand_def()
    sgprOffset = opt_operand_def()
    value = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> RawBufferLoadOp:
        """`attr-dict %m[%i...] (sgprOffset %s)? : memref type (, index type)* -> type`."""
        attrs = dict(parser.parse_optional_attr_dict())
        memref, indices, sgpr = _parse_buffer_ref(parser)
        parser.parse_punctuation(":")
        mtype = parser.parse_type()
        itypes = _parse_index_types(parser, len(indices))
        parser.parse_punctuation("->")
        rtype = parser.parse_type()
        props = _split_props(attrs, _BUFFER_PROPS)
        return cls.build(operands=_resolve_buffer(parser, memref, indices, sgpr, mtype, itypes),
                         properties=props, attributes=attrs, result_types=[rtype])


class _BufferWriteOp(_BufferOp):
    """Shared parser of `amdgpu.raw_buffer_store` and the atomics without a result."""

    value = operand_def()
    memref = operand_def()
    indices = var_operand_def()
    sgprOffset = opt_operand_def()

    @classmethod
    def parse(cls, parser: Parser):
        """`attr-dict %v -> %m[%i...] (sgprOffset %s)? : T -> memref type (, index type)*`."""
        attrs = dict(parser.parse_optional_attr_dict())
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation("->")
        memref, indices, sgpr = _parse_buffer_ref(parser)
        parser.parse_punctuation(":")
        vtype = parser.parse_type()
        parser.parse_punctuation("->")
        mtype = parser.parse_type()
        itypes = _parse_index_types(parser, len(indices))
        props = _split_props(attrs, _BUFFER_PROPS)
        operands = [[parser.resolve_operand(value, vtype)],
                    *_resolve_buffer(parser, memref, indices, sgpr, mtype, itypes)]
        return cls.build(operands=operands, properties=props, attributes=attrs)


def _write_op(op_name: str) -> type[IRDLOperation]:
    cls = type(op_name.split(".")[1], (_BufferWriteOp,),
               {"name": op_name, "__module__": __name__,
                "__doc__": f"`{op_name} %v -> %m[%i] : T -> memref<..>, i32`."})
    return irdl_op_definition(cls)


RawBufferStoreOp = _write_op("amdgpu.raw_buffer_store")
RawBufferAtomicFaddOp = _write_op("amdgpu.raw_buffer_atomic_fadd")
RawBufferAtomicFmaxOp = _write_op("amdgpu.raw_buffer_atomic_fmax")
RawBufferAtomicSmaxOp = _write_op("amdgpu.raw_buffer_atomic_smax")
RawBufferAtomicUminOp = _write_op("amdgpu.raw_buffer_atomic_umin")


@irdl_op_definition
class RawBufferAtomicCmpswapOp(_BufferOp):
    """`amdgpu.raw_buffer_atomic_cmpswap %src, %cmp -> %m[%i] : T -> memref<..>, i32`."""

    name = "amdgpu.raw_buffer_atomic_cmpswap"
    src = operand_def()
    cmp = operand_def()
    memref = operand_def()
    indices = var_operand_def()
    sgprOffset = opt_operand_def()
    value = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> RawBufferAtomicCmpswapOp:
        """`attr-dict %src, %cmp -> %m[%i] (sgprOffset %s)? : T -> memref (, index type)*`."""
        attrs = dict(parser.parse_optional_attr_dict())
        src = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        cmp = parser.parse_unresolved_operand()
        parser.parse_punctuation("->")
        memref, indices, sgpr = _parse_buffer_ref(parser)
        parser.parse_punctuation(":")
        vtype = parser.parse_type()
        parser.parse_punctuation("->")
        mtype = parser.parse_type()
        itypes = _parse_index_types(parser, len(indices))
        props = _split_props(attrs, _BUFFER_PROPS)
        operands = [[parser.resolve_operand(src, vtype)], [parser.resolve_operand(cmp, vtype)],
                    *_resolve_buffer(parser, memref, indices, sgpr, mtype, itypes)]
        return cls.build(operands=operands, properties=props, attributes=attrs,
                         result_types=[vtype])


@irdl_op_definition
class DPPOp(IRDLOperation):
    """`amdgpu.dpp %old %src row_shl(1 : i32) {row_mask = 0xf : i32} : f32`."""

    name = "amdgpu.dpp"
    old = operand_def()
    src = operand_def()
    kind = prop_def(DPPPermAttr)
    permArgument = opt_prop_def(Attribute)
    row_mask = opt_prop_def(IntegerAttr)
    bank_mask = opt_prop_def(IntegerAttr)
    bound_ctrl = opt_prop_def(BoolAttr)
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> DPPOp:
        """`%old %src kind ((arg))? attr-dict : type`."""
        old = parser.parse_unresolved_operand()
        src = parser.parse_unresolved_operand()
        kind = parser.parse_keyword_in([p.value for p in DPPPerm], " (a DPP permutation)")
        props: dict[str, Attribute] = {"kind": DPPPermAttr(DPPPerm(kind))}
        if parser.parse_optional_punctuation("(") is not None:
            props["permArgument"] = parser.parse_attribute()
            parser.parse_punctuation(")")
        attrs = dict(parser.parse_optional_attr_dict())
        props.update(_split_props(attrs, ("permArgument", "row_mask", "bank_mask",
                                          "bound_ctrl")))
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.create(operands=[parser.resolve_operand(old, t),
                                    parser.resolve_operand(src, t)],
                          properties=props, attributes=attrs, result_types=[t])


@irdl_op_definition
class LDSBarrierOp(IRDLOperation):
    """`amdgpu.lds_barrier`: a workgroup barrier after the LDS accesses completed."""

    name = "amdgpu.lds_barrier"
    assembly_format = "attr-dict"


@irdl_op_definition
class SchedBarrierOp(IRDLOperation):
    """`amdgpu.sched_barrier allow = <none>`: a scheduling fence."""

    name = "amdgpu.sched_barrier"
    opts = prop_def(SchedBarrierOptAttr)

    @classmethod
    def parse(cls, parser: Parser) -> SchedBarrierOp:
        """`allow = <opts> attr-dict`."""
        parser.parse_keyword("allow")
        parser.parse_punctuation("=")
        (flags,) = SchedBarrierOptAttr.parse_parameters(parser)
        attrs = parser.parse_optional_attr_dict()
        return cls.create(properties={"opts": SchedBarrierOptAttr(flags)}, attributes=attrs)


@irdl_op_definition
class ExtPackedFp8Op(IRDLOperation):
    """`amdgpu.ext_packed_fp8 %v[0] : vector<4xf8E4M3FNUZ> to f32`."""

    name = "amdgpu.ext_packed_fp8"
    source = operand_def()
    index = prop_def(IntegerAttr)
    res = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> ExtPackedFp8Op:
        """`attr-dict %v [ index ] : T to T`."""
        attrs = dict(parser.parse_optional_attr_dict())
        src = parser.parse_unresolved_operand()
        index = _parse_index(parser)
        parser.parse_punctuation(":")
        st = parser.parse_type()
        parser.parse_keyword("to")
        rt = parser.parse_type()
        return cls.create(operands=[parser.resolve_operand(src, st)],
                          properties={"index": IntegerAttr(index, i32)}, attributes=attrs,
                          result_types=[rt])


def _optional_operand_or_undef(parser: Parser):
    if parser.parse_optional_keyword("undef") is not None:
        return None
    return parser.parse_unresolved_operand()


def _parse_index(parser: Parser) -> int:
    """`[N]`: a constant lane/word index."""
    parser.parse_punctuation("[")
    index = parser.parse_integer(allow_negative=False)
    parser.parse_punctuation("]")
    return index


def _parse_conversion_types(parser: Parser) -> tuple[Attribute, Attribute, Attribute]:
    """`: SRC to RESULT (into EXISTING)?` -> (source, result, existing) types (the existing
    value's type defaults to the result's)."""
    parser.parse_punctuation(":")
    source = parser.parse_type()
    parser.parse_keyword("to")
    result = parser.parse_type()
    existing = parser.parse_type() if parser.parse_optional_keyword("into") else result
    return source, result, existing


@irdl_op_definition
class PackedTrunc2xFp8Op(IRDLOperation):
    """`amdgpu.packed_trunc_2xfp8 %a, %b into undef[word 0] : f32 to vector<4xf8E4M3FNUZ>`."""

    name = "amdgpu.packed_trunc_2xfp8"
    sourceA = operand_def()
    sourceB = opt_operand_def()
    existing = opt_operand_def()
    wordIndex = prop_def(IntegerAttr)
    res = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def parse(cls, parser: Parser) -> PackedTrunc2xFp8Op:
        """`attr-dict %a, (%b|undef) into (%e|undef)[word N] : T to T (into T)?`."""
        attrs = dict(parser.parse_optional_attr_dict())
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = _optional_operand_or_undef(parser)
        parser.parse_keyword("into")
        existing = _optional_operand_or_undef(parser)
        parser.parse_punctuation("[")
        parser.parse_keyword("word")
        word = parser.parse_integer(allow_negative=False)
        parser.parse_punctuation("]")
        st, rt, et = _parse_conversion_types(parser)
        operands = [[parser.resolve_operand(a, st)],
                    [parser.resolve_operand(b, st)] if b is not None else [],
                    [parser.resolve_operand(existing, et)] if existing is not None else []]
        return cls.build(operands=operands, properties={"wordIndex": IntegerAttr(word, i32)},
                         attributes=attrs, result_types=[rt])


@irdl_op_definition
class PackedStochRoundFp8Op(IRDLOperation):
    """`amdgpu.packed_stoch_round_fp8 %x + %r into %e[1] : f32 to vector<4xf8..> into ..`."""

    name = "amdgpu.packed_stoch_round_fp8"
    source = operand_def()
    stochiasticParam = operand_def()
    existing = opt_operand_def()
    storeIndex = prop_def(IntegerAttr)
    res = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> PackedStochRoundFp8Op:
        """`attr-dict %x + %r into (%e|undef)[N] : T to T (into T)?`."""
        attrs = dict(parser.parse_optional_attr_dict())
        src = parser.parse_unresolved_operand()
        parser.parse_punctuation("+")
        rnd = parser.parse_unresolved_operand()
        parser.parse_keyword("into")
        existing = _optional_operand_or_undef(parser)
        index = _parse_index(parser)
        st, rt, et = _parse_conversion_types(parser)
        operands = [[parser.resolve_operand(src, st)], [parser.resolve_operand(rnd, i32)],
                    [parser.resolve_operand(existing, et)] if existing is not None else []]
        return cls.build(operands=operands, properties={"storeIndex": IntegerAttr(index, i32)},
                         attributes=attrs, result_types=[rt])


@irdl_op_definition
class FatRawBufferCastOp(IRDLOperation):
    """`amdgpu.fat_raw_buffer_cast %m validBytes(%n) : memref<..> to memref<.., fat_raw>`."""

    name = "amdgpu.fat_raw_buffer_cast"
    source = operand_def()
    validBytes = opt_operand_def()
    cacheSwizzleStride = opt_operand_def()
    boundsCheck = opt_prop_def(BoolAttr)
    resetOffset = opt_prop_def(UnitAttr)
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def parse(cls, parser: Parser) -> FatRawBufferCastOp:
        """`%m oilist(validBytes(%n) | cacheSwizzleStride(%s) | boundsCheck(b) |
        resetOffset) attr-dict : T to T`."""
        src = parser.parse_unresolved_operand()
        valid = swizzle = None
        props: dict[str, Attribute] = {}
        while True:
            word = parser.parse_optional_keyword_in(
                ("validBytes", "cacheSwizzleStride", "boundsCheck", "resetOffset"))
            if word is None:
                break
            if word == "resetOffset":
                props["resetOffset"] = UnitAttr()
                continue
            parser.parse_punctuation("(")
            if word == "boundsCheck":
                props["boundsCheck"] = BoolAttr.from_bool(bool(parser.parse_boolean()))
            elif word == "validBytes":
                valid = parser.parse_unresolved_operand()
            else:
                swizzle = parser.parse_unresolved_operand()
            parser.parse_punctuation(")")
        attrs = dict(parser.parse_optional_attr_dict())
        props.update(_split_props(attrs, ("boundsCheck", "resetOffset")))
        parser.parse_punctuation(":")
        st = parser.parse_type()
        parser.parse_keyword("to")
        rt = parser.parse_type()
        from xdsl.dialects.builtin import IntegerType

        operands = [[parser.resolve_operand(src, st)],
                    [parser.resolve_operand(valid, i64)] if valid is not None else [],
                    [parser.resolve_operand(swizzle, IntegerType(14))]
                    if swizzle is not None else []]
        return cls.build(operands=operands, properties=props, attributes=attrs,
                         result_types=[rt])


def _parse_index_list(parser: Parser):
    """`[%i, %j...]` (unresolved)."""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                             parser.parse_unresolved_operand)


def _parse_scaled_source(parser: Parser):
    """`(%scale[idx] * %src)` -> (scale, idx, src) unresolved."""
    parser.parse_punctuation("(")
    scale = parser.parse_unresolved_operand()
    idx = _parse_index(parser)
    parser.parse_punctuation("*")
    src = parser.parse_unresolved_operand()
    parser.parse_punctuation(")")
    return scale, idx, src


@irdl_op_definition
class ScaledMFMAOp(IRDLOperation):
    """`amdgpu.scaled_mfma 16x16x128 (%sa[0] * %a) * (%sb[0] * %b) + %c : tSA, tA, tSB, tB,
    tC` (gfx950 v_mfma_scale_f32_*_f8f6f4)."""

    name = "amdgpu.scaled_mfma"
    sourceA = operand_def()
    sourceB = operand_def()
    destC = operand_def()
    scalesA = operand_def()
    scalesB = operand_def()
    m = prop_def(IntegerAttr)
    n = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)
    scalesIdxA = prop_def(IntegerAttr)
    scalesIdxB = prop_def(IntegerAttr)
    destD = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> ScaledMFMAOp:
        """`MxNxK (%sa[i] * %a) * (%sb[j] * %b) + %c attr-dict : tsa, ta, tsb, tb, tc`."""
        props = _parse_mnk(parser)
        sa, ia, a = _parse_scaled_source(parser)
        parser.parse_punctuation("*")
        sb, ib, b = _parse_scaled_source(parser)
        parser.parse_punctuation("+")
        c = parser.parse_unresolved_operand()
        attrs = dict(parser.parse_optional_attr_dict())
        # (before MLIR 22: m, n, k in the attribute dictionary)
        props.update(_split_props(attrs, ("m", "n", "k")))
        if len(props) != 3:
            parser.raise_error("amdgpu.scaled_mfma: expected MxNxK (e.g. 16x16x128) or m/n/k "
                               "attributes")
        parser.parse_punctuation(":")
        tsa, ta, tsb, tb, tc = _types(parser, 5)
        props["scalesIdxA"] = IntegerAttr(ia, i32)
        props["scalesIdxB"] = IntegerAttr(ib, i32)
        operands = [parser.resolve_operand(a, ta), parser.resolve_operand(b, tb),
                    parser.resolve_operand(c, tc), parser.resolve_operand(sa, tsa),
                    parser.resolve_operand(sb, tsb)]
        return cls.create(operands=operands, properties=props, attributes=attrs,
                          result_types=[tc])


@irdl_op_definition
class SparseMFMAOp(IRDLOperation):
    """`amdgpu.sparse_mfma 16x16x32 %a * %b + %c sparse(%idx : vector<4xi8>) : tA, tB, tC`
    (v_smfmac_*: 2:4 sparse A)."""

    name = "amdgpu.sparse_mfma"
    sourceA = operand_def()
    sourceB = operand_def()
    destC = operand_def()
    sparseIdx = operand_def()
    m = prop_def(IntegerAttr)
    n = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)
    cbsz = opt_prop_def(IntegerAttr)
    abid = opt_prop_def(IntegerAttr)
    destD = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> SparseMFMAOp:
        """`MxNxK %a * %b + %c sparse(%idx : T) attr-dict : tA, tB, tC`."""
        props = _parse_mnk(parser)
        if not props:
            parser.raise_error("amdgpu.sparse_mfma: expected MxNxK (e.g. 16x16x32)")
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation("*")
        b = parser.parse_unresolved_operand()
        parser.parse_punctuation("+")
        c = parser.parse_unresolved_operand()
        parser.parse_keyword("sparse")
        parser.parse_punctuation("(")
        idx = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        tidx = parser.parse_type()
        parser.parse_punctuation(")")
        attrs = dict(parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        ta, tb, tc = _types(parser, 3)
        props.update(_split_props(attrs, ("cbsz", "abid")))
        for key in ("cbsz", "abid"):
            props.setdefault(key, IntegerAttr(0, i32))
        operands = [parser.resolve_operand(a, ta), parser.resolve_operand(b, tb),
                    parser.resolve_operand(c, tc), parser.resolve_operand(idx, tidx)]
        return cls.create(operands=operands, properties=props, attributes=attrs,
                          result_types=[tc])


@irdl_op_definition
class GatherToLDSOp(IRDLOperation):
    """`amdgpu.gather_to_lds %src[%i], %dst[%j] : f32, memref<..>, memref<.., workgroup>`
    (global_load_lds / buffer_load ... lds)."""

    name = "amdgpu.gather_to_lds"
    src = operand_def()
    srcIndices = var_operand_def()
    dst = operand_def()
    dstIndices = var_operand_def()
    transferType = prop_def(Attribute)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def parse(cls, parser: Parser) -> GatherToLDSOp:
        """`%src[%i...], %dst[%j...] attr-dict : transferType, type(src), type(dst)`."""
        src = parser.parse_unresolved_operand()
        si = _parse_index_list(parser)
        parser.parse_punctuation(",")
        dst = parser.parse_unresolved_operand()
        di = _parse_index_list(parser)
        attrs = dict(parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        tt, ts, td = _types(parser, 3)
        operands = [[parser.resolve_operand(src, ts)],
                    [parser.resolve_operand(i, IndexType()) for i in si],
                    [parser.resolve_operand(dst, td)],
                    [parser.resolve_operand(i, IndexType()) for i in di]]
        return cls.build(operands=operands, properties={"transferType": tt},
                         attributes=attrs)


@irdl_op_definition
class TransposeLoadOp(IRDLOperation):
    """`amdgpu.transpose_load %lds[%i, %j] : memref<.., workgroup> -> vector<4xf16>`
    (gfx950 ds_read_b64_tr_b16 and its 8/4/6-bit forms)."""

    name = "amdgpu.transpose_load"
    src = operand_def()
    srcIndices = var_operand_def()
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> TransposeLoadOp:
        """`%src[%i...] attr-dict : type(src) -> type(result)`."""
        src = parser.parse_unresolved_operand()
        si = _parse_index_list(parser)
        attrs = dict(parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        ts = parser.parse_type()
        parser.parse_punctuation("->")
        tr = parser.parse_type()
        operands = [parser.resolve_operand(src, ts)] + \
            [parser.resolve_operand(i, IndexType()) for i in si]
        return cls.create(operands=operands, attributes=attrs, result_types=[tr])


@irdl_op_definition
class SwizzleBitModeOp(IRDLOperation):
    """`amdgpu.swizzle_bitmode %v 1 2 3 : f32` (ds_swizzle_b32 in bit-mask mode)."""

    name = "amdgpu.swizzle_bitmode"
    src = operand_def()
    and_mask = prop_def(IntegerAttr)
    or_mask = prop_def(IntegerAttr)
    xor_mask = prop_def(IntegerAttr)
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> SwizzleBitModeOp:
        """`%src and or xor attr-dict : type`."""
        src = parser.parse_unresolved_operand()
        props = {key: IntegerAttr(parser.parse_integer(), i32)
                 for key in ("and_mask", "or_mask", "xor_mask")}
        attrs = dict(parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.create(operands=[parser.resolve_operand(src, t)], properties=props,
                          attributes=attrs, result_types=[t])


@irdl_op_definition
class PermlaneSwapOp(IRDLOperation):
    """`amdgpu.permlane_swap %v 16 : f32` (gfx950 v_permlane16_swap / v_permlane32_swap)."""

    name = "amdgpu.permlane_swap"
    src = operand_def()
    row_length = prop_def(IntegerAttr)
    fetch_inactive = opt_prop_def(BoolAttr)
    bound_ctrl = opt_prop_def(BoolAttr)
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> PermlaneSwapOp:
        """`%src row_length attr-dict : type`."""
        src = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {"row_length": IntegerAttr(parser.parse_integer(), i32)}
        attrs = dict(parser.parse_optional_attr_dict())
        props.update(_split_props(attrs, ("fetch_inactive", "bound_ctrl")))
        for key in ("fetch_inactive", "bound_ctrl"):
            props.setdefault(key, BoolAttr.from_bool(False))
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.create(operands=[parser.resolve_operand(src, t)], properties=props,
                          attributes=attrs, result_types=[t])


_COUNTERS = ("load", "store", "ds", "exp", "tensor")


@irdl_op_definition
class MemoryCounterWaitOp(IRDLOperation):
    """`amdgpu.memory_counter_wait load(0) ds(1)`: wait for memory counters (s_waitcnt)."""

    name = "amdgpu.memory_counter_wait"
    load = opt_prop_def(IntegerAttr)
    store = opt_prop_def(IntegerAttr)
    ds = opt_prop_def(IntegerAttr)
    exp = opt_prop_def(IntegerAttr)
    tensor = opt_prop_def(IntegerAttr)

    @classmethod
    def parse(cls, parser: Parser) -> MemoryCounterWaitOp:
        """`oilist(load(N) | store(N) | ds(N) | exp(N) | tensor(N)) attr-dict`."""
        props: dict[str, Attribute] = {}
        while (word := parser.parse_optional_keyword_in(_COUNTERS)) is not None:
            parser.parse_punctuation("(")
            props[word] = IntegerAttr(parser.parse_integer(), i32)
            parser.parse_punctuation(")")
        attrs = dict(parser.parse_optional_attr_dict())
        props.update(_split_props(attrs, _COUNTERS))
        return cls.create(properties=props, attributes=attrs)


@irdl_op_definition
class ScaledExtPackedOp(IRDLOperation):
    """`amdgpu.scaled_ext_packed %v[0], %scale : vector<4xf8E4M3FN> to vector<2xf32>`
    (gfx950 v_cvt_scalef32_pk_*)."""

    name = "amdgpu.scaled_ext_packed"
    source = operand_def()
    scale = operand_def()
    index = prop_def(IntegerAttr)
    res = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> ScaledExtPackedOp:
        """`attr-dict %v [ index ] , %scale : T to T`."""
        attrs = dict(parser.parse_optional_attr_dict())
        src = parser.parse_unresolved_operand()
        index = _parse_index(parser)
        parser.parse_punctuation(",")
        scale = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        st = parser.parse_type()
        parser.parse_keyword("to")
        rt = parser.parse_type()
        return cls.create(operands=[parser.resolve_operand(src, st),
                                    parser.resolve_operand(scale, f32)],
                          properties={"index": IntegerAttr(index, i32)}, attributes=attrs,
                          result_types=[rt])


@irdl_op_definition
class PackedScaledTruncOp(IRDLOperation):
    """`amdgpu.packed_scaled_trunc %v into %e[1], %scale : vector<2xf32> to vector<4xf8..>
    into vector<4xf8..>` (gfx950 v_cvt_scalef32_pk_*_f32)."""

    name = "amdgpu.packed_scaled_trunc"
    source = operand_def()
    scale = operand_def()
    existing = opt_operand_def()
    index = prop_def(IntegerAttr)
    res = result_def()

    @classmethod
    def parse(cls, parser: Parser) -> PackedScaledTruncOp:
        """`attr-dict %v into (%e|undef)[N], %scale : T to T (into T)?`."""
        attrs = dict(parser.parse_optional_attr_dict())
        src = parser.parse_unresolved_operand()
        parser.parse_keyword("into")
        existing = _optional_operand_or_undef(parser)
        index = _parse_index(parser)
        parser.parse_punctuation(",")
        scale = parser.parse_unresolved_operand()
        st, rt, et = _parse_conversion_types(parser)
        operands = [parser.resolve_operand(src, st), parser.resolve_operand(scale, f32)]
        if existing is not None:
            operands.append(parser.resolve_operand(existing, et))
        return cls.create(operands=operands, properties={"index": IntegerAttr(index, i32)},
                          attributes=attrs, result_types=[rt])


# MLIR 22 amdgpu ops for chips other than gfx942/gfx950: parsing one is an error naming the op
# and the chips it is for (asterism targets CDNA3/CDNA4 only).
NOT_ON_CDNA = {
    "amdgpu.scaled_wmma": "gfx1250 (scaled WMMA)",
    "amdgpu.scaled_ext_packed_matrix": "gfx1250",
    "amdgpu.make_dma_base": "gfx1250 (tensor data mover)",
    "amdgpu.make_dma_descriptor": "gfx1250 (tensor data mover)",
    "amdgpu.make_gather_dma_base": "gfx1250 (tensor data mover)",
    "amdgpu.make_gather_dma_descriptor": "gfx1250 (tensor data mover)",
    "amdgpu.tensor_load_to_lds": "gfx1250 (tensor data mover)",
    "amdgpu.tensor_store_from_lds": "gfx1250 (tensor data mover)",
}


AMDGPU_OPS = [MFMAOp, WMMAOp, RawBufferLoadOp, RawBufferStoreOp, RawBufferAtomicFaddOp,
              RawBufferAtomicFmaxOp, RawBufferAtomicSmaxOp, RawBufferAtomicUminOp,
              RawBufferAtomicCmpswapOp, DPPOp, LDSBarrierOp, SchedBarrierOp, ExtPackedFp8Op,
              PackedTrunc2xFp8Op, PackedStochRoundFp8Op, FatRawBufferCastOp, ScaledMFMAOp,
              SparseMFMAOp, GatherToLDSOp, TransposeLoadOp, SwizzleBitModeOp, PermlaneSwapOp,
              MemoryCounterWaitOp, ScaledExtPackedOp, PackedScaledTruncOp]

AMDGPU = Dialect("amdgpu", AMDGPU_OPS, [DPPPermAttr, MFMAPermBAttr, AmdgpuAddressSpaceAttr,
                                        SchedBarrierOptAttr])

__all__ = ["AMDGPU", "AMDGPU_OPS", "NOT_ON_CDNA", "opt_result_def"]
