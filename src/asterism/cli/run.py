"""The run verb: compile if needed, launch a kernel on the emulator or a GPU, print the
arrays it writes (and, with --timing, the emulator's timing model)."""

from __future__ import annotations

from asterism.cli.io import add_emulator_options, emulator_progress, sanitizer_echo
from asterism.errors import AsterismError


def _dims(text: str, what: str) -> tuple[int, ...]:
    """The 1 to 3 positive sizes of a --grid/--block value ("4", "4,2,1" or "4x2")."""
    try:
        dims = tuple(int(x) for x in text.replace("x", ",").split(",") if x)
    except ValueError:
        raise AsterismError(f"bad {what} '{text}': expected e.g. 4 or 4,2,1") from None
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise AsterismError(f"bad {what} '{text}': 1 to 3 positive integers")
    return dims


def _source(args):
    """What to load: the input path, or with --pipeline its IR after those passes."""
    if not args.pipeline:
        return args.input
    if not args.input.endswith(".mlir"):
        raise AsterismError(f"--pipeline runs passes on IR: {args.input} is not a .mlir file")
    from asterism import api

    return api.lower(args.input, args.pipeline)


def _save_paths(folder: str, values: dict, input_path: str) -> dict[str, str]:
    """SAVE_DIR/NAME.npy of every array argument, checked before the launch: the names come
    from the kernel's metadata, and one that is not a plain file name is an error."""
    import numpy as np

    from asterism.errors import shown
    from asterism.paths import safe_child_path

    paths = {}
    for name, value in values.items():
        if isinstance(value, np.ndarray):
            if not isinstance(name, str):
                raise AsterismError(f"--save-dir: an array argument of {input_path} has no "
                                    "name in the kernel's metadata")
            paths[name] = safe_child_path(
                folder, f"{name}.npy", f"--save-dir: kernel argument {shown(name)} of "
                f"{input_path}: its file name", hint="leave out --save-dir (--json prints "
                "the arrays whole)")
    return paths


def cmd_run(args) -> int:
    """Compile (if needed) and launch a kernel; print and save its outputs."""
    import json
    import os

    import numpy as np

    from asterism.api import load_code_object
    from asterism.paths import safe_child_path
    from asterism.runtime import launch
    from asterism.runtime.argspec import make_arg
    from asterism.runtime.kernargs import describe_signature, explicit_args

    source = _source(args)
    if args.timing:
        from asterism.api import load_with_source_map

        obj, data, smap = load_with_source_map(source)
    else:
        obj, data = load_code_object(source)
    names = [k.name for k in obj.kernels]
    kernel = args.kernel or (names[0] if len(names) == 1 else None)
    if kernel is None:
        raise AsterismError(f"{args.input} has several kernels ({', '.join(names)}): "
                            "choose one with --kernel")
    entry = next((k for k in obj.kernels if k.name == kernel), None)
    if entry is None:
        raise AsterismError(f"no kernel '{kernel}' in {args.input} (kernels: {', '.join(names)})")
    params = explicit_args(entry.metadata or {})
    by_name = {p.get(".name"): p for p in params}
    values: dict[str, object] = {}
    positional = [a for a in args.arg if "=" not in a]
    for k, spec in enumerate(positional):
        if k >= len(params):
            raise AsterismError(f"too many --arg values: {kernel} takes "
                                f"{describe_signature(entry.metadata or {})}")
        values[params[k].get(".name")] = make_arg(spec, params[k], args.seed + k)
    for k, item in enumerate(a for a in args.arg if "=" in a):
        name, _, spec = item.partition("=")
        if name not in by_name:
            raise AsterismError(f"{kernel} has no argument '{name}'; it takes "
                                f"{describe_signature(entry.metadata or {})}")
        values[name] = make_arg(spec, by_name[name], args.seed + 100 + k)
    reqd = (entry.metadata or {}).get(".reqd_workgroup_size")
    block = _dims(args.block, "--block") if args.block else tuple(reqd or (64,))
    grid = _dims(args.grid, "--grid")
    timing = trace_dir = None
    if args.timing:
        from asterism.cli.io import timing_off, timing_params
        from asterism.timing.params import TimingOptions, parse_latencies

        latency: dict[str, int] = {}
        for spec in args.latency:
            latency.update(parse_latencies(spec))
        timing = TimingOptions(cus=args.timing_cus, latency=latency,
                               params=timing_params(args.params),
                               off=timing_off(args.timing_off))
        trace_dir = args.trace_dir or safe_child_path(
            "asterism-timing", kernel, "kernel name", hint="name the trace folder with "
            "--trace-dir")
        if args.backend == "hip":
            raise AsterismError("--timing runs the emulator's timing model: use --backend emu "
                                "(or auto)")
        os.makedirs(os.path.dirname(os.path.abspath(trace_dir)), exist_ok=True)
    elif args.trace_dir or args.latency or args.timing_cus != 1 or args.params \
            or args.timing_off:
        raise AsterismError("--trace-dir, --latency, --params, --timing-off and --timing-cus "
                            "need --timing")
    saved = _save_paths(args.save_dir, values, args.input) if args.save_dir else {}
    result = launch((obj), kernel, grid=grid, block=block, args=values,
                    backend="emu" if timing else args.backend, iterations=args.iterations,
                    timing=timing or False, trace_dir=trace_dir,
                    source_map=smap if timing else None,
                    max_instructions=args.max_instructions,
                    progress=emulator_progress(args), sanitizer=args.sanitizer,
                    on_violation=sanitizer_echo())
    report = getattr(result.stats, "sanitizer", None)
    arrays = {n: v for n, v in values.items() if isinstance(v, np.ndarray)}
    if args.save_dir:
        os.makedirs(args.save_dir, exist_ok=True)
        for n in result.outputs:
            np.save(saved[n], arrays[n])
    if args.json:
        out = {"kernel": kernel, "backend": result.backend, "device": result.device,
               "times": result.times, "grid": grid, "block": block,
               "outputs": {n: arrays[n].tolist() for n in result.outputs}}
        if result.timing is not None:
            out["timing"] = {**result.timing.to_json(), "trace_dir": str(result.trace_dir)}
        if report is not None:
            out["sanitizer"] = report.to_json()
        print(json.dumps(out))
        return 0
    wall = " ".join(f"{t * 1e3:.3f}" for t in result.times)
    print(f"ran {kernel} on {result.device}: grid {grid} x block {block}, "
          f"{len(result.times)} launch(es), wall time per launch (ms): {wall}")
    if result.stats is not None:
        s = result.stats
        print(f"  {s.waves} waves, {s.wave_instructions} wave-instructions "
              f"({s.wave_instructions_per_second:,.0f}/s on the emulator; not a GPU timing)")
    if report is not None:
        print("  " + report.summary(), end="")
    if result.timing is not None:
        print(result.timing.summary(), end="")
        from asterism.timing.result import MODEL_NOTE

        print(f"  trace ({MODEL_NOTE}): {result.trace_dir}  (read it with "
              f"`asterism trace report {result.trace_dir}` or `asterism trace plot "
              f"{result.trace_dir} -o timeline.png`)")
    with np.printoptions(threshold=16, edgeitems=8, linewidth=100):
        for n in result.outputs:
            arr = arrays[n]
            print(f"{n} ({arr.dtype}, shape {arr.shape}): {arr}")
            if args.save_dir:
                print(f"  saved to {saved[n]}")
    return 0


