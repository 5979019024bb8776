"""scf.for / scf.if in amdgcn kernels (asterism.ir.loops): the builder, the text round trip,
the lowering to blocks, liveness and waits across the back edge, results against NumPy on
the emulator, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import asterism
from asterism import api
from asterism.builder import KernelBuilder
from asterism.errors import AsterismError, VerifyError
from asterism.ir import parse_ir, print_ir
from asterism.ir.loop_lowering import lower_structured_module
from asterism.passes.liveness import KernelLiveness
from asterism.passes.machine import kernels_of

TARGETS = ("gfx942", "gfx950")


def _args(kb: KernelBuilder):
    x = kb.arg_buffer("x", "f32", access="read_only")
    out = kb.arg_buffer("out", "f32", access="write_only")
    n = kb.arg_value("n", "i32")
    kernarg, tid = kb.kernarg_ptr(), kb.workitem_id("x")
    px = kb.s_load_dwordx2(None, kernarg, x)
    po = kb.s_load_dwordx2(None, kernarg, out)
    cnt = kb.s_load_dword(None, kernarg, n)
    off = kb.v_lshlrev_b32(None, 2, tid)
    return px, po, cnt, off


def _sum_rows(kb, px, cnt, off):
    """The loop both row-sum kernels share: `cnt` rows of 64 floats summed per lane, the
    load offset carried as an iter_arg; its sum."""
    acc = kb.v_mov_b32(None, 0)
    with kb.loop(0, cnt, 1, iter_args=[acc, off]) as loop:
        _i, (a, o) = loop
        v = kb.global_load_dword(None, o, px)
        loop.yield_(kb.v_add_f32(None, a, v), kb.v_add_u32(None, 256, o))
    return loop.results[0]


def build_row_sum(target: str = "gfx942"):
    """out[t] = sum over r < n of x[r, t]: one row per iteration, n only known at launch."""
    kb = KernelBuilder("row_sum", target=target, workgroup_size=(64, 1, 1))
    px, po, cnt, off = _args(kb)
    kb.global_store_dword(off, _sum_rows(kb, px, cnt, off), po)
    kb.s_endpgm()
    return kb.finish()


def build_prefetch(target: str = "gfx942"):
    """The same sum, two rows per iteration with the next row's load in flight: the load
    token crosses the back edge (registers A and B alternate)."""
    kb = KernelBuilder("prefetch", target=target, workgroup_size=(64, 1, 1))
    px, po, cnt, off = _args(kb)
    A, B = kb.vreg(), kb.vreg()
    kb.global_load_dword(A, off, px)
    t0 = kb.last_token
    acc = kb.v_mov_b32(None, 0)
    with kb.loop(0, cnt, 2, iter_args=[acc, t0, off]) as loop:
        _i, (a, t, o) = loop
        kb.global_load_dword(B, o, px, offset=256)
        tb = kb.last_token
        kb.wait(t)  # the previous iteration's load of A
        a1 = kb.v_add_f32(None, a, A)
        o2 = kb.v_add_u32(None, 512, o)
        kb.global_load_dword(A, o2, px)
        ta = kb.last_token
        kb.wait(tb)
        loop.yield_(kb.v_add_f32(None, a1, B), ta, o2)
    kb.global_store_dword(off, loop.results[0], po)
    kb.s_endpgm()
    return kb.finish()


def _run(build, name: str, n: int, rows: int, target: str) -> np.ndarray:
    x = np.random.default_rng(n).standard_normal(64 * rows).astype(np.float32)
    out = np.zeros(64, np.float32)
    code = asterism.compile(build(target), pipeline="auto")
    asterism.launch(code, name, grid=(1, 1, 1), block=(64, 1, 1), args=[x, out, n],
                    backend="emu")
    return x, out


def _asm_body(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, s in enumerate(lines) if s.endswith(":") and not s.startswith("."))
    end = next(i for i, s in enumerate(lines) if "s_endpgm" in s)
    return [s.strip() for s in lines[start + 1:end + 1]]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 5])
def test_row_sum_loop_matches_numpy(target, n):
    x, out = _run(build_row_sum, "row_sum", n, max(n, 1), target)
    expected = x[:64 * n].reshape(n, 64).sum(0, dtype=np.float32) if n else np.zeros(64)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_prefetch_token_crosses_back_edge(target):
    n = 6
    x, out = _run(build_prefetch, "prefetch", n, n + 1, target)
    np.testing.assert_allclose(out, x[:64 * n].reshape(n, 64).sum(0, dtype=np.float32),
                               rtol=1e-6, atol=1e-6)


def test_prefetch_waits_are_exact():
    # Hand-computed: at each wait one load (the other buffer's) is still in flight, on the
    # first iteration (the prologue's load of A, then B) and around the back edge alike.
    body = _asm_body(asterism.translate(build_prefetch(), pipeline="auto"))
    waits = [s for s in body if s.startswith("s_waitcnt")]
    assert waits == ["s_waitcnt lgkmcnt(0)", "s_waitcnt vmcnt(1)", "s_waitcnt vmcnt(1)"]
    head = next(k for k, s in enumerate(body) if s.startswith(".L"))
    end = next(k for k, s in enumerate(body) if s.startswith("s_cbranch_scc1"))
    loop = [s.split()[0] for s in body[head + 1:end + 1]]
    assert loop == ["global_load_dword", "s_waitcnt", "v_add_f32", "v_add_u32",
                    "global_load_dword", "s_waitcnt", "v_add_f32", "s_add_u32",
                    "s_cmp_lt_i32", "s_cbranch_scc1"]
    assert body[end] == f"s_cbranch_scc1 {body[head][:-1]}"  # back to the loop's head


ONE_OP_TEXT = """
amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %p = amdgcn.alloca : !amdgcn.vgpr<[0:2]>
    %d = amdgcn.alloca : !amdgcn.vgpr<2>
    %e = amdgcn.alloca : !amdgcn.vgpr<3>
    %s0 = amdgcn.alloca : !amdgcn.sgpr
    %s1 = amdgcn.alloca : !amdgcn.sgpr
    %s2 = amdgcn.alloca : !amdgcn.sgpr
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %off = amdgcn.off
    %lo = amdgcn.sop1 s_mov_b32 %s0, %c0 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %hi = amdgcn.sop1 s_mov_b32 %s1, %c4 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %st = amdgcn.sop1 s_mov_b32 %s2, %c1 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %d0, %t0 = amdgcn.global global_load_dword %d, %p, %off : (!amdgcn.vgpr<2>, !amdgcn.vgpr<[0:2]>, !amdgcn.off) -> (!amdgcn.vgpr<2>, !amdgcn.token)
    %r = scf.for %i = %lo to %hi step %st iter_args(%t = %t0) -> (!amdgcn.token) : !amdgcn.sgpr {
      %e1, %t1 = amdgcn.global global_load_dword %e, %p, %off : (!amdgcn.vgpr<3>, !amdgcn.vgpr<[0:2]>, !amdgcn.off) -> (!amdgcn.vgpr<3>, !amdgcn.token)
      amdgcn.wait %t
      scf.yield %t1 : !amdgcn.token
    }
    amdgcn.wait %r
    amdgcn.sopp s_endpgm
  }
}
"""


def test_token_from_previous_iteration_of_the_same_load():
    # The body's load issues again before the wait on the previous iteration's token: that
    # instance is one load older, so vmcnt(1), not vmcnt(0). After the loop, the result
    # token is the last iteration's load: vmcnt(0).
    module = api.optimize(parse_ir(ONE_OP_TEXT), "waits")
    text = print_ir(module)
    assert "token_var" not in text and "token_set" not in text
    waits = [line.strip() for line in text.splitlines() if "s_waitcnt" in line]
    assert waits == ["amdgcn.sopp s_waitcnt vmcnt = 1", "amdgcn.sopp s_waitcnt vmcnt = 0"]


def test_round_trip_text():
    for build in (build_row_sum, build_prefetch):
        text = print_ir(build())
        assert "scf.for" in text
        assert print_ir(parse_ir(text)) == text


def test_lowered_form_and_liveness_across_back_edge():
    module = build_row_sum()
    lower_structured_module(module)
    (kernel,) = kernels_of(module)
    blocks = list(kernel.body.blocks)
    assert len(blocks) == 3  # entry (guard), body, exit
    branch = blocks[1].last_op
    assert branch.mnemonic_text == "s_cbranch_scc1" and branch.target is blocks[1]
    assert blocks[0].last_op.mnemonic_text == "s_cbranch_scc1"  # n may be < 1: a guard
    live = KernelLiveness(kernel)
    # Around the back edge: the accumulator, the row offset (and its first value, stored
    # after the loop), the trips left (the bound's register, counted down: nothing reads
    # the bound after the loop) and the buffer addresses are live into the body and out
    # of it; the step (a constant) is the subtraction's operand, in no register.
    into, out = live.live_in(blocks[1]), live.live_out(blocks[1])
    assert into == out
    kinds = sorted((c.kind, c.width) for c in into)
    assert kinds == [("s", 1), ("s", 2), ("s", 2), ("v", 1), ("v", 1), ("v", 1)]


def test_launch_time_bound_counts_down():
    # n known at launch, the counter read by no op, n by nothing after the loop: n's
    # register counts the trips left (no counter to set); guard n < 1.
    body = _asm_body(asterism.translate(build_row_sum(), pipeline="auto"))
    assert not any(s.startswith("s_mov_b32") for s in body)  # no counter to set
    start = body.index(".Lrow_sum_bb1:")
    assert body[start - 2:start] == ["s_cmp_lt_i32 s6, 1", "s_cbranch_scc1 .Lrow_sum_bb2"]
    end = body.index(".Lrow_sum_bb2:")
    assert body[end - 3:end] == ["s_sub_u32 s6, s6, 1", "s_cmp_lg_u32 s6, 0",
                                 "s_cbranch_scc1 .Lrow_sum_bb1"]


@pytest.mark.parametrize("n", [0, 3])
def test_bound_read_after_the_loop_counts_up(n):
    # out[t] = n + sum_r x[r, t]: n is read after the loop, so it keeps its value and a
    # counter of its own counts up to it.
    body = _asm_body(asterism.translate(build_sum_n(), pipeline="auto"))
    assert any(s.startswith("s_add_u32") for s in body) and \
        not any(s.startswith("s_sub_u32") for s in body)
    x = np.random.default_rng(4).standard_normal(64 * max(n, 1)).astype(np.float32)
    out = np.zeros(64, np.float32)
    asterism.launch(asterism.compile(build_sum_n(), pipeline="auto"), "sum_n",
                    args=[x, out, n], block=(64, 1, 1), backend="emu")
    rows = x[:64 * n].reshape(n, 64).sum(0, dtype=np.float32) if n else np.zeros(64)
    np.testing.assert_allclose(out, rows + n, rtol=1e-6, atol=1e-6)


def build_sum_n():
    """The kernel of test_bound_read_after_the_loop_counts_up."""
    kb = KernelBuilder("sum_n", target="gfx942", workgroup_size=(64, 1, 1))
    px, po, cnt, off = _args(kb)
    total = kb.v_add_f32(None, _sum_rows(kb, px, cnt, off), kb.v_cvt_f32_i32(None, cnt))
    kb.global_store_dword(off, total, po)
    kb.s_endpgm()
    return kb.finish()


def test_constant_trip_count_has_no_guard():
    kb = KernelBuilder("k", workgroup_size=(64, 1, 1))
    acc = kb.v_mov_b32(None, 0)
    with kb.loop(0, 4, iter_args=[acc]) as loop:
        loop.yield_(kb.v_add_u32(None, 1, loop.args[0]))
    kb.s_endpgm()
    body = _asm_body(asterism.translate(kb.finish(), pipeline="auto"))
    # (constant bound and step: operands of the compare and the add, no SGPR each)
    assert body == ["v_mov_b32 v0, 0", "s_mov_b32 s0, 0", ".Lk_bb1:", "v_add_u32 v0, 1, v0",
                    "s_add_u32 s0, s0, 1", "s_cmp_lt_i32 s0, 4", "s_cbranch_scc1 .Lk_bb1",
                    "s_endpgm"]


@pytest.mark.parametrize("target", TARGETS)
def test_if_and_nested_loops_match_numpy(target):
    # out[t] = sum_{r<n} (r odd ? 2 : 1) * sum_{c<3} x[r, c, t]
    kb = KernelBuilder("nest", target=target, workgroup_size=(64, 1, 1))
    px, po, cnt, off = _args(kb)
    acc = kb.v_mov_b32(None, 0)
    with kb.loop(0, cnt, 1, iter_args=[acc, off]) as outer:
        r, (a, o) = outer
        part = kb.v_mov_b32(None, 0)
        with kb.loop(0, 3, 1, iter_args=[part, o]) as inner:
            _c, (p, q) = inner
            v = kb.global_load_dword(None, q, px)
            inner.yield_(kb.v_add_f32(None, p, v), kb.v_add_u32(None, 256, q))
        odd = kb.s_and_b32(None, r, 1)
        br = kb.if_(odd, [kb.vreg().type])
        with br.then():
            br.yield_(kb.v_add_f32(None, inner.results[0], inner.results[0]))
        with br.otherwise():
            br.yield_(inner.results[0])
        outer.yield_(kb.v_add_f32(None, a, br.results[0]), inner.results[1])
    kb.global_store_dword(off, outer.results[0], po)
    kb.s_endpgm()
    module = kb.finish()
    n = 4
    x = np.random.default_rng(1).standard_normal(64 * 3 * n).astype(np.float32)
    out = np.zeros(64, np.float32)
    asterism.launch(asterism.compile(module, pipeline="auto"), "nest", args=[x, out, n],
                    block=(64, 1, 1), backend="emu")
    rows = x.reshape(n, 3, 64).sum(1, dtype=np.float32)
    expected = sum(rows[r] * (2 if r % 2 else 1) for r in range(n))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_loop_and_branches_in_one_kernel():
    # Hand-written unstructured control flow (EXEC mask and a label) around a loop.
    kb = KernelBuilder("mixed", workgroup_size=(64, 1, 1))
    px, po, cnt, off = _args(kb)
    tid = kb.workitem_id("x")
    kb.v_cmp_gt_u32(kb.vcc, 32, tid)  # lanes < 32 only
    kb.s_and_saveexec_b64(None, kb.vcc)
    done = kb.new_label("done")
    kb.s_cbranch_execz(done)
    acc = kb.v_mov_b32(None, 0)
    with kb.loop(0, cnt, 1, iter_args=[acc, off]) as loop:
        _i, (a, o) = loop
        v = kb.global_load_dword(None, o, px)
        loop.yield_(kb.v_add_f32(None, a, v), kb.v_add_u32(None, 256, o))
    kb.global_store_dword(off, loop.results[0], po)
    kb.place(done)
    kb.s_endpgm()
    n = 3
    x = np.random.default_rng(2).standard_normal(64 * n).astype(np.float32)
    out = np.full(64, -1, np.float32)
    asterism.launch(asterism.compile(kb.finish(), pipeline="auto"), "mixed",
                    args=[x, out, n], block=(64, 1, 1), backend="emu")
    expected = x.reshape(n, 64).sum(0, dtype=np.float32)
    np.testing.assert_allclose(out[:32], expected[:32], rtol=1e-6)


def test_empty_pipeline_lowers_fixed_register_loop():
    # A fixed accumulator; without a pipeline the counter has no register yet (an error
    # naming it), with regalloc the loop lowers (translate works on a copy of the input).
    text = """
amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %s0 = amdgcn.alloca : !amdgcn.sgpr
    %s1 = amdgcn.alloca : !amdgcn.sgpr
    %s2 = amdgcn.alloca : !amdgcn.sgpr
    %v = amdgcn.alloca : !amdgcn.vgpr<1>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %lo = amdgcn.sop1 s_mov_b32 %s0, %c0 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %hi = amdgcn.sop1 s_mov_b32 %s1, %c3 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %st = amdgcn.sop1 s_mov_b32 %s2, %c1 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %v0 = amdgcn.vop1 v_mov_b32 %v, %c0 : (!amdgcn.vgpr<1>, i32) -> !amdgcn.vgpr<1>
    %r = scf.for %i = %lo to %hi step %st iter_args(%a = %v0) -> (!amdgcn.vgpr<1>) : !amdgcn.sgpr {
      %n = amdgcn.vop2 v_add_u32 %a, %c1, %a : (!amdgcn.vgpr<1>, i32, !amdgcn.vgpr<1>) -> !amdgcn.vgpr<1>
      scf.yield %n : !amdgcn.vgpr<1>
    }
    amdgcn.sopp s_endpgm
  }
}
"""
    module = parse_ir(text)
    with pytest.raises(AsterismError, match="relocatable"):
        asterism.translate(module)  # the counter is relocatable: it needs regalloc
    asm = asterism.translate(parse_ir(text), pipeline="regalloc")
    body = _asm_body(asm)
    assert "v_add_u32 v1, 1, v1" in body and "s_cbranch_scc1" in " ".join(body)
    assert "scf.for" in print_ir(module)  # the input was not changed


@pytest.mark.parametrize("text, message", [
    ("scf.for %i = %c0 to %c4 step %c1 : i32 {\n }", "counts in one SGPR"),
    ("%r = scf.for %i = %lo to %hi step %st iter_args(%a = %v0) -> (!amdgcn.vgpr) "
     ": !amdgcn.sgpr {\n scf.yield\n }", "yields 0 values, expected 1"),
    ("scf.if %v0 : !amdgcn.vgpr {\n }", "branches on one SGPR"),
])
def test_bad_structured_ops(text, message):
    source = f"""
