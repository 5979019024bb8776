// lower-upstream, func dialect: func.func in the gpu.module are inlined at every func.call
// (nested calls too), their func.return values becoming the call's results; no call or return
// instruction is emitted and only the kernel ends with s_endpgm.
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | not grep -e func -e @scale -e @twice

module attributes {gpu.container_module} {
  gpu.module @m {
    func.func @scale(%x: f32, %k: f32) -> f32 {
      %y = arith.mulf %x, %k : f32
      func.return %y : f32
    }
    func.func @twice(%x: f32) -> (f32, f32) {
      %two = arith.constant 2.0 : f32
      %y = func.call @scale(%x, %two) : (f32, f32) -> f32
      %z = arith.addf %y, %x : f32
      func.return %y, %z : f32, f32
    }
    // CHECK-LABEL: amdgcn.kernel @calls args(io: buffer<f32>)
    // CHECK: %[[IO:.*]] = amdgcn.make_register_range
    gpu.func @calls(%io: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      // CHECK: %[[X:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dword %{{.*}}, %{{.*}}, %[[IO]], %c0 offen
      %x = memref.load %io[%tid] : memref<64xf32>
      // @twice inlined, @scale inlined into it: 2.0 is an inline float constant
      // CHECK: %cf = arith.constant 2.000000e+00 : f32
      // CHECK: %[[Y:.*]] = amdgcn.vop3 v_mul_f32 %{{.*}}, %[[X]], %cf
      // CHECK: %[[Z:.*]] = amdgcn.vop2 v_add_f32 %{{.*}}, %[[Y]], %[[X]]
      %a, %b = func.call @twice(%x) : (f32) -> (f32, f32)
      // CHECK: %[[S:.*]] = amdgcn.vop2 v_sub_f32 %{{.*}}, %[[Z]], %[[Y]]
      %s = arith.subf %b, %a : f32
      // CHECK: amdgcn.mubuf buffer_store_dword %[[S]], %{{.*}}, %[[IO]], %c0 offen
      memref.store %s, %io[%tid] : memref<64xf32>
      // CHECK-NEXT: amdgcn.sopp s_endpgm
      // CHECK-NOT: s_endpgm
      gpu.return
    }
  }
}
