"""IR text: `parse_ir` (with file:line:col on every op and in every error) and `print_ir`;
`parse_text`, the located parser under it, reads other dialects too (the front end's)."""

from __future__ import annotations

import bisect
import io
import math
import re
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr, UnknownLoc
from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.ir import Attribute, Block, Operation
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError as XdslParseError
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from asterism.errors import AsterismError, ParseError, SourceLocation
from asterism.ir.dialect import make_context
from asterism.ir.ops import remember_forward_definition, remember_spelled_name
from asterism.ir.text_fast import FastOps
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc


class _LinearLexer(MLIRLexer):
    """xDSL's lexer with a string-literal pattern that cannot backtrack.

    xDSL's pattern `"(?:[^"...]+|escape)*"` nests `+` in `*`: on an unterminated literal the
    regex engine tries every way to split the run of characters before giving up, which takes
    exponential time (18 s for a 60-character line). The possessive quantifiers below match
    the same strings but never give characters back, so a failure costs one scan.
    """

    _unescaped_characters_regex = re.compile(
        r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
    )

    def _lex_number(self, start_pos):
        """A number token; an integer literal longer than MAX_INT_LITERAL is an error here
        (xDSL would convert it with int(): a ValueError past 4300 digits, and slow before)."""
        token = super()._lex_number(start_pos)
        if token.kind == MLIRTokenKind.INTEGER_LIT and len(token.span.text) > MAX_INT_LITERAL:
            raise XdslParseError(token.span, f"integer literal of {len(token.span.text)} "
                                 f"characters is longer than the {MAX_INT_LITERAL} asterism "
                                 "IR reads (no value in it is that wide)")
        return token


_NEWLINE = re.compile("\n")
_FAST_START = (MLIRTokenKind.PERCENT_IDENT, MLIRTokenKind.BARE_IDENT)
MAX_INT_LITERAL = 128  # characters of an integer literal (a 256-bit value is 78 digits)
MAX_INT_TYPE_WIDTH = (1 << 24) - 1  # widest iN (MLIR's IntegerType::kMaxWidth)
_INT_TYPE_RE = re.compile(r"[su]?i([0-9]+)")
MAX_DENSE_ELEMENTS = 1 << 16  # elements of a dense constant (512 VGPRs hold 16384 words)


def keep_block_name(block: Block, name: str) -> None:
    """Name `block` exactly `name`: xDSL's name setter drops a `_<digits>` suffix (its own
    uniquing suffix), which would rename labels such as `loop_12` or `.LBB0_3` (a raised
    kernel's symbol table changes). Invalid names and xDSL's default `bb<N>` stay unset."""
    if name and Block.is_valid_name(name) and not Block.is_default_block_name(name):
        block._name = name  # (the setter's stripping is what this avoids)


