"""XNACK soft clauses: the rule (asterism.target.hazards), the hazards pass, check-only
reports, the emulator's checker, and llc 22 on code it compiled itself.

The expectations are hand-computed from the rule as LLVM 22 states it
(GCNHazardRecognizer::checkSoftClauseHazards): with XNACK enabled (xnack+, or "any", the
default of a bare "gfx942"/"gfx950"), back-to-back SMEM instructions, or back-to-back VMEM
ones, form a soft clause; once an instruction of the clause writes a register, a joining
instruction may not make a register both written and read within the clause (itself
included), and a store/atomic/LDS DMA may not join at all. `s_nop 0` (or any other
instruction) in between starts a new clause. tests/test_passes_hazards_llvm.py and
tests/test_emu_hazards_llvm.py compare 40 straight-line scenarios with llc for every xnack
setting (tests/data/emu/gen_llvm_hazards.py); the llc tests here (skipped without LLVM 22)
add control flow and a kernel llc compiled from LLVM IR.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_emu_asm import program, run
from test_passes_hazards_llvm import module_of, split

import asterism
from asterism import api
from asterism.builder import ModuleBuilder
from asterism.emu.errors import SanitizerError
from asterism.emu.hazard_check import required_wait_states
from asterism.ir import lower_module, print_ir
from asterism.mc.printer import format_inst
from asterism.passes.hazards import HazardViolations, check_hazards, insert_nops
from asterism.passes.machine import kernel_target, kernels_of
from asterism.target import get_target
from asterism.target.hazards import SoftClause, clause_rules, instruction_classes, rules_for

ON = ("gfx942", "gfx942:xnack+", "gfx950", "gfx950:xnack+")  # XNACK enabled ("any" or +)
OFF = ("gfx942:xnack-", "gfx950:xnack-")
WAR = ["s_load_dwordx2 s[4:5], s[0:1], 0x0", "s_load_dword s0, s[0:1], 0x18", "s_endpgm"]


def listing(module) -> list[str]:
    """The instructions of the first kernel, as asterism prints them (labels left out:
    nops are counted by instruction index)."""
    return [format_inst(i) for i in lower_module(module).kernels[0].body if hasattr(i, "mnemonic")]


def padded(lines: list[str], target: str = "gfx942") -> list[str]:
    """The instructions after the hazards pass."""
    module = module_of(lines, target)
    insert_nops(module)
    return listing(module)


def nops_before(lines: list[str], target: str = "gfx942") -> dict[int, int]:
    """Wait states the pass puts before each instruction (by index, labels not counted) of
    `lines`, which has no s_nop of its own."""
    got_insts, got = split(padded(lines, target))
    assert got_insts == listing(module_of(lines, target))
    return got


# ---------------------------------------------------------------------------- the table


def test_xnack_setting_decides_the_rules():
    names = {"xnack_smem_clause", "xnack_smem_clause_store", "xnack_vmem_clause",
             "xnack_vmem_clause_store"}
    for target in ON:
        assert {r.name for r in clause_rules(rules_for(target))} == names, target
        assert get_target(target).xnack_enabled
    for target in OFF:
        assert clause_rules(rules_for(target)) == ()
        assert not get_target(target).xnack_enabled
    # target IDs and Target objects work as names do; the other rules do not change
    assert clause_rules(rules_for("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-")) == ()
    assert rules_for(get_target("gfx950:xnack+")) == rules_for("gfx950")
    assert len(rules_for("gfx942")) == len(rules_for("gfx942:xnack-")) + 4
    assert all(r.xnack and r.wait_states == 1 for r in clause_rules(rules_for("gfx942")))


@pytest.mark.parametrize("mnemonic, unit, flags, mods, want", [
    ("s_load_dword", "smem", {"may_load"}, {}, {"smem"}),
    ("s_store_dword", "smem", {"may_store"}, {}, {"smem", "smem_store"}),
    ("s_atomic_add", "smem", {"may_load", "may_store", "atomic"}, {}, {"smem", "smem_store"}),
    ("global_load_dword", "vmem", {"may_load"}, {}, {"vmem"}),
    ("global_store_dword", "vmem", {"may_store"}, {}, {"vmem", "vmem_store"}),
    ("global_load_lds_dword", "vmem", {"may_load", "may_store", "lds_dma"}, {},
     {"vmem", "vmem_store", "lds_dma"}),
    ("buffer_load_dword", "vmem", {"may_load"}, {"lds": True}, {"vmem", "vmem_store", "lds_dma"}),
    ("buffer_wbl2", "vmem", set(), {}, {"vmem"}),
])
def test_store_classes(mnemonic, unit, flags, mods, want):
    classes = instruction_classes(mnemonic, unit, frozenset(flags), "X", mods)
    assert classes & {"smem", "smem_store", "vmem", "vmem_store", "lds_dma"} == want


def test_soft_clause_rule_by_hand():
    smem, store = (r for r in rules_for("gfx942") if r.clause == "smem")
    c = SoftClause()
    # a clause without a register written needs nothing, whatever comes
    c.add(frozenset(), frozenset({0, 1}), "store")
    assert c.hazard(frozenset({0}), frozenset({0}), (smem, store)) is None
    c = SoftClause()
    c.add(frozenset({4, 5}), frozenset({0, 1}), "A")  # s_load_dwordx2 s[4:5], s[0:1]
    assert c.hazard(frozenset({6}), frozenset({0, 1}), (smem,)) is None  # independent
    assert c.hazard(frozenset({0}), frozenset({2, 3}), (smem,)) == (smem, "A")  # WAR
    assert c.hazard(frozenset({6}), frozenset({4, 5}), (smem,)) == (smem, "A")  # RAW
    assert c.hazard(frozenset({4}), frozenset({2, 3}), (smem,)) is None  # WAW is allowed
    assert c.hazard(frozenset({8}), frozenset({8, 9}), (smem,)) == (smem, "A")  # itself
    assert c.hazard(frozenset(), frozenset({2, 3}), (smem, store)) == (store, "A")
    # a clause that already reads what it writes takes nobody more
    c = SoftClause()
    c.add(frozenset({0, 1}), frozenset({0, 1}), "self")
    assert c.hazard(frozenset({6}), frozenset({8, 9}), (smem,)) == (smem, "self")
    # joined from two paths: the union, and it grows only once
    a, b = SoftClause(), SoftClause()
    a.add(frozenset({4}), frozenset({0, 1}), "A")
    b.add(frozenset({7}), frozenset({2, 3}), "B")
    assert a.join(b) and not a.join(b)
    assert a.hazard(frozenset({2}), frozenset(), (smem,)) == (smem, "B")


# ---------------------------------------------------------------------------- the pass


@pytest.mark.parametrize("target", ON + OFF)
def test_the_example_gets_one_nop_with_xnack_only(target):
    want = {1: 1} if target in ON else {}
    assert nops_before(WAR, target) == want
    out = padded(WAR, target)
    first, second = "s_load_dwordx2 s[4:5], s[0:1], 0", "s_load_dword s0, s[0:1], 24"
    assert out == [first, *(["s_nop 0"] if want else []), second, "s_endpgm"]


@pytest.mark.parametrize("between", ["s_mov_b32 s7, 0", "s_waitcnt lgkmcnt(0)",
                                     "v_mov_b32_e32 v0, 0", "s_nop 0", "ds_read_b32 v9, v8",
                                     "global_load_dword v1, v[2:3], off"])
def test_any_other_instruction_in_between_breaks_the_clause(between):
    lines = [WAR[0], between, *WAR[1:]]
    assert padded(lines) == listing(module_of(lines, "gfx942"))  # nothing inserted


@pytest.mark.parametrize("lines, want", [
    # VMEM: the second load overwrites the first one's address
    (["global_load_dword v1, v[2:3], off", "global_load_dword v2, v[4:5], off"], {1: 1}),
    (["global_load_dword v1, v[2:3], off", "global_load_dword v6, v[4:5], off"], {}),
    # a scalar load between two VMEM loads ends their clause (and starts an SMEM one)
    (["global_load_dword v1, v[2:3], off", "s_load_dword s4, s[0:1], 0x0",
      "global_load_dword v2, v[4:5], off"], {}),
    # a store may not join once a load wrote; a load may join a store (no write before it)
    (["global_load_dword v1, v[2:3], off", "global_store_dword v[4:5], v6, off"], {1: 1}),
    (["global_store_dword v[4:5], v6, off", "global_load_dword v4, v[2:3], off"], {}),
    (["global_store_dword v[4:5], v6, off", "global_store_dword v[4:5], v7, off"], {}),
    # ... but once it did, the store's address counts for what joins later
    (["global_store_dword v[4:5], v6, off", "global_load_dword v1, v[2:3], off",
      "global_load_dword v4, v[6:7], off"], {2: 1}),
    # one break fixes two conflicts with the first load: the new clause starts at the second
    (["s_load_dwordx2 s[4:5], s[0:1], 0x0", "s_load_dword s0, s[2:3], 0x0",
      "s_load_dword s1, s[8:9], 0x0"], {1: 1}),
    # the whole clause counts: the 7th load overwrites the 1st one's address
    (["s_load_dword s4, s[0:1], 0x0"]
     + [f"s_load_dword s{d}, s[2:3], {4 * d}" for d in (5, 6, 7, 10, 11)]
     + ["s_load_dword s0, s[8:9], 0x18"], {6: 1}),
    # a nop another rule needs (VALU-written SGPR read by VMEM: 5 states) is the break
    (["v_readfirstlane_b32 s0, v0", "global_load_dword v1, v[2:3], off",
      "global_load_dword v2, v4, s[0:1]"], {2: 4}),
])
def test_nops_by_hand(lines, want):
    assert nops_before([*lines, "s_endpgm"]) == want
    assert nops_before([*lines, "s_endpgm"], "gfx942:xnack-") == \
        ({2: 4} if lines[0].startswith("v_readfirstlane") else {})


def test_pass_is_idempotent_and_leaves_clean_code_alone():
    module = module_of(WAR, "gfx942")
    insert_nops(module)
    once = print_ir(module)
    assert insert_nops(module) == 0 and print_ir(module) == once
    assert check_hazards(module) == []


def test_clauses_follow_the_control_flow():
    fall = ["s_load_dwordx2 s[4:5], s[0:1], 0x0", ".LBB0_1:", "s_load_dword s0, s[0:1], 0x18",
            "s_endpgm"]
    assert nops_before(fall) == {1: 1}  # (instruction indices: labels do not count)
    # a branch ends the clause on both edges
    branch = ["s_load_dwordx2 s[4:5], s[0:1], 0x0", "s_cbranch_scc1 .LBB0_1",
              "s_load_dword s0, s[0:1], 0x18", "s_endpgm", ".LBB0_1:",
              "s_load_dword s1, s[0:1], 0x18", "s_endpgm"]
    assert nops_before(branch) == {}
    # ... but a fall-through does not: s_load_dword s0, s[0:1] reads what it writes
    branch[3] = "s_nop 0"  # (an s_nop 0 would)
    assert padded(branch).count("s_nop 0") == 1
    del branch[3]
    assert nops_before(branch) == {3: 1}
    # a join where the fall-through path brings an open clause: the break goes at the join
    join = ["s_cbranch_scc1 .LBB0_1", "s_load_dword s6, s[8:9], 0x0", ".LBB0_1:",
            "s_load_dword s8, s[2:3], 0x0", "s_endpgm"]
    assert nops_before(join) == {2: 1}


def test_module_features_turn_xnack_off():
    for features, on in ((None, True), (":xnack+", True), (":xnack-", False),
                         (":sramecc+:xnack-", False), (":sramecc-", True)):
        module = copy_kernel(features)
        kernel = kernels_of(module)[0]
        assert kernel_target(kernel).xnack_enabled == on
        text = api.translate(module, "hazards")
        assert ("s_nop 0" in text) == on, features


# ---------------------------------------------------------------------------- reports


def test_check_only_reports_pc_and_rule():
    lines = ["s_load_dwordx2 s[4:5], s[0:1], 0x0", "s_load_dword s0, s[0:1], 0x18",
             "s_load_dword s1, s[8:9], 0x0", "global_load_dword v1, v[2:3], off",
             "global_store_dword v[4:5], v6, off", "s_endpgm"]
    violations = check_hazards(module_of(lines, "gfx942"))
    got = [(v.pc, v.rule.name, v.producer_pc) for v in violations]
    # The third load joins the clause the second starts (as it would after the pass's
    # s_nop 0); that one reads the s[0:1] it writes, so the third needs a break too.
    assert got == [(0x8, "xnack_smem_clause", 0x0), (0x10, "xnack_smem_clause", 0x8),
                   (0x20, "xnack_vmem_clause_store", 0x18)]
    msg = violations[0].message()
    assert "pc 0x8" in msg and "joins a soft clause with `s_load_dwordx2 s[4:5], s[0:1], 0`" \
        in msg and "insert s_nop 0" in msg
    with pytest.raises(HazardViolations, match="3 hazard violations"):
        api.optimize(module_of(lines, "gfx942"), "hazards{check-only=1}")
    assert check_hazards(module_of(lines, "gfx942:xnack-")) == []
    fixed = module_of(lines, "gfx942")
    insert_nops(fixed)
    assert check_hazards(fixed) == []


def test_cli_reports_with_pc_and_rule(tmp_path):
    src = tmp_path / "k.s"
    cmd = [sys.executable, "-m", "asterism.cli", "hazards", str(src)]
    src.write_text('.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.text\nk:\n'
                   + "\n".join(WAR) + "\n")
    bad = subprocess.run(cmd, capture_output=True, text=True)
    assert bad.returncode == 1
    assert "pc 0x8" in bad.stdout and "xnack_smem_clause" in bad.stdout
    assert "s_nop 0" in bad.stdout
    src.write_text('.amdgcn_target "amdgcn-amd-amdhsa--gfx942:xnack-"\n.text\nk:\n'
                   + "\n".join(WAR) + "\n")
    good = subprocess.run(cmd, capture_output=True, text=True)
    assert good.returncode == 0 and good.stdout == ""


# ---------------------------------------------------------------------------- emulator


def copy_kernel(features: str | None = None):
    """out[i] = src[i], with the destination pointer loaded over the kernarg pointer in the
    same SMEM clause as the source pointer (what the register allocator may produce)."""
    mb = ModuleBuilder("m", "gfx942", features)
    kb = mb.kernel("copy")
    src = kb.arg_buffer("src", "u32", "read_only")
    dst = kb.arg_buffer("dst", "u32", "write_only")
    kp = kb.kernarg_ptr()
    ps = kb.s_load_dwordx2(kb.s[4:6], kp, src)
    pd = kb.s_load_dwordx2(kb.s[0:2], kp, dst)
    kb.s_waitcnt(lgkmcnt=0)
    off = kb.v_lshlrev_b32(kb.v(1), 2, kb.workitem_id("x"))
    x = kb.global_load_dword(kb.v(2), off, ps)
    kb.s_waitcnt(vmcnt=0)
    kb.global_store_dword(off, x, pd)
    kb.s_endpgm()
    return mb.finish()


ARGS = """s_load_dwordx2 s[4:5], s[0:1], 0x0
s_load_dwordx2 s[0:1], s[0:1], 0x8
"""
REST = """s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
global_load_dword v2, v1, s[4:5]
s_waitcnt vmcnt(0)
global_store_dword v1, v2, s[0:1]
s_endpgm
"""


def test_emulator_catches_a_missing_clause_break():
    data = np.arange(64, dtype=np.uint32)
    with pytest.raises(SanitizerError) as info:
        run(ARGS + REST, args=[data, np.zeros(64, np.uint32)])
    err = info.value
    assert err.needed == "s_nop 0" and err.pc == 0x10008
    assert "xnack_smem_clause" in str(err) and "joins a soft clause with" in str(err)
    for text, target in ((ARGS.replace("\ns_load", "\ns_nop 0\ns_load") + REST, "gfx942"),
                         (ARGS + REST, "gfx942:xnack-")):
        out = np.zeros(64, np.uint32)
        emu, addrs, _ = run(text, args=[data, out], target=target.split(":")[0],
                            emu=_emulator(target))
        assert (emu.memory.download(addrs[1], 64, np.uint32) == data).all()


def _emulator(target: str):
    from asterism.emu import DeviceMemory, Emulator

    return Emulator(target, DeviceMemory())


def test_emulator_catches_a_vmem_clause_conflict():
    text = """s_load_dwordx4 s[4:7], s[0:1], 0x0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
