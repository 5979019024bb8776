"""The sanitizer's model of asynchronous memory results (s_waitcnt).

The emulator performs every memory access when the instruction issues, so a program that
forgets an `s_waitcnt` would still compute the right answer here while it reads stale
registers on hardware. The `Tracker` of each group therefore keeps the memory instructions in
flight, per counter:

* vmcnt: VMEM and FLAT loads, stores and atomics, returned in issue order (GFX9);
* lgkmcnt: LDS instructions in issue order, SMEM (and the LDS side of FLAT) out of order;
* expcnt is not used by compute VMEM on GFX9 (only exports and GDS).

`s_waitcnt vmcnt(N)` retires every operation the hardware guarantees to be complete: an
in-order operation with at least N later operations of its counter, an out-of-order one only
when N is 0. Reading a register a pending operation will write, or writing it (unless the
write comes from a later operation of the same in-order counter), raises a `SanitizerError`
naming the smallest wait that fixes it. With `strict_store_data`, the data registers of a
store stay locked until its counter retires it (a stricter discipline than GFX9 needs; see
target/hazards.py for the real wait-state rule on store data).

Modes (`Emulator(sanitizer=...)`, `asterism run|kernels run --sanitizer`): "error" raises the
first violation as a `SanitizerError`; "warn" reports each distinct violation once (kind, pc,
instruction, rule, the rule's source) in a `SanitizerReport` and runs on, computing what
`KINDS[kind].effect` says; "off" checks nothing. `KINDS` lists every kind of violation the
sanitizer and the hazard checker (hazard_check.py) report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from asterism.emu.core import KEY_SGPR, Group, keys_text
from asterism.emu.errors import EmulatorError, SanitizerError
from asterism.emu.info import OpInfo, operand_keys
from asterism.isa.syntax import decode_waitcnt

VM, LGKM, EXP = "vmcnt", "lgkmcnt", "expcnt"

MODES = ("error", "warn", "off")
_WAITCNT_SOURCE = ("GFX9 s_waitcnt counters (CDNA3/CDNA4 ISA, s_waitcnt): vmcnt returns in "
                   "issue order, lgkmcnt in order for LDS and out of order for SMEM, as LLVM "
                   "22 SIInsertWaitcnts.cpp models them")


@dataclass(frozen=True)
class Kind:
    """A kind of violation: what it is, where its rule comes from, and what the emulator
    computes when a program does not honour it (warn mode runs on with exactly that)."""

    name: str
    what: str
    source: str
    effect: str


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("waitcnt_read",
         "a register is read before the memory instruction that writes it is guaranteed to "
         "have returned (a missing or too weak s_waitcnt)", _WAITCNT_SOURCE,
         "none: the emulator performs every load when it issues, so the read sees the loaded "
         "value, as if the s_waitcnt were there (hardware may read the old register value)"),
    Kind("waitcnt_overwrite",
         "a register is overwritten while a pending load may still write it", _WAITCNT_SOURCE,
         "the load wrote its register when it issued, so the later instruction's value is "
         "what stays (hardware may let the load land afterwards and replace it)"),
    Kind("store_data",
         "a store's data registers are overwritten before its counter retires it "
         "(strict_store_data only)",
         "asterism's strict store-data discipline (stricter than GFX9, which reads store data "
         "at issue; the real wait-state rule is hazard rule store_data_valu_write)",
         "none: the store read its data when it issued, so the stored value is the old one"),
    Kind("lds_dma",
         "LDS bytes an LDS DMA (buffer/global load ... lds) writes are read before the load "
         "is guaranteed to have landed",
         "LLVM 22 SIInsertWaitcnts.cpp: an LDS DMA completes on vmcnt only (lgkmcnt does not "
         "wait for it)",
         "none: the DMA wrote LDS when it issued, so the read sees the loaded bytes"),
    Kind("lds_visibility",
         "a wave reads LDS bytes another wave of its workgroup stored before the writer's "
         "s_waitcnt guaranteed the store complete (workgroup-scope release)",
         "LLVM AMDGPUUsage memory model (GFX942): a workgroup release needs s_waitcnt "
         "lgkmcnt(0) before s_barrier",
         "none: the store wrote LDS when it issued and the check only sees reads the emulator "
         "runs after it, so the read sees the stored bytes"),
    Kind("wait_states",
         "an instruction comes fewer wait states after the one whose result it uses than a "
         "hazard rule requires (a missing s_nop)",
         "the rule's entry in asterism.target.hazards (LLVM 22 GCNHazardRecognizer.cpp, the "
         "CDNA3/CDNA4 ISA 'Manually Inserted Wait States' table); each report names the rule "
         "and the LLVM check, e.g. checkReadM0Hazards",
         "none: the emulator completes each instruction before the next one issues, so the "
         "consumer reads the producer's new value (M0, EXEC, VCC, SGPR or VGPR) as if the "
         "wait states were there (hardware may use the old value)"),
    Kind("soft_clause",
         "with XNACK enabled, an instruction joins an SMEM/VMEM soft clause that a page fault "
         "would replay wrongly",
         "LLVM 22 GCNHazardRecognizer.cpp checkSoftClauseHazards",
         "none: the emulator has no XNACK replay (a bad address is an EmulatorFault), so each "
         "instruction runs once"),
    Kind("registers",
         "the code uses a VGPR or AGPR beyond what the kernel descriptor allocates",
         "AMDGPUUsage kernel descriptor: GRANULATED_WORKITEM_VGPR_COUNT (COMPUTE_PGM_RSRC1) "
         "and ACCUM_OFFSET (COMPUTE_PGM_RSRC3)",
         "the emulator gives each wave every register the code names, so the accesses work "
         "as if allocated (hardware: outside the wave's allocation)"),
)}


def sanitizer_mode(value: bool | str | None) -> str:
    """A sanitizer setting as one of MODES: True -> "error", False/None -> "off"."""
    if value is True:
        return "error"
    if value is False or value is None:
        return "off"
    if value not in MODES:
        raise EmulatorError(f"sanitizer mode {value!r}: expected one of {', '.join(MODES)}")
    return value


@dataclass
class Violation:
    """One distinct violation of a warn-mode run: the first occurrence, and how often the
    same (kind, pc, rule) came up again (counted per group of waves executing it)."""

    kind: str
    pc: int | None
    inst: str
    rule: str
    source: str
    message: str
    needed: str = ""
    workgroup: tuple[int, int, int] | None = None
    wave: int | None = None
    count: int = 1

    def text(self) -> str:
        """One line: kind, pc, instruction, the message, then the rule and its source."""
        pc = f"pc 0x{self.pc:x}" if self.pc is not None else "pc ?"
        return (f"sanitizer warning [{self.kind}] {pc} `{self.inst}`: {self.message} [rule "
                f"{self.rule}; source: {self.source}]")

    def to_json(self) -> dict:
        """The violation as a JSON-ready dict."""
        return {"kind": self.kind, "pc": self.pc, "inst": self.inst, "rule": self.rule,
                "source": self.source, "message": self.message, "needed": self.needed,
                "workgroup": list(self.workgroup) if self.workgroup else None,
                "wave": self.wave, "count": self.count}


class SanitizerReport:
    """The violations of a warn-mode run: each distinct (kind, pc, rule) once, in the order
    found; `echo` (if given) receives each new one as it is found."""

    def __init__(self, echo: Callable[[Violation], None] | None = None):
        self.echo = echo
        self._seen: dict[tuple, Violation] = {}

    @property
    def violations(self) -> list[Violation]:
        """The distinct violations, in the order they were first found."""
        return list(self._seen.values())

    def add(self, err: SanitizerError) -> None:
        """Record a violation (a SanitizerError not raised); a repeat only counts."""
        key = (err.kind, err.pc, err.rule)
        seen = self._seen.get(key)
        if seen is not None:
            seen.count += 1
            return
        v = Violation(err.kind, err.pc, err.inst, err.rule, err.source, err.reason,
                      err.needed, err.workgroup, err.wave)
        self._seen[key] = v
        if self.echo is not None:
            self.echo(v)

    def counts(self) -> dict[str, tuple[int, int]]:
        """Per kind: (distinct violations, occurrences)."""
        out: dict[str, tuple[int, int]] = {}
        for v in self._seen.values():
            distinct, total = out.get(v.kind, (0, 0))
            out[v.kind] = (distinct + 1, total + v.count)
        return out

    def summary(self) -> str:
        """The end-of-run summary: counts per kind (or that there were none)."""
        counts = self.counts()
        if not counts:
            return "sanitizer (warn): no violations\n"
        parts = [f"{kind} {d} ({n} occurrence{'s' if n != 1 else ''})"
                 for kind, (d, n) in counts.items()]
        total = sum(d for d, _ in counts.values())
        return f"sanitizer (warn): {total} distinct violation(s): {', '.join(parts)}\n"

    def to_json(self) -> dict:
        """Counts per kind and every distinct violation, JSON-ready."""
        return {"mode": "warn",
                "counts": {k: {"distinct": d, "occurrences": n}
                           for k, (d, n) in self.counts().items()},
                "violations": [v.to_json() for v in self._seen.values()]}


@dataclass
class Pending:
    """One memory instruction in flight."""

    index: int
    info: OpInfo
    streams: tuple[tuple[str, bool], ...]  # (counter, in_order)
    dsts: frozenset[int]
    srcs: frozenset[int] = frozenset()
    lds_range: tuple[int, int] | None = None
    lds_serial: int = 0  # a DS store's number in LdsWatch (0: not a DS store)
    # Trackers that hold it (groups split into copies); 0: retired by every wave that issued
    # it. `merged_into`: the equivalent record of the group this one's waves merged into.
    holders: int = 1
    merged_into: Pending | None = None

    def in_flight(self) -> bool:
        """True while some group of the waves that issued it has not retired it."""
        p = self
        while p.merged_into is not None:
            p = p.merged_into
        return p.holders > 0


@dataclass
class MemClass:
    """How an instruction participates in the counters (computed once per instruction)."""

    streams: tuple[tuple[str, bool], ...]
    async_defs: frozenset[int]
    data_uses: frozenset[int]
    lds_dma: bool = False


def classify(info: OpInfo) -> MemClass | None:
    """The counter streams of a memory instruction, or None for other instructions."""
    isa = info.isa
    if isa is None:
        return None
    counters = set(info.counters)
    if not counters & {VM, LGKM}:
        return None
    unit = isa.unit
    streams: list[tuple[str, bool]] = []
    lds_dma = "lds_dma" in isa.flags or bool(info.mods.get("lds"))
    if unit == "smem":
        streams.append((LGKM, False))
    elif unit == "lds":
        streams.append((LGKM, True))
    else:  # vmem: FLAT/GLOBAL/SCRATCH/MUBUF/MTBUF
        if VM in counters:
            streams.append((VM, True))
        # An LDS DMA load completes on vmcnt only (LLVM's SIInsertWaitcnts: "need a wait on
        # vmcnt before LDS written can be accessed"); the LGKM_CNT flag its definition
        # carries is not a counter it decrements, so lgkmcnt(N) neither waits for it nor
        # retires it.
        if LGKM in counters and not lds_dma:
            streams.append((LGKM, False))
    data_uses = frozenset()
    if "may_store" in isa.flags and not lds_dma:
        data_uses = frozenset(k for k in info.uses if _is_data_key(info, k))
    return MemClass(tuple(streams), info.defs - _sync_defs(info), data_uses, lds_dma)


def _is_data_key(info: OpInfo, key: int) -> bool:
    # The data registers of a store: uses that are VGPR/AGPR keys of data operands.
    form = info.form
    if form is None:
        return False
    for spec, op in zip(form.operands, info.inst.operands, strict=False):
        if spec.name in ("data", "data0", "data1", "vdata", "sdata") and key in operand_keys(op):
            return True
    return False


def _sync_defs(info: OpInfo) -> frozenset[int]:
    # Defs written at issue, not on return: none for memory instructions except M0/EXEC/SCC
    # implicit state, which memory instructions never write.
    return frozenset(k for k in info.defs if k >= KEY_SGPR + 126 and k <= KEY_SGPR + 127)


@dataclass
class Tracker:
    """The in-flight memory operations of one group of waves."""

    ops: list[Pending] = field(default_factory=list)
    dst: dict[int, Pending] = field(default_factory=dict)
    locked: dict[int, Pending] = field(default_factory=dict)
    # DS store serials (LdsWatch) raised by merges: id(record) -> the newest serial of the
    # equivalent records of the groups merged into this one (their waves' stores of that
    # instruction, issued after this group's): retiring the record completes those too.
    serials: dict[int, int] = field(default_factory=dict)

    def copy(self) -> Tracker:
        """An independent copy (for a group split); the records are shared, each held once
        more (drop() the tracker the copies replace)."""
        for p in self.ops:
            p.holders += 1
        return Tracker(list(self.ops), dict(self.dst), dict(self.locked), dict(self.serials))

    def lds_serial(self, p: Pending) -> int:
        """The DS store serial this group's waves reach when `p` retires (0: no store)."""
        return self.serials.get(id(p), p.lds_serial)

    def drop(self) -> None:
        """This tracker's group is gone (split into copies, or merged into another): it no
        longer holds its records (kept for the messages that cite them)."""
        for p in self.ops:
            p.holders -= 1

    def merge_into(self, into: Tracker) -> None:
        """This tracker's group merged into `into`'s (same pending instructions): its
        records follow theirs."""
        for mine, theirs in zip(self.ops, into.ops, strict=True):
            if mine is not theirs:
                mine.merged_into = theirs
                # this group's waves issued their store as `mine`: when `into` retires
                # `theirs`, their stores up to `mine` are complete too
                serial = self.lds_serial(mine)
                if serial > into.lds_serial(theirs):
                    into.serials[id(theirs)] = serial
        self.drop()

    def signature(self) -> tuple[int, ...]:
        """Instruction indices of the pending operations (groups merge only if equal)."""
        return tuple(p.index for p in self.ops)

    # ------------------------------------------------------------------ queries

    def _wait_for(self, p: Pending) -> tuple[str, int] | None:
        """(counter, N): the cheapest `counter(N)` wait that guarantees `p` completed."""
        best = None
        for ctr, ordered in p.streams:
            if ordered:
                n = sum(1 for q in self.ops[self.ops.index(p) + 1:] if (ctr, True) in q.streams)
            else:
                n = 0
            if best is None or n > best[1]:
                best = (ctr, n)
        return best

    def needed_wait(self, *ps: Pending) -> str:
        """The smallest s_waitcnt that guarantees every one of `ps` has completed."""
        need: dict[str, int] = {}
        for p in ps:
            w = self._wait_for(p)
            if w is not None:
                need[w[0]] = min(need.get(w[0], w[1]), w[1])
        if not need:
            return "s_waitcnt 0"
        order = (VM, EXP, LGKM)
        return "s_waitcnt " + " ".join(f"{c}({need[c]})" for c in order if c in need)

    # ------------------------------------------------------------------ events

    def retire(self, simm16: int) -> list[Pending]:
        """Apply `s_waitcnt simm16`: drop (and return) every operation it guarantees
        complete."""
        ops = self.ops
        if not ops:
            return []
        limits = decode_waitcnt(simm16)
        done: set[int] = set()
        for ctr in (VM, LGKM):
            limit = limits[ctr]
            if limit == 0:  # every operation of the counter, in order or not
                done.update(id(p) for p in ops if any(c == ctr for c, _ in p.streams))
                continue
            # in order: all but the newest `limit` of the counter's in-order operations
            in_order = [p for p in ops if (ctr, True) in p.streams]
            done.update(id(p) for p in in_order[:max(0, len(in_order) - limit)])
        if not done:
            return []
        retired = [p for p in self.ops if id(p) in done]
        for p in retired:
            p.holders -= 1
        self.ops = [p for p in self.ops if id(p) not in done]
        self.dst = {k: p for k, p in self.dst.items() if id(p) not in done}
        self.locked = {k: p for k, p in self.locked.items() if id(p) not in done}
        return retired

    def issue(self, info: OpInfo, mc: MemClass, strict_store: bool) -> Pending:
        """Record a memory instruction that just issued."""
        p = Pending(info.index, info, mc.streams, mc.async_defs,
                    mc.data_uses if strict_store else frozenset())
        self.ops.append(p)
        for k in mc.async_defs:
            self.dst[k] = p
        for k in p.srcs:
            self.locked[k] = p
        return p


