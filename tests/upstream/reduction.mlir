// vector.reduction within a work-item: float max/add (with an accumulator), f16 min, i32 xor.
module {
  gpu.module @m {
    gpu.func @reduction(%x: memref<64x8xf32>, %h: memref<64x4xf16>, %i: memref<64x4xi32>,
                        %o: memref<3x64xf32>, %oi: memref<64xi32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %v = vector.load %x[%l, %c0] : memref<64x8xf32>, vector<8xf32>
      %mx = vector.reduction <maximumf>, %v : vector<8xf32> into f32
      %sum = vector.reduction <add>, %v, %mx : vector<8xf32> into f32
      memref.store %mx, %o[%c0, %l] : memref<3x64xf32>
      memref.store %sum, %o[%c1, %l] : memref<3x64xf32>
      %hv = vector.load %h[%l, %c0] : memref<64x4xf16>, vector<4xf16>
      %hm = vector.reduction <minimumf>, %hv : vector<4xf16> into f16
      %hf = arith.extf %hm : f16 to f32
      memref.store %hf, %o[%c2, %l] : memref<3x64xf32>
      %iv = vector.load %i[%l, %c0] : memref<64x4xi32>, vector<4xi32>
      %ix = vector.reduction <xor>, %iv : vector<4xi32> into i32
      memref.store %ix, %oi[%l] : memref<64xi32>
      gpu.return
    }
  }
}
