"""Sub-registers through the passes: liveness and interference per register of a split range,
register allocation of pieces and made ranges (hand-checked registers, copies where a
make_register_range operand cannot be placed, errors where a pin makes it impossible), waits
on pieces before allocation, schedule/dce/copy-prop/inline with the views, and kernels on the
emulator: an MFMA accumulator stored dword by dword in the C layout of
v_mfma_f32_16x16x16_f16, and 64-bit address arithmetic on the halves of relocatable pairs.

Every allocation is checked by symbolic execution (`check_pieces`): each register holds the
set of program values ("units": register i of the chain an SSA value belongs to, written
again here from the documented semantics, not taken from the liveness module) it currently
holds, and every read must find its own."""

from __future__ import annotations

import re

import numpy as np
import pytest

import asterism
from asterism import api
from asterism.builder import KernelBuilder
from asterism.emu import SanitizerError
from asterism.ir import lower_module, parse_ir, print_ir
from asterism.ir.ops import (
    ABI_VALUE_OPS,
    AllocaOp,
    BranchOp,
    FallthroughOp,
    InstructionOp,
    MakeRegisterRangeOp,
    SplitRegisterRangeOp,
)
from asterism.ir.types import RegisterType, type_text
from asterism.ir.verify import match_instruction, verify_module
from asterism.isa import get_isa
from asterism.passes.inline import inline_module
from asterism.passes.liveness import analyze_kernel
from asterism.passes.machine import kernels_of
from asterism.passes.regalloc import (
    RegisterAllocationError,
    RegisterCopyWarning,
    allocate_module,
)

COPIES = {"v_mov_b32", "s_mov_b32", "v_accvgpr_mov_b32"}


# --- an independent check of allocations with pieces ---------------------------------------


def _units_of(kernel, isa) -> dict:
    """value -> tuple of unit ids (root value id, register index), from SSA structure."""
    out: dict = {}

    def units(v):
        found = out.get(v)
        if found is not None:
            return found
        owner = v.owner
        t = v.type
        if isinstance(owner, SplitRegisterRangeOp):
            offset = owner.offsets[v.index]
            found = units(owner.source)[offset:offset + t.width]
        elif isinstance(owner, MakeRegisterRangeOp):
            found = tuple(u for p in owner.parts for u in units(p))
        elif isinstance(owner, InstructionOp) and v in owner.outs and v is not owner.token:
            m = match_instruction(owner, isa)
            found = units(owner.args[m.def_positions[list(owner.outs).index(v)]])
        else:
            found = tuple((id(v), i) for i in range(t.width))
        out[v] = found
        return found

    for op in kernel.walk():
        for v in (*op.operands, *op.results):
            if isinstance(v.type, RegisterType):
                units(v)
    return out


def _fresh(v) -> bool:
    owner = v.owner
    if isinstance(owner, AllocaOp):
        return True
    if isinstance(owner, SplitRegisterRangeOp):
        return _fresh(owner.source)
    if isinstance(owner, MakeRegisterRangeOp):
        return all(_fresh(p) for p in owner.parts)
    return False


def check_pieces(kernel, target: str = "gfx942") -> int:
    """Raise AssertionError if a read of the allocated kernel would not see its value (see the
    module docstring); returns the number of register reads checked."""
    isa = get_isa(target)
    units = _units_of(kernel, isa)
    blocks = list(kernel.body.blocks)
    index = {b: k for k, b in enumerate(blocks)}
    succs = []
    for b in blocks:
        last = b.last_op
        if isinstance(last, BranchOp):
            succs.append([index[t] for t in last.targets])
        elif isinstance(last, FallthroughOp):
            succs.append([index[last.dest]])
        else:
            succs.append([])
    checked = 0

    def regs(v):
        t = v.type
        assert t.is_fixed or isinstance(v.owner, ABI_VALUE_OPS), f"{v} is not allocated"
        return [(t.KIND, t.first + i) for i in range(t.width)]

    def step(b, state, check):
        nonlocal checked
        state = dict(state)
        for op in blocks[b].ops:
            if isinstance(op, ABI_VALUE_OPS):
                for r, u in zip(regs(op.results[0]), units[op.results[0]]):
                    state[r] = frozenset({u})
                continue
            if not isinstance(op, InstructionOp):
                continue
            m = match_instruction(op, isa)
            args = list(op.operands)
            for pos, arg in enumerate(args):
                if not isinstance(arg.type, RegisterType):
                    continue
                written = pos in m.def_positions
                if written and not (m.specs[pos].tied or (arg.type.KIND != "s"
                                                          and not _fresh(arg))):
                    continue
                for r, u in zip(regs(arg), units[arg]):
                    if check and r in state and u not in state[r]:
                        raise AssertionError(f"{op.mnemonic_text} at {op.location} reads "
                                             f"{r} which does not hold {arg.name_hint}")
                    checked += check
            copy = (m.instruction.mnemonic in COPIES and len(args) > 1
                    and isinstance(args[1].type, RegisterType) and not op.mods)
            for pos in m.def_positions:
                arg = args[pos]
                if not isinstance(arg.type, RegisterType):
                    continue
                # (a copy into the register its source is in adds the copy's value there)
                same = copy and args[1].type == arg.type
                for r, u in zip(regs(arg), units[arg]):
                    if not same:
                        state[r] = frozenset({u})
                    elif r in state:
                        state[r] = state[r] | {u}
        return state

    entry: list = [None] * len(blocks)
    entry[0] = {}
    work = [0]
    while work:
        b = work.pop()
        out = step(b, entry[b], False)
        for s in succs[b]:
            if entry[s] is None:
                new = out
            else:
                new = {r: entry[s][r] & out[r] for r in set(entry[s]) & set(out)}
                new.update({r: v for r, v in entry[s].items() if r not in out})
                new.update({r: v for r, v in out.items() if r not in entry[s]})
            if new != entry[s]:
                entry[s] = new
                work.append(s)
    for b in range(len(blocks)):
        if entry[b] is not None:
            step(b, entry[b], True)
    return checked


