"""Long emulator runs: the progress line on stderr, the instruction budget (with and without
the timing model, whose modeled workgroups first run functionally with their writes undone)
and the memory bound of the timing model's trace."""

from __future__ import annotations

import io

import numpy as np
import pytest
from test_emu_asm import descriptor, program

from asterism.cli import main
from asterism.emu import BudgetExceeded, DeviceMemory, Emulator
from asterism.emu.progress import RunProgress
from asterism.support.limits import MemoryBudgetError
from asterism.support.progress import ProgressLine, clock, count
from asterism.timing import functional as timing_module
from asterism.timing.params import TimingOptions

RUNAWAY = "loop:\nv_add_u32 v1, 1, v1\ns_branch loop"

# out[i] += 1 for the 64 lanes, then an atomic add of 1 per lane to out[64].
INCREMENT = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
global_load_dword v2, v1, s[4:5]
s_waitcnt vmcnt(0)
v_add_u32 v2, 1, v2
global_store_dword v1, v2, s[4:5]
v_mov_b32 v3, 0
v_mov_b32 v4, 1
s_nop 0
global_atomic_add v3, v4, s[4:5] offset:256
s_waitcnt vmcnt(0)
s_endpgm
"""

# A loop of 3000 iterations (two instructions each) per wave, then the end.
FINITE_LOOP = """
s_mov_b32 s10, 3000
loop:
s_sub_u32 s10, s10, 1
s_cbranch_scc0 loop
s_endpgm
"""


# The bandwidth ceiling's footprint pass runs the modeled workgroups functionally before the
# model (so it is the check that the kernel ends); without the ceiling the model's own check
# point does it.
WITH_FOOTPRINT, WITHOUT = True, TimingOptions(off={"bandwidth"})


def run(text: str, *, grid=1, block=64, args=(), progress=None, timing=False, **emu_options):
    """Assemble and run a kernel whose kernarg pointer is the first array's address (as
    test_emu_asm.run), with a progress reporter (and the timing model if `timing`);
    (emulator, addresses, RunStats)."""
    emu = Emulator("gfx942", DeviceMemory(), dispatch_hook=timing_module.TimedRun.of(timing),
                   **emu_options)
    addrs = [emu.memory.upload(a) for a in args]
    kernarg = b"".join(a.to_bytes(8, "little") for a in addrs) or bytes(8)
    ka = emu.memory.upload(np.frombuffer(kernarg, np.uint8))
    stats = emu.run(program(text), descriptor(), grid=grid, block=block, kernarg_address=ka,
                    progress=progress)
    return emu, addrs, stats


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _eager(tty: bool = False) -> tuple[RunProgress, _Stream]:
    """A progress reporter that draws at every look (no delay, no interval)."""
    stream = _Stream(tty)
    return RunProgress(ProgressLine(stream, delay=0, interval=0, log_interval=0)), stream


def test_clock_and_count_format():
    assert clock(0) == "0:00" and clock(61.4) == "1:01" and clock(3725) == "1:02:05"
    assert count(950) == "950" and count(12_345) == "12.3K" and count(4.1e6) == "4.1M"


def test_progress_lines_of_a_long_run():
    # A runaway loop: the lines name the kernel, the workgroups, the wave-instructions and,
    # near the budget, the longest wave against it.
    progress, stream = _eager()
    emu_budget = 50_000
    with pytest.raises(BudgetExceeded):
        run(RUNAWAY, block=256, instruction_budget=emu_budget, progress=progress)
    lines = stream.getvalue().splitlines()
    assert lines, "no progress line"
    assert all(line.startswith("kernel: emulating, 0/1 workgroups, ") for line in lines)
    assert "wave-instructions" in lines[-1]
    assert "of the 50.0K-instruction budget" in lines[-1]


def test_progress_on_a_terminal_redraws_one_line_and_erases_it():
    progress, stream = _eager(tty=True)
    run(FINITE_LOOP, block=128, progress=progress)
    text = stream.getvalue()
    assert text.startswith("\r\x1b[2K") and "kernel: emulating" in text
    assert text.endswith("\r\x1b[2K")  # erased at the end: the report follows cleanly
    assert "\n" not in text


def test_short_runs_and_quiet_show_nothing():
    stream = _Stream(tty=True)
    run(FINITE_LOOP, progress=RunProgress(ProgressLine(stream)))  # < 2 s: silent
    quiet = _Stream(tty=True)
    run(FINITE_LOOP, progress=RunProgress(ProgressLine(quiet, enabled=False, delay=0)))
    assert stream.getvalue() == "" and quiet.getvalue() == ""


def _phases(timing) -> list[str]:
    progress, stream = _eager()
    run(FINITE_LOOP, block=128, timing=timing, instruction_budget=40_000, progress=progress)
    return [line.split(": ")[1].split(",")[0] for line in stream.getvalue().splitlines()]


def test_progress_through_the_timing_model_phases():
    # Waves of 6001 instructions pass the check point of a 40000 budget (2500): the model
    # stops, the functional check runs, the model runs again.
    phases = _phases(WITHOUT)
    assert {"timing model", "checking that it ends"} <= set(phases)
    assert phases.index("checking that it ends") < len(phases) - 1 - \
        phases[::-1].index("timing model")  # (the model comes again after the check)
    # With the bandwidth ceiling, its footprint pass comes first and is the check.
    phases = _phases(WITH_FOOTPRINT)
    assert "checking that it ends" not in phases
    assert phases.index("noting the lines the modeled workgroups touch") < \
        phases.index("timing model")


def test_results_do_not_depend_on_the_progress_chunks(monkeypatch):
    # CHUNK-sized pieces of a long group run (for the progress) keep the schedule: waves
    # that loop 5000 (w + 1) times (they split as they leave the loop one after another)
    # give the same memory and the same counts with and without small pieces.
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
v_readfirstlane_b32 s10, v0
s_lshr_b32 s10, s10, 6
s_add_u32 s10, s10, 1
s_mul_i32 s10, s10, 5000
v_mov_b32 v3, 0
loop:
v_add_u32 v3, 3, v3
s_sub_u32 s10, s10, 1
s_cmp_eq_u32 s10, 0
s_cbranch_scc0 loop
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
global_store_dword v1, v3, s[4:5]
s_endpgm
"""
    results = []
    for chunk in (1 << 14, 7):
        monkeypatch.setattr("asterism.emu.emulator.CHUNK", chunk)
        out = np.zeros(256, np.uint32)
        emu, addrs, stats = run(src, args=[out], block=256)
        results.append((emu.memory.download(addrs[0], 256, np.uint32),
                        stats.wave_instructions, stats.group_steps))
    assert (results[0][0] == results[1][0]).all() and results[0][1:] == results[1][1:]
    assert (results[0][0] == 3 * 5000 * (np.arange(256) // 64 + 1)).all()


# ---------------------------------------------------------------------------- the budget


def test_budget_message_says_what_happened_and_what_to_do():
    with pytest.raises(BudgetExceeded) as info:
        run(RUNAWAY, block=128, instruction_budget=1000)
    text = str(info.value)
    assert text.startswith("stopped after 2000 wave-instructions: the kernel did not end")
    assert "raise the budget with --max-instructions" in text


@pytest.mark.parametrize("timing", [WITH_FOOTPRINT, WITHOUT], ids=["footprint", "checkpoint"])
def test_timing_run_reaches_the_budget_without_modeling_it(monkeypatch, timing):
    # Before: the model stepped every wave one instruction at a time until one of the 4
    # waves reached the budget (4 x 20000 model steps). Now the model stops when a wave
    # passes 1/16 of the budget (it looks every TICK steps) and the functional check, at
    # the plain emulator's speed, reaches the budget; with the footprint pass first, the
    # model does not start.
    steps = []
    advance = timing_module.TimedDispatch._advance

    def counted(self, w):
        steps.append(1)
        return advance(self, w)
    monkeypatch.setattr(timing_module.TimedDispatch, "_advance", counted)
    with pytest.raises(BudgetExceeded, match="stopped after 80000 wave-instructions"):
        run(RUNAWAY, block=256, instruction_budget=20_000, timing=timing)
    if timing is WITH_FOOTPRINT:
        assert not steps
    else:
        assert 0 < len(steps) <= 2 * timing_module.TICK


@pytest.mark.parametrize("timing", [WITH_FOOTPRINT, WITHOUT], ids=["footprint", "checkpoint"])
def test_a_long_kernel_that_ends_is_modeled_in_full(timing):
    # Past the check point the model restarts after the functional check: the same memory,
    # counts and modeled cycles as a model that never stopped.
    got = []
    for budget in (10_000_000, 40_000):
        out = np.zeros(65, np.uint32)
        emu, addrs, stats = run(INCREMENT.replace("s_endpgm", FINITE_LOOP), args=[out],
                                timing=timing, instruction_budget=budget)
        got.append((emu.memory.download(addrs[0], 65, np.uint32).tolist(),
                    stats.wave_instructions, stats.timing.cycles))
    assert got[0] == got[1]
    assert got[0][0] == [1] * 64 + [64]  # (once: the stores of the stopped model undone)


def test_timed_and_plain_runs_write_the_same():
    # Stores and atomics happen once in a timed run (its undo log only reads), as in a plain
    # run.
    plain = np.arange(65, dtype=np.uint32)
    for timing in (False, True):
        emu, addrs, stats = run(INCREMENT, args=[plain.copy()], timing=timing)
        got = emu.memory.download(addrs[0], 65, np.uint32)
        assert list(got[:64]) == list(range(1, 65)), timing
        assert got[64] == 64 + 64, timing
        assert (stats.timing is not None) == timing


def test_trace_records_are_bounded_by_the_memory_budget(monkeypatch):
    # A finite kernel long enough to model: with records made (artificially) expensive, the
    # model stops with a clear error instead of filling the memory.
    monkeypatch.setattr(timing_module, "RECORD_BYTES", 1 << 40)
    with pytest.raises(MemoryBudgetError, match="timing model's trace holds 4096 instruction"):
        run(FINITE_LOOP, block=128, timing=True)


def test_cli_run_max_instructions_and_timing(tmp_path, capsys):
    src = tmp_path / "loop.s"
    src.write_text(_loop_asm())
    # 4 waves reach the budget of 3000 together; with --timing the check before the model
    # runs the modeled workgroup (CU 0's: 2 waves) and stops there.
    for extra, total in (([], 12000), (["--timing", "--trace-dir", str(tmp_path / "t")], 6000)):
        rc = main(["run", str(src), "--grid", "2", "--block", "128", "--arg",
                   "out=zeros:64:i32", "--max-instructions", "3000", *extra])
        err = capsys.readouterr().err
        assert rc == 1 and "Traceback" not in err
        assert f"error: stopped after {total} wave-instructions: the kernel did not end" in err
        assert "--max-instructions" in err


def test_cli_max_instructions_must_be_positive(tmp_path, capsys):
    src = tmp_path / "loop.s"
    src.write_text(_loop_asm())
    with pytest.raises(SystemExit) as info:
        main(["run", str(src), "--max-instructions", "0"])
    assert info.value.code == 2
    assert "expected a positive integer, got '0'" in capsys.readouterr().err


def _loop_asm() -> str:
    """The add_10 demo kernel (any block size) with its adds turned into an endless loop."""
    from asterism import api

    text = api.translate("examples/demo/add_10.mlir")
    text = text.replace("\tv_add_u32 v1, 1, v1\n" * 10,
                        ".Lloop:\n\tv_add_u32 v1, 1, v1\n\ts_branch .Lloop\n", 1)
    text = text.replace(".max_flat_workgroup_size: 64", ".max_flat_workgroup_size: 1024")
    return text.replace("    .reqd_workgroup_size:\n      - 64\n      - 1\n      - 1\n", "")


def test_kernels_run_shows_progress_and_quiet_silences_it(capsys):
    from asterism import kernels
    from asterism.kernels.run import run_case

    case = kernels.get("gemm").build("gfx942", {"m": 64, "n": 64, "k": 64, "tile_m": 64,
                                                 "tile_n": 64})
    progress, stream = _eager()
    run_case(case, check=False, progress=progress)
    assert stream.getvalue().startswith("gemm_f16_nt: emulating, 0/1 workgroups, ")
    assert main(["kernels", "run", "gemm", "--backend", "emu", "--shape", "64x64x64",
                 "--param", "tile_m=64", "--param", "tile_n=64", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
