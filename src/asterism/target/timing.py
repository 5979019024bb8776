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
CUs share); `tm.with_memory(hbm=700)` overrides memory latencies. `tm.bounds` holds the
physical range of the parameters that have one (the `[<target>.bounds]` table: what a
calibrator may fit them within, "section.key" -> (low, high)).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from asterism.errors import TargetError
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
_MFMA_KEYS = {"cycles_per_pass", "dependent_extra", "result_extra"}
_LDS_KEYS = {"bytes_per_cycle", "banks", "conflict_cycles", "phases"}
# LDS phase rules every target defines (asterism.timing.lds: which lanes of a wave64 DS access
# are checked together for bank conflicts), and the ones only some targets have (gfx950's
# transposed reads).
LDS_PHASE_RULES = ("read_b32", "read_b64", "read_b96", "read_b128", "write_b32", "write_b64",
                   "write_b96", "write_b128")
LDS_PHASE_OPTIONAL = ("read_tr_b64", "read_tr_b96")
MEMORY_KEYS = ("lds", "smem", "l2_hit", "hbm", "vmem_unknown", "line_bytes",
               "vmem_bytes_per_cycle", "cycles_per_line")
# What `--latency k=v` may override.
MEMORY_LATENCY_KEYS = ("lds", "smem", "l2_hit", "hbm", "vmem_unknown")
# Latencies of reads that come from the memory section, so that the scheduler's estimate and
# the emulator's timing model use one number (a vector read is costed at HBM: first touch).
LATENCY_FROM_MEMORY = {"smem": "smem", "ds_read": "lds", "vmem_read": "hbm"}
DISPATCH_KEYS = ("wave_launch_interval", "wave_start", "taken_branch", "barrier", "endpgm")
# The whole-grid ceilings: HBM in GB/s (10^9 bytes/s), the L2 in bytes per shader clock per
# channel, channels per XCD, XCDs.
BANDWIDTH_KEYS = ("hbm_gbps", "l2_bytes_per_clock", "l2_channels", "xcds")
ISSUE_PORTS = ("scalar", "valu", "lds", "vmem", "branch")


@dataclass(frozen=True)
class MfmaTiming:
    """MFMA timing: clocks per pass and the extra latency to dependent instructions."""

    cycles_per_pass: int
    dependent_extra: int  # MFMA reading the result as SrcC through the same registers
    result_extra: int  # any other reader (VALU, DS, VMEM, MFMA SrcA/B)


@dataclass(frozen=True)
class TimingModel:
    """Timing parameters of one target (all in shader-clock cycles of one wave)."""

    target: str
    issue_cycles: int
    clock_mhz: int
    latency: Mapping[str, int] = field(default_factory=dict)
    occupancy: Mapping[str, int] = field(default_factory=dict)
    mfma: MfmaTiming = MfmaTiming(4, 0, 4)
    lds_bytes_per_cycle: int = 128
    issue_ports: Mapping[str, str] = field(default_factory=dict)  # timing class -> port
    memory: Mapping[str, int] = field(default_factory=dict)  # see MEMORY_KEYS
    dispatch: Mapping[str, int] = field(default_factory=dict)  # see DISPATCH_KEYS
    lds_banks: int = 32
    lds_conflict_cycles: int = 1  # cycles per extra same-bank access in a phase
    # phase rule (LDS_PHASE_RULES) -> lane-bit masks: bit j of a lane's phase number is the
    # parity of (lane & masks[j]) (asterism.timing.lds)
    lds_phases: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # "section.key" -> (low, high): the physical range of a parameter ([<target>.bounds])
    bandwidth: Mapping[str, float] = field(default_factory=dict)  # see BANDWIDTH_KEYS
    # "section.key" -> (low, high): the physical range of a parameter ([<target>.bounds])
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)

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
        memory = {**self.memory, **overrides}
        return replace(self, memory=memory, latency=_with_memory_latencies(self.latency, memory))

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


