"""Operations of the `amdgcn` dialect.

Instruction ops (one per encoding family of the ISA database) are destination-passing: the
destination registers are operands and the op returns them, as new SSA values of the same
types, followed by a `!amdgcn.token` for memory instructions. Operands follow the database
form's assembly order; which mnemonics and operand shapes an op accepts is checked against
the ISA database of the module's target by `asterism.ir.verify`, not here.

Custom assembly format of an instruction op::

    %r = amdgcn.vop2 v_add_u32 %dst, %c1, %src : (!amdgcn.vgpr<1>, i32, !amdgcn.vgpr<0>)
           -> !amdgcn.vgpr<1>
    %d, %t = amdgcn.global global_load_dword %dst, %addr, %base offset = 16 sc0 : (...) -> (...)
    amdgcn.sopp s_waitcnt vmcnt = 0 lgkmcnt = 0
    amdgcn.wait %t                      // resolved into s_waitcnt by the waits pass

Modifiers follow the operands as `name` (flags) or `name = value` (integers, `[0, 1]` bit
lists, names); their names are the MC layer's (see `asterism.mc.inst`) plus `neg`/`abs`/
`sext` (per-source input modifiers, bit lists by source position) and the s_waitcnt counters
`vmcnt`/`expcnt`/`lgkmcnt`.
"""

from __future__ import annotations

import io
import weakref
from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from typing import ClassVar

