// The waits pass: amdgcn.wait resolved to the minimal count, automatic waits before the
// first use of a loaded value (in-order vmcnt, SMEM on lgkmcnt(0)), a hand-written wait
// kept as written, a loop whose back edge brings a load in flight, and the error when an
// unresolved wait is lowered.
// RUN: %python -m asterism.cli opt %s --pipeline waits | filecheck %s --check-prefix=IR
// RUN: %python -m asterism.cli translate %s --pipeline waits | filecheck %s
// RUN: not %asterism-ir --lower %s 2>&1 | filecheck %s --check-prefix=ERR

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args(src: buffer<i32>) workgroup_size(64, 1, 1) {
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %off = amdgcn.kernarg_offset src
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    %s4 = amdgcn.alloca : !amdgcn.sgpr<[4:6]>
    %s8 = amdgcn.alloca : !amdgcn.sgpr<8>
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %v2 = amdgcn.alloca : !amdgcn.vgpr<2>
    %v3 = amdgcn.alloca : !amdgcn.vgpr<3>
    %v4 = amdgcn.alloca : !amdgcn.vgpr<4>
    %v9 = amdgcn.alloca : !amdgcn.vgpr<9>
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c3 = arith.constant 3 : i32
    %c0 = arith.constant 0 : i32
    %c256 = arith.constant 256 : i32
    // CHECK-LABEL: k:
    // CHECK-NEXT: s_load_dwordx2 s[4:5], s[0:1], 0
    // CHECK-NEXT: v_lshlrev_b32 v1, 2, v0
    // CHECK-NEXT: s_waitcnt lgkmcnt(0)
    // CHECK-NEXT: global_load_dword v2, v1, s[4:5]
    %p, %t0 = amdgcn.smem s_load_dwordx2 %s4, %kp, %off : (!amdgcn.sgpr<[4:6]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[4:6]>, !amdgcn.token)
    %a = amdgcn.vop2 v_lshlrev_b32 %v1, %c2, %tid : (!amdgcn.vgpr<1>, i32, !amdgcn.vgpr<0>) -> !amdgcn.vgpr<1>
    %x, %tx = amdgcn.global global_load_dword %v2, %a, %p : (!amdgcn.vgpr<2>, !amdgcn.vgpr<1>, !amdgcn.sgpr<[4:6]>) -> (!amdgcn.vgpr<2>, !amdgcn.token)
    // CHECK-NEXT: global_load_dword v3, v1, s[4:5] offset:256
    // CHECK-NEXT: global_load_dword v4, v1, s[4:5] offset:512
    %y, %ty = amdgcn.global global_load_dword %v3, %a, %p offset = 256 : (!amdgcn.vgpr<3>, !amdgcn.vgpr<1>, !amdgcn.sgpr<[4:6]>) -> (!amdgcn.vgpr<3>, !amdgcn.token)
    %z, %tz = amdgcn.global global_load_dword %v4, %a, %p offset = 512 : (!amdgcn.vgpr<4>, !amdgcn.vgpr<1>, !amdgcn.sgpr<[4:6]>) -> (!amdgcn.vgpr<4>, !amdgcn.token)
    // IR: amdgcn.sopp s_waitcnt vmcnt = 2
    // IR-NOT: amdgcn.wait
    // CHECK-NEXT: s_waitcnt vmcnt(2)
    // CHECK-NEXT: s_nop 0
    // ERR: passes_waits.mlir:[[# @LINE + 1]]:5: error: amdgcn.wait: unresolved: the waits pass turns this wait into s_waitcnt; run it first (--pipeline waits
    amdgcn.wait %tx
    amdgcn.sopp s_nop %c0 : (i32) -> ()
    // A hand-written wait is kept; the use of v3 needs nothing more.
    // CHECK-NEXT: s_waitcnt vmcnt(1)
    // CHECK-NEXT: v_add_u32 v9, v3, v3
    amdgcn.sopp s_waitcnt vmcnt = 1
    %u = amdgcn.vop2 v_add_u32 %v9, %y, %y : (!amdgcn.vgpr<9>, !amdgcn.vgpr<3>, !amdgcn.vgpr<3>) -> !amdgcn.vgpr<9>
    %n = amdgcn.sop1 s_mov_b32 %s8, %c3 : (!amdgcn.sgpr<8>, i32) -> !amdgcn.sgpr<8>
    amdgcn.fallthrough ^loop
  // CHECK: loop:
  // CHECK-NEXT: s_waitcnt vmcnt(0)
  // CHECK-NEXT: v_add_u32 v9, v4, v9
  // CHECK-NEXT: global_load_dword v4, v1, s[4:5] offset:512
  ^loop:
    %w = amdgcn.vop2 v_add_u32 %v9, %v4, %v9 : (!amdgcn.vgpr<9>, !amdgcn.vgpr<4>, !amdgcn.vgpr<9>) -> !amdgcn.vgpr<9>
    %z2, %tz2 = amdgcn.global global_load_dword %v4, %a, %p offset = 512 : (!amdgcn.vgpr<4>, !amdgcn.vgpr<1>, !amdgcn.sgpr<[4:6]>) -> (!amdgcn.vgpr<4>, !amdgcn.token)
    %n2 = amdgcn.sop2 s_sub_u32 %s8, %s8, %c1 : (!amdgcn.sgpr<8>, !amdgcn.sgpr<8>, i32) -> !amdgcn.sgpr<8>
    amdgcn.sopc s_cmp_lg_u32 %n2, %c0 : (!amdgcn.sgpr<8>, i32) -> ()
    amdgcn.branch s_cbranch_scc1 ^loop fallthrough ^done
  // CHECK: s_cbranch_scc1 loop
  // CHECK-NEXT: done:
  // CHECK-NEXT: global_store_dword v1, v9, s[4:5]
  // CHECK-NEXT: s_endpgm
  ^done:
    %ts = amdgcn.global global_store_dword %a, %w, %p : (!amdgcn.vgpr<1>, !amdgcn.vgpr<9>, !amdgcn.sgpr<[4:6]>) -> !amdgcn.token
    amdgcn.end_kernel
  }
}
