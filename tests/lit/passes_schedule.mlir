// The schedule pass: DS reads move into an MFMA's shadow; nothing crosses s_waitcnt; a
// keep-order span stays exactly as written; dependencies keep their order.
// RUN: %python -m asterism.cli opt --pipeline schedule %s | %asterism-ir --lower - | filecheck %s
// RUN: %python -m asterism.cli opt --pipeline 'schedule{guard=off,counters=keep}' %s | %asterism-ir --lower - | filecheck %s
// RUN: %python -m asterism.cli opt --pipeline schedule %s | filecheck %s --check-prefix=IR

amdgcn.module @m target = "gfx942" {
  // 4 MFMAs then 4 DS reads (model: 128 cycles): the first MFMA, the 4 reads in its
  // shadow, then the other MFMAs (80 cycles). See tests/test_schedule_pass.py.
  // CHECK-LABEL: shadow:
  // CHECK-NEXT: v_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]
  // CHECK-NEXT: ds_read_b64 v[10:11], v4{{$}}
  // CHECK-NEXT: ds_read_b64 v[12:13], v4 offset:8
  // CHECK-NEXT: ds_read_b64 v[14:15], v4 offset:16
  // CHECK-NEXT: ds_read_b64 v[16:17], v4 offset:24
  // CHECK-NEXT: v_mfma_f32_16x16x16_f16 a[4:7], v[0:1], v[2:3], a[4:7]
  // CHECK-NEXT: v_mfma_f32_16x16x16_f16 a[8:11], v[0:1], v[2:3], a[8:11]
  // CHECK-NEXT: v_mfma_f32_16x16x16_f16 a[12:15], v[0:1], v[2:3], a[12:15]
  // CHECK-NEXT: s_endpgm
  amdgcn.kernel @shadow args() workgroup_size(64, 1, 1) {
    %a0 = amdgcn.alloca : !amdgcn.agpr<[0:4]>
    %a4 = amdgcn.alloca : !amdgcn.agpr<[4:8]>
    %a8 = amdgcn.alloca : !amdgcn.agpr<[8:12]>
    %a12 = amdgcn.alloca : !amdgcn.agpr<[12:16]>
    %va = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %vb = amdgcn.alloca : !amdgcn.vgpr<[2:4]>
    %v4 = amdgcn.alloca : !amdgcn.vgpr<4>
    %v10 = amdgcn.alloca : !amdgcn.vgpr<[10:12]>
    %v12 = amdgcn.alloca : !amdgcn.vgpr<[12:14]>
    %v14 = amdgcn.alloca : !amdgcn.vgpr<[14:16]>
    %v16 = amdgcn.alloca : !amdgcn.vgpr<[16:18]>
    %m0 = amdgcn.mai v_mfma_f32_16x16x16_f16 %a0, %va, %vb, %a0 : (!amdgcn.agpr<[0:4]>, !amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[2:4]>, !amdgcn.agpr<[0:4]>) -> !amdgcn.agpr<[0:4]>
    %m1 = amdgcn.mai v_mfma_f32_16x16x16_f16 %a4, %va, %vb, %a4 : (!amdgcn.agpr<[4:8]>, !amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[2:4]>, !amdgcn.agpr<[4:8]>) -> !amdgcn.agpr<[4:8]>
    %m2 = amdgcn.mai v_mfma_f32_16x16x16_f16 %a8, %va, %vb, %a8 : (!amdgcn.agpr<[8:12]>, !amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[2:4]>, !amdgcn.agpr<[8:12]>) -> !amdgcn.agpr<[8:12]>
    %m3 = amdgcn.mai v_mfma_f32_16x16x16_f16 %a12, %va, %vb, %a12 : (!amdgcn.agpr<[12:16]>, !amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[2:4]>, !amdgcn.agpr<[12:16]>) -> !amdgcn.agpr<[12:16]>
    %r0, %t0 = amdgcn.ds ds_read_b64 %v10, %v4 offset = 0 : (!amdgcn.vgpr<[10:12]>, !amdgcn.vgpr<4>) -> (!amdgcn.vgpr<[10:12]>, !amdgcn.token)
    %r1, %t1 = amdgcn.ds ds_read_b64 %v12, %v4 offset = 8 : (!amdgcn.vgpr<[12:14]>, !amdgcn.vgpr<4>) -> (!amdgcn.vgpr<[12:14]>, !amdgcn.token)
    %r2, %t2 = amdgcn.ds ds_read_b64 %v14, %v4 offset = 16 : (!amdgcn.vgpr<[14:16]>, !amdgcn.vgpr<4>) -> (!amdgcn.vgpr<[14:16]>, !amdgcn.token)
    %r3, %t3 = amdgcn.ds ds_read_b64 %v16, %v4 offset = 24 : (!amdgcn.vgpr<[16:18]>, !amdgcn.vgpr<4>) -> (!amdgcn.vgpr<[16:18]>, !amdgcn.token)
    amdgcn.sopp s_endpgm
  }

  // Nothing moves above s_waitcnt. Below it, the shift feeding a DS read has the longest
  // path (4 + 64 cycles) and goes first; the read of v9 (a sub-register of the shift's
  // v[8:9]) waits for it; the independent v_add (4 cycles) moves last.
  // CHECK-LABEL: barrier:
  // CHECK-NEXT: v_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]
  // CHECK-NEXT: s_waitcnt lgkmcnt(0)
  // CHECK-NEXT: v_lshlrev_b64 v[8:9], 1, v[6:7]
  // CHECK-NEXT: ds_read_b64 v[12:13], v9
  // CHECK-NEXT: ds_read_b64 v[10:11], v4{{$}}
  // CHECK-NEXT: v_add_u32 v20, v21, v22
  // CHECK-NEXT: s_endpgm
  amdgcn.kernel @barrier args() workgroup_size(64, 1, 1) {
    %a0 = amdgcn.alloca : !amdgcn.agpr<[0:4]>
    %va = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %vb = amdgcn.alloca : !amdgcn.vgpr<[2:4]>
    %v4 = amdgcn.alloca : !amdgcn.vgpr<4>
    %v6 = amdgcn.alloca : !amdgcn.vgpr<[6:8]>
    %v8 = amdgcn.alloca : !amdgcn.vgpr<[8:10]>
    %v9 = amdgcn.alloca : !amdgcn.vgpr<9>
    %v10 = amdgcn.alloca : !amdgcn.vgpr<[10:12]>
    %v12 = amdgcn.alloca : !amdgcn.vgpr<[12:14]>
    %v20 = amdgcn.alloca : !amdgcn.vgpr<20>
    %v21 = amdgcn.alloca : !amdgcn.vgpr<21>
    %v22 = amdgcn.alloca : !amdgcn.vgpr<22>
    %c1 = arith.constant 1 : i32
    %m0 = amdgcn.mai v_mfma_f32_16x16x16_f16 %a0, %va, %vb, %a0 : (!amdgcn.agpr<[0:4]>, !amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[2:4]>, !amdgcn.agpr<[0:4]>) -> !amdgcn.agpr<[0:4]>
    amdgcn.sopp s_waitcnt lgkmcnt = 0
    %x = amdgcn.vop2 v_add_u32 %v20, %v21, %v22 : (!amdgcn.vgpr<20>, !amdgcn.vgpr<21>, !amdgcn.vgpr<22>) -> !amdgcn.vgpr<20>
    %s = amdgcn.vop3 v_lshlrev_b64 %v8, %c1, %v6 : (!amdgcn.vgpr<[8:10]>, i32, !amdgcn.vgpr<[6:8]>) -> !amdgcn.vgpr<[8:10]>
    %r1, %t1 = amdgcn.ds ds_read_b64 %v12, %v9 offset = 0 : (!amdgcn.vgpr<[12:14]>, !amdgcn.vgpr<9>) -> (!amdgcn.vgpr<[12:14]>, !amdgcn.token)
    %r0, %t0 = amdgcn.ds ds_read_b64 %v10, %v4 offset = 0 : (!amdgcn.vgpr<[10:12]>, !amdgcn.vgpr<4>) -> (!amdgcn.vgpr<[10:12]>, !amdgcn.token)
    amdgcn.sopp s_endpgm
  }

  // A keep-order span is emitted as written, and nothing enters it.
  // CHECK-LABEL: kept:
  // CHECK-NEXT: v_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]
  // CHECK-NEXT: v_mfma_f32_16x16x16_f16 a[4:7], v[0:1], v[2:3], a[4:7]
  // CHECK-NEXT: ds_read_b64 v[10:11], v4{{$}}
  // CHECK-NEXT: s_endpgm
  // IR-LABEL: amdgcn.kernel @kept
  // IR: amdgcn.mai v_mfma_f32_16x16x16_f16 {{.*}} {sched.keep_order = "hot"}
  // IR-NEXT: amdgcn.mai v_mfma_f32_16x16x16_f16 {{.*}} {sched.keep_order = "hot"}
  // IR-NEXT: amdgcn.ds ds_read_b64 {{.*}} {sched.keep_order = "hot"}
  amdgcn.kernel @kept args() workgroup_size(64, 1, 1) {
    %a0 = amdgcn.alloca : !amdgcn.agpr<[0:4]>
    %a4 = amdgcn.alloca : !amdgcn.agpr<[4:8]>
    %va = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %vb = amdgcn.alloca : !amdgcn.vgpr<[2:4]>
    %v4 = amdgcn.alloca : !amdgcn.vgpr<4>
    %v10 = amdgcn.alloca : !amdgcn.vgpr<[10:12]>
    %m0 = amdgcn.mai v_mfma_f32_16x16x16_f16 %a0, %va, %vb, %a0 {sched.keep_order = "hot"} : (!amdgcn.agpr<[0:4]>, !amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[2:4]>, !amdgcn.agpr<[0:4]>) -> !amdgcn.agpr<[0:4]>
    %m1 = amdgcn.mai v_mfma_f32_16x16x16_f16 %a4, %va, %vb, %a4 {sched.keep_order = "hot"} : (!amdgcn.agpr<[4:8]>, !amdgcn.vgpr<[0:2]>, !amdgcn.vgpr<[2:4]>, !amdgcn.agpr<[4:8]>) -> !amdgcn.agpr<[4:8]>
    %r0, %t0 = amdgcn.ds ds_read_b64 %v10, %v4 offset = 0 {sched.keep_order = "hot"} : (!amdgcn.vgpr<[10:12]>, !amdgcn.vgpr<4>) -> (!amdgcn.vgpr<[10:12]>, !amdgcn.token)
    amdgcn.sopp s_endpgm
  }
}
