// lower-upstream, arith dialect: constants folded into their uses, uniform integer ops on the
// SALU and per-lane ones on the VALU, x * 2^k as a shift, division by a constant power of two
// (unsigned: a shift; signed: rounded toward zero), comparisons and selects (s_cmp/s_cselect
// when uniform, v_cmp/v_cndmask per lane), integer truncation and sign extension, and f32/f16
// arithmetic and conversions (divf is v_rcp + v_mul, negf flips the sign bit).
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s

module attributes {gpu.container_module} {
  gpu.module @m {
    // CHECK-LABEL: amdgcn.kernel @arith args(out: buffer<i32>, fout: buffer<f32>, n: i32, x: f32)
    // CHECK: %[[N:.*]], %{{.*}} = amdgcn.smem s_load_dword %{{.*}}, %kernarg_ptr, %n_offset
    // CHECK: %[[X:.*]], %{{.*}} = amdgcn.smem s_load_dword %{{.*}}, %kernarg_ptr, %x_offset
    // CHECK: %[[OUT:.*]] = amdgcn.make_register_range
    // CHECK: %[[FOUT:.*]] = amdgcn.make_register_range
    gpu.func @arith(%out: memref<64xi32>, %fout: memref<64xf32>, %n: i32, %x: f32) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      %c8 = arith.constant 8 : i32
      %tidx = gpu.thread_id x
      %t = arith.index_cast %tidx : index to i32
      // 3 + 4 folds to 7; a uniform multiply is s_mul_i32
      %k = arith.addi %c3, %c4 : i32
      // CHECK: %[[U:.*]] = amdgcn.sop2 s_mul_i32 %{{.*}}, %[[N]], %c7
      %u = arith.muli %n, %k : i32
      // CHECK: %[[V:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c3, %workitem_id_x
      %v = arith.muli %t, %c8 : i32
      // CHECK: %[[W:.*]] = amdgcn.vop3 v_sub_u32 %{{.*}}, %[[V]], %[[U]]
      %w = arith.subi %v, %u : i32
      // CHECK: %[[D:.*]] = amdgcn.vop2 v_lshrrev_b32 %{{.*}}, %c3, %[[W]]
      %d = arith.divui %w, %c8 : i32
      // CHECK: %[[SIGN:.*]] = amdgcn.vop2 v_ashrrev_i32 %{{.*}}, %c31, %[[W]]
      // CHECK: %[[BIAS:.*]] = amdgcn.vop2 v_lshrrev_b32 %{{.*}}, %c30, %[[SIGN]]
      // CHECK: %[[SUM:.*]] = amdgcn.vop2 v_add_u32 %{{.*}}, %[[W]], %[[BIAS]]
      // CHECK: %[[Q:.*]] = amdgcn.vop2 v_ashrrev_i32 %{{.*}}, %c2, %[[SUM]]
      %q = arith.divsi %w, %c4 : i32
      // CHECK: %[[M:.*]] = amdgcn.vop2 v_max_i32 %{{.*}}, %[[Q]], %[[D]]
      %m = arith.maxsi %q, %d : i32
      // CHECK: amdgcn.sopc s_cmp_lt_i32 %[[N]], %c8
      // CHECK: %[[CU:.*]] = amdgcn.sop2 s_cselect_b32 %{{.*}}, %c1, %c0
      %cu = arith.cmpi slt, %n, %c8 : i32
      // per lane, the VGPR goes second: t < n is compared as n > t
      // CHECK: %[[VCC:.*]] = amdgcn.vopc v_cmp_gt_u32 %vcc, %[[N]], %workitem_id_x
      // CHECK: %[[CV:.*]] = amdgcn.vop3 v_cndmask_b32 %{{.*}}, %c0, %c1, %[[VCC]]
      %cv = arith.cmpi ult, %t, %n : i32
      // the select right after the comparison takes its VCC
      // CHECK-NOT: v_cmp_ne_u32
      // CHECK: %[[S:.*]] = amdgcn.vop2 v_cndmask_b32 %{{.*}}, %[[D]], %[[M]], %[[VCC]]
      %s = arith.select %cv, %m, %d : i32
      // CHECK: amdgcn.sopc s_cmp_lg_u32 %[[CU]], %c0
      // CHECK: %[[S2:.*]] = amdgcn.sop2 s_cselect_b32 %{{.*}}, %[[N]], %c3
      %s2 = arith.select %cu, %n, %c3 : i32
      // CHECK: %[[E:.*]] = amdgcn.vop3 v_add_u32 %{{.*}}, %[[S]], %[[S2]]
      %e = arith.addi %s, %s2 : i32
      // CHECK: %[[MASK:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c255
      // CHECK: %[[TR:.*]] = amdgcn.vop3 v_and_b32 %{{.*}}, %[[E]], %[[MASK]]
      %tr = arith.trunci %e : i32 to i8
      // CHECK: %[[HI8:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c24, %[[TR]]
      // CHECK: %[[EX:.*]] = amdgcn.vop2 v_ashrrev_i32 %{{.*}}, %c24, %[[HI8]]
      %ex = arith.extsi %tr : i8 to i32
      // CHECK: %[[OFF:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c2, %workitem_id_x
      // CHECK: amdgcn.mubuf buffer_store_dword %[[EX]], %[[OFF]], %[[OUT]], %c0 offen
      memref.store %ex, %out[%tidx] : memref<64xi32>
      // CHECK: %[[F:.*]] = amdgcn.vop1 v_cvt_f32_i32 %{{.*}}, %workitem_id_x
      %f = arith.sitofp %t : i32 to f32
      // CHECK: %[[A:.*]] = amdgcn.vop2 v_mul_f32 %{{.*}}, %[[X]], %[[F]]
      %a = arith.mulf %f, %x : f32
      // CHECK: %[[B:.*]] = amdgcn.vop2 v_add_f32 %{{.*}}, %[[A]], %[[F]]
      %b = arith.addf %a, %f : f32
      // CHECK: %[[RCP:.*]] = amdgcn.vop1 v_rcp_f32 %{{.*}}, %[[X]]
      // CHECK: %[[C:.*]] = amdgcn.vop2 v_mul_f32 %{{.*}}, %[[B]], %[[RCP]]
      %c = arith.divf %b, %x : f32
      // CHECK: %[[SIGNBIT:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c_m2147483648
      // CHECK: %[[G:.*]] = amdgcn.vop2 v_xor_b32 %{{.*}}, %[[SIGNBIT]], %[[C]]
      %g = arith.negf %c : f32
      // CHECK: %[[H:.*]] = amdgcn.vop1 v_cvt_f16_f32 %{{.*}}, %[[G]]
      %h = arith.truncf %g : f32 to f16
      // CHECK: %[[I:.*]] = amdgcn.vop1 v_cvt_f32_f16 %{{.*}}, %[[H]]
      %i = arith.extf %h : f16 to f32
      // x (an SGPR) < i is compared as x > i: VOPC takes the SGPR first
      // CHECK: %[[FVCC:.*]] = amdgcn.vopc v_cmp_gt_f32 %{{.*}}, %[[X]], %[[I]]
      // CHECK: %[[CF:.*]] = amdgcn.vop3 v_cndmask_b32 %{{.*}}, %c0, %c1, %[[FVCC]]
      %cf = arith.cmpf olt, %i, %x : f32
      %z = arith.constant 0.5 : f32
      // 0.5 (0x3f000000) is no inline integer: it is moved to a VGPR (v_cndmask reads VCC,
      // the one constant-bus read), the comparison's VCC selects
      // CHECK-NOT: v_cmp_ne_u32
      // CHECK: %[[HALF:.*]] = amdgcn.vop1 v_mov_b32 %{{.*}}, %c1056964608
      // CHECK-NOT: v_mov_b32
      // CHECK: %[[R:.*]] = amdgcn.vop2 v_cndmask_b32 %{{.*}}, %[[I]], %[[HALF]], %[[FVCC]]
      %r = arith.select %cf, %z, %i : f32
      // CHECK: amdgcn.mubuf buffer_store_dword %[[R]], %{{.*}}, %[[FOUT]], %c0 offen
      memref.store %r, %fout[%tidx] : memref<64xf32>
      // CHECK-NEXT: amdgcn.sopp s_endpgm
      gpu.return
    }
  }
}
