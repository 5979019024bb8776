"""The 64-byte AMDHSA kernel descriptor, every field decoded (AMDGPUUsage "Kernel Descriptor").

Layout (little-endian), as in LLVM's AMDHSAKernelDescriptor.h:

    0  u32 GROUP_SEGMENT_FIXED_SIZE      4 u32 PRIVATE_SEGMENT_FIXED_SIZE
    8  u32 KERNARG_SIZE                 12 u8[4] reserved
    16 i64 KERNEL_CODE_ENTRY_BYTE_OFFSET (code address - descriptor address)
    24 u8[20] reserved                  44 u32 COMPUTE_PGM_RSRC3 (GFX90A+ layout)
    48 u32 COMPUTE_PGM_RSRC1            52 u32 COMPUTE_PGM_RSRC2
    56 u16 KERNEL_CODE_PROPERTIES       58 u16 KERNARG_PRELOAD (length 7 bits, offset 9 bits)
    60 u8[4] reserved

The bit-field registers use the GFX9/GFX90A layouts (gfx942, gfx950). Reserved bits and bytes
are kept, so from_bytes(b).to_bytes() == b for any 64 bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

from asterism.errors import CodeObjectError
from asterism.target import (
    Target,
    accum_offset_field,
    accum_offset_from_field,
    get_target,
    granulated_sgpr_count,
    granulated_vgpr_count,
    sgprs_from_granulated,
    vgprs_from_granulated,
)

KERNEL_DESCRIPTOR_SIZE = 64
KERNEL_DESCRIPTOR_ALIGN = 64
_KD = struct.Struct("<III4sq20sIIIHH4s")
assert _KD.size == KERNEL_DESCRIPTOR_SIZE


class _BitRegister:
    """A register whose dataclass fields are bit fields listed in LAYOUT as (name, shift, width)."""

    LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = ()
    BITS: ClassVar[int] = 32

    def to_int(self) -> int:
        """Pack the fields into the register value (CodeObjectError if one does not fit)."""
        value = 0
        for name, shift, width in self.LAYOUT:
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0 or v >= 1 << width:
                raise CodeObjectError(
                    f"{type(self).__name__}.{name} = {v!r} does not fit in {width} bits"
                )
            value |= v << shift
        return value

    @classmethod
    def from_int(cls, value: int) -> Self:
        """Unpack a register value into fields."""
        return cls(**{n: (value >> s) & ((1 << w) - 1) for n, s, w in cls.LAYOUT})

    def nonzero(self) -> dict[str, int]:
        """The fields that are not zero (a compact view for messages and tests)."""
        return {n: getattr(self, n) for n, _, _ in self.LAYOUT if getattr(self, n)}


@dataclass
class ComputePgmRsrc1(_BitRegister):
    """COMPUTE_PGM_RSRC1 (GFX9 layout)."""

    granulated_workitem_vgpr_count: int = 0
    granulated_wavefront_sgpr_count: int = 0
    priority: int = 0
    float_round_mode_32: int = 0
    float_round_mode_16_64: int = 0
    float_denorm_mode_32: int = 0
    float_denorm_mode_16_64: int = 0
    priv: int = 0
    enable_dx10_clamp: int = 0
    debug_mode: int = 0
    enable_ieee_mode: int = 0
    bulky: int = 0
    cdbg_user: int = 0
    fp16_ovfl: int = 0
    reserved: int = 0

    LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("granulated_workitem_vgpr_count", 0, 6),
        ("granulated_wavefront_sgpr_count", 6, 4),
        ("priority", 10, 2),
        ("float_round_mode_32", 12, 2),
        ("float_round_mode_16_64", 14, 2),
        ("float_denorm_mode_32", 16, 2),
        ("float_denorm_mode_16_64", 18, 2),
        ("priv", 20, 1),
        ("enable_dx10_clamp", 21, 1),
        ("debug_mode", 22, 1),
        ("enable_ieee_mode", 23, 1),
        ("bulky", 24, 1),
        ("cdbg_user", 25, 1),
        ("fp16_ovfl", 26, 1),
        ("reserved", 27, 5),
    )


@dataclass
class ComputePgmRsrc2(_BitRegister):
    """COMPUTE_PGM_RSRC2 (GFX6-GFX11 layout)."""

    enable_private_segment: int = 0
    user_sgpr_count: int = 0
    enable_trap_handler: int = 0
    enable_sgpr_workgroup_id_x: int = 0
    enable_sgpr_workgroup_id_y: int = 0
    enable_sgpr_workgroup_id_z: int = 0
    enable_sgpr_workgroup_info: int = 0
    enable_vgpr_workitem_id: int = 0
    enable_exception_address_watch: int = 0
    enable_exception_memory: int = 0
    granulated_lds_size: int = 0
    enable_exception_ieee_754_fp_invalid_operation: int = 0
    enable_exception_fp_denormal_source: int = 0
    enable_exception_ieee_754_fp_division_by_zero: int = 0
    enable_exception_ieee_754_fp_overflow: int = 0
    enable_exception_ieee_754_fp_underflow: int = 0
    enable_exception_ieee_754_fp_inexact: int = 0
    enable_exception_int_divide_by_zero: int = 0
    reserved: int = 0

    LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("enable_private_segment", 0, 1),
        ("user_sgpr_count", 1, 5),
        ("enable_trap_handler", 6, 1),
        ("enable_sgpr_workgroup_id_x", 7, 1),
        ("enable_sgpr_workgroup_id_y", 8, 1),
        ("enable_sgpr_workgroup_id_z", 9, 1),
        ("enable_sgpr_workgroup_info", 10, 1),
        ("enable_vgpr_workitem_id", 11, 2),
        ("enable_exception_address_watch", 13, 1),
        ("enable_exception_memory", 14, 1),
        ("granulated_lds_size", 15, 9),
        ("enable_exception_ieee_754_fp_invalid_operation", 24, 1),
        ("enable_exception_fp_denormal_source", 25, 1),
        ("enable_exception_ieee_754_fp_division_by_zero", 26, 1),
        ("enable_exception_ieee_754_fp_overflow", 27, 1),
        ("enable_exception_ieee_754_fp_underflow", 28, 1),
        ("enable_exception_ieee_754_fp_inexact", 29, 1),
        ("enable_exception_int_divide_by_zero", 30, 1),
        ("reserved", 31, 1),
    )


@dataclass
class ComputePgmRsrc3(_BitRegister):
    """COMPUTE_PGM_RSRC3 (GFX90A layout: ACCUM_OFFSET and TG_SPLIT)."""

    accum_offset: int = 0
    reserved0: int = 0
    tg_split: int = 0
    reserved1: int = 0

    LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("accum_offset", 0, 6),
        ("reserved0", 6, 10),
        ("tg_split", 16, 1),
        ("reserved1", 17, 15),
    )


@dataclass
class KernelCodeProperties(_BitRegister):
    """KERNEL_CODE_PROPERTIES: which user SGPRs the dispatch sets up, wave32, dynamic stack."""

    enable_sgpr_private_segment_buffer: int = 0
    enable_sgpr_dispatch_ptr: int = 0
    enable_sgpr_queue_ptr: int = 0
    enable_sgpr_kernarg_segment_ptr: int = 0
    enable_sgpr_dispatch_id: int = 0
    enable_sgpr_flat_scratch_init: int = 0
    enable_sgpr_private_segment_size: int = 0
    reserved0: int = 0
    enable_wavefront_size32: int = 0
    uses_dynamic_stack: int = 0
    reserved1: int = 0

    BITS: ClassVar[int] = 16
    LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("enable_sgpr_private_segment_buffer", 0, 1),
        ("enable_sgpr_dispatch_ptr", 1, 1),
        ("enable_sgpr_queue_ptr", 2, 1),
        ("enable_sgpr_kernarg_segment_ptr", 3, 1),
        ("enable_sgpr_dispatch_id", 4, 1),
        ("enable_sgpr_flat_scratch_init", 5, 1),
        ("enable_sgpr_private_segment_size", 6, 1),
        ("reserved0", 7, 3),
        ("enable_wavefront_size32", 10, 1),
        ("uses_dynamic_stack", 11, 1),
        ("reserved1", 12, 4),
    )


@dataclass
class KernargPreload(_BitRegister):
    """KERNARG_PRELOAD: kernarg dwords preloaded into user SGPRs (length) and from where."""

    length: int = 0
    offset: int = 0

    BITS: ClassVar[int] = 16
    LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("length", 0, 7),
        ("offset", 7, 9),
    )


# User SGPRs each KERNEL_CODE_PROPERTIES bit asks for (AMDGPUUsage "Initial Kernel Execution
# State"), in the order the hardware loads them.
_USER_SGPRS = (
    ("enable_sgpr_private_segment_buffer", 4),
    ("enable_sgpr_dispatch_ptr", 2),
    ("enable_sgpr_queue_ptr", 2),
    ("enable_sgpr_kernarg_segment_ptr", 2),
    ("enable_sgpr_dispatch_id", 2),
    ("enable_sgpr_flat_scratch_init", 2),
    ("enable_sgpr_private_segment_size", 1),
)

_REGISTERS: tuple[tuple[str, type[_BitRegister]], ...] = (
    ("compute_pgm_rsrc1", ComputePgmRsrc1),
    ("compute_pgm_rsrc2", ComputePgmRsrc2),
    ("compute_pgm_rsrc3", ComputePgmRsrc3),
    ("kernel_code_properties", KernelCodeProperties),
    ("kernarg_preload", KernargPreload),
)


@dataclass
class KernelDescriptor:
    """The AMDHSA kernel descriptor; to_bytes/from_bytes are exact inverses."""

    group_segment_fixed_size: int = 0
    private_segment_fixed_size: int = 0
    kernarg_size: int = 0
    kernel_code_entry_byte_offset: int = 0
    compute_pgm_rsrc1: ComputePgmRsrc1 = field(default_factory=ComputePgmRsrc1)
    compute_pgm_rsrc2: ComputePgmRsrc2 = field(default_factory=ComputePgmRsrc2)
    compute_pgm_rsrc3: ComputePgmRsrc3 = field(default_factory=ComputePgmRsrc3)
    kernel_code_properties: KernelCodeProperties = field(default_factory=KernelCodeProperties)
    kernarg_preload: KernargPreload = field(default_factory=KernargPreload)
    reserved0: bytes = bytes(4)
    reserved1: bytes = bytes(20)
    reserved2: bytes = bytes(4)

    @classmethod
    def from_bytes(cls, data: bytes) -> KernelDescriptor:
        """Decode 64 descriptor bytes (CodeObjectError if fewer)."""
        if len(data) < KERNEL_DESCRIPTOR_SIZE:
            raise CodeObjectError(
                f"kernel descriptor needs {KERNEL_DESCRIPTOR_SIZE} bytes, got {len(data)}"
            )
        (group, private, kernarg, res0, entry, res1, rsrc3, rsrc1, rsrc2, props, preload,
         res2) = _KD.unpack_from(data, 0)
        return cls(
            group_segment_fixed_size=group,
            private_segment_fixed_size=private,
            kernarg_size=kernarg,
            kernel_code_entry_byte_offset=entry,
            compute_pgm_rsrc1=ComputePgmRsrc1.from_int(rsrc1),
            compute_pgm_rsrc2=ComputePgmRsrc2.from_int(rsrc2),
            compute_pgm_rsrc3=ComputePgmRsrc3.from_int(rsrc3),
            kernel_code_properties=KernelCodeProperties.from_int(props),
            kernarg_preload=KernargPreload.from_int(preload),
            reserved0=res0,
            reserved1=res1,
            reserved2=res2,
        )

    def to_bytes(self) -> bytes:
        """Encode the 64 descriptor bytes (CodeObjectError if a field is out of range)."""
        for name, size in (("group_segment_fixed_size", 32), ("private_segment_fixed_size", 32),
                           ("kernarg_size", 32)):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v < 1 << size:
                raise CodeObjectError(f"kernel descriptor {name} = {v!r} is not a u{size}")
        entry = self.kernel_code_entry_byte_offset
        if not isinstance(entry, int) or not -(1 << 63) <= entry < 1 << 63:
            raise CodeObjectError(f"kernel_code_entry_byte_offset = {entry!r} is not an i64")
        for name, size in (("reserved0", 4), ("reserved1", 20), ("reserved2", 4)):
            if len(getattr(self, name)) != size:
                raise CodeObjectError(f"kernel descriptor {name} must be {size} bytes")
        return _KD.pack(
            self.group_segment_fixed_size, self.private_segment_fixed_size, self.kernarg_size,
            bytes(self.reserved0), entry, bytes(self.reserved1),
            self.compute_pgm_rsrc3.to_int(), self.compute_pgm_rsrc1.to_int(),
            self.compute_pgm_rsrc2.to_int(), self.kernel_code_properties.to_int(),
            self.kernarg_preload.to_int(), bytes(self.reserved2),
        )

    # Views in the units people write (`.amdhsa_*` directive values).

    def next_free_vgpr(self, target: Target | str) -> int:
        """VGPRs allocated per lane (unified file), from GRANULATED_WORKITEM_VGPR_COUNT."""
        field_value = self.compute_pgm_rsrc1.granulated_workitem_vgpr_count
        return vgprs_from_granulated(get_target(target), field_value)

    def sgprs(self, target: Target | str) -> int:
        """SGPRs allocated per wave (extras included), from GRANULATED_WAVEFRONT_SGPR_COUNT."""
        field_value = self.compute_pgm_rsrc1.granulated_wavefront_sgpr_count
        return sgprs_from_granulated(get_target(target), field_value)

    def accum_offset(self, target: Target | str) -> int:
        """First AGPR's slot in the unified VGPR file, from COMPUTE_PGM_RSRC3.ACCUM_OFFSET."""
        return accum_offset_from_field(get_target(target), self.compute_pgm_rsrc3.accum_offset)

    def implied_user_sgpr_count(self) -> int:
        """User SGPRs the enabled KERNEL_CODE_PROPERTIES bits and kernarg preload ask for."""
        props = self.kernel_code_properties
        count = sum(n for name, n in _USER_SGPRS if getattr(props, name))
        return count + self.kernarg_preload.length


