// lower-upstream, amdgpu dialect (gfx942): raw_buffer_load with indexOffset (elements added
// to the VGPR offset) and sgprOffset (elements: soffset = n * 4), raw_buffer_store, an atomic
// fadd at a uniform index, fat_raw_buffer_cast with validBytes (a new resource, num_records = validBytes),
// dpp as v_mov_b32_dpp into a copy of `old`, mfma with a zero accumulator (the inline 0),
// lds_barrier, sched_barrier (no machine code) and memory_counter_wait as s_waitcnt.
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s

module attributes {gpu.container_module} {
  gpu.module @m {
    // CHECK-LABEL: amdgcn.kernel @amd
    // CHECK: %[[N:.*]], %{{.*}} = amdgcn.smem s_load_dword %{{.*}}, %kernarg_ptr, %n_offset
    // CHECK: %[[SRC:.*]] = amdgcn.make_register_range
    // CHECK: %[[DST:.*]] = amdgcn.make_register_range
    // CHECK: %[[ACC:.*]] = amdgcn.make_register_range
    // CHECK: %[[C:.*]] = amdgcn.make_register_range
    // CHECK: %[[A:.*]] = amdgcn.make_register_range
    gpu.func @amd(%src: memref<64xf32>, %dst: memref<64xf32>, %acc: memref<4xf32>, %c: memref<64x4xf32>, %a: memref<64x4xf16>, %n: i32) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      %t = arith.index_cast %tid : index to i32
      // CHECK: %[[TB:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c2, %workitem_id_x
      // CHECK: %[[OFF:.*]] = amdgcn.vop2 v_add_u32 %{{.*}}, %c4, %[[TB]]
      // sgprOffset counts elements (MLIR scales it by the element size): soffset = n << 2
      // CHECK: %[[NB:.*]] = amdgcn.sop2 s_lshl_b32 %{{.*}}, %[[N]], %c2
      // CHECK: %[[V:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dword %{{.*}}, %[[OFF]], %[[SRC]], %[[NB]] offen
      %v = amdgpu.raw_buffer_load {indexOffset = 1 : i32} %src[%t] sgprOffset %n : memref<64xf32>, i32 -> f32
      %c64 = arith.constant 64 : i64
      // CHECK: %[[D0:.*]], %[[D1:.*]], %{{.*}}, %{{.*}} = amdgcn.split_register_range %[[DST]]
      // CHECK: %[[F0:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %[[D0]]
      // CHECK: %[[F1:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %[[D1]]
      // CHECK: %[[F2:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c64
      // CHECK: %[[F3:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c159744
      // CHECK: %[[FAT:.*]] = amdgcn.make_register_range %[[F0]], %[[F1]], %[[F2]], %[[F3]]
      %fat = amdgpu.fat_raw_buffer_cast %dst validBytes(%c64) : memref<64xf32> to memref<64xf32, #amdgpu.address_space<fat_raw_buffer>>
      // CHECK: %[[SA:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c2, %workitem_id_x
      // CHECK: amdgcn.mubuf buffer_store_dword %[[V]], %[[SA]], %[[DST]], %c0 offen
      amdgpu.raw_buffer_store %v -> %dst[%t] : f32 -> memref<64xf32>, i32
      %slot = arith.constant 2 : i32
      // the constant byte offset 8 moved to a VGPR (the offen address)
      // CHECK: %[[EIGHT:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %c8
      // CHECK: amdgcn.mubuf buffer_atomic_add_f32 %[[V]], %[[EIGHT]], %[[ACC]], %c0 offen
      amdgpu.raw_buffer_atomic_fadd %v -> %acc[%slot] : f32 -> memref<4xf32>, i32
      %old = arith.constant 0.0 : f32
      // CHECK: %[[OLD:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %c0
      // CHECK: %[[D:.*]] = amdgcn.dpp v_mov_b32 %[[OLD]], %[[V]] dpp_ctrl = 257 row_mask = 15 bank_mask = 15 bound_ctrl
      %d = amdgpu.dpp %old %v row_shl(1 : i32) {bound_ctrl = true} : f32
      // CHECK: amdgcn.mubuf buffer_store_dword %[[D]], %{{.*}}, %[[FAT]], %c0 offen
      memref.store %d, %fat[%tid] : memref<64xf32, #amdgpu.address_space<fat_raw_buffer>>
      // CHECK: %[[VA:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dwordx2 %{{.*}}, %{{.*}}, %[[A]], %c0 offen
      %va = vector.load %a[%tid, %c0] : memref<64x4xf16>, vector<4xf16>
      %zero = arith.constant dense<0.0> : vector<4xf32>
      // CHECK: %[[M:.*]] = amdgcn.mai v_mfma_f32_16x16x16_f16 %{{.*}}, %[[VA]], %[[VA]], %c0
      %m = amdgpu.mfma 16x16x16 %va * %va + %zero blgp = none : vector<4xf16>, vector<4xf16>, vector<4xf32>
      // CHECK: amdgcn.mubuf buffer_store_dwordx4 %[[M]], %{{.*}}, %[[C]], %c0 offen
      vector.store %m, %c[%tid, %c0] : memref<64x4xf32>, vector<4xf32>
      // CHECK-NEXT: amdgcn.sopp s_waitcnt lgkmcnt = 0
      // CHECK-NEXT: amdgcn.sopp s_barrier
      amdgpu.lds_barrier
      // CHECK-NEXT: amdgcn.sched_barrier mask = 0 : i32
      amdgpu.sched_barrier allow = <none>
      // CHECK-NEXT: amdgcn.sopp s_waitcnt vmcnt = 3 lgkmcnt = 1
      amdgpu.memory_counter_wait load(3) ds(1)
      // CHECK-NEXT: amdgcn.sopp s_endpgm
      gpu.return
    }
  }
}
