"""The sweep verb: tune a library kernel's parameters on a local process pool or on Ray."""

from __future__ import annotations

import sys

from asterism.cli.io import params_option, write_output


def _space(args, gen) -> dict:
    """The checked space of the command line: --shape values, then every --param."""
    from asterism import kernels
    from asterism.kernels.run import parse_shape
    from asterism.sweep.points import SweepError, parse_space

    pairs = list(args.param)
    if args.shape:
        if not gen.shape:
            raise SweepError(f"{gen.name} takes no --shape; use --param")
        shape = parse_shape(args.shape, gen.shape, gen.name)
        swept = {p.partition("=")[0].strip() for p in pairs}
        for name, value in shape.items():
            if name in swept:
                raise kernels.KernelParamError(f"{name} is set by both --shape and --param")
            pairs.append(f"{name}={value}")
    return parse_space(gen, pairs)


def _check_outputs(args) -> None:
    """Fail before any work when -o or --plot cannot be written (a sweep can take hours)."""
    import os

    from asterism.sweep.points import SweepError

    for option, path in (("-o", args.output), ("--plot", args.plot)):
        if path and path != "-":
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise SweepError(f"{option} {path}: no such folder {folder}")
    if args.plot:
        from asterism.sweep.plot import require_matplotlib

        require_matplotlib()


def cmd_sweep(args) -> int:
    """Run the sweep, print the ranked table (or JSON), write -o and --plot."""
    import json

    from asterism.sweep.api import resolve_generator, sweep

    gen = resolve_generator(args.name)
    space = _space(args, gen)
    _check_outputs(args)
    if args.no_cache:
        cache = False
    else:
        cache = args.cache if args.cache else True
    result = sweep(gen, space, target=args.target, sample=args.sample, seed=args.seed,
                   check=args.check, metric=args.metric, backend=args.backend,
                   workers=args.workers, engine=args.engine, address=args.address,
                   cache=cache, iterations=args.iterations, rank_by=args.rank_by,
                   progress=not args.quiet, params=args.params)
    report = json.dumps(result.to_json(), indent=1, default=repr) + "\n"
    if args.plot and result.ok:
        result.plot(args.plot)
    if args.output:
        write_output(args.output, report)
    write_output(None, report if args.json else result.table(args.top))
    if args.plot and not result.ok:
        sys.stderr.write("no point succeeded: no plot written\n")
    if not result.ok:
        sys.stderr.write(f"error: every point of the sweep failed ({len(result.failed)})\n")
        return 1
    return 0


def register(verb) -> None:
    """Add the sweep verb to the `asterism` parser."""
    p = verb("sweep", cmd_sweep, "sweep a library kernel's parameters (local pool or Ray)",
             "Build, compile, optionally check and measure every point of a parameter space "
             "of a library kernel, in parallel on a local process pool (default: one worker "
             "per core) or on Ray (`pip install 'asterism[cluster]'`). Prints the points "
             "ranked best first; a point that fails to build, compile, run or check is "
             "listed with its error. Finished points are cached, so a re-run or an "
             "interrupted sweep resumes.\n\n"
             "  asterism sweep gemm --param tile_m=64,128 --param tile_n=64,128 --workers 2\n"
             "  asterism sweep gemm --param tile_m=64,128 --param tile_n=64,128 --engine ray\n"
             "  asterism sweep gemm --shape 512x512x256 --param tile_k=16,32,64 \\\n"
             "      --param interleave=true,false --check -o results.json --plot sweep.png")
    p.add_argument("name", help="kernel name (see `asterism kernels list`)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="a parameter and its values (repeatable); one value fixes it")
    p.add_argument("--shape", help="problem size, e.g. 512x512x256 for gemm (fixed)")
    p.add_argument("--target", help="gfx942 or gfx950 (default: the kernel's first)")
    p.add_argument("--sample", type=int, metavar="N",
                   help="run N random points of the product instead of all (see --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument("--check", action="store_true",
                   help="compare every point with its NumPy reference (a mismatch fails the "
                        "point)")
    p.add_argument("--metric", choices=("modeled", "measured"), default="modeled",
                   help="modeled: timing-model cycles and modeled TFLOPS (emulator; "
                        "default); measured: time per launch and TFLOPS on a GPU (hip)")
    params_option(p, needs="--metric modeled")
    p.add_argument("--backend", choices=("emu", "hip"),
                   help="emu or hip (default: emu for modeled, hip for measured)")
    p.add_argument("--iterations", type=int, default=10,
                   help="launches timed per point with --metric measured (default 10)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="local worker processes, or the CPUs of a local Ray (default: one "
                        "per core; with hip: one per visible GPU)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local process pool (default) or Ray")
    p.add_argument("--address", help="Ray cluster to connect to (default: start a local Ray)")
    p.add_argument("--cache", metavar="DIR",
                   help="result cache folder (default: $ASTERISM_CACHE_DIR or "
                        "~/.cache/asterism/sweep)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--rank-by", choices=("tflops", "per_cu", "time"), default="tflops",
                   help="tflops: of this launch (default); per_cu: the modeled per-CU rate "
                        "times the CU count (a grid filling every CU); time: per launch")
    p.add_argument("--top", type=int, metavar="N", help="show only the N best points")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of "
                   "the table")
    p.add_argument("-o", "--output", help="write the JSON report (every point) to this file")
    p.add_argument("--plot", metavar="PNG", help="draw the metric against the parameters")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