def allocate(module, **options):
    """Allocate, check every read, lower; the single kernel's report."""
    (report,) = allocate_module(module, **options)
    kernel = kernels_of(module)[0]
    assert check_pieces(kernel) > 0
    lower_module(module)
    return report


def kernel_text(body: str, args: str = "", filename: str = "t.mlir"):
    return parse_ir('amdgcn.module @m target = "gfx942" {\n'
                    f'  amdgcn.kernel @k args({args}) workgroup_size(64, 1, 1) {{\n'
                    f'{body}    amdgcn.sopp s_endpgm\n  }}\n}}\n', filename)


def reg_of(module, name: str) -> str:
    """The type (after allocation: the register) of the value written as %name."""
    found = [r.type for op in module.walk() for r in op.results if r.name_hint == name]
    assert len(found) == 1, (name, found)
    return type_text(found[0])


# A kernel prologue with fixed registers: v0 = work-item id, s[2:3] = buffer a (loaded).
PROLOGUE = """\
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %c0 = arith.constant 0 : i32
    %p0 = amdgcn.alloca : !amdgcn.sgpr<[2:4]>
    %p, %tp = amdgcn.smem s_load_dwordx2 %p0, %kp, %c0 : (!amdgcn.sgpr<[2:4]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[2:4]>, !amdgcn.token)
    amdgcn.sopp s_waitcnt lgkmcnt = 0
    %r = amdgcn.alloca : !amdgcn.vgpr<[? + 4], align 4>
    %ld, %t = amdgcn.global global_load_dwordx4 %r, %tid, %p : (!amdgcn.vgpr<[? + 4], align 4>, !amdgcn.vgpr<0>, !amdgcn.sgpr<[2:4]>) -> (!amdgcn.vgpr<[? + 4], align 4>, !amdgcn.token)
    amdgcn.sopp s_waitcnt vmcnt = 0
    %r0, %r1, %r2, %r3 = amdgcn.split_register_range %ld : !amdgcn.vgpr<[? + 4], align 4>
"""


def store(value: str, offset: int, t: str = "!amdgcn.vgpr") -> str:
    return (f"    %s{offset} = amdgcn.global global_store_dword %tid, %{value}, %p offset = "
            f"{offset} : (!amdgcn.vgpr<0>, {t}, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token\n")


def vmov(name: str, value: int) -> str:
    return (f"    %{name}0 = amdgcn.alloca : !amdgcn.vgpr\n    %c{name} = arith.constant "
            f"{value} : i32\n    %{name} = amdgcn.vop1 v_mov_b32 %{name}0, %c{name} : "
            "(!amdgcn.vgpr, i32) -> !amdgcn.vgpr\n")


# --- liveness --------------------------------------------------------------------------------


