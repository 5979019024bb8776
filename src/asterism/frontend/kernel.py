"""A gpu.func kernel's entry: its signature becomes kernel arguments (a static memref is a
global buffer pointer, turned into a buffer resource whose num_records is the memref's size; a
memref with a dynamic size is MLIR's memref descriptor, one kernel argument per field; a
scalar is a by-value argument), its workgroup attributions LDS allocations; then its body is
lowered op by op through the handler table.

Memref arguments follow MLIR's gpu-to-rocdl lowering (mlir/test/Conversion/GPUToROCDL/
memref.mlir): with `use-bare-ptr-memref-call-conv=true` a memref is one pointer, which MLIR
allows for static shapes only; by default it is expanded into its descriptor's fields
(allocated pointer, aligned pointer, offset, sizes[rank], strides[rank]; i64 each but the
pointers). asterism passes a static memref as the bare pointer and a memref with a dynamic
size as the descriptor, so a host that launches the MLIR-lowered kernel with the default
convention packs the same arguments. The fields are named `NAME`, `NAME.aligned`,
`NAME.offset`, `NAME.size0`..., `NAME.stride0`...; asterism's launch fills them from one
NumPy array (asterism.runtime.kernargs)."""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, MemRefType, i32
from xdsl.ir import Operation, SSAValue

from asterism.frontend.emit import int_binary
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import buffer_resource, scaled
from asterism.frontend.values import (
    LV,
    const_lv,
    fail,
    memref_info,
    reg_count,
    type_bits,
    type_name,
)


def lower_kernel(func_op, kb, target: str, handlers: HandlerTable,
                 functions: dict[str, Operation]) -> KernelLowering:
    """Declare the kernel's arguments and LDS attributions on `kb`, then lower its body."""
    low = KernelLowering(func_op, kb, target, handlers)
    low.functions = functions
    block = func_op.body.blocks[0]
    start = low.mark()
    ninputs = len(func_op.function_type.inputs.data)
    args = [_argument(low, arg, k) for k, arg in enumerate(block.args[:ninputs])]
    for arg, lv in zip(block.args, args):  # descriptors after all the kernarg loads
        if lv.kind == "m":
            if lv.value.nbytes is None:
                lv.value.nbytes = _dynamic_nbytes(low, lv.value)
            nbytes = lv.value.nbytes
            lv.value.rsrc = buffer_resource(kb, lv.value.rsrc, nbytes if isinstance(
                nbytes, int) else low.sgpr(nbytes))
        low.set(arg, lv)
    _workgroup_attributions(low, block.args[ninputs:])
    low.locate(start, func_op.location)  # the entry's argument loads: the gpu.func's line
    if len(func_op.body.blocks) > 1:
        from asterism.frontend.blocks import lower_blocks

        lower_blocks(low, func_op.body)
    else:
        low.lower_block(block)
    return low


def _argument(low: KernelLowering, arg: SSAValue, k: int) -> LV:
    name = arg.name_hint or f"arg{k}"
    t = arg.type
    kb = low.kb
    if isinstance(t, MemRefType):
        info = memref_info(t, low.func, dynamic=True)
        karg = kb.arg_buffer(name, _dtype(t.element_type))
        if None in info.sizes:
            if info.space != "global":
                raise fail(low.func, f"argument {k}: memref {t} has a dynamic size: only a "
                                     "global memref's sizes may be dynamic")
            return _descriptor(low, name, t, info)
        info.rsrc = kb.s_load_dwordx2(None, kb.kernarg_ptr(), karg)  # the pointer, for now
        return LV("m", t, info)
    if type_bits(t) > 64 or reg_count(t) > 2:
        raise fail(low.func, f"argument {k} of type {t} is not supported (memrefs and "
                             "scalars of at most 64 bits)")
    dtype = "i64" if isinstance(t, IndexType) else _dtype(t)
    if dtype == "i1":
        dtype = "i32"
    karg = kb.arg_value(name, dtype)
    if reg_count(t) == 2:
        return LV("s", t, kb.s_load_dwordx2(None, kb.kernarg_ptr(), karg))
    if dtype == "i64":  # index: the low 32 bits
        return LV("s", t, kb.sub(kb.s_load_dwordx2(None, kb.kernarg_ptr(), karg), 0))
    return LV("s", t, kb.s_load_dword(None, kb.kernarg_ptr(), karg))


def _descriptor(low: KernelLowering, name: str, t: MemRefType, info) -> LV:
    """A memref with a dynamic size: the fields of its descriptor after the allocated
    pointer (declared by the caller) are kernel arguments; the dynamic sizes and strides are
    read from them (their low 32 bits: index arithmetic is 32-bit), the static ones are the
    type's, as MLIR's lowering uses them. The identity layout's offset is 0 (the field is
    passed, not read)."""
    kb = low.kb
    rank = len(info.sizes)
    aligned = kb.arg_buffer(f"{name}.aligned", _dtype(t.element_type))
    kb.arg_value(f"{name}.offset", "i64")
    sizes = [kb.arg_value(f"{name}.size{d}", "i64") for d in range(rank)]
    strides = [kb.arg_value(f"{name}.stride{d}", "i64") for d in range(rank)]

    def field(karg) -> LV:
        return LV("s", IndexType(), kb.sub(kb.s_load_dwordx2(None, kb.kernarg_ptr(), karg), 0))

    info.rsrc = kb.s_load_dwordx2(None, kb.kernarg_ptr(), aligned)
    info.sizes = [s if s is not None else field(sizes[d]) for d, s in enumerate(info.sizes)]
    info.strides = [s if s is not None else field(strides[d])
                    for d, s in enumerate(info.strides)]
    return LV("m", t, info)


def _dynamic_nbytes(low: KernelLowering, info) -> LV:
    """num_records of a memref with a dynamic size: size0 * stride0 elements (the identity
    layout's extent) in bytes."""
    def lv(v) -> LV:
        return v if isinstance(v, LV) else const_lv(v, i32)

    extent = int_binary(low, "arith.muli", lv(info.sizes[0]), lv(info.strides[0]), i32)
    return scaled(low, extent, info.elem_bytes)


def _workgroup_attributions(low: KernelLowering, args) -> None:
    for k, arg in enumerate(args):
        t = arg.type
        if not isinstance(t, MemRefType):
            raise fail(low.func, f"attribution {k} is not a memref")
        info = memref_info(t, low.func)
        alloc = low.kb.lds_alloc(arg.name_hint or f"wg{k}", info.nbytes,
                                 max(4, info.elem_bytes))
        info.lds_offset = alloc.offset
        low.set(arg, LV("m", t, info))


def _dtype(t) -> str:
    """The metadata type of a kernel argument or buffer element ("" when it has none)."""
    name = type_name(t)
    if name == "index":
        return "i64"
    if name.startswith("i") and name not in ("i8", "i16", "i32", "i64"):
        return "i32"
    return name if name in ("i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64") else ""


__all__ = ["lower_kernel"]
