"""Regenerates llvm_hazards.json: LLVM's hazard recognizer (llc -start-before=
post-RA-hazard-rec) pads each two-instruction MIR scenario below with the s_nops it needs, for
gfx942 and gfx950. tests/test_emu_hazards_llvm.py checks asterism's hazard table against it.
Run from this directory: python gen_llvm_hazards.py (needs llc-22)."""
import json
import subprocess
import tempfile
from pathlib import Path

LLC = "/usr/lib/llvm-22/bin/llc"
SCEN = {
 "trans": ["$vgpr0 = V_EXP_F32_e32 $vgpr1, implicit $mode, implicit $exec",
           "$vgpr2 = V_ADD_F32_e32 $vgpr0, $vgpr1, implicit $mode, implicit $exec"],
 "valu_sgpr_vmem": ["$sgpr0 = V_READFIRSTLANE_B32 $vgpr0, implicit $exec",
           "GLOBAL_STORE_DWORD_SADDR $vgpr0, $vgpr1, $sgpr0_sgpr1, 0, 0, implicit $exec"],
 "vcc_cndmask": ["$vcc = V_CMP_EQ_U32_e64 $vgpr0, $vgpr1, implicit $exec",
           "$vgpr2 = V_CNDMASK_B32_e32 $vgpr0, $vgpr1, implicit $vcc, implicit $exec"],
 "sgpr_valu": ["$sgpr4 = V_READFIRSTLANE_B32 $vgpr0, implicit $exec",
           "$vgpr1 = V_ADD_U32_e32 $sgpr4, $vgpr0, implicit $exec"],
 "lane_select": ["$sgpr4 = V_READFIRSTLANE_B32 $vgpr0, implicit $exec",
           "$sgpr5 = V_READLANE_B32 $vgpr1, $sgpr4"],
 "readlane_vgpr": ["$vgpr1 = V_MOV_B32_e32 0, implicit $exec",
           "$sgpr5 = V_READLANE_B32 $vgpr1, 3"],
 "cmpx_readlane": ["V_CMPX_EQ_U32_e32 $vgpr0, $vgpr1, implicit-def $vcc, implicit-def $exec, implicit $exec",
           "$sgpr5 = V_READLANE_B32 $vgpr2, 3"],
 "valu_dpp": ["$vgpr1 = V_MOV_B32_e32 0, implicit $exec",
           "$vgpr2 = V_MOV_B32_dpp $vgpr2(tied-def 0), $vgpr1, 1, 15, 15, 0, implicit $exec"],
 "cmpx_dpp": ["V_CMPX_EQ_U32_e32 $vgpr0, $vgpr1, implicit-def $vcc, implicit-def $exec, implicit $exec",
           "$vgpr2 = V_MOV_B32_dpp $vgpr2(tied-def 0), $vgpr3, 1, 15, 15, 0, implicit $exec"],
 "mfma_valu_read": ["$agpr0_agpr1_agpr2_agpr3 = V_MFMA_F32_16X16X16F16_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $agpr0_agpr1_agpr2_agpr3, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ACCVGPR_READ_B32_e64 $agpr1, implicit $exec"],
 "mfma32_valu_read": ["$agpr0_agpr1_agpr2_agpr3_agpr4_agpr5_agpr6_agpr7_agpr8_agpr9_agpr10_agpr11_agpr12_agpr13_agpr14_agpr15 = V_MFMA_F32_32X32X8F16_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $agpr0_agpr1_agpr2_agpr3_agpr4_agpr5_agpr6_agpr7_agpr8_agpr9_agpr10_agpr11_agpr12_agpr13_agpr14_agpr15, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ACCVGPR_READ_B32_e64 $agpr15, implicit $exec"],
 "mfma4_valu_read": ["$agpr0_agpr1_agpr2_agpr3 = V_MFMA_F32_4X4X4F16_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $agpr0_agpr1_agpr2_agpr3, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ACCVGPR_READ_B32_e64 $agpr1, implicit $exec"],
 "mfma_vgpr_valu_read": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "mfma_store": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "GLOBAL_STORE_DWORD_SADDR $vgpr0, $vgpr12, $sgpr0_sgpr1, 0, 0, implicit $exec"],
 "mfma_valu_write": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr12 = V_MOV_B32_e32 0, implicit $exec"],
 "mfma_srcc_war": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr20_vgpr21_vgpr22_vgpr23, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr21 = V_MOV_B32_e32 0, implicit $exec"],
 "mfma_srcab": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr20_vgpr21_vgpr22_vgpr23 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr10_vgpr11, $vgpr2_vgpr3, $vgpr20_vgpr21_vgpr22_vgpr23, 0, 0, 0, implicit $mode, implicit $exec"],
 "mfma_srcc_same": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr4_vgpr5, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec"],
 "mfma_srcc_overlap": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr12_vgpr13_vgpr14_vgpr15 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr4_vgpr5, $vgpr2_vgpr3, $vgpr12_vgpr13_vgpr14_vgpr15, 0, 0, 0, implicit $mode, implicit $exec"],
 "mfma4_srcc_same": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_4X4X4F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_4X4X4F16_vgprcd_e64 $vgpr4_vgpr5, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec"],
 "valu_mfma": ["$vgpr2 = V_MOV_B32_e32 0, implicit $exec",
           "$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec"],
 "valu_mfma_srcc": ["$vgpr11 = V_MOV_B32_e32 0, implicit $exec",
           "$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec"],
 "exec_mfma": ["V_CMPX_EQ_U32_e32 $vgpr0, $vgpr1, implicit-def $vcc, implicit-def $exec, implicit $exec",
           "$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec"],
 "smfma_valu_read": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X4F32_vgprcd_e64 $vgpr0, $vgpr2, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "dgemm_valu_read": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17 = V_MFMA_F64_16X16X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "dgemm_store": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17 = V_MFMA_F64_16X16X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17, 0, 0, 0, implicit $mode, implicit $exec",
           "GLOBAL_STORE_DWORD_SADDR $vgpr0, $vgpr12, $sgpr0_sgpr1, 0, 0, implicit $exec"],
 "dgemm4_srcc": ["$vgpr10_vgpr11 = V_MFMA_F64_4X4X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr10_vgpr11 = V_MFMA_F64_4X4X4F64_vgprcd_e64 $vgpr4_vgpr5, $vgpr2_vgpr3, $vgpr10_vgpr11, 0, 0, 0, implicit $mode, implicit $exec"],
 "dgemm_fma64": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17 = V_MFMA_F64_16X16X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr20_vgpr21 = V_FMA_F64_e64 0, $vgpr0_vgpr1, 0, $vgpr2_vgpr3, 0, $vgpr4_vgpr5, 0, 0, implicit $mode, implicit $exec"],
 "store_data_valu": ["GLOBAL_STORE_DWORDX4_SADDR $vgpr0, $vgpr4_vgpr5_vgpr6_vgpr7, $sgpr0_sgpr1, 0, 0, implicit $exec",
           "$vgpr5 = V_MOV_B32_e32 0, implicit $exec"],
 "vcc_div_fmas": ["$vcc = V_CMP_EQ_U32_e64 $vgpr0, $vgpr1, implicit $exec",
           "$vgpr2 = V_DIV_FMAS_F32_e64 0, $vgpr0, 0, $vgpr1, 0, $vgpr3, 0, 0, implicit $mode, implicit $vcc, implicit $exec"],
 "m0_lds_dma": ["$m0 = S_MOV_B32 0",
           "BUFFER_LOAD_DWORD_LDS_OFFEN $vgpr0, $sgpr4_sgpr5_sgpr6_sgpr7, $sgpr8, 0, 0, 0, implicit $exec, implicit $m0"],
 "setreg_getreg": ["S_SETREG_IMM32_B32 0, 2177, implicit-def $mode, implicit $mode",
           "$sgpr0 = S_GETREG_B32 2177, implicit $mode"],
 "dot_read": ["$vgpr2 = V_DOT2_F32_F16 8, $vgpr0, 8, $vgpr1, 8, $vgpr3, 0, 0, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr4 = V_ADD_F32_e32 $vgpr2, $vgpr1, implicit $mode, implicit $exec"],
 "valu_sgpr_vmem_soffset": ["$sgpr8 = V_READFIRSTLANE_B32 $vgpr0, implicit $exec",
           "$vgpr1 = BUFFER_LOAD_DWORD_OFFEN $vgpr0, $sgpr4_sgpr5_sgpr6_sgpr7, $sgpr8, 0, 0, 0, implicit $exec"],
 "salu_exec_mfma": ["$exec = S_MOV_B64 -1",
           "$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec"],
 "salu_exec_dpp": ["$exec = S_MOV_B64 -1",
           "$vgpr2 = V_MOV_B32_dpp $vgpr2(tied-def 0), $vgpr3, 1, 15, 15, 0, implicit $exec"],
 "m0_movrel": ["$m0 = S_MOV_B32 0",
           "$sgpr0 = S_MOVRELS_B32 $sgpr4, implicit $m0"],
 "i8_mfma_read": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_I32_16X16X32I8_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_U32_e32 $vgpr11, $vgpr1, implicit $exec"],
 "bf16_mfma_srcab": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16BF16_1K_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr20_vgpr21_vgpr22_vgpr23 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr4_vgpr5, $vgpr12_vgpr13, $vgpr20_vgpr21_vgpr22_vgpr23, 0, 0, 0, implicit $mode, implicit $exec"],
 "smfma_srcc_overlap": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X4F32_vgprcd_e64 $vgpr0, $vgpr2, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr12_vgpr13_vgpr14_vgpr15 = V_MFMA_F32_16X16X4F32_vgprcd_e64 $vgpr0, $vgpr2, $vgpr12_vgpr13_vgpr14_vgpr15, 0, 0, 0, implicit $mode, implicit $exec"],
 "xdl_then_smfma_srcc": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr12_vgpr13_vgpr14_vgpr15 = V_MFMA_F32_16X16X4F32_vgprcd_e64 $vgpr0, $vgpr2, $vgpr12_vgpr13_vgpr14_vgpr15, 0, 0, 0, implicit $mode, implicit $exec"],
 "dgemm_srcc_overlap": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17 = V_MFMA_F64_16X16X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17_vgpr18_vgpr19 = V_MFMA_F64_16X16X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17_vgpr18_vgpr19, 0, 0, 0, implicit $mode, implicit $exec"],
 "dgemm_srcab": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17 = V_MFMA_F64_16X16X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr20_vgpr21_vgpr22_vgpr23_vgpr24_vgpr25_vgpr26_vgpr27 = V_MFMA_F64_16X16X4F64_vgprcd_e64 $vgpr12_vgpr13, $vgpr2_vgpr3, $vgpr20_vgpr21_vgpr22_vgpr23_vgpr24_vgpr25_vgpr26_vgpr27, 0, 0, 0, implicit $mode, implicit $exec"],
 "dgemm_valu_write": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17 = V_MFMA_F64_16X16X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr12 = V_MOV_B32_e32 0, implicit $exec"],
 "mfma32_srcc_war": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17_vgpr18_vgpr19_vgpr20_vgpr21_vgpr22_vgpr23_vgpr24_vgpr25 = V_MFMA_F32_32X32X8F16_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr30_vgpr31_vgpr32_vgpr33_vgpr34_vgpr35_vgpr36_vgpr37_vgpr38_vgpr39_vgpr40_vgpr41_vgpr42_vgpr43_vgpr44_vgpr45, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr31 = V_MOV_B32_e32 0, implicit $exec"],
 "accvgpr_write_mfma": ["$agpr1 = V_ACCVGPR_WRITE_B32_e64 $vgpr0, implicit $exec",
           "$agpr0_agpr1_agpr2_agpr3 = V_MFMA_F32_16X16X16F16_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $agpr0_agpr1_agpr2_agpr3, 0, 0, 0, implicit $mode, implicit $exec"],
 "vop3_opsel_dst": ["$vgpr1 = V_CVT_PK_FP8_F32_e64 8, $vgpr0, 0, $vgpr2, $vgpr1, 0, implicit $mode, implicit $exec",
           "$vgpr3 = V_ADD_U32_e32 $vgpr1, $vgpr0, implicit $exec"],
 "vop3_no_opsel": ["$vgpr1 = V_CVT_PK_FP8_F32_e64 0, $vgpr0, 0, $vgpr2, $vgpr1, 0, implicit $mode, implicit $exec",
           "$vgpr3 = V_ADD_U32_e32 $vgpr1, $vgpr0, implicit $exec"],
 "dgemm4_srcab": ["$vgpr10_vgpr11 = V_MFMA_F64_4X4X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr12_vgpr13 = V_MFMA_F64_4X4X4F64_vgprcd_e64 $vgpr10_vgpr11, $vgpr2_vgpr3, $vgpr12_vgpr13, 0, 0, 0, implicit $mode, implicit $exec"],
 "dgemm4_valu_read": ["$vgpr10_vgpr11 = V_MFMA_F64_4X4X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "dgemm4_store": ["$vgpr10_vgpr11 = V_MFMA_F64_4X4X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11, 0, 0, 0, implicit $mode, implicit $exec",
           "GLOBAL_STORE_DWORD_SADDR $vgpr0, $vgpr11, $sgpr0_sgpr1, 0, 0, implicit $exec"],
 "dgemm4_valu_write": ["$vgpr10_vgpr11 = V_MFMA_F64_4X4X4F64_vgprcd_e64 $vgpr0_vgpr1, $vgpr2_vgpr3, $vgpr10_vgpr11, 0, 0, 0, implicit $mode, implicit $exec",
           "$vgpr11 = V_MOV_B32_e32 0, implicit $exec"],
 "sdwa_read": ["$vgpr1 = V_ADD_U32_sdwa 0, $vgpr0, 0, $vgpr3, 0, 5, 0, 6, 6, implicit $exec",
           "$vgpr2 = V_ADD_U32_e32 $vgpr1, $vgpr0, implicit $exec"],
}
SCEN950 = {
 "permlane16": ["$vgpr1 = V_MOV_B32_e32 0, implicit $exec",
           "$vgpr2, $vgpr1 = V_PERMLANE16_SWAP_B32_e32 $vgpr2, $vgpr1, implicit $exec"],
 "cvt_scale_fp4_sel2": ["$vgpr1 = V_CVT_SCALEF32_PK_FP4_F32_e64 0, $vgpr0, 0, $vgpr2, 4, $vgpr4, $vgpr1, 0, implicit $mode, implicit $exec",
           "$vgpr3 = V_ADD_U32_e32 $vgpr1, $vgpr0, implicit $exec"],
 "cvt_scale_sr_pk_fp4": ["$vgpr1 = V_CVT_SCALEF32_SR_PK_FP4_F32_e64 0, $vgpr6_vgpr7, 0, $vgpr2, 0, $vgpr4, $vgpr1, 0, implicit $mode, implicit $exec",
           "$vgpr3 = V_ADD_U32_e32 $vgpr1, $vgpr0, implicit $exec"],
 "cvt_scale_sr_fp8_sel2": ["$vgpr1 = V_CVT_SCALEF32_SR_FP8_F32_e64 0, $vgpr0, 0, $vgpr2, 4, $vgpr4, $vgpr1, 0, implicit $mode, implicit $exec",
           "$vgpr3 = V_ADD_U32_e32 $vgpr1, $vgpr0, implicit $exec"],
 "cvt_scale_fp4": ["$vgpr1 = V_CVT_SCALEF32_PK_FP4_F32_e64 0, $vgpr0, 0, $vgpr2, 0, $vgpr4, $vgpr1, 0, implicit $mode, implicit $exec",
           "$vgpr3 = V_ADD_U32_e32 $vgpr1, $vgpr0, implicit $exec"],
 "mfma_scale_f4_f4": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_SCALE_F32_16X16X128_F8F6F4_f4_f4_vgprcd_e64 $vgpr0_vgpr1_vgpr2_vgpr3, $vgpr0_vgpr1_vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 4, 4, $vgpr20, $vgpr21, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "mfma_scale_f8_f4": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_SCALE_F32_16X16X128_F8F6F4_f8_f4_vgprcd_e64 $vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5_vgpr6_vgpr7, $vgpr0_vgpr1_vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 4, $vgpr20, $vgpr21, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "mfma_scale_f6_f6": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_SCALE_F32_16X16X128_F8F6F4_f6_f6_vgprcd_e64 $vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5, $vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5, $vgpr10_vgpr11_vgpr12_vgpr13, 2, 2, $vgpr20, $vgpr21, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "mfma32_scale_f8_f8": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17_vgpr18_vgpr19_vgpr20_vgpr21_vgpr22_vgpr23_vgpr24_vgpr25 = V_MFMA_SCALE_F32_32X32X64_F8F6F4_f8_f8_vgprcd_e64 $vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5_vgpr6_vgpr7, $vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5_vgpr6_vgpr7, $vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17_vgpr18_vgpr19_vgpr20_vgpr21_vgpr22_vgpr23_vgpr24_vgpr25, 0, 0, $vgpr30, $vgpr31, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "mfma32_scale_f4_f4": ["$vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17_vgpr18_vgpr19_vgpr20_vgpr21_vgpr22_vgpr23_vgpr24_vgpr25 = V_MFMA_SCALE_F32_32X32X64_F8F6F4_f4_f4_vgprcd_e64 $vgpr0_vgpr1_vgpr2_vgpr3, $vgpr0_vgpr1_vgpr2_vgpr3, $vgpr10_vgpr11_vgpr12_vgpr13_vgpr14_vgpr15_vgpr16_vgpr17_vgpr18_vgpr19_vgpr20_vgpr21_vgpr22_vgpr23_vgpr24_vgpr25, 4, 4, $vgpr30, $vgpr31, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "mfma_scale": ["$vgpr10_vgpr11_vgpr12_vgpr13 = V_MFMA_SCALE_F32_16X16X128_F8F6F4_f8_f8_vgprcd_e64 $vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5_vgpr6_vgpr7, $vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5_vgpr6_vgpr7, $vgpr10_vgpr11_vgpr12_vgpr13, 0, 0, $vgpr20, $vgpr21, 0, 0, implicit $mode, implicit $exec",
           "$vgpr5 = V_ADD_F32_e32 $vgpr11, $vgpr1, implicit $mode, implicit $exec"],
 "permlane": ["$vgpr1 = V_MOV_B32_e32 0, implicit $exec",
           "$vgpr1, $vgpr2 = V_PERMLANE32_SWAP_B32_e32 $vgpr1, $vgpr2, implicit $exec"],
 "cmpx_permlane": ["V_CMPX_EQ_U32_e32 $vgpr0, $vgpr1, implicit-def $vcc, implicit-def $exec, implicit $exec",
           "$vgpr3, $vgpr2 = V_PERMLANE32_SWAP_B32_e32 $vgpr3, $vgpr2, implicit $exec"],
}