def test_a_live_piece_keeps_exactly_its_register_live():
    module = kernel_text(PROLOGUE + store("r0", 0) + store("r1", 4) + store("r2", 8)
                         + store("r3", 12), args="a: buffer")
    live = analyze_kernel(kernels_of(module)[0])
    ld = next(op for op in live.ops if getattr(op, "mnemonic_text", "") ==
              "global_load_dwordx4")
    units = sorted(live.writes_of(ld), key=lambda c: c.unit)
    assert [c.unit for c in units] == [0, 1, 2, 3]  # one class per register of the range
    assert all(c.width == 1 and c.bundle == units[0].bundle for c in units)
    assert [c.offset for c in units] == [0, 1, 2, 3]
    stores = [op for op in live.ops if getattr(op, "mnemonic_text", "") ==
              "global_store_dword"]
    for k, op in enumerate(stores):
        assert live.reads_of(op) & set(units) == {units[k]}  # the store reads one register
        left = {c.unit for c in live.live_after(op) if c in units}
        assert left == set(range(k + 1, 4))  # the stored register is free again
    # The views themselves read and write nothing.
    split = next(op for op in live.ops if isinstance(op, SplitRegisterRangeOp))
    assert not live.reads_of(split) and not live.writes_of(split)


def test_writing_a_piece_is_a_partial_write():
    body = PROLOGUE + """\
    %c1 = arith.constant 1 : i32
    %x = amdgcn.vop2 v_add_u32 %r1, %c1, %r1 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %all = amdgcn.make_register_range %r0, %x, %r2, %r3 : !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr
    %st = amdgcn.global global_store_dwordx4 %tid, %all, %p : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 4]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
"""
    module = kernel_text(body, args="a: buffer")
    live = analyze_kernel(kernels_of(module)[0])
    add = next(op for op in live.ops if getattr(op, "mnemonic_text", "") == "v_add_u32")
    (written,) = live.writes_of(add)
    assert written.unit == 1
    others = {c for c in live.live_before(add) if c.unit is not None} - {written}
    assert {c.unit for c in others} == {0, 2, 3}
    assert others <= live.live_after(add)  # not killed by the write of register 1
    assert not live.view_conflicts  # %x is register 1 of the range already
    report = allocate(module)
    assert report.view_copies == []
    assert reg_of(module, "ld") == "!amdgcn.vgpr<[4:8], align 4>"
    assert (reg_of(module, "x"), reg_of(module, "all")) == ("!amdgcn.vgpr<5>",
                                                            "!amdgcn.vgpr<[4:8]>")


# --- allocation ------------------------------------------------------------------------------


def test_made_range_of_computed_values_is_consecutive_and_aligned():
    body = PROLOGUE.split("    %r = ")[0] + vmov("x0", 10) + vmov("x1", 11) + vmov("x2", 12) \
        + vmov("x3", 13) + """\
    %q = amdgcn.make_register_range %x0, %x1, %x2, %x3 : !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr -> !amdgcn.vgpr<[? + 4], align 4>
    %st = amdgcn.global global_store_dwordx4 %tid, %q, %p : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 4], align 4>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
"""
    module = kernel_text(body, args="a: buffer")
    report = allocate(module)
    # v0 is the work-item id; the range must start at a multiple of 4: v4..v7, in order.
    assert [reg_of(module, f"x{k}") for k in range(4)] == \
        [f"!amdgcn.vgpr<{4 + k}>" for k in range(4)]
    assert reg_of(module, "q") == "!amdgcn.vgpr<[4:8], align 4>"
    assert report.view_copies == [] and report.files["v"].used == 5


def test_a_live_piece_blocks_exactly_its_register():
    # While %r3 is still to be stored, three new values need registers; v1-v3 are reserved
    # and only v0-v7 exist: they fit only in the registers of the pieces already stored
    # (v4, v5, v6), never in %r3's v7.
    body = PROLOGUE + store("r0", 0) + store("r1", 4) + store("r2", 8) + vmov("y", 7) \
        + vmov("z", 8) + vmov("w", 9) + store("y", 16) + store("z", 20) + store("w", 24) \
        + store("r3", 12)
    module = kernel_text(body, args="a: buffer")
    allocate(module, reserve="v1-v3", **{"max-vgprs": "8"})
    assert reg_of(module, "ld") == "!amdgcn.vgpr<[4:8], align 4>"
    assert [reg_of(module, n) for n in ("y", "z", "w")] == \
        ["!amdgcn.vgpr<4>", "!amdgcn.vgpr<5>", "!amdgcn.vgpr<6>"]
    # With the range kept whole until its last read, the same kernel does not fit.
    whole = kernel_text(PROLOGUE + vmov("y", 7) + vmov("z", 8) + vmov("w", 9)
                        + store("y", 16) + store("z", 20) + store("w", 24)
                        + "    %st = amdgcn.global global_store_dwordx4 %tid, %ld, %p : "
                        "(!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 4], align 4>, "
                        "!amdgcn.sgpr<[2:4]>) -> !amdgcn.token\n", args="a: buffer")
    with pytest.raises(RegisterAllocationError, match="does not fit in the VGPRs"):
        allocate_module(whole, reserve="v1-v3", **{"max-vgprs": "8"})


