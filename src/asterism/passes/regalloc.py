"""Register allocation (`regalloc`): give every relocatable register value a register.

What it does, per kernel:
1. Liveness on register classes (`passes.liveness`): a class is the register a
   destination-passing chain names; tied operands and DPS chains are one class by
   construction, so they get one register.
2. **Pins.** Fixed registers (`!amdgcn.vgpr<10>`, ABI inputs) stay where they are; the
   registers they occupy are unavailable to relocatable values exactly while they are live
   (register by register, so v10 is busy while a live v[8:12] holds it). Two different values
   pinned to the same registers and live at once are an error naming both. Named reserved
   regions (`reserved(S = !amdgcn.vgpr<[32:96]>)` on the kernel, `kb.reserve`, or the
   `reserve=` option) are never given to relocatable values; only values the author pinned
   there use them.
3. **Coalescing.** A plain copy (`v_mov_b32`, `s_mov_b32`, `s_mov_b64`, `v_mov_b64`,
   `v_accvgpr_mov_b32` without modifiers) into a new value, and an MFMA writing a new value
   with an accumulator srcC of the same shape, get the same register for both sides when
   that creates no conflict (innermost loops first). A coalesced copy stays in the program
   (it becomes `v_mov_b32 v3, v3`): the output is what was written, with registers filled
   in; the `dce` pass removes such copies when asked.
4. **Assignment.** Each register file is colored on its own: values in order of where their
   live range starts, each at the lowest register that is aligned (the alignment every
   operand slot of the value needs: 64-bit VALU pairs, MFMA operands, SGPR pairs/quads) and
   free over its whole live range. For a straight-line program of one-register values that
   is optimal (interval graphs); where ranges and alignment fragment the file, other orders
   (widest, most aligned, longest first; see `ORDERS`), then the allocation without
   coalescing are tried, stopping at the first that reaches the peak; for small kernels
   without pins or reserved registers in the file a bounded depth-first search for a
   placement within the peak follows; else the result using the fewest registers is kept.
   The goal on every kernel is registers used == the peak number live at once.
5. **Sub-registers.** The pieces of a split range are its registers, so they are placed
   with it (a piece live keeps only its register busy, see `passes.liveness`); the operands
   of `amdgcn.make_register_range` are placed in consecutive registers, the range aligned as
   its uses need, as one group (a *bundle*, pinned when a member is). An operand that cannot
   be there (it already sits at another place of a range, the alignments disagree, two
   values would share a register while both are live, or a pin puts it on a busy register)
   is copied to a fresh register right before the op (`v_mov_b32`, `s_mov_b32`,
   `v_accvgpr_mov_b32` per register) and the allocation starts over; if a copy of it does
   not help either, every operand of the op is copied; a range no copies can place (pinned
   on registers other pinned values hold) is an error naming the op and its operands. Each
   copy is reported (`RegisterCopyWarning`, `AllocationReport.view_copies`, `report=1`).
6. **Budgets.** v0..v255 (ArchVGPRs), a0..a255, s0..s101 on gfx942/gfx950, optionally
   lowered (`max-vgprs=`, `max-agprs=`, `max-sgprs=`) and the unified VGPR file
   (alignTo(VGPRs, 4) + AGPRs, `max-total-vgprs=`, 512 at most). A kernel that does not fit
   is an error naming the program point of peak pressure and the values live there; nothing
   is ever spilled.

The output has only fixed registers and lowers as written. Options (pipeline string):
`regalloc{report=1}` prints used vs peak per register file to stderr;
`reserve=v32-v95 s63-s67` adds reserved regions (space separated); `coalesce=0` turns
coalescing off.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation, SSAValue

from asterism.errors import ParseError, VerifyError
from asterism.ir.loop_lowering import drop_coalesced_copies
from asterism.ir.ops import (
    OP_FOR_ENCODING,
    AllocaOp,
    KernelOp,
    MakeRegisterRangeOp,
    SplitRegisterRangeOp,
    op_location,
)
from asterism.ir.types import REGISTER_TYPES, RegisterType
from asterism.ir.verify import amdgcn_modules, op_title
from asterism.isa import IsaDatabase, get_isa
from asterism.mc.operands import Reg
from asterism.passes.base import Pass, option
from asterism.passes.liveness import (
    FILE_NAMES,
    FILES,
    Bundle,
    KernelLiveness,
    RegClass,
    ViewConflict,
    class_name,
    describe_classes,
    value_names,
)
from asterism.passes.machine import kernel_target
from asterism.support.gcpause import gc_paused
from asterism.target import Target, get_target, total_vgprs
from asterism.target.hazards import soft_clause_kinds


class RegisterAllocationError(VerifyError):
    """A kernel whose registers cannot be allocated (too many live values, conflicting pins)."""


@dataclass
class FileReport:
    """Allocation result for one register file of one kernel."""

    file: str
    used: int  # distinct registers the kernel touches (pinned + allocated)
    span: int  # highest register used + 1
    peak: int  # most registers live at once
    peak_where: str
    allocated: int  # relocatable values placed
    limit: int  # registers that were available (budget)
    strategy: str = ""

    @property
    def optimal(self) -> bool:
        """True if no fewer registers could hold the values live at the peak."""
        return self.used <= self.peak


@dataclass
class AllocationReport:
    """What `allocate_kernel` did to one kernel."""

    kernel: str
    target: str
    files: dict[str, FileReport] = field(default_factory=dict)
    copies: int = 0
    copies_coalesced: int = 0
    mfma_hints: int = 0
    mfma_in_place: int = 0
    assignment: dict[SSAValue, RegisterType] = field(default_factory=dict)
    # make_register_range operands the allocator copied to fresh registers (one line each:
    # where, which operand, why); the copies are v_mov_b32 / s_mov_b32 / v_accvgpr_mov_b32.
    view_copies: list[str] = field(default_factory=list)
    # Copies the loop lowering added (ir.loop_lowering) that coalescing could not remove.
    loop_copies: list[str] = field(default_factory=list)
    # XNACK soft clauses: "kept apart" (their registers do not overlap), "no room" (they
    # would not fit: the hazards pass breaks them with s_nop) or "" (XNACK off).
    soft_clauses: str = ""

    @property
    def optimal(self) -> bool:
        """True if every file uses as many registers as its peak pressure."""
        return all(f.optimal for f in self.files.values())

    def text(self) -> str:
        """The `regalloc{report=1}` lines."""
        lines = [f"regalloc @{self.kernel} ({self.target}):"]
        for f in FILES:
            r = self.files[f]
            if not r.used and not r.peak:
                lines.append(f"  {FILE_NAMES[f]:<5} used    0")
                continue
            span = f"{f}0-{f}{r.span - 1}" if r.span else "-"
            mark = "" if r.optimal else "  (above peak)"
            lines.append(f"  {FILE_NAMES[f]:<5} used {r.used:4d}  peak {r.peak:4d}  span {span:<9}"
                         f" allocated {r.allocated} values{mark}; peak at {r.peak_where}")
        lines.append(f"  copies coalesced {self.copies_coalesced} of {self.copies}; MFMA "
                     f"accumulators in place {self.mfma_in_place} of {self.mfma_hints}")
        if self.loop_copies:
            lines.append(f"  loop copies kept: {len(self.loop_copies)}")
            lines += [f"    {line}" for line in self.loop_copies]
        if self.view_copies:
            lines.append(f"  make_register_range operands copied: {len(self.view_copies)}")
            lines += [f"    {line}" for line in self.view_copies]
        if self.soft_clauses:
            lines.append(f"  XNACK soft clauses: {self.soft_clauses}")
        return "\n".join(lines)


@dataclass
class Limits:
    """Register budgets (registers a kernel may use per file, and the unified VGPR file)."""

    v: int
    a: int
    s: int
    total_vgprs: int

    @classmethod
    def for_target(cls, target: Target, max_vgprs: int | None = None,
                   max_agprs: int | None = None, max_sgprs: int | None = None,
                   max_total_vgprs: int | None = None) -> Limits:
        """The target's budgets, lowered by the given maxima."""
        def cap(limit: int, value: int | None) -> int:
            return limit if value is None else max(0, min(limit, value))
        return cls(cap(target.vgpr.arch, max_vgprs), cap(target.vgpr.acc, max_agprs),
                   cap(target.sgpr.addressable, max_sgprs),
                   cap(target.vgpr.unified_per_lane, max_total_vgprs))

    def of(self, kind: str) -> int:
        """Budget of file `kind`."""
        return {"v": self.v, "a": self.a, "s": self.s}[kind]


