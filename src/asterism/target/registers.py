"""Register budgets and how the kernel descriptor encodes them.

The rules follow AMDGPUUsage ("Kernel Descriptor", "AMDGPU Register Numbering") and LLVM 22's
AMDGPUBaseInfo as llvm-mc applies them to `.amdhsa_next_free_vgpr`, `.amdhsa_accum_offset`
and `.amdhsa_next_free_sgpr` (tests/test_target.py assembles those directives and compares
the descriptor bits with these functions):

* GFX90A-class chips (gfx942, gfx950) have one 512-entry VGPR file per lane: ArchVGPRs
  v0..v255 come first and the AccVGPRs a0..a255 start at ACCUM_OFFSET, a multiple of 4 in
  4..256. A kernel using V arch VGPRs and A AGPRs needs alignTo(V, 4) + A entries when A > 0,
  else V (LLVM getTotalNumVGPRs).
* COMPUTE_PGM_RSRC1.GRANULATED_WORKITEM_VGPR_COUNT = ceil(max(1, total) / 8) - 1.
* COMPUTE_PGM_RSRC3.ACCUM_OFFSET = accum_offset / 4 - 1.
* COMPUTE_PGM_RSRC1.GRANULATED_WAVEFRONT_SGPR_COUNT = ceil(max(1, next_free_sgpr + extra) / 8)
  - 1, where extra counts VCC (2), XNACK_MASK (+2) and FLAT_SCRATCH (+2) as LLVM's
  getNumExtraSGPRs does on GFX8-GFX9: with architected flat scratch (gfx942, gfx950) the
  hardware always sets FLAT_SCRATCH aside, so extra is always 6 there.
"""

from __future__ import annotations

from asterism.errors import TargetError
from asterism.target.chip import Target


def align_up(value: int, granule: int) -> int:
    """Round `value` up to a multiple of `granule`."""
    return -(-value // granule) * granule


def _check_count(what: str, value: int, limit: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TargetError(f"{what} must be a non-negative integer, got {value!r}")
    if value > limit:
        raise TargetError(f"{what} = {value} exceeds the limit of {limit}")


def total_vgprs(target: Target, vgprs: int, agprs: int = 0) -> int:
    """Entries of the unified VGPR file a wave needs for `vgprs` ArchVGPRs and `agprs` AGPRs."""
    _check_count("VGPR count", vgprs, target.vgpr.arch)
    _check_count("AGPR count", agprs, target.vgpr.acc)
    if agprs:
        return align_up(vgprs, target.vgpr.accum_offset_granule) + agprs
    return vgprs


def accum_offset(target: Target, vgprs: int) -> int:
    """The ACCUM_OFFSET (first AGPR's slot) LLVM picks for `vgprs` ArchVGPRs:
    alignTo(max(1, V), 4)."""
    _check_count("VGPR count", vgprs, target.vgpr.arch)
    return align_up(max(1, vgprs), target.vgpr.accum_offset_granule)


def accum_offset_field(target: Target, offset: int) -> int:
    """COMPUTE_PGM_RSRC3.ACCUM_OFFSET for an accum_offset (4..256, multiple of 4): offset/4 - 1."""
    granule = target.vgpr.accum_offset_granule
    if (
        not isinstance(offset, int)
        or offset < granule
        or offset > target.vgpr.arch
        or offset % granule
    ):
        raise TargetError(
            f"accum_offset {offset!r} must be in [{granule}..{target.vgpr.arch}] "
            f"in increments of {granule}"
        )
    return offset // granule - 1


def accum_offset_from_field(target: Target, field: int) -> int:
    """The accum_offset a COMPUTE_PGM_RSRC3.ACCUM_OFFSET value stands for: (field+1)*4."""
    return (field + 1) * target.vgpr.accum_offset_granule


def granulated_vgpr_count(target: Target, next_free_vgpr: int) -> int:
    """GRANULATED_WORKITEM_VGPR_COUNT for a unified VGPR count: ceil(max(1, n)/granule) - 1."""
    _check_count("next_free_vgpr", next_free_vgpr, target.vgpr.unified_per_lane)
    granule = target.vgpr.encoding_granule
    return align_up(max(1, next_free_vgpr), granule) // granule - 1


def vgprs_from_granulated(target: Target, field: int) -> int:
    """VGPRs allocated per lane for a GRANULATED_WORKITEM_VGPR_COUNT value: (field+1)*granule."""
    return (field + 1) * target.vgpr.encoding_granule


def extra_sgprs(
    target: Target,
    *,
    vcc: bool = True,
    flat_scratch: bool = True,
    xnack_mask: bool | None = None,
) -> int:
    """SGPRs the hardware reserves beyond next_free_sgpr (VCC, XNACK_MASK, FLAT_SCRATCH).

    Mirrors LLVM's getNumExtraSGPRs for GFX8-GFX9: VCC adds 2; XNACK_MASK makes it 4; flat
    scratch (always, when flat scratch is architected) makes it 6. The defaults are llvm-mc's
    (`.amdhsa_reserve_vcc 1`, `.amdhsa_reserve_flat_scratch 1`, XNACK_MASK reserved unless
    the target ID says xnack-).
    """
    if xnack_mask is None:
        xnack_mask = target.elf.xnack and target.xnack is not False
    extra = target.sgpr.vcc if vcc else 0
    if xnack_mask:
        extra = target.sgpr.vcc + target.sgpr.xnack_mask
    if flat_scratch or target.sgpr.architected_flat_scratch:
        extra = target.sgpr.vcc + target.sgpr.xnack_mask + target.sgpr.flat_scratch
    return extra


def total_sgprs(target: Target, next_free_sgpr: int, **extras: bool | None) -> int:
    """SGPRs a wave holds: next_free_sgpr plus the reserved extras (see `extra_sgprs`)."""
    _check_count("next_free_sgpr", next_free_sgpr, target.sgpr.addressable)
    return next_free_sgpr + extra_sgprs(target, **extras)  # type: ignore[arg-type]


def granulated_sgpr_count(target: Target, next_free_sgpr: int, **extras: bool | None) -> int:
    """GRANULATED_WAVEFRONT_SGPR_COUNT: ceil(max(1, next_free_sgpr + extras)/granule) - 1."""
    total = total_sgprs(target, next_free_sgpr, **extras)
    granule = target.sgpr.encoding_granule
    return align_up(max(1, total), granule) // granule - 1


def sgprs_from_granulated(target: Target, field: int) -> int:
    """SGPRs (extras included) a GRANULATED_WAVEFRONT_SGPR_COUNT value stands for."""
    return (field + 1) * target.sgpr.encoding_granule


def lds_granules(target: Target, lds_bytes: int) -> int:
    """LDS size in allocation granules (the unit of COMPUTE_PGM_RSRC2.LDS_SIZE), rounded up."""
    _check_count("LDS bytes", lds_bytes, target.lds.bytes_per_workgroup)
    return -(-lds_bytes // target.lds.alloc_granule)


def check_register_budget(target: Target, vgprs: int, agprs: int = 0, sgprs: int = 0) -> None:
    """Raise TargetError if the counts do not fit one wave of `target`."""
    total = total_vgprs(target, vgprs, agprs)
    _check_count("unified VGPR count (VGPRs aligned to 4 + AGPRs)", total,
                 target.vgpr.unified_per_lane)
    _check_count("SGPR count", sgprs, target.sgpr.addressable)
