// lower-upstream, gpu dialect: work-item ids from the packed v0 (masked or bit-extracted as
// the known block size needs), lane_id by v_mbcnt, block ids in SGPRs, block_dim a constant
// when known and the dispatch packet otherwise, grid_dim the packet's grid size divided by the
// block size, the barrier after all memory, gpu.return as s_endpgm.
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s

module attributes {gpu.container_module} {
  gpu.module @m {
    // CHECK-LABEL: amdgcn.kernel @ids args(out: buffer<i32>) workgroup_size(64, 2, 1)
    // CHECK-DAG: %workitem_id_x = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    // CHECK-DAG: %workitem_id_y = amdgcn.workitem_id y : !amdgcn.vgpr<0>
    // CHECK-DAG: %workgroup_id_x = amdgcn.workgroup_id x : !amdgcn.sgpr<4>
    // CHECK-DAG: %dispatch_ptr = amdgcn.dispatch_ptr : !amdgcn.sgpr<[0:2]>
    // The memref argument: its pointer, then a buffer resource (num_records = 8*128*4 bytes).
    // CHECK: %[[PTR:.*]], %{{.*}} = amdgcn.smem s_load_dwordx2 %{{.*}}, %kernarg_ptr, %out_offset
    // CHECK: %[[LO:.*]], %[[HI:.*]] = amdgcn.split_register_range %[[PTR]]
    // CHECK: = amdgcn.sop2 s_and_b32 %{{.*}}, %[[HI]], %c65535
    // CHECK: = amdgcn.sop1 s_mov_b32 %{{.*}}, %[[LO]]
    // CHECK: = amdgcn.sop1 s_mov_b32 %{{.*}}, %c4096
    // CHECK: = amdgcn.sop1 s_mov_b32 %{{.*}}, %c159744
    // CHECK: %[[RSRC:.*]] = amdgcn.make_register_range
    gpu.func @ids(%out: memref<8x128xi32>) kernel attributes {known_block_size = array<i32: 64, 2, 1>} {
      // CHECK: %[[TX:.*]] = amdgcn.vop2 v_and_b32 %{{.*}}, %c1023, %workitem_id_x
      %tx = gpu.thread_id x
      // CHECK: %[[TY:.*]] = amdgcn.vop3 v_bfe_u32 %{{.*}}, %workitem_id_y, %c10, %c10
      %ty = gpu.thread_id y
      // z has size 1: the constant 0, no instruction
      %tz = gpu.thread_id z
      // CHECK: %[[LO32:.*]] = amdgcn.vop3 v_mbcnt_lo_u32_b32 %{{.*}}, %c_m1, %c0
      // CHECK: %[[LANE:.*]] = amdgcn.vop3 v_mbcnt_hi_u32_b32 %{{.*}}, %c_m1, %[[LO32]]
      %lane = gpu.lane_id
      %bx = gpu.block_id x
      %dx = gpu.block_dim x
      // CHECK: %[[ITEMS:.*]], %{{.*}} = amdgcn.smem s_load_dword %{{.*}}, %dispatch_ptr, %c12
      // CHECK: %[[GX:.*]] = amdgcn.sop2 s_lshr_b32 %{{.*}}, %[[ITEMS]], %c6
      %gx = gpu.grid_dim x
      // CHECK: %[[R:.*]] = amdgcn.vop2 v_add_u32 %{{.*}}, %[[TX]], %[[TY]]
      %r = arith.addi %tx, %ty : index
      %r1 = arith.addi %r, %tz : index
      // CHECK: %[[R2:.*]] = amdgcn.vop2 v_add_u32 %{{.*}}, %[[R]], %[[LANE]]
      %r2 = arith.addi %r1, %lane : index
      // uniform index arithmetic on the SALU; block_dim x is the constant 64
      // CHECK: %[[R3:.*]] = amdgcn.sop2 s_add_u32 %{{.*}}, %workgroup_id_x, %c64
      %r3 = arith.addi %bx, %dx : index
      // CHECK: %[[R4:.*]] = amdgcn.sop2 s_add_u32 %{{.*}}, %[[R3]], %[[GX]]
      %r4 = arith.addi %r3, %gx : index
      %v = arith.index_cast %r2 : index to i32
      // CHECK: %[[ROW:.*]] = amdgcn.sop2 s_lshl_b32 %{{.*}}, %[[R4]], %c9
      // CHECK: %[[COL:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c2, %[[TX]]
      // CHECK: %[[OFF:.*]] = amdgcn.vop2 v_add_u32 %{{.*}}, %[[ROW]], %[[COL]]
      // CHECK: amdgcn.mubuf buffer_store_dword %[[R2]], %[[OFF]], %[[RSRC]], %c0 offen
      memref.store %v, %out[%r4, %tx] : memref<8x128xi32>
      // CHECK-NEXT: amdgcn.sopp s_waitcnt vmcnt = 0 lgkmcnt = 0
      // CHECK-NEXT: amdgcn.sopp s_barrier
      gpu.barrier
      // CHECK-NEXT: amdgcn.sopp s_endpgm
      gpu.return
    }

    // Without known_block_size: v0 is still masked, block_dim comes from the dispatch packet.
    // CHECK-LABEL: amdgcn.kernel @unknown_size args(out: buffer<i32>) workgroup_size(64, 1, 1)
    gpu.func @unknown_size(%out: memref<64xi32>) kernel {
      // CHECK: %[[TX2:.*]] = amdgcn.vop2 v_and_b32 %{{.*}}, %c1023, %workitem_id_x
      %tx = gpu.thread_id x
      // CHECK: %[[WORD:.*]], %{{.*}} = amdgcn.smem s_load_dword %{{.*}}, %dispatch_ptr, %c4
      // CHECK: %[[DX:.*]] = amdgcn.sop2 s_and_b32 %{{.*}}, %[[WORD]], %c65535
      %dx = gpu.block_dim x
      // CHECK: amdgcn.vop3 v_add_u32 %{{.*}}, %[[TX2]], %[[DX]]
      %i = arith.addi %tx, %dx : index
      %v = arith.index_cast %i : index to i32
      memref.store %v, %out[%tx] : memref<64xi32>
      gpu.return
    }
  }
}
