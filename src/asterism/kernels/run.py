"""Run a built kernel case: compile, launch, check against NumPy, model or measure its speed.

    case = kernels.get("gemm").build("gfx942", {"m": 512})
    result = run_case(case, backend="emu", check=True, timing=True)
    print(format_run(result))

Figures from the emulator's timing model are *modeled*: the model times the workgroups of
CU 0 (workgroups go to CUs round-robin), and the device is assumed to run every CU like CU 0
at the same time; the CUs share only the chip's L2 and HBM bandwidth (asterism.timing.
bandwidth: the run says whether it bound). So

* modeled TFLOPS = the launch's flops / (CU 0's cycles / clock): the whole grid in the time
  CU 0 takes (a grid smaller than the device leaves CUs idle, and that shows);
* modeled per-CU rate = the flops of CU 0's workgroups / its time, times the CU count: what
  the device would reach if the grid filled every CU as it fills CU 0.

Both are set beside the product's data-sheet peak for the element type (target data).
With the HIP backend the time per launch is measured and the TFLOPS are measured ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asterism.kernels.base import KernelCase, KernelGenerator, parse_shape
from asterism.timing.params import params_note

DEFAULT_PIPELINE = "auto"
MODEL_FOOTNOTE = ("(a model of one CU, not a measurement: the CUs share only the L2 and HBM "
                  "bandwidth; other contention, the vector L1 and clocks are not modeled)")


@dataclass
class KernelCheck:
    """The comparison of one output with the NumPy reference."""

    output: str
    max_abs_error: float
    max_rel_error: float
    atol: float
    rtol: float
    passed: bool
    worst_index: tuple[int, ...] = ()


@dataclass
class KernelRun:
    """What `run_case` did: backend, wall time, checks, and modeled or measured speed."""

    name: str
    target: str
    params: dict[str, Any]
    backend: str
    device: str
    wall_seconds: float
    wave_instructions: int = 0
    checks: list[KernelCheck] = field(default_factory=list)
    flops: int = 0
    cycles: int | None = None  # timing model: cycles of the modeled CU
    clock_mhz: float | None = None
    compute_units: int | None = None
    product: str | None = None
    modeled_workgroups: int | None = None
    workgroups: int | None = None
    tflops: float | None = None  # modeled (timing) or measured (hip)
    per_cu_tflops: float | None = None  # modeled: CU 0's rate times the CU count
    peak_tflops: float | None = None
    # modeled: per_cu_tflops at the product's clock under dense MFMA load (where one is known)
    load_clock_mhz: float | None = None
    load_clock_source: str = ""
    per_cu_tflops_load_clock: float | None = None
    measured_seconds: float | None = None  # hip: time per launch
    registers: dict[str, int] = field(default_factory=dict)
    # the emulator's TimingResult (timing): the modeled waves' records, for a stall analysis
    timing_result: Any = field(default=None, repr=False)
    sanitizer: Any = None  # emu.sanitizer.SanitizerReport of a warn-mode emulator run
    params_file: str | None = None  # timing: the parameter file over timing.toml (--params)

    @property
    def passed(self) -> bool:
        """True if every checked output is within tolerance (True when nothing was checked)."""
        return all(c.passed for c in self.checks)

    @property
    def modeled(self) -> bool:
        """True if the speed figures come from the timing model, not a GPU."""
        return self.cycles is not None


def compile_case(case: KernelCase, pipeline: str | None = None) -> bytes:
    """The code object of a case, after its pipeline (default `auto`); a code-object entry's
    case gives its code object as shipped (no pipeline applies to it)."""
    from asterism import api

    if case.code is not None:
        return case.code
    if pipeline is None:
        pipeline = case.notes.get("pipeline", DEFAULT_PIPELINE)
    return api.compile(case.module, pipeline)


def build_code_object(case: KernelCase) -> bytes:
    """HSACO bytes of a case (what `asterism kernels build -o F.hsaco` writes)."""
    return compile_case(case)


# What `kernels build -o` writes, by the output's extension.
BUILD_OUTPUTS = {".mlir": "the kernel's IR before the pipeline",
                 ".s": "the assembly after the pipeline",
                 ".hsaco": "the code object", ".co": "the code object"}


def build_output(case: KernelCase, path: str) -> str | bytes:
    """What `asterism kernels build -o PATH` writes, chosen by PATH's extension (see
    BUILD_OUTPUTS); a KernelParamError for another extension or for IR of a code-object
    entry (it has none)."""
    from pathlib import PurePath

    from asterism.kernels.base import KernelParamError

    suffix = PurePath(path).suffix.lower()
    if suffix not in BUILD_OUTPUTS:
        known = ", ".join(f"{k} ({v})" for k, v in BUILD_OUTPUTS.items())
        raise KernelParamError(f"{path}: unknown output extension {suffix or '(none)'!r}; "
                               f"kernels build writes {known}")
    if suffix in (".hsaco", ".co"):
        return build_code_object(case)
    if case.code is not None:
        raise KernelParamError(f"{path}: {case.name} is a code object as shipped: it has no "
                               "IR or assembly of ours (write .hsaco or .co)")
    if suffix == ".mlir":
        from asterism.ir import print_ir

        return print_ir(case.module)
    from asterism import api

    return api.translate(case.module, case.notes.get("pipeline", DEFAULT_PIPELINE))


def check_outputs(case: KernelCase, values: dict[str, np.ndarray]) -> list[KernelCheck]:
    """Compare each output with the reference: max abs/rel error and the case's tolerance."""
    if case.reference is None or not case.outputs:
        from asterism.kernels.base import KernelParamError

        raise KernelParamError(f"{case.name} has no reference to check its outputs against "
                               "(run it without --check, or give its entry a reference)")
    want = case.reference()
    atol, rtol = case.tolerance()
    checks = []
    for name in case.outputs:
        value = values[name] if case.decode is None else case.decode(name, values[name])
        got = np.asarray(value, np.float64)
        ref = np.asarray(want[name], np.float64).reshape(got.shape)
        diff = np.abs(got - ref)
        finite = np.isfinite(got).all()
        rel = diff / np.maximum(np.abs(ref), np.finfo(np.float32).tiny)
        bad = diff > atol + rtol * np.abs(ref)
        worst = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else ()
        checks.append(KernelCheck(
            name, float(diff.max()) if diff.size else 0.0,
            float(rel[~np.isclose(ref, 0)].max()) if (~np.isclose(ref, 0)).any() else 0.0,
            atol, rtol, bool(finite and not bad.any()),
            tuple(int(i) for i in worst)))
    return checks


