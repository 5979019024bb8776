// amdgpu.dpp patterns: lanes whose source is invalid keep `old` (or read 0 with bound_ctrl).
module {
  gpu.module @m {
    gpu.func @dpp(%x: memref<64xf32>, %out: memref<8x64xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %v = memref.load %x[%l] : memref<64xf32>
      %old = arith.constant -1.0 : f32
      %d0 = amdgpu.dpp %old %v quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32]) : f32
      %d1 = amdgpu.dpp %old %v row_shl(1 : i32) : f32
      %d2 = amdgpu.dpp %old %v row_shr(3 : i32) {bound_ctrl = true} : f32
      %d3 = amdgpu.dpp %old %v row_ror(5 : i32) : f32
      %d4 = amdgpu.dpp %old %v row_mirror : f32
      %d5 = amdgpu.dpp %old %v row_half_mirror : f32
      %d6 = amdgpu.dpp %old %v quad_perm([0 : i32, 0 : i32, 0 : i32, 0 : i32]) {row_mask = 5 : i32} : f32
      %d7 = amdgpu.dpp %old %v row_shr(1 : i32) {bank_mask = 3 : i32} : f32
      %k0 = arith.constant 0 : index
      %k1 = arith.constant 1 : index
      %k2 = arith.constant 2 : index
      %k3 = arith.constant 3 : index
      %k4 = arith.constant 4 : index
      %k5 = arith.constant 5 : index
      %k6 = arith.constant 6 : index
      %k7 = arith.constant 7 : index
      memref.store %d0, %out[%k0, %l] : memref<8x64xf32>
      memref.store %d1, %out[%k1, %l] : memref<8x64xf32>
      memref.store %d2, %out[%k2, %l] : memref<8x64xf32>
      memref.store %d3, %out[%k3, %l] : memref<8x64xf32>
      memref.store %d4, %out[%k4, %l] : memref<8x64xf32>
      memref.store %d5, %out[%k5, %l] : memref<8x64xf32>
      memref.store %d6, %out[%k6, %l] : memref<8x64xf32>
      memref.store %d7, %out[%k7, %l] : memref<8x64xf32>
      gpu.return
    }
  }
}
