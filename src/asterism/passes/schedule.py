"""`schedule`: a list scheduler that reorders instructions inside basic blocks (opt-in).

    asterism opt --pipeline 'schedule' k.mlir
    asterism.compile(module, pipeline="schedule{guard=hazards,counters=auto}")

What may move. A block is cut into *regions* at every instruction whose effect depends on
its position rather than on registers: branches and other non-instruction ops, every SOPP
instruction (`s_waitcnt`, `s_nop`, `s_barrier`, `s_setprio`, `s_sleep`, `s_sendmsg`...),
`s_setreg`/`s_getreg`, `s_memtime`, cache write-backs/invalidations, `s_getpc`/`s_setpc`,
`s_set_gpr_idx_*`, GDS/GWS/`ds_append`, and every op of a "keep order" span (ops carrying the
`sched.keep_order` attribute, from the first to the last op of a span in the block; the
builder's `kb.keep_order()` writes it). Nothing moves across a region boundary, and the ops
of a keep-order span are never moved or interleaved.

Inside a region the order respects:
* registers: read-after-write, write-after-write and write-after-read on 32-bit register
  units, so sub-register overlap of ranges counts (v[4:7] vs v5); relocatable values by their
  destination-passing chain (the chain is one register after allocation); the implicit
  vcc/exec/scc/m0/mode reads and writes of the ISA database; SSA operands;
* memory: a store is ordered with every load and store of the same space (LDS, global,
  scratch; FLAT may be any of them; SMEM reads global memory; LDS DMA reads global and
  writes LDS);
* counters: the instructions counted by one wait counter keep their relative order when the
  kernel has an `s_waitcnt` with a non-zero count of that counter (`counters=auto`), because
  such a count names "all but the last N" in issue order (`counters=keep` always keeps it,
  `counters=free` never does);
* hazards (`guard=hazards`, the default): for every pair of instructions linked by a rule of
  `target/hazards.py`, the number of instructions between them never drops below
  min(required wait states, what the input had), also across region and block boundaries;
  `guard=off` leaves that to the `hazards` pass (run it after `schedule`). The XNACK
  soft-clause rules are not distances and are not guarded: run `hazards` after `schedule`
  to break the clauses that moving memory instructions together makes.

Priority. Cycle-driven list scheduling on the timing model of `target/timing.py`: at each
issue slot, among the instructions whose operands are ready and whose execution unit is free,
take the one with the longest latency-weighted path to the end of the region (critical path),
then the original order. A busy matrix core therefore lets VALU/DS/VMEM work fill the shadow
of an MFMA instead of issuing MFMAs back to back. A region whose modeled time would not
improve keeps its order, so the pass never makes the model's estimate worse.

`estimate_cycles(module)` returns the model's cycle estimate per block (the same issue model:
in-order issue, one instruction per `issue_cycles`, latencies, unit occupancy, `s_waitcnt`
waiting for the counted instructions, `s_nop N` = N+1 slots).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntAttr, IntegerAttr, StringAttr
from xdsl.ir import Block, Operation, SSAValue

from asterism.ir.match import immediate_of
from asterism.ir.ops import (
    ABI_VALUE_OPS,
    KEEP_ORDER_ATTR,
    VIEW_OPS,
    AllocaOp,
    InstructionOp,
    KernargOffsetOp,
    KernelOp,
    LdsAllocOp,
    LiteralOp,
    MakeRegisterRangeOp,
    OffOp,
    SplitRegisterRangeOp,
)
from asterism.ir.types import RegisterType, SpecialRegType
from asterism.ir.verify import amdgcn_modules, match_instruction
from asterism.isa import Instruction, IsaDatabase, get_isa
from asterism.passes.base import Pass, option
from asterism.passes.instfacts import form_key
from asterism.target.hazards import HazardRule, distance_rules, instruction_classes, rules_for
from asterism.target.timing import TimingModel, get_timing, timing_class

# Instructions whose effect depends on their position in the stream (see the docstring).
_BARRIER_PREFIXES = (
    "s_setreg", "s_getreg", "s_memtime", "s_memrealtime", "s_dcache", "s_icache",
    "buffer_wb", "buffer_inv", "s_getpc", "s_setpc", "s_swappc", "s_set_gpr_idx", "ds_gws",
    "ds_append", "ds_consume", "ds_ordered", "s_sendmsg", "s_trap", "s_ttrace", "s_rfe",
    "s_atc_probe", "s_sethalt", "s_sleep", "s_setprio")
# (split/make_register_range too: they emit nothing, and their results name the registers
# of their operands, so the register dependencies of their users are the operands'. Like every
# pure op, each is placed right before its first user.)
_PURE_OPS = (AllocaOp, OffOp, LiteralOp, arith.ConstantOp, KernargOffsetOp, LdsAllocOp,
             *ABI_VALUE_OPS, *VIEW_OPS)

Atom = tuple  # one 32-bit register unit: (file, index) or (file, (chain id, index))

_PAIR = {"vcc": "vcc", "exec": "exec", "flat_scratch": "flat_scratch",
         "xnack_mask": "xnack_mask", "tba": "tba", "tma": "tma"}
_SPECIAL_ATOMS: dict[str, tuple[Atom, ...]] = {
    **{n: ((f, 0), (f, 1)) for n, f in _PAIR.items()},
    **{f"{n}_lo": ((f, 0),) for n, f in _PAIR.items()},
    **{f"{n}_hi": ((f, 1),) for n, f in _PAIR.items()},
    "m0": (("m0", 0),), "scc": (("scc", 0),), "mode": (("mode", 0),),
    "vccz": (("vcc", 0), ("vcc", 1)), "src_vccz": (("vcc", 0), ("vcc", 1)),
    "execz": (("exec", 0), ("exec", 1)), "src_execz": (("exec", 0), ("exec", 1)),
    "src_scc": (("scc", 0),),
}
_SGPR_FILES = frozenset({"s", "vcc", "exec", "m0", "flat_scratch", "xnack_mask", "tba", "tma"})
_REG_FILES: dict[str, frozenset[str]] = {
    "vgpr": frozenset({"v", "a"}), "sgpr": _SGPR_FILES, "vcc": frozenset({"vcc"}),
    "exec": frozenset({"exec"}), "m0": frozenset({"m0"})}
_WRITE_ROLES = frozenset({"def", "exec_def", "vcc_def", "m0_def"})
_COUNTERS = ("vmcnt", "lgkmcnt", "expcnt")
_SPACES = ("lds", "global", "scratch")  # FLAT ("any") touches all of them


@dataclass(frozen=True)
class MemAccess:
    """One memory access of an instruction: the space and whether it loads/stores."""

    space: str  # lds, global, scratch, any (FLAT)
    load: bool
    store: bool


@dataclass(eq=False)
class Node:
    """One op of a block, with what the scheduler needs to know about it."""

    op: Operation
    pos: int  # index in its block
    barrier: bool = False
    pure: bool = False  # not an instruction (constants, allocas): scheduled for free
    keep: object = None  # keep-order span key
    inst: Instruction | None = None
    tclass: str = ""
    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    srcc: frozenset = frozenset()  # MFMA accumulator input (SrcC) units
    srcab: frozenset = frozenset()  # MFMA A/B input units
    data: frozenset = frozenset()  # store data units
    mem: tuple[MemAccess, ...] = ()
    counters: tuple[str, ...] = ()
    hclasses: frozenset[str] = frozenset()
    data_dwords: int = 1
    # Filled per region:
    region: int = -1  # region id (unique in the kernel), -1 for barriers and kept spans
    slot: int = -1  # index among the region's instructions (pure ops excluded)
    region_size: int = 0  # instructions in the region
    after_req: int = 0  # hazard guard: instructions that must follow it in its region
    before_req: int = 0  # ... that must precede it in its region
    hazard_succ: list = field(default_factory=list)  # (node, distance) in the same region

    @property
    def mnemonic(self) -> str:
        """The instruction mnemonic, or the op name."""
        return self.inst.mnemonic if self.inst is not None else self.op.name

    @property
    def nop_slots(self) -> int:
        """Issue slots of an s_nop (N+1), else 1."""
        if self.inst is not None and self.inst.mnemonic == "s_nop" and self.op.operands:
            imm, _t, _lit = immediate_of(self.op.operands[0])
            return int(imm or 0) + 1
        return 1


@dataclass
class Edge:
    """A dependency: `dst` issues at least `latency` cycles after `src` and, with the hazard
    guard, at least `distance` instructions after it."""

    src: Node
    dst: Node
    latency: int
    distance: int = 0


@dataclass
class BlockEstimate:
    """The timing model's estimate of one block run once."""

    name: str
    instructions: int
    cycles: int


