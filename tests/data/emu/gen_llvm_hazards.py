"""Regenerates llvm_hazards.json: LLVM's hazard recognizer (llc -start-before=
post-RA-hazard-rec) pads each two-instruction MIR scenario below with the s_nops it needs, for
gfx942 and gfx950. tests/test_emu_hazards_llvm.py checks asterism's hazard table against it.
The XNACK soft-clause scenarios (SOFT) run for each xnack setting: the processor alone
("any", XNACK enabled), with -mattr=+xnack and with -mattr=-xnack (keys name@gfx942,
name@gfx942:xnack+, name@gfx942:xnack-).
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


# XNACK soft clauses (GCNHazardRecognizer::checkSoftClauseHazards): back-to-back SMEM or
# VMEM instructions, with and without a register written by one and read by one. (No
# scenario has an s_nop of its own: the tests take every s_nop for one llc inserted.)
_G = "implicit $exec"
SOFT = {
 "clause_smem_war": ["$sgpr4_sgpr5 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr0 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 24, 0"],
 "clause_smem_raw": ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr6 = S_LOAD_DWORD_IMM $sgpr4_sgpr5, 0, 0"],
 "clause_smem_waw": ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr4 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 0, 0"],
 "clause_smem_independent": ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr5 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 4, 0"],
 "clause_smem_self_first": ["$sgpr0_sgpr1 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr6 = S_LOAD_DWORD_IMM $sgpr8_sgpr9, 0, 0"],
 "clause_smem_self_joining": ["$sgpr6 = S_LOAD_DWORD_IMM $sgpr8_sgpr9, 0, 0",
           "$sgpr0_sgpr1 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0"],
 "clause_smem_self_alone": ["$sgpr0_sgpr1 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0",
           "$vgpr0 = V_MOV_B32_e32 0, implicit $exec"],
 "clause_smem_salu_between": ["$sgpr4_sgpr5 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr7 = S_MOV_B32 0", "$sgpr0 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 24, 0"],
 "clause_smem_waitcnt_between": ["$sgpr4_sgpr5 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0",
           "S_WAITCNT 0", "$sgpr0 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 24, 0"],
 "clause_smem_vmem_between": ["$sgpr4_sgpr5 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0",
           f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           "$sgpr0 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 24, 0"],
 "clause_smem_third": ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr5 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 0, 0",
           "$sgpr0 = S_LOAD_DWORD_IMM $sgpr8_sgpr9, 24, 0"],
 "clause_smem_sixth": ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr5 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 0, 0",
           "$sgpr6 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 4, 0",
           "$sgpr7 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 8, 0",
           "$sgpr10 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 12, 0",
           "$sgpr0 = S_LOAD_DWORD_IMM $sgpr8_sgpr9, 24, 0"],
 "clause_smem_twice": ["$sgpr4_sgpr5 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr0 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 24, 0",
           "$sgpr1 = S_LOAD_DWORD_IMM $sgpr4_sgpr5, 0, 0",
           "$sgpr8 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 0, 0"],
 "clause_smem_memtime": ["$sgpr0_sgpr1 = S_MEMTIME",
           "$sgpr6 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0"],
 "clause_smem_store": ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0",
           "S_STORE_DWORD_IMM $sgpr6, $sgpr2_sgpr3, 0, 0"],
 "clause_smem_atomic": ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr6 = S_ATOMIC_ADD_IMM_RTN $sgpr6, $sgpr2_sgpr3, 0, 1"],
 "clause_smem_dcache_inside": ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0", "S_DCACHE_INV",
           "$sgpr0 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 0, 0"],
 "clause_smem_buffer_soffset": [
           "$sgpr4 = S_BUFFER_LOAD_DWORD_SGPR $sgpr8_sgpr9_sgpr10_sgpr11, $sgpr12, 0",
           "$sgpr12 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0"],
 "clause_smem_vcc": ["$vcc = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0",
           "$sgpr4 = S_LOAD_DWORD_IMM $vcc, 0, 0"],
 "clause_vmem_war": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"$vgpr2 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, {_G}"],
 "clause_vmem_independent": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"$vgpr6 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, {_G}"],
 "clause_vmem_saddr_war": [f"$vgpr1 = GLOBAL_LOAD_DWORD_SADDR $sgpr0_sgpr1, $vgpr0, 0, 0, {_G}",
           f"$vgpr0 = GLOBAL_LOAD_DWORD_SADDR $sgpr0_sgpr1, $vgpr2, 4, 0, {_G}"],
 "clause_vmem_raw": [f"$vgpr2_vgpr3 = GLOBAL_LOAD_DWORDX2 $vgpr0_vgpr1, 0, 0, {_G}",
           f"$vgpr4 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}"],
 "clause_vmem_store_after_load": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"GLOBAL_STORE_DWORD $vgpr4_vgpr5, $vgpr6, 0, 0, {_G}"],
 "clause_vmem_store_after_store": [f"GLOBAL_STORE_DWORD $vgpr4_vgpr5, $vgpr6, 0, 0, {_G}",
           f"GLOBAL_STORE_DWORD $vgpr4_vgpr5, $vgpr7, 4, 0, {_G}"],
 "clause_vmem_load_after_store": [f"GLOBAL_STORE_DWORD $vgpr4_vgpr5, $vgpr6, 0, 0, {_G}",
           f"$vgpr4 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}"],
 "clause_vmem_store_load_load": [f"GLOBAL_STORE_DWORD $vgpr4_vgpr5, $vgpr6, 0, 0, {_G}",
           f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"$vgpr4 = GLOBAL_LOAD_DWORD $vgpr6_vgpr7, 0, 0, {_G}"],
 "clause_vmem_valu_between": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           "$vgpr9 = V_MOV_B32_e32 0, implicit $exec",
           f"$vgpr2 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, {_G}"],
 "clause_vmem_ds_between": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"$vgpr9 = DS_READ_B32 $vgpr8, 0, 0, implicit $m0, {_G}",
           f"$vgpr2 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, {_G}"],
 "clause_vmem_smem_between": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           "$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0",
           f"$vgpr2 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, {_G}"],
 "clause_vmem_flat_global": [f"$vgpr1 = FLAT_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}, implicit $flat_scr",
           f"$vgpr2 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, {_G}"],
 "clause_vmem_buffer_global": [
           f"$vgpr1 = BUFFER_LOAD_DWORD_OFFEN $vgpr0, $sgpr4_sgpr5_sgpr6_sgpr7, $sgpr8, 0, 0, 0, {_G}",
           f"$vgpr0 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, {_G}"],
 "clause_vmem_scratch": [f"$vgpr1 = SCRATCH_LOAD_DWORD $vgpr0, 0, 0, {_G}, implicit $flat_scr",
           f"$vgpr0 = SCRATCH_LOAD_DWORD $vgpr2, 0, 0, {_G}, implicit $flat_scr"],
 "clause_vmem_atomic_after_load": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"$vgpr7 = GLOBAL_ATOMIC_ADD_RTN $vgpr4_vgpr5, $vgpr6, 0, 1, {_G}"],
 "clause_vmem_load_after_atomic": [
           f"$vgpr7 = GLOBAL_ATOMIC_ADD_RTN $vgpr4_vgpr5, $vgpr6, 0, 1, {_G}",
           f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}"],
 "clause_vmem_tied_atomic": [
           f"$vgpr1 = BUFFER_ATOMIC_ADD_OFFEN_RTN $vgpr1, $vgpr0, $sgpr4_sgpr5_sgpr6_sgpr7, $sgpr8, 0, 1, {_G}",
           f"$vgpr3 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, {_G}"],
 "clause_vmem_lds_dma": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"GLOBAL_LOAD_LDS_DWORD $vgpr4_vgpr5, 0, 0, {_G}, implicit $m0"],
 "clause_vmem_buffer_lds_dma": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"BUFFER_LOAD_DWORD_LDS_OFFEN $vgpr0, $sgpr4_sgpr5_sgpr6_sgpr7, $sgpr8, 0, 0, 0, {_G}, implicit $m0"],
 "clause_vmem_wbl2": [f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"BUFFER_WBL2 0, {_G}"],
 "clause_vmem_and_sgpr_wait_states": ["$sgpr0 = V_READFIRSTLANE_B32 $vgpr0, implicit $exec",
           f"$vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, {_G}",
           f"$vgpr2 = GLOBAL_LOAD_DWORD_SADDR $sgpr0_sgpr1, $vgpr4, 0, 0, {_G}"],
}
XNACK = {"": None, ":xnack+": "+xnack", ":xnack-": "-xnack"}


def mir(lines: list[str]) -> str:
    """A MIR function with the given body lines and S_ENDPGM."""
    body = "\n".join("    " + line for line in [*lines, "S_ENDPGM 0"])
    return f"---\nname: t\ntracksRegLiveness: false\nbody: |\n  bb.0:\n{body}\n...\n"


def padded_asm(lines: list[str], target: str, mattr: str | None = None) -> list[str] | None:
    """The instructions llc emits after its hazard recognizer (None on an llc error)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.mir"
        path.write_text(mir(lines))
        extra = [f"-mattr={mattr}"] if mattr else []
        r = subprocess.run([LLC, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", *extra,
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
        for name, lines in SOFT.items():
            for feature, mattr in XNACK.items():
                asm = padded_asm(lines, t, mattr)
                if asm is not None:
                    out[f"{name}@{t}{feature}"] = asm
    with open("llvm_hazards.json", "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(len(out))


if __name__ == "__main__":
    main()
