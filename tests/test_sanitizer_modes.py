"""The sanitizer's modes: error (raise the first violation), warn (report each distinct one
once, run on, sum them up), off; the default per code object (error for asterism's own, warn
for others'); and what the emulator computes when a rule is not honoured (the effects
emu.sanitizer.KINDS documents), checked against hand-computed outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_emu_asm import descriptor, run
from test_emu_lds_dma import dma_kernel

import asterism
from asterism import api, runtime
from asterism.emu import SanitizerError
from asterism.emu.errors import SanitizerWarning
from asterism.emu.sanitizer import KINDS, SanitizerReport, sanitizer_mode
from asterism.errors import AsterismError
from asterism.mc.codeobject import read_code_object

ROOT = Path(__file__).resolve().parent.parent
LLVM = ROOT / "tests" / "data" / "emu" / "llvm"

# Two violations: v_add_u32 reads v2 before its load is waited for (waitcnt_read, once), and
# v_cndmask reads s[10:11] zero wait states after the VALU v_cmp wrote it (wait_states rule
# valu_sgpr_valu, needs 2), in a loop run 3 times.
LOOP = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
global_load_dword v2, v1, s[4:5]
v_add_u32 v3, 1, v2
s_mov_b32 s8, 3
loop:
v_cmp_lt_u32 s[10:11], 31, v0
v_cndmask_b32_e64 v4, 0, 1, s[10:11]
s_sub_u32 s8, s8, 1
s_cmp_lg_u32 s8, 0
s_cbranch_scc1 loop
s_waitcnt vmcnt(0)
v_add_u32 v3, v3, v4
global_store_dword v1, v3, s[4:5] offset:256
s_endpgm
"""
ADD_PC, CNDMASK_PC = 0x10018, 0x10028


def _loop(**kw):
    data = np.zeros(128, np.uint32)
    data[:64] = np.arange(64) * 7
    emu, addrs, stats = run(LOOP, args=[data], **kw)
    return emu.memory.download(addrs[0], 128, np.uint32)[64:], stats


def test_error_mode_is_the_emulators_default_and_stops_at_the_first_violation():
    with pytest.raises(SanitizerError) as err:
        _loop()
    assert err.value.kind == "waitcnt_read" and err.value.pc == ADD_PC
    assert err.value.needed == "s_waitcnt vmcnt(0)"
    assert err.value.source == KINDS["waitcnt_read"].source
    with pytest.raises(SanitizerError) as err:
        _loop(sanitizer="error")
    assert err.value.pc == ADD_PC


def test_warn_mode_reports_each_violation_once_and_runs_on():
    seen = []
    out, stats = _loop(sanitizer="warn", on_violation=seen.append)
    # The emulated effect (KINDS): the load landed at issue, and the SGPR read saw the
    # v_cmp result: out[l] = 7 l + 1 + (l > 31), as if the s_waitcnt and s_nop were there.
    lanes = np.arange(64)
    np.testing.assert_array_equal(out, 7 * lanes + 1 + (lanes > 31))
    report = stats.sanitizer
    assert isinstance(report, SanitizerReport)
    assert [(v.kind, v.pc, v.rule) for v in seen] == [
        ("waitcnt_read", ADD_PC, "needs s_waitcnt vmcnt(0)"),
        ("wait_states", CNDMASK_PC, "valu_sgpr_valu")]
    assert [v.count for v in report.violations] == [1, 3]  # the loop ran 3 times
    hazard = report.violations[1]
    assert hazard.inst.startswith("v_cndmask_b32") and "needs 2" in hazard.message
    assert hazard.source == "LLVM 22 GCNHazardRecognizer.cpp checkVALUHazards"
    assert report.counts() == {"waitcnt_read": (1, 1), "wait_states": (1, 3)}
    assert report.summary() == ("sanitizer (warn): 2 distinct violation(s): waitcnt_read 1 "
                                "(1 occurrence), wait_states 1 (3 occurrences)\n")
    assert report.to_json()["counts"]["wait_states"] == {"distinct": 1, "occurrences": 3}
    text = seen[1].text()
    assert text.startswith("sanitizer warning [wait_states] pc 0x10028 `v_cndmask_b32")
    assert "rule valu_sgpr_valu; source: LLVM 22" in text


