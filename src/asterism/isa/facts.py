"""Per-instruction facts derived from the ISA database, once for every layer.

The passes (waits, hazards) and the emulator (its sanitizer, hazard checker and timing model)
must agree on which registers an instruction reads and writes; both ask here.
"""

from __future__ import annotations

from asterism.isa.database import Instruction, OperandSpec

Names = tuple[tuple[str, ...], tuple[str, ...]]


def def_is_read(spec: OperandSpec) -> bool:
    """True if a written operand is also read: tied operands (v_fmac, DPP old, writelane)
    and the src0 of v_permlane*_swap, which the database lists as a plain destination
    although the swap reads it."""
    return bool(spec.tied) or spec.name.startswith("src")


# id(inst) -> (inst, names): Instruction holds dicts (unhashable); the instruction is kept
# beside its answer so that a recycled id is never mistaken for it.
_IMPLICIT: dict[int, tuple[Instruction, Names]] = {}


def implicit_names(inst: Instruction) -> Names:
    """The implicit uses and defs of an instruction (register names: exec, vcc, m0, scc).

    The ISA database lists them per instruction (the union over its forms); when some form
    names VCC as a fixed operand, VCC is dropped: the forms that read or write VCC show it
    among their operands, and the VOP3 forms (v_cmp_*_e64, v_addc_co_u32_e64...) use an
    explicit SGPR pair instead. Cached per instruction."""
    found = _IMPLICIT.get(id(inst))
    if found is not None and found[0] is inst:
        return found[1]
    if not any(o.fixed == "vcc" for f in inst.forms for o in f.operands):
        names = (tuple(inst.implicit_uses), tuple(inst.implicit_defs))
    else:
        names = (tuple(n for n in inst.implicit_uses if n != "vcc"),
                 tuple(n for n in inst.implicit_defs if n != "vcc"))
    _IMPLICIT[id(inst)] = (inst, names)
    return names


def packed_f32_or_dot(inst: Instruction) -> bool:
    """A VALU instruction that works on two 32-bit values per lane in a register pair
    (v_pk_{add,fma,mul}_f32, v_pk_mov_b32: the database's `packed` flag with a 64-bit
    destination; packed 16-bit ops have a 32-bit one) or a DOT instruction (`dot` flag)."""
    if "dot" in inst.flags:
        return True
    if "packed" not in inst.flags or not inst.forms or not inst.forms[0].operands:
        return False
    return inst.forms[0].operands[0].width == 2
