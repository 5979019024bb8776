// vector.transfer_read/write with masks, in_bounds and permutation maps, maskedload/store and
// create_mask: rows of a 64x6 memref read 4 at a time (running past the row's end, masked,
// from a per-lane start), a column (permutation map), f16 padding, a 2-D read across the
// memref's corner, writes that drop out-of-bounds and masked-out elements.
module {
  gpu.module @m {
    gpu.func @transfer(%x: memref<64x6xf32>, %h: memref<64x6xf16>, %o: memref<64x8x4xf32>,
                       %oh: memref<64x4xf16>, %w: memref<64x6xf32>, %corner: memref<4x4xf32>)
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
      %c62 = arith.constant 62 : index
      %pad = arith.constant -1.0 : f32
      %zero = arith.constant 0.0 : f32
      %padh = arith.constant 2.0 : f16
      %m3 = vector.create_mask %c3 : vector<4xi1>
      %lm = arith.andi %l, %c7 : index
      %ml = vector.create_mask %lm : vector<4xi1>
      // past the row's end: elements 6 and 7 are padding
      %a = vector.transfer_read %x[%l, %c4], %pad : memref<64x6xf32>, vector<4xf32>
      vector.store %a, %o[%l, %c0, %c0] : memref<64x8x4xf32>, vector<4xf32>
      // masked (constant mask): the last element is padding
      %b = vector.transfer_read %x[%l, %c0], %pad, %m3 {in_bounds = [true]} : memref<64x6xf32>, vector<4xf32>
      vector.store %b, %o[%l, %c1, %c0] : memref<64x8x4xf32>, vector<4xf32>
      // in bounds, no mask: one load
      %d = vector.transfer_read %x[%l, %c2], %pad {in_bounds = [true]} : memref<64x6xf32>, vector<4xf32>
      vector.store %d, %o[%l, %c2, %c0] : memref<64x8x4xf32>, vector<4xf32>
      // a column: x[l + k, 1], padding past row 63
      %e = vector.transfer_read %x[%l, %c1], %pad {permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<64x6xf32>, vector<4xf32>
      vector.store %e, %o[%l, %c3, %c0] : memref<64x8x4xf32>, vector<4xf32>
      // a per-lane mask, padding 0
      %g = vector.transfer_read %x[%l, %c2], %zero, %ml {in_bounds = [true]} : memref<64x6xf32>, vector<4xf32>
      vector.store %g, %o[%l, %c4, %c0] : memref<64x8x4xf32>, vector<4xf32>
      // a per-lane start (0..7): element k is padding from column 6 on
      %p = vector.transfer_read %x[%l, %lm], %pad : memref<64x6xf32>, vector<4xf32>
      vector.store %p, %o[%l, %c5, %c0] : memref<64x8x4xf32>, vector<4xf32>
      // maskedload: masked-out elements from the pass-through vector
      %pass = arith.constant dense<[10.0, 20.0, 30.0, 40.0]> : vector<4xf32>
      %q = vector.maskedload %x[%l, %c1], %ml, %pass : memref<64x6xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
      vector.store %q, %o[%l, %c6, %c0] : memref<64x8x4xf32>, vector<4xf32>
      // a broadcast dimension: x[l, 3] four times
      %bc = vector.transfer_read %x[%l, %c3], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (0)>} : memref<64x6xf32>, vector<4xf32>
      vector.store %bc, %o[%l, %c7, %c0] : memref<64x8x4xf32>, vector<4xf32>
      // f16 past the row's end: padding 2.0
      %f = vector.transfer_read %h[%l, %c4], %padh : memref<64x6xf16>, vector<4xf16>
      vector.store %f, %oh[%l, %c0] : memref<64x4xf16>, vector<4xf16>
      // a 2-D read over the corner of the memref: rows 62..65, columns 4..7
      %r = vector.transfer_read %x[%c62, %c4], %pad : memref<64x6xf32>, vector<4x4xf32>
      vector.transfer_write %r, %corner[%c0, %c0] {in_bounds = [true, true]} : vector<4x4xf32>, memref<4x4xf32>
      // writes: past the row's end (columns 4, 5 written), masked (columns 0..2), maskedstore
      vector.transfer_write %a, %w[%l, %c4] : vector<4xf32>, memref<64x6xf32>
      vector.transfer_write %d, %w[%l, %c0], %m3 {in_bounds = [true]} : vector<4xf32>, memref<64x6xf32>
      vector.maskedstore %w[%l, %c3], %m3, %pass : memref<64x6xf32>, vector<4xi1>, vector<4xf32>
      gpu.return
    }
  }
}
