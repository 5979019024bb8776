// The assembly file the MC printer writes for IR: instructions as written, and the kernel
// descriptor directives the IR's ABI values, arguments and LDS imply.
// RUN: %asterism-ir --asm %s | filecheck %s

// CHECK: .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
// CHECK-LABEL: copy:
// CHECK-NEXT: s_load_dwordx4 s[4:7], s[0:1], 0
// CHECK-NEXT: v_lshlrev_b32 v1, 2, v0
// CHECK-NEXT: s_waitcnt lgkmcnt(0)
// CHECK-NEXT: global_load_dword v2, v1, s[4:5] offset:-4 nt
// CHECK-NEXT: s_waitcnt vmcnt(0)
// CHECK-NEXT: global_store_dword v1, v2, s[6:7]
// CHECK-NEXT: s_endpgm
// CHECK: .amdhsa_kernel copy
// CHECK: .amdhsa_group_segment_fixed_size 1024
// CHECK: .amdhsa_user_sgpr_kernarg_segment_ptr 1
// CHECK: .amdhsa_system_sgpr_workgroup_id_x 0
// CHECK: .amdhsa_system_vgpr_workitem_id 0
// CHECK: .name: in
// CHECK: .name: out
amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @copy args(in: buffer<f32, read_only>, out: buffer<f32, write_only>) workgroup_size(64, 1, 1) {
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    %lds = amdgcn.lds_alloc scratchpad size 1024 align 16
    %p = amdgcn.alloca : !amdgcn.sgpr<[4:8]>
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %v2 = amdgcn.alloca : !amdgcn.vgpr<2>
    %in = amdgcn.kernarg_offset in
    %c2 = arith.constant 2 : i32
    %ptrs, %t0 = amdgcn.smem s_load_dwordx4 %p, %kp, %in : (!amdgcn.sgpr<[4:8]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[4:8]>, !amdgcn.token)
    %addr = amdgcn.vop2 v_lshlrev_b32 %v1, %c2, %tid : (!amdgcn.vgpr<1>, i32, !amdgcn.vgpr<0>) -> !amdgcn.vgpr<1>
    amdgcn.sopp s_waitcnt lgkmcnt = 0
    %src = amdgcn.alloca : !amdgcn.sgpr<[4:6]>
    %dst = amdgcn.alloca : !amdgcn.sgpr<[6:8]>
    %x, %t1 = amdgcn.global global_load_dword %v2, %addr, %src offset = -4 nt : (!amdgcn.vgpr<2>, !amdgcn.vgpr<1>, !amdgcn.sgpr<[4:6]>) -> (!amdgcn.vgpr<2>, !amdgcn.token)
    amdgcn.sopp s_waitcnt vmcnt = 0
    %t2 = amdgcn.global global_store_dword %addr, %x, %dst : (!amdgcn.vgpr<1>, !amdgcn.vgpr<2>, !amdgcn.sgpr<[6:8]>) -> !amdgcn.token
    amdgcn.sopp s_endpgm
  }
}
