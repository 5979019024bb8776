"""Text from inputs (kernel names, disassembly, source lines, counter and GPU names) escaped
for where it lands: Markdown (REPORT.md, `trace report`), the JSON data inside the HTML
view's ``<script>`` block, and matplotlib labels. Every renderer puts such text through one
of these, so a name holding ``<script>``, a backtick or a ``$`` stays text.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Characters str.splitlines() breaks at: inside one Markdown line each would start a new one.
_LINE_BREAKS_RE = re.compile("[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# Markdown punctuation that can open markup in a line (CommonMark lets any ASCII punctuation
# be backslash-escaped; these are the ones that matter here). An underscore between two
# letters or digits cannot (GFM: no intraword emphasis with '_'): snake_case names stay as
# they are.
_MD_SPECIAL_RE = re.compile(r"([\\`*\[\]|~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_BACKTICKS_RE = re.compile(r"`+")


def one_line(text: str) -> str:
    """`text` with every line break made a space."""
    return _LINE_BREAKS_RE.sub(" ", text)


def md_text(text: str) -> str:
    """`text` as plain Markdown text on one line: HTML's ``& < >`` as entities, Markdown's
    markup characters backslash-escaped (a table's ``|`` included)."""
    text = one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL_RE.sub(r"\\\1", text)


def md_code(text: str, table: bool = False) -> str:
    """`text` as a Markdown code span on one line: fenced by more backticks than it holds in
    a row (so none of its own closes it); HTML in a code span is shown as text. In a table
    cell (`table`) a ``|`` is escaped as GFM asks, even inside code."""
    text = one_line(text)
    if table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(m) for m in _BACKTICKS_RE.findall(text)), default=0) + 1)
    if text.startswith("`") or text.endswith("`") or (text.startswith(" ")
                                                      and text.endswith(" ")):
        text = f" {text} "  # one space on each side is stripped again by the renderer
    return f"{fence}{text}{fence}"


def md_fence(lines: list[str]) -> list[str]:
    """`lines` (each made one line) as a fenced code block whose fence no line can close."""
    lines = [one_line(line) for line in lines]
    longest = max((len(m) for line in lines for m in _BACKTICKS_RE.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence]


def script_json(data: Any) -> str:
    """`data` as JSON safe inside an HTML ``<script>`` element: ``<``, ``>`` and ``&`` as
    ``\\u003c``-style escapes (no ``</script>``, ``<!--`` or ``<script`` can appear, which
    would end the element or switch the HTML parser's script states), and every non-ASCII
    character escaped (U+2028/U+2029 included). JavaScript reads the same values."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def mpl_text(text: str) -> str:
    """`text` for a matplotlib label: one line, ``$`` escaped so it is never read as
    mathtext (a bad formula would make drawing fail)."""
    return one_line(text).replace("$", r"\$")


__all__ = ["md_code", "md_fence", "md_text", "mpl_text", "one_line", "script_json"]
