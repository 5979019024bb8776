"""Library kernels side by side: one table of check, modeled speed, stalls, registers and
occupancy for several kernels at one target and shape (`asterism kernels compare`).

    target, entries = plan_compare(["gemm", "gemm@seq"], "gfx942", "128x128x64",
                                   ["gemm@seq.interleave=false"])
    comparison = compare_kernels(entries, target, "128x128x64", timing=True)
    print(format_compare(comparison))

Labels. A compared kernel is named by a *label*: the kernel's name (`gemm`), or
`NAME@ALIAS` (`gemm@seq`, ALIAS of letters, digits, `_` and `-`) to compare the same kernel
again under other parameters. Labels must differ.

Parameters. `--shape` means what it means for each kernel (`Shape`); every compared kernel
must take the same form (MxNxK, BATCHxHEADSxSEQxDIM...). A plain `k=v` goes to every
compared kernel that has a parameter `k` (an error if none has it); `LABEL.k=v` to that
label only (an error if LABEL is not compared or its kernel has no `k`), and wins over a
plain one. A parameter the `--shape` sets cannot be given again with `--param`: the kernels
are compared on one problem.

Figures. Each kernel is built, compiled and run on the emulator with the NumPy check, and
with the timing model when `timing` is set. The speed figures are `KernelRun`'s
(asterism.kernels.run): modeled cycles of CU 0, modeled TFLOPS of the whole grid and the
per-CU rate times the CU count, each beside the data-sheet peak. The others:

* stalls: the stall causes of `asterism trace report` (asterism.profile.report) on the run's
  modeled trace, each as a percentage of the modeled waves' cycles (the sum of their
  lifetimes on CU 0);
* registers, LDS and occupancy: `asterism stats` (asterism.profile.stats) of the code
  object: the descriptor's allocation (arch VGPRs, AGPRs, SGPRs), what occupancy counts;
* ratio to first: the kernel's modeled TFLOPS over the first kernel's (> 1: faster than the
  first; at one shape the flops are the same, so this is the first's cycles over this one's).

A kernel that fails to build or run, or whose check fails, still gets its column (the error,
or the check FAILED); `Comparison.ok` is then False.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from asterism.errors import AsterismError, shown
from asterism.kernels.base import KernelGenerator, KernelParamError, get
from asterism.kernels.run import MODEL_FOOTNOTE, KernelRun, build_code_object, run_case
from asterism.timing.params import params_note

ALIAS_SEPARATOR = "@"
LABEL_SEPARATOR = "."  # LABEL.NAME=VALUE: a parameter of one compared kernel
_ALIAS = re.compile(r"[A-Za-z0-9_-]+")
MODEL_NOTE = ("timing model of CU 0; every CU assumed to run like CU 0, sharing only the L2 "
              "and HBM bandwidth")
STALLS_NOTE = "stall cycles per cause as a percentage of the modeled waves' cycles"


@dataclass(frozen=True)
class CompareEntry:
    """One compared kernel: its label, generator and the text parameters it is built with."""

    label: str
    generator: KernelGenerator
    shape_params: dict[str, str]  # what --shape sets
    params: dict[str, str]  # what --param sets (plain ones it has, and LABEL.k ones)

    def overrides(self) -> dict[str, str]:
        """The parameters to build with: the shape's, then the --param ones."""
        return {**self.shape_params, **self.params}


@dataclass
class CompareRow:
    """What one compared kernel gave: its run (None if it failed before) or its error."""

    entry: CompareEntry
    params: dict[str, Any]  # every parameter, converted
    run: KernelRun | None = None
    error: str | None = None
    stalls: dict[str, float] | None = None  # cause -> % of the modeled waves' cycles
    registers: dict[str, int] | None = None  # vgpr, agpr, sgpr (allocated)
    lds: int | None = None
    waves_per_simd: int | None = None
    limited_by: tuple[str, ...] = ()
    ratio_to_first: float | None = None
    wall_seconds: float = 0.0

    @property
    def label(self) -> str:
        """The label the kernel was named by."""
        return self.entry.label

    @property
    def check_ok(self) -> bool | None:
        """True/False: the check passed or failed; None: the kernel did not get that far."""
        return None if self.run is None else self.run.passed

    @property
    def ok(self) -> bool:
        """True if the kernel ran and its check passed."""
        return self.error is None and bool(self.check_ok)

    @property
    def max_error(self) -> float | None:
        """The largest absolute error over the checked outputs."""
        if self.run is None or not self.run.checks:
            return None
        return max(c.max_abs_error for c in self.run.checks)

    @property
    def tolerance(self) -> tuple[float, float] | None:
        """(atol, rtol) of the check (one per case)."""
        if self.run is None or not self.run.checks:
            return None
        return self.run.checks[0].atol, self.run.checks[0].rtol