@dataclass
class CycleEstimate:
    """The timing model's estimate of a kernel: its blocks, each run once."""

    kernel: str
    blocks: list[BlockEstimate] = field(default_factory=list)

    @property
    def cycles(self) -> int:
        """Sum over the blocks (a straight-line run of every block once)."""
        return sum(b.cycles for b in self.blocks)


@dataclass
class ScheduleStats:
    """What the pass did: regions seen and reordered, and the model's cycles before/after."""

    regions: int = 0
    reordered: int = 0
    kept: int = 0  # regions whose best schedule was no better than the input
    stuck: int = 0  # regions where the hazard guard left no legal choice (input order kept)
    cycles_before: int = 0
    cycles_after: int = 0


# --------------------------------------------------------------------------- facts


class _Facts:
    """Builds Nodes for the ops of one kernel (register units, memory, classes)."""

    def __init__(self, isa: IsaDatabase):
        self.isa = isa
        self.roots: dict[SSAValue, SSAValue] = {}
        self.matches: dict[Operation, object] = {}
        self.by_shape: dict[tuple, object] = {}
        self.classes: dict[tuple, frozenset[str]] = {}
        self.implicit: dict[str, tuple[tuple[Atom, ...], tuple[Atom, ...]]] = {}

    def match(self, op: InstructionOp):
        """The database match of an instruction op (cached per op, and per operand shape:
        the form depends on the family, mnemonic, operand kinds/widths and modifiers)."""
        m = self.matches.get(op)
        if m is None:
            key = form_key(op)
            m = self.by_shape.get(key)
            if m is None:
                m = self.by_shape[key] = match_instruction(op, self.isa)
            self.matches[op] = m
        return m

    def root(self, value: SSAValue) -> SSAValue:
        """The start of a value's destination-passing chain (one register after
        allocation)."""
        seen = []
        while True:
            if value in self.roots:
                value = self.roots[value]
                break
            owner = value.owner
            if not isinstance(owner, InstructionOp) or value not in owner.outs:
                break
            k = list(owner.outs).index(value)
            defs = self.match(owner).def_positions
            if k >= len(defs):
                break
            seen.append(value)
            value = owner.args[defs[k]]
        for v in seen:
            self.roots[v] = value
        return value

    def atoms(self, value: SSAValue) -> tuple[Atom, ...]:
        """The 32-bit register units a value occupies."""
        t = value.type
        if isinstance(t, RegisterType):
            if t.is_fixed:
                return tuple((t.KIND, t.first + i) for i in range(t.width))
            root = self.root(value)
            owner = root.owner
            if type(owner) is SplitRegisterRangeOp:  # a piece: those registers of the range
                offset = owner.offsets[root.index]  # type: ignore[attr-defined]
                return self.atoms(owner.source)[offset:offset + t.width]
            if type(owner) is MakeRegisterRangeOp:  # a made range: its operands' registers
                return tuple(a for p in owner.parts for a in self.atoms(p))
            return tuple((t.KIND, (id(root), i)) for i in range(t.width))
        if isinstance(t, SpecialRegType):
            return _SPECIAL_ATOMS.get(t.reg_name, ())
        return ()

    def node(self, op: Operation, pos: int) -> Node:
        """Facts of one op."""
        keep = _keep_key(op)
        if isinstance(op, _PURE_OPS):
            return Node(op, pos, pure=True, keep=keep)
        if not isinstance(op, InstructionOp):
            return Node(op, pos, barrier=True, keep=keep)
        match = self.match(op)
        inst, form = match.instruction, match.form
        reads: set[Atom] = set()
        writes: set[Atom] = set()
        srcc: set[Atom] = set()
        srcab: set[Atom] = set()
        data: set[Atom] = set()
        data_dwords = 1
        soffset_reg = False
        smfmac = inst.mnemonic.startswith("v_smfmac")
        for spec, arg in zip(match.specs, op.args):
            units = self.atoms(arg)
            if spec.role == "def":
                writes.update(units)
                if spec.tied:
                    reads.update(units)
                if spec.name in ("vdst", "vdata") and units:
                    data_dwords = len(units)
            else:
                reads.update(units)
                if spec.name in ("data", "data0", "vdata", "data1") and units:
                    data.update(units)
                    data_dwords = len(units)
                if spec.name == "soffset" and units:
                    soffset_reg = True
            if inst.passes is not None and (
                    (spec.name == "src2" and not smfmac) or (smfmac and spec.role == "def")):
                srcc.update(units)
            if inst.passes is not None and spec.name in ("src0", "src1"):
                srcab.update(units)
        implicit_reads, implicit_writes = self._implicit(inst)
        reads.update(implicit_reads)
        writes.update(implicit_writes)
        mods = op.mods
        barrier = (form.enc == "SOPP" or inst.unit == "branch"
                   or inst.mnemonic.startswith(_BARRIER_PREFIXES)
                   or "workgroup_barrier" in inst.flags or bool(mods.get("gds")))
        ckey = (inst.mnemonic, form.enc, tuple(sorted(mods.items())), len(data), soffset_reg)
        hclasses = self.classes.get(ckey)
        if hclasses is None:
            hclasses = self.classes[ckey] = instruction_classes(
                inst.mnemonic, inst.unit, inst.flags, form.enc, mods, 32 * len(data),
                soffset_reg)
        return Node(
            op, pos, barrier=barrier, keep=keep, inst=inst, tclass=timing_class(inst),
            reads=frozenset(reads), writes=frozenset(writes), srcc=frozenset(srcc),
            srcab=frozenset(srcab),
            data=frozenset(data), mem=_memory(inst, form.enc, mods), counters=form.counters,
            hclasses=hclasses, data_dwords=data_dwords)

    def _implicit(self, inst: Instruction) -> tuple[tuple[Atom, ...], tuple[Atom, ...]]:
        """Register units the database says `inst` reads/writes implicitly, minus those its
        forms name as operands (vcc of VOP2/VOPC: explicit in the IR, or an SGPR operand in
        the VOP3 form)."""
        got = self.implicit.get(inst.mnemonic)
        if got is None:
            fixed = {s.fixed for f in inst.forms for s in f.operands if s.fixed}
            r = tuple(a for name in inst.implicit_uses if name not in fixed
                      for a in _SPECIAL_ATOMS.get(name, ((name, 0),)))
            w = tuple(a for name in inst.implicit_defs if name not in fixed
                      for a in _SPECIAL_ATOMS.get(name, ((name, 0),)))
            got = self.implicit[inst.mnemonic] = (r, w)
        return got