v_mov_b32 v3, 0
global_load_dword v2, v1, s[4:5]
global_load_dword v1, v1, s[4:5] offset:4
s_waitcnt vmcnt(0)
v_lshlrev_b32 v4, 2, v0
global_store_dword v4, v2, s[6:7]
s_endpgm"""
    data = np.arange(80, dtype=np.uint32)
    with pytest.raises(SanitizerError, match="xnack_vmem_clause:") as info:
        run(text, args=[data, np.zeros(64, np.uint32)])
    assert info.value.pc == 0x1001C
    # the static analysis asks for the same break, and none for xnack-
    assert required_wait_states(program(text), "gfx942") == [(5, 1, "xnack_vmem_clause")]
    assert required_wait_states(program(text), "gfx942:xnack-") == []


@pytest.mark.parametrize("features", [None, ":xnack+", ":xnack-"])
def test_runtime_takes_xnack_from_the_code_object(features):
    data = np.arange(64, dtype=np.uint32)
    out = np.zeros(64, np.uint32)
    hsaco = asterism.compile(copy_kernel(features))
    if features == ":xnack-":
        asterism.launch(hsaco, "copy", grid=1, block=64, args=[data, out], backend="emu")
        assert (out == data).all()
    else:
        with pytest.raises(SanitizerError, match="xnack_smem_clause"):
            asterism.launch(hsaco, "copy", grid=1, block=64, args=[data, out], backend="emu")
    # with the hazards pass the code is right for every setting
    out[:] = 0
    hsaco = asterism.compile(copy_kernel(features), "hazards")
    asterism.launch(hsaco, "copy", grid=1, block=64, args=[data, out], backend="emu")
    assert (out == data).all()


# ---------------------------------------------------------------------------- llc 22

_MATTR = {"gfx942": None, "gfx942:xnack+": "+xnack", "gfx942:xnack-": "-xnack"}


def _llc(llc: str, args: list[str], src: Path) -> str:
    res = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx942", *args, "-o", "-",
                          str(src)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _body(asm: str, kernel: str = "k") -> list[str]:
    """Instruction and label lines of `kernel` in llc's assembly output."""
    out, inside = [], False
    for line in asm.splitlines():
        text = line.split(";")[0].strip()
        if text == f"{kernel}:":
            inside = True
            continue
        if not inside or not text or (text.startswith(".") and not text.endswith(":")):
            continue
        out.append(text)
        if text == "s_endpgm":
            break
    return out


