module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @saxpy(%x: memref<256xf32>, %y: memref<256xf32>, %a: f32, %n: i32) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %ni = arith.index_cast %n : i32 to index
      %in = arith.cmpi ult, %i, %ni : index
      scf.if %in {
        %xv = memref.load %x[%i] : memref<256xf32>
        %yv = memref.load %y[%i] : memref<256xf32>
        %p = arith.mulf %a, %xv : f32
        %s = arith.addf %p, %yv : f32
        memref.store %s, %y[%i] : memref<256xf32>
      }
      gpu.barrier
      gpu.return
    }
  }
}