amdgcn.module @m target = "gfx942" {{
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {{
    %s0 = amdgcn.alloca : !amdgcn.sgpr
    %v = amdgcn.alloca : !amdgcn.vgpr
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %lo = amdgcn.sop1 s_mov_b32 %s0, %c0 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %hi = amdgcn.sop1 s_mov_b32 %s0, %c4 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %st = amdgcn.sop1 s_mov_b32 %s0, %c1 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %v0 = amdgcn.vop1 v_mov_b32 %v, %c0 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    {text}
    amdgcn.sopp s_endpgm
  }}
}}
"""
    with pytest.raises(AsterismError, match=message) as err:
        parse_ir(source, "bad.mlir")
    assert "bad.mlir:" in str(err.value)


def test_builder_errors():
    kb = KernelBuilder("k")
    acc = kb.v_mov_b32(None, 0)
    with pytest.raises(VerifyError, match="loop.yield_"):
        with kb.loop(0, 4, iter_args=[acc]):
            pass
    kb = KernelBuilder("k")
    with pytest.raises(VerifyError, match="labels and branches are not allowed"):
        with kb.loop(0, 4):
            kb.label("inside")
    with pytest.raises(VerifyError, match="an int or an SGPR"):
        with KernelBuilder("k").loop(0, 2.5):
            pass


# --- software pipelining (passes/stages.py) ----------------------------------------------------


def _compile_without_loop_copies(text: str, pipeline: str = "auto") -> bytes:
    """Compile IR text; no copy of a value carried around a loop may be left (the kernel
    loop rotates registers: modulo variable expansion)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = asterism.compile(parse_ir(text), pipeline=pipeline)
    kept = [str(w.message) for w in caught if "around a loop" in str(w.message)]
    assert not kept, kept
    return code