def _hazard_rec(llc: str, mir: Path, target: str) -> list[str]:
    """What llc emits for a MIR function after its hazard recognizer, for `target`."""
    mattr = _MATTR[target]
    args = [f"-mattr={mattr}"] if mattr else []
    return _body(_llc(llc, [*args, "-start-before=post-RA-hazard-rec"], mir))


def _compare(llc: str, mir: Path) -> dict[str, dict[int, int]]:
    """For each xnack setting: the nops llc's hazard recognizer puts into the MIR function,
    which the pass must put into the same instructions (given without the nops)."""
    out = {}
    for target in _MATTR:
        want_lines = _hazard_rec(llc, mir, target)
        _insts, want = split([x for x in want_lines if not x.endswith(":")])
        given = [x for x in want_lines if not x.startswith("s_nop")]  # (labels kept)
        got_insts, got = split(padded(given, target))
        assert got_insts == listing(module_of(given, target))
        assert got == want, f"{target}: llc {want}, the pass {got}\n" + "\n".join(want_lines)
        assert check_hazards(module_of(want_lines, target)) == []  # (labels and all)
        out[target] = want
    return out


LL = """define amdgpu_kernel void @k(ptr addrspace(1) %a, i32 %p0, ptr addrspace(1) %b, i32 %p1,
                             ptr addrspace(1) %c, ptr addrspace(1) %d) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %t3 = mul i32 %tid, 3
  %t5 = mul i32 %tid, 5
  %pa = getelementptr <2 x float>, ptr addrspace(1) %a, i32 %tid
  %pb = getelementptr <2 x float>, ptr addrspace(1) %b, i32 %t3
  %pc = getelementptr <2 x float>, ptr addrspace(1) %c, i32 %t5
  %pd = getelementptr <2 x float>, ptr addrspace(1) %d, i32 %tid
  %x = load <2 x float>, ptr addrspace(1) %pa
  %y = load <2 x float>, ptr addrspace(1) %pb
  %z = load <2 x float>, ptr addrspace(1) %pc
  %s = fadd <2 x float> %x, %y
  %t = fadd <2 x float> %s, %z
  store <2 x float> %t, ptr addrspace(1) %pd
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
"""


