// lower-upstream, amdgpu dialect on gfx950 (picked by the gpu.module's #rocdl.target):
// swizzle_bitmode as ds_swizzle_b32 (bit-mask mode), permlane_swap as v_permlane16_swap_b32 on
// two copies and a v_cndmask over the upper rows, transpose_load as ds_read_b64_tr_b16, and
// ext_packed_fp8 of the OCP format (byte 1: shift, then v_cvt_f32_fp8). The target option
// overrides the chip: on gfx942 permlane_swap is an error at its op.
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s
// RUN: not %python -m asterism.cli opt %s --pipeline "lower-upstream{target=gfx942}" 2>&1 | filecheck %s --check-prefix=GFX942

module {
  gpu.module @m [#rocdl.target<chip = "gfx950">] {
    // CHECK: amdgcn.module @m target = "gfx950"
    // CHECK-LABEL: amdgcn.kernel @lanes
    // CHECK: %[[X:.*]] = amdgcn.make_register_range
    // CHECK: %[[OUT:.*]] = amdgcn.make_register_range
    gpu.func @lanes(%x: memref<64xi32>, %out: memref<64xf32>) workgroup(%lh: memref<256xi16, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      // CHECK: %[[V:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dword %{{.*}}, %{{.*}}, %[[X]], %c0 offen
      %v = memref.load %x[%l] : memref<64xi32>
      // offset = and_mask | or_mask << 5 | xor_mask << 10 = 28 | 32 | 2048
      // CHECK: %[[S:.*]], %{{.*}} = amdgcn.ds ds_swizzle_b32 %{{.*}}, %[[V]] offset = 2108
      %s = amdgpu.swizzle_bitmode %v 28 1 2 : i32
      // CHECK: %[[M0:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c_m65536
      // CHECK: %[[M1:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c_m65536
      // CHECK: %[[UPPER:.*]] = amdgcn.make_register_range %[[M0]], %[[M1]]
      // CHECK: %[[D:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %[[S]]
      // CHECK: %[[C:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %[[S]]
      // CHECK: %[[ND:.*]], %[[NS:.*]] = amdgcn.vop1 v_permlane16_swap_b32 %[[D]], %[[C]]
      // CHECK: %[[W:.*]] = amdgcn.vop3 v_cndmask_b32 %{{.*}}, %[[NS]], %[[ND]], %[[UPPER]]
      // GFX942: lower_upstream_amdgpu_gfx950.mlir:[[# @LINE + 1]]:7: error: amdgpu.permlane_swap: permlane_swap needs gfx950 (v_permlane16_swap_b32); gfx942 does not have it
      %w = amdgpu.permlane_swap %s 16 : i32
      // CHECK: amdgcn.mubuf buffer_store_dword %[[W]], %{{.*}}, %[[X]], %c0 offen
      memref.store %w, %x[%l] : memref<64xi32>
      %c4 = arith.constant 4 : index
      %i = arith.muli %l, %c4 : index
      // CHECK: %[[I4:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c2, %workitem_id_x
      // CHECK: %[[IB:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c1, %[[I4]]
      // CHECK: amdgcn.ds ds_read_b64_tr_b16 %{{.*}}, %[[IB]]
      %t = amdgpu.transpose_load %lh[%i] : memref<256xi16, #gpu.address_space<workgroup>> -> vector<4xi16>
      %q = vector.load %x[%l] : memref<64xi32>, vector<1xi32>
      %pv = vector.bitcast %q : vector<1xi32> to vector<4xf8E4M3FN>
      // CHECK: %[[Q:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dword %{{.*}}, %{{.*}}, %[[X]], %c0 offen
      // CHECK: %[[B1:.*]] = amdgcn.vop2 v_lshrrev_b32 %{{.*}}, %c8, %[[Q]]
      // CHECK: %[[F:.*]] = amdgcn.vop1 v_cvt_f32_fp8 %{{.*}}, %[[B1]]
      %f = amdgpu.ext_packed_fp8 %pv[1] : vector<4xf8E4M3FN> to f32
      // CHECK: amdgcn.mubuf buffer_store_dword %[[F]], %{{.*}}, %[[OUT]], %c0 offen
      memref.store %f, %out[%l] : memref<64xf32>
      gpu.return
    }
  }
}
