// C = A @ B (f16 in, f32 out, 64x64x64) written only in upstream dialects: one wave per
// 16x16 tile of C, amdgpu.mfma 16x16x16 with the accumulator carried by scf.for, B given
// transposed (BT, N x K) so that each lane loads 4 consecutive f16 of A and of BT.
module {
  gpu.module @m {
    gpu.func @gemm(%a: memref<64x64xf16>, %bt: memref<64x64xf16>, %c: memref<64x64xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c64 = arith.constant 64 : index
      %r = arith.remui %l, %c16 : index
      %q = arith.divui %l, %c16 : index
      %q4 = arith.muli %q, %c4 : index
      %row0 = arith.muli %by, %c16 : index
      %col0 = arith.muli %bx, %c16 : index
      %arow = arith.addi %row0, %r : index
      %brow = arith.addi %col0, %r : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %acc = scf.for %k0 = %c0 to %c64 step %c16 iter_args(%s = %zero) -> (vector<4xf32>) {
        %k = arith.addi %k0, %q4 : index
        %va = vector.load %a[%arow, %k] : memref<64x64xf16>, vector<4xf16>
        %vb = vector.load %bt[%brow, %k] : memref<64x64xf16>, vector<4xf16>
        %d = amdgpu.mfma 16x16x16 %va * %vb + %s blgp = none : vector<4xf16>, vector<4xf16>, vector<4xf32>
        amdgpu.sched_barrier allow = <none>
        scf.yield %d : vector<4xf32>
      }
      // lane (r, q) holds C[row0 + 4q + i][col0 + r], i = 0..3
      %ccol = arith.addi %col0, %r : index
      %crow = arith.addi %row0, %q4 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %crow1 = arith.addi %crow, %c1 : index
      %crow2 = arith.addi %crow, %c2 : index
      %crow3 = arith.addi %crow, %c3 : index
      %d0 = vector.extract %acc[0] : f32 from vector<4xf32>
      %d1 = vector.extract %acc[1] : f32 from vector<4xf32>
      %d2 = vector.extract %acc[2] : f32 from vector<4xf32>
      %d3 = vector.extract %acc[3] : f32 from vector<4xf32>
      memref.store %d0, %c[%crow, %ccol] : memref<64x64xf32>
      memref.store %d1, %c[%crow1, %ccol] : memref<64x64xf32>
      memref.store %d2, %c[%crow2, %ccol] : memref<64x64xf32>
      memref.store %d3, %c[%crow3, %ccol] : memref<64x64xf32>
      gpu.return
    }
  }
}