from xdsl.dialects.builtin import (
    UNKNOWN_LOC,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FileLineColLoc,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    i32,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    OpResult,
    Region,
    SSAValue,
    SSAValues,
    Use,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    successor_def,
    traits_def,
    var_operand_def,
    var_result_def,
    var_successor_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.mlir_lexer import MLIRTokenKind

from asterism.errors import SourceLocation
from asterism.ir.types import (
    KernelArgAttr,
    OffType,
    RegisterType,
    SGPRType,
    SpecialRegType,
    TokenType,
    VGPRType,
    kernel_arg_text,
    parse_kernel_arg,
    type_text,
)

# --- modifiers ------------------------------------------------------------------------------

FLAG_MODIFIERS = frozenset({
    "clamp", "gds", "sc0", "sc1", "nt", "glc", "slc", "nv", "offen", "idxen", "lds",
    "bound_ctrl", "fi"})
INT_MODIFIERS = frozenset({
    "omod", "offset", "offset0", "offset1", "cbsz", "abid", "blgp", "row_mask", "bank_mask",
    "dpp_ctrl", "format", "vmcnt", "expcnt", "lgkmcnt"})
LIST_MODIFIERS = frozenset({"op_sel", "op_sel_hi", "neg_lo", "neg_hi", "neg", "abs", "sext"})
NAME_MODIFIERS = frozenset({"dst_sel", "dst_unused", "src0_sel", "src1_sel"})
MODIFIER_NAMES = FLAG_MODIFIERS | INT_MODIFIERS | LIST_MODIFIERS | NAME_MODIFIERS

ModValue = bool | int | tuple[int, ...] | str

# Marks "keep order" spans on instruction ops: ops with the same string value form one span
# per block that the scheduler moves nothing across (written by the builder's
# `kb.keep_order()`, read by asterism.passes.schedule).
KEEP_ORDER_ATTR = "sched.keep_order"
# Marks an LDS DMA load (`buffer_load ... lds`) whose completion the program orders with
# explicit `amdgcn.wait` tokens only: the waits pass leaves it out of its implicit LDS rules
# (written by the builder's `kb.tokens_only(tok)`, read by asterism.passes.waits).
LDS_DMA_TOKENS_ATTR = "waits.tokens_only"


def modifiers_to_attr(mods: Mapping[str, ModValue]) -> DictionaryAttr:
    """Encode Python modifier values (flag True, int, bit tuple, name) as a dictionary."""
    out: dict[str, Attribute] = {}
    for name, value in mods.items():
        if value is True:
            out[name] = UnitAttr()
        elif value is False or value is None:
            continue
        elif isinstance(value, int):
            out[name] = IntegerAttr(value, i32)
        elif isinstance(value, str):
            out[name] = StringAttr(value)
        else:
            out[name] = ArrayAttr([IntegerAttr(int(v), i32) for v in value])
    return DictionaryAttr(out)


def _modifiers_attr(mods: Mapping[str, ModValue]) -> DictionaryAttr:
    """modifiers_to_attr, one attribute per set of modifiers (attributes are immutable; a
    kernel repeats a few sets, and building one verifies every entry)."""
    # (the types are part of the key: True == 1 and (1,) == (True,) in Python)
    key = tuple((name, type(v), tuple(map(type, v)) if type(v) is tuple else (), v)
                for name, v in mods.items())
    try:
        attr = _MODIFIER_ATTRS.get(key)
    except TypeError:  # (an unhashable value: not shared)
        return modifiers_to_attr(mods)
    if attr is None:
        attr = modifiers_to_attr(mods)
        if len(_MODIFIER_ATTRS) < _SHARED_LIMIT:
            _MODIFIER_ATTRS[key] = attr
    return attr


def _mnemonic_attr(mnemonic: str) -> StringAttr:
    attr = _MNEMONIC_ATTRS.get(mnemonic)
    if attr is None:
        attr = StringAttr(mnemonic)
        if len(_MNEMONIC_ATTRS) < _SHARED_LIMIT:
            _MNEMONIC_ATTRS[mnemonic] = attr
    return attr


_SHARED_LIMIT = 1 << 16
_MODIFIER_ATTRS: dict[tuple, DictionaryAttr] = {}
_MNEMONIC_ATTRS: dict[str, StringAttr] = {}


def attr_to_modifiers(attr: DictionaryAttr | None) -> dict[str, ModValue]:
    """Decode a modifier dictionary into Python values (see `modifiers_to_attr`)."""
    if attr is None:
        return {}
    out: dict[str, ModValue] = {}
    for name, value in attr.data.items():
        if isinstance(value, UnitAttr):
            out[name] = True
        elif isinstance(value, IntegerAttr):
            out[name] = value.value.data
        elif isinstance(value, StringAttr):
            out[name] = value.data
        elif isinstance(value, ArrayAttr):
            out[name] = tuple(
                v.value.data if isinstance(v, IntegerAttr) else int(getattr(v, "data", 0))
                for v in value.data)
        elif isinstance(value, IntAttr):
            out[name] = value.data
        else:
            # An attribute of a kind no modifier uses: keep it visible to the verifier.
            out[name] = f"<{value}>"
    return out


_AFTER_OPERANDS = (MLIRTokenKind.BARE_IDENT, MLIRTokenKind.L_BRACE, MLIRTokenKind.COLON)


def _current(parser: Parser):
    return parser._current_token


def _parse_modifiers(parser: Parser) -> dict[str, ModValue]:
    """Parse `name` / `name = value` pairs until something that is not a modifier."""
    mods: dict[str, ModValue] = {}
    while True:
        tok = _current(parser)
        if tok.kind != MLIRTokenKind.BARE_IDENT or "." in tok.text:
            return mods
        name = tok.text
        if name not in MODIFIER_NAMES:
            parser.raise_error(
                f"unknown modifier '{name}'; modifiers are: {', '.join(sorted(MODIFIER_NAMES))}")
        parser.parse_identifier()
        if name in mods:
            parser.raise_error(f"modifier '{name}' given twice")
        if parser.parse_optional_punctuation("=") is None:
            if name not in FLAG_MODIFIERS:
                parser.raise_error(f"modifier '{name}' needs a value: {name} = ...")
            mods[name] = True
            continue
        if parser.parse_optional_punctuation("[") is not None:
            values: list[int] = []
            if parser.parse_optional_punctuation("]") is None:
                values.append(parser.parse_integer())
                while parser.parse_optional_punctuation(",") is not None:
                    values.append(parser.parse_integer())
                parser.parse_punctuation("]")
            mods[name] = tuple(values)
            continue
        if (b := parser.parse_optional_boolean()) is not None:
            mods[name] = b
            continue
        if (i := parser.parse_optional_integer(allow_boolean=False)) is not None:
            mods[name] = i
            continue
        mods[name] = parser.parse_identifier_or_str_literal(f" (value of modifier '{name}')")


def _print_modifiers(printer: Printer, mods: Mapping[str, ModValue]) -> None:
    for name, value in mods.items():
        printer.print_string(" ")
        if value is True:
            printer.print_string(name)
        elif isinstance(value, bool):
            printer.print_string(f"{name} = {'true' if value else 'false'}")
        elif isinstance(value, int):
            printer.print_string(f"{name} = {value}")
        elif isinstance(value, tuple):
            printer.print_string(f"{name} = [{', '.join(str(v) for v in value)}]")
        else:
            printer.print_string(f"{name} = ")
            printer.print_identifier_or_string_literal(str(value))


def _parse_type_signature(parser: Parser, n_operands: int) -> tuple[list[Attribute],
                                                                      list[Attribute]]:
    """`: (types) -> type | (types)`, optional when there are no operands and no results."""
    if parser.parse_optional_punctuation(":") is None:
        if n_operands:
            parser.raise_error("expected ':' and the operand types")
        return [], []
    ftype = parser.parse_function_type()
    return list(ftype.inputs.data), list(ftype.outputs.data)


# Printed type signatures (" : (...) -> ..."): by the identities of their types (the entry
# keeps the types alive, so an id is never another object's), and by value.
_SIGNATURES_BY_ID: dict[tuple[int, ...], tuple[tuple[Attribute, ...], str]] = {}
_SIGNATURES: dict[tuple[tuple[Attribute, ...], tuple[Attribute, ...]], str] = {}
_SIGNATURES_LIMIT = 10_000  # distinct signatures kept (a kernel has a few hundred)


def _signature_text(inputs: list[Attribute], outputs: list[Attribute]) -> str:
    """` : (inputs) -> outputs` as xDSL's printer writes it. (The text depends on the types
    only: xDSL's generic attribute printer is most of the cost of printing an instruction
    op, and a kernel repeats a few hundred signatures thousands of times.)"""
    types = (*inputs, None, *outputs)  # (None: where the inputs end)
    ids = tuple(map(id, types))
    hit = _SIGNATURES_BY_ID.get(ids)
    if hit is not None:
        return hit[1]
    key = (tuple(inputs), tuple(outputs))
    text = _SIGNATURES.get(key)
    if text is None:
        out = io.StringIO()
        Printer(stream=out).print_function_type(inputs, outputs)
        text = " : " + out.getvalue()
        if len(_SIGNATURES) >= _SIGNATURES_LIMIT:
            _SIGNATURES.clear()
        _SIGNATURES[key] = text
    if len(_SIGNATURES_BY_ID) >= _SIGNATURES_LIMIT:
        _SIGNATURES_BY_ID.clear()
    _SIGNATURES_BY_ID[ids] = (types, text)
    return text


def _print_type_signature(printer: Printer, inputs: Sequence[Attribute],
                          outputs: Sequence[Attribute]) -> None:
    if not inputs and not outputs:
        return
    printer.print_string(_signature_text(list(inputs), list(outputs)))


# --- instruction ops ------------------------------------------------------------------------


class InstructionOp(IRDLOperation):
    """Base of the instruction ops: a mnemonic, operands in database order, modifiers."""

    FAMILY: ClassVar[str] = ""
    ENCODINGS: ClassVar[tuple[str, ...]] = ()

    mnemonic = prop_def(StringAttr)
    modifiers = opt_prop_def(DictionaryAttr)
    args = var_operand_def()
    outs = var_result_def()

    def __init__(self, mnemonic: str, operands: Sequence[SSAValue],
                 result_types: Sequence[Attribute],
                 modifiers: Mapping[str, ModValue] | None = None,
                 attributes: Mapping[str, Attribute] | None = None):
        props: dict[str, Attribute] = {"mnemonic": _mnemonic_attr(mnemonic)}
        if modifiers:
            props["modifiers"] = _modifiers_attr(modifiers)
        # (what IRDLOperation.__init__ ends in: one variadic operand and one variadic result
        # group need no segment sizes, and its generic argument building is most of the cost
        # of making an op)
        _init_plain(self, list(operands), result_types, props, dict(attributes or {}))

    @property
    def mnemonic_text(self) -> str:
        """The mnemonic as written (with its suffix, if any)."""
        return self.mnemonic.data

    @property
    def mods(self) -> dict[str, ModValue]:
        """The modifiers as Python values."""
        return attr_to_modifiers(self.modifiers)

    @property
    def token(self) -> SSAValue | None:
        """The completion token result, if the instruction returns one."""
        results = self.results  # (all of them are `outs`: the op's only result group)
        if results and isinstance(results[-1].type, TokenType):
            return results[-1]
        return None

    @classmethod
    def parse(cls, parser: Parser):
        mnemonic = parser.parse_identifier(" (instruction mnemonic)")
        pos = parser.pos
        unresolved: list[UnresolvedOperand] = []
        first = parser.parse_optional_unresolved_operand()
        if first is not None:
            unresolved.append(first)
            while parser.parse_optional_punctuation(",") is not None:
                unresolved.append(parser.parse_unresolved_operand())
            if _current(parser).kind not in _AFTER_OPERANDS:
                # Operands are always followed by modifiers, attributes or ':' types; what we
                # read were the results of the next op (`%a = ...`): this op has no operands.
                parser._resume_from(pos)
                unresolved = []
        mods = _parse_modifiers(parser)
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_type_signature(parser, len(unresolved))
        operands = parser.resolve_operands(unresolved, inputs, pos)
        return cls(mnemonic, operands, outputs, mods, attrs)

    def print(self, printer: Printer) -> None:
        operands = self._operands  # (all of them are `args`, all results are `outs`)
        mods = self.mods
        line = None if self.attributes else _instruction_line(printer, self, operands, mods)
        if line is not None:
            printer.print_string(line)
            return
        printer.print_string(f" {self.mnemonic.data}")
        if operands:
            printer.print_string(" ")
            printer.print_list(operands, printer.print_operand)
        _print_modifiers(printer, mods)
        if self.attributes:
            printer.print_op_attributes(self.attributes)
        _print_type_signature(printer, [a.type for a in operands],
                              [r.type for r in self.results])


def _instruction_line(printer: Printer, op: InstructionOp, operands: Sequence[SSAValue],
                      mods: Mapping[str, ModValue]) -> str | None:
    """The text InstructionOp.print writes for `op` (no attributes) as one string, or None
    when a piece needs the printer itself (an operand it has not named yet, a modifier
    written as an identifier or string). (One call into the printer instead of one per
    piece: printing a raised kernel is mostly these lines.)"""
    names = getattr(printer, "_ssa_values", None)  # (xDSL's value -> name of the printer)
    if names is None:
        return None
    parts = [" ", op.mnemonic.data]
    for k, value in enumerate(operands):
        name = names.get(value)
        if name is None:
            return None
        parts.append(", %" if k else " %")
        parts.append(name)
    for name, value in mods.items():
        if value is True:
            parts.append(f" {name}")
        elif isinstance(value, bool):
            parts.append(f" {name} = {'true' if value else 'false'}")
        elif isinstance(value, int):
            parts.append(f" {name} = {value}")
        elif isinstance(value, tuple):
            parts.append(f" {name} = [{', '.join(str(v) for v in value)}]")
        else:
            return None
    if operands or op.results:
        parts.append(_signature_text([a.type for a in operands],
                                     [r.type for r in op.results]))
    return "".join(parts)


def _family(name: str, encodings: tuple[str, ...], doc: str) -> type[InstructionOp]:
    cls = type(f"{name.upper()}Op", (InstructionOp,), {
        "name": f"amdgcn.{name}", "FAMILY": name, "ENCODINGS": encodings, "__doc__": doc,
        "__module__": __name__,
        "__annotations__": {"FAMILY": ClassVar[str], "ENCODINGS": ClassVar[tuple[str, ...]]}})
    return irdl_op_definition(cls)


SOP1Op = _family("sop1", ("SOP1",), "Scalar ALU, one source (s_mov_b32, s_getpc_b64...).")
SOP2Op = _family("sop2", ("SOP2",), "Scalar ALU, two sources (s_add_u32, s_lshl_b32...).")
SOPKOp = _family("sopk", ("SOPK",), "Scalar ALU with a 16-bit immediate (s_movk_i32...).")
SOPCOp = _family("sopc", ("SOPC",), "Scalar compare writing SCC (s_cmp_eq_u32...).")
SOPPOp = _family("sopp", ("SOPP",), "Scalar program control (s_waitcnt, s_nop, s_barrier...).")
SMEMOp = _family("smem", ("SMEM",), "Scalar memory (s_load_dword*, s_store_dword*...).")
VOP1Op = _family("vop1", ("VOP1",), "Vector ALU, one source, 32-bit encoding (_e32).")
VOP2Op = _family("vop2", ("VOP2",), "Vector ALU, two sources, 32-bit encoding (_e32).")
VOPCOp = _family("vopc", ("VOPC",), "Vector compare writing VCC, 32-bit encoding (_e32).")
VOP3Op = _family("vop3", ("VOP3",), "Vector ALU, 64-bit encoding (_e64 and VOP3-only ops).")
VOP3POp = _family("vop3p", ("VOP3P",), "Packed vector ALU (v_pk_*, dot products).")
MAIOp = _family("mai", ("MAI", "MAI_SCALE"), "Matrix instructions (v_mfma_*, v_accvgpr_*).")
DSOp = _family("ds", ("DS",), "LDS / GDS instructions (ds_read_*, ds_write_*...).")
FLATOp = _family("flat", ("FLAT",), "FLAT (generic address) memory instructions.")
GLOBALOp = _family("global", ("GLOBAL",), "GLOBAL memory instructions.")
SCRATCHOp = _family("scratch", ("SCRATCH",), "SCRATCH (private) memory instructions.")
MUBUFOp = _family("mubuf", ("MUBUF",), "Untyped buffer memory instructions (buffer_*).")
MTBUFOp = _family("mtbuf", ("MTBUF",), "Typed buffer memory instructions (tbuffer_*).")
DPPOp = _family("dpp", ("DPP",), "VOP1/VOP2 with data-parallel primitives (_dpp).")
SDWAOp = _family("sdwa", ("SDWA",), "VOP1/VOP2/VOPC with sub-dword addressing (_sdwa).")

INSTRUCTION_OPS: tuple[type[InstructionOp], ...] = (
    SOP1Op, SOP2Op, SOPKOp, SOPCOp, SOPPOp, SMEMOp, VOP1Op, VOP2Op, VOPCOp, VOP3Op, VOP3POp,
    MAIOp, DSOp, FLATOp, GLOBALOp, SCRATCHOp, MUBUFOp, MTBUFOp, DPPOp, SDWAOp)
OP_FOR_ENCODING: dict[str, type[InstructionOp]] = {
    enc: cls for cls in INSTRUCTION_OPS for enc in cls.ENCODINGS}


@irdl_op_definition
class BranchOp(IRDLOperation):
    """A branch instruction (s_branch, s_cbranch_*): `amdgcn.branch s_branch ^target` or
    `amdgcn.branch s_cbranch_scc1 ^target fallthrough ^next` (the fall-through block must be
    the next block)."""

    name = "amdgcn.branch"

    mnemonic = prop_def(StringAttr)
    targets = var_successor_def()

    traits = traits_def(IsTerminator())

    def __init__(self, mnemonic: str, target: Block, fallthrough: Block | None = None):
        succ = [target] if fallthrough is None else [target, fallthrough]
        super().__init__(properties={"mnemonic": StringAttr(mnemonic)}, successors=[succ])

    @property
    def mnemonic_text(self) -> str:
        """The mnemonic as written."""
        return self.mnemonic.data

    @property
    def target(self) -> Block:
        """The block jumped to."""
        return self.targets[0]

    @property
    def fallthrough(self) -> Block | None:
        """The block reached when a conditional branch is not taken."""
        return self.targets[1] if len(self.targets) > 1 else None

    @classmethod
    def parse(cls, parser: Parser) -> BranchOp:
        mnemonic = parser.parse_identifier(" (branch mnemonic)")
        target = parser.parse_successor()
        fallthrough = None
        if parser.parse_optional_keyword("fallthrough") is not None:
            fallthrough = parser.parse_successor()
        op = cls(mnemonic, target, fallthrough)
        if attrs := parser.parse_optional_attr_dict():
            op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.mnemonic.data} ")
        printer.print_block_name(self.target)
        if self.fallthrough is not None:
            printer.print_string(" fallthrough ")
            printer.print_block_name(self.fallthrough)
        if self.attributes:
            printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        if len(self.targets) not in (1, 2):
            raise VerifyException("amdgcn.branch takes a target and an optional fall-through")


