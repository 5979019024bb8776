// gfx950 instructions are refused on gfx942 and accepted on gfx950.
// RUN: not %asterism-ir %s 2>&1 | filecheck %s
// RUN: sed 's/gfx942/gfx950/' %s | %asterism-ir --lower - | filecheck %s --check-prefix=GFX950

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %v0 = amdgcn.alloca : !amdgcn.vgpr<0>
    %v2 = amdgcn.alloca : !amdgcn.vgpr<[2:4]>
    // CHECK: errors_target.mlir:[[# @LINE + 2]]:5: error: amdgcn.ds ds_read_b64_tr_b16: 'ds_read_b64_tr_b16' is not available on gfx942 (it is a gfx950 instruction)
    // GFX950: ds_read_b64_tr_b16 v[2:3], v0 offset:64
    %r, %t = amdgcn.ds ds_read_b64_tr_b16 %v2, %v0 offset = 64 : (!amdgcn.vgpr<[2:4]>, !amdgcn.vgpr<0>) -> (!amdgcn.vgpr<[2:4]>, !amdgcn.token)
    amdgcn.sopp s_endpgm
  }
}
