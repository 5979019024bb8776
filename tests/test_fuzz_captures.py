"""Bad-input fuzzing of the readers of profiling material, through the Python API and the CLI:
ATT captures in rocprofv3's layout (the reader, the analyzer, the pictures and HTML view,
the replay, `trace report|plot|bundle`), rocprofv3 counter files and PC -> source maps.

Inputs are mutations of the shipped captures (tests/data/shared/att) and counter files
(tests/data/shared/counters): a JSON value swapped for one of another kind or a hostile one
(huge and negative numbers, 5000-digit numbers, nesting thousands deep, HTML, backticks,
'$', paths out of the folder), keys renamed, text cut, spliced or truncated, files deleted,
made folders or replaced by links out of the capture, FIFOs and folders added. Whatever the
input, only `AsterismError` escapes the API; the CLI returns 0 or 1 with `error:` and no
traceback, leaves no output behind when it fails, and a bundle never holds a byte of a file
outside what was named (the 'secret' every link and path here points at).

The default run is derandomized and small (CI); ASTERISM_FUZZ_EXAMPLES=N runs N inputs per
test for a campaign, and ASTERISM_FUZZ_CAPTURE_STATS=FILE appends one JSON line per input
(test, outcome, seconds, peak memory growth) for its numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_inputs import _expect_clean, _run_cli, fuzz_settings

from asterism.cli import main as cli_main
from asterism.errors import AsterismError

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO / "tests" / "data" / "shared"
PA = SHARED / "att" / "pa_mqa_logits_fp4_small"
FLASH = SHARED / "att" / "flash_attn_func_small"
COUNTERS = SHARED / "counters" / "flash_attn_func_small"
SECRET = "FUZZ-SECRET-5f3a9c"
FLASH_WAVES_KEPT = ("se2_sm0_sl0_wv0.json", "se3_sm1_sl0_wv0.json")


# ----------------------------------------------------------------------------- seeds


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The seeds (the small capture; the flash capture cut to 2 of its 8 waves, keeping its
    source snapshots; the counter files) and a folder outside them with a secret that the
    hostile paths and links point at."""
    base = tmp_path_factory.mktemp("fuzz")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(f"{SECRET}\n")
    pa = Path(shutil.copytree(PA, base / "pa"))
    flash = Path(shutil.copytree(FLASH, base / "flash"))
    for wave in flash.glob("se*_sm*_sl*_wv*.json"):
        if wave.name not in FLASH_WAVES_KEPT:
            wave.unlink()
    index = json.loads((flash / "filenames.json").read_text())
    for simds in index["wave_filenames"].values():
        for simd, slots in list(simds.items()):
            if slots["0"]["0"][0] not in FLASH_WAVES_KEPT:
                del simds[simd]
    (flash / "filenames.json").write_text(json.dumps(index))
    return {"base": base, "outside": outside, "pa": pa, "flash": flash}


def _fresh_copy(world: dict[str, Path], seed: str) -> Path:
    """A private copy of a seed capture for one example (removed by the caller)."""
    where = Path(tempfile.mkdtemp(dir=world["base"]))
    return Path(shutil.copytree(world[seed], where / "cap"))


# ----------------------------------------------------------------------------- mutations


RAW_DEEP = "\x00RAW-DEEP"  # sentinels replaced by raw JSON text json.dumps cannot write
RAW_LONG = "\x00RAW-LONG"
RAW_NAN = "\x00RAW-NAN"
SECRET_PATH = "\x00SECRET-PATH"
RAW_TEXT = {json.dumps(RAW_DEEP): "[" * 3000 + "]" * 3000, json.dumps(RAW_LONG): "9" * 5000,
            json.dumps(RAW_NAN): "NaN"}
HOSTILE_VALUES = [None, True, False, -1, 0, 1, 7, 255, 256, 65535, 2**31, 2**32, 2**53,
                  2**63, -(2**63) - 1, 2**64, 10**30, 1.5, -0.0, 1e308, "", "x", "0x10",
                  "Agent 2", "GPU 0", "\u00b2", "\u0663", "<!--<script>", "</script>",
                  "`|$\\frac{$", "a\u2028b", "../../x", "/etc/passwd:1", "~/.ssh/id_rsa:1",
                  [], {}, [0], [[0, 0]], {"a": 1}, RAW_DEEP, RAW_LONG, RAW_NAN, SECRET_PATH]
