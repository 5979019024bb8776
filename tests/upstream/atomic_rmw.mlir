// memref.atomic_rmw: every kind with an instruction on a global i32 memref (each lane its own
// element, the old value stored), a contended addi (the old values are 0..63 in some order),
// addf on f32 (global) and addf/addi on LDS, 64 lanes.
module {
  gpu.module @m {
    gpu.func @atomics(%m: memref<576xi32>, %old: memref<576xi32>, %vals: memref<64xi32>,
                      %f: memref<64xf32>, %fx: memref<64xf32>, %fold: memref<64xf32>,
                      %cnt: memref<4xi32>, %cold: memref<64xi32>, %lout: memref<64xf32>)
        workgroup(%lds: memref<64xf32, #gpu.address_space<workgroup>>,
                  %lcnt: memref<1xi32, #gpu.address_space<workgroup>>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c2 = arith.constant 2 : index
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %c192 = arith.constant 192 : index
      %c256 = arith.constant 256 : index
      %c320 = arith.constant 320 : index
      %c384 = arith.constant 384 : index
      %c448 = arith.constant 448 : index
      %c512 = arith.constant 512 : index
      %v = memref.load %vals[%l] : memref<64xi32>
      %i0 = arith.addi %l, %c0 : index
      %o0 = memref.atomic_rmw addi %v, %m[%i0] : (i32, memref<576xi32>) -> i32
      memref.store %o0, %old[%i0] : memref<576xi32>
      %i1 = arith.addi %l, %c64 : index
      %o1 = memref.atomic_rmw andi %v, %m[%i1] : (i32, memref<576xi32>) -> i32
      memref.store %o1, %old[%i1] : memref<576xi32>
      %i2 = arith.addi %l, %c128 : index
      %o2 = memref.atomic_rmw ori %v, %m[%i2] : (i32, memref<576xi32>) -> i32
      memref.store %o2, %old[%i2] : memref<576xi32>
      %i3 = arith.addi %l, %c192 : index
      %o3 = memref.atomic_rmw xori %v, %m[%i3] : (i32, memref<576xi32>) -> i32
      memref.store %o3, %old[%i3] : memref<576xi32>
      %i4 = arith.addi %l, %c256 : index
      %o4 = memref.atomic_rmw assign %v, %m[%i4] : (i32, memref<576xi32>) -> i32
      memref.store %o4, %old[%i4] : memref<576xi32>
      %i5 = arith.addi %l, %c320 : index
      %o5 = memref.atomic_rmw maxs %v, %m[%i5] : (i32, memref<576xi32>) -> i32
      memref.store %o5, %old[%i5] : memref<576xi32>
      %i6 = arith.addi %l, %c384 : index
      %o6 = memref.atomic_rmw maxu %v, %m[%i6] : (i32, memref<576xi32>) -> i32
      memref.store %o6, %old[%i6] : memref<576xi32>
      %i7 = arith.addi %l, %c448 : index
      %o7 = memref.atomic_rmw mins %v, %m[%i7] : (i32, memref<576xi32>) -> i32
      memref.store %o7, %old[%i7] : memref<576xi32>
      %i8 = arith.addi %l, %c512 : index
      %o8 = memref.atomic_rmw minu %v, %m[%i8] : (i32, memref<576xi32>) -> i32
      memref.store %o8, %old[%i8] : memref<576xi32>
      %x = memref.load %fx[%l] : memref<64xf32>
      %fo = memref.atomic_rmw addf %x, %f[%l] : (f32, memref<64xf32>) -> f32
      memref.store %fo, %fold[%l] : memref<64xf32>
      %one = arith.constant 1 : i32
      %co = memref.atomic_rmw addi %one, %cnt[%c2] : (i32, memref<4xi32>) -> i32
      memref.store %co, %cold[%l] : memref<64xi32>
      %zero = arith.constant 0 : i32
      %zf = arith.constant 0.5 : f32
      memref.store %zf, %lds[%l] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %zero, %lcnt[%c0] : memref<1xi32, #gpu.address_space<workgroup>>
      gpu.barrier
      %lo = memref.atomic_rmw addf %x, %lds[%l] : (f32, memref<64xf32, #gpu.address_space<workgroup>>) -> f32
      %lc = memref.atomic_rmw addi %one, %lcnt[%c0] : (i32, memref<1xi32, #gpu.address_space<workgroup>>) -> i32
      gpu.barrier
      %ln = memref.load %lds[%l] : memref<64xf32, #gpu.address_space<workgroup>>
      %lcf = arith.sitofp %lc : i32 to f32
      %s = arith.addf %ln, %lcf : f32
      %s2 = arith.addf %s, %lo : f32
      memref.store %s2, %lout[%l] : memref<64xf32>
      gpu.return
    }
  }
}
