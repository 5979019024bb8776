"""The profile/ trace layer: ATT reader, writer, analyzer, plots.

Reference data: the vendored real capture tests/data/shared/att/pa_mqa_logits_fp4_small
(4 waves of pa_mqa_logits_fp4_kernel_0 on gfx950). Independent references used below:
literals worked out by hand from the JSON files (each with how), and the decoder's own
derived data in the capture (code.json totals, wstates*.json, waitcnt links), which our
code recomputes from the raw wave records.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from asterism.errors import AsterismError
from asterism.profile import trace_plot, trace_report
from asterism.profile.att import (
    CodeListing,
    CodeRow,
    InstRecord,
    StateSpan,
    Trace,
    TraceError,
    Wave,
    category_name,
    compute_code_stats,
    compute_wstates,
    occupancy_from_waves,
    read_att,
    state_name,
)
from asterism.profile.att_writer import write_att
from asterism.profile.isa_text import memory_kind
from asterism.profile.report import (
    MFMA_WINDOW,
    STALL_CAUSES,
    analyze,
    load_source_map,
    render_json,
    render_markdown,
)
from asterism.profile.waitcnt import capture_events, decoder_links, wait_events
from asterism.timing.result import InstCategory, WaveState

KERNEL = "pa_mqa_logits_fp4_kernel_0"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def capture_dir() -> Path:
    path = Path(__file__).parent / "data" / "shared" / "att" / "pa_mqa_logits_fp4_small"
    if not path.is_dir():
        pytest.skip(f"shared ATT capture not found at {path}")
    return path


@pytest.fixture(scope="module")
def trace(capture_dir: Path) -> Trace:
    return read_att(capture_dir)


SHARED_ATT = Path(__file__).parent / "data" / "shared" / "att"
CAPTURES = ["pa_mqa_logits_fp4_small", "flash_attn_func_small"]


@pytest.fixture(scope="module")
def flash_dir() -> Path:
    path = SHARED_ATT / "flash_attn_func_small"
    if not path.is_dir():
        pytest.skip(f"shared ATT capture not found at {path}")
    return path


def _raw_waves(folder: Path) -> dict[str, dict[str, Any]]:
    """The wave files' "wave" objects, read with nothing but json (the tests' reference)."""
    return {f.name: json.loads(f.read_text())["wave"]
            for f in sorted(folder.glob("se*_sm*_sl*_wv*.json"))}


def _raw_rows(folder: Path) -> dict[int, list[Any]]:
    return {row[2]: row for row in json.loads((folder / "code.json").read_text())["code"]}


@pytest.fixture()
def scratch_copy(capture_dir: Path, tmp_path: Path) -> Path:
    """A writable copy of the capture, for corrupting (the vendored one is never edited)."""
    dst = tmp_path / "capture"
    shutil.copytree(capture_dir, dst)
    return dst


# ------------------------------------------------------------------------------- reader


def test_reader_identity_and_shapes(trace: Trace) -> None:
    assert [w.filename for w in trace.waves] == [
        "se1_sm0_sl0_wv0.json", "se1_sm1_sl0_wv0.json",
        "se1_sm2_sl0_wv0.json", "se1_sm3_sl0_wv0.json",
    ]
    w0 = trace.waves[0]
    # From se1_sm0_sl0_wv0.json: file name se1/sm0/sl0/wv0; "wave": cu 1, simd 0, slot 0, id 0.
    assert (w0.se, w0.simd, w0.slot, w0.id, w0.cu) == (1, 0, 0, 0, 1)
    assert (w0.begin, w0.end, w0.name) == (173032, 178088, "SE1")
    assert w0.num_insts == w0.num_stitched == len(w0.instructions) == 394
    # First record of the file: [173060, 1, 0, 4, 1] -> SMEM, no stall, 4 cycles, line 1.
    assert w0.instructions[0] == InstRecord(173060, InstCategory.SMEM, 0, 4, 1)
    assert w0.instructions[0].category_name == "SMEM"
    assert w0.timeline[0] == StateSpan(WaveState.IDLE, 28)
    assert w0.waitcnt[0].line == 6 and w0.waitcnt[0].producers == (1, 2)

    assert len(trace.code.rows) == 727
    assert trace.code.rows[0].is_label and trace.kernel_names() == [KERNEL]
    row62 = trace.code.row(62)
    assert row62 is not None
    assert (row62.isa, row62.codeobj, row62.vaddr) == ("s_waitcnt lgkmcnt(0)", 22, 6736)
    assert (row62.hit, row62.latency, row62.stall, row62.idle) == (4, 4088, 4088, 0)

    assert (trace.info.gfxip, trace.info.gfxv, trace.info.version) == (9, "vega", "3.0.0")
    assert trace.occupancy is not None
    assert trace.occupancy.dispatches == {0: "0 / 0x0", 1: KERNEL}
    assert sorted(trace.occupancy.events) == [0, 1, 2, 3]
    # occupancy.json "1" has [173032,1,0,0,1,1]: the start of wave se1 sm0 on CU 1, kernel 1.
    starts = [e for e in trace.occupancy.events[1] if e.time == w0.begin and e.start == 1]
    assert [(e.cu, e.simd, e.slot, e.kernel_id) for e in starts] == [(1, 0, 0, 1)]
    assert trace.realtime is not None and trace.realtime.frequency == 100_000_000
    assert sorted(trace.wstates) == [1, 2, 3, 4]
    assert trace.modeled is False and trace.producer is None
    assert trace.extra_files == {}


def test_category_and_state_names(trace: Trace) -> None:
    assert category_name(9) == "IMMED" and category_name(6) == "VALU"
    assert category_name(99) == "CATEGORY_99"
    assert state_name(3) == "WAIT" and state_name(42) == "STATE_42"
    # Every executed s_waitcnt is filed by the hardware as IMMED, every MFMA as VALU.
    for wave in trace.waves:
        for rec in wave.instructions:
            isa = trace.code.row(rec.line).isa
            if isa.startswith("s_waitcnt"):
                assert rec.category == InstCategory.IMMED
            if isa.startswith("v_mfma"):
                assert rec.category == InstCategory.VALU


def test_decoder_derived_data_is_reproduced(trace: Trace) -> None:
    # code.json's Hit/Latency/Stall/Idle, wstates*.json and the waitcnt links are computed
    # by the decoder from the same wave records; recomputing them checks our reading.
    assert compute_code_stats(trace.code, trace.waves) == trace.code
    assert compute_wstates(trace.waves) == trace.wstates
    for wave in trace.waves:
        assert decoder_links(wave, trace.code) == wave.waitcnt


# ------------------------------------------------------------------------------- analyzer


def test_per_instruction_totals_equal_wave_sums(trace: Trace) -> None:
    report = analyze(trace)
    sums: dict[int, list[int]] = {}
    for wave in trace.waves:
        for rec in wave.instructions:
            acc = sums.setdefault(rec.line, [0, 0, 0])
            acc[0] += 1
            acc[1] += rec.duration
            acc[2] += rec.stall
    for stats in report.listing:
        assert [stats.hits, stats.cycles, stats.stall] == sums.get(stats.line, [0, 0, 0])
        row = trace.code.row(stats.line)
        assert (stats.hits, stats.cycles, stats.stall, stats.idle) == (
            row.hit, row.latency, row.stall, row.idle)
        assert sum(stats.causes.values()) == stats.stall
    assert report.instructions == sum(len(w.instructions) for w in trace.waves)
    assert report.stall_cycles == sum(s.stall for s in report.listing)
    assert sum(report.stalls.values()) == report.stall_cycles
    assert list(report.stalls) == list(STALL_CAUSES)


def test_hand_computed_figures(trace: Trace) -> None:
    report = analyze(trace)
    assert report.waves == 4
    # 394 = "num_insts" of each of the 4 wave files, all equal -> 4 * 394.
    assert report.instructions == 1576
    w0 = report.per_wave[0]
    # se1_sm0_sl0_wv0.json: "end" 178088 - "begin" 173032 (also its "duration" field).
    assert w0.cycles == 5056
    # Summing that file's timeline [state, cycles] pairs per state code
    # (1 IDLE, 2 EXEC, 3 WAIT, 4 STALL): 28 + 1856 + 2880 + 292 = 5056.
    assert w0.states == {"IDLE": 28, "EXEC": 1856, "WAIT": 2880, "STALL": 292}
    # Begins 173032/173040/173036/173024 and ends 178088/178264/178160/177920 of the 4 waves.
    assert (report.begin, report.end, report.span) == (173024, 178264, 5240)
    assert report.wave_cycles == 5056 + 5224 + 5124 + 4896

    top = report.hotspots(3)
    # Line 62 "s_waitcnt lgkmcnt(0)" at vaddr 6736: its records in the 4 wave files are
    # [174288,9,1016,1016,62], [174336,9,1012,1012,62], [174320,9,1012,1012,62] and
    # [174232,9,1048,1048,62]: 1016 + 1012 + 1012 + 1048 = 4088 cycles, all stalled; no
    # other line comes close (next: line 6, 3036, code.json's Latency column).
    assert (top[0].line, top[0].vaddr, top[0].isa) == (62, 6736, "s_waitcnt lgkmcnt(0)")
    assert (top[0].hits, top[0].cycles, top[0].stall) == (4, 4088, 4088)
    assert top[0].cause == "lgkmcnt wait"
    assert top[1].line == 6 and top[1].cycles == 3036
    # Its waitcnt entry in every wave file is [62, [[53,0], ..., [61,0]]]: the nine
    # s_load_dword(x2) of lines 53..61.
    (link,) = report.waits_of(62)
    assert link.counter == "lgkmcnt" and [p.line for p in link.producers] == list(range(53, 62))
    assert {p.kind for p in link.producers} == {"SMEM"}
    # Idle of line 1 (first instruction): first record time - wave begin, per wave:
    # (173060-173032) + (173072-173040) + (173068-173036) + (173056-173024) = 124.
    assert next(s for s in report.listing if s.line == 1).idle == 124


def _mini_trace() -> Trace:
    """A hand-made wave exercising every stall-cause rule once."""
    isa = [
        "; mini",
        "s_load_dword s0, s[0:1], 0x0",
        "buffer_load_dword v1, v0, s[4:7], 0 offen",
        "ds_read_b32 v2, v0",
        "s_waitcnt lgkmcnt(0)",
        "s_waitcnt vmcnt(0)",
        "s_barrier",
        "v_mfma_f32_16x16x16_f16 v[4:7], v[0:1], v[2:3], 0",
        "v_add_f32_e32 v8, v4, v1",
        "buffer_store_dword v8, v0, s[4:7], 0 offen",
        "ds_write_b32 v0, v8",
        "s_load_dword s1, s[0:1], 0x4",
        "v_mul_f32_e32 v9, v8, v8",
        "s_waitcnt vmcnt(0) lgkmcnt(0)",
        "s_waitcnt expcnt(0)",
        "buffer_store_dword v5, v0, s[4:7], 0 offen",
        "s_endpgm",
    ]
    rows = [CodeRow(i, text, codeobj=1, vaddr=0x100 + 4 * max(i - 1, 0))
            for i, text in enumerate(isa)]
    c = InstCategory
    recs = [
        InstRecord(100, c.SMEM, 0, 4, 1),
        InstRecord(104, c.VMEM, 0, 4, 2),
        InstRecord(108, c.LDS, 0, 4, 3),
        InstRecord(112, c.IMMED, 30, 30, 4),  # lgkmcnt wait (drains lines 1, 3)
        InstRecord(142, c.IMMED, 50, 50, 5),  # vmcnt wait (drains line 2)
        InstRecord(192, c.SALU, 7, 11, 6),  # barrier
        InstRecord(1000, c.VALU, 0, 16, 7),  # MFMA issues at 1000
        InstRecord(1016, c.VALU, 20, 24, 8),  # reads v4 within the window: MFMA dependency
        InstRecord(2000, c.VMEM, 8, 12, 9),  # far from the MFMA: VMEM issue
        InstRecord(2012, c.LDS, 3, 7, 10),  # LDS
        InstRecord(2020, c.SMEM, 2, 6, 11),  # SMEM
        InstRecord(2026, c.VALU, 5, 9, 12),  # other (VALU, no MFMA nearby)
        InstRecord(2035, c.IMMED, 40, 40, 13),  # drains stores 9 and LDS 10+SMEM 11: vmcnt
        InstRecord(2075, c.IMMED, 6, 6, 14),  # expcnt only: other
        InstRecord(3000, c.VALU, 0, 16, 7),  # MFMA again, writes v[4:7] at 3000
        InstRecord(3016, c.VMEM, 9, 13, 15),  # store reads v5 just written: MFMA dependency
        InstRecord(3029, c.MESSAGE, 0, 4, 16),
    ]
    wave = Wave(se=0, simd=2, slot=1, id=0, cu=3, begin=90, end=3040, instructions=recs,
                timeline=[StateSpan(1, 10), StateSpan(2, 2940)])
    # Marked modeled: its waitcnt links are worked out, as for asterism's own traces.
    return Trace(code=CodeListing(rows), waves=[wave], modeled=True)


def test_stall_cause_rules() -> None:
    assert MFMA_WINDOW > 20  # the MFMA-dependency records above rely on it
    report = analyze(_mini_trace())
    assert report.stalls == {
        "vmcnt wait": 50 + 40, "lgkmcnt wait": 30, "barrier": 7, "MFMA dependency": 20 + 9,
        "VMEM issue": 8, "LDS": 3, "SMEM": 2, "other": 5 + 6,
    }
    links = {(w.line, w.counter): [p.line for p in w.producers] for w in report.wait_links}
    assert links == {(4, "lgkmcnt"): [1, 3], (5, "vmcnt"): [2],
                     (13, "lgkmcnt"): [10, 11], (13, "vmcnt"): [9]}


def test_unknown_pc_and_bad_line() -> None:
    mini = _mini_trace()
    wave = mini.waves[0]
    # A record on the label row is the decoder's "unknown PC": skipped, but counted.
    wave.instructions.insert(0, InstRecord(95, InstCategory.NONE, 3, 4, 0))
    report = analyze(mini)
    assert report.unknown_pc_records == 1 and report.instructions == 17
    assert report.stall_cycles == 30 + 50 + 7 + 20 + 8 + 3 + 2 + 5 + 40 + 6 + 9
    wave.instructions.append(InstRecord(4000, InstCategory.SALU, 0, 4, 77))
    with pytest.raises(TraceError, match="refers to line 77"):
        analyze(mini)


def test_read_records_are_plain_records(trace: Trace, capture_dir: Path) -> None:
    # The reader fills the records' slots itself: each must be what InstRecord(...) makes
    # from the file's five numbers (equal, same hash, frozen).
    raw = json.loads((capture_dir / trace.waves[0].filename).read_text())
    rows = raw["wave"]["instructions"]
    made = [InstRecord(*row) for row in rows]
    assert trace.waves[0].instructions == made and len(made) > 100
    assert [hash(r) for r in trace.waves[0].instructions] == [hash(r) for r in made]
    with pytest.raises(AttributeError):
        trace.waves[0].instructions[0].time = 1  # type: ignore[misc]


@pytest.mark.parametrize("n", [2, 1100])
def test_totals_stay_exact_past_float64_and_int64(n: int) -> None:
    # n records of 2^53 - 1 cycles on line 12 (VALU, "other" stall): their sum is past
    # float64's exact integers (n = 2) and past int64 (n = 1100); expected by hand.
    mini = _mini_trace()
    big = 2**53 - 1
    mini.waves[0].instructions += [InstRecord(4000 + k, InstCategory.VALU, big, big, 12)
                                   for k in range(n)]
    report = analyze(mini)
    row = next(r for r in report.listing if r.line == 12)
    assert (row.hits, row.cycles, row.stall) == (1 + n, 9 + n * big, 5 + n * big)
    assert report.stalls["other"] == 5 + 6 + n * big
    assert report.stall_cycles == 30 + 50 + 7 + 20 + 8 + 3 + 2 + 5 + 40 + 6 + 9 + n * big


def test_reports_render(trace: Trace) -> None:
    report = analyze(trace)
    md = render_markdown(report, top=3, context=2)
    assert md.startswith(f"# Trace report: {KERNEL}")
    assert "Hardware capture" in md and "MODELED" not in md
    assert "## Top 3 hotspots" in md
    assert ">>    4088    4088     4    62  0x1a50   s_waitcnt lgkmcnt(0)" in md
    # Two lines of context on each side of the top hotspot.
    assert "   16       0     4    60  0x1a40   s_load_dword s7, s[0:1], 0x80" in md
    assert "| lgkmcnt wait | 7920 |" in md
    data = json.loads(render_json(report, top=3, context=2))
    assert data["provenance"] == "hardware" and data["modeled"] is False
    # Ranked by stall (the default): see test_hotspots_ranked_by_stall for the order.
    assert [h["line"] for h in data["hotspots"]] == [62, 6, 494]
    assert [c["line"] for c in data["hotspots"][0]["context"]] == [60, 61, 62, 63, 64]
    assert data["totals"]["instructions"] == 1576
    assert len(data["listing"]) == 727
    assert data["states"] == {"IDLE": 124, "EXEC": 7380, "WAIT": 11644, "STALL": 1156}


def test_source_mapping(trace: Trace, tmp_path: Path) -> None:
    report = analyze(trace)
    assert report.mapped_rows == 0 and "No source locations" in render_markdown(report)
    mapping = tmp_path / "pcmap.json"
    mapping.write_text(json.dumps({"0x1a50": "kernel.py:42", "6432": "kernel.py:10"}))
    pcmap = load_source_map(mapping)
    assert pcmap == {6736: "kernel.py:42", 6432: "kernel.py:10"}
    report = analyze(trace, pcmap)
    assert report.hotspots(1)[0].source == "kernel.py:42"
    assert [(s.location, s.cycles) for s in report.sources] == [
        ("kernel.py:42", 4088), ("kernel.py:10", 3036)]
    md = render_markdown(report, top=2)
    assert "Source: `kernel.py:42`" in md and "2 of 394 executed instructions" in md
    bad = tmp_path / "bad.json"
    bad.write_text('{"pc": "x"}')
    with pytest.raises(TraceError, match="not an address"):
        load_source_map(bad)


# ------------------------------------------------------------------------------- waitcnt links


@pytest.mark.parametrize("name", CAPTURES)
def test_recomputed_links_agree_with_capture(name: str) -> None:
    """The recomputation (used for modeled traces) against the decoder's own links, read
    straight from the wave files' JSON: every link agrees, in order."""
    folder = SHARED_ATT / name
    if not folder.is_dir():
        pytest.skip(f"shared ATT capture not found at {folder}")
    raw = _raw_waves(folder)
    trace = read_att(folder)
    agree = total = 0
    for wave in trace.waves:
        theirs = [(line, tuple(p for p, _ in deps)) for line, deps in
                  raw[wave.filename]["waitcnt"] or []]
        ours = [(link.line, link.producers) for link in decoder_links(wave, trace.code)]
        total += len(theirs)
        agree += sum(a == b for a, b in zip(ours, theirs))
        assert len(ours) == len(theirs), wave.filename
    # Link counts: the lengths of the "waitcnt" lists of the wave files, summed.
    expected = {"pa_mqa_logits_fp4_small": 84, "flash_attn_func_small": 2264}[name]
    assert (agree, total) == (expected, expected)


