"""`python -m asterism.ir`: parse, verify and print IR; lower it to assembly lines; raise it
back. A small driver for lit tests and quick looks (the `asterism` command is the real CLI).

    python -m asterism.ir kernel.mlir             # verified IR, custom syntax
    python -m asterism.ir --generic kernel.mlir   # generic syntax
    python -m asterism.ir --lower kernel.mlir     # the instructions, one per line
    python -m asterism.ir --asm kernel.mlir       # the full assembly file (mc printer)
    python -m asterism.ir --roundtrip-mc k.mlir   # lower to MC, raise back, print IR

Errors are printed as `file:line:col: error: message` with exit status 1.
"""

from __future__ import annotations

import argparse
import sys

from asterism.errors import AsterismError


def asm_listing(mc) -> str:
    """The instructions of an McModule as assembly lines (kernel and labels as comments)."""
    from asterism.mc.inst import Inst
    from asterism.mc.printer import format_inst

    lines: list[str] = []
    for kernel in mc.kernels:
        lines.append(f"{kernel.name}:")
        for item in kernel.body:
            lines.append(f"  {format_inst(item)}" if isinstance(item, Inst) else f"{item.name}:")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the driver; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m asterism.ir", description=__doc__)
    parser.add_argument("file", help="IR file ('-' for stdin)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--generic", action="store_true", help="print the generic syntax")
    mode.add_argument("--lower", action="store_true", help="print the lowered instructions")
    mode.add_argument("--asm", action="store_true",
                      help="print the assembly file (.amdhsa_kernel and metadata included)")
    mode.add_argument("--roundtrip-mc", action="store_true",
                      help="lower to the MC layer, raise back and print the IR")
    args = parser.parse_args(argv)
    name = "<stdin>" if args.file == "-" else args.file
    try:
        from asterism.ir import lower_module, parse_ir, print_ir, raise_module
        from asterism.textio import read_text

        lowering = args.lower or args.asm or args.roundtrip_mc  # (lowering verifies)
        module = parse_ir(read_text(args.file), name, verify=not lowering)
        if args.lower:
            out = asm_listing(lower_module(module))
        elif args.asm:
            from asterism.mc.asm_writer import print_module

            out = print_module(lower_module(module))
        elif args.roundtrip_mc:
            out = print_ir(raise_module(lower_module(module)))
        else:
            out = print_ir(module, generic=args.generic)
    except AsterismError as err:
        where = f"{err.location}: " if err.location else ""
        print(f"{where}error: {err.message}", file=sys.stderr)
        return 1
    sys.stdout.write(out)
    return 0
