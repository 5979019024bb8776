"""`asterism raise --relocatable`: raised kernels re-allocated by `--pipeline auto` compute
what the original code objects compute (emulator, same inputs, and NumPy)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from asterism import api
from asterism.builder import KernelBuilder
from asterism.errors import ParseError
from asterism.ir import parse_ir, print_ir
from asterism.ir.relocate import parse_pinned
from asterism.mc.codeobject import read_code_object
from asterism.runtime import launch

REPO = Path(__file__).resolve().parents[1]


def _load(rel: str):
    spec = importlib.util.spec_from_file_location(rel.replace("/", "_")[:-3], REPO / rel)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _relocated(code: bytes, **flags) -> bytes:
    """raise --relocatable (through the IR text) -> compile --pipeline auto."""
    text = print_ir(api.raise_kernel(code, relocatable=True, **flags))
    return api.compile(parse_ir(text, "raised.mlir"), "auto")


def _run(code: bytes, kernel: str, grid, block, args: list) -> list:
    launch(code, kernel, grid=grid, block=block, args=args, backend="emu")
    return args


def _vgprs(code: bytes) -> int:
    return read_code_object(code).kernels[0].metadata[".vgpr_count"]


def test_demo_add_10() -> None:
    """The demo's hand-allocated kernel (v0..v2) needs 2 VGPRs once re-allocated: the value
    chain and the address; the results stay i + 10."""
    code = api.compile(api.parse((REPO / "examples/demo/add_10.mlir").read_text()))
    again = _relocated(code)
    want = np.arange(128, dtype=np.int32) + 10
    for c in (code, again):
        (out,) = _run(c, "add_10", (2, 1, 1), (64, 1, 1), [np.zeros(128, np.int32)])
        np.testing.assert_array_equal(out, want)
    assert (_vgprs(code), _vgprs(again)) == (3, 2)


def _gemm_args(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return [a, np.ascontiguousarray(b.T), np.zeros((m, n), np.float32)], \
        a.astype(np.float64) @ b.astype(np.float64)


EXAMPLES = {
    # name: (script, build args, pipeline, kernel, grid, block, args maker)
    "gemm": ("examples/gemm/gemm_f16.py", (64, 48, 32), "", "gemm_f16", (3, 4, 1), (64, 1, 1)),
    "vector_add": ("examples/vector_add/vector_add.py", (), "", "vector_add", (4, 1, 1),
                   (256, 1, 1)),
    "row_sum": ("examples/auto/row_sum.py", (32, 4), "auto", "row_sum", (2, 1, 1),
                (64, 1, 1)),
    "gemm_lds": ("examples/auto/gemm_lds_64x64.py", (128, 128, 128), "auto", "gemm_lds",
                 (2, 2, 1), (256, 1, 1)),
    "gemm_pieces": ("examples/auto/gemm_pieces.py", (64, 48, 32), "auto", "gemm_pieces",
                    (3, 4, 1), (64, 1, 1)),
}


def _example_args(name: str, rng):
    if name == "vector_add":
        a = rng.standard_normal(1000).astype(np.float32)
        b = rng.standard_normal(1000).astype(np.float32)
        return [a, b, np.zeros(1000, np.float32), 1000], a + b
    if name == "row_sum":
        x = rng.integers(0, 1 << 20, size=(128, 32), dtype=np.uint32)
        return [x, np.zeros(128, np.uint32)], x.sum(axis=1, dtype=np.uint32)
    if name == "gemm_lds":
        return _gemm_args(rng, 128, 128, 128)
    return _gemm_args(rng, 64, 48, 32)


@pytest.mark.parametrize("drop", [False, True], ids=["kept-waits", "dropped-waits-nops"])
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_relocated_compute_the_same(name, drop) -> None:
    """Each example kernel, compiled, raised relocatable and re-allocated by auto, gives the
    original's outputs bit for bit on the same inputs (and NumPy's)."""
    script, build_args, pipeline, kernel, grid, block = EXAMPLES[name]
    code = api.compile(_load(script).build(*build_args), pipeline)
    again = _relocated(code, drop_waits=drop, drop_nops=drop)
    outs = []
    for c in (code, again):
        args, want = _example_args(name, np.random.default_rng(1))
        _run(c, kernel, grid, block, args)
        out = args[-1] if name in ("row_sum",) else args[2]
        if out.dtype == np.float32 and want.dtype == np.float64:
            np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-3 * np.abs(want).max())
        else:
            np.testing.assert_array_equal(out, want)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_drop_waits_and_nops_remove_them() -> None:
    code = api.compile(_load("examples/gemm/gemm_f16.py").build(64, 48, 32))
    kept = print_ir(api.raise_kernel(code, relocatable=True))
    dropped = print_ir(api.raise_kernel(code, relocatable=True, drop_waits=True,
                                        drop_nops=True))
    assert "s_waitcnt" in kept and "s_nop" in kept
    assert "s_waitcnt" not in dropped and "s_nop" not in dropped


def test_keep_pinned() -> None:
    """Named registers stay fixed; the others become relocatable values."""
    code = api.compile(api.parse((REPO / "examples/demo/add_10.mlir").read_text()))
    text = print_ir(api.raise_kernel(code, relocatable=True, keep_pinned="v[1:1],s[4:5]"))
    assert "!amdgcn.vgpr<1>" in text and "!amdgcn.sgpr<[4:6]>" in text
    assert "!amdgcn.vgpr<2>" not in text and "amdgcn.alloca : !amdgcn.vgpr\n" in text
    (out,) = _run(api.compile(parse_ir(text), "auto"), "add_10", (1, 1, 1), (64, 1, 1),
                  [np.zeros(64, np.int32)])
    np.testing.assert_array_equal(out, np.arange(64) + 10)


def test_parse_pinned() -> None:
    assert parse_pinned("v[0:1], s4,a[2:3]") == {("v", 0), ("v", 1), ("s", 4), ("a", 2),
                                                 ("a", 3)}
    with pytest.raises(ParseError, match="'x3' is not a register"):
        parse_pinned("x3")


def _masked_write_kernel():
    """v1 = 7 in every lane, then 9 in lanes < 32 only (EXEC masked), stored per lane: the
    second write keeps the first one's value in the other lanes."""
    kb = KernelBuilder("masked", target="gfx942", workgroup_size=(64, 1, 1))
    out = kb.arg_buffer("out", "i32", access="write_only")
    kernarg, tid = kb.kernarg_ptr(), kb.workitem_id("x")
    kb.s_load_dwordx2(kb.s[4:6], kernarg, out)
    kb.v_lshlrev_b32(kb.v(2), 2, tid)
    kb.v_mov_b32(kb.v(1), 7)
    kb.v_cmp_gt_u32(kb.vcc, 32, tid)
    kb.s_and_saveexec_b64(kb.s[8:10], kb.vcc)
    kb.v_mov_b32(kb.v(1), 9)
    kb.s_or_b64(kb.exec, kb.exec, kb.s[8:10])
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_store_dword(kb.v(2), kb.v(1), kb.s[4:6])
    kb.s_endpgm()
    return kb.finish()


