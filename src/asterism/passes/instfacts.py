"""Per-instruction facts the passes need, read from the ISA database and cached.

Selecting the database form of an instruction op (`ir.verify.match_instruction`) costs tens of
microseconds; the passes ask about every op, often several times, so the answer is cached by
what decides the form (`form_key`, the one such key of the passes: the op's family and
mnemonic, the shape of each operand, the modifier names). Nothing here checks the op: the
module was verified when it was parsed or built.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.arith import ConstantOp
from xdsl.ir import SSAValue

from asterism.ir.match import Match, immediate_of
from asterism.ir.ops import InstructionOp, LiteralOp
from asterism.ir.types import (
    NAMED_REGISTER_CLASSES,
    OffType,
    RegisterType,
    SpecialRegType,
    TokenType,
)
from asterism.ir.verify import is_decode_only, match_instruction
from asterism.isa import IsaDatabase

# Copies whose destination and source may share a register (coalescing, copy propagation).
COPY_MNEMONICS = frozenset({"v_mov_b32", "s_mov_b32", "s_mov_b64", "v_mov_b64",
                            "v_accvgpr_mov_b32"})
# Encodings in which a copy is a plain copy (no DPP/SDWA lane or sub-dword selection).
COPY_ENCODINGS = frozenset({"VOP1", "VOP3", "SOP1"})
# Ops that keep part of their destination when a condition fails: the destination is read.
CONDITIONAL_WRITES = ("s_cmov", "s_cmovk")


@dataclass(frozen=True)
class InstFacts:
    """What an instruction op reads and writes, as far as registers are concerned."""

    mnemonic: str  # the database mnemonic (no suffix)
    enc: str
    unit: str
    flags: frozenset[str]
    implicit_defs: tuple[str, ...]
    implicit_uses: tuple[str, ...]
    def_positions: tuple[int, ...]  # operand indices of the destinations, in result order
    read_defs: frozenset[int]  # destinations whose old value the instruction reads (tied)
    aligns: tuple[int, ...]  # register alignment each operand slot needs (1 if none)
    early_clobber: bool  # destinations may not overlap sources (wide MFMA, v_mad_*64_32)
    has_token: bool
    is_copy: bool  # a plain full-width register copy (see COPY_MNEMONICS)
    counters: tuple[str, ...]

    def result_for(self, position: int) -> int | None:
        """Index of the result that returns destination operand `position` (None if it is
        not a destination)."""
        try:
            return self.def_positions.index(position)
        except ValueError:
            return None


# --- what decides the form --------------------------------------------------------------
#
# The passes cache what they learn from an op's database form (its Match, its register facts,
# its hazard rules) by a key that is cheap to compute and tells apart every two verified ops
# that could select different forms. (`ir.verify` caches the match itself by the exact key,
# which also holds what only decides whether an op is accepted; this one is for verified ops.)



def operand_shape(value: SSAValue) -> tuple:
    """What an operand of a verified instruction op is, as far as its form cares: register
    file, width and (fixed) alignment, named register, off, token, or immediate value, kind and
    whether it is a literal."""
    t = value.type
    cls = type(t)
    if cls in NAMED_REGISTER_CLASSES:
        # (a fixed tuple's first register modulo 4: the alignment rules of tuples)
        return (t.KIND, t.width, t.is_fixed and t.first % 4)  # type: ignore[attr-defined]
    if cls is SpecialRegType:
        return ("special", t.reg_name)  # type: ignore[attr-defined]
    if cls is OffType or cls is TokenType:
        return (t.name,)  # type: ignore[attr-defined]
    owner = value.owner
    if isinstance(owner, ConstantOp | LiteralOp):
        imm, imm_type, literal = immediate_of(value)
        if imm is None:  # a constant of no integer or float value: its type tells it apart
            return ("imm", owner.value.type)  # type: ignore[union-attr]
        # The Python type separates 1 from 1.0 and True; floats by their bits (-0.0).
        return ("imm", type(imm), imm.hex() if isinstance(imm, float) else imm, imm_type,
                literal)
    return ("other", type(t).__name__, type(owner).__name__)


def form_key(op: InstructionOp) -> tuple:
    """What selects the database form of a verified instruction op: the family, the
    mnemonic, each operand's shape (`operand_shape`), the modifier names (flags such as lds
    or sc0 select forms) and whether the op is kept as decoded."""
    props = op.properties  # direct access: the property descriptors are slow
    mods = props.get("modifiers")
    names = tuple(sorted(mods.data)) if mods is not None else ()
    # (an instruction op's operands are its args)
    return (type(op), props["mnemonic"].data, tuple([operand_shape(a) for a in op.operands]),
            names, is_decode_only(op))


def _sgpr_tuple_align(width: int) -> int:
    # The gfx9 rule mirrored by ir.match: SGPR pairs are even, wider tuples 4-aligned.
    if width <= 1:
        return 1
    return 2 if width == 2 else 4


def _early_clobber(match: Match) -> bool:
    inst = match.instruction
    if inst.mnemonic.startswith(("v_mfma", "v_smfmac")):
        # As LLVM (VOPProfileMAI.NoDstOverlap): a result wider than 128 bits may not partly
        # overlap the sources; srcC may still be the very same registers (in-place).
        return any(match.specs[p].width > 4 for p in match.def_positions)
    # LLVM ties these to @earlyclobber $vdst on gfx9.
    return inst.mnemonic in ("v_mad_u64_u32", "v_mad_i64_i32")


class FactsCache:
    """`facts(op)` for the instruction ops of one target (cached by operand shapes)."""

    def __init__(self, isa: IsaDatabase):
        self.isa = isa
        self._cache: dict[tuple, InstFacts] = {}

    def facts(self, op: InstructionOp) -> InstFacts:
        """The register facts of `op`."""
        key = form_key(op)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._compute(op)
        return found

    def _compute(self, op: InstructionOp) -> InstFacts:
        match = match_instruction(op, self.isa)
        inst = match.instruction
        defs = tuple(match.def_positions)
        read_defs = {p for p in defs if match.specs[p].tied}
        if inst.mnemonic.startswith(CONDITIONAL_WRITES):
            read_defs |= set(defs)
        aligns = []
        for k, spec in enumerate(match.specs):
            align = max(1, spec.align)
            if k < len(op.args):
                t = op.args[k].type
                if isinstance(t, RegisterType) and t.KIND == "s":
                    align = max(align, _sgpr_tuple_align(t.width))
            aligns.append(align)
        is_copy = (inst.mnemonic in COPY_MNEMONICS and match.form.enc in COPY_ENCODINGS
                   and len(defs) == 1 and not op.mods)
        return InstFacts(
            mnemonic=inst.mnemonic, enc=match.form.enc, unit=inst.unit, flags=inst.flags,
            implicit_defs=inst.implicit_defs, implicit_uses=inst.implicit_uses,
            def_positions=defs, read_defs=frozenset(read_defs), aligns=tuple(aligns),
            early_clobber=_early_clobber(match), has_token=match.has_token, is_copy=is_copy,
            counters=match.form.counters)


_CACHES: dict[str, FactsCache] = {}


def facts_cache(isa: IsaDatabase) -> FactsCache:
    """The shared cache of a target's instruction facts."""
    cache = _CACHES.get(isa.target)
    if cache is None:
        cache = _CACHES[isa.target] = FactsCache(isa)
    return cache
