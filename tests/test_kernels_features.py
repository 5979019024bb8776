"""The kernel capability table (asterism.kernels.features) against the ISA database."""

from __future__ import annotations

import pytest

from asterism.errors import TargetError
from asterism.isa.database import get_isa
from asterism.kernels import attention, gemm
from asterism.kernels.features import FEATURES, kernel_features

# Each instruction flag of the table and the instruction it stands for.
INSTRUCTION_FLAGS = {
    "ds_read_tr": "ds_read_b64_tr_b16",
    "cvt_pk_f16": "v_cvt_pk_f16_f32",
    "cvt_pk_bf16": "v_cvt_pk_bf16_f32",
    "permlane_swap": "v_permlane32_swap_b32",
    "mfma_f8f6f4": "v_mfma_f32_32x32x64_f8f6f4",
}


@pytest.mark.parametrize("target", sorted(FEATURES))
def test_instruction_flags_match_the_isa(target):
    feats, isa = kernel_features(target), get_isa(target)
    for flag, mnemonic in INSTRUCTION_FLAGS.items():
        assert getattr(feats, flag) == (isa.get(mnemonic) is not None), (target, flag)


@pytest.mark.parametrize("target", sorted(FEATURES))
def test_mfma_k_is_the_longest_32x32_f16_mfma(target):
    feats, isa = kernel_features(target), get_isa(target)
    assert isa.get(f"v_mfma_f32_32x32x{feats.mfma_k}_f16") is not None
    assert isa.get(f"v_mfma_f32_32x32x{2 * feats.mfma_k}_f16") is None
    assert feats.lane_k == {16: 8, 8: 4}[feats.mfma_k]


def test_every_kernel_target_has_a_row():
    assert set(attention.TARGETS) | set(gemm.TARGETS) <= set(FEATURES)


def test_unknown_target_names_the_known_ones():
    with pytest.raises(TargetError, match=r"'gfx90a'.*gfx950, gfx942"):
        kernel_features("gfx90a")
