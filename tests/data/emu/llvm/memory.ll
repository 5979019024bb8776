; Buffer resources with out-of-range accesses, global and LDS atomics, a private array with
; dynamic indexing (scratch), and 64-bit / vector loads and stores.
@lds = internal addrspace(3) global [64 x i32] poison, align 4
define amdgpu_kernel void @memory(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %cnt, i32 %n) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %n64 = zext i32 %n to i64
  %rsrc = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %a, i16 0, i64 %n64, i32 159744)
  %off = mul i32 %id, 4
  %v = call i32 @llvm.amdgcn.raw.ptr.buffer.load.i32(ptr addrspace(8) %rsrc, i32 %off, i32 0, i32 0)
  %v2 = call <2 x i32> @llvm.amdgcn.raw.ptr.buffer.load.v2i32(ptr addrspace(8) %rsrc, i32 %off, i32 4, i32 0)
  %old = atomicrmw add ptr addrspace(1) %cnt, i32 1 monotonic
  %p1 = getelementptr i32, ptr addrspace(1) %cnt, i32 1
  %mx = atomicrmw umax ptr addrspace(1) %p1, i32 %v monotonic
  %p2 = getelementptr i32, ptr addrspace(1) %cnt, i32 2
  %cx = cmpxchg ptr addrspace(1) %p2, i32 0, i32 %id monotonic monotonic
  %cxv = extractvalue { i32, i1 } %cx, 0
  %lp = getelementptr [64 x i32], ptr addrspace(3) @lds, i32 0, i32 0
  store i32 0, ptr addrspace(3) %lp
  call void @llvm.amdgcn.s.barrier()
  %lold = atomicrmw add ptr addrspace(3) %lp, i32 %id monotonic
  %priv = alloca [16 x i32], align 4, addrspace(5)
  br label %fill
fill:
  %k = phi i32 [ 0, %0 ], [ %k1, %fill ]
  %pp = getelementptr [16 x i32], ptr addrspace(5) %priv, i32 0, i32 %k
  %kv = mul i32 %k, %id
  store volatile i32 %kv, ptr addrspace(5) %pp
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, 16
  br i1 %more, label %fill, label %read
read:
  %sel = and i32 %id, 15
  %pq = getelementptr [16 x i32], ptr addrspace(5) %priv, i32 0, i32 %sel
  %pv = load volatile i32, ptr addrspace(5) %pq
  %o = getelementptr [8 x i32], ptr addrspace(1) %out, i32 %id
  store i32 %v, ptr addrspace(1) %o
  %o1 = getelementptr i32, ptr addrspace(1) %o, i32 1
  store <2 x i32> %v2, ptr addrspace(1) %o1
  %o3 = getelementptr i32, ptr addrspace(1) %o, i32 3
  store i32 %old, ptr addrspace(1) %o3
  %o4 = getelementptr i32, ptr addrspace(1) %o, i32 4
  store i32 %cxv, ptr addrspace(1) %o4
  %o5 = getelementptr i32, ptr addrspace(1) %o, i32 5
  store i32 %lold, ptr addrspace(1) %o5
  %o6 = getelementptr i32, ptr addrspace(1) %o, i32 6
  store i32 %pv, ptr addrspace(1) %o6
  %o7 = getelementptr i32, ptr addrspace(1) %o, i32 7
  store i32 %mx, ptr addrspace(1) %o7
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare i32 @llvm.amdgcn.raw.ptr.buffer.load.i32(ptr addrspace(8), i32, i32, i32)
declare <2 x i32> @llvm.amdgcn.raw.ptr.buffer.load.v2i32(ptr addrspace(8), i32, i32, i32)
declare void @llvm.amdgcn.s.barrier()
