// ds_swizzle (bit-mask mode) and gfx950 permlane swaps (amdgpu.swizzle_bitmode,
// amdgpu.permlane_swap).
module {
  gpu.module @m [#rocdl.target<chip = "gfx950">] {
    gpu.func @lanes(%x: memref<64xi32>, %out: memref<6x64xi32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %v = memref.load %x[%l] : memref<64xi32>
      %s0 = amdgpu.swizzle_bitmode %v 28 1 2 : i32
      %s1 = amdgpu.swizzle_bitmode %v 0 5 0 : i32
      %p16 = amdgpu.permlane_swap %v 16 : i32
      %p32 = amdgpu.permlane_swap %v 32 : i32
      %c1 = arith.constant 1 : i32
      %w = arith.addi %v, %c1 : i32
      %pair = vector.from_elements %v, %w : vector<2xi32>
      %pp = amdgpu.permlane_swap %pair 16 : vector<2xi32>
      %pf = vector.bitcast %pp : vector<2xi32> to vector<4xf16>
      %sw = amdgpu.swizzle_bitmode %pf 31 0 1 : vector<4xf16>
      %sv = vector.bitcast %sw : vector<4xf16> to vector<2xi32>
      %e0 = vector.extract %sv[0] : i32 from vector<2xi32>
      %e1 = vector.extract %sv[1] : i32 from vector<2xi32>
      %k0 = arith.constant 0 : index
      %k1 = arith.constant 1 : index
      %k2 = arith.constant 2 : index
      %k3 = arith.constant 3 : index
      %k4 = arith.constant 4 : index
      %k5 = arith.constant 5 : index
      memref.store %s0, %out[%k0, %l] : memref<6x64xi32>
      memref.store %s1, %out[%k1, %l] : memref<6x64xi32>
      memref.store %p16, %out[%k2, %l] : memref<6x64xi32>
      memref.store %p32, %out[%k3, %l] : memref<6x64xi32>
      memref.store %e0, %out[%k4, %l] : memref<6x64xi32>
      memref.store %e1, %out[%k5, %l] : memref<6x64xi32>
      gpu.return
    }
  }
}