class _Occupancy:
    """The registers of one file over the program points: where a pinned or placed value
    is live (a points x registers boolean array) and where one is written (a bit set per
    register)."""

    def __init__(self, n_points: int, size: int):
        self.live = np.zeros((n_points, size), dtype=bool) if size else None
        self.D = [0] * size

    def copy(self) -> _Occupancy:
        new = _Occupancy(0, 0)
        new.live = None if self.live is None else self.live.copy()
        new.D = self.D[:]
        return new

    def add(self, first: int, width: int, runs: list[tuple[int, int]], D: int) -> None:
        live = self.live
        for lo, hi in runs:
            live[lo:hi + 1, first:first + width] = True
        for u in range(first, first + width):
            self.D[u] |= D

    def busy(self, dpoints: list[int]) -> np.ndarray:
        """Registers some value is live in at one of `dpoints`."""
        return self.live[dpoints].any(axis=0)


@dataclass
class _Part:
    """One class of a bundle group, at register `offset` from the group's first."""

    cls: RegClass
    offset: int
    width: int
    L: int
    D: int
    runs: list[tuple[int, int]]
    dpoints: list[int]


@dataclass
class _Group:
    """Classes that share one register (coalesced), with their combined live range."""

    classes: list[RegClass]
    kind: str
    width: int
    align: int
    fixed: int | None
    L: int
    D: int
    runs: list[tuple[int, int]]
    dpoints: list[int]
    # A bundle (classes tied by views): its members with their offsets; the group's first
    # register r must have r % align == residue.
    parts: list[_Part] | None = None
    residue: int = 0

    @property
    def lo(self) -> int:
        return min((lo for lo, _hi in self.runs), default=0)


# Bounds of the exact search that runs when no order reaches the peak (small kernels only).
EXACT_MAX_VALUES = 400
EXACT_MAX_STEPS = 50_000


def _length(g: _Group) -> int:
    return g.L.bit_length() - g.lo


# The orders in which values are placed (each at its lowest free aligned register), tried in
# turn until one uses no more registers than the peak pressure. By start point is optimal for
# one-register values in straight-line code; ranges and alignment fragment the file, which
# placing the widest (or the most aligned, or the longest) first often avoids.
ORDERS: dict[str, object] = {
    "start": lambda kg: (kg[1].lo, -kg[1].width, -kg[1].align, kg[0]),
    "wide": lambda kg: (-kg[1].width, -kg[1].align, kg[1].lo, kg[0]),
    "aligned": lambda kg: (-kg[1].align, kg[1].lo, -kg[1].width, kg[0]),
    "long": lambda kg: (-_length(kg[1]), kg[1].lo, kg[0]),
}


