"""memref.atomic_rmw on the emulator against NumPy (tests/upstream/atomic_rmw.mlir): every kind
with a returning atomic instruction on global i32, addf on f32, addf/addi on LDS, a contended
addi; the kinds without an instruction as compare-and-swap loops with contending lanes
(tests/upstream/atomic_cas.mlir); and the located errors for a kind neither can do and for an
unknown kind."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from upstream_inputs import DIR, TARGETS

import asterism
from asterism import api
from asterism.errors import AsterismError

KINDS = [np.add, np.bitwise_and, np.bitwise_or, np.bitwise_xor, lambda a, v: v, np.maximum,
         lambda a, v: np.maximum(a.view(np.uint32), v.view(np.uint32)).view(np.int32),
         np.minimum,
         lambda a, v: np.minimum(a.view(np.uint32), v.view(np.uint32)).view(np.int32)]


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_rmw_kinds_return_the_old_value(target):
    module = api.parse(DIR / "atomic_rmw.mlir")
    api.retarget(module, target)
    code = asterism.compile(module)
    rng = np.random.default_rng(26)
    m0 = rng.integers(-2**31, 2**31, 576, dtype=np.int64).astype(np.int32)
    vals = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    m, old = m0.copy(), np.zeros(576, np.int32)
    f0 = rng.standard_normal(64).astype(np.float32)
    f, fx, fold = f0.copy(), rng.standard_normal(64).astype(np.float32), np.zeros(64, np.float32)
    cnt, cold = np.array([0, 0, 7, 0], np.int32), np.zeros(64, np.int32)
    lout = np.zeros(64, np.float32)
    asterism.launch(code, "atomics", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[m, old, vals, f, fx, fold, cnt, cold, lout], backend="emu")
    np.testing.assert_array_equal(old, m0)  # each lane its own element: the old value is m0
    for k, fn in enumerate(KINDS):
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(m[64 * k:64 * k + 64], fn(m0[64 * k:64 * k + 64], vals),
                                          err_msg=f"kind {k}")
    np.testing.assert_array_equal(fold, f0)
    np.testing.assert_array_equal(f, f0 + fx)
    assert cnt.tolist() == [0, 0, 7 + 64, 0]
    assert sorted(cold.tolist()) == list(range(7, 7 + 64))
    # LDS: 0.5 + x after the add, plus the lane's old counter (a permutation of 0..63), plus
    # the old value 0.5
    lc = lout - (np.float32(0.5) + fx) - np.float32(0.5)
    assert sorted(np.rint(lc).astype(int).tolist()) == list(range(64))


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_rmw_on_64_bit_elements(target):
    module = api.parse(DIR / "atomic_rmw_wide.mlir")
    api.retarget(module, target)
    code = asterism.compile(module)
    rng = np.random.default_rng(27)
    d0, dx = rng.standard_normal(64), rng.standard_normal(64)
    q0 = rng.integers(-2**62, 2**62, 64, dtype=np.int64)
    qx = rng.integers(-2**62, 2**62, 64, dtype=np.int64)
    d, dold, q, qold = d0.copy(), np.zeros(64), q0.copy(), np.zeros(64, np.int64)
    asterism.launch(code, "wide", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[d, dx, dold, q, qx, qold], backend="emu")
    np.testing.assert_array_equal(dold, d0)
    np.testing.assert_array_equal(d, d0 + dx)
    np.testing.assert_array_equal(qold, q0)
    np.testing.assert_array_equal(q, np.maximum(q0, qx))


def _kernel(line: str, mem: str = "memref<16xf32>", vt: str = "f32") -> str:
    return f"""module {{
  gpu.module @m {{
    gpu.func @k(%a: {mem}, %v: {vt}) kernel {{
      %i = arith.constant 0 : index
{line}
      gpu.return
    }}
  }}
}}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_kind_without_an_instruction_is_a_located_error(target):
    text = _kernel("      %r = memref.atomic_rmw muli %v, %a[%i] : (i64, memref<16xi64>) -> i64",
                   "memref<16xi64>", "i64")
    module = api.parse(text, "a.mlir")
    api.retarget(module, target)
    with pytest.raises(AsterismError) as err:
        asterism.compile(module)
    assert "kind 'muli' on i64 has no atomic instruction" in err.value.message
    assert "addi, andi, assign, maxs" in err.value.message
    assert err.value.location.file == "a.mlir" and err.value.location.line == 5


