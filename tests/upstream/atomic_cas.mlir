// memref.atomic_rmw kinds with no atomic instruction, done by compare-and-swap loops, with
// 16 or 64 lanes contending for one address: muli on i32, mulf (powers of two: exact in any
// order), maxnumf, minnumf on f32 and f64, mulf on LDS, and maxnumf under a per-lane scf.if
// (EXEC is restored after the loop).
module {
  gpu.module @m {
    gpu.func @cas(%im: memref<4xi32>, %iv: memref<64xi32>, %iold: memref<64xi32>,
                  %fm: memref<4xf32>, %fv: memref<64xf32>, %fold: memref<64xf32>,
                  %mx: memref<2xf32>, %dm: memref<2xf64>, %dv: memref<64xf64>,
                  %lout: memref<64xf32>, %half: memref<64xf32>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %slot = arith.remui %l, %c4 : index
      %i = memref.load %iv[%l] : memref<64xi32>
      %io = memref.atomic_rmw muli %i, %im[%slot] : (i32, memref<4xi32>) -> i32
      memref.store %io, %iold[%l] : memref<64xi32>
      %f = memref.load %fv[%l] : memref<64xf32>
      %fo = memref.atomic_rmw mulf %f, %fm[%slot] : (f32, memref<4xf32>) -> f32
      memref.store %fo, %fold[%l] : memref<64xf32>
      %x1 = memref.atomic_rmw maxnumf %fo, %mx[%c0] : (f32, memref<2xf32>) -> f32
      %x2 = memref.atomic_rmw minnumf %fo, %mx[%c1] : (f32, memref<2xf32>) -> f32
      %d = memref.load %dv[%l] : memref<64xf64>
      %d1 = memref.atomic_rmw mulf %d, %dm[%c0] : (f64, memref<2xf64>) -> f64
      %d2 = memref.atomic_rmw maxnumf %d, %dm[%c1] : (f64, memref<2xf64>) -> f64
      %lds = memref.alloc() : memref<1xf32, #gpu.address_space<workgroup>>
      %one = arith.constant 1.0 : f32
      %z = arith.constant 0 : index
      %is0 = arith.cmpi eq, %l, %z : index
      scf.if %is0 {
        memref.store %one, %lds[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %lo = memref.atomic_rmw mulf %f, %lds[%c0] : (f32, memref<1xf32, #gpu.address_space<workgroup>>) -> f32
      gpu.barrier
      %lf = memref.load %lds[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
      memref.store %lf, %lout[%l] : memref<64xf32>
      %c2 = arith.constant 2 : index
      %odd = arith.remui %l, %c2 : index
      %even = arith.cmpi eq, %odd, %z : index
      scf.if %even {
        %h = memref.atomic_rmw maxnumf %f, %half[%c0] : (f32, memref<64xf32>) -> f32
      }
      %keep = arith.cmpi ne, %l, %z : index
      scf.if %keep {
        memref.store %f, %half[%l] : memref<64xf32>
      }
      gpu.return
    }
  }
}