# Values of the same kind as the one they replace: the file still reads, so what is
# exercised is the analysis, the pictures and the bundle on odd but valid data.
SAME_KIND = {int: [0, 1, 2, 3, 4, 7, 8, 63, 64, 255, 1000, 65535, 65536, 2**31 - 1, 2**40,
                   2**53 - 1],
             str: ["", "x", "; k", "s_waitcnt vmcnt(0)", "v_mfma_f32_32x32x8_f16 v[0:15], "
                   "v[0:1], v[2:3], v[0:15]", "s_barrier", "<!--<script>", "`|$\\frac{$",
                   "/etc/passwd:1", "a\u2028b", SECRET_PATH, "k.py:\u00b2", "k.py:" + "9" * 40]}
# The values past what a reader may take on trust: drawn more often than the others.
BOMBS = [RAW_DEEP, RAW_LONG, 2**63, 2**64, -(2**63) - 1, 10**30, -1, "\u00b2"]
HOSTILE_KEYS = ["", "\u00b2", "9" * 5000, "-1", "2147483648", "x", "SE99", "dispatches"]
JSON_TOKENS = ['"', "{", "}", "[", "]", ",", ":", "null", "-1", "1e400", "0", "[]", "{}",
               "true", '"x"', "NaN", "9" * 40, "[" * 200, "\\u0000", "\u00e9"]
CSV_TOKENS = ['"', ",", "\n", "\r\n", "Agent 3", "GPU 0", "9" * 30, "-1", "nan", "1e400",
              "x", "\x00", "\u00e9", ",,,,", '"a,b"', "\ufeff"]


def _json_paths(value: Any, path: tuple = (), out: list | None = None,
                limit: int = 3000) -> list[tuple]:
    """Paths (tuples of keys/indexes) to the values inside a JSON document, up to `limit`
    (a wide breadth-first sample: every level gets its share)."""
    out = [] if out is None else out
    todo = [(value, path)]
    while todo and len(out) < limit:
        node, where = todo.pop(0)
        out.append(where)
        items = node.items() if isinstance(node, dict) else (
            enumerate(node) if isinstance(node, list) else ())
        todo += [(child, (*where, key)) for key, child in items]
    return out


def _dumps(doc: Any, secret_path: str) -> str:
    text = json.dumps(doc, separators=(",", ":"))
    for quoted, raw in RAW_TEXT.items():
        text = text.replace(quoted, raw)
    return text.replace(json.dumps(SECRET_PATH), json.dumps(secret_path))


@st.composite
def json_edit(draw, text: str, secret_path: str) -> bytes:
    """The JSON document `text` after one edit: a value (at any depth) or a key replaced by
    a hostile one, an item deleted or duplicated, or the text cut and spliced."""
    kind = draw(st.sampled_from(["value", "value", "bomb", "bomb", "same", "same", "same",
                                 "key", "drop", "dup", "text", "truncate"]))
    if kind in ("text", "truncate"):
        return draw(text_edit(text, JSON_TOKENS, truncate=kind == "truncate"))
    doc = json.loads(text)
    paths = [p for p in _json_paths(doc) if p] or [()]
    path = draw(st.sampled_from(paths))
    if not path:
        return _dumps(draw(st.sampled_from(HOSTILE_VALUES)), secret_path).encode()
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if kind == "same" and type(parent[last]) in SAME_KIND:
        parent[last] = draw(st.sampled_from(SAME_KIND[type(parent[last])]))
    elif kind == "bomb":
        parent[last] = draw(st.sampled_from(BOMBS))
    elif kind in ("value", "same"):
        parent[last] = draw(st.sampled_from(HOSTILE_VALUES))
    elif kind == "key" and isinstance(parent, dict):
        parent[draw(st.sampled_from(HOSTILE_KEYS))] = parent.pop(last)
    elif kind == "drop":
        del parent[last]
    elif kind == "dup" and isinstance(parent, list):
        parent.insert(last, parent[last])
    return _dumps(doc, secret_path).encode()