def test_llc_compiled_kernel(llc, tmp_path):
    """llc allocates registers for xnack- (loads whose results reuse their address
    registers), then its hazard recognizer runs on that code for each xnack setting."""
    src = tmp_path / "k.ll"
    src.write_text(LL)
    mir_text = _llc(llc, ["-mattr=-xnack", "-stop-before=post-RA-hazard-rec"], src)
    # The function attributes carry the -xnack of the first run; without them the MIR
    # function takes the command line's setting (none: "any").
    mir = tmp_path / "k.mir"
    mir.write_text(re.sub(r' "target-features"="[^"]*"', "", mir_text))
    nops = _compare(llc, mir)
    assert nops["gfx942:xnack-"] == {}
    assert nops["gfx942"] == nops["gfx942:xnack+"] and len(nops["gfx942"]) >= 1


MIR_CFG = """---
name: k
tracksRegLiveness: false
body: |
  bb.0:
    successors: %bb.1
    $sgpr4_sgpr5 = S_LOAD_DWORDX2_IMM $sgpr0_sgpr1, 0, 0

  bb.1:
    successors: %bb.2, %bb.3
    $sgpr0 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 24, 0
    S_CBRANCH_SCC1 %bb.3, implicit $scc

  bb.2:
    successors: %bb.3
    $sgpr6 = S_LOAD_DWORD_IMM $sgpr8_sgpr9, 0, 0

  bb.3:
    successors: %bb.4
    $sgpr8 = S_LOAD_DWORD_IMM $sgpr2_sgpr3, 0, 0
    $vgpr1 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, implicit $exec
    S_BRANCH %bb.4

  bb.4:
    $vgpr2 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, implicit $exec
    S_ENDPGM 0
...
"""