@irdl_op_definition
class FallthroughOp(IRDLOperation):
    """Ends a block that falls through into the next one; emits no instruction."""

    name = "amdgcn.fallthrough"

    dest = successor_def()

    traits = traits_def(IsTerminator())
    assembly_format = "$dest attr-dict"

    def __init__(self, dest: Block):
        super().__init__(successors=[dest])


@irdl_op_definition
class EndKernelOp(IRDLOperation):
    """`s_endpgm` as a block terminator (needed when the kernel has several blocks); takes
    the instruction's optional immediate as an optional operand."""

    name = "amdgcn.end_kernel"

    imm = opt_operand_def(IntegerType)
    traits = traits_def(IsTerminator())
    assembly_format = "($imm^ `:` type($imm))? attr-dict"

    def __init__(self, imm: SSAValue | None = None):
        super().__init__(operands=[imm])


@irdl_op_definition
class WaitOp(IRDLOperation):
    """`amdgcn.wait %t1, %t2`: the results of the memory instructions that returned these
    tokens must be available here (and their stores complete).

    The op says *what* to wait for, not how: the waits pass (`--pipeline waits`) replaces it
    by the minimal `s_waitcnt` for the operations still in flight at this point (or by
    nothing when they are all complete). Lowering an unresolved wait is an error.
    """

    name = "amdgcn.wait"

    tokens = var_operand_def(TokenType)

    def __init__(self, tokens: Sequence[SSAValue]):
        super().__init__(operands=[list(tokens)])

    @classmethod
    def parse(cls, parser: Parser) -> WaitOp:
        pos = parser.pos
        first = parser.parse_optional_unresolved_operand()
        if first is None:
            parser.raise_error("amdgcn.wait names the tokens to wait for: amdgcn.wait %tok, ...")
        unresolved = [first]
        while parser.parse_optional_punctuation(",") is not None:
            unresolved.append(parser.parse_unresolved_operand())
        # Every operand is a token: the types are implied and not written.
        operands = parser.resolve_operands(unresolved, [TokenType()] * len(unresolved), pos)
        op = cls(operands)
        if attrs := parser.parse_optional_attr_dict():
            op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.tokens, printer.print_operand)
        if self.attributes:
            printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        if not self.tokens:
            raise VerifyException("amdgcn.wait names at least one token (the result of a "
                                  "memory instruction)")


