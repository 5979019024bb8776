"""The kernel library verbs: kernels list | run | compare | build."""

from __future__ import annotations

import argparse
import sys

from asterism.cli.io import (
    add_emulator_options,
    emulator_progress,
    params_option,
    sanitizer_echo,
    timing_off,
    timing_off_option,
    timing_params,
    write_output,
)


def _load_libraries(args) -> None:
    """Register the entries of each --library manifest (kernels/codeobject.py)."""
    from asterism.kernels.codeobject import load_library

    for path in args.library:
        load_library(path)


def _case(args):
    """Build the case a `kernels run|build` command line names."""
    from asterism import kernels
    from asterism.kernels.run import parse_params

    _load_libraries(args)
    gen = kernels.get(args.name)
    params: dict[str, str] = {}
    if args.shape is not None:
        params.update(gen.shape_params(args.shape))
    params.update(parse_params(args.param))
    return gen.build(args.target, params)


def shape_help() -> str:
    """What --shape means for each kernel of the library (for --help)."""
    from asterism import kernels

    lines = ["--shape per kernel (the problem size, in the kernel's own dims):"]
    for g in kernels.generators():
        if g.shape:
            lines.append(f"  {g.name}: {g.shape.describe()}")
    return "\n".join(lines) + "\n"


class _CaseParser(argparse.ArgumentParser):
    """`kernels run|build` parsers: --help ends with each kernel's --shape form (read from
    the library only when help is printed, so parsing stays cheap)."""

    def format_help(self) -> str:
        """The usual help, then the --shape forms."""
        return super().format_help() + "\n" + shape_help()


def cmd_kernels_list(args) -> int:
    """List the library's kernels, their parameters, defaults and targets."""
    from asterism import kernels
    from asterism.kernels.run import format_list, list_rows

    _load_libraries(args)
    gens = list(kernels.generators())
    if args.json:
        import json

        write_output(args.output, json.dumps(list_rows(gens), indent=1) + "\n")
    else:
        write_output(args.output, format_list(gens))
    return 0


def _timing(args):
    """The --timing / --params / --timing-off options as run_case's `timing` (False, True or
    options)."""
    if not args.params and not args.timing_off:
        return args.timing
    if not args.timing:
        from asterism.errors import AsterismError

        which = "--params" if args.params else "--timing-off"
        raise AsterismError(f"{which} needs --timing (it sets up the timing model)")
    from asterism.timing.params import TimingOptions

    return TimingOptions(params=timing_params(args.params), off=timing_off(args.timing_off))


def cmd_kernels_run(args) -> int:
    """Build, compile and run a library kernel; compare with NumPy and/or time it."""
    from asterism.kernels.run import format_run, run_case, run_report

    timing = _timing(args)
    case = _case(args)
    if not args.quiet:
        sys.stderr.write(f"running {case.name} on {args.backend} ({case.target}, grid "
                         f"{'x'.join(map(str, case.grid))})...\n")
    run = run_case(case, backend=args.backend, check=args.check, timing=timing,
                   iterations=args.iterations, max_instructions=args.max_instructions,
                   progress=emulator_progress(args), sanitizer=args.sanitizer,
                   on_violation=sanitizer_echo())
    if args.json:
        import json

        write_output(args.output, json.dumps(run_report(run), indent=1) + "\n")
    else:
        write_output(args.output, format_run(run))
    return 0 if run.passed else 1


def cmd_kernels_compare(args) -> int:
    """Run several library kernels at one target and shape; print one table."""
    from asterism.kernels.compare import (
        compare_kernels,
        compare_report,
        format_compare,
        plan_compare,
    )

    timing = _timing(args)
    target, entries = plan_compare(args.names, args.target, args.shape, args.param)
    log = None if args.quiet else (lambda line: sys.stderr.write(f"compare {line}\n"))
    comparison = compare_kernels(entries, target, args.shape, timing=timing,
                                 max_instructions=args.max_instructions,
                                 progress=lambda: emulator_progress(args), log=log,
                                 sanitizer=args.sanitizer, on_violation=sanitizer_echo())
    if args.json:
        import json

        write_output(args.output, json.dumps(compare_report(comparison), indent=1) + "\n")
    else:
        write_output(args.output, format_compare(comparison))
    return 0 if comparison.ok else 1


def cmd_kernels_build(args) -> int:
    """Build a library kernel and write it by the output's extension (.mlir IR before the
    pipeline, .s assembly, .hsaco/.co code object)."""
    from asterism.kernels.run import build_output

    case = _case(args)
    write_output(args.output, build_output(case, args.output))
    sys.stderr.write(f"wrote {args.output} (kernel {case.kernel})\n")
    return 0


def _library_argument(p) -> None:
    p.add_argument("--library", action="append", default=[], metavar="FILE",
                   help="also load the entries of this kernel library manifest (JSON: code "
                        "objects with their arguments and expected outputs; see "
                        "docs/kernels.md); repeatable")


def _case_arguments(p) -> None:
    p.add_argument("name", help="kernel name (see `asterism kernels list`)")
    _library_argument(p)
    p.add_argument("--target", help="gfx942 or gfx950 (default: the kernel's first)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter (repeatable), e.g. --param dtype=bf16 --param tile_m=256")
    p.add_argument("--shape", metavar="AxBx...",
                   help="the problem size in the kernel's own dims, one size per dim (see "
                        "below or `asterism kernels list`)")


