// scf.while on a per-lane condition: lane l doubles i from 1 while i <= l, summing x * i;
// it yields its trip count and sum (lanes leave the loop in different iterations).
module {
  gpu.module @m {
    gpu.func @while_lanes(%x: memref<64xf32>, %o: memref<64xf32>, %trips: memref<64xi32>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %li = arith.index_cast %l : index to i32
      %c0i = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %f0 = arith.constant 0.0 : f32
      %v = memref.load %x[%l] : memref<64xf32>
      %r:3 = scf.while (%i = %c1, %acc = %f0, %t = %c0i) : (i32, f32, i32) -> (i32, f32, i32) {
        %go = arith.cmpi sle, %i, %li : i32
        scf.condition(%go) %i, %acc, %t : i32, f32, i32
      } do {
      ^bb0(%i2: i32, %acc2: f32, %t2: i32):
        %fi = arith.sitofp %i2 : i32 to f32
        %term = arith.mulf %v, %fi : f32
        %acc3 = arith.addf %acc2, %term : f32
        %i3 = arith.muli %i2, %c2 : i32
        %t3 = arith.addi %t2, %c1 : i32
        scf.yield %i3, %acc3, %t3 : i32, f32, i32
      }
      memref.store %r#1, %o[%l] : memref<64xf32>
      memref.store %r#2, %trips[%l] : memref<64xi32>
      gpu.return
    }
  }
}