THREE_STAGE = "tests/data/loops/three_stage.mlir"


def _three_stage_text() -> str:
    from pathlib import Path

    return (Path(__file__).parent.parent / THREE_STAGE).read_text()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_three_stage_pipeline_matches_numpy(target, n):
    text = _three_stage_text().replace('"gfx942"', f'"{target}"')
    rows = max(n, 1)
    x = np.random.default_rng(n).standard_normal(64 * rows).astype(np.float32)
    out = np.zeros(64 * rows, np.float32)
    code = _compile_without_loop_copies(text)
    asterism.launch(code, "three_stage", args=[x, out, n], block=(64, 1, 1), backend="emu")
    np.testing.assert_array_equal(out[:64 * n], 2 * x[:64 * n])


def _kinds(ops) -> list:
    """The loads, waits, doublings and stores of `ops` in order; an scf.if as a tuple of its
    then and else kinds."""
    from asterism.ir.loops import KernelIfOp

    out: list = []
    for op in ops:
        if isinstance(op, KernelIfOp):
            out.append((_kinds(op.true_region.block.ops), _kinds(op.false_region.block.ops)))
            continue
        text = op.name + " " + getattr(op, "mnemonic_text", "")
        out += [w for w in ("global_load_dword", "amdgcn.wait", "v_add_f32",
                            "global_store_dword") if w in text]
    return out


