"""IR text: `parse_ir` (with file:line:col on every op and in every error) and `print_ir`."""

from __future__ import annotations

import bisect
import io

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr, UnknownLoc
from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError as XdslParseError
from xdsl.utils.exceptions import VerifyException

from asterism.errors import ParseError, SourceLocation
from asterism.ir.dialect import make_context


class _LocatingParser(Parser):
    """An xDSL parser that records each op's file:line:col as its location."""

    def __init__(self, text: str, filename: str, context=None):
        super().__init__(context or make_context(), text, filename)
        self.filename = filename
        self._line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def location(self, offset: int) -> SourceLocation:
        """1-based line and column of a character offset."""
        line = bisect.bisect_right(self._line_starts, offset)
        return SourceLocation(self.filename, line, offset - self._line_starts[line - 1] + 1)

    def parse_operation(self) -> Operation:
        """Parse an op and record where it was written."""
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            loc = self.location(start)
            op.location = FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line),
                                         IntAttr(loc.col))
        return op


def parse_ir(text: str, filename: str = "<input>", verify: bool = True) -> BuiltinModuleOp:
    """Parse amdgcn IR text (or upstream MLIR: a gpu.module, see asterism.ir.upstream);
    errors are ParseError (syntax) or VerifyError (rules)."""
    from asterism.ir.upstream import is_upstream_text, make_upstream_context

    upstream = is_upstream_text(text)
    parser = _LocatingParser(text, filename, make_upstream_context() if upstream else None)
    try:
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
        message = err.msg
        if upstream and message.startswith("Operation ") and "is not registered" in message:
            name = message.split()[1]
            message = (f"{name} is not supported by asterism's upstream MLIR input (see "
                       "docs/upstream_mlir.md for the ops it parses and lowers)")
        raise ParseError(message, parser.location(err.span.start)) from None
    except VerifyException as err:
        # A type or attribute that fails its own checks while being parsed.
        message = str(err).split("\n\n")[0].strip()
        raise ParseError(message, parser.location(parser.pos)) from None
    if verify and upstream:
        from asterism.ir.upstream import verify_upstream

        verify_upstream(module)
    if verify:
        from asterism.ir.verify import verify_module

        verify_module(module)
    return module


def print_ir(module: Operation, generic: bool = False) -> str:
    """IR text of `module` (an anonymous top-level builtin.module is left implicit)."""
    out = io.StringIO()
    printer = Printer(stream=out, print_generic_format=generic)
    implicit = (isinstance(module, BuiltinModuleOp) and module.sym_name is None
                and not module.attributes and not generic)
    if implicit:
        for k, op in enumerate(module.ops):
            if k:
                out.write("\n")
            printer.print_op(op)
            out.write("\n")
    else:
        printer.print_op(module)
        out.write("\n")
    return out.getvalue()
