"""Relocatable raising: a raised kernel's fixed registers become SSA values the passes can
re-allocate (`asterism raise --relocatable`).

Live ranges are split at definitions: the definitions of a physical register that reach a
common read (reaching definitions over the CFG, per 32-bit register) form a *web*; each web
becomes one relocatable value class, i.e. an `amdgcn.alloca` that its definitions take as
destination ("a new value"), and whose later results the reads in the same block use. Where
branches merge, the definitions reaching the join are in one web, so they share the class (the
IR's equivalent of block arguments: one register for the merged value); a read in another
block reads the web's alloca, the name of the class. An instruction that reads its
destination (tied operands, conditional moves) continues the web of the value it reads, as
does every vector write in a kernel that writes EXEC (the lanes it leaves keep the old value).

Stays fixed (pinned): registers named by `keep_pinned`, registers a web reads or writes with
different shapes (a pair written whole and read as halves, ...), registers read before any
definition that are no dispatch input, and every register sharing a web with one of those.
The dispatch inputs (kernarg pointer, workgroup ids, work-item ids) read at the entry become
relocatable ABI ops. `drop_waits`/`drop_nops` remove the written s_waitcnt/s_nop so the waits
and hazards passes place their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.ir import Block, Operation, SSAValue

from asterism.errors import ParseError
from asterism.ir.abi import USER_SGPR_OPS, compute_layout
from asterism.ir.ops import (
    ABI_VALUE_OPS,
    AllocaOp,
    InstructionOp,
    KernelOp,
    SOPPOp,
    WorkgroupIdOp,
    WorkitemIdOp,
)
from asterism.ir.types import REGISTER_TYPES, RegisterType, SpecialRegType
from asterism.ir.verify import match_instruction
from asterism.isa import get_isa

ENTRY = -1  # the definition "whatever the register holds when the kernel starts"
CONDITIONAL_WRITES = ("s_cmov", "s_cmovk")
EXEC_NAMES = frozenset({"exec", "exec_lo", "exec_hi"})
_RANGE = re.compile(r"^([vsa])(?:(\d+)|\[(\d+):(\d+)\])$")


def parse_pinned(text: str) -> set[tuple[str, int]]:
    """The register units of `v[0:3],s[4:5],a7` (assembly ranges, inclusive)."""
    out: set[tuple[str, int]] = set()
    for part in filter(None, (p.strip() for p in text.replace(";", ",").split(","))):
        m = _RANGE.match(part)
        if m is None:
            raise ParseError(f"--keep-pinned: '{part}' is not a register or range such as v4, "
                             "v[0:3], s[4:5], a[0:127]")
        kind = m.group(1)
        lo = int(m.group(2) or m.group(3))
        hi = int(m.group(2) or m.group(4))
        if hi < lo:
            raise ParseError(f"--keep-pinned: '{part}' ends before it starts")
        out |= {(kind, i) for i in range(lo, hi + 1)}
    return out


@dataclass(eq=False)
class _Ref:
    """One register operand of an instruction op: what it reads and/or writes."""

    op: Operation
    pos: int
    kind: str
    first: int
    width: int
    reads: bool
    writes: bool
    align: int = 1
    result: int | None = None  # the op's result index for a definition

    @property
    def units(self) -> list[tuple[str, int]]:
        """The 32-bit registers it names."""
        return [(self.kind, self.first + i) for i in range(self.width)]


@dataclass
class _Web:
    """Definitions and reads that must share one register (range)."""

    refs: list[_Ref] = field(default_factory=list)
    entry: bool = False  # reads the value the kernel starts with
    value: SSAValue | None = None  # the alloca / ABI value naming the class


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[object, object] = {}

    def find(self, x: object) -> object:
        """The representative of x's set."""
        self.parent.setdefault(x, x)
        while self.parent[x] is not x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: object, b: object) -> None:
        """Merge the sets of a and b."""
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb


@dataclass
class RelocationReport:
    """What relocation did to one kernel."""

    kernel: str
    webs: int = 0  # relocatable values made
    pinned: set[tuple[str, int]] = field(default_factory=set)  # registers left fixed
    dropped_waits: int = 0
    dropped_nops: int = 0


def relocate_module(module: BuiltinModuleOp, options) -> list[RelocationReport]:
    """Make the registers of every raised kernel relocatable (see the module docstring)."""
    pinned = parse_pinned(getattr(options, "keep_pinned", "") or "")
    reports = []
    for op in module.walk():
        if isinstance(op, KernelOp):
            target = op.parent_op().target_name  # type: ignore[union-attr]
            reports.append(_KernelRelocation(op, target, pinned, options).run())
    return reports