def _parse_ranges(text: str) -> list[RegisterType]:
    """The register ranges of the `reserve` option (ParseError for one that does not parse)."""
    from asterism.builder.registers import parse_register_range

    out = []
    for part in text.replace(";", " ").split():
        try:
            out.append(parse_register_range(part))
        except VerifyError as err:
            raise ParseError(err.message) from None
    return out


class _KernelAllocator:
    def __init__(self, kernel: KernelOp, isa: IsaDatabase, limits: Limits,
                 reserve: list[RegisterType], coalesce: bool, soft_clauses: frozenset[str]):
        self.kernel = kernel
        self.isa = isa
        self.limits = limits
        self.coalesce = coalesce
        self.live = KernelLiveness(kernel, isa, soft_clauses=soft_clauses)
        self._names: dict[SSAValue, str] | None = None
        self._types: dict[tuple, RegisterType] = {}
        self.reserved: dict[str, set[int]] = {f: set() for f in FILES}
        self.reserved_text: dict[str, list[str]] = {f: [] for f in FILES}
        regions = list(kernel.reserved_regions.items()) + [(t.asm(), t) for t in reserve]
        for name, t in regions:
            self.reserved[t.KIND].update(range(t.first, t.first + t.width))
            self.reserved_text[t.KIND].append(f"{name} {t.asm()}" if name != t.asm()
                                              else t.asm())

    @property
    def names(self) -> dict[SSAValue, str]:
        if self._names is None:
            self._names = value_names(self.kernel)
        return self._names

    def name(self, c: RegClass) -> str:
        return class_name(c, self.names)

    # --- checks ---------------------------------------------------------------------------

    def check_calls(self) -> None:
        if self.live.calls:
            op = self.live.calls[0]
            raise RegisterAllocationError(
                f"func.call: calls to @{op.callee.root_reference.data} must be inlined before "
                "register allocation (--pipeline inline,regalloc)", op_location(op))

    def check_pins(self) -> None:
        """Two different values pinned to the same registers (or one overlapping an ABI
        input) must not be live at once. Classes that only read what the hardware put in a
        register (live from the kernel entry) agree with each other: the entry is left out."""
        L, D = self.live.ranges()
        not_entry = ~1
        groups: dict[tuple, list[RegClass]] = {}
        fixed = [c for c in self.live.classes if c.fixed is not None and L[c.id]]
        for c in fixed:
            groups.setdefault(_pin_shape(c), []).append(c)
        for members in groups.values():
            if len(members) < 2:
                continue
            acc_l = acc_d = 0
            for k, c in enumerate(members):
                clash = ((L[c.id] & acc_d) | (D[c.id] & acc_l)) & not_entry
                if clash:
                    for other in members[:k]:
                        both = ((L[c.id] & D[other.id]) | (D[c.id] & L[other.id])) & not_entry
                        if both:
                            self._pin_error(c, other, both)
                acc_l |= L[c.id]
                acc_d |= D[c.id]
        # A pinned register overlapping an ABI input (s0 while the kernarg pointer s[0:1]
        # is still to be read) clobbers it; other partial overlaps are register-level edits.
        for a in fixed:
            if not a.abi:
                continue
            for c in fixed:
                if c is a or c.kind != a.kind or _pin_shape(c) == _pin_shape(a):
                    continue
                if c.fixed < a.fixed + a.width and a.fixed < c.fixed + c.width:
                    both = ((L[c.id] & D[a.id]) | (D[c.id] & L[a.id])) & not_entry
                    if both:
                        self._pin_error(c, a, both)

    def _pin_error(self, a: RegClass, b: RegClass, points: int) -> None:
        _L, D = self.live.ranges()
        point = (points & -points).bit_length() - 1
        op, after = self.live.point_op(point)
        writer, holder = (a, b) if D[a.id] >> point & 1 else (b, a)
        where = "the kernel entry" if op is None else \
            f"{'after' if after else 'before'} {op_title(op)}"
        if (a.fixed, a.width) == (b.fixed, b.width):
            pins = f"{self.name(holder)} and {self.name(writer)} are both pinned to " \
                   f"{a.describe()}"
        else:
            pins = f"{self.name(holder)} ({holder.describe()}) and {self.name(writer)} " \
                   f"({writer.describe()}) are pinned to overlapping registers"
        raise RegisterAllocationError(
            f"{pins} and live at once ({where}): {self.name(writer)} is written while "
            f"{self.name(holder)} still holds a value that is read later; give one of them "
            "another register (or make it relocatable)",
            op_location(op) if op is not None else None)

    # --- allocation -----------------------------------------------------------------------

    def fixed_occupancy(self, pinned_bundles: bool = True) -> dict[str, _Occupancy]:
        """Where the pinned values are live, per file (with the relocatable members of
        bundles a pinned member or range fixes in place, unless `pinned_bundles` is False)."""
        live = self.live
        L, D = live.ranges()
        runs = live.runs()
        occ = {f: _Occupancy(live.n_points, self._file_size(f)) for f in FILES}
        for c in live.classes:
            if c.fixed is not None and L[c.id]:
                width = min(c.fixed + c.width, self._file_size(c.kind)) - c.fixed
                if width > 0:
                    occ[c.kind].add(c.fixed, width, runs[c.id], D[c.id])
        if pinned_bundles:
            for c, first in self.pinned_members():
                occ[c.kind].add(first, c.width, runs[c.id], D[c.id])
        return occ

    def pinned_members(self) -> list[tuple[RegClass, int]]:
        """Relocatable classes that a pinned bundle fixes in place, with their register."""
        L, _D = self.live.ranges()
        return [(c, b.fixed + c.offset) for b in self.live.bundles if b.fixed is not None
                for c in b.members if c.fixed is None and L[c.id]]

    # --- sub-registers --------------------------------------------------------------------

    def view_fixes(self) -> list[ViewConflict]:
        """The make_register_range operands to copy before allocating (none: the views can be
        honoured as written). RegisterAllocationError when a piece's place cannot work."""
        live = self.live
        if live.view_errors:
            op, message = live.view_errors[0]
            raise RegisterAllocationError(f"{op_title(op)}: {message}", op_location(op))
        if live.view_conflicts:
            return list(live.view_conflicts)
        if not live.bundles:
            return []
        L, D = live.ranges()
        not_entry = ~1
        out: list[ViewConflict] = []
        # Classes of one bundle that share registers must not be live at once.
        for b in live.bundles:
            ms = [c for c in b.members if L[c.id]]
            found = None
            for i, a in enumerate(ms):
                for c in ms[:i]:
                    if a.offset < c.offset + c.width and c.offset < a.offset + a.width and \
                            ((L[a.id] & D[c.id]) | (D[a.id] & L[c.id])) & not_entry:
                        found = self._link_culprit(a, c)
                        break
                if found is not None:
                    break
            if found is not None:
                out.append(found)
        if out:
            return out
        # Relocatable members of a pinned bundle go where the pin puts them: those registers
        # must be free there.
        runs, defs = live.runs(), live.def_points()
        occ = self.fixed_occupancy(pinned_bundles=False)
        for c, first in self.pinned_members():
            o, size = occ[c.kind], self._file_size(c.kind)
            if first + c.width > size:
                raise RegisterAllocationError(
                    f"{self.name(c)} would be {c.kind}{first} (its range is pinned), past the "
                    f"last {FILE_NAMES[c.kind]}", op_location(c.first_value.owner))
            busy = bool(defs[c.id]) and o.busy(defs[c.id])[first:first + c.width].any()
            if busy or any(L[c.id] & o.D[u] & not_entry for u in range(first,
                                                                        first + c.width)):
                out.append(self._pin_culprit(c, first))
                break
            o.add(first, c.width, runs[c.id], D[c.id])
        return out

    def _replay(self, stop, fixed_node: bool) -> ViewConflict | None:
        """Tie the classes again, link by link (see KernelLiveness.view_links), until `stop`
        holds; the link that made it hold (None: it held before any link)."""
        classes = self.live.classes
        n = len(classes)
        parent = list(range(n + 1))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for c in classes:
            if c.source is not None:
                parent[find(c.id)] = find(c.source.id)
            if fixed_node and c.fixed is not None:
                parent[find(c.id)] = find(n)
        if stop(find):
            return None
        for op, j, head, u in self.live.view_links:
            parent[find(head)] = find(n if u < 0 else u)
            if stop(find):
                return ViewConflict(op, j, "")
        return None

    def _link_culprit(self, a: RegClass, c: RegClass) -> ViewConflict:
        found = self._replay(lambda find: find(a.id) == find(c.id), False)
        where = f"{a.kind}[+{max(a.offset, c.offset)}]"
        if found is None:
            raise RegisterAllocationError(
                f"{self.name(a)} and {self.name(c)} share registers ({where} of one range) "
                "and are live at once", op_location(a.first_value.owner))
        return ViewConflict(found.op, found.operand,
                            f"{self.name(a)} and {self.name(c)} would share a register while "
                            "both hold values still to be read")

    def _pin_culprit(self, c: RegClass, first: int) -> ViewConflict:
        n = len(self.live.classes)
        found = self._replay(lambda find: find(c.id) == find(n), True)
        reg = Reg(c.kind, first, c.width)
        if found is None:
            raise RegisterAllocationError(
                f"{self.name(c)} must be in {reg}, which other pinned values use at the same "
                "time", op_location(c.first_value.owner))
        return ViewConflict(found.op, found.operand,
                            f"{self.name(c)} would have to be in {reg} (pinned by the range), "
                            "which other pinned values use at the same time")

    def _file_size(self, kind: str) -> int:
        target = get_target(self.isa.target)
        return {"v": target.vgpr.arch, "a": target.vgpr.acc, "s": target.sgpr.addressable}[kind]

    def groups(self, occ: dict[str, _Occupancy],
               coalesce: bool) -> tuple[list[_Group], dict[str, int], dict[str, int]]:
        """Groups of classes sharing a register; also the copies and MFMAs coalesced, per
        register file."""
        live = self.live
        L, D = live.ranges()
        runs, defs = live.runs(), live.def_points()
        classes = live.classes
        parent = list(range(len(classes)))
        gL, gD = L[:], D[:]
        align = [c.align for c in classes]
        fixed = [c.fixed for c in classes]
        copies: dict[str, int] = {}
        mfmas: dict[str, int] = {}

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def count(cp) -> None:
            tally = copies if cp.kind == "copy" else mfmas
            kind = classes[cp.dst].kind
            tally[kind] = tally.get(kind, 0) + 1

        members: dict[int, list[int]] = {c.id: [c.id] for c in classes}
        if coalesce:
            order = sorted(live.copies, key=lambda c: (-live.op_loop_depth(c.index), c.index))
            for cp in order:
                a, b = find(cp.dst), find(cp.src)
                if a == b:
                    count(cp)
                    continue
                # The copy writes the value its source holds, and an MFMA may accumulate in
                # place: at that one point the two may share the register.
                point = 2 * cp.index + (2 if cp.kind == "copy" else 1)
                keep = ~(1 << point)
                if ((gL[a] & gD[b]) | (gD[a] & gL[b])) & keep:
                    continue
                if fixed[a] is not None and fixed[b] is not None:
                    continue
                if fixed[a] is not None or fixed[b] is not None:
                    pin, moving = (a, b) if fixed[a] is not None else (b, a)
                    kind, first, width = classes[pin].kind, fixed[pin], classes[pin].width
                    dpoints = [p for m in members[moving] for p in defs[m] if p != point]
                    if not self._can_pin(occ[kind], kind, first, width, align[moving],
                                         gL[moving], dpoints, keep):
                        continue
                    occ[kind].add(first, width, [r for m in members[moving] for r in runs[m]],
                                  gD[moving])
                    root, other = pin, moving
                else:
                    root, other = b, a
                parent[other] = root
                gL[root] |= gL[other]
                gD[root] |= gD[other]
                align[root] = max(align[root], align[other])
                members[root] += members.pop(other)
                count(cp)
        groups = []
        for root, ids in members.items():
            c0 = classes[ids[0]]
            if c0.bundle is not None:
                continue  # (never coalesced: placed with its bundle below)
            groups.append(_Group([classes[i] for i in ids], c0.kind, c0.width, align[root],
                                 fixed[root], gL[root], gD[root],
                                 [r for i in ids for r in runs[i]],
                                 [p for i in ids for p in defs[i]]))
        for b in live.bundles:
            groups.append(_bundle_group(b, L, D, runs, defs))
        return groups, copies, mfmas

    def _can_pin(self, occ: _Occupancy, kind: str, first: int, width: int, align: int,
                 L: int, dpoints: list[int], keep: int) -> bool:
        if first % align or first + width > self.limits.of(kind):
            return False
        if any(u in self.reserved[kind] for u in range(first, first + width)):
            return False  # coalescing never moves a value into a reserved region
        if dpoints and occ.busy(dpoints)[first:first + width].any():
            return False
        return not any(L & occ.D[u] & keep for u in range(first, first + width))

    def color(self, groups: list[_Group], occ: _Occupancy, kind: str,
              order: str) -> tuple[dict[int, int], _Group | None]:
        """Place the relocatable groups of one file; returns (group index -> register, the
        group that did not fit or None)."""
        limit = self.limits.of(kind)
        size = len(occ.D)
        allowed = np.zeros(size, dtype=bool)
        allowed[:limit] = True
        for u in self.reserved[kind]:
            if u < size:
                allowed[u] = False
        todo = [(k, g) for k, g in enumerate(groups) if g.fixed is None and g.kind == kind
                and g.runs]
        todo.sort(key=ORDERS[order])
        placed: dict[int, int] = {}
        occ_d = occ.D
        for k, g in todo:
            if g.parts is not None:
                r = _place_bundle(g, occ, allowed, limit)
                if r is None:
                    return placed, g
                placed[k] = r
                continue
            w, al, gl = g.width, g.align, g.L
            free = allowed & ~occ.busy(g.dpoints)
            if w == 1:
                candidates = np.flatnonzero(free)
            else:
                sums = np.concatenate(([0], np.cumsum(free)))
                starts = np.arange(0, max(limit - w + 1, 0), al)
                candidates = starts[(sums[starts + w] - sums[starts]) == w]
            for r in candidates.tolist():
                if r % al:
                    continue
                if w == 1:
                    if gl & occ_d[r]:
                        continue
                elif any(gl & occ_d[u] for u in range(r, r + w)):
                    continue
                placed[k] = r
                occ.add(r, w, g.runs, g.D)
                break
            else:
                return placed, g
        return placed, None

    def exact(self, groups: list[_Group], occ: _Occupancy, kind: str,
              target: int) -> dict[int, int] | None:
        """A placement of the relocatable groups of one file in registers 0..target-1 found
        by a bounded depth-first search (most constrained first), for small kernels whose
        file has no pinned values and no reserved registers; None if there is none within
        the search budget."""
        if self.reserved[kind] or any(occ.D) or target > self.limits.of(kind):
            return None
        todo = [k for k, g in enumerate(groups) if g.fixed is None and g.kind == kind
                and g.runs]
        if not todo or len(todo) > EXACT_MAX_VALUES or \
                any(groups[k].parts is not None for k in todo):
            return None
        gs = [groups[k] for k in todo]
        n = len(gs)
        span = [(g.lo, g.L.bit_length() - 1) for g in gs]
        near: list[list[int]] = [[] for _ in range(n)]
        for i in range(n):
            lo_i, hi_i = span[i]
            li, di = gs[i].L, gs[i].D
            for j in range(i):
                lo_j, hi_j = span[j]
                if lo_i > hi_j or lo_j > hi_i:
                    continue
                if (li & gs[j].D) | (di & gs[j].L):
                    near[i].append(j)
                    near[j].append(i)
        order = sorted(range(n), key=lambda i: (-sum(gs[j].width for j in near[i]) -
                                                gs[i].width, -gs[i].align, i))
        at: list[int | None] = [None] * n
        steps = 0

        def search(depth: int) -> bool:
            nonlocal steps
            if depth == n:
                return True
            i = order[depth]
            w, al = gs[i].width, gs[i].align
            for r in range(0, target - w + 1, al):
                steps += 1
                if steps > EXACT_MAX_STEPS:
                    return False
                if any(at[j] is not None and at[j] < r + w and r < at[j] + gs[j].width
                       for j in near[i]):
                    continue
                at[i] = r
                if search(depth + 1):
                    return True
                at[i] = None
            return False

        if not search(0) or steps > EXACT_MAX_STEPS:
            return None
        return {todo[i]: at[i] for i in range(n)}  # type: ignore[misc]

    def run(self) -> AllocationReport:
        self.check_calls()
        self.check_pins()
        live = self.live
        pressure = live.pressure()
        report = AllocationReport(self.kernel.kernel_name, self.isa.target)
        report.copies = sum(1 for c in live.copies if c.kind == "copy")
        report.mfma_hints = sum(1 for c in live.copies if c.kind == "mfma")
        base = self.fixed_occupancy()
        L, _D = live.ranges()
        fixed_used = {f: set() for f in FILES}
        for c in live.classes:
            if c.fixed is not None and L[c.id]:
                fixed_used[c.kind].update(c.units)
        for c, first in self.pinned_members():
            fixed_used[c.kind].update(range(first, first + c.width))
        attempts = [True, False] if self.coalesce else [False]
        best: dict[str, tuple] = {}
        failures: dict[str, _Group] = {}
        for coalesce in attempts:
            if all(f in best and best[f][0] <= pressure[f].peak for f in FILES):
                break  # every file is at its peak: nothing to improve
            occ = {f: o.copy() for f, o in base.items()}
            groups, copies, mfmas = self.groups(occ, coalesce)
            for f in FILES:
                if f in best and best[f][0] <= pressure[f].peak:
                    continue
                if not any(g.fixed is None and g.kind == f and g.runs for g in groups):
                    orders: tuple[str, ...] = ("start",)  # nothing to place: no copies
                else:
                    orders = tuple(ORDERS)
                for order in (*orders, "exact"):
                    if order == "exact":
                        if f in best and best[f][0] <= pressure[f].peak or len(orders) == 1:
                            break
                        placed = self.exact(groups, occ[f], f, pressure[f].peak)
                        if placed is None:
                            break
                        failed = None
                    else:
                        work = occ[f].copy() if len(orders) > 1 else occ[f]
                        placed, failed = self.color(groups, work, f, order)
                    if failed is not None:
                        failures.setdefault(f, failed)
                        continue
                    units = set(fixed_used[f])
                    for k, r in placed.items():
                        units.update(_group_units(groups[k], r))
                    for g in groups:
                        if g.fixed is not None and g.kind == f and len(g.classes) > 1 and \
                                g.parts is None:
                            units.update(range(g.fixed, g.fixed + g.width))
                    used, span = len(units), (max(units) + 1 if units else 0)
                    key = (used, span)
                    if f not in best or key < best[f][0:2]:
                        best[f] = (used, span, groups, placed, copies, mfmas,
                                   f"{order}{'' if coalesce else ', no coalescing'}")
                    if used <= pressure[f].peak:
                        break
        for f in FILES:
            if f not in best:
                competing = live.pressure(exclude=self.reserved)[f]
                self._fit_error(f, competing, failures[f])
        self._check_unified(best, pressure)
        # Rewrite the types: every value of a placed class gets its register.
        reg_of: dict[int, int] = {}
        for f in FILES:
            used, span, groups, placed, _copies, _mfmas, strategy = best[f]
            allocated = 0
            for k, g in enumerate(groups):
                if g.kind != f:
                    continue
                first = placed.get(k, g.fixed)
                if first is None:
                    first = g.residue  # a value nothing reads or writes: any register will do
                for c in g.classes:
                    reg = first + c.offset if g.parts is not None else first
                    reg_of[c.id] = reg
                    if c.fixed is None or c.abi:
                        allocated += c.fixed is None and bool(c.values)
                        self._retype(c, reg, report)
            report.files[f] = FileReport(
                f, used, span, pressure[f].peak, pressure[f].where(), allocated,
                self.limits.of(f) - len(self.reserved[f]), strategy)
        # Values of sub-registers (pieces and made ranges): the register of their first.
        for v, parts in live.value_parts.items():
            reg = reg_of.get(parts[0])
            if reg is not None and not v.type.is_fixed:  # type: ignore[attr-defined]
                self._retype_value(v, reg, report)
        report.copies_coalesced = sum(best[f][4].get(f, 0) for f in FILES)
        report.mfma_in_place = sum(best[f][5].get(f, 0) for f in FILES)
        return report

    def _retype(self, c: RegClass, first: int, report: AllocationReport) -> None:
        for v in c.values:
            self._retype_value(v, first, report)

    def _retype_value(self, v: SSAValue, first: int, report: AllocationReport) -> None:
        t: RegisterType = v.type  # type: ignore[assignment]
        # Attribute hashing and construction are slow: one new type per shape.
        key = (type(t), t.count.data, t.align.data, first)
        new = self._types.get(key)
        if new is None:
            new = self._types[key] = t.with_index(first)
        if new is not t:
            v._type = new  # xDSL values have no public type setter
        report.assignment[v] = new

    def _check_unified(self, best: dict[str, tuple], pressure) -> None:
        target = get_target(self.isa.target)
        v_span, a_span = best["v"][1], best["a"][1]
        total = total_vgprs(target, v_span, a_span)
        if total > self.limits.total_vgprs:
            raise RegisterAllocationError(
                f"kernel @{self.kernel.kernel_name} does not fit the unified VGPR file: "
                f"{v_span} VGPRs (aligned to {target.vgpr.accum_offset_granule}) + {a_span} "
                f"AGPRs = {total} > {self.limits.total_vgprs}; VGPR peak at "
                f"{pressure['v'].where()}, AGPR peak at {pressure['a'].where()} (no spilling "
                "is done)", pressure["v"].location or pressure["a"].location)

    def _fit_error(self, f: str, p, failed: _Group) -> None:
        limit = self.limits.of(f)
        reserved = self.reserved[f]
        free = limit - len([u for u in reserved if u < limit])
        budget = f"{free} {FILE_NAMES[f]}s are available ({f}0-{f}{limit - 1}"
        if self.reserved_text[f]:
            budget += " minus reserved " + ", ".join(self.reserved_text[f])
        budget += ")"
        live_text = describe_classes(p.live, self.names)
        name = self.kernel.kernel_name
        if p.peak > free:
            message = (f"kernel @{name} does not fit in the {FILE_NAMES[f]}s: {p.peak} are live "
                       f"at once at {p.where()}, {budget}; live there: {live_text} (no "
                       "spilling is done: shorten live ranges or use fewer values)")
            raise RegisterAllocationError(message, p.location)
        c = failed.classes[0]
        loc = op_location(c.first_value.owner) if isinstance(c.first_value.owner,
                                                             Operation) else None
        message = (f"kernel @{name}: no room for {self.name(c)} ({c.describe()}"
                   f"{f', align {failed.align}' if failed.align > 1 and c.align <= 1 else ''})"
                   f" in the {FILE_NAMES[f]}s: pinned registers, reserved regions and "
                   f"alignment leave no aligned gap of {failed.width} ({budget}); the peak is "
                   f"{p.peak} live at {p.where()}: {live_text}")
        raise RegisterAllocationError(message, loc or p.location)