class _LocatingParser(Parser):
    """An xDSL parser that records each op's file:line:col as its location."""

    def __init__(self, text: str, filename: str, context=None, fast: bool = False):
        # xDSL lexes the first token in its constructor with its own lexer: start it on
        # empty text; `begin` hands it the linear lexer over the real text.
        super().__init__(context or make_context(), "", filename)
        self.text = text
        self.filename = filename
        self._open_regions: list[int] = []  # offsets of the '{' of the regions being parsed
        self._labels: list[dict[str, int]] = []  # per open region: block label -> its line
        self._line_starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
        # (the amdgcn dialect's one-line forms without xDSL's token parser: ir.text_fast)
        self._fast = FastOps(self, self._type_of_text) if fast else None

    def _type_of_text(self, text: str) -> Attribute | None:
        """The type xDSL reads from `text` (all of it) in this parser's context, or None if
        it reads no type or fails (the fast path then leaves the op to xDSL, which reports
        the error where it is)."""
        sub = _LocatingParser(text, self.filename, self.ctx)
        try:
            sub.begin()
            found = sub.parse_optional_type()
            if found is None or sub._current_token.kind != MLIRTokenKind.EOF:
                return None
        except Exception:
            return None
        return found

    def parse_optional_operation(self) -> Operation | None:
        """An op, read by the fast path when it takes the op's text, else by xDSL."""
        if self._fast is not None:
            token = self._current_token
            if token.kind in _FAST_START:
                op = self._fast.read(token.span.start)
                if op is not None:
                    return op
        return super().parse_optional_operation()

    def begin(self) -> None:
        """Lex the first token of the real text (may raise xDSL's ParseError)."""
        self._parser_state = ParserState(_LinearLexer(Input(self.text, self.filename)))

    def location(self, offset: int) -> SourceLocation:
        """1-based line and column of a character offset."""
        line = bisect.bisect_right(self._line_starts, offset)
        return SourceLocation(self.filename, line, offset - self._line_starts[line - 1] + 1)

    def parse_optional_region(self, arguments=None):
        """Parse a region, remembering where it opened (for the unclosed-region error)."""
        if self._current_token.kind != MLIRTokenKind.L_BRACE:
            return None
        self._open_regions.append(self._current_token.span.start)
        self._labels.append({})
        region = super().parse_optional_region(arguments)
        self._open_regions.pop()
        self._labels.pop()
        return region

    def _parse_block(self):
        """Parse a labelled block; say what was expected when there is none (xDSL's own
        message is only " in block definition")."""
        token = self._current_token
        if token.kind == MLIRTokenKind.EOF and self._open_regions:
            opened = self.location(self._open_regions[-1])
            self.raise_error(f"end of file inside the region opened at {opened.line}:"
                             f"{opened.col}: expected an operation or '}}'", token.span)
        if token.kind != MLIRTokenKind.CARET_IDENT:
            self.raise_error(f"expected an operation, a block label (^name:) or '}}', "
                             f"got '{token.text}'", token.span)
        if self._labels:
            # xDSL forgets a label once a forward branch to it is resolved, so a second
            # definition would fail with a KeyError inside it: catch it here.
            seen = self._labels[-1]
            if token.text in seen:
                self.raise_error(f"block {token.text} is already defined at line "
                                 f"{seen[token.text]}", token.span)
            seen[token.text] = self.location(token.span.start).line
        block = super()._parse_block()
        keep_block_name(block, token.text[1:])
        return block

    def _register_ssa_definition(self, name, values, span) -> None:
        """Define `%name` and remember how it is spelled (for messages: see value_name)."""
        for k, forward in (self.forward_ssa_references.get(name) or {}).items():
            # (a placeholder the definition cannot replace stays in the IR: name it too)
            remember_spelled_name(forward, name if len(values) == 1 else f"{name}#{k}")
            remember_forward_definition(forward, self.location(span.start).line)
        super()._register_ssa_definition(name, values, span)
        if len(values) == 1:
            remember_spelled_name(values[0], name)
        else:
            for k, value in enumerate(values):
                remember_spelled_name(value, f"{name}#{k}")

    def _parse_optional_integer_or_float_type(self):
        """A builtin integer or float type; an integer width past MLIR's limit is an error
        before xDSL converts it (i2000000000 made xDSL compute 2**2000000000: 1 GB)."""
        token = self._current_token
        if token.kind == MLIRTokenKind.BARE_IDENT:
            m = _INT_TYPE_RE.fullmatch(token.text)
            if m is not None and (len(m.group(1)) > 8 or int(m.group(1)) > MAX_INT_TYPE_WIDTH):
                self.raise_error(f"integer type {_clip(token.text)} is wider than "
                                 f"{MAX_INT_TYPE_WIDTH} bits (MLIR's limit)", token.span)
        return super()._parse_optional_integer_or_float_type()

    def _parse_dense_literal_type(self):
        """The type after a dense literal; its element count is bounded before xDSL expands
        the literal to it (dense<0.0> : vector<100000000xf32> took 3.7 GB)."""
        start = self._current_token.span.start
        dense_type = super()._parse_dense_literal_type()
        self._check_dense_size(dense_type, start)
        return dense_type

    def parse_dense_int_or_fp_elements_attr(self, type):
        """A dense literal (its type, when known first, is bounded before it is read)."""
        if type is not None:
            self._check_dense_size(type, self._current_token.span.start)
        return super().parse_dense_int_or_fp_elements_attr(type)

    def _check_dense_size(self, dense_type, start: int) -> None:
        count = 1
        for dim in dense_type.get_shape():
            count *= max(dim, 0)
            if count > MAX_DENSE_ELEMENTS:
                raise XdslParseError(Span(start, self._current_token.span.start, self.lexer.input),
                                     f"a dense constant of {math.prod(dense_type.get_shape())} "
                                     f"elements: asterism takes at most {MAX_DENSE_ELEMENTS} (the"
                                     " values a kernel keeps in registers are far fewer)")

    def parse_operation(self) -> Operation:
        """Parse an op and record where it was written."""
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            loc = self.location(start)
            op.location = FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line),
                                         IntAttr(loc.col))
        return op


