// Relocatable registers verify but cannot be lowered before register allocation.
// RUN: %asterism-ir %s | filecheck %s --check-prefix=IR
// RUN: not %asterism-ir --lower %s 2>&1 | filecheck %s

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %v = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    // IR: amdgcn.vop2 v_add_u32 %v, %c1, %v
    // CHECK: errors_regalloc.mlir:[[# @LINE + 1]]:5: error: amdgcn.vop2 v_add_u32: operand #0 (vdst) %v has the relocatable type !amdgcn.vgpr: run the register allocation pass (--pipeline regalloc)
    %r = amdgcn.vop2 v_add_u32 %v, %c1, %v : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    amdgcn.sopp s_endpgm
  }
}
