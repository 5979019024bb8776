// Verifier errors: file:line:col, the op, the operand by its database name, what was expected.
// RUN: not %asterism-ir %s 2>&1 | filecheck %s

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %s4 = amdgcn.alloca : !amdgcn.sgpr<4>
    %c1 = arith.constant 1 : i32
    // CHECK: errors.mlir:[[# @LINE + 1]]:5: error: amdgcn.vop2 v_add_u32: operand #2 (vsrc1) expects VGPR, got !amdgcn.sgpr<4>
    %r = amdgcn.vop2 v_add_u32 %v1, %c1, %s4 : (!amdgcn.vgpr<1>, i32, !amdgcn.sgpr<4>) -> !amdgcn.vgpr<1>
    amdgcn.sopp s_endpgm
  }
}
