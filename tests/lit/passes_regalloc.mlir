// regalloc places relocatable values around a pinned register and a reserved region,
// keeps a coalesced copy, and reports used vs peak on stderr.
// RUN: %python -m asterism.cli opt %s --pipeline "regalloc{report=1}" 2> %t.err | filecheck %s
// RUN: filecheck %s --check-prefix=REPORT < %t.err
// RUN: %python -m asterism.cli opt %s --pipeline regalloc | %asterism-ir --lower - | filecheck %s --check-prefix=ASM

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) reserved(S = !amdgcn.vgpr<[0:4]>) {
    %p = amdgcn.alloca : !amdgcn.vgpr<4>
    %a = amdgcn.alloca : !amdgcn.vgpr
    %b = amdgcn.alloca : !amdgcn.vgpr
    %q = amdgcn.alloca : !amdgcn.vgpr<[? + 2]>
    %c1 = arith.constant 1 : i32
    // CHECK: %p1 = amdgcn.vop1 v_mov_b32 %p, %c1 : (!amdgcn.vgpr<4>, i32) -> !amdgcn.vgpr<4>
    %p1 = amdgcn.vop1 v_mov_b32 %p, %c1 : (!amdgcn.vgpr<4>, i32) -> !amdgcn.vgpr<4>
    // CHECK: %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : (!amdgcn.vgpr<5>, i32) -> !amdgcn.vgpr<5>
    %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    // CHECK: %b1 = amdgcn.vop1 v_mov_b32 %b, %a1 : (!amdgcn.vgpr<5>, !amdgcn.vgpr<5>) -> !amdgcn.vgpr<5>
    %b1 = amdgcn.vop1 v_mov_b32 %b, %a1 : (!amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    // CHECK: %q1 = amdgcn.vop1 v_mov_b64 %q, %c1 : (!amdgcn.vgpr<[6:8]>, i32) -> !amdgcn.vgpr<[6:8]>
    %q1 = amdgcn.vop1 v_mov_b64 %q, %c1 : (!amdgcn.vgpr<[? + 2]>, i32) -> !amdgcn.vgpr<[? + 2]>
    %x = amdgcn.vop2 v_add_u32 %b1, %p1, %b1 : (!amdgcn.vgpr, !amdgcn.vgpr<4>, !amdgcn.vgpr) -> !amdgcn.vgpr
    %y = amdgcn.vop3 v_add_f64 %q1, %q1, %q1 : (!amdgcn.vgpr<[? + 2]>, !amdgcn.vgpr<[? + 2]>, !amdgcn.vgpr<[? + 2]>) -> !amdgcn.vgpr<[? + 2]>
    amdgcn.sopp s_endpgm
  }
}

// REPORT: regalloc @k (gfx942):
// REPORT-NEXT: VGPR  used    4  peak    4  span v0-v7 {{.*}}allocated 3 values; peak at {{.*}}passes_regalloc.mlir:22:5 (before amdgcn.vop2 v_add_u32)
// REPORT: copies coalesced 1 of 1

// ASM:      v_mov_b32 v4, 1
// ASM-NEXT: v_mov_b32 v5, 1
// ASM-NEXT: v_mov_b32 v5, v5
// ASM-NEXT: v_mov_b64 v[6:7], 1
// ASM-NEXT: v_add_u32 v5, v4, v5
// ASM-NEXT: v_add_f64 v[6:7], v[6:7], v[6:7]
// ASM-NEXT: s_endpgm