# --- values ---------------------------------------------------------------------------------


@irdl_op_definition
class AllocaOp(IRDLOperation):
    """Introduces a register value (fixed or relocatable) to be used as a destination:
    `%r = amdgcn.alloca : !amdgcn.vgpr<[? + 4]>`."""

    name = "amdgcn.alloca"

    result = result_def()
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, type_: Attribute):
        _init_plain(self, (), (type_,), {}, {})  # (see InstructionOp.__init__)

    def verify_(self) -> None:
        if not isinstance(self.result.type, RegisterType | SpecialRegType):
            raise VerifyException("amdgcn.alloca makes register values (vgpr, agpr, sgpr, "
                                  "special)")


@irdl_op_definition
class OffOp(IRDLOperation):
    """The `off` operand placeholder: `%off = amdgcn.off`."""

    name = "amdgcn.off"

    result = result_def(OffType)
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[OffType()])


@irdl_op_definition
class LiteralOp(IRDLOperation):
    """A 32-bit literal given by its bits (printed in hex in the assembly):
    `%l = amdgcn.literal 0x3f800000`."""

    name = "amdgcn.literal"

    bits = prop_def(IntegerAttr)
    result = result_def(IntegerType)

    def __init__(self, bits: int):
        super().__init__(properties={"bits": IntegerAttr(bits & 0xFFFFFFFF, IntegerType(64))},
                         result_types=[i32])

    @property
    def value(self) -> int:
        """The literal's bits."""
        return self.bits.value.data

    @classmethod
    def parse(cls, parser: Parser) -> LiteralOp:
        pos = parser.pos
        bits = parser.parse_integer(allow_negative=False, context_msg=" (literal bits)")
        if bits > 0xFFFFFFFF:
            parser.raise_error("a literal is 32 bits", pos, parser.pos)
        return cls(bits)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" 0x{self.value:x}")


# --- sub-register views ---------------------------------------------------------------------
#
# A register range and its pieces are the same registers: `amdgcn.split_register_range` gives
# a range's registers (or sub-ranges) as separate values, `amdgcn.make_register_range` gives
# values whose registers are consecutive as one range. Neither emits an instruction; they say
# which registers coincide, and the register allocator places the values accordingly.


def combine_alignment(mod: int, res: int, align: int, want: int) -> tuple[int, int] | None:
    """Intersect `first % mod == res` with `first % align == want` (powers of two): the
    combined (mod, res), or None if no register index satisfies both."""
    if align <= mod:
        return (mod, res) if res % align == want % align else None
    return (align, want % align) if want % mod == res else None


def implied_alignment(align: int, offset: int, width: int) -> int:
    """The alignment a piece of `width` registers at `offset` of a range aligned to `align`
    is guaranteed (capped at the piece's width rounded down to a power of two)."""
    a = align if offset == 0 else min(align, offset & -offset)
    return max(1, min(a, 1 << (width.bit_length() - 1)))


def split_types(source: RegisterType, sizes: Sequence[int] | None = None) -> list[RegisterType]:
    """The types of the pieces of `source` (single registers by default): fixed at their
    registers for a fixed range, relocatable with the implied alignment otherwise."""
    sizes = [1] * source.width if sizes is None else list(sizes)
    out: list[RegisterType] = []
    cls, offset = type(source), 0
    for n in sizes:
        if source.is_fixed:
            out.append(cls(source.first + offset, n))
        else:
            out.append(cls.relocatable(n, implied_alignment(source.alignment, offset, n)))
        offset += n
    return out


def join_type(parts: Sequence[RegisterType], align: int = 1) -> RegisterType:
    """The range type of consecutive `parts`: fixed when they all are, else relocatable."""
    cls = type(parts[0])
    width = sum(t.width for t in parts)
    if all(t.is_fixed for t in parts):
        return cls(parts[0].first, width)
    return cls.relocatable(width, align)


def _register_types(values, what: str) -> list[RegisterType]:
    types = []
    for k, v in enumerate(values):
        t = v.type if isinstance(v, SSAValue) else v
        if not isinstance(t, RegisterType):
            raise VerifyException(f"{what} #{k} is {t}: only VGPR, AGPR and SGPR values "
                                  "(and ranges) have sub-registers")
        types.append(t)
    return types


def _same_file(types: Sequence[RegisterType], names: Sequence[str]) -> None:
    first = types[0]
    for t, name in zip(types, names):
        if type(t) is not type(first):
            raise VerifyException(
                f"{name} is {_an(t.FILE_NAME)} value but {names[0]} is {_an(first.FILE_NAME)} "
                "value: "
                "a register range lies in one register file (v, a or s)")


def _an(word: str) -> str:
    return f"{'an' if word[0] in 'AEFHILMNORSX' else 'a'} {word}"


def _parse_view_types(parser: Parser) -> tuple[list[Attribute], list[Attribute] | None]:
    """`: t, t, ... [-> t, t, ...]`."""
    parser.parse_punctuation(":")
    inputs = [parser.parse_type()]
    while parser.parse_optional_punctuation(",") is not None:
        inputs.append(parser.parse_type())
    outputs = None
    if parser.parse_optional_punctuation("->") is not None:
        outputs = [parser.parse_type()]
        while parser.parse_optional_punctuation(",") is not None:
            outputs.append(parser.parse_type())
    return inputs, outputs


def _print_types(printer: Printer, types: Sequence[Attribute]) -> None:
    printer.print_list(types, printer.print_attribute)


