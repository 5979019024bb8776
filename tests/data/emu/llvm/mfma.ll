; Two chained MFMAs (the second accumulates into the first's result) and a VALU read of the
; result: the MFMA hazards LLVM pads with s_nop.
define amdgpu_kernel void @mfma(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %b) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <4 x half>, ptr addrspace(1) %a, i32 %id
  %pb = getelementptr <4 x half>, ptr addrspace(1) %b, i32 %id
  %va = load <4 x half>, ptr addrspace(1) %pa
  %vb = load <4 x half>, ptr addrspace(1) %pb
  %c1 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %va, <4 x half> %vb, <4 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %c2 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %vb, <4 x half> %va, <4 x float> %c1, i32 0, i32 0, i32 0)
  %e = extractelement <4 x float> %c2, i32 0
  %m = fmul float %e, 2.0
  %c3 = insertelement <4 x float> %c2, float %m, i32 0
  %o = getelementptr <4 x float>, ptr addrspace(1) %out, i32 %id
  store <4 x float> %c3, ptr addrspace(1) %o
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half>, <4 x half>, <4 x float>, i32, i32, i32)
