// Loops inside a per-lane scf.if: the odd lanes run a per-lane scf.while (halve n = l + 1
// until it is 0, counting the steps: the bit length) and a uniform scf.for (sum x over 4
// steps); the even lanes store -1. mlir-opt-22 --convert-scf-to-cf turns it into loops
// inside the paths of a per-lane cf.cond_br (tests/test_upstream_cf.py runs both forms).
module {
  gpu.module @m {
    gpu.func @nested(%x: memref<64xf32>, %bits: memref<64xi32>, %sum: memref<64xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %z = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %f0 = arith.constant 0.0 : f32
      %lsb = arith.remui %l, %c2 : index
      %odd = arith.cmpi eq, %lsb, %c1 : index
      %r:2 = scf.if %odd -> (i32, f32) {
        %li = arith.index_cast %l : index to i32
        %n0 = arith.addi %li, %one : i32
        %w:2 = scf.while (%n = %n0, %k = %z) : (i32, i32) -> (i32, i32) {
          %go = arith.cmpi ne, %n, %z : i32
          scf.condition(%go) %n, %k : i32, i32
        } do {
        ^bb0(%n2: i32, %k2: i32):
          %h = arith.shrui %n2, %one : i32
          %k3 = arith.addi %k2, %one : i32
          scf.yield %h, %k3 : i32, i32
        }
        %v = memref.load %x[%l] : memref<64xf32>
        %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %f0) -> (f32) {
          %a2 = arith.addf %acc, %v : f32
          scf.yield %a2 : f32
        }
        scf.yield %w#1, %s : i32, f32
      } else {
        %m1 = arith.constant -1 : i32
        %fm1 = arith.constant -1.0 : f32
        scf.yield %m1, %fm1 : i32, f32
      }
      memref.store %r#0, %bits[%l] : memref<64xi32>
      memref.store %r#1, %sum[%l] : memref<64xf32>
      gpu.return
    }
  }
}
