"""Where each instruction of an assembled module came from: address -> source location.

`Inst.loc` records the IR line (or the builder's Python line, or the .s line) of every
instruction; the code object keeps only bytes. `source_map(module, text_address)` lays the
module out exactly as the assembler does (each kernel at the next 256-byte boundary of
.text, instructions back to back, sizes from the encoder) and maps every instruction's
address to ``file:line``, the form of the ATT decoder's source column. Addresses are
``text_address`` (the .text section's ELF virtual address, `CodeObject.text_address`) plus
the offset in .text, i.e. the PCs the emulator and the traces use.
"""

from __future__ import annotations

from asterism.mc.assembler import KERNEL_ALIGN
from asterism.mc.encoder import inst_size
from asterism.mc.inst import Inst
from asterism.mc.program import McModule


def instruction_offsets(module: McModule) -> list[tuple[int, Inst]]:
    """(offset in .text, instruction) of every instruction, in layout order."""
    out: list[tuple[int, Inst]] = []
    pos = 0
    for kernel in module.kernels:
        pos = -(-pos // KERNEL_ALIGN) * KERNEL_ALIGN
        for item in kernel.body:
            if isinstance(item, Inst):
                out.append((pos, item))
                pos += inst_size(item)
    return out


def source_map(module: McModule, text_address: int = 0) -> dict[int, str]:
    """address -> "file:line" for every instruction whose location is known."""
    return {text_address + off: f"{inst.loc.file}:{inst.loc.line}"
            for off, inst in instruction_offsets(module) if inst.loc is not None}


__all__ = ["instruction_offsets", "source_map"]