def test_an_unknown_kind_is_a_parse_error():
    text = _kernel("      %r = memref.atomic_rmw addq %v, %a[%i] : (f32, memref<16xf32>) -> f32")
    with pytest.raises(AsterismError) as err:
        api.parse(text, "a.mlir")
    assert "unknown kind 'addq'" in err.value.message
    assert err.value.location.line == 5


def test_the_custom_form_prints_back():
    text = _kernel("      %r = memref.atomic_rmw maxs %v, %a[%i] : (i32, memref<16xi32>) -> i32",
                   "memref<16xi32>", "i32")
    assert "memref.atomic_rmw maxs %v, %a[%i] : (i32, memref<16xi32>) -> i32" in str(
        api.parse(text, "a.mlir"))



def test_cli_reports_a_kind_without_an_instruction(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(_kernel("      %r = memref.atomic_rmw mulf %v, %a[%i] : "
                           "(f16, memref<16xf16>) -> f16", "memref<16xf16>", "f16"))
    out = tmp_path / "bad.hsaco"
    res = subprocess.run([sys.executable, "-m", "asterism.cli", "compile", str(bad), "-o",
                          str(out)], capture_output=True, text=True)
    assert res.returncode == 1
    assert "bad.mlir:5:" in res.stderr and "kind 'mulf' on f16" in res.stderr
    assert "Traceback" not in res.stderr and not out.exists()


def _signed32(x: int) -> int:
    x %= 1 << 32
    return x - (1 << 32) if x >= 1 << 31 else x


@pytest.mark.parametrize("target", TARGETS)
def test_cas_loop_kinds_match_the_sequential_reduction(target):
    module = api.parse(DIR / "atomic_cas.mlir")
    api.retarget(module, target)
    code = asterism.compile(module)
    rng = np.random.default_rng(28)
    im0 = np.array([1, 3, -2, 7], np.int32)
    iv = rng.integers(-5, 6, 64).astype(np.int32)
    fm0 = np.array([1, 0.5, 2, -1], np.float32)
    # powers of two: every order of the products is exact
    fv = (2.0 ** rng.integers(-3, 4, 64) * rng.choice([-1, 1], 64)).astype(np.float32)
    dm0 = np.array([1.0, -5.0])
    dv = 2.0 ** rng.integers(-4, 5, 64)
    im, fm, dm = im0.copy(), fm0.copy(), dm0.copy()
    iold, fold, lout = np.zeros(64, np.int32), np.zeros(64, np.float32), np.zeros(64, np.float32)
    mx = np.array([-1e30, 1e30], np.float32)
    half = np.full(64, -100, np.float32)
    asterism.launch(code, "cas", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[im, iv, iold, fm, fv, fold, mx, dm, dv, lout, half], backend="emu")
    slot = np.arange(64) % 4
    for s in range(4):  # 16 lanes on each address
        lanes = slot == s
        assert im[s] == _signed32(int(np.prod(iv[lanes].astype(object))) * int(im0[s]))
        # the old values chain: each lane's old times its value is another lane's old (or
        # the final value), the first old is the initial value
        news = [_signed32(int(o) * int(v)) for o, v in zip(iold[lanes], iv[lanes])]
        assert sorted([*iold[lanes].tolist(), int(im[s])]) == sorted([*news, int(im0[s])])
        assert fm[s] == fm0[s] * np.prod(fv[lanes])
    assert mx[0] == fold.max() and mx[1] == fold.min()  # maxnumf, minnumf: all 64 lanes
    assert dm[0] == np.prod(dv) and dm[1] == max(-5.0, dv.max())
    np.testing.assert_array_equal(lout, np.prod(fv))  # LDS mulf
    # maxnumf on the even lanes only (a per-lane scf.if); EXEC restored: the odd lanes and
    # lanes 2.. store after it
    assert half[0] == max(-100.0, fv[::2].max())
    np.testing.assert_array_equal(half[1:], fv[1:])


def test_cas_loop_is_a_cmpswap_loop_under_exec(tmp_path, llvm_objdump):
    text = _kernel("      %r = memref.atomic_rmw mulf %v, %a[%i] : (f32, memref<16xf32>) -> f32")
    path = tmp_path / "k.hsaco"
    path.write_bytes(asterism.compile(api.parse(text, "a.mlir")))
    res = subprocess.run([llvm_objdump, "-d", "--mcpu=gfx942", str(path)], capture_output=True,
                         text=True)
    ops = [line.split()[0] for line in res.stdout.splitlines() if line.startswith("\t")]
    loop = ops[ops.index("v_mul_f32_e32"):ops.index("s_cbranch_execnz") + 1]
    assert "buffer_atomic_cmpswap" in loop and "s_andn2_b64" in loop
    assert ops[ops.index("s_cbranch_execnz") + 1] == "s_or_b64"  # EXEC back


LDS_CAS = """module {
  gpu.module @m {
    gpu.func @lds_cas(%dv: memref<64xf64>, %iv: memref<64xi32>, %out: memref<2xf64>,
                      %iout: memref<1xi32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %w = memref.alloc() : memref<2xf64, #gpu.address_space<workgroup>>
      %wi = memref.alloc() : memref<1xi32, #gpu.address_space<workgroup>>
      %first = arith.cmpi eq, %l, %c0 : index
      scf.if %first {
        %lo = arith.constant -1.0e300 : f64
        %one = arith.constant 1.0 : f64
        %onei = arith.constant 1 : i32
        memref.store %lo, %w[%c0] : memref<2xf64, #gpu.address_space<workgroup>>
        memref.store %one, %w[%c1] : memref<2xf64, #gpu.address_space<workgroup>>
        memref.store %onei, %wi[%c0] : memref<1xi32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %d = memref.load %dv[%l] : memref<64xf64>
      %i = memref.load %iv[%l] : memref<64xi32>
      %a = memref.atomic_rmw maxnumf %d, %w[%c0] : (f64, memref<2xf64, #gpu.address_space<workgroup>>) -> f64
      %b = memref.atomic_rmw mulf %d, %w[%c1] : (f64, memref<2xf64, #gpu.address_space<workgroup>>) -> f64
      %c = memref.atomic_rmw muli %i, %wi[%c0] : (i32, memref<1xi32, #gpu.address_space<workgroup>>) -> i32
      gpu.barrier
      scf.if %first {
        %x = memref.load %w[%c0] : memref<2xf64, #gpu.address_space<workgroup>>
        %y = memref.load %w[%c1] : memref<2xf64, #gpu.address_space<workgroup>>
        %z = memref.load %wi[%c0] : memref<1xi32, #gpu.address_space<workgroup>>
        memref.store %x, %out[%c0] : memref<2xf64>
        memref.store %y, %out[%c1] : memref<2xf64>
        memref.store %z, %iout[%c0] : memref<1xi32>
      }
      gpu.return
    }
  }
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_cas_loops_on_lds_with_64_and_32_bit_values(target):
    # ds_cmpst_rtn_b64 / _b32 loops, all 64 lanes on one address
    module = api.parse(LDS_CAS, "lds.mlir")
    api.retarget(module, target)
    code = asterism.compile(module)
    rng = np.random.default_rng(29)
    dv = 2.0 ** rng.integers(-6, 7, 64) * rng.choice([-1.0, 1.0], 64)
    iv = rng.integers(-9, 10, 64).astype(np.int32)
    out, iout = np.zeros(2), np.zeros(1, np.int32)
    asterism.launch(code, "lds_cas", grid=(1, 1, 1), block=(64, 1, 1), args=[dv, iv, out, iout],
                    backend="emu")
    assert out[0] == dv.max() and out[1] == np.prod(dv)
    assert iout[0] == _signed32(int(np.prod(iv.astype(object))))
