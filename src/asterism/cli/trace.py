"""Thread-trace verbs: profile (capture on a real GPU) and trace report|plot (analysis),
replay|calibrate (the timing model against a capture)."""

from __future__ import annotations

import argparse
import sys

from asterism.cli.io import params_option, replay_off_option, write_output

CALIBRATE_HELP = """\
Replay the captures with candidate values of the timing model's fittable parameters (those
asterism/target/data/timing.toml marks "fittable": latencies and rates with no authoritative
figure), each only within its physical bounds there; sourced and measured parameters never
change. The objective is the model's error: per capture, the mean of |total cycles error|
and the mean |per-wave error|, averaged over the captures. Prints the fitted values and the
errors before and after; -o FILE writes them as a parameter file that --params FILE reads
(asterism run --timing, kernels run|compare --timing, sweep, trace replay), its header naming
the captures and the errors.

Figures on the captures a fit saw are fitted (in-sample), not predictions.
--leave-one-out also fits on every capture but one and predicts the held-out one, for each:
the table shows, per capture, the default values' errors (predicted), the fit on all
(fitted) and the leave-one-out error (predicted). Progress on stderr.

A few captures under-determine several parameters: a fit to one capture pins the ones it
barely sees at a bound. --prior W makes it a regularized (MAP) fit: it minimizes the
objective + W x sum over the fitted parameters of ((value - starting value) / bound range)^2,
so a parameter leaves its sourced value only as far as the error it removes pays for (W
points of objective for a move across its whole range). --sensitivity prints, instead of a
fit, each parameter alone at its lowest and highest bound and each capture's error there:
what the captures can identify.

  asterism trace calibrate tests/data/shared/att/* -o fit.toml
  asterism trace replay tests/data/shared/att/flash_attn_func_small --params fit.toml
  asterism trace calibrate tests/data/shared/att/* --leave-one-out --json
  asterism trace calibrate tests/data/shared/att/* --leave-one-out --prior 4
  asterism trace calibrate tests/data/shared/att/* --sensitivity
"""


def cmd_trace_report(args) -> int:
    """Analyze an ATT trace folder (real capture or modeled run)."""
    from asterism.profile import trace_report

    write_output(args.output, trace_report(args.dir, top=args.top, as_json=args.json,
                                           source_map=args.source_map, rank=args.rank))
    return 0


def cmd_trace_plot(args) -> int:
    """Draw the wave timeline and stall breakdown of a trace."""
    from asterism.profile.att import read_att
    from asterism.profile.plot import plot_trace
    from asterism.support.gcpause import keep_until_exit, pause_cyclic_gc, resume_cyclic_gc

    # (paused until frozen: the first allocation after resuming would scan the capture once)
    was_enabled = pause_cyclic_gc()
    try:
        trace = read_att(args.dir)
        if getattr(args, "whole_process", False):
            keep_until_exit()  # (the capture lives until the process ends)
    finally:
        resume_cyclic_gc(was_enabled)
    plot_trace(trace, args.output)
    sys.stderr.write(f"wrote {args.output}\n")
    return 0


def cmd_trace_bundle(args) -> int:
    """Write a self-contained profiling bundle (report, pictures, capture, counters, source)."""
    from asterism.profile.bundle import BundleError, BundleRequest, build_bundle

    if args.top < 0:
        raise BundleError(f"--top must be 0 or more, got {args.top}")
    if args.what_if_records < 1:
        raise BundleError(f"--what-if-records must be 1 or more, got {args.what_if_records}")
    for opt in ("flops", "bytes", "peak_gbps"):
        value = getattr(args, opt)
        if value is not None and not 0 < value < float("inf"):
            raise BundleError(f"--{opt.replace('_', '-')} must be a positive number, "
                              f"got {value}")
    from asterism.support.gcpause import keep_until_exit, pause_cyclic_gc, resume_cyclic_gc

    # The collector paused until the capture is read and, in the `asterism` process itself,
    # frozen out of its scans (it lives until the process ends; see support.gcpause).
    paused = [pause_cyclic_gc()]

    def after_read(_trace) -> None:
        if getattr(args, "whole_process", False):
            keep_until_exit()
        resume_cyclic_gc(paused.pop())

    try:
        out = build_bundle(BundleRequest(args.capture, args.output, args.counters, args.source,
                                         args.kernel_file, args.baseline, args.title, args.top,
                                         args.source_dir, not args.no_what_if,
                                         args.what_if_records, args.target, args.flops,
                                         args.bytes, args.peak_gbps),
                           note=lambda message: sys.stderr.write(f"note: {message}\n"),
                           progress=lambda message: sys.stderr.write(f"bundle: {message}\n"),
                           after_read=after_read)
    finally:
        if paused:  # (the capture was not read: an error before)
            resume_cyclic_gc(paused.pop())
    sys.stderr.write(f"wrote {out}/REPORT.md\n")
    return 0


