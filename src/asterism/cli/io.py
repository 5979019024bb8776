"""Inputs and outputs of the verbs: text is read as UTF-8 with located errors
(asterism.textio), outputs are written whole or not at all (temporary file + rename); and
the options several verb groups share."""

from __future__ import annotations

import argparse
import os
import sys

from asterism.errors import AsterismError
from asterism.textio import read_bytes, read_text, write_file_atomic

__all__ = ["default_output", "pipeline_option", "read_bytes", "read_text", "write_output"]


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
    """`path`, or the input's path with its extension replaced by `suffix`: the output goes
    beside the input (k/add.mlir -> k/add.hsaco), what the verbs' --help promises."""
    if path:
        return path
    if input_path == "-":
        raise AsterismError("the input is stdin: name the output file with -o")
    out = os.path.splitext(input_path)[0] + suffix
    if os.path.abspath(out) == os.path.abspath(input_path):
        raise AsterismError(f"{input_path}: the default output {out} is the input itself; "
                            "name the output file with -o")
    return out


def pipeline_option(p: argparse.ArgumentParser, note: str = "") -> None:
    """Add --pipeline (the passes to run on the IR) to a verb's parser."""
    p.add_argument("--pipeline", default="",
                   help="passes to run, e.g. 'inline,regalloc{report=1},waits,hazards' or a "
                        "named pipeline like 'auto' (default: none; what you wrote is what you "
                        "get; `asterism opt --list-passes` lists every pass and its options)"
                        + note)
