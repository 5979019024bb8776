"""One page across profiling bundles: per bundle the kernel, its bound, the headroom and the
top candidate with its modeled saving (``asterism trace dashboard BUNDLE... -o DIR``).

Each bundle's ``report.json`` is read (size and nesting bounded; a bundle is untrusted
input: every text from it is escaped). DIR gets ``index.html`` (no script, no network) and
``dashboard.md``; both link each bundle's REPORT.md by the path given. Headroom is the top
candidate's modeled saving as a share of the modeled span it was measured against (what the
replays say one change could take off the traced CUs' time).
"""

from __future__ import annotations

import html
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asterism.errors import AsterismError
from asterism.profile.escape import md_code, md_text
from asterism.textio import load_json_bounded


class DashboardError(AsterismError):
    """A dashboard that cannot be made (no bundle, a bundle without report.json, output)."""


@dataclass
class Row:
    """One bundle's line on the dashboard."""

    bundle: str  # the path given
    kernel: str
    verdict: str
    bound: str
    bound_text: str
    span: int | None
    candidate: str
    saved: int | None  # modeled cycles of the top candidate
    base_span: int | None  # the modeled span the saving is against

    @property
    def headroom(self) -> float | None:
        """The top candidate's modeled saving, percent of its modeled span."""
        if self.saved is None or not self.base_span:
            return None
        return 100.0 * self.saved / self.base_span


def _text(value: Any, limit: int = 400) -> str:
    return str(value)[:limit] if isinstance(value, (str, int, float)) else ""


def read_row(bundle: str | Path) -> Row:
    """The dashboard line of one bundle directory (its report.json)."""
    path = Path(bundle) / "report.json"
    if not path.is_file():
        raise DashboardError(f"{bundle}: not a bundle (no report.json; make one with "
                             "`asterism trace bundle`)")
    # (a file inside a bundle folder someone else made: a link there could point anywhere)
    data = load_json_bounded(path, follow_links=False, error=DashboardError,
                             what="bundle report")
    if not isinstance(data, dict):
        raise DashboardError(f"{path}: expected a JSON object")
    kernels = data.get("kernels") if isinstance(data.get("kernels"), list) else []
    totals = data.get("totals") if isinstance(data.get("totals"), dict) else {}
    st = data.get("structure") if isinstance(data.get("structure"), dict) else {}
    bound = st.get("bound") if isinstance(st.get("bound"), dict) else {}
    cands = data.get("candidates") if isinstance(data.get("candidates"), list) else []
    top = next((c for c in cands if isinstance(c, dict) and isinstance(c.get("modeled"), int)
                and c["modeled"] > 0), None)
    base = top.get("modeled_base") if top is not None else None
    base = base if isinstance(base, int) else None
    span = totals.get("span")
    return Row(str(bundle), ", ".join(_text(k, 200) for k in kernels[:3]) or "?",
               _text(data.get("verdict")), _text(bound.get("kind"), 40) or "?",
               _text(bound.get("text")), span if isinstance(span, int) else None,
               _text(top.get("title")) if top else "", top["modeled"] if top else None, base)


def _link(bundle: str, out: Path) -> str:
    """The bundle's REPORT.md relative to the dashboard folder."""
    return os.path.relpath(Path(bundle).resolve() / "REPORT.md", out.resolve())


def render_markdown(rows: list[Row], out: Path) -> str:
    """dashboard.md."""
    lines = ["# Kernels", "", f"{len(rows)} bundle(s). Headroom: the top candidate's "
             "**modeled** saving, in percent of the modeled time of the traced CUs.", "",
             "| kernel | bound | headroom | top candidate (modeled saving) | bundle |",
             "|---|---|---:|---|---|"]
    for r in rows:
        head = f"{r.headroom:.1f} %" if r.headroom is not None else "-"
        cand = (f"{md_text(r.candidate)} ({r.saved:,} cycles)" if r.saved is not None
                else "none replayed")
        lines.append(f"| {md_code(r.kernel, table=True)} | {md_text(r.bound)} | {head} | "
                     f"{cand.replace('|', '&#124;')} | [{md_text(Path(r.bundle).name)}]"
                     f"(<{_link(r.bundle, out)}>) |")
    return "\n".join(lines) + "\n"


def render_html(rows: list[Row], out: Path) -> str:
    """index.html: the same table, each kernel's bound sentence under it."""
    e = html.escape
    body = []
    for r in rows:
        head = f"{r.headroom:.1f} %" if r.headroom is not None else "-"
        cand = (f"{e(r.candidate)} <b>{r.saved:,}</b> cycles (modeled)" if r.saved is not None
                else "none replayed")
        body.append(f"<tr><td><a href=\"{e(_link(r.bundle, out))}\"><code>{e(r.kernel)}</code>"
                    f"</a></td><td><b>{e(r.bound)}</b><br><small>{e(r.bound_text)}</small></td>"
                    f"<td class=n>{head}</td><td>{cand}</td></tr>")
    return ("<!doctype html><meta charset=utf-8><title>asterism dashboard</title>"
            "<style>body{font:14px sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}"
            ".n{text-align:right}</style>"
            f"<h1>Kernels ({len(rows)})</h1><p>Headroom: the top candidate's modeled saving "
            "in percent of the modeled time of the traced CUs (asterism's timing model, not a "
            "measurement).</p><table><tr><th>kernel</th><th>bound</th><th>headroom</th>"
            "<th>top candidate</th></tr>" + "".join(body) + "</table>\n")


def build_dashboard(bundles: list[str | Path], out: str | Path) -> Path:
    """Write DIR/index.html and DIR/dashboard.md for the bundles (all or nothing)."""
    if not bundles:
        raise DashboardError("give at least one bundle directory")
    dest = Path(out)
    if dest.exists():
        raise DashboardError(f"{dest}: already exists; give a new directory with -o")
    if not dest.parent.is_dir():
        raise DashboardError(f"{dest.parent}: no such folder for the dashboard")
    rows = [read_row(b) for b in bundles]
    rows.sort(key=lambda r: (-(r.headroom or 0.0), r.kernel))
    tmp = dest.parent / f".{dest.name}.tmp-{uuid.uuid4().hex}"
    try:
        tmp.mkdir()
        (tmp / "index.html").write_text(render_html(rows, dest), encoding="utf-8")
        (tmp / "dashboard.md").write_text(render_markdown(rows, dest), encoding="utf-8")
        tmp.rename(dest)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DashboardError(f"{dest}: cannot write the dashboard: "
                             f"{exc.strerror or exc}") from None
    return dest


__all__ = ["DashboardError", "Row", "build_dashboard", "read_row", "render_html",
           "render_markdown"]
