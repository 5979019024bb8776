// A file holding host code (func.func @main with gpu.launch_func) beside its gpu.module: the
// host function is skipped with a note, the kernel compiles.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c = arith.constant 3.0 : f32
      memref.store %c, %out[%l] : memref<64xf32>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %m = memref.alloc() : memref<64xf32>
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%m : memref<64xf32>)
    memref.dealloc %m : memref<64xf32>
    return
  }
}
