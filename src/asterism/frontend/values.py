"""Values of the upstream lowering (asterism.frontend): what an upstream SSA value
became (a constant, SGPRs, VGPRs, a memref), how MLIR types map to registers, and the
materialization helpers every op lowering uses.

Representation: `index` and integers up to 32 bits are one 32-bit register (index is 32-bit:
buffers address at most 4 GiB), `i1` is 0 or 1 in a 32-bit register, f16/bf16 sit in the low
half of a register, i64/f64 take a pair, vectors are packed little-endian into
ceil(bits/32) consecutive registers (two f16 or four 8-bit values per register), which is the
operand packing of MFMA and of buffer loads. A value the same in every lane (derived only from
constants, kernel arguments, block ids and sizes, and loop counters of uniform loops) lives in
SGPRs ("s"), the others in VGPRs ("v").
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from asterism.errors import VerifyError
from asterism.frontend.dialects.gpu import memref_space
from asterism.ir.ops import op_location


class LoweringError(VerifyError):
    """An upstream op, type or shape asterism cannot lower."""


def fail(op: Operation, message: str) -> LoweringError:
    """A LoweringError naming `op` at its location."""
    return LoweringError(f"{op.name}: {message}", op_location(op))


FP8_NAMES = {"f8E4M3FNUZ": ("fp8", "gfx942"), "f8E5M2FNUZ": ("bf8", "gfx942"),
             "f8E4M3FN": ("fp8", "gfx950"), "f8E5M2": ("bf8", "gfx950")}


# Other small float types (gfx950 f8f6f4 MFMA sources and E8M0 scales): bits per element.
SMALL_FLOAT_BITS = {"f6E2M3FN": 6, "f6E3M2FN": 6, "f4E2M1FN": 4, "f8E8M0FNU": 8}


def fp8_kind(t: Attribute) -> tuple[str, str] | None:
    """('fp8' or 'bf8', the target whose hardware format it is) for an 8-bit float type."""
    return FP8_NAMES.get(getattr(t, "name", ""))


def elem_bits(t: Attribute) -> int:
    """Bits of a scalar type (index counts 32)."""
    if isinstance(t, IndexType):
        return 32
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, Float16Type | BFloat16Type):
        return 16
    if isinstance(t, Float32Type):
        return 32
    if isinstance(t, Float64Type):
        return 64
    if fp8_kind(t) is not None:
        return 8
    small = SMALL_FLOAT_BITS.get(getattr(t, "name", ""))
    if small is not None:
        return small
    raise VerifyError(f"type {t} is not supported (index, i1..i64, f16, bf16, f32, f64, "
                      "8-, 6- and 4-bit floats)")


def type_bits(t: Attribute) -> int:
    """Bits a value of type `t` occupies packed (vectors: elements times element bits)."""
    if isinstance(t, VectorType):
        count = 1
        for d in t.get_shape():
            count *= d
        return count * elem_bits(t.element_type)
    bits = elem_bits(t)
    return 32 if bits == 1 else bits


def reg_count(t: Attribute) -> int:
    """32-bit registers a value of type `t` takes."""
    return max(1, -(-type_bits(t) // 32))


def type_name(t: Attribute) -> str:
    """Short name of a scalar type (i32, f16, index...)."""
    if isinstance(t, IndexType):
        return "index"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    return {Float16Type: "f16", BFloat16Type: "bf16", Float32Type: "f32",
            Float64Type: "f64"}.get(type(t), str(t))


def is_float(t: Attribute) -> bool:
    """f16, bf16, f32 or f64."""
    return isinstance(t, Float16Type | BFloat16Type | Float32Type | Float64Type)


def float_bits(value: float, t: Attribute) -> int:
    """The bit pattern of `value` in float type `t` (unsigned)."""
    if isinstance(t, Float32Type):
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if isinstance(t, Float16Type):
        return struct.unpack("<H", struct.pack("<e", value))[0]
    if isinstance(t, BFloat16Type):
        f = struct.unpack("<I", struct.pack("<f", value))[0]
        return ((f + 0x7FFF + ((f >> 16) & 1)) >> 16) & 0xFFFF  # round to nearest even
    if isinstance(t, Float64Type):
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    raise VerifyError(f"not a float type: {t}")


def const_words(values: list, t: Attribute) -> list[int]:
    """Pack constant element values of scalar type `t` into 32-bit words."""
    bits = elem_bits(t)
    bits = 32 if bits == 1 else bits
    raw = [float_bits(v, t) if is_float(t) else int(v) & ((1 << bits) - 1) for v in values]
    words: list[int] = []
    acc, filled = 0, 0
    for r in raw:
        acc |= r << filled
        filled += bits
        while filled >= 32:
            words.append(acc & 0xFFFFFFFF)
            acc >>= 32
            filled -= 32
    if filled:
        words.append(acc & 0xFFFFFFFF)
    return words


@dataclass
class MemInfo:
    """A memref the kernel can address: its buffer resource (global) or LDS offset."""

    type: MemRefType
    space: str  # "global" or "workgroup"
    rsrc: SSAValue | None = None  # 4 SGPRs (global)
    lds_offset: int = 0  # byte offset of the allocation (workgroup)
    nbytes: int | LV = 0  # an LV (SGPR) when a size is dynamic
    # elements; a dynamic stride or size (memref<?x128xf16>) is an LV read from the kernel
    # argument's memref descriptor (asterism.frontend.kernel)
    strides: list[int | LV] = field(default_factory=list)
    offset: LV | None = None  # elements from the resource's start (a memref.subview's)
    sizes: list[int | LV] = field(default_factory=list)

    @property
    def dynamic(self) -> bool:
        """Whether a size or stride is known only at run time."""
        return any(not isinstance(v, int) for v in self.sizes + self.strides)

    @property
    def elem(self) -> Attribute:
        """The element type."""
        return self.type.element_type

    @property
    def elem_bytes(self) -> int:
        """Bytes per element."""
        return type_bits(self.elem) // 8


@dataclass
class LV:
    """A lowered value: kind "c" (constant: `value` is the list of 32-bit words, or for a
    scalar `scalar` the Python number), "s" (SGPRs), "v" (VGPRs) or "m" (a memref)."""

    kind: str
    type: Attribute
    value: object
    scalar: object = None

    @property
    def regs(self) -> int:
        """32-bit registers."""
        return reg_count(self.type)

    @property
    def uniform(self) -> bool:
        """The same in every lane (constant or SGPR)."""
        return self.kind in ("c", "s")


def memref_info(t: MemRefType, op: Operation, dynamic: bool = False) -> MemInfo:
    """Shape, strides and size of a static memref (identity or strided layout); `op` is
    what an error names. With `dynamic`, dynamic sizes are allowed (a kernel argument's,
    whose descriptor gives them): such sizes, the strides that depend on them and `nbytes`
    are None for the caller to fill."""
    shape = list(t.get_shape())
    if any(d < 0 for d in shape) and not dynamic:
        raise fail(op, f"memref {t} has a dynamic size: only a kernel argument's sizes may be "
                       "dynamic (they are passed in its memref descriptor); give the memref "
                       "a static shape")
    where = memref_space(t)
    if where not in ("global", "workgroup", "fat_raw_buffer"):
        raise fail(op, f"memref {t} is in {where}; global and workgroup memory are "
                       "supported")
    strides: list = []
    acc: int | None = 1
    for d in reversed(shape):
        strides.insert(0, acc)  # identity layout: None once a later size is dynamic
        acc = acc * d if acc is not None and d >= 0 else None
    layout = getattr(t, "layout", None)
    if layout is not None and type(layout).__name__ not in ("NoneAttr",):
        get = getattr(layout, "get_strides", None)
        if get is not None and get() is not None and list(get()) != strides:
            raise fail(op, f"memref {t}: only the identity layout is supported")
    info = MemInfo(t, "workgroup" if where == "workgroup" else "global",
                   strides=strides, sizes=[d if d >= 0 else None for d in shape])
    info.nbytes = acc * info.elem_bytes if acc is not None else None  # type: ignore[assignment]
    return info


def const_lv(value, t: Attribute) -> LV:
    """A scalar constant."""
    if isinstance(t, IntegerType) and t.width.data == 1:
        value = int(bool(value))
    return LV("c", t, const_words([value], t), scalar=value)


INLINE_FLOATS = {0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0}


def signed32(word: int) -> int:
    """A 32-bit word as a signed Python int (the builder's i32 constants are signed)."""
    word &= 0xFFFFFFFF
    return word - (1 << 32) if word & 0x80000000 else word


__all__ = ["LV", "INLINE_FLOATS", "LoweringError", "MemInfo", "const_lv", "const_words",
           "elem_bits", "fail", "float_bits", "fp8_kind", "is_float", "memref_info",
           "reg_count", "signed32", "type_bits", "type_name"]
