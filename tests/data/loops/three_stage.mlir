// out[r, t] = 2 * x[r, t] for r < n (n known at launch), software-pipelined in 3 stages:
// stage 0 loads row r, stage 1 waits for it and doubles it, stage 2 stores it.
amdgcn.module @three_stage target = "gfx942" {
  amdgcn.kernel @three_stage args(x: buffer<f32, read_only>, out: buffer<f32, write_only>, n: i32) workgroup_size(64, 1, 1) {
    %kernarg = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    %px0 = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %po0 = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %n0 = amdgcn.alloca : !amdgcn.sgpr
    %x_off = amdgcn.kernarg_offset x
    %out_off = amdgcn.kernarg_offset out
    %n_off = amdgcn.kernarg_offset n
    %px, %t0 = amdgcn.smem s_load_dwordx2 %px0, %kernarg, %x_off : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
    %po, %t1 = amdgcn.smem s_load_dwordx2 %po0, %kernarg, %out_off : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
    %n, %t2 = amdgcn.smem s_load_dword %n0, %kernarg, %n_off : (!amdgcn.sgpr, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr, !amdgcn.token)
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c8 = arith.constant 8 : i32
    %v = amdgcn.alloca : !amdgcn.vgpr
    %toff = amdgcn.vop2 v_lshlrev_b32 %v, %c2, %tid : (!amdgcn.vgpr, i32, !amdgcn.vgpr<0>) -> !amdgcn.vgpr
    %s0 = amdgcn.alloca : !amdgcn.sgpr
    %s1 = amdgcn.alloca : !amdgcn.sgpr
    %lo = amdgcn.sop1 s_mov_b32 %s0, %c0 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %st = amdgcn.sop1 s_mov_b32 %s1, %c1 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %data = amdgcn.alloca : !amdgcn.vgpr
    %doubled = amdgcn.alloca : !amdgcn.vgpr
    %sa = amdgcn.alloca : !amdgcn.sgpr
    %va = amdgcn.alloca : !amdgcn.vgpr
    scf.for %i = %lo to %n step %st : !amdgcn.sgpr {
      %rowb = amdgcn.sop2 s_lshl_b32 %sa, %i, %c8 {sched.stage = 0 : i32} : (!amdgcn.sgpr, !amdgcn.sgpr, i32) -> !amdgcn.sgpr
      %addr = amdgcn.vop2 v_add_u32 %va, %rowb, %toff {sched.stage = 0 : i32} : (!amdgcn.vgpr, !amdgcn.sgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
      %d, %tok = amdgcn.global global_load_dword %data, %addr, %px {sched.stage = 0 : i32} : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.sgpr<[? + 2]>) -> (!amdgcn.vgpr, !amdgcn.token)
      amdgcn.wait %tok {sched.stage = 1 : i32}
      %y = amdgcn.vop2 v_add_f32 %doubled, %d, %d {sched.stage = 1 : i32} : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
      %w = amdgcn.global global_store_dword %addr, %y, %po {sched.stage = 2 : i32} : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.sgpr<[? + 2]>) -> !amdgcn.token
    }
    amdgcn.sopp s_endpgm
  }
}