def _keep_key(op: Operation) -> object:
    attr = op.attributes.get(KEEP_ORDER_ATTR)
    if attr is None:
        return None
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, IntAttr | StringAttr):
        return attr.data
    return str(attr)


def _memory(inst: Instruction, enc: str, mods: dict) -> tuple[MemAccess, ...]:
    flags = inst.flags
    load, store = "may_load" in flags, "may_store" in flags
    if inst.unit == "lds":
        return (MemAccess("lds", load, store),) if load or store else ()
    if inst.unit == "smem":
        return (MemAccess("global", load, store),) if load or store else ()
    if inst.unit != "vmem":
        return ()
    space = {"FLAT": "any", "SCRATCH": "scratch"}.get(enc, "global")
    if "lds_dma" in flags or mods.get("lds"):
        # Direct-to-LDS loads read global memory and write LDS.
        return (MemAccess(space, True, False), MemAccess("lds", False, True))
    return (MemAccess(space, load, store),) if load or store else ()


# --------------------------------------------------------------------------- regions


def _blocks(module: Operation) -> list[tuple[IsaDatabase, str, list[Block], Operation]]:
    """(isa, target, blocks, owner) of every kernel and fragment body of the module."""
    out = []
    for amod in amdgcn_modules(module):
        isa = get_isa(amod.target_name)
        for op in amod.body.ops:
            if isinstance(op, KernelOp | func.FuncOp):
                blocks = [b for region in op.regions for b in region.blocks]
                out.append((isa, amod.target_name, blocks, op))
    return out


