; Direct-to-LDS loads (M0 holds the LDS base): buffer loads with the lds bit and global_load_lds,
; then LDS reads after waiting on vmcnt.
@lds = internal addrspace(3) global [1024 x i32] poison, align 16
define amdgpu_kernel void @lds_dma(ptr addrspace(1) %out, ptr addrspace(1) %a) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %rsrc = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %a, i16 0, i64 1024, i32 159744)
  %off = mul i32 %id, 4
  %dst = getelementptr [1024 x i32], ptr addrspace(3) @lds, i32 0, i32 0
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %rsrc, ptr addrspace(3) %dst, i32 4, i32 %off, i32 0, i32 0, i32 0)
  %src = getelementptr i32, ptr addrspace(1) %a, i32 %id
  %dst2 = getelementptr [1024 x i32], ptr addrspace(3) @lds, i32 0, i32 256
  call void @llvm.amdgcn.global.load.lds(ptr addrspace(1) %src, ptr addrspace(3) %dst2, i32 4, i32 0, i32 0)
  call void @llvm.amdgcn.s.waitcnt(i32 0)
  call void @llvm.amdgcn.s.barrier()
  %rev = sub i32 63, %id
  %p = getelementptr [1024 x i32], ptr addrspace(3) @lds, i32 0, i32 %rev
  %v = load i32, ptr addrspace(3) %p
  %q = add i32 %rev, 256
  %p2 = getelementptr [1024 x i32], ptr addrspace(3) @lds, i32 0, i32 %q
  %v2 = load i32, ptr addrspace(3) %p2
  %o = getelementptr [2 x i32], ptr addrspace(1) %out, i32 %id
  store i32 %v, ptr addrspace(1) %o
  %o1 = getelementptr i32, ptr addrspace(1) %o, i32 1
  store i32 %v2, ptr addrspace(1) %o1
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8), ptr addrspace(3), i32, i32, i32, i32, i32)
declare void @llvm.amdgcn.global.load.lds(ptr addrspace(1), ptr addrspace(3), i32, i32, i32)
declare void @llvm.amdgcn.s.waitcnt(i32)
declare void @llvm.amdgcn.s.barrier()
