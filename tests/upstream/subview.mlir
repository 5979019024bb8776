// memref.subview: static offsets and strides (every other column from column 4), a
// rank-reducing row view at a dynamic offset (a kernel argument), a view of a view, and a
// transfer_read through a strided view (one element per load, past its end: padding).
module {
  gpu.module @m {
    gpu.func @subview(%x: memref<64x16xf32>, %o: memref<64x8xf32>, %r: index) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %pad = arith.constant -1.0 : f32
      %a = memref.subview %x[0, 4][64, 6][1, 2] : memref<64x16xf32> to memref<64x6xf32, strided<[16, 2], offset: 4>>
      %v = memref.load %a[%l, %c1] : memref<64x6xf32, strided<[16, 2], offset: 4>>
      memref.store %v, %o[%l, %c0] : memref<64x8xf32>
      %b = memref.subview %x[%r, 0][1, 16][1, 1] : memref<64x16xf32> to memref<16xf32, strided<[1], offset: ?>>
      %w = memref.load %b[%c3] : memref<16xf32, strided<[1], offset: ?>>
      memref.store %w, %o[%l, %c1] : memref<64x8xf32>
      %c = memref.subview %a[2, 1][8, 4][1, 1] : memref<64x6xf32, strided<[16, 2], offset: 4>> to memref<8x4xf32, strided<[16, 2], offset: 38>>
      %u = memref.load %c[%c1, %c2] : memref<8x4xf32, strided<[16, 2], offset: 38>>
      memref.store %u, %o[%l, %c2] : memref<64x8xf32>
      %t = vector.transfer_read %a[%l, %c4], %pad : memref<64x6xf32, strided<[16, 2], offset: 4>>, vector<4xf32>
      vector.store %t, %o[%l, %c4] : memref<64x8xf32>, vector<4xf32>
      gpu.return
    }
  }
}
