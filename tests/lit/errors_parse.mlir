// Syntax errors carry file:line:col too.
// RUN: not %asterism-ir %s 2>&1 | filecheck %s

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    // CHECK: errors_parse.mlir:[[# @LINE + 1]]:39: error: register range [8:8] is empty: ranges are half-open [first:end)
    %x = amdgcn.alloca : !amdgcn.vgpr<[8:8]>
    amdgcn.sopp s_endpgm
  }
}
