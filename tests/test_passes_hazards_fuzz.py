"""The hazards pass against the emulator's hazard checker on random straight-line code.

Random sequences of hazard-prone instructions (MFMA of each kind, VALU writes of VGPRs,
SGPRs, VCC and EXEC, lane ops, DPP, trans, M0, LDS DMA, wide stores, s_setreg/getreg,
hand-written s_nop) are checked three ways: the pass's check-only report flags exactly the
instructions the emulator's checker (asterism.emu.hazard_check, the sanitizer) flags; after
the pass, the checker flags nothing; and every run of inserted nops is minimal: one wait
state less and the checker flags the instruction after it.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from asterism import api
from asterism.builder import KernelBuilder
from asterism.emu.errors import SanitizerError
from asterism.emu.hazard_check import HazardChecker, HazardState, facts_of
from asterism.emu.info import PlainInst, make_infos
from asterism.mc.encoder import inst_size
from asterism.mc.printer import format_inst
from asterism.passes.hazards import check_hazards, hazard_facts
from asterism.passes.machine import MachineKernel, kernels_of

_FAKE_GROUP = SimpleNamespace(waves=[0], ctx=SimpleNamespace(wg_ids={0: (0, 0, 0)},
                                                             wave_in_wg={0: 0}))

MFMAS = {  # mnemonic: (D width, A/B width)
    "v_mfma_f32_4x4x4_16b_f16": (4, 2), "v_mfma_f32_16x16x16_f16": (4, 2),
    "v_mfma_f32_32x32x8_f16": (16, 2), "v_mfma_f32_16x16x4_f32": (4, 1),
    "v_mfma_f64_4x4x4_4b_f64": (2, 2), "v_mfma_f64_16x16x4_f64": (8, 2),
    "v_mfma_f32_16x16x128_f8f6f4": (4, 8),  # gfx950; fp8 A/B: twice the database passes
}


def random_program(rng: random.Random, target: str, length: int = 24, nops: bool = True):
    """A kernel of `length` random instructions over a few registers (fixed); `nops`: with
    hand-written s_nops among them."""
    kb = KernelBuilder("k", target)
    kb.arg_buffer("a", "f32")
    v = lambda: kb.v(rng.choice((0, 1, 2, 3, 4, 5, 8, 12, 16)))
    s = lambda: kb.s(rng.choice((8, 9, 10, 11)))

    def ranged(width: int, avoid: tuple[int, int] | None = None):
        while True:
            first = rng.choice([0, 2, 4, 8, 16, 32, 36])
            if avoid is None or first + width <= avoid[0] or avoid[1] <= first:
                return kb.v[first:first + width]

    def span(value) -> tuple[int, int]:
        t = value.type
        return (t.first, t.first + t.width)

    ops = [
        lambda: kb.v_mov_b32(v(), v()),
        lambda: kb.v_add_f32(v(), 1.0, v()),
        lambda: kb.v_add_u32(v(), s(), v()),
        lambda: kb.v_exp_f32(v(), v()),
        lambda: kb.v_readfirstlane_b32(s(), v()),
        lambda: kb.v_readlane_b32(s(), v(), s()),
        lambda: kb.v_writelane_b32(v(), 1, s()),
        lambda: kb.v_cmpx_gt_f32_e32(v(), v()),
        lambda: kb.v_cmp_gt_f32_e32(v(), v()),
        lambda: kb.v_cndmask_b32_e32(v(), v(), v()),
        lambda: kb.v_mov_b32_dpp(v(), v(), dpp_ctrl=0x111, row_mask=15, bank_mask=15),
        lambda: kb.global_load_dword(v(), kb.v(1), kb.s[8:10]),
        lambda: kb.global_store_dwordx4(kb.v(1), ranged(4), kb.s[4:6]),
        lambda: kb.ds_read_b32(v(), v()),
        lambda: kb.s_mov_b32(s(), 0),
        lambda: kb.s_mov_b32(kb.special("m0"), s()),
        lambda: kb.buffer_load_dword(kb.v(1), kb.s[12:16], 0, offen=True, lds=True),
        lambda: kb.s_setreg_b32(0x1801, s()),
        lambda: kb.s_getreg_b32(s(), 0x1801),
        lambda: kb.v_accvgpr_write_b32(kb.a(rng.randrange(4)), v()),
        lambda: kb.v_accvgpr_read_b32(v(), kb.a(rng.randrange(4))),
    ]
    for mnem, (dw, sw) in MFMAS.items():
        if kb.isa.get(mnem) is None:
            continue

        def mf(mnem=mnem, dw=dw, sw=sw):
            dst = ranged(dw)
            d = span(dst)
            c = dst if rng.random() < 0.5 else (ranged(dw, d) if rng.random() < 0.5 else 0)
            getattr(kb, mnem)(dst, ranged(sw, d), ranged(sw, d), c)
        ops += [mf, mf]
    if target == "gfx950":
        ops.append(lambda: kb.v_permlane32_swap_b32(v(), v()))
    if nops:
        ops.append(lambda: kb.s_nop(rng.randrange(4)))
    for _ in range(length):
        rng.choice(ops)()
    kb.s_endpgm()
    return kb.finish()


def emulator_flags(module, target: str) -> list[int]:
    """Indices (in program order) of the instructions the emulator's checker flags."""
    mc = api.lower(module)
    insts = [i for i in mc.kernels[0].body if hasattr(i, "mnemonic")]
    prog, pc = [], 0
    for inst in insts:
        prog.append(PlainInst(pc, inst_size(inst), inst))
        pc += inst_size(inst)
    checker = HazardChecker(target)
    st = HazardState()
    flagged = []
    for info in make_infos(prog, target):
        prep = checker.prepare(info)
        try:
            checker.check(st, prep, info, _FAKE_GROUP, "k")
        except SanitizerError:
            flagged.append(info.index)
        checker.record(st, prep, info)
    return flagged