def test_three_stage_structure():
    # ASTER's scf-pipeline-three-stage: prologue section 0 = load(0); section 1 = load(1),
    # wait+compute(0); the kernel with the cross-stage values as iter_args (token, data,
    # address twice: it is used two stages later, computed value); epilogue section 1 =
    # wait+compute(N-1), store(N-2); section 2 = store(N-1). The address lives 2 trips and
    # is read after the next one is made: 3 registers, so the kernel loop holds 3 trips,
    # and up to 2 more run after it (an scf.if each). The trip count is known at launch
    # only: a guard runs the loop as written when it is shorter than 2.
    from asterism.ir.loops import KernelForOp, KernelIfOp

    module = api.optimize(parse_ir(_three_stage_text()), "scf-pipeline")
    (kernel,) = kernels_of(module)
    (guard,) = [op for op in kernel.body.block.ops if isinstance(op, KernelIfOp)]
    ops = list(guard.true_region.block.ops)
    k = next(i for i, op in enumerate(ops) if isinstance(op, KernelForOp))
    loop = ops[k]
    trip = ["global_load_dword", "amdgcn.wait", "v_add_f32", "global_store_dword"]
    epilogue = ["amdgcn.wait", "v_add_f32", "global_store_dword", "global_store_dword"]
    assert _kinds(ops[:k]) == ["global_load_dword", "global_load_dword", "amdgcn.wait",
                               "v_add_f32"]
    assert _kinds(loop.body.block.ops) == trip * 3
    types = [str(t) for t in loop.body.block.arg_types]
    assert types == ["!amdgcn.sgpr", "!amdgcn.token"] + ["!amdgcn.vgpr"] * 4 + ["!amdgcn.sgpr"]
    assert _kinds(ops[k + 1:]) == [(trip + [(trip + epilogue, epilogue)], epilogue)]
    (plain,) = [op for op in guard.false_region.block.ops if isinstance(op, KernelForOp)]
    assert _kinds(plain.body.block.ops) == trip  # the loop as written
    assert "sched.stage" not in print_ir(guard)


def test_stage_error_names_the_op():
    text = _three_stage_text().replace(
        "amdgcn.wait %tok {sched.stage = 1 : i32}", "amdgcn.wait %tok {sched.stage = 0 : i32}"
    ).replace("%px {sched.stage = 0 : i32}", "%px {sched.stage = 1 : i32}")
    with pytest.raises(VerifyError, match=r"amdgcn.wait: operand #0 is made in stage 1 .* "
                                          r"used here in stage 0"):
        api.optimize(parse_ir(text, "three.mlir"), "scf-pipeline")


