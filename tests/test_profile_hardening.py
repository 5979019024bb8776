"""Untrusted profiling material: captures in rocprofv3's ATT layout, counter files and source
maps are read within bounds (nesting depth, sizes, value ranges), never through a symbolic
link out of a capture folder, and the bundle copies nothing the user did not name; what the
bundle and the HTML view embed from them is escaped for where it lands.

Each test below failed before the fix it guards (one per class of bad input the issue
reported); the fuzzing of the same readers is tests/test_fuzz_captures.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from asterism.cli import main
from asterism.errors import AsterismError
from asterism.profile import trace_report
from asterism.profile.att import TraceError, read_att, source_files
from asterism.profile.counters import CounterError, read_counters
from asterism.profile.report import load_source_map
from asterism.textio import JSON_MAX_DEPTH, load_json_bounded, parse_json_bounded

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "tests" / "data" / "shared"
PA = SHARED / "att" / "pa_mqa_logits_fp4_small"
FLASH = SHARED / "att" / "flash_attn_func_small"
FLASH_COUNTERS = SHARED / "counters" / "flash_attn_func_small"
WAVE = "se1_sm0_sl0_wv0.json"


@pytest.fixture
def pa_copy(tmp_path: Path) -> Path:
    """A private copy of the small capture, to damage."""
    return Path(shutil.copytree(PA, tmp_path / "cap"))


def _edit(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


# ---------------------------------------------------------------------------- 4. JSON depth


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_depth_helper_locates_the_first_bracket_too_deep() -> None:
    assert parse_json_bounded(_deep(JSON_MAX_DEPTH), "x.json") is not None
    text = '{"a": "[[[[[[",\n "b": ' + _deep(JSON_MAX_DEPTH + 1) + "}"
    with pytest.raises(AsterismError) as exc:
        parse_json_bounded(text, "x.json")
    # the brackets inside the string do not count; '{' is level 1, so level 65 is the 64th
    # '[' of line 2, which starts at column 7
    assert str(exc.value.location) == f"x.json:2:{6 + JSON_MAX_DEPTH}"
    assert f"nested deeper than {JSON_MAX_DEPTH} levels" in exc.value.message
    with pytest.raises(AsterismError) as exc:  # more digits than Python converts
        parse_json_bounded('{"a":\n  ' + "9" * 5000 + "}", "y.json")
    assert str(exc.value.location) == "y.json:2:3" and "5000 digits" in exc.value.message


def test_json_depth_counts_objects_and_lists_between_non_ascii_text() -> None:
    # {"é": {"é": ... ["ü"] ... }}: objects and a list, by hand 64 then 65 levels deep
    def nested(objects: int) -> str:
        return '{"é": ' * objects + '["ü", "]]"]' + "}" * objects

    assert parse_json_bounded(nested(JSON_MAX_DEPTH - 1), "x.json") is not None
    with pytest.raises(AsterismError) as exc:
        parse_json_bounded(nested(JSON_MAX_DEPTH), "x.json")
    # the 65th level is the list, after 64 '{"é": ' of 6 characters each
    assert str(exc.value.location) == f"x.json:1:{6 * JSON_MAX_DEPTH + 1}"


@pytest.mark.parametrize("file", ["code.json", WAVE, "filenames.json", "occupancy.json",
                                  "realtime.json", "wstates2.json"])
def test_deep_json_in_a_capture_is_a_located_error(pa_copy: Path, file: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (pa_copy / file).write_text('{"x": ' + _deep(100_000) + "}")
    with pytest.raises(TraceError) as exc:
        read_att(pa_copy)
    # '{' is level 1; the brackets start at column 7
    assert str(exc.value.location) == f"{pa_copy / file}:1:{6 + JSON_MAX_DEPTH}"
    rc, err = _cli(["trace", "report", str(pa_copy)], capsys)
    assert rc == 1 and f"{file}:1:{6 + JSON_MAX_DEPTH}: error: JSON nested deeper" in err


def test_deep_snapshot_index_is_a_located_error(pa_copy: Path) -> None:
    (pa_copy / "snapshots.json").write_text(_deep(100_000))
    with pytest.raises(TraceError) as exc:
        source_files(read_att(pa_copy))
    assert str(exc.value.location) == f"{pa_copy / 'snapshots.json'}:1:{JSON_MAX_DEPTH + 1}"


def test_deep_counters_and_source_map_are_located_errors(tmp_path: Path) -> None:
    results = tmp_path / "r_results.json"
    results.write_text('{"rocprofiler-sdk-tool": ' + _deep(100_000) + "}")
    with pytest.raises(CounterError) as exc:
        read_counters([results])
    assert exc.value.location.file == str(results) and "nested deeper" in exc.value.message
    pcmap = tmp_path / "map.json"
    pcmap.write_text(_deep(100_000))
    with pytest.raises(TraceError) as exc:
        load_source_map(pcmap)
    assert str(exc.value.location) == f"{pcmap}:1:{JSON_MAX_DEPTH + 1}"


def test_json_file_size_is_bounded_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 100 + "0]")
    assert len(load_json_bounded(path)) == 101
    with pytest.raises(AsterismError, match=r"big.json: file is 203 bytes, more than the 100"):
        load_json_bounded(path, max_bytes=100)


# ---------------------------------------------------------------------------- 2. symlinks


SECRET = "PRIVATE KEY 0123456789"


@pytest.fixture
def linked_capture(tmp_path: Path, pa_copy: Path) -> Path:
    """The capture with links out of its folder: a folder link and a file link (each to a
    'secret' outside), and a FIFO (reading it would block)."""
    import os

    secrets = tmp_path / "home" / ".ssh"
    secrets.mkdir(parents=True)
    (secrets / "id_rsa").write_text(SECRET)
    (pa_copy / "notes").symlink_to(secrets)
    (pa_copy / "perf_counters.txt").symlink_to(secrets / "id_rsa")
    os.mkfifo(pa_copy / "pipe")
    return pa_copy


def _bundle_text(bundle: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in bundle.rglob("*")
                     if p.is_file())


def test_reader_never_follows_links_out_of_the_capture(linked_capture: Path) -> None:
    trace = read_att(linked_capture)
    assert "perf_counters.txt" not in trace.extra_files and "pipe" not in trace.extra_files
    skipped = dict(trace.skipped)
    assert set(skipped) == {"notes", "perf_counters.txt", "pipe"}
    assert "symbolic link" in skipped["notes"] and "symbolic link" in skipped["perf_counters.txt"]
    assert "not a regular file" in skipped["pipe"]
    md = trace_report(linked_capture)
    assert "`notes`: a symbolic link" in md and SECRET not in md


def test_bundle_copies_no_link_and_says_what_it_skipped(linked_capture: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    out = tmp_path / "bundle"
    rc, _ = _cli(["trace", "bundle", str(linked_capture), "-o", str(out)], capsys)
    assert rc == 0
    copy = out / "att" / linked_capture.name
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in PA.iterdir())
    assert not any(p.is_symlink() for p in out.rglob("*"))
    assert SECRET not in _bundle_text(out)
    md = (out / "REPORT.md").read_text()
    assert "`notes`: a symbolic link" in md and "`perf_counters.txt`: a symbolic link" in md
    data = json.loads((out / "report.json").read_text())
    assert {s["name"] for s in data["skipped"]} >= {"notes", "perf_counters.txt", "pipe"}


@pytest.mark.parametrize("file", ["code.json", "filenames.json", WAVE])
def test_a_capture_file_that_is_a_link_is_refused(pa_copy: Path, tmp_path: Path,
                                                  file: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    (pa_copy / file).rename(elsewhere)
    (pa_copy / file).symlink_to(elsewhere)
    with pytest.raises(TraceError, match=f"{file}: file is a symbolic link, which is not "
                                         "followed"):
        read_att(pa_copy)
    rc, err = _cli(["trace", "report", str(pa_copy)], capsys)
    assert rc == 1 and "symbolic link" in err


# ---------------------------------------------------------------------------- 1. sources


def _point_rows_at(capture: Path, locations: list[str]) -> None:
    """Give the first instruction rows of the capture's code.json these source locations."""
    def edit(d):
        rows = [r for r in d["code"] if not r[0].startswith(";")]
        for row, loc in zip(rows, locations, strict=False):
            row[3] = loc
    _edit(capture / "code.json", edit)