def _frozen_spans(nodes: Sequence[Node]) -> list[bool]:
    """Which ops belong to a keep-order span (first to last op of each key)."""
    first: dict[object, int] = {}
    last: dict[object, int] = {}
    for i, n in enumerate(nodes):
        if n.keep is not None:
            first.setdefault(n.keep, i)
            last[n.keep] = i
    frozen = [False] * len(nodes)
    for key, lo in first.items():
        for i in range(lo, last[key] + 1):
            frozen[i] = True
    return frozen


def split_regions(nodes: Sequence[Node]) -> list[list[Node]]:
    """The schedulable regions of a block: runs of ops between barriers and keep-order
    spans (a region may hold pure ops only)."""
    frozen = _frozen_spans(nodes)
    regions: list[list[Node]] = []
    current: list[Node] = []
    for n, fz in zip(nodes, frozen):
        if n.barrier or fz:
            if current:
                regions.append(current)
            current = []
        else:
            current.append(n)
    if current:
        regions.append(current)
    return regions


# --------------------------------------------------------------------------- dependencies


class _Deps:
    """Dependency edges of one region."""

    def __init__(self, nodes: Sequence[Node], tm: TimingModel, keep_counters: set[str]):
        self.nodes = list(nodes)
        self.by_op = {n.op: n for n in self.nodes}
        self.succ: dict[Node, list[Edge]] = {n: [] for n in nodes}
        self.pred: dict[Node, list[Edge]] = {n: [] for n in nodes}
        self._edges: dict[tuple[int, int], Edge] = {}
        self.tm = tm
        self._build(keep_counters)

    def add(self, src: Node, dst: Node, latency: int, distance: int = 0) -> None:
        """Add (or tighten) the edge src -> dst."""
        key = (id(src), id(dst))
        e = self._edges.get(key)
        if e is None:
            e = self._edges[key] = Edge(src, dst, latency, distance)
            self.succ[src].append(e)
            self.pred[dst].append(e)
        else:
            e.latency = max(e.latency, latency)
            e.distance = max(e.distance, distance)

    def raw_latency(self, p: Node, c: Node) -> int:
        """Cycles before `c` may read what `p` wrote."""
        if p.pure or p.inst is None:
            return 0
        forward = (p.tclass == "mfma" and c.tclass == "mfma" and bool(c.srcc)
                   and p.writes & c.reads <= c.srcc and _def_units(p) == c.srcc)
        return self.tm.latency_of(p.inst, srcc_forward=forward)

    def _build(self, keep_counters: set[str]) -> None:
        last_write: dict[Atom, Node] = {}
        readers: dict[Atom, list[Node]] = {}
        # Per memory space: the last store and the loads since (a store orders after both;
        # a load after the store), which keeps every conflicting pair ordered transitively.
        last_store: dict[str, Node] = {}
        loads_since: dict[str, list[Node]] = {}
        last_counted: dict[str, Node] = {}
        for n in self.nodes:
            for arg in n.op.operands:
                src = self.by_op.get(arg.owner)  # type: ignore[arg-type]
                if src is not None and src is not n:
                    self.add(src, n, 0)
            for a in n.reads:
                p = last_write.get(a)
                if p is not None:
                    self.add(p, n, self.raw_latency(p, n))
            for a in n.writes:
                p = last_write.get(a)
                if p is not None:
                    # A later write must land after the earlier one.
                    self.add(p, n, self.raw_latency(p, n))
                for r in readers.get(a, ()):
                    if r is not n:
                        self.add(r, n, 0)
            for a in n.reads:
                readers.setdefault(a, []).append(n)
            for a in n.writes:
                last_write[a] = n
                readers[a] = []
            for acc in n.mem:
                for space in _SPACES if acc.space == "any" else (acc.space,):
                    st = last_store.get(space)
                    if st is not None and st is not n:
                        self.add(st, n, 0)
                    if acc.store:
                        for ld in loads_since.get(space, ()):
                            if ld is not n:
                                self.add(ld, n, 0)
            for acc in n.mem:
                for space in _SPACES if acc.space == "any" else (acc.space,):
                    if acc.store:
                        last_store[space] = n
                        loads_since[space] = []
                    elif acc.load:
                        loads_since.setdefault(space, []).append(n)
            for c in n.counters:
                if c in keep_counters:
                    if c in last_counted:
                        self.add(last_counted[c], n, 0)
                    last_counted[c] = n


def _def_units(n: Node) -> frozenset:
    """Register units of an MFMA's destination (its result range)."""
    return n.writes - {a for a in n.writes if a[0] not in ("v", "a")}


# --------------------------------------------------------------------------- hazard guard


def _in_file(atom: Atom, regs: str) -> bool:
    files = _REG_FILES.get(regs)
    return files is not None and atom[0] in files