@st.composite
def text_edit(draw, text: str, tokens: list[str], truncate: bool = False) -> bytes:
    """`text` after 1-3 edits: a slice deleted or duplicated, a token inserted; or cut."""
    if truncate:
        return text.encode()[:draw(st.integers(0, len(text.encode())))]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 64)))
        kind = draw(st.sampled_from(["delete", "token", "dup"]))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "token":
            text = text[:i] + draw(st.sampled_from(tokens)) + text[i:]
        else:
            text = text[:j] + text[i:j] * draw(st.integers(1, 3)) + text[j:]
    return text.encode("utf-8", "surrogatepass")


def _capture_files(seed: Path) -> list[str]:
    return sorted(p.name for p in seed.iterdir())


@st.composite
def file_damage(draw, seed: Path, secret_path: str):
    """(file name, new bytes, or None to delete it) for one file of a capture."""
    name = draw(st.sampled_from(_capture_files(seed)))
    roll = draw(st.integers(0, 19))
    if roll == 0:
        return name, None
    if roll == 1:
        return name, draw(st.binary(max_size=64))
    text = (seed / name).read_text(encoding="utf-8", errors="replace")
    if name.endswith(".json"):
        return name, draw(json_edit(text, secret_path))
    return name, draw(text_edit(text, JSON_TOKENS, truncate=draw(st.booleans())))


FOLDER_DAMAGE = ["link-file-out", "link-dir-out", "link-in", "fifo", "subfolder",
                 "file-is-folder", "link-replaces"]


@st.composite
def folder_damage(draw, seed: Path):
    """(kind, file name) of a change to a capture folder's entries."""
    return draw(st.sampled_from(FOLDER_DAMAGE)), draw(st.sampled_from(_capture_files(seed)))


def _apply_folder(cap: Path, outside: Path, kind: str, name: str) -> None:
    target = cap / name
    if kind == "link-file-out":
        (cap / "perf.txt").symlink_to(outside / "secret.py")
    elif kind == "link-dir-out":
        (cap / "notes").symlink_to(outside)
    elif kind == "link-in":
        (cap / "alias.json").symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(cap / "pipe.json")
    elif kind == "subfolder":
        (cap / "sub").mkdir()
        (cap / "sub" / "se9_sm0_sl0_wv0.json").write_text("{}")
    elif kind == "file-is-folder":
        target.unlink()
        target.mkdir()
    elif kind == "link-replaces":  # the file, moved out and linked back
        moved = outside / f"moved-{os.getpid()}-{time.monotonic_ns()}"
        target.rename(moved)
        target.symlink_to(moved)


def _apply(cap: Path, damages) -> None:
    for name, data in damages:
        target = cap / name
        if data is None:
            target.unlink(missing_ok=True)
        else:
            target.write_bytes(data)


# ----------------------------------------------------------------------------- measuring


def _measure(test: str, fn: Callable[[], Any]) -> Any:
    """Run `fn`; under ASTERISM_FUZZ_CAPTURE_STATS append its outcome, seconds and peak
    memory growth (Linux: the resident-set high-water mark, reset before the input) to that
    file."""
    stats = os.environ.get("ASTERISM_FUZZ_CAPTURE_STATS")
    if not stats:
        return fn()
    base = _reset_peak()
    start = time.perf_counter()
    outcome = "ok"
    try:
        result = fn()
        if isinstance(result, AsterismError):
            outcome = "error"
        elif isinstance(result, int):
            outcome = "ok" if result == 0 else "error"
        return result
    except BaseException:
        outcome = "escaped"
        raise
    finally:
        peak = _peak_kib()
        with open(stats, "a") as fh:
            fh.write(json.dumps({"test": test, "outcome": outcome,
                                 "seconds": round(time.perf_counter() - start, 4),
                                 "peak_mib": None if base is None or peak is None
                                 else round((peak - base) / 1024, 1)}) + "\n")


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> int | None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current resident set
    except OSError:
        return None
    return _status_kib("VmRSS")


def _peak_kib() -> int | None:
    return _status_kib("VmHWM")


# ----------------------------------------------------------------------------- API