def check(tracker: Tracker, info: OpInfo, mc: MemClass | None, g: Group,
          kernel: str) -> None:
    """Raise SanitizerError if `info` reads or overwrites registers with results in flight."""
    if tracker.dst and not (info.uses.isdisjoint(tracker.dst)
                            and info.defs.isdisjoint(tracker.dst)):
        hits = [k for k in info.uses if k in tracker.dst]
        if hits:
            p = tracker.dst[hits[0]]
            regs = keys_text(k for k in hits if tracker.dst[k] is p)
            # One wait must cover every pending result this instruction reads.
            need = tracker.needed_wait(*{id(q): q for q in (tracker.dst[k] for k in hits)}
                                       .values())
            raise _error(
                f"{regs} is read before the result of `{p.info.text}` (pc 0x{p.info.address:x}) "
                f"is guaranteed to have arrived: needs {need} before pc 0x{info.address:x}",
                need, info, g, kernel, "waitcnt_read")
        clobber = [k for k in info.defs if k in tracker.dst]
        if clobber:
            for k in clobber:
                p = tracker.dst[k]
                if mc is not None and _same_ordered_stream(p, mc):
                    continue  # a later load of the same in-order counter lands after it
                regs = keys_text(j for j in clobber if tracker.dst[j] is p)
                need = tracker.needed_wait(p)
                raise _error(
                    f"{regs} is overwritten while `{p.info.text}` (pc 0x{p.info.address:x}) "
                    f"may still write it: needs {need} before pc 0x{info.address:x}",
                    need, info, g, kernel, "waitcnt_overwrite")
    if tracker.locked and not info.defs.isdisjoint(tracker.locked):
        clobber = [k for k in info.defs if k in tracker.locked]
        if clobber:
            p = tracker.locked[clobber[0]]
            need = tracker.needed_wait(p)
            raise _error(
                f"{keys_text(clobber)} is overwritten while the store `{p.info.text}` "
                f"(pc 0x{p.info.address:x}) may still be reading it: needs {need} before pc "
                f"0x{info.address:x}", need, info, g, kernel, "store_data")