def test_masked_vector_write_keeps_the_other_lanes() -> None:
    """A vector write in a kernel that writes EXEC continues the register's value (the lanes
    it leaves keep the older one): re-allocation must not give it a fresh register."""
    code = api.compile(_masked_write_kernel())
    want = np.where(np.arange(64) < 32, 9, 7)
    for c in (code, _relocated(code)):
        (out,) = _run(c, "masked", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.int32)])
        np.testing.assert_array_equal(out, want)


def test_aiter_kernel_re_allocates(shared_data) -> None:
    """A hand-written AITER GEMM (writes s1 of the kernarg pair, reads the pair again;
    writes EXEC) raised relocatable goes through auto: its SGPRs are re-allocated into
    fewer than the original touches (s0..s57), its VGPR/AGPR registers stay where EXEC-masked
    writes pinned them."""
    from asterism.mc.kernel_abi import register_usage
    from asterism.mc.lossless import module_of_code_object

    path = shared_data / "codeobjects" / "aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co"
    before = register_usage(module_of_code_object(path).kernels[0].body)
    assert (before.vgprs, before.agprs, before.sgprs) == (44, 56, 58)
    again = api.lower(parse_ir(print_ir(api.raise_kernel(str(path), relocatable=True))),
                      "auto")
    after = register_usage(again.kernels[0].body)
    assert (after.vgprs, after.agprs) == (44, 56)
    assert after.sgprs < before.sgprs
