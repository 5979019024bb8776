// lower-upstream, vector dialect: a 32-byte load in two 16-byte buffer loads (the second at
// offset 16) joined into one 8-register value, a register-aligned extract_strided_slice as a
// view (no instruction), broadcast into registers of their own, f32 fma per register,
// extract/insert at static positions, 16-bit elements packed two per register (shift, mask,
// or), a bitcast as a view, and stores of 16 and 8 bytes.
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s

module attributes {gpu.container_module} {
  gpu.module @m {
    // CHECK-LABEL: amdgcn.kernel @vec args(in: buffer<f32>, out: buffer<f32>, h: buffer<f16>, s: f32)
    // CHECK: %[[S:.*]], %{{.*}} = amdgcn.smem s_load_dword %{{.*}}, %kernarg_ptr, %s_offset
    // CHECK: %[[IN:.*]] = amdgcn.make_register_range
    // CHECK: %[[OUT:.*]] = amdgcn.make_register_range
    // CHECK: %[[H:.*]] = amdgcn.make_register_range
    gpu.func @vec(%in: memref<64x8xf32>, %out: memref<64x4xf32>, %h: memref<64x4xf16>, %s: f32) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      // CHECK: %[[A:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c5, %workitem_id_x
      // CHECK: %[[P0:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dwordx4 %{{.*}}, %[[A]], %[[IN]], %c0 offen :
      // CHECK: %[[P1:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dwordx4 %{{.*}}, %[[A]], %[[IN]], %c0 offen offset = 16
      // CHECK: %[[W0:.*]], %[[W1:.*]], %[[W2:.*]], %[[W3:.*]] = amdgcn.split_register_range %[[P0]]
      // CHECK: %[[W4:.*]], %[[W5:.*]], %[[W6:.*]], %[[W7:.*]] = amdgcn.split_register_range %[[P1]]
      // CHECK: %[[V:.*]] = amdgcn.make_register_range %[[W0]], %[[W1]], %[[W2]], %[[W3]], %[[W4]], %[[W5]], %[[W6]], %[[W7]]
      %v = vector.load %in[%tid, %c0] : memref<64x8xf32>, vector<8xf32>
      // CHECK: %{{.*}}, %[[HI:.*]] = amdgcn.split_register_range %[[V]] : !amdgcn.vgpr<[? + 8], align 4> -> !amdgcn.vgpr<[? + 4], align 4>, !amdgcn.vgpr<[? + 4], align 4>
      %lo = vector.extract_strided_slice %v {offsets = [4], sizes = [4], strides = [1]} : vector<8xf32> to vector<4xf32>
      // CHECK: %[[B0:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %[[S]]
      // CHECK: %[[B1:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %[[S]]
      // CHECK: %[[B2:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %[[S]]
      // CHECK: %[[B3:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %[[S]]
      // CHECK: %[[B:.*]] = amdgcn.make_register_range %[[B0]], %[[B1]], %[[B2]], %[[B3]]
      %b = vector.broadcast %s : f32 to vector<4xf32>
      // CHECK: %[[X0:.*]], %[[X1:.*]], %[[X2:.*]], %[[X3:.*]] = amdgcn.split_register_range %[[HI]]
      // CHECK: %[[Y0:.*]], %[[Y1:.*]], %[[Y2:.*]], %[[Y3:.*]] = amdgcn.split_register_range %[[B]]
      // CHECK: %[[F0:.*]] = amdgcn.vop3 v_fma_f32 %{{.*}}, %[[X0]], %[[Y0]], %[[X0]]
      // CHECK: %[[F1:.*]] = amdgcn.vop3 v_fma_f32 %{{.*}}, %[[X1]], %[[Y1]], %[[X1]]
      // CHECK: %[[F2:.*]] = amdgcn.vop3 v_fma_f32 %{{.*}}, %[[X2]], %[[Y2]], %[[X2]]
      // CHECK: %[[F3:.*]] = amdgcn.vop3 v_fma_f32 %{{.*}}, %[[X3]], %[[Y3]], %[[X3]]
      // CHECK: %[[F:.*]] = amdgcn.make_register_range %[[F0]], %[[F1]], %[[F2]], %[[F3]]
      %f = vector.fma %lo, %b, %lo : vector<4xf32>
      // extract [2] is register 2; insert at [0] repacks the four elements, each copied
      // CHECK: %[[E0:.*]], %[[E1:.*]], %[[E2:.*]], %[[E3:.*]] = amdgcn.split_register_range %[[F]]
      // CHECK: %[[G0:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %[[E2]]
      // CHECK: %[[G1:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %[[E1]]
      // CHECK: %[[G2:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %[[E2]]
      // CHECK: %[[G3:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %[[E3]]
      // CHECK: %[[G:.*]] = amdgcn.make_register_range %[[G0]], %[[G1]], %[[G2]], %[[G3]]
      %e = vector.extract %f[2] : f32 from vector<4xf32>
      %g = vector.insert %e, %f [0] : f32 into vector<4xf32>
      // CHECK: %[[OA:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c4, %workitem_id_x
      // CHECK: amdgcn.mubuf buffer_store_dwordx4 %[[G]], %[[OA]], %[[OUT]], %c0 offen
      vector.store %g, %out[%tid, %c0] : memref<64x4xf32>, vector<4xf32>
      // CHECK: %[[HA:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c3, %workitem_id_x
      // CHECK: %[[HV:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dwordx2 %{{.*}}, %[[HA]], %[[H]], %c0 offen
      %hv = vector.load %h[%tid, %c0] : memref<64x4xf16>, vector<4xf16>
      // element 1 is the high half of register 0
      // CHECK: %[[R0:.*]], %{{.*}} = amdgcn.split_register_range %[[HV]]
      // CHECK: %[[H1:.*]] = amdgcn.vop2 v_lshrrev_b32 %{{.*}}, %c16, %[[R0]]
      %h1 = vector.extract %hv[1] : f16 from vector<4xf16>
      // CHECK: %[[M:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c65535
      // CHECK: %[[L:.*]] = amdgcn.vop3 v_and_b32 %{{.*}}, %[[H1]], %[[M]]
      // CHECK: %[[U:.*]] = amdgcn.vop3 v_and_b32 %{{.*}}, %[[H1]], %[[M]]
      // CHECK: %[[US:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c16, %[[U]]
      // CHECK: amdgcn.vop2 v_or_b32 %{{.*}}, %[[L]], %[[US]]
      %p = vector.from_elements %h1, %h1 : vector<2xf16>
      %i = vector.bitcast %p : vector<2xf16> to vector<1xi32>
      // four halves: two packed registers, copied into a range of their own
      // CHECK: %[[Q0:.*]] = amdgcn.vop2 v_or_b32
      // CHECK: %[[Q1:.*]] = amdgcn.vop2 v_or_b32
      // CHECK: %[[C0:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %[[Q0]]
      // CHECK: %[[C1:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %[[Q1]]
      // CHECK: %[[Q:.*]] = amdgcn.make_register_range %[[C0]], %[[C1]]
      %q = vector.from_elements %h1, %h1, %h1, %h1 : vector<4xf16>
      // CHECK: amdgcn.mubuf buffer_store_dwordx2 %[[Q]], %{{.*}}, %[[H]], %c0 offen
      vector.store %q, %h[%tid, %c0] : memref<64x4xf16>, vector<4xf16>
      // CHECK-NEXT: amdgcn.sopp s_endpgm
      gpu.return
    }
  }
}