def mir(lines: list[str]) -> str:
    """A MIR function with the given body lines and S_ENDPGM."""
    body = "\n".join("    " + line for line in [*lines, "S_ENDPGM 0"])
    return f"---\nname: t\ntracksRegLiveness: false\nbody: |\n  bb.0:\n{body}\n...\n"


def padded_asm(lines: list[str], target: str) -> list[str] | None:
    """The instructions llc emits after its hazard recognizer (None on an llc error)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.mir"
        path.write_text(mir(lines))
        r = subprocess.run([LLC, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}",
                            "-start-before=post-RA-hazard-rec", "-o", "-", str(path)],
                           capture_output=True, text=True, check=False)
    if r.returncode:
        print("ERR", target, r.stderr.strip().splitlines()[:3])
        return None
    asm = []
    for line in r.stdout.splitlines():
        text = line.strip()
        if text.startswith("---"):
            break
        if text and not text.startswith((";", ".", "t:")):
            asm.append(text.split(";")[0].strip())
    return asm


def main() -> None:
    """Write llvm_hazards.json."""
    out = {}
    for t in ("gfx942", "gfx950"):
        scen = dict(SCEN)
        if t == "gfx950":
            scen.update(SCEN950)
        for name, lines in scen.items():
            asm = padded_asm(lines, t)
            if asm is not None:
                out[f"{name}@{t}"] = asm
    with open("llvm_hazards.json", "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(len(out))


if __name__ == "__main__":
    main()
