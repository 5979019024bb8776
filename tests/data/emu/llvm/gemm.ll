; fp16 GEMM C[M][N] = A[M][K] * B[K][N] with B given transposed (Bt[N][K]), f32 accumulation.
; One wave per workgroup computes a 32x32 tile of C as 2x2 v_mfma_f32_16x16x16_f16 blocks;
; the K loop steps by 16. Grid: (N/32, M/32). Operand layouts (16x16x16): lane l holds
; A[row l%16][k 4(l/16)..+3], B[k 4(l/16)..+3][col l%16]; D[row 4(l/16)+r][col l%16].
define amdgpu_kernel void @gemm(ptr addrspace(1) %c, ptr addrspace(1) %a, ptr addrspace(1) %bt, i32 %n, i32 %k) {
entry:
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %bx = call i32 @llvm.amdgcn.workgroup.id.x()
  %by = call i32 @llvm.amdgcn.workgroup.id.y()
  %li = and i32 %l, 15
  %lk = lshr i32 %l, 4
  %kofs = shl i32 %lk, 2
  %row0 = shl i32 %by, 5
  %col0 = shl i32 %bx, 5
  %ra = add i32 %row0, %li
  %rb = add i32 %ra, 16
  %ca = add i32 %col0, %li
  %cb = add i32 %ca, 16
  %pa0 = mul i32 %ra, %k
  %pa1 = mul i32 %rb, %k
  %pb0 = mul i32 %ca, %k
  %pb1 = mul i32 %cb, %k
  br label %loop
loop:
  %kk = phi i32 [ 0, %entry ], [ %kk1, %loop ]
  %acc00 = phi <4 x float> [ zeroinitializer, %entry ], [ %d00, %loop ]
  %acc01 = phi <4 x float> [ zeroinitializer, %entry ], [ %d01, %loop ]
  %acc10 = phi <4 x float> [ zeroinitializer, %entry ], [ %d10, %loop ]
  %acc11 = phi <4 x float> [ zeroinitializer, %entry ], [ %d11, %loop ]
  %ko = add i32 %kk, %kofs
  %ia0 = add i32 %pa0, %ko
  %ia1 = add i32 %pa1, %ko
  %ib0 = add i32 %pb0, %ko
  %ib1 = add i32 %pb1, %ko
  %ga0 = getelementptr half, ptr addrspace(1) %a, i32 %ia0
  %ga1 = getelementptr half, ptr addrspace(1) %a, i32 %ia1
  %gb0 = getelementptr half, ptr addrspace(1) %bt, i32 %ib0
  %gb1 = getelementptr half, ptr addrspace(1) %bt, i32 %ib1
  %fa0 = load <4 x half>, ptr addrspace(1) %ga0, align 8
  %fa1 = load <4 x half>, ptr addrspace(1) %ga1, align 8
  %fb0 = load <4 x half>, ptr addrspace(1) %gb0, align 8
  %fb1 = load <4 x half>, ptr addrspace(1) %gb1, align 8
  %d00 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %fa0, <4 x half> %fb0, <4 x float> %acc00, i32 0, i32 0, i32 0)
  %d01 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %fa0, <4 x half> %fb1, <4 x float> %acc01, i32 0, i32 0, i32 0)
  %d10 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %fa1, <4 x half> %fb0, <4 x float> %acc10, i32 0, i32 0, i32 0)
  %d11 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %fa1, <4 x half> %fb1, <4 x float> %acc11, i32 0, i32 0, i32 0)
  %kk1 = add i32 %kk, 16
  %more = icmp ult i32 %kk1, %k
  br i1 %more, label %loop, label %store
store:
  %orow = add i32 %row0, %kofs
  call void @st(ptr addrspace(1) %c, <4 x float> %d00, i32 %orow, i32 %ca, i32 %n)
  call void @st(ptr addrspace(1) %c, <4 x float> %d01, i32 %orow, i32 %cb, i32 %n)
  %orow1 = add i32 %orow, 16
  call void @st(ptr addrspace(1) %c, <4 x float> %d10, i32 %orow1, i32 %ca, i32 %n)
  call void @st(ptr addrspace(1) %c, <4 x float> %d11, i32 %orow1, i32 %cb, i32 %n)
  ret void
}
define internal void @st(ptr addrspace(1) %c, <4 x float> %d, i32 %row, i32 %col, i32 %n) alwaysinline {
  %e0 = extractelement <4 x float> %d, i32 0
  %e1 = extractelement <4 x float> %d, i32 1
  %e2 = extractelement <4 x float> %d, i32 2
  %e3 = extractelement <4 x float> %d, i32 3
  %b0 = mul i32 %row, %n
  %i0 = add i32 %b0, %col
  %i1 = add i32 %i0, %n
  %i2 = add i32 %i1, %n
  %i3 = add i32 %i2, %n
  %p0 = getelementptr float, ptr addrspace(1) %c, i32 %i0
  %p1 = getelementptr float, ptr addrspace(1) %c, i32 %i1
  %p2 = getelementptr float, ptr addrspace(1) %c, i32 %i2
  %p3 = getelementptr float, ptr addrspace(1) %c, i32 %i3
  store float %e0, ptr addrspace(1) %p0
  store float %e1, ptr addrspace(1) %p1
  store float %e2, ptr addrspace(1) %p2
  store float %e3, ptr addrspace(1) %p3
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.amdgcn.workgroup.id.y()
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half>, <4 x half>, <4 x float>, i32, i32, i32)
