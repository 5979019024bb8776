"""What the kernel library asks of a processor: one table of named capabilities.

The kernels test these fields instead of the processor's name, so adding a processor to the
library means adding a row to `FEATURES` (what the ISA database cannot say: the LDS DMA width
and the tuned defaults), not editing every branch; the instruction flags are read from the
processor's ISA database.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from asterism.errors import TargetError


@dataclass(frozen=True)
class KernelFeatures:
    """Instructions and schedule facts of one processor that the kernels branch on."""

    lds_dma: bool  # buffer_load_dwordx4 ... lds: global loads straight into LDS (M0 address)
    ds_read_tr: bool  # ds_read_b64_tr_b16: LDS reads transposed to an MFMA operand
    cvt_pk_f16: bool  # v_cvt_pk_f16_f32: two f32 -> packed f16 in one op
    cvt_pk_bf16: bool  # v_cvt_pk_bf16_f32: two f32 -> packed bf16 (else rounded by hand)
    permlane_swap: bool  # v_permlane32_swap_b32 (else lane l ^ 32 through ds_bpermute_b32)
    mfma_k: int  # K of the 32x32 16-bit MFMA: 16 (32x32x16) or 8 (32x32x8)
    mfma_f8f6f4: bool  # v_mfma_f32_*_f8f6f4 (OCP fp8 operands)
    # Attention schedule: the P V MFMAs always go tile by tile, the packing of tile u + 1's
    # P and the running-sum adds under tile u's MFMAs (exp_under_pv and max_under_s are for
    # the other schedule only).
    pv_tile_by_tile: bool
    # Tuned attention defaults (modeled, see docs/kernels.md): S MFMA steps the K reads run
    # ahead (k_ahead 0), and setprio auto with 8 waves and one S buffer.
    fa_k_ahead: int
    fa_setprio: str

    @property
    def lane_k(self) -> int:
        """16-bit K elements one lane holds per MFMA operand (32x32xK and 16x16x2K alike)."""
        return self.mfma_k // 2


@dataclass(frozen=True)
class _Choices:
    """What the ISA database cannot say: the LDS DMA width and the kernels' tuned choices."""

    lds_dma: bool
    pv_tile_by_tile: bool
    fa_k_ahead: int
    fa_setprio: str


# The rows a processor needs beyond its ISA database (the instruction flags come from it).
FEATURES: dict[str, _Choices] = {
    # gfx950 fa_k_ahead 4: with the MFMA co-execution holds (its DS reads wait valu_hold
    # after each MFMA) and the unpacked softmax, modeled 51462 vs 53002 cycles with 2 (51766
    # with 3, 51466 with 5) at 1x2x1024x128.
    "gfx950": _Choices(lds_dma=True, pv_tile_by_tile=False, fa_k_ahead=4, fa_setprio="stage"),
    # fa_k_ahead 3: the LDS latency (64 cycles) plus the SIMD-pair port's queue outlast two
    # 32-cycle 32x32x8 MFMAs.
    "gfx942": _Choices(lds_dma=False, pv_tile_by_tile=True, fa_k_ahead=3, fa_setprio="s_mfma"),
}


@cache
def kernel_features(target: str) -> KernelFeatures:
    """The kernel capabilities of `target` (instructions from its ISA database, the rest from
    FEATURES), or a TargetError naming the known processors."""
    from asterism.isa.database import get_isa

    try:
        row = FEATURES[target]
    except KeyError:
        raise TargetError(f"no kernel features for {target!r} (known: "
                          f"{', '.join(FEATURES)})") from None
    isa = get_isa(target)

    def has(mnemonic: str) -> bool:
        return isa.get(mnemonic) is not None

    return KernelFeatures(
        lds_dma=row.lds_dma, ds_read_tr=has("ds_read_b64_tr_b16"),
        cvt_pk_f16=has("v_cvt_pk_f16_f32"), cvt_pk_bf16=has("v_cvt_pk_bf16_f32"),
        permlane_swap=has("v_permlane32_swap_b32"),
        mfma_k=16 if has("v_mfma_f32_32x32x16_f16") else 8,
        mfma_f8f6f4=has("v_mfma_f32_32x32x64_f8f6f4"), pv_tile_by_tile=row.pv_tile_by_tile,
        fa_k_ahead=row.fa_k_ahead, fa_setprio=row.fa_setprio)