@dataclass
class Comparison:
    """The compared kernels at one target and shape, in the order given."""

    target: str
    shape: str | None
    timing: bool
    rows: list[CompareRow] = field(default_factory=list)
    params_file: str | None = None  # the timing model's parameter file (--params)

    @property
    def ok(self) -> bool:
        """True if every kernel ran and passed its check."""
        return all(r.ok for r in self.rows)


# ---------------------------------------------------------------------------- planning


def split_label(label: str) -> tuple[str, str]:
    """`NAME@ALIAS` -> (NAME, ALIAS); a bare `NAME` -> (NAME, "")."""
    name, sep, alias = label.partition(ALIAS_SEPARATOR)
    if sep and not _ALIAS.fullmatch(alias):
        raise KernelParamError(f"kernel label {shown(label)}: expected NAME or NAME@ALIAS "
                               "(ALIAS of letters, digits, _ and -)")
    return name, alias


def _generators(labels: Sequence[str]) -> dict[str, KernelGenerator]:
    """Label -> generator, each label checked and unique."""
    if len(labels) < 2:
        raise KernelParamError("kernels compare needs two or more kernels (NAME or "
                               "NAME@ALIAS); `asterism kernels run` runs one")
    out: dict[str, KernelGenerator] = {}
    for label in labels:
        name, _alias = split_label(label)
        if label in out:
            raise KernelParamError(f"{label} is compared twice: name the second one with an "
                                   f"alias, e.g. {name}{ALIAS_SEPARATOR}2")
        out[label] = get(name)
    return out


def _check_shape_forms(gens: dict[str, KernelGenerator]) -> None:
    """Every compared kernel takes the same --shape form (they solve one problem)."""
    first_label, first = next(iter(gens.items()))
    for label, gen in gens.items():
        if gen.shape.form != first.shape.form:
            forms = [f"{lab} takes --shape {g.shape.form or '(none)'}"
                     for lab, g in ((first_label, first), (label, gen))]
            raise KernelParamError(f"{forms[0]} but {forms[1]}: compare kernels of one "
                                   "shape form")


def route_params(gens: dict[str, KernelGenerator], pairs: Sequence[str]
                 ) -> dict[str, dict[str, str]]:
    """`--param` values -> label -> {name: text}: `k=v` to every kernel that has `k`,
    `LABEL.k=v` to LABEL only (winning over a plain `k`)."""
    from asterism.kernels.run import parse_params

    plain: dict[str, str] = {}
    scoped: dict[str, dict[str, str]] = {label: {} for label in gens}
    for key, value in parse_params(list(pairs)).items():
        label, sep, name = key.rpartition(LABEL_SEPARATOR)
        if not sep:
            if not any(_has_param(g, name) for g in gens.values()):
                raise KernelParamError(f"--param {name}: none of the compared kernels has "
                                       f"this parameter ({_known(gens)})")
            plain[name] = value
            continue
        if label not in gens:
            raise KernelParamError(f"--param {key}: {shown(label)} is not one of the "
                                   f"compared kernels ({', '.join(gens)})")
        if not _has_param(gens[label], name):
            known = ", ".join(p.name for p in gens[label].params)
            raise KernelParamError(f"--param {key}: {gens[label].name} has no parameter "
                                   f"{shown(name)} (known: {known})")
        scoped[label][name] = value
    return {label: {**{k: v for k, v in plain.items() if _has_param(g, k)}, **scoped[label]}
            for label, g in gens.items()}


def _has_param(gen: KernelGenerator, name: str) -> bool:
    return any(p.name == name for p in gen.params)


def _known(gens: dict[str, KernelGenerator]) -> str:
    """Each compared kernel's parameters, for an error message."""
    seen: dict[str, str] = {}
    for gen in gens.values():
        seen.setdefault(gen.name, f"{gen.name}: " + ", ".join(p.name for p in gen.params))
    return "; ".join(seen.values())


