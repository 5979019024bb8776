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


def build_row_sum(target: str = "gfx942"):
    """out[t] = sum over r < n of x[r, t]: one row per iteration, n only known at launch."""
    kb = KernelBuilder("row_sum", target=target, workgroup_size=(64, 1, 1))
    px, po, cnt, off = _args(kb)
    acc = kb.v_mov_b32(None, 0)
    with kb.loop(0, cnt, 1, iter_args=[acc, off]) as loop:
        _i, (a, o) = loop
        v = kb.global_load_dword(None, o, px)
        loop.yield_(kb.v_add_f32(None, a, v), kb.v_add_u32(None, 256, o))
    kb.global_store_dword(off, loop.results[0], po)
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
    assert blocks[0].last_op.mnemonic_text == "s_cbranch_scc0"  # n may be 0: a guard
    live = KernelLiveness(kernel)
    # Around the back edge: the accumulator, the row offset, the counter, the bound, the
    # step and the buffer address are live into the body and out of it.
    into, out = live.live_in(blocks[1]), live.live_out(blocks[1])
    assert into == out
    kinds = sorted((c.kind, c.width) for c in into)
    assert kinds == [("s", 1), ("s", 1), ("s", 1), ("s", 2), ("s", 2), ("v", 1), ("v", 1),
                     ("v", 1)]


def test_constant_trip_count_has_no_guard():
    kb = KernelBuilder("k", workgroup_size=(64, 1, 1))
    acc = kb.v_mov_b32(None, 0)
    with kb.loop(0, 4, iter_args=[acc]) as loop:
        loop.yield_(kb.v_add_u32(None, 1, loop.args[0]))
    kb.s_endpgm()
    body = _asm_body(asterism.translate(kb.finish(), pipeline="auto"))
    assert body == ["v_mov_b32 v0, 0", "s_mov_b32 s0, 0", "s_mov_b32 s1, 4", "s_mov_b32 s2, 1",
                    ".Lk_bb1:", "v_add_u32 v0, 1, v0", "s_add_u32 s0, s0, s2",
                    "s_cmp_lt_i32 s0, s1", "s_cbranch_scc1 .Lk_bb1", "s_endpgm"]


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
    with pytest.warns(UserWarning, match="copy kept"):  # (the data of loads in flight)
        code = asterism.compile(parse_ir(text), pipeline="auto")
    asterism.launch(code, "three_stage", args=[x, out, n], block=(64, 1, 1), backend="emu")
    np.testing.assert_array_equal(out[:64 * n], 2 * x[:64 * n])


def test_three_stage_structure():
    # ASTER's scf-pipeline-three-stage: prologue section 0 = load(0); section 1 = load(1),
    # wait+compute(0); a kernel loop with the cross-stage values as iter_args (token, data,
    # address twice: it is used two stages later, computed value); epilogue section 1 =
    # wait+compute(N-1), store(N-2); section 2 = store(N-1). The trip count is known at
    # launch only: a guard runs the loop as written when it is shorter than 2.
    module = api.optimize(parse_ir(_three_stage_text()), "scf-pipeline")
    lines = [s.strip() for s in print_ir(module).splitlines()]
    guard = next(k for k, s in enumerate(lines) if s.startswith("scf.if"))
    kernel = next(k for k, s in enumerate(lines) if "scf.for" in s)
    end = next(k for k in range(kernel, len(lines)) if lines[k].startswith("scf.yield"))
    other = next(k for k, s in enumerate(lines) if s.startswith("} else {"))

    def kinds(part):
        return [w for s in part for w in ("global_load_dword", "amdgcn.wait", "v_add_f32",
                                          "global_store_dword") if w in s]
    assert kinds(lines[guard:kernel]) == ["global_load_dword", "global_load_dword",
                                          "amdgcn.wait", "v_add_f32"]
    assert "iter_args(" in lines[kernel] and lines[kernel].count(" = %") == 6  # iv + 5
    assert ("-> (!amdgcn.token, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr)"
            in lines[kernel])
    assert kinds(lines[kernel:end]) == ["global_load_dword", "amdgcn.wait", "v_add_f32",
                                        "global_store_dword"]
    assert kinds(lines[end:other]) == ["amdgcn.wait", "v_add_f32", "global_store_dword",
                                       "global_store_dword"]
    assert kinds(lines[other:]) == ["global_load_dword", "amdgcn.wait", "v_add_f32",
                                    "global_store_dword"]  # the loop as written
    assert not any("sched.stage" in s for s in lines[guard:other])