def test_halves_of_a_relocatable_pair_are_its_registers():
    body = PROLOGUE.split("    %r = ")[0] + """\
    %a = amdgcn.alloca : !amdgcn.vgpr<[? + 2], align 2>
    %la, %ta = amdgcn.global global_load_dwordx2 %a, %tid, %p : (!amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr<0>, !amdgcn.sgpr<[2:4]>) -> (!amdgcn.vgpr<[? + 2], align 2>, !amdgcn.token)
    amdgcn.sopp s_waitcnt vmcnt = 0
    %lo, %hi = amdgcn.split_register_range %la : !amdgcn.vgpr<[? + 2], align 2>
    %vcc = amdgcn.alloca : !amdgcn.special<vcc>
    %c16 = arith.constant 16 : i32
    %lo2, %vcc2 = amdgcn.vop2 v_add_co_u32 %lo, %vcc, %c16, %lo : (!amdgcn.vgpr, !amdgcn.special<vcc>, i32, !amdgcn.vgpr) -> (!amdgcn.vgpr, !amdgcn.special<vcc>)
    %hi2, %vcc3 = amdgcn.vop2 v_addc_co_u32 %hi, %vcc2, %c0, %hi, %vcc2 : (!amdgcn.vgpr, !amdgcn.special<vcc>, i32, !amdgcn.vgpr, !amdgcn.special<vcc>) -> (!amdgcn.vgpr, !amdgcn.special<vcc>)
    %addr = amdgcn.make_register_range %lo2, %hi2 : !amdgcn.vgpr, !amdgcn.vgpr
    %off = amdgcn.off
    %st = amdgcn.global global_store_dword %addr, %tid, %off : (!amdgcn.vgpr<[? + 2]>, !amdgcn.vgpr<0>, !amdgcn.off) -> !amdgcn.token
"""
    module = kernel_text(body, args="a: buffer")
    report = allocate(module)
    assert report.view_copies == []
    assert (reg_of(module, "la"), reg_of(module, "lo2"), reg_of(module, "hi2")) == \
        ("!amdgcn.vgpr<[2:4], align 2>", "!amdgcn.vgpr<2>", "!amdgcn.vgpr<3>")
    assert reg_of(module, "addr") == "!amdgcn.vgpr<[2:4]>"


# --- copies ------------------------------------------------------------------------------


def test_pieces_out_of_order_are_copied_and_reported():
    # (r1 and r3 are stored first: the copy of r0 can then take r3's register, after r2)
    body = PROLOGUE + store("r1", 4) + store("r3", 12) + """\
    %sw = amdgcn.make_register_range %r2, %r0 : !amdgcn.vgpr, !amdgcn.vgpr
    %s1 = amdgcn.global global_store_dwordx2 %tid, %sw, %p : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 2]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
"""
    module = kernel_text(body, args="a: buffer", filename="swap.mlir")
    with pytest.warns(RegisterCopyWarning, match=r"swap.mlir:15:5: operand #1 \(%r0\) of "
                                                 r"amdgcn.make_register_range copied: it "
                                                 r"already sits elsewhere"):
        report = allocate(module)
    assert len(report.view_copies) == 1
    assert "make_register_range operands copied: 1\n    swap.mlir:15:5: operand #1" in \
        report.text()
    movs = [op for op in kernels_of(module)[0].walk() if isinstance(op, InstructionOp)
            and op.mnemonic_text == "v_mov_b32"]
    assert len(movs) == 1 and movs[0].args[1].name_hint == "r0"
    assert (reg_of(module, "ld"), reg_of(module, "sw")) == ("!amdgcn.vgpr<[4:8], align 4>",
                                                            "!amdgcn.vgpr<[6:8]>")


def test_swapped_halves_are_both_copied():
    # join(r1, r0): r0 cannot follow r1 inside the range, and a copy of it alone would make
    # a pair starting at r1's odd register, which a 64-bit store does not take: both move.
    body = PROLOGUE + """\
    %sw = amdgcn.make_register_range %r1, %r0 : !amdgcn.vgpr, !amdgcn.vgpr
    %s1 = amdgcn.global global_store_dwordx2 %tid, %sw, %p : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 2]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
""" + store("r2", 8) + store("r3", 12)
    module = kernel_text(body, args="a: buffer")
    with pytest.warns(RegisterCopyWarning, match="needs 2-register alignment"):
        report = allocate(module)
    assert len(report.view_copies) == 2


