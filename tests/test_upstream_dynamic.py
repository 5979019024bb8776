"""Dynamic memref shapes (tests/upstream/dynamic.mlir): a memref argument with a `?` size is
MLIR's memref descriptor (allocated and aligned pointers, offset, sizes, strides: the default
convention of MLIR's gpu-to-rocdl lowering), `memref.dim` reads it, index arithmetic uses its
runtime strides, the buffer's range and the transfers' bounds checks (dynamic_transfer.mlir)
its runtime sizes; one code object runs on two sizes
against NumPy, with the descriptors packed from the arrays (API and `asterism run`)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from upstream_inputs import DIR, TARGETS

import asterism
from asterism import api
from asterism.errors import AsterismError
from asterism.runtime.kernargs import ArgumentError, describe_signature, pack_kernargs


def _code(target: str, name: str = "dynamic.mlir") -> bytes:
    module = api.parse(DIR / name)
    api.retarget(module, target)
    return asterism.compile(module)


def _meta() -> dict:
    """The metadata of kernel `dyn`."""
    obj, _ = api.load_code_object(_code("gfx942"))
    return next(k.metadata for k in obj.kernels if k.name == "dyn")


def _run_and_check(code: bytes, rows: int, n: int, mr: int, mc: int) -> None:
    rng = np.random.default_rng(rows)
    a = rng.standard_normal((rows, 128)).astype(np.float16)
    out = np.zeros_like(a)
    v = rng.standard_normal(n).astype(np.float32)
    v0 = v.copy()
    m = np.full((mr, mc), -1, np.int32)
    asterism.launch(code, "dyn", grid=(8, 1, 1), block=(64, 1, 1), args=[a, out, v, m],
                    backend="emu")
    np.testing.assert_array_equal(out, a * np.float16(2))
    np.testing.assert_array_equal(v, v0 + np.float32(rows))
    np.testing.assert_array_equal(m, np.arange(mr * mc, dtype=np.int32).reshape(mr, mc))


@pytest.mark.parametrize("target", TARGETS)
def test_dynamic_shapes_with_two_runtime_sizes_on_one_code_object(target):
    code = _code(target)
    _run_and_check(code, 3, 100, 2, 40)
    _run_and_check(code, 7, 300, 5, 64)


@pytest.mark.parametrize("target", TARGETS)
def test_transfers_check_bounds_against_runtime_sizes(target):
    code = _code(target, "dynamic_transfer.mlir")
    for (rows, cols), out_rows in (((5, 6), 4), ((70, 11), 66)):
        a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
        o = np.full((out_rows, 8), 7.0, np.float32)
        asterism.launch(code, "dyn_transfer", grid=(1, 1, 1), block=(64, 1, 1), args=[a, o],
                        backend="emu")
        want = np.full((out_rows, 8), -1.0, np.float32)  # the padding past a's end
        r, c = min(rows, out_rows), min(cols, 8)
        want[:r, :c] = a[:r, :c]
        want[64:] = 7.0  # (rows 64.. : no lane)
        np.testing.assert_array_equal(o, want)


def test_a_subview_of_a_dynamic_memref_keeps_its_runtime_range():
    code = _code("gfx942", "dynamic_subview.mlir")
    a = np.arange(48, dtype=np.float32).reshape(3, 16)
    for r in (0, 2, 3):  # row 3 is past the end: reads 0
        o = np.full(16, -1.0, np.float32)
        asterism.launch(code, "dyn_rows", grid=(1, 1, 1), block=(64, 1, 1),
                        args=[a, o, np.int64(r)], backend="emu")
        np.testing.assert_array_equal(o, a[r] if r < 3 else 0)


@pytest.mark.parametrize("target", TARGETS)
def test_raw_buffer_ops_and_fat_buffer_cast_on_dynamic_memrefs(target):
    code = _code(target, "dynamic_raw_buffer.mlir")
    lane = np.arange(64)
    for rows, cols, n in ((2, 40, 50), (3, 70, 64)):
        a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) + 1
        o = np.full(n, -1, np.float32)
        asterism.launch(code, "dyn_raw", grid=(1, 1, 1), block=(64, 1, 1), args=[a, o],
                        backend="emu")
        # the raw buffer ops address linearly (row 1 + lane, past a row's end into the next)
        # and read 0 past the whole memref's runtime size
        flat = np.concatenate([a.ravel(), np.zeros(cols + 64, np.float32)])
        np.testing.assert_array_equal(o, (flat[cols + lane] + flat[lane])[:n])


def test_descriptor_fields_are_kernel_arguments_in_mlirs_order():
    meta = _meta()
    args = [(a[".name"], a[".value_kind"], a[".offset"], a[".size"]) for a in meta[".args"]
            if not a[".value_kind"].startswith("hidden")]
    assert args[:7] == [("a", "global_buffer", 0, 8), ("a.aligned", "global_buffer", 8, 8),
                        ("a.offset", "by_value", 16, 8), ("a.size0", "by_value", 24, 8),
                        ("a.size1", "by_value", 32, 8), ("a.stride0", "by_value", 40, 8),
                        ("a.stride1", "by_value", 48, 8)]
    assert [a[0] for a in args[14:19]] == ["v", "v.aligned", "v.offset", "v.size0", "v.stride0"]
    # one user-level argument per memref; the fields packed from the array
    assert describe_signature(meta) == (
        "a: buffer half* (memref descriptor, rank 2), out: buffer half* (memref descriptor, "
        "rank 2), v: buffer float* (memref descriptor, rank 1), m: buffer int* (memref "
        "descriptor, rank 2)")
    a = np.zeros((3, 128), np.float16)
    packed = pack_kernargs(meta, [a, a.copy(), np.zeros(5, np.float32),
                                  np.zeros((2, 9), np.int32)], (1, 1, 1), (64, 1, 1))
    q = np.frombuffer(bytes(packed.segment[:208]), np.int64)
    assert q[2:7].tolist() == [0, 3, 128, 128, 1]  # a: offset, sizes, strides
    assert q[21:26].tolist() == [0, 2, 9, 9, 1]  # m: offset, sizes (2, 9), strides (9, 1)
    assert packed.buffers[0].aliases == (8,)
    packed.set_pointer(packed.buffers[0], 0x1234000)
    q = np.frombuffer(bytes(packed.segment[:16]), np.int64)
    assert q[0] == q[1] == 0x1234000  # allocated and aligned pointers: the same address


def test_an_array_of_the_wrong_rank_is_an_argument_error():
    code = _code("gfx942")
    with pytest.raises(ArgumentError, match=r"'a' is a rank-2 memref: expected a 2-D array, "
                                            r"got shape \(384,\)"):
        asterism.launch(code, "dyn", grid=(1, 1, 1), block=(64, 1, 1),
                        args=[np.zeros(384, np.float16), np.zeros((3, 128), np.float16),
                              np.zeros(4, np.float32), np.zeros((2, 2), np.int32)],
                        backend="emu")


@pytest.mark.parametrize("field, change, message", [
    ("a.size1", {".size": 4}, "argument 'a.size1' of the memref descriptor of 'a' is not an "
                              "8-byte field of the kernarg segment"),
    ("a.stride0", {".offset": 10**9}, "argument 'a.stride0' of the memref descriptor of 'a' "
                                      "is not an 8-byte field"),
    ("a.size1", {".name": "a.size7"}, "argument 'a.size7': 'a' has rank 2"),
])
def test_a_bad_descriptor_in_the_metadata_is_an_argument_error(field, change, message):
    # metadata from elsewhere: a field of the wrong size, outside the segment, past the rank
    meta = dict(_meta())
    meta[".args"] = [dict(a, **change) if a.get(".name") == field else a
                     for a in meta[".args"]]
    with pytest.raises(ArgumentError, match=message):
        pack_kernargs(meta, [np.zeros((1, 128), np.float16), np.zeros((1, 128), np.float16),
                             np.zeros(4, np.float32), np.zeros((2, 2), np.int32)],
                      (1, 1, 1), (64, 1, 1))


def test_asterism_run_packs_the_descriptors_from_the_array_shapes(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "asterism.cli", "run", str(DIR / "dynamic.mlir"), "--kernel",
         "dyn", "--grid", "4",
         "--arg", "a=rand:2x128:f16", "--arg", "out=zeros:2x128:f16", "--arg",
         "v=zeros:70:f32", "--arg", "m=zeros:3x5:i32", "--json"],
        capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    outputs = json.loads(res.stdout)["outputs"]
    assert np.array_equal(outputs["v"], np.full(70, 2.0))
    assert np.array_equal(outputs["m"], np.arange(15).reshape(3, 5))


def _kernel(body: str, args: str = "%a: memref<?xf32>, %m: memref<?x?xf32>") -> str:
    return f"""module {{
  gpu.module @m {{
    gpu.func @k({args}) kernel {{
      %c0 = arith.constant 0 : index
{body}
      gpu.return
    }}
  }}
}}
"""


@pytest.mark.parametrize("body, line, message", [
    ("      %w = memref.alloc(%c0) : memref<?xf32, 3>", 5,
     "memref.alloc: memref memref<?xf32, 3 : i64> has a dynamic size: only a kernel "
     "argument's sizes may be dynamic"),
    ("      %s = memref.subview %m[0, 0] [4, 1] [1, 1] : memref<?x?xf32> to memref<4xf32, "
     "strided<[?]>>", 5,
     "memref.subview: a subview of a memref with a dynamic stride is not supported yet"),
    ("      %p = arith.constant 0.0 : f32\n"
     "      %t = vector.transfer_read %m[%c0, %c0], %p {permutation_map = affine_map<(d0, d1) "
     "-> (d0)>} : memref<?x?xf32>, vector<4xf32>", 6,
     "vector.transfer_read: a vector dimension runs along a memref dimension whose stride is "
     "dynamic"),
    ("      %d = memref.dim %a, %c0 : memref<?xf32>\n"
     "      %e = memref.dim %a, %d : memref<?xf32>", 6,
     "memref.dim: the dimension must be a constant"),
])
def test_what_dynamic_shapes_do_not_support_yet_is_a_located_error(body, line, message):
    with pytest.raises(AsterismError) as err:
        asterism.compile(api.parse(_kernel(body), "d.mlir"))
    assert message in err.value.message
    assert err.value.location.file == "d.mlir" and err.value.location.line == line
