"""Inputs and outputs of the verbs: text is read as UTF-8 with located errors
(asterism.textio), outputs are written whole or not at all (temporary file + rename)."""

from __future__ import annotations

import os
import sys

from asterism.textio import read_bytes, read_text, write_file_atomic

__all__ = ["default_output", "read_bytes", "read_text", "write_output"]


def write_output(path: str | None, data: str | bytes) -> None:
    """Write to a file atomically (or to stdout when no path is given)."""
    if path is None or path == "-":
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        return
    write_file_atomic(path, data.encode() if isinstance(data, str) else data)


def default_output(path: str | None, input_path: str, suffix: str) -> str:
    """`path`, or the input's base name with `suffix` in the current directory."""
    return path or os.path.splitext(os.path.basename(input_path))[0] + suffix