@irdl_op_definition
class SplitRegisterRangeOp(IRDLOperation):
    """The registers of a range as separate values (no instruction is emitted): result i is
    register `first + i` of the range, or, with explicit result types, the next sub-range::

        %c0, %c1, %c2, %c3 = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4>
        %lo, %hi = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4>
                     -> !amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr<[? + 2], align 2>

    The pieces of a fixed range are fixed (`!amdgcn.vgpr<[4:8]>` -> `!amdgcn.vgpr<4>` ...
    `!amdgcn.vgpr<7>`), those of a relocatable range relocatable, with at most the alignment
    their offset keeps. A piece is the same register as the range: reading it reads that
    register, writing it (as an instruction's destination) writes only that register.
    """

    name = "amdgcn.split_register_range"

    source = operand_def()
    pieces = var_result_def()

    def __init__(self, source: SSAValue, result_types: Sequence[Attribute] | None = None):
        if result_types is None:
            result_types = split_types(source.type)  # type: ignore[arg-type]
        super().__init__(operands=[source], result_types=[list(result_types)])

    @property
    def offsets(self) -> list[int]:
        """The register offset of each result in the range."""
        out, k = [], 0
        for r in self.pieces:
            out.append(k)
            k += r.type.width if isinstance(r.type, RegisterType) else 1
        return out

    @classmethod
    def parse(cls, parser: Parser) -> SplitRegisterRangeOp:
        pos = parser.pos
        unresolved = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        tpos = parser.pos
        inputs, outputs = _parse_view_types(parser)
        if len(inputs) != 1:
            parser.raise_error("amdgcn.split_register_range takes one range: "
                               "`: !amdgcn.vgpr<[? + 4]>` (and `-> piece types` for "
                               "sub-ranges)", tpos, parser.pos)
        source = parser.resolve_operand(unresolved, inputs[0])
        if outputs is None:
            if not isinstance(inputs[0], RegisterType):
                parser.raise_error("the split operand is a register range", pos, parser.pos)
            outputs = split_types(inputs[0])
        op = cls(source, outputs)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        if self.attributes:
            printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        src = self.source.type
        types = [r.type for r in self.pieces]
        if not isinstance(src, RegisterType) or types != split_types(src):
            printer.print_string(" -> ")
            _print_types(printer, types)

    def verify_(self) -> None:
        (src,) = _register_types([self.source], "the operand")
        if not self.pieces:
            raise VerifyException("amdgcn.split_register_range has at least one result")
        types = _register_types(self.pieces, "result")
        _same_file([src, *types], ["the range", *(f"result #{k}" for k in range(len(types)))])
        total = sum(t.width for t in types)
        if total != src.width:
            raise VerifyException(
                f"the results cover {total} registers ({' + '.join(str(t.width) for t in types)})"
                f" but the range {type_text(src)} has {src.width}")
        offset = 0
        for k, t in enumerate(types):
            if src.is_fixed:
                want = type(src)(src.first + offset, t.width)
                if not t.is_fixed or t.first != src.first + offset:
                    raise VerifyException(
                        f"result #{k} is register{'s' if t.width > 1 else ''} {offset}"
                        f"{'' if t.width == 1 else f'..{offset + t.width - 1}'} of "
                        f"{src.asm()}: its type is {type_text(want)}, not {type_text(t)}")
            elif t.is_fixed:
                raise VerifyException(
                    f"result #{k} has the fixed type {type_text(t)} but the range "
                    f"{type_text(src)} is relocatable: its pieces are relocatable too (the "
                    "register allocator places them with the range)")
            elif offset % t.alignment or t.alignment > src.alignment:
                raise VerifyException(
                    f"result #{k} ({type_text(t)}) starts at register {offset} of a range "
                    f"aligned to {src.alignment}: it is misaligned (at most align "
                    f"{implied_alignment(src.alignment, offset, t.width)} follows from the "
                    "range's alignment)")
            offset += t.width


@irdl_op_definition
class MakeRegisterRangeOp(IRDLOperation):
    """One range made of values whose registers are consecutive (no instruction is
    emitted): operand k is the range's registers from the sum of the earlier operands'
    widths::

        %r = amdgcn.make_register_range %x0, %x1, %x2, %x3
               : !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr
        %p = amdgcn.make_register_range %lo, %hi : !amdgcn.vgpr, !amdgcn.vgpr
               -> !amdgcn.vgpr<[? + 2], align 2>

    The result type is implied (fixed when every operand is, else `[? + N]`) unless written
    after `->`. Fixed operands must be consecutive and agree with a fixed result; relocatable
    ones are placed there by the register allocator, which copies an operand that cannot be
    (because it is needed elsewhere at the same time, or already sits in another range).
    """

    name = "amdgcn.make_register_range"

    parts = var_operand_def()
    result = result_def()

    def __init__(self, parts: Sequence[SSAValue], result_type: Attribute | None = None):
        if result_type is None:
            result_type = join_type([p.type for p in parts])  # type: ignore[misc]
        super().__init__(operands=[list(parts)], result_types=[result_type])

    @property
    def offsets(self) -> list[int]:
        """The register offset of each operand in the result."""
        out, k = [], 0
        for p in self.parts:
            out.append(k)
            k += p.type.width if isinstance(p.type, RegisterType) else 1
        return out

    @classmethod
    def parse(cls, parser: Parser) -> MakeRegisterRangeOp:
        pos = parser.pos
        unresolved = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(",") is not None:
            unresolved.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        tpos = parser.pos
        inputs, outputs = _parse_view_types(parser)
        operands = parser.resolve_operands(unresolved, inputs, pos)
        if outputs is not None and len(outputs) != 1:
            parser.raise_error("amdgcn.make_register_range has one result type", tpos,
                               parser.pos)
        if outputs is None:
            if not all(isinstance(t, RegisterType) for t in inputs):
                parser.raise_error("the operands of amdgcn.make_register_range are registers",
                                   tpos, parser.pos)
            outputs = [join_type(inputs)]  # type: ignore[arg-type]
        op = cls(operands, outputs[0])
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.parts, printer.print_operand)
        if self.attributes:
            printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        types = [p.type for p in self.parts]
        _print_types(printer, types)
        implied = None
        if types and all(isinstance(t, RegisterType) for t in types) and \
                len({type(t) for t in types}) == 1:
            implied = join_type(types)  # type: ignore[arg-type]
        if self.result.type != implied:
            printer.print_string(" -> ")
            printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        if not self.parts:
            raise VerifyException("amdgcn.make_register_range takes at least one operand")
        types = _register_types(self.parts, "operand")
        (res,) = _register_types([self.result], "the result")
        _same_file([*types, res], [*(f"operand #{k}" for k in range(len(types))),
                                   "the result"])
        total = sum(t.width for t in types)
        if total != res.width:
            raise VerifyException(
                f"the operands have {total} registers ({' + '.join(str(t.width) for t in types)})"
                f" but the result {type_text(res)} has {res.width}")
        offsets = self.offsets
        base, base_from = (res.first, f"the result ({res.asm()})") if res.is_fixed else \
            (None, "")
        for k, (t, o) in enumerate(zip(types, offsets)):
            if not t.is_fixed:
                continue
            if base is None:
                if t.first < o:
                    raise VerifyException(
                        f"operand #{k} is {t.asm()} at register {o} of the range: the range "
                        "would start below register 0")
                base, base_from = t.first - o, f"operand #{k} ({t.asm()})"
            elif t.first - o != base:
                raise VerifyException(
                    f"operand #{k} is {t.asm()} but must start at {t.KIND}{base + o} to "
                    f"follow {base_from}: fixed registers that are not consecutive cannot "
                    "form a range")
        if all(t.is_fixed for t in types) and not res.is_fixed:
            raise VerifyException(
                f"every operand is fixed, so the result is {type_text(join_type(types))}, "
                f"not {type_text(res)}")
        mod, rem = res.alignment, 0
        for k, (t, o) in enumerate(zip(types, offsets)):
            if t.is_fixed:
                continue
            combined = combine_alignment(mod, rem, t.alignment, -o)
            if combined is None:
                raise VerifyException(
                    f"operand #{k} ({type_text(t)}) is misaligned: it starts at register {o} "
                    f"of the range, which the alignments of the result ({res.alignment}) and "
                    "of the earlier operands do not allow")
            mod, rem = combined
        if base is not None and base % mod != rem:
            raise VerifyException(
                f"the range starts at {res.KIND}{base} ({base_from}), which the alignment of "
                "the result and of the relocatable operands does not allow")