def _metadata(code: bytes, kernel: str) -> dict[str, Any]:
    """The metadata of `kernel` in its code object."""
    from asterism.mc.codeobject import read_code_object

    obj = read_code_object(code)
    entry = next(k for k in obj.kernels if k.name == kernel)
    return entry.metadata or {}


def _register_usage(meta: dict[str, Any]) -> dict[str, int]:
    """VGPR / AGPR / SGPR / LDS of a kernel from its metadata."""
    usage = {"vgpr": meta.get(".vgpr_count", 0), "sgpr": meta.get(".sgpr_count", 0),
             "agpr": meta.get(".agpr_count", 0),
             "lds": meta.get(".group_segment_fixed_size", 0)}
    return {k: int(v) for k, v in usage.items()}


def _written(meta: dict[str, Any]) -> set[str]:
    """The buffer arguments the kernel may write (the launch copies results into them)."""
    return {str(a.get(".name")) for a in meta.get(".args", []) or []
            if a.get(".value_kind") == "global_buffer"
            and (a.get(".access") or a.get(".actual_access")) != "read_only"}


def _product(target: str):
    from asterism.target import get_target

    chip = get_target(target)
    return chip.product(chip.flagship)


def _add_timing(run: KernelRun, case: KernelCase, timing) -> None:
    """Modeled cycles and TFLOPS from a TimingResult (see the module docstring)."""
    product = _product(case.target)
    run.timing_result = timing
    run.params_file = timing.parameters.get("params_file")
    run.cycles = int(timing.cycles)
    run.clock_mhz = float(timing.clock_mhz)
    run.compute_units = product.compute_units
    run.product = product.name
    run.workgroups = int(timing.workgroups)
    run.modeled_workgroups = int(timing.modeled_workgroups)
    run.peak_tflops = product.peak(case.params.get("dtype", "f16"))
    if run.cycles > 0:
        seconds = run.cycles / (run.clock_mhz * 1e6)
        run.tflops = case.flops / seconds / 1e12
        share = run.modeled_workgroups / max(1, run.workgroups)
        run.per_cu_tflops = case.flops * share / seconds * run.compute_units / 1e12
        if product.load_clock_mhz:
            # The same cycles at the lower clock: time scales, the cycle count does not
            # (an approximation: memory latencies and bandwidth per cycle would change).
            run.load_clock_mhz = float(product.load_clock_mhz)
            run.load_clock_source = product.load_clock_source
            run.per_cu_tflops_load_clock = (run.per_cu_tflops * run.load_clock_mhz
                                            / run.clock_mhz)


