"""MFMAs run straight on the register file (emu/mfma.py RegisterPlan) give the bits of
`execute_mfma`, the general path (itself checked against NumPy in test_emu_mfma.py): every
MFMA that has a plan, on random register bits (NaN, infinities and denormals included),
with the CBSZ/ABID/BLGP broadcasts, and through the emulator's op (D over C, a constant C,
AGPRs, lanes with EXEC off)."""

from __future__ import annotations

import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from test_emu_asm import program

from asterism.emu import mfma as mf
from asterism.emu.compiler import build_op
from asterism.emu.info import make_infos

WAVES = 3
# (the emulator runs every batch under this errstate: float exceptions are results)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
PLANNED = [(t, m) for t in ("gfx942", "gfx950") for m in mf.mfma_mnemonics(t)
           if mf.register_plan(t, m) is not None]


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random register words: every code (NaN, inf, denormals) with some plain values."""
    raw = rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)
    plain = rng.standard_normal(shape).astype(np.float32).view(np.uint32)
    return np.where(rng.random(shape) < 0.5, raw, plain)


def _both(t: str, m: str, cbsz: int = 0, abid: int = 0, blgp: int = 0, seed: int = 0):
    plan = mf.register_plan(t, m, cbsz, abid, blgp)
    lay = mf.mfma_layout(t, m, cbsz=cbsz, abid=abid, blgp=blgp)
    rng = _rng(t, m, cbsz, abid, blgp, seed)
    a = _bits(rng, (plan.a_nregs, WAVES, 64))
    b = _bits(rng, (plan.b_nregs, WAVES, 64))
    c = _bits(rng, (plan.d_nregs, WAVES, 64))
    got = mf.mfma_on_registers(plan, a, b, c).astype(np.float32).view(np.uint32)
    want = mf.execute_mfma(t, m, a.transpose(1, 2, 0), b.transpose(1, 2, 0),
                           c.transpose(1, 2, 0), cbsz=cbsz, abid=abid, blgp=blgp)
    assert lay.c.nregs == plan.d_nregs
    return got, want.transpose(2, 0, 1)


@pytest.mark.parametrize("case", PLANNED, ids=lambda c: f"{c[0]}-{c[1]}")
def test_register_plan_gives_execute_mfma_bits(case):
    got, want = _both(*case)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", [c for c in PLANNED if mf.mfma_info(*c).blocks > 1],
                         ids=lambda c: f"{c[0]}-{c[1]}")
def test_register_plan_with_broadcasts(case):
    blocks = mf.mfma_info(*case).blocks
    for cbsz, abid, blgp in ((1, 1, 0), (2, 3 % blocks, 5), (0, 0, 7)):
        if cbsz and (1 << cbsz) > blocks or abid >= (1 << cbsz):
            continue
        got, want = _both(*case, cbsz=cbsz, abid=abid, blgp=blgp)
        np.testing.assert_array_equal(got, want)


OPS = [
    ("gfx950", "v_mfma_f32_32x32x16_bf16 v[0:15], v[16:19], v[20:23], v[0:15]"),
    ("gfx950", "v_mfma_f32_16x16x32_f16 a[0:3], v[4:7], v[8:11], 0"),
    ("gfx942", "v_mfma_f32_32x32x8_f16 a[0:15], v[16:17], v[18:19], a[0:15]"),
    ("gfx942", "v_mfma_f32_16x16x4_f32 v[0:3], v4, v5, v[6:9]"),
]


@pytest.mark.parametrize("target,text", OPS)
@pytest.mark.parametrize("full", [True, False])
def test_emulator_op_on_registers(target, text, full):
    info = make_infos(program(text + "\ns_endpgm", target), target, agpr_base=40)[0]
    minfo = mf.mfma_info(target, info.mnemonic)
    assert mf.register_plan(target, minfo.mnemonic) is not None
    rng = _rng(target, text, full)
    v = _bits(rng, (80, WAVES, 64))
    exec_mask = np.ones((WAVES, 64), bool) if full else rng.random((WAVES, 64)) < 0.6
    before = v.copy()
    op = build_op(info)
    g = SimpleNamespace(v=v, exec=exec_mask, exec_full=bool(exec_mask.all()), n=WAVES)
    assert op(g) == info.next_index

    def regs(name: str) -> np.ndarray:
        spec = info.op(name)
        row = spec.index + (40 if spec.kind == "a" else 0)
        return before[row:row + spec.count].transpose(1, 2, 0)
    src2 = info.op("src2")
    c = regs("src2") if hasattr(src2, "kind") else \
        np.zeros((WAVES, 64, info.op("vdst").count), np.uint32)
    want = mf.execute_mfma(target, minfo.mnemonic, regs("src0"), regs("src1"), c)
    dst = info.op("vdst")
    row = dst.index + (40 if dst.kind == "a" else 0)
    want = np.where(exec_mask[None], want.transpose(2, 0, 1), before[row:row + dst.count])
    np.testing.assert_array_equal(v[row:row + dst.count], want)
    untouched = np.ones(80, bool)
    untouched[row:row + dst.count] = False
    np.testing.assert_array_equal(v[untouched], before[untouched])
