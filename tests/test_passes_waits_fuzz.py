"""The waits pass against the emulator's sanitizer on random executable kernels.

Random mixes of VMEM loads/stores, FLAT loads, SMEM loads, LDS reads/writes, VALU and SALU
uses of their results, hand-written s_waitcnt, amdgcn.wait on earlier tokens and barriers, in
straight lines, loops and branches, with no other wait, compile with `waits,hazards` and run
on the emulator with the sanitizer on (which raises on a read or overwrite of a register
whose load has not been waited for). On straight-line code without FLAT, every wait the
pass placed is also minimal: one more on any counter and the sanitizer fails.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import asterism
from asterism import api
from asterism.builder import KernelBuilder
from asterism.emu.errors import SanitizerError
from asterism.ir import parse_ir, print_ir

VREGS = tuple(range(2, 16))
SREGS = tuple(range(8, 16))


class Gen:
    """Random instruction emitter over a kernel with valid addresses."""

    def __init__(self, rng: random.Random, target: str, flat: bool, extras: bool):
        self.rng = rng
        self.flat = flat
        self.extras = extras  # hand-written waits, amdgcn.wait, barriers
        kb = self.kb = KernelBuilder("k", target, lds_size=4096)
        src = kb.arg_buffer("src", "i32", access="read_only")
        out = kb.arg_buffer("out", "i32")
        kb.s_load_dwordx2(kb.s[4:6], kb.kernarg_ptr(), src)
        kb.s_load_dwordx2(kb.s[6:8], kb.kernarg_ptr(), out)
        kb.v_lshlrev_b32(kb.v(1), 2, kb.workitem_id("x"))
        if flat:  # v[20:21] = src + 4 * tid (64-bit)
            kb.v_mov_b32(kb.v(21), kb.s(5))
            kb.v_add_co_u32(kb.v(20), kb.special("vcc"), kb.s(4), kb.v(1), enc="vop3")
            kb.v_addc_co_u32(kb.v(21), kb.special("vcc"), 0, kb.v(21), kb.special("vcc"),
                             enc="vop3")
        self.tokens: list = []

    def v(self):
        return self.kb.v(self.rng.choice(VREGS))

    def s(self):
        return self.kb.s(self.rng.choice(SREGS))

    def one(self) -> None:
        kb, rng = self.kb, self.rng
        off = 256 * rng.randrange(16)
        choice = rng.randrange(13 if self.extras else 10)
        if choice == 0:
            kb.global_load_dword(self.v(), kb.v(1), kb.s[4:6], offset=off)
        elif choice == 1:
            first = rng.choice((2, 4, 6, 8, 10, 12))
            kb.global_load_dwordx2(kb.v[first:first + 2], kb.v(1), kb.s[4:6], offset=off)
        elif choice == 2:
            kb.global_store_dword(kb.v(1), self.v(), kb.s[6:8], offset=off)
        elif choice == 3:
            kb.ds_write_b32(kb.v(1), self.v(), offset=off)
        elif choice == 4:
            kb.ds_read_b32(self.v(), kb.v(1), offset=off)
        elif choice == 5:
            kb.s_load_dword(self.s(), kb.s[4:6], 4 * rng.randrange(64))
        elif choice == 6:
            if self.flat:
                kb.flat_load_dword(self.v(), kb.v[20:22], offset=4 * rng.randrange(64))
            else:
                kb.v_mov_b32(self.v(), rng.randrange(64))
        elif choice in (7, 8):
            kb.v_add_u32(self.v(), self.v(), self.v())
        elif choice == 9:
            kb.v_add_u32(self.v(), self.s(), self.v())
        elif choice == 10:
            kb.s_waitcnt(**{c: rng.randrange(3) for c in ("vmcnt", "lgkmcnt")
                            if rng.random() < 0.6})
        elif choice == 11 and self.tokens:
            kb.wait(rng.choice(self.tokens))
        elif choice == 12:
            kb.s_barrier()
        if kb.last_token is not None:
            self.tokens = (self.tokens + [kb.last_token])[-6:]

    def finish(self):
        kb = self.kb
        for k, r in enumerate(VREGS):
            kb.global_store_dword(kb.v(1), kb.v(r), kb.s[6:8], offset=256 * k)
        for k, r in enumerate(SREGS[:4]):
            kb.v_mov_b32(kb.v(30), kb.s(r))
            kb.global_store_dword(kb.v(1), kb.v(30), kb.s[6:8], offset=256 * k + 128)
        kb.s_endpgm()
        return kb.finish()


def straight(seed: int, target: str, flat: bool = True, extras: bool = True, n: int = 30):
    """A straight-line random kernel."""
    g = Gen(random.Random(seed), target, flat, extras)
    for _ in range(n):
        g.one()
    return g.finish()


def with_control_flow(seed: int, target: str):
    """A random kernel with a loop and an if/else (uniform conditions) around random code."""
    rng = random.Random(seed)
    g = Gen(rng, target, flat=True, extras=True)
    kb = g.kb
    for _ in range(6):
        g.one()
    kb.s_mov_b32(kb.s(16), 3)
    top = kb.label("loop")
    g.tokens = []
    for _ in range(rng.randrange(4, 10)):
        g.one()
    kb.s_sub_u32(kb.s(16), kb.s(16), 1)
    kb.s_cmp_lg_u32(kb.s(16), 0)
    kb.s_cbranch_scc1(top)
    g.tokens = []
    kb.s_cmp_eq_u32(kb.s(16), rng.randrange(2))
    other = kb.new_label("other")
    join = kb.new_label("join")
    kb.s_cbranch_scc1(other)
    for _ in range(rng.randrange(1, 6)):
        g.one()
    kb.s_branch(join)
    kb.place(other)
    g.tokens = []
    for _ in range(rng.randrange(1, 6)):
        g.one()
    kb.place(join)
    g.tokens = []
    for _ in range(4):
        g.one()
    return g.finish()


def run(module, pipeline: str = "waits,hazards") -> np.ndarray:
    """Compile with `pipeline` and run one wave on the emulator (sanitizer on)."""
    code = api.compile(module, pipeline)
    src = np.arange(64 * 64, dtype=np.int32)
    out = np.zeros(64 * 64, dtype=np.int32)
    asterism.launch(code, "k", grid=1, block=64, args=[src, out], backend="emu")
    return out


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
@pytest.mark.parametrize("seed", range(25))
def test_straight_line_runs_clean(target, seed):
    run(straight(seed, target))


@pytest.mark.parametrize("seed", range(25))
def test_control_flow_runs_clean(seed):
    run(with_control_flow(seed, "gfx942"))


def _loosened(module_text: str):
    """Yield modules with one counter of one pass-placed s_waitcnt raised by 1."""
    lines = module_text.splitlines()
    for k, line in enumerate(lines):
        if "s_waitcnt" not in line:
            continue
        for counter in ("vmcnt", "lgkmcnt"):
            key = f"{counter} = "
            if key not in line:
                continue
            n = int(line.split(key)[1].split()[0])
            yield k, counter, "\n".join(
                lines[:k] + [line.replace(f"{key}{n}", f"{key}{n + 1}")] + lines[k + 1:])


@pytest.mark.parametrize("seed", range(20))
def test_straight_line_waits_are_minimal(seed):
    module = straight(seed, "gfx942", flat=False, extras=False, n=24)
    waited = print_ir(api.optimize(module, "waits"))
    run(parse_ir(waited), "hazards")
    for k, counter, text in _loosened(waited):
        with pytest.raises(SanitizerError):
            run(parse_ir(text), "hazards")
            pytest.fail(f"line {k}: {counter} + 1 still passes the sanitizer")


def test_removing_nothing_fails_without_the_pass():
    # The random kernels really need waits: without the pass the sanitizer complains.
    failures = 0
    for seed in range(10):
        try:
            run(straight(seed, "gfx942", extras=False), "hazards")
        except SanitizerError:
            failures += 1
    assert failures == 10