class _AbiValueOp(IRDLOperation):
    """Base of the ops naming a dispatch-ABI input register."""

    ABI_NAME: ClassVar[str] = ""
    result = result_def()
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, type_: Attribute):
        super().__init__(result_types=[type_])

    def verify_(self) -> None:
        if not isinstance(self.result.type, SGPRType):
            raise VerifyException(f"{self.name} arrives in an SGPR pair: its type is "
                                  "!amdgcn.sgpr<[N:N+2]> (or !amdgcn.sgpr<[? + 2]>)")


@irdl_op_definition
class KernargPtrOp(_AbiValueOp):
    """The kernel argument segment pointer (user SGPR pair)."""

    name = "amdgcn.kernarg_ptr"
    ABI_NAME: ClassVar[str] = "kernarg_ptr"


@irdl_op_definition
class DispatchPtrOp(_AbiValueOp):
    """The dispatch packet pointer (user SGPR pair)."""

    name = "amdgcn.dispatch_ptr"
    ABI_NAME: ClassVar[str] = "dispatch_ptr"


@irdl_op_definition
class QueuePtrOp(_AbiValueOp):
    """The queue pointer (user SGPR pair)."""

    name = "amdgcn.queue_ptr"
    ABI_NAME: ClassVar[str] = "queue_ptr"


@irdl_op_definition
class DispatchIdOp(_AbiValueOp):
    """The 64-bit dispatch id (user SGPR pair)."""

    name = "amdgcn.dispatch_id"
    ABI_NAME: ClassVar[str] = "dispatch_id"


DIMS = ("x", "y", "z")


class _DimValueOp(IRDLOperation):
    dim = prop_def(StringAttr)
    result = result_def()

    def __init__(self, dim: str, type_: Attribute):
        super().__init__(properties={"dim": StringAttr(dim)}, result_types=[type_])

    @property
    def dim_index(self) -> int:
        """0, 1, 2 for x, y, z."""
        return DIMS.index(self.dim.data)

    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        dim = parser.parse_identifier(" (x, y or z)")
        if dim not in DIMS:
            parser.raise_error(f"expected x, y or z, got '{dim}'", pos, parser.pos)
        parser.parse_punctuation(":")
        return cls(dim, parser.parse_type())

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.dim.data} : ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        if self.dim.data not in DIMS:
            raise VerifyException(f"{self.name}: dimension must be x, y or z")


@irdl_op_definition
class WorkgroupIdOp(_DimValueOp):
    """The workgroup id in one dimension (a system SGPR)."""

    name = "amdgcn.workgroup_id"

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(self.result.type, SGPRType):
            raise VerifyException("a workgroup id arrives in an SGPR: its type is "
                                  "!amdgcn.sgpr<N> (or a relocatable !amdgcn.sgpr)")


@irdl_op_definition
class WorkitemIdOp(_DimValueOp):
    """The work-item id register: v0 on gfx942/gfx950, where x, y and z are packed as
    v0[9:0], v0[19:10] and v0[29:20] (only x is present when the kernel asks for x only)."""

    name = "amdgcn.workitem_id"

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(self.result.type, VGPRType):
            raise VerifyException("the work-item ids arrive in v0: the type is "
                                  "!amdgcn.vgpr<0> (or a relocatable !amdgcn.vgpr)")


@irdl_op_definition
class KernargOffsetOp(IRDLOperation):
    """The byte offset of a kernel argument in the kernarg segment, as an immediate:
    `%o = amdgcn.kernarg_offset out`."""

    name = "amdgcn.kernarg_offset"

    arg = prop_def(StringAttr)
    result = result_def(IntegerType)

    def __init__(self, arg: str):
        super().__init__(properties={"arg": StringAttr(arg)}, result_types=[i32])

    @classmethod
    def parse(cls, parser: Parser) -> KernargOffsetOp:
        return cls(parser.parse_identifier_or_str_literal(" (kernel argument name)"))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_identifier_or_string_literal(self.arg.data)


@irdl_op_definition
class LdsAllocOp(IRDLOperation):
    """A named static LDS allocation; its result is the byte offset (an immediate):
    `%a = amdgcn.lds_alloc tile size 4096 align 16`."""

    name = "amdgcn.lds_alloc"

    sym = prop_def(StringAttr)
    size = prop_def(IntAttr)
    alignment = prop_def(IntAttr)
    result = result_def(IntegerType)

    def __init__(self, sym: str, size: int, align: int = 4):
        super().__init__(properties={"sym": StringAttr(sym), "size": IntAttr(size),
                                     "alignment": IntAttr(align)}, result_types=[i32])

    @classmethod
    def parse(cls, parser: Parser) -> LdsAllocOp:
        sym = parser.parse_identifier_or_str_literal(" (LDS allocation name)")
        parser.parse_keyword("size")
        size = parser.parse_integer(allow_negative=False)
        align = 4
        if parser.parse_optional_keyword("align") is not None:
            align = parser.parse_integer(allow_negative=False)
        return cls(sym, size, align)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_identifier_or_string_literal(self.sym.data)
        printer.print_string(f" size {self.size.data} align {self.alignment.data}")

    def verify_(self) -> None:
        a = self.alignment.data
        if a < 1 or a & (a - 1):
            raise VerifyException(f"LDS alignment {a} is not a power of two")
        if self.size.data < 0:
            raise VerifyException("LDS allocation size must be >= 0")


# --- structure ------------------------------------------------------------------------------


class _IsolatedKernelBody(IsolatedFromAbove):
    """IsolatedFromAbove for a kernel: a kernel body is flat (no op in it has regions), so a
    value is defined inside the kernel exactly when the block defining it is in the kernel's
    region. That test is one step per operand, where xDSL's climbs the parents of each
    operand's owner; anything else (nested regions, a value of another kind, a value from
    outside) goes to xDSL's check, which gives its message."""

    def verify(self, op: Operation) -> None:
        regions = op.regions
        inside = {id(region) for region in regions}  # (regions compare by identity)
        for region in regions:
            for block in region.blocks:
                for child in block.ops:
                    if child.regions:
                        return super().verify(op)
                    for operand in child._operands:
                        cls = type(operand)
                        if cls is OpResult:
                            defined_in = operand.op.parent
                        elif cls is BlockArgument:
                            defined_in = operand.block
                        else:
                            return super().verify(op)
                        if defined_in is None or id(defined_in.parent) not in inside:
                            return super().verify(op)
        return None


class _KernelRegionTerminators(NoTerminator):
    """A single-block kernel may end without a terminator op (e.g. `amdgcn.sopp s_endpgm`);
    blocks of multi-block kernels must end with branch/fallthrough/end_kernel (checked by
    xDSL for multi-block regions)."""

    def verify(self, op) -> None:  # multi-block regions are fine, unlike NoTerminator
        return None