def _same_ordered_stream(p: Pending, mc: MemClass) -> bool:
    return any(s in mc.streams and s[1] for s in p.streams)


def _error(msg: str, need: str, info: OpInfo, g: Group, kernel: str,
           kind: str) -> SanitizerError:
    wave = int(g.waves[0])
    wg = tuple(int(x) for x in g.ctx.wg_ids[wave])
    return SanitizerError(msg, needed=need, kernel=kernel, pc=info.address, inst=info.text,
                          workgroup=wg, wave=int(g.ctx.wave_in_wg[wave]), kind=kind,
                          rule=f"needs {need}", source=KINDS[kind].source)


def is_plain_ds(info: OpInfo, access: str) -> bool:
    """A DS instruction that only loads (`access` "may_load") or only stores ("may_store"),
    i.e. not an atomic."""
    isa = info.isa
    if isa is None or isa.unit != "lds":
        return False
    other = "may_store" if access == "may_load" else "may_load"
    return access in isa.flags and other not in isa.flags


class LdsWatch:
    """Which DS store last wrote each LDS byte, to catch a wave reading LDS that another
    wave of its workgroup wrote but has not yet waited for.

    The memory model (LLVM AMDGPUUsage, workgroup-scope release) makes a wave's LDS writes
    visible to the other waves of its workgroup only once the writer's lgkmcnt has counted
    them complete, i.e. `s_waitcnt lgkmcnt(0)` (or a count that covers them) before the
    `s_barrier`. Every executed DS store gets a serial number; a shadow of the LDS holds, per
    byte, the serial of the last store to it and the writing wave's index in its workgroup.
    A wave's LDS stream completes in order, so "wave w has seen its stores up to serial R[w]
    complete" is one number per wave, raised when a wait retires a DS store of the wave.
    The check is exact for the waves' actual addresses; it only sees reads that the
    emulator executes before the writer's wait (waves of a workgroup that run in one group,
    the usual case, always do)."""

    WAVE_BITS = 4  # up to 16 waves per workgroup

    def __init__(self, lds_shape: tuple[int, int], wg_slot: np.ndarray,
                 wave_in_wg: np.ndarray):
        self.shape = lds_shape
        self.shadow: np.ndarray | None = None  # allocated at the first DS store
        self.serial = 1
        self.done = np.zeros(wave_in_wg.size, np.int64)
        self.wave_of = np.full((lds_shape[0], 1 << self.WAVE_BITS), -1, np.int64)
        self.wave_of[wg_slot, wave_in_wg] = np.arange(wave_in_wg.size)
        self.stores: dict[int, OpInfo] = {}
        # warn mode: violations go here instead of raising (the read then goes ahead)
        self.report: SanitizerReport | None = None

    def record_store(self, g: Group, mask: np.ndarray, idx: np.ndarray, nbytes: int) -> None:
        """A DS store of group `g` writes `nbytes` at each active lane's flat LDS index."""
        if self.shadow is None:
            self.shadow = np.zeros(self.shape[0] * self.shape[1], np.int32)
        who = np.broadcast_to(g.ctx.wave_in_wg[g.waves][:, None], mask.shape)[mask]
        tag = (self.serial << self.WAVE_BITS) | who.astype(np.int64)
        span = idx[:, None] + np.arange(nbytes)
        self.shadow[span] = np.broadcast_to(tag[:, None], span.shape)

    def issued(self, p: Pending) -> None:
        """The DS store whose bytes `record_store` just wrote issued as `p`."""
        p.lds_serial = self.serial
        self.stores[self.serial] = p.info
        self.serial += 1

    def retired(self, g: Group, ops: list[Pending]) -> None:
        """A wait of group `g` retired `ops`: their waves' DS stores up to them are done
        (for records other groups merged into, up to those groups' stores of the same
        instruction: g.tracker's serials)."""
        tracker = g.tracker
        top = max((tracker.lds_serial(p) for p in ops), default=0)
        for p in ops:
            tracker.serials.pop(id(p), None)
        if top:
            waves = g.waves
            self.done[waves] = np.maximum(self.done[waves], top)

    def check_read(self, info: OpInfo, g: Group, mask: np.ndarray, idx: np.ndarray,
                   nbytes: int, kernel: str) -> None:
        """Raise SanitizerError (or, with a `report`, record it) if an active lane reads
        bytes another wave's pending DS store wrote."""
        if self.shadow is None:
            return
        tags = self.shadow[idx[:, None] + np.arange(nbytes)]
        # Every store at or below the smallest retired serial of any wave is complete: when
        # the newest byte read is that old, nothing is pending (the common case once the
        # barrier has passed; the exact per-byte check below is the slow path).
        if int(tags.max()) >> self.WAVE_BITS <= int(self.done.min()):
            return
        reader = np.broadcast_to(g.ctx.wave_in_wg[g.waves][:, None], mask.shape)[mask]
        low = (1 << self.WAVE_BITS) - 1
        writer_in_wg = tags & low
        other = (tags != 0) & (writer_in_wg != reader[:, None])
        if not other.any():
            return
        slots = np.broadcast_to(g.lds_rows[:, None], mask.shape)[mask]
        writer = self.wave_of[np.broadcast_to(slots[:, None], tags.shape), writer_in_wg]
        serial = tags >> self.WAVE_BITS
        pending = other & (self.done[writer] < serial)
        if not pending.any():
            return
        lane, byte = (int(x[0]) for x in np.nonzero(pending))
        store = self.stores[int(serial[lane, byte])]
        w_reader = int(g.waves[np.nonzero(mask)[0][lane]])
        need = "s_waitcnt lgkmcnt(0)"
        err = SanitizerError(
            f"LDS byte {int(idx[lane]) % self.shape[1] + byte} is read by wave "
            f"{int(g.ctx.wave_in_wg[w_reader])} before `{store.text}` (pc 0x{store.address:x}) "
            f"of wave {int(writer_in_wg[lane, byte])} of the workgroup, which wrote it, is "
            f"guaranteed complete: the writer needs an s_waitcnt that retires it ({need}) "
            f"before its s_barrier", needed=need, kernel=kernel, pc=info.address,
            inst=info.text, workgroup=tuple(int(x) for x in g.ctx.wg_ids[w_reader]),
            wave=int(g.ctx.wave_in_wg[w_reader]), kind="lds_visibility",
            rule=f"the writer needs {need} before its s_barrier",
            source=KINDS["lds_visibility"].source)
        if self.report is None:
            raise err
        self.report.add(err)


