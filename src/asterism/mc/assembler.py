"""Assembler: `McModule` -> HSA code object, with no external tool.

Lays the kernels out in .text (256-byte aligned, padded with `s_nop 0` like llvm-mc),
resolves labels, encodes every instruction, builds each kernel's descriptor from its
`.amdhsa_*` values (written or computed, see kernel_abi) and its metadata entry, and hands
the pieces to the code object writer.
"""

from __future__ import annotations

from asterism.errors import AsterismError, VerifyError
from asterism.mc.codeobject import (
    CodeObject,
    ExtraSymbol,
    KernelSymbol,
    descriptor_from_directives,
    make_metadata,
    write_code_object,
)
from asterism.mc.encoder import ENCODER, _AnyLabel
from asterism.mc.inst import Inst
from asterism.mc.kernel_abi import kernel_directives, kernel_metadata
from asterism.mc.operands import Label
from asterism.mc.program import LabelDef, McKernel, McModule
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc
from asterism.target import get_target

KERNEL_ALIGN = 256
S_NOP_0 = (0xBF800000).to_bytes(4, "little")


def encode_text(module: McModule) -> tuple[bytes, list[tuple[McKernel, int, int]],
                                           list[tuple[str, int]]]:
    """The .text bytes, (kernel, offset, size) of every kernel and (name, offset) of the
    labels that become symbols: as llvm-mc, those not named .L..., in the order of their
    first mention (definition or branch), which is llvm-mc's symbol table order.

    One encoding pass: instruction sizes do not depend on label values, so branches are
    encoded with a placeholder target (offset 0, never range-checked) first and re-encoded,
    with the range check, once the labels are placed.
    """
    paused = pause_cyclic_gc()
    try:
        return _encode_text(module)
    finally:
        resume_cyclic_gc(paused)


def _encode_text(module: McModule) -> tuple[bytes, list[tuple[McKernel, int, int]],
                                            list[tuple[str, int]]]:
    labels: dict[str, int] = {}
    mentioned: dict[str, None] = {}  # label names by first mention
    text = bytearray()
    placed: list[tuple[McKernel, int, int]] = []
    fixups: list[tuple[Inst, int, int]] = []
    any_label = _AnyLabel()
    for kernel in module.kernels:
        start = -(-len(text) // KERNEL_ALIGN) * KERNEL_ALIGN
        text += S_NOP_0 * ((start - len(text)) // 4)
        labels[kernel.name] = start
        for item in kernel.body:
            if isinstance(item, LabelDef):
                if item.name in labels:
                    raise VerifyError(f"label '{item.name}' is defined more than once",
                                      getattr(item, "loc", None))
                labels[item.name] = len(text)
                mentioned.setdefault(item.name)
                continue
            if Label in map(type, item.operands):  # (a branch to a label)
                for op in item.operands:
                    if type(op) is Label:
                        mentioned.setdefault(op.name)
                any_label.at = len(text) + 4  # (offset 0: only the final one is checked)
                data = ENCODER.encode(item, len(text), any_label)
                fixups.append((item, len(text), len(data)))
            else:
                data = ENCODER.encode(item, len(text))
            text += data
        placed.append((kernel, start, len(text) - start))
    for item, pos, size in fixups:
        text[pos:pos + size] = ENCODER.encode(item, pos, labels)
    kernels = {kernel.name for kernel in module.kernels}
    symbols = [(name, labels[name]) for name in mentioned
               if not name.startswith(".L") and name in labels and name not in kernels]
    return bytes(text), placed, symbols


def assemble_module(module: McModule) -> CodeObject:
    """Encode a module into a CodeObject (descriptors, metadata, code)."""
    target = get_target(module.target + (module.features or ""))
    if not module.kernels:
        raise VerifyError("nothing to assemble: the module has no kernel")
    text, placed, labels = encode_text(module)
    symbols = []
    entries = []
    for kernel, offset, size in placed:
        try:
            directives = kernel_directives(kernel, target.name)
            kd = descriptor_from_directives(target, directives)
        except AsterismError as err:
            raise VerifyError(f"kernel {kernel.name}: {err.message}",
                              err.location or kernel.descriptor_loc) from None
        meta = getattr(kernel, "metadata", None) or kernel_metadata(kernel, target.name,
                                                                    directives)
        entries.append(meta)
        symbols.append(KernelSymbol(kernel.name, offset, kd, size=size, metadata=meta))
    raw_meta = getattr(module, "metadata", None)
    version = module.code_object_version
    metadata = raw_meta if raw_meta else make_metadata(entries, target,
                                                       code_object_version=version)
    return CodeObject(target, text, symbols, metadata=metadata, code_object_version=version,
                      symbols=[ExtraSymbol(name, ".text", offset) for name, offset in labels])


def assemble(module: McModule) -> bytes:
    """The HSACO bytes of a module."""
    paused = pause_cyclic_gc()
    try:
        return write_code_object(assemble_module(module))
    finally:
        resume_cyclic_gc(paused)
