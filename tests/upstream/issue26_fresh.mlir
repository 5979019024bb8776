// Issue 26 checklist, written fresh as a new user would: vector cmpf with dense<0.0> on the
// right, select of vectors by a scalar and by an i1 vector, math.exp and math.fma on vectors
// (f16x8), memref.atomic_rmw on a 2-D memref (16 lanes per address), gpu.shuffle xor/down
// with a per-lane offset and 16-lane segments.
module {
  gpu.module @m {
    gpu.func @probe(%x: memref<64x4xf32>, %o: memref<64x4xf32>, %h: memref<64x8xf16>, %ho: memref<64x8xf16>, %acc: memref<4x16xi32>, %f: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      %z4 = arith.constant dense<0.0> : vector<4xf32>
      %a = vector.load %x[%l, %c0] : memref<64x4xf32>, vector<4xf32>
      %p = arith.cmpf ogt, %a, %z4 : vector<4xf32>
      %e = math.exp %a : vector<4xf32>
      %r = arith.select %p, %a, %e : vector<4xi1>, vector<4xf32>
      %s0 = vector.extract %a[0] : f32 from vector<4xf32>
      %zf = arith.constant 0.0 : f32
      %q = arith.cmpf ole, %s0, %zf : f32
      %r2 = arith.select %q, %r, %z4 : vector<4xf32>
      vector.store %r2, %o[%l, %c0] : memref<64x4xf32>, vector<4xf32>
      %hv = vector.load %h[%l, %c0] : memref<64x8xf16>, vector<8xf16>
      %hz = arith.constant dense<0.0> : vector<8xf16>
      %hp = arith.cmpf oge, %hv, %hz : vector<8xf16>
      %hm = arith.mulf %hv, %hv : vector<8xf16>
      %hf = math.fma %hv, %hv, %hm : vector<8xf16>
      %hsel = arith.select %hp, %hf, %hv : vector<8xi1>, vector<8xf16>
      vector.store %hsel, %ho[%l, %c0] : memref<64x8xf16>, vector<8xf16>
      %c4 = arith.constant 4 : index
      %row = arith.remui %l, %c4 : index
      %one = arith.constant 1 : i32
      %old = memref.atomic_rmw addi %one, %acc[%row, %c3] : (i32, memref<4x16xi32>) -> i32
      %fv = memref.load %f[%l] : memref<64xf32>
      %ri = arith.index_cast %row : index to i32
      %w = arith.constant 16 : i32
      %d3 = arith.constant 3 : i32
      %sh:2 = gpu.shuffle xor %fv, %ri, %w : f32
      %sh2:2 = gpu.shuffle down %fv, %d3, %w : f32
      %t = arith.addf %sh#0, %sh2#0 : f32
      memref.store %t, %f[%l] : memref<64xf32>
      gpu.return
    }
  }
}
