"""Several-block gpu.func bodies (cf.br / cf.cond_br) on the emulator against NumPy: loops and
two-way branches on uniform conditions, per-lane diamonds and triangles under EXEC masking
(tests/upstream/cf_branches.mlir, cf_lanes.mlir), per-lane loops (cf_lane_loops.mlir; a break: cf_lane_break.mlir) and
loops inside per-lane branches (nested_lane_loops.mlir), the kernels mlir-opt-22's
--convert-scf-to-cf makes of the scf test inputs, and the located errors for shapes EXEC
masking cannot take."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from upstream_inputs import DIR, TARGETS

import asterism
from asterism import api
from asterism.errors import AsterismError

RNG = np.random.default_rng(26)


def _code(source, target: str) -> bytes:
    module = api.parse(source, "cf.mlir") if isinstance(source, str) else api.parse(source)
    api.retarget(module, target)
    return asterism.compile(module)


def _launch(code: bytes, kernel: str, args) -> None:
    asterism.launch(code, kernel, grid=(1, 1, 1), block=(64, 1, 1), args=args, backend="emu")


@pytest.mark.parametrize("target", TARGETS)
def test_uniform_loop_and_branch_with_block_arguments(target):
    code = _code(DIR / "cf_branches.mlir", target)
    x = RNG.standard_normal((64, 16)).astype(np.float32)
    for n in (0, 1, 9, 16):
        o = np.full((2, 64), -1.0, np.float32)
        _launch(code, "cf_loop", [x, o, np.int32(n)])
        acc = np.zeros(64, np.float32)
        for j in range(n):  # the loop's order of f32 additions
            acc = acc + x[:, j]
        np.testing.assert_array_equal(o[0], acc)
        np.testing.assert_array_equal(o[1], acc + 1 if n > 8 else np.zeros(64, np.float32))


@pytest.mark.parametrize("target", TARGETS)
def test_per_lane_diamonds_and_triangle_under_exec_masking(target):
    code = _code(DIR / "cf_lanes.mlir", target)
    v = RNG.standard_normal(64).astype(np.float32)
    o = np.full((3, 64), -1.0, np.float32)
    _launch(code, "cf_lanes", [v, o])
    lane = np.arange(64)
    kept = np.where(lane < 32, -v, np.float32(1)) + np.float32(1)
    np.testing.assert_array_equal(o[0], np.where(v > 0, v * v, kept))
    odd = lane % 2 == 1
    np.testing.assert_array_equal(o[1], np.where(odd, v + v, v))
    np.testing.assert_array_equal(o[2], np.where(odd, v + v, np.float32(-1)))


def test_loop_is_laid_out_as_written_by_hand():
    """The head tests the SCC of its comparison, the body follows and computes the carried
    values into the head's argument registers (no copies), one branch back."""
    asm = api.translate(api.parse(DIR / "cf_branches.mlir"))
    loop = asm.split("cf_loop:")[1].split("s_endpgm")[0]
    head, rest = loop.split("block1:")[1].split("block2:")
    assert [ln.split()[0] for ln in head.strip().splitlines()] == [
        "s_cmp_lt_i32", "s_cselect_b32", "s_cbranch_scc0"]
    body = rest.split("s_branch block1")[0]
    assert "mov" not in body and body.count("v_add_f32") == 1
    lanes = api.translate(api.parse(DIR / "cf_lanes.mlir"))
    assert lanes.count("s_and_saveexec_b64") == 3 and "v_cmp_ne_u32" not in lanes


