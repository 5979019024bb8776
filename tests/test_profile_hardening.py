"""Untrusted profiling material: captures in rocprofv3's ATT layout, counter files and source
maps are read within bounds (nesting depth, sizes, value ranges), never through a symbolic
link out of a capture folder, and the bundle copies nothing the user did not name; what the
bundle and the HTML view embed from them is escaped for where it lands.

Each test below failed before the fix it guards (one per class of bad input the issue
reported); the fuzzing of the same readers is tests/test_fuzz_captures.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from asterism.cli import main
from asterism.errors import AsterismError
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
