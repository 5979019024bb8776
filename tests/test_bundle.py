"""Profiling bundles: rocprofv3 counter files, candidate rules, the bundle directory of the
shared flash-attention capture (figures checked against sums computed here from the raw
files), a bundle of a modeled trace, errors, and the HTML view in a real headless browser."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import asterism
from asterism.cli import main
from asterism.profile import pictures
from asterism.profile.att import (
    CodeListing,
    CodeRow,
    InstRecord,
    Occupancy,
    OccupancyEvent,
    StateSpan,
    Trace,
    Wave,
    read_att,
)
from asterism.profile.bundle import (
    BundleError,
    BundleRequest,
    TraceError,
    analyze_capture,
    build_bundle,
)
from asterism.profile.counters import (
    CounterError,
    Dispatch,
    derived_metrics,
    read_counters,
)
from asterism.profile.insights import RULES, Context, candidates, occupancy_info
from asterism.profile.report import analyze
from asterism.timing.result import InstCategory

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "tests" / "data" / "shared"
FLASH = SHARED / "att" / "flash_attn_func_small"
PA = SHARED / "att" / "pa_mqa_logits_fp4_small"
FLASH_COUNTERS = SHARED / "counters" / "flash_attn_func_small"
RESULTS = FLASH_COUNTERS / "small_results.json"
AGENTS = FLASH_COUNTERS / "small_agent_info.csv"


# ---------------------------------------------------------------------------- counters


def _tool(**parts) -> dict:
    """A rocprofv3 results document with one tool object made of `parts`."""
    return {"rocprofiler-sdk-tool": [parts]}


def _dispatch_info(did: int, kid: int = 7) -> dict:
    return {"size": 64, "agent_id": {"handle": 11}, "queue_id": {"handle": 1},
            "kernel_id": kid, "dispatch_id": did, "private_segment_size": 0,
            "group_segment_size": 4096, "workgroup_size": {"x": 256, "y": 1, "z": 1},
            "grid_size": {"x": 65536, "y": 1, "z": 1}}


def _synthetic_results() -> dict:
    """One GPU, one kernel, one dispatch with TCC_HIT split over two instances."""
    return _tool(
        metadata={"command": ["./app", "--n", "4"]},
        agents=[{"id": {"handle": 11}, "type": 2, "name": "gfx942", "cu_count": 304,
                 "simd_per_cu": 4, "max_waves_per_simd": 8, "lds_size_in_kb": 64,
                 "wave_front_size": 64, "product_name": "AMD Instinct MI300X"}],
        kernel_symbols=[{"kernel_id": 7, "kernel_name": "gemm.kd", "code_object_id": 2,
                         "arch_vgpr_count": 96, "accum_vgpr_count": 32, "sgpr_count": 40,
                         "group_segment_size": 4096, "private_segment_size": 0,
                         "formatted_kernel_name": "gemm"}],
        counters=[{"id": {"handle": 1}, "name": "TCC_HIT_sum"},
                  {"id": {"handle": 2}, "name": "TCC_MISS_sum"},
                  {"id": {"handle": 3}, "name": "FETCH_SIZE"},
                  {"id": {"handle": 4}, "name": "SQ_WAVES"},
                  {"id": {"handle": 5}, "name": "SQ_INSTS_VALU"}],
        buffer_records={"kernel_dispatch": [{"start_timestamp": 1_000_000,
                                             "end_timestamp": 1_002_000,
                                             "dispatch_info": _dispatch_info(1)}]},
        callback_records={"counter_collection": [{
            "dispatch_data": {"dispatch_info": _dispatch_info(1)},
            "records": [{"counter_id": {"handle": 1}, "value": 100.0},
                        {"counter_id": {"handle": 1}, "value": 200.0},
                        {"counter_id": {"handle": 2}, "value": 100.0},
                        {"counter_id": {"handle": 3}, "value": 1024.0},
                        {"counter_id": {"handle": 4}, "value": 256.0},
                        {"counter_id": {"handle": 5}, "value": 51200.0}]}]},
    )


def test_real_results_json_by_hand() -> None:
    raw = json.loads(RESULTS.read_text())["rocprofiler-sdk-tool"][0]
    sym = next(k for k in raw["kernel_symbols"]
               if k["formatted_kernel_name"] == "flash_attn_func_kernel_0")
    data = read_counters([RESULTS, AGENTS])
    gpus = data.gpus()
    assert len(gpus) == sum(1 for a in raw["agents"] if a["type"] == 2) == 8
    assert (gpus[0].name, gpus[0].product, gpus[0].cu_count) == ("gfx950",
                                                                 "AMD Instinct MI350X", 256)
    k = data.kernel("flash_attn_func_kernel_0", 4)
    assert (k.vgprs, k.agprs, k.sgprs, k.lds_bytes) == (
        sym["arch_vgpr_count"], sym["accum_vgpr_count"], sym["sgpr_count"],
        sym["group_segment_size"]) == (124, 0, 112, 49152)
    assert data.command == raw["metadata"]["command"]
    # This run recorded neither dispatches nor counters.
    assert data.dispatches == [] and data.counter_names() == []
    # The agent CSV alone gives the same GPUs.
    alone = read_counters([AGENTS])
    assert [a.name for a in alone.gpus()] == ["gfx950"] * 8


def test_synthetic_json_counters_and_rates(tmp_path: Path) -> None:
    path = tmp_path / "x_results.json"
    path.write_text(json.dumps(_synthetic_results()))
    data = read_counters([path])
    (d,) = data.dispatches_of("gemm")
    assert d.duration_ns == 2000 and d.workgroup_size == 256 and d.grid == (65536, 1, 1)
    assert d.counters == {"TCC_HIT_sum": 300.0, "TCC_MISS_sum": 100.0, "FETCH_SIZE": 1024.0,
                          "SQ_WAVES": 256.0, "SQ_INSTS_VALU": 51200.0}
    rates = {m.name: v for m, v in derived_metrics(d)}
    assert rates["L2 hit rate"] == pytest.approx(75.0)  # 300 / (300 + 100)
    assert rates["HBM read bandwidth"] == pytest.approx(1024 * 1024 / 2000)  # bytes/ns = GB/s
    assert rates["VALU instructions per wave"] == pytest.approx(200.0)
    assert rates["waves per microsecond"] == pytest.approx(128.0)
    assert "HBM write bandwidth" not in rates  # no WRITE_SIZE


def test_csv_files(tmp_path: Path) -> None:
    cc = tmp_path / "p_counter_collection.csv"
    cc.write_text(
        "Correlation_Id,Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Grid_Size,"
        "Kernel_Id,Kernel_Name,Workgroup_Size,LDS_Block_Size,Scratch_Size,VGPR_Count,"
        "Accum_VGPR_Count,SGPR_Count,Counter_Name,Counter_Value,Start_Timestamp,"
        "End_Timestamp\n"
        '1,3,2,1,9,9,4096,5,"gemm.kd",256,8192,0,128,0,32,TCC_HIT_sum,90,100,600\n'
        '1,3,2,1,9,9,4096,5,"gemm.kd",256,8192,0,128,0,32,TCC_MISS_sum,10,100,600\n')
    kt = tmp_path / "p_kernel_trace.csv"
    kt.write_text(
        "Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,"
        "Correlation_Id,Start_Timestamp,End_Timestamp,Workgroup_Size_X,Workgroup_Size_Y,"
        "Workgroup_Size_Z,Grid_Size_X,Grid_Size_Y,Grid_Size_Z\n"
        "KERNEL_DISPATCH,2,1,0,9,3,5,gemm,1,100,700,256,1,1,4096,1,1\n"
        "KERNEL_DISPATCH,2,1,0,9,4,5,gemm,2,800,1500,256,1,1,4096,1,1\n")
    data = read_counters([cc, kt])
    d3, d4 = data.dispatches_of("gemm")
    assert (d3.dispatch_id, d3.duration_ns, d3.workgroup) == (3, 600, (256, 1, 1))
    assert d3.counters == {"TCC_HIT_sum": 90.0, "TCC_MISS_sum": 10.0}
    assert (d4.duration_ns, d4.counters) == (700, {})
    assert {m.name: v for m, v in derived_metrics(d3)}["L2 hit rate"] == pytest.approx(90.0)
    k = data.kernel("gemm")
    assert (k.vgprs, k.sgprs, k.lds_bytes) == (128, 32, 8192)


@pytest.mark.parametrize("content, name, message", [
    (None, "gone_results.json", "counter file is missing"),
    ("{not json", "a_results.json", "a_results.json:1:2: invalid JSON"),
    ('{"something": 1}', "b_results.json", "not a rocprofv3 results file"),
    (json.dumps(_tool(counters=[], callback_records={"counter_collection": [{
        "dispatch_data": {"dispatch_info": _dispatch_info(1)},
        "records": [{"counter_id": {"handle": 9}, "value": 1}]}]})),
     "c_results.json", "counter id 9 is not in 'counters'"),
    (json.dumps(_tool(buffer_records={"kernel_dispatch": [{"dispatch_info": _dispatch_info(1)}
                                                          ]})),
     "d_results.json", "['start_timestamp']: missing"),
    ("A,B\n1,2\n", "e.csv", "not a rocprofv3 CSV file this reader knows"),
    ("Dispatch_Id,Kernel_Name,Counter_Name,Counter_Value\n1,k,SQ_WAVES,12\n2,k,SQ_WAVES,many\n",
     "f.csv", "f.csv:3:1: column Counter_Value: expected a number, got 'many'"),
])
def test_bad_counter_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           content: str | None, name: str, message: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(CounterError) as err:
        read_counters([path])
    assert message in str(err.value)
    out = tmp_path / "bundle"
    rc = main(["trace", "bundle", str(PA), "-o", str(out), "--counters", str(path)])
    err_text = capsys.readouterr().err
    assert message.split(": ", 1)[-1] in err_text  # (CLI: "loc: error: ..." or a note)
    assert list(tmp_path.glob(".bundle*")) == []
    if content is None:  # a name on the command line that is not there: a mistake
        assert rc == 1 and not out.exists()
    else:  # a file the bundle cannot use is left out and named, never fatal
        assert rc == 0 and not (out / "counters").exists()
        assert f"- counters: `{name}`: " in (out / "REPORT.md").read_text()


# ---------------------------------------------------------------------------- candidate rules


ISA = ["; k",
       "s_load_dword s4, s[0:1], 0x0",                         # 1
       "buffer_load_dwordx4 v1, s[8:11], 0 offen lds",         # 2 global -> LDS DMA
       "global_load_dwordx4 v[2:5], v0, s[8:9]",               # 3
       "ds_read_b128 v[6:9], v0",                              # 4
       "s_waitcnt lgkmcnt(0)",                                 # 5
       "s_waitcnt vmcnt(0)",                                   # 6
       "s_barrier",                                            # 7
       "v_mfma_f32_16x16x16_f16 v[10:13], v[2:3], v[4:5], 0",  # 8
       "v_mfma_f32_16x16x16_f16 v[10:13], v[2:3], v[4:5], v[10:13]",  # 9
       "buffer_store_dword v10, v0, s[8:11], 0 offen",         # 10
       "ds_write_b32 v0, v11",                                 # 11
       "v_add_f32_e32 v14, v10, v11",                          # 12
       "s_endpgm"]                                             # 13
C = InstCategory
IDLE_FILLER = [InstRecord(5000 + 10 * i, C.VALU, 0, 4, 12) for i in range(50)]


def _trace(records: list[InstRecord], waves_per_simd: int = 1, end: int = 6000) -> Trace:
    """One wave (copied `waves_per_simd` times onto one SIMD) running `records`; marked
    modeled so its waitcnt producers are worked out from the records."""
    rows = [CodeRow(i, t, codeobj=1, vaddr=0x100 + 4 * i, source=f"/k.py:{i}")
            for i, t in enumerate(ISA)]
    waves = [Wave(se=0, simd=0, slot=s, id=0, cu=0, begin=0, end=end,
                  instructions=list(records), timeline=[StateSpan(2, end)])
             for s in range(waves_per_simd)]
    occ = Occupancy({0: sorted([OccupancyEvent(0, 0, 0, s, 1, 1) for s in range(len(waves))]
                               + [OccupancyEvent(end, 0, 0, s, 0, 1)
                                  for s in range(len(waves))],
                               key=lambda e: (e.time, -e.start))}, {1: "k"})
    return Trace(code=CodeListing(rows), waves=waves, occupancy=occ, modeled=True)


BASE = [(C.SMEM, 1), (C.VMEM, 2), (C.FLAT, 3), (C.LDS, 4), (C.IMMED, 5), (C.IMMED, 6),
        (C.SALU, 7), (C.VMEM, 10), (C.VALU, 8), (C.MESSAGE, 13)]


def _with(stalls: dict[int, int], extra: list[InstRecord] = ()) -> list[InstRecord]:
    """The base work (10 instructions, 4 issue cycles each, back to back, the MFMA last so
    nothing before it counts as waiting for it) with `stalls` cycles of stall on the given
    lines, then `extra` records as they are."""
    out, t = [], 0
    for cat, line in BASE:
        s = stalls.get(line, 0)
        out.append(InstRecord(t, cat, s, 4 + s, line))
        t += 4 + s
    return out + list(extra)


# rule -> (trace, context extras, expected (recoverable, first line) of its first candidate,
#          phrase of the suggestion); every rule of RULES must be here.
def _rule_cases() -> dict[str, tuple]:
    lds_first = [InstRecord(0, C.LDS, 0, 4, 4), InstRecord(10, C.IMMED, 300, 304, 5),
                 InstRecord(400, C.MESSAGE, 0, 4, 13)]
    smem_first = [InstRecord(0, C.SMEM, 0, 4, 1), InstRecord(10, C.IMMED, 300, 304, 5),
                  InstRecord(400, C.MESSAGE, 0, 4, 13)]
    global_only = [InstRecord(0, C.FLAT, 0, 4, 3), InstRecord(10, C.IMMED, 300, 304, 6),
                   InstRecord(400, C.MESSAGE, 0, 4, 13)]
    mfma = [InstRecord(0, C.VALU, 0, 16, 8), InstRecord(16, C.VALU, 200, 216, 9),
            InstRecord(300, C.MESSAGE, 0, 4, 13)]
    return {
        "vmcnt-wait": (_trace(_with({6: 500})), {}, (500, 6), "next tile's DMA earlier"),
        "vmcnt-wait/plain": (_trace(global_only), {}, (300, 6), "software-pipeline"),
        "lgkmcnt-wait": (_trace(smem_first), {}, (300, 5), "s_load_* earlier"),
        "lgkmcnt-wait/lds": (_trace(lds_first), {}, (300, 5), "lgkmcnt(N) > 0"),
        "barrier": (_trace(_with({7: 400})), {}, (400, 7), "double-buffer"),
        "mfma-dependency": (_trace(mfma), {}, (200, 9), "independent MFMA chains"),
        "vmem-issue": (_trace(_with({10: 300})), {}, (300, 10), "wider accesses"),
        "lds-issue": (_trace(_with({4: 300})), {}, (300, 4), "bank conflicts"),
        # 256 VGPRs: 2 waves per SIMD by registers (gfx942: 512 // 256), 2 resident.
        "occupancy-registers": (_trace(_with({6: 500}), 2),
                                {"target": "gfx942", "vgprs": 256},
                                (min(1000, 2 * 40 // 2), None), "at most 168"),
        # 40 KB of LDS, 4-wave workgroups: 4 per CU = 4 waves per SIMD; 4 resident.
        "occupancy-lds": (_trace(_with({6: 500}), 4),
                          {"target": "gfx942", "vgprs": 32, "lds_bytes": 40960,
                           "waves_per_workgroup": 4},
                          (min(2000, 4 * 40 // 4), None), "at most 32768 bytes"),
        "underfilled": (_trace(_with({6: 500}), 1), {"target": "gfx942", "vgprs": 32},
                        (min(500, 40), None), "launch more, smaller workgroups"),
        "idle": (_trace(_with({}, IDLE_FILLER)), {}, None, "instruction-cache"),
        "l2-hit-rate": (_trace(_with({})), {"dispatch": {"TCC_HIT_sum": 20.0,
                                                       "TCC_MISS_sum": 80.0}},
                        (None, None), "improve reuse"),
    }


def _context(trace: Trace, extra: dict) -> Context:
    extra = dict(extra)
    dispatch = extra.pop("dispatch", None)
    occ = occupancy_info(trace, **extra)
    return Context(analyze(trace), occ,
                   [Dispatch(1, "k", counters=dispatch)] if dispatch else [])


def test_every_rule_has_a_case() -> None:
    assert {name.split("/")[0] for name in _rule_cases()} == {r.name for r in RULES}


@pytest.mark.parametrize("case", sorted(_rule_cases()))
def test_rule_fires_on_its_trace(case: str) -> None:
    trace, extra, expect, phrase = _rule_cases()[case]
    name = case.split("/")[0]
    rule = next(r for r in RULES if r.name == name)
    found = list(rule.find(_context(trace, extra), rule))
    assert found, f"{name} did not fire"
    c = found[0]
    if name == "idle":
        report = analyze(trace)
        assert c.recoverable == report.idle_cycles > 0
    else:
        cycles, line = expect
        assert c.recoverable == cycles
        if line is not None:
            assert c.lines[0] == line
    assert phrase in c.suggestion and c.evidence


@pytest.mark.parametrize("name", sorted({r.name for r in RULES}))
def test_rule_is_quiet_on_a_clean_trace(name: str) -> None:
    """No stall, every wave slot the resources allow in use, no counters: nothing fires."""
    rule = next(r for r in RULES if r.name == name)
    trace = _trace(_with({}), 8, end=40)
    ctx = _context(trace, {"target": "gfx942", "vgprs": 32})
    assert list(rule.find(ctx, rule)) == []


def test_candidates_ranked_by_recoverable_cycles() -> None:
    trace = _trace(_with({6: 500, 7: 400, 10: 300}))
    ctx = _context(trace, {"target": "gfx942", "vgprs": 32})
    got = [(c.rule, c.recoverable) for c in candidates(ctx)]
    assert got[:3] == [("vmcnt-wait", 500), ("barrier", 400), ("vmem-issue", 300)]
    assert got[3] == ("underfilled", 40)  # min(stall 1200, issue 40 / 1 wave)


# ---------------------------------------------------------------------------- the bundle


def _raw_wave_sums(folder: Path) -> tuple[int, int, dict[int, int]]:
    """Stall, duration and per-line stall sums straight from the wave files."""
    stall = dur = 0
    per_line: dict[int, int] = {}
    for f in folder.glob("se*_sm*_sl*_wv*.json"):
        for _t, _c, s, d, line in (r[:5] for r in json.loads(f.read_text())["wave"]
                                  ["instructions"] or []):
            stall += s
            dur += d
            per_line[line] = per_line.get(line, 0) + s
    return stall, dur, per_line


@pytest.fixture(scope="module")
def flash_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("b") / "flash"
    assert main(["trace", "bundle", str(FLASH), "-o", str(out), "--counters", str(RESULTS),
                 "--counters", str(AGENTS), "--title", "flash attention (small)"]) == 0
    return out


def test_flash_bundle_figures_by_hand(flash_bundle: Path) -> None:
    md = (flash_bundle / "REPORT.md").read_text()
    data = json.loads((flash_bundle / "report.json").read_text())
    stall, dur, per_line = _raw_wave_sums(FLASH)
    assert md.startswith("# flash attention (small)\n")
    assert f"{100 * stall / dur:.1f} % of instruction cycles stalled" in md
    assert data["totals"]["stall_cycles"] == stall
    assert data["totals"]["issue_cycles"] == dur - stall
    top = max(per_line, key=lambda k: per_line[k])
    assert data["hotspots"][0]["line"] == top and data["hotspots"][0]["stall"] == per_line[top]
    # Occupancy: the occupancy.json of the capture shows one wave per SIMD at a time;
    # 124 VGPRs (-> 128) allow 512 // 128 = 4, 48 KB of LDS allows 160 KB // 48 KB = 3
    # four-wave workgroups per CU = 3 waves per SIMD: LDS limits.
    occ = json.loads((FLASH / "occupancy.json").read_text())
    live: dict[tuple, int] = {}
    peak = 0
    for se, events in occ.items():
        if not se.isdigit():
            continue
        for _time, cu, simd, _slot, start, _k in sorted(events, key=lambda e: (e[0], e[4])):
            key = (se, cu, simd)
            live[key] = live.get(key, 0) + (1 if start else -1)
            peak = max(peak, live[key])
    assert data["occupancy"]["observed_per_simd"] == peak == 1
    assert (data["occupancy"]["theoretical"], data["occupancy"]["limited_by"]) == (3, ["lds"])
    assert data["occupancy"]["limits"]["vgprs"] == 4
    assert "AMD Instinct MI350X (gfx950, 256 CUs)" in md
    assert "124 arch VGPRs, 0 AGPRs, 112 SGPRs, 49152 bytes LDS" in md
    assert "No kernel-dispatch or counter records for this kernel" in md
    # Candidates: the DMA waits carry the prefetch suggestion, ranked by their stall.
    dma = [c for c in data["candidates"] if c["rule"] == "vmcnt-wait"]
    assert dma and all("next tile's DMA" in c["suggestion"] for c in dma)
    assert [c["recoverable"] for c in dma] == sorted((c["recoverable"] for c in dma),
                                                     reverse=True)
    assert dma[0]["recoverable"] == per_line[dma[0]["lines"][0]]
    for section in ("## Optimization candidates", "## Wave states", "## Stall taxonomy",
                    "## Occupancy", "## Top 10 hotspots", "## Source lines by stall",
                    "## s_waitcnt producers", "## Counters"):
        assert md.count(section) == 1, section


def test_flash_bundle_contents(flash_bundle: Path) -> None:
    copy = flash_bundle / "att" / FLASH.name
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in FLASH.iterdir())
    for p in FLASH.iterdir():
        assert (copy / p.name).read_bytes() == p.read_bytes()
    assert (flash_bundle / "counters" / RESULTS.name).read_bytes() == RESULTS.read_bytes()
    # The capture's snapshot copies, under their original names.
    assert (flash_bundle / "source" / "flash_attn_func.py").read_text().splitlines() == \
        (FLASH / "source_0_flash_attn_func.py").read_text().splitlines()
    assert (flash_bundle / "source" / "numeric.py").is_file()
    for png in ("timeline", "stalls", "hotspots", "source_heat"):
        assert (flash_bundle / "pictures" / f"{png}.png").read_bytes()[:8] == \
            b"\x89PNG\r\n\x1a\n"
    html = (flash_bundle / "pictures" / "view.html").read_text()
    assert "http://" not in html and "https://" not in html and "<link" not in html
    assert list(flash_bundle.parent.glob(".flash*")) == []


def test_html_data_round_trips(tmp_path: Path) -> None:
    trace = read_att(PA)
    report = analyze(trace)
    data = pictures.html_data(trace, report)
    lanes = data["lanes"]
    assert sum(lane["n"] for lane in lanes) == sum(len(w.instructions) for w in trace.waves)
    import base64

    first = trace.waves[0]
    start = np.frombuffer(base64.b64decode(lanes[0]["start"]), "<i4")
    assert start.tolist() == [r.time - data["origin"] for r in first.instructions]
    assert data["hotspots"][0] == report.hotspots(1)[0].line


def _chromium() -> str | None:
    return next(filter(None, (shutil.which(n) for n in ("chromium", "chromium-browser",
                                                       "google-chrome"))), None)


def test_html_view_in_headless_browser(flash_bundle: Path) -> None:
    """The page decodes its data, zooms onto the top hotspot and hovers it (#selftest)."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium: apt-get install chromium (Debian) to run the HTML view test")
    url = (flash_bundle / "pictures" / "view.html").resolve().as_uri() + "#selftest"
    res = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--dump-dom", url], capture_output=True, text=True, timeout=180)
    line = next(x for x in res.stdout.splitlines() if x.lstrip().startswith("<div id=\"selftest\""))
    got = json.loads(line.split("SELFTEST ", 1)[1].split("</div>")[0])
    report = json.loads((flash_bundle / "report.json").read_text())
    hot = report["hotspots"][0]
    assert got["lanes"] == 8 and got["records"] == report["totals"]["instructions"]
    assert got["line"] == hot["line"]
    assert hot["isa"] in got["hover"] and hot["source_text"] in got["hover"]
    # Clicking the second hotspot's row shows its source line (highlighted, from the
    # capture's snapshot) and steps through its executions (all of them: hits).
    second = report["hotspots"][1]
    assert got["clicked"] == second["line"]
    assert got["occurrences"] == second["hits"]
    line_no = int(second["source"].split(";")[0].rpartition(":")[2])
    assert got["here"].split()[0] == str(line_no) and second["source_text"] in got["here"]
    assert f"execution 1 of {second['hits']}" in got["status"]


def test_modeled_trace_bundle(tmp_path: Path) -> None:
    mlir = ROOT / "examples" / "demo" / "add_10.mlir"
    trace_dir = tmp_path / "modeled"
    out_arr = np.zeros(64, np.int32)
    asterism.launch(str(mlir), "add_10", grid=1, block=64, args=[out_arr], timing=True,
                    trace_dir=trace_dir)
    out = tmp_path / "bundle"
    assert main(["trace", "bundle", str(trace_dir), "-o", str(out), "--kernel-file",
                 str(mlir)]) == 0
    md = (out / "REPORT.md").read_text()
    assert "**modeled** by" in md
    assert (out / "kernel" / "add_10.mlir").read_bytes() == mlir.read_bytes()
    assert "add_10" in (out / "kernel" / "kernel.s").read_text()
    stats = json.loads((out / "kernel" / "stats.json").read_text())
    data = json.loads((out / "report.json").read_text())
    assert data["occupancy"]["theoretical"] == stats[0]["waves_per_simd"]
    assert data["occupancy"]["resource_source"] == "the code object's kernel descriptor"
    # The modeled rows point at the .mlir lines: the file is in source/.
    assert (out / "source" / "add_10.mlir").read_bytes() == mlir.read_bytes()
    assert (out / "pictures" / "timeline.png").is_file()


def test_baseline_table(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    assert main(["trace", "bundle", str(FLASH), "-o", str(out), "--baseline", str(PA)]) == 0
    md = (out / "REPORT.md").read_text()
    a, b = analyze(read_att(FLASH)), analyze(read_att(PA))
    change = 100.0 * (a.span - b.span) / b.span
    assert f"| traced span (cycles) | {b.span} | {a.span} | {change:+.1f} % |" in md
    assert (f"| stall: vmcnt wait | {b.stalls['vmcnt wait']} | {a.stalls['vmcnt wait']} |"
            in md)
    assert f"`{b.hotspots(1)[0].isa}` ({b.hotspots(1)[0].stall})" in md
    assert (out / "baseline" / PA.name / "code.json").is_file()


def test_bundle_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "b"

    def boom(*_a, **_k):
        raise BundleError("picture failed")

    monkeypatch.setattr(pictures, "plot_hotspots", boom)
    with pytest.raises(BundleError):
        build_bundle(BundleRequest(PA, out))
    assert not out.exists() and list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    out.mkdir()
    assert main(["trace", "bundle", str(PA), "-o", str(out)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["trace", "bundle", str(tmp_path / "nope"), "-o", str(tmp_path / "c")]) == 1
    assert "no such trace folder" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_analysis_uses_dispatch_workgroup(tmp_path: Path) -> None:
    """A dispatch's workgroup size beats the inferred one."""
    path = tmp_path / "r_results.json"
    doc = _synthetic_results()
    doc["rocprofiler-sdk-tool"][0]["kernel_symbols"][0]["formatted_kernel_name"] = \
        "pa_mqa_logits_fp4_kernel_0"
    path.write_text(json.dumps(doc))
    a = analyze_capture(read_att(PA), read_counters([path]))
    assert a.occupancy.waves_per_workgroup == 4  # 256 work-items
    assert a.occupancy.workgroup_source.startswith("the dispatch's workgroup size")
    assert a.occupancy.target == "gfx942" and a.occupancy.vgprs == 96


def test_source_heat_axis_fits_the_data() -> None:
    """The bars' axis ends 5 % past the longest bar (it ran to 2.2x, 5e6 for a 2.3e6
    maximum, to leave room for the text, which has a panel of its own now)."""
    from matplotlib.figure import Figure

    report = analyze(read_att(FLASH))
    heat = pictures.source_heat(report, 20)
    longest = max(h["cycles"] for h in heat)
    ax = pictures.draw_source_heat(Figure(), heat)
    assert ax.get_xlim() == pytest.approx((0, 1.05 * longest))


def test_kernel_trace_csv_rates_from_flops_and_bytes(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """rocprofv3's own --kernel-trace CSV feeds the bundle; --flops/--bytes turn each of the
    kernel's dispatch durations into TFLOPS and GB/s (values by hand from the CSV rows)."""
    import csv

    kt = FLASH_COUNTERS / "discover_kernel_trace.csv"
    rows = [r for r in csv.DictReader(kt.open()) if r["Kernel_Name"].startswith("flash_attn")]
    assert rows
    first = rows[0]
    ns = int(first["End_Timestamp"]) - int(first["Start_Timestamp"])
    flops, nbytes = 4.294967296e9, 2.0e8  # (B=1, S=1024, H=16, D=128, causal: 4 S^2 D H / 2)
    out = tmp_path / "b"
    assert main(["trace", "bundle", str(FLASH), "-o", str(out), "--counters", str(kt),
                 "--no-what-if", "--flops", str(flops), "--bytes", str(nbytes),
                 "--peak-gbps", "8000"]) == 0
    md = (out / "REPORT.md").read_text()
    did = first["Dispatch_Id"]
    assert f"| {did} | TFLOPS | {flops / ns / 1e3:.4g}  | --flops / duration |" in md
    assert f"| {did} | GB/s | {nbytes / ns:.4g}  | --bytes / duration |" in md
    data = json.loads((out / "report.json").read_text())
    d = next(x for x in data["dispatches"] if str(x["dispatch_id"]) == did)
    assert d["derived"]["TFLOPS"] == pytest.approx(flops / ns / 1e3)
    durs = [int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in rows]
    gbs = nbytes / (sum(durs) / len(durs))
    assert data["structure"]["bound"]["figures"]["bandwidth"].startswith(f"{gbs:,.0f} GB/s")
    for bad in (["--flops", "0"], ["--bytes", "nan"], ["--what-if-records", "0"]):
        assert main(["trace", "bundle", str(FLASH), "-o", str(tmp_path / "x")] + bad) == 1
        assert "must be" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_plot_analyzes_only_what_it_draws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`trace plot` runs the analysis for pictures only (no source texts, producer lists or
    unit tallies); its stall causes and hotspots are the full analysis' own."""
    import asterism.profile.plot as plot_mod

    seen = []
    real = plot_mod.analyze

    def spy(trace, *args, **kwargs):
        seen.append(kwargs.get("pictures_only", False))
        return real(trace, *args, **kwargs)

    monkeypatch.setattr(plot_mod, "analyze", spy)
    assert main(["trace", "plot", str(FLASH), "-o", str(tmp_path / "t.png")]) == 0
    assert seen == [True]
    trace = read_att(FLASH)
    light, full = analyze(trace, pictures_only=True), analyze(trace)
    assert light.stalls == full.stalls
    assert [h.line for h in light.hotspots(10)] == [h.line for h in full.hotspots(10)]
    assert light.wait_links == [] and full.wait_links


def test_trace_commands_leave_the_garbage_collector_running(tmp_path: Path) -> None:
    # bundle and plot pause the collector while they read a capture: a caller's process
    # (main([...]), build_bundle, read_att) gets it back running, also after an error.
    import gc

    assert gc.isenabled()
    seen = []
    build_bundle(BundleRequest(PA, tmp_path / "api", what_if=False),
                 after_read=lambda trace: seen.append((gc.isenabled(), len(trace.waves))))
    assert gc.isenabled() and seen == [(True, len(read_att(PA).waves))]
    assert main(["trace", "bundle", str(PA), "-o", str(tmp_path / "b"), "--no-what-if"]) == 0
    assert gc.isenabled()
    assert main(["trace", "plot", str(PA), "-o", str(tmp_path / "p.png")]) == 0
    assert gc.isenabled()
    broken = tmp_path / "broken"
    shutil.copytree(PA, broken)
    (broken / "code.json").write_text("{", encoding="utf-8")
    assert main(["trace", "bundle", str(broken), "-o", str(tmp_path / "c")]) == 1
    assert gc.isenabled() and not (tmp_path / "c").exists()
    assert main(["trace", "plot", str(broken), "-o", str(tmp_path / "q.png")]) == 1
    assert gc.isenabled()
    with pytest.raises(TraceError):
        read_att(broken)
    assert gc.isenabled()
