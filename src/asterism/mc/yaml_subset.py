"""The YAML subset of `.amdgpu_metadata` blocks: block mappings, block sequences, scalars.

Enough to read what LLVM (and hand-written kernels) put in code object metadata and to write
it back in LLVM's layout; no dependency on a YAML library. The text is untrusted: nesting is
limited to MAX_DEPTH levels and integer literals to MAX_DIGITS digits (ParseError past them).
"""

from __future__ import annotations

import re
from typing import Any

from asterism.errors import ParseError, SourceLocation

# (the metadata schema allows 32 levels; the reader stops a little later, before Python's
# recursion limit)
MAX_DEPTH = 64
# Digits of an integer literal: Python refuses to convert more than 4300 (ValueError), so
# longer literals are refused here, with the line (shorter ones are read, and the metadata
# schema says which field is out of range).
MAX_DIGITS = 1000

Path = tuple[str | int, ...]


def _scalar(text: str, loc: SourceLocation | None = None) -> Any:
    t = text.strip()
    if t.startswith(("'", '"')) and t.endswith(t[0]) and len(t) >= 2:
        return t[1:-1]
    if t in ("true", "True"):
        return True
    if t in ("false", "False"):
        return False
    if re.fullmatch(r"[-+]?\d+", t) or re.fullmatch(r"0x[0-9a-fA-F]+", t):
        digits = len(t.lstrip("+-").removeprefix("0x"))
        if digits > MAX_DIGITS:
            raise ParseError(f"integer literal of {digits} digits (at most {MAX_DIGITS})", loc)
        return int(t, 16) if t.startswith("0x") else int(t)
    if re.fullmatch(r"[-+]?\d+\.\d*([eE][-+]?\d+)?", t):
        return float(t)
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        return [_scalar(x, loc) for x in inner.split(",")] if inner else []
    return t


class _Reader:
    """The lines of one document, the file name and where each value was read."""

    def __init__(self, lines: list[tuple[int, str, int]], file: str,
                 positions: dict[Path, SourceLocation] | None):
        self.lines = lines
        self.file = file
        self.positions = positions

    def loc(self, pos: int) -> SourceLocation:
        """The location of line `pos` (its first non-blank column)."""
        ind, _content, ln = self.lines[pos]
        return SourceLocation(self.file, ln, ind + 1)

    def note(self, path: Path, pos: int) -> None:
        """Remember where the value at `path` was read."""
        if self.positions is not None:
            self.positions[path] = self.loc(pos)


def load(text: str, file: str = "<metadata>", first_line: int = 1,
         positions: dict[Path, SourceLocation] | None = None) -> Any:
    """Parse the YAML subset (a document between optional '---' and '...'). `positions`, if
    given, receives the location of every value by its path (keys and list indices)."""
    lines = []
    for k, raw in enumerate(text.splitlines()):
        stripped = raw.split(" #", 1)[0].rstrip()
        if not stripped.strip() or stripped.strip() in ("---", "..."):
            continue
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise ParseError("tabs are not allowed for YAML indentation",
                             SourceLocation(file, first_line + k, 1))
        lines.append((len(stripped) - len(stripped.lstrip()), stripped.strip(), first_line + k))
    if not lines:
        return {}
    reader = _Reader(lines, file, positions)
    value, pos = _block(reader, 0, lines[0][0], (), 1)
    if pos != len(lines):
        raise ParseError(f"unexpected YAML line '{lines[pos][1]}'", reader.loc(pos))
    return value


def _block(reader: _Reader, pos: int, indent: int, path: Path, depth: int):
    if depth > MAX_DEPTH:
        raise ParseError(f"YAML nested more than {MAX_DEPTH} levels deep", reader.loc(pos))
    reader.note(path, pos)
    if reader.lines[pos][1].startswith("- ") or reader.lines[pos][1] == "-":
        return _sequence(reader, pos, indent, path, depth)
    return _mapping(reader, pos, indent, path, depth)


def _mapping(reader: _Reader, pos: int, indent: int, path: Path, depth: int):
    lines = reader.lines
    out: dict[str, Any] = {}
    while pos < len(lines):
        ind, content, _ln = lines[pos]
        if ind < indent:
            break
        if ind > indent or content.startswith("- "):
            raise ParseError(f"bad indentation in YAML near '{content}'", reader.loc(pos))
        key, sep, rest = content.partition(":")
        if not sep:
            raise ParseError(f"expected 'key: value' in YAML, got '{content}'", reader.loc(pos))
        key = key.strip()
        rest = rest.strip()
        reader.note((*path, key), pos)
        pos += 1
        if rest:
            out[key] = _scalar(rest, reader.loc(pos - 1))
        elif pos < len(lines) and (lines[pos][0] > ind or (
                lines[pos][0] == ind and lines[pos][1].startswith("- "))):
            out[key], pos = _block(reader, pos, lines[pos][0], (*path, key), depth + 1)
        else:
            out[key] = None
    return out, pos


def _sequence(reader: _Reader, pos: int, indent: int, path: Path, depth: int):
    lines = reader.lines
    out: list[Any] = []
    while pos < len(lines):
        ind, content, ln = lines[pos]
        if ind < indent or not (content.startswith("- ") or content == "-"):
            break
        if ind > indent:
            raise ParseError("bad indentation in YAML sequence", reader.loc(pos))
        item = content[1:].strip()
        here = (*path, len(out))
        reader.note(here, pos)
        if not item:
            pos += 1
            if pos == len(lines) or lines[pos][0] <= ind:
                out.append(None)  # ("-" with nothing under it: an empty item)
                continue
            value, pos = _block(reader, pos, lines[pos][0], here, depth + 1)
            out.append(value)
            continue
        if ":" in item and not item.startswith(("'", '"', "[")):
            # "- key: value" opens a mapping whose other keys are indented to the key.
            sub_indent = ind + 2 + (len(content[1:]) - len(content[1:].lstrip()) - 1)
            lines[pos] = (sub_indent, item, ln)
            if depth + 1 > MAX_DEPTH:
                raise ParseError(f"YAML nested more than {MAX_DEPTH} levels deep",
                                 reader.loc(pos))
            value, pos = _mapping(reader, pos, sub_indent, here, depth + 1)
            out.append(value)
            continue
        out.append(_scalar(item, reader.loc(pos)))
        pos += 1
    return out, pos


def _format_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    if text == "" or re.search(r"[:#\[\]{},&*!|>'\"%@`]", text) or text != text.strip():
        return "'" + text.replace("'", "''") + "'"
    return text


def dump(value: Any, indent: int = 0) -> str:
    """Write a mapping in LLVM's metadata layout ('key: value', '  - ' sequences)."""
    lines: list[str] = []
    _emit(value, indent, lines)
    return "\n".join(lines) + "\n"


def _emit(value: Any, indent: int, lines: list[str], first_prefix: str | None = None) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        first = True
        for key, item in value.items():
            prefix = first_prefix if (first and first_prefix is not None) else pad
            first = False
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{prefix}{key}:")
                _emit(item, indent + 2, lines)
            else:
                shown = "[]" if isinstance(item, list) else (
                    "{}" if isinstance(item, dict) else _format_scalar(item))
                lines.append(f"{prefix}{key}:{' ' * max(1, 16 - len(key) - 1)}{shown}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                _emit(item, indent + 2, lines, first_prefix=" " * indent + "- ")
            else:
                lines.append(f"{pad}- {_format_scalar(item)}")
    else:
        lines.append(pad + _format_scalar(value))
