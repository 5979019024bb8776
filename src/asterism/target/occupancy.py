"""Occupancy: how many waves of a kernel can be resident per SIMD.

The model is LLVM 22's (GCNSubtarget::computeOccupancy with a fixed workgroup size), which
tests/test_target.py checks against `llc`'s "; Occupancy:" on hundreds of kernels:

    waves_per_simd = min(wave slots, VGPR limit, SGPR limit, workgroup/LDS limit)

    wave slots     = max_waves_per_simd                                   (8)
    VGPR limit     = unified_per_lane // alignTo(max(1, total_vgprs), alloc_granule)
                     with total_vgprs = alignTo(vgprs, 4) + agprs if agprs else vgprs
    SGPR limit     = sgprs_per_simd // (next_free_sgpr + extra SGPRs)   (800 // n; extra = 6)
    workgroups/CU  = min(wave slots per CU // W  (or all slots when W == 1),
                         max_workgroups_per_cu (16 barriers, when W > 1),
                         lds_bytes_per_cu // alignTo(lds_bytes, lds granule)  when lds > 0)
    WG/LDS limit   = clamp(ceil(workgroups/CU * W / simds_per_cu), 1, max_waves_per_simd)

where W = waves per workgroup. Every limit is capped at max_waves_per_simd. The one deliberate
difference from LLVM: the LDS size is first rounded up to the allocation granule the hardware
allocates in (LLVM uses the raw byte count; see the FIXME in getOccupancyWithWorkGroupSizes).
Like LLVM, the result is an upper bound: it assumes a workgroup's waves spread evenly over the
SIMDs and ignores scratch and other kernels sharing the CU.
"""

from __future__ import annotations

from dataclasses import dataclass

from asterism.errors import TargetError
from asterism.target.chip import Target, get_target
from asterism.target.registers import align_up, extra_sgprs, total_vgprs

# Order in which limiting resources are reported.
LIMIT_NAMES = ("waves", "vgprs", "sgprs", "lds", "workgroups")


@dataclass(frozen=True)
class Occupancy:
    """Resident waves per SIMD, what limits it, and each resource's own limit."""

    waves_per_simd: int
    limited_by: tuple[str, ...]
    wave_limit: int
    vgpr_limit: int
    sgpr_limit: int
    lds_limit: int
    workgroup_limit: int
    workgroups_per_cu: int
    waves_per_cu: int


def _clamp(value: int, target: Target) -> int:
    return max(1, min(value, target.max_waves_per_simd))


def occupancy(
    target: Target | str,
    vgprs: int,
    agprs: int = 0,
    sgprs: int = 0,
    lds_bytes: int = 0,
    waves_per_workgroup: int = 1,
) -> Occupancy:
    """Waves per SIMD for a kernel's VGPRs, AGPRs, SGPRs (next_free_sgpr), LDS and workgroup."""
    target = get_target(target)
    unified = total_vgprs(target, vgprs, agprs)
    if unified > target.vgpr.unified_per_lane:
        raise TargetError(
            f"{vgprs} VGPRs + {agprs} AGPRs need {unified} unified registers; "
            f"{target.name} has {target.vgpr.unified_per_lane}"
        )
    if not isinstance(sgprs, int) or not 0 <= sgprs <= target.sgpr.addressable:
        raise TargetError(f"SGPR count {sgprs!r} must be in [0..{target.sgpr.addressable}]")
    if not isinstance(lds_bytes, int) or not 0 <= lds_bytes <= target.lds.bytes_per_workgroup:
        raise TargetError(
            f"LDS size {lds_bytes!r} bytes must be in [0..{target.lds.bytes_per_workgroup}] "
            f"on {target.name}"
        )
    max_w = target.max_waves_per_workgroup
    if not isinstance(waves_per_workgroup, int) or not 1 <= waves_per_workgroup <= max_w:
        raise TargetError(f"waves per workgroup {waves_per_workgroup!r} must be in [1..{max_w}]")

    wave_limit = target.max_waves_per_simd
    vgpr_limit = _clamp(
        target.vgpr.unified_per_lane // align_up(max(1, unified), target.vgpr.alloc_granule),
        target,
    )
    sgpr_total = sgprs + extra_sgprs(target)
    sgpr_limit = _clamp(target.sgpr.per_simd // max(1, sgpr_total), target)

    w = waves_per_workgroup
    if w == 1:
        # Single-wave workgroups need no barrier, so only wave slots bound them.
        slot_wgs = target.max_waves_per_cu
    else:
        slot_wgs = min(target.max_waves_per_cu // w, target.max_workgroups_per_cu)
    simds = target.simds_per_cu
    workgroup_limit = _clamp(-(-slot_wgs * w // simds), target)
    if lds_bytes:
        lds_wgs = target.lds.bytes_per_cu // align_up(lds_bytes, target.lds.alloc_granule)
        lds_limit = _clamp(-(-lds_wgs * w // simds), target)
    else:
        lds_wgs, lds_limit = slot_wgs, target.max_waves_per_simd

    limits = {
        "waves": wave_limit,
        "vgprs": vgpr_limit,
        "sgprs": sgpr_limit,
        "lds": lds_limit,
        "workgroups": workgroup_limit,
    }
    waves = min(limits.values())
    limited_by = tuple(n for n in LIMIT_NAMES if limits[n] == waves)
    # Workgroups that fit once registers are counted too (each needs all its waves resident).
    wgs = min(slot_wgs, lds_wgs, (waves * simds) // w)
    return Occupancy(
        waves_per_simd=waves,
        limited_by=limited_by,
        wave_limit=wave_limit,
        vgpr_limit=vgpr_limit,
        sgpr_limit=sgpr_limit,
        lds_limit=lds_limit,
        workgroup_limit=workgroup_limit,
        workgroups_per_cu=wgs,
        waves_per_cu=waves * simds,
    )


def vgprs_for_waves(target: Target, waves: int) -> int:
    """The most unified VGPRs per lane (VGPR + AGPR) that still allow `waves` waves per SIMD:
    the VGPR limit above, read backwards."""
    per = target.vgpr.unified_per_lane // waves
    return per - per % target.vgpr.alloc_granule


def lds_for_workgroups(target: Target, workgroups: int) -> int:
    """The most LDS bytes per workgroup that still allow `workgroups` workgroups per CU."""
    per = target.lds.bytes_per_cu // workgroups
    return per - per % target.lds.alloc_granule

