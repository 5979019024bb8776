"""IR verbs: translate, compile, opt (pass pipelines) and hazards (wait-state check)."""

from __future__ import annotations

import argparse
import sys

from asterism.cli.io import default_output, pipeline_option, read_text, write_output


def _parse(path: str, target: str | None = None, verify: bool = True,
           whole_process: bool = False):
    """The IR module of a file, retargeted when `target` is given; verified unless `verify`
    is False and there is no `target` (the verbs that hand the module to asterism.api leave
    the verification to it: once before passes, once when lowering). In the `asterism`
    process itself (`whole_process`), the module is then left out of the collector's scans."""
    from asterism import api
    from asterism.support.gcpause import keep_until_exit, pause_cyclic_gc, resume_cyclic_gc

    # (paused until frozen: the first allocation after resuming would scan the new IR once)
    was_enabled = pause_cyclic_gc()
    try:
        module = api.parse(read_text(path), path, verify=verify or target is not None)
        if whole_process:
            keep_until_exit()
    finally:
        resume_cyclic_gc(was_enabled)
    if target is not None:
        api.retarget(module, target)
    return module


def cmd_translate(args) -> int:
    """IR -> assembly text."""
    from asterism import api

    module = _parse(args.input, args.target, verify=False,
                    whole_process=getattr(args, "whole_process", False))
    write_output(args.output, api.translate(module, args.pipeline))
    return 0


def cmd_compile(args) -> int:
    """IR -> HSACO."""
    from asterism import api

    module = _parse(args.input, args.target, verify=False,
                    whole_process=getattr(args, "whole_process", False))
    write_output(default_output(args.output, args.input, ".hsaco"),
                 api.compile(module, args.pipeline))
    return 0


def cmd_opt(args) -> int:
    """Run a pipeline and print the IR."""
    from asterism import api
    from asterism.ir import print_ir

    module = _parse(args.input, verify=False,  # (api.optimize verifies it)
                    whole_process=getattr(args, "whole_process", False))
    timings: list = [] if args.timing else None  # type: ignore[assignment]

    def after(name, mod):
        sys.stderr.write(f"// ----- IR after {name} -----\n{print_ir(mod)}\n")

    result = api.optimize(module, args.pipeline, timings=timings,
                          print_after_all=after if args.print_ir_after_all else None)
    write_output(args.output, print_ir(result))
    if timings:
        total = sum(t.seconds for t in timings)
        sys.stderr.write("pass timing:\n")
        for t in timings:
            sys.stderr.write(f"  {t.name:<20} {t.seconds * 1000:9.2f} ms\n")
        sys.stderr.write(f"  {'total':<20} {total * 1000:9.2f} ms\n")
    return 0


class ListPasses(argparse.Action):
    """`--list-passes`: print every pass with its options, then exit (like --version)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        """Print the listing (generated from the passes' option dataclasses) and exit 0."""
        from asterism.passes.registry import describe_passes

        sys.stdout.write(describe_passes())
        parser.exit()


def cmd_hazards(args) -> int:
    """Check hand-written code against the target's wait-state rules (exit 1 on violations)."""
    from asterism import api
    from asterism.passes.hazards import check_hazards

    if args.input.endswith(".s"):
        from asterism.ir import raise_module
        from asterism.mc.parser import parse_asm

        module = raise_module(parse_asm(read_text(args.input), args.input, args.target))
    else:
        module = _parse(args.input, args.target)
    if args.pipeline:
        module = api.optimize(module, args.pipeline)
    violations = check_hazards(module)
    text = "".join(v.message() + "\n" for v in violations)
    write_output(args.output, text)
    if violations:
        sys.stderr.write(f"{len(violations)} hazard violation"
                         f"{'s' if len(violations) != 1 else ''}\n")
        return 1
    sys.stderr.write("no hazard violations\n")
    return 0


def register(verb) -> None:
    """Add the IR verbs to the `asterism` parser."""
    p = verb("translate", cmd_translate, "IR (.mlir) -> LLVM-syntax assembly (.s)",
             "Print the kernels of an amdgcn IR file as assembly, exactly as written, with "
             "the .amdhsa_kernel and .amdgpu_metadata blocks llvm-mc and ld.lld need.")
    p.add_argument("input", help="IR file (.mlir) or - for stdin")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.add_argument("--target", help="override the module's target (gfx942, gfx950)")
    pipeline_option(p)

    p = verb("compile", cmd_compile, "IR (.mlir) -> code object (.hsaco), no external tool")
    p.add_argument("input", help="IR file (.mlir)")
    p.add_argument("-o", "--output", help="output file (default: INPUT.hsaco beside the "
                                             "input, e.g. k/add.mlir -> k/add.hsaco)")
    p.add_argument("--target", help="override the module's target")
    pipeline_option(p)

    p = verb("opt", cmd_opt, "run a pass pipeline on IR and print the result",
             "Run passes (mlir-opt style). The empty pipeline is the identity.")
    p.add_argument("input", help="IR file (.mlir) or -")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    pipeline_option(p)
    p.add_argument("--print-ir-after-all", action="store_true",
                   help="print the IR after every pass (to stderr)")
    p.add_argument("--timing", action="store_true", help="print per-pass wall time")
    p.add_argument("--list-passes", action=ListPasses,
                   help="print every pass with its options (type, default, what it does) and "
                        "the named pipelines, then exit")

    p = verb("hazards", cmd_hazards, "report missing wait states (s_nop) in a kernel",
             "Check every instruction against the target's required wait states "
             "(asterism.target.hazards, the table the emulator's sanitizer uses) and list the "
             "violations with their PC, the producing instruction, the rule and the s_nop that "
             "fixes them; exit code 1 when there are any. The same check runs as the pipeline "
             "pass hazards{check-only=1}; the pass without the option inserts the nops.")
    p.add_argument("input", help="IR (.mlir) or assembly (.s) file")
    p.add_argument("--target", help="override the target (gfx942, gfx950)")
    p.add_argument("--pipeline", default="", help="passes to run before checking, e.g. "
                                                  "'regalloc,waits'")
    p.add_argument("-o", "--output", help="report file (default: stdout)")
