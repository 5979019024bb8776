"""Machine-code verbs: asm, disasm and isa. They never load the IR framework (xDSL) or
NumPy: assembly, code objects and the ISA database are the MC layer's alone."""

from __future__ import annotations

from asterism.cli.io import default_output, read_text, write_output
from asterism.errors import AsterismError


def cmd_asm(args) -> int:
    """Assembly -> HSACO."""
    from asterism import api

    text = read_text(args.input)
    out = default_output(args.output, args.input, ".hsaco")
    write_output(out, api.assemble(text, args.target, args.input))
    return 0


def cmd_disasm(args) -> int:
    """HSACO(s) -> listing (several files: one after the other, as llvm-objdump -d prints
    them; one process pays the start-up once)."""
    from asterism import api

    if len(args.input) > 1 and (args.reassemblable or args.json):
        raise AsterismError("--json and --reassemblable take one code object")
    path = args.input[0]
    if args.reassemblable:
        from asterism.mc.lossless import reassemblable_text

        write_output(args.output, reassemblable_text(path))
    elif args.json:
        import json

        from asterism.mc.listing import listing_json

        obj, items = api.disassemble(path)
        write_output(args.output, json.dumps(listing_json(obj, items), indent=1) + "\n")
    else:
        write_output(args.output, "".join(api.disassembly_listing(p) for p in args.input))
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
        import json

        write_output(None, json.dumps([_inst_json(t, i) for t, i in found], indent=1) + "\n")
        return 0
    lines = []
    for t, inst in found:
        lines += _describe(t, inst)
    write_output(None, "\n".join(lines) + "\n")
    return 0


def _describe(target: str, inst) -> list[str]:
    """The text lines `asterism isa` prints for one instruction on one target."""
    lines = [f"{inst.mnemonic} ({target}): unit {inst.unit}"
             + (f", {inst.passes} MFMA passes" if inst.passes else "")]
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
        lines += [_describe_operand(o) for o in f.operands]
        if f.modifiers:
            lines.append(f"      modifiers: {' '.join(f.modifiers)}")
    return lines


def _describe_operand(o) -> str:
    """One operand line of `asterism isa`."""
    if o.fixed:
        return f"      {o.name:<10} {o.role:<4} fixed {o.fixed}"
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
    return f"      {o.name:<10} {o.role:<4} {'|'.join(o.kinds):<10} {', '.join(extra)}"


def _inst_json(target: str, inst) -> dict:
    from dataclasses import asdict

    data = asdict(inst)
    data["flags"] = sorted(inst.flags)
    data["target"] = target
    return data


def register(verb) -> None:
    """Add the machine-code verbs to the `asterism` parser."""
    p = verb("asm", cmd_asm, "assembly (.s) -> code object (.hsaco), no external tool",
             "Assemble LLVM AMDGPU syntax (instructions, .amdhsa_kernel, .amdgpu_metadata).")
    p.add_argument("input", help="assembly file (.s) or -")
    p.add_argument("-o", "--output", help="output file (default: INPUT.hsaco beside the "
                                             "input, e.g. k/add.s -> k/add.hsaco)")
    p.add_argument("--target", help="target when the file has no .amdgcn_target")

    p = verb("disasm", cmd_disasm, "code object -> disassembly (like llvm-objdump -d)")
    p.add_argument("input", nargs="+", help="code object(s) (.hsaco / .co)")
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
