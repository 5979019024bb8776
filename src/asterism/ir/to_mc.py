"""Lowering: amdgcn IR (all registers fixed) -> MC layer (`McModule` of `mc.Inst`).

Each instruction op becomes one `Inst` with its operands in database order (registers,
named registers, immediates, `off`, wait counters as `Syntax`), its modifiers under the MC
names, the matched database form and the op's source location. Blocks become labels (for
branch targets and named blocks), `amdgcn.branch` becomes the branch instruction with a
`Label`, `amdgcn.end_kernel` becomes `s_endpgm`, an `amdgcn.wait` left unresolved by the
waits pass is an error; everything else (allocas, constants, ABI
values, LDS allocations, split_register_range and make_register_range, whose registers
simply coincide with their operands') emits nothing. Nothing is added, removed or reordered.
"""

from __future__ import annotations

import weakref
from collections import Counter

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from asterism.errors import VerifyError
from asterism.ir.abi import KernelLayout, compute_layout, lds_size, mc_kernel_args
from asterism.ir.kernel_attrs import (
    HIDDEN_BITS_ATTR,
    apply_kernel_attributes,
    apply_module_attributes,
    hidden_bits_of,
)
from asterism.ir.loops import has_structured
from asterism.ir.match import WAITCNT_COUNTERS, Match, canonical_float, immediate_of
from asterism.ir.ops import (
    ABI_VALUE_OPS,
    BranchOp,
    EndKernelOp,
    FallthroughOp,
    InstructionOp,
    KernelOp,
    MakeRegisterRangeOp,
    SplitRegisterRangeOp,
    WaitOp,
    op_location,
)
from asterism.ir.types import OffType, RegisterType, SpecialRegType, type_text
from asterism.ir.verify import (
    BuiltOps,
    VerifiedFacts,
    amdgcn_modules,
    check_instruction_keyed,
    error_at,
    has_relocatable,
    is_decode_only,
    verify_module,
)
from asterism.isa import Form, IsaDatabase, OperandSpec, get_isa, syntax
from asterism.mc.inst import HIDDEN_BITS, Inst
from asterism.mc.matcher import MatchError as McMatchError
from asterism.mc.matcher import match_form, select_form
from asterism.mc.operands import (
    OFF,
    FloatImm,
    Imm,
    Label,
    Literal,
    Mod,
    Operand,
    Reg,
    Special,
    Syntax,
)
from asterism.mc.program import LabelDef, McKernel, McModule
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc

REGALLOC_HINT = "run the register allocation pass (--pipeline regalloc) or give it a fixed " \
                "register"


def lower_module(module: Operation, facts: VerifiedFacts | None = None,
                 built: BuiltOps | None = None) -> McModule:
    """Verify and lower a module (one amdgcn.module) to the MC layer. `facts` and `built`:
    instruction ops the caller made and checked itself (their forms in `facts.forms`, the
    ops in `built`), not matched again while unchanged (see verify_module)."""
    # The instructions made here would push the cyclic collector into full collections that
    # re-scan the whole IR (often longer than the lowering itself); see support.gcpause.
    was_enabled = pause_cyclic_gc()
    try:
        return _lower_module(module, facts or VerifiedFacts(), built)
    finally:
        resume_cyclic_gc(was_enabled)


def _lower_module(module: Operation, facts: VerifiedFacts, built: BuiltOps | None
                  ) -> McModule:
    if has_structured(module):
        # (scf loops and branches become blocks first, in a copy: the input stays as given)
        from asterism.ir.loop_lowering import drop_coalesced_copies, lower_structured_module

        module = module.clone()
        lower_structured_module(module)
        for kernel in module.walk():
            if isinstance(kernel, KernelOp):
                drop_coalesced_copies(kernel)
        facts, built = VerifiedFacts(), None  # (the caller's facts are of other ops)
    verify_module(module, facts, built)
    amods = amdgcn_modules(module)
    if len(amods) != 1:
        raise VerifyError(f"expected exactly one amdgcn.module, found {len(amods)}",
                          op_location(module))
    amod = amods[0]
    isa = get_isa(amod.target_name)
    kernels = [op for op in amod.body.ops if isinstance(op, KernelOp)]
    hints = Counter(b.name_hint for k in kernels for b in k.body.blocks if b.name_hint)
    out = McModule(target=amod.target_name,
                   features=amod.features.data if amod.features is not None else "")
    for kernel in kernels:
        out.kernels.append(_KernelLowering(kernel, isa, hints, facts).run())
    apply_module_attributes(amod, out)
    return out


