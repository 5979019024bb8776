// inline copies fragments into kernels (a loop fragment splits the caller's block) and
// drops them; regalloc then places the values; the result lowers.
// RUN: %python -m asterism.cli opt %s --pipeline inline | filecheck %s
// RUN: %python -m asterism.cli opt %s --pipeline inline,regalloc | %asterism-ir --lower - | filecheck %s --check-prefix=ASM
// RUN: not %python -m asterism.cli opt %s --pipeline regalloc 2>&1 | filecheck %s --check-prefix=NOINLINE

amdgcn.module @m target = "gfx942" {
  func.func @twice(%x : !amdgcn.sgpr) -> !amdgcn.sgpr {
    %c1 = arith.constant 1 : i32
    %i = amdgcn.alloca : !amdgcn.sgpr
    %i0 = amdgcn.sop1 s_mov_b32 %i, %c1 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    amdgcn.fallthrough ^body
  ^body:
    %x1 = amdgcn.sop2 s_lshl_b32 %x, %x, %c1 : (!amdgcn.sgpr, !amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %i1 = amdgcn.sop2 s_add_u32 %i0, %i0, %c1 : (!amdgcn.sgpr, !amdgcn.sgpr, i32) -> !amdgcn.sgpr
    amdgcn.sopc s_cmp_lt_u32 %i1, %c1 : (!amdgcn.sgpr, i32) -> ()
    amdgcn.branch s_cbranch_scc1 ^body fallthrough ^done
  ^done:
    func.return %x1 : !amdgcn.sgpr
  }
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %s = amdgcn.alloca : !amdgcn.sgpr
    %c3 = arith.constant 3 : i32
    %s1 = amdgcn.sop1 s_mov_b32 %s, %c3 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %r = func.call @twice(%s1) : (!amdgcn.sgpr) -> !amdgcn.sgpr
    %v = amdgcn.alloca : !amdgcn.vgpr
    %v1 = amdgcn.vop1 v_mov_b32 %v, %r : (!amdgcn.vgpr, !amdgcn.sgpr) -> !amdgcn.vgpr
    amdgcn.sopp s_endpgm
  }
}

// CHECK-NOT: func.func
// CHECK:      amdgcn.kernel @k
// CHECK:        %s1 = amdgcn.sop1 s_mov_b32 %s, %c3
// CHECK-NEXT:   amdgcn.fallthrough ^[[ENTRY:.*]]
// CHECK-NEXT: ^[[ENTRY]]:
// CHECK-NEXT:   %c1 = arith.constant 1 : i32
// CHECK:        amdgcn.fallthrough ^[[BODY:.*]]
// CHECK-NEXT: ^[[BODY]]:
// CHECK-NEXT:   %x1 = amdgcn.sop2 s_lshl_b32 %s1, %s1, %c1
// CHECK:        amdgcn.branch s_cbranch_scc1 ^[[BODY]] fallthrough ^[[DONE:.*]]
// CHECK-NEXT: ^[[DONE]]:
// CHECK-NEXT:   amdgcn.fallthrough ^[[REST:.*]]
// CHECK-NEXT: ^[[REST]]:
// CHECK:        amdgcn.vop1 v_mov_b32 %v, %x1
// CHECK:        amdgcn.end_kernel
// CHECK-NOT: func.call

// ASM:      s_mov_b32 s0, 3
// ASM-NEXT: s_mov_b32 s1, 1
// ASM-NEXT: twice1_body:
// ASM-NEXT: s_lshl_b32 s0, s0, 1
// ASM-NEXT: s_add_u32 s1, s1, 1
// ASM-NEXT: s_cmp_lt_u32 s1, 1
// ASM-NEXT: s_cbranch_scc1 twice1_body
// ASM:      v_mov_b32 v0, s0
// ASM-NEXT: s_endpgm

// NOINLINE: passes_inline.mlir:25:5: error: func.call: calls to @twice must be inlined before register allocation (--pipeline inline,regalloc)