def _pin_shape(c: RegClass) -> tuple:
    """What makes two pinned classes "the same registers" for check_pins: file, first
    register, width, and for a unit of a split range that range's registers."""
    return (c.kind, c.fixed, c.width,
            None if c.unit is None or c.fixed is None else (c.fixed - c.unit, c.whole))


def _bundle_group(b: Bundle, L: list[int], D: list[int], runs, defs) -> _Group:
    parts = [_Part(c, c.offset, c.width, L[c.id], D[c.id], runs[c.id], defs[c.id])
             for c in b.members]
    gl = gd = 0
    for p in parts:
        gl |= p.L
        gd |= p.D
    return _Group(list(b.members), b.kind, b.width, b.align, b.fixed, gl, gd,
                  [r for p in parts for r in p.runs], [d for p in parts for d in p.dpoints],
                  parts, b.residue)


def _group_units(g: _Group, first: int) -> list[int]:
    """The registers a group placed at `first` occupies."""
    if g.parts is None:
        return list(range(first, first + g.width))
    return [first + p.offset + i for p in g.parts if p.runs for i in range(p.width)]


def _place_bundle(g: _Group, occ: _Occupancy, allowed: np.ndarray, limit: int) -> int | None:
    """The lowest first register (of the right alignment) where every member of a bundle
    is free over its own live range; marks them busy there. None if there is none."""
    n = limit - g.width + 1
    if n <= 0:
        return None
    ok = np.zeros(n, dtype=bool)
    ok[g.residue % g.align::g.align] = True
    parts = [p for p in g.parts or () if p.runs]
    starts = np.arange(n)
    for p in parts:
        free = allowed & ~occ.busy(p.dpoints) if p.dpoints else allowed
        sums = np.concatenate(([0], np.cumsum(free)))
        at = starts + p.offset
        ok &= (sums[at + p.width] - sums[at]) == p.width
    occ_d = occ.D
    for r in np.flatnonzero(ok).tolist():
        if any(p.L & occ_d[u] for p in parts
               for u in range(r + p.offset, r + p.offset + p.width)):
            continue
        for p in parts:
            occ.add(r + p.offset, p.width, p.runs, p.D)
        return r
    return None