# A lowered instruction without its location: (printed mnemonic, operands, modifiers, form).
_Lowered = tuple[str, tuple[Operand, ...], dict[str, object], Form]


class _LoweredCache:
    """Lowered instructions by the exact match key of their op (see ir.match.operands_key),
    per ISA database: everything lowering reads from an op with fixed registers is in that
    key, and a kernel repeats a few hundred distinct instructions thousands of times."""

    LIMIT = 100_000  # entries kept per database; a long-running process starts over past this

    def __init__(self) -> None:
        self.entries: dict[tuple, _Lowered] = {}

    def get(self, key: tuple) -> _Lowered | None:
        """The lowering of `key`, if seen."""
        return self.entries.get(key)

    def put(self, key: tuple, lowered: _Lowered) -> None:
        """Remember a successful lowering (bounded)."""
        if len(self.entries) >= self.LIMIT:
            self.entries.clear()
        self.entries[key] = lowered


_LOWERED: weakref.WeakKeyDictionary[IsaDatabase, _LoweredCache] = weakref.WeakKeyDictionary()


def _lowered_cache(isa: IsaDatabase) -> _LoweredCache:
    cache = _LOWERED.get(isa)
    if cache is None:
        cache = _LOWERED[isa] = _LoweredCache()
    return cache


