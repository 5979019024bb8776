// amdgpu raw buffer ops on memrefs with dynamic sizes: raw_buffer_load of a memref<?x?xf32>
// (a runtime row stride), a fat_raw_buffer_cast of it read with memref.load, and a
// raw_buffer_store into a memref<?xf32>; past the runtime size reads 0, writes are dropped.
module {
  gpu.module @m {
    gpu.func @dyn_raw(%a: memref<?x?xf32>, %o: memref<?xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %li = arith.index_cast %l : index to i32
      %one = arith.constant 1 : i32
      %x = amdgpu.raw_buffer_load %a[%one, %li] : memref<?x?xf32>, i32, i32 -> f32
      %c0 = arith.constant 0 : index
      %fat = amdgpu.fat_raw_buffer_cast %a : memref<?x?xf32> to memref<?x?xf32, #amdgpu.address_space<fat_raw_buffer>>
      %y = memref.load %fat[%c0, %l] : memref<?x?xf32, #amdgpu.address_space<fat_raw_buffer>>
      %s = arith.addf %x, %y : f32
      amdgpu.raw_buffer_store %s -> %o[%li] : f32 -> memref<?xf32>, i32
      gpu.return
    }
  }
}