def _to_cf(mlir_opt: str, name: str) -> str:
    res = subprocess.run([mlir_opt, "--convert-scf-to-cf", str(DIR / name)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "cf.cond_br" in res.stdout and "scf." not in res.stdout
    return res.stdout


@pytest.mark.llvm
@pytest.mark.parametrize("target", TARGETS)
def test_scf_to_cf_of_the_while_loop(mlir_opt, target):
    code = _code(_to_cf(mlir_opt, "while.mlir"), target)
    x = RNG.standard_normal(64).astype(np.float32)
    for n in (0, 1, 100):
        o = np.full(64, -1.0, np.float32)
        trips = np.full(1, -1, np.int32)
        _launch(code, "while_loop", [x, o, trips, np.int32(n)])
        want = np.zeros(64, np.float32)
        i, t = 1, 0
        while i < n:
            want = want + x * np.float32(i)
            i, t = i * 2, t + 1
        np.testing.assert_array_equal(o, want)
        assert trips[0] == t


@pytest.mark.llvm
@pytest.mark.parametrize("target", TARGETS)
def test_scf_to_cf_of_loops_and_ifs(mlir_opt, target):
    code = _code(_to_cf(mlir_opt, "loops.mlir"), target)
    x = RNG.integers(-1000, 1000, (128, 32)).astype(np.int32)
    f = RNG.standard_normal((128, 32)).astype(np.float32)
    out = np.zeros((128, 9), np.int32)
    fo = np.zeros(128, np.float32)
    asterism.launch(code, "row_stats", grid=(2, 1, 1), block=(64, 1, 1), args=[x, f, out, fo],
                    backend="emu")
    s = x.sum(axis=1).astype(np.int64)
    mx = x.max(axis=1)
    odd_block = (np.arange(128) // 64) % 2 == 1
    q = np.trunc(s / 8).astype(np.int64)
    want = np.stack([s, mx, np.where(odd_block, mx, s), np.abs(s), q, s - 8 * q, s // 8,
                     np.where(s < 0, q, s - 8 * q), np.full(128, 496)], axis=1)
    np.testing.assert_array_equal(out, want)
    acc = np.zeros(128, np.float32)
    for j in range(32):
        acc = acc + f[:, j]
    np.testing.assert_array_equal(fo, acc)


@pytest.mark.llvm
def test_scf_to_cf_of_saxpy(mlir_opt):
    code = _code(_to_cf(mlir_opt, "saxpy.mlir"), "gfx942")
    x = RNG.standard_normal(256).astype(np.float32)
    y = RNG.standard_normal(256).astype(np.float32)
    want = y.copy()
    want[:200] = np.float32(2.5) * x[:200] + y[:200]
    asterism.launch(code, "saxpy", grid=(4, 1, 1), block=(64, 1, 1),
                    args=[x, y, np.float32(2.5), 200], backend="emu")
    np.testing.assert_array_equal(y, want)


def _collatz_steps(n: int) -> int:
    steps = 0
    while n != 1:
        n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
    return steps


@pytest.mark.parametrize("target", TARGETS)
def test_per_lane_loops_leave_lane_by_lane(target):
    code = _code(DIR / "cf_lane_loops.mlir", target)
    x = RNG.integers(-8, 8, 64).astype(np.float32) * np.float32(0.5)  # sums exact
    s, c, steps = np.zeros(64, np.float32), np.zeros(64, np.int32), np.zeros(64, np.int32)
    _launch(code, "lane_loops", [x, s, c, steps])
    np.testing.assert_array_equal(s, [x[:lane].sum() for lane in range(64)])
    np.testing.assert_array_equal(c, np.arange(64))  # the head's counter, used after the loop
    np.testing.assert_array_equal(steps, [_collatz_steps(lane + 1) for lane in range(64)])


@pytest.mark.parametrize("target", TARGETS)
def test_a_break_leaves_a_per_lane_loop(target):
    code = _code(DIR / "cf_lane_break.mlir", target)
    x = np.linspace(-1.0, 3.0, 64).astype(np.float32)[::-1].copy()
    x[:6] = -5.0  # (so no lane breaks at once)
    found = np.zeros(64, np.int32)
    _launch(code, "search", [x, found])
    want = []
    for lane in range(64):
        n, thr = lane % 32 + 8, np.float32(lane) * np.float32(0.05)
        want.append(next((i for i in range(n) if x[i] > thr), n))
    np.testing.assert_array_equal(found, want)
    n_of = np.arange(64) % 32 + 8
    assert (found < n_of).any() and (found == n_of).any()  # both exits taken


@pytest.mark.llvm
@pytest.mark.parametrize("target", TARGETS)
def test_scf_to_cf_of_a_per_lane_while(mlir_opt, target):
    code = _code(_to_cf(mlir_opt, "while_lanes.mlir"), target)
    x = RNG.standard_normal(64).astype(np.float32)
    o, trips = np.zeros(64, np.float32), np.zeros(64, np.int32)
    _launch(code, "while_lanes", [x, o, trips])
    ref_o, ref_t = np.zeros(64, np.float32), np.zeros(64, np.int32)
    _launch(_code(DIR / "while_lanes.mlir", target), "while_lanes", [x, ref_o, ref_t])
    np.testing.assert_array_equal(trips, [max(0, lane.bit_length()) for lane in range(64)])
    np.testing.assert_array_equal(o, ref_o)  # (the scf form: checked against NumPy)


@pytest.mark.llvm
@pytest.mark.parametrize("target", TARGETS)
def test_loops_inside_a_per_lane_branch(mlir_opt, target):
    # a per-lane scf.while and a uniform scf.for inside a per-lane scf.if, and the loops
    # inside the paths of a per-lane cf.cond_br that --convert-scf-to-cf makes of them
    x = RNG.standard_normal(64).astype(np.float32)
    lane = np.arange(64)
    odd = lane % 2 == 1
    for source in (DIR / "nested_lane_loops.mlir", _to_cf(mlir_opt, "nested_lane_loops.mlir")):
        bits, total = np.zeros(64, np.int32), np.zeros(64, np.float32)
        _launch(_code(source, target), "nested", [x, bits, total])
        np.testing.assert_array_equal(bits, np.where(odd, [int(v + 1).bit_length()
                                                           for v in lane], -1))
        want = np.float32(0)
        for _ in range(4):
            want = want + x  # (float32 steps, as the loop adds)
        np.testing.assert_array_equal(total, np.where(odd, want, -1))


KERNEL = """module {{
  gpu.module @m {{
    gpu.func @k(%x: memref<64xf32>, %n: i32) kernel {{
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %f = arith.constant 1.0 : f32
{body}
  }}
}}
"""


@pytest.mark.parametrize("body, line, message", [
    # a per-lane loop also left from its body to another block than the head's exit
    ("      cf.br ^head(%c0 : index)\n    ^head(%i: index):\n"
     "      %go = arith.cmpi ult, %i, %l : index\n      cf.cond_br %go, ^body, ^done\n"
     "    ^body:\n      %j = arith.addi %i, %c1 : index\n"
     "      %b = arith.cmpi eq, %j, %c1 : index\n      cf.cond_br %b, ^out, ^head(%j : index)"
     "\n    ^out:\n      cf.br ^done\n    ^done:\n      gpu.return\n    }", 11,
     "cf.cond_br: the condition differs between lanes and the loop it heads is also left "
     "from block ^body (to ^out)"),
    # some lanes return early
    ("      %go = arith.cmpi ult, %l, %c1 : index\n      cf.cond_br %go, ^a, ^b\n"
     "    ^a:\n      gpu.return\n    ^b:\n      memref.store %f, %x[%l] : memref<64xf32>\n"
     "      gpu.return\n    }", 9, "its paths do not meet again before a return"),
    # a block of the paths entered from elsewhere
    ("      %go = arith.cmpi ult, %l, %c1 : index\n      %u = arith.cmpi eq, %n, %n : i32\n"
     "      cf.cond_br %u, ^top, ^mid\n    ^top:\n      cf.cond_br %go, ^mid, ^end\n"
     "    ^mid:\n      cf.br ^end\n    ^end:\n      gpu.return\n    }", 12,
     "a block on its paths is also entered from outside them"),
    ("      %i = arith.index_cast %l : index to i32\n"
     "      cf.switch %i : i32, [default: ^a, 1: ^b]\n    ^a:\n      gpu.return\n"
     "    ^b:\n      gpu.return\n    }", 9, "cf.switch is not supported (cf.br and cf.cond_br "
     "are)"),
])
def test_branches_exec_masking_cannot_take_are_located_errors(body, line, message):
    with pytest.raises(AsterismError) as err:
        _code(KERNEL.format(body=body), "gfx942")
    assert message in err.value.message, err.value.message
    assert err.value.location is not None and err.value.location.file == "cf.mlir"
    assert err.value.location.line == line
