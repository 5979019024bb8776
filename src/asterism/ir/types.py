"""Types and attributes of the `amdgcn` dialect: registers, tokens, kernel arguments.

Register assignment lives in the value's type:

* ``!amdgcn.vgpr<10>``               the fixed register v10
* ``!amdgcn.vgpr``                   one relocatable VGPR (the register allocator picks it)
* ``!amdgcn.vgpr<[8:12]>``           the fixed range v8..v11: **half-open** ``[first:end)``,
  like a Python slice (4 registers; the assembly spelling is ``v[8:11]``)
* ``!amdgcn.vgpr<[? + 4]>``          4 consecutive relocatable VGPRs
* ``!amdgcn.vgpr<[? + 4], align 4>`` ... whose first register index is a multiple of 4

The same spellings work for ``!amdgcn.agpr`` and ``!amdgcn.sgpr``, and the fixed ones for the
trap registers ``!amdgcn.ttmp`` (ttmp0..ttmp15). Named scalar registers
(vcc, exec, m0, scc, flat_scratch, ...) are ``!amdgcn.special<vcc>``. ``!amdgcn.token`` is the
completion token a memory instruction returns (waits consume them); ``!amdgcn.off`` is the
type of the ``off`` operand placeholder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import IntAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from asterism.mc.operands import SPECIAL_REGISTERS

RELOCATABLE = -1  # index of a register the allocator has not placed yet
_SHARED_TYPES: dict[tuple, Attribute] = {}  # (see RegisterType._shared)
_SHARED_LIMIT = 1 << 16


@dataclass(frozen=True, init=False)
class RegisterType(ParametrizedAttribute, TypeAttribute):
    """Base of the register types: a (possibly relocatable) aligned range of one file."""

    KIND: ClassVar[str] = ""  # "v", "a" or "s": the operand kind of the ISA database
    FILE_NAME: ClassVar[str] = ""  # for messages: "VGPR", "AGPR", "SGPR"

    index: IntAttr  # first register, or RELOCATABLE
    count: IntAttr  # number of registers (>= 1)
    align: IntAttr  # required alignment of the first index (power of two)

    def __init__(self, index: int = RELOCATABLE, count: int = 1, align: int = 1):
        super().__init__(IntAttr(index), IntAttr(count), IntAttr(align))

    @classmethod
    def fixed(cls, index: int, count: int = 1, align: int = 1):
        """The fixed range starting at `index` with `count` registers."""
        return cls._shared(index, count, align)

    @classmethod
    def relocatable(cls, count: int = 1, align: int = 1):
        """`count` relocatable registers aligned to `align`."""
        return cls._shared(RELOCATABLE, count, align)

    @classmethod
    def _shared(cls, index: int, count: int, align: int):
        """cls(index, count, align), one object per shape: attributes are immutable values,
        and building one (three IntAttrs, verified) costs more than the lookup."""
        key = (cls, index, count, align)
        t = _SHARED_TYPES.get(key)
        if t is None:
            t = cls(index, count, align)
            if len(_SHARED_TYPES) < _SHARED_LIMIT:
                _SHARED_TYPES[key] = t
        return t

    @property
    def is_fixed(self) -> bool:
        """True if the register (range) is assigned."""
        return self.index.data != RELOCATABLE

    @property
    def first(self) -> int:
        """First register index (RELOCATABLE if not assigned)."""
        return self.index.data

    @property
    def width(self) -> int:
        """Number of 32-bit registers."""
        return self.count.data

    @property
    def alignment(self) -> int:
        """Declared alignment of the first index."""
        return self.align.data

    def asm(self) -> str:
        """The assembly spelling (v5, v[8:11]) or the type text when relocatable."""
        if not self.is_fixed:
            return type_text(self)
        if self.width == 1:
            return f"{self.KIND}{self.first}"
        return f"{self.KIND}[{self.first}:{self.first + self.width - 1}]"

    def with_index(self, index: int):
        """The same shape placed at `index`."""
        return type(self)._shared(index, self.width, self.alignment)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            return (IntAttr(RELOCATABLE), IntAttr(1), IntAttr(1))
        start = parser.pos
        if parser.parse_optional_punctuation("[") is not None:
            if parser.parse_optional_punctuation("?") is not None:
                parser.parse_punctuation("+", " in a relocatable range '[? + N]'")
                index = RELOCATABLE
                count = parser.parse_integer(allow_negative=False,
                                             context_msg=" (register count)")
            else:
                index = parser.parse_integer(allow_negative=False,
                                             context_msg=" (first register)")
                parser.parse_punctuation(":", " in a register range '[first:end]'")
                end = parser.parse_integer(allow_negative=False, context_msg=" (end register)")
                if end <= index:
                    parser.raise_error(
                        f"register range [{index}:{end}] is empty: ranges are half-open "
                        f"[first:end), e.g. [8:12] is 4 registers {cls.KIND}8..{cls.KIND}11",
                        start, parser.pos)
                count = end - index
            parser.parse_punctuation("]")
        elif parser.parse_optional_punctuation("?") is not None:
            index, count = RELOCATABLE, 1
        else:
            index, count = parser.parse_integer(allow_negative=False,
                                                context_msg=" (register index)"), 1
        align = 1
        if parser.parse_optional_punctuation(",") is not None:
            parser.parse_keyword("align")
            align = parser.parse_integer(allow_negative=False, context_msg=" (alignment)")
        problem = cls.shape_problem(index, count, align)
        if problem:
            parser.raise_error(f"{cls.name}: {problem}", start, parser.pos)
        parser.parse_punctuation(">")
        return (IntAttr(index), IntAttr(count), IntAttr(align))

    @classmethod
    def shape_problem(cls, index: int, count: int, align: int) -> str | None:
        """Why (index, count, align) is not a valid register range (None if it is)."""
        if count < 1:
            return "a register range needs at least 1 register"
        if align < 1 or align & (align - 1):
            return f"alignment {align} is not a power of two"
        if index < RELOCATABLE:
            return f"negative register index {index}"
        if index != RELOCATABLE and index % align:
            return f"register range starting at {cls.KIND}{index} is not aligned to {align}"
        return None

    def print_parameters(self, printer: Printer) -> None:
        index, count, align = self.first, self.width, self.alignment
        if index == RELOCATABLE and count == 1 and align == 1:
            return
        if index != RELOCATABLE and count == 1:
            body = str(index)
        elif index == RELOCATABLE:
            body = f"[? + {count}]"
        else:
            body = f"[{index}:{index + count}]"
        if align != 1:
            body += f", align {align}"
        printer.print_string(f"<{body}>")

    def verify(self) -> None:
        problem = self.shape_problem(self.first, self.width, self.alignment)
        if problem:
            raise VerifyException(f"{self.name}: {problem}")


@irdl_attr_definition
class VGPRType(RegisterType):
    """A vector register (range): ``!amdgcn.vgpr<...>``."""

    name = "amdgcn.vgpr"
    KIND = "v"
    FILE_NAME = "VGPR"


@irdl_attr_definition
class AGPRType(RegisterType):
    """An accumulation register (range): ``!amdgcn.agpr<...>``."""

    name = "amdgcn.agpr"
    KIND = "a"
    FILE_NAME = "AGPR"


@irdl_attr_definition
class SGPRType(RegisterType):
    """A scalar register (range): ``!amdgcn.sgpr<...>``."""

    name = "amdgcn.sgpr"
    KIND = "s"
    FILE_NAME = "SGPR"


REGISTER_TYPES: dict[str, type[RegisterType]] = {"v": VGPRType, "a": AGPRType, "s": SGPRType}


@irdl_attr_definition
class TTMPType(RegisterType):
    """A trap temporary register (range): ``!amdgcn.ttmp<4>``, ``!amdgcn.ttmp<[8:12]>``.

    Always fixed: the trap handler owns these registers, so the allocator never places a
    value in them; kernels raised from code that names them keep them as written. Operands
    take them wherever they take an SGPR (as the assembler does).
    """

    name = "amdgcn.ttmp"
    KIND = "ttmp"
    FILE_NAME = "TTMP"

    @classmethod
    def shape_problem(cls, index: int, count: int, align: int) -> str | None:
        """Why (index, count, align) is not a valid trap register range (None if it is)."""
        if index == RELOCATABLE:
            return "trap registers are always fixed (the allocator does not place values there)"
        return super().shape_problem(index, count, align)


# Register files an operand can name; the allocator's files are REGISTER_TYPES.
NAMED_REGISTER_TYPES: dict[str, type[RegisterType]] = {**REGISTER_TYPES, "ttmp": TTMPType}
# Both as sets of classes, for `type(t) in ...` (isinstance on xDSL attributes is slower).
REGISTER_CLASSES: frozenset[type[RegisterType]] = frozenset(REGISTER_TYPES.values())
NAMED_REGISTER_CLASSES: frozenset[type[RegisterType]] = frozenset(NAMED_REGISTER_TYPES.values())


@irdl_attr_definition
class SpecialRegType(ParametrizedAttribute, TypeAttribute):
    """A named scalar register: ``!amdgcn.special<vcc>`` (exec, m0, scc, flat_scratch...)."""

    name = "amdgcn.special"

    reg: StringAttr

    def __init__(self, reg: str | StringAttr):
        super().__init__(StringAttr(reg) if isinstance(reg, str) else reg)

    @property
    def reg_name(self) -> str:
        """The register's assembly name."""
        return self.reg.data

    @property
    def width(self) -> int:
        """Number of 32-bit registers it covers."""
        return SPECIAL_REGISTERS[self.reg.data]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        pos = parser.pos
        name = parser.parse_identifier(" (special register name)")
        if name not in SPECIAL_REGISTERS:
            parser.raise_error(
                f"unknown special register '{name}'; known: {', '.join(SPECIAL_REGISTERS)}",
                pos, parser.pos)
        parser.parse_punctuation(">")
        return (StringAttr(name),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.reg.data}>")

    def verify(self) -> None:
        if self.reg.data not in SPECIAL_REGISTERS:
            raise VerifyException(f"unknown special register '{self.reg.data}'")


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """Completion token of a memory instruction (``!amdgcn.token``)."""

    name = "amdgcn.token"


