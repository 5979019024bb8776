// func.call of a function of the gpu.module (inlined), vector ops on registers.
module {
  gpu.module @m {
    func.func @axpb(%x: f32, %a: f32, %b: f32) -> f32 {
      %p = arith.mulf %x, %a : f32
      %s = arith.addf %p, %b : f32
      return %s : f32
    }
    gpu.func @vec(%x: memref<256xf32>, %out: memref<256xf32>, %h: memref<128xi32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %i = arith.muli %t, %c4 : index
      %v = vector.load %x[%i] : memref<256xf32>, vector<4xf32>
      %e0 = vector.extract %v[0] : f32 from vector<4xf32>
      %e3 = vector.extract %v[3] : f32 from vector<4xf32>
      %a = arith.constant 3.0 : f32
      %b = arith.constant 0.5 : f32
      %y = func.call @axpb(%e0, %a, %b) : (f32, f32, f32) -> f32
      %w = vector.insert %y, %v[3] : f32 into vector<4xf32>
      %w2 = vector.insert %e3, %w[0] : f32 into vector<4xf32>
      %bc = vector.broadcast %b : f32 to vector<4xf32>
      %sum = arith.addf %w2, %bc : vector<4xf32>
      vector.store %sum, %out[%i] : memref<256xf32>, vector<4xf32>
      %lo = vector.extract_strided_slice %v {offsets = [1], sizes = [2], strides = [1]} : vector<4xf32> to vector<2xf32>
      %h16 = arith.truncf %lo : vector<2xf32> to vector<2xf16>
      %hi = vector.bitcast %h16 : vector<2xf16> to vector<1xi32>
      %hw = vector.extract %hi[0] : i32 from vector<1xi32>
      %c2 = arith.constant 2 : index
      %j = arith.muli %t, %c2 : index
      %f1 = arith.truncf %e0 : f32 to f16
      %f2 = arith.truncf %e3 : f32 to f16
      %pk = vector.from_elements %f1, %f2 : vector<2xf16>
      %pw = vector.bitcast %pk : vector<2xf16> to vector<1xi32>
      %pe = vector.extract %pw[0] : i32 from vector<1xi32>
      memref.store %hw, %h[%t] : memref<128xi32>
      %t64 = arith.constant 64 : index
      %k = arith.addi %t, %t64 : index
      memref.store %pe, %h[%k] : memref<128xi32>
      gpu.return
    }
  }
}