def hazard_wait_states(rules: Sequence[HazardRule], p: Node, c: Node) -> int:
    """Wait states a hazard rule may require between `p` and a later `c` (conservative:
    operand roles are matched by read/write and register file, not by operand slot)."""
    if p.inst is None or c.inst is None:
        return 0
    need = 0
    for rule in rules:
        if rule.producer not in p.hclasses or rule.consumer not in c.hclasses:
            continue
        if p.hclasses & set(rule.producer_not) or c.hclasses & set(rule.consumer_not):
            continue
        if rule.same_opcode is not None and (p.mnemonic == c.mnemonic) != rule.same_opcode:
            continue
        if rule.regs != "none":
            if rule.produces in _WRITE_ROLES:
                side = p.writes
            elif rule.produces == "srcC":
                side = p.srcc
            elif rule.produces == "data":
                side = p.data
            else:
                continue
            if rule.consumes == "def":
                other = c.writes
            elif rule.consumes == "srcC":
                other = c.srcc
            elif rule.consumes == "srcAB":
                other = c.srcab
            elif rule.consumes == "none":
                other = c.reads | c.writes
            else:
                other = c.reads
            mine = {a for a in side if _in_file(a, rule.regs)}
            theirs = {a for a in other if _in_file(a, rule.regs)}
            if not mine & theirs:
                continue
            # exact: the same register range; partial: overlapping but different.
            if rule.overlap == "exact" and mine != theirs:
                continue
            if rule.overlap == "partial" and mine == theirs:
                continue
        need = max(need, rule.waits_for(p.inst.passes))
    return need


def _hazard_links(blocks: list[list[Node]], succs: dict[int, list[int]],
                  rules: Sequence[HazardRule]) -> list[tuple[Node, Node, int]]:
    """(producer, consumer, wait states) for every pair a hazard rule links, following
    registers through the blocks (fixpoint over the control flow, so loops count)."""
    horizon = max((r.waits_for(16) for r in rules), default=0)
    preds: dict[int, list[int]] = {i: [] for i in range(len(blocks))}
    for i, ss in succs.items():
        for j in ss:
            preds[j].append(i)
    # State: atom -> (writers, readers since the last write) that may reach this point.
    empty: dict[Atom, tuple[frozenset, frozenset]] = {}
    entry = [dict(empty) for _ in blocks]
    exits: list[dict | None] = [None] * len(blocks)
    links: dict[tuple[int, int], tuple[Node, Node, int]] = {}
    # (program order: the producers of a consumer are linked in it, not in set order, which
    # follows object addresses and would make the guard's output vary from run to run)
    seq = {n: i for i, n in enumerate(n for nodes in blocks for n in nodes)}
    changed = True
    rounds = 0
    while changed and rounds < 8:
        changed = False
        rounds += 1
        for b, nodes in enumerate(blocks):
            state = dict(entry[b])
            for i in preds[b]:
                if exits[i] is not None:
                    for a, (w, r) in exits[i].items():
                        w0, r0 = state.get(a, (frozenset(), frozenset()))
                        state[a] = (w0 | w, r0 | r)
            for n in nodes:
                if n.pure or n.inst is None:
                    continue
                cands: set[Node] = set()
                for a in n.reads | n.writes:
                    w, r = state.get(a, (frozenset(), frozenset()))
                    cands |= w
                    if a in n.writes:
                        cands |= r
                for p in sorted(cands, key=seq.__getitem__):
                    key = (id(p), id(n))
                    if key in links or p is n:
                        continue
                    need = min(hazard_wait_states(rules, p, n), horizon)
                    if need:
                        links[key] = (p, n, need)
                # Only reads that a rule's producer role names (MFMA SrcC, store data) can
                # start a write-after-read hazard.
                for a in n.srcc | n.data:
                    w, r = state.get(a, (frozenset(), frozenset()))
                    state[a] = (w, r | {n})
                for a in n.writes:
                    state[a] = (frozenset({n}), frozenset())
            if exits[b] != state:
                exits[b] = state
                changed = True
    return list(links.values())


# --------------------------------------------------------------------------- timing


