; gfx950: 128-bit direct-to-LDS loads (global_load_lds_dwordx4, buffer_load_dwordx4 lds).
@lds = internal addrspace(3) global [1024 x i32] poison, align 16
define amdgpu_kernel void @lds_dma_x4(ptr addrspace(1) %out, ptr addrspace(1) %a) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %src = getelementptr <4 x i32>, ptr addrspace(1) %a, i32 %id
  %dst = getelementptr [1024 x i32], ptr addrspace(3) @lds, i32 0, i32 0
  call void @llvm.amdgcn.global.load.lds(ptr addrspace(1) %src, ptr addrspace(3) %dst, i32 16, i32 0, i32 0)
  %rsrc = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %a, i16 0, i64 1024, i32 159744)
  %off = mul i32 %id, 16
  %dst2 = getelementptr [1024 x i32], ptr addrspace(3) @lds, i32 0, i32 256
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %rsrc, ptr addrspace(3) %dst2, i32 16, i32 %off, i32 0, i32 0, i32 0)
  call void @llvm.amdgcn.s.waitcnt(i32 0)
  call void @llvm.amdgcn.s.barrier()
  %p = getelementptr <4 x i32>, ptr addrspace(3) @lds, i32 %id
  %v = load <4 x i32>, ptr addrspace(3) %p
  %q = add i32 %id, 64
  %p2 = getelementptr <4 x i32>, ptr addrspace(3) @lds, i32 %q
  %v2 = load <4 x i32>, ptr addrspace(3) %p2
  %s = add <4 x i32> %v, %v2
  %o = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %id
  store <4 x i32> %s, ptr addrspace(1) %o
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8), ptr addrspace(3), i32, i32, i32, i32, i32)
declare void @llvm.amdgcn.global.load.lds(ptr addrspace(1), ptr addrspace(3), i32, i32, i32)
declare void @llvm.amdgcn.s.waitcnt(i32)
declare void @llvm.amdgcn.s.barrier()
