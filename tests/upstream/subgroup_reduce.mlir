// gpu.subgroup_reduce as mlir-opt-22 prints it: over the whole wave (f32 add, i32 maxsi, xor),
// in clusters (size 4; size 8 stride 4; size 16 stride 2; size 2 stride 32), mul on a
// vector<2xf16>, minnumf with `uniform`. Each lane stores its results.
module {
  gpu.module @m {
    gpu.func @sred(%f: memref<64xf32>, %i: memref<64xi32>, %h: memref<64x2xf16>,
                   %of: memref<64x5xf32>, %oi: memref<64x2xi32>, %oh: memref<64x2xf16>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %x = memref.load %f[%l] : memref<64xf32>
      %n = memref.load %i[%l] : memref<64xi32>
      %v = vector.load %h[%l, %c0] : memref<64x2xf16>, vector<2xf16>
      %s = gpu.subgroup_reduce add %x : (f32) -> f32
      %q = gpu.subgroup_reduce add %x cluster(size = 4) : (f32) -> f32
      %m8 = gpu.subgroup_reduce maxnumf %x cluster(size = 8, stride = 4) : (f32) -> f32
      %mn = gpu.subgroup_reduce minnumf %x uniform cluster(size = 16, stride = 2) : (f32) -> f32
      %p2 = gpu.subgroup_reduce add %x cluster(size = 2, stride = 32) : (f32) -> f32
      memref.store %s, %of[%l, %c0] : memref<64x5xf32>
      memref.store %q, %of[%l, %c1] : memref<64x5xf32>
      memref.store %m8, %of[%l, %c2] : memref<64x5xf32>
      memref.store %mn, %of[%l, %c3] : memref<64x5xf32>
      memref.store %p2, %of[%l, %c4] : memref<64x5xf32>
      %mx = gpu.subgroup_reduce maxsi %n : (i32) -> i32
      %xr = gpu.subgroup_reduce xor %n cluster(size = 32) : (i32) -> i32
      memref.store %mx, %oi[%l, %c0] : memref<64x2xi32>
      memref.store %xr, %oi[%l, %c1] : memref<64x2xi32>
      %pr = gpu.subgroup_reduce mul %v cluster(size = 4) : (vector<2xf16>) -> vector<2xf16>
      vector.store %pr, %oh[%l, %c0] : memref<64x2xf16>, vector<2xf16>
      gpu.return
    }
  }
}