class RegisterCopyWarning(UserWarning):
    """The register allocator inserted copies to honour a make_register_range."""


_MOVES = {"v": "v_mov_b32", "s": "s_mov_b32", "a": "v_accvgpr_mov_b32"}


class _ViewCopier:
    """Copies make_register_range operands that cannot stay where they are into fresh
    registers (`v_mov_b32`, `s_mov_b32`, `v_accvgpr_mov_b32` per register, right before
    the op), and remembers what it did."""

    def __init__(self, kernel: KernelOp, isa: IsaDatabase):
        self.kernel = kernel
        self.isa = isa
        self.copies: dict[SSAValue, SSAValue] = {}  # copy -> the value it copies
        self.notes: list[str] = []

    def apply(self, conflicts: list[ViewConflict]) -> None:
        names = value_names(self.kernel)
        by_op: dict[Operation, list[ViewConflict]] = {}
        for cf in conflicts:
            by_op.setdefault(cf.op, []).append(cf)
        for op, found in by_op.items():
            assert isinstance(op, MakeRegisterRangeOp)
            parts = list(op.parts)
            reason = "; ".join(dict.fromkeys(cf.reason for cf in found if cf.reason))
            targets = {cf.operand for cf in found
                       if cf.operand >= 0 and parts[cf.operand] not in self.copies}
            if len(targets) < len(found):  # the range itself, or an operand copied already
                targets = {k for k, p in enumerate(parts) if p not in self.copies}
                if not targets:
                    listed = ", ".join(names.get(self._origin(p), "%?") for p in parts)
                    raise RegisterAllocationError(
                        f"{op_title(op)}: the operands ({listed}) cannot be placed as one "
                        f"range, not even as copies in fresh registers: "
                        f"{reason or 'its place is taken'}",
                        op_location(op))
            for k in sorted(targets, reverse=True):
                where = op_location(op)
                note = (f"{where}: " if where else "") + (
                    f"operand #{k} ({names.get(parts[k], '%?')}) of {op_title(op)} copied"
                    + (f": {reason}" if reason else ""))
                self.notes.append(note)
                warnings.warn(note, RegisterCopyWarning, stacklevel=2)
                self._copy(op, k)

    def _origin(self, value: SSAValue) -> SSAValue:
        """The value a copy copies (through pieces of a split), else `value`."""
        while value in self.copies:
            value = self.copies[value]
            if isinstance(value.owner, SplitRegisterRangeOp):
                value = value.owner.source
        return value

    def _copy(self, op: MakeRegisterRangeOp, k: int) -> None:
        value = op.parts[k]
        t: RegisterType = value.type  # type: ignore[assignment]
        block = op.parent_block()
        assert block is not None
        pieces = [value]
        if t.width > 1:
            split = SplitRegisterRangeOp(value)
            split.location = op.location
            block.insert_op_before(split, op)
            pieces = list(split.pieces)
        mnemonic = _MOVES[t.KIND]
        family = OP_FOR_ENCODING[self.isa.instructions[mnemonic].forms[0].enc]
        new: list[SSAValue] = []
        hint = f"{value.name_hint or t.KIND}_copy"
        for piece in pieces:
            alloca = AllocaOp(REGISTER_TYPES[t.KIND].relocatable())
            dest = alloca.results[0]
            mov = family(mnemonic, [dest, piece], [dest.type])
            for o in (alloca, mov):
                o.location = op.location
                block.insert_op_before(o, op)
            mov.results[0].name_hint = hint
            new.append(mov.results[0])
            self.copies[mov.results[0]] = piece
        parts = list(op.parts)
        parts[k:k + 1] = new
        op.operands = parts


