"""Instruction timing of one wave per target, from `target/data/timing.toml`.

The data file documents every parameter and its source; this module only loads it and
answers the questions a scheduler or a timing model asks:

    tm = get_timing("gfx942")
    cls = timing_class(isa.get("v_mfma_f32_16x16x16_f16"))      # "mfma"
    tm.latency_of(inst)            # cycles until a dependent instruction may issue (16 + 4)
    tm.occupancy_of(inst)          # cycles its execution unit stays busy (16)
    tm.unit_of(cls)                # "xdl"

Timing classes: salu, smem, valu, trans, mfma, ds_read, ds_write, vmem_read, vmem_write,
branch (see `timing_class`). Execution units: salu, smem, valu (VALU and transcendentals),
xdl (MFMA), lds, vmem, branch.

The timing model (asterism/timing/) also reads `tm.issue_ports` (timing
class -> issue port), `tm.memory` (LDS / scalar cache / L2 hit / HBM latencies, line size,
vector memory bandwidth, cycles per cache line), `tm.lds_banks` / `tm.lds_conflict_cycles` /
`tm.lds_phases` (the LDS bank-conflict rules), `tm.dispatch` (wave launch, first fetch,
taken branch, barrier and s_endpgm cycles) and `tm.bandwidth` (the L2 and HBM bandwidth all
CUs share); `tm.with_memory(hbm=700)` overrides memory latencies (a what-if, not bounded).

Every number has physical bounds and a kind in the file (`tm.bounds["memory.hbm"]`: sourced,
measured or fittable, lowest, highest); the loader refuses a value outside them. A parameter
file (`load_params("fit.toml")`, the `--params FILE` option: [<target>.<section>] tables of
timing.toml, as `asterism trace calibrate` writes them) overrides values within the bounds:
`get_timing("gfx950", params="fit.toml")`, whose `source` names the file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from asterism.errors import SourceLocation, TargetError
from asterism.isa import Instruction

TIMING_CLASSES = ("salu", "smem", "valu", "trans", "mfma", "ds_read", "ds_write", "vmem_read",
                  "vmem_write", "branch")
# Which execution unit each class occupies (trans runs on the VALU at quarter rate).
UNIT_OF_CLASS: dict[str, str] = {
    "salu": "salu", "smem": "smem", "valu": "valu", "trans": "valu", "mfma": "xdl",
    "ds_read": "lds", "ds_write": "lds", "vmem_read": "vmem", "vmem_write": "vmem",
    "branch": "branch"}
_FILE = "timing.toml"
_TOP_KEYS = {"base", "issue_cycles", "clock_mhz", "latency", "occupancy", "mfma", "lds",
             "issue", "memory", "dispatch", "bandwidth", "bounds"}
# Tables of numbers (a parameter's name is "<table>.<key>"; issue_cycles and clock_mhz are
# named by their key alone).
NUMBER_TABLES = ("latency", "occupancy", "mfma", "lds", "memory", "dispatch", "bandwidth")
NUMBER_KEYS = ("issue_cycles", "clock_mhz")
PARAMETER_KINDS = ("sourced", "measured", "fittable")
_MFMA_KEYS = {"cycles_per_pass", "dependent_extra", "result_extra", "valu_hold",
              "packed_extra", "packed_xdl2x"}
_LDS_KEYS = {"bytes_per_cycle", "banks", "conflict_cycles", "phases", "port_read_bytes",
             "port_write_bytes", "write_cycles_per_dword"}
# The lds table's numbers and the TimingModel fields that hold them.
_LDS_FIELDS = {"bytes_per_cycle": "lds_bytes_per_cycle", "banks": "lds_banks",
               "conflict_cycles": "lds_conflict_cycles",
               "port_read_bytes": "lds_port_read_bytes",
               "port_write_bytes": "lds_port_write_bytes",
               "write_cycles_per_dword": "lds_write_cycles_per_dword"}
# LDS phase rules every target defines (asterism.timing.lds: which lanes of a wave64 DS access
# are checked together for bank conflicts), and the ones only some targets have (gfx950's
# transposed reads).
LDS_PHASE_RULES = ("read_b32", "read_b64", "read_b96", "read_b128", "write_b32", "write_b64",
                   "write_b96", "write_b128")
LDS_PHASE_OPTIONAL = ("read_tr_b64", "read_tr_b96")
MEMORY_KEYS = ("lds", "smem", "l2_hit", "hbm", "vmem_unknown", "line_bytes",
               "vmem_bytes_per_cycle", "cycles_per_line", "smem_miss", "write_bytes",
               "store_unknown")
# What `--latency k=v` may override.
MEMORY_LATENCY_KEYS = ("lds", "smem", "l2_hit", "hbm", "vmem_unknown", "smem_miss")
# Latencies of reads that come from the memory section, so that the scheduler's estimate and
# the emulator's timing model use one number (a vector read is costed at HBM: first touch).
LATENCY_FROM_MEMORY = {"smem": "smem", "ds_read": "lds", "vmem_read": "hbm"}
DISPATCH_KEYS = ("wave_launch_interval", "wave_start", "taken_branch", "barrier", "endpgm",
                 "valu_to_memory", "valu_sgpr_valu", "valu_sgpr_salu", "icache_line",
                 "icache_ahead", "icache_miss")
ISSUE_PORTS = ("scalar", "valu", "lds", "vmem", "branch")
BANDWIDTH_KEYS = ("hbm_gbps", "l2_bytes_per_clock", "l2_channels", "xcds")


@dataclass(frozen=True)
class MfmaTiming:
    """MFMA timing: clocks per pass and the extra latency to dependent instructions."""

    cycles_per_pass: int
    dependent_extra: int  # MFMA reading the result as SrcC through the same registers
    result_extra: int  # any other reader (VALU, DS, VMEM, MFMA SrcA/B)
    valu_hold: int = 4  # cycles from its issue until its SIMD's VALU takes the next one
    # cycles past its passes until its SIMD takes a packed-FP32 / DOT VALU instruction, and
    # how many more after an XDL MFMA with a 16-byte source (timing/mfma.py)
    packed_extra: int = 8
    packed_xdl2x: int = 4

    def packed_hold(self, passes: int, xdl_wide_source: bool) -> int:
        """Cycles from an MFMA's issue until its SIMD takes a packed-FP32 / DOT VALU
        instruction: its passes, packed_extra, and packed_xdl2x more after an XDL MFMA with
        a 16-byte (or wider) A / B source ([llvm-pr] PR #233721, timing/mfma.py)."""
        extra = self.packed_extra + (self.packed_xdl2x if xdl_wide_source else 0)
        return passes * self.cycles_per_pass + extra


@dataclass(frozen=True)
class Bound:
    """A parameter's physical range and kind (sourced, measured: never fitted; fittable:
    fitted only within [low, high])."""

    kind: str
    low: int
    high: int

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and \
            self.low <= value <= self.high

    def describe(self) -> str:
        """`[low, high] (kind)` for messages."""
        return f"[{self.low}, {self.high}] ({self.kind})"


@dataclass(frozen=True)
class TimingModel:
    """Timing parameters of one target (all in shader-clock cycles of one wave)."""

    target: str
    issue_cycles: int
    clock_mhz: int
    latency: Mapping[str, int] = field(default_factory=dict)
    occupancy: Mapping[str, int] = field(default_factory=dict)
    mfma: MfmaTiming = MfmaTiming(4, 0, 4, 4)
    lds_bytes_per_cycle: int = 128
    issue_ports: Mapping[str, str] = field(default_factory=dict)  # timing class -> port
    memory: Mapping[str, int] = field(default_factory=dict)  # see MEMORY_KEYS
    dispatch: Mapping[str, int] = field(default_factory=dict)  # see DISPATCH_KEYS
    lds_banks: int = 32
    lds_conflict_cycles: int = 1  # cycles per extra same-bank access in a phase
    # phase rule (LDS_PHASE_RULES) -> lane-bit masks: bit j of a lane's phase number is the
    # parity of (lane & masks[j]) (asterism.timing.lds)
    lds_phases: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    bandwidth: Mapping[str, int] = field(default_factory=dict)  # see BANDWIDTH_KEYS
    bounds: Mapping[str, Bound] = field(default_factory=dict)  # parameter name -> Bound
    source: str = ""  # the parameter file over timing.toml ("": timing.toml alone)
    # the SIMD pairs' LDS ports (asterism.timing.lds.port_cycles): bytes per clock one wave's
    # read / write moves through its pair's port, and the write's extra issue cycles per dword
    lds_port_read_bytes: int = 64
    lds_port_write_bytes: int = 64
    lds_write_cycles_per_dword: int = 4

    def value(self, name: str) -> int:
        """The value of the parameter `name` ("memory.hbm", "issue_cycles", ...)."""
        table, _, key = name.rpartition(".")
        if not table:
            return int(getattr(self, key))
        if table == "mfma":
            return int(getattr(self.mfma, key))
        if table == "lds":
            return int(getattr(self, _LDS_FIELDS[key]))
        return int(getattr(self, table)[key])

    def values(self) -> dict[str, int]:
        """Every bounded parameter and its value."""
        return {name: self.value(name) for name in self.bounds}

    def fittable(self) -> list[str]:
        """The parameters a calibration may fit (kind "fittable"), in file order."""
        return [name for name, b in self.bounds.items() if b.kind == "fittable"]

    def with_values(self, values: Mapping[str, int], source: str | None = None,
                    where: str = "") -> TimingModel:
        """A copy with some parameters replaced, each checked against its bounds (an
        unknown name or a value outside them is a TargetError naming `where`);
        `source`: the file the values come from (recorded in results)."""
        for name, value in values.items():
            bound = self.bounds.get(name)
            if bound is None:
                raise TargetError(f"{where or self.target}: unknown timing parameter "
                                  f"'{name}'")
            if value not in bound:
                raise TargetError(f"{where or self.target}: {name} = {value!r} is outside "
                                  f"its bounds {bound.describe()}")
        out = _replaced(self, values)
        return out if source is None else replace(out, source=source)

    def with_memory(self, **overrides: int) -> TimingModel:
        """A copy with some memory latencies replaced (keys of MEMORY_LATENCY_KEYS)."""
        bad = sorted(set(overrides) - set(MEMORY_LATENCY_KEYS))
        if bad:
            raise TargetError(f"unknown memory latency {', '.join(bad)}; choose from "
                              f"{', '.join(MEMORY_LATENCY_KEYS)}")
        for key, value in overrides.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TargetError(f"memory latency {key} must be a whole number of cycles "
                                  f">= 0, got {value!r}")
        return _replaced(self, {f"memory.{k}": v for k, v in overrides.items()})

    def unit_of(self, timing_cls: str) -> str:
        """The execution unit a timing class occupies."""
        return UNIT_OF_CLASS[timing_cls]

    def mfma_cycles(self, inst: Instruction) -> int:
        """Cycles an MFMA keeps the matrix core busy (passes * cycles_per_pass)."""
        return (inst.passes or 1) * self.mfma.cycles_per_pass

    def latency_of(self, inst: Instruction, *, srcc_forward: bool = False) -> int:
        """Cycles from issuing `inst` until an instruction reading its result may issue;
        `srcc_forward`: the reader is an MFMA taking the result as SrcC (same registers)."""
        cls = timing_class(inst)
        if cls == "mfma":
            extra = self.mfma.dependent_extra if srcc_forward else self.mfma.result_extra
            return self.mfma_cycles(inst) + extra
        return self.latency[cls]

    def occupancy_of(self, inst: Instruction, data_dwords: int = 1) -> int:
        """Cycles `inst` keeps its execution unit busy; `data_dwords`: dwords per lane moved
        by a DS instruction (wide LDS accesses are bandwidth bound)."""
        cls = timing_class(inst)
        if cls == "mfma":
            return self.mfma_cycles(inst)
        busy = self.occupancy[cls]
        if cls in ("ds_read", "ds_write"):
            # A wave64 moves 64 lanes * 4 bytes per dword through the LDS.
            busy = max(busy, -(-64 * 4 * data_dwords // self.lds_bytes_per_cycle))
        return busy

    def nanoseconds(self, cycles: float) -> float:
        """Cycles at the target's peak engine clock, in ns."""
        return cycles * 1000.0 / self.clock_mhz


def timing_class(inst: Instruction) -> str:
    """The timing class of an instruction (see TIMING_CLASSES), from its ISA database unit,
    flags and MFMA pass count."""
    if inst.passes is not None:
        return "mfma"
    unit, flags = inst.unit, inst.flags
    if unit == "trans":
        return "trans"
    if unit in ("valu", "mfma"):  # v_accvgpr_read/write/mov: VALU moves in the mfma unit
        return "valu"
    if unit in ("salu", "smem", "branch"):
        return unit
    if unit == "lds":
        return "ds_write" if "may_store" in flags and "may_load" not in flags else "ds_read"
    if unit == "vmem":
        return "vmem_read" if "may_load" in flags or "lds_dma" in flags else "vmem_write"
    raise TargetError(f"{inst.mnemonic}: no timing class for unit '{unit}'")


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def _section(raw: dict[str, Any], name: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    if name not in raw or not isinstance(raw[name], dict):
        raise TargetError(f"target/data/{_FILE}: no section [{name}] (targets: "
                          f"{', '.join(k for k in raw if isinstance(raw[k], dict))})")
    if name in seen:
        raise TargetError(f"target/data/{_FILE}: [{name}] inherits from itself")
    sec = dict(raw[name])
    base = sec.pop("base", None)
    if base is None:
        return sec
    return _merge(_section(raw, base, seen + (name,)), sec)


def _check_keys(where: str, got: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(got) - allowed
    if unknown:
        raise TargetError(f"target/data/{_FILE} [{where}]: unknown keys {sorted(unknown)}")


@cache
def _raw() -> dict[str, Any]:
    text = resources.files("asterism.target.data").joinpath(_FILE).read_text()
    return tomllib.loads(text)


def get_timing(target: str, params: TimingParams | str | os.PathLike[str] | None = None
               ) -> TimingModel:
    """The timing model of `target` ("gfx942", "gfx950", or a target ID with features);
    `params`: a parameter file (path or TimingParams) whose values for this target replace
    timing.toml's (see `load_params`)."""
    from asterism.target import get_target

    tm = _timing(get_target(target).name)
    if params is None:
        return tm
    if not isinstance(params, TimingParams):
        params = load_params(params)
    return tm.with_values(params.for_target(tm.target), source=params.source,
                          where=params.source)


@cache
def _timing(name: str) -> TimingModel:
    raw = _raw()
    sec = _section(raw, name)
    _check_keys(name, sec, _TOP_KEYS - {"base"})
    where = f"{name}"
    try:
        latency = dict(sec["latency"])
        occupancy = dict(sec["occupancy"])
        mfma_raw = dict(sec["mfma"])
        lds_raw = dict(sec["lds"])
        ports = dict(sec["issue"])
        memory = dict(sec["memory"])
        dispatch = dict(sec["dispatch"])
        bandwidth = dict(sec["bandwidth"])
        issue, clock = int(sec["issue_cycles"]), int(sec["clock_mhz"])
    except KeyError as err:
        raise TargetError(f"target/data/{_FILE} [{where}]: missing key {err}") from None
    _check_keys(f"{where}.mfma", mfma_raw, _MFMA_KEYS)
    _check_keys(f"{where}.lds", lds_raw, _LDS_KEYS)
    try:
        banks, conflict = int(lds_raw["banks"]), int(lds_raw["conflict_cycles"])
    except KeyError as err:
        raise TargetError(f"target/data/{_FILE} [{where}.lds]: missing key {err}") from None
    phases = _phases(f"{where}.lds.phases", lds_raw.get("phases", {}))
    want = set(TIMING_CLASSES) - {"mfma"}
    doubled = sorted(set(latency) & set(LATENCY_FROM_MEMORY))
    if doubled:
        raise TargetError(f"target/data/{_FILE} [{where}.latency]: {doubled} come from "
                          f"[{where}.memory] ({LATENCY_FROM_MEMORY}); set them there")
    _check_keys(f"{where}.latency", latency, want - set(LATENCY_FROM_MEMORY))
    for table, what, need in ((latency, "latency", want - set(LATENCY_FROM_MEMORY)),
                              (occupancy, "occupancy", want)):
        missing = need - set(table)
        if missing:
            raise TargetError(f"target/data/{_FILE} [{where}.{what}]: missing "
                              f"{sorted(missing)}")
    _check_keys(f"{where}.occupancy", occupancy, want)
    _check_table(f"{where}.issue", ports, set(TIMING_CLASSES))
    bad_ports = sorted(f"{k} = {v!r}" for k, v in ports.items() if v not in ISSUE_PORTS)
    if bad_ports:
        raise TargetError(f"target/data/{_FILE} [{where}.issue]: unknown ports "
                          f"{bad_ports} (ports: {', '.join(ISSUE_PORTS)})")
    _check_table(f"{where}.memory", memory, set(MEMORY_KEYS))
    _check_table(f"{where}.dispatch", dispatch, set(DISPATCH_KEYS))
    _check_table(f"{where}.bandwidth", bandwidth, set(BANDWIDTH_KEYS))
    bounds = _bounds(where, sec)
    latency = _with_memory_latencies(latency, memory)
    try:
        port = {_LDS_FIELDS[k]: int(lds_raw[k]) for k in
                ("port_read_bytes", "port_write_bytes", "write_cycles_per_dword")}
    except KeyError as err:
        raise TargetError(f"target/data/{_FILE} [{where}.lds]: missing key {err}") from None
    tm = TimingModel(name, issue, clock, latency, occupancy, MfmaTiming(**mfma_raw),
                     int(lds_raw["bytes_per_cycle"]), ports, memory, dispatch, banks,
                     conflict, phases, bandwidth, bounds, **port)
    for pname, bound in bounds.items():
        value = _raw_value(sec, pname)
        if value not in bound:
            raise TargetError(f"target/data/{_FILE} [{where}]: {pname} = {value!r} is outside "
                              f"its bounds {bound.describe()}")
    return tm


def _phases(where: str, raw: Any) -> dict[str, tuple[int, ...]]:
    """The LDS phase rules: each a list of at most 6 lane-bit masks (1..63)."""
    if not isinstance(raw, Mapping):
        raise TargetError(f"target/data/{_FILE} [{where}]: expected a table of rules")
    _check_keys(where, raw, set(LDS_PHASE_RULES) | set(LDS_PHASE_OPTIONAL))
    missing = sorted(set(LDS_PHASE_RULES) - set(raw))
    if missing:
        raise TargetError(f"target/data/{_FILE} [{where}]: missing {missing}")
    out = {}
    for rule, masks in raw.items():
        if not isinstance(masks, list) or len(masks) > 6 or not all(
                isinstance(m, int) and not isinstance(m, bool) and 0 < m < 64 for m in masks):
            raise TargetError(f"target/data/{_FILE} [{where}] {rule}: expected a list of at "
                              f"most 6 lane-bit masks in 1..63, got {masks!r}")
        out[rule] = tuple(masks)
    return out


def _raw_value(sec: Mapping[str, Any], name: str) -> Any:
    table, _, key = name.rpartition(".")
    return sec[table][key] if table else sec[key]


def number_names(sec: Mapping[str, Any]) -> list[str]:
    """The parameter names of a target section's numbers, in file order."""
    names = [k for k in NUMBER_KEYS if k in sec]
    for table in NUMBER_TABLES:
        # the lds table's phase rules are a table of their own, not numbers
        names += [f"{table}.{k}" for k, v in sec.get(table, {}).items()
                  if not isinstance(v, Mapping)]
    return names


def _bounds(where: str, sec: Mapping[str, Any]) -> dict[str, Bound]:
    """The target's bounds table, checked: one [kind, low, high] per number, and the issue
    ports declared sourced."""
    raw = sec.get("bounds")
    if not isinstance(raw, Mapping):
        raise TargetError(f"target/data/{_FILE} [{where}]: no [{where}.bounds] table")
    if raw.get("issue") != "sourced":
        raise TargetError(f"target/data/{_FILE} [{where}.bounds]: issue must be \"sourced\" "
                          "(the issue ports are fixed facts)")
    names = number_names(sec)
    given = [k for k in NUMBER_KEYS if k in raw]
    for table in NUMBER_TABLES:
        sub = raw.get(table, {})
        if not isinstance(sub, Mapping):
            raise TargetError(f"target/data/{_FILE} [{where}.bounds]: {table} must be a table")
        given += [f"{table}.{k}" for k in sub]
    unknown = set(raw) - set(NUMBER_KEYS) - set(NUMBER_TABLES) - {"issue"}
    extra = sorted(set(given) - set(names)) + sorted(unknown)
    if extra:
        raise TargetError(f"target/data/{_FILE} [{where}.bounds]: bounds of unknown "
                          f"parameters {extra}")
    missing = [n for n in names if n not in given]
    if missing:
        raise TargetError(f"target/data/{_FILE} [{where}.bounds]: no bounds for {missing}")
    out: dict[str, Bound] = {}
    for name in names:
        entry = _raw_value(raw, name)
        ok = isinstance(entry, list) and len(entry) == 3 and entry[0] in PARAMETER_KINDS \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in entry[1:]) \
            and entry[1] <= entry[2]
        if not ok:
            raise TargetError(f"target/data/{_FILE} [{where}.bounds]: {name} = {entry!r}; "
                              f"expected [kind, lowest, highest] with kind one of "
                              f"{', '.join(PARAMETER_KINDS)}")
        out[name] = Bound(entry[0], entry[1], entry[2])
    return out


def _replaced(tm: TimingModel, values: Mapping[str, int]) -> TimingModel:
    """`tm` with parameters replaced (unchecked; read latencies follow the memory table)."""
    tables: dict[str, dict[str, int]] = {}
    top: dict[str, Any] = {}
    for name, value in values.items():
        table, _, key = name.rpartition(".")
        if not table:
            top[key] = value
        elif table == "lds":
            top[_LDS_FIELDS[key]] = value
        else:
            tables.setdefault(table, {})[key] = value
    if "mfma" in tables:
        top["mfma"] = replace(tm.mfma, **tables.pop("mfma"))
    for table, changed in tables.items():
        top[table] = {**getattr(tm, table), **changed}
    out = replace(tm, **top)
    return replace(out, latency=_with_memory_latencies(out.latency, out.memory))


def _with_memory_latencies(latency: Mapping[str, int], memory: Mapping[str, int]
                           ) -> dict[str, int]:
    return {**latency, **{cls: int(memory[key]) for cls, key in LATENCY_FROM_MEMORY.items()}}


def _check_table(where: str, table: Mapping[str, Any], want: set[str]) -> None:
    _check_keys(where, table, want)
    missing = want - set(table)
    if missing:
        raise TargetError(f"target/data/{_FILE} [{where}]: missing {sorted(missing)}")


# ---------------------------------------------------------------------------- parameter files

# The tables of a target section a parameter file may set (bounds, base and the issue ports
# are timing.toml's alone).
_PARAMS_SECTIONS = set(NUMBER_TABLES)


@dataclass(frozen=True)
class TimingParams:
    """A parameter file (`--params FILE`): values over timing.toml's, per target, already
    checked against the bounds. `source` names the file in results and summaries."""

    source: str
    values: Mapping[str, Mapping[str, int]]  # target -> parameter name -> value

    def for_target(self, target: str) -> dict[str, int]:
        """The values this file sets for `target` (a TargetError if it sets none)."""
        if target not in self.values:
            named = ", ".join(sorted(self.values)) or "no target"
            raise TargetError(f"{self.source}: sets timing parameters for {named}, not "
                              f"{target}")
        return dict(self.values[target])


def load_params(path: str | os.PathLike[str]) -> TimingParams:
    """Read and check a parameter file: TOML with [<target>.<section>] tables (latency,
    occupancy, mfma, lds, memory, dispatch) and top-level issue_cycles / clock_mhz of a
    target, an optional `schema = 1`. An unknown target or key, a value that is not a whole
    number, or one outside its bounds is a TargetError at its file:line:col."""
    from asterism.textio import (
        TOML_MAX_BYTES,
        decode_text,
        parse_toml,
        read_input_file,
        toml_key_locations,
    )

    name = os.fspath(path)
    raw = read_input_file(name, max_bytes=TOML_MAX_BYTES, error=TargetError,
                          what="parameter file")
    text = decode_text(raw, name, TargetError)
    data = parse_toml(text, name, TargetError)
    where = toml_key_locations(text, name)
    return params_from_dict(data, name, where)


def params_from_dict(data: Mapping[str, Any], source: str,
                     where: Mapping[tuple[str, ...], SourceLocation] | None = None
                     ) -> TimingParams:
    """Check parsed parameter-file data (see `load_params`); `where` places keys for
    messages (path of table and key names -> location)."""
    where = where or {}

    def fail(path: tuple[str, ...], message: str) -> TargetError:
        # the key's own line, else the first line under the nearest enclosing table
        for k in range(len(path), 0, -1):
            if path[:k] in where:
                return TargetError(message, where[path[:k]])
            inside = [loc for p, loc in where.items() if p[:k] == path[:k]]
            if inside:
                return TargetError(message, min(inside, key=lambda loc: loc.line))
        return TargetError(f"{source}: {message}")

    targets = [t for t, v in _raw().items() if isinstance(v, dict)]
    out: dict[str, dict[str, int]] = {}
    for top, body in data.items():
        if top == "schema":
            if body != 1:
                raise fail((top,), f"schema = {body!r}: this asterism reads schema 1")
            continue
        if top not in targets:
            raise fail((top,), f"unknown key '{top}': a parameter file has one table per "
                               f"target ({', '.join(targets)}) and optionally schema = 1")
        if not isinstance(body, dict):
            raise fail((top,), f"{top} must be a table of timing parameters")
        tm = _timing(top)
        values: dict[str, int] = {}
        for key, sub in body.items():
            if key in ("bounds", "base", "issue"):
                why = {"bounds": "the bounds are timing.toml's (a fit may not widen them)",
                       "base": "a parameter file names each target it sets",
                       "issue": "the issue ports are sourced facts"}[key]
                raise fail((top, key), f"[{top}.{key}]: a parameter file cannot set it: {why}")
            if key in NUMBER_KEYS:
                items = [((top, key), key, sub)]
            elif key in _PARAMS_SECTIONS:
                if not isinstance(sub, dict):
                    raise fail((top, key), f"{top}.{key} must be a table")
                items = [((top, key, k), f"{key}.{k}", v) for k, v in sub.items()]
            else:
                raise fail((top, key), f"unknown key '{key}' in [{top}]; a parameter file "
                                       f"sets {', '.join(NUMBER_KEYS)} and the tables "
                                       f"{', '.join(NUMBER_TABLES)}")
            for path, pname, value in items:
                bound = tm.bounds.get(pname)
                if bound is None:
                    raise fail(path, f"unknown timing parameter '{pname}' for {top} (its "
                                     f"[{path[1]}] table has "
                                     f"{', '.join(sorted(_names_in(tm, path[1])))})")
                if isinstance(value, bool) or not isinstance(value, int):
                    raise fail(path, f"{top} {pname} = {value!r}: expected a whole number "
                                     "of cycles (or bytes)")
                if value not in bound:
                    raise fail(path, f"{top} {pname} = {value} is outside its bounds "
                                     f"{bound.describe()}")
                values[pname] = value
        out[top] = values
    return TimingParams(source, out)


def _names_in(tm: TimingModel, table: str) -> list[str]:
    return [n.partition(".")[2] or n for n in tm.bounds if n.startswith(f"{table}.")] or \
        [n for n in tm.bounds if "." not in n]


__all__ = ["BANDWIDTH_KEYS", "DISPATCH_KEYS", "ISSUE_PORTS", "LATENCY_FROM_MEMORY",
           "LDS_PHASE_OPTIONAL", "LDS_PHASE_RULES", "MEMORY_KEYS",
           "MEMORY_LATENCY_KEYS", "NUMBER_KEYS", "NUMBER_TABLES", "PARAMETER_KINDS",
           "TIMING_CLASSES", "UNIT_OF_CLASS", "Bound", "MfmaTiming", "TimingModel",
           "TimingParams", "get_timing", "load_params", "number_names", "params_from_dict",
           "timing_class"]
