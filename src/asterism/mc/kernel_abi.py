"""What a kernel's descriptor and metadata say, computed from its instructions and ABI request.

One source for both the `.amdhsa_kernel` block the asm printer writes and the descriptor the
HSACO writer encodes: register counts from the registers used, user/system SGPR enables from
the `AbiRequest`, the kernarg segment layout (explicit arguments, then the code object v5
hidden arguments), LDS size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asterism.errors import VerifyError
from asterism.isa import Form
from asterism.mc.inst import Inst
from asterism.mc.operands import Mod, Reg, Special
from asterism.mc.program import AbiRequest, KernelArg, LabelDef, McKernel
from asterism.target import get_target

# Code object v5 hidden kernel arguments (AMDGPUUsage "Code Object V5 Metadata"): offsets
# relative to the start of the hidden block, which follows the explicit arguments aligned to 8.
HIDDEN_ARGS: list[tuple[str, int, int]] = [
    ("hidden_block_count_x", 0, 4), ("hidden_block_count_y", 4, 4),
    ("hidden_block_count_z", 8, 4), ("hidden_group_size_x", 12, 2),
    ("hidden_group_size_y", 14, 2), ("hidden_group_size_z", 16, 2),
    ("hidden_remainder_x", 18, 2), ("hidden_remainder_y", 20, 2),
    ("hidden_remainder_z", 22, 2), ("hidden_global_offset_x", 40, 8),
    ("hidden_global_offset_y", 48, 8), ("hidden_global_offset_z", 56, 8),
    ("hidden_grid_dims", 64, 2),
]
HIDDEN_BLOCK_SIZE = 256

# User SGPRs in the order the hardware loads them, with their sizes (AMDGPUUsage).
USER_SGPRS: list[tuple[str, int]] = [
    ("private_segment_buffer", 4), ("dispatch_ptr", 2), ("queue_ptr", 2),
    ("kernarg_ptr", 2), ("dispatch_id", 2), ("flat_scratch_init", 2),
    ("private_segment_size", 1),
]


@dataclass
class RegisterUsage:
    """Registers an instruction stream touches."""

    vgprs: int = 0  # next free ArchVGPR
    agprs: int = 0  # next free AGPR
    sgprs: int = 0  # next free SGPR (s0..s101)
    vcc: bool = False
    flat_scratch: bool = False
    xnack_mask: bool = False


def register_usage(body: list[Inst | LabelDef]) -> RegisterUsage:
    """The highest registers used by the instructions (operands and implicit vcc)."""
    vgprs = agprs = sgprs = 0  # next free register per file
    vcc = flat_scratch = xnack_mask = False
    implicit_vcc: dict[int, bool] = {}  # id(form) -> whether it reads or writes vcc
    specials: set[str] = set()  # (the special registers named, looked at once at the end)
    # (type tests rather than isinstance: the operand classes have no subclasses, and this
    # loop visits every operand of a file)
    for item in body:
        if not isinstance(item, Inst):
            continue
        for op in item.operands:
            t = type(op)
            if t is Mod:
                op = op.operand
                t = type(op)
            if t is Reg:
                kind = op.kind
                if kind == "v":
                    end = op.index + op.count
                    if end > vgprs:
                        vgprs = end
                elif kind == "a":
                    end = op.index + op.count
                    if end > agprs:
                        agprs = end
                elif kind == "s":
                    end = op.index + op.count
                    if end > sgprs:
                        sgprs = end
            elif t is Special:
                specials.add(op.name)
        form = item.form
        if form is not None and not vcc:
            implicit = implicit_vcc.get(id(form))
            if implicit is None:
                implicit = implicit_vcc[id(form)] = _implicit_vcc(form)
            vcc = implicit
    for name in specials:
        if name.startswith("vcc"):
            vcc = True
        elif name.startswith("flat_scratch"):
            flat_scratch = True
        elif name.startswith("xnack_mask"):
            xnack_mask = True
    return RegisterUsage(vgprs=vgprs, agprs=agprs, sgprs=sgprs, vcc=vcc,
                         flat_scratch=flat_scratch, xnack_mask=xnack_mask)


def _implicit_vcc(form: Form) -> bool:
    facts = form.instruction
    return "vcc" in facts.implicit_defs or "vcc" in facts.implicit_uses



def user_sgpr_layout(abi: AbiRequest) -> dict[str, int]:
    """First SGPR of each enabled user SGPR input."""
    enabled = {"kernarg_ptr": abi.kernarg_ptr, "dispatch_ptr": abi.dispatch_ptr,
               "queue_ptr": abi.queue_ptr, "dispatch_id": abi.dispatch_id}
    out, next_sgpr = {}, 0
    for name, size in USER_SGPRS:
        if enabled.get(name):
            out[name] = next_sgpr
            next_sgpr += size
    out["_count"] = next_sgpr
    return out


def system_sgpr_layout(abi: AbiRequest) -> dict[str, int]:
    """SGPR of each enabled workgroup id (after the user SGPRs)."""
    base = user_sgpr_layout(abi)["_count"]
    out = {}
    for dim, on in zip("xyz", abi.workgroup_ids):
        if on:
            out[f"workgroup_id_{dim}"] = base
            base += 1
    out["_end"] = base
    return out


# Element types <-> the C type names LLVM writes in `.type_name` (buffers get a '*').
TYPE_NAMES = {"f32": "float", "f16": "half", "bf16": "__bf16", "f64": "double", "i8": "char",
              "u8": "uchar", "i16": "short", "u16": "ushort", "i32": "int", "u32": "uint",
              "i64": "long", "u64": "ulong"}
DTYPE_OF_TYPE_NAME = {v: k for k, v in TYPE_NAMES.items()}


def kernarg_layout(args: list[KernelArg]) -> tuple[list[dict[str, Any]], int]:
    """Metadata `.args` entries (explicit + v5 hidden) and the kernarg segment size."""
    entries: list[dict[str, Any]] = []
    offset = 0
    for arg in args:
        if arg.size <= 0:
            raise VerifyError(f"kernel argument '{arg.name}' has size {arg.size}")
        align = arg.align or min(8, _pow2_at_least(arg.size))
        if arg.offset >= 0:
            offset = arg.offset
        else:
            offset = -(-offset // align) * align
            arg.offset = offset
        entry: dict[str, Any] = {".name": arg.name, ".offset": offset, ".size": arg.size}
        if arg.dtype in TYPE_NAMES:
            entry[".type_name"] = TYPE_NAMES[arg.dtype] + ("*" if arg.kind == "buffer" else "")
        if arg.kind == "buffer":
            entry[".value_kind"] = "global_buffer"
            entry[".address_space"] = "global"
            if arg.access:
                entry[".access"] = arg.access
        else:
            entry[".value_kind"] = "by_value"
        entries.append(entry)
        offset += arg.size
    hidden_base = -(-offset // 8) * 8
    for name, rel, size in HIDDEN_ARGS:
        entries.append({".offset": hidden_base + rel, ".size": size, ".value_kind": name})
    return entries, hidden_base + HIDDEN_BLOCK_SIZE


class ArgumentLayoutError(VerifyError):
    """A metadata argument the IR cannot lay out; `path` is where it is in the metadata."""

    def __init__(self, path: tuple[str | int, ...], reason: str):
        from asterism.mc.codeobject.schema import format_path

        self.path = path
        super().__init__(f".amdgpu_metadata: {format_path(path)}: {reason}")


VALUE_SIZES = (8, 4, 2, 1)  # the IR's by-value argument sizes (i64, i32, i16, i8)


def padding_args(start: int, stop: int) -> list[KernelArg]:
    """By-value arguments filling the kernarg bytes [start, stop): at each position the
    largest piece (8, 4, 2 or 1 bytes) that is naturally aligned there and fits, so the
    natural layout puts each at its place (a 4 KiB gap is 512 pieces, not 4096)."""
    out: list[KernelArg] = []
    pos = start
    while pos < stop:
        size = next(s for s in VALUE_SIZES if pos % s == 0 and pos + s <= stop)
        out.append(KernelArg(f"_pad{pos}", "value", size, offset=pos,
                             dtype=_VALUE_DTYPES[size]))
        pos += size
    return out


_VALUE_DTYPES = {1: "i8", 2: "i16", 4: "i32", 8: "i64"}


def kernel_args_from_metadata(entries: list[dict[str, Any]], path: tuple[str | int, ...] = ()
                              ) -> list[KernelArg]:
    """The explicit arguments of a metadata `.args` list as the IR lays them out: in order,
    each at its natural alignment, a gap before an argument (AITER kernels space their
    pointers 16 bytes apart) filled with padding arguments so every argument keeps its
    offset. The one reader of argument layouts for `raise` and for assembly read into IR.

    `entries` must have passed the metadata schema (mc.codeobject.schema: offsets and sizes
    inside the kernarg segment, so the padding is bounded). An argument the IR cannot put at
    its offset (overlapping the one before, or below its natural alignment) or of a size the
    IR has no type for is an ArgumentLayoutError naming the field (`path` is where
    `entries` is in the metadata)."""
    out: list[KernelArg] = []
    end = 0  # where the previous argument ends
    for n, a in enumerate(entries):
        kind = str(a.get(".value_kind", ""))
        if kind.startswith("hidden_"):
            continue
        size, offset = a[".size"], a[".offset"]
        name = a.get(".name", f"arg{n}")
        dtype = DTYPE_OF_TYPE_NAME.get(str(a.get(".type_name", "")).rstrip("*"))
        if kind == "global_buffer" and size == 8:
            arg = KernelArg(name, "buffer", 8, offset=offset, access=a.get(".access"),
                            dtype=dtype)
        elif size in VALUE_SIZES:
            arg = KernelArg(name, "value", size, offset=offset, dtype=dtype)
        else:
            raise ArgumentLayoutError((*path, n, ".size"), f"a {kind or 'by_value'} argument "
                                      f"of {size} bytes: the IR's arguments are buffers (8 "
                                      "bytes) or values of 1, 2, 4 or 8 bytes")
        align = min(8, _pow2_at_least(size))
        natural = -(-end // align) * align
        if offset < natural or offset % align:
            raise ArgumentLayoutError((*path, n, ".offset"), f"{offset} is not where the IR "
                                      f"can put a {size}-byte argument (the previous one ends "
                                      f"at {end}; arguments are naturally aligned and do not "
                                      "overlap)")
        if offset > natural:
            out += padding_args(end, offset)
        out.append(arg)
        end = offset + size
    return out


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def kernel_directives(kernel: McKernel, target: str) -> dict[str, int]:
    """The `.amdhsa_*` directive values (without the prefix) for a kernel."""
    if kernel.descriptor_directives:
        return dict(kernel.descriptor_directives)
    t = get_target(target)
    use = register_usage(kernel.body)
    abi = kernel.abi
    sys_end = system_sgpr_layout(abi)["_end"]
    vgprs = kernel.vgpr_count if kernel.vgpr_count is not None else use.vgprs
    agprs = kernel.agpr_count if kernel.agpr_count is not None else use.agprs
    sgprs = kernel.sgpr_count if kernel.sgpr_count is not None else use.sgprs
    # The dispatch writes v0 (work-item ids) and the user/system SGPRs: they count as used.
    vgprs = max(vgprs, 1)
    sgprs = max(sgprs, sys_end)
    if vgprs > t.vgpr.arch or agprs > t.vgpr.acc or sgprs > t.sgpr.addressable:
        raise VerifyError(f"kernel {kernel.name} uses {vgprs} VGPRs, {agprs} AGPRs, {sgprs} SGPRs;"
                          f" {t.name} allows {t.vgpr.arch}, {t.vgpr.acc}, {t.sgpr.addressable}")
    accum = -(-max(vgprs, 1) // 4) * 4
    next_free_vgpr = accum + agprs if agprs else vgprs
    _args, kernarg_size = kernarg_layout([KernelArg(**vars(a)) for a in kernel.args])
    d: dict[str, int] = {
        "group_segment_fixed_size": kernel.lds_size,
        "private_segment_fixed_size": 0,
        "kernarg_size": kernarg_size,
        "user_sgpr_count": user_sgpr_layout(abi)["_count"],
        "user_sgpr_dispatch_ptr": int(abi.dispatch_ptr),
        "user_sgpr_queue_ptr": int(abi.queue_ptr),
        "user_sgpr_kernarg_segment_ptr": int(abi.kernarg_ptr),
        "user_sgpr_dispatch_id": int(abi.dispatch_id),
        "system_sgpr_workgroup_id_x": int(abi.workgroup_ids[0]),
        "system_sgpr_workgroup_id_y": int(abi.workgroup_ids[1]),
        "system_sgpr_workgroup_id_z": int(abi.workgroup_ids[2]),
        "system_vgpr_workitem_id": max(0, abi.workitem_id_dims - 1),
        "next_free_vgpr": next_free_vgpr,
        "next_free_sgpr": sgprs,
        "accum_offset": accum,
        "reserve_vcc": int(use.vcc),
    }
    return d


def _kernarg_segment(args: list[dict[str, Any]], layout_size: int, directives: dict[str, int]
                     ) -> tuple[list[dict[str, Any]], int]:
    """The `.args` entries and `.kernarg_segment_size` of a kernel's computed metadata.

    The segment is the descriptor's `.amdhsa_kernarg_size` when it holds the explicit
    arguments (hidden arguments past it are left out, as LLVM leaves out those a kernel's
    segment does not hold), else the laid-out size (a descriptor may say 0, as AITER's do):
    metadata readers refuse an argument outside the segment."""
    segment = directives.get("kernarg_size", layout_size)
    explicit_end = max((a[".offset"] + a[".size"] for a in args
                        if not a[".value_kind"].startswith("hidden_")), default=0)
    if segment < explicit_end:
        segment = layout_size
    return [a for a in args if a[".offset"] + a[".size"] <= segment], segment


def kernel_metadata(kernel: McKernel, target: str, directives: dict[str, int]
                    ) -> dict[str, Any]:
    """The amdhsa.kernels entry for a kernel (LLVM's key order)."""
    from asterism.mc.codeobject import descriptor_from_directives, make_kernel_metadata

    t = get_target(target)
    args, kernarg_size = kernarg_layout([KernelArg(**vars(a)) for a in kernel.args])
    args, segment = _kernarg_segment(args, kernarg_size, directives)
    kd = descriptor_from_directives(t, directives)
    use = register_usage(kernel.body)
    return make_kernel_metadata(
        kernel.name,
        kernarg_segment_size=segment,
        group_segment_fixed_size=directives.get("group_segment_fixed_size", 0),
        private_segment_fixed_size=directives.get("private_segment_fixed_size", 0),
        wavefront_size=t.wave_size,
        sgpr_count=kd.sgprs(t),
        vgpr_count=max(directives.get("accum_offset", 4) if use.agprs else 0,
                       directives["next_free_vgpr"] - (use.agprs if use.agprs else 0)),
        agpr_count=use.agprs,
        max_flat_workgroup_size=max(1, kernel.workgroup_size[0] * kernel.workgroup_size[1]
                                    * kernel.workgroup_size[2]),
        args=args,
        reqd_workgroup_size=list(kernel.workgroup_size),
    )