def test_bundle_copies_only_sources_inside_the_capture_or_named(pa_copy: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[
                                                                    str]) -> None:
    outside = tmp_path / "home" / "secret.py"
    outside.parent.mkdir()
    outside.write_text(SECRET + "\n")
    inside = pa_copy / "src" / "kernel.py"
    inside.parent.mkdir()
    inside.write_text("x = 1\n")
    (pa_copy / "link.py").symlink_to(outside)  # inside by name, outside once resolved
    named_dir = tmp_path / "mine"
    named_dir.mkdir()
    (named_dir / "lib.py").write_text("y = 2\n")
    named_file = tmp_path / "named.py"
    named_file.write_text("z = 3\n")
    _point_rows_at(pa_copy, ["/etc/passwd:1", "~/.ssh/id_rsa:1", f"{outside}:1",
                             f"{inside}:1", f"{pa_copy / 'link.py'}:1",
                             f"{named_dir / 'lib.py'}:1", f"{named_file}:1",
                             f"{tmp_path / 'gone.py'}:1"])
    out = tmp_path / "bundle"
    rc, err = _cli(["trace", "bundle", str(pa_copy), "-o", str(out), "--source-dir",
                    str(named_dir), "--source", str(named_file)], capsys)
    assert rc == 0, err
    copied = {p.name: p.read_text() for p in (out / "source").iterdir()}
    assert copied.pop("INDEX.json")
    assert copied == {"kernel.py": "x = 1\n", "lib.py": "y = 2\n", "named.py": "z = 3\n"}
    assert SECRET not in _bundle_text(out)
    assert "root:" not in "".join(copied.values())  # /etc/passwd
    md = (out / "REPORT.md").read_text()
    for path in ("/etc/passwd", "~/.ssh/id_rsa", str(outside), str(pa_copy / "link.py"),
                 str(tmp_path / "gone.py")):
        assert f"source: `{path}`: outside the capture folder" in md, path
    assert "note: left out: source /etc/passwd: outside the capture folder" in err