def _constant_three_stage(count: int) -> str:
    """The three-stage loop with the constant trip count `count`."""
    text = _three_stage_text().replace("scf.for %i = %lo to %n step", "scf.for %i = %lo to "
                                       "%cnt step")
    return text.replace("%st = amdgcn.sop1", f"%c{count}k = arith.constant {count} : i32\n"
                        f"    %cnt = amdgcn.sop1 s_mov_b32 %s0, %c{count}k : (!amdgcn.sgpr, "
                        "i32) -> !amdgcn.sgpr\n    %st = amdgcn.sop1")


def test_short_constant_loop_is_not_pipelined():
    module = api.optimize(parse_ir(_constant_three_stage(1)), "scf-pipeline")
    printed = print_ir(module)
    assert printed.count("scf.for") == 1 and "scf.if" not in printed
    assert "sched.stage" not in printed


@pytest.mark.parametrize("count, loop", [(2, False), (4, False), (5, True), (9, True)])
def test_constant_trip_counts(count, loop):
    # Constant bounds: no guard, and the trips the unrolled kernel loop (3 per trip) does not
    # cover run straight after it: 2 = prologue and epilogue only, 4 = two kernel trips and
    # no loop, 5 = one loop trip, 9 = two loop trips and one more.
    text = _constant_three_stage(count)
    module = api.optimize(parse_ir(text), "scf-pipeline")
    printed = print_ir(module)
    assert printed.count("scf.for") == int(loop) and "scf.if" not in printed
    assert printed.count("global_load_dword") == min(count, 2 + 3 * loop + (count - 2) % 3)
    rows = count
    x = np.random.default_rng(count).standard_normal(64 * rows).astype(np.float32)
    out = np.zeros(64 * rows, np.float32)
    code = _compile_without_loop_copies(text)
    asterism.launch(code, "three_stage", args=[x, out, 0], block=(64, 1, 1), backend="emu")
    np.testing.assert_array_equal(out, 2 * x)


def test_three_stage_kernel_waits_for_the_previous_load_only():
    # In the kernel loop each stage-1 wait names the load issued one trip earlier; the load
    # of this trip is in flight (and, after the first trip of the loop's body, the store
    # issued between them: vmcnt counts stores). Hand-computed: vmcnt(1) on entry from
    # the prologue (the smaller count of the two ways in), then vmcnt(2) twice; never 0,
    # which would serialize the pipeline, and no copy on the back edge.
    asm = asterism.translate(parse_ir(_three_stage_text()), pipeline="auto")
    body = _asm_body(asm)
    head, end = _kernel_loop(body)
    loop = body[head + 1:end]
    assert [s for s in loop if s.startswith("s_waitcnt")] == [
        "s_waitcnt vmcnt(1)", "s_waitcnt vmcnt(2)", "s_waitcnt vmcnt(2)"]
    ops = [s.split()[0] for s in loop]
    assert ops.count("global_load_dword") == 3 and ops.count("global_store_dword") == 3
    assert not any(o.startswith(("v_mov", "s_mov")) for o in ops)


GEMM_KLOOP = "tests/data/loops/gemm_kloop.mlir"


def _gemm_kloop_text(target: str = "gfx942", k: int = 128) -> str:
    from pathlib import Path

    text = (Path(__file__).parent.parent / GEMM_KLOOP).read_text()
    text = text.replace('"gfx942"', f'"{target}"')
    # K (the row stride of A and B^T) and its steps of 16 (the trip count)
    return text.replace("%c128 = arith.constant 128", f"%c128 = arith.constant {k}").replace(
        "%c8 = arith.constant 8", f"%c8 = arith.constant {k // 16}")


@pytest.mark.parametrize("target, k", [("gfx942", 128), ("gfx950", 128), ("gfx942", 144),
                                       ("gfx942", 32), ("gfx942", 16)])
def test_gemm_k_loop_in_stages_matches_numpy(target, k):
    # The K loop written as IR text with sched.stage: stage 0 loads the fragments of step
    # k, stage 1 multiplies those of step k-1 into the accumulator. 128: 7 kernel trips
    # (3 of the loop unrolled by 2 and one more), 144: 8 (4, none more), 32: one (no loop),
    # 16: too short to pipeline.
    m = n = 32
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    code = _compile_without_loop_copies(_gemm_kloop_text(target, k))
    asterism.launch(code, "gemm_kloop", grid=(2, 2, 1), block=(64, 1, 1),
                    args=[a, np.ascontiguousarray(b.T), c], backend="emu")
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-3 * np.abs(want).max())


def _kernel_loop(body: list[str]) -> tuple[int, int]:
    """The first and last line of the (first) kernel loop in assembly lines."""
    end = next(k for k, s in enumerate(body) if s.startswith("s_cbranch_scc1"))
    label = body[end].split()[1] + ":"
    return body.index(label), end