def test_warn_mode_default_echo_is_a_warning_and_off_mode_checks_nothing():
    with pytest.warns(SanitizerWarning) as caught:
        _loop(sanitizer="warn")
    assert [str(w.message).split(" `")[0] for w in caught] == [
        "sanitizer warning [waitcnt_read] pc 0x10018", "sanitizer warning [wait_states] pc 0x10028"]
    out, stats = _loop(sanitizer="off")
    assert stats.sanitizer is None
    lanes = np.arange(64)
    np.testing.assert_array_equal(out, 7 * lanes + 1 + (lanes > 31))
    assert sanitizer_mode(True) == "error" and sanitizer_mode(False) == "off"
    with pytest.raises(AsterismError, match="sanitizer mode 'loud'"):
        sanitizer_mode("loud")


def test_warn_mode_lds_dma_read_sees_the_landed_bytes():
    # Read LDS right after an LDS DMA with only lgkmcnt(0) (which does not wait for it).
    code = dma_kernel({"lgkmcnt": 0}, 0)
    src, out = np.arange(64, dtype=np.int32) + 100, np.zeros(64, np.int32)
    seen = []
    res = asterism.launch(code, "dma", grid=1, block=64, args=[src, out], backend="emu",
                          sanitizer="warn", on_violation=seen.append)
    assert [v.kind for v in seen] == ["lds_dma"]
    assert "vmcnt" in seen[0].rule and res.stats.sanitizer.violations == seen
    np.testing.assert_array_equal(out, src)  # KINDS["lds_dma"].effect: the loaded bytes