def test_source_dir_must_be_a_folder(pa_copy: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = _cli(["trace", "bundle", str(pa_copy), "-o", str(tmp_path / "b"),
                    "--source-dir", str(tmp_path / "nope")], capsys)
    assert rc == 1 and "no such folder (--source-dir)" in err
    assert not (tmp_path / "b").exists()


def test_snapshot_names_cannot_leave_the_bundle(pa_copy: Path, tmp_path: Path) -> None:
    from asterism.profile.bundle import BundleRequest, build_bundle

    (pa_copy / "source_0_x.py").write_text("a = 1\n")
    (pa_copy / "snapshots.json").write_text(json.dumps(
        {"/": {"..": "source_0_x.py", "a\u0000b": "source_0_x.py",
               "..\\..\\evil.py": "source_0_x.py"}}))
    out = build_bundle(BundleRequest(pa_copy, tmp_path / "b"))
    names = sorted(p.name for p in (out / "source").iterdir())
    assert all(not n.startswith(".") and "\\" not in n and "\0" not in n for n in names)
    assert len(names) == 4 and [p.name for p in tmp_path.iterdir()] == ["b", "cap"]


# ---------------------------------------------------------------------------- 5. value ranges


@pytest.mark.parametrize(("file", "edit", "field", "value"), [
    (WAVE, lambda d, v: d["wave"].__setitem__("begin", v), "['wave']['begin']", 2**63),
    (WAVE, lambda d, v: d["wave"].__setitem__("end", v), "['wave']['end']", -1),
    (WAVE, lambda d, v: d["wave"]["instructions"][2].__setitem__(0, v),
     "['wave']['instructions'][2][0]", 2**63),
    (WAVE, lambda d, v: d["wave"]["instructions"][2].__setitem__(1, v),
     "['wave']['instructions'][2][1]", 256),
    (WAVE, lambda d, v: d["wave"]["timeline"][0].__setitem__(1, v),
     "['wave']['timeline'][0][1]", 10**30),
    (WAVE, lambda d, v: d["wave"].__setitem__("cu", v), "['wave']['cu']", 2**31),
    ("code.json", lambda d, v: d["code"][3].__setitem__(5, v), "['code'][3][5]", 2**64),
    ("code.json", lambda d, v: d["code"][3].__setitem__(2, v), "['code'][3][2]", -3),
    ("occupancy.json", lambda d, v: d["1"][0].__setitem__(0, v), "['1'][0][0]", 2**63),
    ("realtime.json", lambda d, v: d["SE1"][0].__setitem__(1, v), "['SE1'][0][1]", -2**63),
    ("wstates2.json", lambda d, v: d["time"].__setitem__(0, v), "['time'][0]", 2**53),
    ("filenames.json", lambda d, v: d.__setitem__("global_begin_time", v),
     "['global_begin_time']", 2**70),
])
def test_out_of_range_values_are_located_errors(pa_copy: Path, tmp_path: Path, file: str,
                                                edit, field: str, value: int,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _edit(pa_copy / file, lambda d: edit(d, value))
    with pytest.raises(TraceError) as exc:
        read_att(pa_copy)
    assert f"{pa_copy / file} at {field}: {value} is out of range" in str(exc.value)
    for argv in (["trace", "plot", str(pa_copy), "-o", str(tmp_path / "p.png")],
                 ["trace", "bundle", str(pa_copy), "-o", str(tmp_path / "b")],
                 ["trace", "replay", str(pa_copy)]):
        rc, err = _cli(argv, capsys)
        assert rc == 1 and f"{file} at {field}: {value} is out of range" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap"]


def test_keys_with_foreign_or_endless_digits(pa_copy: Path) -> None:
    _edit(pa_copy / "occupancy.json", lambda d: d.__setitem__("\u00b2", []))  # '²'.isdigit()
    assert "\u00b2" in read_att(pa_copy).occupancy.extra
    _edit(pa_copy / "occupancy.json", lambda d: d.__setitem__("9" * 5000, []))
    with pytest.raises(TraceError, match="SE number 9999.* is out of range"):
        read_att(pa_copy)


def test_a_late_wave_is_drawn_and_embedded_exactly(pa_copy: Path, tmp_path: Path) -> None:
    """Times 2^33 cycles apart (past int32): the HTML view's arrays keep them exact."""
    import base64

    import numpy as np

    from asterism.profile import pictures
    from asterism.profile.report import analyze

    late = 2**33

    def shift(d):
        w = d["wave"]
        w["begin"] += late
        w["end"] += late
        for rec in w["instructions"]:
            rec[0] += late
    _edit(pa_copy / WAVE, shift)
    (pa_copy / "occupancy.json").unlink()
    trace = read_att(pa_copy)
    data = pictures.html_data(trace, analyze(trace))
    wave = next(w for w in trace.waves if w.filename == WAVE)
    lane = next(la for la in data["lanes"]
                if la["label"] == f"se{wave.se} cu{wave.cu} simd{wave.simd} slot{wave.slot}")
    start = np.frombuffer(base64.b64decode(lane["start"]), "<" + data["time_dtype"])
    assert start.tolist() == [r.time - data["origin"] for r in wave.instructions]
    assert max(start) > 2**33
    pictures.write_html(trace, analyze(trace), tmp_path / "v.html")
    pytest.importorskip("matplotlib")
    from asterism.profile import trace_plot

    trace_plot(pa_copy, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


# ---------------------------------------------------------------------------- 3. escaping


EVIL_NAME = "k<img src=x onerror=alert(1)>`*_|$\\frac{$"
EVIL_ISA = "  ; <!--<script>x</script> ``` \u2028`|$\\undefined$"


def _evil_capture(capture: Path) -> None:
    """Kernel label and every instruction's text carry HTML, Markdown and mathtext."""
    def edit(d):
        for row in d["code"]:
            if row[0].startswith(";"):
                row[0] = "; " + EVIL_NAME
                row[3] = EVIL_NAME
            else:
                row[0] += EVIL_ISA
                row[3] = f"/{EVIL_NAME}.py:3"
    _edit(capture / "code.json", edit)
    _edit(capture / "occupancy.json", lambda d: d["dispatches"].__setitem__("1", EVIL_NAME))


def _outside_code(md: str) -> str:
    """The Markdown text outside fenced code blocks and code spans (CommonMark's rules:
    a block ends at a fence at least as long as its opening one; a span ends at a backtick
    run as long as its opening one)."""
    out, fence = [], None
    for line in md.splitlines():
        run = len(line) - len(line.lstrip("`"))
        if fence is None and run >= 3:
            fence = run
        elif fence is not None and run >= fence and not line.strip("`"):
            fence = None
        elif fence is None:
            out.append(re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", "", line))
    return "\n".join(out)


def test_report_markdown_escapes_names_and_text(pa_copy: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _evil_capture(pa_copy)
    out = tmp_path / "b"
    rc, err = _cli(["trace", "bundle", str(pa_copy), "-o", str(out)], capsys)
    assert rc == 0, err
    for md in ((out / "REPORT.md").read_text(), trace_report(pa_copy, top=20)):
        text = _outside_code(md)
        assert "<" not in text.replace("<br>", ""), [ln for ln in text.splitlines() if "<" in ln]
        assert "\u2028" not in md
        assert "k&lt;img src=x onerror=alert(1)&gt;\\`\\*\\_\\|$\\\\frac{$" in text
    md = (out / "REPORT.md").read_text()
    # Every code span and block is closed where it should: each ISA text survives whole.
    assert md.count("<!--<script>x</script> ``` ") == md.count("$\\undefined$") > 0
    assert "```` " in md  # the fence is longer than the ``` run inside the text


def _script_blocks(page: str) -> list[str]:
    from html.parser import HTMLParser

    class Scripts(HTMLParser):
        def __init__(self):
            super().__init__()
            self.blocks: list[str] = []
            self.inside = False

        def handle_starttag(self, tag, attrs):
            self.inside = tag == "script"
            if self.inside:
                self.blocks.append("")

        def handle_endtag(self, tag):
            self.inside = False

        def handle_data(self, data):
            if self.inside:
                self.blocks[-1] += data

    parser = Scripts()
    parser.feed(page)
    return parser.blocks


def test_html_view_data_survives_any_text(pa_copy: Path, tmp_path: Path) -> None:
    from asterism.profile import pictures
    from asterism.profile.report import analyze

    _evil_capture(pa_copy)
    trace = read_att(pa_copy)
    report = analyze(trace)
    page = pictures.write_html(trace, report, tmp_path / "v.html").read_text()
    (script,) = _script_blocks(page)
    # What makes a browser leave (or never close) a script element: none of it inside.
    assert not re.search(r"<!--|<script|</script", script, re.IGNORECASE)
    data = json.loads(re.search(r"const D = (.*);\n", script).group(1))
    assert data == json.loads(json.dumps(pictures.html_data(trace, report)))
    assert EVIL_NAME in data["title"] and any(EVIL_ISA in c[0] for c in data["code"].values())


def test_pictures_draw_any_text(pa_copy: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    _evil_capture(pa_copy)
    rc, err = _cli(["trace", "plot", str(pa_copy), "-o", str(tmp_path / "p.png")], capsys)
    assert rc == 0, err


def test_html_view_in_a_browser_with_hostile_text_and_late_waves(pa_copy: Path,
                                                                 tmp_path: Path) -> None:
    """The page runs (its #selftest hovers the top hotspot) with hostile text in the data
    and times past int32 (the float64 arrays)."""
    import subprocess

    browser = next(filter(None, (shutil.which(n) for n in ("chromium", "chromium-browser",
                                                           "google-chrome"))), None)
    if browser is None:
        pytest.skip("no chromium: apt-get install chromium (Debian) to run the HTML view test")
    _evil_capture(pa_copy)

    def shift(d):
        for key in ("begin", "end"):
            d["wave"][key] += 2**33
        for rec in d["wave"]["instructions"]:
            rec[0] += 2**33
    _edit(pa_copy / WAVE, shift)
    out = tmp_path / "b"
    assert main(["trace", "bundle", str(pa_copy), "-o", str(out)]) == 0
    url = (out / "pictures" / "view.html").resolve().as_uri() + "#selftest"
    res = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--dump-dom", url], capture_output=True, text=True, timeout=180)
    line = next(x for x in res.stdout.split("\n") if "SELFTEST " in x)  # (not at U+2028)
    got = json.loads(line.split("SELFTEST ", 1)[1].split("</div>")[0]
                     .replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
    report = json.loads((out / "report.json").read_text())
    assert got["lanes"] == 4 and got["records"] == report["totals"]["instructions"]
    assert got["line"] == report["hotspots"][0]["line"]
    assert report["hotspots"][0]["isa"] in got["hover"] and "<!--<script>" in got["hover"]


# ---------------------------------------------------------------------------- 6. counters


KERNEL_TRACE = FLASH_COUNTERS / "discover_kernel_trace.csv"
KERNEL_STATS = FLASH_COUNTERS / "discover_kernel_stats.csv"


def _stats_row(name: str) -> dict[str, str]:
    import csv

    with open(KERNEL_STATS, newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["Name"] == name)


def test_rocprofv3_kernel_trace_csv_with_agent_labels() -> None:
    """rocprofv3's own kernel-trace CSV ("Agent 2" ids): its dispatches of the flash kernel
    add up to what rocprofv3's kernel statistics of the same run say."""
    data = read_counters([KERNEL_TRACE])
    flash = data.dispatches_of("flash_attn_func_kernel_0")
    stats = _stats_row("flash_attn_func_kernel_0")
    durations = [d.duration_ns for d in flash]
    assert len(flash) == int(stats["Calls"]) == 9
    assert sum(durations) == int(stats["TotalDurationNs"])
    assert (min(durations), max(durations)) == (int(stats["MinNs"]), int(stats["MaxNs"]))
    assert {d.agent_id for d in data.dispatches} == {2}  # "Agent 2"
    assert flash[0].workgroup == (256, 1, 1) and flash[0].grid == (131072, 1, 1)
    assert len(data.dispatches) == sum(int(r["Calls"]) for r in _all_stats())


def _all_stats() -> list[dict[str, str]]:
    import csv

    with open(KERNEL_STATS, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize(("label", "agent_id"), [("Agent 2", 2), ("3", 3), ("GPU 0", None)])
def test_agent_id_forms(tmp_path: Path, label: str, agent_id: int | None) -> None:
    path = tmp_path / "k_kernel_trace.csv"
    path.write_text("Kind,Agent_Id,Dispatch_Id,Kernel_Name,Start_Timestamp,End_Timestamp\n"
                    f'KERNEL_DISPATCH,"{label}",1,k,10,30\n')
    (d,) = read_counters([path]).dispatches
    assert (d.agent_id, d.agent_label, d.duration_ns) == (agent_id, label, 20)


def test_stats_csv_is_named_as_unused(tmp_path: Path) -> None:
    with pytest.raises(CounterError, match="summary statistics .* not used"):
        read_counters([KERNEL_STATS])


def test_bundle_names_counter_files_it_cannot_use(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.csv"
    bad.write_text("Dispatch_Id,Kernel_Name,Counter_Name,Counter_Value\n1,k,SQ_WAVES,many\n")
    out = tmp_path / "b"
    rc, err = _cli(["trace", "bundle", str(FLASH), "-o", str(out),
                    *[a for f in (KERNEL_TRACE, KERNEL_STATS, FLASH_COUNTERS /
                                  "discover_domain_stats.csv",
                                  FLASH_COUNTERS / "discover_agent_info.csv", bad)
                      for a in ("--counters", str(f))]], capsys)
    assert rc == 0, err
    md = (out / "REPORT.md").read_text()
    assert "- counters: `discover_kernel_stats.csv`: " in md and "summary statistics" in md
    assert "- counters: `broken.csv`: " in md and "expected a number, got 'many'" in md
    assert "`discover_domain_stats.csv`" in md
    # The kernel trace's dispatches of the traced kernel are in the report.
    stats = _stats_row("flash_attn_func_kernel_0")
    assert "| dispatches | 9 in the counter files |" in md
    data = json.loads((out / "report.json").read_text())
    assert sum(d["duration_ns"] for d in data["dispatches"]) == int(stats["TotalDurationNs"])
    assert sorted(p.name for p in (out / "counters").iterdir()) == [
        "discover_agent_info.csv", "discover_kernel_trace.csv"]
    assert "note: left out: counters" in err


# ---------------------------------------------------------------------------- 7. sizes


def test_register_ranges_and_counts_from_text_are_bounded() -> None:
    from asterism.profile.isa_text import vector_regs, waitcnt_counts

    assert vector_regs("v[2:5], a7") == {("v", 2), ("v", 3), ("v", 4), ("v", 5), ("a", 7)}
    assert vector_regs("v[0:255]") == {("v", i) for i in range(256)}
    # Not registers of any GFX9 file: a range past v255/a255, reversed, or 5000 digits
    # (before: a set of 100001 entries, 2e9 for v[0:2000000000]; a ValueError).
    assert vector_regs("v[0:100000], v[9:3], a[0:256]") == set()
    assert vector_regs("v" + "9" * 5000) == set()
    assert waitcnt_counts("s_waitcnt vmcnt(" + "9" * 5000 + ") lgkmcnt(0)") == {"lgkmcnt": 0}
    assert waitcnt_counts("s_waitcnt vmcnt(0x3f)") == {"vmcnt": 63}


def test_capture_text_with_endless_numbers_is_analyzed(pa_copy: Path) -> None:
    def edit(d):
        for row in d["code"]:
            if row[0].startswith("s_waitcnt"):
                row[0] = "s_waitcnt vmcnt(" + "7" * 5000 + ")"
            elif row[0].startswith("v_"):
                row[0] = row[0].split()[0] + " v[0:100000], v" + "1" * 5000
            row[3] = "k.py:" + ("\u00b2" if len(row[0]) % 2 else "1" * 5000)
    _edit(pa_copy / "code.json", edit)
    data = json.loads(trace_report(pa_copy, as_json=True))
    assert data["totals"]["instructions"] == 1576  # the records are all still there
    assert "k.py:\u00b2" in trace_report(pa_copy)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_pictures_of_a_capture_with_many_slots_are_bounded(pa_copy: Path,
                                                           tmp_path: Path) -> None:
    """103 SIMD slots (small wave files, each its own lane): the timeline draws the first 64
    lanes (before: a picture and an image buffer growing ~3 MB per lane); the HTML view
    embeds at most its lane limit."""
    pytest.importorskip("matplotlib")
    from asterism.profile import pictures
    from asterism.profile.report import analyze

    wave = json.loads((pa_copy / WAVE).read_text())
    wave["wave"]["instructions"] = wave["wave"]["instructions"][:20]
    wave["wave"]["waitcnt"] = []
    for slot in range(1, 100):
        wave["wave"]["slot"] = slot
        (pa_copy / f"se1_sm0_sl{slot}_wv0.json").write_text(json.dumps(wave))
    trace = read_att(pa_copy)
    arr = pictures.trace_arrays(trace)
    assert len(arr.lanes) == 103
    one = tmp_path / "one.png"
    pictures.plot_timeline(trace, analyze(trace), one, arrays=arr)
    width, height = _png_size(one)
    # 1.6 + 0.42 inches per lane at 100 dpi, 64 lanes: 2848 pixels before cropping
    assert height <= 2900  # (103 lanes drawn: 3579 pixels)
    data = pictures.html_data(trace, analyze(trace), arr, lane_limit=10)
    assert len(data["lanes"]) == 10 and data["lanes_total"] == 103
    assert data["records"] == sum(len(la.start) for la in arr.lanes[:10])


def test_csv_cells_past_the_csv_field_limit(tmp_path: Path) -> None:
    path = tmp_path / "x_kernel_trace.csv"
    path.write_text("Kind,Agent_Id,Dispatch_Id,Kernel_Name,Start_Timestamp,End_Timestamp\n"
                    'K,1,1,"' + "a" * 200_000 + '",1,2\n')
    with pytest.raises(CounterError) as exc:  # (csv.Error escaped before)
        read_counters([path])
    assert str(exc.value.location) == f"{path}:2:1" and "field limit" in exc.value.message


def test_bundle_write_failure_is_an_error(pa_copy: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from asterism.profile import pictures

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pictures, "write_html", full)
    rc, err = _cli(["trace", "bundle", str(pa_copy), "-o", str(tmp_path / "b")], capsys)
    assert rc == 1 and "b: cannot write the bundle: No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap"]


def test_many_skipped_sources_are_counted_not_all_listed(pa_copy: Path, tmp_path: Path) -> None:
    from asterism.profile.bundle import SKIPPED_SHOWN, BundleRequest, build_bundle

    rows = json.loads((pa_copy / "code.json").read_text())["code"]
    _point_rows_at(pa_copy, [f"/nowhere/f{i}.py:1" for i in range(len(rows))])
    out = build_bundle(BundleRequest(pa_copy, tmp_path / "b"))
    md = (out / "REPORT.md").read_text()
    listed = md.count("- source: `/nowhere/")
    total = len(json.loads((out / "report.json").read_text())["skipped"])
    assert listed == SKIPPED_SHOWN and total == len(rows) - 1  # (less the label row)
    assert f"- and {total - SKIPPED_SHOWN} more (report.json lists them all)" in md
