"""CLI verbs of the upper layers (profiling, running), registered into `asterism`'s parser."""

from __future__ import annotations

import sys


def cmd_trace_report(args) -> int:
    """Analyze an ATT trace folder (real capture or modeled run)."""
    from asterism.cli import _write_output
    from asterism.profile import trace_report

    _write_output(args.output, trace_report(args.dir, top=args.top, as_json=args.json,
                                            source_map=args.source_map))
    return 0


def cmd_trace_plot(args) -> int:
    """Draw the wave timeline and stall breakdown of a trace."""
    from asterism.profile import trace_plot

    trace_plot(args.dir, args.output)
    sys.stderr.write(f"wrote {args.output}\n")
    return 0


def register(sub, verb) -> None:
    """Add the verbs of this module to the `asterism` parser."""
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
    r.add_argument("-o", "--output", help="output file (default: stdout)")
    pl = tsub.add_parser("plot", help="wave timeline + stall breakdown picture (PNG)")
    pl.set_defaults(fn=cmd_trace_plot)
    pl.add_argument("dir", help="ATT folder")
    pl.add_argument("-o", "--output", required=True, help="PNG file to write")
