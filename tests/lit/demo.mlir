// The demo kernel lowers to 10 dependent v_add_u32 between the address math and the store.
// RUN: %asterism-ir --lower %repo/examples/demo/add_10.mlir | filecheck %s
// RUN: %python %repo/examples/demo/generate_add_10.py | diff - %repo/examples/demo/add_10.mlir
// RUN: %asterism-ir --roundtrip-mc %repo/examples/demo/add_10.mlir | %asterism-ir --lower - | filecheck %s

// CHECK-LABEL: add_10:
// CHECK-NEXT:    s_load_dwordx2 s[4:5], s[0:1], 0
// CHECK-NEXT:    v_lshl_add_u32 v1, s2, 6, v0
// CHECK-NEXT:    v_lshlrev_b32 v2, 2, v1
// CHECK-COUNT-10: v_add_u32 v1, 1, v1
// CHECK-NEXT:    s_waitcnt lgkmcnt(0)
// CHECK-NEXT:    global_store_dword v2, v1, s[4:5]
// CHECK-NEXT:    s_endpgm
