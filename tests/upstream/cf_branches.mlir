// Several-block gpu.func bodies (cf.br / cf.cond_br) on uniform conditions: a loop whose head
// tests a uniform condition (block arguments carry the counter and a per-lane sum) and a
// uniform two-way branch passing different arguments to one block.
module {
  gpu.module @m {
    gpu.func @cf_loop(%x: memref<64x16xf32>, %o: memref<2x64xf32>, %n: i32) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c8 = arith.constant 8 : i32
      %i0 = arith.constant 0 : index
      %i1 = arith.constant 1 : index
      %f0 = arith.constant 0.0 : f32
      cf.br ^head(%c0, %f0 : i32, f32)
    ^head(%j: i32, %acc: f32):
      %go = arith.cmpi slt, %j, %n : i32
      cf.cond_br %go, ^body, ^done
    ^body:
      %jj = arith.index_cast %j : i32 to index
      %v = memref.load %x[%l, %jj] : memref<64x16xf32>
      %acc2 = arith.addf %acc, %v : f32
      %j2 = arith.addi %j, %c1 : i32
      cf.br ^head(%j2, %acc2 : i32, f32)
    ^done:
      memref.store %acc, %o[%i0, %l] : memref<2x64xf32>
      %big = arith.cmpi sgt, %n, %c8 : i32
      cf.cond_br %big, ^tail(%acc, %c1 : f32, i32), ^tail(%f0, %c0 : f32, i32)
    ^tail(%t: f32, %k: i32):
      %kf = arith.sitofp %k : i32 to f32
      %r = arith.addf %t, %kf : f32
      memref.store %r, %o[%i1, %l] : memref<2x64xf32>
      gpu.return
    }
  }
}
