"""`lower-upstream`: upstream MLIR kernels (gpu, arith, vector, memref, scf, func and amdgpu
dialects) -> amdgcn IR with relocatable registers.

    asterism compile k.mlir                       # implied pipeline: lower-upstream,auto
    asterism opt --pipeline lower-upstream k.mlir # the amdgcn IR before allocation

Every `gpu.func ... kernel` of every `gpu.module` becomes an `amdgcn.kernel` of an
`amdgcn.module` of the same name, written through a KernelBuilder; `amdgcn.module`s already in
the input are left as they are. Kernel arguments come from the signature (asterism.frontend.
kernel), the workgroup size from `known_block_size` (default 64x1x1). Values the same in every
lane live in SGPRs, the others in VGPRs (asterism.frontend.values, .uniformity); memrefs are
accessed through buffer resources whose num_records is the memref's size in bytes, so an
out-of-range access reads 0 and drops writes as the hardware does (.memory). Structured
control flow becomes branches (.scf), a body of several blocks (cf.br, cf.cond_br) is laid
out with labels (.cf). Nothing is removed as dead code.

Each op is lowered by the handler its class has in `handler_table()`, merged from the tables
of the dialect modules (.gpu, .func, .arith, .scf, .cf, .memref, .vector, .transfer, .amdgpu,
.math); this is the only module that imports them all. Ops outside the supported set
(docs/upstream_mlir.md) are an error naming the op, its location and, where it helps, what is
supported.
"""

from __future__ import annotations

from functools import cache

from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from asterism.frontend.dialects.gpu import GpuFuncOp, GpuModuleOp, RocdlTargetAttr
from asterism.frontend.lowering import Handler, block_size, merge_tables
from asterism.frontend.values import fail

SUMMARY = "lower upstream gpu/amdgpu/arith/vector/memref/scf kernels to amdgcn IR " \
          "(relocatable registers)"
DEFAULT_TARGET = "gfx942"
SUPPORTED_CHIPS = ("gfx942", "gfx950")


@cache
def handler_table() -> dict[type[Operation], Handler]:
    """Every op class the lowering supports -> its handler (the dialect modules' tables)."""
    from asterism.frontend import (
        amdgpu,
        arith,
        cf,
        func,
        gpu,
        math,
        memref,
        scf,
        transfer,
        vector,
    )

    return merge_tables(gpu.HANDLERS, func.HANDLERS, arith.HANDLERS, scf.HANDLERS,
                        cf.HANDLERS, memref.HANDLERS, vector.HANDLERS, transfer.HANDLERS,
                        amdgpu.HANDLERS, math.HANDLERS)


def _target_of(module: BuiltinModuleOp, option: str | None) -> str:
    if option:
        return option
    attr = module.attributes.get("asterism.target")
    if isinstance(attr, StringAttr):
        return attr.data
    return DEFAULT_TARGET


def _module_target(gpu_module, default: str) -> str:
    """The chip of the gpu.module's `#rocdl.target` (the first one that names a chip), else
    `default`; `--target` / `api.retarget` / the pass option override it."""
    for attr in (gpu_module.targets.data if gpu_module.targets is not None else ()):
        if isinstance(attr, RocdlTargetAttr) and attr.chip is not None:
            if attr.chip not in SUPPORTED_CHIPS:
                raise fail(gpu_module, f"#rocdl.target chip \"{attr.chip}\" is not supported "
                                       f"(asterism compiles for {', '.join(SUPPORTED_CHIPS)})")
            return attr.chip
    return default


def lower_gpu_module(gpu_module, target: str):
    """An amdgcn.module holding the kernels of a gpu.module."""
    from asterism.builder import ModuleBuilder
    from asterism.frontend.kernel import lower_kernel

    mb = ModuleBuilder(gpu_module.sym_name.data, target)
    funcs = {}
    for op in gpu_module.body.ops:
        if isinstance(op, GpuFuncOp | FuncOp):
            funcs[op.sym_name.data] = op
    for op in gpu_module.body.ops:
        if isinstance(op, GpuFuncOp) and op.is_kernel:
            kb = mb.kernel(op.sym_name.data, workgroup_size=block_size(op))
            lower_kernel(op, kb, target, handler_table(), funcs)
        elif not isinstance(op, GpuFuncOp | FuncOp):
            raise fail(op, "not supported inside a gpu.module (gpu.func and func.func are)")
    if not mb.kernels:
        raise fail(gpu_module, "holds no `gpu.func ... kernel`")
    top = mb.finish()
    return top.body.blocks[0].first_op


def lower_upstream(module: BuiltinModuleOp, target: str | None = None) -> None:
    """Replace every gpu.module by the amdgcn.module of its kernels (the `lower-upstream`
    pass; `target` is its option)."""
    chosen = _target_of(module, target)
    explicit = bool(target) or "asterism.target" in module.attributes
    for op in list(module.body.blocks[0].ops):
        if isinstance(op, GpuModuleOp):
            new = lower_gpu_module(op, chosen if explicit else _module_target(op, chosen))
            new.detach()
            module.body.blocks[0].insert_op_before(new, op)
            op.detach()
            op.erase(safe_erase=False)
        elif op.name.split(".")[0] not in ("amdgcn", "func"):
            raise fail(op, "not supported at the top level (gpu.module and amdgcn.module are)")
    if "gpu.container_module" in module.attributes:
        del module.attributes["gpu.container_module"]
    if "asterism.target" in module.attributes:
        del module.attributes["asterism.target"]


__all__ = ["SUMMARY", "handler_table", "lower_gpu_module", "lower_upstream"]