def test_global_loads_count_in_order(flash_dir: Path) -> None:
    """global_* are filed as FLAT by the hardware but count in vmcnt alone, in order."""
    assert memory_kind("global_load_dwordx4", InstCategory.FLAT) == "VMEM"
    assert memory_kind("scratch_load_dword", InstCategory.FLAT) == "VMEM"
    assert memory_kind("flat_load_dword", InstCategory.FLAT) == "FLAT"
    report = analyze(read_att(flash_dir))
    # se2_sm0_sl0_wv0.json's waitcnt list holds [288, [[194,0],[201,0],[208,0],[215,0],
    # [243,0]]]: `s_waitcnt vmcnt(7)` waited for the four buffer_load_dwordx4 of lines 194,
    # 201, 208, 215 and the global_load_dwordx4 of line 243 (the next 7 global loads,
    # lines 244-250, stay outstanding).
    (link,) = report.waits_of(288)
    assert link.counter == "vmcnt"
    assert [(p.line, p.isa.split()[0]) for p in link.producers] == [
        (194, "buffer_load_dwordx4"), (201, "buffer_load_dwordx4"),
        (208, "buffer_load_dwordx4"), (215, "buffer_load_dwordx4"),
        (243, "global_load_dwordx4")]
    raw = _raw_waves(flash_dir)
    # The 8 waves each ran it once; its stall is the sum of their records for line 288.
    assert link.occurrences == 8
    assert link.stall == sum(r[2] for w in raw.values() for r in w["instructions"]
                             if r[4] == 288)