def allocate_kernel(kernel: KernelOp, isa: IsaDatabase | None = None, *,
                    limits: Limits | None = None, reserve: list[RegisterType] | None = None,
                    coalesce: bool = True) -> AllocationReport:
    """Allocate the relocatable registers of one kernel in place; returns the report.

    A make_register_range operand that cannot be where its range needs it (it is also in
    another range at another place, or its register is taken while the range is live) is
    copied to a fresh register first (RegisterCopyWarning; listed in the report)."""
    if isa is None:
        module = kernel.parent_op()
        isa = get_isa(getattr(module, "target_name", "gfx942"))
    if limits is None:
        limits = Limits.for_target(get_target(isa.target))
    xnack = clauses = _clause_kinds(kernel)
    with gc_paused():
        copier = _ViewCopier(kernel, isa)
        rounds = None
        while rounds is None or rounds > 0:
            alloc = _KernelAllocator(kernel, isa, limits, list(reserve or ()), coalesce,
                                     clauses)
            fixes = alloc.view_fixes()
            if not fixes:
                try:
                    report = alloc.run()
                except RegisterAllocationError:
                    if not clauses:
                        raise
                    # Keeping soft clauses apart costs registers the kernel does not have:
                    # allocate without (the hazards pass then breaks them with s_nop).
                    clauses = frozenset()
                    continue
                report.view_copies = copier.notes
                report.loop_copies = drop_coalesced_copies(kernel)
                for note in report.loop_copies:
                    warnings.warn(f"kernel @{kernel.kernel_name}: copy kept: {note}",
                                  RegisterCopyWarning, stacklevel=2)
                if xnack:
                    report.soft_clauses = "kept apart" if clauses else "no room (s_nop breaks)"
                return report
            if rounds is None:  # each round copies operands that were not copies before
                rounds = 1 + sum(len(op.operands) for op in kernel.walk()
                                 if isinstance(op, MakeRegisterRangeOp))
            rounds -= 1
            copier.apply(fixes)
    raise RegisterAllocationError(f"kernel @{kernel.kernel_name}: the register ranges made by "
                                  "make_register_range could not be satisfied",
                                  op_location(kernel))


