"""Per-kernel layout facts derived from the IR: kernarg offsets, LDS offsets, ABI registers.

The ABI value ops (`amdgcn.kernarg_ptr`, `amdgcn.workgroup_id`, ...) say which dispatch inputs
a kernel reads; the registers they arrive in follow the AMDHSA ABI for the enabled set (user
SGPRs first, then the workgroup-id system SGPRs; work-item ids packed in v0), computed by
`asterism.mc.kernel_abi` so the descriptor and the IR agree by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Operation

from asterism.ir.ops import (
    DispatchIdOp,
    DispatchPtrOp,
    KernargPtrOp,
    KernelOp,
    LdsAllocOp,
    QueuePtrOp,
    WorkgroupIdOp,
    WorkitemIdOp,
    walk_ops,
)
from asterism.ir.types import KernelArgAttr, RegisterType, SGPRType, VGPRType
from asterism.mc.kernel_abi import kernarg_layout, system_sgpr_layout, user_sgpr_layout
from asterism.mc.program import AbiRequest, KernelArg

USER_SGPR_OPS = {KernargPtrOp: "kernarg_ptr", DispatchPtrOp: "dispatch_ptr",
                 QueuePtrOp: "queue_ptr", DispatchIdOp: "dispatch_id"}
WORKITEM_ID_VGPR = 0  # gfx90a+: x, y, z packed in v0 (10 bits each)


@dataclass
class KernelLayout:
    """What a kernel's ops imply: argument and LDS offsets, the ABI request and registers."""

    arg_offsets: dict[str, int] = field(default_factory=dict)
    lds_offsets: dict[str, int] = field(default_factory=dict)
    lds_used: int = 0  # bytes up to the end of the last allocation
    abi: AbiRequest = field(default_factory=AbiRequest)
    lds_ops: list[LdsAllocOp] = field(default_factory=list)

    def abi_register(self, op: Operation) -> RegisterType | None:
        """The register the ABI puts this ABI value op's input in."""
        if type(op) in USER_SGPR_OPS:
            first = user_sgpr_layout(self.abi)[USER_SGPR_OPS[type(op)]]
            return SGPRType(first, 2)
        if isinstance(op, WorkgroupIdOp):
            return SGPRType(system_sgpr_layout(self.abi)[f"workgroup_id_{op.dim.data}"])
        if isinstance(op, WorkitemIdOp):
            return VGPRType(WORKITEM_ID_VGPR)
        return None


def mc_kernel_args(args: list[KernelArgAttr]) -> list[KernelArg]:
    """The MC-level argument list (offsets assigned in order, natural alignment)."""
    out = [KernelArg(name=a.arg_name.data, kind=a.kind.data, size=a.size,
                     access=a.access.data or None, dtype=a.dtype.data or None) for a in args]
    kernarg_layout(out)  # assigns the offsets in place
    return out


def abi_ops(kernel: KernelOp) -> list[Operation]:
    """The ABI value ops of a kernel, in program order."""
    kinds = (*USER_SGPR_OPS, WorkgroupIdOp, WorkitemIdOp)
    return [op for op in kernel.walk() if isinstance(op, kinds)]


# What each op class means to the layout, in the order compute_layout tests them: a user
# SGPR input (its AbiRequest field), "workgroup_id", "workitem_id", "lds" or None.
_LAYOUT_TESTS: tuple[tuple[type[Operation], str], ...] = (
    *((cls, field_name) for cls, field_name in USER_SGPR_OPS.items()),
    (WorkgroupIdOp, "workgroup_id"), (WorkitemIdOp, "workitem_id"), (LdsAllocOp, "lds"))
_LAYOUT_ROLE: dict[type, str | None] = {}


def _layout_role(cls: type) -> str | None:
    # Per class, once: isinstance() on these ABC-based op classes is slow, and a kernel body
    # is thousands of ops of a few classes.
    role = _LAYOUT_ROLE.get(cls, "?")
    if role == "?":
        role = _LAYOUT_ROLE[cls] = next(
            (name for kind, name in _LAYOUT_TESTS if issubclass(cls, kind)), None)
    return role


def compute_layout(kernel: KernelOp) -> KernelLayout:
    """The layout facts of `kernel` (no checking; see ir.verify for the errors)."""
    layout = KernelLayout()
    for arg in mc_kernel_args(kernel.args):
        layout.arg_offsets.setdefault(arg.name, arg.offset)  # first of duplicate names
    wg = [False, False, False]
    dims = 1
    req = layout.abi
    offset = 0
    roles = _LAYOUT_ROLE
    # (one walk: ABI inputs and LDS allocations in program order; a stand-in that is not an
    # op, such as liveness's view of the ABI ops, gives its own walk)
    ops = walk_ops(kernel) if isinstance(kernel, Operation) else kernel.walk()
    for op in ops:
        role = roles.get(type(op), "?")
        if role == "?":
            role = _layout_role(type(op))
        if role is None:
            continue
        if role == "lds":
            align = max(1, op.alignment.data)
            offset = -(-offset // align) * align
            layout.lds_offsets.setdefault(op.sym.data, offset)
            layout.lds_ops.append(op)
            offset += op.size.data
        elif role == "workgroup_id":
            if op.dim.data in "xyz":
                wg["xyz".index(op.dim.data)] = True
        elif role == "workitem_id":
            if op.dim.data in "xyz":
                dims = max(dims, "xyz".index(op.dim.data) + 1)
        else:
            setattr(req, role, True)
    req.workgroup_ids = (wg[0], wg[1], wg[2])
    req.workitem_id_dims = dims
    layout.lds_used = offset
    return layout


def lds_size(kernel: KernelOp, layout: KernelLayout) -> int:
    """The LDS bytes the kernel declares: the explicit lds_size, else what it allocates."""
    if kernel.lds_size is not None:
        return kernel.lds_size.value.data
    return layout.lds_used
