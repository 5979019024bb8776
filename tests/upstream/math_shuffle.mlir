// math (exp2, exp, log, log2, rsqrt, sqrt, fma, absf on f32, f16 and vectors) and gpu.shuffle
// in every mode (xor by DPP, ds_swizzle and ds_bpermute; up, down, idx; segments of 16).
module {
  gpu.module @m {
    gpu.func @math_shuffle(%x: memref<64xf32>, %o: memref<8x64xf32>, %h: memref<64x2xf16>,
                           %ho: memref<64x2xf16>, %s: memref<10x64xf32>, %valid: memref<10x64xi32>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %c9 = arith.constant 9 : index
      %v = memref.load %x[%l] : memref<64xf32>
      %a = math.absf %v : f32
      %e2 = math.exp2 %v : f32
      memref.store %e2, %o[%c0, %l] : memref<8x64xf32>
      %e = math.exp %v : f32
      memref.store %e, %o[%c1, %l] : memref<8x64xf32>
      %lg = math.log %a : f32
      memref.store %lg, %o[%c2, %l] : memref<8x64xf32>
      %lg2 = math.log2 %a : f32
      memref.store %lg2, %o[%c3, %l] : memref<8x64xf32>
      %rs = math.rsqrt %a : f32
      memref.store %rs, %o[%c4, %l] : memref<8x64xf32>
      %sq = math.sqrt %a : f32
      memref.store %sq, %o[%c5, %l] : memref<8x64xf32>
      %f = math.fma %v, %v, %a : f32
      memref.store %f, %o[%c6, %l] : memref<8x64xf32>
      %vv = vector.broadcast %v : f32 to vector<2xf32>
      %ve = math.exp2 %vv : vector<2xf32>
      %ve1 = vector.extract %ve[1] : f32 from vector<2xf32>
      memref.store %ve1, %o[%c7, %l] : memref<8x64xf32>
      %hv = vector.load %h[%l, %c0] : memref<64x2xf16>, vector<2xf16>
      %hf = math.fma %hv, %hv, %hv : vector<2xf16>
      %he = math.exp2 %hf : vector<2xf16>
      vector.store %he, %ho[%l, %c0] : memref<64x2xf16>, vector<2xf16>
      %w64 = arith.constant 64 : i32
      %w16 = arith.constant 16 : i32
      %i1 = arith.constant 1 : i32
      %i2 = arith.constant 2 : i32
      %i8 = arith.constant 8 : i32
      %i32 = arith.constant 32 : i32
      %i3 = arith.constant 3 : i32
      %i5 = arith.constant 5 : i32
      %s0, %v0 = gpu.shuffle xor %v, %i1, %w64 : f32
      %s1, %v1 = gpu.shuffle xor %v, %i2, %w64 : f32
      %s2, %v2 = gpu.shuffle xor %v, %i8, %w64 : f32
      %s3, %v3 = gpu.shuffle xor %v, %i32, %w64 : f32
      %s4, %v4 = gpu.shuffle down %v, %i3, %w16 : f32
      %s5, %v5 = gpu.shuffle up %v, %i5, %w16 : f32
      %s6, %v6 = gpu.shuffle idx %v, %i5, %w64 : f32
      %li = arith.index_cast %l : index to i32
      %c63 = arith.constant 63 : i32
      %rev = arith.subi %c63, %li : i32
      %s7, %v7 = gpu.shuffle idx %v, %rev, %w64 : f32
      %s8, %v8 = gpu.shuffle xor %v, %i32, %w16 : f32
      %s9, %v9 = gpu.shuffle down %v, %li, %w64 : f32
      memref.store %s0, %s[%c0, %l] : memref<10x64xf32>
      memref.store %s1, %s[%c1, %l] : memref<10x64xf32>
      memref.store %s2, %s[%c2, %l] : memref<10x64xf32>
      memref.store %s3, %s[%c3, %l] : memref<10x64xf32>
      memref.store %s4, %s[%c4, %l] : memref<10x64xf32>
      memref.store %s5, %s[%c5, %l] : memref<10x64xf32>
      memref.store %s6, %s[%c6, %l] : memref<10x64xf32>
      memref.store %s7, %s[%c7, %l] : memref<10x64xf32>
      memref.store %s8, %s[%c8, %l] : memref<10x64xf32>
      memref.store %s9, %s[%c9, %l] : memref<10x64xf32>
      %x0 = arith.extui %v0 : i1 to i32
      %x4 = arith.extui %v4 : i1 to i32
      %x5 = arith.extui %v5 : i1 to i32
      %x8 = arith.extui %v8 : i1 to i32
      %x9 = arith.extui %v9 : i1 to i32
      memref.store %x0, %valid[%c0, %l] : memref<10x64xi32>
      memref.store %x4, %valid[%c4, %l] : memref<10x64xi32>
      memref.store %x5, %valid[%c5, %l] : memref<10x64xi32>
      memref.store %x8, %valid[%c8, %l] : memref<10x64xi32>
      memref.store %x9, %valid[%c9, %l] : memref<10x64xi32>
      gpu.return
    }
  }
}
