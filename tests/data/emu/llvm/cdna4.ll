; gfx950 only: permlane swaps, scaled fp8/fp4 conversions, a transposed LDS read, and an
; f8f6f4 scaled MFMA.
@lds = internal addrspace(3) global [512 x i16] poison, align 16
define amdgpu_kernel void @cdna4(ptr addrspace(1) %out, ptr addrspace(1) %a) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %id
  %x = load i32, ptr addrspace(1) %pa
  %y = add i32 %x, 1000
  %s32 = call { i32, i32 } @llvm.amdgcn.permlane32.swap(i32 %x, i32 %y, i1 false, i1 false)
  %s32a = extractvalue { i32, i32 } %s32, 0
  %s32b = extractvalue { i32, i32 } %s32, 1
  %s16 = call { i32, i32 } @llvm.amdgcn.permlane16.swap(i32 %x, i32 %y, i1 false, i1 false)
  %s16a = extractvalue { i32, i32 } %s16, 0
  %fx = uitofp i32 %x to float
  %fy = fneg float %fx
  %pk = call <2 x i16> @llvm.amdgcn.cvt.scalef32.pk.fp8.f32(<2 x i16> zeroinitializer, float %fx, float %fy, float 4.0, i1 true)
  %pki = bitcast <2 x i16> %pk to i32
  %back = call <2 x float> @llvm.amdgcn.cvt.scalef32.pk.f32.fp8(i32 %pki, float 4.0, i1 true)
  %b0 = extractelement <2 x float> %back, i32 0
  %fp4 = call i32 @llvm.amdgcn.cvt.scalef32.pk.fp4.f32(i32 0, float %fx, float %fy, float 256.0, i32 1)
  %slot = getelementptr [512 x i16], ptr addrspace(3) @lds, i32 0, i32 %id
  %x16 = trunc i32 %x to i16
  store i16 %x16, ptr addrspace(3) %slot
  %id2 = add i32 %id, 64
  %slot2 = getelementptr [512 x i16], ptr addrspace(3) @lds, i32 0, i32 %id2
  %y16 = trunc i32 %y to i16
  store i16 %y16, ptr addrspace(3) %slot2
  call void @llvm.amdgcn.s.barrier()
  %toff = mul i32 %id, 4
  %tp = getelementptr [512 x i16], ptr addrspace(3) @lds, i32 0, i32 %toff
  %tr = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %tp)
  %tri = bitcast <4 x i16> %tr to <2 x i32>
  %av = insertelement <8 x i32> zeroinitializer, i32 %x, i32 0
  %bv = insertelement <8 x i32> zeroinitializer, i32 %y, i32 1
  %mm = call <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v8i32(<8 x i32> %av, <8 x i32> %bv, <4 x float> zeroinitializer, i32 0, i32 0, i32 0, i32 127, i32 0, i32 128)
  %o = getelementptr [16 x i32], ptr addrspace(1) %out, i32 %id
  store i32 %s32a, ptr addrspace(1) %o
  %o1 = getelementptr i32, ptr addrspace(1) %o, i32 1
  store i32 %s32b, ptr addrspace(1) %o1
  %o2 = getelementptr i32, ptr addrspace(1) %o, i32 2
  store i32 %s16a, ptr addrspace(1) %o2
  %o3 = getelementptr i32, ptr addrspace(1) %o, i32 3
  store i32 %pki, ptr addrspace(1) %o3
  %o4 = getelementptr i32, ptr addrspace(1) %o, i32 4
  store float %b0, ptr addrspace(1) %o4
  %o5 = getelementptr i32, ptr addrspace(1) %o, i32 5
  store i32 %fp4, ptr addrspace(1) %o5
  %o6 = getelementptr i32, ptr addrspace(1) %o, i32 6
  store <2 x i32> %tri, ptr addrspace(1) %o6
  %o8 = getelementptr i32, ptr addrspace(1) %o, i32 8
  store <4 x float> %mm, ptr addrspace(1) %o8
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare { i32, i32 } @llvm.amdgcn.permlane32.swap(i32, i32, i1, i1)
declare { i32, i32 } @llvm.amdgcn.permlane16.swap(i32, i32, i1, i1)
declare <2 x i16> @llvm.amdgcn.cvt.scalef32.pk.fp8.f32(<2 x i16>, float, float, float, i1)
declare <2 x float> @llvm.amdgcn.cvt.scalef32.pk.f32.fp8(i32, float, i1)
declare i32 @llvm.amdgcn.cvt.scalef32.pk.fp4.f32(i32, float, float, float, i32)
declare <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3))
declare void @llvm.amdgcn.s.barrier()
declare <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v8i32(<8 x i32>, <8 x i32>, <4 x float>, i32, i32, i32, i32, i32, i32)
