"""Inputs and outputs of the verbs: text is read as UTF-8 with located errors
(asterism.textio), outputs are written whole or not at all (temporary file + rename); the
options several verb groups share, and the emulator's options and progress line for the verbs
that run kernels."""

from __future__ import annotations

import argparse
import os
import sys

from asterism.errors import AsterismError
from asterism.textio import read_bytes, read_text, write_file_atomic

__all__ = ["add_emulator_options", "default_output", "emulator_progress", "pipeline_option",
           "read_bytes", "read_text", "sanitizer_echo", "write_output"]


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


def params_option(p: argparse.ArgumentParser, needs: str = "--timing") -> None:
    """The --params FILE option of a verb that runs the timing model."""
    p.add_argument("--params", metavar="FILE",
                   help=f"timing-model parameters over asterism's timing.toml (a TOML file as "
                        f"`asterism trace calibrate -o FILE` writes it; every value checked "
                        f"against its physical bounds){'; needs ' + needs if needs else ''}")


def timing_off_option(p: argparse.ArgumentParser) -> None:
    """The --timing-off MECH,... option of a verb that runs the timing model."""
    from asterism.timing.params import MECHANISMS

    p.add_argument("--timing-off", metavar="MECH,...", default="",
                   help=f"timing-model mechanisms to leave out, to see what each moves: "
                        f"{', '.join(MECHANISMS)} (comma-separated); needs --timing")


def replay_off_option(p: argparse.ArgumentParser) -> None:
    """The --timing-off MECH,... option of a verb that replays a capture."""
    from asterism.timing.params import REPLAY_MECHANISMS

    p.add_argument("--timing-off", metavar="MECH,...", default="",
                   help=f"timing-model mechanisms to leave out of the replay, to see what "
                        f"each moves: {', '.join(REPLAY_MECHANISMS)} (comma-separated)")


def timing_off(text: str) -> frozenset[str]:
    """The mechanisms a --timing-off value names (checked by TimingOptions)."""
    return frozenset(n.strip() for n in text.split(",") if n.strip())


def timing_params(path: str | None):
    """The checked parameter file of a --params option (None without one)."""
    if not path:
        return None
    from asterism.target.timing import load_params

    return load_params(path)


def add_emulator_options(p) -> None:
    """--max-instructions, --sanitizer and --quiet, for the verbs that run kernels on the
    emulator."""
    p.add_argument("--max-instructions", type=_positive, metavar="N",
                   help="emulator: stop when a wave has executed N instructions, a kernel "
                        "that does not end (default 10000000)")
    p.add_argument("--sanitizer", choices=("error", "warn", "off"),
                   help="emulator: what a missing s_waitcnt or s_nop (or another sanitizer "
                        "violation) does: error stops the run at the first one; warn reports "
                        "each distinct one once on stderr (kind, pc, instruction, rule and its "
                        "source), runs on and sums them up at the end; off checks nothing "
                        "(default: error for code objects asterism made, warn for others', "
                        "e.g. AITER's or LLVM's)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line on stderr during a long emulator run")


def sanitizer_echo():
    """What sees each new warn-mode violation of a verb's run: one line on stderr."""
    def echo(violation) -> None:
        sys.stderr.write(violation.text() + "\n")
        sys.stderr.flush()
    return echo


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
