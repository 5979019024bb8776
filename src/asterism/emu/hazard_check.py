"""Checks the wait-state rules of target/hazards.py while the emulator runs.

Each group keeps a clock of wait states (one per instruction, N+1 for `s_nop N`) and, per
register, the most recent instruction that wrote it (and that read it as MFMA SrcC or as
store data). Before an instruction executes, every rule it is a consumer of looks up the
producer of the registers that link them and raises a `SanitizerError` if they are too close,
naming both instructions, the rule and the `s_nop` that would fix it.

Only the most recent producer of a register counts (an older write that was overwritten
cannot be observed), so the checker is slightly less conservative than LLVM's hazard
recognizer, which never misses a hazard but also reports ones that cannot happen.

On targets with XNACK enabled (xnack+ or "any": the Target the emulator runs, which the
runtime takes from the code object's e_flags) the group also carries the SMEM or VMEM soft
clause it is in (target/hazards.py, `SoftClause`): every instruction issued ends the clause
of the other kind, and an instruction that may not join its own raises the same error, with
the clause instruction it conflicts with and `s_nop 0` as the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from asterism.emu.core import EXEC, KEY_AGPR, KEY_SGPR, M0, VCC, Group
from asterism.emu.errors import SanitizerError
from asterism.emu.info import OpInfo, make_infos, operand_keys
from asterism.isa.facts import def_is_read, implicit_names
from asterism.mc.operands import Imm, Mod, Reg, Special
from asterism.target.chip import Target
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
    rule_source,
    rules_for,
)

_EXEC_KEYS = (KEY_SGPR + EXEC, KEY_SGPR + EXEC + 1)
_VCC_KEYS = (KEY_SGPR + VCC, KEY_SGPR + VCC + 1)
_M0_KEYS = (KEY_SGPR + M0,)


@dataclass(slots=True)
class Event:
    """An instruction that produced (or read) a register at a given clock."""

    clock: int
    facts: InstFacts
    role: str
    rng: tuple[int, int]  # first key and count of the producing operand
    info: OpInfo


class HazardState:
    """Per-group history for the checker (and the soft clause the group is in, per kind)."""

    __slots__ = ("clauses", "clock", "events", "last_class", "pruned", "role_clock")

    def __init__(self) -> None:
        self.clock = 0
        self.events: dict[str, dict[int, Event]] = {}  # producer role -> register -> event
        self.last_class: dict[str, Event] = {}
        self.pruned = 0
        self.clauses: dict[str, SoftClause] = {}
        # per producer role, the clock of its newest event (of any register): a rule whose
        # longest wait has passed since then cannot fire, whatever the registers
        self.role_clock: dict[str, int] = {}

    def copy(self) -> HazardState:
        """An independent copy (for a group split)."""
        h = HazardState()
        h.clock = self.clock
        h.events = {role: dict(v) for role, v in self.events.items()}
        h.last_class = dict(self.last_class)
        h.pruned = self.pruned
        h.clauses = {k: c.copy() for k, c in self.clauses.items()}
        h.role_clock = dict(self.role_clock)
        return h

    def merge(self, other: HazardState) -> None:
        """Union with another group's history (the most recent producer wins)."""
        shift = self.clock - other.clock
        for role, by_key in other.events.items():
            mine = self.events.setdefault(role, {})
            for k, ev in by_key.items():
                moved = Event(ev.clock + shift, ev.facts, ev.role, ev.rng, ev.info)
                if k not in mine or mine[k].clock < moved.clock:
                    mine[k] = moved
        for c, ev in other.last_class.items():
            moved = Event(ev.clock + shift, ev.facts, ev.role, ev.rng, ev.info)
            if c not in self.last_class or self.last_class[c].clock < moved.clock:
                self.last_class[c] = moved
        for role, clock in other.role_clock.items():
            self.role_clock[role] = max(self.role_clock.get(role, clock + shift),
                                        clock + shift)
        for kind, clause in other.clauses.items():
            mine = self.clauses.get(kind)
            if mine is None:
                self.clauses[kind] = clause.copy()
            else:
                mine.join(clause)

    def prune(self, horizon: int = 24) -> None:
        """Forget events too old to matter for any rule."""
        limit = self.clock - horizon
        self.events = {k: kept for k, v in self.events.items()
                       if (kept := {r: e for r, e in v.items() if e.clock >= limit})}
        self.last_class = {c: e for c, e in self.last_class.items() if e.clock >= limit}
        self.pruned = self.clock


