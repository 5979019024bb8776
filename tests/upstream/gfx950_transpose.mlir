// gfx950 transposed LDS reads (amdgpu.transpose_load: ds_read_b64_tr_b16 / _b8).
module {
  gpu.module @m {
    gpu.func @transpose(%h: memref<256xi16>, %b: memref<512xi8>, %oh: memref<256xi16>, %ob: memref<512xi8>) workgroup(%lh: memref<256xi16, #gpu.address_space<workgroup>>, %lb: memref<512xi8, #gpu.address_space<workgroup>>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %ih = arith.muli %l, %c4 : index
      %ib = arith.muli %l, %c8 : index
      %vh = vector.load %h[%ih] : memref<256xi16>, vector<4xi16>
      vector.store %vh, %lh[%ih] : memref<256xi16, #gpu.address_space<workgroup>>, vector<4xi16>
      %vb = vector.load %b[%ib] : memref<512xi8>, vector<8xi8>
      vector.store %vb, %lb[%ib] : memref<512xi8, #gpu.address_space<workgroup>>, vector<8xi8>
      amdgpu.lds_barrier
      %th = amdgpu.transpose_load %lh[%ih] : memref<256xi16, #gpu.address_space<workgroup>> -> vector<4xi16>
      %tb = amdgpu.transpose_load %lb[%ib] : memref<512xi8, #gpu.address_space<workgroup>> -> vector<8xi8>
      vector.store %th, %oh[%ih] : memref<256xi16>, vector<4xi16>
      vector.store %tb, %ob[%ib] : memref<512xi8>, vector<8xi8>
      gpu.return
    }
  }
}