@irdl_op_definition
class ModuleOp(IRDLOperation):
    """A set of kernels (and reusable func.func fragments) for one target."""

    name = "amdgcn.module"

    sym_name = prop_def(StringAttr)
    target = prop_def(StringAttr)
    features = opt_prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), SymbolTable(), SymbolOpInterface(),
                        IsolatedFromAbove())

    def __init__(self, sym_name: str, target: str, ops: Sequence | Region | None = None,
                 features: str | None = None):
        props: dict[str, Attribute] = {"sym_name": StringAttr(sym_name),
                                       "target": StringAttr(target)}
        if features:
            props["features"] = StringAttr(features)
        body = ops if isinstance(ops, Region) else Region(Block(list(ops or [])))
        super().__init__(properties=props, regions=[body])

    @property
    def target_name(self) -> str:
        """The target processor, e.g. "gfx942"."""
        return self.target.data

    @classmethod
    def parse(cls, parser: Parser) -> ModuleOp:
        sym = parser.parse_symbol_name()
        parser.parse_keyword("target")
        parser.parse_punctuation("=")
        target = parser.parse_str_literal(" (target, e.g. \"gfx942\")")
        features = None
        if parser.parse_optional_keyword("features") is not None:
            parser.parse_punctuation("=")
            features = parser.parse_str_literal()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        op = cls(sym.data, target, region, features)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(f' target = "{self.target.data}"')
        if self.features is not None:
            printer.print_string(f' features = "{self.features.data}"')
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_empty_block=False)


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A kernel: arguments, launch properties and a body of instruction ops.

    `amdgcn.kernel @k args(out: buffer<f32, write_only>, n: i32) workgroup_size(64, 1, 1)
    lds_size(0) reserved(S = !amdgcn.vgpr<[32:96]>) { ... }`
    """

    name = "amdgcn.kernel"

    sym_name = prop_def(StringAttr)
    arguments = prop_def(ArrayAttr[KernelArgAttr])
    workgroup_size = prop_def(DenseArrayBase)
    lds_size = opt_prop_def(IntegerAttr)
    reserved = opt_prop_def(DictionaryAttr)
    body = region_def()

    traits = traits_def(_KernelRegionTerminators(), SymbolOpInterface(), _IsolatedKernelBody())

    def __init__(self, sym_name: str, args: Sequence[KernelArgAttr] = (),
                 workgroup_size: Sequence[int] = (64, 1, 1), lds_size: int | None = None,
                 reserved: Mapping[str, RegisterType] | None = None,
                 body: Region | None = None):
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(sym_name), "arguments": ArrayAttr(list(args)),
            "workgroup_size": DenseArrayBase.from_list(i32, list(workgroup_size))}
        if lds_size is not None:
            props["lds_size"] = IntegerAttr(lds_size, i32)
        if reserved:
            props["reserved"] = DictionaryAttr(dict(reserved))
        super().__init__(properties=props, regions=[body or Region(Block())])

    @property
    def kernel_name(self) -> str:
        """The kernel's symbol name."""
        return self.sym_name.data

    @property
    def args(self) -> list[KernelArgAttr]:
        """The explicit kernel arguments in order."""
        return list(self.arguments.data)

    @property
    def launch_size(self) -> tuple[int, int, int]:
        """The workgroup size (x, y, z)."""
        values = tuple(self.workgroup_size.get_values())
        return (tuple(values) + (1, 1, 1))[:3]  # type: ignore[return-value]

    @property
    def reserved_regions(self) -> dict[str, RegisterType]:
        """Named reserved register regions."""
        if self.reserved is None:
            return {}
        return {k: v for k, v in self.reserved.data.items() if isinstance(v, RegisterType)}

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        sym = parser.parse_symbol_name()
        args: list[KernelArgAttr] = []
        wg: list[int] = [64, 1, 1]
        lds: int | None = None
        reserved: dict[str, RegisterType] = {}
        while True:
            pos = parser.pos
            word = parser.parse_optional_keyword_in(
                ("args", "workgroup_size", "lds_size", "reserved"))
            if word is None:
                break
            if word == "args":
                args = parser.parse_comma_separated_list(
                    parser.Delimiter.PAREN, lambda: parse_kernel_arg(parser))
            elif word == "workgroup_size":
                wg = parser.parse_comma_separated_list(
                    parser.Delimiter.PAREN, lambda: parser.parse_integer(allow_negative=False))
                if not 1 <= len(wg) <= 3:
                    parser.raise_error("workgroup_size takes 1 to 3 sizes", pos, parser.pos)
                wg = (wg + [1, 1])[:3]
            elif word == "lds_size":
                with parser.in_parens():
                    lds = parser.parse_integer(allow_negative=False)
            else:
                def entry() -> None:
                    name = parser.parse_identifier_or_str_literal(" (region name)")
                    parser.parse_punctuation("=")
                    tpos = parser.pos
                    t = parser.parse_type()
                    if not isinstance(t, RegisterType) or not t.is_fixed:
                        parser.raise_error("a reserved region is a fixed register range",
                                           tpos, parser.pos)
                    reserved[name] = t
                parser.parse_comma_separated_list(parser.Delimiter.PAREN, entry)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        op = cls(sym.data, args, wg, lds, reserved, region)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(f" args({', '.join(kernel_arg_text(a) for a in self.args)})")
        printer.print_string(f" workgroup_size({', '.join(map(str, self.launch_size))})")
        if self.lds_size is not None:
            printer.print_string(f" lds_size({self.lds_size.value.data})")
        if self.reserved_regions:
            printer.print_string(" reserved(")
            for i, (name, t) in enumerate(self.reserved_regions.items()):
                if i:
                    printer.print_string(", ")
                printer.print_identifier_or_string_literal(name)
                printer.print_string(" = ")
                printer.print_attribute(t)
            printer.print_string(")")
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)

    def verify_(self) -> None:
        if self.body.blocks and self.body.blocks[0].args:
            raise VerifyException(f"kernel @{self.kernel_name}: the entry block takes no "
                                  "arguments (inputs come from the ABI value ops)")


def close_blocks(region: Region, where: str) -> None:
    """Give every block of a multi-block kernel body its terminator: a trailing
    `amdgcn.sopp s_endpgm` becomes `amdgcn.end_kernel`, a block that runs into the next one
    gets `amdgcn.fallthrough`. Raises ValueError if the last block has neither."""
    blocks = list(region.blocks)
    if len(blocks) < 2:
        return
    for block in blocks:
        last = block.last_op
        if last is not None and last.has_trait(IsTerminator):
            continue
        if isinstance(last, SOPPOp) and last.mnemonic_text == "s_endpgm" and len(last.args) < 2:
            end = EndKernelOp(last.args[0] if last.args else None)
            end.location = last.location
            block.insert_op_before(end, last)
            block.erase_op(last)
        elif block.next_block is not None:
            block.add_op(FallthroughOp(block.next_block))
        else:
            raise ValueError(f"{where}: the code ends without s_endpgm or a branch")