@irdl_attr_definition
class OffType(ParametrizedAttribute, TypeAttribute):
    """Type of the ``off`` placeholder operand (``!amdgcn.off``)."""

    name = "amdgcn.off"


# --- kernel arguments -----------------------------------------------------------------------

SCALAR_SIZES: dict[str, int] = {
    "i8": 1, "u8": 1, "i16": 2, "u16": 2, "f16": 2, "bf16": 2, "i32": 4, "u32": 4, "f32": 4,
    "i64": 8, "u64": 8, "f64": 8,
}
ACCESS_QUALIFIERS = ("read_only", "write_only", "read_write")
BUFFER_SIZE = 8  # a global pointer


@irdl_attr_definition
class KernelArgAttr(ParametrizedAttribute):
    """One explicit kernel argument: ``#amdgcn.arg<out: buffer<f32, write_only>>`` or
    ``#amdgcn.arg<n: i32>``."""

    name = "amdgcn.arg"

    arg_name: StringAttr
    kind: StringAttr  # "buffer" or "value"
    dtype: StringAttr  # element type (buffers, optional: "") or value type
    access: StringAttr  # access qualifier of a buffer, or ""

    def __init__(self, arg_name: str, kind: str, dtype: str = "", access: str = ""):
        super().__init__(StringAttr(arg_name), StringAttr(kind), StringAttr(dtype),
                         StringAttr(access))

    @property
    def size(self) -> int:
        """Bytes the argument takes in the kernarg segment."""
        if self.kind.data == "buffer":
            return BUFFER_SIZE
        return SCALAR_SIZES[self.dtype.data]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            arg = parse_kernel_arg(parser)
        return (arg.arg_name, arg.kind, arg.dtype, arg.access)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{kernel_arg_text(self)}>")

    def verify(self) -> None:
        kind, dtype, access = self.kind.data, self.dtype.data, self.access.data
        if kind not in ("buffer", "value"):
            raise VerifyException(f"kernel argument kind must be buffer or value, not {kind}")
        if kind == "value" and dtype not in SCALAR_SIZES:
            raise VerifyException(f"unknown kernel argument type '{dtype}'")
        if kind == "buffer" and dtype and dtype not in SCALAR_SIZES:
            raise VerifyException(f"unknown buffer element type '{dtype}'")
        if access and (kind != "buffer" or access not in ACCESS_QUALIFIERS):
            raise VerifyException(f"invalid access qualifier '{access}'")