RUN_EPILOG = """\
argument specs (--arg [NAME=]SPEC, positional in argument order or by name):
  zeros:256[:i32]  ones:64x4:f32  arange:256:i32  rand:1024:f16  full:16:f32:1.5
  input.npy        a NumPy file
  42, 0x10, 1.5    a by-value scalar
The dtype defaults to the argument's type in the kernel metadata (else float32).

examples:
  asterism run examples/demo/add_10.mlir --grid 4 --arg out=zeros:256:i32
  asterism run k.hsaco --kernel gemm --grid 2,2 --block 256 --arg a.npy b.npy zeros:4096:f32
  asterism run k.mlir --grid 2432 --timing --trace-dir /tmp/k.att --latency hbm=700

On the emulator a long run shows its progress on stderr after 2 s (workgroups done, wave-
instructions, ETA; --quiet silences it); a wave that executes more than --max-instructions
(default 10 million) stops the run: the kernel did not end.

--timing runs the emulator's timing model (modeled, not measured): the waves of the first
--timing-cus CUs (workgroups go to the device's CUs round-robin) are modeled cycle by cycle,
the rest run functionally; it prints modeled cycles per wave and writes an ATT trace folder
(default asterism-timing/KERNEL) for `asterism trace report|plot`. --params FILE replaces
timing parameters with a file's (as `asterism trace calibrate -o FILE` writes; each value
within its bounds in asterism/target/data/timing.toml); --latency overrides memory latencies
in cycles: lds, smem, l2_hit, hbm (a what-if, not bounded).
"""


def register(verb) -> None:
    """Add the run verb to the `asterism` parser."""
    from asterism.cli.io import params_option, pipeline_option, timing_off_option

    p = verb("run", cmd_run, "compile if needed and run a kernel (emulator or GPU)",
             "Launch a kernel from a .mlir, .s or .hsaco file with NumPy arguments; prints "
             "(and optionally saves) the arrays it writes.")
    p.epilog = RUN_EPILOG
    p.add_argument("input", help="kernel file: .mlir, .s or .hsaco")
    p.add_argument("--kernel", help="kernel name (default: the only kernel)")
    pipeline_option(p, "; .mlir input only")
    p.add_argument("--grid", default="1", help="workgroups, e.g. 304 or 8,8,1 (default 1)")
    p.add_argument("--block", help="work-items per workgroup (default: the kernel's "
                                   "required size, else 64)")
    p.add_argument("--arg", action="append", default=[], metavar="[NAME=]SPEC",
                   help="an argument (see below); repeat in order or name them")
    p.add_argument("--backend", default="auto", choices=("auto", "emu", "hip"),
                   help="auto = a matching GPU through HIP if present, else the emulator")
    p.add_argument("--iterations", type=int, default=1, help="launches (default 1)")
    p.add_argument("--save-dir", help="save output arrays there as NAME.npy (NAME from the "
                                      "kernel's metadata: one that is not a plain file name, "
                                      "e.g. with '/' or '..', is an error)")
    p.add_argument("--seed", type=int, default=0, help="seed for rand: arguments")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--timing", action="store_true",
                   help="run the emulator's timing model (modeled cycles + ATT trace)")
    p.add_argument("--trace-dir", metavar="DIR",
                   help="where --timing writes the trace (default asterism-timing/KERNEL)")
    p.add_argument("--timing-cus", type=int, default=1, metavar="N",
                   help="CUs modeled in detail (default 1; the others run functionally)")
    p.add_argument("--latency", action="append", default=[], metavar="NAME=CYCLES,...",
                   help="memory latency overrides for --timing: lds, smem, l2_hit, hbm")
    params_option(p)
    timing_off_option(p)
    add_emulator_options(p)

