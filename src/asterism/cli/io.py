"""Inputs and outputs of the verbs: text is read as UTF-8 with located errors
(asterism.textio), outputs are written whole or not at all (temporary file + rename); the
emulator's options and progress line for the verbs that run kernels."""

from __future__ import annotations

import os
import sys

from asterism.textio import read_bytes, read_text, write_file_atomic

__all__ = ["add_emulator_options", "default_output", "emulator_progress", "read_bytes",
           "read_text", "write_output"]


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


def add_emulator_options(p) -> None:
    """--max-instructions and --quiet, for the verbs that run kernels on the emulator."""
    p.add_argument("--max-instructions", type=_positive, metavar="N",
                   help="emulator: stop when a wave has executed N instructions, a kernel "
                        "that does not end (default 10000000)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line on stderr during a long emulator run")


def emulator_progress(args):
    """The RunProgress of a verb's launches (silent with --quiet; asterism.support.progress)."""
    from asterism.emu.progress import RunProgress
    from asterism.support.progress import ProgressLine

    return RunProgress(ProgressLine(enabled=not args.quiet))


def _positive(text: str) -> int:
    """An argparse type: a positive integer."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value
