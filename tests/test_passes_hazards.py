"""The hazards pass: s_nop counts per rule and target against hand-computed values.

Expected wait states come from the formulas in asterism.target.hazards (LLVM 22's
GCNHazardRecognizer and the CDNA3/CDNA4 ISA tables): e.g. an XDL MFMA result read by a VALU
needs NumPasses + 3 wait states on gfx942 and NumPasses + 4 on gfx950 (for 4/8/16 passes).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from asterism import api
from asterism.builder import KernelBuilder
from asterism.errors import AsterismError, VerifyError
from asterism.ir import parse_ir, print_ir
from asterism.mc.printer import format_inst
from asterism.passes.hazards import HazardViolations, check_hazards, insert_nops
from asterism.target.hazards import rules_for

TARGETS = ("gfx942", "gfx950")


def kernel(body, target: str = "gfx942"):
    """A kernel whose body `body(kb)` writes with fixed registers."""
    kb = KernelBuilder("k", target)
    kb.arg_buffer("a", "f32")
    body(kb)
    kb.s_endpgm()
    return kb.finish()


def listing(module, pipeline: str = "hazards") -> list[str]:
    """Instructions (and labels) after `pipeline`."""
    mc = api.lower(module, pipeline)
    return [format_inst(i) if hasattr(i, "mnemonic") else f"{i.name}:" for i in mc.kernels[0].body]


def nop_states(lines: list[str]) -> list[int]:
    """Wait states of each run of consecutive s_nops (N + 1 per s_nop N)."""
    runs: list[int] = []
    prev = False
    for line in lines:
        if line.startswith("s_nop"):
            n = int(line.split()[1], 0) + 1
            if prev:
                runs[-1] += n
            else:
                runs.append(n)
            prev = True
        else:
            prev = False
    return runs


def inserted(body, target: str) -> list[int]:
    """Wait states the pass inserts, per place."""
    return nop_states(listing(kernel(body, target)))


def mfma(kb, mnemonic: str, dst: tuple[int, int], a: tuple[int, int], b: tuple[int, int],
         c: tuple[int, int] | int = 0):
    """An MFMA on VGPR ranges given as half-open (first, end) pairs."""
    src2 = kb.v[c[0]:c[1]] if isinstance(c, tuple) else c
    getattr(kb, mnemonic)(kb.v[dst[0]:dst[1]], kb.v[a[0]:a[1]], kb.v[b[0]:b[1]], src2)


def read_v(kb, reg: int, dst: int = 60):
    """A VALU read of v<reg>."""
    kb.v_add_f32(kb.v(dst), 1.0, kb.v(reg))


# ---------------------------------------------------------------------------- MFMA


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mnemonic, width, src, want", [
    # XDL: NumPasses + 3 (gfx950: + 1 more for 4/8/16 passes)
    ("v_mfma_f32_4x4x4_16b_f16", 4, 2, {"gfx942": 5, "gfx950": 5}),       # 2 passes
    ("v_mfma_f32_16x16x16_f16", 4, 2, {"gfx942": 7, "gfx950": 8}),        # 4 passes
    ("v_mfma_f32_32x32x8_f16", 16, 2, {"gfx942": 11, "gfx950": 12}),      # 8 passes
    # SGEMM (f32 inputs): NumPasses + 2
    ("v_mfma_f32_16x16x4_f32", 4, 1, {"gfx942": 10, "gfx950": 10}),       # 8 passes
    ("v_mfma_f32_32x32x2_f32", 16, 1, {"gfx942": 18, "gfx950": 18}),      # 16 passes
    # DGEMM: 11 (gfx942, 8 passes) / 19 (gfx950, 16 passes); 4x4: 6
    ("v_mfma_f64_16x16x4_f64", 8, 2, {"gfx942": 11, "gfx950": 19}),
    ("v_mfma_f64_4x4x4_4b_f64", 2, 2, {"gfx942": 6, "gfx950": 6}),
])
def test_mfma_result_read_by_valu(target, mnemonic, width, src, want):
    def body(kb):
        mfma(kb, mnemonic, (0, width), (32, 32 + src), (34, 34 + src))
        read_v(kb, width - 1)
    assert inserted(body, target) == [want[target]]


@pytest.mark.parametrize("target", TARGETS)
def test_mfma_result_read_by_vmem_and_ds(target):
    def body(kb):
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        kb.global_store_dword(kb.v(40), kb.v(2), kb.s[4:6])
    assert inserted(body, target) == [{"gfx942": 7, "gfx950": 8}[target]]


@pytest.mark.parametrize("target", TARGETS)
def test_independent_instructions_and_hand_nops_count(target):
    need = {"gfx942": 7, "gfx950": 8}[target]

    def body(kb):
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        kb.v_mov_b32(kb.v(50), 0)       # 1 wait state
        kb.s_nop(2)                     # 3 wait states
        read_v(kb, 1)
    lines = listing(kernel(body, target))
    assert lines[1:5] == ["v_mov_b32 v50, 0", "s_nop 2", f"s_nop {need - 4 - 1}",
                          "v_add_f32 v60, 1.0, v1"]


@pytest.mark.parametrize("target", TARGETS)
def test_mfma_srcab_and_overlapping_srcc(target):
    def srcab(kb):
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        mfma(kb, "v_mfma_f32_16x16x16_f16", (8, 12), (2, 4), (34, 36))  # A = part of D
    assert inserted(srcab, target) == [{"gfx942": 7, "gfx950": 8}[target]]

    def overlap(kb):
        mfma(kb, "v_mfma_f32_32x32x8_f16", (0, 16), (32, 34), (34, 36))
        mfma(kb, "v_mfma_f32_16x16x16_f16", (40, 44), (32, 34), (34, 36), (4, 8))
    # NumPasses + 1 (gfx950: + 2) for an overlapping, different SrcC range
    assert inserted(overlap, target) == [{"gfx942": 9, "gfx950": 10}[target]]

    def same(kb):
        mfma(kb, "v_mfma_f32_32x32x8_f16", (0, 16), (32, 34), (34, 36))
        mfma(kb, "v_mfma_f32_32x32x8_f16", (0, 16), (32, 34), (34, 36), (0, 16))
    assert inserted(same, target) == []  # back-to-back accumulation is interlocked

    def same2(kb):
        mfma(kb, "v_mfma_f32_4x4x4_16b_f16", (0, 4), (32, 34), (34, 36))
        mfma(kb, "v_mfma_f32_4x4x4_16b_f16", (0, 4), (32, 34), (34, 36), (0, 4))
    assert inserted(same2, target) == [2]


def test_valu_write_then_mfma_read():
    def body(kb):
        kb.v_mov_b32(kb.v(33), 0)
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
    assert inserted(body, "gfx942") == [2]


# ---------------------------------------------------------------------------- SGPR, EXEC, M0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case, want", [
    ("sgpr_vmem", 5), ("lane_select", 4), ("sgpr_valu", 2), ("exec_mfma", 4),
    ("exec_dpp", 5), ("vgpr_dpp", 2), ("m0_lds_dma", 1), ("m0_movrel", 1),
    ("setreg_getreg", 2), ("trans", 1), ("readlane", 1), ("store_data", 2),
    ("cmpx_exec_read", 2), ("exec_vmem", 5),
])
def test_rule(target, case, want):
    def body(kb):
        if case == "sgpr_vmem":
            kb.v_readfirstlane_b32(kb.s(8), kb.v(2))
            kb.global_load_dword(kb.v(3), kb.v(1), kb.s[8:10])
        elif case == "lane_select":
            kb.v_readfirstlane_b32(kb.s(8), kb.v(2))
            kb.v_readlane_b32(kb.s(9), kb.v(3), kb.s(8))
        elif case == "sgpr_valu":
            kb.v_readfirstlane_b32(kb.s(8), kb.v(2))
            kb.v_add_u32(kb.v(3), kb.s(8), kb.v(2))
        elif case == "exec_mfma":
            kb.v_cmpx_gt_f32_e32(kb.v(4), kb.v(2))
            mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        elif case == "exec_dpp":
            kb.v_cmpx_gt_f32_e32(kb.v(4), kb.v(2))
            kb.v_mov_b32_dpp(kb.v(3), kb.v(4), dpp_ctrl=0x111, row_mask=15, bank_mask=15)
        elif case == "vgpr_dpp":
            kb.v_mov_b32(kb.v(4), 0)
            kb.v_mov_b32_dpp(kb.v(3), kb.v(4), dpp_ctrl=0x111, row_mask=15, bank_mask=15)
        elif case == "m0_lds_dma":
            kb.s_mov_b32(kb.special("m0"), kb.s(8))
            kb.buffer_load_dword(kb.v(1), kb.s[12:16], 0, offen=True, lds=True)
        elif case == "m0_movrel":
            kb.s_mov_b32(kb.special("m0"), kb.s(8))
            kb.s_movrels_b32(kb.s(9), kb.s(10))
        elif case == "setreg_getreg":
            kb.s_setreg_b32(0x1801, kb.s(8))         # hwreg(HW_REG_MODE, 0, 4)
            kb.s_getreg_b32(kb.s(9), 0x1801)
        elif case == "trans":
            kb.v_exp_f32(kb.v(2), kb.v(1))
            kb.v_add_f32(kb.v(3), 1.0, kb.v(2))
        elif case == "readlane":
            kb.v_mov_b32(kb.v(2), 0)
            kb.v_readlane_b32(kb.s(9), kb.v(2), 0)
        elif case == "store_data":
            kb.global_store_dwordx4(kb.v(1), kb.v[4:8], kb.s[4:6])
            kb.v_mov_b32(kb.v(5), 0)
        elif case == "exec_vmem":   # llc: v_cmpx_eq_u32_e32 + global_load -> s_nop 4
            kb.v_cmpx_eq_u32_e32(kb.v(0), kb.v(1))
            kb.global_load_dword(kb.v(3), kb.v(0), kb.s[4:6])
        elif case == "cmpx_exec_read":
            kb.v_cmpx_gt_f32_e32(kb.v(4), kb.v(2))
            kb.v_mov_b32(kb.v(3), kb.special("exec_lo"))
    assert inserted(body, target) == [want]


def test_permlane_gfx950_only():
    def body(kb):
        kb.v_mov_b32(kb.v(2), 0)
        kb.v_permlane32_swap_b32(kb.v(2), kb.v(3))
    assert inserted(body, "gfx950") == [2]


def test_no_hazard_no_nop():
    def body(kb):
        kb.v_mov_b32(kb.v(2), 0)
        kb.v_add_u32(kb.v(3), kb.v(2), kb.v(2))   # VALU -> VALU is interlocked
        kb.global_load_dword(kb.v(4), kb.v(3), kb.s[4:6])
    assert inserted(body, "gfx942") == []


# ---------------------------------------------------------------------------- control flow


def test_hazard_across_a_branch_counts_the_branch():
    def body(kb):
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        nxt = kb.new_label("next")
        kb.s_branch(nxt)                  # 1 wait state
        kb.place(nxt)
        read_v(kb, 1)
    lines = listing(kernel(body))
    assert lines[lines.index("next:") + 1] == "s_nop 5"


def test_join_takes_the_closest_producer():
    # One path reaches the read 1 instruction after the MFMA, the other 4: the nops are
    # placed for the worse path (at the join, before the read).
    def body(kb):
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        kb.s_cmp_eq_u32(kb.s(10), 0)
        join = kb.new_label("join")
        kb.s_cbranch_scc1(join)           # taken: cmp + branch = 2 wait states
        kb.s_nop(2)
        kb.place(join)
        read_v(kb, 1)
    lines = listing(kernel(body))
    assert lines[lines.index("join:") + 1] == "s_nop 4"    # 7 - 2


def test_loop_back_edge():
    # The MFMA at the end of the loop body reaches the read at the top through the back
    # edge (s_sub, s_cmp, s_cbranch = 3 wait states): 7 - 3 = 4 more.
    def body(kb):
        kb.s_mov_b32(kb.s(10), 4)
        top = kb.label("loop")
        read_v(kb, 1)
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        kb.s_sub_u32(kb.s(10), kb.s(10), 1)
        kb.s_cmp_lg_u32(kb.s(10), 0)
        kb.s_cbranch_scc1(top)
    lines = listing(kernel(body))
    assert lines[lines.index("loop:") + 1] == "s_nop 3"
    assert check_hazards(api.optimize(kernel(body), "hazards")) == []


def test_loop_nops_in_the_body_count_for_the_next_iteration():
    def body(kb):
        kb.s_mov_b32(kb.s(10), 4)
        top = kb.label("loop")
        read_v(kb, 1)
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        read_v(kb, 2)                     # gets 7: the back edge then needs nothing
        kb.s_sub_u32(kb.s(10), kb.s(10), 1)
        kb.s_cmp_lg_u32(kb.s(10), 0)
        kb.s_cbranch_scc1(top)
    assert inserted(body, "gfx942") == [7]


# ---------------------------------------------------------------------------- check-only


def test_check_only_reports_pc_rule_and_fix():
    def body(kb):
        kb.v_mov_b32(kb.v(33), 0)                                          # pc 0x0
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))    # pc 0x4
        read_v(kb, 1)                                                      # pc 0xc
    violations = check_hazards(kernel(body))
    assert [(v.pc, v.rule.name, v.need - v.have) for v in violations] == [
        (0x4, "valu_vgpr_mfma", 2), (0xC, "xdl_valu_read", 7)]
    assert "insert s_nop 6" in violations[1].message()
    with pytest.raises(HazardViolations, match="2 hazard violations"):
        api.optimize(kernel(body), "hazards{check-only=1}")
    # after the pass, nothing is left
    assert check_hazards(api.optimize(kernel(body), "hazards")) == []


def test_check_only_clean_code_passes_and_changes_nothing():
    def body(kb):
        kb.v_mov_b32(kb.v(2), 0)
    module = kernel(body)
    before = print_ir(module)
    api.optimize(module, "hazards{check-only=1}")
    assert print_ir(module) == before


def test_cli_verb(tmp_path):
    def body(kb):
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        read_v(kb, 1)
    src = tmp_path / "k.mlir"
    src.write_text(print_ir(kernel(body)))
    run = [sys.executable, "-m", "asterism.cli", "hazards"]
    bad = subprocess.run(run + [str(src)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert "pc 0x8" in bad.stdout and "xdl_valu_read" in bad.stdout
    gfx950 = subprocess.run(run + [str(src), "--target", "gfx950"], capture_output=True,
                            text=True)
    assert "xdl_valu_read_950" in gfx950.stdout and "s_nop 7" in gfx950.stdout
    good = subprocess.run(run + [str(src), "--pipeline", "hazards"], capture_output=True,
                          text=True)
    assert good.returncode == 0 and good.stdout == ""
    asm = tmp_path / "k.s"
    asm.write_text(api.translate(kernel(body), "hazards"))
    assert subprocess.run(run + [str(asm)], capture_output=True).returncode == 0
    asm.write_text(api.translate(kernel(body)))
    assert subprocess.run(run + [str(asm)], capture_output=True).returncode == 1


# ---------------------------------------------------------------------------- misc


def test_relocatable_registers_are_rejected():
    def body(kb):
        kb.v_mov_b32(None, 0)
    with pytest.raises(VerifyError, match="run register allocation first"):
        insert_nops(kernel(body))


def test_bad_option():
    with pytest.raises(AsterismError, match="unknown option 'fix' of pass 'hazards'"):
        api.optimize(kernel(lambda kb: None), "hazards{fix=1}")


def test_long_waits_split_into_several_nops():
    def body(kb):
        mfma(kb, "v_mfma_f32_32x32x2_f32", (0, 16), (32, 33), (33, 34))
        read_v(kb, 15)
    assert [x for x in listing(kernel(body)) if x.startswith("s_nop")] == [
        "s_nop 15", "s_nop 1"]


def test_pass_is_idempotent():
    def body(kb):
        mfma(kb, "v_mfma_f32_16x16x16_f16", (0, 4), (32, 34), (34, 36))
        read_v(kb, 1)
    once = print_ir(api.optimize(kernel(body), "hazards"))
    assert print_ir(api.optimize(parse_ir(once), "hazards")) == once


def test_rules_differ_between_targets():
    names = {t: {r.name for r in rules_for(t)} for t in TARGETS}
    assert "valu_vgpr_permlane" in names["gfx950"] - names["gfx942"]
    assert "xdl_valu_read" in names["gfx942"] - names["gfx950"]
