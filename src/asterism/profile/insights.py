"""What a trace report says to do: a one-line verdict, occupancy and its limiter, and
optimization candidates ranked by the cycles they could recover.

Candidates come from :data:`RULES`, a table of :class:`Rule` objects. A rule reads the
analysis (:class:`~asterism.profile.report.Report`), the occupancy
(:class:`OccupancyInfo`) and the counters of the kernel's dispatches, and yields
:class:`Candidate` s, each with its evidence (lines, cycles, share) and a concrete
suggestion. "Recoverable cycles" is what the rule's fix could remove at best, summed over the
traced waves like every figure of the report:

- a stall rule (waits, barriers, MFMA dependencies, pipeline back-pressure) can recover the
  stall cycles of the instructions it names;
- an occupancy rule assumes one more resident wave per SIMD issues while the others stall:
  at most ``min(stall, issue / n)`` cycles with ``n`` waves per SIMD now;
- the idle rule can recover the idle gaps between instructions it names;
- a counter rule has no cycle estimate (ranked after the others).

A rule fires only when its share of the stall cycles reaches ``min_share`` percent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from asterism.profile.att import Trace
from asterism.profile.counters import CounterData, Dispatch, counter_value
from asterism.profile.escape import md_code
from asterism.profile.report import InstStats, Report, WaitLinkStats

# ---------------------------------------------------------------------------- occupancy


@dataclass
class OccupancyInfo:
    """Resident waves per SIMD: what the trace shows, and what the resources allow."""

    observed_per_simd: int | None  # most waves seen at once on one SIMD of a traced CU
    target: str | None = None
    vgprs: int | None = None
    agprs: int = 0
    sgprs: int = 0
    lds_bytes: int = 0
    waves_per_workgroup: int | None = None
    workgroup_source: str = ""  # where waves_per_workgroup came from
    resource_source: str = ""  # where the register and LDS figures came from
    theoretical: int | None = None
    limited_by: tuple[str, ...] = ()
    limits: dict[str, int] = field(default_factory=dict)
    max_waves_per_simd: int | None = None

    def vgprs_for(self, waves: int) -> int | None:
        """The most unified VGPRs per lane that still allow `waves` waves per SIMD."""
        if self.target is None:
            return None
        from asterism.target import get_target
        from asterism.target.occupancy import vgprs_for_waves

        return vgprs_for_waves(get_target(self.target), waves)

    def lds_for(self, workgroups: int) -> int | None:
        """The most LDS bytes per workgroup that still allow `workgroups` per CU."""
        if self.target is None:
            return None
        from asterism.target import get_target
        from asterism.target.occupancy import lds_for_workgroups

        return lds_for_workgroups(get_target(self.target), workgroups)


def observed_waves_per_simd(trace: Trace) -> int | None:
    """The most waves resident at once on one SIMD (occupancy.json, else the wave files)."""
    events: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    if trace.occupancy is not None and trace.occupancy.events:
        for se, evs in trace.occupancy.events.items():
            for e in evs:
                events.setdefault((se, e.cu, e.simd), []).append(
                    (e.time, 1 if e.start else -1))
    else:
        for w in trace.waves:
            key = (w.se, w.cu, w.simd)
            events.setdefault(key, []).extend([(w.begin, 1), (w.end, -1)])
    best = None
    for evs in events.values():
        level = peak = 0
        for _, delta in sorted(evs, key=lambda e: (e[0], e[1])):  # ends before starts
            level += delta
            peak = max(peak, level)
        best = peak if best is None else max(best, peak)
    return best


def inferred_waves_per_workgroup(trace: Trace, window: int = 64) -> int | None:
    """Waves per workgroup guessed from occupancy.json: waves that start on one CU within
    `window` cycles of each other belong to one workgroup (the dispatcher launches a
    workgroup's waves back to back). The most common group size wins."""
    if trace.occupancy is None:
        return None
    sizes: dict[int, int] = {}
    for evs in trace.occupancy.events.values():
        starts: dict[int, list[int]] = {}
        for e in evs:
            if e.start:
                starts.setdefault(e.cu, []).append(e.time)
        for times in starts.values():
            times.sort()
            first, group = times[0], 0
            for t in times:
                if t - first > window:
                    sizes[group] = sizes.get(group, 0) + 1
                    first, group = t, 0
                group += 1
            sizes[group] = sizes.get(group, 0) + 1
    if not sizes:
        return None
    return max(sizes, key=lambda k: (sizes[k], k))


def occupancy_info(trace: Trace, target: str | None = None, vgprs: int | None = None,
                   agprs: int = 0, sgprs: int = 0, lds_bytes: int = 0,
                   waves_per_workgroup: int | None = None, workgroup_source: str = "",
                   resource_source: str = "") -> OccupancyInfo:
    """Observed occupancy of the trace and, when the kernel's resources are known, the
    occupancy they allow and its limiter (asterism.target.occupancy, LLVM's model)."""
    info = OccupancyInfo(observed_waves_per_simd(trace), target, vgprs, agprs, sgprs,
                         lds_bytes, waves_per_workgroup, workgroup_source, resource_source)
    if info.waves_per_workgroup is None:
        info.waves_per_workgroup = inferred_waves_per_workgroup(trace)
        info.workgroup_source = "inferred from the wave start times in occupancy.json"
    if target is None or vgprs is None:
        return info
    from asterism.errors import AsterismError
    from asterism.target import get_target, occupancy

    try:
        t = get_target(target)
        occ = occupancy(t, vgprs=min(vgprs, t.vgpr.arch), agprs=min(agprs, t.vgpr.acc),
                        sgprs=min(sgprs, t.sgpr.addressable),
                        lds_bytes=min(lds_bytes, t.lds.bytes_per_workgroup),
                        waves_per_workgroup=min(info.waves_per_workgroup or 1,
                                                t.max_waves_per_workgroup))
    except AsterismError:
        return info
    info.theoretical = occ.waves_per_simd
    info.limited_by = occ.limited_by
    info.limits = {"waves": occ.wave_limit, "vgprs": occ.vgpr_limit, "sgprs": occ.sgpr_limit,
                   "lds": occ.lds_limit, "workgroups": occ.workgroup_limit,
                   "workgroups_per_cu": occ.workgroups_per_cu}
    info.max_waves_per_simd = t.max_waves_per_simd
    return info


# ---------------------------------------------------------------------------- verdict


def verdict(report: Report) -> str:
    """One line: what bounds the kernel, with the biggest stall causes."""
    busy = report.stall_cycles + report.issue_cycles
    if not busy:
        return "no instructions traced"
    ratio = 100.0 * report.stall_cycles / busy
    causes = sorted(((c, v) for c, v in report.stalls.items() if v), key=lambda kv: -kv[1])
    top = ", ".join(f"{100.0 * v / report.stall_cycles:.0f} % {c.removesuffix(' wait')}"
                    for c, v in causes[:3])
    if ratio >= 50.0:
        return f"stall-bound: {ratio:.1f} % of instruction cycles stalled ({top} of the stall)"
    mfma = sum(u.cycles - u.stall for u in report.units if u.unit == "MFMA")
    if report.issue_cycles and 100.0 * mfma / report.issue_cycles >= 40.0:
        return (f"compute-bound: MFMA issues {100.0 * mfma / report.issue_cycles:.0f} % of the "
                f"issue cycles; {ratio:.1f} % stalled ({top} of the stall)")
    return f"issue-bound: {ratio:.1f} % of instruction cycles stalled ({top} of the stall)"


# ---------------------------------------------------------------------------- candidates


@dataclass
class Candidate:
    """One optimization candidate: what to change, why, and what it could recover."""

    rule: str
    title: str
    recoverable: int | None  # cycles summed over the traced waves; None: no estimate
    share: float | None  # recoverable as % of all stall cycles
    evidence: list[str]
    suggestion: str
    lines: list[int] = field(default_factory=list)
    # From a what-if replay (asterism.profile.whatif): modeled kernel-time cycles saved on
    # the traced CUs and modeled wave-cycles saved; None: not replayed.
    modeled: int | None = None
    modeled_wave_cycles: int | None = None
    modeled_base: int | None = None  # the unchanged replay's modeled span it is against
    measured_text: str = ""  # what the capture shows (measured)
    modeled_text: str = ""  # what the replays say (modeled)


@dataclass
class Context:
    """What the rules read."""

    report: Report
    occupancy: OccupancyInfo | None = None
    dispatches: list[Dispatch] = field(default_factory=list)

    def share(self, cycles: int) -> float | None:
        """Percent of all stall cycles."""
        total = self.report.stall_cycles
        return 100.0 * cycles / total if total else None


@dataclass(frozen=True)
class Rule:
    """A candidate rule: `find` yields candidates from a Context (see the module doc)."""

    name: str
    title: str
    min_share: float  # % of all stall cycles a finding must reach
    find: Callable[[Context, Rule], Iterator[Candidate]]
    suggestion: str


def _where(ctx: Context, row: InstStats) -> str:
    # Evidence is Markdown (REPORT.md): text from the capture goes in escaped.
    src = f" ({md_code(row.source.split(';')[0].strip())}"
    src = src + (f": {md_code(row.source_text)})" if row.source_text else ")") \
        if row.source else ""
    return f"line {row.line}, PC 0x{row.vaddr:x}: {md_code(row.isa)}{src}"


def _row(ctx: Context, line: int) -> InstStats:
    return next(r for r in ctx.report.listing if r.line == line)


def _producers(link: WaitLinkStats, limit: int = 3) -> str:
    shown = [f"line {p.line} {md_code(p.isa)}" for p in link.producers[:limit]]
    more = len(link.producers) - limit
    return "; ".join(shown) + (f" and {more} more" if more > 0 else "")


def _wait_rule(counter: str, cause: str) -> Callable[[Context, Rule], Iterator[Candidate]]:
    def find(ctx: Context, rule: Rule) -> Iterator[Candidate]:
        for row in ctx.report.listing:
            cycles = row.causes.get(cause, 0)
            share = ctx.share(cycles)
            if not cycles or share is None or share < rule.min_share:
                continue
            links = [w for w in ctx.report.waits_of(row.line) if w.counter == counter]
            kinds = {p.kind for w in links for p in w.producers}
            evidence = [f"{_where(ctx, row)}: {cycles} stall cycles, {share:.1f} % of all "
                        f"stall, over {row.hits} executions"]
            evidence += [f"waited on ({w.counter}): {_producers(w)}" for w in links]
            yield Candidate(rule.name, rule.title, cycles, share, evidence,
                            _wait_suggestion(counter, kinds, links, rule.suggestion),
                            [row.line] + [p.line for w in links for p in w.producers])
    return find


def _wait_suggestion(counter: str, kinds: set[str], links: list[WaitLinkStats],
                     default: str) -> str:
    dma = any(p.isa.rstrip().endswith(" lds") or " lds " in p.isa
              for w in links for p in w.producers)
    if counter == "vmcnt" and dma:
        return ("the wait drains `buffer_load ... lds` (global -> LDS DMA) issued for this "
                "tile: issue the next tile's DMA earlier (one more LDS stage, deepen the "
                "prefetch) so it lands while the current tile is computed")
    if counter == "lgkmcnt" and kinds == {"SMEM"}:
        return ("the wait drains scalar loads (kernel arguments, descriptors): issue the "
                "s_load_* earlier and put independent work before the wait, or hoist the "
                "loads out of the loop")
    if counter == "lgkmcnt" and "LDS" in kinds:
        return ("the wait drains LDS reads: issue the ds_read of the next step before the "
                "MFMAs of this one and wait with lgkmcnt(N) > 0 so the MFMAs start on the "
                "first operands")
    return default


def _cause_rule(cause: str) -> Callable[[Context, Rule], Iterator[Candidate]]:
    """Lines whose stall is mostly `cause`, each above the rule's share."""
    def find(ctx: Context, rule: Rule) -> Iterator[Candidate]:
        for row in ctx.report.listing:
            cycles = row.causes.get(cause, 0)
            share = ctx.share(cycles)
            if not cycles or share is None or share < rule.min_share:
                continue
            yield Candidate(rule.name, rule.title, cycles, share,
                            [f"{_where(ctx, row)}: {cycles} stall cycles ({cause}), "
                             f"{share:.1f} % of all stall, over {row.hits} executions"],
                            rule.suggestion, [row.line])
    return find


def _occupancy_gain(ctx: Context) -> int | None:
    occ = ctx.occupancy
    n = (occ.observed_per_simd or occ.theoretical) if occ else None
    if not n:
        return None
    return min(ctx.report.stall_cycles, ctx.report.issue_cycles // n)


def _find_register_limit(ctx: Context, rule: Rule) -> Iterator[Candidate]:
    occ = ctx.occupancy
    if occ is None or occ.theoretical is None or occ.vgprs is None:
        return
    if "vgprs" not in occ.limited_by or occ.theoretical >= (occ.max_waves_per_simd or 8):
        return
    if occ.observed_per_simd is not None and occ.observed_per_simd < occ.theoretical:
        return  # the resources are not what held this run back ("underfilled" says what)
    gain = _occupancy_gain(ctx)
    share = ctx.share(gain or 0)
    if share is None or share < rule.min_share:
        return
    n = occ.theoretical
    need = occ.vgprs_for(n + 1)
    regs = f"{occ.vgprs} VGPRs" + (f" + {occ.agprs} AGPRs" if occ.agprs else "")
    yield Candidate(
        rule.name, rule.title, gain, share,
        [f"{regs} allow {n} wave{'s' if n > 1 else ''} per SIMD (limited by "
         f"{', '.join(occ.limited_by)}; resources from {occ.resource_source})",
         f"observed: {occ.observed_per_simd} wave(s) per SIMD at once in the trace",
         f"{ctx.report.stall_cycles} stall cycles another wave could fill with its "
         f"{ctx.report.issue_cycles} issue cycles"],
        f"bring the register count to at most {need} (unified VGPRs per lane) to allow "
        f"{n + 1} waves per SIMD: fewer live accumulators or tile rows per wave, or keep "
        "MFMA accumulators in AGPRs")


def _find_lds_limit(ctx: Context, rule: Rule) -> Iterator[Candidate]:
    occ = ctx.occupancy
    if occ is None or occ.theoretical is None or "lds" not in occ.limited_by:
        return
    if occ.theoretical >= (occ.max_waves_per_simd or 8) or not occ.lds_bytes:
        return
    if occ.observed_per_simd is not None and occ.observed_per_simd < occ.theoretical:
        return  # the resources are not what held this run back ("underfilled" says what)
    gain = _occupancy_gain(ctx)
    share = ctx.share(gain or 0)
    if share is None or share < rule.min_share:
        return
    wgs = occ.limits.get("workgroups_per_cu", 0)
    need = occ.lds_for(wgs + 1)
    yield Candidate(
        rule.name, rule.title, gain, share,
        [f"{occ.lds_bytes} bytes of LDS per workgroup allow {wgs} workgroup(s) per CU = "
         f"{occ.theoretical} wave(s) per SIMD with {occ.waves_per_workgroup} waves per "
         f"workgroup ({occ.workgroup_source or 'given'})",
         f"observed: {occ.observed_per_simd} wave(s) per SIMD at once in the trace"],
        f"bring LDS to at most {need} bytes per workgroup to fit {wgs + 1} workgroups per CU "
        "(fewer pipeline stages or smaller tiles in LDS)")


def _find_underfilled(ctx: Context, rule: Rule) -> Iterator[Candidate]:
    occ = ctx.occupancy
    if occ is None or occ.theoretical is None or occ.observed_per_simd is None:
        return
    if occ.observed_per_simd >= occ.theoretical:
        return
    gain = _occupancy_gain(ctx)
    share = ctx.share(gain or 0)
    if share is None or share < rule.min_share:
        return
    yield Candidate(
        rule.name, rule.title, gain, share,
        [f"the resources allow {occ.theoretical} waves per SIMD (limited by "
         f"{', '.join(occ.limited_by)}; {occ.waves_per_workgroup} waves per workgroup, "
         f"{occ.workgroup_source or 'given'}) but the trace shows at most "
         f"{occ.observed_per_simd} at once"],
        "the traced CUs hold fewer workgroups at once than fit: the grid has too few "
        "workgroups for the GPU, or they finish at different times and nothing replaces "
        "them (see the kernel's load balance): launch more, smaller workgroups or give each "
        "an even share of the work")


def _find_idle(ctx: Context, rule: Rule) -> Iterator[Candidate]:
    r = ctx.report
    total = r.wave_cycles
    if not total or 100.0 * r.idle_cycles / total < rule.min_share:
        return
    rows = sorted((x for x in r.listing if x.idle), key=lambda x: -x.idle)[:3]
    yield Candidate(
        rule.name, rule.title, r.idle_cycles, ctx.share(r.idle_cycles),
        [f"{r.idle_cycles} idle cycles between instructions, "
         f"{100.0 * r.idle_cycles / total:.1f} % of the wave cycles"]
        + [f"{_where(ctx, x)}: {x.idle} idle cycles before it" for x in rows],
        rule.suggestion, [x.line for x in rows])


def _find_l2_hit(ctx: Context, rule: Rule) -> Iterator[Candidate]:
    for d in ctx.dispatches:
        hit, miss = counter_value(d, "TCC_HIT_sum"), counter_value(d, "TCC_MISS_sum")
        if hit is None or miss is None or hit + miss == 0:
            continue
        rate = 100.0 * hit / (hit + miss)
        if rate < rule.min_share:
            yield Candidate(rule.name, rule.title, None, None,
                            [f"dispatch {d.dispatch_id}: L2 hit rate {rate:.1f} % "
                             f"(TCC_HIT {hit:.0f}, TCC_MISS {miss:.0f})"],
                            rule.suggestion)
        return


# The rules, in no particular order (candidates are ranked by recoverable cycles).
RULES: tuple[Rule, ...] = (
    Rule("vmcnt-wait", "vector-memory wait (s_waitcnt vmcnt)", 2.0,
         _wait_rule("vmcnt", "vmcnt wait"),
         "the wait drains global/buffer loads issued shortly before: issue them earlier "
         "(software-pipeline: load tile k+1 before computing tile k) or wait with vmcnt(N) "
         "> 0 to leave the later loads in flight"),
    Rule("lgkmcnt-wait", "LDS/scalar-memory wait (s_waitcnt lgkmcnt)", 2.0,
         _wait_rule("lgkmcnt", "lgkmcnt wait"),
         "issue the LDS/scalar loads earlier and put independent work before the wait"),
    Rule("barrier", "workgroup barrier", 2.0, _cause_rule("barrier"),
         "waves reach the barrier at different times: balance the work per wave, or "
         "double-buffer the LDS tile (ping-pong) so one barrier covers two steps"),
    Rule("mfma-dependency", "MFMA dependency", 2.0, _cause_rule("MFMA dependency"),
         "the instruction waits for an MFMA result or the busy matrix core: interleave "
         "independent MFMA chains (more accumulators) or move other work between dependent "
         "MFMAs"),
    Rule("vmem-issue", "vector-memory issue back-pressure", 2.0, _cause_rule("VMEM issue"),
         "the memory pipeline did not accept the load/store: use fewer, wider accesses "
         "(dwordx4) and spread them between ALU work"),
    Rule("lds-issue", "LDS issue back-pressure", 2.0, _cause_rule("LDS"),
         "the LDS pipeline is busy (or bank conflicts): use ds_read_b128/ds_write_b128, pad "
         "rows to avoid bank conflicts, spread LDS accesses between ALU work"),
    Rule("occupancy-registers", "occupancy limited by VGPRs", 1.0, _find_register_limit, ""),
    Rule("occupancy-lds", "occupancy limited by LDS", 1.0, _find_lds_limit, ""),
    Rule("underfilled", "fewer waves than the resources allow", 1.0, _find_underfilled, ""),
    Rule("idle", "idle gaps between instructions", 5.0, _find_idle,
         "gaps with no instruction issued: look for instruction-cache misses (a cold "
         "capture, long straight-line code), taken branches and s_sleep/s_nop padding"),
    Rule("l2-hit-rate", "low L2 hit rate", 50.0, _find_l2_hit,
         "most L2 accesses miss: improve reuse (tile order, workgroup swizzle so neighbours "
         "share tiles) or prefetch"),
)


def candidates(ctx: Context, rules: tuple[Rule, ...] = RULES) -> list[Candidate]:
    """Every candidate the rules find, most recoverable cycles first (no estimate last)."""
    out = [c for rule in rules for c in rule.find(ctx, rule)]
    out.sort(key=lambda c: (c.recoverable is None, -(c.recoverable or 0), c.rule,
                            c.lines[:1]))
    return out


def kernel_dispatches(counters: CounterData | None, kernel: str | None) -> list[Dispatch]:
    """The dispatches of `kernel` in the counter data (all if the name matches none)."""
    if counters is None:
        return []
    mine = counters.dispatches_of(kernel) if kernel else []
    return mine or ([] if kernel else list(counters.dispatches))


# ---------------------------------------------------------------------------- modeled


def _phase_of(structure, line: int):
    return next((p for p in structure.phases if p.first <= line <= p.last), None) \
        if structure is not None else None


def _where_in_kernel(structure, line: int) -> str:
    """ "in the DMA phase (lines 944-1002) of the loop at lines 471-1910 (3 to 5 trips)" """
    ph = _phase_of(structure, line)
    if ph is None:
        return ""
    out = f" in the {ph.name} phase (lines {ph.first}-{ph.last})"
    if ph.loop is not None:
        lp = structure.loops[ph.loop]
        its = sorted(set(lp.iterations.values()))
        trips = f"{its[0]}" if len(its) == 1 else f"{its[0]} to {its[-1]}"
        out += f" of the loop at lines {lp.head}-{lp.tail} (head run {trips} times per wave)"
    return out


def _fmt_saving(w) -> str:
    if w.saved <= 0:
        return f"no gain ({w.saved:+,} cycles)"
    return f"{w.saved:,} cycles of kernel time ({w.saved_wave_cycles:,} wave-cycles)"


def modeled_candidates(whatifs, report: Report, structure=None,
                       occupancy: OccupancyInfo | None = None,
                       grid: str | None = None) -> list[Candidate]:
    """Candidates from what-if replays (asterism.profile.whatif), one per line changed, the
    best change first, the others as alternatives; each says what is measured (the capture)
    and what is modeled (the replays)."""
    by_line: dict[int, list] = {}
    for w in whatifs.results:
        by_line.setdefault(w.scenario.lines[0] if w.scenario.lines else -1, []).append(w)
    out = []
    scope = (f"replay of {whatifs.waves} of {whatifs.total_waves} traced waves, "
             f"{whatifs.target} timing model")
    for line, ws in by_line.items():
        ws.sort(key=lambda w: (-w.saved, -w.saved_wave_cycles))
        best = ws[0]
        kind = best.scenario.kind
        if kind == "even-out":
            out.append(_even_out_candidate(best, structure, scope))
            continue
        if kind == "more-waves":
            out.append(_more_waves_candidate(best, structure, occupancy, scope, grid))
            continue
        row = next((r for r in report.listing if r.line == line), None)
        if row is None:
            continue
        share = 100.0 * row.stall / max(report.stall_cycles, 1)
        measured = (f"measured: {md_code(row.isa)} at line {line}"
                    f"{_where_in_kernel(structure, line)}: {row.stall:,} stall cycles over "
                    f"{row.hits} executions ({share:.1f} % of all stall)")
        evidence = [measured]
        for wl in report.waits_of(line):
            kinds = sorted({p.kind for p in wl.producers})
            dma = sum(1 for p in wl.producers if p.isa.rstrip().endswith(" lds"))
            what = (f"{len(wl.producers)} global-to-LDS DMA load(s)" if dma == len(wl.producers)
                    else f"{len(wl.producers)} {'/'.join(kinds)} access(es)")
            src = _where_in_kernel(structure, wl.producers[0].line) if wl.producers else ""
            evidence.append(f"measured: it waits ({wl.counter}) for {what}{src}: "
                            f"{_producers(wl)}")
        modeled = [f"modeled ({scope}): {w.scenario.what}: {_fmt_saving(w)}" for w in ws]
        evidence += modeled
        title = {"wait-drop": "wait", "wait-split": "wait", "load-earlier": "wait",
                 "barrier-remove": "barrier"}[kind]
        title = f"{title} at line {line}: {md_code(row.isa)}"
        out.append(Candidate(
            f"whatif-{kind}", title, best.saved_wave_cycles if best.saved > 0 else None,
            None, evidence, _modeled_suggestion(best, ws, row, report), [line],
            modeled=best.saved, modeled_wave_cycles=best.saved_wave_cycles,
            modeled_base=best.base_span, measured_text=measured, modeled_text=modeled[0]))
    return out


def _modeled_suggestion(best, ws, row: InstStats, report: Report) -> str:
    kinds = {w.scenario.kind: w for w in ws}
    earlier = kinds.get("load-earlier")
    split = kinds.get("wait-split")
    if best.saved <= 0:
        return "the model gains nothing from changing it: leave it"
    if best.scenario.kind == "barrier-remove":
        return ("the barrier costs time: double-buffer the LDS data it protects (ping-pong) "
                "so the waves need not meet here every trip")
    if earlier is not None and earlier.saved >= 0.75 * best.saved:
        return (f"issue its loads earlier (one more buffer stage): "
                f"{earlier.scenario.what} saves {earlier.saved:,} of the "
                f"{kinds.get('wait-drop', best).saved:,} cycles the wait costs")
    if split is not None and split.saved >= 0.75 * best.saved:
        return "split the wait: wait for the first load here and for the rest where they " \
               "are read"
    return ("the loads it waits for arrive late whatever the order around them: start them "
            "a whole trip earlier (deeper prefetch) or hide them under another wave "
            "(more waves per SIMD)")


def _even_out_candidate(w, structure, scope: str) -> Candidate:
    lp = next((lp for lp in structure.loops if lp.head == w.scenario.lines[0]), None) \
        if structure is not None else None
    evidence = []
    if structure is not None:
        evidence.append("measured: " + structure.bound.figures.get("imbalance", ""))
    if lp is not None:
        groups: dict[int, int] = {}
        for n in lp.iterations.values():
            groups[n] = groups.get(n, 0) + 1
        evidence.append("measured: the loop at lines "
                        f"{lp.head}-{lp.tail} runs " + ", ".join(
                            f"{n} times in {k} wave(s)" for n, k in sorted(groups.items())))
    modeled = f"modeled ({scope}, model memory latencies): {w.scenario.what}: {_fmt_saving(w)}"
    evidence.append(modeled)
    return Candidate(
        "whatif-even-out", "load imbalance across waves and CUs",
        w.saved_wave_cycles if w.saved > 0 else None, None, evidence,
        "workgroups do different amounts of work (the loop trip count varies, as causal "
        "masking does to attention): give each workgroup an even share (pair a long and a "
        "short query block per workgroup, or split the long ones' loop across workgroups), "
        "or launch the longest first so the short ones fill in behind",
        list(w.scenario.lines), modeled=w.saved, modeled_wave_cycles=w.saved_wave_cycles,
        modeled_base=w.base_span, measured_text=evidence[0], modeled_text=modeled)


def more_waves_reason(occ: OccupancyInfo | None) -> str | None:
    """Why one more wave per SIMD could be resident (None: it could not, or unknown)."""
    if occ is None or occ.theoretical is None or occ.observed_per_simd is None:
        return None
    n, seen = occ.theoretical, occ.observed_per_simd
    if seen < n:
        return f"the resources allow {n} waves per SIMD, the trace shows {seen}"
    if "vgprs" in occ.limited_by and n < (occ.max_waves_per_simd or 8) and occ.vgprs:
        need = occ.vgprs_for(n + 1)
        return (f"{occ.vgprs} VGPRs allow {n} per SIMD; at most {need} would allow {n + 1}")
    return None


def _more_waves_candidate(w, structure, occ: OccupancyInfo | None, scope: str,
                          grid: str | None = None) -> Candidate:
    evidence = [f"measured: {grid}"] if grid else []
    if occ is not None and occ.theoretical is not None:
        evidence.append(f"measured: at most {occ.observed_per_simd} wave(s) per SIMD at once; "
                        f"the resources allow {occ.theoretical} (limited by "
                        f"{', '.join(occ.limited_by)}; {occ.resource_source})")
    if structure is not None and "occupancy" in structure.bound.figures:
        evidence.append("measured: " + structure.bound.figures["occupancy"])
    modeled = f"modeled ({scope}): {w.scenario.what}: {_fmt_saving(w)}"
    evidence.append(modeled)
    reason = w.scenario.what.split("(", 1)[-1].split(")", 1)[0]
    if occ is not None and occ.theoretical is not None and \
            (occ.observed_per_simd or 0) >= occ.theoretical:
        need = occ.vgprs_for(occ.theoretical + 1)
        tip = (f"bring the kernel to at most {need} VGPRs per lane (now {occ.vgprs}) so "
               f"{occ.theoretical + 1} waves fit per SIMD: fewer live accumulators or tile "
               "rows per wave, accumulators in AGPRs")
    else:
        tip = (f"{reason}: keep more workgroups resident (more, smaller workgroups in the "
               "grid, or even work per workgroup so finished CUs are refilled) so one wave's "
               "waits hide under another's work")
    return Candidate("whatif-more-waves", "one more wave per SIMD (a second workgroup per CU)",
                     w.saved_wave_cycles if w.saved > 0 else None, None, evidence, tip, [],
                     modeled=w.saved, modeled_wave_cycles=w.saved_wave_cycles,
                     modeled_base=w.base_span, measured_text=evidence[0],
                     modeled_text=modeled)


_OCCUPANCY_RULES = {"underfilled", "occupancy-registers", "occupancy-lds"}


def rank_candidates(modeled: list[Candidate], rules: list[Candidate]) -> list[Candidate]:
    """Replayed candidates by modeled kernel time saved, then the rules' candidates on lines
    no replay covered (by their measured recoverable cycles)."""
    covered = {ln for c in modeled for ln in c.lines[:1]}
    rest = [c for c in rules if not (c.lines and c.lines[0] in covered)]
    if any(c.rule == "whatif-more-waves" for c in modeled):  # replayed: the rules' guess goes
        rest = [c for c in rest if c.rule not in _OCCUPANCY_RULES]
    gains = sorted((c for c in modeled if (c.modeled or 0) > 0),
                   key=lambda c: (-(c.modeled or 0), -(c.modeled_wave_cycles or 0), c.lines))
    none = [c for c in modeled if (c.modeled or 0) <= 0]
    return gains + rest + none

