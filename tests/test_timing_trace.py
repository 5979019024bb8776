"""Timed runs as traces and as computations: the modeled ATT folder reads back like a capture
(its code.json totals are the sums of its wave records; report and plot work on it; source
locations of IR and builder lines), functional results are identical with and without the
timing model, the CLI flags, and the source map of an assembled module."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import asterism
from asterism.builder import KernelBuilder
from asterism.cli import main
from asterism.mc.codeobject import read_code_object
from asterism.mc.decoder import decode_code
from asterism.mc.source_map import source_map
from asterism.profile import read_att, trace_plot, trace_report
from asterism.profile.att_export import PARAMS_FILE
from asterism.timing.params import TimingOptions
from asterism.timing.result import InstCategory, WaveState

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exchange_kernel(waves: int = 4):
    """Each work-item writes wg * 1000 + tid to LDS; after a barrier it reads the value of
    work-item (tid + 64) mod n (another wave's) and stores it."""
    n = 64 * waves
    kb = KernelBuilder("exchange", workgroup_size=(n, 1, 1), lds_size=4 * n)
    out = kb.arg_buffer("out", "u32", access="write_only")
    kp, tid, wg = kb.kernarg_ptr(), kb.workitem_id("x"), kb.workgroup_id("x")
    kb.s_load_dwordx2(kb.s[4:6], kp, out)
    kb.s_mul_i32(kb.s(6), wg, 1000)
    kb.v_lshlrev_b32(kb.v(1), 2, tid)  # LDS byte address of tid
    kb.v_add_u32(kb.v(2), kb.s(6), tid)
    kb.ds_write_b32(kb.v(1), kb.v(2))
    kb.s_waitcnt(lgkmcnt=0)
    kb.s_barrier()
    kb.v_add_u32(kb.v(3), 256, kb.v(1))
    kb.v_and_b32(kb.v(3), 4 * n - 1, kb.v(3))
    kb.ds_read_b32(kb.v(4), kb.v(3))
    kb.s_mul_i32(kb.s(7), wg, 4 * n)
    kb.v_add_u32(kb.v(5), kb.s(7), kb.v(1))
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_store_dword(kb.v(5), kb.v(4), kb.s[4:6])
    kb.s_endpgm()
    return kb.finish()


def exchange_expected(grid: int, waves: int) -> np.ndarray:
    n = 64 * waves
    t = np.arange(n)
    return np.concatenate([g * 1000 + (t + 64) % n for g in range(grid)]).astype(np.uint32)


@pytest.mark.parametrize("waves, grid, options", [
    (4, 3, TimingOptions()),
    (4, 5, TimingOptions(cus=2, compute_units=2)),  # every workgroup modeled, 2-3 per CU
    (8, 2, TimingOptions(cus=1, compute_units=1, latency={"lds": 300})),
])
def test_functional_results_identical_with_and_without_timing(waves, grid, options):
    module = exchange_kernel(waves)
    plain = np.zeros(64 * waves * grid, np.uint32)
    asterism.launch(module, "exchange", grid=grid, block=64 * waves, args=[plain])
    timed = np.zeros_like(plain)
    res = asterism.launch(module, "exchange", grid=grid, block=64 * waves, args=[timed],
                          timing=options)
    np.testing.assert_array_equal(plain, exchange_expected(grid, waves))
    np.testing.assert_array_equal(timed, plain)
    modeled = [w for w in res.timing.waves]
    assert len(modeled) == waves * res.timing.modeled_workgroups
    # every modeled wave waited at the barrier (a WAIT-state record of s_barrier)
    for w in modeled:
        bar = [r for r in w.records if res.timing.code[r[4] - 1][1] == "s_barrier"]
        assert len(bar) == 1 and bar[0][2] == bar[0][3] > 0


def test_gemm_example_identical_with_and_without_timing():
    gemm = _load(ROOT / "examples" / "gemm" / "gemm_f16.py")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    bt = rng.standard_normal((32, 32)).astype(np.float16)
    code = asterism.compile(gemm.build(32, 32, 32))
    outs = []
    for timing in (False, TimingOptions(cus=4, compute_units=4)):
        c = np.zeros((32, 32), np.float32)
        res = asterism.launch(code, "gemm_f16", grid=(2, 2, 1), block=64, args=[a, bt, c],
                              timing=timing)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    assert len(res.timing.waves) == 4 and res.timing.cycles > 0


def test_trace_folder_reads_back_like_a_capture(tmp_path):
    gen = _load(DEMO / "generate_mfma_10.py")
    out = tmp_path / "mfma_att"
    res = asterism.launch(gen.build(10), "mfma_10", grid=8 * 2, block=64,
                          timing=TimingOptions(compute_units=2), trace_dir=out)
    assert res.trace_dir == out
    trace = read_att(out)
    assert trace.modeled and "modeled, not measured" in trace.producer
    assert len(trace.waves) == 8 == len(res.timing.waves)
    params = json.loads(trace.extra_files[PARAMS_FILE])
    assert params["note"] == "modeled, not measured" and params["parameters"]["memory"]
    # code.json totals are the sums of the per-wave records (computed here by hand).
    sums: dict[int, list[int]] = {}
    for wave in trace.waves:
        prev_end = wave.begin
        for rec in wave.instructions:
            acc = sums.setdefault(rec.line, [0, 0, 0, 0])
            acc[0] += 1
            acc[1] += rec.duration
            acc[2] += rec.stall
            acc[3] += max(rec.time - prev_end, 0)
            prev_end = max(prev_end, rec.time + rec.duration)
    for row in trace.code.rows:
        assert [row.hit, row.latency, row.stall, row.idle] == sums.get(row.line, [0, 0, 0, 0])
    mfma_rows = [r for r in trace.code.rows if r.isa.startswith("v_mfma")]
    assert len(mfma_rows) == 10 and all(r.hit == 8 for r in mfma_rows)
    # builder line of every instruction in the source column
    assert all(r.source.endswith("generate_mfma_10.py:26") for r in mfma_rows)
    assert trace.code.rows[0].isa == "; mfma_10"
    # timelines cover each wave from begin to end; wave states are derived from them
    for wave in trace.waves:
        assert sum(s.cycles for s in wave.timeline) == wave.end - wave.begin
        assert wave.timeline[0].state == WaveState.IDLE
        assert wave.instructions[-1].category == InstCategory.MESSAGE
    assert sorted(trace.wstates) == [WaveState.IDLE, WaveState.EXEC, WaveState.STALL]
    events = trace.occupancy.events[0]
    assert len(events) == 16 and trace.occupancy.dispatches[1] == "mfma_10"
    # the analyzer and the pictures work on it and say it is modeled
    md = trace_report(out)
    assert "MODELED" in md and "generate_mfma_10.py:26" in md
    report = json.loads(trace_report(out, as_json=True))
    assert report["modeled"] is True and report["totals"]["waves"] == 8
    assert report["totals"]["instructions"] == 8 * 11
    png = tmp_path / "t.png"
    trace_plot(out, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trace_links_waits_to_their_loads_and_maps_ir_lines(tmp_path):
    out = tmp_path / "add"
    res = asterism.launch(DEMO / "add_10.mlir", "add_10", grid=4, block=64,
                          args=[np.zeros(256, np.int32)], timing=True, trace_dir=out)
    trace = read_att(out)
    (wave,) = trace.waves
    wait = next(r for r in trace.code.rows if r.isa.startswith("s_waitcnt"))
    load = next(r for r in trace.code.rows if r.isa.startswith("s_load"))
    assert [(link.line, link.producers) for link in wave.waitcnt] == [(wait.line,
                                                                       (load.line,))]
    text = (DEMO / "add_10.mlir").read_text().splitlines()
    for row in trace.code.rows[1:]:
        file, line = row.source.rsplit(":", 1)
        assert file.endswith("add_10.mlir")
        assert row.isa.split()[0].removesuffix("_e32") in text[int(line) - 1]
    assert res.timing.waves[0].records[-1][4] == trace.code.rows[-1].line


def test_source_map_matches_the_assembled_addresses():
    gemm = _load(ROOT / "examples" / "gemm" / "gemm_f16.py")
    mc = asterism.api.lower(gemm.build(32, 32, 64))
    obj = read_code_object(asterism.mc.assembler.assemble(mc))
    smap = source_map(mc, obj.text_address)
    k = obj.kernels[0]
    decoded = decode_code(obj.text[k.offset:k.offset + k.size], obj.target.name,
                          base=obj.text_address + k.offset)
    assert sorted(smap) == [d.address for d in decoded]
    assert all(loc.startswith(str(ROOT / "examples" / "gemm" / "gemm_f16.py:"))
               for loc in smap.values())


def test_cli_run_with_timing(tmp_path, capsys, monkeypatch):
    ir = tmp_path / "mfma.mlir"
    gen = _load(DEMO / "generate_mfma_10.py")
    ir.write_text(gen.render(4))
    att = tmp_path / "att"
    code = main(["run", str(ir), "--grid", "8", "--timing", "--trace-dir", str(att),
                 "--latency", "lds=100,hbm=700", "--timing-cus", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "timing model (modeled, not measured): mfma_4 on gfx942" in out
    assert "1 of 8 workgroups, 1 waves" in out and str(att) in out
    first_mfma = next(i for i, line in enumerate(ir.read_text().splitlines(), 1)
                      if "v_mfma" in line)
    assert read_att(att).code.rows[1].source == f"{ir}:{first_mfma}"
    assert main(["run", str(ir), "--grid", "1", "--timing", "--trace-dir", str(att),
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["timing"]["note"] == "modeled, not measured"
    assert data["timing"]["waves"][0]["instructions"] == 5
    assert main(["trace", "report", str(att)]) == 0
    assert "MODELED" in capsys.readouterr().out
    png = tmp_path / "p.png"
    assert main(["trace", "plot", str(att), "-o", str(png)]) == 0 and png.exists()
    # the default trace folder is asterism-timing/KERNEL in the working directory
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(ir), "--timing"]) == 0
    assert (tmp_path / "asterism-timing" / "mfma_4" / "code.json").exists()
    capsys.readouterr()
    assert main(["run", str(ir), "--latency", "hbm=1"]) == 1
    assert "need --timing" in capsys.readouterr().err
    assert main(["run", str(ir), "--timing", "--latency", "dram=1"]) == 1
    assert "unknown memory latency dram" in capsys.readouterr().err


def test_cycle_timer_layout_per_wave():
    kb = KernelBuilder("t", workgroup_size=(16, 8, 2))  # 256 work-items: 4 waves
    timer = kb.cycle_timer("stamps", regions=3)
    assert timer.first == 102 - 14 and timer.waves_per_workgroup == 4
    for r in range(3):
        with timer.region(r):
            kb.v_add_u32(kb.v(1), 1, kb.v(1))
    timer.flush()
    kb.s_endpgm()
    stamps = timer.host_buffer(3)
    assert stamps.shape == (12, 3, 2) and stamps.dtype == np.uint64
    asterism.launch(kb.finish(), "t", grid=3, block=(16, 8, 2), args=[stamps], timing=True)
    cycles = timer.cycles(stamps)
    assert cycles.shape == (12, 3)
    assert (cycles[:4] == 8).all()  # modeled waves (CU 0): one VALU op between the stamps
    assert (cycles > 0).all()  # every wave wrote its own slots
    with pytest.raises(asterism.errors.VerifyError, match="region 3 is not in"):
        with timer.region(3):
            pass
    with pytest.raises(asterism.errors.VerifyError, match="must be even"):
        KernelBuilder("u").cycle_timer("x", sgprs=3)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