def test_capture_links_are_read_not_recomputed(scratch_copy: Path) -> None:
    """A hardware capture's report shows the decoder's links, whatever a recomputation says;
    a modeled trace's are recomputed."""
    def edit(d: dict[str, Any]) -> None:
        # The first link, [6, [[1,0],[2,0]]], now names only line 2.
        d["wave"]["waitcnt"][0] = [6, [[2, 0]]]
    _edit_json(scratch_copy / "se1_sm0_sl0_wv0.json", edit)
    trace = read_att(scratch_copy)
    events = capture_events(trace.waves[0], trace.code)
    first = events[0]
    assert (first.line, first.counter) == (6, "lgkmcnt")
    assert [trace.waves[0].instructions[p].line for p in first.producers] == [2]
    report = analyze(trace)
    (link,) = report.waits_of(6)
    # Line 1 is gone in wave 0 only; the other three waves still name lines 1 and 2.
    assert [p.line for p in link.producers] == [1, 2] and link.occurrences == 4
    one = replace(trace, waves=trace.waves[:1])
    (link,) = analyze(one).waits_of(6)
    assert [p.line for p in link.producers] == [2]
    (link,) = analyze(replace(one, modeled=True)).waits_of(6)
    assert [p.line for p in link.producers] == [1, 2]