def plan_compare(labels: Sequence[str], target: str | None, shape: str | None,
                 params: Sequence[str] = ()) -> tuple[str, list[CompareEntry]]:
    """Check the whole command before anything runs: the labels, the target every kernel
    must support (default: the first kernel's first), the --shape form they share, and
    each parameter's routing and value. Returns (target, entries in the order given)."""
    gens = _generators(labels)
    target = target or next(iter(gens.values())).targets[0]
    for gen in gens.values():
        gen.pick_target(target)
    _check_shape_forms(gens)
    routed = route_params(gens, params)
    entries = []
    for label, gen in gens.items():
        shaped = gen.shape_params(shape) if shape is not None else {}
        for name in routed[label]:
            if name in shaped:
                raise KernelParamError(f"{label}: parameter {name} is set by --shape "
                                       f"{shape} ({gen.shape.describe()}); the compared "
                                       "kernels share one shape")
        entry = CompareEntry(label, gen, shaped, routed[label])
        try:
            gen.resolve(entry.overrides())
        except KernelParamError as err:
            raise KernelParamError(f"{label}: {err.message}") from None
        entries.append(entry)
    return target, entries


# ---------------------------------------------------------------------------- running


def stall_split(timing: Any) -> dict[str, float]:
    """Stall cycles per cause of a TimingResult's modeled waves (profile.report's causes)
    as a percentage of the waves' cycles (the sum of their lifetimes)."""
    from asterism.profile.att_export import to_trace
    from asterism.profile.report import analyze

    report = analyze(to_trace(timing))
    total = report.wave_cycles
    return {cause: (100.0 * cycles / total if total else 0.0)
            for cause, cycles in report.stalls.items()}


def _code_stats(row: CompareRow, code: bytes, kernel: str) -> None:
    """Registers, LDS and occupancy of the kernel's code object (asterism stats)."""
    from asterism.profile.stats import code_object_stats

    stats = next(s for s in code_object_stats(code) if s.name == kernel)
    row.registers = {"vgpr": stats.vgprs, "agpr": stats.agprs, "sgpr": stats.sgprs}
    row.lds = stats.lds_bytes
    row.waves_per_simd = stats.waves_per_simd
    row.limited_by = tuple(stats.occupancy_limited_by)


def _run_entry(entry: CompareEntry, target: str, timing: Any,
               max_instructions: int | None, progress: Any, sanitizer: bool | str | None = None,
               on_violation: Any = None) -> CompareRow:
    """Build, compile, describe and run one kernel; an AsterismError becomes the row's."""
    row = CompareRow(entry, entry.generator.resolve(entry.overrides()))
    stage = "build"
    try:
        case = entry.generator.build(target, entry.overrides())
        row.params = dict(case.params)
        stage = "compile"
        code = build_code_object(case)
        _code_stats(row, code, case.kernel)
        stage = "run"
        row.run = run_case(case, backend="emu", check=True, timing=timing, code=code,
                           max_instructions=max_instructions, progress=progress,
                           sanitizer=sanitizer, on_violation=on_violation)
        if timing and row.run.timing_result is not None:
            row.stalls = stall_split(row.run.timing_result)
            row.run.timing_result = None  # its records are no longer needed
    except AsterismError as err:
        row.error = f"{stage} failed: {err}"
    return row


def _ratios(rows: list[CompareRow]) -> None:
    """Each row's modeled TFLOPS over the first row's (None where either has none)."""
    first = rows[0].run.tflops if rows and rows[0].run else None
    for row in rows:
        tflops = row.run.tflops if row.run else None
        if first and tflops is not None:
            row.ratio_to_first = tflops / first


def compare_kernels(entries: Sequence[CompareEntry], target: str, shape: str | None,
                    timing: Any = False, *, max_instructions: int | None = None,
                    progress: Callable[[], Any] | None = None,
                    log: Callable[[str], None] | None = None,
                    sanitizer: bool | str | None = None,
                    on_violation: Any = None) -> Comparison:
    """Run each entry (see the module docstring) and collect one row per kernel, in order.
    `progress` makes each run's emulator progress (emu.progress.RunProgress); `log` gets one
    line as each kernel starts and one as it ends, with its wall time; `sanitizer` and
    `on_violation` go to each run (see run.run_case)."""
    result = Comparison(target, shape, bool(timing))
    n = len(entries)
    for i, entry in enumerate(entries, 1):
        what = "check and timing model" if timing else "check"
        if log:
            log(f"[{i}/{n}] {entry.label}: building and running ({what})...")
        start = time.perf_counter()
        row = _run_entry(entry, target, timing, max_instructions,
                         progress() if progress else None, sanitizer, on_violation)
        row.wall_seconds = time.perf_counter() - start
        if log:
            log(f"[{i}/{n}] {entry.label}: {_verdict(row)} in {row.wall_seconds:.2f} s")
        result.rows.append(row)
        if row.run is not None and row.run.params_file:
            result.params_file = row.run.params_file
    _ratios(result.rows)
    return result


