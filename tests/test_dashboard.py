"""`asterism trace dashboard`: one page across bundles, from their report.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asterism.cli import main


def _bundle(root: Path, name: str, kernel: str, bound: str, saved: int | None,
            base: int = 10_000) -> Path:
    d = root / name
    d.mkdir()
    cands = [{"rule": "idle", "title": "idle gaps", "modeled": None}]
    if saved is not None:
        cands.insert(0, {"rule": "whatif-even-out", "title": f"top of {kernel}",
                         "modeled": saved, "modeled_base": base})
    (d / "report.json").write_text(json.dumps({
        "kernels": [kernel], "verdict": "stall-bound", "totals": {"span": base},
        "structure": {"bound": {"kind": bound, "text": f"{bound}-bound: a figure"}},
        "candidates": cands}))
    return d


def test_dashboard_rows_by_hand(tmp_path: Path) -> None:
    a = _bundle(tmp_path, "a", "gemm", "compute", 500)
    b = _bundle(tmp_path, "b", "attn<script>", "imbalance", 2_500, 20_000)
    c = _bundle(tmp_path, "c", "copy", "latency", None)
    out = tmp_path / "dash"
    assert main(["trace", "dashboard", str(a), str(b), str(c), "-o", str(out)]) == 0
    md = (out / "dashboard.md").read_text().splitlines()
    rows = [ln for ln in md if ln.startswith("| `")]
    # Most headroom first: 2,500 / 20,000 = 12.5 %, 500 / 10,000 = 5.0 %, none.
    assert [r.split(" | ")[2] for r in rows] == ["12.5 %", "5.0 %", "-"]
    assert "top of gemm (500 cycles)" in rows[1] and "none replayed" in rows[2]
    assert "(<../a/REPORT.md>)" in rows[1]
    page = (out / "index.html").read_text()
    assert "<script>" not in page and "attn&lt;script&gt;" in page
    assert "imbalance-bound: a figure" in page


def test_dashboard_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    not_bundle = tmp_path / "x"
    not_bundle.mkdir()
    out = tmp_path / "dash"
    assert main(["trace", "dashboard", str(not_bundle), "-o", str(out)]) == 1
    assert "not a bundle (no report.json" in capsys.readouterr().err
    assert not out.exists()
    (not_bundle / "report.json").write_text("[" * 5000)
    assert main(["trace", "dashboard", str(not_bundle), "-o", str(out)]) == 1
    assert "report.json" in capsys.readouterr().err and not out.exists()
    good = _bundle(tmp_path, "g", "k", "latency", 1)
    out.mkdir()
    assert main(["trace", "dashboard", str(good), "-o", str(out)]) == 1
    assert "already exists" in capsys.readouterr().err


def test_dashboard_does_not_follow_a_report_link(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # A bundle folder from elsewhere whose report.json is a link reads nothing outside it.
    outside = _bundle(tmp_path, "outside", "secret", "latency", 7)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "report.json").symlink_to(outside / "report.json")
    out = tmp_path / "dash"
    assert main(["trace", "dashboard", str(shared), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "link" in err and "secret" not in err and not out.exists()
