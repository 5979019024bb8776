"""Register allocation: quality (used == peak), pins and reserved regions, alignment, tied
operands, coalescing, budgets and errors; every allocation is checked by symbolic execution
(test_passes_regalloc_helpers) and the end-to-end kernels run on the emulator."""

from __future__ import annotations

import numpy as np
import pytest
from test_passes_regalloc_helpers import all_fixed, check_allocation, classes_before

import asterism
from asterism.builder import KernelBuilder, ModuleBuilder
from asterism.errors import AsterismError, ParseError
from asterism.ir import lower_module, parse_ir, print_ir
from asterism.ir.types import RegisterType
from asterism.passes.liveness import analyze_kernel
from asterism.passes.machine import kernels_of
from asterism.passes.regalloc import (
    Limits,
    RegisterAllocationError,
    allocate_kernel,
    allocate_module,
)
from asterism.target import get_target


def allocate(module, **options):
    """Allocate, check the result independently, return the single kernel's report."""
    kernel = kernels_of(module)[0]
    before = classes_before(kernel)
    (report,) = allocate_module(module, **options)
    assert all_fixed(kernel)
    check_allocation(kernel, before)
    lower_module(module)  # the output lowers
    return report


def text_kernel(body: str, extra: str = "", filename: str = "t.mlir"):
    return parse_ir('amdgcn.module @m target = "gfx942" {\n'
                    f'  amdgcn.kernel @k args() workgroup_size(64, 1, 1){extra} {{\n'
                    f'{body}    amdgcn.sopp s_endpgm\n  }}\n}}\n', filename)


def regs(module, hint: str) -> list[str]:
    """The registers the values named `hint...` got (in program order)."""
    out = []
    for op in module.walk():
        for r in op.results:
            if r.name_hint == hint and isinstance(r.type, RegisterType):
                out.append(r.type.asm())
    return out


# --- quality ------------------------------------------------------------------------------


