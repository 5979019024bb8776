"""memref.subview on the emulator against NumPy (tests/upstream/subview.mlir): static and
dynamic offsets, strides, a rank-reducing view, a view of a view, a transfer through a strided
view; the located errors for a vector.load across a strided dimension and for a dynamic
memref shape."""

from __future__ import annotations

import numpy as np
import pytest
from upstream_inputs import DIR, TARGETS

import asterism
from asterism import api
from asterism.errors import AsterismError


@pytest.mark.parametrize("target", TARGETS)
def test_subviews_fold_into_the_address(target):
    module = api.parse(DIR / "subview.mlir")
    api.retarget(module, target)
    code = asterism.compile(module)
    x = np.random.default_rng(28).standard_normal((64, 16)).astype(np.float32)
    o = np.zeros((64, 8), np.float32)
    asterism.launch(code, "subview", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[x, o, np.int64(5)], backend="emu")
    lane = np.arange(64)
    np.testing.assert_array_equal(o[:, 0], x[lane, 4 + 2 * 1])  # %a[l, 1]
    np.testing.assert_array_equal(o[:, 1], np.full(64, x[5, 3]))  # row %r = 5, column 3
    np.testing.assert_array_equal(o[:, 2], np.full(64, x[2 + 1, 4 + 2 * (1 + 2)]))
    want = np.full((64, 4), -1.0, np.float32)  # %a's columns 4, 5 (x's 12, 14), then padding
    want[:, :2] = x[:, [12, 14]]
    np.testing.assert_array_equal(o[:, 4:], want)


def test_vector_load_across_a_strided_dimension_is_a_located_error():
    text = """module {
  gpu.module @m {
    gpu.func @k(%x: memref<64x16xf32>) kernel {
      %c0 = arith.constant 0 : index
      %a = memref.subview %x[0, 0][64, 8][1, 2] : memref<64x16xf32> to memref<64x8xf32, strided<[16, 2]>>
      %v = vector.load %a[%c0, %c0] : memref<64x8xf32, strided<[16, 2]>>, vector<4xf32>
      gpu.return
    }
  }
}
"""
    with pytest.raises(AsterismError) as err:
        asterism.compile(api.parse(text, "s.mlir"))
    assert "vector.load: the memref's last dimension has stride 2" in err.value.message
    assert err.value.location.file == "s.mlir" and err.value.location.line == 6


def test_memref_dim_of_a_subview_is_the_views_size():
    text = """module {
  gpu.module @m {
    gpu.func @k(%a: memref<16x8xi32>, %o: memref<2xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %v = memref.subview %a[2, 1] [5, 3] [1, 1] : memref<16x8xi32> to memref<5x3xi32, strided<[8, 1], offset: 17>>
      %d0 = memref.dim %v, %c0 : memref<5x3xi32, strided<[8, 1], offset: 17>>
      %d1 = memref.dim %v, %c1 : memref<5x3xi32, strided<[8, 1], offset: 17>>
      %i0 = arith.index_cast %d0 : index to i32
      %i1 = arith.index_cast %d1 : index to i32
      memref.store %i0, %o[%c0] : memref<2xi32>
      memref.store %i1, %o[%c1] : memref<2xi32>
      gpu.return
    }
  }
}
"""
    o = np.zeros(2, np.int32)
    asterism.launch(asterism.compile(api.parse(text, "s.mlir")), "k", grid=(1, 1, 1),
                    block=(64, 1, 1), args=[np.zeros((16, 8), np.int32), o], backend="emu")
    assert o.tolist() == [5, 3]