def get_timing(target: str) -> TimingModel:
    """The timing model of `target` ("gfx942", "gfx950", or a target ID with features)."""
    from asterism.target import get_target

    return _timing(get_target(target).name)


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
    bad_bw = sorted(k for k, v in bandwidth.items()
                    if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0)
    if bad_bw:
        raise TargetError(f"target/data/{_FILE} [{where}.bandwidth]: {bad_bw} must be "
                          "positive numbers")
    bounds = _bounds(where, sec, dict(sec.get("bounds", {})))
    latency = _with_memory_latencies(latency, memory)
    return TimingModel(name, issue, clock, latency, occupancy, MfmaTiming(**mfma_raw),
                       int(lds_raw["bytes_per_cycle"]), ports, memory, dispatch, banks,
                       conflict, phases, bandwidth, bounds)


def _bounds(where: str, sec: Mapping[str, Any], raw: Mapping[str, Any]
            ) -> dict[str, tuple[float, float]]:
    """The [<target>.bounds] table, checked: each key names a numeric parameter
    ("section.key") whose value lies within its [low, high]."""
    out: dict[str, tuple[float, float]] = {}
    for key, pair in raw.items():
        section, _, name = key.partition(".")
        table = sec.get(section)
        value = table.get(name) if isinstance(table, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TargetError(f"target/data/{_FILE} [{where}.bounds]: '{key}' names no numeric "
                              "parameter (expected \"section.key\", e.g. \"bandwidth.hbm_gbps\")")
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in pair)
                and pair[0] <= pair[1]):
            raise TargetError(f"target/data/{_FILE} [{where}.bounds]: '{key}' must be "
                              f"[low, high] with low <= high, got {pair!r}")
        if not pair[0] <= value <= pair[1]:
            raise TargetError(f"target/data/{_FILE} [{where}]: {key} = {value} is outside "
                              f"its bounds [{pair[0]}, {pair[1]}]")
        out[key] = (pair[0], pair[1])


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


def _bounds(where: str, sec: Mapping[str, Any], raw: Mapping[str, Any]
            ) -> dict[str, tuple[float, float]]:
    """The [<target>.bounds] table, checked: each key names a numeric parameter
    ("section.key") whose value lies within its [low, high]."""
    out: dict[str, tuple[float, float]] = {}
    for key, pair in raw.items():
        section, _, name = key.partition(".")
        table = sec.get(section)
        value = table.get(name) if isinstance(table, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TargetError(f"target/data/{_FILE} [{where}.bounds]: '{key}' names no numeric "
                              "parameter (expected \"section.key\", e.g. \"bandwidth.hbm_gbps\")")
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in pair)
                and pair[0] <= pair[1]):
            raise TargetError(f"target/data/{_FILE} [{where}.bounds]: '{key}' must be "
                              f"[low, high] with low <= high, got {pair!r}")
        if not pair[0] <= value <= pair[1]:
            raise TargetError(f"target/data/{_FILE} [{where}]: {key} = {value} is outside "
                              f"its bounds [{pair[0]}, {pair[1]}]")
        out[key] = (pair[0], pair[1])
    return out


def _with_memory_latencies(latency: Mapping[str, int], memory: Mapping[str, int]
                           ) -> dict[str, int]:
    return {**latency, **{cls: int(memory[key]) for cls, key in LATENCY_FROM_MEMORY.items()}}


def _check_table(where: str, table: Mapping[str, Any], want: set[str]) -> None:
    _check_keys(where, table, want)
    missing = want - set(table)
    if missing:
        raise TargetError(f"target/data/{_FILE} [{where}]: missing {sorted(missing)}")


__all__ = ["BANDWIDTH_KEYS", "DISPATCH_KEYS", "ISSUE_PORTS", "LATENCY_FROM_MEMORY",
           "LDS_PHASE_OPTIONAL", "LDS_PHASE_RULES", "MEMORY_KEYS",
           "MEMORY_LATENCY_KEYS", "TIMING_CLASSES", "UNIT_OF_CLASS", "MfmaTiming", "TimingModel",
           "get_timing", "timing_class"]