def test_a_value_in_two_ranges_at_different_places_is_copied():
    body = PROLOGUE.split("    %r = ")[0] + vmov("x", 1) + vmov("y", 2) + """\
    %j1 = amdgcn.make_register_range %x, %y : !amdgcn.vgpr, !amdgcn.vgpr
    %j2 = amdgcn.make_register_range %y, %x : !amdgcn.vgpr, !amdgcn.vgpr
    %s1 = amdgcn.global global_store_dwordx2 %tid, %j1, %p : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 2]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
    %s2 = amdgcn.global global_store_dwordx2 %tid, %j2, %p offset = 8 : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 2]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
"""
    module = kernel_text(body, args="a: buffer")
    with pytest.warns(RegisterCopyWarning):
        report = allocate(module)
    # x is y's even neighbour in %j1: in %j2 y would come first, at an odd register, which
    # the 64-bit store does not take: both operands of %j2 are copied.
    assert [re.search(r"operand #\d \(%\w+\) of", n).group(0) for n in report.view_copies] \
        == ["operand #1 (%x) of", "operand #0 (%y) of"]
    assert "%x_copy" in print_ir(module) and "%y_copy" in print_ir(module)


def test_ranges_sharing_an_operand_with_live_neighbours_are_isolated():
    # %j1 = (x, y) and %j2 = (x, z) are both live at the store of %j2: y and z would share
    # x's neighbour. Copying z alone does not help (the copy is x's neighbour too), so both
    # operands of %j2 are copied.
    body = PROLOGUE.split("    %r = ")[0] + vmov("x", 1) + vmov("y", 2) + vmov("z", 3) + """\
    %j1 = amdgcn.make_register_range %x, %y : !amdgcn.vgpr, !amdgcn.vgpr
    %j2 = amdgcn.make_register_range %x, %z : !amdgcn.vgpr, !amdgcn.vgpr
    %s2 = amdgcn.global global_store_dwordx2 %tid, %j2, %p offset = 8 : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 2]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
    %s1 = amdgcn.global global_store_dwordx2 %tid, %j1, %p : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 2]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
"""
    module = kernel_text(body, args="a: buffer")
    with pytest.warns(RegisterCopyWarning):
        report = allocate(module)
    assert [re.search(r"operand #\d", n).group(0) for n in report.view_copies] == \
        ["operand #1", "operand #0"]


@pytest.mark.parametrize(("kind", "mnemonic", "copied"), [
    ("s", "s_mov_b32", 2),  # SGPR quads are 4-aligned: hi cannot start one, both move
    ("a", "v_accvgpr_mov_b32", 1),  # srcC is 2-aligned: lo moves after hi
])
def test_copies_use_the_move_of_the_register_file(kind, mnemonic, copied):
    kb = KernelBuilder("k")
    rng = kb.sregs(4, align=4) if kind == "s" else kb.aregs(4, align=4)
    if kind == "s":
        rng = kb.s_load_dwordx4(rng, kb.kernarg_ptr(), 0)
    else:
        rng = kb.v_mfma_f32_16x16x16_f16(rng, kb.vregs(2), kb.vregs(2), 0)
    lo, hi = kb.split(rng, 2, 2)
    swapped = kb.join(hi, lo)
    if kind == "s":
        kb.s_store_dwordx4(swapped, kb.kernarg_ptr(), 0)
    else:
        kb.v_mfma_f32_16x16x16_f16(kb.aregs(4, align=4), kb.vregs(2), kb.vregs(2), swapped)
    kb.s_endpgm()
    module = kb.finish()
    with pytest.warns(RegisterCopyWarning):
        report = allocate(module)
    moves = [op for op in kernels_of(module)[0].walk() if isinstance(op, InstructionOp)
             and op.mnemonic_text == mnemonic]
    assert len(report.view_copies) == copied and len(moves) == 2 * copied  # one per register