def test_stage_error_names_the_op():
    text = _three_stage_text().replace(
        "amdgcn.wait %tok {sched.stage = 1 : i32}", "amdgcn.wait %tok {sched.stage = 0 : i32}"
    ).replace("%px {sched.stage = 0 : i32}", "%px {sched.stage = 1 : i32}")
    with pytest.raises(VerifyError, match=r"amdgcn.wait: operand #0 is made in stage 1 .* "
                                          r"used here in stage 0"):
        api.optimize(parse_ir(text, "three.mlir"), "scf-pipeline")


def test_short_constant_loop_is_not_pipelined():
    text = _three_stage_text().replace("scf.for %i = %lo to %n step", "scf.for %i = %lo to "
                                       "%two step").replace(
        "%st = amdgcn.sop1", "%two = amdgcn.sop1 s_mov_b32 %s1, %c2 : (!amdgcn.sgpr, i32) -> "
        "!amdgcn.sgpr\n    %st = amdgcn.sop1")
    text = text.replace("%two = amdgcn.sop1 s_mov_b32 %s1", "%two = amdgcn.sop1 s_mov_b32 %s0")
    module = api.optimize(parse_ir(text), "scf-pipeline")
    printed = print_ir(module)
    assert printed.count("scf.for") == 1 and "scf.if" not in printed
    assert "sched.stage" not in printed


def test_three_stage_kernel_waits_for_the_previous_load_only():
    # In the kernel loop the stage-1 wait names the load issued one trip earlier; the load
    # of this trip is in flight: vmcnt(1) (a wait of 0 would serialize the pipeline).
    with pytest.warns(UserWarning, match="copy kept"):
        asm = asterism.translate(parse_ir(_three_stage_text()), pipeline="auto")
    body = _asm_body(asm)
    head = next(k for k, s in enumerate(body) if s.endswith("_bb2:"))
    loop = body[head + 1:next(k for k, s in enumerate(body) if s.startswith("s_cbranch_scc1"))]
    assert loop[2].startswith("global_load_dword") and loop[3] == "s_waitcnt vmcnt(1)"
    assert loop[4].startswith("v_add_f32")


GEMM_KLOOP = "tests/data/loops/gemm_kloop.mlir"


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_k_loop_in_stages_matches_numpy(target):
    # The K loop written as IR text with sched.stage: stage 0 loads the fragments of step
    # k, stage 1 multiplies those of step k-1 into the accumulator.
    from pathlib import Path

    text = (Path(__file__).parent.parent / GEMM_KLOOP).read_text()
    text = text.replace('"gfx942"', f'"{target}"')
    m = n = 32
    k = 128
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    with pytest.warns(UserWarning, match="copy kept"):
        code = asterism.compile(parse_ir(text), pipeline="auto")
    asterism.launch(code, "gemm_kloop", grid=(2, 2, 1), block=(64, 1, 1),
                    args=[a, np.ascontiguousarray(b.T), c], backend="emu")
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-3 * np.abs(want).max())
    # prologue: the loads of step 0; kernel: loads of step k, then the MFMA of step k-1
    # once only the two new loads are in flight; epilogue: the last MFMA.
    body = _asm_body(asterism.translate(parse_ir(text), pipeline="auto"))
    head = next(i for i, s in enumerate(body) if s.endswith("_bb1:"))
    loop = [s.split()[0] for s in body[head + 1:head + 7]]
    assert loop == ["global_load_dwordx2", "global_load_dwordx2", "v_add_u32", "v_add_u32",
                    "s_waitcnt", "v_mfma_f32_16x16x16_f16"]
    assert body[head + 5] == "s_waitcnt vmcnt(2)"
    assert sum(s.startswith("v_mfma") for s in body) == 2
    assert [s.split()[0] for s in body[:head]].count("global_load_dwordx2") == 2
