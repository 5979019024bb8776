"""The waits pass: memory tokens and register dependencies -> minimal `s_waitcnt`.

Memory instructions complete asynchronously; the hardware counts the ones in flight per
counter and `s_waitcnt vmcnt(N) expcnt(E) lgkmcnt(L)` stalls until each counter is at most
its value. This pass

* resolves every `amdgcn.wait %tok, ...` into the s_waitcnt that guarantees those
  instructions have completed (or into nothing when they already have on every path),
* places an s_waitcnt before the first instruction that reads a register a load in flight
  will write, or overwrites it (WAW), or overwrites a register an in-flight instruction still
  reads (GDS address/data on expcnt; store data only with `strict-store-data=1`),
* and, as the workgroup memory model needs, before `s_barrier` for this wave's LDS accesses
  (`barrier=lds`, the default) and before a DS access of LDS for in-flight LDS DMA loads
  (`lds-dma=wait`, the default; `lds-dma=tokens` leaves those to explicit `amdgcn.wait` or
  hand-written waits, before DS accesses and barriers alike; a DMA load marked
  `waits.tokens_only` (builder: `kb.tokens_only(tok)`) is left out of both rules in any
  mode, e.g. the DMA of a double buffer's next stage).

Hand-written `s_waitcnt` instructions are kept as written (never removed or loosened); they
retire what they guarantee, which can make later automatic waits unnecessary.

Counting model (gfx9 / CDNA3 / CDNA4; LLVM 22 SIInsertWaitcnts, the CDNA3 ISA "Data
Dependency Resolution"):

* vmcnt: VMEM loads, stores and atomics (MUBUF, MTBUF, GLOBAL, SCRATCH, and the LDS DMA
  loads `buffer_load ... lds` / `global_load_lds_*`, which complete on vmcnt once the LDS
  is written) decrement in issue order.
* lgkmcnt: LDS instructions decrement in issue order among themselves, GDS ones among
  themselves; SMEM (and `s_memtime`) may return in any order.
* FLAT (`flat_*`) counts on vmcnt and lgkmcnt and may decrement either one early (the
  address space is only known per lane): it is out of order on both, so waiting for it
  takes vmcnt(0) and lgkmcnt(0). Buffer cache controls (buffer_wbl2, buffer_inv) are also
  treated as out of order.
* expcnt: GDS instructions hold their address/data VGPRs until read (in order). VMEM
  stores read their data at issue on gfx9 (LLVM's vmemWriteNeedsExpWaitcnt is false past
  gfx6); the wait states a wide store needs are the hazards pass's job.

To make an instruction T complete, a counter on which T is in order needs the count of
later instructions of T's own ordered stream (they cannot finish before T), and 0 when T is
out of order on it. Instructions of other streams never count: they can finish in any
order relative to T (this is finer than LLVM, which drops to 0 whenever event types mix).

Across blocks the pass runs a forward dataflow fixpoint over the CFG. The state holds, per
instruction in flight, the counts of younger same-stream instructions (the minimum over the
paths that reach a block: a smaller count is a stronger wait, safe on every path) and the
registers it will write or still reads (the union over paths). Counts saturate at the
counter's maximum - 1 like LLVM, so loops converge.

Options: `barrier=lds|none`, `lds-dma=wait|tokens`, `strict-store-data=0|1`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from xdsl.ir import Block, Operation

from asterism.ir.loops import TokenSetOp, TokenVarOp
from asterism.ir.ops import LDS_DMA_TOKENS_ATTR, InstructionOp, KernelOp, SOPPOp, WaitOp
from asterism.ir.verify import error_at
from asterism.isa import get_isa, syntax
from asterism.passes.base import Pass, option
from asterism.passes.machine import (
    KEY_SGPR,
    Key,
    MachineKernel,
    kernel_cfg,
    kernels_of,
    machine_kernel,
    module_target,
    op_kind,
)
from asterism.support.gcpause import gc_paused

VM, EXP, LGKM = "vmcnt", "expcnt", "lgkmcnt"
COUNTERS = (VM, EXP, LGKM)
WAIT_MAX = syntax.WAITCNT_MAX

# DS instructions that always address GDS (LLVM isAlwaysGDS) and DS lane exchanges that go
# through the LDS unit without touching LDS memory.
ALWAYS_GDS_PREFIXES = ("ds_gws_", "ds_ordered_count", "ds_add_gs_reg", "ds_sub_gs_reg")
NO_LDS_MEMORY = frozenset({"ds_swizzle_b32", "ds_permute_b32", "ds_bpermute_b32", "ds_nop"})
# VMEM cache controls: counted on vmcnt, but LLVM does not treat them as ordered accesses.
CACHE_CONTROLS = frozenset({"buffer_wbl2", "buffer_inv", "buffer_wbinvl1", "buffer_wbinvl1_vol"})

Stream = str | None  # an ordered stream name, or None: out of order
Req = tuple[str, Stream]  # (counter, stream)
ItemId = tuple[int, str]  # (op index, "op" | "lock")


@dataclass(frozen=True)
class MemKind:
    """How the counters see one memory instruction."""

    needs: tuple[Req, ...]  # what must reach the instruction for it to be complete
    members: tuple[Req, ...]  # ordered streams it advances (its issue counts for older ones)
    async_defs: tuple[Key, ...] = ()  # registers written when it completes
    lock: tuple[Req, ...] = ()  # what releases the registers it reads after issue
    lock_keys: tuple[Key, ...] = ()
    lds: bool = False  # a DS access of LDS memory
    dma: bool = False  # an LDS DMA load (writes LDS on completion)


def classify(mk: MachineKernel, op: InstructionOp, strict_store: bool = False) -> MemKind | None:
    """The counting model of a memory instruction (None for other instructions)."""
    match = mk.match(op)
    if not match.has_token:
        return None
    inst = match.instruction
    m, unit, form, mods = inst.mnemonic, inst.unit, match.form, op.mods
    regs = mk.regs(op)
    defs = regs.explicit_defs
    if unit == "smem":
        return MemKind(((LGKM, None),), (), defs)
    if unit == "lds":
        if mods.get("gds") or m.startswith(ALWAYS_GDS_PREFIXES):
            vgprs = tuple(k for k in regs.uses if isinstance(k, tuple) or k < KEY_SGPR)
            return MemKind(((LGKM, "gds"),), ((LGKM, "gds"), (EXP, "gds")), defs,
                           ((EXP, "gds"),), vgprs)
        return MemKind(((LGKM, "lds"),), ((LGKM, "lds"),), defs, lds=m not in NO_LDS_MEMORY)
    if unit == "vmem":
        if form.enc == "FLAT":
            return MemKind(((VM, None), (LGKM, None)), (), defs)
        if m in CACHE_CONTROLS:
            return MemKind(((VM, None),), (), defs)
        dma = "lds_dma" in inst.flags or bool(mods.get("lds"))
        lock: tuple[Req, ...] = ()
        lock_keys: tuple[Key, ...] = ()
        if strict_store and "may_store" in inst.flags and not dma:
            lock = ((VM, "vmem"),)
            lock_keys = tuple(k for spec, arg in zip(match.specs, op.args)
                              if spec.role == "use" and spec.name in ("data", "vdata")
                              for k in mk.keys(arg))
        return MemKind(((VM, "vmem"),), ((VM, "vmem"),), defs, lock, lock_keys, dma=dma)
    # A counted instruction of another unit: wait for everything it counts on.
    counters = tuple(c for c in form.counters if c in COUNTERS)
    return MemKind(tuple((c, None) for c in counters), (), defs)


# ---------------------------------------------------------------------------- state


@dataclass
class WaitState:
    """What may be in flight at a program point (an over-approximation of every path)."""

    items: dict[ItemId, dict[str, tuple[Stream, int]]] = field(default_factory=dict)
    regs: dict[Key, frozenset[ItemId]] = field(default_factory=dict)
    locked: dict[Key, frozenset[ItemId]] = field(default_factory=dict)
    # token variables (amdgcn.token_var, op index) -> the instructions whose token they may
    # hold here (the union over paths; ir.loops)
    bindings: dict[int, frozenset[ItemId]] = field(default_factory=dict)

    def copy(self) -> WaitState:
        """An independent copy."""
        return WaitState({i: dict(r) for i, r in self.items.items()}, dict(self.regs),
                         dict(self.locked), dict(self.bindings))

    def join(self, other: WaitState) -> bool:
        """Merge `other` into this state; True if this state changed."""
        changed = False
        for item, reqs in other.items.items():
            mine = self.items.get(item)
            if mine is None:
                self.items[item] = dict(reqs)
                changed = True
                continue
            for c, (s, k) in reqs.items():
                cur = mine.get(c)
                if cur is None:
                    mine[c] = (s, k)
                    changed = True
                elif k < cur[1]:
                    mine[c] = (cur[0], k)
                    changed = True
        for mine, theirs in ((self.regs, other.regs), (self.locked, other.locked),
                             (self.bindings, other.bindings)):
            for key, ids in theirs.items():
                cur = mine.get(key)
                if cur is None:
                    mine[key] = ids
                    changed = True
                elif not ids <= cur:
                    mine[key] = cur | ids
                    changed = True
        return changed

    def wait_for(self, item: ItemId, need: dict[str, int]) -> None:
        """Add to `need` the counts that guarantee `item` has completed."""
        for c, (s, k) in self.items.get(item, {}).items():
            n = 0 if s is None else min(k, WAIT_MAX[c] - 1)
            if n < need.get(c, WAIT_MAX[c] + 1):
                need[c] = n

    def retire(self, counts: dict[str, int]) -> None:
        """Apply `s_waitcnt counts`: drop what it guarantees complete."""
        done: list[ItemId] = []
        for item, reqs in self.items.items():
            for c in [c for c, (s, k) in reqs.items() if c in counts and (
                    counts[c] == 0 or (s is not None and k >= counts[c]))]:
                del reqs[c]
            if not reqs:
                done.append(item)
        if not done:
            return
        gone = set(done)
        for item in done:
            del self.items[item]
        for table in (self.regs, self.locked):
            for key in [k for k, ids in table.items() if ids & gone]:
                left = table[key] - gone
                if left:
                    table[key] = left
                else:
                    del table[key]

    def issue(self, index: int, kind: MemKind) -> None:
        """Record a memory instruction that issues now."""
        me: ItemId = (index, "op")
        if any(me in b for b in self.bindings.values()):
            if me in self.items:
                self._keep_older(me)
            else:  # (the instance a token variable names is complete: not the new one)
                self.bindings = {k: b - {me} for k, b in self.bindings.items()}
        if kind.members:
            members = set(kind.members)
            for reqs in self.items.values():
                for c, (s, k) in reqs.items():
                    if s is not None and (c, s) in members and k < WAIT_MAX[c] - 1:
                        reqs[c] = (s, k + 1)
        self.items[me] = {c: (s, 0) for c, s in kind.needs}
        for key in kind.async_defs:
            self.regs[key] = frozenset((me,))
        if kind.lock:
            lock: ItemId = (index, "lock")
            self.items[lock] = {c: (s, 0) for c, s in kind.lock}
            for key in kind.lock_keys:
                self.locked[key] = self.locked.get(key, frozenset()) | {lock}


    def _keep_older(self, me: ItemId) -> None:
        """The instruction `me` issues again while a token variable may still name its
        previous instance (a token carried around a loop): that instance becomes its own
        item `(index, "older")` (merged with an older one: the newer count guarantees both
        on an ordered stream, and 0 is 0), with its registers and bindings."""
        older: ItemId = (me[0], "older")
        reqs = self.items.pop(me)
        prev = self.items.get(older)
        if prev is not None:
            for c, (s, k) in prev.items():
                cur = reqs.get(c)
                reqs[c] = (s, k) if cur is None else (cur[0], min(k, cur[1]))
        self.items[older] = reqs
        for table in (self.regs, self.locked, self.bindings):
            for key, ids in table.items():
                if me in ids:
                    table[key] = (ids - {me}) | {older}


# ---------------------------------------------------------------------------- the pass


@dataclass(frozen=True)
class WaitsPass(Pass):
    """`waits{barrier=none,lds-dma=tokens,strict-store-data=1}` (see the module docstring)."""

    name = "waits"
    summary = "resolve amdgcn.wait and place the minimal s_waitcnt before uses of in-flight " \
              "results (hand-written waits are kept)"
    # (it inserts and erases s_waitcnt, amdgcn.wait and token ops, and changes no other op)
    keeps_machine_facts = True

    barrier: Literal["lds", "none"] = option("lds", "wait for this wave's LDS accesses before "
                                                    "s_barrier (none: do not)")
    lds_dma: Literal["wait", "tokens"] = option("wait", "wait for in-flight LDS DMA loads before "
                                                        "DS accesses (tokens: only where waited "
                                                        "for)")
    strict_store_data: bool = option(False, "keep store data registers locked until the store "
                                            "completes")

    def apply(self, module: Operation) -> None:
        """Place the waits of every kernel of `module` in place."""
        with gc_paused():
            for kernel in kernels_of(module):
                _KernelWaits(kernel, self).run()


@dataclass
class _OpFacts:
    op: Operation
    index: int
    uses: tuple[Key, ...] = ()
    defs: tuple[Key, ...] = ()
    mem: MemKind | None = None
    hand_wait: dict[str, int] | None = None
    barrier: bool = False
    tokens: tuple[int, ...] = ()
    lds_access: bool = False
    variables: tuple[int, ...] = ()  # token variables waited for
    # a token variable set here: (its index, the instructions, the variables it copies)
    bind: tuple[int, tuple[int, ...], tuple[int, ...]] | None = None


class _KernelWaits:
    """The waits pass on one kernel."""

    def __init__(self, kernel: KernelOp, options: WaitsPass):
        self.kernel = kernel
        self.options = options
        self.mk = machine_kernel(kernel, get_isa(module_target(kernel)))
        self.cfg = kernel_cfg(kernel)
        self.facts: dict[Block, list[_OpFacts]] = {}
        self.index_of: dict[Operation, int] = {}
        self.dma_items: set[int] = set()
        self.lds_items: set[int] = set()
        n = 0
        for block in self.cfg.blocks:
            for op in block.ops:
                self.index_of[op] = n
                n += 1
        for block in self.cfg.blocks:
            self.facts[block] = [self._facts(op) for op in block.ops]

    def _facts(self, op: Operation) -> _OpFacts:
        f = _OpFacts(op, self.index_of[op])
        # (the op's kind first, memoised by class: isinstance on ops is slow, and nearly
        # every op is an instruction)
        kind = op_kind(type(op))
        if kind is None:
            if isinstance(op, WaitOp):
                f.tokens, f.variables = self._token_sources(op, op.tokens)
            elif isinstance(op, TokenVarOp | TokenSetOp):
                var = op.result if isinstance(op, TokenVarOp) else op.var
                given = [op.init] if isinstance(op, TokenVarOp) else [op.value]
                statics, variables = self._token_sources(op, [t for t in given
                                                              if t is not None])
                f.bind = (self.index_of[var.owner], statics, variables)
            return f
        inst = self.mk.instruction(op)
        if inst is None:
            return f
        regs = self.mk.regs(op)
        f.uses, f.defs = regs.uses, regs.defs
        if kind is InstructionOp:
            if inst.mnemonic == "s_waitcnt" and isinstance(op, SOPPOp):
                mods = op.mods
                f.hand_wait = {c: int(mods[c]) for c in COUNTERS
                               if c in mods and int(mods[c]) < WAIT_MAX[c]}
            f.barrier = "workgroup_barrier" in inst.flags
            f.mem = classify(self.mk, op, self.options.strict_store_data)
            if f.mem is not None:
                f.lds_access = f.mem.lds
                if f.mem.dma and LDS_DMA_TOKENS_ATTR in op.attributes:
                    return f  # ordered by its amdgcn.wait tokens only (kb.tokens_only)
                if f.mem.dma:
                    self.dma_items.add(f.index)
                # With lds-dma=tokens the DMA loads are the kernel's to wait for, also at a
                # barrier (a pipelined loop keeps the next tiles' loads in flight across it).
                if f.mem.lds or (f.mem.dma and self.options.lds_dma == "wait"):
                    self.lds_items.add(f.index)
        return f

    def _token_sources(self, op: Operation, tokens) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The instructions and the token variables (op indices) some tokens come from."""
        statics, variables = [], []
        for k, tok in enumerate(tokens):
            owner = tok.owner
            if owner not in self.index_of:
                raise error_at(op, f"token #{k} comes from outside this kernel")
            (variables if isinstance(owner, TokenVarOp) else statics).append(
                self.index_of[owner])
        return tuple(statics), tuple(variables)

    # ------------------------------------------------------------------ transfer

    def needed(self, state: WaitState, f: _OpFacts) -> dict[str, int]:
        """The counts `f.op` needs before it (empty: no wait)."""
        need: dict[str, int] = {}
        for t in f.tokens:
            state.wait_for((t, "op"), need)
        for var in f.variables:
            for item in state.bindings.get(var, ()):
                state.wait_for(item, need)
        if not state.items:
            return need
        for key in f.uses:
            for item in state.regs.get(key, ()):
                state.wait_for(item, need)
        members = set(f.mem.members) if f.mem is not None else set()
        for key in f.defs:
            for item in state.regs.get(key, ()):
                reqs = state.items.get(item, {})
                # A later instruction of the same ordered stream writes after it anyway.
                if not any(s is not None and (c, s) in members for c, (s, _k) in reqs.items()):
                    state.wait_for(item, need)
            for item in state.locked.get(key, ()):
                state.wait_for(item, need)
        if f.barrier and self.options.barrier == "lds":
            for index in self.lds_items:
                state.wait_for((index, "op"), need)
        if f.lds_access and self.options.lds_dma == "wait":
            for index in self.dma_items:
                state.wait_for((index, "op"), need)
        return need

    def step(self, state: WaitState, f: _OpFacts) -> dict[str, int]:
        """Advance `state` over one op; returns the automatic wait placed before it."""
        need = self.needed(state, f)
        if need:
            state.retire(need)
        if f.hand_wait:
            state.retire(f.hand_wait)
        if f.bind is not None:
            var, statics, variables = f.bind
            items = {(t, "op") for t in statics}
            for v in variables:
                items |= state.bindings.get(v, frozenset())
            state.bindings[var] = frozenset(items)
        if f.mem is not None:
            state.issue(f.index, f.mem)
            written = set(f.mem.async_defs)
            for key in f.defs:
                if key not in written:
                    state.regs.pop(key, None)
        elif f.defs and (state.regs or state.locked):
            for key in f.defs:
                state.regs.pop(key, None)
                state.locked.pop(key, None)
        return need

    def transfer(self, block: Block, state: WaitState) -> WaitState:
        """The state at the end of `block` given the state at its start."""
        for f in self.facts[block]:
            self.step(state, f)
        return state

    # ------------------------------------------------------------------ run

    def run(self) -> int:
        """Compute the fixpoint, then rewrite; returns the number of s_waitcnt placed."""
        order = self.cfg.rpo()
        rank = {b: i for i, b in enumerate(order)}
        entry_states: dict[Block, WaitState] = {b: WaitState() for b in order}
        pending = set(order)  # every block at least once, then what changed
        while pending:
            block = min(pending, key=rank.__getitem__)
            pending.discard(block)
            out = self.transfer(block, entry_states[block].copy())
            for succ in self.cfg.succs[block]:
                if entry_states[succ].join(out):
                    pending.add(succ)
        placed = 0
        for block in order:
            placed += self.rewrite(block, entry_states[block].copy())
        return placed

    def rewrite(self, block: Block, state: WaitState) -> int:
        """Insert the waits of `block`; amdgcn.wait ops become s_waitcnt (or nothing)."""
        plan: list[tuple[Operation, dict[str, int]]] = []
        for f in self.facts[block]:
            need = self.step(state, f)
            if need or isinstance(f.op, WaitOp):
                plan.append((f.op, need))
        placed = 0
        prev_new: Operation | None = None
        for op, need in plan:
            if need:
                # Merge with a wait this pass put right before (nothing in between).
                before = op.prev_op
                if before is not None and before is prev_new:
                    merged = dict(_counts(before))
                    for c, n in need.items():
                        merged[c] = min(n, merged.get(c, n))
                    new = _waitcnt(merged, before)
                    block.insert_op_before(new, before)
                    block.erase_op(before)
                else:
                    new = _waitcnt(need, op)
                    block.insert_op_before(new, op)
                    placed += 1
                prev_new = new
            if isinstance(op, WaitOp):
                block.erase_op(op)
        for f in self.facts[block]:
            if f.bind is not None:  # (token variables: read, no code)
                f.op.detach()
        for f in self.facts[block]:
            if f.bind is not None:
                f.op.erase(safe_erase=False)
        return placed


def _counts(op: Operation) -> dict[str, int]:
    mods = op.mods  # type: ignore[attr-defined]
    return {c: int(mods[c]) for c in COUNTERS if c in mods}


def _waitcnt(counts: dict[str, int], where: Operation) -> SOPPOp:
    """`amdgcn.sopp s_waitcnt` with these counts (vmcnt, expcnt, lgkmcnt order)."""
    op = SOPPOp("s_waitcnt", [], [], {c: counts[c] for c in COUNTERS if c in counts})
    op.location = where.location
    return op


def insert_waits(module: Operation, **options: str) -> None:
    """Run the waits pass on every kernel of `module` (in place; options as text)."""
    WaitsPass.from_options(options).apply(module)


__all__ = ["MemKind", "WaitState", "WaitsPass", "classify", "insert_waits"]
