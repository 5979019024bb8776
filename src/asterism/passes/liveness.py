"""Liveness and interference of register values in amdgcn kernels (an analysis, not a pass
that changes IR; `--pipeline liveness` prints its pressure report).

The model
---------
* **Register classes.** Instruction ops are destination-passing: a result *is* the register of
  its destination operand. The SSA values linked that way (an `amdgcn.alloca`, the results of
  the ops that take it as destination, the results of the ops that take those, ... also
  around loops) name one register (range): a `RegClass`. Liveness is computed on classes,
  not on SSA values, because a later SSA value of a chain overwrites the same register.
* **Reads and writes.** An op reads the classes of its source operands and writes the
  classes of its destinations. A destination is also *read* when the instruction uses its old
  value (tied operands: `v_fmac`, DPP "old", `v_writelane`, returning atomics, `s_cmov*`), and
  when a vector instruction writes a destination that continues a chain, i.e. whose operand
  is the result of an earlier op rather than an `amdgcn.alloca`: vector writes only change
  the lanes EXEC enables (and d16/SDWA writes only part of each lane), so the register keeps
  its older value in the other lanes. Passing the alloca itself as the destination says "a
  new value": its previous contents are not needed. For a pinned register in a kernel that
  writes EXEC (`s_and_saveexec_b64`, `v_cmpx_*`, `s_mov_b64 exec, ...`) every vector write is
  taken to keep the older lanes: hand-written code may rely on them.
* **ABI inputs** (`amdgcn.kernarg_ptr`, `amdgcn.workitem_id`, ...) are in their registers from
  the start of the kernel, wherever the op is written; a read of a register nothing wrote
  (a hand-written use of a hardware-initialized SGPR, or an uninitialized value) makes the
  class live from the kernel entry.
* **Fixed registers** (`!amdgcn.vgpr<10>`, ranges) are classes too; different classes may
  overlap (v[8:12] and v10). Interference with them is by register units: a relocatable
  value placed on v10 conflicts with a live v[8:12]. Named registers (vcc, exec, m0, scc)
  are not register-file values and are not tracked here.
* **Sub-registers.** `amdgcn.split_register_range` and `amdgcn.make_register_range` read and
  write nothing: their results are other names for registers of their operands. A class that
  some split cuts becomes one class per register ("units", `RegClass.unit`), so a live piece
  keeps exactly its register live and an instruction writing a piece writes that register
  only (a partial write: the others stay live). A value made of pieces reads and writes the
  classes of its registers. Classes whose registers views tie together (the units of a split
  class, the operands of a make_register_range) form a `Bundle` with their offsets, the
  alignment the operand slots of their values need and the register a pinned member fixes;
  a make_register_range operand that cannot take its place there is a `ViewConflict` (the
  register allocator copies it).
* **Program points.** Op number i (in block layout order) has the point 2i+1 just before it
  (its reads) and 2i+2 just after it (its writes); point 0 is the kernel entry. A class's
  live range is the set of points where its register holds a value still to be read, plus
  the points where it is written (a dead write still needs the register). Two classes
  interfere when one is written at a point where the other is live. Wide MFMAs and
  `v_mad_*64_32` write "early" (at the point before them too), so their destination also
  conflicts with the sources they read.

* **XNACK soft clauses** (`soft_clauses`: the instruction classes that form them on the
  target, `asterism.target.hazards.soft_clause_kinds`, which the register allocator passes
  when XNACK is on): back-to-back SMEM or VMEM instructions form a clause a page fault
  replays from its start, so no instruction of it may write a register that it or an earlier
  one reads (asterism.target.hazards; else the hazards pass breaks the clause with an
  `s_nop 0`). In each such run the sources of earlier instructions stay live up to every
  later one that writes a relocatable register, and those write early, as LLVM's
  SIFormMemoryClauses keeps them apart. A pinned destination is left as written.

Liveness across blocks is the usual backward fixpoint on the CFG (branch targets,
fall-throughs). `analyze_kernel` returns a `KernelLiveness` to query: live-in/live-out per
block, the live set before/after each op, interference, peak pressure per register file and
where it occurs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from asterism.errors import SourceLocation
from asterism.ir.abi import compute_layout
from asterism.ir.dominance import block_successors
from asterism.ir.ops import (
    ABI_VALUE_OPS,
    INSTRUCTION_OPS,
    VIEW_OPS,
    AllocaOp,
    BranchOp,
    EndKernelOp,
    FallthroughOp,
    InstructionOp,
    KernelOp,
    MakeRegisterRangeOp,
    ModuleOp,
    SplitRegisterRangeOp,
    WaitOp,
    combine_alignment,
    op_location,
)
from asterism.ir.types import REGISTER_CLASSES, RegisterType, SpecialRegType
from asterism.ir.verify import amdgcn_modules, op_title
from asterism.isa import IsaDatabase, get_isa
from asterism.passes.base import Pass
from asterism.passes.instfacts import InstFacts, facts_cache
from asterism.support.gcpause import gc_paused

FILES = ("v", "a", "s")
# Exact-type sets: isinstance on xDSL's ABC-based classes is slow on every op of a kernel.
_INSTRUCTION_OPS = frozenset(INSTRUCTION_OPS)
_VIEW_OPS = frozenset(VIEW_OPS)
# Ops without instruction facts that still emit code between their neighbours.
_CLAUSE_BREAKS = frozenset((WaitOp, BranchOp, FallthroughOp, EndKernelOp, func.CallOp))
FILE_NAMES = {"v": "VGPR", "a": "AGPR", "s": "SGPR"}


def iter_bits(bits: int) -> Iterator[int]:
    """Indices of the set bits of `bits`, lowest first."""
    if not bits:
        return
    text = bin(bits)[:1:-1]
    i = text.find("1")
    while i >= 0:
        yield i
        i = text.find("1", i + 1)


def interval(lo: int, hi: int) -> int:
    """The bit mask of points lo..hi (inclusive)."""
    return ((1 << (hi - lo + 1)) - 1) << lo


@dataclass(eq=False)
class RegClass:
    """One register (range): the SSA values destination passing links to it."""

    id: int
    kind: str  # "v", "a" or "s"
    width: int
    align: int  # what every operand slot it appears in needs (and its declared alignment)
    fixed: int | None  # first register if pinned (fixed type or ABI input), else None
    values: list[SSAValue] = field(default_factory=list)
    abi: bool = False  # an ABI input (in its register from the kernel entry)
    # Sub-registers: a class some split_register_range cuts into pieces is one class per
    # register ("units"); `source` is the class of the whole chain (unit 0 is that class
    # itself, narrowed), `unit` the register's index in it and `whole` its width.
    unit: int | None = None
    source: RegClass | None = None
    whole: int = 0
    # Classes that views tie together (consecutive registers) form a `Bundle`: its index and
    # this class's register offset in it.
    bundle: int | None = None
    offset: int = 0

    def __hash__(self) -> int:
        return self.id

    @property
    def relocatable(self) -> bool:
        """True if the register allocator places it."""
        return self.fixed is None

    @property
    def units(self) -> range:
        """The registers of a fixed class (empty for a relocatable one)."""
        if self.fixed is None:
            return range(0)
        return range(self.fixed, self.fixed + self.width)

    @property
    def type(self) -> RegisterType:
        """The declared type of its values (of the whole range, for a unit)."""
        return self.first_value.type  # type: ignore[return-value]

    @property
    def first_value(self) -> SSAValue:
        """The value that starts the chain (the alloca or ABI op result, usually)."""
        return self.values[0] if self.values else self.source.values[0]  # type: ignore

    def describe(self) -> str:
        """`v[8:11]` for a fixed class, `v[? + 4], align 4` for a relocatable one (and
        `register 2 of v[? + 4]` for a unit of a relocatable range)."""
        if self.unit is not None and self.fixed is None:
            return f"register {self.unit} of {self.kind}[? + {self.whole}]"
        if self.fixed is not None:
            if self.width == 1:
                return f"{self.kind}{self.fixed}"
            return f"{self.kind}[{self.fixed}:{self.fixed + self.width - 1}]"
        text = f"{self.kind}[? + {self.width}]" if self.width > 1 else f"{self.kind}[?]"
        return text + (f", align {self.align}" if self.align > 1 else "")

    def __repr__(self) -> str:
        hint = self.first_value.name_hint
        return f"RegClass({self.id}, %{hint or '?'}: {self.describe()})"


@dataclass
class Bundle:
    """Classes whose registers views tie together: member `c` is at register `first +
    c.offset`, where `first % align == residue` (and `first == fixed` if pinned)."""

    id: int
    kind: str
    members: list[RegClass]
    width: int  # registers from the lowest to the highest member
    align: int
    residue: int
    fixed: int | None  # first register when a member is pinned


@dataclass(frozen=True)
class ViewConflict:
    """A make_register_range operand that cannot be where the range needs it: `operand` is
    its index, or -1 when the range itself (its fixed or aligned result) is the problem."""

    op: Operation
    operand: int
    reason: str


@dataclass(frozen=True)
class Pressure:
    """The peak number of registers of one file live at once, and where."""

    file: str  # "v", "a", "s"
    peak: int
    point: int  # program point (0: kernel entry)
    op: Operation | None  # the op the point is next to (None: the kernel entry)
    after: bool  # the point is right after `op` (else right before it)
    live: frozenset[RegClass]

    @property
    def location(self) -> SourceLocation | None:
        """Source location of the op at the peak (or of the nearest op before it in its
        block that has one: terminators made by the builder have none)."""
        return nearest_location(self.op)

    def where(self) -> str:
        """`file:line:col (after amdgcn.vop2 v_add_u32)` for messages."""
        if self.op is None:
            return "the kernel entry"
        loc = self.location
        side = "after" if self.after else "before"
        text = f"{side} {op_title(self.op)}"
        return f"{loc} ({text})" if loc else text


def nearest_location(op: Operation | None) -> SourceLocation | None:
    """The location of `op`, else of the closest op before (then after) it in its block."""
    if op is None:
        return None
    for other in _around(op):
        loc = op_location(other)
        if loc is not None:
            return loc
    return None


def _around(op: Operation) -> Iterator[Operation]:
    yield op
    prev = op.prev_op
    while prev is not None:
        yield prev
        prev = prev.prev_op
    nxt = op.next_op
    while nxt is not None:
        yield nxt
        nxt = nxt.next_op


@dataclass
class CopyInfo:
    """A register copy (`v_mov_b32 %d, %s`) or an MFMA whose accumulator could be in place."""

    op: Operation
    index: int  # op number
    dst: int  # class id of the destination
    src: int  # class id of the source (srcC for MFMAs)
    kind: str  # "copy" or "mfma"


def _ids(cid: int | tuple[int, ...]) -> tuple[int, ...]:
    return (cid,) if type(cid) is int else cid  # type: ignore[return-value]


def _fresh(value: SSAValue) -> bool:
    """True if `value` names registers no instruction wrote through it: an alloca, or views
    of allocas only (as a destination: a new value, the older contents are not needed)."""
    owner = value.owner
    cls = type(owner)
    if cls is AllocaOp:
        return True
    if cls is SplitRegisterRangeOp:
        return _fresh(owner.source)  # type: ignore[attr-defined]
    if cls is MakeRegisterRangeOp:
        return all(_fresh(p) for p in owner.parts)  # type: ignore[attr-defined]
    return False


def _slice(segs: tuple, offset: int, width: int) -> tuple:
    """Registers offset..offset+width-1 of a value made of segments (class, lo, n)."""
    out = []
    pos = 0
    for cid, lo, n in segs:
        a, b = max(pos, offset), min(pos + n, offset + width)
        if a < b:
            out.append((cid, lo + a - pos, b - a))
        pos += n
    return tuple(out)


@dataclass
class _ViewsState:
    """What `_views_before` found, for `_views_after`."""

    views: list[Operation]
    segs: dict[int, tuple]  # chain root id -> segments (class id, first unit, count)
    dep: dict[int, int]  # chain root id -> rank of the last make_register_range it uses
    root_of: object
    units_of: dict[int, tuple[int, ...]]
    unit_align: list[tuple[int, int]]  # (alignment, unit 0) of the split classes
    align_uses: list[tuple[int, SSAValue, Operation, int]] = field(default_factory=list)


class _OffsetUnion:
    """Union-find over classes with register offsets: `reg(x) == reg(root) + off(x)`, and per
    root the alignment (`reg(root) % mod == res`), the pinned register and the extent."""

    def __init__(self, widths: list[int]):
        n = len(widths)
        self.parent = list(range(n))
        self.off = [0] * n
        self.mod = [1] * n
        self.res = [0] * n
        self.fixed: list[int | None] = [None] * n
        self.lo = [0] * n
        self.hi = list(widths)

    def find(self, x: int) -> tuple[int, int]:
        parent, off = self.parent, self.off
        path = []
        while parent[x] != x:
            path.append(x)
            x = parent[x]
        acc = 0
        for y in reversed(path):
            acc += off[y]
            off[y] = acc
            parent[y] = x
        return x, (off[path[0]] if path else 0)

    def link(self, a: int, b: int, d: int) -> str | None:
        """Require reg(b) == reg(a) + d; the reason it cannot be, or None (done)."""
        ra, oa = self.find(a)
        rb, ob = self.find(b)
        if ra == rb:
            return None if oa + d == ob else "it already sits elsewhere in the same registers"
        delta = oa + d - ob  # reg(rb) == reg(ra) + delta
        comb = combine_alignment(self.mod[ra], self.res[ra], self.mod[rb],
                                 self.res[rb] - delta)
        if comb is None:
            return "the alignments of the range and of the operand's registers disagree"
        fa, fb = self.fixed[ra], self.fixed[rb]
        fb = None if fb is None else fb - delta
        if fa is not None and fb is not None and fa != fb:
            return "its registers are pinned elsewhere"
        f = fa if fa is not None else fb
        lo, hi = min(self.lo[ra], self.lo[rb] + delta), max(self.hi[ra], self.hi[rb] + delta)
        if f is not None and (f % comb[0] != comb[1] or f + lo < 0):
            return "its pinned registers leave no room for the range"
        self.parent[rb] = ra
        self.off[rb] = delta
        self.mod[ra], self.res[ra] = comb
        self.fixed[ra], self.lo[ra], self.hi[ra] = f, lo, hi
        return None

    def align(self, x: int, a: int) -> bool:
        """Require reg(x) % a == 0; False if that contradicts what is known."""
        r, o = self.find(x)
        comb = combine_alignment(self.mod[r], self.res[r], a, -o)
        if comb is None:
            return False
        f = self.fixed[r]
        if f is not None and f % comb[0] != comb[1]:
            return False
        self.mod[r], self.res[r] = comb
        return True

    def pin(self, x: int, reg: int) -> bool:
        """Require reg(x) == reg; False if that contradicts what is known."""
        r, o = self.find(x)
        f = reg - o
        if self.fixed[r] is not None:
            return self.fixed[r] == f
        if f % self.mod[r] != self.res[r] or f + self.lo[r] < 0:
            return False
        self.fixed[r] = f
        return True


@dataclass
class _LayoutView:
    """What `compute_layout` reads of a kernel, restricted to the ops that matter."""

    args: list
    ops: list[Operation]

    def walk(self) -> Iterator[Operation]:
        return iter(self.ops)


class KernelLiveness:
    """Register classes, liveness and pressure of one kernel (see the module docstring)."""

    def __init__(self, kernel: KernelOp, isa: IsaDatabase | None = None, *,
                 soft_clauses: frozenset[str] = frozenset()):
        self.kernel = kernel
        self.soft_clauses = soft_clauses
        if isa is None:
            module = kernel.parent_op()
            isa = get_isa(module.target_name if isinstance(module, ModuleOp) else "gfx942")
        self.isa = isa
        self.facts = facts_cache(isa)
        self.blocks: list[Block] = list(kernel.body.blocks)
        self.block_index: dict[Block, int] = {b: k for k, b in enumerate(self.blocks)}
        self.ops: list[Operation] = []
        self.op_index: dict[Operation, int] = {}
        self.block_of_op: list[int] = []
        self.block_range: list[tuple[int, int]] = []
        for k, block in enumerate(self.blocks):
            start = len(self.ops)
            for op in block.ops:
                self.op_index[op] = len(self.ops)
                self.ops.append(op)
                self.block_of_op.append(k)
            self.block_range.append((start, len(self.ops)))
        self.n_points = 2 * len(self.ops) + 2
        self.succs: list[list[int]] = [self._successors(b) for b in self.blocks]
        self.preds: list[list[int]] = [[] for _ in self.blocks]
        for k, succ in enumerate(self.succs):
            for s in succ:
                self.preds[s].append(k)
        self.calls: list[Operation] = []
        self._build()
        self._solve()
        self._after_bits: list[int | None] = [None] * len(self.ops)
        self._scanned = False
        self._depth: list[int] | None = None

    # --- construction ---------------------------------------------------------------------

    def _successors(self, block: Block) -> list[int]:
        return list(dict.fromkeys(self.block_index[t] for t in block_successors(block)))

    def _facts(self, op: InstructionOp) -> InstFacts:
        return self.facts.facts(op)

    def _build(self) -> None:
        """Register classes (destination-passing chains) and each op's reads and writes."""
        ops = self.ops
        n = len(ops)
        facts_of = self.facts.facts
        op_facts: list[InstFacts | None] = [None] * n
        op_args: list[tuple[SSAValue, ...]] = [()] * n
        # A result's register is its destination operand's: parent links form a forest
        # whose roots are allocas, ABI values and other fresh values.
        # Keyed by id(): SSAValue.__hash__ is a Python-level method (the values stay alive
        # in the IR while this runs).
        parent: dict[int, SSAValue] = {}
        abi_ops: list[Operation] = []
        views: list[Operation] = []
        writes_exec = False
        for i, op in enumerate(ops):
            cls = type(op)
            if cls in _VIEW_OPS:
                views.append(op)
            elif cls in _INSTRUCTION_OPS:
                facts = op_facts[i] = facts_of(op)
                args = op_args[i] = tuple(op.operands)
                results = op.results
                if "exec" in facts.implicit_defs:
                    writes_exec = True
                for k, pos in enumerate(facts.def_positions):
                    dest = args[pos]
                    if type(dest.type) in REGISTER_CLASSES:
                        parent[id(results[k])] = dest
                    elif isinstance(dest.type, SpecialRegType) and \
                            dest.type.reg_name.startswith("exec"):
                        writes_exec = True
            elif isinstance(op, ABI_VALUE_OPS):
                abi_ops.append(op)
        classes: list[RegClass] = []
        # A value's class id, or for a value of sub-registers (see _build_views) the tuple of
        # the class ids of its registers, in order.
        cid_of: dict[int, int | tuple[int, ...]] = {}
        bundled: list[SSAValue] = []  # values given a tuple

        def resolve(v: SSAValue) -> int | tuple[int, ...]:
            cid = cid_of.get(id(v))
            if cid is not None:
                return cid
            chain = []
            while cid is None and id(v) in parent:
                chain.append(v)
                v = parent[id(v)]
                cid = cid_of.get(id(v))
            if cid is None:
                t: RegisterType = v.type  # type: ignore[assignment]
                cid = len(classes)
                classes.append(RegClass(cid, t.KIND, t.width, t.alignment,
                                        t.first if t.is_fixed else None, [v]))
                cid_of[id(v)] = cid
            if type(cid) is int:
                values = classes[cid].values
                for u in reversed(chain):
                    cid_of[id(u)] = cid
                    values.append(u)
            else:
                for u in reversed(chain):
                    cid_of[id(u)] = cid
                    bundled.append(u)
            return cid

        views_state = None
        if views:
            views_state = self._views_before(views, parent, classes, cid_of, bundled, resolve)

        self.reads: list[tuple[int, ...]] = [()] * n
        self.writes: list[tuple[int, ...]] = [()] * n
        self.early: list[bool] = [False] * n
        self.has_token: list[bool] = [bool(f and f.has_token) for f in op_facts]
        self._counters: list[tuple[str, ...]] = [f.counters if f else () for f in op_facts]
        self.copies: list[CopyInfo] = []
        for i, op in enumerate(ops):
            facts = op_facts[i]
            if facts is None:
                for r in op.results:
                    if type(r.type) in REGISTER_CLASSES:
                        resolve(r)
                if isinstance(op, func.CallOp):
                    # Not inlined yet: the arguments are read, the results are new values.
                    self.calls.append(op)
                    self.reads[i] = tuple(dict.fromkeys(
                        u for a in op.operands if type(a.type) in REGISTER_CLASSES
                        for u in _ids(resolve(a))))
                    self.writes[i] = tuple(dict.fromkeys(
                        u for r in op.results if type(r.type) in REGISTER_CLASSES
                        for u in _ids(resolve(r))))
                continue
            reads: list[int] = []
            writes: list[int] = []
            defs = facts.def_positions
            aligns = facts.aligns
            for pos, arg in enumerate(op_args[i]):
                if type(arg.type) not in REGISTER_CLASSES:
                    continue
                cid = resolve(arg)
                if type(cid) is not int:
                    # Sub-registers: the op reads / writes exactly these registers.
                    c = classes[cid[0]]
                    if pos < len(aligns) and aligns[pos] > 1:
                        views_state.align_uses.append((aligns[pos], arg, op, pos))
                    if pos in defs:
                        writes += cid
                        if pos in facts.read_defs or (c.kind != "s" and (
                                not _fresh(arg) or (writes_exec and c.fixed is not None))):
                            reads += cid
                    else:
                        reads += cid
                    continue
                c = classes[cid]
                if pos < len(aligns) and aligns[pos] > c.align:
                    c.align = aligns[pos]
                if pos in defs:
                    writes.append(cid)
                    if pos in facts.read_defs or (c.kind != "s" and (
                            type(arg.owner) is not AllocaOp
                            or (writes_exec and c.fixed is not None))):
                        reads.append(cid)
                else:
                    reads.append(cid)
            for r in op.results:
                if type(r.type) in REGISTER_CLASSES:
                    resolve(r)
            self.reads[i] = tuple(dict.fromkeys(reads)) if len(reads) > 1 else tuple(reads)
            self.writes[i] = tuple(dict.fromkeys(writes)) if len(writes) > 1 else tuple(writes)
            self.early[i] = facts.early_clobber
            if defs and (facts.is_copy or facts.mnemonic.startswith("v_mfma")):
                self._note_copy(i, op, facts, op_args[i], cid_of, classes)
        if abi_ops:
            # Only the ABI ops decide the ABI registers: give compute_layout just those.
            layout = compute_layout(_LayoutView(self.kernel.args, abi_ops))  # type: ignore
            for op in abi_ops:
                reg = layout.abi_register(op)
                cid = cid_of.get(id(op.results[0]))
                if reg is not None and cid is not None:
                    for k, unit in enumerate((cid,) if type(cid) is int else cid):
                        c = classes[unit]
                        c.abi = True
                        c.fixed = reg.first + k
        self.classes = classes
        self.bundles: list[Bundle] = []
        self.view_conflicts: list[ViewConflict] = []
        self.view_errors: list[tuple[Operation, str]] = []
        # What tied classes together, in order: (make_register_range, operand, head class,
        # operand's first class), or (op, -1, head class, -1) for a pinned result.
        self.view_links: list[tuple[Operation, int, int, int]] = []
        # Values of sub-registers with the class ids of their registers (None: no views).
        self.value_parts: dict[SSAValue, tuple[int, ...]] = {}
        if views_state is not None:
            self._views_after(views_state, cid_of, bundled, resolve)
            self.copies = [cp for cp in self.copies if classes[cp.dst].bundle is None
                           and classes[cp.src].bundle is None]
        self.class_of: dict[SSAValue, RegClass] = {v: c for c in classes for v in c.values
                                                   if c.bundle is None}
        self.writes_exec = writes_exec
        if self.soft_clauses:
            self._hold_clause_sources(op_facts, self.soft_clauses)

    def _hold_clause_sources(self, op_facts: list[InstFacts | None],
                             kinds: frozenset[str]) -> None:
        """Keep the registers of an XNACK soft clause apart (see the module docstring): in
        each run of back-to-back SMEM or VMEM instructions, a destination may not take a
        register that the instruction itself or an earlier one of the run reads."""
        classes = self.classes
        for start, end in self.block_range:
            for run in _clause_runs(self.ops, op_facts, self.writes, kinds, start, end):
                held: dict[int, None] = {}  # sources of the run so far, in order
                for k, i in enumerate(run):
                    writes, reads = self.writes[i], self.reads[i]
                    if any(classes[w].fixed is not None for w in writes):
                        held = {}  # a pinned destination is where it is: nothing to steer
                    elif writes:
                        if k + 1 < len(run) or held:
                            self.early[i] = True  # apart from its sources and the held ones
                        extra = tuple(r for r in held if r not in writes and r not in reads)
                        if extra:
                            self.reads[i] = reads + extra
                    for w in writes:
                        held.pop(w, None)
                    for r in reads:
                        held[r] = None

    def _note_copy(self, i: int, op: InstructionOp, facts: InstFacts,
                   args: tuple[SSAValue, ...], cid_of: dict[int, int],
                   classes: list[RegClass]) -> None:
        dpos = facts.def_positions[0]
        dest = args[dpos]
        if not isinstance(dest.owner, AllocaOp) or type(cid_of.get(id(dest))) is not int:
            return  # only a new value may take its source's register
        dst = classes[cid_of[id(dest)]]  # type: ignore[index]
        if facts.is_copy:
            src_pos, kind = dpos + 1, "copy"
        elif len(args) >= 4:
            src_pos, kind = 3, "mfma"
        else:
            return
        if src_pos >= len(args) or type(cid_of.get(id(args[src_pos]))) is not int:
            return
        src = classes[cid_of[id(args[src_pos])]]  # type: ignore[index]
        if src is dst or src.kind != dst.kind or src.width != dst.width:
            return
        self.copies.append(CopyInfo(op, i, dst.id, src.id, kind))

    # --- sub-registers (split_register_range / make_register_range) ----------------------

    def _views_before(self, views, parent, classes, cid_of, bundled, resolve) -> _ViewsState:
        """Before the reads and writes: the registers of every view. A class that some split
        cuts is replaced by one class per register (its units), so that a piece live keeps
        exactly its register live; every view value gets the tuple of its registers' class
        ids in `cid_of`."""
        segs_of: dict[int, tuple] = {}
        dep_of: dict[int, int] = {}
        rank = {op: k for k, op in enumerate(o for o in views
                                              if type(o) is MakeRegisterRangeOp)}

        def root_of(v: SSAValue) -> SSAValue:
            while id(v) in parent:
                v = parent[id(v)]
            return v

        def segs(v: SSAValue) -> tuple:
            r = root_of(v)
            found = segs_of.get(id(r))
            if found is not None:
                return found
            owner = r.owner
            if type(owner) is SplitRegisterRangeOp:
                src = owner.source
                offset = owner.offsets[r.index]  # type: ignore[attr-defined]
                found = _slice(segs(src), offset, r.type.width)  # type: ignore[attr-defined]
                dep = dep_of[id(root_of(src))]
            elif type(owner) is MakeRegisterRangeOp:
                found = tuple(x for p in owner.parts for x in segs(p))
                dep = max([rank[owner], *(dep_of[id(root_of(p))] for p in owner.parts)])
            else:
                cid = resolve(r)
                found, dep = ((cid, 0, classes[cid].width),), -1
            segs_of[id(r)] = found
            dep_of[id(r)] = dep
            return found

        split_classes: set[int] = set()
        for op in views:
            for r in op.results:
                for cid, lo, n in segs(r):
                    if lo or n != classes[cid].width:
                        split_classes.add(cid)
        units_of: dict[int, tuple[int, ...]] = {}
        unit_align: list[tuple[int, int]] = []
        for cid in sorted(split_classes):
            c = classes[cid]
            ids = [cid]
            for k in range(1, c.width):
                u = RegClass(len(classes), c.kind, 1, 1,
                             None if c.fixed is None else c.fixed + k, [], unit=k, source=c,
                             whole=c.width)
                classes.append(u)
                ids.append(u.id)
            unit_align.append((c.align, cid))
            c.unit, c.whole, c.width, c.align = 0, c.width, 1, 1
            units_of[cid] = tuple(ids)
            for v in c.values:
                cid_of[id(v)] = units_of[cid]
                bundled.append(v)

        def expand(sg: tuple) -> tuple[int, ...]:
            out: list[int] = []
            for cid, lo, n in sg:
                if cid in units_of:
                    out.extend(units_of[cid][lo:lo + n])
                else:
                    out.append(cid)
            return tuple(out)

        for op in views:
            for r in op.results:
                cid_of[id(r)] = expand(segs(r))
                bundled.append(r)
        return _ViewsState(views, segs_of, dep_of, root_of, units_of, unit_align)

    def _views_after(self, st: _ViewsState, cid_of, bundled, resolve) -> None:
        """After the reads and writes: the bundles (which classes must be consecutive, with
        their alignment and pins) and the make_register_range operands that cannot be where
        their range needs them (`view_conflicts`, for the allocator to copy)."""
        classes = self.classes
        for v in bundled:
            self.value_parts[v] = cid_of[id(v)]  # type: ignore[assignment]
        members: set[int] = set()
        for parts in self.value_parts.values():
            members.update(parts)
        joins = [op for op in st.views if type(op) is MakeRegisterRangeOp]
        for op in joins:
            for p in op.parts:
                members.update(_ids(resolve(p)))
        uf = _OffsetUnion([c.width for c in classes])
        for ids in st.units_of.values():
            for k in range(1, len(ids)):
                uf.link(ids[0], ids[k], k)
        for cid in members:
            c = classes[cid]
            if c.fixed is not None:
                uf.pin(cid, c.fixed)
        root_of = st.root_of

        def first_unit(v: SSAValue) -> int:
            return _ids(resolve(v))[0]

        for a, cid in st.unit_align:
            if a > 1:
                uf.align(cid, a)
        by_dep: dict[int, list[tuple[int, SSAValue, Operation, int]]] = {}
        for a, cid in ((classes[m].align, m) for m in members):
            if a > 1 and not uf.align(cid, a):
                self.view_errors.append((classes[cid].first_value.owner,
                                         f"{classes[cid].describe()} cannot be aligned"))
        for use in st.align_uses:
            by_dep.setdefault(st.dep.get(id(root_of(use[1])), -1), []).append(use)

        def misaligned(use, own: bool = False) -> str:
            a, v, op, pos = use
            name = f" (%{v.name_hint})" if v.name_hint else ""
            where = "" if own else f" of {op_title(op)}"
            return (f"operand #{pos}{name}{where} needs {a}-register alignment, which its "
                    "registers' place in their range does not allow")

        for use in by_dep.get(-1, ()):
            if not uf.align(first_unit(use[1]), use[0]):
                self.view_errors.append((use[2], misaligned(use, True) + " (copy the piece "
                                         "to new registers first)"))
        for k, op in enumerate(joins):
            head = first_unit(op.parts[0])
            for j, (p, offset) in enumerate(zip(op.parts, op.offsets)):
                if j == 0:
                    continue
                u = first_unit(p)
                problem = uf.link(head, u, offset)
                self.view_links.append((op, j, head, u))
                if problem:
                    self.view_conflicts.append(ViewConflict(op, j, problem))
            t = op.result.type
            if t.is_fixed:  # type: ignore[attr-defined]
                self.view_links.append((op, -1, head, -1))
                if not uf.pin(head, t.first):  # type: ignore[attr-defined]
                    self.view_conflicts.append(ViewConflict(
                        op, -1, f"the result is pinned to {t.asm()}"))  # type: ignore
            if t.alignment > 1 and not uf.align(head, t.alignment):  # type: ignore
                self.view_conflicts.append(ViewConflict(
                    op, -1, f"the result is aligned to {t.alignment}"))  # type: ignore
            for use in by_dep.get(k, ()):
                if not uf.align(first_unit(use[1]), use[0]):
                    self.view_conflicts.append(ViewConflict(op, -1, misaligned(use)))
        groups: dict[int, list[tuple[int, int]]] = {}
        for cid in sorted(members):
            r, o = uf.find(cid)
            groups.setdefault(r, []).append((cid, o))
        for r, items in groups.items():
            lo = min(o for _c, o in items)
            b = Bundle(len(self.bundles), classes[items[0][0]].kind, [], 0, uf.mod[r],
                       (uf.res[r] + lo) % uf.mod[r],
                       None if uf.fixed[r] is None else uf.fixed[r] + lo)
            for cid, o in items:
                c = classes[cid]
                c.bundle, c.offset = b.id, o - lo
                b.members.append(c)
                b.width = max(b.width, c.offset + c.width)
            self.bundles.append(b)

    def _solve(self) -> None:
        nb = len(self.blocks)
        gen = [0] * nb
        kill = [0] * nb
        for b in range(nb):
            start, end = self.block_range[b]
            g = k = 0
            for i in range(end - 1, start - 1, -1):
                for w in self.writes[i]:
                    bit = 1 << w
                    k |= bit
                    g &= ~bit
                for r in self.reads[i]:
                    g |= 1 << r
            gen[b], kill[b] = g, k
        live_in = [0] * nb
        live_out = [0] * nb
        changed = True
        while changed:
            changed = False
            for b in range(nb - 1, -1, -1):
                out = 0
                for s in self.succs[b]:
                    out |= live_in[s]
                new_in = gen[b] | (out & ~kill[b])
                if out != live_out[b] or new_in != live_in[b]:
                    live_out[b], live_in[b] = out, new_in
                    changed = True
        self.live_in_bits = live_in
        self.live_out_bits = live_out

    # --- queries --------------------------------------------------------------------------

    def classes_of(self, bits: int) -> frozenset[RegClass]:
        """The classes of a bit set."""
        return frozenset(self.classes[i] for i in iter_bits(bits))

    def live_in(self, block: Block) -> frozenset[RegClass]:
        """Classes live on entry to `block`."""
        return self.classes_of(self.live_in_bits[self.block_index[block]])

    def live_out(self, block: Block) -> frozenset[RegClass]:
        """Classes live on exit from `block`."""
        return self.classes_of(self.live_out_bits[self.block_index[block]])

    def _fill_block(self, b: int) -> None:
        start, end = self.block_range[b]
        live = self.live_out_bits[b]
        for i in range(end - 1, start - 1, -1):
            self._after_bits[i] = live
            for w in self.writes[i]:
                live &= ~(1 << w)
            for r in self.reads[i]:
                live |= 1 << r

    def live_after_bits(self, index: int) -> int:
        """Bit set of the classes live right after op number `index`."""
        bits = self._after_bits[index]
        if bits is None:
            self._fill_block(self.block_of_op[index])
            bits = self._after_bits[index]
        return bits  # type: ignore[return-value]

    def live_before_bits(self, index: int) -> int:
        """Bit set of the classes live right before op number `index`."""
        live = self.live_after_bits(index)
        for w in self.writes[index]:
            live &= ~(1 << w)
        for r in self.reads[index]:
            live |= 1 << r
        return live

    def live_after(self, op: Operation) -> frozenset[RegClass]:
        """Classes live right after `op`."""
        return self.classes_of(self.live_after_bits(self.op_index[op]))

    def live_before(self, op: Operation) -> frozenset[RegClass]:
        """Classes live right before `op`."""
        return self.classes_of(self.live_before_bits(self.op_index[op]))

    def live_at(self, point: int) -> frozenset[RegClass]:
        """Classes holding a register at a program point (live, or written there)."""
        if point == 0:
            return self.classes_of(self.live_in_bits[0] if self.blocks else 0)
        i = (point - 1) // 2
        if point % 2 == 0:
            bits = self.live_after_bits(i)
            for w in self.writes[i]:
                bits |= 1 << w
        else:
            bits = self.live_before_bits(i)
            if self.early[i]:
                for w in self.writes[i]:
                    bits |= 1 << w
        return self.classes_of(bits)

    def point_op(self, point: int) -> tuple[Operation | None, bool]:
        """(op, after) for a program point (None at the kernel entry)."""
        if point == 0:
            return None, False
        return self.ops[(point - 1) // 2], point % 2 == 0

    def reads_of(self, op: Operation) -> frozenset[RegClass]:
        """Classes `op` reads."""
        return frozenset(self.classes[i] for i in self.reads[self.op_index[op]])

    def writes_of(self, op: Operation) -> frozenset[RegClass]:
        """Classes `op` writes."""
        return frozenset(self.classes[i] for i in self.writes[self.op_index[op]])

    # --- ranges, pressure, interference ----------------------------------------------------

    def _scan(self) -> None:
        """Live ranges (point sets) of every class and the peak pressure per file."""
        if self._scanned:
            return
        self._L, self._D, self._runs, self._defs, self._best = self._walk(None, True)
        self._scanned = True

    def _walk(self, exclude: dict[str, set[int]] | None, with_ranges: bool):
        """One backward pass over every block: the peak pressure per file (registers in
        `exclude` not counted) and, if asked, the live ranges."""
        classes = self.classes
        nc = len(classes)
        L = [0] * nc
        D = [0] * nc
        kinds = [c.kind for c in classes]
        widths = [c.width for c in classes]
        units: list = [c.units if c.fixed is not None else None for c in classes]
        if exclude:
            units = [us if us is None else [u for u in us if u not in exclude.get(kinds[k], ())]
                     for k, us in enumerate(units)]
        cur = {"v": 0, "a": 0, "s": 0}
        count: dict[tuple[str, int], int] = {}
        best = {f: (-1, 0) for f in FILES}

        def add(cid: int) -> None:
            us = units[cid]
            kind = kinds[cid]
            if us is None:
                cur[kind] += widths[cid]
                return
            for u in us:
                key = (kind, u)
                n = count.get(key, 0)
                count[key] = n + 1
                if n == 0:
                    cur[kind] += 1

        def remove(cid: int) -> None:
            us = units[cid]
            kind = kinds[cid]
            if us is None:
                cur[kind] -= widths[cid]
                return
            for u in us:
                key = (kind, u)
                n = count[key] - 1
                count[key] = n
                if n == 0:
                    cur[kind] -= 1

        def record(point: int) -> None:
            for f in FILES:
                if cur[f] > best[f][0]:
                    best[f] = (cur[f], point)

        runs: list[list[tuple[int, int]]] = [[] for _ in range(nc)]
        defs: list[list[int]] = [[] for _ in range(nc)]
        for b in range(len(self.blocks)):
            start, end = self.block_range[b]
            if start == end:
                continue
            live: dict[int, int] = {}
            for cid in iter_bits(self.live_out_bits[b]):
                live[cid] = 2 * end
                add(cid)
            for i in range(end - 1, start - 1, -1):
                pa, pb = 2 * i + 2, 2 * i + 1
                writes, reads = self.writes[i], self.reads[i]
                if not writes and not reads:
                    record(pa)
                    continue
                for w in writes:
                    if w not in live:
                        add(w)  # a dead write still takes its register at this point
                record(pa)
                early = self.early[i]
                for w in writes:
                    end_point = live.pop(w, None)
                    if end_point is None:
                        # A dead write; a load still owns its register until it completes.
                        end_point = self._async_end(i) if self.has_token[i] else pa
                    lo = pb if early else pa
                    L[w] |= interval(lo, end_point)
                    runs[w].append((lo, end_point))
                    D[w] |= (1 << pa) | ((1 << pb) if early else 0)
                    defs[w].append(pa)
                    if early:
                        defs[w].append(pb)
                    else:
                        remove(w)
                for r in reads:
                    if r not in live:
                        live[r] = pb
                        if not early or r not in writes:
                            add(r)
                record(pb)
                if early:
                    for w in writes:
                        if w not in live:
                            remove(w)
            first = 2 * start + 1
            for cid, end_point in live.items():
                L[cid] |= interval(first, end_point)
                runs[cid].append((first, end_point))
                remove(cid)
        if self.blocks:
            for cid in iter_bits(self.live_in_bits[0]):
                L[cid] |= 1
                D[cid] |= 1
                runs[cid].append((0, 0))
                defs[cid].append(0)
                add(cid)
            record(0)
            for cid in iter_bits(self.live_in_bits[0]):
                remove(cid)
        return L, D, runs, defs, best

    def _async_end(self, i: int) -> int:
        """The point by which the memory op number `i` has written its registers: the first
        op of its block that takes its token or waits for its counter to reach 0, else the
        end of the block."""
        op = self.ops[i]
        counters = self._counters[i]
        token = op.results[-1] if op.results else None
        _start, end = self.block_range[self.block_of_op[i]]
        for j in range(i + 1, end):
            other = self.ops[j]
            if token is not None and token in other.operands:
                return 2 * j + 1
            if isinstance(other, InstructionOp) and other.properties["mnemonic"].data == \
                    "s_waitcnt":
                mods = other.mods
                if any(mods.get(c) == 0 for c in counters):
                    return 2 * j + 2
        return 2 * end

    def ranges(self) -> tuple[list[int], list[int]]:
        """(live points, written points) of every class, as bit sets over program points.
        The live points of a dead write to a memory op's destination extend to the op's
        completion (`_async_end`): the register is written late."""
        self._scan()
        return self._L, self._D

    def runs(self) -> list[list[tuple[int, int]]]:
        """The live points of every class as (first, last) intervals (may overlap)."""
        self._scan()
        return self._runs

    def def_points(self) -> list[list[int]]:
        """The points where every class is written (the kernel entry for inputs)."""
        self._scan()
        return self._defs

    def pressure(self, exclude: dict[str, set[int]] | None = None) -> dict[str, Pressure]:
        """Peak registers live at once per file ("v", "a", "s"), where, and what is live.
        With `exclude` (registers per file, e.g. reserved regions), values pinned there are
        not counted (nor listed), so the peak is what competes for the other registers."""
        if exclude:
            best = self._walk(exclude, False)[4]
        else:
            self._scan()
            best = self._best
        out: dict[str, Pressure] = {}
        for f in FILES:
            peak, point = best[f]
            peak = max(peak, 0)
            op, after = self.point_op(point)
            live = frozenset()
            if peak:
                skip = exclude.get(f, ()) if exclude else ()
                live = frozenset(c for c in self.live_at(point) if c.kind == f and not (
                    c.fixed is not None and all(u in skip for u in c.units)))
            out[f] = Pressure(f, peak, point, op, after, live)
        return out

    def interferes(self, a: RegClass, b: RegClass) -> bool:
        """True if the two are in one register file and one is written where the other is
        live."""
        if a is b or a.kind != b.kind:
            return False
        L, D = self.ranges()
        return bool((L[a.id] & D[b.id]) | (D[a.id] & L[b.id]))

    def interference_graph(self) -> dict[RegClass, set[RegClass]]:
        """Every class with the classes of its register file it interferes with (built op
        by op, independently of `ranges`)."""
        adj: dict[int, int] = {c.id: 0 for c in self.classes}
        for i in range(len(self.ops)):
            writes = self.writes[i]
            if not writes:
                continue
            near = self.live_after_bits(i)
            for w in writes:
                near |= 1 << w
            if self.early[i]:
                near |= self.live_before_bits(i)
            for w in writes:
                adj[w] |= near
        if self.blocks:
            entry = self.live_in_bits[0]
            for cid in iter_bits(entry):
                adj[cid] |= entry
        for cid in list(adj):
            for other in iter_bits(adj[cid]):
                adj[other] |= 1 << cid
        classes = self.classes
        return {classes[cid]: {classes[o] for o in iter_bits(bits)
                               if o != cid and classes[o].kind == classes[cid].kind}
                for cid, bits in adj.items()}

    def loop_depth(self, block: Block) -> int:
        """How many loops (natural loops of back edges) contain `block`."""
        if self._depth is None:
            self._depth = _loop_depths(self.succs, self.preds)
        return self._depth[self.block_index[block]]

    def op_loop_depth(self, index: int) -> int:
        """Loop depth of op number `index`."""
        return self.loop_depth(self.blocks[self.block_of_op[index]])


def _loop_depths(succs: list[list[int]], preds: list[list[int]]) -> list[int]:
    n = len(succs)
    depth = [0] * n
    if not n:
        return depth
    # Back edges: edges to a block on the DFS stack (iterative DFS from the entry).
    state = [0] * n  # 0 new, 1 on stack, 2 done
    back: list[tuple[int, int]] = []
    stack: list[tuple[int, int]] = [(0, 0)]
    state[0] = 1
    while stack:
        b, k = stack[-1]
        if k < len(succs[b]):
            stack[-1] = (b, k + 1)
            s = succs[b][k]
            if state[s] == 0:
                state[s] = 1
                stack.append((s, 0))
            elif state[s] == 1:
                back.append((b, s))
        else:
            state[b] = 2
            stack.pop()
    for tail, head in back:
        body = {head}
        work = [tail]
        while work:
            b = work.pop()
            if b in body:
                continue
            body.add(b)
            work.extend(preds[b])
        for b in body:
            depth[b] += 1
    return depth


def _clause_runs(ops: list[Operation], op_facts: list[InstFacts | None],
                 writes: list[tuple[int, ...]], kinds: frozenset[str], start: int,
                 end: int) -> Iterator[list[int]]:
    """The runs of op indices in [start, end) that may form one soft clause: back-to-back
    instructions of one unit among `kinds` (ops that emit no code do not part them)
    up to a store that follows a write (it starts a new clause, as the hazards pass makes it
    do). Runs of one instruction are left out."""
    run: list[int] = []
    unit = None
    wrote = False
    for i in range(start, end):
        facts = op_facts[i]
        if facts is None:
            if type(ops[i]) in _CLAUSE_BREAKS:
                if len(run) > 1:
                    yield run
                run, unit = [], None
            continue
        kind = facts.unit if facts.unit in kinds else None  # (unit = hazard class name)
        if kind != unit or (kind is not None and wrote and not writes[i]):
            if len(run) > 1:
                yield run
            run, unit, wrote = [], kind, False
        if kind is not None:
            run.append(i)
            wrote = wrote or bool(writes[i])
    if len(run) > 1:
        yield run


def analyze_kernel(kernel: KernelOp, isa: IsaDatabase | None = None) -> KernelLiveness:
    """Liveness of one kernel."""
    with gc_paused():
        return KernelLiveness(kernel, isa)


def analyze_module(module: Operation) -> dict[str, KernelLiveness]:
    """Liveness of every kernel of a module, by kernel name."""
    out: dict[str, KernelLiveness] = {}
    for amod in amdgcn_modules(module):
        isa = get_isa(amod.target_name)
        for op in amod.body.ops:
            if isinstance(op, KernelOp):
                out[op.kernel_name] = analyze_kernel(op, isa)
    return out


def value_names(top: Operation) -> dict[SSAValue, str]:
    """The `%name` the IR printer gives every value under `top` (for messages)."""
    import io

    from xdsl.printer import Printer

    root = top
    while root.parent_op() is not None:
        root = root.parent_op()  # names are given while printing from the top
    printer = Printer(stream=io.StringIO())
    printer.print_op(root)
    return {v: f"%{name}" for v, name in printer._ssa_values.items()}


def class_name(c: RegClass, names: dict[SSAValue, str]) -> str:
    """How messages name a class: its first written value (`%x0`), else its first value."""
    value = next((v for v in c.values if not isinstance(v.owner, AllocaOp)), c.first_value)
    return names.get(value) or f"%{value.name_hint or '?'}"


def describe_classes(classes, names: dict[SSAValue, str], limit: int = 16) -> str:
    """`%a (v[? + 4], from t.mlir:3:5), %b (v7), ...` for messages (at most `limit`)."""
    items = sorted(classes, key=lambda c: (-c.width, c.id))
    parts = []
    for c in items[:limit]:
        value = next((v for v in c.values if not isinstance(v.owner, AllocaOp)),
                     c.first_value)
        loc = op_location(value.owner) if isinstance(value.owner, Operation) else None
        where = f", from {loc}" if loc else ""
        parts.append(f"{class_name(c, names)} ({c.describe()}{where})")
    if len(items) > limit:
        parts.append(f"... and {len(items) - limit} more")
    return ", ".join(parts)


def pressure_report(live: KernelLiveness) -> str:
    """A few lines on peak register pressure per file."""
    lines = [f"liveness @{live.kernel.kernel_name}:"]
    for f, p in live.pressure().items():
        if p.peak:
            lines.append(f"  {FILE_NAMES[f]:<5} peak {p.peak:4d} at {p.where()}")
        else:
            lines.append(f"  {FILE_NAMES[f]:<5} peak    0")
    return "\n".join(lines)


@dataclass(frozen=True)
class LivenessPass(Pass):
    """`liveness` (no options)."""

    name = "liveness"
    summary = "report peak register pressure per kernel on stderr (analysis only: the IR is " \
              "unchanged)"

    def apply(self, module: Operation) -> None:
        """Print each kernel's peak pressure and where it occurs."""
        for live in analyze_module(module).values():
            sys.stderr.write(pressure_report(live) + "\n")


__all__ = [
    "FILES",
    "CopyInfo",
    "KernelLiveness",
    "LivenessPass",
    "Pressure",
    "RegClass",
    "analyze_kernel",
    "analyze_module",
    "class_name",
    "describe_classes",
    "interval",
    "iter_bits",
    "pressure_report",
    "value_names",
]