def test_llc_control_flow(llc, tmp_path):
    """Clauses across a fall-through (kept), a conditional branch and a jump (broken)."""
    mir = tmp_path / "cfg.mir"
    mir.write_text(MIR_CFG)
    nops = _compare(llc, mir)
    assert nops["gfx942"] == {1: 1, 4: 1}


def test_llc_looks_only_five_instructions_back(llc, tmp_path):
    """Where asterism is more careful than LLVM: llc's hazard recognizer remembers the last 5
    instructions (19 in kernels using AGPRs), so the 7th load of a clause that overwrites the
    1st one's address gets no break from llc; the hardware replays the whole clause."""
    loads = ["$sgpr4 = S_LOAD_DWORD_IMM $sgpr0_sgpr1, 0, 0"] + [
        f"$sgpr{d} = S_LOAD_DWORD_IMM $sgpr2_sgpr3, {4 * d}, 0" for d in (5, 6, 7, 10, 11)] + [
        "$sgpr0 = S_LOAD_DWORD_IMM $sgpr8_sgpr9, 24, 0"]
    body = "\n".join(f"    {x}" for x in [*loads, "S_ENDPGM 0"])
    mir = tmp_path / "long.mir"
    mir.write_text(f"---\nname: k\ntracksRegLiveness: false\nbody: |\n  bb.0:\n{body}\n...\n")
    llvm = _hazard_rec(llc, mir, "gfx942")
    assert not any(x.startswith("s_nop") for x in llvm)
    assert split(padded(llvm))[1] == {6: 1}
