// arith on vectors as mlir-opt-22 prints it: cmpf/cmpi/select with i1 vectors, negf and
// f16 vector arithmetic (packed), and cmpf with the constant 0.0 on the right.
module {
  gpu.module @m {
    gpu.func @arith_vectors(%x: memref<64xf32>, %relu: memref<64xf32>, %v: memref<64x4xf32>,
                            %vo: memref<64x4xf32>, %h: memref<64x4xf16>, %ho: memref<64x4xf16>,
                            %hs: memref<64x4xf16>, %iv: memref<64x4xi32>, %io: memref<64x4xi32>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.load %x[%l] : memref<64xf32>
      %pos = arith.cmpf ogt, %s, %zero : f32
      %r = arith.select %pos, %s, %zero : f32
      memref.store %r, %relu[%l] : memref<64xf32>
      %a = vector.load %v[%l, %c0] : memref<64x4xf32>, vector<4xf32>
      %z4 = arith.constant dense<0.0> : vector<4xf32>
      %neg = arith.cmpf olt, %a, %z4 : vector<4xf32>
      %na = arith.negf %a : vector<4xf32>
      %abs = arith.select %neg, %na, %a : vector<4xi1>, vector<4xf32>
      vector.store %abs, %vo[%l, %c0] : memref<64x4xf32>, vector<4xf32>
      %hv = vector.load %h[%l, %c0] : memref<64x4xf16>, vector<4xf16>
      %sq = arith.mulf %hv, %hv : vector<4xf16>
      %nh = arith.negf %hv : vector<4xf16>
      %sum = arith.addf %sq, %nh : vector<4xf16>
      %half = arith.constant dense<0.5> : vector<4xf16>
      %hm = arith.cmpf oge, %hv, %half : vector<4xf16>
      %mx = arith.maximumf %sum, %half : vector<4xf16>
      %pick = arith.select %hm, %mx, %hv : vector<4xi1>, vector<4xf16>
      vector.store %pick, %ho[%l, %c0] : memref<64x4xf16>, vector<4xf16>
      %d = arith.subf %hv, %half : vector<4xf16>
      vector.store %d, %hs[%l, %c0] : memref<64x4xf16>, vector<4xf16>
      %ivv = vector.load %iv[%l, %c0] : memref<64x4xi32>, vector<4xi32>
      %c5 = arith.constant dense<5> : vector<4xi32>
      %gt = arith.cmpi sgt, %ivv, %c5 : vector<4xi32>
      %c7 = arith.constant dense<7> : vector<4xi32>
      %isel = arith.select %gt, %ivv, %c7 : vector<4xi1>, vector<4xi32>
      vector.store %isel, %io[%l, %c0] : memref<64x4xi32>, vector<4xi32>
      gpu.return
    }
  }
}
