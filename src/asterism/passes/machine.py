"""Machine-level view of a kernel for the waits and hazards passes: CFG and register keys.

Registers are named by integer keys, the same numbering as the emulator's sanitizer
(`v`N -> N, `a`N -> 256 + N, `s`N -> 1024 + N with the named scalar registers at their
encoding (vcc 1130/1131, m0 1148, exec 1150/1151), scc -> 1200). A relocatable register
(before register allocation) has no number: its keys are `(root, i)` tuples, where `root`
identifies the chain of destination-passing values that share the register (an
`amdgcn.alloca` and every result that returns it). The pieces of
`amdgcn.split_register_range` and the range of `amdgcn.make_register_range` have their
operands' keys (a load into a range and a read of one of its registers share that key).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from xdsl.ir import Block, Operation, SSAValue

from asterism.ir.abi import KernelLayout, compute_layout
from asterism.ir.match import Match
from asterism.ir.ops import (
    ABI_VALUE_OPS,
    BranchOp,
    EndKernelOp,
    FallthroughOp,
    InstructionOp,
    KernelOp,
    MakeRegisterRangeOp,
    SOPPOp,
    SplitRegisterRangeOp,
)
from asterism.ir.types import (
    NAMED_REGISTER_CLASSES,
    RegisterType,
    SpecialRegType,
)
from asterism.ir.verify import match_instruction
from asterism.isa import Instruction, IsaDatabase
from asterism.isa.facts import def_is_read, implicit_names
from asterism.isa.syntax import NAMED_PAIR_CODES, NAMED_SCALAR_CODES, TTMP_BASE
from asterism.passes.instfacts import form_key
from asterism.target.chip import Target, get_target
from asterism.target.hazards import KEY_AGPR, KEY_SCC, KEY_SGPR, register_key_name

Key = int | tuple

# Named registers the register keys track (implicit operands of the ISA database included).
_SPECIAL_ALIASES = {"src_vccz": "vcc", "vccz": "vcc", "src_execz": "exec", "execz": "exec",
                    "src_scc": "scc", "flat_scr": "flat_scratch"}


def special_keys(name: str) -> tuple[int, ...]:
    """Keys of a named scalar register (vcc, exec_lo, m0, scc...); () for constants."""
    name = _SPECIAL_ALIASES.get(name, name)
    if name == "scc":
        return (KEY_SCC,)
    if name in NAMED_PAIR_CODES and NAMED_PAIR_CODES[name] < 128:
        base = KEY_SGPR + NAMED_PAIR_CODES[name]
        return (base, base + 1)
    code = NAMED_SCALAR_CODES.get(name)
    if code is not None and code < 128 and name != "null":
        return (KEY_SGPR + code,)
    return ()


def key_name(key: Key) -> str:
    """Assembly-like name of a key (v5, a3, s7, vcc_lo, m0, scc, or %reg[i])."""
    if isinstance(key, tuple):
        return f"%{key[0].split('#')[0]}[{key[1]}]"
    return register_key_name(key)


# ---------------------------------------------------------------------------- CFG


@dataclass
class KernelCfg:
    """The blocks of a kernel with their successors and predecessors."""

    blocks: list[Block]
    succs: dict[Block, list[Block]]
    preds: dict[Block, list[Block]]

    def rpo(self) -> list[Block]:
        """Blocks in reverse post-order from the entry (unreachable blocks appended)."""
        seen: set[Block] = set()
        order: list[Block] = []

        def visit(b: Block) -> None:
            stack: list[tuple[Block, Iterator[Block]]] = [(b, iter(self.succs[b]))]
            seen.add(b)
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    order.append(node)
                    stack.pop()
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, iter(self.succs[nxt])))

        if self.blocks:
            visit(self.blocks[0])
        out = order[::-1]
        out += [b for b in self.blocks if b not in seen]
        return out


def kernel_cfg(kernel: KernelOp) -> KernelCfg:
    """Control flow between the blocks of a kernel (branches, fall-through, end)."""
    blocks = list(kernel.body.blocks)
    succs: dict[Block, list[Block]] = {}
    for i, block in enumerate(blocks):
        last = block.last_op
        if isinstance(last, BranchOp):
            out = list(last.targets)
        elif isinstance(last, FallthroughOp):
            out = [last.dest]
        elif isinstance(last, EndKernelOp) or (
                isinstance(last, SOPPOp) and last.mnemonic_text == "s_endpgm"):
            out = []
        else:
            out = [blocks[i + 1]] if i + 1 < len(blocks) else []
        succs[block] = list(dict.fromkeys(out))
    preds: dict[Block, list[Block]] = {b: [] for b in blocks}
    for b, out in succs.items():
        for s in out:
            preds[s].append(b)
    return KernelCfg(blocks, succs, preds)


# ---------------------------------------------------------------------------- forms

_FORM_CACHE: dict[str, dict[tuple, Match]] = {}




_OP_KINDS: dict[type, type | None] = {}


def op_kind(cls: type) -> type | None:
    """InstructionOp, BranchOp, EndKernelOp or None: which of them `cls` is a subclass of
    (memoised: isinstance on these ABC-based classes is slow, and most ops of a kernel are
    allocas that are none of them)."""
    kind = _OP_KINDS.get(cls, op_kind)
    if kind is op_kind:
        kind = _OP_KINDS[cls] = next(
            (k for k in (InstructionOp, BranchOp, EndKernelOp) if issubclass(cls, k)), None)
    return kind  # type: ignore[return-value]


# ---------------------------------------------------------------------------- registers


@dataclass
class OpRegs:
    """Registers an instruction op reads and writes (explicit and implicit operands)."""

    uses: tuple[Key, ...]
    defs: tuple[Key, ...]
    explicit_defs: tuple[Key, ...]


@dataclass
class MachineKernel:
    """A kernel with its layout, ISA, matched forms and register keys (computed lazily)."""

    kernel: KernelOp
    isa: IsaDatabase
    layout: KernelLayout = field(init=False)
    _matches: dict[Operation, Match] = field(default_factory=dict, init=False)
    _roots: dict[SSAValue, SSAValue] = field(default_factory=dict, init=False)
    _regs: dict[Operation, OpRegs] = field(default_factory=dict, init=False)
    _keys: dict[SSAValue, tuple] = field(default_factory=dict, init=False)
    _form_keys: dict[Operation, tuple] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.layout = compute_layout(self.kernel)

    def match(self, op: InstructionOp) -> Match:
        """The database form of an instruction op (cached per op, and per target by what
        decides the form: family, mnemonic, operand shapes and modifier names)."""
        m = self._matches.get(op)
        if m is None:
            key = self.form_key(op)
            cache = _FORM_CACHE.setdefault(self.isa.target, {})
            m = cache.get(key)
            if m is None:
                m = match_instruction(op, self.isa, self.layout)
                cache[key] = m
            self._matches[op] = m
        return m

    def instruction(self, op: Operation) -> Instruction | None:
        """The ISA instruction of an instruction or branch op."""
        kind = op_kind(type(op))
        if kind is InstructionOp:
            return self.match(op).instruction  # type: ignore[arg-type]
        if kind is BranchOp:
            found = self.isa.resolve(op.mnemonic_text)  # type: ignore[attr-defined]
            return found[0] if found else None
        if kind is EndKernelOp:
            return self.isa.instructions.get("s_endpgm")
        return None

    def root(self, value: SSAValue) -> SSAValue:
        """The first value of the destination-passing chain `value` belongs to."""
        seen = []
        v = value
        while True:
            if v in self._roots:
                v = self._roots[v]
                break
            owner = v.owner
            if isinstance(owner, InstructionOp) and v in owner.outs and v is not owner.token:
                m = self.match(owner)
                idx = list(owner.outs).index(v)
                pos = m.def_positions[idx]
                seen.append(v)
                v = owner.args[pos]
                continue
            break
        for s in seen:
            self._roots[s] = v
        return v

    def keys(self, value: SSAValue) -> tuple[Key, ...]:
        """Register keys of an operand value (() for immediates, tokens, off); cached."""
        found = self._keys.get(value)
        if found is None:
            found = self._keys[value] = self._compute_keys(value)
        return found

    def form_key(self, op: InstructionOp) -> tuple:
        """`form_key(op)`, cached per op."""
        found = self._form_keys.get(op)
        if found is None:
            found = self._form_keys[op] = form_key(op)
        return found

    def _compute_keys(self, value: SSAValue) -> tuple[Key, ...]:
        t = value.type
        if type(t) is SpecialRegType:
            return special_keys(t.reg_name)
        if type(t) not in NAMED_REGISTER_CLASSES:
            return ()
        assert isinstance(t, RegisterType)
        if not t.is_fixed:
            owner = value.owner
            if isinstance(owner, ABI_VALUE_OPS):
                fixed = self.layout.abi_register(owner)
                if fixed is not None:
                    t = fixed
            if not t.is_fixed:
                root = self.root(value)
                owner = root.owner
                if type(owner) is SplitRegisterRangeOp:
                    offset = owner.offsets[root.index]  # type: ignore[attr-defined]
                    return self.keys(owner.source)[offset:offset + t.width]
                if type(owner) is MakeRegisterRangeOp:
                    return tuple(k for p in owner.parts for k in self.keys(p))
                label = f"{root.name_hint or t.KIND}#{id(root)}"
                return tuple((label, i) for i in range(t.width))
        # (trap registers sit at their scalar operand codes, like the named registers)
        base = {"v": 0, "a": KEY_AGPR, "s": KEY_SGPR, "ttmp": KEY_SGPR + TTMP_BASE}[t.KIND]
        return tuple(range(base + t.first, base + t.first + t.width))

    def regs(self, op: Operation) -> OpRegs:
        """The registers `op` reads and writes (destinations that are also read count as
        uses, see `def_is_read`); cached per op."""
        found = self._regs.get(op)
        if found is not None:
            return found
        uses: list[Key] = []
        defs: list[Key] = []
        if isinstance(op, InstructionOp):
            m = self.match(op)
            keys = self.keys
            for (written, read), arg in zip(operand_access(m), op.operands):
                ks = keys(arg)
                if written:
                    defs += ks
                if read:
                    uses += ks
            inst: Instruction | None = m.instruction
        else:
            inst = self.instruction(op)
        explicit = tuple(defs)
        if inst is not None:
            imp_uses, imp_defs = implicit_keys(inst)
            uses += imp_uses
            defs += imp_defs
        found = OpRegs(tuple(dict.fromkeys(uses)), tuple(dict.fromkeys(defs)), explicit)
        self._regs[op] = found
        return found


# --- machine facts shared by the passes of a pipeline -------------------------------------
#
# The waits and hazards passes both need every instruction's form, register keys and reads /
# writes (MachineKernel). Within `shared_machine_facts()` (run_pipeline opens one) they get
# one MachineKernel per kernel, computed once; the pipeline drops it after any pass that
# may change an existing op (`Pass.keeps_machine_facts` is False), so what a pass reads was
# computed on the code as it is. Ops a pass inserts are computed when first asked about.

_SHARED: ContextVar[dict[KernelOp, MachineKernel] | None] = ContextVar(
    "asterism_shared_machine_facts", default=None)


@contextmanager
def shared_machine_facts() -> Iterator[dict[KernelOp, MachineKernel]]:
    """Within it, `machine_kernel` returns one MachineKernel per kernel (the store is
    yielded: clear it when the code changes under it)."""
    store: dict[KernelOp, MachineKernel] = {}
    token = _SHARED.set(store)
    try:
        yield store
    finally:
        _SHARED.reset(token)


def machine_kernel(kernel: KernelOp, isa: IsaDatabase) -> MachineKernel:
    """The MachineKernel of `kernel`: the shared one within `shared_machine_facts`, else a
    new one."""
    store = _SHARED.get()
    if store is None:
        return MachineKernel(kernel, isa)
    found = store.get(kernel)
    if found is None or found.isa is not isa:
        found = store[kernel] = MachineKernel(kernel, isa)
    return found


_ACCESS: dict[int, tuple[Match, tuple[tuple[bool, bool], ...]]] = {}


def operand_access(match: Match) -> tuple[tuple[bool, bool], ...]:
    """(written, read) per IR operand of a matched form (see `def_is_read`); cached per
    match (matches are shared by every op of one shape)."""
    found = _ACCESS.get(id(match))
    if found is not None and found[0] is match:
        return found[1]
    access = tuple((s.role == "def", s.role != "def" or def_is_read(s)) for s in match.specs)
    _ACCESS[id(match)] = (match, access)
    return access


_IMPLICIT_KEYS: dict[int, tuple[Instruction, tuple[tuple[Key, ...], tuple[Key, ...]]]] = {}


def implicit_keys(inst: Instruction) -> tuple[tuple[Key, ...], tuple[Key, ...]]:
    """The register keys of `implicit_names(inst)` (uses, defs); cached per instruction."""
    found = _IMPLICIT_KEYS.get(id(inst))
    if found is not None and found[0] is inst:
        return found[1]
    uses, defs = implicit_names(inst)
    keys = (tuple(k for n in uses for k in special_keys(n)),
            tuple(k for n in defs for k in special_keys(n)))
    _IMPLICIT_KEYS[id(inst)] = (inst, keys)
    return keys


def is_fixed_register(value: SSAValue) -> bool:
    """True unless `value` is a relocatable register that is not an ABI input (or a piece
    of ABI inputs)."""
    t = value.type
    if type(t) in NAMED_REGISTER_CLASSES and not t.is_fixed:  # type: ignore[attr-defined]
        owner = value.owner
        if type(owner) is SplitRegisterRangeOp:  # a piece of an ABI input is fixed too
            return is_fixed_register(owner.source)  # type: ignore[attr-defined]
        if type(owner) is MakeRegisterRangeOp:
            return all(is_fixed_register(p) for p in owner.parts)  # type: ignore[attr-defined]
        return isinstance(owner, ABI_VALUE_OPS)
    return True


def kernels_of(module: Operation) -> list[KernelOp]:
    """Every amdgcn.kernel of a module, in order."""
    out: list[KernelOp] = []
    _collect_kernels(module, out)
    return out


def _collect_kernels(op: Operation, out: list[KernelOp]) -> None:
    # Kernels hold no kernels (the verifier rejects them there): not walking into their
    # bodies, which are nearly all of a module's ops, saves a full walk per pass.
    if isinstance(op, KernelOp):
        out.append(op)
        return
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                _collect_kernels(inner, out)


def module_target(kernel: KernelOp) -> str:
    """The target name of the amdgcn.module holding `kernel`."""
    parent = kernel.parent_op()
    while parent is not None and getattr(parent, "name", "") != "amdgcn.module":
        parent = parent.parent_op()
    if parent is None:
        raise ValueError("kernel outside an amdgcn.module")
    return parent.target_name  # type: ignore[attr-defined]


def kernel_target(kernel: KernelOp) -> Target:
    """The target of the amdgcn.module holding `kernel`, with its features (e.g. xnack-)."""
    name = module_target(kernel)
    target = get_target(name)
    module = kernel.parent_op()
    while module is not None and getattr(module, "name", "") != "amdgcn.module":
        module = module.parent_op()
    features = getattr(module, "features", None)
    if features is not None and features.data:
        given = get_target(target.name + features.data)
        target = target.with_features(
            xnack=target.xnack if given.xnack is None else given.xnack,
            sramecc=target.sramecc if given.sramecc is None else given.sramecc)
    return target
