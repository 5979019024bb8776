// Per-lane loops in cf form (as mlir-opt --convert-scf-to-cf writes scf.while): the lanes
// leave in different iterations. Loop 1: lane l sums x[0..l) (the head's arguments: a
// counter %t from uniform ops, used after the loop, and the sum). Loop 2 leaves on true and
// holds a per-lane diamond: Collatz steps of l + 1.
module {
  gpu.module @m {
    gpu.func @lane_loops(%x: memref<64xf32>, %sum: memref<64xf32>, %cnt: memref<64xi32>,
                         %steps: memref<64xi32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %z = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %f0 = arith.constant 0.0 : f32
      cf.br ^head(%c0, %z, %f0 : index, i32, f32)
    ^head(%i: index, %t: i32, %acc: f32):
      %go = arith.cmpi ult, %i, %l : index
      cf.cond_br %go, ^body, ^done(%acc : f32)
    ^body:
      %v = memref.load %x[%i] : memref<64xf32>
      %a2 = arith.addf %acc, %v : f32
      %i2 = arith.addi %i, %c1 : index
      %t2 = arith.addi %t, %one : i32
      cf.br ^head(%i2, %t2, %a2 : index, i32, f32)
    ^done(%s: f32):
      memref.store %s, %sum[%l] : memref<64xf32>
      memref.store %t, %cnt[%l] : memref<64xi32>
      %li = arith.index_cast %l : index to i32
      %n0 = arith.addi %li, %one : i32
      cf.br ^chead(%n0, %z : i32, i32)
    ^chead(%n: i32, %k: i32):
      %fin = arith.cmpi eq, %n, %one : i32
      cf.cond_br %fin, ^cdone(%k : i32), ^cbody
    ^cbody:
      %lsb = arith.andi %n, %one : i32
      %even = arith.cmpi eq, %lsb, %z : i32
      cf.cond_br %even, ^half, ^triple
    ^half:
      %h = arith.shrui %n, %one : i32
      cf.br ^cnext(%h : i32)
    ^triple:
      %c3 = arith.constant 3 : i32
      %n3 = arith.muli %n, %c3 : i32
      %n31 = arith.addi %n3, %one : i32
      cf.br ^cnext(%n31 : i32)
    ^cnext(%m: i32):
      %k2 = arith.addi %k, %one : i32
      cf.br ^chead(%m, %k2 : i32, i32)
    ^cdone(%r: i32):
      memref.store %r, %steps[%l] : memref<64xi32>
      gpu.return
    }
  }
}