def run_case(case: KernelCase, backend: str = "emu", check: bool = True,
             timing: Any = False, iterations: int = 1,
             pipeline: str | None = None, code: bytes | None = None, *,
             max_instructions: int | None = None, progress: Any = None,
             sanitizer: bool | str | None = None, on_violation: Any = None) -> KernelRun:
    """Compile (unless its `code` object is given) and launch `case`; compare with the
    reference (`check`), model (`timing`: True or a timing.params.TimingOptions, emulator)
    or measure (hip: `iterations` launches) its speed.
    `max_instructions`, `progress`, `sanitizer` (default: error for asterism's own code
    objects, warn for others') and `on_violation` go to the emulator (see runtime.launch)."""
    import time

    from asterism import runtime

    if code is None:
        code = compile_case(case, pipeline)
    meta = _metadata(code, case.kernel)
    # Only what the kernel may write is copied: case.args keep the inputs the reference
    # reads, and a large read-only input is not held twice. (A packed entry names its
    # outputs itself: its metadata's argument names need not be the case's.)
    written = set(case.outputs) if case.pack is not None else _written(meta)
    args = {k: (v.copy() if isinstance(v, np.ndarray) and k in written else v)
            for k, v in case.args.items()}
    launch_args = case.pack(args) if case.pack is not None else args
    # `iterations` are launches to time on a GPU: the emulator's result is the same each time
    # (one run checks it; the timing model runs once).
    gpu = not timing and runtime.select_backend(backend, case.target).name == "hip"
    start = time.perf_counter()
    result = runtime.launch(code, case.kernel, grid=case.grid, block=case.block,
                            args=launch_args, backend=backend, timing=timing,
                            iterations=iterations if gpu else 1,
                            max_instructions=max_instructions, progress=progress,
                            sanitizer=sanitizer, on_violation=on_violation)
    wall = time.perf_counter() - start
    run = KernelRun(case.name, case.target, dict(case.params), result.backend, result.device,
                    wall, flops=case.flops, registers=_register_usage(meta))
    if result.stats is not None:
        run.wave_instructions = int(getattr(result.stats, "wave_instructions", 0) or 0)
        run.sanitizer = getattr(result.stats, "sanitizer", None)
    if check:
        run.checks = check_outputs(case, args)
    if timing and result.timing is not None:
        _add_timing(run, case, result.timing)
    elif result.backend == "hip" and result.times:
        run.measured_seconds = float(min(result.times))
        run.tflops = case.flops / run.measured_seconds / 1e12
        run.peak_tflops = _product(case.target).peak(case.params.get("dtype", "f16"))
    return run


# ------------------------------------------------------------------------------ reports


def _percent(value: float | None, peak: float | None) -> str:
    if value is None or not peak:
        return ""
    return f" ({100 * value / peak:.1f}% of peak)"


def run_report(run: KernelRun) -> dict[str, Any]:
    """The run as a JSON-ready dict (for `--json`)."""
    out: dict[str, Any] = {
        "kernel": run.name, "target": run.target, "params": run.params,
        "backend": run.backend, "device": run.device,
        "wall_seconds": round(run.wall_seconds, 4),
        "wave_instructions": run.wave_instructions, "registers": run.registers,
        "passed": run.passed,
        "checks": [{"output": c.output, "max_abs_error": c.max_abs_error,
                    "max_rel_error": c.max_rel_error, "atol": c.atol, "rtol": c.rtol,
                    "passed": c.passed} for c in run.checks],
        "flops": run.flops,
    }
    if run.sanitizer is not None:
        out["sanitizer"] = run.sanitizer.to_json()
    if run.modeled:
        out["timing"] = {
            "modeled": True, "cycles": run.cycles, "clock_mhz": run.clock_mhz,
            "product": run.product, "compute_units": run.compute_units,
            "workgroups": run.workgroups, "modeled_workgroups": run.modeled_workgroups,
            "modeled_tflops": run.tflops, "modeled_per_cu_tflops_scaled": run.per_cu_tflops,
            "peak_tflops": run.peak_tflops,
            "load_clock_mhz": run.load_clock_mhz, "load_clock_source": run.load_clock_source,
            "modeled_per_cu_tflops_load_clock": run.per_cu_tflops_load_clock,
            "note": "timing model of CU 0; every CU assumed to run like CU 0, sharing only "
                    "the L2 and HBM bandwidth",
            "params_file": run.params_file,
        }
        bw = getattr(run.timing_result, "bandwidth", None)
        if bw is not None:
            out["timing"]["bandwidth"] = bw.to_json()
        if run.timing_result is not None:  # per instruction: lds_conflicts, cache_lines
            out["timing"].update(run.timing_result.instructions_json())
    elif run.measured_seconds is not None:
        out["measured"] = {"seconds_per_launch": run.measured_seconds,
                           "tflops": run.tflops, "peak_tflops": run.peak_tflops}
    return out