# The fast path of amdgcn IR text (ir.text_fast); False reads everything with xDSL's parser
# (the tests compare the two).
FAST_PATH = True

_MAX_QUOTE = 60  # characters of the input quoted in a message


def _clip(text: str) -> str:
    """`text` cut short for a message."""
    return text if len(text) <= _MAX_QUOTE else text[:_MAX_QUOTE // 2] + "..."


def _message(err: XdslParseError, text: str) -> str:
    """xDSL's message, reworded where it says nothing useful, with long quotes cut short."""
    if err.msg.startswith("Could not parse entire input"):
        rest = text[err.span.start:].split(None, 1)
        if not rest:
            return "expected an operation (e.g. amdgcn.module), got the end of the input"
        return f"expected an operation (e.g. amdgcn.module), got '{rest[0][:_MAX_QUOTE]}'"
    if len(err.msg) > 4 * _MAX_QUOTE:
        # e.g. "Operation aaaa...aaaa is not registered" on a 1 MB identifier.
        return err.msg[:2 * _MAX_QUOTE] + " ... " + err.msg[-_MAX_QUOTE:]
    return err.msg


def parse_ir(text: str, filename: str = "<input>", verify: bool = True) -> BuiltinModuleOp:
    """Parse amdgcn IR text; errors are ParseError (syntax) or VerifyError (rules). (Upstream
    MLIR, a gpu.module, is the front end's: asterism.frontend.parse, or asterism.parse.)"""
    module = parse_text(text, filename)
    if verify:
        from asterism.ir.verify import verify_module

        verify_module(module)
    return module


def parse_text(text: str, filename: str = "<input>", context: Context | None = None,
               unregistered: Callable[[str], str] | None = None) -> BuiltinModuleOp:
    """Parse MLIR text in `context` (amdgcn IR's by default) without verifying it, with
    file:line:col on every op and in every ParseError; `unregistered(name)` words the error
    for an op the context does not know (None: xDSL's message)."""
    # (the fast path reads amdgcn IR's own forms: in other contexts, xDSL reads everything)
    parser = _LocatingParser(text, filename, context, fast=context is None and FAST_PATH)
    # (the ops made would otherwise start full collections that re-scan the growing IR)
    was_enabled = pause_cyclic_gc()
    try:
        parser.begin()
        module = parser.parse_module()
    except XdslParseError as err:
        if parser.forward_ssa_references and err.msg.startswith("values used but not defined"):
            # xDSL reports these at the end of the file; point at the first use instead.
            name, refs = next(iter(parser.forward_ssa_references.items()))
            for value in refs.values():
                for use in value.uses:
                    loc = use.operation.location
                    if isinstance(loc, FileLineColLoc):
                        raise ParseError(f"%{name} is used but never defined", SourceLocation(
                            loc.filename.data, loc.line.data, loc.column.data)) from None
        message = _message(err, text)
        if (unregistered is not None and message.startswith("Operation ")
                and "is not registered" in message):
            message = unregistered(message.split()[1])
        raise ParseError(message, parser.location(err.span.start)) from None
    except VerifyException as err:
        # A type or attribute that fails its own checks while being parsed.
        message = str(err).split("\n\n")[0].strip()
        raise ParseError(message, parser.location(parser.pos)) from None
    except RecursionError:
        raise ParseError("nesting too deep", parser.location(parser.pos)) from None
    except AsterismError:
        raise
    except Exception as err:  # the boundary: no xDSL internals reach users
        # xDSL's parser core can fail outside its own error type on malformed input (e.g. a
        # KeyError on a block label); report it where the parser stopped.
        raise ParseError(f"malformed input here ({type(err).__name__}: {err})",
                         parser.location(parser.pos)) from None
    finally:
        resume_cyclic_gc(was_enabled)
    return module


def print_ir(module: Operation, generic: bool = False) -> str:
    """IR text of `module` (an anonymous top-level builtin.module is left implicit)."""
    out = io.StringIO()
    printer = Printer(stream=out, print_generic_format=generic)
    implicit = (isinstance(module, BuiltinModuleOp) and module.sym_name is None
                and not module.attributes and not generic)
    # (the printer's per-op objects would otherwise start collections that scan the IR)
    was_enabled = pause_cyclic_gc()
    try:
        if implicit:
            for k, op in enumerate(module.ops):
                if k:
                    out.write("\n")
                printer.print_op(op)
                out.write("\n")
        else:
            printer.print_op(module)
            out.write("\n")
    finally:
        resume_cyclic_gc(was_enabled)
    return out.getvalue()
