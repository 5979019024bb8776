// amdgpu fp8 conversions with the 8-bit float type gfx950 converts (f8E4M3FN).
module {
  gpu.module @m {
    gpu.func @fp8(%x: memref<256xf32>, %r: memref<64xi32>, %packed: memref<128xi32>,
                  %back: memref<64x6xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c64 = arith.constant 64 : index
      %i0 = arith.muli %l, %c4 : index
      %i1 = arith.addi %i0, %c1 : index
      %i2 = arith.addi %i0, %c2 : index
      %i3 = arith.addi %i0, %c3 : index
      %a = memref.load %x[%i0] : memref<256xf32>
      %b = memref.load %x[%i1] : memref<256xf32>
      %c = memref.load %x[%i2] : memref<256xf32>
      %d = memref.load %x[%i3] : memref<256xf32>
      %rnd = memref.load %r[%l] : memref<64xi32>
      %p0 = amdgpu.packed_trunc_2xfp8 %a, %b into undef[word 0] : f32 to vector<4xf8E4M3FN>
      %p1 = amdgpu.packed_trunc_2xfp8 %c, %d into %p0[word 1] : f32 to vector<4xf8E4M3FN> into vector<4xf8E4M3FN>
      %w1 = vector.bitcast %p1 : vector<4xf8E4M3FN> to vector<1xi32>
      %e1 = vector.extract %w1[0] : i32 from vector<1xi32>
      memref.store %e1, %packed[%l] : memref<128xi32>
      %s = amdgpu.packed_stoch_round_fp8 %b + %rnd into %p1[2] : f32 to vector<4xf8E4M3FN> into vector<4xf8E4M3FN>
      %w2 = vector.bitcast %s : vector<4xf8E4M3FN> to vector<1xi32>
      %e2 = vector.extract %w2[0] : i32 from vector<1xi32>
      %l64 = arith.addi %l, %c64 : index
      memref.store %e2, %packed[%l64] : memref<128xi32>
      %f0 = amdgpu.ext_packed_fp8 %p1[0] : vector<4xf8E4M3FN> to f32
      %f1 = amdgpu.ext_packed_fp8 %p1[1] : vector<4xf8E4M3FN> to f32
      %f2 = amdgpu.ext_packed_fp8 %p1[2] : vector<4xf8E4M3FN> to f32
      %f3 = amdgpu.ext_packed_fp8 %p1[3] : vector<4xf8E4M3FN> to f32
      %pair = amdgpu.ext_packed_fp8 %p1[1] : vector<4xf8E4M3FN> to vector<2xf32>
      %k0 = arith.constant 0 : index
      %k5 = arith.constant 5 : index
      memref.store %f0, %back[%l, %k0] : memref<64x6xf32>
      memref.store %f1, %back[%l, %c1] : memref<64x6xf32>
      memref.store %f2, %back[%l, %c2] : memref<64x6xf32>
      memref.store %f3, %back[%l, %c3] : memref<64x6xf32>
      vector.store %pair, %back[%l, %c4] : memref<64x6xf32>, vector<2xf32>
      gpu.return
    }
  }
}