def cmd_trace_dashboard(args) -> int:
    """One page across bundles: kernel, bound, headroom, top candidate."""
    from asterism.profile.dashboard import build_dashboard

    out = build_dashboard(args.bundles, args.output)
    sys.stderr.write(f"wrote {out}/index.html and {out}/dashboard.md\n")
    return 0


def cmd_profile(args) -> int:
    """Capture a thread trace on a real GPU with rocprofv3, then report on it."""
    from asterism.profile import trace_report
    from asterism.profile.rocprof import ProfileRequest, profile

    req = ProfileRequest(args.input, args.kernel, args.grid, args.block, args.arg,
                         args.iterations, args.capture, args.output_dir, args.target_cu)
    captures = profile(req)
    sys.stderr.write(f"captured {len(captures)} ATT folder(s); reporting on {captures[-1]}\n")
    write_output(args.output, trace_report(captures[-1], top=args.top, as_json=args.json))
    return 0


def cmd_trace_replay(args) -> int:
    """Replay a capture's instruction streams through the timing model; compare."""
    import json

    from asterism.cli.io import timing_off, timing_params
    from asterism.profile.replay import plot_replay, replay

    result = replay(args.dir, target=args.target, memory=args.memory,
                    params=timing_params(args.params), barrier_groups=args.barrier_groups,
                    off=timing_off(args.timing_off))
    if args.plot:
        plot_replay(result, args.plot, waves=args.plot_waves)
        sys.stderr.write(f"wrote {args.plot}\n")
    text = json.dumps(result.to_json(), indent=1) + "\n" if args.json else result.summary()
    write_output(args.output, text)
    return 0


def cmd_trace_calibrate(args) -> int:
    """Fit the timing model's fittable parameters to captures (within their bounds); write
    them as a parameter file for --params; --leave-one-out: predict each capture from a fit
    to the others."""
    import json

    from asterism.cli.io import timing_off, timing_params
    from asterism.profile.calibrate import calibrate, leave_one_out, sensitivity_of
    from asterism.profile.replay import ReplayError

    def progress(message: str) -> None:
        sys.stderr.write(f"calibrate: {message}\n")
        sys.stderr.flush()

    params = timing_params(args.params)
    off = timing_off(args.timing_off)
    names = [n.strip() for n in args.fit.split(",") if n.strip()] if args.fit else None
    if not args.prior >= 0:
        raise ReplayError(f"--prior must be 0 or more, got {args.prior}")
    if args.sensitivity:
        if args.leave_one_out or args.output or args.json:
            raise ReplayError("--sensitivity fits nothing: it takes no --leave-one-out, "
                              "--json or -o")
        sys.stdout.write(sensitivity_of(args.dirs, target=args.target, memory=args.memory,
                                        params=params, names=names, off=off))
        return 0
    if args.leave_one_out:
        loo = leave_one_out(args.dirs, target=args.target, rounds=args.rounds,
                            memory=args.memory, params=params, progress=progress,
                            names=names, prior=args.prior, off=off)
        fit = loo.fitted
        text = json.dumps(loo.to_json(), indent=1) + "\n" if args.json else loo.summary()
    else:
        fit = calibrate(args.dirs, target=args.target, rounds=args.rounds, memory=args.memory,
                        params=params, progress=progress, names=names, prior=args.prior,
                        off=off)
        text = json.dumps(fit.to_json(), indent=1) + "\n" if args.json else fit.summary()
    if args.output:
        write_output(args.output, fit.to_toml())
        sys.stderr.write(f"wrote {args.output} (read it with --params {args.output})\n")
    sys.stdout.write(text)
    return 0


