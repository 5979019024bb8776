// Lowering prints exactly the instructions written, in order, with the registers written.
// RUN: %asterism-ir --lower %s | filecheck %s

amdgcn.module @m target = "gfx942" {
  // CHECK-LABEL: k:
  amdgcn.kernel @k args(n: i32) workgroup_size(64, 1, 1) {
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %n = amdgcn.kernarg_offset n
    %s2 = amdgcn.alloca : !amdgcn.sgpr<2>
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %v4 = amdgcn.alloca : !amdgcn.vgpr<[4:8]>
    %a = amdgcn.alloca : !amdgcn.vgpr<[8:10]>
    %vcc = amdgcn.alloca : !amdgcn.special<vcc>
    %c1 = arith.constant 1 : i32
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1.0 : f32
    // CHECK-NEXT: s_load_dword s2, s[0:1], 0
    %cnt, %t = amdgcn.smem s_load_dword %s2, %kp, %n : (!amdgcn.sgpr<2>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<2>, !amdgcn.token)
    // CHECK-NEXT: s_waitcnt lgkmcnt(0)
    amdgcn.sopp s_waitcnt lgkmcnt = 0
    amdgcn.fallthrough ^loop
  // CHECK-NEXT: loop:
  ^loop:
    // CHECK-NEXT: v_mfma_f32_16x16x16_f16 v[4:7], v[8:9], v[8:9], 0 cbsz:1 abid:1
    %acc = amdgcn.mai v_mfma_f32_16x16x16_f16 %v4, %a, %a, %c0 cbsz = 1 abid = 1 : (!amdgcn.vgpr<[4:8]>, !amdgcn.vgpr<[8:10]>, !amdgcn.vgpr<[8:10]>, i32) -> !amdgcn.vgpr<[4:8]>
    // CHECK-NEXT: v_cmp_gt_f32 vcc, 1.0, v1
    %c = amdgcn.vopc v_cmp_gt_f32 %vcc, %one, %v1 : (!amdgcn.special<vcc>, f32, !amdgcn.vgpr<1>) -> !amdgcn.special<vcc>
    // CHECK-NEXT: s_sub_u32 s2, s2, 1
    %dec = amdgcn.sop2 s_sub_u32 %s2, %s2, %c1 : (!amdgcn.sgpr<2>, !amdgcn.sgpr<2>, i32) -> !amdgcn.sgpr<2>
    // CHECK-NEXT: s_cmp_lg_u32 s2, 0
    amdgcn.sopc s_cmp_lg_u32 %dec, %c0 : (!amdgcn.sgpr<2>, i32) -> ()
    // CHECK-NEXT: s_cbranch_scc1 loop
    amdgcn.branch s_cbranch_scc1 ^loop fallthrough ^done
  ^done:
    // CHECK-NEXT: done:
    // CHECK-NEXT: v_add_u32_e64 v1, v1, v1
    %x = amdgcn.vop3 v_add_u32 %v1, %v1, %v1 : (!amdgcn.vgpr<1>, !amdgcn.vgpr<1>, !amdgcn.vgpr<1>) -> !amdgcn.vgpr<1>
    // CHECK-NEXT: s_endpgm
    // CHECK-NOT: {{.}}
    amdgcn.end_kernel
  }
}
