// Flash-attention forward (one head, head dim 16) in upstream MLIR dialects only:
//   O = softmax(Q K^T / sqrt(16)) V,  Q: 32x16, K, V: 64x16 (f16), O: 32x16 (f32).
// One wave (64 lanes) per block of 16 query rows; keys in blocks of 16.
//
// Layout (amdgpu.mfma 16x16x16 f16: A lane l = A[l%16][4*(l/16)+j], B lane l =
// B[4*(l/16)+j][l%16], C lane l = C[4*(l/16)+i][l%16]): computing S^T = K Q^T puts the 16
// scores of query row l%16 in the 4 lanes l%16 + 16g, 4 each, so
//   * each lane's running max m and sum l are scalars (its row l%16),
//   * a row max / sum is a 4-element vector.reduction then gpu.shuffle xor 16 and xor 32,
//   * P^T in the C layout is already the B operand of O^T = V^T P^T (no data movement).
// Softmax in base 2: scores are scaled by log2(e)/sqrt(16) and exponentiated with math.exp2
// (v_exp_f32); the rescale of the running output is exp2(m_old - m_new).
module {
  gpu.module @attention {
    gpu.func @flash_attention(%q: memref<32x16xf16>, %k: memref<64x16xf16>,
                              %v: memref<64x16xf16>, %o: memref<32x16xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c64 = arith.constant 64 : index
      %bid = gpu.block_id x
      %lane = gpu.thread_id x
      %row = arith.remui %lane, %c16 : index        // this lane's query row (within the block)
      %grp = arith.divui %lane, %c16 : index
      %kq = arith.muli %grp, %c4 : index            // its 4 head-dim / key positions
      %row0 = arith.muli %bid, %c16 : index
      %qrow = arith.addi %row0, %row : index
      // B operand of S^T = K Q^T: Q^T[4g+j][row] = Q[row][4g+j], contiguous
      %qb = vector.load %q[%qrow, %kq] : memref<32x16xf16>, vector<4xf16>
      %scale = arith.constant dense<0.360673760> : vector<4xf32>   // log2(e) / sqrt(16)
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %minf = arith.constant -1.0e30 : f32
      %fzero = arith.constant 0.0 : f32
      %w64 = arith.constant 64 : i32
      %x16 = arith.constant 16 : i32
      %x32 = arith.constant 32 : i32
      %m, %l, %acc = scf.for %kb = %c0 to %c64 step %c16
          iter_args(%m_old = %minf, %l_old = %fzero, %acc_old = %zero) -> (f32, f32, vector<4xf32>) {
        // S^T block: lane holds S[row][kb + 4g + i], i = 0..3
        %krow = arith.addi %kb, %row : index
        %ka = vector.load %k[%krow, %kq] : memref<64x16xf16>, vector<4xf16>
        %st = amdgpu.mfma 16x16x16 %ka * %qb + %zero blgp = none : vector<4xf16>, vector<4xf16>, vector<4xf32>
        %s2 = arith.mulf %st, %scale : vector<4xf32>
        // row max: within the lane, then across the 4 lanes of the row
        %lm = vector.reduction <maximumf>, %s2 : vector<4xf32> into f32
        %sh1, %ok1 = gpu.shuffle xor %lm, %x16, %w64 : f32
        %lm1 = arith.maximumf %lm, %sh1 : f32
        %sh2, %ok2 = gpu.shuffle xor %lm1, %x32, %w64 : f32
        %bmax = arith.maximumf %lm1, %sh2 : f32
        %m_new = arith.maximumf %m_old, %bmax : f32
        %mb = vector.broadcast %m_new : f32 to vector<4xf32>
        %sd = arith.subf %s2, %mb : vector<4xf32>
        %p = math.exp2 %sd : vector<4xf32>
        %dm = arith.subf %m_old, %m_new : f32
        %alpha = math.exp2 %dm : f32
        // row sum of p
        %ls = vector.reduction <add>, %p : vector<4xf32> into f32
        %sh3, %ok3 = gpu.shuffle xor %ls, %x16, %w64 : f32
        %ls1 = arith.addf %ls, %sh3 : f32
        %sh4, %ok4 = gpu.shuffle xor %ls1, %x32, %w64 : f32
        %psum = arith.addf %ls1, %sh4 : f32
        %l_new = math.fma %l_old, %alpha, %psum : f32
        // O^T += V^T P^T: A = V^T (lane: V[kb + 4g + j][row]), B = P^T (the lane's p)
        %ph = arith.truncf %p : vector<4xf32> to vector<4xf16>
        %vk0 = arith.addi %kb, %kq : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %c3 = arith.constant 3 : index
        %vk1 = arith.addi %vk0, %c1 : index
        %vk2 = arith.addi %vk0, %c2 : index
        %vk3 = arith.addi %vk0, %c3 : index
        %v0 = memref.load %v[%vk0, %row] : memref<64x16xf16>
        %v1 = memref.load %v[%vk1, %row] : memref<64x16xf16>
        %v2 = memref.load %v[%vk2, %row] : memref<64x16xf16>
        %v3 = memref.load %v[%vk3, %row] : memref<64x16xf16>
        %va = vector.from_elements %v0, %v1, %v2, %v3 : vector<4xf16>
        %ab = vector.broadcast %alpha : f32 to vector<4xf32>
        %scaled = arith.mulf %acc_old, %ab : vector<4xf32>
        %acc_new = amdgpu.mfma 16x16x16 %va * %ph + %scaled blgp = none : vector<4xf16>, vector<4xf16>, vector<4xf32>
        scf.yield %m_new, %l_new, %acc_new : f32, f32, vector<4xf32>
      }
      // lane holds O^T[4g + i][row] = O[row][4g + i]: one contiguous store
      %lb = vector.broadcast %l : f32 to vector<4xf32>
      %out = arith.divf %acc, %lb : vector<4xf32>
      vector.store %out, %o[%qrow, %kq] : memref<32x16xf32>, vector<4xf32>
      gpu.return
    }
  }
}
