// amdgpu raw buffer loads, stores and atomics, in and out of range (num_records = memref size).
module {
  gpu.module @m {
    gpu.func @buffers(%src: memref<64xf32>, %dst: memref<128xf32>, %acc: memref<4xf32>,
                      %imax: memref<2xi32>, %cas: memref<64xi32>, %old: memref<64xi32>,
                      %clip: memref<64xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %li = arith.index_cast %l : index to i32
      %c32 = arith.constant 32 : i32
      %c2 = arith.constant 2 : i32
      %c4 = arith.constant 4 : i32
      %c100 = arith.constant 100 : i32
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %hi = arith.addi %li, %c32 : i32
      %v = amdgpu.raw_buffer_load %src[%hi] : memref<64xf32>, i32 -> f32
      %w = amdgpu.raw_buffer_load {indexOffset = 1 : i32} %src[%li] : memref<64xf32>, i32 -> f32
      %d2 = arith.muli %li, %c2 : i32
      amdgpu.raw_buffer_store %v -> %dst[%d2] : f32 -> memref<128xf32>, i32
      %d100 = arith.addi %li, %c100 : i32
      amdgpu.raw_buffer_store %w -> %dst[%d100] : f32 -> memref<128xf32>, i32
      %slot = arith.remui %li, %c4 : i32
      amdgpu.raw_buffer_atomic_fadd %w -> %acc[%slot] : f32 -> memref<4xf32>, i32
      %c7 = arith.constant 7 : i32
      %c200 = arith.constant 200 : i32
      %s7 = arith.muli %li, %c7 : i32
      %iv = arith.subi %s7, %c200 : i32
      amdgpu.raw_buffer_atomic_smax %iv -> %imax[%i0] : i32 -> memref<2xi32>, i32
      amdgpu.raw_buffer_atomic_umin %iv -> %imax[%i1] : i32 -> memref<2xi32>, i32
      %c1000 = arith.constant 1000 : i32
      %new = arith.addi %li, %c1000 : i32
      %prev = amdgpu.raw_buffer_atomic_cmpswap %new, %li -> %cas[%li] : i32 -> memref<64xi32>, i32
      amdgpu.raw_buffer_store %prev -> %old[%li] : i32 -> memref<64xi32>, i32
      %v128 = arith.constant 128 : i64
      %fat = amdgpu.fat_raw_buffer_cast %src validBytes(%v128) : memref<64xf32> to memref<64xf32, #amdgpu.address_space<fat_raw_buffer>>
      %x = memref.load %fat[%l] : memref<64xf32, #amdgpu.address_space<fat_raw_buffer>>
      memref.store %x, %clip[%l] : memref<64xf32>
      gpu.return
    }
  }
}
