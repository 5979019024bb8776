"""vector.transfer_read/write (masks, in_bounds, permutation maps), vector.maskedload/store and
vector.create_mask on the emulator against NumPy (tests/upstream/transfer.mlir): out-of-bounds
and masked-out elements read the padding and are not written; plus the instructions chosen and
the located errors."""

from __future__ import annotations

import numpy as np
import pytest
from upstream_inputs import DIR, TARGETS

import asterism
from asterism import api
from asterism.errors import AsterismError

RNG = np.random.default_rng(27)
PAD = np.float32(-1)


def _code(source, target: str = "gfx942") -> bytes:
    module = api.parse(source, "t.mlir") if isinstance(source, str) else api.parse(source)
    api.retarget(module, target)
    return asterism.compile(module)


@pytest.mark.parametrize("target", TARGETS)
def test_transfers_read_padding_and_drop_writes_as_mlir_says(target):
    code = _code(DIR / "transfer.mlir", target)
    x = RNG.standard_normal((64, 6)).astype(np.float32)
    h = RNG.standard_normal((64, 6)).astype(np.float16)
    o = np.full((64, 8, 4), 99, np.float32)
    oh = np.zeros((64, 4), np.float16)
    w = np.full((64, 6), 7, np.float32)
    corner = np.zeros((4, 4), np.float32)
    asterism.launch(code, "transfer", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[x, h, o, oh, w, corner], backend="emu")
    lane, k = np.arange(64), np.arange(4)
    xp = np.concatenate([x, np.full((64, 8), PAD)], axis=1)  # columns past 5: padding
    xr = np.concatenate([x, np.full((4, 6), PAD)], axis=0)  # rows past 63: padding
    on = k[None, :] < np.minimum(lane & 7, 4)[:, None]  # create_mask (l & 7), clamped to 4
    passthru = np.array([10, 20, 30, 40], np.float32)
    want = np.stack([
        xp[:, 4:8],
        np.concatenate([x[:, 0:3], np.full((64, 1), PAD)], axis=1),
        x[:, 2:6],
        np.stack([xr[lane + j, 1] for j in k], axis=1),
        np.where(on, x[:, 2:6], 0),
        np.stack([xp[lane, (lane & 7) + j] for j in k], axis=1),
        np.where(on, xp[:, 1:5], passthru[None, :]),
        np.repeat(x[:, 3:4], 4, axis=1)], axis=1)
    np.testing.assert_array_equal(o, want)
    hp = np.concatenate([h, np.full((64, 4), 2, np.float16)], axis=1)
    np.testing.assert_array_equal(oh, hp[:, 4:8])
    want_corner = np.full((4, 4), PAD)
    want_corner[:2, :2] = x[62:64, 4:6]
    np.testing.assert_array_equal(corner, want_corner)
    want_w = np.full((64, 6), 7, np.float32)
    want_w[:, 4:6] = x[:, 4:6]  # columns 6, 7 fall outside: not written
    want_w[:, 0:3] = x[:, 2:5]  # the fourth element is masked out
    want_w[:, 3:6] = passthru[:3]  # maskedstore, mask 3 of 4
    np.testing.assert_array_equal(w, want_w)


def test_transfers_lower_to_wide_accesses_or_range_checked_elements():
    asm = api.translate(api.parse(DIR / "transfer.mlir"))
    # in bounds without a mask: one 16-byte load; a 2-D in-bounds write: a store per row
    assert asm.count("buffer_load_dwordx4") == 1 and asm.count("buffer_store_dwordx4") >= 4 + 8
    # a per-lane check replaces the offset by the buffer's size (1536 bytes) for the range
    # check; elements known outside are not loaded at all
    assert "v_cndmask_b32" in asm and "offen offset:12" in asm


def test_per_lane_select_of_an_sgpr_value():
    """arith.select with a per-lane condition and a uniform (SGPR) false value: VCC is the
    instruction's one constant-bus read, the SGPR goes to a VGPR (was an internal error:
    v_cndmask_b32 src0 expects a VGPR)."""
    text = """module {
  gpu.module @m {
    gpu.func @sel(%x: memref<64xf32>, %a: f32) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %zero = arith.constant 0.0 : f32
      %v = memref.load %x[%l] : memref<64xf32>
      %p = arith.cmpf ogt, %v, %zero : f32
      %r = arith.select %p, %v, %a : f32
      memref.store %r, %x[%l] : memref<64xf32>
      gpu.return
    }
  }
}
"""
    x = RNG.standard_normal(64).astype(np.float32)
    want = np.where(x > 0, x, np.float32(0.25))
    asterism.launch(_code(text), "sel", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[x, np.float32(0.25)], backend="emu")
    np.testing.assert_array_equal(x, want)


KERNEL = """module {{
  gpu.module @m {{
    gpu.func @k(%x: memref<64x6xf32>) workgroup(%s: memref<64xf32, #gpu.address_space<workgroup>>)
        kernel {{
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      %pad = arith.constant 0.0 : f32
{body}
      gpu.return
    }}
  }}
}}
"""


@pytest.mark.parametrize("body, message", [
    ("      %v = vector.transfer_read %s[%l], %pad : memref<64xf32, "
     "#gpu.address_space<workgroup>>, vector<4xf32>", "LDS has no range check"),
    ("      %m = vector.create_mask %c3 : vector<32xi1>",
     "a mask of more than 31 elements is not supported"),
    ("      %m = vector.create_mask %c3, %c3 : vector<4x2xi1>\n"
     "      %v = vector.transfer_read %x[%c0, %c0], %pad, %m {permutation_map = "
     "affine_map<(d0, d1) -> (d1, d0)>} : memref<64x6xf32>, vector<2x4xf32>",
     "a mask with a permutation map other than the minor identity"),
])
def test_transfers_asterism_cannot_lower_are_located_errors(body, message):
    with pytest.raises(AsterismError) as err:
        _code(KERNEL.format(body=body))
    assert message in err.value.message, err.value.message
    assert err.value.location is not None and err.value.location.file == "t.mlir"
    assert err.value.location.line >= 7
