// copy-prop reads copy sources where the slot allows; dce removes the copies and other
// pure instructions nothing reads, never stores, waits or exec/vcc writes.
// RUN: %python -m asterism.cli opt %s --pipeline copy-prop | filecheck %s --check-prefix=CP
// RUN: %python -m asterism.cli opt %s --pipeline copy-prop,dce | filecheck %s --check-prefix=DCE
// RUN: %python -m asterism.cli opt %s --pipeline "copy-prop,dce,regalloc" | %asterism-ir --lower - | filecheck %s --check-prefix=ASM
// RUN: %python -m asterism.cli opt %s | filecheck %s --check-prefix=NONE

amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %addr = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %off = amdgcn.off
    %s = amdgcn.alloca : !amdgcn.sgpr
    %d = amdgcn.alloca : !amdgcn.vgpr
    %t = amdgcn.alloca : !amdgcn.vgpr
    %u = amdgcn.alloca : !amdgcn.vgpr
    %c5 = arith.constant 5 : i32
    %s1 = amdgcn.sop1 s_mov_b32 %s, %c5 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %d1 = amdgcn.vop1 v_mov_b32 %d, %s1 : (!amdgcn.vgpr, !amdgcn.sgpr) -> !amdgcn.vgpr
    %t1 = amdgcn.vop2 v_add_u32 %t, %d1, %d1 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %u1 = amdgcn.vop2 v_sub_u32 %u, %t1, %d1 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %st = amdgcn.global global_store_dword %addr, %t1, %off : (!amdgcn.vgpr<[0:2]>, !amdgcn.vgpr, !amdgcn.off) -> !amdgcn.token
    amdgcn.sopp s_waitcnt vmcnt = 0
    amdgcn.sopp s_endpgm
  }
}

// CP:      %d1 = amdgcn.vop1 v_mov_b32 %d, %c5
// CP-NEXT: %t1 = amdgcn.vop2 v_add_u32 %t, %s1, %d1
// CP-NEXT: %u1 = amdgcn.vop2 v_sub_u32 %u, %t1, %d1

// DCE-NOT: %u1
// DCE:      %s1 = amdgcn.sop1 s_mov_b32 %s, %c5
// DCE-NEXT: %d1 = amdgcn.vop1 v_mov_b32 %d, %c5
// DCE-NEXT: %t1 = amdgcn.vop2 v_add_u32 %t, %s1, %d1
// DCE-NEXT: %st = amdgcn.global global_store_dword
// DCE-NEXT: amdgcn.sopp s_waitcnt vmcnt = 0

// ASM:      s_mov_b32 s0, 5
// ASM-NEXT: v_mov_b32 v2, 5
// ASM-NEXT: v_add_u32 v2, s0, v2
// ASM-NEXT: global_store_dword v[0:1], v2, off
// ASM-NEXT: s_waitcnt vmcnt(0)
// ASM-NEXT: s_endpgm

// NONE: %u1 = amdgcn.vop2 v_sub_u32 %u, %t1, %d1