class _KernelLowering:
    def __init__(self, kernel: KernelOp, isa: IsaDatabase, hint_counts: Counter,
                 facts: VerifiedFacts):
        self.kernel = kernel
        self.isa = isa
        self.layout: KernelLayout = facts.layouts.get(kernel) or compute_layout(kernel)
        self.forms = facts.forms
        self.cache = _lowered_cache(isa)
        self.hint_counts = hint_counts
        self.labels: dict[Block, str] = {}

    def label(self, block: Block) -> str:
        """The assembly label of a block (its name if unique in the module)."""
        if block not in self.labels:
            name = self.kernel.kernel_name
            hint = block.name_hint
            if hint and self.hint_counts[hint] == 1:
                self.labels[block] = hint
            elif hint:
                self.labels[block] = f"{name}_{hint}"
            else:
                index = list(self.kernel.body.blocks).index(block)
                self.labels[block] = f".L{name}_bb{index}"
        return self.labels[block]

    def run(self) -> McKernel:
        """Lower the whole kernel."""
        kernel = self.kernel
        blocks = list(kernel.body.blocks)
        # (a branch ends its block: verified, as for every op with successors)
        targets = {b.last_op.targets[0] for b in blocks if isinstance(b.last_op, BranchOp)}
        body: list[Inst | LabelDef] = []
        for index, block in enumerate(blocks):
            if index and (block in targets or block.name_hint):
                body.append(LabelDef(self.label(block)))
            for op in block.ops:
                inst = self.lower_op(op)
                if inst is not None:
                    body.append(inst)
        out = McKernel(name=kernel.kernel_name, body=body, args=mc_kernel_args(kernel.args),
                       workgroup_size=kernel.launch_size, lds_size=lds_size(kernel, self.layout),
                       abi=self.layout.abi)
        apply_kernel_attributes(kernel, out, self.isa.target)
        return out

    def lower_op(self, op: Operation) -> Inst | None:
        """The instruction an op stands for (None for declarations)."""
        if isinstance(op, InstructionOp):
            return self.lower_instruction(op)
        if isinstance(op, BranchOp):
            inst_def, _suffix = self.isa.resolve(op.mnemonic_text)  # verified
            form = next(f for f in inst_def.forms
                        if any(s.syntax == "label" for s in f.operands))
            return Inst(op.mnemonic_text, [Label(self.label(op.target))], {}, form,
                        op_location(op))
        if isinstance(op, EndKernelOp):
            form = self.isa.instructions["s_endpgm"].forms[0]
            operands: list[Operand] = []
            if op.imm is not None:
                value, _type, _literal = immediate_of(op.imm, self.layout)
                if not isinstance(value, int) or not 0 <= value <= 0xFFFF:
                    raise error_at(op, f"the s_endpgm immediate is a 16-bit integer, got "
                                       f"{value!r}")
                operands.append(Imm(value))
            return Inst("s_endpgm", operands, {}, form, op_location(op))
        if isinstance(op, func.CallOp):
            raise error_at(op, f"calls to @{op.callee.root_reference.data} are not lowered: run "
                               "the inline pass (--pipeline inline) first")
        if isinstance(op, WaitOp):
            raise error_at(op, "unresolved: the waits pass turns this wait into s_waitcnt; "
                               "run it first (--pipeline waits, or a pipeline that includes "
                               "it such as auto)")
        if isinstance(op, FallthroughOp):
            return None
        return None  # declarations: allocas, constants, ABI values, LDS allocations, views

    def lower_instruction(self, op: InstructionOp) -> Inst:
        """An instruction op as an mc.Inst (operands in database order), with the bits of
        its `hidden_bits` attribute (raised words no operand gives) for the encoder."""
        inst = self._lower_instruction(op)
        if op.attributes and HIDDEN_BITS_ATTR in op.attributes:
            bits = hidden_bits_of(op.attributes[HIDDEN_BITS_ATTR], f"{op.name} attribute")
            if bits:
                inst.modifiers = {**inst.modifiers, HIDDEN_BITS: bits}
        return inst

    def _lower_instruction(self, op: InstructionOp) -> Inst:
        found = self.forms.get(op)
        if found is None:  # not seen by verification (it checks every op of a kernel)
            # (with its match key: an op checked on its own, as the raiser checks each one,
            # still finds the lowering of an equal op in the cache)
            found = check_instruction_keyed(op, self.isa, self.layout)
        match, key = found
        # Relocatable operands (only ABI values get this far) lower to the registers of their
        # kernel's layout, which the key does not hold.
        if key is not None and not has_relocatable(key):
            lowered = self.cache.get(key)
            if lowered is None:
                inst = self.build_instruction(op, match)
                self.cache.put(key, (inst.mnemonic, tuple(inst.operands),
                                     dict(inst.modifiers), inst.form))
                return inst
            mnemonic, operands, mods, form = lowered
            return Inst(mnemonic, list(operands), dict(mods), form, op_location(op))
        return self.build_instruction(op, match)

    def build_instruction(self, op: InstructionOp, match: Match) -> Inst:
        """Lower an instruction op whose form is `match` (and check it against the MC
        layer)."""
        form = match.form
        mods = op.mods
        sources = match.source_positions
        src_mods = {name: mods.get(name, ()) for name in ("neg", "abs", "sext")}
        operands: list[Operand] = []
        k = 0
        for spec in form.operands:
            if spec.syntax == "waitcnt":
                counts = {c: mods[c] for c in WAITCNT_COUNTERS if c in mods}
                value = syntax.encode_waitcnt(**counts)
                operands.append(Syntax(value, syntax.format_waitcnt(value)))
                continue
            if k >= len(op.args):
                break  # an omitted optional operand
            operand = self.operand(op, k, spec, op.args[k])
            if k in sources:
                s = sources.index(k)
                neg, abs_, sext = (_bit(src_mods[n], s) for n in ("neg", "abs", "sext"))
                if neg or abs_ or sext:
                    operand = Mod(operand, neg=neg, abs=abs_, sext=sext)
            operands.append(operand)
            k += 1
        inst_mods = {name: value for name, value in mods.items()
                     if name not in ("neg", "abs", "sext", *WAITCNT_COUNTERS)}
        inst = Inst(op.mnemonic_text, operands, inst_mods, form, op_location(op))
        inst.mnemonic = self.printed_mnemonic(inst, form)
        if is_decode_only(op):
            return inst  # (kept as decoded: the assembler's rules are what it breaks)
        try:
            match_form(inst, form)
        except McMatchError as err:
            raise error_at(op, f"the MC layer rejects this instruction: {err.message}") from None
        return inst

    def printed_mnemonic(self, inst: Inst, form: Form) -> str:
        """The mnemonic as written, plus the form's suffix when the text would otherwise
        assemble to another encoding (so the asm says exactly which encoding was written)."""
        written = inst.mnemonic
        found = self.isa.resolve(written)
        if found is None or found[1] or not form.suffix:
            return written
        probe = Inst(written, inst.operands, inst.modifiers)
        try:
            chosen = select_form(probe, self.isa.target)
        except VerifyError:
            chosen = None
        if chosen is not None and chosen.enc == form.enc and chosen.variant == form.variant:
            return written
        return written + form.suffix

    def operand(self, op: InstructionOp, k: int, spec: OperandSpec, value: SSAValue) -> Operand:
        """The MC operand for IR operand `k` of `op`."""
        t = value.type
        if isinstance(t, RegisterType):
            if not t.is_fixed:
                found = abi_view_register(value, self.layout)
                if found is not None:
                    t = found
                else:
                    name = f"%{value.name_hint} " if value.name_hint else ""
                    raise error_at(op, f"operand #{k} ({spec.name}) {name}has the relocatable "
                                       f"type {type_text(t)}: {REGALLOC_HINT}")
            return Reg(t.KIND, t.first, t.width)
        if isinstance(t, SpecialRegType):
            return Special(t.reg_name)
        if isinstance(t, OffType):
            return OFF
        imm, _type, literal = immediate_of(value, self.layout)
        if imm is None:
            raise error_at(op, f"operand #{k} ({spec.name}) is not an immediate or register")
        if literal:
            return Literal(int(imm))
        if spec.syntax:
            return _syntax_operand(spec.syntax, int(imm))
        if isinstance(imm, float):
            return FloatImm(canonical_float(imm))
        return Imm(imm)


