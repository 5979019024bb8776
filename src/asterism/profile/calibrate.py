"""Fit the timing model's fittable parameters to captures, and test the fit on captures it
did not see (`asterism trace calibrate [--leave-one-out]`).

What is fitted: only the parameters timing.toml marks "fittable" (physically uncertain
latencies and rates), each only within its bounds there; sourced and measured parameters
never change. The search is a coordinate search: each parameter in turn tries steps of a
quarter of its range, then halves, down to 4 cycles (1 for a range under 8), keeping a value
only when the objective improves, for `rounds` passes (or until a pass changes nothing).

The objective is the error the model is judged by: per capture, the mean of |total cycles
error| and the mean |error| of its waves (both in percent of measured cycles), averaged over
the captures. Both parts are reported, with the largest wave error.

Regularized (MAP) fit, `prior` > 0: a few captures under-determine several parameters (a fit
to one capture pins the ones it barely sees at a bound), so the search minimizes

    objective + prior x sum over fitted parameters of ((value - start) / (high - low))^2

instead: the starting value (timing.toml's sourced figure) is the prior's centre, each
parameter's bound range its width. A parameter moves only as far as the error it removes
pays for: `prior` percentage points of objective per whole bound range, squared. prior = 0
is the plain fit. The penalty is reported beside the objective, which stays the error alone.

`sensitivity` says what the captures can identify: each parameter alone at its lowest and
highest bound, every other at its starting value, and each capture's total error there.

Figures on a capture the parameters were fitted to are *fitted* (in-sample); figures on a
capture they were not fitted to (timing.toml's own values, or a leave-one-out fit on the
other captures) are *predicted*. Every summary says which.

    fit = calibrate(["cap_a", "cap_b"], target="gfx950")
    Path("fit.toml").write_text(fit.to_toml())        # read with --params fit.toml
    loo = leave_one_out(["cap_a", "cap_b"])           # fit on N-1, predict the held-out one
    print(loo.summary())
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asterism.profile.att import Trace, read_att
from asterism.profile.replay import (
    MEMORY_MODES,
    ReplayError,
    ReplayResult,
    replay_cycles,
)
from asterism.timing.params import replay_off

OBJECTIVE = ("mean over captures of (|total cycles error| + mean |per-wave error|) / 2, in "
             "percent of measured cycles")


@dataclass(frozen=True)
class CaptureError:
    """One capture's modeled-vs-measured errors under one set of parameters (percent)."""

    capture: str
    total: float  # total cycles of the traced waves
    waves: tuple[float, ...]  # each traced wave's cycles

    @property
    def mean_wave(self) -> float:
        """Mean |per-wave error|."""
        return sum(abs(w) for w in self.waves) / max(1, len(self.waves))

    @property
    def max_wave(self) -> float:
        """Largest |per-wave error|."""
        return max((abs(w) for w in self.waves), default=0.0)

    @property
    def score(self) -> float:
        """This capture's share of the objective: (|total| + mean |wave|) / 2."""
        return (abs(self.total) + self.mean_wave) / 2

    def to_json(self) -> dict[str, Any]:
        """The errors as plain data."""
        return {"capture": self.capture, "total_error_percent": round(self.total, 2),
                "mean_abs_wave_error_percent": round(self.mean_wave, 2),
                "max_abs_wave_error_percent": round(self.max_wave, 2),
                "wave_errors_percent": [round(w, 2) for w in self.waves]}

    def cells(self) -> str:
        """`total, waves mean/max` for a text table."""
        return f"{self.total:+6.1f} %  {self.mean_wave:4.1f} / {self.max_wave:4.1f} %"


def capture_error(result: ReplayResult) -> CaptureError:
    """The errors of one replay."""
    return CaptureError(Path(result.capture).name, result.cycles_error,
                        tuple(w.error for w in result.waves))


def cycles_error(name: str, cycles: Sequence[tuple[int, int]]) -> CaptureError:
    """The errors of (measured, modeled) cycles per wave (as ReplayResult computes them)."""
    measured = sum(m for m, _o in cycles)
    modeled = sum(o for _m, o in cycles)
    return CaptureError(name, 100.0 * (modeled - measured) / max(measured, 1),
                        tuple(100.0 * (o - m) / max(m, 1) for m, o in cycles))


def objective(errors: Sequence[CaptureError]) -> float:
    """The fit's objective (see OBJECTIVE)."""
    return sum(e.score for e in errors) / max(1, len(errors))


