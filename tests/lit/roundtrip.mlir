// Custom syntax and generic syntax both come back to the same IR.
// RUN: %asterism-ir %s | filecheck %s
// RUN: %asterism-ir --generic %s | %asterism-ir - | filecheck %s

// CHECK-LABEL: amdgcn.module @m target = "gfx942" {
// CHECK: amdgcn.kernel @k args(out: buffer<f32, write_only>, n: i32, pad: i64) workgroup_size(256, 1, 1) lds_size(4096) reserved(S = !amdgcn.vgpr<[32:96]>) {
amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args(out: buffer<f32, write_only>, n: i32, pad: i64) workgroup_size(256, 1, 1) lds_size(4096) reserved(S = !amdgcn.vgpr<[32:96]>) {
    // CHECK-NEXT: %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    // CHECK-NEXT: %wg = amdgcn.workgroup_id x : !amdgcn.sgpr<2>
    // CHECK-NEXT: %tid = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    // CHECK-NEXT: %r = amdgcn.alloca : !amdgcn.vgpr
    // CHECK-NEXT: %q = amdgcn.alloca : !amdgcn.vgpr<[? + 4], align 4>
    // CHECK-NEXT: %s = amdgcn.alloca : !amdgcn.special<vcc>
    // CHECK-NEXT: %o = amdgcn.kernarg_offset n
    // CHECK-NEXT: %l = amdgcn.lds_alloc tile size 2048 align 16
    // CHECK-NEXT: %lit = amdgcn.literal 0x3f800000
    // CHECK-NEXT: %off = amdgcn.off
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %wg = amdgcn.workgroup_id x : !amdgcn.sgpr<2>
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    %r = amdgcn.alloca : !amdgcn.vgpr
    %q = amdgcn.alloca : !amdgcn.vgpr<[? + 4], align 4>
    %s = amdgcn.alloca : !amdgcn.special<vcc>
    %o = amdgcn.kernarg_offset n
    %l = amdgcn.lds_alloc tile size 2048 align 16
    %lit = amdgcn.literal 0x3f800000
    %off = amdgcn.off
    // CHECK: %r2 = amdgcn.vop3 v_add_f32 %r, %tid, %tid neg = [1, 0] clamp : (!amdgcn.vgpr, !amdgcn.vgpr<0>, !amdgcn.vgpr<0>) -> !amdgcn.vgpr
    %r2 = amdgcn.vop3 v_add_f32 %r, %tid, %tid neg = [1, 0] clamp : (!amdgcn.vgpr, !amdgcn.vgpr<0>, !amdgcn.vgpr<0>) -> !amdgcn.vgpr
    // CHECK: amdgcn.sopp s_waitcnt vmcnt = 0 lgkmcnt = 0
    amdgcn.sopp s_waitcnt vmcnt = 0 lgkmcnt = 0
    // CHECK-NEXT: amdgcn.sopp s_barrier
    amdgcn.sopp s_barrier
    // CHECK-NEXT: amdgcn.fallthrough ^loop
    amdgcn.fallthrough ^loop
  // CHECK-NEXT: ^loop:
  ^loop:
    // CHECK-NEXT: amdgcn.branch s_cbranch_vccnz ^loop fallthrough ^exit
    amdgcn.branch s_cbranch_vccnz ^loop fallthrough ^exit
  ^exit:
    // CHECK: amdgcn.end_kernel
    amdgcn.end_kernel
  }
}
