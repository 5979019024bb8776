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


def _notes_counts(readelf: str, path) -> dict[str, int]:
    """.vgpr_count / .sgpr_count of the code object's metadata, as llvm-readelf prints them."""
    notes = subprocess.run([readelf, "--notes", str(path)], capture_output=True, text=True,
                           check=True).stdout
    return {k: int(v) for k, v in re.findall(r"^\s+(\.[vs]gpr_count):\s+(\d+)", notes, re.M)}


def _objdump_descriptor(objdump: str, path, target: str) -> dict[str, int]:
    """The .amdhsa_* directives llvm-objdump reconstructs from the kernel descriptor."""
    dump = subprocess.run([objdump, "-D", f"--mcpu={target}", "-j", ".rodata", str(path)],
                          capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in re.findall(r"^\s+\.amdhsa_(\w+) (\d+)$", dump, re.M)}


@pytest.mark.llvm
@pytest.mark.parametrize("name", SAMPLES)
def test_register_totals_match_metadata_and_descriptor(shared_data, llvm_readelf,
                                                       llvm_objdump, name):
    """The register figures are the descriptor's, as LLVM's tools show them."""
    path = shared_data / "codeobjects" / name
    target = name.split("_")[1]
    notes = _notes_counts(llvm_readelf, path)
    kd = _objdump_descriptor(llvm_objdump, path, target)
    (s,) = code_object_stats(path)
    assert s.vgprs_total == s.vgprs + s.agprs == notes[".vgpr_count"] == kd["next_free_vgpr"]
    assert s.accum_offset == kd["accum_offset"]
    # The descriptor records no reserved VCC/XNACK_MASK/FLAT_SCRATCH: llvm-objdump prints
    # the allocation with .amdhsa_reserve_vcc/xnack_mask 0 (gfx942/gfx950 have no
    # reserve_flat_scratch at all: flat scratch is architected).
    assert (kd["reserve_vcc"], kd["reserve_xnack_mask"]) == (0, 0)
    assert "reserve_flat_scratch" not in kd
    assert s.sgprs_reserved == kd["reserve_vcc"] + kd["reserve_xnack_mask"] == 0
    assert s.sgprs_total == s.sgprs == kd["next_free_sgpr"]
    # (what occupancy() takes: the allocation less LLVM's 6 extras, which it adds back)
    assert s.next_free_sgpr == s.sgprs - 6
    assert (s.metadata_vgpr_count, s.metadata_sgpr_count) == (notes[".vgpr_count"],
                                                              notes[".sgpr_count"])
    # The hand-written fmha's metadata claims 96 SGPRs, one granule (8) below what its
    # descriptor allocates (104); the GEMMs agree (112).
    expect_sgpr = {"fmha": 96}.get(name.split("_")[2], s.sgprs_total)
    assert notes[".sgpr_count"] == expect_sgpr


def test_register_fields_are_labelled(shared_data, capsys):
    path = str(shared_data / "codeobjects" / SAMPLES[1])
    assert main(["stats", path]) == 0
    out = capsys.readouterr().out
    # Figures from llvm-objdump's descriptor (.amdhsa_next_free_vgpr 256, accum_offset 160,
    # .amdhsa_next_free_sgpr 104) and llvm-readelf --notes (.vgpr_count 256, .sgpr_count 96).
    assert ("VGPRs allocated: 256 arch + 0 acc (accum_offset 160) = 256 unified "
            "(metadata .vgpr_count 256)") in out
    assert ("SGPRs allocated: 104 (metadata .sgpr_count 96, differs by -8); the descriptor "
            "reserves none for VCC, FLAT_SCRATCH, XNACK_MASK") in out
    assert "+ 6 reserved" not in out
    # (the fmha names s0..s96 and VCC: `s_cbranch_vccz`, v_cndmask_b32_e32's implicit vcc)
    assert "registers used by the code (highest index + 1): v236 a0 s97, vcc" in out
    assert main(["stats", "--json", path]) == 0
    (k,) = json.loads(capsys.readouterr().out)
    assert (k["vgprs_total"], k["sgprs"], k["sgprs_reserved"], k["sgprs_total"]) == (
        256, 104, 0, 104)
    assert (k["metadata_vgpr_count"], k["metadata_sgpr_count"]) == (256, 96)
    assert {"vgprs", "agprs", "vgprs_total", "sgprs", "sgprs_reserved",
            "sgprs_total"} <= set(k["register_fields"])


ACC_KERNEL = """\
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl k
.p2align 8
.type k,@function
k:
  v_accvgpr_write_b32 a0, v0
  v_accvgpr_write_b32 a1, v1
  v_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]
  v_smfmac_f32_16x16x32_f16 v[4:7], v[0:1], v[8:11], v12
  v_accvgpr_read_b32 v3, a0
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel k
  .amdhsa_next_free_vgpr 24
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 16
.end_amdhsa_kernel
"""


@pytest.mark.llvm
def test_accvgpr_moves_are_not_mfma(llvm_mc, ld_lld, llvm_objdump, tmp_path):
    """Only MFMA/SMFMAC count as matrix ops; v_accvgpr_read/write are VALU moves."""
    (tmp_path / "k.s").write_text(ACC_KERNEL)
    subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                    str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")], check=True)
    subprocess.run([ld_lld, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.co")],
                   check=True)
    (s,) = code_object_stats(tmp_path / "k.co")
    assert s.mfma == {"v_mfma_f32_16x16x16_f16": 1, "v_smfmac_f32_16x16x32_f16": 1}
    assert s.mix == {"mfma": 2, "valu": 3, "program_end": 1}
    # llvm-mc's descriptor: .amdhsa_next_free_vgpr 24 -> 24 unified, AGPRs from 16 (the code
    # uses a0..a3), so 16 arch + 8 acc; .amdhsa_next_free_sgpr 8 + the 6 llvm-mc adds = 14,
    # rounded up to the granule of 8 = 16 (llvm-objdump reads it back as
    # .amdhsa_next_free_sgpr 16): the descriptor says 16 and reserves none.
    kd = _objdump_descriptor(llvm_objdump, tmp_path / "k.co", "gfx942")
    assert (s.vgprs, s.agprs, s.vgprs_total) == (16, 8, 24) and kd["next_free_vgpr"] == 24
    assert (s.sgprs, s.sgprs_reserved, s.sgprs_total) == (16, 0, 16)
    assert kd["next_free_sgpr"] == 16 and (kd["reserve_vcc"], kd["reserve_xnack_mask"]) == (0, 0)


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
