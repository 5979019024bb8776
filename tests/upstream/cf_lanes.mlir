// Per-lane cf.cond_br under EXEC masking: if/else diamonds (one nested in the false path)
// and a triangle whose false edge goes straight to the meeting block with an argument.
module {
  gpu.module @m {
    gpu.func @cf_lanes(%x: memref<64xf32>, %o: memref<3x64xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %i0 = arith.constant 0 : index
      %i1 = arith.constant 1 : index
      %i2 = arith.constant 2 : index
      %i32 = arith.constant 32 : index
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %v = memref.load %x[%l] : memref<64xf32>
      %pos = arith.cmpf ogt, %v, %zero : f32
      cf.cond_br %pos, ^then, ^else
    ^then:
      %d = arith.mulf %v, %v : f32
      cf.br ^merge(%d : f32)
    ^else:
      %low = arith.cmpi ult, %l, %i32 : index
      cf.cond_br %low, ^neg, ^keep(%one : f32)
    ^neg:
      %n = arith.negf %v : f32
      cf.br ^keep(%n : f32)
    ^keep(%k: f32):
      %k2 = arith.addf %k, %one : f32
      cf.br ^merge(%k2 : f32)
    ^merge(%r: f32):
      memref.store %r, %o[%i0, %l] : memref<3x64xf32>
      %odd_i = arith.andi %l, %i1 : index
      %odd = arith.cmpi eq, %odd_i, %i1 : index
      cf.cond_br %odd, ^twice, ^end(%v : f32)
    ^twice:
      %w = arith.addf %v, %v : f32
      memref.store %w, %o[%i2, %l] : memref<3x64xf32>
      cf.br ^end(%w : f32)
    ^end(%e: f32):
      memref.store %e, %o[%i1, %l] : memref<3x64xf32>
      gpu.return
    }
  }
}