@irdl_op_definition
class SchedBarrierOp(IRDLOperation):
    """`amdgcn.sched_barrier mask = 0`: a scheduling fence (LLVM's SCHED_BARRIER pseudo, from
    upstream `amdgpu.sched_barrier`). It emits no machine code; the `schedule` pass moves
    nothing across it (the mask, what LLVM would let cross, is kept for reference)."""

    name = "amdgcn.sched_barrier"

    mask = prop_def(IntegerAttr)
    assembly_format = "`mask` `=` $mask attr-dict"

    def __init__(self, mask: int = 0):
        super().__init__(properties={"mask": IntegerAttr(mask, i32)})


AMDGCN_OPS: tuple[type[IRDLOperation], ...] = (
    *INSTRUCTION_OPS, BranchOp, FallthroughOp, EndKernelOp, WaitOp, AllocaOp, OffOp, LiteralOp,
    KernargPtrOp, DispatchPtrOp, QueuePtrOp, DispatchIdOp, WorkgroupIdOp, WorkitemIdOp,
    KernargOffsetOp, LdsAllocOp, SplitRegisterRangeOp, MakeRegisterRangeOp, ModuleOp, KernelOp,
    SchedBarrierOp)

ABI_VALUE_OPS: tuple[type[IRDLOperation], ...] = (
    KernargPtrOp, DispatchPtrOp, QueuePtrOp, DispatchIdOp, WorkgroupIdOp, WorkitemIdOp)

# The ops whose results are other names for registers of their operands.
VIEW_OPS: tuple[type[IRDLOperation], ...] = (SplitRegisterRangeOp, MakeRegisterRangeOp)


def op_location(op: Operation) -> SourceLocation | None:
    """The source location recorded on `op` (IR file or Python builder line), if any."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
    return None


# Value names as written in IR text where xDSL's name hint differs (its setter drops a `_<digits>`
# suffix, its own uniquing suffix: `%v1_3` would read `%v1` in a message). Filled by the text
# parser (ir.text), read by error messages; weak, so a module's values leave with it.
_SPELLED_NAMES: weakref.WeakKeyDictionary[SSAValue, str] = weakref.WeakKeyDictionary()


def remember_spelled_name(value: SSAValue, name: str) -> None:
    """Record that `value` is written `%name` in the text it was parsed from."""
    if value.name_hint != name:
        _SPELLED_NAMES[value] = name


# Where the parser found the definition of a forward reference it could not resolve (the
# definition is inside the region of the op using it): the line, for the error message.
_FORWARD_LINES: weakref.WeakKeyDictionary[SSAValue, int] = weakref.WeakKeyDictionary()


def remember_forward_definition(value: SSAValue, line: int) -> None:
    """Record the line of the definition a forward reference `value` stands for."""
    _FORWARD_LINES[value] = line


def forward_definition_line(value: SSAValue) -> int | None:
    """The line recorded by remember_forward_definition, if any."""
    return _FORWARD_LINES.get(value)


def value_name(value: SSAValue) -> str:
    """`%name` of a value as written in its source text (else its name hint), or "an unnamed
    value" for a value without one (built in Python)."""
    name = _SPELLED_NAMES.get(value) or value.name_hint
    return f"%{name}" if name else "an unnamed value"


def walk_ops(op: Operation) -> Iterator[Operation]:
    """`op.walk()` (an op before its regions' ops, in order), with one generator per op
    that has regions rather than one per nesting level for every op, and the blocks' links
    read directly (xDSL's views are made anew on each access)."""
    yield op
    for region in op.regions:
        for block in region.blocks:
            child = block._first_op
            while child is not None:
                if child.regions:
                    yield from walk_ops(child)
                else:
                    yield child
                child = child._next_op


def ops_with_regions(op: Operation) -> Iterator[Operation]:
    """`op` and every op nested in it that has regions (in walk order): where a question
    is about such ops only (loops, kernels, modules), the plain instructions, nearly all of
    a kernel, are skipped without a generator step or an isinstance each."""
    yield op
    for region in op.regions:
        for block in region.blocks:
            child = block._first_op
            while child is not None:
                if child.regions:
                    yield from ops_with_regions(child)
                child = child._next_op


# --- making ops fast --------------------------------------------------------------------------


def _plain_init_applies() -> bool:
    """True while xDSL's Operation keeps the class defaults `_init_plain` relies on (no
    successors, no regions, no parent) and the ops it makes fill no default property or
    attribute in IRDLOperation.__post_init__."""
    defaults = (Operation._successors, Operation._successor_uses, Operation.regions,
                Operation._operands, Operation._operand_uses)
    if defaults != ((), (), (), (), ()) or Operation.parent is not None:
        return False
    if type(Operation._operands) is not SSAValues:
        return False
    for cls in (*INSTRUCTION_OPS, AllocaOp):
        d = cls.get_irdl_definition()
        if d.regions or d.successors or any(
                getattr(x, "default_value", None) is not None
                for x in (*d.properties.values(), *d.attributes.values())):
            return False
    return True


def _init_plain(op: Operation, operands: Sequence[SSAValue], result_types: Sequence[Attribute],
                properties: dict[str, Attribute], attributes: dict[str, Attribute]) -> None:
    """Operation.__init__ for an op without successors or regions: the same fields, without
    its generic steps for those and IRDL's default filling (none applies), which are a tenth
    of the time of building a kernel. Falls back to Operation.__init__ if xDSL changed."""
    if not _PLAIN_INIT:
        Operation.__init__(op, operands=operands, result_types=result_types,
                           properties=properties, attributes=attributes)
        return
    if operands:
        # (xDSL's operands setter for an op that has none yet: the values, one Use each)
        values = op._operands = SSAValues(operands)
        uses = op._operand_uses = tuple(map(Use, repeat(op), range(len(values))))
        for value, use in zip(values, uses):
            value.add_use(use)
    # (without operands the class defaults stay: an empty SSAValues and (), as xDSL's setter
    # would make them, without a new object per op for the collector to track)
    op.results = SSAValues(OpResult(t, op, i) for i, t in enumerate(result_types))
    op.properties = properties
    op.attributes = attributes
    op.location = UNKNOWN_LOC


_PLAIN_INIT = _plain_init_applies()


def append_new_op(block: Block, op: Operation) -> None:
    """`block.add_op(op)` for an op not in any block yet and without regions, whose checks
    (attached elsewhere? an ancestor of the block?) cannot fail for it: only the links."""
    if op.parent is not None or op.regions or not _PLAIN_INIT:
        block.add_op(op)  # (xDSL's checks and their errors)
        return
    op.parent = block
    last = block._last_op
    if last is None:
        block._first_op = op
    else:  # (Operation._insert_next_op after the block's last op)
        last._next_op = op
        op._prev_op = last
        op._next_op = None
    block._last_op = op

__all__ = [c.__name__ for c in AMDGCN_OPS] + [
    "InstructionOp", "INSTRUCTION_OPS", "OP_FOR_ENCODING", "ABI_VALUE_OPS", "AMDGCN_OPS",
    "VIEW_OPS", "combine_alignment", "implied_alignment", "join_type", "split_types",
    "MODIFIER_NAMES", "FLAG_MODIFIERS", "INT_MODIFIERS", "LIST_MODIFIERS", "NAME_MODIFIERS",
    "modifiers_to_attr", "attr_to_modifiers", "close_blocks", "KEEP_ORDER_ATTR",
    "LDS_DMA_TOKENS_ATTR", "append_new_op", "op_location", "remember_spelled_name",
    "remember_forward_definition", "forward_definition_line", "value_name", "walk_ops",
    "ops_with_regions"]
