"""The user's source line for the builder's ops and errors: the first stack frame outside
the builder package (every module of `asterism/builder/` is skipped, so a helper calling
another helper still reports the line of the user's script)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

from asterism.errors import SourceLocation

_BUILDER_DIR = str(Path(__file__).resolve().parent)
# (the checks of `with kb.group(...)` run inside contextlib's __exit__)
_SKIP_FILES = (_BUILDER_DIR, contextlib.__file__)
_LOCATIONS: dict[tuple[str, int], FileLineColLoc] = {}


def caller_location() -> FileLineColLoc | None:
    """The first stack frame outside the builder package (the user's line)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_BUILDER_DIR):
        frame = frame.f_back
    if frame is None:
        return None
    key = (frame.f_code.co_filename, frame.f_lineno)
    loc = _LOCATIONS.get(key)
    if loc is None:
        # (one attribute per source line: a loop emits from the same lines many times)
        loc = FileLineColLoc(StringAttr(key[0]), IntAttr(key[1]), IntAttr(1))
        if len(_LOCATIONS) < 1 << 16:
            _LOCATIONS[key] = loc
    return loc


def source_location(loc: FileLineColLoc | None) -> SourceLocation | None:
    """The error location of an op location (None stays None)."""
    if loc is None:
        return None
    return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)


def user_line() -> SourceLocation | None:
    """The user's line for an error of a check: the first frame outside the builder package
    and contextlib."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_FILES):
        frame = frame.f_back
    if frame is None:
        return None
    return SourceLocation(frame.f_code.co_filename, frame.f_lineno, 1)


__all__ = ["caller_location", "source_location", "user_line"]