def test_capture_events_equal_recomputed_events(trace: Trace) -> None:
    for wave in trace.waves:
        assert capture_events(wave, trace.code) == wait_events(wave, trace.code)


def test_capture_link_out_of_order_is_an_error(scratch_copy: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["wave"]["waitcnt"].reverse()
    _edit_json(scratch_copy / "se1_sm0_sl0_wv0.json", edit)
    with pytest.raises(TraceError, match="se1_sm0_sl0_wv0.json: waitcnt link #"):
        analyze(read_att(scratch_copy))


def test_mixed_lgkm_kinds_are_unordered() -> None:
    """LDS and messages both count in lgkmcnt; mixed, their order is unknown (LLVM's rule),
    so only lgkmcnt(0) attributes them. LDS alone is in order."""
    isa = ["; k", "ds_read_b32 v1, v0", "s_sendmsg sendmsg(MSG_INTERRUPT)", "ds_read_b32 v2, v0",
           "s_waitcnt lgkmcnt(1)", "s_waitcnt lgkmcnt(0)", "ds_read_b32 v3, v0",
           "ds_read_b32 v4, v0", "s_waitcnt lgkmcnt(1)", "s_endpgm"]
    rows = [CodeRow(i, t, vaddr=4 * i) for i, t in enumerate(isa)]
    c = InstCategory
    cats = [c.LDS, c.MESSAGE, c.LDS, c.IMMED, c.IMMED, c.LDS, c.LDS, c.IMMED, c.MESSAGE]
    recs = [InstRecord(10 * i, cat, 0, 4, i + 1) for i, cat in enumerate(cats)]
    wave = Wave(se=0, simd=0, slot=0, id=0, cu=0, begin=0, end=100, instructions=recs)
    got = [(e.line, e.counter, [recs[p].line for p in e.producers])
           for e in wait_events(wave, CodeListing(rows))]
    assert got == [(5, "lgkmcnt", [1, 2, 3]), (8, "lgkmcnt", [6])]


# ------------------------------------------------------------------------------- ranking, source


def _line_sums(folder: Path) -> dict[int, tuple[int, int]]:
    """(stall, cycles) per code line, summed over the wave files' records (independent)."""
    rows = _raw_rows(folder)
    sums: dict[int, list[int]] = {}
    for wave in _raw_waves(folder).values():
        for _time, _cat, stall, duration, line in (r[:5] for r in wave["instructions"]):
            if rows[line][0].startswith(";"):
                continue
            acc = sums.setdefault(line, [0, 0])
            acc[0] += stall
            acc[1] += duration
    return {k: (v[0], v[1]) for k, v in sums.items()}


@pytest.mark.parametrize("name", CAPTURES)
def test_hotspots_ranked_by_stall(name: str) -> None:
    folder = SHARED_ATT / name
    if not folder.is_dir():
        pytest.skip(f"shared ATT capture not found at {folder}")
    sums = _line_sums(folder)
    by_stall = sorted(sums, key=lambda k: (-sums[k][0], -sums[k][1], k))[:10]
    by_cycles = sorted(sums, key=lambda k: (-sums[k][1], -sums[k][0], k))[:10]
    total_stall = sum(v[0] for v in sums.values())
    total_cycles = sum(v[1] for v in sums.values())
    report = analyze(read_att(folder))
    assert [h.line for h in report.hotspots(10)] == by_stall
    assert [h.line for h in report.hotspots(10, "cycles")] == by_cycles
    rows = _raw_rows(folder)
    endpgm = next(k for k in sums if rows[k][0] == "s_endpgm")
    # By cycles s_endpgm (no stall) is in the top 10; by stall it is not.
    assert endpgm in by_cycles and endpgm not in by_stall
    data = json.loads(render_json(report, top=10))
    assert data["hotspot_rank"] == "stall"
    for h in data["hotspots"]:
        stall, cycles = sums[h["line"]]
        assert h["stall_share_pct"] == pytest.approx(100 * stall / total_stall)
        assert h["cycle_share_pct"] == pytest.approx(100 * cycles / total_cycles)
    md = render_markdown(report, top=10)
    first = by_stall[0]
    share_s = f"{100 * sums[first][0] / total_stall:.1f}%"
    share_c = f"{100 * sums[first][1] / total_cycles:.1f}%"
    assert "## Top 10 hotspots (by stall cycles)" in md
    assert (f"| 1 | {first} | 0x{rows[first][5]:x} | {sums[first][0]} | {share_s} | "
            f"{sums[first][1]} | {share_c} |") in md
    assert "## Top 10 hotspots (by cycles)" in render_markdown(report, top=10, rank="cycles")
    with pytest.raises(TraceError, match="--rank"):
        report.hotspots(3, "hits")


def test_pa_mqa_ranking_by_hand(trace: Trace) -> None:
    report = analyze(trace)
    # Line 62 s_waitcnt lgkmcnt(0): 4088 stall (test_hand_computed_figures); line 6: 3036
    # (code.json Stall column); line 494 next by the Stall column, while line 726
    # (s_endpgm, Stall 0) is third by the Latency column.
    assert [h.line for h in report.hotspots(3)] == [62, 6, 494]
    assert [h.line for h in report.hotspots(3, "cycles")] == [62, 6, 726]
    assert trace.code.row(726).isa == "s_endpgm" and trace.code.row(726).stall == 0


def test_source_lines_from_capture(flash_dir: Path) -> None:
    """flash_attn_func_small ships its sources: the hotspot table shows file:line and text."""
    rows = _raw_rows(flash_dir)
    tree = json.loads((flash_dir / "snapshots.json").read_text())
    copy = tree["/"]["sgl-workspace"]["jin"]["flash_attn_func_probe"]["build-fly"][
        "python_packages"]["flydsl"]["expr"]["numeric.py"]
    assert copy == "source_1_numeric.py"
    # Row 3 (s_waitcnt lgkmcnt(0)) points at numeric.py:872; the top stall hotspot.
    assert rows[3][3].endswith("/flydsl/expr/numeric.py:872")
    text = (flash_dir / copy).read_text().splitlines()[871].strip()
    assert text.startswith("x = index_cast(")
    report = analyze(read_att(flash_dir))
    top = report.hotspots(1)[0]
    assert (top.line, top.source_text) == (3, text)
    md = render_markdown(report, top=3)
    head = md[md.index("## Top 3"):md.index("### 1.")]
    assert "| source |" in head and f"`numeric.py:872` `{text}` |" in head
    assert f"Source: `{rows[3][3]}`: `{text}`" in md
    data = json.loads(render_json(report, top=1))
    assert data["hotspots"][0]["source_text"] == text


def test_trace_report_rank_option(capture_dir: Path, capsys: pytest.CaptureFixture[str]
                                  ) -> None:
    from asterism.cli import main

    assert main(["trace", "report", str(capture_dir), "--top", "3", "--json"]) == 0
    assert [h["line"] for h in json.loads(capsys.readouterr().out)["hotspots"]] == [62, 6, 494]
    assert main(["trace", "report", str(capture_dir), "--top", "3", "--json",
                 "--rank", "cycles"]) == 0
    assert [h["line"] for h in json.loads(capsys.readouterr().out)["hotspots"]] == [62, 6, 726]


# ------------------------------------------------------------------------------- writer


def test_writer_round_trip_is_byte_identical(trace: Trace, capture_dir: Path,
                                             tmp_path: Path) -> None:
    out = write_att(trace, tmp_path / "out")
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in capture_dir.iterdir())
    for src in capture_dir.iterdir():
        assert (out / src.name).read_bytes() == src.read_bytes(), src.name
    assert read_att(out) == trace