@dataclass(frozen=True)
class Member:
    """A soft-clause instruction: clause kind, registers written and read, and the clause
    rules it is a consumer of (table order)."""

    kind: str
    defs: frozenset[int]
    uses: frozenset[int]
    rules: tuple[HazardRule, ...]


@dataclass
class Prepared:
    """What the checker needs of one instruction, computed once."""

    facts: InstFacts
    checks: list[tuple[HazardRule, tuple[int, ...], tuple[int, int]]]
    records: list[tuple[str, tuple[int, ...], tuple[int, int]]]
    class_records: tuple[str, ...]
    member: Member | None = None
    # the distinct (producer role, registers) the checks look up, and each check's entry
    # there: rules that link the same registers share one lookup of their events
    lookups: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    lookup_of: list[int] = field(default_factory=list)

    def index_lookups(self) -> None:
        """Fill `lookups` / `lookup_of` from `checks` (after any change to them)."""
        where: dict[tuple[str, tuple[int, ...]], int] = {}
        self.lookup_of = []
        for rule, keys, _ in self.checks:
            key = (rule.produces, keys) if rule.regs != "none" else ("", ())
            self.lookup_of.append(where.setdefault(key, len(where)))
        self.lookups = list(where)


def _rng(keys: list[int]) -> tuple[int, int]:
    return (min(keys), len(keys)) if keys else (0, 0)


def facts_of(info: OpInfo) -> tuple[InstFacts, dict[str, list[int]]]:
    """Hazard classes and the register keys of each operand role of an instruction."""
    isa = info.isa
    form = info.form
    roles: dict[str, list[int]] = {}
    if isa is None or form is None:
        return InstFacts(frozenset(), {}, None, info.mnemonic), roles

    def add(role: str, keys) -> None:
        roles.setdefault(role, []).extend(keys)

    data_bits = 0
    soffset_reg = False
    for spec, op in zip(form.operands, info.inst.operands, strict=False):
        keys = operand_keys(op)
        if spec.role == "def":
            add("def", keys)
            if def_is_read(spec):
                add("use", keys)
        else:
            add("use", keys)
        name = spec.name
        if name in ("data", "data0", "data1", "vdata") and spec.role == "use":
            add("data", keys)
            data_bits += 32 * len(keys)
        if name == "soffset" and isinstance(op, Reg | Special):
            soffset_reg = True
        if name in ("src0", "src1") and spec.role == "use":
            add("src01", keys)
        if name == "src0":
            add("src0", keys)
        base = op.operand if isinstance(op, Mod) else op
        if spec.role == "use" and isinstance(base, Special) and base.name.startswith("exec"):
            add("exec_read", keys)
    add("touch", roles.get("use", []) + roles.get("def", []))
    sgpr_use = [k for k in roles.get("use", []) if KEY_SGPR <= k < KEY_SGPR + 128]
    if "vcc" in implicit_names(isa)[0]:
        sgpr_use += list(_VCC_KEYS)
    add("sgpr_use", sgpr_use)
    mnem = info.mnemonic
    classes = instruction_classes(mnem, isa.unit, isa.flags, form.enc, info.mods, data_bits,
                                  soffset_reg)
    if "mfma" in classes:
        if mnem.startswith("v_smfmac"):
            add("srcC", roles.get("def", []))
        else:
            add("srcC", operand_keys(info.op("src2")))
        add("srcAB", operand_keys(info.op("src0")) + operand_keys(info.op("src1")))
    if mnem in ("v_readlane_b32", "v_writelane_b32"):
        add("lane_select", operand_keys(info.op("src1")))
    defs = set(info.defs)
    add("exec_def", [k for k in _EXEC_KEYS if k in defs])
    add("vcc_def", [k for k in _VCC_KEYS if k in defs])
    add("m0_def", [k for k in _M0_KEYS if k in defs])
    if mnem.startswith(("s_setreg", "s_getreg")):
        simm = info.op("simm16")
        reg = (simm.value if hasattr(simm, "value") else 0) & 0x3F
        add("hwreg", [KEY_HWREG + reg])
    ws = 1
    if mnem == "s_nop":
        simm = info.op("simm16")
        ws = ((simm.value if isinstance(simm, Imm) else 0) & 0xF) + 1
    facts = InstFacts(classes, {}, mfma_passes(mnem, isa.passes, info.mods), mnem, ws)
    return facts, roles


