// gpu.lane_id, gpu.grid_dim, float compare/select/negate/divide, vector.fma, memref.alloc of LDS.
module {
  gpu.module @m {
    gpu.func @misc(%x: memref<128xf32>, %y: memref<128xf32>, %o: memref<6x128xf32>,
                   %ids: memref<2x128xi32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %c64 = arith.constant 64 : index
      %base = arith.muli %b, %c64 : index
      %g = arith.addi %base, %t : index
      %lane = gpu.lane_id
      %grid = gpu.grid_dim x
      %li = arith.index_cast %lane : index to i32
      %gi = arith.index_cast %grid : index to i32
      %k0 = arith.constant 0 : index
      %k1 = arith.constant 1 : index
      memref.store %li, %ids[%k0, %g] : memref<2x128xi32>
      memref.store %gi, %ids[%k1, %g] : memref<2x128xi32>
      %a = memref.load %x[%g] : memref<128xf32>
      %v = memref.load %y[%g] : memref<128xf32>
      %lt = arith.cmpf olt, %a, %v : f32
      %mn = arith.select %lt, %a, %v : f32
      %ng = arith.negf %a : f32
      %q = arith.divf %a, %v : f32
      %va = vector.broadcast %a : f32 to vector<2xf32>
      %vv = vector.broadcast %v : f32 to vector<2xf32>
      %fm = vector.fma %va, %vv, %va : vector<2xf32>
      %f0 = vector.extract %fm[0] : f32 from vector<2xf32>
      %lds = memref.alloc() : memref<64xf32, 3>
      memref.store %a, %lds[%t] : memref<64xf32, 3>
      gpu.barrier
      %c63 = arith.constant 63 : index
      %rt = arith.subi %c63, %t : index
      %r = memref.load %lds[%rt] : memref<64xf32, 3>
      %k2 = arith.constant 2 : index
      %k3 = arith.constant 3 : index
      %k4 = arith.constant 4 : index
      %k5 = arith.constant 5 : index
      memref.store %mn, %o[%k0, %g] : memref<6x128xf32>
      memref.store %ng, %o[%k1, %g] : memref<6x128xf32>
      memref.store %q, %o[%k2, %g] : memref<6x128xf32>
      memref.store %f0, %o[%k3, %g] : memref<6x128xf32>
      memref.store %r, %o[%k4, %g] : memref<6x128xf32>
      %s = arith.subf %v, %a : f32
      memref.store %s, %o[%k5, %g] : memref<6x128xf32>
      gpu.return
    }
  }
}
