"""Op and attribute definitions of the upstream dialects asterism reads that xDSL lacks (or
defines in an older form): `gpu` and `rocdl` (gpu.py), extra `vector` ops (vector.py) and the
`amdgpu` dialect subset (amdgpu.py). The other dialects (arith, func, scf, memref, most of
vector) are xDSL's."""
