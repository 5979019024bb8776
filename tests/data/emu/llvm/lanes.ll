; Cross-lane ops, LDS with a barrier, divergent control flow and a reduction loop.
; The barrier is HIP's __syncthreads(): workgroup release fence, s_barrier, acquire fence.
@lds = internal addrspace(3) global [256 x i32] poison, align 4
define amdgpu_kernel void @lanes(ptr addrspace(1) %out, ptr addrspace(1) %a) "amdgpu-flat-work-group-size"="256,256" {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %id
  %x = load i32, ptr addrspace(1) %pa
  %rl = call i32 @llvm.amdgcn.readlane.i32(i32 %x, i32 5)
  %rf = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %x)
  %sh = call i32 @llvm.amdgcn.update.dpp.i32(i32 0, i32 %x, i32 273, i32 15, i32 15, i1 false)
  %addr = mul i32 %id, 4
  %rev = sub i32 252, %addr
  %bp = call i32 @llvm.amdgcn.ds.bpermute(i32 %rev, i32 %x)
  %slot = getelementptr [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %id
  store i32 %x, ptr addrspace(3) %slot
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %nid = xor i32 %id, 255
  %nslot = getelementptr [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %nid
  %nx = load i32, ptr addrspace(3) %nslot
  %odd = and i32 %x, 1
  %c = icmp eq i32 %odd, 0
  br i1 %c, label %even, label %done
even:
  %lim = and i32 %x, 15
  br label %loop
loop:
  %k = phi i32 [ 0, %even ], [ %k1, %loop ]
  %acc = phi i32 [ 0, %even ], [ %acc1, %loop ]
  %acc1 = add i32 %acc, %k
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, %lim
  br i1 %more, label %loop, label %done
done:
  %sum = phi i32 [ -1, %0 ], [ %acc1, %loop ]
  %o = getelementptr [8 x i32], ptr addrspace(1) %out, i32 %id
  store i32 %rl, ptr addrspace(1) %o
  %o1 = getelementptr i32, ptr addrspace(1) %o, i32 1
  store i32 %rf, ptr addrspace(1) %o1
  %o2 = getelementptr i32, ptr addrspace(1) %o, i32 2
  store i32 %sh, ptr addrspace(1) %o2
  %o3 = getelementptr i32, ptr addrspace(1) %o, i32 3
  store i32 %bp, ptr addrspace(1) %o3
  %o4 = getelementptr i32, ptr addrspace(1) %o, i32 4
  store i32 %nx, ptr addrspace(1) %o4
  %o5 = getelementptr i32, ptr addrspace(1) %o, i32 5
  store i32 %sum, ptr addrspace(1) %o5
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.readlane.i32(i32, i32)
declare i32 @llvm.amdgcn.readfirstlane.i32(i32)
declare i32 @llvm.amdgcn.update.dpp.i32(i32, i32, i32, i32, i32, i1)
declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)
declare void @llvm.amdgcn.s.barrier()
