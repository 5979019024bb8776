// Dynamic memref shapes: `%a` and `%out` are memref<?x128xf16> (rows known at run time),
// `%v` a memref<?xf32> and `%m` a memref<?x?xi32>; their sizes and strides come from the
// memref descriptors (MLIR's default gpu-to-rocdl convention), memref.dim reads them. Each
// workgroup does one row: out[r, j] = a[r, j] * 2 for rows < dim 0; v[i] += the row count
// + v[dim(v)] for i < dim(v) (v[dim(v)] is past the buffer's end, whose range comes from the
// runtime size: it reads 0); m[i, j] = i * dim1 + j (a runtime stride) inside the matrix.
module {
  gpu.module @m {
    gpu.func @dyn(%a: memref<?x128xf16>, %out: memref<?x128xf16>, %v: memref<?xf32>,
                  %m: memref<?x?xi32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %l = gpu.thread_id x
      %r = gpu.block_id x
      %rows = memref.dim %a, %c0 : memref<?x128xf16>
      %inr = arith.cmpi ult, %r, %rows : index
      scf.if %inr {
        %two = arith.constant 2.0 : f16
        %j1 = arith.addi %l, %c64 : index
        %x0 = memref.load %a[%r, %l] : memref<?x128xf16>
        %x1 = memref.load %a[%r, %j1] : memref<?x128xf16>
        %y0 = arith.mulf %x0, %two : f16
        %y1 = arith.mulf %x1, %two : f16
        memref.store %y0, %out[%r, %l] : memref<?x128xf16>
        memref.store %y1, %out[%r, %j1] : memref<?x128xf16>
      }
      %n = memref.dim %v, %c0 : memref<?xf32>
      %g = arith.muli %r, %c64 : index
      %i = arith.addi %g, %l : index
      %inv = arith.cmpi ult, %i, %n : index
      scf.if %inv {
        %rowsi = arith.index_cast %rows : index to i32
        %rowsf = arith.sitofp %rowsi : i32 to f32
        %x = memref.load %v[%i] : memref<?xf32>
        %past = memref.load %v[%n] : memref<?xf32>
        %xp = arith.addf %x, %past : f32
        %y = arith.addf %xp, %rowsf : f32
        memref.store %y, %v[%i] : memref<?xf32>
      }
      %mr = memref.dim %m, %c0 : memref<?x?xi32>
      %mc = memref.dim %m, %c1 : memref<?x?xi32>
      %ok = arith.cmpi ult, %l, %mc : index
      %okr = arith.cmpi ult, %r, %mr : index
      %both = arith.andi %ok, %okr : i1
      scf.if %both {
        %base = arith.muli %r, %mc : index
        %e = arith.addi %base, %l : index
        %ei = arith.index_cast %e : index to i32
        memref.store %ei, %m[%r, %l] : memref<?x?xi32>
      }
      gpu.return
    }
  }
}
