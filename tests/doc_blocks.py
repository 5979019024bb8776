"""What README.md and docs/*.md tell a reader to run, extracted so tests can run it.

A doc is read as a newcomer would copy from it:

* a fenced ```sh block: one command per line (a line ending in `\\` continues on the next;
  `# comment` lines are not commands);
* a fenced ```console block: a terminal session, `$ command` lines followed by the output
  the doc promises (compared by `output_matches`);
* a fenced ```python block: one snippet; ```python file=NAME is a file the doc asks the
  reader to save as NAME (written before the doc's later commands run, not run itself);
* an inline code span starting with `asterism `, `python ` or `pip `: a command when it is complete,
  otherwise a syntax reference (placeholders such as NAME, FILE, `...`, `|`), whose verb and
  options must exist (tests/test_docs.py decides which, with the real argument parser).

Other fences (```mlir, ```text, plain ```) are not commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNNABLE_LANGS = ("sh", "console", "python")
_FENCE = re.compile(r"^```(\S*)\s*(.*)$")
_SPAN = re.compile(r"`((?:asterism|python|pip) [^`]+)`")
# Wall-clock seconds in an output ("41.4 s", "ran in 0.39 s wall"): they change every run.
_SECONDS = re.compile(r"\b\d+(?:\.\d+)? s\b")


@dataclass(frozen=True)
class DocItem:
    """One command, session step, snippet or file of a doc."""

    doc: str  # path relative to the repository, e.g. "docs/raise.md"
    line: int  # 1-based line of the item's first line
    kind: str  # "sh", "console", "python", "file", "inline"
    text: str  # the command (continuations joined) or the Python source
    expected: str | None = None  # console: the output the doc shows (None: none shown)
    name: str | None = None  # file: the name to save it as

    @property
    def id(self) -> str:
        """Stable test id: doc and line."""
        return f"{self.doc}:{self.line}"


# Generated from the command's parsers (tools/gen_cli_doc.py) and checked against them by its
# own test: its spans are headings and help texts, not commands to copy.
GENERATED = ("docs/cli.md",)


def doc_files() -> list[Path]:
    """README.md and every docs/*.md but the generated ones, in a fixed order."""
    docs = sorted((REPO / "docs").glob("*.md"))
    return [REPO / "README.md",
            *(p for p in docs if p.relative_to(REPO).as_posix() not in GENERATED)]


def _join_continuations(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Shell lines with trailing backslashes joined into one command each."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for no, text in lines:
        if pending is not None:
            no, text = pending[0], pending[1] + " " + text.strip()
        if text.rstrip().endswith("\\"):
            pending = (no, text.rstrip()[:-1].rstrip())
            continue
        pending = None
        out.append((no, text))
    if pending is not None:
        out.append(pending)
    return out


def _sh_items(doc: str, body: list[tuple[int, str]]) -> list[DocItem]:
    items = []
    for no, text in _join_continuations(body):
        if text.strip() and not text.lstrip().startswith("#"):
            items.append(DocItem(doc, no, "sh", text.strip()))
    return items


def _console_items(doc: str, body: list[tuple[int, str]]) -> list[DocItem]:
    """`$ command` lines (with continuations) and the output lines after each."""
    items: list[DocItem] = []
    i = 0
    while i < len(body):
        no, text = body[i]
        if not text.startswith("$ "):
            raise ValueError(f"{doc}:{no}: a console block must start each step with '$ '")
        cmd = [text[2:]]
        while cmd[-1].rstrip().endswith("\\") and i + 1 < len(body):
            i += 1
            cmd[-1] = cmd[-1].rstrip()[:-1].rstrip()
            cmd.append(body[i][1].strip())
        i += 1
        out = []
        while i < len(body) and not body[i][1].startswith("$ "):
            out.append(body[i][1])
            i += 1
        items.append(DocItem(doc, no, "console", " ".join(cmd).strip(),
                             "\n".join(out) if out else None))
    return items


def _inline_items(doc: str, prose: list[tuple[int, str]]) -> list[DocItem]:
    """Code spans that start with `asterism ` or `python `, across line breaks."""
    items = []
    text = "\n".join(t for _, t in prose)
    starts = []
    pos = 0
    for no, t in prose:
        starts.append((pos, no))
        pos += len(t) + 1
    for m in _SPAN.finditer(text):
        line = max(no for off, no in starts if off <= m.start())
        items.append(DocItem(doc, line, "inline", " ".join(m.group(1).split())))
    return items


def extract(path: Path) -> list[DocItem]:
    """The commands, sessions, snippets and files of one markdown file, in order."""
    doc = path.relative_to(REPO).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    items: list[DocItem] = []
    prose: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        items += _inline_items(doc, prose)
        prose = [(i + 1, "")]  # a paragraph break: no span crosses a fence
        lang, info = m.group(1), dict(kv.split("=", 1) for kv in m.group(2).split() if "=" in kv)
        start = i + 1
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append((i + 1, lines[i]))
            i += 1
        i += 1  # the closing fence
        if lang == "sh":
            items += _sh_items(doc, body)
        elif lang == "console":
            items += _console_items(doc, body)
        elif lang == "python" and "file" in info:
            items.append(DocItem(doc, start + 1, "file", "\n".join(t for _, t in body) + "\n",
                                 name=info["file"]))
        elif lang == "python":
            items.append(DocItem(doc, start + 1, "python",
                                 "\n".join(t for _, t in body) + "\n"))
    items += _inline_items(doc, prose)
    return sorted(items, key=lambda it: it.line)


def all_items() -> list[DocItem]:
    """Every item of every doc."""
    return [it for path in doc_files() for it in extract(path)]


def normalize(text: str) -> str:
    """Output with wall-clock seconds blanked and trailing blanks dropped, for comparing."""
    return "\n".join(_SECONDS.sub("<seconds> s", ln).rstrip() for ln in text.splitlines())


def output_matches(expected: str, actual: str) -> str | None:
    """None when the doc's output is in the actual output, else what is missing.

    The expected lines are cut into chunks at lines that are only `...` (output left out);
    each chunk must appear as consecutive lines of the actual output, in order.
    """
    want = normalize(expected).splitlines()
    got = normalize(actual).splitlines()
    chunks: list[list[str]] = [[]]
    for ln in want:
        if ln.strip() == "...":
            chunks.append([])
        else:
            chunks[-1].append(ln)
    at = 0
    for chunk in (c for c in chunks if c):
        for j in range(at, len(got) - len(chunk) + 1):
            if got[j:j + len(chunk)] == chunk:
                at = j + len(chunk)
                break
        else:
            return "missing from the output:\n" + "\n".join(chunk)
    return None