def test_gemm_k_loop_rotates_registers():
    # Modulo variable expansion: the fragments loaded in one trip are multiplied in the
    # next, so the kernel loop holds two trips with their own fragment registers: no copy
    # on the back edge, and each MFMA waits for its own fragments only (the two loads just
    # issued stay in flight: vmcnt(2), hand-computed). Prologue: the loads of step 0;
    # 7 kernel trips = the loop (3 x 2) and one more; then the last MFMA.
    body = _asm_body(asterism.translate(parse_ir(_gemm_kloop_text()), pipeline="auto"))
    head, end = _kernel_loop(body)
    loop = [s.split()[0] for s in body[head + 1:end + 1]]
    trip = ["global_load_dwordx2", "global_load_dwordx2", "v_add_u32", "v_add_u32",
            "s_waitcnt", "v_mfma_f32_16x16x16_f16"]
    assert loop == trip + trip + ["s_add_u32", "s_cmp_lt_i32", "s_cbranch_scc1"]
    assert [s for s in body[head:end] if s.startswith("s_waitcnt")] == ["s_waitcnt vmcnt(2)"] * 2
    assert not any(s.startswith(("v_mov", "s_mov")) for s in body[head:end])
    assert [s.split()[0] for s in body[:head]].count("global_load_dwordx2") == 2
    after = [s.split()[0] for s in body[end + 1:]]
    assert after[:len(trip)] == trip and after.count("v_mfma_f32_16x16x16_f16") == 2
    assert sum(s.startswith("v_mfma") for s in body) == 4
    # without rotation: one trip per loop trip, the fragments copied on the back edge
    # after waiting for them (the limit this removes)
    with pytest.warns(UserWarning, match="copy kept"):
        plain = _asm_body(asterism.translate(parse_ir(_gemm_kloop_text()),
                                             pipeline="scf-pipeline{rotate=0},auto"))
    head, end = _kernel_loop(plain)
    assert "s_waitcnt vmcnt(0)" in plain[head:end]
    assert sum(s.startswith("v_mov_b64") for s in plain[head:end]) == 2


def build_counter(target: str = "gfx942"):
    """out[t] = the counter after `for i = 0 to n step 3`, carried as an iter_arg that
    counts as the loop does (initial value the lower bound, next value i + step)."""
    kb = KernelBuilder("counter", target=target, workgroup_size=(64, 1, 1))
    _px, po, cnt, off = _args(kb)
    lo, st = kb.s_mov_b32(None, 0), kb.s_mov_b32(None, 3)
    with kb.loop(lo, cnt, st, iter_args=[lo]) as loop:
        _i, (c,) = loop
        loop.yield_(kb.s_add_u32(None, c, st))
    kb.global_store_dword(off, kb.v_mov_b32(None, loop.results[0]), po)
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("n, final", [(0, 0), (-4, 0), (1, 3), (7, 9), (9, 9)])
def test_counter_iter_arg_is_the_loop_counter(n, final):
    # Hand-computed: the counter's value when the loop exits (the lower bound when it does
    # not run). The lowering gives the iter_arg the counter's register: one s_add_u32 in
    # the loop, none of its own.
    out = np.full(64, -1, np.float32)  # (the bits of an i32)
    code = asterism.compile(build_counter(), pipeline="auto")
    asterism.launch(code, "counter", args=[np.zeros(64, np.float32), out, n],
                    block=(64, 1, 1), backend="emu")
    assert (out.view(np.int32) == final).all()
    body = _asm_body(asterism.translate(build_counter(), pipeline="auto"))
    head, end = _kernel_loop(body)
    assert [s.split()[0] for s in body[head + 1:end + 1]] == [
        "s_add_u32", "s_cmp_lt_i32", "s_cbranch_scc1"]


def _three_stage_counter_text() -> str:
    """The three-stage loop with the store's address made in stage 2 from the counter (the
    epilogue reads the counter of the last iterations)."""
    text = _three_stage_text()
    return text.replace(
        "      %w = amdgcn.global global_store_dword %addr,",
        "      %rowb2 = amdgcn.sop2 s_lshl_b32 %sa, %i, %c8 {sched.stage = 2 : i32} : "
        "(!amdgcn.sgpr, !amdgcn.sgpr, i32) -> !amdgcn.sgpr\n"
        "      %addr2 = amdgcn.vop2 v_add_u32 %va, %rowb2, %toff {sched.stage = 2 : i32} : "
        "(!amdgcn.vgpr, !amdgcn.sgpr, !amdgcn.vgpr) -> !amdgcn.vgpr\n"
        "      %w = amdgcn.global global_store_dword %addr2,")


