"""Random kernels with relocatable registers (straight-line code, loops, chains that continue
around loops, copies, SGPR and VGPR values): the allocated kernel must compute on the
emulator exactly what the same kernel computes with one register per value (a trivially
correct allocation), and pass the symbolic-execution check."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_passes_regalloc_helpers import check_allocation, classes_before

import asterism
from asterism.builder import KernelBuilder
from asterism.ir.types import RegisterType
from asterism.passes.liveness import analyze_kernel
from asterism.passes.machine import kernels_of
from asterism.passes.regalloc import allocate_module

OUTPUTS = 12


def build(seed: int):
    """A random kernel storing OUTPUTS values per work-item into `out`."""
    rng = random.Random(seed)
    kb = KernelBuilder("rnd")
    out = kb.arg_buffer("out", "u32", "write_only")
    base = kb.s_load_dwordx2(None, kb.kernarg_ptr(), out)
    tid = kb.workitem_id("x")
    addr = kb.v_lshlrev_b32(None, 2, tid)
    kb.s_waitcnt(lgkmcnt=0)
    vs = [kb.v_add_u32(None, rng.randrange(1, 60), tid) for _ in range(3)]
    ss = [kb.s_mov_b32(None, rng.randrange(1000))]

    def pick(pool):
        return pool[rng.randrange(len(pool))]

    def step(in_loop: bool) -> None:
        r = rng.random()
        if r < 0.25:
            vs.append(kb.v_add_u32(None, pick(vs), pick(vs)))
        elif r < 0.35:
            vs.append(kb.v_xor_b32(None, pick(vs), pick(vs)))
        elif r < 0.45:
            vs.append(kb.v_mul_lo_u32(None, pick(vs), pick(vs)))
        elif r < 0.52:
            vs.append(kb.v_lshlrev_b32(None, rng.randrange(1, 5), pick(vs)))
        elif r < 0.62:
            k = rng.randrange(len(vs))  # continue a chain: the same register, updated
            vs[k] = kb.v_add_u32(vs[k], pick(vs), vs[k])
        elif r < 0.70:
            vs.append(kb.v_mov_b32(None, pick(vs)))  # a copy
        elif r < 0.76:
            vs.append(kb.v_add_u32(None, pick(ss), pick(vs)))
        elif r < 0.82:
            ss.append(kb.s_add_u32(None, pick(ss), rng.randrange(64)))
        elif r < 0.86:
            k = rng.randrange(len(ss))
            ss[k] = kb.s_add_u32(ss[k], ss[k], 3)
        elif r < 0.90:
            vs.append(kb.v_mov_b32(None, pick(ss)))
        elif len(vs) > 4:
            vs.pop(rng.randrange(len(vs)))  # this value is not read any more

    for _ in range(rng.randrange(15, 40)):
        step(False)
    for _loop in range(rng.randrange(1, 3)):
        counter = kb.s_mov_b32(None, rng.randrange(2, 5))
        top = kb.label()
        for _ in range(rng.randrange(5, 20)):
            step(True)
        counter = kb.s_sub_u32(counter, counter, 1)
        kb.s_cmp_lg_u32(counter, 0)
        kb.s_cbranch_scc1(top)
        for _ in range(rng.randrange(5, 15)):
            step(False)
    for k in range(OUTPUTS):
        kb.global_store_dword(addr, vs[-1 - k % len(vs)] if k % 3 else
                              kb.v_mov_b32(None, ss[-1 - k % len(ss)]), base, offset=256 * k)
    kb.s_endpgm()
    return kb.finish()


def one_register_per_value(module) -> None:
    """Give every relocatable class its own register (v1..., s4...: past the ABI inputs)."""
    kernel = kernels_of(module)[0]
    live = analyze_kernel(kernel)
    next_free = {"v": 1, "s": 4, "a": 0}
    for c in live.classes:
        if not c.relocatable:
            continue
        first = -(-next_free[c.kind] // c.align) * c.align
        next_free[c.kind] = first + c.width
        for v in c.values:
            v._type = v.type.with_index(first)
    assert next_free["v"] <= 256 and next_free["s"] <= 102


def run(module) -> np.ndarray:
    out = np.zeros(OUTPUTS * 64, np.uint32)
    asterism.launch(asterism.compile(module), "rnd", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[out], backend="emu")
    return out


@pytest.mark.parametrize("seed", range(8))
def test_random_kernels_match_one_register_per_value(seed):
    allocated = build(seed)
    reference = allocated.clone()
    kernel = kernels_of(allocated)[0]
    before = classes_before(kernel)
    (report,) = allocate_module(allocated)
    check_allocation(kernel, before)
    one_register_per_value(reference)
    assert all(r.type.is_fixed for op in reference.walk() for r in op.results
               if isinstance(r.type, RegisterType))
    expected = run(reference)
    np.testing.assert_array_equal(run(allocated), expected)
    assert expected.any()
    v = report.files["v"]
    # Coalesced copies share a register although both sides are counted live at the copy.
    assert v.used <= v.peak, report.text()
