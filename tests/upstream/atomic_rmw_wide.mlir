// memref.atomic_rmw on 64-bit elements: addf on f64, maxs on i64 (each lane its own element,
// the old value stored).
module {
  gpu.module @m {
    gpu.func @wide(%d: memref<64xf64>, %dx: memref<64xf64>, %dold: memref<64xf64>,
                   %q: memref<64xi64>, %qx: memref<64xi64>, %qold: memref<64xi64>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %x = memref.load %dx[%l] : memref<64xf64>
      %o = memref.atomic_rmw addf %x, %d[%l] : (f64, memref<64xf64>) -> f64
      memref.store %o, %dold[%l] : memref<64xf64>
      %y = memref.load %qx[%l] : memref<64xi64>
      %p = memref.atomic_rmw maxs %y, %q[%l] : (i64, memref<64xi64>) -> i64
      memref.store %p, %qold[%l] : memref<64xi64>
      gpu.return
    }
  }
}
