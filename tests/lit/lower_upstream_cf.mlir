// lower-upstream, cf dialect: a several-block gpu.func body. The loop head branches on the SCC
// of its comparison, the body follows it and computes the carried values into the head's
// argument registers (no copies), one branch back; a per-lane cf.cond_br masks EXEC with the
// comparison's VCC, the true path, then the false one, EXEC restored before the meeting block.
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s

module {
  gpu.module @m {
    // CHECK-LABEL: amdgcn.kernel @loop
    gpu.func @loop(%x: memref<64x16xf32>, %o: memref<64xf32>, %n: i32) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %f0 = arith.constant 0.0 : f32
      // CHECK: %[[ACC:.*]] = amdgcn.alloca : !amdgcn.vgpr
      // CHECK: amdgcn.sop1 s_mov_b32 %[[J:[^,]+]], %c0
      // CHECK: amdgcn.vop1 v_mov_b32 %[[ACC]], %c0
      cf.br ^head(%c0, %f0 : i32, f32)
    // CHECK: ^block1:
    // CHECK-NEXT: amdgcn.sopc s_cmp_lt_i32 %[[J]],
    // CHECK: amdgcn.sop2 s_cselect_b32
    // CHECK-NEXT: amdgcn.branch s_cbranch_scc0 ^block3
    ^head(%j: i32, %acc: f32):
      %go = arith.cmpi slt, %j, %n : i32
      cf.cond_br %go, ^body, ^done
    // CHECK: ^block2:
    // CHECK-NOT: v_mov_b32
    // CHECK: amdgcn.vop2 v_add_f32 %[[ACC]], %[[ACC]],
    // CHECK: amdgcn.sop2 s_add_u32 %[[J]], %[[J]], %c1
    // CHECK-NEXT: amdgcn.branch s_branch ^block1
    ^body:
      %jj = arith.index_cast %j : i32 to index
      %v = memref.load %x[%l, %jj] : memref<64x16xf32>
      %acc2 = arith.addf %acc, %v : f32
      %j2 = arith.addi %j, %c1 : i32
      cf.br ^head(%j2, %acc2 : i32, f32)
    // CHECK: ^block3:
    // CHECK: amdgcn.mubuf buffer_store_dword %[[ACC]]
    ^done:
      memref.store %acc, %o[%l] : memref<64xf32>
      gpu.return
    }

    // CHECK-LABEL: amdgcn.kernel @lanes
    gpu.func @lanes(%x: memref<64xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %zero = arith.constant 0.0 : f32
      %v = memref.load %x[%l] : memref<64xf32>
      // CHECK: %[[VCC:.*]] = amdgcn.vopc v_cmp_lt_f32 %vcc, %{{.*}}, %[[V:[^ ]+]] :
      // CHECK-NOT: v_cmp
      // CHECK: %[[SAVED:.*]] = amdgcn.sop1 s_and_saveexec_b64 %{{.*}}, %[[VCC]]
      // CHECK: amdgcn.vop2 v_mul_f32 %[[R:[^,]+]], %[[V]], %[[V]]
      // CHECK: %[[EXEC:.*]] = amdgcn.sop2 s_xor_b64 %exec, %[[SAVED]], %exec
      // CHECK: %[[NEG:.*]] = amdgcn.vop2 v_xor_b32
      // CHECK-NEXT: amdgcn.vop1 v_mov_b32 %[[R]], %[[NEG]]
      // CHECK: amdgcn.sop2 s_or_b64 %[[EXEC]], %[[EXEC]], %[[SAVED]]
      // CHECK-NEXT: amdgcn.fallthrough ^block3
      %pos = arith.cmpf ogt, %v, %zero : f32
      cf.cond_br %pos, ^then, ^else
    ^then:
      %d = arith.mulf %v, %v : f32
      cf.br ^merge(%d : f32)
    ^else:
      %n = arith.negf %v : f32
      cf.br ^merge(%n : f32)
    // CHECK: ^block3:
    // CHECK: amdgcn.mubuf buffer_store_dword %[[R]]
    ^merge(%r: f32):
      memref.store %r, %x[%l] : memref<64xf32>
      gpu.return
    }
  }
}