def _clause_kinds(kernel: KernelOp) -> frozenset[str]:
    """The soft-clause kinds of the kernel's target (none unless XNACK is on)."""
    try:
        return soft_clause_kinds(kernel_target(kernel))
    except ValueError:  # a kernel outside an amdgcn.module: no target features to read
        return frozenset()


@dataclass(frozen=True)
class RegallocPass(Pass):
    """`regalloc{report=1,reserve=v32-v95,max-vgprs=128,coalesce=0}`."""

    name = "regalloc"
    summary = "assign registers to relocatable values around pinned registers and reserved " \
              "regions"

    report: bool = option(False, "print used vs peak per register file to stderr")
    reserve: str = option("", "reserved regions, space separated (v32-v95 s63-s67)",
                          check=_parse_ranges)
    coalesce: bool = option(True, "give copies and MFMA accumulators one register where "
                                  "that creates no conflict")
    max_vgprs: int | None = option(None, "ArchVGPR budget (default: the target's)")
    max_agprs: int | None = option(None, "AGPR budget (default: the target's)")
    max_sgprs: int | None = option(None, "SGPR budget (default: the target's)")
    max_total_vgprs: int | None = option(None, "unified VGPR file budget, alignTo(VGPRs, 4) + "
                                               "AGPRs (default: the target's)")

    def apply(self, module: Operation) -> None:
        """Allocate in place; print the report when report=1."""
        for r in allocate(module, self):
            if self.report:
                sys.stderr.write(r.text() + "\n")


def allocate(module: Operation, options: RegallocPass) -> list[AllocationReport]:
    """Allocate every kernel of a module with the pass's options."""
    reserve = _parse_ranges(options.reserve)
    reports = []
    for amod in amdgcn_modules(module):
        isa = get_isa(amod.target_name)
        target = get_target(amod.target_name)
        limits = Limits.for_target(target, options.max_vgprs, options.max_agprs,
                                   options.max_sgprs, options.max_total_vgprs)
        for op in amod.body.ops:
            if isinstance(op, KernelOp):
                reports.append(allocate_kernel(op, isa, limits=limits, reserve=reserve,
                                               coalesce=options.coalesce))
    return reports


def allocate_module(module: Operation, **options: str) -> list[AllocationReport]:
    """Allocate every kernel of a module (options as text, as in the pipeline string)."""
    return allocate(module, RegallocPass.from_options(options))


__all__ = [
    "AllocationReport",
    "FileReport",
    "Limits",
    "RegallocPass",
    "RegisterAllocationError",
    "allocate",
    "allocate_kernel",
    "allocate_module",
]

