"""The fast path of the IR text parser: the amdgcn dialect's own one-line forms, read with
regular expressions and built directly (as the builder builds ops), without xDSL's
token-by-token parser.

xDSL's parser spends ~250 us per instruction op (the lexer makes a token object per
character group, every type goes through the generic attribute parser); a raised kernel is
thousands of lines of a handful of shapes, as `print_ir` writes them:

    %v1_1 = amdgcn.vop2 v_lshrrev_b32_e32 %v1, %c10, %v0 : (!amdgcn.vgpr<1>, i32, ...) -> ...
    amdgcn.sopp s_waitcnt lgkmcnt = 0
    %s1 = amdgcn.alloca : !amdgcn.sgpr<1>
    %c0 = arith.constant 0 : i32
    %0 = amdgcn.literal 0xffff

`FastOps.read` takes such a line when it can prove that xDSL would read exactly the same op
from it (same op class and constructor arguments, same value names and definitions, same
location) and that xDSL would stop where the line ends. Anything else (another op, other
spacing, a value not defined yet, a type that does not match its value, an attribute
dictionary, a `loc(...)`, a modifier xDSL would refuse...) returns None *before any change to
the parser's state*, and xDSL's parser reads the op as before: every error comes from the same
code, at the same file:line:col, as without the fast path. The per-op steps that can fail
only after the op is made (registering result names) are xDSL's own methods with the spans
xDSL would give them, and each distinct type spelling is read once by xDSL's type parser.
tests/test_ir_text_fast.py compares the two paths on valid and broken inputs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.lexer import Span, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from asterism.ir.ops import (
    FLAG_MODIFIERS,
    MODIFIER_NAMES,
    AllocaOp,
    InstructionOp,
    LiteralOp,
    ModValue,
)

# MLIR's value name (a percent-identifier without the `%`): digits, or a letter or one of
# `$._-` then letters, digits and `$._-` (xDSL's lexer).
_NAME = r"%(?:[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*)"
_BARE = r"[A-Za-z_][A-Za-z0-9_$.]*"  # a bare identifier (ASCII: xDSL takes any letter first)
# An integer as xDSL reads it (decimal or 0x hex; `-` glued to it). Bounded well below the
# lexer's MAX_INT_LITERAL: longer literals go to xDSL, which reports them.
_INT = r"-?(?:0x[0-9a-fA-F]{1,32}|[0-9]{1,40})"
# One type: a dialect type with an optional parameter list without nested brackets, or a
# builtin type name. What it denotes is decided by xDSL's own type parser (FastOps._types).
_TYPE = r"(?:![A-Za-z_][A-Za-z0-9_$.]*(?:<[^<>\n]*>)?|[A-Za-z_][A-Za-z0-9_$.]*)"
_TYPES = rf"(?:{_TYPE}(?:, {_TYPE})*)?"

# results (optional), the op name (a dotted bare identifier) and one space
_HEAD = re.compile(rf"(?:({_NAME}(?:, {_NAME})*) = )?([A-Za-z_][A-Za-z0-9_$]*\.{_BARE}) ")
_RESULT = re.compile(_NAME)
# The end of an op's line. xDSL, too, ends the op there if the next token is a value name
# (the next op's results), a block label, the closing brace of the region, the end of the
# input or a dotted bare identifier (the next op's name); a bare identifier without a dot (a
# modifier), `{`, `:` or `loc(...)` could continue it, and such ops are left to xDSL.
_END = r"[ \t\r]*(?:\n|\Z)"
_WHITESPACE = MLIRLexer._whitespace_regex  # (the lexer's own: comments, ASCII whitespace)
_SUFFIX = MLIRLexer._suffix_id  # (what follows `%` or `^` in the lexer's tokens)
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*+\.[A-Za-z0-9_$.]*+")
_PREFIXED = {"%": MLIRTokenKind.PERCENT_IDENT, "^": MLIRTokenKind.CARET_IDENT}

_INSTRUCTION = re.compile(
    rf"({_BARE})"  # the mnemonic
    rf"((?: {_NAME}(?:, {_NAME})*)?)"  # operands
    rf"((?: [A-Za-z_][A-Za-z0-9_]*(?: = (?:\[[^\]\n]*\]|[^ \n]+))?)*)"  # modifiers
    rf"(?: : \(({_TYPES})\) -> (?:\(({_TYPES})\)|({_TYPE})))?"  # the function type
    + _END)
_MODIFIER = re.compile(r" ([A-Za-z_][A-Za-z0-9_]*)(?: = (\[[^\]\n]*\]|[^ \n]+))?")
_INT_VALUE = re.compile(_INT)
_INT_LIST = re.compile(rf"\[(?:{_INT}(?:, {_INT})*)?\]")
_BARE_VALUE = re.compile(_BARE)
_ALLOCA = re.compile(rf": ({_TYPE}){_END}")
_LITERAL = re.compile(rf"(0x[0-9a-fA-F]{{1,32}}|[0-9]{{1,40}}){_END}")
_CONSTANT = re.compile(
    rf"(-?[0-9]{{1,40}}(?:\.[0-9]{{0,40}}(?:[eE][+-]?[0-9]{{1,4}})?)?) : ({_BARE}){_END}")
# arith.constant's value types read here: signless integers and floats (others go to xDSL)
_INTEGER_TYPES = frozenset({"i1", "i8", "i16", "i32", "i64"})
_FLOAT_TYPES = frozenset({"f16", "bf16", "f32", "f64"})
_TYPE_ITEM = re.compile(_TYPE)

_FAST_KINDS = {AllocaOp: "alloca", LiteralOp: "literal", ConstantOp: "constant"}


def _made_directly(filename: StringAttr, line: int, column: IntAttr) -> FileLineColLoc:
    """FileLineColLoc(filename, IntAttr(line), column), its fields set directly: the
    constructors' generic checks (of an int and of three attributes of the declared kinds)
    cost more than a third of reading an amdgcn.alloca line."""
    line_attr = object.__new__(IntAttr)
    object.__setattr__(line_attr, "data", line)
    loc = object.__new__(FileLineColLoc)
    object.__setattr__(loc, "filename", filename)
    object.__setattr__(loc, "line", line_attr)
    object.__setattr__(loc, "column", column)
    return loc


def _made_checked(filename: StringAttr, line: int, column: IntAttr) -> FileLineColLoc:
    return FileLineColLoc(filename, IntAttr(line), column)


def _location_maker() -> Callable[[StringAttr, int, IntAttr], FileLineColLoc]:
    """`_made_directly` while xDSL's classes have the fields it sets (and it makes what the
    constructors make), else the constructors."""
    try:
        fields = [f for f, _ in FileLineColLoc.get_irdl_definition().parameters]
        same = (fields == ["filename", "line", "column"]
                and [f.name for f in dataclasses.fields(IntAttr)] == ["data"]
                and _made_directly(StringAttr("f"), 7, IntAttr(3))
                == _made_checked(StringAttr("f"), 7, IntAttr(3)))
    except Exception:  # (another xDSL: its own constructors)
        same = False
    return _made_directly if same else _made_checked


_file_line_col = _location_maker()


def _integer(text: str) -> int:
    """The value of an `_INT` literal, as xDSL computes it (sign, then hex or decimal)."""
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    value = int(digits, 16) if digits[:2] == "0x" else int(digits, 10)
    return -value if negative else value


class FastOps:
    """Reads the one-line op forms of a parser's text (see the module docstring)."""

    def __init__(self, parser, parse_type: Callable[[str], Attribute | None]):
        self.parser = parser
        self.text: str = parser.text
        self.parse_type = parse_type  # a type's text -> the type xDSL reads, None if it fails
        self.filename = StringAttr(parser.filename)
        self.types: dict[str, Attribute | None] = {}
        self.kinds: dict[str, tuple[str, type[Operation]] | None] = {}
        self.modifiers: dict[str, dict[str, ModValue] | None] = {}
        self.columns: dict[int, IntAttr] = {}  # (one attribute per column: they repeat)

    def read(self, start: int) -> Operation | None:
        """The op whose text starts at `start` (the current token), read and registered as
        xDSL would, the parser moved past it; None (nothing changed) if it is not a form
        this reader takes."""
        parser = self.parser
        head = _HEAD.match(self.text, start)
        if head is None:
            return None
        found = self.kinds.get(head.group(2), False)
        if found is False:
            found = self.kinds[head.group(2)] = self._kind(head.group(2))
        if found is None:
            return None
        kind, cls = found
        names = list(_RESULT.finditer(self.text, start, head.end(1))) if head.group(1) else []
        # (each reader checks everything, the number of results included, before it makes
        # the op: making it adds uses to the operands)
        if kind == "instruction":
            made = self._instruction(cls, head.end(), len(names))
        elif len(names) > 1:
            return None
        elif kind == "alloca":
            made = self._alloca(head.end())
        elif kind == "literal":
            made = self._literal(head.end())
        else:
            made = self._constant(head.end())
        if made is None:
            return None
        op, token = made
        # (the token xDSL's lexer makes there: the parser goes on from it)
        parser.lexer.pos = token.span.end
        parser._parser_state.current_token = token
        if names:
            source = parser.lexer.input
            results = op.results
            for k, name in enumerate(names):
                # (xDSL's parse_operation: its method, the span of the name)
                parser._register_ssa_definition(name.group()[1:], results[k:k + 1],
                                                Span(name.start(), name.end(), source))
        loc = parser.location(start)
        col = self.columns.get(loc.col)
        if col is None:
            col = self.columns[loc.col] = IntAttr(loc.col)
        op.location = _file_line_col(self.filename, loc.line, col)
        return op

    def _next_token(self, end: int) -> Token | None:
        """The token xDSL's lexer reads after `end` if it is one that ends the op before it
        (see _END), else None."""
        text = self.text
        pos = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
        char = text[pos:pos + 1]
        if char in _PREFIXED:
            m = _SUFFIX.match(text, pos + 1)
            if m is None:
                return None  # (the lexer's error: xDSL reports it)
            kind, stop = _PREFIXED[char], m.end()
        elif char == "}":
            kind, stop = MLIRTokenKind.R_BRACE, pos + 1
        elif not char:
            kind, stop = MLIRTokenKind.EOF, pos
        else:
            m = _OP_NAME.match(text, pos)
            if m is None:
                return None
            kind, stop = MLIRTokenKind.BARE_IDENT, m.end()
        return Token(kind, Span(pos, stop, self.parser.lexer.input))

    def _kind(self, name: str) -> tuple[str, type[Operation]] | None:
        """How ops named `name` are read (None: by xDSL): the op class must be the one this
        reader was written for (its text form and constructor)."""
        parser = self.parser
        cls = parser.ctx.get_optional_op(name, dialect_stack=parser._parser_state.dialect_stack)
        if cls is None:
            return None
        if isinstance(cls, type) and issubclass(cls, InstructionOp) and \
                cls.parse.__func__ is InstructionOp.parse.__func__:  # type: ignore[attr-defined]
            return ("instruction", cls)
        kind = _FAST_KINDS.get(cls)
        return (kind, cls) if kind is not None else None

    def _operand(self, name: str, type_: Attribute):
        """The value `%name` of type `type_` if it is defined already with that type (None:
        a forward reference or a mismatch, which xDSL's parser handles and reports)."""
        values = self.parser.ssa_values.get(name[1:])
        if not values:
            return None
        value = values[0]
        t = value.type
        # (identity first: the types read here are one object per spelling)
        return value if t is type_ or t == type_ else None

    def _types(self, text: str | None) -> list[Attribute] | None:
        if not text:
            return []
        out = []
        for item in _TYPE_ITEM.findall(text):
            t = self.types.get(item, False)
            if t is False:
                t = self.types[item] = self.parse_type(item)
            if t is None:
                return None
            out.append(t)
        return out

    def _instruction(self, cls, at: int, n_names: int) -> tuple[Operation, Token] | None:
        m = _INSTRUCTION.match(self.text, at)
        token = self._next_token(m.end()) if m is not None else None
        if token is None:
            return None
        mnemonic, args_text, mods_text, ins, outs, out = m.groups()
        operand_names = _RESULT.findall(args_text) if args_text else []
        if ins is None:  # (no function type)
            if operand_names:
                return None  # (xDSL: "expected ':' and the operand types")
            inputs: list[Attribute] | None = []
            outputs: list[Attribute] | None = []
        else:
            inputs = self._types(ins)
            outputs = self._types(out if out is not None else outs)
            if inputs is None or outputs is None or len(inputs) != len(operand_names):
                return None
        if n_names and n_names != len(outputs):  # type: ignore[arg-type]
            return None  # (xDSL: "Operation has N results, but was given M to bind")
        operands = []
        for name, t in zip(operand_names, inputs):  # type: ignore[arg-type]
            value = self._operand(name, t)
            if value is None:
                return None
            operands.append(value)
        mods = self._modifiers(mods_text)
        if mods is None:
            return None
        try:
            # (InstructionOp.__init__ makes the modifiers attribute, which may fail, before
            # it attaches the operands)
            op = cls(mnemonic, operands, outputs, mods, {})
        except Exception:  # (e.g. a modifier value out of range: xDSL reports it)
            return None
        return op, token

    def _modifiers(self, text: str) -> dict[str, ModValue] | None:
        """The modifiers as `ir.ops._parse_modifiers` reads them (None: it would refuse them,
        or read them otherwise than this)."""
        if not text:
            return {}
        mods = self.modifiers.get(text, False)
        if mods is False:
            mods = self.modifiers[text] = _read_modifiers(text)
        return dict(mods) if mods is not None else None

    def _alloca(self, at: int) -> tuple[Operation, Token] | None:
        m = _ALLOCA.match(self.text, at)
        token = self._next_token(m.end()) if m is not None else None
        if token is None:
            return None
        types = self._types(m.group(1))
        if not types:
            return None
        return AllocaOp(types[0]), token

    def _literal(self, at: int) -> tuple[Operation, Token] | None:
        m = _LITERAL.match(self.text, at)
        token = self._next_token(m.end()) if m is not None else None
        if token is None:
            return None
        bits = _integer(m.group(1))
        if bits > 0xFFFFFFFF:
            return None  # (LiteralOp.parse reports it)
        return LiteralOp(bits), token

    def _constant(self, at: int) -> tuple[Operation, Token] | None:
        m = _CONSTANT.match(self.text, at)
        token = self._next_token(m.end()) if m is not None else None
        if token is None:
            return None
        number, type_name = m.groups()
        t = self._types(type_name)
        if not t:
            return None
        try:
            if type_name in _FLOAT_TYPES:
                # (as xDSL: the number's value, negated, then as a float: -0 is 0.0)
                number_value = float(number) if "." in number else _integer(number)
                value: Attribute = FloatAttr(float(number_value), t[0])
            elif type_name in _INTEGER_TYPES and "." not in number:
                value = IntegerAttr(_integer(number), t[0])
            else:
                return None
        except Exception:  # (a value its type cannot hold: xDSL reports it)
            return None
        return ConstantOp(value), token


def _read_modifiers(text: str) -> dict[str, ModValue] | None:
    """`_parse_modifiers` of ir.ops on a modifiers text of `_INSTRUCTION` (None where it
    would raise an error or read something this function does not)."""
    mods: dict[str, ModValue] = {}
    pos = 0
    while pos < len(text):
        m = _MODIFIER.match(text, pos)
        if m is None:
            return None
        pos = m.end()
        name, value = m.group(1), m.group(2)
        if name not in MODIFIER_NAMES or name in mods:
            return None
        if value is None:
            if name not in FLAG_MODIFIERS:
                return None
            mods[name] = True
        elif value.startswith("["):
            if _INT_LIST.fullmatch(value) is None:
                return None
            inner = value[1:-1]
            mods[name] = tuple(_integer(v) for v in inner.split(", ")) if inner else ()
        elif value in ("true", "false"):
            mods[name] = value == "true"
        elif _INT_VALUE.fullmatch(value) is not None:
            mods[name] = _integer(value)
        elif _BARE_VALUE.fullmatch(value) is not None and value[0] != "-":
            mods[name] = value
        else:
            return None
    return mods


__all__ = ["FastOps"]