def _file_keys(regs: str, keys: list[int]) -> tuple[int, ...]:
    if regs == "vgpr":
        return tuple(k for k in keys if k < KEY_SGPR)
    if regs == "sgpr":
        return tuple(k for k in keys if KEY_SGPR <= k < KEY_SGPR + 128)
    if regs == "vcc":
        return tuple(k for k in keys if k in _VCC_KEYS)
    if regs == "exec":
        return tuple(k for k in keys if k in _EXEC_KEYS)
    if regs == "m0":
        return tuple(k for k in keys if k in _M0_KEYS)
    if regs == "hwreg":
        return tuple(k for k in keys if k >= KEY_HWREG)
    return ()


_LINK_KEYS = {"exec": _EXEC_KEYS, "vcc": _VCC_KEYS, "m0": _M0_KEYS}


class HazardChecker:
    """Compiles the rules of a target against instructions and checks them at run time."""

    def __init__(self, target: str | Target):
        self.target = target
        every = rules_for(target)
        self.rules = distance_rules(every)
        self.clause_rules = clause_rules(every)
        self.clause_kinds = frozenset(r.clause for r in self.clause_rules)
        self.producer_roles = {(r.producer, r.produces) for r in self.rules}
        # the most wait states each rule can ask for (HazardRule.waits_for)
        self.max_need = {id(r): max((r.wait_states, *(w for _, w in r.by_passes)))
                         for r in self.rules}

    def prepare(self, info: OpInfo) -> Prepared:
        """Per-instruction checks and records."""
        facts, roles = facts_of(info)
        checks = []
        linked: dict[tuple[str, str], tuple] = {}  # (regs, consumes) -> (keys, range)
        for rule in self.rules:
            if rule.consumer not in facts.classes or \
                    not facts.classes.isdisjoint(rule.consumer_not):
                continue
            if rule.regs == "none":
                checks.append((rule, (), (0, 0)))
                continue
            link = linked.get((rule.regs, rule.consumes))
            if link is None:
                if rule.consumes == "none":
                    keys = _LINK_KEYS.get(rule.regs, ())
                else:
                    keys = _file_keys(rule.regs, roles.get(rule.consumes, []))
                link = linked[(rule.regs, rule.consumes)] = (tuple(keys), _rng(list(keys)))
            if link[0]:
                checks.append((rule, *link))
        records = []
        seen = set()
        # Every write is recorded, whatever the class, so only the latest writer counts.
        for role in ("def", "exec_def", "vcc_def", "m0_def"):
            keys = roles.get(role, [])
            if keys:
                seen.add(role)
                records.append((role, tuple(keys), _rng(keys)))
        for cls, role in self.producer_roles:
            if cls in facts.classes and role not in seen and role != "none":
                keys = roles.get(role, [])
                if keys:
                    seen.add(role)
                    records.append((role, tuple(keys), _rng(keys)))
        class_records = tuple(sorted(c for c, role in self.producer_roles
                                     if role == "none" and c in facts.classes))
        member = None
        kinds = self.clause_kinds & facts.classes
        if kinds:
            kind = min(kinds)
            member = Member(kind, frozenset(roles.get("def", ())), frozenset(roles.get("use", ())),
                            tuple(r for r in self.clause_rules
                                  if r.clause == kind and r.consumer in facts.classes))
        prep = Prepared(facts, checks, records, class_records, member)
        prep.index_lookups()
        return prep

    def prepare_program(self, infos: Sequence[OpInfo]) -> list[Prepared]:
        """`prepare` for every instruction of a program, keeping only the checks of rules
        whose producer class some instruction of the program has (events come only from
        the program's own instructions, so the other rules can never fire) and only the
        records those checks can read: the same findings, and most instructions check and
        record nothing."""
        preps = [self.prepare(info) for info in infos]
        classes = {p.facts.classes for p in preps}
        live = {id(r) for r in self.rules
                if any(r.producer in c and not c & set(r.producer_not) for c in classes)}
        # What the remaining checks can look up: per producer role the register keys, and
        # the producer classes of the rules without registers. Records of anything else are
        # never read (a record only shadows older events of its own role and keys).
        read_keys: dict[str, set[int]] = {}
        read_classes: set[str] = set()
        for p in preps:
            p.checks = [c for c in p.checks if id(c[0]) in live]
            p.index_lookups()
            for rule, keys, _ in p.checks:
                if rule.regs == "none":
                    read_classes.add(rule.producer)
                else:
                    read_keys.setdefault(rule.produces, set()).update(keys)
        for p in preps:
            records = []
            for role, keys, rng in p.records:
                kept = tuple(k for k in keys if k in read_keys.get(role, ()))
                if kept:
                    records.append((role, kept, rng))  # (rng: the whole operand's range)
            p.records = records
            p.class_records = tuple(c for c in p.class_records if c in read_classes)
        return preps

    def missing(self, st: HazardState, prep: Prepared
                ) -> tuple[int, HazardRule | None, Event | None, int]:
        """(wait states still missing, rule, producer event, states present) for the
        instruction `prep` describes, given the history `st` (0 missing: no hazard)."""
        now = st.clock
        worst: tuple[int, HazardRule | None, Event | None, int] = (0, None, None, 0)
        events = st.events
        need_of = self._need
        role_clock = st.role_clock
        max_need = self.max_need
        looked: list[list[Event] | None] = [None] * len(prep.lookups)
        for (rule, keys, rng), slot in zip(prep.checks, prep.lookup_of, strict=True):
            if rule.regs == "none":
                ev = st.last_class.get(rule.producer)
                found = (ev,) if ev is not None else ()
            else:
                produces = rule.produces
                newest = role_clock.get(produces)
                if newest is None or now - newest - 1 >= max_need[id(rule)]:
                    continue  # (every event of the role is too old to need more waits)
                found = looked[slot]
                if found is None:
                    by_key = events.get(produces)
                    found = looked[slot] = [] if by_key is None else \
                        [ev for ev in map(by_key.get, keys) if ev is not None]
            for ev in found:
                need = need_of(rule, ev, prep, rng)
                have = now - ev.clock - 1
                if need - have > worst[0]:
                    worst = (need - have, rule, ev, have)
        member = prep.member
        if worst[0] == 0 and member is not None and st.clauses:
            # (a nop for a wait-state rule would end the clause as well)
            clause = st.clauses.get(member.kind)
            hit = None if clause is None else \
                clause.hazard(member.defs, member.uses, member.rules)
            if hit is not None:
                worst = (1, hit[0], hit[1], 0)  # type: ignore[assignment]
        return worst

    @staticmethod
    def _need(rule: HazardRule, ev: Event, prep: Prepared, rng: tuple[int, int]) -> int:
        pc = ev.facts.classes
        if rule.producer not in pc or pc & set(rule.producer_not):
            return 0
        if rule.same_opcode is not None and \
                (ev.facts.mnemonic == prep.facts.mnemonic) != rule.same_opcode:
            return 0
        if rule.overlap != "any":
            exact = ev.rng == rng
            if (rule.overlap == "exact") != exact:
                return 0
        return rule.waits_for(ev.facts.passes)

    def check(self, st: HazardState, prep: Prepared, info: OpInfo, g: Group,
              kernel: str) -> None:
        """Raise SanitizerError if `info` comes too soon after a producer (or may not join
        the soft clause it would be issued in)."""
        if not prep.checks and (prep.member is None or not st.clauses):
            return
        miss, rule, ev, have = self.missing(st, prep)
        if miss <= 0 or rule is None or ev is None:
            return
        nop = nop_text(miss)
        wave = int(g.waves[0])
        wg = tuple(int(x) for x in g.ctx.wg_ids[wave])
        if rule.clause:
            what = (f"`{info.text}` at pc 0x{info.address:x} joins a soft clause with "
                    f"`{ev.info.text}` at pc 0x{ev.info.address:x}")
        else:
            what = (f"`{info.text}` at pc 0x{info.address:x} comes {have} wait states after "
                    f"`{ev.info.text}` at pc 0x{ev.info.address:x}, but needs {have + miss}")
        raise SanitizerError(
            f"{what} ({rule.name}: {rule.doc}) - insert {nop} before pc 0x{info.address:x}",
            needed=nop, kernel=kernel, pc=info.address, inst=info.text, workgroup=wg,
            wave=int(g.ctx.wave_in_wg[wave]),
            kind="soft_clause" if rule.clause else "wait_states", rule=rule.name,
            source=rule_source(rule))

    @staticmethod
    def records_nothing(prep: Prepared) -> bool:
        """True if `record` only advances the clock (and ends any soft clause) for it."""
        return not prep.records and not prep.class_records and prep.member is None

    @staticmethod
    def advance(st: HazardState, prep: Prepared) -> None:
        """`record` of an instruction that `records_nothing`."""
        if st.clauses:
            st.clauses.clear()  # any other instruction ends the clauses
        st.clock += prep.facts.wait_states
        if st.clock - st.pruned > 256:
            st.prune()

    def record(self, st: HazardState, prep: Prepared, info: OpInfo) -> None:
        """Note this instruction as a producer, then advance the clock."""
        now = st.clock
        for role, keys, rng in prep.records:
            st.role_clock[role] = now
            ev = Event(now, prep.facts, role, rng, info)
            by_key = st.events.get(role)
            if by_key is None:
                st.events[role] = dict.fromkeys(keys, ev)
            else:
                by_key.update(dict.fromkeys(keys, ev))
        for c in prep.class_records:
            st.last_class[c] = Event(now, prep.facts, "none", (0, 0), info)
        member = prep.member
        clauses = st.clauses
        if member is not None:
            join_clause(clauses, member.kind, member.defs, member.uses,
                        Event(now, prep.facts, "clause", (0, 0), info))
        elif clauses:
            clauses.clear()  # any other instruction ends the clauses
        st.clock = now + prep.facts.wait_states
        if st.clock - st.pruned > 256:
            st.prune()


def nop_text(states: int) -> str:
    """The s_nop instruction(s) that provide `states` wait states (s_nop N gives N + 1)."""
    full, rest = divmod(states, 16)
    parts = ["s_nop 15"] * full + ([f"s_nop {rest - 1}"] if rest else [])
    return "; ".join(parts)


def required_wait_states(program, target: str) -> list[tuple[int, int, str]]:
    """Static analysis of a straight-line program (decoded instructions, in order): for each
    instruction that comes too soon after a producer, (index, missing wait states, rule
    name). Later instructions are analysed as if the missing s_nops had been inserted, so
    the result is what a nop-insertion pass must add."""
    checker = HazardChecker(target)
    st = HazardState()
    out = []
    for i, info in enumerate(make_infos(program, target)):
        prep = checker.prepare(info)
        miss, rule, _, _ = checker.missing(st, prep)
        if miss > 0 and rule is not None:
            out.append((i, miss, rule.name))
            st.clock += miss
            st.clauses.clear()  # the s_nops end every soft clause
        checker.record(st, prep, info)
    return out


_unused = (KEY_AGPR,)
