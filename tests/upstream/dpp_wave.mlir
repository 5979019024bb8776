// amdgpu.dpp whole-wave shifts and rotates and the row broadcasts (with the row masks
// reductions use them with): lanes without a source keep `old` (or read 0 with bound_ctrl).
module {
  gpu.module @m {
    gpu.func @dpp_wave(%x: memref<64xf32>, %out: memref<6x64xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %v = memref.load %x[%l] : memref<64xf32>
      %old = arith.constant -1.0 : f32
      %d0 = amdgpu.dpp %old %v wave_shl : f32
      %d1 = amdgpu.dpp %old %v wave_rol : f32
      %d2 = amdgpu.dpp %old %v wave_shr {bound_ctrl = true} : f32
      %d3 = amdgpu.dpp %old %v wave_ror : f32
      %d4 = amdgpu.dpp %old %v row_bcast_15 {row_mask = 10 : i32} : f32
      %d5 = amdgpu.dpp %old %v row_bcast_31 {row_mask = 12 : i32} : f32
      %k0 = arith.constant 0 : index
      %k1 = arith.constant 1 : index
      %k2 = arith.constant 2 : index
      %k3 = arith.constant 3 : index
      %k4 = arith.constant 4 : index
      %k5 = arith.constant 5 : index
      memref.store %d0, %out[%k0, %l] : memref<6x64xf32>
      memref.store %d1, %out[%k1, %l] : memref<6x64xf32>
      memref.store %d2, %out[%k2, %l] : memref<6x64xf32>
      memref.store %d3, %out[%k3, %l] : memref<6x64xf32>
      memref.store %d4, %out[%k4, %l] : memref<6x64xf32>
      memref.store %d5, %out[%k5, %l] : memref<6x64xf32>
      gpu.return
    }
  }
}