def prior_penalty(values: dict[str, int], start: dict[str, int],
                  bounds: dict[str, tuple[int, int]], prior: float) -> float:
    """The MAP fit's penalty: prior x sum of ((value - start) / (high - low))^2 over the
    parameters of `values` (a parameter whose range is one value adds nothing)."""
    if not prior:
        return 0.0
    total = 0.0
    for name, value in values.items():
        low, high = bounds[name]
        if high > low:
            total += ((value - start[name]) / (high - low)) ** 2
    return prior * total


@dataclass
class Fit:
    """Fitted values of the fittable parameters on some captures, with the errors before
    (the starting values) and after (fitted, in-sample)."""

    target: str
    captures: list[str]
    memory: str
    start: str  # where the starting values came from (timing.toml, or a parameter file)
    bounds: dict[str, tuple[int, int]]  # fitted parameter -> (lowest, highest)
    before: dict[str, int]
    after: dict[str, int]
    errors_before: list[CaptureError]
    errors_after: list[CaptureError]
    evaluations: int
    model: Any = field(repr=False, default=None)  # the fitted target.timing.TimingModel
    prior: float = 0.0  # the MAP fit's weight (0: plain fit; see the module docstring)
    off: tuple[str, ...] = ()  # replay mechanisms left out while fitting (--timing-off)

    @property
    def penalty(self) -> float:
        """The prior's penalty at the fitted values (0 for a plain fit)."""
        return prior_penalty(self.after, self.before, self.bounds, self.prior)

    def method(self) -> str:
        """How the values were fitted, in words."""
        if not self.prior:
            return "plain fit (no prior)"
        return (f"regularized (MAP) fit: objective + {self.prior:g} x sum(((value - start) / "
                "bound range)^2)")

    @property
    def objective_before(self) -> float:
        """The objective at the starting values."""
        return objective(self.errors_before)

    @property
    def objective_after(self) -> float:
        """The objective at the fitted values."""
        return objective(self.errors_after)

    def to_toml(self) -> str:
        """The fitted values as a parameter file (`--params FILE`), its header naming the
        captures, the objective and each capture's errors before and after."""
        out = [f"# Timing-model parameters for {self.target} fitted by `asterism trace "
               "calibrate` on", f"# {len(self.captures)} capture(s): "
               f"{', '.join(self.captures)}",
               f"# (replay, memory: {self.memory}; starting values: {self.start}"
               + (f"; mechanisms left out: {', '.join(self.off)}" if self.off else "")
               + ").",
               "# Only parameters timing.toml marks \"fittable\", each within its bounds.",
               f"# Method: {self.method()}.",
               f"# Objective ({OBJECTIVE}):",
               f"#   {self.objective_before:.2f} -> {self.objective_after:.2f}"
               + (f" (prior penalty {self.penalty:.2f})" if self.prior else ""),
               "# Errors on these captures, before -> after (after: fitted to them, not a "
               "prediction):"]
        for b, a in zip(self.errors_before, self.errors_after, strict=True):
            out.append(f"#   {b.capture}: total {b.total:+.1f} % -> {a.total:+.1f} %, waves "
                       f"mean |error| {b.mean_wave:.1f} % -> {a.mean_wave:.1f} %, max "
                       f"{b.max_wave:.1f} % -> {a.max_wave:.1f} %")
        out += ["# Read it with --params FILE: asterism run --timing, kernels run|compare "
                "--timing,", "# sweep (modeled), trace replay, trace calibrate.",
                "schema = 1", ""]
        top = [n for n in self.after if "." not in n]
        if top:
            out.append(f"[{self.target}]")
            out += [self._line(n, n) for n in top]
            out.append("")
        tables: dict[str, list[str]] = {}
        for name in self.after:
            table, _, key = name.rpartition(".")
            if table:
                tables.setdefault(table, []).append(self._line(name, key))
        for table, lines in tables.items():
            out.append(f"[{self.target}.{table}]")
            out += lines
            out.append("")
        return "\n".join(out)

    def _line(self, name: str, key: str) -> str:
        low, high = self.bounds[name]
        was = self.before[name]
        note = "unchanged" if was == self.after[name] else f"was {was}"
        return f"{key} = {self.after[name]}  # fitted in [{low}, {high}]; {note}"

    def to_json(self) -> dict[str, Any]:
        """The fit as plain data."""
        return {"target": self.target, "captures": self.captures, "memory": self.memory,
                "start": self.start, "evaluations": self.evaluations, "objective": OBJECTIVE,
                "prior": self.prior, "method": self.method(),
                "objective_before": round(self.objective_before, 3),
                "objective_after": round(self.objective_after, 3),
                "prior_penalty_after": round(self.penalty, 3),
                "parameters": {n: {"before": self.before[n], "after": v,
                                   "bounds": list(self.bounds[n])}
                               for n, v in self.after.items()},
                "errors_before": [e.to_json() for e in self.errors_before],
                "errors_after_fitted": [e.to_json() for e in self.errors_after]}

    def summary(self) -> str:
        """The fitted values and each capture's errors before and after."""
        out = [f"calibration of the timing model for {self.target} on "
               f"{len(self.captures)} capture(s), {self.evaluations} replays (memory: "
               f"{self.memory}; starting values: {self.start})",
               f"  method: {self.method()}",
               f"  objective ({OBJECTIVE}): {self.objective_before:.2f} -> "
               f"{self.objective_after:.2f}"
               + (f" (prior penalty {self.penalty:.2f})" if self.prior else ""),
               "  parameter (fittable)        bounds        before    after"]
        for n, v in self.after.items():
            low, high = self.bounds[n]
            out.append(f"  {n:<27s} [{low:4d}, {high:4d}] {self.before[n]:8d} {v:8d}")
        out.append("  sourced and measured parameters are not fitted (timing.toml)")
        out.append("  capture                      total error before -> after   waves mean/max "
                   "|error| before -> after")
        for b, a in zip(self.errors_before, self.errors_after, strict=True):
            out.append(f"  {b.capture:<28s} {b.total:+6.1f} % -> {a.total:+6.1f} %   "
                       f"{b.mean_wave:4.1f}/{b.max_wave:4.1f} % -> {a.mean_wave:4.1f}/"
                       f"{a.max_wave:4.1f} %")
        out.append("  (after: fitted to these captures, in-sample; not a prediction)")
        return "\n".join(out) + "\n"


