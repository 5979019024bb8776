"""The `asterism` command's parser and dispatch.

The verbs live in one module per verb group (`VERB_GROUPS`); each has a
`register(verb)` function that adds its verbs with `verb(name, fn, help, description)`.
A group module imports only argparse-level things at the top and the library inside its
command functions, so `asterism --help` and every verb load only what that verb needs.

Errors in the input are reported as `file:line:col: error: message` with exit code 1 (no
traceback, no partial output file).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from asterism.errors import AsterismError

EPILOG = """\
examples:
  asterism translate examples/demo/add_10.mlir -o add_10.s     IR -> assembly
  asterism compile examples/demo/add_10.mlir -o add_10.hsaco   IR -> code object (no LLVM)
  asterism asm kernel.s -o kernel.hsaco                         assembly -> code object
  asterism disasm kernel.hsaco                                  like llvm-objdump -d
  asterism raise kernel.hsaco -o kernel.mlir                    code object -> editable IR
  asterism isa v_mfma_f32_16x16x16_f16                          what the ISA database knows
  asterism opt kernel.mlir --pipeline ""                        run passes, print IR
  asterism kernels run gemm --target gfx950 --check --timing   a library kernel vs NumPy
  asterism trace replay CAPTURE                                 timing model vs a capture

Run `asterism VERB --help` for the options of a verb.
"""

# The verb groups and their verbs, in the order `asterism --help` lists them. A new group is
# a module `asterism/cli/NAME.py` with a `register(verb)` function plus its line here. (The
# verb names let `asterism VERB` build the parser of VERB's group only: argparse spends
# ~0.1 ms per option, and the whole command has ~80.)
VERB_GROUPS: dict[str, tuple[str, ...]] = {
    "ir": ("translate", "compile", "opt", "hazards"),
    "mc": ("asm", "disasm", "isa"),
    "raise_": ("raise",),
    "run": ("run",),
    "stats": ("stats",),
    "trace": ("profile", "trace"),
    "kernels": ("kernels",),
    "sweep": ("sweep",),
}

# verb(name, fn, help, description=None) -> the verb's ArgumentParser
VerbAdder = Callable[..., argparse.ArgumentParser]


def _formatter_class() -> Callable[..., argparse.HelpFormatter]:
    """RawDescriptionHelpFormatter with the terminal width read once: argparse makes a
    formatter for every add_argument, and each asks the terminal (~0.2 ms, ~80 times)."""
    import functools

    width = terminal_columns() - 2  # (what HelpFormatter computes itself)
    return functools.partial(argparse.RawDescriptionHelpFormatter, width=width)


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns without importing shutil (~4 ms of every start:
    it imports the compression modules): $COLUMNS, else the terminal's, else 80."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def groups_of(argv: list[str]) -> tuple[str, ...]:
    """The verb groups a command line needs: the group of its verb, or all of them (help,
    --version, an unknown verb: argparse then lists every verb)."""
    for group, verbs in VERB_GROUPS.items():
        if argv and argv[0] in verbs:
            return (group,)
    return tuple(VERB_GROUPS)


def build_parser(groups: tuple[str, ...] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the `asterism` command (with the verbs of `groups`; all by
    default)."""
    formatter = _formatter_class()
    parser = argparse.ArgumentParser(
        prog="asterism",
        description="AMD GPU assembly with the rigor of a compiler and the control of "
                    "hand-written code (gfx942, gfx950).",
        epilog=EPILOG, formatter_class=formatter)
    from asterism.version import __version__

    parser.add_argument("--version", action="version", version=f"asterism {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")

    def verb(name: str, fn: Callable | None, help_: str, desc: str | None = None):
        p = sub.add_parser(name, help=help_, description=desc or help_,
                           formatter_class=formatter)
        p.set_defaults(fn=fn, _parser=p)
        return p

    for group in VERB_GROUPS if groups is None else groups:
        importlib.import_module(f"asterism.cli.{group}").register(verb)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `asterism` command."""
    argv_given = argv
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(groups_of(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "fn", None):
        getattr(args, "_parser", parser).print_help()
        return 1
    # (the `asterism` process itself, not a caller's main([...]): a verb may then keep its
    # large input out of the collector's scans until exit, see support.gcpause)
    args.whole_process = argv_given is None
    try:
        return args.fn(args)
    except AsterismError as err:
        loc = f"{err.location}: " if err.location else ""
        sys.stderr.write(f"{loc}error: {err.message}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