def register(verb) -> None:
    """Add the thread-trace verbs to the `asterism` parser."""
    p = verb("profile", cmd_profile, "thread-trace a kernel on a real GPU (rocprofv3 --att)",
             "Run a kernel under rocprofv3 with ATT thread tracing, capturing one launch "
             "(the 3rd of 5 by default, after the instruction cache is warm), then print the "
             "trace report. Needs ROCm's rocprofv3 and a matching GPU.")
    p.add_argument("input", help="kernel file: .mlir, .s or .hsaco")
    p.add_argument("--kernel", required=True, help="kernel name to trace")
    p.add_argument("--grid", default="1", help="workgroups (as for `asterism run`)")
    p.add_argument("--block", help="work-items per workgroup")
    p.add_argument("--arg", action="append", default=[], metavar="[NAME=]SPEC",
                   help="arguments as for `asterism run`")
    p.add_argument("--iterations", type=int, default=5, help="launches (default 5)")
    p.add_argument("--capture", type=int, default=3, help="which launch to trace (default 3)")
    p.add_argument("-d", "--output-dir", default="asterism-profile",
                   help="where rocprofv3 writes (default ./asterism-profile)")
    p.add_argument("--target-cu", type=int, help="CU to trace in detail (rocprofv3 default)")
    p.add_argument("--top", type=int, default=10, help="hotspots in the report")
    p.add_argument("--json", action="store_true", help="JSON report")
    p.add_argument("-o", "--output", help="report file (default: stdout)")

    p = verb("trace", None, "thread-trace (ATT) analysis: report, plot, bundle, replay, "
             "calibrate",
             "Read a folder in rocprofv3's ATT decoder layout (a real capture or a modeled "
             "emulator run) and report or draw it.")
    tsub = p.add_subparsers(dest="trace_verb", metavar="ACTION")
    r = tsub.add_parser("report", help="hotspots, wave states, stall causes (markdown/JSON)")
    r.set_defaults(fn=cmd_trace_report)
    r.add_argument("dir", help="ATT folder (ui_output_agent_* or a modeled run)")
    r.add_argument("--top", type=int, default=10, help="hotspot instructions to list")
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.add_argument("--source-map", help="JSON map of address -> source location")
    r.add_argument("--rank", choices=("stall", "cycles"), default="stall",
                   help="order hotspots by stall cycles (default: what can be recovered) or by "
                        "total cycles")
    r.add_argument("-o", "--output", help="output file (default: stdout)")
    pl = tsub.add_parser("plot", help="wave timeline + stall breakdown picture (PNG)")
    pl.set_defaults(fn=cmd_trace_plot)
    pl.add_argument("dir", help="ATT folder")
    pl.add_argument("-o", "--output", required=True, help="PNG file to write")
    rp = tsub.add_parser(
        "replay", help="replay a capture through the timing model, compare with measured",
        description="Feed each traced wave's executed instruction stream (in the order it "
        "ran, on its SIMD and slot, from its measured start) through the timing model and "
        "compare modeled with measured: total and per-wave cycles, cycles and stall per "
        "instruction category, the stall split (vmcnt, lgkmcnt, MFMA/VALU, barrier) and the "
        "overlap of the top-10 hotspots. Modeled figures are a model, not a measurement.")
    rp.set_defaults(fn=cmd_trace_replay)
    rp.add_argument("dir", help="ATT folder (a real capture, or a modeled run)")
    rp.add_argument("--target", default="gfx950", help="the captured chip (default gfx950)")
    rp.add_argument("--memory", choices=("model", "measured", "accept", "accept-scalar"),
                    default="model",
                    help="memory latencies from the model (default) or from the capture "
                         "(waitcnt links, s_endpgm, vector memory acceptance): tests the rest "
                         "of the model on its own; accept: only the vector memory path's "
                         "acceptance (what the lanes' addresses cost at issue) from the "
                         "capture, every latency modeled; accept-scalar: accept, and the "
                         "scalar loads' latencies from the capture (the kernel-argument "
                         "loads, whose latency the dispatch sets: 772-1476 cycles across "
                         "the shipped captures)")
    rp.add_argument("--barrier-groups", choices=("workgroup", "cu"), default="workgroup",
                    help="one barrier per workgroup, inferred from the measured barrier "
                         "releases and launch times (default; a capture names no "
                         "workgroups), or one per traced CU (all its traced waves wait "
                         "for each other)")
    params_option(rp, needs="")
    replay_off_option(rp)
    rp.add_argument("--json", action="store_true", help="machine-readable output "
                    "(measured_cycles, modeled_cycles, ...)")
    rp.add_argument("--plot", metavar="PNG", help="also draw measured vs modeled timelines")
    rp.add_argument("--plot-waves", type=int, default=4, help="waves in the picture (4)")
    rp.add_argument("-o", "--output", help="output file (default: stdout)")
    ca = tsub.add_parser(
        "calibrate", help="fit the timing model's fittable parameters to captures",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=CALIBRATE_HELP)
    ca.set_defaults(fn=cmd_trace_calibrate)
    ca.add_argument("dirs", nargs="+", metavar="CAPTURE", help="ATT folders")
    ca.add_argument("--target", default="gfx950", help="the captured chip (default gfx950)")
    ca.add_argument("--rounds", type=int, default=3,
                    help="passes over the parameters (default 3; fewer: faster, coarser)")
    ca.add_argument("--memory", choices=("model", "accept", "accept-scalar"), default="model",
                    help="replay memory mode (see `trace replay --memory`; default model)")
    ca.add_argument("--leave-one-out", action="store_true",
                    help="also fit on every capture but one and predict the held-out one, "
                         "for each capture (needs two or more)")
    ca.add_argument("--prior", type=float, default=0.0, metavar="W",
                    help="regularized (MAP) fit: add W x sum(((value - starting value) / "
                         "bound range)^2) to the objective (default 0: plain fit)")
    ca.add_argument("--sensitivity", action="store_true",
                    help="fit nothing: print each fittable parameter's effect alone (at its "
                         "bounds) on each capture's error")
    ca.add_argument("--fit", metavar="NAME,...",
                    help="fit only these fittable parameters, e.g. memory.vmem_unknown,"
                         "memory.hbm (default: every fittable one)")
    params_option(ca, needs="")
    replay_off_option(ca)
    ca.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    ca.add_argument("-o", "--output", metavar="FILE",
                    help="write the fit on all captures as a parameter file for --params "
                         "(default: write nothing)")
    b = tsub.add_parser("bundle", help="self-contained kernel report directory: REPORT.md, "
                                       "pictures, capture, counters, source, ISA",
                        description="Write DIR with REPORT.md (verdict, bound, optimization "
                                    "candidates each replayed through the timing model and "
                                    "ranked by the modeled time it saves, the kernel's "
                                    "loops, phases and load balance, wave states, stall "
                                    "taxonomy, occupancy, hotspots with disassembly and "
                                    "source, waitcnt producers, counters), report.json, "
                                    "pictures (PNG + interactive HTML), a copy of the "
                                    "capture, the counter files, the "
                                    "source files and the kernel's ISA + stats. Nothing is "
                                    "written if anything fails. The bundle is made to be "
                                    "shared: links inside the capture folder are not "
                                    "followed, a local source file is copied only from the "
                                    "capture folder, a --source-dir or when named, and "
                                    "REPORT.md lists what was left out and why.")
    b.set_defaults(fn=cmd_trace_bundle)
    b.add_argument("capture", help="ATT folder (ui_output_agent_* or a modeled run)")
    b.add_argument("-o", "--output", required=True, help="bundle directory to create")
    b.add_argument("--counters", action="append", default=[], metavar="FILE",
                   help="rocprofv3 output: *_results.json or its CSV files (repeatable); a "
                        "file the bundle cannot use is left out and named in the report")
    b.add_argument("--source", action="append", default=[], metavar="FILE",
                   help="a source file to include (repeatable)")
    b.add_argument("--source-dir", action="append", default=[], metavar="DIR",
                   help="a folder whose files the bundle may copy when the capture's rows "
                        "point into it (repeatable). Source files are otherwise copied only "
                        "from the capture folder itself, --source and --kernel-file: the "
                        "report names the ones left out")
    b.add_argument("--kernel-file", metavar="K", help="the kernel: .hsaco/.co, .mlir or .s "
                                                      "(adds its ISA listing and stats)")
    b.add_argument("--baseline", metavar="CAPTURE", help="a capture to compare with "
                                                         "(before/after table)")
    b.add_argument("--title", help="report title (default: the kernel name)")
    b.add_argument("--top", type=int, default=10, help="hotspots to list (default 10)")
    d = tsub.add_parser("dashboard", help="one page across bundles: kernel, bound, headroom, "
                                          "top candidate",
                        description="Read the report.json of each bundle (made by `asterism "
                                    "trace bundle`) and write DIR/index.html and "
                                    "DIR/dashboard.md: one row per kernel with its bound and "
                                    "the figure behind it, the headroom (the top candidate's "
                                    "modeled saving in percent of the traced CUs' modeled "
                                    "time) and the top candidate, most headroom first. "
                                    "Example: asterism trace dashboard b/gemm b/attn -o dash")
    d.set_defaults(fn=cmd_trace_dashboard)
    d.add_argument("bundles", nargs="+", metavar="BUNDLE", help="bundle directories")
    d.add_argument("-o", "--output", required=True, help="dashboard directory to create")
    b.add_argument("--no-what-if", action="store_true",
                   help="do not replay the candidates through the timing model (they are "
                        "then ranked by the stall cycles the capture shows)")
    b.add_argument("--what-if-records", type=int, default=60_000, metavar="N",
                   help="records each what-if replay may take (default 60000): a bigger "
                        "capture is replayed on whole CUs, its longest waves' first")
    b.add_argument("--flops", type=float, metavar="N",
                   help="floating-point operations of one dispatch: the counters section "
                        "gives TFLOPS per dispatch from its duration")
    b.add_argument("--bytes", type=float, metavar="N",
                   help="bytes one dispatch moves: GB/s per dispatch, and the bandwidth "
                        "figure of the bound")
    b.add_argument("--peak-gbps", type=float, metavar="GB/s",
                   help="the GPU's peak memory bandwidth: with --bytes, the bound says "
                        "bandwidth when the kernel reaches 60 %% of it")
    b.add_argument("--target", help="the captured chip for the replays when neither the "
                                    "counters nor --kernel-file say it (default gfx950)")
