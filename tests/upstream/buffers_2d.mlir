// amdgpu raw buffer ops on 2-D memrefs in the custom form mlir-opt-22 prints (one index type
// per index), and sgprOffset counted in elements (MLIR scales it by the element size).
module {
  gpu.module @m {
    gpu.func @buffers_2d(%a: memref<16x8xf16>, %b: memref<16x8xf16>, %acc: memref<4x4xf32>,
                         %imax: memref<2x2xi32>, %cas: memref<16x4xi32>, %old: memref<16x4xi32>,
                         %dmax: memref<2x2xf64>, %sh: memref<4x8xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %li = arith.index_cast %l : index to i32
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      %c16 = arith.constant 16 : i32
      %row = arith.shrui %li, %c2 : i32
      %q = arith.andi %li, %c3 : i32
      %lo = arith.cmpi ult, %li, %c16 : i32
      %col4 = arith.select %lo, %c0, %c4 : i32
      %r16 = arith.andi %li, %c16 : i32
      %v = amdgpu.raw_buffer_load %a[%li, %col4] : memref<16x8xf16>, i32, i32 -> vector<4xf16>
      amdgpu.raw_buffer_store %v -> %b[%li, %col4] : vector<4xf16> -> memref<16x8xf16>, i32, i32
      %one = arith.constant 1.0 : f32
      amdgpu.raw_buffer_atomic_fadd %one -> %acc[%q, %c0] sgprOffset %c3 : f32 -> memref<4x4xf32>, i32, i32
      %c7 = arith.constant 7 : i32
      %c200 = arith.constant 200 : i32
      %s7 = arith.muli %li, %c7 : i32
      %iv = arith.subi %s7, %c200 : i32
      amdgpu.raw_buffer_atomic_smax %iv -> %imax[%c1, %c0] : i32 -> memref<2x2xi32>, i32, i32
      amdgpu.raw_buffer_atomic_umin %iv -> %imax[%c0, %c0] sgprOffset %c1 : i32 -> memref<2x2xi32>, i32, i32
      %c1000 = arith.constant 1000 : i32
      %new = arith.addi %li, %c1000 : i32
      %prev = amdgpu.raw_buffer_atomic_cmpswap %new, %li -> %cas[%row, %q] : i32 -> memref<16x4xi32>, i32, i32
      amdgpu.raw_buffer_store %prev -> %old[%row, %q] : i32 -> memref<16x4xi32>, i32, i32
      %fi = arith.sitofp %li : i32 to f32
      %fd = arith.extf %fi : f32 to f64
      amdgpu.raw_buffer_atomic_fmax %fd -> %dmax[%c1, %c0] sgprOffset %c1 : f64 -> memref<2x2xf64>, i32, i32
      %ok = arith.cmpi ult, %li, %c4 : i32
      scf.if %ok {
        amdgpu.raw_buffer_store %fi -> %sh[%li, %c0] sgprOffset %c2 : f32 -> memref<4x8xf32>, i32, i32
      }
      gpu.return
    }
  }
}
