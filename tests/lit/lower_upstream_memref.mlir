// lower-upstream, memref dialect: global memrefs through a buffer resource each (num_records
// = the memref's bytes), row-major indices scaled to a byte offset (SALU for the uniform row,
// VALU for the lane's column), a workgroup attribution and a memref.alloc in address space 3
// as LDS allocations (the second one after the first) accessed with ds_read/ds_write.
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s

module attributes {gpu.container_module} {
  gpu.module @m {
    // CHECK-LABEL: amdgcn.kernel @mem args(in: buffer<f16>, out: buffer<i32>, row: i64)
    // CHECK: %tile = amdgcn.lds_alloc tile size 256 align 4
    // CHECK: %lds6 = amdgcn.lds_alloc lds6 size 128 align 4
    // CHECK: %[[ROW:.*]], %{{.*}} = amdgcn.smem s_load_dwordx2 %{{.*}}, %kernarg_ptr, %row_offset
    // CHECK: %[[ROWLO:[^,]*]], %{{.*}} = amdgcn.split_register_range %[[ROW]] :
    // in: 16 x 64 f16 = 2048 bytes
    // CHECK: amdgcn.sop1 s_mov_b32 %{{.*}}, %c2048
    // CHECK: %[[IN:.*]] = amdgcn.make_register_range
    // out: 64 i32 = 256 bytes
    // CHECK: amdgcn.sop1 s_mov_b32 %{{.*}}, %c256
    // CHECK: %[[OUT:.*]] = amdgcn.make_register_range
    gpu.func @mem(%in: memref<16x64xf16>, %out: memref<64xi32>, %row: index) workgroup(%tile: memref<64xi32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      // (row * 64 + tid) * 2 bytes
      // CHECK: %[[RB:.*]] = amdgcn.sop2 s_lshl_b32 %{{.*}}, %[[ROWLO]], %c7
      // CHECK: %[[CB:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c1, %workitem_id_x
      // CHECK: %[[A:.*]] = amdgcn.vop2 v_add_u32 %{{.*}}, %[[RB]], %[[CB]]
      // CHECK: %[[H:.*]], %{{.*}} = amdgcn.mubuf buffer_load_ushort %{{.*}}, %[[A]], %[[IN]], %c0 offen
      %h = memref.load %in[%row, %tid] : memref<16x64xf16>
      %lds = memref.alloc() : memref<64xf16, 3>
      // the allocation starts at byte 256 of LDS
      // CHECK: %[[B:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c1, %workitem_id_x
      // CHECK: %[[BASE:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c256
      // CHECK: %[[LA:.*]] = amdgcn.vop3 v_add_u32 %{{.*}}, %[[B]], %[[BASE]]
      // CHECK: amdgcn.ds ds_write_b16 %[[LA]], %[[H]]
      memref.store %h, %lds[%tid] : memref<64xf16, 3>
      // CHECK: %[[LA2:.*]] = amdgcn.vop3 v_add_u32 %{{.*}}, %{{.*}}, %[[BASE]]
      // CHECK: %[[H2:.*]], %{{.*}} = amdgcn.ds ds_read_u16 %{{.*}}, %[[LA2]]
      %h2 = memref.load %lds[%tid] : memref<64xf16, 3>
      // CHECK: %[[W:.*]] = amdgcn.vop1 v_cvt_f32_f16 %{{.*}}, %[[H2]]
      %w = arith.extf %h2 : f16 to f32
      // CHECK: %[[I:.*]] = amdgcn.vop1 v_cvt_i32_f32 %{{.*}}, %[[W]]
      %i = arith.fptosi %w : f32 to i32
      // the attribution starts at byte 0: the offset is the address
      // CHECK: %[[TA:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c2, %workitem_id_x
      // CHECK: amdgcn.ds ds_write_b32 %[[TA]], %[[I]]
      memref.store %i, %tile[%tid] : memref<64xi32, #gpu.address_space<workgroup>>
      // CHECK: %[[TA2:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c2, %workitem_id_x
      // CHECK: %[[J:.*]], %{{.*}} = amdgcn.ds ds_read_b32 %{{.*}}, %[[TA2]]
      %j = memref.load %tile[%tid] : memref<64xi32, #gpu.address_space<workgroup>>
      // CHECK: amdgcn.mubuf buffer_store_dword %[[J]], %{{.*}}, %[[OUT]], %c0 offen
      memref.store %j, %out[%tid] : memref<64xi32>
      // CHECK-NEXT: amdgcn.sopp s_endpgm
      gpu.return
    }
  }
}
