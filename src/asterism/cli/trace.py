"""Thread-trace verbs: profile (capture on a real GPU) and trace report|plot (analysis)."""

from __future__ import annotations

import sys

from asterism.cli.io import write_output


def cmd_trace_report(args) -> int:
    """Analyze an ATT trace folder (real capture or modeled run)."""
    from asterism.profile import trace_report

    write_output(args.output, trace_report(args.dir, top=args.top, as_json=args.json,
                                           source_map=args.source_map, rank=args.rank))
    return 0


def cmd_trace_plot(args) -> int:
    """Draw the wave timeline and stall breakdown of a trace."""
    from asterism.profile import trace_plot

    trace_plot(args.dir, args.output)
    sys.stderr.write(f"wrote {args.output}\n")
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

    p = verb("trace", None, "thread-trace (ATT) analysis: report, plot",
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