@dataclass
class DmaWrite:
    """The LDS bytes one LDS-DMA instruction of one group wrote, per workgroup: LDS rows
    (sorted) and, per row, [lo, hi); `pending` is its in-flight record in `tracker`."""

    rows: np.ndarray  # (k,) int64, sorted
    lo: np.ndarray  # (k,) int64
    hi: np.ndarray  # (k,) int64
    pending: Pending
    tracker: Tracker
    lo_min: int = 0  # the smallest lo and largest hi: a read outside misses every row
    hi_max: int = 0

    def __post_init__(self) -> None:
        self.lo_min, self.hi_max = int(self.lo.min()), int(self.hi.max())


def row_spans(rows: np.ndarray, lo: np.ndarray, hi: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct row of `rows` (sorted): the smallest `lo` and largest `hi` of its
    entries (one vectorized pass over every workgroup of a group)."""
    if rows.size and rows[0] == rows[-1] and (rows == rows[0]).all():
        return rows[:1], lo.min(keepdims=True), hi.max(keepdims=True)  # (one workgroup)
    order = np.argsort(rows, kind="stable")
    r = rows[order]
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    return (r[starts], np.minimum.reduceat(lo[order], starts),
            np.maximum.reduceat(hi[order], starts))


def lds_dma_ranges(info: OpInfo, g: Group) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(LDS rows, lo, hi): the bytes [lo, hi) an LDS-DMA instruction of this group writes in
    each workgroup's LDS (union over that workgroup's waves: a group can hold waves of
    several workgroups whose M0 values differ, e.g. at different stages of a double
    buffer). Rows whose waves have no active lane are left out."""
    from asterism.emu.core import M0

    size = _dma_size(info)
    off = int(info.mods.get("offset", 0)) if info.enc == "MUBUF" else 0
    active = g.exec.any(axis=1)
    if not active.any():
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    ex = g.exec[active]
    m0 = g.s[active, M0].astype(np.int64)
    lane = np.arange(ex.shape[1], dtype=np.int64)
    # Per wave: its M0 and its lowest / highest active lane; the row's span is the union
    # (lowest M0 with the row's lowest lane, highest M0 with its highest lane).
    first = np.where(ex, lane, ex.shape[1]).min(axis=1)
    last = np.where(ex, lane, -1).max(axis=1)
    wave_rows = g.lds_rows[active].astype(np.int64)
    rows, m0_lo, m0_hi = row_spans(wave_rows, m0, m0)
    _, first_lo, last_hi = row_spans(wave_rows, first, last)
    return rows, m0_lo + off + first_lo * size, m0_hi + off + (last_hi + 1) * size


def _dma_size(info: OpInfo) -> int:
    m = info.mnemonic
    if m.endswith("dwordx4"):
        return 16
    if m.endswith("dwordx3"):
        return 12
    return 4