def format_run(run: KernelRun) -> str:
    """The run as text (what `asterism kernels run` prints)."""
    params = " ".join(f"{k}={v}" for k, v in run.params.items())
    lines = [f"{run.name} on {run.target} ({run.device}): {params}",
             f"  ran in {run.wall_seconds:.2f} s wall"
             + (f", {run.wave_instructions} wave-instructions" if run.wave_instructions
                else "")]
    if run.registers:
        r = run.registers
        lines.append(f"  registers: {r.get('vgpr', 0)} VGPR, {r.get('agpr', 0)} AGPR, "
                     f"{r.get('sgpr', 0)} SGPR; LDS {r.get('lds', 0)} bytes")
    if run.sanitizer is not None:
        lines.append("  " + run.sanitizer.summary().rstrip("\n"))
    for c in run.checks:
        verdict = "ok" if c.passed else "FAILED"
        lines.append(f"  check {c.output}: max abs error {c.max_abs_error:.3g}, max rel "
                     f"error {c.max_rel_error:.3g} (tolerance atol {c.atol:.3g} + rtol "
                     f"{c.rtol:.3g} x |ref|): {verdict}")
    if run.modeled:
        us = run.cycles / run.clock_mhz
        lines.append(f"  modeled: {run.cycles} cycles on CU 0 ({run.modeled_workgroups} of "
                     f"{run.workgroups} workgroups) = {us:.2f} us at {run.clock_mhz:.0f} MHz")
        share = _percent(run.tflops, run.peak_tflops)
        lines.append(f"  modeled: {run.tflops:.1f} TFLOPS for the whole grid on "
                     f"{run.compute_units} CUs ({run.product}){share}")
        lines.append(f"  modeled: {run.per_cu_tflops:.1f} TFLOPS if every CU ran as CU 0 does"
                     f"{_percent(run.per_cu_tflops, run.peak_tflops)}; peak "
                     f"{run.peak_tflops} TFLOPS (data sheet, dense)")
        if run.per_cu_tflops_load_clock is not None:
            lines.append(f"  modeled: {run.per_cu_tflops_load_clock:.1f} TFLOPS per CU x CUs "
                         f"at {run.load_clock_mhz:.0f} MHz, the {run.product}'s clock under "
                         f"dense MFMA load ({run.load_clock_source})")
        bw = getattr(run.timing_result, "bandwidth", None)
        if bw is not None:
            lines.append(f"  {bw.line()}")
        lines.append(f"  {MODEL_FOOTNOTE}")
        if run.params_file:
            lines.append(f"  {params_note(run.params_file)}")
        if run.timing_result is not None:  # LDS bank conflicts, cache lines per instruction
            lines += run.timing_result.mechanism_lines()
            lines += run.timing_result.port_priority_lines()
    elif run.measured_seconds is not None:
        lines.append(f"  measured: {run.measured_seconds * 1e6:.1f} us per launch, "
                     f"{run.tflops:.1f} TFLOPS{_percent(run.tflops, run.peak_tflops)}")
    return "\n".join(lines) + "\n"


def list_rows(generators: list[KernelGenerator]) -> list[dict[str, Any]]:
    """One dict per generator: name, description, targets, origin, --shape, parameters
    (--json)."""
    return [{"name": g.name, "description": g.description, "targets": list(g.targets),
             "origin": g.describe_origin(),
             "shape": {"form": g.shape.form, "params": list(g.shape.params),
                       "example": g.shape.example} if g.shape else None,
             "params": [{"name": p.name, "default": p.default, "type": p.kind.__name__,
                         "choices": list(p.choices), "help": p.help} for p in g.params]}
            for g in generators]


def format_list(generators: list[KernelGenerator]) -> str:
    """The `asterism kernels list` table: each kernel, its targets, where it comes from and
    its parameters."""
    lines = []
    for g in generators:
        lines.append(f"{g.name}  [{', '.join(g.targets)}]  {g.description}")
        lines.append(f"    origin: {g.describe_origin()}")
        if g.shape:
            lines.append(f"    --shape {g.shape.describe()}")
        width = max((len(p.name) for p in g.params), default=0)
        for p in g.params:
            choices = f" ({'|'.join(str(c) for c in p.choices)})" if p.choices else ""
            default = f"{p.default}"
            lines.append(f"    {p.name:<{width}}  {default:<8} {p.help}{choices}")
    return "\n".join(lines) + "\n"


def parse_params(pairs: list[str]) -> dict[str, str]:
    """`["m=512", "dtype=bf16"]` -> {"m": "512", "dtype": "bf16"} (the generator converts)."""
    from asterism.kernels.base import KernelParamError

    out = {}
    for text in pairs:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise KernelParamError(f"--param expects name=value, got {text!r}")
        out[key.strip()] = value.strip()
    return out


__all__ = ["KernelCheck", "KernelRun", "build_code_object", "check_outputs", "compile_case",
           "format_list", "format_run", "list_rows", "parse_params", "parse_shape",
           "run_case", "run_report"]
