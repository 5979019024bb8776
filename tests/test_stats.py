"""`asterism stats` on the shared code objects, cross-checked with LLVM's tools and metadata."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from asterism.cli import main
from asterism.profile.stats import code_object_stats

SAMPLES = ["aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co",
           "aiter_gfx942_fmha_fwd_hd128_bf16_rtz.co",
           "aiter_gfx950_bf16gemm_tn_32x64_bshuffle_splitk.co"]


@pytest.mark.parametrize("name", SAMPLES)
def test_stats_agree_with_metadata(shared_data, name):
    (s,) = code_object_stats(shared_data / "codeobjects" / name)
    meta = s.metadata
    # The descriptor's allocation covers what the metadata reports.
    assert s.vgprs + s.agprs >= meta[".vgpr_count"]
    assert s.lds_bytes == meta[".group_segment_fixed_size"]
    assert s.kernarg_bytes == meta[".kernarg_segment_size"]
    assert s.used_vgprs <= s.vgprs + s.agprs and s.used_sgprs <= s.sgprs
    assert sum(s.mix.values()) == s.instructions
    assert sum(s.mfma.values()) == s.mix["mfma"]


def test_fmha_figures_by_hand(shared_data):
    (s,) = code_object_stats(shared_data / "codeobjects" / SAMPLES[1])
    # 512 work-items = 8 waves per workgroup; 64 KiB LDS lets one workgroup per CU, i.e.
    # 8 waves over 4 SIMDs = 2 per SIMD; 256 unified VGPRs allow 512 / 256 = 2 as well.
    assert s.waves_per_simd == 2
    assert set(s.occupancy_limited_by) == {"vgprs", "lds"}
    assert s.mfma == {"v_mfma_f32_32x32x8_bf16": 176}


@pytest.mark.parametrize("name", SAMPLES)
def test_instruction_mix_matches_llvm_objdump(shared_data, llvm_objdump, name):
    path = shared_data / "codeobjects" / name
    target = name.split("_")[1]
    dump = subprocess.run([llvm_objdump, "-d", f"--mcpu={target}", str(path)],
                          capture_output=True, text=True, check=True).stdout
    mnemonics = [m.group(1) for m in re.finditer(r"^\t(\w+)", dump, re.M)]
    mnemonics = mnemonics[:mnemonics.index("s_endpgm") + 1]
    (s,) = code_object_stats(path)
    assert s.instructions == len(mnemonics)
    assert s.mix["mfma"] == sum(1 for m in mnemonics if m.startswith("v_mfma"))
    assert s.mix["s_waitcnt"] == mnemonics.count("s_waitcnt")
    assert s.mix["barrier"] == mnemonics.count("s_barrier")
    assert s.mix.get("s_nop", 0) == mnemonics.count("s_nop")


def test_stats_cli_json_and_diff(shared_data, capsys):
    a = str(shared_data / "codeobjects" / SAMPLES[0])
    b = str(shared_data / "codeobjects" / SAMPLES[2])
    assert main(["stats", "--json", a]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["name"].startswith("_ZN5aiter")
    assert main(["stats", a, "--diff", b]) == 0
    out = capsys.readouterr().out
    assert "amdgcn-amd-amdhsa--gfx942" in out and "amdgcn-amd-amdhsa--gfx950" in out


def test_stats_on_ir(capsys):
    assert main(["stats", "examples/demo/add_10.mlir"]) == 0
    out = capsys.readouterr().out
    assert "valu 12" in out and "vmem_store 1" in out
