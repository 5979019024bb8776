// A subview of a memref with a dynamic size: row %r of a memref<?x16xf32> (its start folds
// into the address; the range stays the memref's runtime size: a row past the end reads 0).
module {
  gpu.module @m {
    gpu.func @dyn_rows(%a: memref<?x16xf32>, %o: memref<?xf32>, %r: index) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %row = memref.subview %a[%r, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<16xf32, strided<[1], offset: ?>>
      %v = memref.load %row[%l] : memref<16xf32, strided<[1], offset: ?>>
      memref.store %v, %o[%l] : memref<?xf32>
      gpu.return
    }
  }
}