@pytest.mark.parametrize("n", [0, 2, 3, 4, 5, 6])
def test_epilogue_reads_the_counter(n):
    # Each stage sees its own iteration's counter, in the epilogue too (counted back from
    # the counter's final value: the left-over trips run after the loop).
    text = _three_stage_counter_text()
    assert "%addr2" in text
    rows = max(n, 1)
    x = np.random.default_rng(n).standard_normal(64 * rows).astype(np.float32)
    out = np.zeros(64 * rows, np.float32)
    code = _compile_without_loop_copies(text)
    asterism.launch(code, "three_stage", args=[x, out, n], block=(64, 1, 1), backend="emu")
    np.testing.assert_array_equal(out[:64 * n], 2 * x[:64 * n])


def _three_stage_with_carried(yielded: str) -> str:
    """The three-stage loop with one more iter_arg (a VGPR, initial value %toff) that
    yields `yielded`."""
    text = _three_stage_text()
    text = text.replace("scf.for %i = %lo to %n step %st : !amdgcn.sgpr {",
                        "%r = scf.for %i = %lo to %n step %st iter_args(%c = %toff) -> "
                        "(!amdgcn.vgpr) : !amdgcn.sgpr {")
    return text.replace(
        "(!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.sgpr<[? + 2]>) -> !amdgcn.token\n    }",
        "(!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.sgpr<[? + 2]>) -> !amdgcn.token\n"
        f"      scf.yield {yielded} : !amdgcn.vgpr\n    }}")


def test_yield_of_a_value_from_outside_the_loop():
    # An iter_arg whose next value comes from outside the loop: the loop pipelines (before
    # the fix: "yields a value not made by an instruction of the loop body").
    text = _three_stage_with_carried("%toff")
    assert "scf.yield %toff" in text
    module = api.optimize(parse_ir(text), "scf-pipeline")
    assert "scf.if" in print_ir(module)  # (the guard of the pipelined form)
    n = 5
    x = np.random.default_rng(n).standard_normal(64 * n).astype(np.float32)
    out = np.zeros(64 * n, np.float32)
    with pytest.warns(UserWarning, match="copy kept"):  # (in the loop as written)
        code = asterism.compile(parse_ir(text), pipeline="auto")
    asterism.launch(code, "three_stage", args=[x, out, n], block=(64, 1, 1), backend="emu")
    np.testing.assert_array_equal(out, 2 * x)


def test_yield_of_a_carried_argument_is_a_located_error():
    with pytest.raises(VerifyError, match=r"three.mlir:\d+:\d+: .*iter_arg #0 yields the "
                                          r"loop-carried argument #0"):
        api.optimize(parse_ir(_three_stage_with_carried("%c"), "three.mlir"), "scf-pipeline")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shift", [0.0, -100.0])
def test_if_on_vcc_inside_a_loop(target, shift):
    # out[t] = sum_r y_r[t], y_r = 2 x_r when some lane of row r is above 0 (vcc not zero),
    # else x_r: scf.if on vcc is tested by s_cbranch_vccz itself (no compare of an SGPR).
    module = build_vcc_if(target)
    assert "scf.if %" in print_ir(module) and "!amdgcn.special<vcc>" in print_ir(module)
    assert print_ir(parse_ir(print_ir(module))) == print_ir(module)
    body = _asm_body(asterism.translate(module, pipeline="auto"))
    at = next(k for k, s in enumerate(body) if s.startswith("s_cbranch_vccz"))
    assert body[at - 1].startswith("v_cmp_lt_f32")  # the branch tests vcc itself
    n = 3
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(64 * n) + np.repeat([shift, 0.0, shift], 64)).astype(np.float32)
    x[64:128] = -np.abs(x[64:128])  # row 1: no lane above 0, never doubled
    out = np.zeros(64, np.float32)
    asterism.launch(asterism.compile(build_vcc_if(target), pipeline="auto"), "vcc_if",
                    args=[x, out, n], block=(64, 1, 1), backend="emu")
    rows = x.reshape(n, 64)
    expected = sum(rows[r] * (2 if (rows[r] > 0).any() else 1) for r in range(n))
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def build_vcc_if(target: str):
    """The kernel of test_if_on_vcc_inside_a_loop."""
    kb = KernelBuilder("vcc_if", target=target, workgroup_size=(64, 1, 1))
    px, po, cnt, off = _args(kb)
    acc = kb.v_mov_b32(None, 0)
    with kb.loop(0, cnt, 1, iter_args=[acc, off]) as loop:
        _i, (a, o) = loop
        v = kb.global_load_dword(None, o, px)
        kb.v_cmp_lt_f32(kb.vcc, 0.0, v)
        br = kb.if_(kb.vcc, [kb.vreg().type])
        with br.then():
            br.yield_(kb.v_add_f32(None, v, v))
        with br.otherwise():
            br.yield_(v)
        loop.yield_(kb.v_add_f32(None, a, br.results[0]), kb.v_add_u32(None, 256, o))
    kb.global_store_dword(off, loop.results[0], po)
    kb.s_endpgm()
    return kb.finish()
