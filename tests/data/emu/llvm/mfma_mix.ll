; MFMAs of several shapes and pass counts (4x4, 16x16, 32x32, f64, i8, bf16) with VALU reads
; and writes of their results in between: the XDL/DGEMM wait-state rules LLVM pads.
define amdgpu_kernel void @mfma_mix(ptr addrspace(1) %out, ptr addrspace(1) %a) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <4 x half>, ptr addrspace(1) %a, i32 %id
  %va = load <4 x half>, ptr addrspace(1) %pa
  %pd = getelementptr double, ptr addrspace(1) %a, i32 %id
  %vd = load double, ptr addrspace(1) %pd
  %pi = getelementptr i64, ptr addrspace(1) %a, i32 %id
  %vi = load i64, ptr addrspace(1) %pi
  %pb = getelementptr <4 x i16>, ptr addrspace(1) %a, i32 %id
  %vb = load <4 x i16>, ptr addrspace(1) %pb
  %m4 = call <4 x float> @llvm.amdgcn.mfma.f32.4x4x4f16(<4 x half> %va, <4 x half> %va, <4 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %m4b = call <4 x float> @llvm.amdgcn.mfma.f32.4x4x4f16(<4 x half> %va, <4 x half> %va, <4 x float> %m4, i32 0, i32 0, i32 0)
  %e4 = extractelement <4 x float> %m4b, i32 1
  %m32 = call <16 x float> @llvm.amdgcn.mfma.f32.32x32x8f16(<4 x half> %va, <4 x half> %va, <16 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %e32 = extractelement <16 x float> %m32, i32 7
  %s = fadd float %e4, %e32
  %h = fptrunc float %s to half
  %va2 = insertelement <4 x half> %va, half %h, i32 0
  %m16 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %va2, <4 x half> %va, <4 x float> %m4b, i32 0, i32 0, i32 0)
  %md = call double @llvm.amdgcn.mfma.f64.4x4x4f64(double %vd, double %vd, double 0.0, i32 0, i32 0, i32 0)
  %md2 = call <4 x double> @llvm.amdgcn.mfma.f64.16x16x4f64(double %vd, double %md, <4 x double> zeroinitializer, i32 0, i32 0, i32 0)
  %ed = extractelement <4 x double> %md2, i32 2
  %mi = call <4 x i32> @llvm.amdgcn.mfma.i32.16x16x32.i8(i64 %vi, i64 %vi, <4 x i32> zeroinitializer, i32 0, i32 0, i32 0)
  %mb = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16> %vb, <4 x i16> %vb, <4 x float> %m16, i32 0, i32 0, i32 0)
  %o = getelementptr [16 x float], ptr addrspace(1) %out, i32 %id
  store <4 x float> %mb, ptr addrspace(1) %o
  %o1 = getelementptr <4 x float>, ptr addrspace(1) %o, i32 1
  store <4 x i32> %mi, ptr addrspace(1) %o1
  %o2 = getelementptr double, ptr addrspace(1) %o, i32 4
  store double %ed, ptr addrspace(1) %o2
  %o3 = getelementptr float, ptr addrspace(1) %o, i32 10
  store float %s, ptr addrspace(1) %o3
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare <4 x float> @llvm.amdgcn.mfma.f32.4x4x4f16(<4 x half>, <4 x half>, <4 x float>, i32, i32, i32)
declare <16 x float> @llvm.amdgcn.mfma.f32.32x32x8f16(<4 x half>, <4 x half>, <16 x float>, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half>, <4 x half>, <4 x float>, i32, i32, i32)
declare double @llvm.amdgcn.mfma.f64.4x4x4f64(double, double, double, i32, i32, i32)
declare <4 x double> @llvm.amdgcn.mfma.f64.16x16x4f64(double, double, <4 x double>, i32, i32, i32)
declare <4 x i32> @llvm.amdgcn.mfma.i32.16x16x32.i8(i64, i64, <4 x i32>, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16>, <4 x i16>, <4 x float>, i32, i32, i32)