class _Evaluator:
    """Replays the captures under candidate parameter values and scores them."""

    def __init__(self, traces: Sequence[tuple[Trace, str]], target: str, memory: str,
                 off: frozenset[str] = frozenset()):
        self.traces = traces
        self.target = target
        self.memory = memory
        self.off = off
        self.count = 0

    def __call__(self, tm: Any) -> list[CaptureError]:
        self.count += len(self.traces)
        return [cycles_error(n, replay_cycles(t, self.target, self.memory, tm, off=self.off))
                for t, n in self.traces]


def _granularity(low: int, high: int) -> int:
    return 4 if high - low >= 8 else 1


def _snap(value: float, low: int, high: int, grain: int) -> int:
    """`value` rounded to the grain and kept within [low, high]."""
    snapped = int(round(value / grain)) * grain
    return min(high, max(low, snapped))


def fittable_names(tm: Any, names: Sequence[str] | None = None) -> list[str]:
    """The parameters to fit: `names` (each must be fittable), or every fittable one."""
    if names is None:
        return tm.fittable()
    for name in names:
        bound = tm.bounds.get(name)
        if bound is None:
            raise ReplayError(f"unknown timing parameter '{name}' (fittable: "
                              f"{', '.join(tm.fittable())})")
        if bound.kind != "fittable":
            raise ReplayError(f"{name} is {bound.kind} in timing.toml: it is never fitted "
                              f"(fittable: {', '.join(tm.fittable())})")
    return list(dict.fromkeys(names))


