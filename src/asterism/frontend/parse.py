"""Reading upstream MLIR: the parsing context of upstream input (builtin, func, arith, scf,
memref, vector, gpu, amdgpu, rocdl and amdgcn, so one file may hold both kinds of kernels),
`parse_upstream` (located errors, xDSL's verification at the failing op), and whether text or
a module holds upstream kernels.

An op outside the defined subset is a parse error naming the op and its location (an op of
another chip generation says which one). Both the custom form mlir-opt-22 prints and its
generic form parse.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.ir import Dialect, Operation

from asterism.frontend.dialects.gpu import GPU, ROCDL, GpuModuleOp


def make_upstream_context() -> Context:
    """The context upstream input is parsed in (amdgcn too: a file may mix both)."""
    from xdsl.dialects.memref import MemRef
    from xdsl.dialects.scf import Scf
    from xdsl.dialects.vector import Vector

    from asterism.frontend.dialects.amdgpu import AMDGPU
    from asterism.frontend.dialects.vector import VECTOR_EXTRA_OPS
    from asterism.ir.dialect import make_context

    ctx = make_context()
    vector = Dialect("vector", list(Vector.operations) + VECTOR_EXTRA_OPS,
                     list(Vector.attributes))
    for dialect in (Scf, MemRef, vector, GPU, AMDGPU, ROCDL):
        ctx.load_dialect(dialect)
    return ctx


def is_upstream_text(text: str) -> bool:
    """Whether IR text holds upstream kernels (a gpu.module, custom or generic form)."""
    return "gpu.module" in text


def has_upstream(module: Operation) -> bool:
    """Whether a module holds upstream kernels (a gpu.module) still to lower."""
    return any(isinstance(op, GpuModuleOp) for op in module.walk())


def unsupported_op_message(name: str) -> str:
    """The parse error for an op upstream input may not hold."""
    from asterism.frontend.dialects.amdgpu import NOT_ON_CDNA

    if name in NOT_ON_CDNA:
        return (f"{name} is an op of {NOT_ON_CDNA[name]}: it does not exist on the CDNA "
                "targets asterism compiles for (gfx942, gfx950)")
    return (f"{name} is not supported by asterism's upstream MLIR input (see "
            "docs/upstream_mlir.md for the ops it parses and lowers)")


def verify_upstream(module) -> None:
    """xDSL's verification of upstream input, as a VerifyError at the failing op."""
    from xdsl.utils.exceptions import VerifyException

    from asterism.errors import SourceLocation, VerifyError

    for op in module.walk():
        try:
            op.verify_()
        except VerifyException as err:
            loc = op.location
            where = (SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
                     if hasattr(loc, "filename") else None)
            raise VerifyError(f"{op.name}: {str(err).splitlines()[0]}", where) from None


def parse_upstream(text: str, filename: str = "<input>", verify: bool = True
                   ) -> BuiltinModuleOp:
    """Parse upstream MLIR text (amdgcn modules beside it included); errors are ParseError
    (syntax, unsupported ops) or VerifyError (rules), at file:line:col."""
    from asterism.ir.text import parse_text

    module = parse_text(text, filename, make_upstream_context(), unsupported_op_message)
    if verify:
        from asterism.ir.verify import verify_module

        verify_upstream(module)
        verify_module(module)
    return module


__all__ = ["has_upstream", "is_upstream_text", "make_upstream_context", "parse_upstream",
           "verify_upstream"]