def field_owner(name: str) -> str | None:
    """Which register ("compute_pgm_rsrc1", ...) has a bit field called `name`, if unique."""
    owners = [reg for reg, cls in _REGISTERS if name in cls.__dataclass_fields__
              and not name.startswith("reserved")]
    return owners[0] if len(owners) == 1 else None


def make_kernel_descriptor(
    target: Target | str,
    *,
    next_free_vgpr: int,
    next_free_sgpr: int,
    accum_offset: int | None = None,
    reserve_vcc: bool = True,
    reserve_xnack_mask: bool | None = None,
    **fields_: Any,
) -> KernelDescriptor:
    """A descriptor as llvm-mc builds it from `.amdhsa_*` directives with these values.

    `next_free_vgpr` counts the unified VGPR file (ArchVGPRs, then AGPRs from accum_offset);
    `accum_offset` defaults to it rounded up to 4 (no AGPRs). Other keyword arguments set
    fields by name: the plain descriptor fields (group_segment_fixed_size, kernarg_size...) or
    any bit field of RSRC1/2/3, KERNEL_CODE_PROPERTIES or KERNARG_PRELOAD (e.g.
    enable_sgpr_kernarg_segment_ptr=1). Unset fields get llvm-mc's defaults (the target's
    descriptor_defaults, ENABLE_SGPR_WORKGROUP_ID_X = 1) and USER_SGPR_COUNT is derived from
    the enabled user SGPRs unless given.
    """
    target = get_target(target)
    kd = KernelDescriptor()
    kd.compute_pgm_rsrc2.enable_sgpr_workgroup_id_x = 1
    for name, value in target.descriptor_defaults:
        owner = field_owner(name)
        if owner is None:
            raise CodeObjectError(f"target {target.name}: unknown descriptor default {name!r}")
        setattr(getattr(kd, owner), name, value)
    kd.compute_pgm_rsrc1.granulated_workitem_vgpr_count = granulated_vgpr_count(
        target, next_free_vgpr)
    kd.compute_pgm_rsrc1.granulated_wavefront_sgpr_count = granulated_sgpr_count(
        target, next_free_sgpr, vcc=reserve_vcc, xnack_mask=reserve_xnack_mask)
    if accum_offset is None:
        accum_offset = max(4, -(-min(next_free_vgpr, target.vgpr.arch) // 4) * 4)
    kd.compute_pgm_rsrc3.accum_offset = accum_offset_field(target, accum_offset)
    plain = {f.name for f in fields(KernelDescriptor)} - {r for r, _ in _REGISTERS}
    user_sgpr_given = "user_sgpr_count" in fields_
    for name, value in fields_.items():
        if name in plain:
            setattr(kd, name, value)
            continue
        owner = field_owner(name)
        if owner is None:
            raise CodeObjectError(f"unknown kernel descriptor field {name!r}")
        setattr(getattr(kd, owner), name, int(value))
    if not user_sgpr_given:
        kd.compute_pgm_rsrc2.user_sgpr_count = kd.implied_user_sgpr_count()
    kd.to_bytes()  # validate every field now, not when the file is written
    return kd


# `.amdhsa_<directive>` -> (register attribute of KernelDescriptor or "" for a plain field,
# field name). The register-count directives (next_free_vgpr, next_free_sgpr, accum_offset,
# reserve_*) are computed, not stored, and handled separately.
DIRECTIVE_FIELDS: dict[str, tuple[str, str]] = {
    "group_segment_fixed_size": ("", "group_segment_fixed_size"),
    "private_segment_fixed_size": ("", "private_segment_fixed_size"),
    "kernarg_size": ("", "kernarg_size"),
    "tg_split": ("compute_pgm_rsrc3", "tg_split"),
    "float_round_mode_32": ("compute_pgm_rsrc1", "float_round_mode_32"),
    "float_round_mode_16_64": ("compute_pgm_rsrc1", "float_round_mode_16_64"),
    "float_denorm_mode_32": ("compute_pgm_rsrc1", "float_denorm_mode_32"),
    "float_denorm_mode_16_64": ("compute_pgm_rsrc1", "float_denorm_mode_16_64"),
    "dx10_clamp": ("compute_pgm_rsrc1", "enable_dx10_clamp"),
    "ieee_mode": ("compute_pgm_rsrc1", "enable_ieee_mode"),
    "fp16_overflow": ("compute_pgm_rsrc1", "fp16_ovfl"),
    "enable_private_segment": ("compute_pgm_rsrc2", "enable_private_segment"),
    "user_sgpr_count": ("compute_pgm_rsrc2", "user_sgpr_count"),
    "system_sgpr_workgroup_id_x": ("compute_pgm_rsrc2", "enable_sgpr_workgroup_id_x"),
    "system_sgpr_workgroup_id_y": ("compute_pgm_rsrc2", "enable_sgpr_workgroup_id_y"),
    "system_sgpr_workgroup_id_z": ("compute_pgm_rsrc2", "enable_sgpr_workgroup_id_z"),
    "system_sgpr_workgroup_info": ("compute_pgm_rsrc2", "enable_sgpr_workgroup_info"),
    "system_vgpr_workitem_id": ("compute_pgm_rsrc2", "enable_vgpr_workitem_id"),
    "exception_fp_ieee_invalid_op": (
        "compute_pgm_rsrc2", "enable_exception_ieee_754_fp_invalid_operation"),
    "exception_fp_denorm_src": ("compute_pgm_rsrc2", "enable_exception_fp_denormal_source"),
    "exception_fp_ieee_div_zero": (
        "compute_pgm_rsrc2", "enable_exception_ieee_754_fp_division_by_zero"),
    "exception_fp_ieee_overflow": ("compute_pgm_rsrc2", "enable_exception_ieee_754_fp_overflow"),
    "exception_fp_ieee_underflow": (
        "compute_pgm_rsrc2", "enable_exception_ieee_754_fp_underflow"),
    "exception_fp_ieee_inexact": ("compute_pgm_rsrc2", "enable_exception_ieee_754_fp_inexact"),
    "exception_int_div_zero": ("compute_pgm_rsrc2", "enable_exception_int_divide_by_zero"),
    "user_sgpr_private_segment_buffer": (
        "kernel_code_properties", "enable_sgpr_private_segment_buffer"),
    "user_sgpr_dispatch_ptr": ("kernel_code_properties", "enable_sgpr_dispatch_ptr"),
    "user_sgpr_queue_ptr": ("kernel_code_properties", "enable_sgpr_queue_ptr"),
    "user_sgpr_kernarg_segment_ptr": (
        "kernel_code_properties", "enable_sgpr_kernarg_segment_ptr"),
    "user_sgpr_dispatch_id": ("kernel_code_properties", "enable_sgpr_dispatch_id"),
    "user_sgpr_flat_scratch_init": ("kernel_code_properties", "enable_sgpr_flat_scratch_init"),
    "user_sgpr_private_segment_size": (
        "kernel_code_properties", "enable_sgpr_private_segment_size"),
    "uses_dynamic_stack": ("kernel_code_properties", "uses_dynamic_stack"),
    "user_sgpr_kernarg_preload_length": ("kernarg_preload", "length"),
    "user_sgpr_kernarg_preload_offset": ("kernarg_preload", "offset"),
}


def descriptor_from_directives(target: Target | str, directives: dict[str, int]
                               ) -> KernelDescriptor:
    """The descriptor llvm-mc assembles from `.amdhsa_<name> value` directives (names without
    the `.amdhsa_` prefix; next_free_vgpr and next_free_sgpr are required, as in llvm-mc)."""
    d = {k.removeprefix(".amdhsa_"): v for k, v in directives.items()}
    missing = [k for k in ("next_free_vgpr", "next_free_sgpr") if k not in d]
    if missing:
        raise CodeObjectError(f"missing required directive .amdhsa_{missing[0]}")
    counts = {
        "next_free_vgpr": d.pop("next_free_vgpr"),
        "next_free_sgpr": d.pop("next_free_sgpr"),
        "accum_offset": d.pop("accum_offset", None),
        "reserve_vcc": bool(d.pop("reserve_vcc", 1)),
        "reserve_xnack_mask": (bool(d.pop("reserve_xnack_mask"))
                               if "reserve_xnack_mask" in d else None),
    }
    d.pop("reserve_flat_scratch", None)
    fields_: dict[str, int] = {}
    for name, value in d.items():
        if name not in DIRECTIVE_FIELDS:
            raise CodeObjectError(f"unknown directive .amdhsa_{name}")
        fields_[DIRECTIVE_FIELDS[name][1]] = value
    return make_kernel_descriptor(target, **counts, **fields_)


def amdhsa_directives(kd: KernelDescriptor, target: Target | str) -> dict[str, int]:
    """The `.amdhsa_*` directive values this descriptor stands for (as llvm-objdump prints).

    Register counts come back as llvm-objdump shows them: next_free_vgpr and next_free_sgpr
    are the granulated allocations, with reserve_vcc/reserve_xnack_mask 0 since the extras are
    already inside the SGPR figure.
    """
    target = get_target(target)
    out = {
        "accum_offset": kd.accum_offset(target),
        "next_free_vgpr": kd.next_free_vgpr(target),
        "reserve_vcc": 0,
        "reserve_xnack_mask": 0,
        "next_free_sgpr": kd.sgprs(target),
    }
    # With architected flat scratch the reservation directive does not exist at all.
    if not target.sgpr.architected_flat_scratch:
        out["reserve_flat_scratch"] = 0
    for directive, (reg, name) in DIRECTIVE_FIELDS.items():
        out[directive] = getattr(getattr(kd, reg) if reg else kd, name)
    return out