def test_warn_mode_lds_visibility_read_sees_the_stored_bytes():
    # LLVM's kernel without the fence before s_barrier (tests/test_emu_llvm.py): in warn mode
    # the waves' reads see the bytes the other waves stored (the emulated effect).
    x = np.random.default_rng(3).integers(0, 1000, 256, dtype=np.uint32)
    out = np.zeros((256, 8), np.uint32)
    seen = []
    asterism.launch((LLVM / "lanes_nofence_gfx942.hsaco").read_bytes(), "lanes_nofence",
                    grid=1, block=256, args=[out, x], backend="emu", sanitizer="warn",
                    on_violation=seen.append)
    assert {v.kind for v in seen} == {"lds_visibility"}
    ids = np.arange(256)
    assert np.array_equal(out[:, 0], x[ids // 64 * 64 + 5])
    assert np.array_equal(out[:, 4], x[ids ^ 255])


def test_register_allocation_violation_in_warn_mode():
    kd = descriptor(vgprs=8)
    text = "v_mov_b32 v20, 5\ns_endpgm"
    with pytest.raises(SanitizerError, match="v20 is used") as err:
        run(text, kd=kd)
    assert err.value.kind == "registers"
    seen = []
    run(text, kd=kd, sanitizer="warn", on_violation=seen.append)
    assert [v.kind for v in seen] == ["registers"]


def test_every_kind_documents_its_source_and_emulated_effect():
    assert set(KINDS) == {"waitcnt_read", "waitcnt_overwrite", "store_data", "lds_dma",
                          "lds_visibility", "wait_states", "soft_clause", "registers"}
    doc = (ROOT / "docs" / "sanitizer.md").read_text()
    rows = {line.split("|")[1].strip(" `"): [c.strip() for c in line.split("|")[2:5]]
            for line in doc.splitlines() if line.startswith("| `")}
    for kind in KINDS.values():  # docs/sanitizer.md's table is KINDS, word for word
        assert rows[kind.name] == [kind.what, kind.source, kind.effect], kind.name


def test_every_wait_state_rule_has_its_emulated_effect_documented():
    import fnmatch

    from asterism.target.hazards import RULES

    doc = (ROOT / "docs" / "sanitizer.md").read_text()
    patterns = [p.strip(" `") for line in doc.splitlines()
                if line.startswith("| `") and line.count("|") == 4
                for p in line.split("|")[1].split(",")]
    for rule in RULES:
        if not rule.clause:  # (soft clauses: kind soft_clause)
            assert any(fnmatch.fnmatch(rule.name, p) for p in patterns), rule.name


def test_default_mode_is_error_for_our_code_objects_and_warn_for_others():
    ours = api.compile(str(ROOT / "examples" / "demo" / "add_10.mlir"))
    assert read_code_object(ours).made_by_asterism
    assert runtime.default_sanitizer(read_code_object(ours)) == "error"
    llvm = read_code_object((LLVM / "lanes_gfx942.hsaco").read_bytes())
    aiter = read_code_object(
        (ROOT / "tests/data/shared/codeobjects/aiter_gfx950_fmha_fwd_hd128_bf16.co").read_bytes())
    assert runtime.default_sanitizer(llvm) == runtime.default_sanitizer(aiter) == "warn"
    # a foreign object with a violation runs by default (warn), ours stops (error)
    x = np.zeros(256, np.uint32)
    with pytest.warns(SanitizerWarning, match="lds_visibility"):
        asterism.launch((LLVM / "lanes_nofence_gfx942.hsaco").read_bytes(), "lanes_nofence",
                        grid=1, block=256, args=[np.zeros((256, 8), np.uint32), x],
                        backend="emu")


HAZARD_S = """.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl k
.p2align 8
.type k,@function
k:
  v_cmp_lt_u32 s[10:11], 31, v0
  v_cndmask_b32_e64 v4, 0, 1, s[10:11]
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel k
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 16
.end_amdhsa_kernel
"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "asterism.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_cli_sanitizer_option(tmp_path):
    (tmp_path / "k.s").write_text(HAZARD_S)
    err = _cli("run", "k.s", "--grid", "1", "--sanitizer", "error", cwd=tmp_path)
    assert err.returncode == 1 and "valu_sgpr_valu" in err.stderr
    assert "Traceback" not in err.stderr
    default = _cli("run", "k.s", "--grid", "1", cwd=tmp_path)  # asterism assembled it: error
    assert default.returncode == 1 and "valu_sgpr_valu" in default.stderr
    warn = _cli("run", "k.s", "--grid", "1", "--sanitizer", "warn", cwd=tmp_path)
    assert warn.returncode == 0, warn.stderr
    assert warn.stderr.count("sanitizer warning [wait_states] pc") == 1
    assert "sanitizer (warn): 1 distinct violation(s): wait_states 1 (1 occurrence)" in \
        warn.stdout
    bad = _cli("run", "k.s", "--grid", "1", "--sanitizer", "loud", cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_lds_visibility_after_groups_merge_with_a_store_in_flight():
    # Two groups of one workgroup's waves (split at a divergent branch) each issued the same
    # DS store (serials 1 and 2), then merged at the same instruction with it in flight: the
    # merged group's s_waitcnt lgkmcnt(0) completes both waves' stores. Before the fix the
    # merge kept the first group's record only, so wave 1's store (serial 2) stayed
    # "pending" forever and a read after the barrier was reported as a race (seen in
    # flash_attention_fwd gfx942 with two LDS stages, causal 1x1x1024x128).
    from types import SimpleNamespace

    from asterism.emu import sanitizer as san

    watch = san.LdsWatch((1, 64), np.array([0, 0]), np.array([0, 1]))
    groups = []
    for _wave in (0, 1):
        tracker = san.Tracker()
        store = san.Pending(7, None, ((san.LGKM, True),), frozenset())
        tracker.ops.append(store)
        watch.issued(store)
        groups.append(tracker)
    first, second = groups
    second.merge_into(first)
    retired = first.retire(0xC07F)  # s_waitcnt lgkmcnt(0)
    watch.retired(SimpleNamespace(waves=np.array([0, 1]), tracker=first), retired)
    assert watch.done.tolist() == [2, 2]
    assert first.serials == {}  # dropped with the record