_COMPARE_HELP = """\
Run each named kernel on the emulator at one target and --shape with its NumPy check (and
the timing model with --timing) and print one table, a column per kernel in the order
given: the check (max error vs tolerance), modeled cycles, modeled TFLOPS (whole grid, and
per CU x CUs) vs the data-sheet peak, the modeled stall split (the causes of `asterism trace
report`, as % of the modeled waves' cycles), registers, LDS, occupancy, and the modeled
throughput ratio to the first kernel (> 1: faster than the first).

Name the same kernel again as NAME@ALIAS and give it its own parameters: a plain
--param NAME=VALUE goes to every compared kernel that has NAME, --param LABEL.NAME=VALUE
to that kernel only.

  asterism kernels compare gemm gemm@seq --shape 128x128x64 \\
      --param gemm@seq.interleave=false --timing
  asterism kernels compare flash_attention_fwd flash_attention_fwd@agpr --target gfx950 \\
      --shape 1x1x64x64 --param flash_attention_fwd@agpr.o_regs=agpr --timing --json

Exit code 1 when a kernel fails its check or fails to build or run (its column says so);
a bad kernel name, target, shape or parameter stops before anything runs.
"""


def register(verb) -> None:
    """Add the kernel library verbs to the `asterism` parser."""
    p = verb("kernels", None,
             "the kernel library: list, run, compare, build (GEMM, flash attention)",
             "Parameterized production kernels written with asterism (asterism.kernels), "
             "and others' code objects registered as entries (AMD AITER's flash attention; "
             "your own with --library FILE): list them, run one on the emulator or a GPU "
             "against its NumPy reference, compare several side by side, or write its code "
             "object.\n\n"
             "  asterism kernels list\n"
             "  asterism kernels run gemm --target gfx950 --check --timing\n"
             "  asterism kernels run flash_attention_fwd --shape 1x2x1024x128 --check\n"
             "  asterism kernels run aiter_fmha_fwd --target gfx950 --shape 1x2x512x128 "
             "--check\n"
             "  asterism kernels compare gemm gemm@seq --shape 128x128x64 "
             "--param gemm@seq.interleave=false --timing\n"
             "  asterism kernels build gemm --param dtype=bf16 -o gemm.hsaco")
    sub = p.add_subparsers(dest="kernels_verb", metavar="ACTION", parser_class=_CaseParser)
    ls = sub.add_parser("list", help="names, --shape forms, parameters, defaults, targets")
    ls.set_defaults(fn=cmd_kernels_list)
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    _library_argument(ls)
    ls.add_argument("-o", "--output", help="output file (default: stdout)")
    r = sub.add_parser("run", help="build, compile, run; --check against NumPy, --timing")
    r.set_defaults(fn=cmd_kernels_run)
    _case_arguments(r)
    r.add_argument("--check", action="store_true",
                   help="compare with the NumPy reference (max error and tolerance; exit 1 "
                        "when it fails)")
    r.add_argument("--backend", choices=("auto", "emu", "hip"), default="auto",
                   help="emu (the built-in emulator), hip (a GPU) or auto (hip when a "
                        "matching GPU is present)")
    r.add_argument("--timing", action="store_true",
                   help="the timing model's cycles and modeled TFLOPS vs the target's peak "
                        "(emulator; modeled, not measured)")
    params_option(r)
    timing_off_option(r)
    r.add_argument("--iterations", type=int, default=10,
                   help="launches to time with --backend hip (default 10)")
    r.add_argument("--json", action="store_true", help="machine-readable report")
    r.add_argument("-o", "--output", help="report file (default: stdout)")
    add_emulator_options(r)
    c = sub.add_parser(
        "compare", help="several kernels side by side: check, modeled speed, stalls, "
                        "registers, occupancy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_COMPARE_HELP)
    c.set_defaults(fn=cmd_kernels_compare)
    c.add_argument("names", nargs="+", metavar="KERNEL",
                   help="two or more kernels: NAME, or NAME@ALIAS to compare NAME again "
                        "under other parameters (ALIAS: letters, digits, _ and -)")
    c.add_argument("--target", help="gfx942 or gfx950, which every kernel must support "
                                    "(default: the first kernel's first target)")
    c.add_argument("--shape", metavar="AxBx...",
                   help="the problem size, in each kernel's own dims (they must share one "
                        "form, e.g. MxNxK; see below)")
    c.add_argument("--param", action="append", default=[], metavar="[LABEL.]NAME=VALUE",
                   help="a parameter (repeatable): NAME=VALUE for every compared kernel that "
                        "has it, LABEL.NAME=VALUE for one (LABEL as named, e.g. gemm@seq)")
    c.add_argument("--timing", action="store_true",
                   help="the timing model: modeled cycles, TFLOPS, stall split and ratio "
                        "(without it: check, registers, LDS and occupancy only)")
    params_option(c)
    timing_off_option(c)
    c.add_argument("--json", action="store_true", help="machine-readable report")
    c.add_argument("-o", "--output", help="report file (default: stdout)")
    add_emulator_options(c)
    b = sub.add_parser("build", help="write the kernel's IR (.mlir), assembly (.s) or code "
                                     "object (.hsaco, .co), by the output's extension")
    b.set_defaults(fn=cmd_kernels_build)
    _case_arguments(b)
    b.add_argument("-o", "--output", required=True,
                   help="file to write: .mlir (the IR before the pipeline), .s (assembly), "
                        ".hsaco or .co (code object)")
