"""Reading upstream MLIR: the parsing context of upstream input (builtin, func, arith, scf,
memref, vector, gpu, amdgpu, rocdl, math, cf and amdgcn, so one file may hold both kinds of
kernels), `parse_upstream` (located errors, xDSL's verification at the failing op), and whether
text or a module holds upstream kernels.

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
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.cf import Cf
    from xdsl.dialects.func import Func
    from xdsl.dialects.math import Math
    from xdsl.dialects.scf import Scf
    from xdsl.dialects.vector import Vector

    from asterism.frontend.dialects.amdgpu import AMDGPU
    from asterism.frontend.dialects.arith import upstream_arith
    from asterism.frontend.dialects.memref import upstream_memref
    from asterism.frontend.dialects.vector import VECTOR_EXTRA_OPS
    from asterism.ir.dialect import AMDGCN

    # (asterism.ir.dialect.make_context's dialects, with the arith ops MLIR 22 writes on
    # vectors in place of xDSL's; xDSL's own scf: upstream loops count in index)
    ctx = Context()
    vector = Dialect("vector", list(Vector.operations) + VECTOR_EXTRA_OPS,
                     list(Vector.attributes))
    for dialect in (Builtin, upstream_arith(), Func, AMDGCN, Scf, upstream_memref(), vector,
                    GPU, AMDGPU, ROCDL, Math, Cf):
        ctx.load_dialect(dialect)
    return ctx


def is_upstream_text(text: str) -> bool:
    """Whether IR text holds upstream kernels (a gpu.module, custom or generic form)."""
    return "gpu.module" in text


def has_upstream(module: Operation) -> bool:
    """Whether a module holds upstream kernels (a gpu.module) still to lower."""
    from asterism.ir.ops import ops_with_regions

    # (a gpu.module has a region: the instructions of a kernel are not looked at one by one)
    return any(isinstance(op, GpuModuleOp) for op in ops_with_regions(module))


def unsupported_op_message(name: str) -> str:
    """The parse error for an op upstream input may not hold."""
    from asterism.frontend.dialects.amdgpu import NOT_ON_CDNA

    if name in NOT_ON_CDNA:
        return (f"{name} is an op of {NOT_ON_CDNA[name]}: it does not exist on the CDNA "
                "targets asterism compiles for (gfx942, gfx950)")
    return (f"{name} is not supported by asterism's upstream MLIR input (see "
            "docs/upstream_mlir.md for the ops it parses and lowers)")


def max_vector_bits() -> int:
    """Bits of the largest vector value a work-item can hold: its whole unified vector
    register file on the largest known target (the lowering keeps vectors in registers)."""
    from asterism.target import get_target, known_targets

    return max(get_target(t).vgpr.unified_per_lane for t in known_targets()) * 32


def vector_bits(t) -> int | None:
    """Bits of a vector type's value (None for other types)."""
    from xdsl.dialects.builtin import VectorType

    if not isinstance(t, VectorType):
        return None
    width = getattr(t.element_type, "bitwidth", 64)  # (index and the like: 64 bits)
    count = 1
    for dim in t.get_shape():
        count *= max(dim, 1)
    return count * width


def verify_upstream(module) -> None:
    """xDSL's verification of upstream input, as a VerifyError at the failing op; vector
    values larger than a register file are refused here, before the lowering makes one
    register op per element (vector<10000000xf32> took 17 s and 435 MB)."""
    from xdsl.utils.exceptions import VerifyException

    from asterism.errors import SourceLocation, VerifyError

    limit = max_vector_bits()
    for op in module.walk():
        loc = op.location
        where = (SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
                 if hasattr(loc, "filename") else None)
        for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            bits = vector_bits(value.type)
            if bits is not None and bits > limit:
                raise VerifyError(f"{op.name}: a {value.type} value holds {bits} bits: more "
                                  f"than the {limit} bits of a work-item's vector registers",
                                  where)
        try:
            op.verify_()
        except VerifyException as err:
            raise VerifyError(f"{op.name}: {str(err).splitlines()[0]}", where) from None


class HostCodeSkipped(UserWarning):
    """A note: host code (a function launching kernels) beside a gpu.module was skipped."""


def skip_host_code(module: BuiltinModuleOp) -> None:
    """Drop the top-level functions that launch kernels (`gpu.launch_func`: host code), each
    with a note: asterism compiles the gpu.module's kernels, launched by asterism.launch."""
    import warnings

    from xdsl.dialects.func import FuncOp

    from asterism.ir.ops import op_location

    for op in list(module.ops):
        if isinstance(op, FuncOp) and any(inner.name == "gpu.launch_func"
                                          for inner in op.walk()):
            where = op_location(op)
            # (located at the user's file, not at asterism's line that warns)
            warnings.warn_explicit(
                f"note: host function @{op.sym_name.data} (gpu.launch_func) skipped: asterism "
                "compiles the gpu.module's kernels only (launch them with asterism.launch or "
                "`asterism run`)", HostCodeSkipped,
                where.file if where is not None else "<input>",
                where.line if where is not None else 0)
            op.detach()
            op.erase(safe_erase=False)


def parse_upstream(text: str, filename: str = "<input>", verify: bool = True
                   ) -> BuiltinModuleOp:
    """Parse upstream MLIR text (amdgcn modules beside it included); errors are ParseError
    (syntax, unsupported ops) or VerifyError (rules), at file:line:col."""
    from asterism.ir.text import parse_text

    module = parse_text(text, filename, make_upstream_context(), unsupported_op_message)
    skip_host_code(module)
    if verify:
        from asterism.ir.dominance import check_dominance
        from asterism.ir.verify import verify_module

        check_dominance(module)  # (first: xDSL's checks fail on a use before a definition)
        verify_upstream(module)
        verify_module(module)
    return module


__all__ = ["HostCodeSkipped", "has_upstream", "is_upstream_text", "make_upstream_context",
           "max_vector_bits", "parse_upstream", "skip_host_code", "vector_bits",
           "verify_upstream"]
