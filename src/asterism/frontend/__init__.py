"""The upstream-MLIR front end: kernels written in MLIR's `gpu`, `amdgpu`, `arith`, `vector`,
`memref`, `scf` and `func` dialects, read (`parse`, with the dialect subset asterism defines
in `dialects/`) and lowered to amdgcn IR by the `lower-upstream` pass (`lower`) through the
KernelBuilder, one handler module per source dialect (docs/upstream_mlir.md)."""