def test_a_pinned_range_that_cannot_be_placed_names_the_op():
    body = PROLOGUE.split("    %r = ")[0] + vmov("x", 1) + vmov("y", 2) + """\
    %v4 = amdgcn.alloca : !amdgcn.vgpr<4>
    %c9 = arith.constant 9 : i32
    %h = amdgcn.vop1 v_mov_b32 %v4, %c9 : (!amdgcn.vgpr<4>, i32) -> !amdgcn.vgpr<4>
    %j = amdgcn.make_register_range %x, %y : !amdgcn.vgpr, !amdgcn.vgpr -> !amdgcn.vgpr<[4:6]>
    %s1 = amdgcn.global global_store_dwordx2 %tid, %j, %p : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[4:6]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
""" + store("h", 8, "!amdgcn.vgpr<4>")
    module = kernel_text(body, args="a: buffer", filename="pin.mlir")
    with pytest.warns(RegisterCopyWarning), pytest.raises(RegisterAllocationError) as info:
        allocate_module(module)
    err = info.value
    assert re.search(r"amdgcn\.make_register_range: the operands \(%x, %y\) cannot be placed "
                     r"as one range, not even as copies in fresh registers: %x_copy would "
                     r"have to be in v4 \(pinned by the range\), which other pinned values "
                     r"use at the same time", err.message), err.message
    assert (err.location.file, err.location.line) == ("pin.mlir", 18)


def test_a_misaligned_piece_in_an_aligned_slot_is_an_error():
    body = PROLOGUE + """\
    %m0, %mid, %m3 = amdgcn.split_register_range %ld : !amdgcn.vgpr<[? + 4], align 4> -> !amdgcn.vgpr, !amdgcn.vgpr<[? + 2]>, !amdgcn.vgpr
    %st = amdgcn.global global_store_dwordx2 %tid, %mid, %p : (!amdgcn.vgpr<0>, !amdgcn.vgpr<[? + 2]>, !amdgcn.sgpr<[2:4]>) -> !amdgcn.token
    %d = amdgcn.alloca : !amdgcn.vgpr<[? + 2]>
    %c1 = arith.constant 1 : i32
    %sh = amdgcn.vop3 v_lshlrev_b64 %d, %c1, %mid : (!amdgcn.vgpr<[? + 2]>, i32, !amdgcn.vgpr<[? + 2]>) -> !amdgcn.vgpr<[? + 2]>
"""
    module = kernel_text(body, args="a: buffer", filename="al.mlir")
    with pytest.raises(RegisterAllocationError,
                       match=r"al\.mlir:14:5: amdgcn\.global global_store_dwordx2: operand "
                             r"#1 \(%mid\) needs 2-register alignment, which its registers' "
                             r"place in their range does not allow \(copy the piece"):
        allocate_module(module)


# --- waits, schedule, dce, copy-prop, inline -----------------------------------------------


def test_waits_before_allocation_track_pieces():
    body = PROLOGUE.replace("    amdgcn.sopp s_waitcnt vmcnt = 0\n", "") + """\
    %q = amdgcn.alloca : !amdgcn.vgpr<[? + 2]>
    %lq, %tq = amdgcn.global global_load_dwordx2 %q, %tid, %p offset = 64 : (!amdgcn.vgpr<[? + 2]>, !amdgcn.vgpr<0>, !amdgcn.sgpr<[2:4]>) -> (!amdgcn.vgpr<[? + 2]>, !amdgcn.token)
    %u = amdgcn.alloca : !amdgcn.vgpr
    %c5 = arith.constant 5 : i32
    %other = amdgcn.vop1 v_mov_b32 %u, %c5 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %e = amdgcn.alloca : !amdgcn.vgpr
    %x = amdgcn.vop2 v_add_u32 %e, %c5, %r2 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %x0 = amdgcn.alloca : !amdgcn.vgpr
    %x1 = amdgcn.alloca : !amdgcn.vgpr
    %j = amdgcn.make_register_range %x0, %x1 : !amdgcn.vgpr, !amdgcn.vgpr
    %lj, %tj = amdgcn.global global_load_dwordx2 %j, %tid, %p offset = 128 : (!amdgcn.vgpr<[? + 2]>, !amdgcn.vgpr<0>, !amdgcn.sgpr<[2:4]>) -> (!amdgcn.vgpr<[? + 2]>, !amdgcn.token)
    %e2 = amdgcn.alloca : !amdgcn.vgpr
    %y = amdgcn.vop2 v_add_u32 %e2, %c5, %x1 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
"""
    module = kernel_text(body, args="a: buffer")
    lines = [ln.strip() for ln in print_ir(api.optimize(module, "waits")).splitlines()]
    waits = [(ln, nxt) for ln, nxt in zip(lines, lines[1:]) if "s_waitcnt" in ln]
    # Reading register 2 of the first load's range waits for it (vmcnt 1: the later load
    # may stay in flight); reading %x1 waits for the load into the range made of it.
    assert [(w.split("s_waitcnt")[1].strip(), n.split(" = ")[0]) for w, n in waits] == [
        ("lgkmcnt = 0", "%r"), ("vmcnt = 1", "%x"), ("vmcnt = 0", "%y")]