def _verdict(row: CompareRow) -> str:
    if row.error is not None:
        return row.error.partition(":")[0]
    extra = f", {row.run.cycles} modeled cycles" if row.run and row.run.modeled else ""
    return ("check ok" if row.check_ok else "check FAILED") + extra


# ---------------------------------------------------------------------------- reports


def _percent(value: float | None, peak: float | None) -> float | None:
    return None if value is None or not peak else 100.0 * value / peak


def _row_json(row: CompareRow) -> dict[str, Any]:
    run = row.run
    tol = row.tolerance
    modeled = run is not None and run.modeled
    return {
        "name": row.label, "kernel": row.entry.generator.name, "params": row.params,
        "check_ok": row.check_ok, "max_error": row.max_error,
        "tolerance": {"atol": tol[0], "rtol": tol[1]} if tol else None,
        "modeled_cycles": run.cycles if modeled else None,
        "modeled_tflops": run.tflops if modeled else None,
        "per_cu_tflops": run.per_cu_tflops if modeled else None,
        "per_cu_tflops_load_clock": run.per_cu_tflops_load_clock if modeled else None,
        "peak_tflops": run.peak_tflops if modeled else None,
        "percent_of_peak": _percent(run.tflops, run.peak_tflops) if modeled else None,
        "per_cu_percent_of_peak":
            _percent(run.per_cu_tflops, run.peak_tflops) if modeled else None,
        "stalls": row.stalls,
        "registers": row.registers, "lds": row.lds,
        "occupancy": None if row.waves_per_simd is None else
        {"waves_per_simd": row.waves_per_simd, "limited_by": list(row.limited_by)},
        "ratio_to_first": row.ratio_to_first,
        "error": row.error,
        "wall_seconds": round(row.wall_seconds, 4),
    }


def compare_report(comparison: Comparison) -> dict[str, Any]:
    """The comparison as a JSON-ready dict (for `--json`): the kernels in the order given."""
    out: dict[str, Any] = {
        "kernels": [_row_json(r) for r in comparison.rows],
        "target": comparison.target, "shape": comparison.shape,
        "modeled": True, "timing": comparison.timing, "ok": comparison.ok,
        "params_file": comparison.params_file,
    }
    device = next((r.run for r in comparison.rows if r.run and r.run.modeled), None)
    if device is not None:
        out.update(product=device.product, compute_units=device.compute_units,
                   clock_mhz=device.clock_mhz, load_clock_mhz=device.load_clock_mhz,
                   load_clock_source=device.load_clock_source,
                   note=f"{MODEL_NOTE}; not a measurement",
                   stalls_note=STALLS_NOTE)
    return out


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _tflops_cell(value: float | None, peak: float | None) -> str:
    if value is None:
        return "-"
    share = _percent(value, peak)
    return f"{value:.1f}" + ("" if share is None else f" ({share:.1f}%)")


def device_load_clock(rows: list[CompareRow]) -> str:
    """The load clock (MHz) of the first modeled run, as the table's row name shows it."""
    run = next(r.run for r in rows if r.run and r.run.load_clock_mhz)
    return f"{run.load_clock_mhz:.0f}"


