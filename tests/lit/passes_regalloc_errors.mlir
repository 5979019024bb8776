// Allocation errors point at the program point of peak pressure (or at the conflicting
// pin) and name the values live there; nothing is spilled and no IR is printed.
// RUN: not %python -m asterism.cli opt %s --pipeline "regalloc{max-vgprs=2}" 2>&1 | filecheck %s --check-prefix=FIT
// RUN: not %python -m asterism.cli opt %s --pipeline "regalloc{reserve=v0-v1,max-vgprs=4}" 2>&1 | filecheck %s --check-prefix=RES
// RUN: not %python -m asterism.cli opt %s --pipeline "regalloc{colour=1}" 2>&1 | filecheck %s --check-prefix=OPT

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %a = amdgcn.alloca : !amdgcn.vgpr
    %b = amdgcn.alloca : !amdgcn.vgpr
    %c = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %b1 = amdgcn.vop1 v_mov_b32 %b, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %c2 = amdgcn.vop2 v_add_u32 %c, %a1, %b1 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %d = amdgcn.vop2 v_add_u32 %c2, %a1, %c2 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %e = amdgcn.vop2 v_add_u32 %d, %b1, %d : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    amdgcn.sopp s_endpgm
  }
}

// FIT: passes_regalloc_errors.mlir:16:5: error: kernel @k does not fit in the VGPRs: 3 are live at once at {{.*}}passes_regalloc_errors.mlir:16:5 (before amdgcn.vop2 v_add_u32), 2 VGPRs are available (v0-v1); live there: %a1 (v[?], from {{.*}}:13:5), %b1 (v[?], from {{.*}}:14:5), %c2 (v[?], from {{.*}}:15:5) (no spilling is done
// FIT-NOT: amdgcn.module
// RES: error: kernel @k does not fit in the VGPRs: 3 are live at once {{.*}} 2 VGPRs are available (v0-v3 minus reserved v[0:1])
// OPT: <pipeline>:1:10: error: unknown option 'colour' of pass 'regalloc'; options: report, reserve, coalesce, max-vgprs, max-agprs, max-sgprs, max-total-vgprs