def test_writer_derives_what_a_model_leaves_out(trace: Trace, tmp_path: Path) -> None:
    # What a timing model would hand over: code rows without totals, waves without waitcnt
    # links, no wstates, its own occupancy, marked as modeled.
    bare_code = CodeListing([replace(r, hit=0, latency=0, stall=0, idle=0)
                             for r in trace.code.rows])
    waves = [replace(w, waitcnt=[]) for w in trace.waves]
    model = Trace(code=bare_code, waves=waves,
                  occupancy=occupancy_from_waves(waves, KERNEL), modeled=True,
                  producer="asterism test model")
    out = write_att(model, tmp_path / "model", derive_waitcnt=True)
    back = read_att(out)
    assert back.modeled is True and back.producer == "asterism test model"
    assert back.code == trace.code
    assert back.wstates == trace.wstates
    assert [w.waitcnt for w in back.waves] == [w.waitcnt for w in trace.waves]
    names = json.loads((out / "filenames.json").read_text())
    assert names["asterism"] == {"modeled": True, "producer": "asterism test model"}
    assert names["wave_filenames"]["1"]["0"]["0"]["0"] == ["se1_sm0_sl0_wv0.json", 173032,
                                                          178088]
    report = analyze(back)
    assert report.modeled
    md = render_markdown(report)
    assert "MODELED TRACE" in md and "asterism test model" in md and "Hardware" not in md
    assert json.loads(render_json(report))["provenance"] == "model"


