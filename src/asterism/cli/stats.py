"""The stats verb: ISA statistics of a code object, IR or assembly file."""

from __future__ import annotations

from asterism.cli.io import write_output


def cmd_stats(args) -> int:
    """ISA statistics of a code object (or .mlir/.s), optionally compared with another."""
    from asterism.profile.stats import code_object_stats, render_diff, render_stats, stats_json

    stats = code_object_stats(args.input)
    if args.diff:
        other = code_object_stats(args.diff)
        if args.json:
            import json
            from dataclasses import asdict

            text = json.dumps({"a": [asdict(s) for s in stats],
                               "b": [asdict(s) for s in other]}, indent=1) + "\n"
        else:
            text = render_diff(stats, other, args.input, args.diff)
    else:
        text = stats_json(stats) if args.json else render_stats(stats)
    write_output(args.output, text)
    return 0


def register(verb) -> None:
    """Add the stats verb to the `asterism` parser."""
    p = verb("stats", cmd_stats, "ISA statistics: registers, LDS, occupancy, instruction mix",
             "Per kernel: VGPR/AGPR/SGPR (allocated and used), LDS, scratch, occupancy and what "
             "limits it, instruction mix (MFMA by shape, VALU, SALU, VMEM loads/stores, DS "
             "reads/writes, SMEM, barriers, nops), s_waitcnt histogram, code size, metadata.")
    p.add_argument("input", help="code object (.hsaco/.co), IR (.mlir) or assembly (.s)")
    p.add_argument("--diff", metavar="OTHER", help="compare with another file (e.g. the "
                                                   "gfx950 build of the same kernel)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
