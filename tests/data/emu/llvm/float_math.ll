; IEEE f32/f64 division and sqrt (denormal-mode switching, div_scale/fmas/fixup), exp/log,
; f16 and bf16 conversions, fma and min/max.
define amdgpu_kernel void @float_math(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %b) #0 {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %id
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %id
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %d = fdiv float %x, %y
  %s = call float @llvm.sqrt.f32(float %x)
  %xd = fpext float %x to double
  %yd = fpext float %y to double
  %dd = fdiv double %xd, %yd
  %sd = call double @llvm.sqrt.f64(double %xd)
  %h = fptrunc float %x to half
  %hb = fptrunc float %y to bfloat
  %hh = fmul half %h, %h
  %hx = fpext half %hh to float
  %bx = fpext bfloat %hb to float
  %mx = call float @llvm.maxnum.f32(float %x, float %y)
  %fm = call float @llvm.fma.f32(float %x, float %y, float %d)
  %o = getelementptr [8 x double], ptr addrspace(1) %out, i32 %id
  store float %d, ptr addrspace(1) %o
  %o1 = getelementptr float, ptr addrspace(1) %o, i32 1
  store float %s, ptr addrspace(1) %o1
  %o2 = getelementptr double, ptr addrspace(1) %o, i32 1
  store double %dd, ptr addrspace(1) %o2
  %o3 = getelementptr double, ptr addrspace(1) %o, i32 2
  store double %sd, ptr addrspace(1) %o3
  %o4 = getelementptr float, ptr addrspace(1) %o, i32 6
  store float %hx, ptr addrspace(1) %o4
  %o5 = getelementptr float, ptr addrspace(1) %o, i32 7
  store float %bx, ptr addrspace(1) %o5
  %o6 = getelementptr float, ptr addrspace(1) %o, i32 8
  store float %mx, ptr addrspace(1) %o6
  %o7 = getelementptr float, ptr addrspace(1) %o, i32 9
  store float %fm, ptr addrspace(1) %o7
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.sqrt.f32(float)
declare double @llvm.sqrt.f64(double)
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.fma.f32(float, float, float)
attributes #0 = { "denormal-fp-math-f32"="ieee,ieee" }
