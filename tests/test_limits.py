"""The memory budget (asterism.support.limits) and the sizes a user-given value decides:
--arg specs, device allocations, launch copies, kernarg segments, scratch and LDS of a
descriptor, grid sizes, kernel-library inputs. Each is refused before it is allocated, with
a one-line error naming what asked for it and how much."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_emu_asm import descriptor, program

from asterism.cli import main
from asterism.emu import DeviceMemory, Emulator, EmulatorError
from asterism.support.limits import (
    ENV,
    MemoryBudgetError,
    check_memory,
    format_bytes,
    memory_budget,
    parse_size,
)

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "examples" / "demo" / "add_10.mlir")


def test_sizes_parse_and_print():
    assert parse_size("8G") == 8 << 30 and parse_size("512M") == 512 << 20
    assert parse_size("1.5k") == 1536 and parse_size("1048576") == 1 << 20
    assert parse_size("2GiB") == 2 << 30 and parse_size("64MB") == 64 << 20
    for bad in ("", "G", "abc", "-1G", "nan", "inf", "1e40T"):
        with pytest.raises(MemoryBudgetError, match=f"{ENV}="):
            parse_size(bad)
    assert format_bytes(512) == "512 bytes" and format_bytes(1536) == "1.5 KiB"
    assert format_bytes(3 << 30) == "3.0 GiB" and format_bytes(1 << 60) == "1024.0 PiB"


def test_budget_from_the_environment_or_the_system(monkeypatch):
    monkeypatch.setenv(ENV, "100M")
    assert memory_budget() == (100 << 20, f"the {ENV}=100M budget")
    check_memory(100 << 20, "x")
    with pytest.raises(MemoryBudgetError) as info:
        check_memory((100 << 20) + 1, "the thing", hint="ask for less")
    assert str(info.value) == (f"the thing needs 100.0 MiB, more than the {ENV}=100M budget "
                               f"(100.0 MiB); ask for less (set {ENV} to change the budget)")
    monkeypatch.setenv(ENV, "lots")
    with pytest.raises(MemoryBudgetError, match="expected a size like 8G"):
        memory_budget()
    monkeypatch.delenv(ENV)
    available, source = memory_budget()
    assert source == "the memory available" and 0 < available


def test_arg_that_fits_once_but_not_twice(monkeypatch, capsys):
    # 60 MiB of output fits the 100 MiB budget once; the emulator's device copy (and the
    # results written back into it) would need twice that: a clear error, before copying.
    monkeypatch.setenv(ENV, "100M")
    rc = main(["run", DEMO, "--grid", "4", "--arg", f"out=zeros:{15 << 20}:i32"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert err.startswith("error: launching add_10 on the emulator (device copies of the "
                          "arguments out 60.0 MiB, and the outputs written back) needs "
                          "120.0 MiB, more than the ASTERISM_MEMORY_LIMIT=100M budget")


def test_arg_larger_than_the_budget_is_refused_before_it_is_made(monkeypatch, capsys):
    monkeypatch.setenv(ENV, "1G")
    rc = main(["run", DEMO, "--grid", "4", "--arg", "out=zeros:4000000000:i32"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert "error: --arg out (zeros:4000000000:i32) needs 14.9 GiB, more than" in err


def test_arg_memory_error_under_ulimit_v(tmp_path):
    """Under a real address-space limit (ulimit -v), a buffer that fits once but not twice
    was a MemoryError traceback; the budget reads the limit and says so instead."""
    script = f"""
import resource, sys
import numpy
sys.path.insert(0, {str(ROOT / 'src')!r})
from asterism.cli import main
size = 0
for line in open("/proc/self/status"):
    if line.startswith("VmSize:"):
        size = int(line.split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (700 << 20), resource.RLIM_INFINITY))
