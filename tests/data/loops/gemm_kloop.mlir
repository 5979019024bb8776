// C = A @ B (f16 in, f32 out), M = N = 32, K = 128: one wave per 16x16 tile of C,
// B given transposed. The K loop (8 steps of 16) in 2 stages: stage 0 loads the
// fragments of step k, stage 1 multiplies those of step k-1 (v_mfma_f32_16x16x16_f16).
// Made with kb.loop (see tests/test_loops.py) and printed.
amdgcn.module @gemm_kloop target = "gfx942" {
  amdgcn.kernel @gemm_kloop args(a: buffer<f16, read_only>, bt: buffer<f16, read_only>, c: buffer<f32, write_only>) workgroup_size(64, 1, 1) {
    %kernarg_ptr = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %workgroup_id_x = amdgcn.workgroup_id x : !amdgcn.sgpr<2>
    %workgroup_id_y = amdgcn.workgroup_id y : !amdgcn.sgpr<3>
    %workitem_id_x = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    %s = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %a_offset = amdgcn.kernarg_offset a
    %s_1, %tok = amdgcn.smem s_load_dwordx2 %s, %kernarg_ptr, %a_offset : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
    %s_2 = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %bt_offset = amdgcn.kernarg_offset bt
    %s_3, %tok_1 = amdgcn.smem s_load_dwordx2 %s_2, %kernarg_ptr, %bt_offset : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
    %s_4 = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %c_offset = amdgcn.kernarg_offset c
    %s_5, %tok_2 = amdgcn.smem s_load_dwordx2 %s_4, %kernarg_ptr, %c_offset : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
    %v = amdgcn.alloca : !amdgcn.vgpr
    %c15 = arith.constant 15 : i32
    %v_1 = amdgcn.vop2 v_and_b32 %v, %c15, %workitem_id_x : (!amdgcn.vgpr, i32, !amdgcn.vgpr<0>) -> !amdgcn.vgpr
    %v_2 = amdgcn.alloca : !amdgcn.vgpr
    %c4 = arith.constant 4 : i32
    %v_3 = amdgcn.vop2 v_lshrrev_b32 %v_2, %c4, %workitem_id_x : (!amdgcn.vgpr, i32, !amdgcn.vgpr<0>) -> !amdgcn.vgpr
    %v_4 = amdgcn.alloca : !amdgcn.vgpr
    %c2 = arith.constant 2 : i32
    %v_5 = amdgcn.vop2 v_lshlrev_b32 %v_4, %c2, %v_3 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %s_6 = amdgcn.alloca : !amdgcn.sgpr
    %s_7 = amdgcn.sop2 s_lshl_b32 %s_6, %workgroup_id_y, %c4 : (!amdgcn.sgpr, !amdgcn.sgpr<3>, i32) -> !amdgcn.sgpr
    %s_8 = amdgcn.alloca : !amdgcn.sgpr
    %s_9 = amdgcn.sop2 s_lshl_b32 %s_8, %workgroup_id_x, %c4 : (!amdgcn.sgpr, !amdgcn.sgpr<2>, i32) -> !amdgcn.sgpr
    %v_6 = amdgcn.alloca : !amdgcn.vgpr
    %c128 = arith.constant 128 : i32
    %v_7 = amdgcn.vop1 v_mov_b32 %v_6, %c128 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %v_8 = amdgcn.alloca : !amdgcn.vgpr
    %v_9 = amdgcn.vop2 v_add_u32 %v_8, %s_7, %v_1 : (!amdgcn.vgpr, !amdgcn.sgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_10 = amdgcn.alloca : !amdgcn.vgpr
    %v_11 = amdgcn.vop3 v_mad_u32_u24 %v_10, %v_9, %v_7, %v_5 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_12 = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %v_13 = amdgcn.vop2 v_lshlrev_b32 %v_12, %c1, %v_11 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_14 = amdgcn.alloca : !amdgcn.vgpr
    %v_15 = amdgcn.vop2 v_add_u32 %v_14, %s_9, %v_1 : (!amdgcn.vgpr, !amdgcn.sgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_16 = amdgcn.alloca : !amdgcn.vgpr
    %v_17 = amdgcn.vop3 v_mad_u32_u24 %v_16, %v_15, %v_7, %v_5 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_18 = amdgcn.alloca : !amdgcn.vgpr
    %v_19 = amdgcn.vop2 v_lshlrev_b32 %v_18, %c1, %v_17 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_20 = amdgcn.alloca : !amdgcn.vgpr
    %c0 = arith.constant 0 : i32
    %v_21 = amdgcn.vop1 v_mov_b32 %v_20, %c0 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %v_22 = amdgcn.alloca : !amdgcn.vgpr
    %v_23 = amdgcn.vop1 v_mov_b32 %v_22, %c0 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %v_24 = amdgcn.alloca : !amdgcn.vgpr
    %v_25 = amdgcn.vop1 v_mov_b32 %v_24, %c0 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %v_26 = amdgcn.alloca : !amdgcn.vgpr
    %v_27 = amdgcn.vop1 v_mov_b32 %v_26, %c0 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %v_28 = amdgcn.make_register_range %v_21, %v_23, %v_25, %v_27 : !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr -> !amdgcn.vgpr<[? + 4], align 4>
    %s_10 = amdgcn.alloca : !amdgcn.sgpr
    %s_11 = amdgcn.sop1 s_mov_b32 %s_10, %c0 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %s_12 = amdgcn.alloca : !amdgcn.sgpr
    %c8 = arith.constant 8 : i32
    %s_13 = amdgcn.sop1 s_mov_b32 %s_12, %c8 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %s_14 = amdgcn.alloca : !amdgcn.sgpr
    %s_15 = amdgcn.sop1 s_mov_b32 %s_14, %c1 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %0, %1, %2 = scf.for %3 = %s_11 to %s_13 step %s_15 iter_args(%4 = %v_28, %5 = %v_13, %6 = %v_19) -> (!amdgcn.vgpr<[? + 4], align 4>, !amdgcn.vgpr, !amdgcn.vgpr) : !amdgcn.sgpr {
      %v_29 = amdgcn.alloca : !amdgcn.vgpr<[? + 2], align 2>
      %v_30, %tok_3 = amdgcn.global global_load_dwordx2 %v_29, %5, %s_1 {sched.stage = 0 : i32} : (!amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr, !amdgcn.sgpr<[? + 2]>) -> (!amdgcn.vgpr<[? + 2], align 2>, !amdgcn.token)
      %v_31 = amdgcn.alloca : !amdgcn.vgpr<[? + 2], align 2>
      %v_32, %tok_4 = amdgcn.global global_load_dwordx2 %v_31, %6, %s_3 {sched.stage = 0 : i32} : (!amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr, !amdgcn.sgpr<[? + 2]>) -> (!amdgcn.vgpr<[? + 2], align 2>, !amdgcn.token)
      %v_33 = amdgcn.alloca : !amdgcn.vgpr
      %c32 = arith.constant 32 : i32
      %v_34 = amdgcn.vop2 v_add_u32 %v_33, %c32, %5 {sched.stage = 0 : i32} : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
      %v_35 = amdgcn.alloca : !amdgcn.vgpr
      %v_36 = amdgcn.vop2 v_add_u32 %v_35, %c32, %6 {sched.stage = 0 : i32} : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
      %v_37 = amdgcn.alloca : !amdgcn.vgpr<[? + 4], align 4>
      %v_38 = amdgcn.mai v_mfma_f32_16x16x16_f16 %v_37, %v_32, %v_30, %4 {sched.stage = 1 : i32} : (!amdgcn.vgpr<[? + 4], align 4>, !amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr<[? + 4], align 4>) -> !amdgcn.vgpr<[? + 4], align 4>
      scf.yield %v_38, %v_34, %v_36 : !amdgcn.vgpr<[? + 4], align 4>, !amdgcn.vgpr, !amdgcn.vgpr
    }
    %v_39 = amdgcn.alloca : !amdgcn.vgpr
    %c32_1 = arith.constant 32 : i32
    %v_40 = amdgcn.vop1 v_mov_b32 %v_39, %c32_1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %v_41 = amdgcn.alloca : !amdgcn.vgpr
    %v_42 = amdgcn.vop2 v_add_u32 %v_41, %s_7, %v_1 : (!amdgcn.vgpr, !amdgcn.sgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_43 = amdgcn.alloca : !amdgcn.vgpr
    %v_44 = amdgcn.vop2 v_add_u32 %v_43, %s_9, %v_5 : (!amdgcn.vgpr, !amdgcn.sgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_45 = amdgcn.alloca : !amdgcn.vgpr
    %v_46 = amdgcn.vop3 v_mad_u32_u24 %v_45, %v_42, %v_40, %v_44 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %v_47 = amdgcn.alloca : !amdgcn.vgpr
    %v_48 = amdgcn.vop2 v_lshlrev_b32 %v_47, %c2, %v_46 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %tok_5 = amdgcn.global global_store_dwordx4 %v_48, %0, %s_5 : (!amdgcn.vgpr, !amdgcn.vgpr<[? + 4], align 4>, !amdgcn.sgpr<[? + 2]>) -> !amdgcn.token
    amdgcn.sopp s_endpgm
  }
}