def test_writer_refuses_to_clobber(trace: Trace, tmp_path: Path) -> None:
    out = write_att(trace, tmp_path / "t")
    with pytest.raises(TraceError, match="not empty"):
        write_att(trace, out)
    write_att(trace, out, overwrite=True)  # an ATT folder may be replaced on request
    assert read_att(out) == trace
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine")
    with pytest.raises(TraceError, match="not an ATT folder"):
        write_att(trace, other, overwrite=True)
    assert (other / "todo.txt").read_text() == "mine"
    dup = replace(trace, waves=[trace.waves[0], trace.waves[0]])
    with pytest.raises(TraceError, match="share"):
        write_att(dup, tmp_path / "dup")
    assert not (tmp_path / "dup").exists()


# ------------------------------------------------------------------------------- bad input


def test_missing_folder_and_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace folder") as exc:
        read_att(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(exc.value)
    (tmp_path / "file.json").write_text("{}")
    with pytest.raises(TraceError, match="not a folder"):
        read_att(tmp_path / "file.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TraceError, match="code.json is missing"):
        read_att(empty)


def test_corrupt_json_names_file_and_position(scratch_copy: Path) -> None:
    code = scratch_copy / "code.json"
    code.write_bytes(code.read_bytes()[:500])
    with pytest.raises(TraceError, match="invalid JSON") as exc:
        read_att(scratch_copy)
    assert exc.value.location is not None and exc.value.location.file == str(code)
    assert isinstance(exc.value, AsterismError)


def _edit_json(path: Path, edit: Callable[[Any], Any]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("file", "edit", "message"),
    [
        ("se1_sm0_sl0_wv0.json",
         lambda d: d["wave"]["instructions"][3].__setitem__(2, "x"),
         (r"se1_sm0_sl0_wv0.json at \['wave'\]\['instructions'\]\[3\]\[2\]: expected an "
          "integer, got a string")),
        ("se1_sm0_sl0_wv0.json",
         lambda d: d["wave"]["instructions"][0].__setitem__(4, 9999),
         "instruction #0 refers to line 9999"),
        ("se1_sm0_sl0_wv0.json", lambda d: d["wave"].__setitem__("simd", 3),
         "the file name says simd 0 but the wave record says 3"),
        ("se1_sm0_sl0_wv0.json", lambda d: d["wave"].pop("begin"), "missing key 'begin'"),
        ("code.json", lambda d: d["code"][5].pop(), r"expected 10 columns"),
        ("code.json", lambda d: d.__setitem__("code", {}), "expected a list, got an object"),
        ("occupancy.json", lambda d: d["1"][0].append(7), "expected .time, cu, simd"),
        ("wstates2.json", lambda d: d["time"].pop(), "'time' has"),
        ("realtime.json", lambda d: d.pop("metadata"), "missing key 'metadata'"),
        ("filenames.json", lambda d: d.__setitem__("gfxip", True),
         "expected an integer, got a boolean"),
    ],
)
def test_malformed_files(scratch_copy: Path, file: str, edit: Callable[[Any], Any],
                         message: str) -> None:
    _edit_json(scratch_copy / file, edit)
    with pytest.raises(TraceError, match=message) as exc:
        read_att(scratch_copy)
    assert str(scratch_copy) in str(exc.value)


def test_listed_wave_file_missing(scratch_copy: Path) -> None:
    (scratch_copy / "se1_sm2_sl0_wv0.json").unlink()
    with pytest.raises(TraceError, match="se1_sm2_sl0_wv0.json is listed in filenames.json "
                                         "but missing"):
        read_att(scratch_copy)


def test_unknown_files_are_kept(scratch_copy: Path, tmp_path: Path) -> None:
    (scratch_copy / "snapshots.json").write_text('{"a":"source_0_k.py"}')
    trace = read_att(scratch_copy)
    assert trace.extra_files == {"snapshots.json": b'{"a":"source_0_k.py"}'}
    out = write_att(trace, tmp_path / "o")
    assert (out / "snapshots.json").read_bytes() == b'{"a":"source_0_k.py"}'


# ------------------------------------------------------------------------------- entry points


def test_trace_report_entry_point(capture_dir: Path) -> None:
    md = trace_report(capture_dir, top=2)
    assert "## Top 2 hotspots" in md and "s_waitcnt lgkmcnt(0)" in md
    data = json.loads(trace_report(capture_dir, top=4, as_json=True))
    assert len(data["hotspots"]) == 4
    with pytest.raises(TraceError, match="--top"):
        trace_report(capture_dir, top=-1)


def test_plot_writes_png(capture_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "trace.png"
    trace_plot(capture_dir, out)
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    assert [p.name for p in tmp_path.iterdir()] == ["trace.png"]  # no temp files left


def test_plot_errors(capture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                     ) -> None:
    from asterism.profile.plot import PlotError

    with pytest.raises(PlotError, match="no such folder"):
        trace_plot(capture_dir, tmp_path / "missing" / "x.png")
    # A None entry in sys.modules makes `import matplotlib...` raise ImportError.
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotError, match="pip install"):
        trace_plot(capture_dir, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