class _Clock:
    """In-order issue on the timing model: issue slots, unit occupancy, counters."""

    def __init__(self, tm: TimingModel):
        self.tm = tm
        self.now = 0  # earliest cycle of the next issue slot
        self.unit_free: dict[str, int] = {}
        self.pending: dict[str, list[int]] = {c: [] for c in _COUNTERS}  # completion times
        self.done = 0  # latest completion of anything issued

    def slot(self, t: int) -> int:
        """The first issue slot at or after cycle t."""
        ic = self.tm.issue_cycles
        return self.now if t <= self.now else self.now + -(-(t - self.now) // ic) * ic

    def earliest(self, n: Node, ready: int) -> int:
        """When `n` could issue, given its operands are ready at `ready`."""
        t = max(ready, self.now)
        if n.inst is not None:
            t = max(t, self.unit_free.get(self.tm.unit_of(n.tclass), 0))
        return self.slot(t)

    def issue(self, n: Node, t: int) -> None:
        """Issue `n` at cycle t."""
        ic = self.tm.issue_cycles
        if n.inst is None:
            return
        if n.inst.mnemonic == "s_waitcnt":
            t = self._wait(n, t)
        slots = n.nop_slots
        unit = self.tm.unit_of(n.tclass)
        self.unit_free[unit] = t + self.tm.occupancy_of(n.inst, n.data_dwords)
        done = t + self.tm.latency_of(n.inst)
        self.done = max(self.done, done, t + ic * slots)
        for c in n.counters:
            self.pending[c].append(done)
        self.now = t + ic * slots

    def _wait(self, n: Node, t: int) -> int:
        mods = n.op.mods if isinstance(n.op, InstructionOp) else {}
        for c in _COUNTERS:
            if c not in mods:
                continue
            # Until at most `left` counted instructions are outstanding (SMEM completes out
            # of order, so this takes completion times, not issue order).
            left = int(mods[c])
            times = sorted(self.pending[c])
            if len(times) > left:
                until = times[len(times) - left - 1]
                t = max(t, until)
                self.pending[c] = [d for d in self.pending[c] if d > until]
        return self.slot(t) if t > self.now else t


def _simulate(order: Sequence[Node], deps: _Deps | None, tm: TimingModel) -> int:
    """Cycles the model takes to issue `order` and land every result (from 0)."""
    clock = _Clock(tm)
    issued: dict[Node, int] = {}
    for n in order:
        if n.pure:
            continue
        ready = 0
        if deps is not None:
            for e in deps.pred.get(n, ()):
                if e.src in issued:
                    ready = max(ready, issued[e.src] + e.latency)
        t = clock.earliest(n, ready)
        clock.issue(n, t)
        issued[n] = t
    return max(clock.done, clock.now)


def estimate_block(block: Block, isa: IsaDatabase, tm: TimingModel) -> BlockEstimate:
    """The model's cycles for one run of a block (dependencies inside it included)."""
    facts = _Facts(isa)
    nodes = [facts.node(op, i) for i, op in enumerate(block.ops)]
    deps = _Deps(nodes, tm, set(_COUNTERS))
    n_inst = sum(1 for n in nodes if n.inst is not None)
    return BlockEstimate(block.name_hint or "", n_inst, _simulate(nodes, deps, tm))


def estimate_cycles(module: Operation) -> list[CycleEstimate]:
    """The timing model's cycle estimate of every kernel/fragment, block by block."""
    out = []
    for isa, target, blocks, owner in _blocks(module):
        tm = get_timing(target)
        name = getattr(owner, "sym_name", None)
        est = CycleEstimate(name.data if name is not None else owner.name)
        for i, b in enumerate(blocks):
            e = estimate_block(b, isa, tm)
            e.name = e.name or f"bb{i}"
            est.blocks.append(e)
        out.append(est)
    return out


# --------------------------------------------------------------------------- list scheduling


def _heights(deps: _Deps, tm: TimingModel) -> dict[Node, int]:
    """Longest latency-weighted path from each node to the end of the region."""
    height: dict[Node, int] = {}
    for n in reversed(deps.nodes):
        own = 0 if n.pure or n.inst is None else tm.latency_of(n.inst)
        h = own
        for e in deps.succ[n]:
            h = max(h, e.latency + height[e.dst])
        height[n] = h
    return height


def _windows(deps: _Deps, insts: Sequence[Node]) -> tuple[dict[Node, int], dict[Node, int]]:
    """Earliest and latest slot of each instruction under the hazard guard (room before and
    after it, distances), propagated along the dependencies that carry a guard constraint
    (plain precedence alone narrows nothing worth checking)."""
    total = len(insts)
    last = total - 1
    rel = {n: n.before_req for n in insts}
    dl = {n: last - n.after_req for n in insts}
    for n in insts:  # the input order is a topological order
        for e in deps.succ[n]:
            if not e.dst.pure and (rel[n] > 0 or e.distance):
                rel[e.dst] = max(rel[e.dst], rel[n] + 1 + e.distance)
    for n in reversed(insts):
        for e in deps.succ[n]:
            if not e.dst.pure and (dl[e.dst] < last or e.distance):
                dl[n] = min(dl[n], dl[e.dst] - 1 - e.distance)
    return rel, dl


def _fits(rest: Iterable[Node], size: int, start: int, rel: dict[Node, int],
          dl: dict[Node, int], last: int) -> bool:
    """Can the `size` remaining nodes fill the slots start.. without a gap, each inside its
    window? `rest` are those of them with a window narrower than the region. (Necessary
    conditions of Hall's theorem on the slot line.)"""
    rest = list(rest)
    lates = sorted(dl[n] for n in rest if dl[n] < last)
    if any(d < start + i for i, d in enumerate(lates)):
        return False
    early = sorted(rel[n] for n in rest if rel[n] > 0)
    free = size - len(early)
    return all(r <= start + free + j for j, r in enumerate(early))


class _ReadyQueues:
    """Ready instructions per execution unit, in the order the scheduler prefers them:
    earliest issue slot, then longest path to the end, then input order.

    Per unit, `avail` holds those whose operands are ready by the unit's next slot (keyed by
    height) and `pending` the others (keyed by the slot their operands are ready in), so a
    choice costs O(units + log n) instead of a scan of everything ready."""

    def __init__(self, tm: TimingModel, clock: _Clock, height: dict[Node, int],
                 nodes: Iterable[Node]):
        self.tm = tm
        self.clock = clock
        self.height = height
        self.avail: dict[str, list] = {}
        self.pending: dict[str, list] = {}
        # Cycles of work left per unit: a unit with more work than any latency path (the
        # matrix core in a GEMM loop) is the critical resource, so its instructions rank by
        # that bound (they then issue whenever the unit is free, and other units' work
        # fills the gaps, e.g. DS reads in an MFMA's shadow).
        self.work: dict[str, int] = {}
        for n in nodes:
            unit = tm.unit_of(n.tclass)
            self.work[unit] = self.work.get(unit, 0) + tm.occupancy_of(n.inst, n.data_dwords)

    def issued(self, n: Node) -> None:
        """`n` issued: its unit has that much less work left."""
        unit = self.tm.unit_of(n.tclass)
        self.work[unit] -= self.tm.occupancy_of(n.inst, n.data_dwords)

    def add(self, n: Node, ready_at: int) -> None:
        """`n` has all its predecessors issued; its operands are ready at `ready_at`."""
        ic = self.tm.issue_cycles
        aligned = -(-ready_at // ic) * ic
        unit = self.tm.unit_of(n.tclass)
        self.avail.setdefault(unit, [])
        heapq.heappush(self.pending.setdefault(unit, []),
                       (aligned, -self.height[n], n.pos, id(n), n))

    def _base(self, unit: str) -> int:
        clock = self.clock
        return clock.slot(max(clock.now, clock.unit_free.get(unit, 0)))

    def pick(self, eligible: Callable[[Node], bool]) -> tuple[int, Node] | None:
        """Remove and return (issue cycle, node) of the best candidate `eligible` accepts."""
        for unit, pend in self.pending.items():
            base = self._base(unit)
            avail = self.avail[unit]
            while pend and pend[0][0] <= base:
                _t, h, pos, key, n = heapq.heappop(pend)
                heapq.heappush(avail, (h, pos, key, n))
        rejected: list[tuple[list, tuple]] = []
        chosen = None
        while chosen is None:
            best = None
            for unit, avail in self.avail.items():
                pend = self.pending[unit]
                work = -self.work.get(unit, 0)
                if avail:
                    key = (self._base(unit), min(avail[0][0], work), avail[0][1])
                    heap = avail
                elif pend:
                    key = (max(pend[0][0], self._base(unit)), min(pend[0][1], work),
                           pend[0][2])
                    heap = pend
                else:
                    continue
                if best is None or key < best[0]:
                    best = (key, heap)
            if best is None:
                break
            key, heap = best
            entry = heapq.heappop(heap)
            if eligible(entry[-1]):
                chosen = (key[0], entry[-1])
            else:
                rejected.append((heap, entry))
        for heap, entry in rejected:
            heapq.heappush(heap, entry)
        return chosen


def list_schedule(deps: _Deps, tm: TimingModel) -> list[Node] | None:
    """A new order of the region's nodes (None if the hazard guard leaves no choice)."""
    nodes = deps.nodes
    insts = [n for n in nodes if not n.pure]
    total = len(insts)
    height = _heights(deps, tm)
    rel, dl = _windows(deps, insts)
    if any(rel[n] > dl[n] for n in insts):
        return None
    narrow = {n for n in insts if rel[n] > 0 or dl[n] < total - 1}
    guarded = {n for n in insts if any(e.distance for e in deps.pred[n])}
    npred = {n: sum(1 for e in deps.pred[n] if not e.src.pure) for n in insts}
    ready_at: dict[Node, int] = {n: 0 for n in insts}
    slot_of: dict[Node, int] = {}
    clock = _Clock(tm)
    queues = _ReadyQueues(tm, clock, height, insts)
    for n in insts:
        if npred[n] == 0:
            queues.add(n, 0)
    order: list[Node] = []
    placed: set[Node] = set()
    # Pure ops that come before every instruction stay in front (declarations); the others
    # are placed right before their first user.
    lead = 0
    while lead < len(nodes) and nodes[lead].pure:
        lead += 1

    def place(n: Node) -> None:
        placed.add(n)
        order.append(n)

    def place_pure_preds(n: Node) -> None:
        for e in deps.pred[n]:
            if e.src.pure and e.src not in placed:
                place_pure_preds(e.src)
                place(e.src)

    def eligible(n: Node, count: int) -> bool:
        if count < rel[n]:
            return False
        if n in guarded and any(e.distance and count - slot_of[e.src] - 1 < e.distance
                                for e in deps.pred[n]):
            return False
        return not narrow or _fits(narrow - {n}, total - count - 1, count + 1, rel, dl,
                                   total - 1)

    for n in nodes[:lead]:
        place(n)
    for count in range(total):
        picked = queues.pick(lambda n, count=count: eligible(n, count))
        if picked is None:
            return None
        t, best = picked
        queues.issued(best)
        narrow.discard(best)
        place_pure_preds(best)
        place(best)
        clock.issue(best, t)
        slot_of[best] = count
        for e in deps.succ[best]:
            d = e.dst
            if d.pure:
                continue
            ready_at[d] = max(ready_at[d], t + e.latency)
            npred[d] -= 1
            if npred[d] == 0:
                queues.add(d, ready_at[d])
    for n in nodes:
        if n not in placed:
            place(n)
    return order


# --------------------------------------------------------------------------- the pass


def _keep_counters(blocks: Iterable[Block], policy: str) -> set[str]:
    if policy == "keep":
        return set(_COUNTERS)
    if policy == "free":
        return set()
    keep: set[str] = set()
    for b in blocks:
        for op in b.ops:
            if isinstance(op, InstructionOp) and op.mnemonic_text == "s_waitcnt":
                for c, v in op.mods.items():
                    if c in _COUNTERS and isinstance(v, int) and v > 0:
                        keep.add(c)
    return keep


def _successors(blocks: list[Block]) -> dict[int, list[int]]:
    index = {id(b): i for i, b in enumerate(blocks)}
    out: dict[int, list[int]] = {}
    for i, b in enumerate(blocks):
        last = b.last_op
        out[i] = [index[id(s)] for s in (last.successors if last is not None else ())
                  if id(s) in index]
    return out


def schedule_module(module: Operation, *, guard: str = "hazards",
                    counters: str = "auto") -> ScheduleStats:
    """Reorder the instructions of every basic block (see the module docstring)."""
    SchedulePass.from_options({"guard": guard, "counters": counters})  # (ParseError if bad)
    stats = ScheduleStats()
    for isa, target, blocks, _owner in _blocks(module):
        tm = get_timing(target)
        facts = _Facts(isa)
        keep = _keep_counters(blocks, counters)
        block_nodes = [[facts.node(op, i) for i, op in enumerate(b.ops)] for b in blocks]
        block_regions = [split_regions(nodes) for nodes in block_nodes]
        rid = 0
        for regions in block_regions:
            for region in regions:
                insts = [n for n in region if not n.pure]
                for k, n in enumerate(insts):
                    n.slot = k
                    n.region_size = len(insts)
                for n in region:
                    n.region = rid
                rid += 1
        if guard == "hazards":
            # (Soft-clause rules are about adjacency, not distance: the hazards pass,
            # run after this one, breaks the clauses that scheduling makes.)
            _apply_guard(block_nodes, blocks, distance_rules(rules_for(target)))
        for block, regions in zip(blocks, block_regions):
            for region in regions:
                _schedule_region(block, region, tm, keep, stats)
    return stats


def _wait_states(n: Node) -> int:
    """Wait states an op provides: s_nop N gives N+1, other instructions (branches and
    s_endpgm included) 1, pure ops and fall-throughs 0."""
    if n.inst is not None:
        return n.nop_slots
    return 1 if n.op.name in ("amdgcn.branch", "amdgcn.end_kernel") else 0


def _apply_guard(block_nodes: list[list[Node]], blocks: list[Block],
                 rules: Sequence[HazardRule]) -> None:
    """Turn hazard links into region constraints: a distance between two instructions of one
    region, or room after the producer / before the consumer in their own regions.

    Region sizes never change, so the wait states between two regions are fixed; only the
    part inside the producer's region (after it) and the consumer's (before it) can shrink.
    Requiring each part to keep min(what is still needed, what it had) keeps the total at
    min(required, input)."""
    before: dict[Node, int] = {}
    block_of: dict[Node, int] = {}
    block_ws: list[int] = []
    for b, nodes in enumerate(block_nodes):
        acc = 0
        for n in nodes:
            before[n] = acc
            block_of[n] = b
            acc += _wait_states(n)
        block_ws.append(acc)
    for p, c, need in _hazard_links(block_nodes, _successors(blocks), rules):
        if p.region >= 0 and p.region == c.region and 0 <= p.slot < c.slot:
            p.hazard_succ.append((c, min(need, c.slot - p.slot - 1)))
            continue
        after_p = before[p] + _wait_states(p)
        if block_of[p] == block_of[c] and p.pos < c.pos:
            between = before[c] - after_p
        else:  # through the control flow: at least the rest of p's block and c's head
            between = block_ws[block_of[p]] - after_p + before[c]
        tail = p.region_size - p.slot - 1 if p.slot >= 0 else 0
        head = c.slot if c.slot >= 0 else 0
        still = need - (between - tail - head)
        if still <= 0:
            continue
        if p.slot >= 0:
            p.after_req = max(p.after_req, min(still, tail))
        if c.slot >= 0:
            c.before_req = max(c.before_req, min(still, head))


def _schedule_region(block: Block, region: list[Node], tm: TimingModel, keep: set[str],
                     stats: ScheduleStats) -> None:
    insts = [n for n in region if not n.pure]
    if not insts:
        return
    stats.regions += 1
    deps = _Deps(region, tm, keep)
    members = set(insts)
    for p in insts:
        for c, d in p.hazard_succ:
            if c in members:
                deps.add(p, c, 0, d)
    before = _simulate(region, deps, tm)
    stats.cycles_before += before
    order = list_schedule(deps, tm) if len(insts) > 1 else None
    if order is None:
        if len(insts) > 1:
            stats.stuck += 1
        stats.cycles_after += before
        return
    after = _simulate(order, deps, tm)
    if after >= before or [n.op for n in order] == [n.op for n in region]:
        stats.kept += 1
        stats.cycles_after += before
        return
    stats.reordered += 1
    stats.cycles_after += after
    anchor = region[-1].op.next_op
    for n in order:
        n.op.detach()
        if anchor is None:
            block.add_op(n.op)
        else:
            block.insert_op_before(n.op, anchor)


@dataclass(frozen=True)
class SchedulePass(Pass):
    """`schedule{guard=off,counters=keep}` (see the module docstring)."""

    name = "schedule"
    summary = "list-schedule instructions within basic blocks by the target's latency model"

    guard: Literal["hazards", "off"] = option("hazards", "keep hazard-linked instructions their "
                                                         "wait states apart (off: leave it to "
                                                         "the hazards pass)")
    counters: Literal["auto", "keep", "free"] = option("auto", "keep the issue order of "
                                                               "counted memory instructions "
                                                               "(auto: where an s_waitcnt "
                                                               "counts them)")

    def apply(self, module: Operation) -> None:
        """Schedule every basic block of `module` in place."""
        schedule_module(module, guard=self.guard, counters=self.counters)


__all__ = ["KEEP_ORDER_ATTR", "BlockEstimate", "CycleEstimate", "Edge", "MemAccess", "Node",
           "SchedulePass", "ScheduleStats", "estimate_block", "estimate_cycles",
           "hazard_wait_states", "list_schedule", "schedule_module", "split_regions"]
