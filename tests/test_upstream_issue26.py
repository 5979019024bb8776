"""Issue 26's checklist: one entry per item of its bug list and "Not supported" list, each a
kernel in tests/upstream/ written as mlir-opt-22 prints it (test_upstream_mlir_opt.py checks
that mlir-opt-22 parses every one and that its custom and generic forms give the same code
object), run on the emulator against NumPy. Where an item already had a test it is
referenced, not duplicated; `test_every_item_has_a_test` keeps this table honest.

| item | input | test |
|---|---|---|
| 2-D raw_buffer load/store/atomics, custom form | buffers_2d.mlir | test_upstream_ops::test_raw_buffer_ops_on_2d_memrefs_and_sgpr_offset_in_elements |
| sgprOffset counts elements | buffers_2d.mlir | test_upstream_ops::test_raw_buffer_ops_on_2d_memrefs_and_sgpr_offset_in_elements |
| cmpf ogt with 0.0 on the right | arith_vectors.mlir, issue26_fresh.mlir | test_upstream_ops::test_arith_on_vectors_and_cmpf_with_zero_on_the_right, test_fresh_kernel_of_vector_arith_atomics_and_shuffles |
| vector select, custom form | arith_vectors.mlir, issue26_fresh.mlir | test_upstream_ops::test_arith_on_vectors_and_cmpf_with_zero_on_the_right, test_fresh_kernel_of_vector_arith_atomics_and_shuffles |
| cmpf/negf on vectors, mulf on f16 vectors | arith_vectors.mlir, issue26_fresh.mlir | test_upstream_ops::test_arith_on_vectors_and_cmpf_with_zero_on_the_right, test_fresh_kernel_of_vector_arith_atomics_and_shuffles |
| vector.transfer_read/write | transfer.mlir | test_upstream_transfer::test_transfers_read_padding_and_drop_writes_as_mlir_says |
| vector.reduction | reduction.mlir | test_upstream_ops::test_vector_reduction_within_a_lane |
| gpu.shuffle | math_shuffle.mlir, issue26_fresh.mlir | test_upstream_ops::test_math_ops_and_gpu_shuffle |
| gpu.subgroup_reduce (beyond the list: the cross-lane reduction) | subgroup_reduce.mlir | test_upstream_ops::test_subgroup_reduce_over_the_wave_and_clusters |
| scf.while (uniform and per-lane conditions) | while.mlir, while_lanes.mlir | test_upstream_ops::test_scf_while_on_a_uniform_condition, test_upstream_ops::test_scf_while_on_a_per_lane_condition |
| cf.br/cond_br (per-lane loops too) | cf_branches.mlir, cf_lanes.mlir, cf_lane_loops.mlir, nested_lane_loops.mlir, cf_lane_break.mlir | test_upstream_cf::test_uniform_loop_and_branch_with_block_arguments, test_upstream_cf::test_per_lane_diamonds_and_triangle_under_exec_masking, test_upstream_cf::test_per_lane_loops_leave_lane_by_lane, test_upstream_cf::test_loops_inside_a_per_lane_branch, test_upstream_cf::test_a_break_leaves_a_per_lane_loop |
| math exp2/exp/log/rsqrt/sqrt/fma | math_shuffle.mlir | test_upstream_ops::test_math_ops_and_gpu_shuffle |
| memref.subview | subview.mlir | test_upstream_subview::test_subviews_fold_into_the_address |
| memref.atomic_rmw (instruction kinds) | atomic_rmw.mlir, atomic_rmw_wide.mlir | test_upstream_atomic_rmw::test_atomic_rmw_kinds_return_the_old_value |
| memref.atomic_rmw (compare-and-swap kinds), raw_buffer_atomic_fmax f32 | atomic_cas.mlir | test_upstream_atomic_rmw::test_cas_loop_kinds_match_the_sequential_reduction, test_upstream_gfx950::test_raw_buffer_atomic_fmax |
| dynamic shapes | dynamic.mlir | test_upstream_dynamic::test_dynamic_shapes_with_two_runtime_sizes_on_one_code_object |
| amdgpu.mfma negate flags | (generated, upstream_inputs.mfma_text) | test_upstream_mfma::test_f64_mfma_negate_flags |
| host code beside gpu.module | host_code.mlir | test_upstream_ops::test_host_code_beside_the_gpu_module_is_skipped_with_a_note |
"""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest
from upstream_inputs import DIR, TARGETS

import asterism
from asterism import api


def _table() -> list[tuple[str, list[str], list[str]]]:
    """(item, input files, test references) of the module docstring's table."""
    rows = []
    for line in (__doc__ or "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("item", "---") or not line.startswith("|"):
            continue
        rows.append((cells[0], re.findall(r"[\w]+\.mlir", cells[1]),
                     re.findall(r"(test_\w+)::(test_\w+)|\b(test_\w+)\b", cells[2])))
    return rows


def test_every_item_has_a_test():
    rows = _table()
    assert len(rows) == 18
    here = __import__(__name__)
    for item, files, refs in rows:
        assert refs, f"{item}: no test named"
        for name in files:
            assert (DIR / name).is_file(), f"{item}: no tests/upstream/{name}"
        for module, func, local in refs:
            if local:
                if local.startswith("test_upstream_"):
                    continue  # (a module name of a `module::test` already checked)
                assert hasattr(here, local), f"{item}: no test {local} here"
                continue
            assert hasattr(importlib.import_module(module), func), f"{item}: no {module}::{func}"


@pytest.mark.parametrize("target", TARGETS)
def test_fresh_kernel_of_vector_arith_atomics_and_shuffles(target):
    module = api.parse(DIR / "issue26_fresh.mlir")
    api.retarget(module, target)
    code = asterism.compile(module)
    rng = np.random.default_rng(26)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    o = np.zeros_like(x)
    h = rng.standard_normal((64, 8)).astype(np.float16)
    ho = np.zeros_like(h)
    acc = np.zeros((4, 16), np.int32)
    f = rng.standard_normal(64).astype(np.float32)
    f0 = f.copy()
    asterism.launch(code, "probe", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[x, o, h, ho, acc, f], backend="emu")
    r = np.where(x > 0, x, np.exp(x))
    np.testing.assert_allclose(o, np.where((x[:, 0] <= 0)[:, None], r, 0), rtol=1e-5)
    hf = (h.astype(np.float32) * h + h * h).astype(np.float16)
    np.testing.assert_allclose(ho.astype(np.float32), np.where(h >= 0, hf, h).astype(np.float32),
                               rtol=2e-3)
    want = np.zeros((4, 16), np.int32)
    want[:, 3] = 16  # lane % 4 picks the row: 16 lanes add 1 to each
    np.testing.assert_array_equal(acc, want)
    lanes = np.arange(64)
    seg = lanes // 16  # width 16: a source outside the lane's segment reads the lane itself
    xor = lanes ^ (lanes % 4)
    down = lanes + 3
    xor = np.where(xor // 16 == seg, xor, lanes)
    down = np.where(down // 16 == seg, down, lanes)
    np.testing.assert_allclose(f, f0[xor] + f0[down], rtol=1e-6)
