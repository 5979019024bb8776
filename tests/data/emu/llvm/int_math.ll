; 64-bit integer division/remainder, 32-bit signed division, popcount, bit reverse,
; funnel shifts and saturating adds: long VALU sequences with carries and v_cndmask.
define amdgpu_kernel void @int_math(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %b) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %gid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %gid, 64
  %i = add i32 %base, %id
  %pa = getelementptr i64, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr i64, ptr addrspace(1) %b, i32 %i
  %x = load i64, ptr addrspace(1) %pa
  %y = load i64, ptr addrspace(1) %pb
  %q = udiv i64 %x, %y
  %r = urem i64 %x, %y
  %x32 = trunc i64 %x to i32
  %y32 = trunc i64 %y to i32
  %sd = sdiv i32 %x32, %y32
  %pc = call i32 @llvm.ctpop.i32(i32 %x32)
  %br = call i32 @llvm.bitreverse.i32(i32 %y32)
  %fs = call i32 @llvm.fshl.i32(i32 %x32, i32 %y32, i32 %id)
  %sa = call i32 @llvm.sadd.sat.i32(i32 %x32, i32 %y32)
  %o = getelementptr [8 x i64], ptr addrspace(1) %out, i32 %i
  store i64 %q, ptr addrspace(1) %o
  %o1 = getelementptr i64, ptr addrspace(1) %o, i32 1
  store i64 %r, ptr addrspace(1) %o1
  %o2 = getelementptr i32, ptr addrspace(1) %o, i32 4
  store i32 %sd, ptr addrspace(1) %o2
  %o3 = getelementptr i32, ptr addrspace(1) %o, i32 5
  store i32 %pc, ptr addrspace(1) %o3
  %o4 = getelementptr i32, ptr addrspace(1) %o, i32 6
  store i32 %br, ptr addrspace(1) %o4
  %o5 = getelementptr i32, ptr addrspace(1) %o, i32 7
  store i32 %fs, ptr addrspace(1) %o5
  %o6 = getelementptr i32, ptr addrspace(1) %o, i32 8
  store i32 %sa, ptr addrspace(1) %o6
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.ctpop.i32(i32)
declare i32 @llvm.bitreverse.i32(i32)
declare i32 @llvm.fshl.i32(i32, i32, i32)
declare i32 @llvm.sadd.sat.i32(i32, i32)