def test_schedule_keeps_views_between_producer_and_users():
    module = build_mfma_store("gfx942")
    scheduled = api.optimize(module, "schedule,regalloc,waits,hazards")
    ops = list(kernels_of(scheduled)[0].body.walk())
    position = {op: k for k, op in enumerate(ops)}
    for op in ops:
        if isinstance(op, SplitRegisterRangeOp | MakeRegisterRangeOp):
            for v in op.operands:
                assert position[v.owner] < position[op]
            users = [u.operation for r in op.results for u in r.uses]
            assert users and all(position[op] < position[u] for u in users)
    run_mfma_store(scheduled)


def test_dce_removes_unused_views_and_copy_prop_leaves_pieces_alone():
    kb = KernelBuilder("k")
    acc = kb.v_mfma_f32_16x16x16_f16(kb.vregs(4, align=4), kb.vregs(2), kb.vregs(2), 0)
    kb.split(acc)  # nothing reads the pieces
    kb.join(kb.vreg(), kb.vreg())
    kb.s_endpgm()
    module = api.optimize(kb.finish(), "dce")
    assert not [op for op in module.walk()
                if isinstance(op, SplitRegisterRangeOp | MakeRegisterRangeOp)]
    run_mfma_store(api.optimize(build_mfma_store("gfx942"), "copy-prop,dce"), "auto")


def test_inlined_fragment_splits_the_callers_register():
    text = """\
amdgcn.module @m target = "gfx942" {
  func.func @hi_plus_one(%x : !amdgcn.vgpr<[? + 2]>) -> !amdgcn.vgpr {
    %lo, %hi = amdgcn.split_register_range %x : !amdgcn.vgpr<[? + 2]>
    %c1 = arith.constant 1 : i32
    %r = amdgcn.vop2 v_add_u32 %hi, %c1, %hi : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    func.return %r : !amdgcn.vgpr
  }
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    %v = amdgcn.alloca : !amdgcn.vgpr<[4:6]>
    %r = func.call @hi_plus_one(%v) : (!amdgcn.vgpr<[4:6]>) -> !amdgcn.vgpr
    amdgcn.sopp s_endpgm
  }
}
"""
    # (the verifier wants the call's types to be the fragment's: the inliner's relocatable
    # argument for a fixed register is for modules built without verification)
    module = parse_ir(text, "t.mlir", verify=False)
    assert inline_module(module) == 1
    verify_module(module)  # the pieces are now v4 and v5
    text = print_ir(module)
    assert "amdgcn.split_register_range %v : !amdgcn.vgpr<[4:6]>\n" in text
    assert "v_add_u32 %hi, %c1, %hi : (!amdgcn.vgpr<5>, i32, !amdgcn.vgpr<5>)" in text
    lower_module(module)


# --- on the emulator ---------------------------------------------------------------------


def build_mfma_store(target: str):
    """C = A @ B for one 16x16x16 f16 tile; the accumulator is stored one dword per register
    (lane l, register j holds C[4*(l//16) + j][l % 16]), all registers relocatable."""
    kb = KernelBuilder("mfma_store", target=target, workgroup_size=(64, 1, 1))
    a = kb.arg_buffer("a", "f16", access="read_only")
    bt = kb.arg_buffer("bt", "f16", access="read_only")
    c = kb.arg_buffer("c", "f32", access="write_only")
    kp = kb.kernarg_ptr()
    pa, pb, pc = (kb.s_load_dwordx2(None, kp, arg) for arg in (a, bt, c))
    tid = kb.workitem_id("x")
    r = kb.v_and_b32(None, 15, tid)
    q4 = kb.v_lshlrev_b32(None, 2, kb.v_lshrrev_b32(None, 4, tid))
    # Lane l: A[l % 16][4q..4q+3] and B^T[l % 16][4q..4q+3] (4 f16 = 2 dwords each).
    off = kb.v_lshlrev_b32(None, 1, kb.v_mad_u32_u24(None, r, 16, q4))
    fa = kb.global_load_dwordx2(kb.vregs(2, align=2), off, pa)
    fb = kb.global_load_dwordx2(kb.vregs(2, align=2), off, pb)
    acc = kb.v_mfma_f32_16x16x16_f16(kb.vregs(4, align=4), fa, fb, 0)
    for j in range(4):
        row = kb.v_add_u32(None, j, q4)
        byte = kb.v_lshlrev_b32(None, 2, kb.v_mad_u32_u24(None, row, 16, r))
        kb.global_store_dword(byte, kb.sub(acc, j), pc)
    kb.s_endpgm()
    return kb.finish()