sys.exit(main(["run", {DEMO!r}, "--grid", "4", "--arg", "out=zeros:{100 << 20}:i32"]))
"""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["OPENBLAS_NUM_THREADS"] = "1"
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=300)
    assert res.returncode == 1, res.stderr[-2000:]
    assert "Traceback" not in res.stderr and "MemoryError" not in res.stderr
    assert "error: launching add_10 on the emulator" in res.stderr
    assert "more than the memory available" in res.stderr


def test_device_allocation_beyond_the_budget(monkeypatch):
    monkeypatch.setenv(ENV, "1M")
    mem = DeviceMemory()
    mem.alloc(1 << 20, name="ok")
    with pytest.raises(MemoryBudgetError, match="device allocation 'big' needs 2.0 MiB"):
        mem.alloc(2 << 20, name="big")


def test_kernarg_segment_size_from_metadata_is_checked(monkeypatch):
    from asterism.runtime.kernargs import ArgumentError, pack_kernargs

    meta = {".name": "k", ".args": [], ".kernarg_segment_size": 1 << 40}
    with pytest.raises(MemoryBudgetError, match="kernarg segment of k"):
        pack_kernargs(meta, [], (1, 1, 1), (64, 1, 1))
    for bad in (-8, "64", 1.5, True):
        with pytest.raises(ArgumentError, match="kernarg_segment_size"):
            pack_kernargs({**meta, ".kernarg_segment_size": bad}, [], (1, 1, 1), (64, 1, 1))


def test_scratch_beyond_the_chip_is_refused():
    emu = Emulator("gfx942", DeviceMemory())
    kd = descriptor(scratch=1 << 30)
    with pytest.raises(EmulatorError, match="asks for 1073741824 bytes of scratch per "
                                            "work-item; gfx942 allows at most 131056"):
        emu.run(program("s_endpgm"), kd, grid=1, block=64)


def test_scratch_heavy_batches_shrink_and_give_the_same_result(monkeypatch):
    # 64 KiB of scratch per lane is 4 MiB per wave: under a 40 MiB budget the emulator runs
    # the 8 workgroups a few at a time instead of all together; the stores are the same.
    src = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshl_add_u32 v1, s2, 6, v0
scratch_store_dword off, v1, off offset:4
s_waitcnt vmcnt(0)
scratch_load_dword v3, off, off offset:4
s_waitcnt vmcnt(0)
v_lshlrev_b32 v2, 2, v1
global_store_dword v2, v3, s[4:5]
s_endpgm
"""
    kd = descriptor(scratch=64 << 10, enable_private_segment=1)
    results = []
    for limit in (None, "40M"):
        if limit:
            monkeypatch.setenv(ENV, limit)
        emu = Emulator("gfx942", DeviceMemory())
        out = emu.memory.upload(np.zeros(8 * 64, np.uint32))
        ka = emu.memory.upload(np.frombuffer(out.to_bytes(8, "little"), np.uint8))
        comp = emu.compile(program(src))
        per_batch = emu.batch_workgroups(comp, kd, 0, 1, "k")
        emu.run(comp, kd, grid=8, block=64, kernarg_address=ka)
        results.append((per_batch, emu.memory.download(out, 8 * 64, np.uint32)))
    (all_at_once, first), (few, second) = results
    assert all_at_once >= 8 and few < 8
    assert (first == np.arange(8 * 64)).all() and (second == first).all()


def test_one_workgroup_that_cannot_fit(monkeypatch):
    monkeypatch.setenv(ENV, "4M")
    emu = Emulator("gfx942", DeviceMemory())
    kd = descriptor(scratch=64 << 10)
    with pytest.raises(MemoryBudgetError, match=r"one workgroup of k \(4 waves, 65536 bytes "
                                                r"of scratch per lane, 0 bytes of LDS\)"):
        emu.run(program("s_endpgm"), kd, grid=1, block=256, kernel="k")


@pytest.mark.parametrize("grid, message", [
    ("4294967296", "grid x: 4294967296 workgroups of 64 work-items"),
    ("1,4294967296", "grid y: 4294967296 workgroups of 1 work-items is 4294967296"),
])
def test_grid_beyond_the_dispatch_packet(grid, message, capsys):
    rc = main(["run", DEMO, "--grid", grid, "--arg", "out=zeros:64:i32"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert message in err and "at most 4294967295 per dimension" in err


def test_timing_model_of_too_many_workgroups(monkeypatch, capsys, tmp_path):
    # A grid of 2^25 workgroups puts 110,377 of them on CU 0 (of 304): their state is
    # refused before anything is allocated (before: an array of every workgroup id, then
    # the one batch of the modeled ones).
    monkeypatch.setenv(ENV, "64M")
    rc = main(["run", DEMO, "--grid", str(1 << 25), "--arg", "out=zeros:64:i32", "--timing",
               "--trace-dir", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert "the timing model of 110377 workgroups (those of CU 0 in a grid of 33554432x1x1)" \
        in err and "model fewer: a smaller grid or fewer --timing-cus" in err


def test_kernel_inputs_are_checked_before_they_are_made(monkeypatch):
    from asterism import kernels

    monkeypatch.setenv(ENV, "64M")
    case = kernels.get("gemm").build("gfx942", {"m": 4096, "n": 4096, "k": 4096})
    with pytest.raises(MemoryBudgetError, match=r"the arguments and reference of gemm \(m 4096,"
                                                r" n 4096, k 4096, f16\) needs"):
        case.args["a"]
    case = kernels.get("flash_attention_fwd").build("gfx950", {"batch": 64, "seq_q": 4096})
    with pytest.raises(MemoryBudgetError, match="the arguments and reference of "
                                                "flash_attention_fwd \\(batch 64, heads 2"):
        case.reference()
