// The hazards pass: the s_nops an MFMA result read needs (gfx942 vs gfx950), counting the
// instructions already in between; check-only reports the violations with PC and rule.
// RUN: %python -m asterism.cli translate %s --pipeline hazards | filecheck %s --check-prefix=GFX942
// RUN: %python -m asterism.cli translate %s --target gfx950 --pipeline hazards | filecheck %s --check-prefix=GFX950
// RUN: not %python -m asterism.cli opt %s --pipeline "hazards{check-only=1}" 2>&1 | filecheck %s --check-prefix=CHECKONLY
// RUN: not %python -m asterism.cli hazards %s | filecheck %s --check-prefix=VERB
// RUN: %python -m asterism.cli opt %s --pipeline "hazards,hazards{check-only=1}" | filecheck %s --check-prefix=IR

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %v0 = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %v2 = amdgcn.alloca : !amdgcn.vgpr<[2:4]>
    %v33 = amdgcn.alloca : !amdgcn.vgpr<1>
    %acc = amdgcn.alloca : !amdgcn.vgpr<[4:8]>
    %v5 = amdgcn.alloca : !amdgcn.vgpr<5>
    %v9 = amdgcn.alloca : !amdgcn.vgpr<9>
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1.0 : f32
    // A VALU write read by the MFMA: 2 wait states.
    // GFX942: v_mov_b32 v1, 1.0
    // GFX942-NEXT: s_nop 1
    // GFX942-NEXT: v_mfma_f32_16x16x16_f16 v[4:7], v[0:1], v[2:3], 0
    %m = amdgcn.vop1 v_mov_b32 %v33, %one : (!amdgcn.vgpr<1>, f32) -> !amdgcn.vgpr<1>
    %d = amdgcn.mai v_mfma_f32_16x16x16_f16 %acc, %v0, %v2, %c0 : (!amdgcn.vgpr<[4:8]>, !amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[2:4]>, i32) -> !amdgcn.vgpr<[4:8]>
    // The result read by a VALU: 7 wait states on gfx942 (4 passes + 3), 8 on gfx950; one
    // independent instruction is already in between.
    // GFX942-NEXT: v_mov_b32 v9, 1.0
    // GFX942-NEXT: s_nop 5
    // GFX942-NEXT: v_add_f32 v9, 1.0, v5
    // GFX950: v_mov_b32 v9, 1.0
    // GFX950-NEXT: s_nop 6
    // GFX950-NEXT: v_add_f32 v9, 1.0, v5
    // CHECKONLY: error: 2 hazard violations:
    // CHECKONLY: passes_hazards.mlir:{{[0-9]+}}:5: k pc 0x4: `v_mfma_f32_16x16x16_f16 v[4:7], v[0:1], v[2:3], 0` comes 0 wait states after `v_mov_b32 v1, 1.0` (pc 0x0) but needs 2 (valu_vgpr_mfma:
    // CHECKONLY: passes_hazards.mlir:{{[0-9]+}}:5: k pc 0x10: `v_add_f32 v9, 1.0, v5` comes 1 wait states after `v_mfma_f32_16x16x16_f16 v[4:7], v[0:1], v[2:3], 0` (pc 0x4) but needs 7 (xdl_valu_read: {{.*}}) - insert s_nop 5
    // VERB: pc 0x10: {{.*}} needs 7 (xdl_valu_read
    %t = amdgcn.vop1 v_mov_b32 %v9, %one : (!amdgcn.vgpr<9>, f32) -> !amdgcn.vgpr<9>
    %r = amdgcn.vop2 v_add_f32 %t, %one, %v5 : (!amdgcn.vgpr<9>, f32, !amdgcn.vgpr<5>) -> !amdgcn.vgpr<9>
    // IR: amdgcn.sopp s_nop
    amdgcn.sopp s_endpgm
  }
}