def fit_parameters(traces: Sequence[tuple[Trace, str]], tm: Any, memory: str = "model",
                   rounds: int = 3, start: str = "timing.toml",
                   progress: Callable[[str], None] | None = None,
                   names: Sequence[str] | None = None, prior: float = 0.0,
                   evaluate: Callable[[Any], list[CaptureError]] | None = None,
                   off: frozenset[str] = frozenset()) -> Fit:
    """Fit `tm`'s fittable parameters (or the fittable `names` only) to the traces (see the
    module docstring); `tm`: the starting target.timing.TimingModel (its values are the
    prior's centre when `prior` > 0); `evaluate`: the errors of a candidate model (default:
    replay the traces)."""
    if not traces:
        raise ReplayError("calibration needs at least one capture")
    if memory not in MEMORY_MODES:
        raise ReplayError(f"memory must be one of {', '.join(MEMORY_MODES)}, got {memory!r}")
    if rounds < 1:
        raise ReplayError(f"rounds must be at least 1, got {rounds}")
    if not prior >= 0:
        raise ReplayError(f"the prior's weight must be 0 or more, got {prior}")
    run = evaluate or _Evaluator(traces, tm.target, memory, off)
    names = fittable_names(tm, names)
    bounds = {n: (tm.bounds[n].low, tm.bounds[n].high) for n in names}
    before = {n: tm.value(n) for n in names}

    def score(model: Any, errors: list[CaptureError]) -> tuple[float, float]:
        """(objective + penalty, objective) of a candidate."""
        raw = objective(errors)
        values = {n: model.value(n) for n in names}
        return raw + prior_penalty(values, before, bounds, prior), raw

    evaluations = 0
    errors0 = run(tm)
    evaluations += len(traces)
    best, best_errors = tm, errors0
    best_score, best_raw = score(tm, errors0)
    for rnd in range(rounds):
        changed = False
        for name in names:
            low, high = bounds[name]
            grain = _granularity(low, high)
            step = max(grain, (high - low) // 4)
            while True:
                current = best.value(name)
                scores = {}
                for value in {_snap(current - step, low, high, grain),
                              _snap(current + step, low, high, grain)} - {current}:
                    trial = best.with_values({name: value})
                    errors = run(trial)
                    evaluations += len(traces)
                    scores[value] = (*score(trial, errors), trial, errors)
                if scores:
                    value, (total, raw, trial, errors) = min(
                        scores.items(), key=lambda kv: (kv[1][0], kv[0]))
                    if total < best_score - 1e-9:
                        best, best_score, best_raw, best_errors = trial, total, raw, errors
                        changed = True
                        continue  # the same step again from the new value
                    if all(r == best_raw for _t, r, _m, _e in scores.values()) and \
                            step == max(grain, (high - low) // 4):
                        break  # the replay does not see this parameter
                if step == grain:
                    break
                step = max(grain, step // 2)
            if progress:
                progress(f"round {rnd + 1}/{rounds}: {name} = {best.value(name)} "
                         f"(objective {best_raw:.2f}"
                         + (f", with the prior {best_score:.2f})" if prior else ")"))
        if not changed:
            break
    after = {n: best.value(n) for n in names}
    best = tm.with_values(after, source=f"fit on {len(traces)} capture(s)")  # (bounds checked)
    return Fit(tm.target, [n for _t, n in traces], memory, start, bounds, before, after,
               errors0, best_errors, evaluations, best, prior, tuple(sorted(off)))


@dataclass(frozen=True)
class Sensitivity:
    """One parameter alone at its lowest and highest bound (the others at their starting
    values): each capture's total cycles error there (percent)."""

    name: str
    low: int
    start: int
    high: int
    at_low: tuple[float, ...]
    at_start: tuple[float, ...]
    at_high: tuple[float, ...]

    @property
    def swing(self) -> tuple[float, ...]:
        """Per capture: how far the total error moves across the whole range (points)."""
        return tuple(abs(h - lo) for lo, h in zip(self.at_low, self.at_high, strict=True))


def sensitivity(traces: Sequence[tuple[Trace, str]], tm: Any, memory: str = "model",
                names: Sequence[str] | None = None,
                evaluate: Callable[[Any], list[CaptureError]] | None = None,
                off: frozenset[str] = frozenset()) -> list[Sensitivity]:
    """What the captures can identify: each fittable parameter (or each of `names`) alone
    at its bounds, each capture's total error (see the module docstring)."""
    run = evaluate or _Evaluator(traces, tm.target, memory, off)
    base = tuple(e.total for e in run(tm))
    out = []
    for name in fittable_names(tm, names):
        b = tm.bounds[name]
        low = tuple(e.total for e in run(tm.with_values({name: b.low})))
        high = tuple(e.total for e in run(tm.with_values({name: b.high})))
        out.append(Sensitivity(name, b.low, tm.value(name), b.high, low, base, high))
    return out


def format_sensitivity(rows: Sequence[Sensitivity], captures: Sequence[str]) -> str:
    """The sensitivity table: per parameter and capture, the total error at low / start /
    high and the swing (modeled vs measured)."""
    out = ["sensitivity of the replay error to each fittable parameter alone (the others at "
           "their starting values); cells: total cycles error at the lowest bound / the "
           "starting value / the highest bound, and the swing (points)"]
    for k, cap in enumerate(captures):
        out += ["", f"  {cap}", "  parameter (fittable)        bounds          low     start"
                "      high     swing"]
        for r in rows:
            out.append(f"  {r.name:<27s} [{r.low:4d}, {r.high:4d}] {r.at_low[k]:+8.1f} % "
                       f"{r.at_start[k]:+7.1f} % {r.at_high[k]:+8.1f} % {r.swing[k]:7.1f}")
    out.append("")
    out.append("  a swing of a fraction of a point: the capture cannot identify the parameter")
    return "\n".join(out) + "\n"


def _start(target: str, params: Any) -> tuple[Any, str]:
    """The starting TimingModel (timing.toml, or a parameter file over it) and its name."""
    from asterism.target import get_target
    from asterism.target.timing import get_timing

    tm = get_timing(get_target(target).name, params)
    return tm, (tm.source or "timing.toml")


def _traces(paths: Sequence[str | Path]) -> list[tuple[Trace, str]]:
    if not paths:
        raise ReplayError("calibration needs at least one capture")
    names = [Path(p).name for p in paths]
    if len(set(names)) != len(names):
        raise ReplayError(f"two captures have the same folder name ({', '.join(names)}): "
                          "a fit names its captures by folder")
    return [(read_att(p), n) for p, n in zip(paths, names, strict=True)]


def calibrate(paths: Sequence[str | Path], target: str = "gfx950", rounds: int = 3,
              memory: str = "model", params: Any = None,
              progress: Callable[[str], None] | None = None,
              names: Sequence[str] | None = None, prior: float = 0.0,
              off: Sequence[str] = ()) -> Fit:
    """Fit the fittable parameters (or the fittable `names`) to the captures at `paths`,
    starting from timing.toml's values (or `params`, a parameter file over them); `prior`
    > 0: the regularized (MAP) fit around the starting values; `off`: replay mechanisms
    left out (timing.params.REPLAY_MECHANISMS)."""
    tm, start = _start(target, params)
    fittable_names(tm, names)  # (a bad name fails before the captures are read)
    return fit_parameters(_traces(paths), tm, memory, rounds, start, progress, names, prior,
                          off=replay_off(off))


def sensitivity_of(paths: Sequence[str | Path], target: str = "gfx950",
                   memory: str = "model", params: Any = None,
                   names: Sequence[str] | None = None, off: Sequence[str] = ()) -> str:
    """The sensitivity table (`sensitivity`) of the captures at `paths`."""
    tm, _start_name = _start(target, params)
    fittable_names(tm, names)
    off = replay_off(off)
    traces = _traces(paths)
    return format_sensitivity(sensitivity(traces, tm, memory, names, off=off),
                              [n for _t, n in traces])


@dataclass
class HeldOut:
    """One leave-one-out step: the fit on the other captures and its prediction of this
    one."""

    capture: str
    fit: Fit  # on every capture but this one
    predicted: CaptureError  # this capture under the fit's values


@dataclass
class LeaveOneOut:
    """Default, fitted and leave-one-out errors of each capture."""

    target: str
    memory: str
    start: str
    default: list[CaptureError]  # the starting values: predicted (nothing fitted)
    fitted: Fit  # on every capture: in-sample
    held_out: list[HeldOut]

    def to_json(self) -> dict[str, Any]:
        """Everything as plain data; each figure says whether it is fitted or predicted."""
        return {
            "target": self.target, "memory": self.memory, "start": self.start,
            "objective": OBJECTIVE, "modeled": True, "prior": self.fitted.prior,
            "method": self.fitted.method(),
            "note": "default: the starting values (predicted: nothing fitted); fitted: "
                    "parameters fitted to every capture (in-sample); leave_one_out: each "
                    "capture predicted by parameters fitted to the others",
            "captures": [
                {"capture": d.capture, "default_predicted": d.to_json(),
                 "fitted_in_sample": f.to_json(),
                 "leave_one_out_predicted": h.predicted.to_json(),
                 "leave_one_out_parameters": h.fit.after}
                for d, f, h in zip(self.default, self.fitted.errors_after, self.held_out,
                                   strict=True)],
            "fit_on_all": self.fitted.to_json(),
            "leave_one_out_objective": round(objective([h.predicted for h in self.held_out]),
                                             3)}

    def summary(self) -> str:
        """The errors table (default / fitted / leave-one-out) and the fitted values."""
        n = len(self.default)
        out = [f"leave-one-out calibration of the timing model for {self.target} on {n} "
               f"captures (replay, memory: {self.memory}; starting values: {self.start})",
               f"  method: {self.fitted.method()}",
               "  modeled cycles vs measured; each cell: total error, and the mean / max "
               "|error| of the capture's waves",
               "", f"  {'capture':<26s} {'default (predicted)':<28s} "
               f"{'fitted on all (in-sample)':<28s} leave-one-out (predicted)"]
        for d, f, h in zip(self.default, self.fitted.errors_after, self.held_out,
                           strict=True):
            out.append(f"  {d.capture:<26s} {d.cells():<28s} {f.cells():<28s} "
                       f"{h.predicted.cells()}")
        loo = [h.predicted for h in self.held_out]
        out += [f"  {'objective':<26s} {objective(self.default):<28.2f} "
                f"{self.fitted.objective_after:<28.2f} {objective(loo):.2f}",
                "", "  default: the starting values, fitted to none of these captures "
                "(predicted);",
                "  fitted on all: fitted to every capture, each figure in-sample (not a "
                "prediction);",
                "  leave-one-out: each capture predicted by a fit to the other "
                f"{'capture' if n == 2 else 'captures'} (predicted).",
                f"  objective: {OBJECTIVE}", ""]
        head = "  parameter (fittable)        bounds       start  all"
        head += "".join(f"  w/o {h.capture[:12]:<12s}" for h in self.held_out)
        out.append(head)
        for name, value in self.fitted.after.items():
            low, high = self.fitted.bounds[name]
            row = f"  {name:<27s} [{low:4d}, {high:4d}] {self.fitted.before[name]:6d} " \
                  f"{value:4d}"
            row += "".join(f"  {h.fit.after[name]:16d}" for h in self.held_out)
            out.append(row)
        out.append("  (sourced and measured parameters are fixed: timing.toml)")
        return "\n".join(out) + "\n"


def leave_one_out(paths: Sequence[str | Path], target: str = "gfx950", rounds: int = 3,
                  memory: str = "model", params: Any = None,
                  progress: Callable[[str], None] | None = None,
                  names: Sequence[str] | None = None, prior: float = 0.0,
                  off: Sequence[str] = ()) -> LeaveOneOut:
    """For N captures: the starting values' errors, a fit on all N, and for each capture a
    fit on the other N-1 with its error on the held-out one (`prior`: as for calibrate)."""
    if len(paths) < 2:
        raise ReplayError("--leave-one-out needs at least two captures")
    tm, start = _start(target, params)
    fittable_names(tm, names)
    off = replay_off(off)
    return leave_one_out_traces(_traces(paths), tm, memory, rounds, start, progress, names,
                                prior, off)


def leave_one_out_traces(traces: Sequence[tuple[Trace, str]], tm: Any, memory: str = "model",
                         rounds: int = 3, start: str = "timing.toml",
                         progress: Callable[[str], None] | None = None,
                         names: Sequence[str] | None = None, prior: float = 0.0,
                         off: frozenset[str] = frozenset()) -> LeaveOneOut:
    """`leave_one_out` on read captures (trace, name), from the TimingModel `tm`."""
    if len(traces) < 2:
        raise ReplayError("--leave-one-out needs at least two captures")

    def tagged(tag: str) -> Callable[[str], None] | None:
        return (lambda m: progress(f"{tag}: {m}")) if progress else None

    fitted = fit_parameters(traces, tm, memory, rounds, start, tagged("all captures"), names,
                            prior, off=off)
    held = []
    for k, (trace, name) in enumerate(traces):
        others = list(traces[:k]) + list(traces[k + 1:])
        fit = fit_parameters(others, tm, memory, rounds, start, tagged(f"without {name}"),
                             names, prior, off=off)
        predicted = cycles_error(name, replay_cycles(trace, tm.target, memory, fit.model,
                                                     off=off))
        held.append(HeldOut(name, fit, predicted))
    return LeaveOneOut(tm.target, memory, start, fitted.errors_before, fitted, held)


__all__ = ["OBJECTIVE", "CaptureError", "Fit", "HeldOut", "LeaveOneOut", "Sensitivity",
           "calibrate", "capture_error", "cycles_error", "fit_parameters", "fittable_names",
           "format_sensitivity", "leave_one_out", "leave_one_out_traces", "objective",
           "prior_penalty", "sensitivity", "sensitivity_of"]