def parse_kernel_arg(parser: AttrParser) -> KernelArgAttr:
    """Parse `name: buffer<dtype, access>` or `name: scalar_type`."""
    name = parser.parse_identifier_or_str_literal(" (kernel argument name)")
    parser.parse_punctuation(":")
    pos = parser.pos
    word = parser.parse_identifier(" (buffer or a scalar type such as i32)")
    if word == "buffer":
        dtype = access = ""
        if parser.parse_optional_punctuation("<") is not None:
            while True:
                pos = parser.pos
                item = parser.parse_identifier()
                if item in ACCESS_QUALIFIERS:
                    access = item
                elif item in SCALAR_SIZES:
                    dtype = item
                else:
                    parser.raise_error(
                        f"expected an element type ({', '.join(SCALAR_SIZES)}) or an access "
                        f"qualifier ({', '.join(ACCESS_QUALIFIERS)}), got '{item}'", pos,
                        parser.pos)
                if parser.parse_optional_punctuation(",") is None:
                    break
            parser.parse_punctuation(">")
        return KernelArgAttr(name, "buffer", dtype, access)
    if word not in SCALAR_SIZES:
        parser.raise_error(
            f"unknown kernel argument type '{word}'; expected buffer or one of "
            f"{', '.join(SCALAR_SIZES)}", pos, parser.pos)
    return KernelArgAttr(name, "value", word)


def kernel_arg_text(arg: KernelArgAttr) -> str:
    """The `name: type` text of a kernel argument."""
    name = arg.arg_name.data
    if not _is_identifier(name):
        name = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if arg.kind.data == "value":
        return f"{name}: {arg.dtype.data}"
    inner = [x for x in (arg.dtype.data, arg.access.data) if x]
    return f"{name}: buffer" + (f"<{', '.join(inner)}>" if inner else "")


def _is_identifier(text: str) -> bool:
    return bool(text) and (text[0].isalpha() or text[0] == "_") and all(
        c.isalnum() or c in "_$." for c in text)


def type_text(t: Attribute) -> str:
    """The IR spelling of a type (for messages)."""
    text = _TYPE_TEXTS.get(t)
    if text is None:
        import io

        from xdsl.printer import Printer as _Printer

        out = io.StringIO()
        _Printer(stream=out).print_attribute(t)
        text = out.getvalue()
        if len(_TYPE_TEXTS) < _SHARED_LIMIT:
            # (the matcher describes every operand by it; a kernel has a few hundred types)
            _TYPE_TEXTS[t] = text
    return text


_TYPE_TEXTS: dict[Attribute, str] = {}