def _analysis_api(cap: Path) -> AsterismError | None:
    """Report, JSON report and the bundle's texts of `cap`; the reader's error, if any."""
    from asterism.profile import trace_report
    from asterism.profile.att import read_att, source_files
    from asterism.profile.bundle import analyze_capture, render_bundle_json, render_bundle_markdown

    error = _expect_clean(trace_report, cap)
    _expect_clean(trace_report, cap, as_json=True, rank="cycles")
    try:
        trace = read_att(cap)
        source_files(trace)
        a = analyze_capture(trace)
        render_bundle_markdown(a, files=["REPORT.md"])
        render_bundle_json(a)
    except AsterismError as err:
        assert str(err)
    return error


SEEDS = st.sampled_from(["pa", "pa", "pa", "flash"])


@fuzz_settings(25)
@given(st.data())
def test_capture_mutations_api(world, data):
    seed = data.draw(SEEDS)
    damages = data.draw(st.lists(file_damage(world[seed], str(world["outside"] /
                                                                "secret.py") + ":1"),
                                 min_size=1, max_size=3))
    cap = _fresh_copy(world, seed)
    try:
        _apply(cap, damages)
        _measure("capture_api", lambda: _analysis_api(cap))
    finally:
        shutil.rmtree(cap.parent)


@fuzz_settings(12)
@given(st.data())
def test_capture_mutations_replay(world, data):
    from asterism.profile.replay import replay

    damages = data.draw(st.lists(file_damage(world["pa"], "/x.py:1"), min_size=1,
                                 max_size=2))
    memory = data.draw(st.sampled_from(["model", "measured"]))
    cap = _fresh_copy(world, "pa")
    try:
        _apply(cap, damages)
        _measure("replay", lambda: _expect_clean(replay, cap, memory=memory))
    finally:
        shutil.rmtree(cap.parent)


@fuzz_settings(8)
@given(st.data())
def test_capture_mutations_pictures(world, data):
    pytest.importorskip("matplotlib")
    from asterism.profile import pictures
    from asterism.profile.att import read_att
    from asterism.profile.plot import plot_trace
    from asterism.profile.report import analyze

    damages = data.draw(st.lists(file_damage(world["pa"], "/x.py:1"), min_size=1,
                                 max_size=2))
    cap = _fresh_copy(world, "pa")

    def draw() -> None:
        trace = read_att(cap)
        report = analyze(trace)
        out = cap.parent
        pictures.write_html(trace, report, out / "v.html")
        plot_trace(trace, out / "t.png", report)
        pictures.plot_hotspots(report, out / "h.png")
        pictures.plot_source_heat(report, out / "s.png")

    try:
        _apply(cap, damages)
        _measure("pictures", lambda: _expect_clean(draw))
    finally:
        shutil.rmtree(cap.parent)


# ----------------------------------------------------------------------------- CLI


def _bundle_leaks(bundle: Path) -> list[str]:
    """Files of a bundle that are links or hold the secret."""
    return [str(p) for p in bundle.rglob("*") if p.is_symlink()
            or (p.is_file() and SECRET.encode() in p.read_bytes())]


@fuzz_settings(8)
@given(st.data())
def test_capture_mutations_cli(world, capsys, data):
    seed = data.draw(SEEDS)
    damages = data.draw(st.lists(file_damage(world[seed], str(world["outside"] /
                                                                "secret.py") + ":1"),
                                 min_size=1, max_size=2))
    verb = data.draw(st.sampled_from(["report", "plot", "bundle"]))
    cap = _fresh_copy(world, seed)
    out = cap.parent / ("o.md" if verb == "report" else "o.png" if verb == "plot" else "b")
    argv = {"report": ["trace", "report", str(cap), "-o", str(out)],
            "plot": ["trace", "plot", str(cap), "-o", str(out)],
            "bundle": ["trace", "bundle", str(cap), "-o", str(out), "--counters",
                       str(COUNTERS / "small_results.json")]}[verb]
    try:
        _apply(cap, damages)
        _measure(f"cli_{verb}", lambda: _run_cli(argv, capsys, out if verb != "bundle"
                                                 else None))
        if verb == "bundle":
            assert _bundle_leaks(out) == []
            assert [p.name for p in cap.parent.iterdir() if p.name.startswith(".")] == []
    finally:
        shutil.rmtree(cap.parent)


