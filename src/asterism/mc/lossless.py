"""Lossless assembly text: text that carries every bit of an instruction's encoding.

LLVM's text (and our llvm-objdump-identical listing) drops bits the decoder accepts but no
syntax shows: an op_sel bit of a form that has no op_sel, the third op_sel/op_sel_hi bit of a
scaled MFMA's prefix, a source field a one-source VOP3 does not use, unused SMEM bits...
Text meant to be read again (`asterism disasm --reassemblable`, the raising IR) prints an
instruction as LLVM text when that text assembles back to the same words, and otherwise as
`.long 0x...` words (valid for llvm-mc too) with the decoded text in a comment. The check
is the round trip itself (print -> parse -> encode), so no family needs a rule of its own.

Read back, `.long` words in .text become instructions again (mc/exact.py's `insts_of_words`,
used by the assembly parser): decoded, with the bits their text does not show kept in the
`hidden_bits` modifier, so the words come out identical. Words that do not decode stay data
(a `.long` pseudo-instruction).

The top of the MC layer: it prints, parses, encodes, decodes and writes modules; no mc
module imports it.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os

from asterism.errors import AsterismError
from asterism.mc.asm_syntax import InstParser
from asterism.mc.asm_writer import print_module
from asterism.mc.codeobject import (
    amdhsa_directives,
    descriptor_from_directives,
    read_code_object,
)
from asterism.mc.decoder import DecodedInst, decode_code
from asterism.mc.encoder import encode_inst
from asterism.mc.exact import exact_inst
from asterism.mc.inst import DATA, HIDDEN_BITS, Inst, data_inst
from asterism.mc.listing import branch_target
from asterism.mc.matcher import select_form
from asterism.mc.operands import Label
from asterism.mc.printer import format_inst
from asterism.mc.program import LabelDef, McKernel, McModule


def decoded_text(decoded: DecodedInst) -> str:
    """The lossless text of a DecodedInst (its words as `.long` when our encoder cannot
    make them from the instruction at all)."""
    inst = exact_inst(decoded)
    if inst is None:
        return words_text(decoded.raw, format_inst(decoded.inst))
    return lossless_text(inst)


def lossless_text(inst: Inst) -> str:
    """The text of `inst` that parses and encodes back to exactly its words: LLVM's text when
    that holds, else `.long` words followed by the LLVM text as a comment. A decoded
    instruction must come through `exact_inst` (the decoder's Inst does not keep the bits
    no modifier holds)."""
    form = inst.form
    text = format_inst(inst)
    if form is None:
        return text  # (data words print as `.long`; other form-less Insts as written)
    if not inst.modifiers.get(HIDDEN_BITS) and any(type(op) is Label for op in inst.operands):
        return text  # (a branch to a label: its offset is all the word holds)
    words = encode_inst(inst)
    again = _reencode(text, form.target)
    if again == words:
        return text
    mask = (int.from_bytes(again, "little") ^ int.from_bytes(words, "little")
            if again is not None and len(again) == len(words) else 0)
    return words_text(words, text, mask)


def words_text(words: bytes, text: str, mask: int = 0) -> str:
    """`.long` of the instruction's dwords, its LLVM text (and the bits it drops) as comment."""
    dwords = [int.from_bytes(words[i:i + 4], "little") for i in range(0, len(words), 4)]
    note = f" (text drops bits {_mask_text(mask, len(dwords))})" if mask else ""
    return f"{DATA} {', '.join(f'0x{w:08x}' for w in dwords)} ; {text}{note}"


def _mask_text(mask: int, n: int) -> str:
    """The dropped bits of each dword that has some, as 'dword k: 0x...'."""
    parts = [f"dword {k}: 0x{(mask >> (32 * k)) & 0xFFFFFFFF:08x}" for k in range(n)
             if (mask >> (32 * k)) & 0xFFFFFFFF]
    return ", ".join(parts)


@functools.lru_cache(maxsize=1 << 16)
def _reencode(text: str, target: str) -> bytes | None:
    """The words our assembler makes of one line of text (None if it refuses the line)."""
    try:
        inst = InstParser().parse(text)
        inst.form = select_form(inst, target)
        return encode_inst(inst)
    except AsterismError:
        return None


# ---------------------------------------------------------------------- whole code objects

