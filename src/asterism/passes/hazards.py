"""The hazards pass: the minimal `s_nop`s the target's wait-state rules require.

Some dependencies are not interlocked by the hardware: the consumer must come enough *wait
states* after the producer (each instruction in between provides one, `s_nop N` provides
N + 1). The rules are data, per target, in `asterism.target.hazards` (LLVM 22's
GCNHazardRecognizer and the CDNA3/CDNA4 ISA tables); the emulator's sanitizer checks the same
table at run time, with the same operand roles and register numbering, so a kernel this pass
fixed runs clean under the sanitizer.

For every instruction the pass finds, per rule, the most recent producer of each linked
register (and the most recent instruction of a producer class, for rules with no register)
and counts the wait states already in between; if some rule lacks wait states it inserts
`s_nop`s right before the consumer (16 wait states at most per s_nop), which also move every
later consumer further away (in a straight line this greedy placement is minimal). Across
blocks it runs a forward fixpoint over the CFG: at a join every producer that reaches it on
some path counts, at the smallest distance (conservative), so loops get the nops their back
edges need. Hazards inside a block are fixed first; those that come through block entries
next, block by block in reverse post-order, so that a nop placed late in a loop body is seen
before the loop head is padded for the back edge. Inserted nops only grow, so the rounds
(analysis, then nops) terminate; a round that adds none proves the final code clean.

With XNACK enabled (the module's target xnack+ or "any": `gfx942` without a feature; see
`amdgcn.module ... features = ":xnack-"` to turn it off) the pass also breaks SMEM and VMEM
soft clauses (see asterism.target.hazards): the state carries the clause that may be open at
each point, and an instruction that may not join it gets an `s_nop 0` right before it. Any
instruction in between that is not of the clause's kind, nops placed for other rules
included, already breaks it, and a clause break placed as late as possible is minimal (a run
of instructions that may form one clause still may without its first or last one).

`hazards{check-only=1}` (also the command `asterism hazards FILE` for .mlir or .s files,
with `--target` and `--pipeline` to run passes first) inserts nothing and reports every
violation of the code as written: the consumer's PC (kernel-relative byte offset), the
producer and its PC, the rule with its documentation and the s_nop that fixes it; the pass
then raises `HazardViolations` (exit code 1 on the command line).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation

from asterism.errors import AsterismError
from asterism.ir.match import immediate_of
from asterism.ir.ops import BranchOp, EndKernelOp, InstructionOp, KernelOp, SOPPOp, op_location
from asterism.ir.types import RegisterType, SpecialRegType
from asterism.ir.verify import error_at
from asterism.isa import get_isa
from asterism.isa.facts import def_is_read, implicit_names
from asterism.passes.base import Pass, option
from asterism.passes.machine import (
    KEY_SGPR,
    Key,
    MachineKernel,
    is_fixed_register,
    kernel_cfg,
    kernel_target,
    kernels_of,
    machine_kernel,
    op_kind,
    special_keys,
)
from asterism.support.gcpause import gc_paused
from asterism.target.hazards import (
    KEY_HWREG,
    HazardRule,
    InstFacts,
    SoftClause,
    clause_rules,
    distance_rules,
    instruction_classes,
    join_clause,
    mfma_passes,
    rules_for,
    soft_clause_kinds,
)

_EXEC_KEYS = special_keys("exec")
_VCC_KEYS = special_keys("vcc")
_M0_KEYS = special_keys("m0")
_LINK_KEYS = {"exec": _EXEC_KEYS, "vcc": _VCC_KEYS, "m0": _M0_KEYS}
NOP_MAX = 16  # wait states of the largest s_nop (s_nop 15)


def _rng(keys: list[Key] | tuple[Key, ...]) -> tuple[int, int]:
    return (min(keys), len(keys)) if keys else (0, 0)  # type: ignore[type-var]


def _file_keys(regs: str, keys: list[Key]) -> tuple[Key, ...]:
    if regs == "vgpr":
        return tuple(k for k in keys if k < KEY_SGPR)
    if regs == "sgpr":
        return tuple(k for k in keys if KEY_SGPR <= k < KEY_SGPR + 128)
    if regs in _LINK_KEYS:
        return tuple(k for k in keys if k in _LINK_KEYS[regs])
    if regs == "hwreg":
        return tuple(k for k in keys if k >= KEY_HWREG)
    return ()


@dataclass(frozen=True)
class _Template:
    """What an instruction's hazard facts depend on besides its register numbers (the same
    for every op of one form, operand shapes and modifiers; cached)."""

    classes: frozenset[str]
    passes: int | None
    mnemonic: str
    operand_roles: tuple[tuple[str, ...], ...]  # per operand: the roles its keys go to
    vcc_use: bool  # VCC read implicitly (counts as an SGPR use)
    implicit_def_keys: tuple[Key, ...]
    simm: str  # "nop", "hwreg" or "": what the simm16 immediate means


_TEMPLATES: dict[tuple, _Template] = {}
_DATA_NAMES = ("data", "data0", "data1", "vdata")


def _template(mk: MachineKernel, op: Operation) -> _Template | None:
    inst = mk.instruction(op)
    if inst is None:
        return None
    if isinstance(op, InstructionOp):
        key: tuple = (mk.isa.target, mk.form_key(op), op.modifiers)
    else:
        key = (mk.isa.target, op.name, inst.mnemonic)
    found = _TEMPLATES.get(key)
    if found is not None:
        return found
    if isinstance(op, InstructionOp):
        match = mk.match(op)
        form, specs, args, mods = match.form, match.specs, list(op.args), op.mods
    else:
        form, specs, args, mods = inst.forms[0], (), [], {}
    mnem = inst.mnemonic
    data_bits = 0
    soffset_reg = False
    per_operand: list[list[str]] = []
    for spec, arg in zip(specs, args):
        t = arg.type
        width = t.width if isinstance(t, RegisterType | SpecialRegType) else 0
        rs: list[str] = []
        use = spec.role != "def"
        if spec.role == "def":
            rs += ["def", "touch"]
            if def_is_read(spec):
                rs += ["use", "touch", "sgpr_use"]
        else:
            rs += ["use", "touch", "sgpr_use"]
        name = spec.name
        if name in _DATA_NAMES and use:
            rs.append("data")
            data_bits += 32 * width
        if name == "soffset" and isinstance(t, RegisterType | SpecialRegType):
            soffset_reg = True
        if name in ("src0", "src1") and use:
            rs.append("src01")
        if name == "src0":
            rs.append("src0")
        if use and isinstance(t, SpecialRegType) and t.reg_name.startswith("exec"):
            rs.append("exec_read")
        per_operand.append(rs)
    classes = instruction_classes(mnem, inst.unit, inst.flags, form.enc, mods, data_bits,
                                  soffset_reg)
    names = [spec.name for spec in specs]
    if "mfma" in classes:
        for k, spec in enumerate(specs):
            if (mnem.startswith("v_smfmac") and spec.role == "def") or (
                    not mnem.startswith("v_smfmac") and spec.name == "src2"):
                per_operand[k].append("srcC")
            if spec.name in ("src0", "src1"):
                per_operand[k].append("srcAB")
    if mnem in ("v_readlane_b32", "v_writelane_b32") and "src1" in names:
        per_operand[names.index("src1")].append("lane_select")
    imp_uses, imp_defs = implicit_names(inst)
    simm = "hwreg" if mnem.startswith(("s_setreg", "s_getreg")) else \
        "nop" if mnem == "s_nop" else ""
    found = _Template(classes, mfma_passes(mnem, inst.passes, mods), mnem,
                      tuple(tuple(r) for r in per_operand), "vcc" in imp_uses,
                      tuple(k for n in imp_defs for k in special_keys(n)), simm)
    _TEMPLATES[key] = found
    return found


def hazard_facts(mk: MachineKernel, op: Operation) -> tuple[InstFacts, dict[str, list[Key]]]:
    """Hazard classes of an instruction and the register keys of each operand role (the
    roles of `asterism.target.hazards`, computed as the emulator's checker does)."""
    tpl = _template(mk, op)
    if tpl is None:
        return InstFacts(frozenset(), {}, None, "", 0), {}
    return _facts_of(tpl, _operand_keys(mk, op), _simm_of(mk, op, tpl))


def _operand_keys(mk: MachineKernel, op: Operation) -> tuple[tuple[Key, ...], ...]:
    """The register keys of each operand of an instruction op (() for other ops)."""
    if not isinstance(op, InstructionOp):
        return ()
    keys = mk.keys
    return tuple([keys(arg) for arg in op.operands])


def _simm_of(mk: MachineKernel, op: Operation, tpl: _Template) -> int:
    """The simm16 immediate, for templates whose facts depend on it (0 otherwise)."""
    if not tpl.simm:
        return 0
    return _simm16(op, mk.match(op).specs if isinstance(op, InstructionOp) else ())


def _facts_of(tpl: _Template, operand_keys: tuple[tuple[Key, ...], ...],
              simm: int) -> tuple[InstFacts, dict[str, list[Key]]]:
    """`hazard_facts` from what it depends on: the template, each operand's register keys
    and the simm16 immediate."""
    roles: dict[str, list[Key]] = {}
    for keys, rs in zip(operand_keys, tpl.operand_roles):
        if not keys:
            continue
        for r in rs:
            if r == "sgpr_use":
                # (relocatable keys are tuples; the pass rejects them before this matters)
                sg = [k for k in keys if type(k) is int and KEY_SGPR <= k < KEY_SGPR + 128]
                if sg:
                    roles.setdefault(r, []).extend(sg)
            else:
                roles.setdefault(r, []).extend(keys)
    if tpl.vcc_use:
        roles.setdefault("sgpr_use", []).extend(_VCC_KEYS)
    defs = set(roles.get("def", ()))
    defs.update(tpl.implicit_def_keys)
    if defs:
        for role, link in (("exec_def", _EXEC_KEYS), ("vcc_def", _VCC_KEYS),
                           ("m0_def", _M0_KEYS)):
            hit = [k for k in link if k in defs]
            if hit:
                roles[role] = hit
    ws = 1
    if tpl.simm == "hwreg":
        roles["hwreg"] = [KEY_HWREG + (simm & 0x3F)]
    elif tpl.simm:
        ws = (simm & 0xF) + 1
    return InstFacts(tpl.classes, {}, tpl.passes, tpl.mnemonic, ws), roles


def _simm16(op: Operation, specs) -> int:
    if not isinstance(op, InstructionOp):
        return 0
    for spec, arg in zip(specs, op.args):
        if spec.name == "simm16":
            value, _t, _lit = immediate_of(arg)
            return int(value or 0)
    return 0


# ---------------------------------------------------------------------------- per op


@dataclass(frozen=True)
class _Member:
    """What a soft-clause member contributes: its clause kind (smem, vmem), the registers it
    writes and reads and the clause rules it is a consumer of (table order)."""

    kind: str
    defs: frozenset[Key]
    uses: frozenset[Key]
    rules: tuple[HazardRule, ...]


@dataclass
class _Prepared:
    """What the pass needs of one op, computed once (mirrors the emulator's checker)."""

    op: Operation
    index: int
    facts: InstFacts
    checks: list[tuple[tuple, tuple[int, int], list[HazardRule]]]  # (link, range, rules)
    records: list[tuple[str, tuple[Key, ...], tuple[int, int]]]
    class_records: tuple[str, ...]
    member: _Member | None = None  # soft-clause facts (XNACK targets, SMEM/VMEM ops)


@dataclass(frozen=True)
class Event:
    """A producer: its clock (wait states from the block start), op index and range."""

    clock: int
    index: int
    rng: tuple[int, int]


@dataclass
class HazardState:
    """The producers that may reach a point: per register key and role, and per class; and
    the soft clauses that may be open there (per kind, members named by op index)."""

    events: dict[Key, dict[str, frozenset[Event]]] = field(default_factory=dict)
    last_class: dict[str, frozenset[Event]] = field(default_factory=dict)
    clauses: dict[str, SoftClause] = field(default_factory=dict)

    def shifted(self, delta: int, horizon: int) -> HazardState:
        """The state with every clock moved by `delta`, without events older than
        `horizon` wait states (no rule can see them)."""
        out = HazardState()
        for key, roles in self.events.items():
            kept: dict[str, frozenset[Event]] = {}
            for role, evs in roles.items():
                moved = frozenset(Event(e.clock + delta, e.index, e.rng) for e in evs
                                  if -(e.clock + delta) <= horizon)
                if moved:
                    kept[role] = moved
            if kept:
                out.events[key] = kept
        for c, evs in self.last_class.items():
            moved = frozenset(Event(e.clock + delta, e.index, e.rng) for e in evs
                              if -(e.clock + delta) <= horizon)
            if moved:
                out.last_class[c] = moved
        out.clauses = {k: c.copy() for k, c in self.clauses.items()}
        return out

    def join(self, other: HazardState) -> bool:
        """Union with `other` (same clock origin); True if this state grew."""
        changed = False
        for key, roles in other.events.items():
            mine = self.events.setdefault(key, {})
            for role, evs in roles.items():
                cur = mine.get(role)
                if cur is None or not evs <= cur:
                    mine[role] = evs if cur is None else cur | evs
                    changed = True
        for c, evs in other.last_class.items():
            cur = self.last_class.get(c)
            if cur is None or not evs <= cur:
                self.last_class[c] = evs if cur is None else cur | evs
                changed = True
        for kind, clause in other.clauses.items():
            mine = self.clauses.get(kind)
            if mine is None:
                self.clauses[kind] = clause.copy()
                changed = True
            elif mine.join(clause):
                changed = True
        return changed

    def copy(self) -> HazardState:
        """An independent copy."""
        return HazardState({k: dict(v) for k, v in self.events.items()}, dict(self.last_class),
                           {k: c.copy() for k, c in self.clauses.items()})


@dataclass
class Violation:
    """A consumer that comes too soon after a producer."""

    consumer: Operation
    producer: Operation
    rule: HazardRule
    have: int
    need: int
    pc: int | None = None
    kernel: str = ""
    consumer_text: str = ""
    producer_text: str = ""
    producer_pc: int | None = None

    def message(self) -> str:
        """One line for people: where, what, which rule, the s_nop that fixes it."""
        missing = self.need - self.have
        nops = ", ".join(f"s_nop {n - 1}" for n in _nop_chunks(missing))
        where = f"pc 0x{self.pc:x}" if self.pc is not None else "?"
        loc = op_location(self.consumer)
        src = f"{loc}: " if loc else ""
        prod = f"`{self.producer_text}`" + (f" (pc 0x{self.producer_pc:x})"
                                            if self.producer_pc is not None else "")
        if self.rule.clause:
            return (f"{src}{self.kernel} {where}: `{self.consumer_text}` joins a soft clause "
                    f"with {prod} ({self.rule.name}: {self.rule.doc}) - insert {nops}")
        return (f"{src}{self.kernel} {where}: `{self.consumer_text}` comes {self.have} wait "
                f"states after {prod} but needs {self.need} ({self.rule.name}: "
                f"{self.rule.doc}) - insert {nops}")


class HazardViolations(AsterismError):
    """Raised by `hazards{check-only=1}`: the hand-written code misses wait states."""

    def __init__(self, violations: list[Violation]):
        self.violations = violations
        lines = [v.message() for v in violations]
        super().__init__(f"{len(violations)} hazard violation"
                         f"{'s' if len(violations) != 1 else ''}:\n" + "\n".join(lines))


def _nop_chunks(states: int) -> list[int]:
    """Wait states per s_nop to provide `states` (16 at most each)."""
    out = []
    while states > 0:
        out.append(min(states, NOP_MAX))
        states -= out[-1]
    return out


class _KernelHazards:
    """The hazards pass on one kernel."""

    def __init__(self, kernel: KernelOp):
        self.kernel = kernel
        target = kernel_target(kernel)
        self.mk = machine_kernel(kernel, get_isa(target.name))
        every = rules_for(target)
        self.rules = distance_rules(every)
        self.clause_rules = clause_rules(every)
        self.clause_kinds = soft_clause_kinds(target)
        self.producer_roles = sorted({(r.producer, r.produces) for r in self.rules})
        # The rules each instruction class is a consumer of (checked in table order).
        self.by_consumer: dict[str, list[HazardRule]] = {}
        for rule in self.rules:
            self.by_consumer.setdefault(rule.consumer, []).append(rule)
        self.order = {id(r): k for k, r in enumerate(self.rules)}
        self.not_sets = {id(r): (frozenset(r.producer_not), frozenset(r.consumer_not))
                         for r in self.rules}
        self._plans: dict[frozenset[str], tuple] = {}
        self.horizon = max((max([r.wait_states, *(w for _p, w in r.by_passes)])
                            for r in self.rules), default=0) + 1
        self.cfg = kernel_cfg(kernel)
        self.prepared: dict[Block, list[_Prepared]] = {}
        self._by_signature: dict[tuple, tuple] = {}
        self.ops: list[Operation] = []
        self.facts: list[InstFacts] = []
        for block in self.cfg.blocks:
            items = []
            for op in block.ops:
                if op_kind(type(op)) is not None:  # an instruction, branch or end
                    for value in (*op.operands, *op.results):
                        if not is_fixed_register(value):
                            raise error_at(op, "the hazards pass needs fixed registers: run "
                                               "register allocation first (--pipeline "
                                               "regalloc,hazards)")
                    items.append(self._prepare(op))
            self.prepared[block] = items
        self.nops: dict[int, int] = {}

    def _plan(self, classes: frozenset[str]) -> tuple:
        """What depends only on an instruction's classes (cached): the rules it is a
        consumer of (table order), the producer roles to record and the class records."""
        plan = self._plans.get(classes)
        if plan is None:
            rules = sorted({id(r): r for c in classes for r in self.by_consumer.get(c, ())
                            if not classes & self.not_sets[id(r)][1]}.values(),
                           key=lambda r: self.order[id(r)])
            roles = tuple(dict.fromkeys(role for cls, role in self.producer_roles
                                        if cls in classes and role != "none"))
            class_records = tuple(sorted(c for c, role in self.producer_roles
                                         if role == "none" and c in classes))
            plan = self._plans[classes] = (rules, roles, class_records)
        return plan

    def _prepare(self, op: Operation) -> _Prepared:
        tpl = _template(self.mk, op)
        if tpl is None:
            facts, checks, records, class_records, member = self._prepared_parts(
                InstFacts(frozenset(), {}, None, "", 0), {})
        else:
            # Ops of one template with the same registers (and simm16) prepare alike: after
            # register allocation a kernel has a few hundred of them.
            operand_keys = _operand_keys(self.mk, op)
            simm = _simm_of(self.mk, op, tpl)
            signature = (id(tpl), operand_keys, simm)
            found = self._by_signature.get(signature)
            if found is None:
                found = self._by_signature[signature] = self._prepared_parts(
                    *_facts_of(tpl, operand_keys, simm))
            facts, checks, records, class_records, member = found
        index = len(self.ops)
        self.ops.append(op)
        self.facts.append(facts)
        return _Prepared(op, index, facts, checks, records, class_records, member)

    def _prepared_parts(self, facts: InstFacts, roles: dict[str, list[Key]]) -> tuple:
        """(facts, checks, records, class records, clause member) of a `_Prepared` (see
        there); shared by the ops of one signature, and never modified."""
        rules, producer_roles, class_records = self._plan(facts.classes)
        # Rules that look at the same producer role of the same registers share one lookup.
        groups: dict[tuple, list[HazardRule]] = {}
        filtered: dict[tuple[str, str], tuple[tuple[Key, ...], tuple[int, int]]] = {}
        for rule in rules:
            if rule.regs == "none":
                groups.setdefault((("none", rule.producer), (0, 0)), []).append(rule)
                continue
            link = (rule.regs, rule.consumes)
            found = filtered.get(link)
            if found is None:
                if rule.consumes == "none":
                    keys = _LINK_KEYS.get(rule.regs, ())
                else:
                    keys = _file_keys(rule.regs, roles.get(rule.consumes, []))
                found = filtered[link] = (keys, _rng(keys))
            if found[0]:
                groups.setdefault(((rule.produces, found[0]), found[1]), []).append(rule)
        grouped = [(link, rng, rs) for (link, rng), rs in groups.items()]
        records = []
        seen = set()
        # Every write is recorded, whatever the class, so only the latest writer counts.
        for role in ("def", "exec_def", "vcc_def", "m0_def", *producer_roles):
            if role in seen:
                continue
            keys = roles.get(role)
            if keys:
                seen.add(role)
                records.append((role, tuple(keys), _rng(keys)))
        member = None
        kinds = self.clause_kinds & facts.classes
        if kinds:
            kind = min(kinds)
            member = _Member(kind, frozenset(roles.get("def", ())),
                             frozenset(roles.get("use", ())),
                             tuple(r for r in self.clause_rules
                                   if r.clause == kind and r.consumer in facts.classes))
        return facts, grouped, records, class_records, member

    # ------------------------------------------------------------------ transfer

    def _missing(self, st: HazardState, p: _Prepared, now: int,
                 worst: list | None = None, local: bool = False) -> int:
        """Wait states `p` lacks at clock `now` (0 if none); `worst` collects violations;
        `local` looks only at producers of the same block (clock >= 0)."""
        need_max = 0
        events = st.events
        for link, rng, rules in p.checks:
            what, where = link
            if what == "none":
                candidates: list[Event] = list(st.last_class.get(where, ()))
            else:
                candidates = []
                for k in where:
                    roles = events.get(k)
                    if roles is not None:
                        evs = roles.get(what)
                        if evs:
                            candidates.extend(evs)
            if local:
                candidates = [ev for ev in candidates if ev.clock >= 0]
            if not candidates:
                continue
            for ev in candidates:
                pf = self.facts[ev.index]
                have = now - ev.clock - 1
                for rule in rules:
                    if rule.producer not in pf.classes or \
                            pf.classes & self.not_sets[id(rule)][0]:
                        continue
                    if rule.same_opcode is not None and \
                            (pf.mnemonic == p.facts.mnemonic) != rule.same_opcode:
                        continue
                    if rule.overlap != "any" and \
                            (rule.overlap == "exact") != (ev.rng == rng):
                        continue
                    need = rule.waits_for(pf.passes)
                    if have < need:
                        need_max = max(need_max, need - have)
                        if worst is not None:
                            worst.append(Violation(p.op, self.ops[ev.index], rule, have, need))
        return need_max

    def _clause_break(self, st: HazardState, p: _Prepared, violations: list | None) -> bool:
        """True if `p` may not join the soft clause open before it (which then ends: the
        s_nop 0 that fixes it starts a new one); `violations` collects the reason."""
        member = p.member
        assert member is not None
        clause = st.clauses.get(member.kind)
        found = None if clause is None else \
            clause.hazard(member.defs, member.uses, member.rules)
        if found is None:
            return False
        rule, who = found
        st.clauses.clear()
        if violations is not None:
            violations.append(Violation(p.op, self.ops[who], rule, 0, 1))  # type: ignore[index]
        return True

    def _record(self, st: HazardState, p: _Prepared, now: int) -> None:
        clauses = st.clauses
        member = p.member
        if member is not None:
            join_clause(clauses, member.kind, member.defs, member.uses, p.index)
        elif clauses and p.facts.wait_states:
            clauses.clear()  # any other instruction ends the clauses
        for role, keys, rng in p.records:
            ev = frozenset((Event(now, p.index, rng),))
            for k in keys:
                roles = st.events.get(k)
                if roles is None:
                    st.events[k] = {role: ev}
                else:
                    roles[role] = ev
        for c in p.class_records:
            st.last_class[c] = frozenset((Event(now, p.index, (0, 0)),))

    def transfer(self, block: Block, st: HazardState, fix: str = "",
                 violations: list | None = None) -> tuple[HazardState, int, bool]:
        """Walk `block` from state `st` (clock 0 at its start) with the current nops. With
        `fix` ("local": producers of this block only, "all"), an op that lacks wait states
        gets them right away (which also moves every later op further from its producers).
        Returns (state, end clock, nops added)."""
        now = 0
        added = False
        for p in self.prepared[block]:
            before = self.nops.get(p.index, 0)
            if before:
                now += before
                st.clauses.clear()  # the s_nop ends every soft clause
            if p.checks and (fix or violations is not None):
                missing = self._missing(st, p, now, violations, fix == "local")
                if missing:
                    st.clauses.clear()  # the s_nop that fixes it ends the clauses too
                    if fix:
                        self.nops[p.index] = before + missing
                        now += missing
                        added = True
            if p.member is not None and st.clauses and (fix or violations is not None):
                if self._clause_break(st, p, violations) and fix:
                    self.nops[p.index] = self.nops.get(p.index, 0) + 1
                    now += 1
                    added = True
            self._record(st, p, now)
            now += p.facts.wait_states
        return st, now, added

    def fixpoint(self) -> tuple[dict[Block, HazardState], dict[Block, HazardState]]:
        """Entry and exit states of every block for the current nops (exit states with
        clocks relative to the block end)."""
        order = self.cfg.rpo()
        rank = {b: i for i, b in enumerate(order)}
        entry = {b: HazardState() for b in order}
        exits: dict[Block, HazardState] = {}
        pending = set(order)  # every block at least once, then what changed
        while pending:
            block = min(pending, key=rank.__getitem__)
            pending.discard(block)
            st, end, _added = self.transfer(block, entry[block].copy())
            out = exits[block] = st.shifted(-end, self.horizon)
            for succ in self.cfg.succs[block]:
                if entry[succ].join(out):
                    pending.add(succ)
        return entry, exits

    # ------------------------------------------------------------------ run

    def insert(self) -> int:
        """Insert the nops; returns the wait states added."""
        # Hazards within a block first: they need no entry state, and nothing inserted
        # elsewhere can fix them. Then the ones that come through block entries, in RPO,
        # each block starting from the exits of its predecessors as already fixed in this
        # round (older exits for back edges): a nop placed for a producer late in a loop
        # body can make the one its back edge would need at the loop head unnecessary.
        # Nops only grow, and a round that adds none is the fixpoint of the final code.
        order = self.cfg.rpo()
        for block in order:
            self.transfer(block, HazardState(), fix="local")
        while True:
            entry, exits = self.fixpoint()
            added = False
            for block in order:
                st = entry[block]
                if block is not order[0]:
                    st = HazardState()
                    for pred in self.cfg.preds[block]:
                        if pred in exits:
                            st.join(exits[pred])
                st, end, more = self.transfer(block, st, fix="all")
                if more:
                    added = True
                    exits[block] = st.shifted(-end, self.horizon)
            if not added:
                break
        total = 0
        for index, states in self.nops.items():
            op = self.ops[index]
            block = op.parent_block()
            assert block is not None
            for chunk in _nop_chunks(states):
                nop = _s_nop(chunk - 1, op)
                block.insert_op_before(nop, op)
            total += states
        return total

    def check(self) -> list[Violation]:
        """Violations of the code as written (nothing inserted)."""
        entry, _exits = self.fixpoint()
        found: list[Violation] = []
        for block in self.cfg.blocks:
            self.transfer(block, entry[block].copy(), "", found)
        # One report per consumer and rule: the closest producer.
        best: dict[tuple[int, str], Violation] = {}
        for v in found:
            key = (id(v.consumer), v.rule.name)
            if key not in best or v.need - v.have > best[key].need - best[key].have:
                best[key] = v
        return list(best.values())


def _s_nop(n: int, where: Operation) -> SOPPOp:
    from xdsl.dialects.arith import ConstantOp
    from xdsl.dialects.builtin import i32

    const = ConstantOp(IntegerAttr(n, i32))
    block = where.parent_block()
    assert block is not None
    block.insert_op_before(const, where)
    op = SOPPOp("s_nop", [const.result], [])
    op.location = where.location
    return op


# ---------------------------------------------------------------------------- entry points


def insert_nops(module: Operation) -> int:
    """Insert the s_nops every kernel of `module` needs (in place); returns wait states."""
    with gc_paused():
        return sum(_KernelHazards(k).insert() for k in kernels_of(module))


def check_hazards(module: Operation) -> list[Violation]:
    """The hazard violations of `module` as written, with PCs (kernel-relative)."""
    from asterism.ir.to_mc import lower_module
    from asterism.mc.encoder import inst_size
    from asterism.mc.printer import format_inst

    out: list[Violation] = []
    kernels = kernels_of(module)
    with gc_paused():
        per_kernel = [(k, _KernelHazards(k).check()) for k in kernels]
    if not any(v for _k, v in per_kernel):
        return []
    mc = lower_module(module)
    for (kernel, violations), mck in zip(per_kernel, mc.kernels):
        pcs: dict[Operation, tuple[int, str]] = {}
        insts = [item for item in mck.body if hasattr(item, "mnemonic")]
        ops = [op for block in kernel.body.blocks for op in block.ops
               if isinstance(op, InstructionOp | BranchOp | EndKernelOp)]
        pc = 0
        for op, inst in zip(ops, insts):
            pcs[op] = (pc, format_inst(inst))
            pc += inst_size(inst)
        for v in violations:
            v.kernel = kernel.kernel_name
            v.pc, v.consumer_text = pcs.get(v.consumer, (None, v.consumer.name))
            v.producer_pc, v.producer_text = pcs.get(v.producer, (None, v.producer.name))
        out += sorted(violations, key=lambda v: (v.pc or 0, v.rule.name))
    return out


@dataclass(frozen=True)
class HazardsPass(Pass):
    """`hazards{check-only=1}`."""

    name = "hazards"
    summary = "insert the minimal s_nops the target's wait-state rules need"
    keeps_machine_facts = True  # (it inserts s_nops and their constants, and changes no op)

    check_only: bool = option(False, "insert nothing; report the violations (an error)")

    def apply(self, module: Operation) -> None:
        """Insert the nops in place, or raise HazardViolations with check-only=1."""
        if self.check_only:
            violations = check_hazards(module)
            if violations:
                raise HazardViolations(violations)
            return
        insert_nops(module)


__all__ = ["Event", "HazardState", "HazardViolations", "HazardsPass", "Violation",
           "check_hazards", "hazard_facts", "insert_nops"]
