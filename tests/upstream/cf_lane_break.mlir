// A per-lane loop left by a break: lane l searches x[0..n) (n = l % 32 + 8, per lane) for the
// first element above l * 0.05; the break is a per-lane cf.cond_br to the head's exit block
// with the index, the head's exit passes n (not found).
module {
  gpu.module @m {
    gpu.func @search(%x: memref<64xf32>, %found: memref<64xi32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c24 = arith.constant 32 : index
      %m = arith.remui %l, %c24 : index
      %n = arith.addi %m, %c8 : index
      %li = arith.index_cast %l : index to i32
      %lf = arith.sitofp %li : i32 to f32
      %k = arith.constant 0.05 : f32
      %thr = arith.mulf %lf, %k : f32
      cf.br ^head(%c0 : index)
    ^head(%i: index):
      %go = arith.cmpi ult, %i, %n : index
      cf.cond_br %go, ^body, ^done(%n : index)
    ^body:
      %v = memref.load %x[%i] : memref<64xf32>
      %hit = arith.cmpf ogt, %v, %thr : f32
      cf.cond_br %hit, ^done(%i : index), ^next
    ^next:
      %i2 = arith.addi %i, %c1 : index
      cf.br ^head(%i2 : index)
    ^done(%r: index):
      %ri = arith.index_cast %r : index to i32
      memref.store %ri, %found[%l] : memref<64xi32>
      gpu.return
    }
  }
}