def pass_flags(module) -> list[int]:
    """Indices of the instructions the pass's check-only mode flags."""
    kernel = kernels_of(module)[0]
    insts = [op for b in kernel.body.blocks for op in b.ops
             if op.name.startswith("amdgcn.") and op.name not in (
                 "amdgcn.alloca", "amdgcn.kernarg_ptr", "amdgcn.kernarg_offset",
                 "amdgcn.fallthrough", "amdgcn.workitem_id")]
    flagged = {id(v.consumer) for v in check_hazards(module)}
    return [k for k, op in enumerate(insts) if id(op) in flagged]


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
@pytest.mark.parametrize("seed", range(40))
def test_pass_agrees_with_the_emulator_checker(target, seed):
    rng = random.Random(seed * 7 + (target == "gfx950"))
    module = random_program(rng, target)
    assert pass_flags(module) == emulator_flags(module, target)
    fixed = api.optimize(module, "hazards")
    assert emulator_flags(fixed, target) == []
    assert check_hazards(fixed) == []


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
@pytest.mark.parametrize("seed", range(15))
def test_inserted_nops_are_minimal(target, seed):
    rng = random.Random(1000 + seed)
    module = api.optimize(random_program(rng, target, nops=False), "hazards")
    mc = api.lower(module)
    body = mc.kernels[0].body
    base = [format_inst(i) for i in body]
    for k, inst in enumerate(body):
        nxt = body[k + 1] if k + 1 < len(body) else None
        # the last s_nop of a run the pass inserted (runs end right before the consumer)
        if format_inst(inst).startswith("s_nop") and nxt is not None and \
                not format_inst(nxt).startswith("s_nop"):
            n = int(format_inst(inst).split()[1], 0)
            text = "\n".join(base[:k] + ([f"s_nop {n - 1}"] if n else []) + base[k + 1:])
            weaker = _reparse(text, target)
            assert emulator_flags(weaker, target), f"s_nop {n} at {k} is not needed"


def _reparse(body_text: str, target: str):
    from asterism.ir import raise_module
    from asterism.mc.parser import parse_asm

    text = f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"\n.text\nk:\n{body_text}\n'
    return raise_module(parse_asm(text, "weaker.s"))


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_roles_match_the_emulator(target):
    # The pass computes each instruction's hazard classes and operand roles from the IR;
    # the emulator from the decoded instruction. They must agree (same table semantics).
    rng = random.Random(5)
    for _ in range(10):
        module = random_program(rng, target, 40)
        kernel = kernels_of(module)[0]
        mk = MachineKernel(kernel, kernel_isa(kernel))
        ops = [op for b in kernel.body.blocks for op in b.ops if mk.instruction(op)]
        mc = api.lower(module)
        insts = [i for i in mc.kernels[0].body if hasattr(i, "mnemonic")]
        infos = make_infos([PlainInst(4 * k, 4, i) for k, i in enumerate(insts)], target)
        assert len(ops) == len(infos)
        for op, info in zip(ops, infos):
            mine, my_roles = hazard_facts(mk, op)
            theirs, their_roles = facts_of(info)
            assert mine.classes == theirs.classes, info.text
            assert (mine.passes, mine.wait_states) == (theirs.passes, theirs.wait_states)
            assert {r: sorted(k) for r, k in my_roles.items() if k} == \
                   {r: sorted(k) for r, k in their_roles.items() if k}, info.text


def kernel_isa(kernel):
    from asterism.isa import get_isa
    from asterism.passes.machine import module_target

    return get_isa(module_target(kernel))