def build_sum_tree(n: int):
    """n values loaded, then summed pairwise: peak n + address registers."""
    kb = KernelBuilder("tree")
    kb.arg_buffer("x", "f32")
    addr = kb.v_lshlrev_b32(None, 2, kb.workitem_id("x"))
    base = kb.s_load_dwordx2(None, kb.kernarg_ptr(), 0)
    kb.s_waitcnt(lgkmcnt=0)
    vals = [kb.global_load_dword(None, addr, base, offset=4 * k) for k in range(n)]
    kb.s_waitcnt(vmcnt=0)
    while len(vals) > 1:
        vals = [kb.v_add_f32(None, a, b) for a, b in zip(vals[::2], vals[1::2])] + \
            vals[len(vals) // 2 * 2:]
    kb.global_store_dword(addr, vals[0], base)
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("n", [1, 7, 32, 200])
def test_used_equals_peak_on_straight_line(n):
    report = allocate(build_sum_tree(n))
    v = report.files["v"]
    assert v.peak == n + 1 and v.used == v.peak and v.span == v.peak
    s = report.files["s"]
    assert s.used == s.peak
    assert report.optimal


def build_mixed_widths(seed: int):
    """Ranges of 1, 2 and 4 registers (aligned 1, 2, 4) with overlapping lifetimes."""
    import random

    rng = random.Random(seed)
    kb = KernelBuilder("mixed")
    live: list = []
    for _ in range(60):
        if live and rng.random() < 0.45:
            v = live.pop(rng.randrange(len(live)))
            w = v.type.width
            sink = kb.vregs(w, align=w) if w > 1 else kb.vreg()
            if w == 1:
                kb.v_mov_b32(sink, v)
            elif w == 2:
                kb.v_mov_b64(sink, v)
            else:
                kb.v_mfma_f32_4x4x4_16b_f16(sink, kb.v_mov_b64(None, 0), kb.v_mov_b64(None, 0), v)
            continue
        w = rng.choice([1, 1, 2, 4])
        if w == 1:
            live.append(kb.v_mov_b32(None, rng.randrange(60)))
        elif w == 2:
            live.append(kb.v_mov_b64(kb.vregs(2, align=2), 0))
        else:
            acc = kb.vregs(4, align=4)
            live.append(kb.v_mfma_f32_4x4x4_16b_f16(acc, kb.v_mov_b64(None, 0),
                                                     kb.v_mov_b64(None, 0), 0))
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("seed", range(6))
def test_mixed_widths_are_checked_and_near_peak(seed):
    report = allocate(build_mixed_widths(seed))
    v = report.files["v"]
    # Alignment can force a gap above the peak; these programs always pack.
    assert v.used == v.peak, report.text()


def test_loop_kernel_allocation_is_optimal():
    kb = KernelBuilder("loop")
    acc = kb.v_mov_b32(None, 0)
    i = kb.s_mov_b32(None, 16)
    top = kb.label("top")
    t = kb.v_cvt_f32_u32(None, acc)
    u = kb.v_mul_f32(None, t, t)
    w = kb.v_cvt_u32_f32(None, u)
    acc = kb.v_add_u32(acc, w, acc)
    i = kb.s_sub_u32(i, i, 1)
    kb.s_cmp_lg_u32(i, 0)
    kb.s_cbranch_scc1(top)
    kb.s_endpgm()
    module = kb.finish()
    report = allocate(module)
    # acc goes around the loop; t, u, w each live for one instruction: 2 at once.
    assert report.files["v"].used == report.files["v"].peak == 2
    assert report.files["s"].used == report.files["s"].peak == 1
    assert t.type == u.type == w.type != acc.type


# --- pins, reserved regions, alignment ----------------------------------------------------


def test_reserved_regions_stay_untouched():
    kb = KernelBuilder("res")
    S = kb.reserve("S", "v0-v31")
    acc = kb.reserve("O", "v40-v47")
    vals = [kb.v_mov_b32(None, k) for k in range(20)]
    total = vals[0]
    for v in vals[1:]:
        total = kb.v_add_u32(total, total, v)
    kb.v_mov_b32(S[3], total)  # explicitly placed in the region: allowed
    kb.v_mov_b32(acc[0], total)
    kb.s_endpgm()
    module = kb.finish()
    report = allocate(module)
    used = {int(r.type.first) for op in module.walk() for r in op.results
            if isinstance(r.type, RegisterType) and r.type.KIND == "v"}
    relocated = used - {3, 40}
    assert relocated and all(32 <= u < 40 or u >= 48 for u in relocated)
    # The 20 relocatable values use 20 registers (their peak); v3 and v40 are pinned
    # where the author put them, at points where fewer values are live.
    assert len(relocated) == report.files["v"].peak == 20 and report.files["v"].used == 22


def test_reserve_option_and_pins_live_ranges():
    module = text_kernel("""\
    %p = amdgcn.alloca : !amdgcn.vgpr<2>
    %a = amdgcn.alloca : !amdgcn.vgpr
    %b = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %p1 = amdgcn.vop1 v_mov_b32 %p, %c1 : (!amdgcn.vgpr<2>, i32) -> !amdgcn.vgpr<2>
    %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %p2 = amdgcn.vop2 v_add_u32 %p1, %a1, %p1 : (!amdgcn.vgpr<2>, !amdgcn.vgpr, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<2>
    %b1 = amdgcn.vop2 v_add_u32 %b, %c1, %p2 : (!amdgcn.vgpr, i32, !amdgcn.vgpr<2>) -> !amdgcn.vgpr
    %b2 = amdgcn.vop2 v_add_u32 %b1, %c1, %b1 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
""")
    allocate(module, reserve="v0-v1")
    # v0, v1 reserved; v2 is pinned while %p is live; a lands on v3. b starts where p dies,
    # at the v_add that reads p: it may take v2 (the pin is free once p is read).
    assert regs(module, "a") == ["v3"] and regs(module, "b") == ["v2"]


def test_alignment_from_declared_types_and_operand_slots():
    kb = KernelBuilder("align")
    one = kb.v_mov_b32(None, 1)
    pair = kb.v_mov_b64(kb.vregs(2), 0)  # declared align 1; v_mov_b64 needs an even pair
    quad = kb.v_mfma_f32_4x4x4_16b_f16(kb.vregs(4, align=4), pair, pair, 0)
    s2 = kb.s_load_dwordx2(None, kb.kernarg_ptr(), 0)  # SGPR pairs are even
    s4 = kb.s_load_dwordx4(None, s2, 0)  # SGPR quads are 4-aligned
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_buffer_load_dword(None, s4, 0)
    kb.global_store_dwordx4(one, quad, s2)
    kb.s_endpgm()
    module = kb.finish()
    report = allocate(module)
    assert pair.type.first % 2 == 0 and quad.type.first % 4 == 0
    # Placing by start point leaves a hole (one at v0, the pair at v2, the quad at v4); the
    # widest-first order packs them into the peak: the quad takes the dead pair's v[0:3].
    assert report.files["v"].used == report.files["v"].peak == 5
    assert s2.type.first % 2 == 0 and s4.type.first % 4 == 0


def test_tied_and_in_place_accumulators():
    kb = KernelBuilder("tied")

    def mfma(dest, c):
        return kb.v_mfma_f32_4x4x4_16b_f16(dest, kb.v_mov_b64(None, 0), kb.v_mov_b64(None, 0),
                                          c)

    a = kb.v_mov_b32(None, 1.0)
    acc = kb.v_mov_b32(None, 0.0)
    acc2 = kb.v_fmac_f32(acc, a, a)  # tied: the same register by destination passing
    c = mfma(kb.vregs(4, align=2), 0)
    d = mfma(kb.vregs(4, align=2), c)  # c dies here: accumulate in place
    kept = mfma(kb.vregs(4, align=2), d)  # d dies here: in place as well
    other = mfma(kb.vregs(4, align=2), kept)  # kept is read again below: not in place
    final = mfma(kb.vregs(4, align=2), kept)  # kept dies here: in place
    kb.v_add_f32(acc2, acc2, acc2)
    kb.s_endpgm()
    module = kb.finish()
    report = allocate(module)
    assert acc.type == acc2.type
    assert c.type.first == d.type.first == kept.type.first == final.type.first
    assert other.type.first != kept.type.first
    assert report.mfma_hints == 4 and report.mfma_in_place == 3


def test_copies_are_coalesced_and_kept():
    module = text_kernel("""\
    %s = amdgcn.alloca : !amdgcn.vgpr
    %d = amdgcn.alloca : !amdgcn.vgpr
    %e = amdgcn.alloca : !amdgcn.vgpr
    %t = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %s1 = amdgcn.vop1 v_mov_b32 %s, %c1 : (!amdgcn.vgpr, i32) -> !amdgcn.vgpr
    %d1 = amdgcn.vop1 v_mov_b32 %d, %s1 : (!amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %t1 = amdgcn.vop2 v_add_u32 %t, %s1, %d1 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %e1 = amdgcn.vop1 v_mov_b32 %e, %t1 : (!amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
    %t2 = amdgcn.vop2 v_add_u32 %t1, %c1, %t1 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
    %e2 = amdgcn.vop2 v_add_u32 %e1, %t2, %e1 : (!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
""")
    report = allocate(module)
    # d = s while both are read later: same value, same register (the copy stays).
    assert regs(module, "d") == regs(module, "s")
    # e = t, but t is written again while e is live: they need two registers.
    assert regs(module, "e") != regs(module, "t")
    assert report.copies == 2 and report.copies_coalesced == 1
    lines = asterism.translate(module).splitlines()
    assert any(line.strip() == f"v_mov_b32 {regs(module, 'd')[0]}, {regs(module, 's')[0]}"
               for line in lines)


def test_coalescing_can_be_turned_off():
    module = text_kernel("""\
    %s = amdgcn.alloca : !amdgcn.sgpr
    %d = amdgcn.alloca : !amdgcn.sgpr
    %c1 = arith.constant 1 : i32
    %s1 = amdgcn.sop1 s_mov_b32 %s, %c1 : (!amdgcn.sgpr, i32) -> !amdgcn.sgpr
    %d1 = amdgcn.sop1 s_mov_b32 %d, %s1 : (!amdgcn.sgpr, !amdgcn.sgpr) -> !amdgcn.sgpr
    %x1 = amdgcn.sop2 s_add_u32 %s1, %s1, %d1 : (!amdgcn.sgpr, !amdgcn.sgpr, !amdgcn.sgpr) -> !amdgcn.sgpr
""")
    first = module.clone()
    allocate(first)
    assert regs(first, "d") == regs(first, "s") == ["s0"]
    report = allocate(module, coalesce="0")
    assert regs(module, "d") != regs(module, "s") and report.copies_coalesced == 0


def test_copy_from_a_pinned_register_is_coalesced_onto_it():
    module = text_kernel("""\
    %tid = amdgcn.workitem_id x : !amdgcn.vgpr<0>
    %d = amdgcn.alloca : !amdgcn.vgpr
    %c1 = arith.constant 1 : i32
    %d1 = amdgcn.vop1 v_mov_b32 %d, %tid : (!amdgcn.vgpr, !amdgcn.vgpr<0>) -> !amdgcn.vgpr
    %d2 = amdgcn.vop2 v_add_u32 %d1, %c1, %d1 : (!amdgcn.vgpr, i32, !amdgcn.vgpr) -> !amdgcn.vgpr
""")
    report = allocate(module)
    assert regs(module, "d") == ["v0"] and report.copies_coalesced == 1


def test_agprs_and_sgprs_are_allocated_in_their_files():
    kb = KernelBuilder("files")
    a = kb.v_accvgpr_write_b32(kb.areg(), 1)
    b = kb.v_accvgpr_write_b32(kb.areg(), 2)
    x = kb.v_accvgpr_read_b32(None, a)
    y = kb.v_accvgpr_read_b32(None, b)
    s = kb.s_mov_b32(None, 3)
    kb.v_add_u32(x, x, y)
    kb.v_add_u32(x, s, x)
    kb.s_endpgm()
    module = kb.finish()
    report = allocate(module)
    assert {a.type.asm(), b.type.asm()} == {"a0", "a1"}
    assert report.files["a"].used == report.files["a"].peak == 2
    assert s.type.asm() == "s0"


# --- errors -------------------------------------------------------------------------------


def test_too_many_registers_names_the_peak_and_live_values():
    module = build_sum_tree(40)
    with pytest.raises(RegisterAllocationError) as info:
        allocate_module(module, **{"max-vgprs": "16"})
    err = info.value
    assert "does not fit in the VGPRs: 41 are live at once at" in err.message
    assert "16 VGPRs are available (v0-v15)" in err.message
    assert "live there: %" in err.message and "no spilling" in err.message
    assert err.location is not None and err.location.file == __file__
    # The peak is right before the first add (all 40 loaded values and the address).
    assert "before amdgcn.vop2 v_add_f32" in err.message


def test_too_many_registers_in_text_points_at_the_line():
    body = "    %c1 = arith.constant 1 : i32\n"
    pair = "!amdgcn.sgpr<[? + 2]>"
    for k in range(6):
        body += (f"    %a{k} = amdgcn.alloca : {pair}\n"
                 f"    %b{k} = amdgcn.sop1 s_mov_b64 %a{k}, %c1 : ({pair}, i32) -> {pair}\n")
    body += f"    %z = amdgcn.alloca : {pair}\n"
    for k in range(6):
        body += (f"    %w{k} = amdgcn.sop2 s_and_b64 %z, %b{k}, %b{k} : ({pair}, {pair}, "
                 f"{pair}) -> {pair}\n")
    module = text_kernel(body, filename="big.mlir")
    with pytest.raises(RegisterAllocationError) as info:
        allocate_module(module, **{"max-sgprs": "8"})
    err = info.value
    # Six pairs are live before the first s_and_b64 (line 17).
    assert str(err.location) == "big.mlir:17:5"
    assert "12 are live at once" in err.message
    assert "%b1 (s[? + 2], align 2, from big.mlir:7:5)" in err.message
    assert "8 SGPRs are available (s0-s7)" in err.message


def test_conflicting_pins_name_both():
    module = text_kernel("""\
    %a = amdgcn.alloca : !amdgcn.vgpr<5>
    %b = amdgcn.alloca : !amdgcn.vgpr<5>
    %c1 = arith.constant 1 : i32
    %a1 = amdgcn.vop1 v_mov_b32 %a, %c1 : (!amdgcn.vgpr<5>, i32) -> !amdgcn.vgpr<5>
    %b1 = amdgcn.vop1 v_mov_b32 %b, %c1 : (!amdgcn.vgpr<5>, i32) -> !amdgcn.vgpr<5>
    %x = amdgcn.vop2 v_add_u32 %b1, %a1, %b1 : (!amdgcn.vgpr<5>, !amdgcn.vgpr<5>, !amdgcn.vgpr<5>) -> !amdgcn.vgpr<5>
""", filename="pins.mlir")
    with pytest.raises(RegisterAllocationError) as info:
        allocate_module(module)
    err = info.value
    assert "%a" in err.message and "%b" in err.message and "pinned to v5" in err.message
    assert str(err.location) == "pins.mlir:7:5"  # the write of %b1 while %a1 is live
    assert err.message.startswith("%a1 and %b1 are both pinned to v5 and live at once")


def test_fragmented_file_is_an_error_naming_the_value():
    kb = KernelBuilder("frag")
    p0 = kb.v_mov_b32(kb.v(0), 1)  # pinned v0 and v5 stay live across the quad below:
    p5 = kb.v_mov_b32(kb.v(5), 2)  # no 4-aligned quad is free in v0-v7
    quad = kb.v_mfma_f32_4x4x4_16b_f16(kb.vregs(4, align=4), kb.v_mov_b64(None, 0),
                                       kb.v_mov_b64(None, 0), 0)
    kb.v_add_u32(p0, p0, p5)
    kb.v_mfma_f32_4x4x4_16b_f16(quad, kb.v_mov_b64(None, 0), kb.v_mov_b64(None, 0), quad)
    kb.s_endpgm()
    module = kb.finish()
    with pytest.raises(RegisterAllocationError) as info:
        allocate_module(module.clone(), **{"max-vgprs": "8"})
    err = info.value
    assert "no room for %" in err.message and "v[? + 4], align 4" in err.message
    assert "the peak is 8 live" in err.message and "8 VGPRs are available (v0-v7)" in err.message
    assert err.location.file == __file__
    report = allocate(module, **{"max-vgprs": "12"})
    assert quad.type.first == 8 and report.files["v"].used > report.files["v"].peak  # pins


def test_unified_budget():
    kb = KernelBuilder("unified")
    vs = [kb.v_mov_b32(None, k) for k in range(6)]
    as_ = [kb.v_accvgpr_write_b32(kb.areg(), v) for v in vs]
    for a in as_:
        kb.v_accvgpr_read_b32(None, a)
    kb.s_endpgm()
    module = kb.finish()
    with pytest.raises(RegisterAllocationError, match="unified VGPR file"):
        allocate_module(module.clone(), **{"max-total-vgprs": "8"})
    report = allocate(module, **{"max-total-vgprs": "16"})
    assert report.files["a"].used == 6
    limits = Limits.for_target(get_target("gfx942"), max_vgprs=300)
    assert (limits.v, limits.a, limits.s, limits.total_vgprs) == (256, 256, 102, 512)


def test_bad_options():
    module = build_sum_tree(2)
    with pytest.raises(ParseError, match="unknown option 'colour' of pass 'regalloc'"):
        allocate_module(module, colour="1")
    with pytest.raises(ParseError, match="expects an integer"):
        allocate_module(module, **{"max-vgprs": "many"})
    with pytest.raises(ParseError, match="reserve"):
        allocate_module(module, reserve="q7")


def test_calls_must_be_inlined_first():
    module = parse_ir('amdgcn.module @m target = "gfx942" {\n'
                      '  func.func @f() {\n    func.return\n  }\n'
                      '  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {\n'
                      '    func.call @f() : () -> ()\n    amdgcn.sopp s_endpgm\n  }\n}\n', "c.mlir")
    with pytest.raises(RegisterAllocationError, match=r"must be inlined .*inline,regalloc"):
        allocate_module(module)


# --- reports, pipelines, end to end -------------------------------------------------------


def test_report_option_prints_used_vs_peak(capsys):
    module = build_sum_tree(8)
    asterism.api.optimize(module, "regalloc{report=1}")
    err = capsys.readouterr().err
    assert "regalloc @tree (gfx942):" in err
    assert "VGPR  used    9  peak    9" in err and "copies coalesced" in err
    assert "allocated" in err


def test_cli_opt_pipeline(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "k.mlir"
    path.write_text(print_ir(build_sum_tree(3)))
    proc = subprocess.run([sys.executable, "-m", "asterism.cli", "opt", str(path), "--pipeline",
                           "regalloc{report=1}", "--timing"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "!amdgcn.vgpr<[? " not in proc.stdout and "!amdgcn.vgpr<1>" in proc.stdout
    assert "regalloc @tree" in proc.stderr and "pass timing:" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "asterism.cli", "opt", str(path), "--pipeline",
                           "regalloc{max-vgprs=2}"], capture_output=True, text=True)
    assert proc.returncode == 1 and "error: kernel @tree does not fit" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_auto_pipeline_is_scf_pipeline_inline_regalloc_waits_hazards():
    from asterism.passes.pipeline import parse_pipeline
    from asterism.passes.registry import PASSES

    steps = [s.name for s in parse_pipeline("auto")]
    assert steps == ["scf-pipeline", "inline", "regalloc", "waits", "hazards"]
    assert all(name in PASSES for name in steps)


def build_vector_add(waits: bool = True, features: str | None = None):
    kb = ModuleBuilder("m", "gfx942", features).kernel("vadd")
    a = kb.arg_buffer("a", "f32", "read_only")
    b = kb.arg_buffer("b", "f32", "read_only")
    c = kb.arg_buffer("c", "f32", "write_only")
    kp = kb.kernarg_ptr()
    pa = kb.s_load_dwordx2(None, kp, a)
    pb = kb.s_load_dwordx2(None, kp, b)
    pc = kb.s_load_dwordx2(None, kp, c)
    idx = kb.v_lshl_add_u32(None, kb.workgroup_id("x"), 6, kb.workitem_id("x"))
    off = kb.v_lshlrev_b32(None, 2, idx)
    if waits:
        kb.s_waitcnt(lgkmcnt=0)
    x = kb.global_load_dword(None, off, pa)
    y = kb.global_load_dword(None, off, pb)
    if waits:
        kb.s_waitcnt(vmcnt=0)
    z = kb.v_add_f32(None, x, y)
    kb.global_store_dword(off, z, pc)
    kb.s_endpgm()
    return kb.finish()


@pytest.mark.parametrize("features, last_load", [
    # XNACK any (gfx942's default): the three loads form one SMEM soft clause, so no
    # destination may take s[0:1], which they all read (else an s_nop 0 must break it).
    (None, "s_load_dwordx2 s[8:9], s[0:1], 16"),
    (":xnack+", "s_load_dwordx2 s[8:9], s[0:1], 16"),
    # XNACK off: nothing keeps them apart and the dead kernarg pointer's s[0:1] is reused.
    (":xnack-", "s_load_dwordx2 s[0:1], s[0:1], 16"),
])
def test_vector_add_with_relocatable_registers_on_the_emulator(features, last_load):
    module = build_vector_add(features=features)
    hsaco = asterism.compile(module, pipeline="regalloc,hazards")
    n = 512
    rng = np.random.default_rng(3)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    asterism.launch(hsaco, "vadd", grid=(n // 64, 1, 1), block=(64, 1, 1), args=[a, b, c],
                    backend="emu")
    np.testing.assert_array_equal(c, a + b)
    text = asterism.translate(module)
    assert last_load in text
    assert "s_nop" not in text  # kept apart, or no clause to break


def test_soft_clauses_kept_apart_only_while_the_registers_fit():
    module = build_vector_add()
    report = allocate_kernel(kernels_of(module)[0])
    assert report.soft_clauses == "kept apart"
    assert "XNACK soft clauses: kept apart" in report.text()
    # s[0:1] (kernarg pointer), s2 (workgroup id), s[4:5], s[6:7], s[8:9]
    assert report.files["s"].used == report.files["s"].peak == 9
    # 8 SGPRs: room for the kernel only if the last load reuses s[0:1]; the allocator
    # falls back to that and the hazards pass breaks the clause.
    module = build_vector_add()
    report = allocate_kernel(kernels_of(module)[0], limits=Limits(256, 256, 8, 512))
    assert report.soft_clauses == "no room (s_nop breaks)"
    text = asterism.translate(module, "hazards")
    assert "s_nop 0\n\ts_load_dwordx2 s[0:1], s[0:1], 16" in text
    module = build_vector_add(features=":xnack-")
    assert allocate_kernel(kernels_of(module)[0]).soft_clauses == ""


def test_vector_add_with_the_auto_pipeline_on_the_emulator():
    from asterism.passes.registry import PASSES

    if "waits" not in PASSES:
        pytest.skip("the waits pass is not registered in this checkout")
    module = build_vector_add(waits=False)
    hsaco = asterism.compile(module, pipeline="auto")
    n = 256
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, np.float32)
    c = np.zeros(n, np.float32)
    asterism.launch(hsaco, "vadd", grid=(n // 64, 1, 1), block=(64, 1, 1), args=[a, b, c],
                    backend="emu")
    np.testing.assert_array_equal(c, a + b)


def test_allocation_is_deterministic():
    first, second = build_sum_tree(20), build_sum_tree(20)
    allocate_module(first)
    allocate_module(second)
    assert print_ir(first) == print_ir(second)


def test_module_with_two_kernels_and_assignment_map():
    from asterism.builder import ModuleBuilder

    mb = ModuleBuilder("two")
    for name in ("k1", "k2"):
        kb = mb.kernel(name)
        v = kb.v_mov_b32(None, 1)
        kb.v_add_u32(v, v, v)
        kb.s_endpgm()
    module = mb.finish()
    reports = allocate_module(module)
    assert [r.kernel for r in reports] == ["k1", "k2"]
    assert all(t.is_fixed for t in reports[0].assignment.values())
    kernel = kernels_of(module)[1]
    assert analyze_kernel(kernel).pressure()["v"].peak == 1
    report = allocate_kernel(kernel)  # already allocated: nothing changes
    assert report.files["v"].allocated == 0


def test_errors_are_asterism_errors():
    assert issubclass(RegisterAllocationError, AsterismError)


def test_a_load_nobody_reads_keeps_its_register_until_it_completes():
    kb = KernelBuilder("late")
    base = kb.s_load_dwordx2(None, kb.kernarg_ptr(), 0)
    addr = kb.v_lshlrev_b32(None, 2, kb.workitem_id("x"))
    kb.s_waitcnt(lgkmcnt=0)
    dead = kb.global_load_dword(None, addr, base)  # prefetch: the result is never read
    t = kb.v_mov_b32(None, 5)  # written while the load may still write its register
    kb.v_add_u32(t, t, t)
    kb.s_waitcnt(vmcnt=0)  # the load is done: its register is free from here on
    u = kb.v_mov_b32(None, 6)
    kb.global_store_dword(addr, u, base)
    kb.s_endpgm()
    module = kb.finish()
    allocate(module)
    assert t.type.first != dead.type.first
    assert u.type.first in (dead.type.first, t.type.first)


def test_wide_mfma_result_does_not_overlap_dying_sources():
    kb = KernelBuilder("ec")
    a = kb.v_mov_b64(kb.vregs(2, align=2), 0)
    b = kb.v_mov_b64(kb.vregs(2, align=2), 0)
    d = kb.v_mfma_f32_32x32x8_f16(kb.vregs(16, align=2), a, b, 0)
    small = kb.v_mfma_f32_4x4x4_16b_f16(kb.vregs(4, align=2), kb.v_mov_b64(kb.vregs(2), 0),
                                        kb.v_mov_b64(kb.vregs(2), 0), 0)
    kb.v_mfma_f32_32x32x8_f16(kb.vregs(16, align=2), kb.v_mov_b64(None, 0),
                              kb.v_mov_b64(None, 0), d)
    kb.v_mfma_f32_4x4x4_16b_f16(small, kb.v_mov_b64(None, 0), kb.v_mov_b64(None, 0), small)
    kb.s_endpgm()
    module = kb.finish()
    allocate(module)
    d_regs = set(range(d.type.first, d.type.first + 16))
    assert not d_regs & {a.type.first, a.type.first + 1, b.type.first, b.type.first + 1}


def test_seed_layout_fixed_regions_and_relocatable_temporaries():
    """The layout of the request in the seed: S buffers v32-v95, O accumulators v96-v159,
    Q v160-v191, K/V v192-v255, m0 values in s63-s67; everything else is relocatable and
    must fit in what is left (v0-v31)."""

    def build(temps: int):
        kb = KernelBuilder("fa")
        S = kb.reserve("S", "v32-v95")
        acc = kb.reserve("O", "v96-v159")
        Q = kb.reserve("Q", "v160-v191")
        kb.reserve("KV", "v192-v255")
        kb.reserve("M0", "s63-s67")
        live = [kb.v_mov_b32(None, k) for k in range(temps)]
        for k in range(4):
            kb.v_mfma_f32_16x16x16_f16(acc[4 * k:4 * k + 4], S[2 * k:2 * k + 2], Q[0:2],
                                       acc[4 * k:4 * k + 4])
            kb.v_add_u32(live[k], live[k], live[k])
        offs = kb.s_add_u32(None, kb.s_mov_b32(None, 64), 4)
        kb.s_mov_b32(kb.special("m0"), offs)
        total = live[0]
        for v in live[1:]:
            total = kb.v_add_u32(total, total, v)
        kb.s_endpgm()
        return kb.finish(), live + [total, offs]

    module, values = build(31)
    report = allocate(module)
    assert all(v.type.first < 32 for v in values if v.type.KIND == "v")
    assert all(v.type.first < 63 for v in values if v.type.KIND == "s")
    # 31 temporaries + O[0:16] + S[0:8] + Q[0:2], all live before the first MFMA.
    assert report.files["v"].allocated == 31 and report.files["v"].used == 57
    assert report.files["v"].peak == 57 and report.files["v"].limit == 32
    with pytest.raises(RegisterAllocationError) as info:
        allocate_module(build(33)[0])
    assert "33 are live at once" in info.value.message
    assert ("32 VGPRs are available (v0-v255 minus reserved S v[32:95], O v[96:159], "
            "Q v[160:191], KV v[192:255])") in info.value.message


def test_pin_over_a_live_abi_input_is_an_error():
    module = text_kernel("""\
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %s0 = amdgcn.alloca : !amdgcn.sgpr<0>
    %p = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %c1 = arith.constant 1 : i32
    %s1 = amdgcn.sop1 s_mov_b32 %s0, %c1 : (!amdgcn.sgpr<0>, i32) -> !amdgcn.sgpr<0>
    %p1, %t = amdgcn.smem s_load_dwordx2 %p, %kp, %c1 : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
""", filename="abi.mlir")
    with pytest.raises(RegisterAllocationError) as info:
        allocate_module(module)
    err = info.value
    assert err.message.startswith("%kp (s[0:1]) and %s1 (s0) are pinned to overlapping "
                                  "registers and live at once (after amdgcn.sop1 s_mov_b32)")
    assert str(err.location) == "abi.mlir:7:5"


def test_values_read_from_the_entry_agree():
    # Two allocas of the kernarg registers, both only read: the same hardware value.
    module = text_kernel("""\
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>
    %k2 = amdgcn.alloca : !amdgcn.sgpr<[0:2]>
    %p = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %q = amdgcn.alloca : !amdgcn.sgpr<[? + 2]>
    %c0 = arith.constant 0 : i32
    %p1, %t = amdgcn.smem s_load_dwordx2 %p, %kp, %c0 : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
    %q1, %u = amdgcn.smem s_load_dwordx2 %q, %k2, %c0 : (!amdgcn.sgpr<[? + 2]>, !amdgcn.sgpr<[0:2]>, i32) -> (!amdgcn.sgpr<[? + 2]>, !amdgcn.token)
""")
    allocate(module)
    assert regs(module, "p") == ["s[2:3]"]  # s[0:1] stays the kernarg pointer until q's load
