"""`Inst`: one machine instruction (mnemonic, typed operands, modifiers).

The MC layer's hub: the IR is lowered to it, the asm parser and the decoder produce it, the
printer, encoder, emulator and statistics consume it. Like LLVM's MCInst it is a plain value
at the bottom of the layer: it knows no printer, encoder or decoder; those are functions
that take it (`str(inst)` is a structural text of its fields; its assembly text is
`mc.printer.format_inst(inst)`).

Modifiers are kept by their LLVM assembly names, with these value types:
- flags (bool): clamp, gds, sc0, sc1, nt, glc, slc, nv, offen, idxen, lds, bound_ctrl, fi
- integers: omod (0..3, printed mul:2 / mul:4 / div:2), offset, offset0, offset1, cbsz, abid,
  blgp, row_mask, bank_mask, dpp_ctrl (the 9-bit DPP control), format (MTBUF dfmt|nfmt<<4)
- bit lists (tuple[int, ...]): op_sel, op_sel_hi, neg_lo, neg_hi
- names (str): dst_sel, dst_unused, src0_sel, src1_sel (SDWA)
- hidden_bits (int, HIDDEN_BITS): encoded bits no syntax shows, as an XOR mask over the
  instruction's own encoding, which the encoder folds back in (mc/lossless.py)

Raw 32-bit data words in an instruction stream (`.long` in .text, bytes that do not decode)
are an Inst too: mnemonic DATA, one hex Imm per word, no form (`data_inst`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from asterism.errors import SourceLocation
from asterism.mc.operands import Imm, Operand

if TYPE_CHECKING:
    from asterism.isa.database import Form

HIDDEN_BITS = "hidden_bits"  # modifier: encoded bits the text does not show (XOR mask)
DATA = ".long"  # mnemonic of raw data words in an instruction stream


@dataclass(slots=True)
class Inst:
    """A machine instruction: mnemonic as written, operands in assembly order, modifiers."""

    mnemonic: str
    operands: list[Operand] = field(default_factory=list)
    modifiers: dict[str, object] = field(default_factory=dict)
    form: Form | None = None  # the encoding form, once chosen (matcher/decoder)
    loc: SourceLocation | None = None  # where it was written (asm file, IR, Python line)

    def __repr__(self) -> str:
        """The fields as plain text, e.g. `Inst('v_add_f32', [v1, v2, v3], form=VOP2
        v_add_f32_e32)` (not assembly syntax: `mc.printer.format_inst` prints that)."""
        parts = [repr(self.mnemonic), "[" + ", ".join(map(str, self.operands)) + "]"]
        if self.modifiers:
            parts.append(repr(self.modifiers))
        if self.form is not None:
            parts.append(f"form={self.form.enc} {self.form.mnemonic}{self.form.suffix}")
        return f"Inst({', '.join(parts)})"


def data_inst(words: list[int]) -> Inst:
    """Raw 32-bit words in an instruction stream (`.long`): the encoder emits them as are."""
    return Inst(DATA, [Imm(w & 0xFFFFFFFF, fmt="hex") for w in words])


def data_bytes(inst: Inst) -> bytes:
    """The bytes of a `.long` data instruction."""
    return b"".join((op.value & 0xFFFFFFFF).to_bytes(4, "little") for op in inst.operands)
