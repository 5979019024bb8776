// lower-upstream errors point at the upstream op (file:line:col) and say what is supported:
// one per dialect lowering, plus an op that parses but has no lowering and an op the upstream
// input does not parse. Each RUN enables one `//@name` line of the kernel (sed keeps the
// line numbers); without them the file lowers.
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s --check-prefix=OK
// RUN: sed 's#//@gpu ##' %s > %t.gpu.mlir
// RUN: not %python -m asterism.cli opt %t.gpu.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=GPU
// RUN: sed 's#//@arith ##' %s > %t.arith.mlir
// RUN: not %python -m asterism.cli opt %t.arith.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=ARITH
// RUN: sed 's#//@scf ##' %s > %t.scf.mlir
// RUN: not %python -m asterism.cli opt %t.scf.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=SCF
// RUN: sed 's#//@func ##' %s > %t.func.mlir
// RUN: not %python -m asterism.cli opt %t.func.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=FUNC
// RUN: sed 's#//@memref ##' %s > %t.memref.mlir
// RUN: not %python -m asterism.cli opt %t.memref.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=MEMREF
// RUN: sed 's#//@vector ##' %s > %t.vector.mlir
// RUN: not %python -m asterism.cli opt %t.vector.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=VECTOR
// RUN: sed 's#//@amdgpu ##' %s > %t.amdgpu.mlir
// RUN: not %python -m asterism.cli opt %t.amdgpu.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=AMDGPU
// RUN: sed 's#//@nohandler ##' %s > %t.nohandler.mlir
// RUN: not %python -m asterism.cli opt %t.nohandler.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=NOHANDLER
// RUN: sed 's#//@noparse ##' %s > %t.noparse.mlir
// RUN: not %python -m asterism.cli opt %t.noparse.mlir --pipeline lower-upstream 2>&1 | filecheck %s --check-prefix=NOPARSE

// OK: amdgcn.kernel @k
// OK: amdgcn.kernel @nosize
module attributes {gpu.container_module} {
  gpu.module @m {
    func.func @half(%x: f32) -> f32 {
      %h = arith.constant 0.5 : f32
      %y = arith.mulf %x, %h : f32
      func.return %y : f32
    }
    gpu.func @k(%out: memref<64xf32>, %m: memref<64x4xf16>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : i32
      %tid = gpu.thread_id x
      %t = arith.index_cast %tid : index to i32
      %x = arith.sitofp %t : i32 to f32
      %y = func.call @half(%x) : (f32) -> f32
      %va = vector.load %m[%tid, %c0] : memref<64x4xf16>, vector<4xf16>
      // ARITH: .arith.mlir:[[# @LINE + 1]]:7: error: arith.divui: divides by a value that is not a constant power of two (only those are supported)
      //@arith %q = arith.divui %t, %c3 : i32
      // SCF: .scf.mlir:[[# @LINE + 1]]:7: error: scf.for: the bounds and step differ between lanes; only uniform loops (bounds from constants, arguments, block ids and sizes) are supported
      //@scf scf.for %j = %c0 to %tid step %c1 { }
      // FUNC: .func.mlir:[[# @LINE + 1]]:7: error: func.call: '@nope' could not be found in symbol table
      //@func %z = func.call @nope(%x) : (f32) -> f32
      // MEMREF: .memref.mlir:[[# @LINE + 1]]:7: error: memref.alloc: only workgroup (LDS) allocations are supported (memory space 3 or #gpu.address_space<workgroup>)
      //@memref %g = memref.alloc() : memref<64xf32>
      // VECTOR: .vector.mlir:[[# @LINE + 1]]:7: error: vector.fma: only f32 elements are supported
      //@vector %f = vector.fma %va, %va, %va : vector<4xf16>
      // AMDGPU: .amdgpu.mlir:[[# @LINE + 1]]:7: error: amdgpu.wmma: WMMA exists only on RDNA chips (gfx11, gfx12); gfx942 has matrix cores through amdgpu.mfma
      //@amdgpu %w = amdgpu.wmma 16x16x16 %va * %va + %va : vector<4xf16>, vector<4xf16>, vector<4xf16>
      // NOHANDLER: .nohandler.mlir:[[# @LINE + 1]]:7: error: memref.dealloc: not supported by asterism's upstream lowering (see docs/upstream_mlir.md for the supported ops)
      //@nohandler memref.dealloc %m : memref<64x4xf16>
      // (a parse error points just past the op name, where the parser stopped)
      // NOPARSE: .noparse.mlir:[[# @LINE + 1]]:28: error: gpu.subgroup_id is not supported by asterism's upstream MLIR input (see docs/upstream_mlir.md for the ops it parses and lowers)
      //@noparse %s = gpu.subgroup_id : index
      memref.store %y, %out[%tid] : memref<64xf32>
      gpu.return
    }
    gpu.func @nosize(%out: memref<64xi32>) kernel {
      %tid = gpu.thread_id x
      // GPU: .gpu.mlir:[[# @LINE + 1]]:7: error: gpu.grid_dim: needs a known_block_size that is a power of two in this dimension (the grid size in work-items is divided by it)
      //@gpu %g = gpu.grid_dim x
      gpu.return
    }
  }
}