def reassemblable_text(source: bytes | str | os.PathLike[str]) -> str:
    """A code object as an assembly file that `asterism asm` (and llvm-mc + ld.lld) turn
    back into the same .text: lossless instructions, branches to labels, each kernel's
    `.amdhsa_kernel` block from its descriptor and the file's metadata."""
    return print_module(module_of_code_object(source), lossless_text)


def module_of_code_object(source: bytes | str | os.PathLike[str]) -> McModule:
    """An McModule of a code object: each kernel's body is its decoded .text up to the next
    kernel (padding included, so the layout comes out the same), with a `.L_<address>` label
    at every branch target inside the kernel."""
    obj = read_code_object(source)
    kernels = sorted(obj.kernels, key=lambda k: k.offset)
    if not kernels:
        raise AsterismError("the code object has no kernel to write as assembly")
    if kernels[0].offset:
        raise AsterismError(f".text has {kernels[0].offset} bytes before its first kernel "
                            f"'{kernels[0].name}': they cannot be written as assembly yet")
    items = decode_code(obj.text, obj.target.name, 0, skip_undecodable=True)
    target = obj.target
    module = McModule(target.name, [], target.target_id[len("amdgcn-amd-amdhsa--"
                                                            + target.name):],
                      code_object_version=obj.code_object_version)
    ends = [k.offset for k in kernels[1:]] + [len(obj.text)]
    for sym, end in zip(kernels, ends):
        body = [d if isinstance(d, DecodedInst) else (d[0], data_inst([d[1]]))
                for d in items if sym.offset <= d_address(d) < end]
        kernel = _kernel_of(sym.name, body)
        kernel.descriptor_directives = reassemblable_directives(sym.descriptor, target)
        if sym.metadata:
            kernel.metadata = sym.metadata  # type: ignore[attr-defined]
        module.kernels.append(kernel)
    if obj.metadata:
        module.metadata = obj.metadata  # type: ignore[attr-defined]
    return module


def reassemblable_directives(kd, target) -> dict[str, int]:
    """The `.amdhsa_*` values of a descriptor, as llvm-objdump prints them but with the
    largest next_free_sgpr within the addressable SGPRs that gives the same descriptor: the
    printed figure is the granulated allocation with the extras (VCC...) inside, which the
    directive may exceed, and the assemblers add the extras again."""
    d = amdhsa_directives(kd, target)
    # (llvm-mc refuses a reserve_xnack_mask that differs from the target id's xnack setting,
    # and the default follows it)
    d.pop("reserve_xnack_mask", None)
    for name in ("user_sgpr_private_segment_buffer", "user_sgpr_flat_scratch_init"):
        if not d.get(name):
            d.pop(name, None)  # (llvm-mc refuses them with architected flat scratch)
    top = min(d["next_free_sgpr"], target.sgpr.addressable)
    for n in range(top, max(top - 32, -1), -1):  # (a granule is at most 16 SGPRs)
        d["next_free_sgpr"] = n
        try:
            made = descriptor_from_directives(target, d)
        except AsterismError:
            continue
        # (the entry offset is the writer's, from the layout)
        if dataclasses.replace(made, kernel_code_entry_byte_offset=0) == \
                dataclasses.replace(kd, kernel_code_entry_byte_offset=0):
            return d
    d["next_free_sgpr"] = top  # (no value gives it back: the nearest one)
    return d


def d_address(item) -> int:
    """The address of a decode_code item (DecodedInst or (address, word))."""
    return item[0] if isinstance(item, tuple) else item.address


def _kernel_of(name: str, body: list) -> McKernel:
    """An McKernel of decoded items, branches inside it turned into labels."""
    starts = {d_address(d) for d in body}
    targets = {}
    for d in body:
        if isinstance(d, DecodedInst):
            t = branch_target(d)
            if t is not None and t in starts:
                targets[d.address] = t
    labelled = set(targets.values())
    out: list = []
    for d in body:
        address = d_address(d)
        if address in labelled:
            out.append(LabelDef(f".L_{address:x}"))
        if isinstance(d, tuple):
            out.append(d[1])
            continue
        inst = exact_inst(d)
        if inst is None:
            out.append(data_inst(d.words))
            continue
        if address in targets:
            inst = copy.copy(inst)
            inst.operands = [Label(f".L_{targets[address]:x}") if s.syntax == "label" else o
                             for s, o in zip(inst.form.operands, inst.operands)]
        out.append(inst)
    return McKernel(name, body=out)