def _table_rows(comparison: Comparison) -> list[tuple[str, list[str]]]:
    """(row name, one cell per kernel) of the text table."""
    rows = comparison.rows

    def cells(get: Callable[[CompareRow], str]) -> list[str]:
        return [get(r) for r in rows]

    def modeled(get: Callable[[KernelRun], str]) -> list[str]:
        return [get(r.run) if r.run and r.run.modeled else "-" for r in rows]

    table: list[tuple[str, list[str]]] = [
        ("parameters set", cells(lambda r: " ".join(f"{k}={v}" for k, v in
                                                    r.entry.params.items()) or "-")),
        ("check", cells(lambda r: "error" if r.error and r.run is None else
                        "ok" if r.check_ok else "FAILED")),
        ("max abs error", cells(lambda r: _fmt(r.max_error, ".3g"))),
        ("tolerance atol + rtol x |ref|",
         cells(lambda r: "-" if r.tolerance is None else
               f"{r.tolerance[0]:.3g} + {r.tolerance[1]:.3g}")),
    ]
    if comparison.timing:
        table += [
            ("modeled cycles (CU 0)", modeled(lambda u: str(u.cycles))),
            ("modeled TFLOPS, whole grid", modeled(lambda u: _tflops_cell(u.tflops,
                                                                          u.peak_tflops))),
            ("modeled TFLOPS, per CU x CUs",
             modeled(lambda u: _tflops_cell(u.per_cu_tflops, u.peak_tflops))),
        ]
        if any(r.run and r.run.per_cu_tflops_load_clock is not None for r in rows):
            table.append((f"  at {device_load_clock(rows)} MHz under load",
                          modeled(lambda u: _fmt(u.per_cu_tflops_load_clock, ".1f"))))
        table += [
            ("peak TFLOPS (data sheet, dense)", modeled(lambda u: f"{u.peak_tflops}")),
            ("modeled ratio to first", cells(lambda r: _fmt(r.ratio_to_first, ".3f"))),
            ("modeled stalls, % of wave cycles:", ["" for _ in rows]),
        ]
        causes = next((list(r.stalls) for r in rows if r.stalls), [])
        for cause in causes:
            table.append((f"  {cause}", cells(
                lambda r, c=cause: "-" if not r.stalls else f"{r.stalls[c]:.1f}")))
        table.append(("  all stalls", cells(
            lambda r: "-" if not r.stalls else f"{sum(r.stalls.values()):.1f}")))
    table += [
        ("registers VGPR/AGPR/SGPR", cells(
            lambda r: "-" if r.registers is None else
            f"{r.registers['vgpr']}/{r.registers['agpr']}/{r.registers['sgpr']}")),
        ("LDS bytes", cells(lambda r: "-" if r.lds is None else str(r.lds))),
        ("occupancy waves/SIMD (limit)", cells(
            lambda r: "-" if r.waves_per_simd is None else
            f"{r.waves_per_simd} ({', '.join(r.limited_by)})")),
    ]
    return table


def format_compare(comparison: Comparison) -> str:
    """The comparison as text: a header, then one column per kernel (the order given)."""
    shape = f", --shape {comparison.shape}" if comparison.shape else ""
    lines = [f"kernels compare on {comparison.target}{shape} (asterism emulator)"]
    device = next((r.run for r in comparison.rows if r.run and r.run.modeled), None)
    if device is not None:
        lines.append(f"modeled: {device.product}, {device.compute_units} CUs at "
                     f"{device.clock_mhz:.0f} MHz (timing model of CU 0; every CU assumed "
                     "to run like CU 0)")
        if device.load_clock_mhz:
            lines.append(f"  and at {device.load_clock_mhz:.0f} MHz, its clock under dense "
                         f"MFMA load ({device.load_clock_source})")
        if comparison.params_file:
            lines.append(params_note(comparison.params_file))
    elif not comparison.timing:
        lines.append("check, registers and occupancy only (--timing adds the modeled figures)")
    table = _table_rows(comparison)
    head = max(len(name) for name, _ in table)
    widths = [max(len(r.label), *(len(cells[i]) for _, cells in table))
              for i, r in enumerate(comparison.rows)]
    lines.append("")
    lines.append(" " * head + "".join(f"  {r.label:>{w}}"
                                      for r, w in zip(comparison.rows, widths, strict=True)))
    for name, cells in table:
        lines.append(f"{name:<{head}}" + "".join(
            f"  {c:>{w}}" for c, w in zip(cells, widths, strict=True)).rstrip())
    if device is not None:
        lines.append(MODEL_FOOTNOTE)
    errors = [r for r in comparison.rows if r.error]
    if errors:
        lines.append("")
        lines += [f"{r.label}: {r.error}" for r in errors]
    return "\n".join(lines) + "\n"


__all__ = ["CompareEntry", "CompareRow", "Comparison", "compare_kernels", "compare_report",
           "format_compare", "plan_compare", "route_params", "split_label", "stall_split"]
