"""The raise verb: code object or assembly -> editable amdgcn IR."""

from __future__ import annotations

from asterism.cli.io import write_output


def cmd_raise(args) -> int:
    """Code object / assembly -> IR text."""
    from asterism import api
    from asterism.ir import print_ir
    from asterism.support.gcpause import keep_until_exit, pause_cyclic_gc, resume_cyclic_gc

    # (paused until frozen: the first allocation after resuming would scan the new IR once)
    was_enabled = pause_cyclic_gc()
    try:
        module = api.raise_kernel(args.input, args.kernel, target=args.target,
                                  relocatable=args.relocatable,
                                  keep_pinned=args.keep_pinned or "",
                                  drop_waits=args.drop_waits, drop_nops=args.drop_nops)
        if getattr(args, "whole_process", False):
            keep_until_exit()  # (the module lives until the process ends)
    finally:
        resume_cyclic_gc(was_enabled)
    write_output(args.output, print_ir(module) + "\n")
    return 0


def register(verb) -> None:
    """Add the raise verb to the `asterism` parser."""
    p = verb("raise", cmd_raise, "code object (.hsaco/.co) or assembly (.s) -> editable IR",
             "Raise every kernel (or one) to amdgcn IR: fixed registers, labels and branches as "
             "blocks, kernel arguments from the metadata, and the descriptor settings and "
             "metadata the IR does not imply as kernel attributes, so `asterism compile` of "
             "the result gives the same .text, descriptors and metadata. With --relocatable "
             "registers become SSA values the passes re-allocate (e.g. --pipeline auto).")
    p.add_argument("input", help="code object (.hsaco, .co) or assembly (.s)")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.add_argument("--kernel", help="raise only this kernel")
    p.add_argument("--target", help="the target (assembly without .amdgcn_target; a code "
                                    "object's own target must match)")
    p.add_argument("--relocatable", action="store_true",
                   help="registers become SSA values (live ranges split at each definition); "
                        "dispatch inputs become ABI ops")
    p.add_argument("--keep-pinned", metavar="REGS",
                   help="with --relocatable: registers that stay fixed, e.g. "
                        "'v[0:3],s[4:5],a[0:127]'")
    p.add_argument("--drop-waits", action="store_true",
                   help="with --relocatable: drop the written s_waitcnt (the waits pass "
                        "makes them)")
    p.add_argument("--drop-nops", action="store_true",
                   help="with --relocatable: drop the written s_nop (the hazards pass makes "
                        "them)")