class _KernelRelocation:
    def __init__(self, kernel: KernelOp, target: str, pinned: set[tuple[str, int]], options):
        self.kernel = kernel
        self.isa = get_isa(target)
        self.pinned = set(pinned)
        self.options = options
        self.refs: dict[Operation, list[_Ref]] = {}
        self.report = RelocationReport(kernel.kernel_name)
        self.superseded: set[Operation] = set()  # fixed ABI ops a relocatable one replaces

    # --- facts ----------------------------------------------------------------------------

    def collect(self) -> None:
        """The register operands of every instruction op, and whether the kernel writes
        EXEC."""
        self.writes_exec = False
        for op in self.kernel.walk():
            if not isinstance(op, InstructionOp):
                continue
            match = match_instruction(op, self.isa)
            defs = list(match.def_positions)
            tied = {p for p in defs if match.specs[p].tied}
            if match.instruction.mnemonic.startswith(CONDITIONAL_WRITES):
                tied |= set(defs)
            if "exec" in match.instruction.implicit_defs:
                self.writes_exec = True
            refs = []
            for k, value in enumerate(op.args):
                t = value.type
                if isinstance(t, SpecialRegType):
                    if k in defs and t.reg_name in EXEC_NAMES:
                        self.writes_exec = True
                    continue
                if not isinstance(t, RegisterType) or not t.is_fixed or t.KIND == "ttmp":
                    continue  # (trap registers stay as written, like named registers)
                is_def = k in defs
                spec = match.specs[k] if k < len(match.specs) else None
                refs.append(_Ref(op, k, t.KIND, t.first, t.width, reads=not is_def or k in tied,
                                 writes=is_def, align=max(1, spec.align if spec else 1,
                                                          _sgpr_align(t)),
                                 result=defs.index(k) if is_def else None))
            self.refs[op] = refs
        if self.writes_exec:
            for refs in self.refs.values():
                for r in refs:
                    if r.writes and r.kind in ("v", "a"):
                        r.reads = True  # (lanes EXEC leaves keep the old value)

    def blocks(self) -> list[Block]:
        """The kernel's blocks in layout order."""
        return list(self.kernel.body.blocks)

    # --- webs -----------------------------------------------------------------------------

    def webs(self) -> dict[object, _Web]:
        """Reaching definitions per register unit, definitions joined at common reads."""
        blocks = self.blocks()
        succ = {b: [s for s in (b.last_op.successors if b.last_op else ())] for b in blocks}
        pred: dict[Block, list[Block]] = {b: [] for b in blocks}
        for b in blocks:
            for s in succ[b]:
                pred[s].append(b)
        gen: dict[Block, dict] = {}
        for b in blocks:
            last: dict[tuple[str, int], frozenset] = {}
            for op in b.ops:
                for r in self.refs.get(op, ()):
                    if r.writes:
                        for u in r.units:
                            last[u] = frozenset((r,))
            gen[b] = last
        entry = blocks[0]
        units = {u for refs in self.refs.values() for r in refs for u in r.units}
        start = {u: frozenset((("entry", u),)) for u in units}
        ins: dict[Block, dict | None] = {b: None for b in blocks}
        outs: dict[Block, dict] = {b: dict(gen[b]) for b in blocks}
        changed = True
        while changed:
            changed = False
            for b in blocks:
                merged: dict = dict(start) if b is entry else {}
                for p in pred[b]:
                    for u, ds in outs[p].items():
                        merged[u] = merged.get(u, frozenset()) | ds
                if merged != ins[b]:
                    ins[b] = merged
                    out = {u: ds for u, ds in merged.items() if u not in gen[b]}
                    out.update(gen[b])
                    outs[b] = out
                    changed = True
        uf = _UnionFind()
        entry_tokens = set(start.values())
        for b in blocks:
            current = dict(ins[b] or {})
            for op in b.ops:
                for r in self.refs.get(op, ()):
                    uf.find(r)
                    if not r.reads:
                        continue
                    for u in r.units:
                        # (nothing reaches it: a block no path enters; its entry value)
                        for d in current.get(u) or start[u]:
                            uf.union(r, d)
                for r in self.refs.get(op, ()):
                    if r.writes:
                        for u in r.units:
                            current[u] = frozenset((r,))
        entry_roots = {uf.find(next(iter(t))) for t in entry_tokens}
        webs: dict[object, _Web] = {}
        for refs in self.refs.values():
            for r in refs:
                root = uf.find(r)
                web = webs.setdefault(root, _Web())
                web.refs.append(r)
                web.entry = root in entry_roots
        return webs

    # --- rewriting ------------------------------------------------------------------------

    def run(self) -> RelocationReport:
        """Relocate the kernel; returns what was done."""
        self.collect()
        webs = self.webs()
        abi = self.abi_registers()
        shapes = {id(w): _shape(w) for w in webs.values()}
        # Pin what cannot move, then everything that shares a web with it, to a fixpoint.
        pinned = set(self.pinned)
        for w in webs.values():
            shape = shapes[id(w)]
            if shape is None or (w.entry and shape not in abi):
                pinned |= {u for r in w.refs for u in r.units}
        changed = True
        while changed:
            changed = False
            for w in webs.values():
                units = {u for r in w.refs for u in r.units}
                if units & pinned and not units <= pinned:
                    pinned |= units
                    changed = True
        self.report.pinned = pinned
        self.rewrite(webs, shapes, pinned, abi)
        self.drop_written()
        return self.report

    def abi_registers(self) -> dict[tuple[str, int, int], Operation]:
        """The fixed ABI value ops of the kernel by the register they name."""
        out = {}
        for op in self.kernel.walk():
            if isinstance(op, ABI_VALUE_OPS):
                t = op.results[0].type
                out[(t.KIND, t.first, t.width)] = op
        if ("v", 0, 1) not in out:
            out[("v", 0, 1)] = None  # (work-item ids: an op is made when v0 is read)
        return out

    def rewrite(self, webs: dict[object, _Web], shapes: dict, pinned: set, abi: dict) -> None:
        """Give every relocatable web its value and re-thread the operands."""
        entry = self.blocks()[0]
        first = entry.first_op
        web_of: dict[_Ref, _Web] = {}
        for w in webs.values():
            if {u for r in w.refs for u in r.units} & pinned:
                continue
            kind, _first, width = shapes[id(w)]
            align = max(r.align for r in w.refs)
            t = REGISTER_TYPES[kind].relocatable(width, align if width > 1 else 1)
            if w.entry:
                w.value = self.abi_value(shapes[id(w)], t, abi, entry, first)
            else:
                alloca = AllocaOp(t)
                alloca.results[0].name_hint = f"{kind}{_first}" if width == 1 else \
                    f"{kind}{_first}_{kind}{_first + width - 1}"
                entry.insert_op_before(alloca, first)
                w.value = alloca.results[0]
            self.report.webs += 1
            for r in w.refs:
                web_of[r] = w
        replaced: dict[Operation, SSAValue] = {}  # pinned reads of an ABI input -> alloca
        for block in self.blocks():
            current: dict[int, SSAValue] = {}
            for op in list(block.ops):
                refs = self.refs.get(op)
                if not refs:
                    continue
                for r in refs:
                    w = web_of.get(r)
                    if w is None:
                        self.unpin_abi_read(op, r, replaced, entry, first)
                        continue
                    value = current.get(id(w), w.value) if r.reads else w.value
                    op.operands[r.pos] = value
                for r in refs:
                    w = web_of.get(r)
                    if w is None or not r.writes:
                        continue
                    res = op.results[r.result]
                    res._type = w.value.type  # (destination passing: the result's type)
                    current[id(w)] = res
        for op in list(entry.ops):
            # (a fixed ABI op stays while its relocatable twin is not made: unused, it still
            # asks the dispatch for the input the descriptor enables)
            if (isinstance(op, AllocaOp) or op in self.superseded) and not op.results[0].uses:
                entry.erase_op(op)

    def unpin_abi_read(self, op: Operation, r: _Ref, replaced: dict, entry: Block,
                       first: Operation | None) -> None:
        """A pinned read of a dispatch input reads a plain fixed register instead: the
        allocator keeps an ABI input's register for it while the ABI value is live, and
        hand-written code may write part of it before reading the whole again."""
        value = op.operands[r.pos]
        owner = value.owner
        if not isinstance(owner, ABI_VALUE_OPS):
            return
        if owner not in replaced:
            alloca = AllocaOp(value.type)
            alloca.results[0].name_hint = f"{r.kind}{r.first}_in"
            entry.insert_op_before(alloca, first)
            replaced[owner] = alloca.results[0]
        op.operands[r.pos] = replaced[owner]

    def abi_value(self, shape: tuple, t: RegisterType, abi: dict, entry: Block,
                  first: Operation | None) -> SSAValue:
        """The relocatable ABI op for a web that reads a dispatch input."""
        fixed = abi.get(shape)
        if fixed is not None:
            self.superseded.add(fixed)
        if fixed is None:  # v0: the work-item id(s)
            dims = compute_layout(self.kernel).abi.workitem_id_dims
            new: Operation = WorkitemIdOp("xyz"[max(dims, 1) - 1], t)
            hint = "workitem_id"
        elif isinstance(fixed, WorkgroupIdOp | WorkitemIdOp):
            new = type(fixed)(fixed.dim.data, t)
            hint = fixed.results[0].name_hint or "id"
        else:
            new = type(fixed)(t)
            hint = USER_SGPR_OPS.get(type(fixed), "abi")
        new.results[0].name_hint = hint
        entry.insert_op_before(new, first)
        return new.results[0]

    def drop_written(self) -> None:
        """Remove the written s_waitcnt / s_nop when asked to."""
        for op in list(self.kernel.walk()):
            if not isinstance(op, SOPPOp):
                continue
            name = op.mnemonic_text
            if name == "s_waitcnt" and getattr(self.options, "drop_waits", False):
                op.parent_block().erase_op(op)
                self.report.dropped_waits += 1
            elif name == "s_nop" and getattr(self.options, "drop_nops", False):
                op.parent_block().erase_op(op)
                self.report.dropped_nops += 1


def _shape(web: _Web) -> tuple[str, int, int] | None:
    """The one (kind, first, width) every reference of a web has (None if they differ)."""
    shapes = {(r.kind, r.first, r.width) for r in web.refs}
    return shapes.pop() if len(shapes) == 1 else None


def _sgpr_align(t: RegisterType) -> int:
    if t.KIND != "s" or t.width <= 1:
        return 1
    return 2 if t.width == 2 else 4


__all__ = ["relocate_module", "parse_pinned", "RelocationReport"]
