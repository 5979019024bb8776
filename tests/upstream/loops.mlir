// scf.for with per-lane (VGPR) and uniform (SGPR) loop-carried values, scf.if on a uniform and
// on a per-lane condition, integer division by powers of two, select, casts.
module {
  gpu.module @m {
    gpu.func @row_stats(%x: memref<128x32xi32>, %f: memref<128x32xf32>,
                        %out: memref<128x9xi32>, %fo: memref<128xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %r = arith.addi %base, %tid : index
      %zero = arith.constant 0 : i32
      %min0 = arith.constant -2147483648 : i32
      %fz = arith.constant 0.0 : f32
      %sum, %mx, %fs, %tot = scf.for %j = %c0 to %c32 step %c1
          iter_args(%s = %zero, %m = %min0, %a = %fz, %t = %zero) -> (i32, i32, f32, i32) {
        %v = memref.load %x[%r, %j] : memref<128x32xi32>
        %fv = memref.load %f[%r, %j] : memref<128x32xf32>
        %s2 = arith.addi %s, %v : i32
        %m2 = arith.maxsi %m, %v : i32
        %a2 = arith.addf %a, %fv : f32
        %ji = arith.index_cast %j : index to i32
        %t2 = arith.addi %t, %ji : i32
        scf.yield %s2, %m2, %a2, %t2 : i32, i32, f32, i32
      }
      %bi = arith.index_cast %bid : index to i32
      %two = arith.constant 2 : i32
      %par = arith.remui %bi, %two : i32
      %odd = arith.cmpi ne, %par, %zero : i32
      %pick = scf.if %odd -> (i32) {
        scf.yield %mx : i32
      } else {
        scf.yield %sum : i32
      }
      %neg = arith.cmpi slt, %sum, %zero : i32
      %abs = scf.if %neg -> (i32) {
        %n = arith.subi %zero, %sum : i32
        scf.yield %n : i32
      } else {
        scf.yield %sum : i32
      }
      %c8 = arith.constant 8 : i32
      %q = arith.divsi %sum, %c8 : i32
      %rm = arith.remsi %sum, %c8 : i32
      %fl = arith.floordivsi %sum, %c8 : i32
      %sel = arith.select %neg, %q, %rm : i32
      %k0 = arith.constant 0 : index
      %k1 = arith.constant 1 : index
      %k2 = arith.constant 2 : index
      %k3 = arith.constant 3 : index
      %k4 = arith.constant 4 : index
      %k5 = arith.constant 5 : index
      %k6 = arith.constant 6 : index
      %k7 = arith.constant 7 : index
      %k8 = arith.constant 8 : index
      memref.store %sum, %out[%r, %k0] : memref<128x9xi32>
      memref.store %mx, %out[%r, %k1] : memref<128x9xi32>
      memref.store %pick, %out[%r, %k2] : memref<128x9xi32>
      memref.store %abs, %out[%r, %k3] : memref<128x9xi32>
      memref.store %q, %out[%r, %k4] : memref<128x9xi32>
      memref.store %rm, %out[%r, %k5] : memref<128x9xi32>
      memref.store %fl, %out[%r, %k6] : memref<128x9xi32>
      memref.store %sel, %out[%r, %k7] : memref<128x9xi32>
      memref.store %tot, %out[%r, %k8] : memref<128x9xi32>
      memref.store %fs, %fo[%r] : memref<128xf32>
      gpu.return
    }
  }
}
