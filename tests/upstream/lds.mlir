// LDS through a workgroup attribution, 4 waves: gpu.barrier and amdgpu.lds_barrier order the
// writes of one wave before the reads of another.
module {
  gpu.module @m {
    gpu.func @lds(%x: memref<512xf32>, %out: memref<512xf32>, %out2: memref<512xf32>)
        workgroup(%buf: memref<256xf32, #gpu.address_space<workgroup>>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>} {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %c256 = arith.constant 256 : index
      %c255 = arith.constant 255 : index
      %c64 = arith.constant 64 : index
      %base = arith.muli %b, %c256 : index
      %g = arith.addi %base, %t : index
      %v = memref.load %x[%g] : memref<512xf32>
      memref.store %v, %buf[%t] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %rt = arith.subi %c255, %t : index
      %r = memref.load %buf[%rt] : memref<256xf32, #gpu.address_space<workgroup>>
      memref.store %r, %out[%g] : memref<512xf32>
      amdgpu.lds_barrier
      %two = arith.constant 2.0 : f32
      %r2 = arith.mulf %r, %two : f32
      memref.store %r2, %buf[%t] : memref<256xf32, #gpu.address_space<workgroup>>
      amdgpu.lds_barrier
      %s = arith.addi %t, %c64 : index
      %sw = arith.remui %s, %c256 : index
      %r3 = memref.load %buf[%sw] : memref<256xf32, #gpu.address_space<workgroup>>
      memref.store %r3, %out2[%g] : memref<512xf32>
      gpu.return
    }
  }
}
