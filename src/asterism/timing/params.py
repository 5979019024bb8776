"""The timing model's parameters and options.

Chip facts (latencies, issue ports, occupancies, memory and dispatch cycles) stay in
asterism/target/data/timing.toml, read by asterism.target.timing (`get_timing`); this module
holds what a timed run adds to them: the user's options (`TimingOptions`: how many CUs to
model, a parameter file over timing.toml (`--params FILE`), memory latency overrides, the
device's CU count, mechanisms turned off: LDS bank conflicts, cache lines, the whole-grid
bandwidth ceiling), the `--latency` text they come from, and the parameter record a result
carries (naming the parameter file).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asterism.errors import AsterismError
from asterism.target.timing import TimingModel, TimingParams, get_timing


class TimingError(AsterismError):
    """Bad timing options (unknown latency name, bad CU count)."""


# Mechanisms a timed run may turn off (TimingOptions.off), to measure what each one moves:
# LDS bank conflicts (lds.py), the vector memory cost by cache lines (memory.py) and the
# whole-grid L2 / HBM bandwidth ceiling (bandwidth.py), and one barrier per workgroup
# (barriers.py; off: one barrier for all waves resident on a CU, the model before issue 23),
# the measured scalar-cache miss (memory.py; off: a cold scalar load pays memory.hbm) and the
# store write-out queue (stores.py; off: a store completes memory.l2_hit after issue) and the
# VALU result paths to other units (valu.py; off: every reader one issue cycle after a VALU);
# the SIMD-pair LDS ports (lds.py; off: only the CU's banks limit a DS instruction) and wave
# priorities (priority.py; off: s_setprio is ignored, waves issue by age alone); the
# instruction cache (icache.py; off: every taken branch costs dispatch.taken_branch); the
# MFMA's hold on packed-FP32 / DOT VALU instructions (mfma.py; off: they issue like any VALU)
# and on DS / vector memory instructions (mfma.py; off: an MFMA does not hold them).
MECHANISMS = ("lds_banks", "vmem_lines", "bandwidth", "wg_barriers", "smem_miss",
              "store_queue", "valu_paths", "lds_ports", "setprio", "icache", "packed_valu",
              "mfma_memory")
# The ones a capture's replay models (it has no addresses: no banks, lines or bandwidth;
# its barrier groups are `trace replay --barrier-groups`), and the lanes' address patterns
# a replay derives from the code (lanes.py; off: every store memory.store_unknown cycles
# of write requests, every load the bytes rule alone).
REPLAY_MECHANISMS = ("smem_miss", "store_queue", "valu_paths", "icache", "lds_ports",
                     "setprio", "lane_patterns", "packed_valu", "mfma_memory")


@dataclass(frozen=True)
class TimingOptions:
    """What a timed run models: `cus` CUs in detail (the first ones), memory latency
    overrides (keys of target.timing.MEMORY_LATENCY_KEYS: lds, smem, l2_hit, hbm; what-if
    values, not bounded), the device's CU count (default: the target's flagship, MI300X 304
    / MI355X 256; a device of fewer CUs has that part of the chip's L2 and HBM bandwidth),
    `params`, a parameter file over timing.toml (a path, or a target.timing.TimingParams;
    its values are checked against their bounds) and the mechanisms turned `off` (names of
    MECHANISMS; "bandwidth" off: each CU's memory path is its only limit; "wg_barriers"
    off: one barrier for all waves resident on a CU)."""

    cus: int = 1
    latency: Mapping[str, int] = field(default_factory=dict)
    compute_units: int | None = None
    params: TimingParams | str | os.PathLike[str] | None = None
    off: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        names = [self.off] if isinstance(self.off, str) else list(self.off)
        bad = sorted(str(n) for n in set(names) - set(MECHANISMS))
        if bad:
            raise TimingError(f"unknown timing mechanism {', '.join(bad)} to turn off; "
                              f"choose from {', '.join(MECHANISMS)}")
        object.__setattr__(self, "off", frozenset(names))

    @staticmethod
    def of(value: bool | TimingOptions | None) -> TimingOptions | None:
        """Options from a `timing=` argument (True: the defaults; False/None: off)."""
        if value is None or value is False:
            return None
        if value is True:
            return TimingOptions()
        if isinstance(value, TimingOptions):
            return value
        raise TimingError(f"timing must be True, False or a TimingOptions, got {value!r}")


def replay_off(names) -> frozenset[str]:
    """The mechanisms a capture's replay leaves out (names of REPLAY_MECHANISMS; checked)."""
    off = frozenset([names] if isinstance(names, str) else names or ())
    bad = sorted(str(n) for n in off - set(REPLAY_MECHANISMS))
    if bad:
        raise TimingError(f"a replay cannot turn off {', '.join(bad)} (it models only "
                          f"{', '.join(REPLAY_MECHANISMS)}: a capture has no addresses; "
                          "barrier groups: --barrier-groups)")
    return off


def parse_latencies(text: str) -> dict[str, int]:
    """`lds=128,hbm=600` -> {"lds": 128, "hbm": 600} (names checked by the model)."""
    out: dict[str, int] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = int(value, 0)
        except ValueError:
            raise TimingError(f"bad latency '{item}': expected NAME=CYCLES, e.g. hbm=600"
                              ) from None
    return out


def model_for(target: str, options: TimingOptions) -> TimingModel:
    """The target's timing parameters, with the options' parameter file and memory latency
    overrides."""
    try:
        return get_timing(target, options.params).with_memory(**dict(options.latency))
    except AsterismError as err:
        raise TimingError(err.message, err.location) from None


def parameters(tm: TimingModel, slots_per_simd: int, workgroups_per_cu: int) -> dict[str, Any]:
    """The parameters a result records (timing.toml's values and the kernel's occupancy)."""
    return {"issue_cycles": tm.issue_cycles, "latency": dict(tm.latency),
            "occupancy": dict(tm.occupancy),
            "mfma": {"cycles_per_pass": tm.mfma.cycles_per_pass,
                     "dependent_extra": tm.mfma.dependent_extra,
                     "result_extra": tm.mfma.result_extra,
                     "packed_extra": tm.mfma.packed_extra,
                     "packed_xdl2x": tm.mfma.packed_xdl2x},
            "lds_bytes_per_cycle": tm.lds_bytes_per_cycle, "lds_banks": tm.lds_banks,
            "lds_conflict_cycles": tm.lds_conflict_cycles,
            "lds_port_read_bytes": tm.lds_port_read_bytes,
            "lds_port_write_bytes": tm.lds_port_write_bytes,
            "lds_write_cycles_per_dword": tm.lds_write_cycles_per_dword,
            "lds_phases": {k: list(v) for k, v in tm.lds_phases.items()},
            "issue_ports": dict(tm.issue_ports), "memory": dict(tm.memory),
            "dispatch": dict(tm.dispatch), "bandwidth": dict(tm.bandwidth),
            "slots_per_simd": slots_per_simd,
            "workgroups_per_cu": workgroups_per_cu, "params_file": tm.source or None}


def params_note(source: str | None) -> str:
    """The summary line naming a parameter file ("" without one)."""
    return f"modeled with parameters from {source} (over asterism's timing.toml)" \
        if source else ""


__all__ = ["MECHANISMS", "REPLAY_MECHANISMS", "TimingError", "TimingOptions", "model_for",
           "parameters", "params_note", "parse_latencies", "replay_off"]
