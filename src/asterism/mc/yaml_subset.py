"""The YAML subset of `.amdgpu_metadata` blocks: block mappings, block sequences, scalars.

Enough to read what LLVM (and hand-written kernels) put in code object metadata and to write
it back in LLVM's layout; no dependency on a YAML library.
"""

from __future__ import annotations

import re
from typing import Any

from asterism.errors import ParseError, SourceLocation

# Digits of the largest 64-bit integer: metadata values are 64-bit (msgpack) at most, and
# int() of thousands of digits fails (Python's 4300-digit limit).
_MAX_DIGITS = {10: 20, 16: 16}


def _scalar(text: str, loc: SourceLocation | None = None) -> Any:
    t = text.strip()
    if t.startswith(("'", '"')) and t.endswith(t[0]) and len(t) >= 2:
        return t[1:-1]
    if t in ("true", "True"):
        return True
    if t in ("false", "False"):
        return False
    if re.fullmatch(r"[-+]?\d+", t):
        return _integer(t, 10, t.lstrip("+-"), loc)
    if re.fullmatch(r"0x[0-9a-fA-F]+", t):
        return _integer(t, 16, t[2:], loc)
    if re.fullmatch(r"[-+]?\d+\.\d*([eE][-+]?\d+)?", t):
        return float(t)
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        return [_scalar(x, loc) for x in inner.split(",")] if inner else []
    return t


def _integer(text: str, base: int, digits: str, loc: SourceLocation | None) -> int:
    """An integer scalar, its digits counted before converting (64 bits at most)."""
    if len(digits.lstrip("0")) > _MAX_DIGITS[base]:
        short = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
        raise ParseError(f"metadata integer {short} does not fit 64 bits", loc)
    return int(text, base)


def load(text: str, file: str = "<metadata>", first_line: int = 1) -> Any:
    """Parse the YAML subset (a document between optional '---' and '...')."""
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
    value, pos = _block(lines, 0, lines[0][0], file)
    if pos != len(lines):
        ind, content, ln = lines[pos]
        raise ParseError(f"unexpected YAML line '{content}'", SourceLocation(file, ln, ind + 1))
    return value


def _block(lines, pos: int, indent: int, file: str):
    if lines[pos][1].startswith("- ") or lines[pos][1] == "-":
        return _sequence(lines, pos, indent, file)
    return _mapping(lines, pos, indent, file)


def _mapping(lines, pos: int, indent: int, file: str):
    out: dict[str, Any] = {}
    while pos < len(lines):
        ind, content, ln = lines[pos]
        if ind < indent:
            break
        if ind > indent or content.startswith("- "):
            raise ParseError(f"bad indentation in YAML near '{content}'",
                             SourceLocation(file, ln, ind + 1))
        key, sep, rest = content.partition(":")
        if not sep:
            raise ParseError(f"expected 'key: value' in YAML, got '{content}'",
                             SourceLocation(file, ln, ind + 1))
        key = key.strip()
        rest = rest.strip()
        pos += 1
        if rest:
            out[key] = _scalar(rest, SourceLocation(file, ln, ind + 1))
        elif pos < len(lines) and (lines[pos][0] > ind or (
                lines[pos][0] == ind and lines[pos][1].startswith("- "))):
            out[key], pos = _block(lines, pos, lines[pos][0], file)
        else:
            out[key] = None
    return out, pos


def _sequence(lines, pos: int, indent: int, file: str):
    out: list[Any] = []
    while pos < len(lines):
        ind, content, ln = lines[pos]
        if ind < indent or not (content.startswith("- ") or content == "-"):
            break
        if ind > indent:
            raise ParseError("bad indentation in YAML sequence", SourceLocation(file, ln, ind + 1))
        item = content[1:].strip()
        if not item:
            pos += 1
            value, pos = _block(lines, pos, lines[pos][0], file)
            out.append(value)
            continue
        if ":" in item and not item.startswith(("'", '"', "[")):
            # "- key: value" opens a mapping whose other keys are indented to the key.
            sub_indent = ind + 2 + (len(content[1:]) - len(content[1:].lstrip()) - 1)
            lines[pos] = (sub_indent, item, ln)
            value, pos = _mapping(lines, pos, sub_indent, file)
            out.append(value)
            continue
        out.append(_scalar(item, SourceLocation(file, ln, ind + 1)))
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
