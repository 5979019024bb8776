"""The kernel library verbs: kernels list | run | build."""

from __future__ import annotations

import sys

from asterism.cli.io import write_output


def _case(args):
    """Build the case a `kernels run|build` command line names."""
    from asterism import kernels
    from asterism.kernels.run import parse_params, parse_shape

    gen = kernels.get(args.name)
    params: dict[str, str] = {}
    if args.shape:
        if not gen.shape:
            raise kernels.KernelParamError(f"{gen.name} takes no --shape; use --param")
        params.update(parse_shape(args.shape, gen.shape))
    params.update(parse_params(args.param))
    return gen.build(args.target, params)


def cmd_kernels_list(args) -> int:
    """List the library's kernels, their parameters, defaults and targets."""
    from asterism import kernels
    from asterism.kernels.run import format_list, list_rows

    gens = list(kernels.generators())
    if args.json:
        import json

        write_output(args.output, json.dumps(list_rows(gens), indent=1) + "\n")
    else:
        write_output(args.output, format_list(gens))
    return 0


def cmd_kernels_run(args) -> int:
    """Build, compile and run a library kernel; compare with NumPy and/or time it."""
    from asterism.kernels.run import format_run, run_case, run_report

    case = _case(args)
    sys.stderr.write(f"running {case.name} on {args.backend} ({case.target}, grid "
                     f"{'x'.join(map(str, case.grid))})...\n")
    run = run_case(case, backend=args.backend, check=args.check, timing=args.timing,
                   iterations=args.iterations)
    if args.json:
        import json

        write_output(args.output, json.dumps(run_report(run), indent=1) + "\n")
    else:
        write_output(args.output, format_run(run))
    return 0 if run.passed else 1


def cmd_kernels_build(args) -> int:
    """Build and compile a library kernel to a code object."""
    from asterism.kernels.run import build_code_object

    case = _case(args)
    write_output(args.output, build_code_object(case))
    sys.stderr.write(f"wrote {args.output} (kernel {case.kernel})\n")
    return 0


def _case_arguments(p) -> None:
    p.add_argument("name", help="kernel name (see `asterism kernels list`)")
    p.add_argument("--target", help="gfx942 or gfx950 (default: the kernel's first)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter (repeatable), e.g. --param dtype=bf16 --param tile_m=256")
    p.add_argument("--shape", help="problem size, e.g. 1024x1024x1024 for gemm (M x N x K) or "
                                   "1x2x1024x128 for attention (batch x heads x seq x dim)")


def register(verb) -> None:
    """Add the kernel library verbs to the `asterism` parser."""
    p = verb("kernels", None, "the kernel library: list, run, build (GEMM, flash attention)",
             "Parameterized production kernels written with asterism (asterism.kernels): "
             "list them, run one on the emulator or a GPU against its NumPy reference, or "
             "write its code object.\n\n"
             "  asterism kernels list\n"
             "  asterism kernels run gemm --target gfx950 --check --timing\n"
             "  asterism kernels run flash_attention_fwd --shape 1x2x1024x128 --check\n"
             "  asterism kernels build gemm --param dtype=bf16 -o gemm.hsaco")
    sub = p.add_subparsers(dest="kernels_verb", metavar="ACTION")
    ls = sub.add_parser("list", help="names, parameters, defaults, targets")
    ls.set_defaults(fn=cmd_kernels_list)
    ls.add_argument("--json", action="store_true", help="machine-readable output")
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
    r.add_argument("--iterations", type=int, default=10,
                   help="launches to time with --backend hip (default 10)")
    r.add_argument("--json", action="store_true", help="machine-readable report")
    r.add_argument("-o", "--output", help="report file (default: stdout)")
    b = sub.add_parser("build", help="write the code object")
    b.set_defaults(fn=cmd_kernels_build)
    _case_arguments(b)
    b.add_argument("-o", "--output", required=True, help="code object (.hsaco) to write")
