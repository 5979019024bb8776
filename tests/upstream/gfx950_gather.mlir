// LDS DMA (amdgpu.gather_to_lds, in and out of range; 16-byte transfers need gfx950)
// and amdgpu.memory_counter_wait.
module {
  gpu.module @m {
    gpu.func @gather(%src: memref<320xf32>, %out: memref<320xf32>) workgroup(%lds: memref<320xf32, #gpu.address_space<workgroup>>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c7 = arith.constant 7 : index
      %c13 = arith.constant 13 : index
      %c4 = arith.constant 4 : index
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      // lane l reads src[7 l + 13]: past the end (320 floats) for l >= 44, which reads 0
      %a = arith.muli %l, %c7 : index
      %i = arith.addi %a, %c13 : index
      amdgpu.gather_to_lds %src[%i], %lds[%c0] : f32, memref<320xf32>, memref<320xf32, #gpu.address_space<workgroup>>
      // 16 bytes per lane: src[4 (63 - l) ...] to lds[64 + 4 l ...]
      %c63 = arith.constant 63 : index
      %r = arith.subi %c63, %l : index
      %j = arith.muli %r, %c4 : index
      amdgpu.gather_to_lds %src[%j], %lds[%c64] : vector<4xf32>, memref<320xf32>, memref<320xf32, #gpu.address_space<workgroup>>
      amdgpu.memory_counter_wait load(0)
      gpu.barrier
      %g0 = memref.load %lds[%l] : memref<320xf32, #gpu.address_space<workgroup>>
      memref.store %g0, %out[%l] : memref<320xf32>
      %q = arith.muli %l, %c4 : index
      %q64 = arith.addi %q, %c64 : index
      %g1 = vector.load %lds[%q64] : memref<320xf32, #gpu.address_space<workgroup>>, vector<4xf32>
      vector.store %g1, %out[%q64] : memref<320xf32>, vector<4xf32>
      gpu.return
    }
  }
}
