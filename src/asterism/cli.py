"""The `asterism` command: one verb per job.

Errors in the input are reported as `file:line:col: error: message` with exit code 1 (no
traceback, no partial output file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

from asterism.errors import AsterismError

EPILOG = """\
examples:
  asterism translate examples/demo/add_10.mlir -o add_10.s     IR -> assembly
  asterism compile examples/demo/add_10.mlir -o add_10.hsaco   IR -> code object (no LLVM)
  asterism asm kernel.s -o kernel.hsaco                         assembly -> code object
  asterism disasm kernel.hsaco                                  like llvm-objdump -d
  asterism isa v_mfma_f32_16x16x16_f16                          what the ISA database knows
  asterism opt kernel.mlir --pipeline ""                        run passes, print IR

Run `asterism VERB --help` for the options of a verb.
"""


def _write_output(path: str | None, data: str | bytes) -> None:
    """Write to a file atomically (or to stdout when no path is given)."""
    if path is None or path == "-":
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        return
    from asterism.mc.codeobject import write_file_atomic

    write_file_atomic(path, data.encode() if isinstance(data, str) else data)


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path) as f:
            return f.read()
    except OSError as err:
        raise AsterismError(f"cannot read {path}: {err.strerror}") from None


def _pipeline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pipeline", default="",
                   help="passes to run, e.g. 'inline,regalloc,waits,hazards' or a named pipeline"
                        " like 'auto' (default: none; what you wrote is what you get)")


# ----------------------------------------------------------------------------- verbs


def cmd_translate(args) -> int:
    """IR -> assembly text."""
    from asterism import api

    module = api.parse(_read_text(args.input), args.input)
    _retarget(module, args.target)
    _write_output(args.output, api.translate(module, args.pipeline))
    return 0


def cmd_compile(args) -> int:
    """IR -> HSACO."""
    from asterism import api

    module = api.parse(_read_text(args.input), args.input)
    _retarget(module, args.target)
    out = args.output or os.path.splitext(os.path.basename(args.input))[0] + ".hsaco"
    _write_output(out, api.compile(module, args.pipeline))
    return 0


def _retarget(module, target: str | None) -> None:
    if target is not None:
        from asterism import api

        api.retarget(module, target)


def cmd_opt(args) -> int:
    """Run a pipeline and print the IR."""
    from asterism import api
    from asterism.ir import print_ir

    module = api.parse(_read_text(args.input), args.input)
    timings: list = [] if args.timing else None  # type: ignore[assignment]

    def after(name, mod):
        sys.stderr.write(f"// ----- IR after {name} -----\n{print_ir(mod)}\n")

    result = api.optimize(module, args.pipeline, timings=timings,
                          print_after_all=after if args.print_ir_after_all else None)
    _write_output(args.output, print_ir(result))
    if timings:
        total = sum(t.seconds for t in timings)
        sys.stderr.write("pass timing:\n")
        for t in timings:
            sys.stderr.write(f"  {t.name:<20} {t.seconds * 1000:9.2f} ms\n")
        sys.stderr.write(f"  {'total':<20} {total * 1000:9.2f} ms\n")
    return 0


def cmd_asm(args) -> int:
    """Assembly -> HSACO."""
    from asterism import api

    text = _read_text(args.input)
    out = args.output or os.path.splitext(os.path.basename(args.input))[0] + ".hsaco"
    _write_output(out, api.assemble(text, args.target, args.input))
    return 0


def cmd_disasm(args) -> int:
    """HSACO -> listing."""
    from asterism import api
    from asterism.mc.listing import listing_json

    if args.reassemblable:
        from asterism.mc.lossless import reassemblable_text

        _write_output(args.output, reassemblable_text(args.input))
    elif args.json:
        obj, items = api.disassemble(args.input)
        _write_output(args.output, json.dumps(listing_json(obj, items), indent=1) + "\n")
    else:
        _write_output(args.output, api.disassembly_listing(args.input))
    return 0


def cmd_isa(args) -> int:
    """Describe instructions from the ISA database."""
    from asterism.isa import get_isa, known_isa_targets

    targets = [args.target] if args.target else known_isa_targets()
    found = []
    for t in targets:
        hit = get_isa(t).get(args.mnemonic)
        if hit is not None:
            found.append((t, hit))
    if not found:
        near = get_isa(targets[0]).similar(args.mnemonic)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise AsterismError(f"unknown instruction '{args.mnemonic}' on "
                            f"{', '.join(targets)}{hint}")
    if args.json:
        _write_output(None, json.dumps([_inst_json(t, i) for t, i in found], indent=1) + "\n")
        return 0
    lines = []
    for t, inst in found:
        lines.append(f"{inst.mnemonic} ({t}): unit {inst.unit}"
                     + (f", {inst.passes} MFMA passes" if inst.passes else ""))
        if inst.counters:
            lines.append(f"  counters: {', '.join(inst.counters)}")
        if inst.flags:
            lines.append(f"  flags: {', '.join(sorted(inst.flags))}")
        if inst.implicit_defs or inst.implicit_uses:
            lines.append(f"  implicit: defs {', '.join(inst.implicit_defs) or '-'};"
                         f" uses {', '.join(inst.implicit_uses) or '-'}")
        if inst.aliases:
            lines.append(f"  aliases: {', '.join(inst.aliases)}")
        for f in inst.forms:
            variant = f" [{f.variant}]" if f.variant else ""
            lines.append(f"  {f.enc}{variant} opcode {f.opcode} ({f.size} bytes): {f.example}")
            for o in f.operands:
                if o.fixed:
                    lines.append(f"      {o.name:<10} {o.role:<4} fixed {o.fixed}")
                    continue
                extra = []
                if o.width:
                    extra.append(f"{o.width} dword{'s' if o.width > 1 else ''}")
                if o.type:
                    extra.append(o.type)
                if o.mods:
                    extra.append("neg/abs")
                if o.tied:
                    extra.append("tied (also read)")
                if o.syntax:
                    extra.append(o.syntax)
                lines.append(f"      {o.name:<10} {o.role:<4} {'|'.join(o.kinds):<10} "
                             f"{', '.join(extra)}")
            if f.modifiers:
                lines.append(f"      modifiers: {' '.join(f.modifiers)}")
    _write_output(None, "\n".join(lines) + "\n")
    return 0


def _inst_json(target: str, inst) -> dict:
    from dataclasses import asdict

    data = asdict(inst)
    data["flags"] = sorted(inst.flags)
    data["target"] = target
    return data


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `asterism` command."""
    parser = argparse.ArgumentParser(
        prog="asterism",
        description="AMD GPU assembly with the rigor of a compiler and the control of "
                    "hand-written code (gfx942, gfx950).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from asterism import __version__

    parser.add_argument("--version", action="version", version=f"asterism {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")

    def verb(name: str, fn: Callable, help_: str, desc: str | None = None):
        p = sub.add_parser(name, help=help_, description=desc or help_,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(fn=fn, _parser=p)
        return p

    p = verb("translate", cmd_translate, "IR (.mlir) -> LLVM-syntax assembly (.s)",
             "Print the kernels of an amdgcn IR file as assembly, exactly as written, with "
             "the .amdhsa_kernel and .amdgpu_metadata blocks llvm-mc and ld.lld need.")
    p.add_argument("input", help="IR file (.mlir) or - for stdin")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.add_argument("--target", help="override the module's target (gfx942, gfx950)")
    _pipeline_args(p)

    p = verb("compile", cmd_compile, "IR (.mlir) -> code object (.hsaco), no external tool")
    p.add_argument("input", help="IR file (.mlir)")
    p.add_argument("-o", "--output", help="output file (default: INPUT.hsaco)")
    p.add_argument("--target", help="override the module's target")
    _pipeline_args(p)

    p = verb("opt", cmd_opt, "run a pass pipeline on IR and print the result",
             "Run passes (mlir-opt style). The empty pipeline is the identity.")
    p.add_argument("input", help="IR file (.mlir) or -")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    _pipeline_args(p)
    p.add_argument("--print-ir-after-all", action="store_true",
                   help="print the IR after every pass (to stderr)")
    p.add_argument("--timing", action="store_true", help="print per-pass wall time")

    p = verb("asm", cmd_asm, "assembly (.s) -> code object (.hsaco), no external tool",
             "Assemble LLVM AMDGPU syntax (instructions, .amdhsa_kernel, .amdgpu_metadata).")
    p.add_argument("input", help="assembly file (.s) or -")
    p.add_argument("-o", "--output", help="output file (default: INPUT.hsaco)")
    p.add_argument("--target", help="target when the file has no .amdgcn_target")

    p = verb("disasm", cmd_disasm, "code object -> disassembly (like llvm-objdump -d)")
    p.add_argument("input", help="code object (.hsaco / .co)")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--reassemblable", action="store_true",
                   help="an assembly file that `asterism asm` turns back into the same .text "
                        "(every encoded bit kept: words LLVM's text cannot express print as "
                        ".long)")

    p = verb("isa", cmd_isa, "describe an instruction from the ISA database",
             "Encodings, operands (kinds, widths, types), modifiers, counters and flags of an "
             "instruction, per target.")
    p.add_argument("mnemonic", help="e.g. v_add_f32, v_mfma_f32_16x16x16_f16")
    p.add_argument("--target", help="gfx942 or gfx950 (default: both)")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    _register_later_verbs(sub, verb)
    return parser


def _register_later_verbs(sub, verb) -> None:
    """Verbs provided by the runtime and profiling layers (registered when importable)."""
    from asterism import cli_extra

    cli_extra.register(sub, verb)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `asterism` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "fn", None):
        getattr(args, "_parser", parser).print_help()
        return 1
    try:
        return args.fn(args)
    except AsterismError as err:
        loc = f"{err.location}: " if err.location else ""
        sys.stderr.write(f"{loc}error: {err.message}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