@fuzz_settings(3)
@given(st.data())
def test_capture_folder_damage_cli(world, capsys, data):
    seed = data.draw(SEEDS)
    damages = data.draw(st.lists(folder_damage(world[seed]), min_size=1, max_size=3,
                                 unique_by=lambda d: d[0]))
    cap = _fresh_copy(world, seed)
    out = cap.parent / "b"
    try:
        for kind, name in damages:
            _apply_folder(cap, world["outside"], kind, name)
        _measure("folder_cli", lambda: _run_cli(["trace", "bundle", str(cap), "-o", str(out)],
                                                capsys))
        if out.exists():
            assert _bundle_leaks(out) == []
        _measure("folder_cli", lambda: _run_cli(["trace", "report", str(cap), "--json"],
                                                capsys))
    finally:
        shutil.rmtree(cap.parent)


# ----------------------------------------------------------------------------- counters


COUNTER_SEEDS = sorted(p.name for p in COUNTERS.iterdir())


@st.composite
def damaged_counter_file(draw):
    """(name, bytes) of a mutated rocprofv3 output file."""
    name = draw(st.sampled_from(COUNTER_SEEDS))
    text = (COUNTERS / name).read_text()
    if draw(st.integers(0, 14)) == 0:
        return name, draw(st.binary(max_size=64))
    if name.endswith(".json"):
        return name, draw(json_edit(text, "/x.py:1"))
    return name, draw(text_edit(text, CSV_TOKENS, truncate=draw(st.integers(0, 5)) == 0))


@fuzz_settings(50)
@given(damaged_counter_file())
def test_counter_mutations_api(tmp_path, damage):
    from asterism.profile.counters import read_counters, read_counters_each

    name, data = damage
    path = tmp_path / name
    path.write_bytes(data)
    _measure("counters_api", lambda: _expect_clean(read_counters, [path]))
    data, bad = read_counters_each([path, COUNTERS / "small_agent_info.csv"])
    assert data is not None and data.gpus()  # the good file is read whatever the other
    assert len(bad) <= 1


@fuzz_settings(3)
@given(damaged_counter_file())
def test_counter_mutations_bundle_cli(world, capsys, damage):
    name, data = damage
    where = Path(tempfile.mkdtemp(dir=world["base"]))
    try:
        (where / name).write_bytes(data)
        out = where / "b"
        rc = _measure("counters_bundle_cli", lambda: _run_cli(
            ["trace", "bundle", str(world["pa"]), "-o", str(out), "--counters",
             str(where / name)], capsys))
        assert rc == 0  # a counter file the bundle cannot use is never fatal
    finally:
        shutil.rmtree(where)


# ----------------------------------------------------------------------------- source maps


def _source_map_seed() -> str:
    rows = json.loads((PA / "code.json").read_text())["code"]
    return json.dumps({hex(r[5]): f"kernel.py:{i}" for i, r in enumerate(rows)
                       if not r[0].startswith(";")})


SOURCE_MAP_SEED = _source_map_seed()


@fuzz_settings(25)
@given(st.one_of(json_edit(SOURCE_MAP_SEED, "/x.py:1"), st.binary(max_size=64)))
def test_source_map_mutations_api(world, tmp_path, data):
    from asterism.profile import trace_report
    from asterism.profile.report import load_source_map

    path = tmp_path / "map.json"
    path.write_bytes(data)
    _measure("source_map_api", lambda: _expect_clean(load_source_map, path))
    _expect_clean(trace_report, world["pa"], source_map=path)


def test_cli_on_a_source_map_of_the_wrong_kind(tmp_path, capsys):
    path = tmp_path / "map.json"
    path.write_text('{"0x10": ' + "[" * 5000 + "]" * 5000 + "}")
    assert _run_cli(["trace", "report", str(PA), "--source-map", str(path)], capsys) == 1
    assert cli_main(["trace", "report", str(PA), "--source-map", str(tmp_path)]) == 1
    assert "a folder" in capsys.readouterr().err
