// Transfers on memrefs with dynamic sizes: lane l copies row l of a memref<?x?xf32>
// (vector<8xf32>; past the row's or the memref's end: the padding -1) into a memref<?x8xf32>
// (rows past its end are not written). The bounds are the memref descriptors' sizes.
module {
  gpu.module @m {
    gpu.func @dyn_transfer(%a: memref<?x?xf32>, %o: memref<?x8xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %pad = arith.constant -1.0 : f32
      %row = vector.transfer_read %a[%l, %c0], %pad : memref<?x?xf32>, vector<8xf32>
      vector.transfer_write %row, %o[%l, %c0] : vector<8xf32>, memref<?x8xf32>
      gpu.return
    }
  }
}
