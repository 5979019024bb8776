// lower-upstream, scf dialect: scf.for with constant and with argument bounds (a scalar
// counter, the test at the bottom; a guard first when the trip count is unknown), loop-carried
// values in registers the body writes in place (an f32 accumulator in a VGPR, a uniform index
// in an SGPR), scf.if on a uniform condition (branches) and on a per-lane one (EXEC masked by
// s_and_saveexec_b64, both arms in order, EXEC restored).
// RUN: %python -m asterism.cli opt %s --pipeline lower-upstream | filecheck %s

module attributes {gpu.container_module} {
  gpu.module @m {
    // CHECK-LABEL: amdgcn.kernel @loops
    // CHECK: %[[N:.*]], %{{.*}} = amdgcn.smem s_load_dwordx2 %{{.*}}, %kernarg_ptr, %n_offset
    // CHECK: %[[NLO:[^,]*]], %{{.*}} = amdgcn.split_register_range %[[N]] :
    // CHECK: %[[SRC:.*]] = amdgcn.make_register_range
    // CHECK: %[[OUT:.*]] = amdgcn.make_register_range
    gpu.func @loops(%src: memref<64x16xf32>, %out: memref<64xf32>, %n: index) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      // the iter registers get their initial values, then the counter starts at 0
      // CHECK: amdgcn.vop1 v_mov_b32 %[[ACC:[^,]+]], %c0
      // CHECK: amdgcn.sop1 s_mov_b32 %[[K:[^,]+]], %c0
      // CHECK: %[[J:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %c0
      // 16 trips are known: no guard before the body
      // CHECK: amdgcn.fallthrough ^for_body
      // CHECK: ^for_body:
      %sum, %cnt = scf.for %j = %c0 to %c16 step %c1 iter_args(%acc = %zero, %k = %c0) -> (f32, index) {
        // CHECK: %[[ROW:.*]] = amdgcn.vop2 v_lshlrev_b32 %{{.*}}, %c6, %workitem_id_x
        // CHECK: %[[COL:.*]] = amdgcn.sop2 s_lshl_b32 %{{.*}}, %[[J]], %c2
        // CHECK: %[[ADDR:.*]] = amdgcn.vop3 v_add_u32 %{{.*}}, %[[ROW]], %[[COL]]
        // CHECK: %[[X:.*]], %{{.*}} = amdgcn.mubuf buffer_load_dword %{{.*}}, %[[ADDR]], %[[SRC]], %{{.*}} offen
        %x = memref.load %src[%tid, %j] : memref<64x16xf32>
        // the accumulator and the count are updated in place
        // CHECK: amdgcn.vop2 v_add_f32 %[[ACC]], %[[ACC]], %[[X]]
        %acc2 = arith.addf %acc, %x : f32
        // CHECK: amdgcn.sop2 s_add_u32 %[[K]], %[[K]], %c1
        %k2 = arith.addi %k, %c1 : index
        scf.yield %acc2, %k2 : f32, index
      }
      // CHECK: amdgcn.sop2 s_add_u32 %[[J]], %[[J]], %c1
      // CHECK: amdgcn.sopc s_cmp_lt_i32 %[[J]], %c16
      // CHECK: amdgcn.branch s_cbranch_scc1 ^for_body fallthrough
      // CHECK: ^for_end:

      // argument bounds: a guard skips the loop when it has no trip
      // CHECK: amdgcn.vop1 v_mov_b32 %[[A:[^,]+]], %[[ACC]]
      // CHECK: %[[J2:.*]] = amdgcn.sop1 s_mov_b32 %{{.*}}, %{{c0.*}}
      // CHECK: amdgcn.sopc s_cmp_lt_i32 %[[J2]], %[[NLO]]
      // CHECK: amdgcn.branch s_cbranch_scc0 ^for_end1
      // CHECK: ^for_body1:
      %m = scf.for %j = %c0 to %n step %c1 iter_args(%a = %sum) -> (f32) {
        // CHECK: amdgcn.vop2 v_mul_f32 %[[A]], %[[A]], %[[A]]
        %a2 = arith.mulf %a, %a : f32
        scf.yield %a2 : f32
      }
      // CHECK: amdgcn.sop2 s_add_u32 %[[J2]], %[[J2]], %{{c1.*}}
      // CHECK: amdgcn.sopc s_cmp_lt_i32 %[[J2]], %[[NLO]]
      // CHECK: amdgcn.branch s_cbranch_scc1 ^for_body1 fallthrough
      // CHECK: ^for_end1:

      // CHECK: amdgcn.sopc s_cmp_gt_u32 %[[NLO]], %{{c16.*}}
      // CHECK: amdgcn.sop2 s_cselect_b32
      %big = arith.cmpi ugt, %n, %c16 : index
      // a uniform condition: branches around the arms on the comparison's SCC, the result in
      // a VGPR (f32)
      // CHECK: %[[R:.*]] = amdgcn.alloca : !amdgcn.vgpr
      // CHECK-NEXT: amdgcn.branch s_cbranch_scc0 ^if_else fallthrough
      // CHECK: amdgcn.vop1 v_mov_b32 %[[R]], %[[A]]
      // CHECK: amdgcn.branch s_branch ^if_end
      // CHECK: ^if_else:
      // CHECK: amdgcn.vop1 v_mov_b32 %[[R]], %{{c0.*}}
      // CHECK: amdgcn.fallthrough ^if_end
      // CHECK: ^if_end:
      %r = scf.if %big -> (f32) {
        scf.yield %m : f32
      } else {
        scf.yield %zero : f32
      }
      %odd = arith.andi %tid, %c1 : index
      %lane_odd = arith.cmpi ne, %odd, %c0 : index
      // a per-lane condition: EXEC masking by the comparison's VCC, no branch
      // CHECK: %[[VCC:.*]] = amdgcn.vopc v_cmp_ne_u32
      // CHECK: %[[COND:.*]] = amdgcn.vop3 v_cndmask_b32 %{{.*}}, %[[VCC]]
      // CHECK: %[[R2:.*]] = amdgcn.alloca : !amdgcn.vgpr
      // CHECK-NOT: v_cmp
      // CHECK: %[[SAVED:.*]] = amdgcn.sop1 s_and_saveexec_b64 %{{.*}}, %[[VCC]]
      // CHECK: %[[NEG:.*]] = amdgcn.vop2 v_xor_b32 %{{.*}}, %{{.*}}, %[[R]]
      // CHECK: amdgcn.vop1 v_mov_b32 %[[R2]], %[[NEG]]
      // CHECK: %[[EXEC:.*]] = amdgcn.sop2 s_xor_b64 %exec, %[[SAVED]], %exec
      // CHECK: amdgcn.vop1 v_mov_b32 %[[R2]], %[[R]]
      // CHECK: amdgcn.sop2 s_or_b64 %[[EXEC]], %[[EXEC]], %[[SAVED]]
      %r2 = scf.if %lane_odd -> (f32) {
        %neg = arith.negf %r : f32
        scf.yield %neg : f32
      } else {
        scf.yield %r : f32
      }
      // CHECK: amdgcn.mubuf buffer_store_dword %[[R2]], %{{.*}}, %[[OUT]], %{{.*}} offen
      memref.store %r2, %out[%tid] : memref<64xf32>
      gpu.return
    }
  }
}