def abi_view_register(value: SSAValue, layout: KernelLayout) -> RegisterType | None:
    """The register of an ABI input value, or of a piece of one (split/make_register_range
    of ABI inputs and fixed registers), from the kernel's layout; None for anything else."""
    t = value.type
    if isinstance(t, RegisterType) and t.is_fixed:
        return t
    owner = value.owner
    if isinstance(owner, ABI_VALUE_OPS):
        return layout.abi_register(owner)
    if isinstance(owner, SplitRegisterRangeOp):
        src = abi_view_register(owner.source, layout)
        if src is None or not isinstance(t, RegisterType):
            return None
        offset = owner.offsets[list(owner.pieces).index(value)]
        return type(src)(src.first + offset, t.width)
    if isinstance(owner, MakeRegisterRangeOp):
        parts = [abi_view_register(p, layout) for p in owner.parts]
        if any(p is None for p in parts) or not isinstance(t, RegisterType):
            return None
        first = parts[0].first  # type: ignore[union-attr]
        if any(p.first != first + o for p, o in zip(parts, owner.offsets)):  # type: ignore
            return None
        return type(t)(first, t.width)
    return None


def _bit(bits, index: int) -> bool:
    return bool(bits[index]) if index < len(bits) else False


def _syntax_operand(kind: str, value: int) -> Operand:
    """An immediate written in a special syntax (hwreg, sendmsg, gpr_idx)."""
    formatter = getattr(syntax, f"format_{kind}", None)
    if formatter is None:
        return Imm(value)
    return Syntax(value, formatter(value))


def lower_ir_text(text: str, filename: str = "<input>") -> McModule:
    """Parse, verify and lower IR text in one step."""
    from asterism.ir.text import parse_ir

    return lower_module(parse_ir(text, filename, verify=False))  # (lowering verifies it)


__all__ = ["lower_ir_text", "lower_module"]