def run_mfma_store(module, pipeline: str = "", target: str = "gfx942"):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    code = asterism.compile(module, pipeline=pipeline)
    asterism.launch(code, "mfma_store", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[a, np.ascontiguousarray(b.T), c], backend="emu")
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_mfma_accumulator_stored_dword_by_dword_matches_numpy(target):
    module = build_mfma_store(target)
    before = print_ir(module)
    assert "s_waitcnt" not in before and "s_nop" not in before
    run_mfma_store(api.optimize(module, "auto"), target=target)


def test_every_wait_and_nop_on_pieces_is_needed():
    """Each s_waitcnt and s_nop that auto placed is removed in turn: the sanitizer reports
    every removal (the waits on the loaded pointer and fragments and the nops before the
    reads of the accumulator's registers are all needed)."""
    text = print_ir(api.optimize(build_mfma_store("gfx942"), "auto")).splitlines()
    placed = [k for k, line in enumerate(text) if "amdgcn.sopp s_waitcnt" in line
              or "amdgcn.sopp s_nop" in line]
    kinds = {text[k].split("amdgcn.sopp ")[1].split()[0] for k in placed}
    assert kinds == {"s_waitcnt", "s_nop"}
    run_mfma_store(parse_ir("\n".join(text)))
    for k in placed:
        weaker = parse_ir("\n".join(text[:k] + text[k + 1:]))
        with pytest.raises(SanitizerError):
            run_mfma_store(weaker)


def build_address_math(target: str = "gfx942"):
    """out[i] = in[i] + 1 with every address 64-bit arithmetic on register halves: the VGPR
    pair of in + 4i by v_add_co_u32 / v_addc_co_u32 on the halves of a relocatable pair
    (through carries: + 4i + 4, then + 0xfffffffc with 0xffffffff on the high half), the
    SGPR pair of out by s_add_u32 / s_addc_u32 on the halves of the loaded pointer (the same
    way), then a VGPR pair again."""
    kb = KernelBuilder("address_math", target=target, workgroup_size=(64, 1, 1))
    src = kb.arg_buffer("src", "u32", access="read_only")
    dst = kb.arg_buffer("dst", "u32", access="write_only")
    kp = kb.kernarg_ptr()
    psrc = kb.s_load_dwordx2(None, kp, src)
    pdst = kb.s_load_dwordx2(None, kp, dst)
    tid = kb.workitem_id("x")
    byte = kb.v_lshlrev_b32(None, 2, tid)
    lo, hi = kb.split(psrc)
    pair = kb.join(kb.v_mov_b32(None, lo), kb.v_mov_b32(None, hi))
    vlo, vhi = kb.split(pair)
    vlo, _c = kb.v_add_co_u32(vlo, kb.v_add_u32(None, 4, byte), vlo)
    vhi, _c = kb.v_addc_co_u32(vhi, 0, vhi)
    vlo, _c = kb.v_add_co_u32(vlo, -4, vlo)  # + 0xfffffffc: carries into the high half
    vhi, _c = kb.v_addc_co_u32(vhi, -1, vhi)  # + 0xffffffff + carry
    x = kb.global_load_dword(None, kb.join(vlo, vhi), kb.off)
    y = kb.v_add_u32(None, 1, x)
    slo, shi = kb.split(pdst)
    slo = kb.s_add_u32(slo, slo, 8)
    shi = kb.s_addc_u32(shi, shi, 0)
    slo = kb.s_add_u32(slo, slo, -8)
    shi = kb.s_addc_u32(shi, shi, -1)
    out = kb.join(kb.v_mov_b32(None, slo), kb.v_mov_b32(None, shi))
    olo, ohi = kb.split(out)
    olo, _c = kb.v_add_co_u32(olo, byte, olo)
    ohi, _c = kb.v_addc_co_u32(ohi, 0, ohi)
    kb.global_store_dword(kb.join(olo, ohi), y, kb.off)
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_64_bit_address_arithmetic_on_halves_matches_numpy(target):
    module = api.optimize(build_address_math(target), "auto")
    kernel = kernels_of(module)[0]
    assert check_pieces(kernel) > 0
    text = print_ir(module)
    assert "v_mov_b32" in text and text.count("v_addc_co_u32") == 3
    src = np.arange(64, dtype=np.uint32) * 7 + 0xFFFFFFF0
    dst = np.zeros(64, np.uint32)
    asterism.launch(asterism.compile(module), "address_math", grid=(1, 1, 1),
                    block=(64, 1, 1), args=[src, dst], backend="emu")
    np.testing.assert_array_equal(dst, src + np.uint32(1))
