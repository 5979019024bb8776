"""The decoded thread-trace (ATT) folder of rocprofv3, as a typed model, and its reader.

rocprofv3 ``--att`` captures raw SQTT streams per shader engine (SE); its ATT decoder
(``librocprof-trace-decoder`` driven by rocprofiler-sdk's ``att-tool``) turns them into one
folder per dispatch, ``ui_output_agent_<pid>_dispatch_<n>/``, which AMD's ATT viewer and
our analyzer read. Every file is compact JSON with sorted keys and no trailing newline
(nlohmann::json's default dump), so a writer that emits the same values gives the same bytes.
All times are shader-clock cycles (the gfx clock), on one timeline shared by all files.

Files and fields (what each value means; derived from the decoder's public headers and the
att-tool sources in ROCm/rocprof-trace-decoder and ROCm/rocprofiler-sdk, and checked against
the vendored capture ``tests/data/shared/att/pa_mqa_logits_fp4_small``):

``code.json``  ``{"code": [row...], "header": str, "version": "3.0.0"}``
    One row per static instruction of every kernel the traced waves ran, ordered by line
    number: ``[ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle]``.

    - ISA: disassembly text. A row whose text starts with ``"; "`` is a kernel label (the
      symbol name), placed just before the kernel's first instruction; its Source is the
      demangled name, its Vaddr the kernel's entry, its counters 0.
    - ``_``: always 0 (reserved).
    - LineNumber: the row's id; wave records refer to rows by it. Equal to the row index in
      every capture seen.
    - Source: the debug-line comment (``file:line``, several joined when inlined), "" when
      the code object has no line table.
    - Codeobj: the code-object load id (rocprofiler marker id); 0 if unknown.
    - Vaddr: the ELF virtual address inside that code object (not the runtime address).
    - Hit, Latency, Stall, Idle: sums over all decoded waves of: executions, ``duration``,
      ``stall``, and the idle gap ``max(time - prev_end, 0)`` where ``prev_end`` is the
      latest ``time + duration`` of the wave so far (initially the wave's begin). Records
      that point at row 0's label (unknown PC) are skipped. :func:`compute_code_stats`
      recomputes them exactly.

``se<SE>_sm<SIMD>_sl<SLOT>_wv<N>.json``  one per traced wave
    ``{"duration", "name", "num_insts", "num_stitched", "wave": {...}}``: ``name`` is
    ``"SE<SE>"``, ``duration`` is ``end - begin``, ``num_insts``/``num_stitched`` the number
    of instruction records (equal when stitching was complete). In the file name ``sm`` is
    the SIMD (not the CU), ``sl`` the wave slot within the SIMD and ``wv`` counts the waves
    that occupied that SIMD/slot (0 for the first). ``wave`` holds:

    - ``cu`` (the traced CU; the file name does not carry it), ``simd``, ``slot``, ``id``
      (= ``wv``), ``begin``/``end`` (wave start/end cycles, as in occupancy).
    - ``instructions``: ``[time, category, stall, duration, line]`` per executed
      instruction in execution order. ``time`` is when the wave first tried to issue it,
      ``time + stall`` when it issued, ``time + duration`` when issue completed (gfx9:
      ``duration = stall + issue cycles``). ``category`` is an ``InstCategory`` code,
      ``line`` a code.json LineNumber.
    - ``timeline``: ``[state, cycles]`` runs of ``WaveState`` codes, back to back from
      ``begin`` (the sum can overrun ``end`` by a few cycles).
    (Both code tables are in asterism/timing/result.py, with the timing model that records
    them.)
    - ``waitcnt``: ``[line, [[producer_line, 0], ...]]`` per executed ``s_waitcnt`` that
      drained memory instructions: the static lines of the loads/stores it waited for. A
      wait on both lgkmcnt and vmcnt gives two entries (lgkmcnt first). The second item of
      each pair is always 0 (reserved by the decoder).
    Empty lists are written as ``null`` by the decoder; the reader accepts both.

``filenames.json``
    ``{"counter_names": [...], "gfxip": 9, "gfxv": "vega"|"navi", "global_begin_time": 0,
    "version", "wave_filenames": {SE: {SIMD: {SLOT: {N: [file, begin, end]}}}}}``: the wave
    index the viewer loads. gfxip is the major GFX IP (9 for gfx942/gfx950).

``occupancy.json``
    ``{"<SE>": [[time, cu, simd, slot, start, kernel_id], ...], "dispatches": {id: name},
    "version"}``: wave start (``start`` = 1) and end (0) events of every wave on the SE's
    traced CUs, not only the waves that have files. ``kernel_id`` indexes ``dispatches``;
    id 0 is the decoder's placeholder for an unknown entry point (``"0 / 0x0"``).

``wstates<S>.json``  for each ``WaveState`` S that occurred
    ``{"name", "state": [n...], "time": [t...]}``: a step function, the number of traced
    waves in state S from ``time[i]`` on; derived from the timelines
    (:func:`compute_wstates` reproduces it exactly).

``realtime.json``  (decoders with rocprof-trace-decoder >= 0.1.3)
    ``{"SE<n>": [[gfx_clock, realtime_clock], ...], "metadata": {"descriptor":
    "[gfx_clock, realtime_clock]", "frequency": Hz}}``: clock pairs to convert cycles to
    seconds; ``realtime_clock / frequency`` is seconds.

``snapshots.json`` and ``source_<n>_<name>``  (when the decoder was given the sources)
    Copies of the source files the code rows point to. ``snapshots.json`` is the directory
    tree of the original paths, ``{"/": {"dir": {... {"file.py": "source_0_file.py"}}}}``,
    each leaf naming the copy in the folder. :func:`source_files` reads them.

These and other files (perf-counter files) are kept as bytes and written back unchanged.

A trace produced by a timing model (not hardware) carries ``"asterism": {"modeled": true,
"producer": ...}`` in ``filenames.json``; the viewer ignores the key, the analyzer states it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asterism.errors import AsterismError
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc
from asterism.textio import (
    decode_text,
    load_json_bounded,
    parse_json_bounded,
    read_input_file,
)
from asterism.timing.result import InstCategory, WaveState

FORMAT_VERSION = "3.0.0"
CODE_HEADER = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
REALTIME_DESCRIPTOR = "[gfx_clock, realtime_clock]"
MODEL_KEY = "asterism"

CODE_FILE = "code.json"
FILENAMES_FILE = "filenames.json"
OCCUPANCY_FILE = "occupancy.json"
REALTIME_FILE = "realtime.json"
SNAPSHOTS_FILE = "snapshots.json"
# (ASCII digits, at most 9: a file whose numbers are past INDEX is not a wave file.)
WAVE_FILE_RE = re.compile(r"^se(\d{1,9})_sm(\d{1,9})_sl(\d{1,9})_wv(\d{1,9})\.json$",
                          re.ASCII)
WSTATES_FILE_RE = re.compile(r"^wstates(\d{1,3})\.json$", re.ASCII)
_REALTIME_SE_RE = re.compile(r"^SE(\d+)$", re.ASCII)
# Bytes of the other files of a capture (source copies, counter files), which are kept in
# memory and written back: together at most this.
EXTRA_FILES_MAX_BYTES = 1 << 30


class TraceError(AsterismError):
    """A thread-trace folder that is missing, corrupt or inconsistent, or cannot be written."""


def category_name(code: int) -> str:
    """Name of an instruction category code (``CATEGORY_<n>`` if unknown)."""
    try:
        return InstCategory(code).name
    except ValueError:
        return f"CATEGORY_{code}"


def state_name(code: int) -> str:
    """Name of a wave state code (``STATE_<n>`` if unknown)."""
    try:
        return WaveState(code).name
    except ValueError:
        return f"STATE_{code}"


@dataclass(frozen=True, slots=True)
class CodeRow:
    """One code.json row: a static instruction (or kernel label) and its totals."""

    line: int
    isa: str
    source: str = ""
    codeobj: int = 0
    vaddr: int = 0
    hit: int = 0
    latency: int = 0
    stall: int = 0
    idle: int = 0
    reserved: int = 0  # the "_" column, always 0

    @property
    def is_label(self) -> bool:
        """True for the ``; kernel_name`` rows that precede each kernel."""
        return self.isa.startswith(";")


@dataclass
class CodeListing:
    """code.json: the static instructions, in line order."""

    rows: list[CodeRow]
    version: str = FORMAT_VERSION
    header: str = CODE_HEADER
    extra: dict[str, Any] = field(default_factory=dict)
    _index: tuple[int, int, dict[int, CodeRow]] | None = field(
        default=None, init=False, repr=False, compare=False)

    def row(self, line: int) -> CodeRow | None:
        """The row with LineNumber `line`, or None."""
        # Rebuild the index when `rows` was replaced or resized since it was built.
        if self._index is None or self._index[:2] != (id(self.rows), len(self.rows)):
            self._index = (id(self.rows), len(self.rows), {r.line: r for r in self.rows})
        return self._index[2].get(line)

    def kernel_names(self) -> list[str]:
        """Names of the kernels in the listing (from the label rows)."""
        return [row.isa[1:].strip() for row in self.rows if row.is_label]


@dataclass(frozen=True, slots=True)
class InstRecord:
    """One executed instruction of a wave: ``[time, category, stall, duration, line]``."""

    time: int
    category: int
    stall: int
    duration: int
    line: int
    extra: tuple[Any, ...] = ()  # trailing items a newer decoder may add; kept verbatim

    @property
    def issue_time(self) -> int:
        """Cycle at which the instruction issued (after its stall)."""
        return self.time + self.stall

    @property
    def end_time(self) -> int:
        """Cycle at which issue completed."""
        return self.time + self.duration

    @property
    def category_name(self) -> str:
        """Name of the category code."""
        return category_name(self.category)


# The reader makes hundreds of thousands of records: it fills their slots directly, without
# the frozen dataclass __init__'s object.__setattr__ call per field (same objects: equal,
# same hash).
_SLOT_SETTERS = tuple(InstRecord.__dict__[name].__set__
                      for name in ("time", "category", "stall", "duration", "line", "extra"))


def _plain_record(time: int, category: int, stall: int, duration: int, line: int,
                  _new: Any = object.__new__, _set: tuple = _SLOT_SETTERS) -> InstRecord:
    """``InstRecord(time, category, stall, duration, line)``, made faster (see above)."""
    rec = _new(InstRecord)
    _set[0](rec, time)
    _set[1](rec, category)
    _set[2](rec, stall)
    _set[3](rec, duration)
    _set[4](rec, line)
    _set[5](rec, ())
    return rec


@dataclass(frozen=True, slots=True)
class StateSpan:
    """One run of the wave timeline: ``cycles`` cycles in ``state``."""

    state: int
    cycles: int

    @property
    def state_name(self) -> str:
        """Name of the state code."""
        return state_name(self.state)


@dataclass(frozen=True, slots=True)
class WaitcntLink:
    """A waitcnt link: the s_waitcnt at ``line`` drained the memory instructions ``deps``.

    ``deps`` are ``(producer_line, reserved)`` pairs as in the file (reserved is always 0).
    """

    line: int
    deps: tuple[tuple[int, int], ...]

    @property
    def producers(self) -> tuple[int, ...]:
        """Static lines of the memory instructions waited on."""
        return tuple(dep for dep, _ in self.deps)


@dataclass
class Wave:
    """One traced wave (a ``se*_sm*_sl*_wv*.json`` file)."""

    se: int
    simd: int
    slot: int
    id: int
    cu: int
    begin: int
    end: int
    instructions: list[InstRecord] = field(default_factory=list)
    timeline: list[StateSpan] = field(default_factory=list)
    waitcnt: list[WaitcntLink] = field(default_factory=list)
    name: str | None = None  # "SE<se>" unless the file said otherwise
    num_insts: int | None = None  # default: len(instructions)
    num_stitched: int | None = None  # default: len(instructions)
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys of the "wave" object
    file_extra: dict[str, Any] = field(default_factory=dict)  # unknown top-level keys

    def __post_init__(self) -> None:
        if self.name is None:
            self.name = f"SE{self.se}"
        if self.num_insts is None:
            self.num_insts = len(self.instructions)
        if self.num_stitched is None:
            self.num_stitched = len(self.instructions)

    @property
    def filename(self) -> str:
        """The file name the decoder gives this wave."""
        return f"se{self.se}_sm{self.simd}_sl{self.slot}_wv{self.id}.json"

    @property
    def duration(self) -> int:
        """Wave lifetime in cycles (``end - begin``)."""
        return self.end - self.begin

    def state_cycles(self) -> dict[int, int]:
        """Cycles per wave-state code, summed over the timeline."""
        out: dict[int, int] = {}
        for span in self.timeline:
            out[span.state] = out.get(span.state, 0) + span.cycles
        return out


@dataclass(frozen=True, slots=True)
class OccupancyEvent:
    """A wave start (``start`` = 1) or end (0) on a CU/SIMD/slot."""

    time: int
    cu: int
    simd: int
    slot: int
    start: int
    kernel_id: int


@dataclass
class Occupancy:
    """occupancy.json: wave start/end events per SE and the kernel names by id."""

    events: dict[int, list[OccupancyEvent]] = field(default_factory=dict)
    dispatches: dict[int, str] = field(default_factory=lambda: {0: "0 / 0x0"})
    version: str = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class WaveStateSeries:
    """wstates<S>.json: number of traced waves in state ``state`` from ``time[i]`` on."""

    state: int
    time: list[int]
    count: list[int]
    name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name is None:
            self.name = f"wstates{self.state}.json"


RECORD_COLUMNS = ("time", "category", "stall", "duration", "line")  # of record_array


def record_array(wave: Wave) -> Any:
    """The wave's instruction records as an int64 NumPy array of shape (records, 5), columns
    :data:`RECORD_COLUMNS` (the reader bounds every value: exact in int64)."""
    import numpy as np

    recs = wave.instructions
    n = len(recs)
    return np.fromiter((v for r in recs for v in (r.time, r.category, r.stall, r.duration,
                                                   r.line)),
                       dtype=np.int64, count=5 * n).reshape(n, 5)


def record_arrays(trace: Trace) -> list[Any]:
    """:func:`record_array` of every wave of the trace, in wave order (made once by a caller
    whose analysis and pictures both read them)."""
    return [record_array(w) for w in trace.waves]


@dataclass
class Realtime:
    """realtime.json: ``(gfx_clock, realtime_clock)`` pairs per SE; realtime ticks at
    ``frequency`` Hz."""

    samples: dict[int, list[tuple[int, int]]]
    frequency: int
    descriptor: str = REALTIME_DESCRIPTOR
    metadata_extra: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def shader_clock_hz(self) -> float | None:
        """Average shader clock (Hz) over the samples of all SEs, or None if unknown."""
        cycles = seconds = 0.0
        for pairs in self.samples.values():
            if len(pairs) >= 2 and self.frequency > 0:
                cycles += pairs[-1][0] - pairs[0][0]
                seconds += (pairs[-1][1] - pairs[0][1]) / self.frequency
        return cycles / seconds if seconds > 0 else None


@dataclass
class TraceInfo:
    """filenames.json apart from the wave index (which is derived from the waves)."""

    gfxip: int = 9
    gfxv: str = "vega"
    version: str = FORMAT_VERSION
    global_begin_time: int = 0
    counter_names: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trace:
    """A whole decoded ATT folder."""

    code: CodeListing
    waves: list[Wave]
    info: TraceInfo = field(default_factory=TraceInfo)
    occupancy: Occupancy | None = None
    wstates: dict[int, WaveStateSeries] = field(default_factory=dict)
    realtime: Realtime | None = None
    modeled: bool = False  # True: cycles come from a timing model, not hardware
    producer: str | None = None  # who made a modeled trace (e.g. "asterism emu timing model")
    extra_files: dict[str, bytes] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)
    # Entries of the folder the reader did not read: (name, why): links (never followed),
    # subfolders, FIFOs and devices.
    skipped: list[tuple[str, str]] = field(default_factory=list, compare=False)

    def kernel_names(self) -> list[str]:
        """Kernel names, from the code listing's labels (else occupancy's dispatch names)."""
        names = self.code.kernel_names()
        if not names and self.occupancy is not None:
            names = [n for i, n in sorted(self.occupancy.dispatches.items()) if i != 0]
        return names


def _snapshot_leaves(node: Any, prefix: str, out: dict[str, str]) -> None:
    if isinstance(node, str):
        out[prefix] = node
    elif isinstance(node, dict):
        for name, child in node.items():
            path = name if not prefix else prefix.rstrip("/") + "/" + name
            _snapshot_leaves(child, path, out)


def source_files(trace: Trace) -> dict[str, list[str]]:
    """The source files a capture ships (``snapshots.json``): original path -> its lines."""
    raw = trace.extra_files.get(SNAPSHOTS_FILE)
    if raw is None:
        return {}
    where = str(trace.path / SNAPSHOTS_FILE if trace.path is not None else SNAPSHOTS_FILE)
    tree = parse_json_bounded(decode_text(raw, where, TraceError), where, TraceError)
    leaves: dict[str, str] = {}
    _snapshot_leaves(tree, "", leaves)
    out: dict[str, list[str]] = {}
    for path, copy in leaves.items():
        data = trace.extra_files.get(copy)
        if data is not None:  # an index entry without its copy gives no text
            out[path] = data.decode("utf-8", errors="replace").splitlines()
    return out


# ---------------------------------------------------------------------------- derived data


def compute_code_stats(code: CodeListing, waves: Iterable[Wave]) -> CodeListing:
    """code.json's Hit/Latency/Stall/Idle recomputed from wave records, as the decoder does."""
    sums: dict[int, list[int]] = {}
    for wave in waves:
        prev_end = wave.begin
        for rec in wave.instructions:
            row = code.row(rec.line)
            if row is None or row.is_label:
                # The decoder skips records with an unknown PC (mapped to the label row)
                # without advancing prev_end; do the same so the sums match.
                continue
            acc = sums.setdefault(rec.line, [0, 0, 0, 0])
            acc[0] += 1
            acc[1] += rec.duration
            acc[2] += rec.stall
            acc[3] += max(rec.time - prev_end, 0)
            prev_end = max(prev_end, rec.time + rec.duration)
    rows = []
    for row in code.rows:
        hit, latency, stall, idle = sums.get(row.line, (0, 0, 0, 0))
        rows.append(
            CodeRow(row.line, row.isa, row.source, row.codeobj, row.vaddr,
                    hit, latency, stall, idle, row.reserved)
        )
    return CodeListing(rows, code.version, code.header, dict(code.extra))


def compute_wstates(waves: Iterable[Wave]) -> dict[int, WaveStateSeries]:
    """The wstates<S>.json step functions derived from the wave timelines."""
    events: dict[int, list[tuple[int, int]]] = {}
    for wave in waves:
        t = wave.begin
        for span in wave.timeline:
            ev = events.setdefault(span.state, [])
            ev.append((t, 1))
            ev.append((t + span.cycles, -1))
            t += span.cycles
    out: dict[int, WaveStateSeries] = {}
    for state in sorted(events):
        times: list[int] = []
        counts: list[int] = []
        level = 0
        # Several events at one cycle collapse to one point holding the final level.
        for t, delta in sorted(events[state], key=lambda e: e[0]):
            level += delta
            if times and times[-1] == t:
                counts[-1] = level
            else:
                times.append(t)
                counts.append(level)
        out[state] = WaveStateSeries(state, times, counts)
    return out


def occupancy_from_waves(waves: Iterable[Wave], kernel_name: str, se_filter: int | None = None
                         ) -> Occupancy:
    """Occupancy events for exactly the given waves (for modeled traces; kernel id 1)."""
    events: dict[int, list[OccupancyEvent]] = {}
    for wave in waves:
        if se_filter is not None and wave.se != se_filter:
            continue
        lst = events.setdefault(wave.se, [])
        lst.append(OccupancyEvent(wave.begin, wave.cu, wave.simd, wave.slot, 1, 1))
        lst.append(OccupancyEvent(wave.end, wave.cu, wave.simd, wave.slot, 0, 1))
    for lst in events.values():
        lst.sort(key=lambda e: (e.time, -e.start))
    return Occupancy(events, {0: "0 / 0x0", 1: kernel_name})


# ---------------------------------------------------------------------------- reader


class _Ctx:
    """Where a value came from, for error messages: file and JSON path (built only when an
    error needs it: a capture has hundreds of thousands of values)."""

    __slots__ = ("file", "key", "parent")

    def __init__(self, file: Path, parent: _Ctx | None = None, key: str | int | None = None):
        self.file = file
        self.parent = parent
        self.key = key

    def at(self, key: str | int) -> _Ctx:
        return _Ctx(self.file, self, key)

    @property
    def where(self) -> str:
        keys, ctx = [], self
        while ctx is not None and ctx.parent is not None:
            keys.append(f"[{ctx.key!r}]" if isinstance(ctx.key, str) else f"[{ctx.key}]")
            ctx = ctx.parent
        return "".join(reversed(keys))

    def fail(self, what: str) -> TraceError:
        where = f" at {self.where}" if self.where else ""
        return TraceError(f"{self.file}{where}: {what}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


# Value ranges of the integers of a capture, checked when read: what follows (NumPy int64
# arrays, float64 pixel positions, the HTML view's JavaScript numbers, the timing model's
# event clock) is exact and cannot overflow within them.
CYCLES = (0, 2**53 - 1)  # times and cycle counts: exact as float64 (2^53 cycles: ~52 days)
INDEX = (0, 2**31 - 1)  # line numbers, CU/SIMD/slot/wave numbers, ids, counts
CODE = (0, 255)  # instruction category, wave state, GFX IP
U64 = (0, 2**64 - 1)  # addresses, code-object ids
I64 = (-(2**63), 2**63 - 1)  # the reserved columns (always 0)
_RECORD_LIMITS = (CYCLES, CODE, CYCLES, CYCLES, INDEX)  # [time, category, stall, dur, line]


def _int(value: Any, ctx: _Ctx, limits: tuple[int, int] = I64) -> int:
    # bool is an int subclass in Python; JSON true/false is never a valid count or time.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.fail(f"expected an integer, got {_kind(value)}")
    lo, hi = limits
    if not lo <= value <= hi:
        raise ctx.fail(f"{value} is out of range (expected {lo} to {hi})")
    return value


def _ints(raw: list[Any], ctx: _Ctx, limits: tuple[tuple[int, int], ...]) -> list[int]:
    """The first len(limits) items of `raw`, each an integer within its limits (checked in
    one pass; the located error of the first bad one otherwise)."""
    values = raw[:len(limits)]
    if all(type(v) is int and lo <= v <= hi for v, (lo, hi) in zip(values, limits,
                                                                   strict=True)):
        return values
    return [_int(v, ctx.at(j), lim) for j, (v, lim) in enumerate(zip(values, limits,
                                                                      strict=True))]


def _decimal(key: str, ctx: _Ctx, what: str) -> int | None:
    """The number a key spells in ASCII decimal digits (None if it does not), within INDEX
    (a longer one is an error: Python would not even convert 5000 digits)."""
    if not (key.isascii() and key.isdigit()):
        return None
    if len(key) > 10 or int(key) > INDEX[1]:
        shown = key if len(key) <= 20 else f"{key[:12]}... ({len(key)} digits)"
        raise ctx.fail(f"{what} {shown} is out of range (expected {INDEX[0]} to {INDEX[1]})")
    return int(key)


def _str(value: Any, ctx: _Ctx) -> str:
    if not isinstance(value, str):
        raise ctx.fail(f"expected a string, got {_kind(value)}")
    return value


def _list(value: Any, ctx: _Ctx, *, null_ok: bool = False) -> list[Any]:
    if value is None and null_ok:
        return []
    if not isinstance(value, list):
        raise ctx.fail(f"expected a list, got {_kind(value)}")
    return value


def _obj(value: Any, ctx: _Ctx) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ctx.fail(f"expected an object, got {_kind(value)}")
    return value


def _key(obj: dict[str, Any], key: str, ctx: _Ctx) -> Any:
    if key not in obj:
        raise ctx.fail(f"missing key {key!r}")
    return obj[key]


def _load_json(file: Path) -> Any:
    # A file of the capture: a regular file inside its folder (never through a link), of
    # bounded size and nesting.
    return load_json_bounded(file, follow_links=False, error=TraceError)


def _read_code(file: Path) -> CodeListing:
    ctx = _Ctx(file)
    data = _obj(_load_json(file), ctx)
    raw_rows = _list(_key(data, "code", ctx), ctx.at("code"), null_ok=True)
    rows: list[CodeRow] = []
    seen: set[int] = set()
    for i, raw in enumerate(raw_rows):
        rc = ctx.at("code").at(i)
        raw = _list(raw, rc)
        if len(raw) != 10:
            raise rc.fail(f"expected 10 columns ({CODE_HEADER}), got {len(raw)}")
        row = CodeRow(
            line=_int(raw[2], rc.at(2), INDEX), isa=_str(raw[0], rc.at(0)),
            source=_str(raw[3], rc.at(3)), codeobj=_int(raw[4], rc.at(4), U64),
            vaddr=_int(raw[5], rc.at(5), U64), hit=_int(raw[6], rc.at(6), CYCLES),
            latency=_int(raw[7], rc.at(7), CYCLES), stall=_int(raw[8], rc.at(8), CYCLES),
            idle=_int(raw[9], rc.at(9), CYCLES), reserved=_int(raw[1], rc.at(1)),
        )
        if row.line in seen:
            raise rc.fail(f"LineNumber {row.line} appears twice")
        seen.add(row.line)
        rows.append(row)
    extra = {k: v for k, v in data.items() if k not in ("code", "version", "header")}
    return CodeListing(
        rows,
        version=_str(data.get("version", FORMAT_VERSION), ctx.at("version")),
        header=_str(data.get("header", CODE_HEADER), ctx.at("header")),
        extra=extra,
    )


_WAVE_TOP_KEYS = ("duration", "name", "num_insts", "num_stitched", "wave")
_WAVE_KEYS = ("begin", "cu", "end", "id", "instructions", "simd", "slot", "timeline", "waitcnt")


def _plain_deps(raw: list[Any]) -> tuple[tuple[int, int], ...] | None:
    """A waitcnt link's ``[[producer_line, 0], ...]`` when every pair is plainly valid
    (None: read it the located way, which names what is wrong)."""
    out = []
    for dep in raw:
        if type(dep) is list and len(dep) == 2:
            line, reserved = dep
            if type(line) is int and type(reserved) is int and 0 <= line <= INDEX[1] \
                    and I64[0] <= reserved <= I64[1]:
                out.append((line, reserved))
                continue
        return None
    return tuple(out)


def _read_wave(file: Path, ident: tuple[int, int, int, int]) -> Wave:
    ctx = _Ctx(file)
    data = _obj(_load_json(file), ctx)
    wc = ctx.at("wave")
    w = _obj(_key(data, "wave", ctx), wc)
    se, simd, slot, wid = ident
    fields = {k: _int(_key(w, k, wc), wc.at(k), CYCLES if k in ("begin", "end") else INDEX)
              for k in ("cu", "simd", "slot", "id", "begin", "end")}
    for key, expect in (("simd", simd), ("slot", slot), ("id", wid)):
        if fields[key] != expect:
            raise wc.at(key).fail(
                f"the file name says {key} {expect} but the wave record says {fields[key]}"
            )
    insts: list[InstRecord] = []
    ic = wc.at("instructions")
    top, idx = CYCLES[1], INDEX[1]
    for i, raw in enumerate(_list(w.get("instructions"), ic, null_ok=True)):
        # The common record, checked inline (no error context built: a capture has hundreds
        # of thousands); anything else goes the located way below.
        if type(raw) is list and len(raw) == 5:
            t, c, st, d, ln = raw
            if type(t) is int and type(c) is int and type(st) is int and type(d) is int \
                    and type(ln) is int and 0 <= t <= top and 0 <= c <= 255 \
                    and 0 <= st <= top and 0 <= d <= top and 0 <= ln <= idx:
                insts.append(_plain_record(t, c, st, d, ln))
                continue
        rc = ic.at(i)
        raw = _list(raw, rc)
        if len(raw) < 5:
            raise rc.fail(f"expected [time, category, stall, duration, line], got {len(raw)} "
                          "items")
        # [time, category, stall, duration, line]
        vals = _ints(raw, rc, _RECORD_LIMITS)
        insts.append(InstRecord(*vals, extra=tuple(raw[5:])))
    timeline: list[StateSpan] = []
    tc = wc.at("timeline")
    for i, raw in enumerate(_list(w.get("timeline"), tc, null_ok=True)):
        if type(raw) is list and len(raw) == 2:  # the common entry, checked inline
            state, cycles = raw
            if type(state) is int and type(cycles) is int and 0 <= state <= 255 \
                    and 0 <= cycles <= top:
                timeline.append(StateSpan(state, cycles))
                continue
        rc = tc.at(i)
        raw = _list(raw, rc)
        if len(raw) != 2:
            raise rc.fail(f"expected [state, cycles], got {len(raw)} items")
        timeline.append(StateSpan(*_ints(raw, rc, (CODE, CYCLES))))
    links: list[WaitcntLink] = []
    lc = wc.at("waitcnt")
    for i, raw in enumerate(_list(w.get("waitcnt"), lc, null_ok=True)):
        if type(raw) is list and len(raw) == 2 and type(raw[0]) is int \
                and 0 <= raw[0] <= idx and type(raw[1]) is list:  # the common link, inline
            deps = _plain_deps(raw[1])
            if deps is not None:
                links.append(WaitcntLink(raw[0], deps))
                continue
        rc = lc.at(i)
        raw = _list(raw, rc)
        if len(raw) != 2:
            raise rc.fail(f"expected [line, [[producer, 0], ...]], got {len(raw)} items")
        deps = []
        for j, dep in enumerate(_list(raw[1], rc.at(1), null_ok=True)):
            dc = rc.at(1).at(j)
            dep = _list(dep, dc)
            if len(dep) != 2:
                raise dc.fail(f"expected [producer_line, 0], got {len(dep)} items")
            deps.append((_int(dep[0], dc.at(0), INDEX), _int(dep[1], dc.at(1))))
        links.append(WaitcntLink(_int(raw[0], rc.at(0), INDEX), tuple(deps)))
    name = data.get("name")
    return Wave(
        se=se, simd=simd, slot=slot, id=wid, cu=fields["cu"],
        begin=fields["begin"], end=fields["end"], instructions=insts, timeline=timeline,
        waitcnt=links,
        name=_str(name, ctx.at("name")) if name is not None else None,
        num_insts=(_int(data["num_insts"], ctx.at("num_insts"), INDEX)
                   if "num_insts" in data else None),
        num_stitched=(_int(data["num_stitched"], ctx.at("num_stitched"), INDEX)
                      if "num_stitched" in data else None),
        extra={k: v for k, v in w.items() if k not in _WAVE_KEYS},
        file_extra={k: v for k, v in data.items() if k not in _WAVE_TOP_KEYS},
    )


def _read_filenames(file: Path) -> tuple[TraceInfo, dict[tuple[int, int, int, int], str],
                                         bool, str | None]:
    ctx = _Ctx(file)
    data = _obj(_load_json(file), ctx)
    index: dict[tuple[int, int, int, int], str] = {}
    wf = ctx.at("wave_filenames")
    raw_index = data.get("wave_filenames")
    for se_k, simds in (_obj(raw_index, wf) if raw_index is not None else {}).items():
        for simd_k, slots in _obj(simds, wf.at(se_k)).items():
            for slot_k, ids in _obj(slots, wf.at(se_k).at(simd_k)).items():
                for id_k, entry in _obj(ids, wf.at(se_k).at(simd_k).at(slot_k)).items():
                    ec = wf.at(se_k).at(simd_k).at(slot_k).at(id_k)
                    entry = _list(entry, ec)
                    if len(entry) != 3:
                        raise ec.fail(f"expected [file, begin, end], got {len(entry)} items")
                    ident = tuple(_decimal(k, ec, "number") for k in (se_k, simd_k, slot_k,
                                                                       id_k))
                    if None in ident:
                        raise ec.fail("SE/SIMD/slot/wave keys must be decimal numbers")
                    index[ident] = _str(entry[0], ec.at(0))  # type: ignore[index]
    counters = [_str(c, ctx.at("counter_names").at(i))
                for i, c in enumerate(_list(data.get("counter_names", []),
                                            ctx.at("counter_names"), null_ok=True))]
    marker = data.get(MODEL_KEY)
    modeled, producer = False, None
    if marker is not None:
        mc = ctx.at(MODEL_KEY)
        marker = _obj(marker, mc)
        modeled = marker.get("modeled") is True
        producer = marker.get("producer")
        if producer is not None:
            producer = _str(producer, mc.at("producer"))
    known = ("counter_names", "gfxip", "gfxv", "global_begin_time", "version",
             "wave_filenames", MODEL_KEY)
    info = TraceInfo(
        gfxip=_int(data.get("gfxip", 9), ctx.at("gfxip"), CODE),
        gfxv=_str(data.get("gfxv", "vega"), ctx.at("gfxv")),
        version=_str(data.get("version", FORMAT_VERSION), ctx.at("version")),
        global_begin_time=_int(data.get("global_begin_time", 0), ctx.at("global_begin_time"),
                               CYCLES),
        counter_names=counters,
        extra={k: v for k, v in data.items() if k not in known},
    )
    return info, index, modeled, producer


def _read_occupancy(file: Path) -> Occupancy:
    ctx = _Ctx(file)
    data = _obj(_load_json(file), ctx)
    occ = Occupancy(events={}, dispatches={}, version=FORMAT_VERSION)
    for key, value in data.items():
        kc = ctx.at(key)
        se = _decimal(key, kc, "SE number")
        if key == "dispatches":
            for kid, name in _obj(value, kc).items():
                number = _decimal(kid, kc, "dispatch id")
                if number is None:
                    raise kc.fail(f"dispatch id {kid!r} is not a number")
                occ.dispatches[number] = _str(name, kc.at(kid))
        elif key == "version":
            occ.version = _str(value, kc)
        elif se is not None:
            events = []
            for i, raw in enumerate(_list(value, kc, null_ok=True)):
                rc = kc.at(i)
                raw = _list(raw, rc)
                if len(raw) != 6:
                    raise rc.fail("expected [time, cu, simd, slot, start, kernel_id], got "
                                  f"{len(raw)} items")
                # [time, cu, simd, slot, start, kernel_id]
                events.append(OccupancyEvent(*_ints(raw, rc, (CYCLES, INDEX, INDEX, INDEX,
                                                              CODE, INDEX))))
            occ.events[se] = events
        else:
            occ.extra[key] = value
    return occ


def _read_wstates(file: Path, state: int) -> WaveStateSeries:
    ctx = _Ctx(file)
    data = _obj(_load_json(file), ctx)
    times = [_int(t, ctx.at("time").at(i), CYCLES)
             for i, t in enumerate(_list(_key(data, "time", ctx), ctx.at("time")))]
    counts = [_int(s, ctx.at("state").at(i), INDEX)
              for i, s in enumerate(_list(_key(data, "state", ctx), ctx.at("state")))]
    if len(times) != len(counts):
        raise ctx.fail(f"'time' has {len(times)} entries but 'state' has {len(counts)}")
    name = data.get("name")
    return WaveStateSeries(
        state, times, counts, _str(name, ctx.at("name")) if name is not None else None,
        extra={k: v for k, v in data.items() if k not in ("time", "state", "name")},
    )


def _read_realtime(file: Path) -> Realtime:
    ctx = _Ctx(file)
    data = _obj(_load_json(file), ctx)
    mc = ctx.at("metadata")
    meta = _obj(_key(data, "metadata", ctx), mc)
    rt = Realtime(
        samples={},
        frequency=_int(_key(meta, "frequency", mc), mc.at("frequency"), CYCLES),
        descriptor=_str(meta.get("descriptor", REALTIME_DESCRIPTOR), mc.at("descriptor")),
        metadata_extra={k: v for k, v in meta.items() if k not in ("frequency", "descriptor")},
    )
    for key, value in data.items():
        if key == "metadata":
            continue
        m = _REALTIME_SE_RE.match(key)
        se = _decimal(m.group(1), ctx.at(key), "SE number") if m is not None else None
        if se is None:
            rt.extra[key] = value
            continue
        pairs = []
        for i, raw in enumerate(_list(value, ctx.at(key), null_ok=True)):
            rc = ctx.at(key).at(i)
            raw = _list(raw, rc)
            if len(raw) != 2:
                raise rc.fail(f"expected [gfx_clock, realtime_clock], got {len(raw)} items")
            pairs.append((_int(raw[0], rc.at(0), CYCLES), _int(raw[1], rc.at(1), CYCLES)))
        rt.samples[se] = pairs
    return rt


def folder_entries(root: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """The regular files of the capture folder `root` (names, sorted) and the entries that
    are not read, with why: a symbolic link is never followed (it could point anywhere, and
    a bundle made to be shared would carry what it points to), a subfolder is not part of
    the layout, a FIFO or device is not a file."""
    files, skipped = [], []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        raise TraceError(f"{root}: cannot list the folder: {exc.strerror or exc}") from None
    for entry in entries:
        try:
            if entry.is_symlink():
                skipped.append((entry.name, "a symbolic link (links in a capture folder are "
                                            "not followed)"))
            elif entry.is_file(follow_symlinks=False):
                files.append(entry.name)
            elif entry.is_dir(follow_symlinks=False):
                skipped.append((entry.name, "a folder (not part of the capture layout)"))
            else:
                skipped.append((entry.name, "not a regular file"))
        except OSError as exc:
            skipped.append((entry.name, f"cannot be examined: {exc.strerror or exc}"))
    return files, skipped


def read_att(path: str | Path) -> Trace:
    """Read a decoded ATT folder (``ui_output_agent_*_dispatch_*``) into a :class:`Trace`.

    Only the regular files directly in the folder are read, never through a symbolic link:
    code.json, filenames.json or a listed wave file that is a link is an error, any other
    link is left out and named in ``Trace.skipped``. Each file is bounded in size
    (:data:`asterism.textio.INPUT_MAX_BYTES`) and the files kept as bytes together by
    :data:`EXTRA_FILES_MAX_BYTES`."""
    root = Path(path)
    if not root.exists():
        raise TraceError(f"{root}: no such trace folder")
    if not root.is_dir():
        raise TraceError(f"{root}: not a folder (expected a decoded ATT folder, the "
                         "ui_output_agent_<pid>_dispatch_<n> directory rocprofv3 writes)")
    files, skipped = folder_entries(root)
    present = set(files) | {name for name, _ in skipped}
    for required in (CODE_FILE, FILENAMES_FILE):
        if required not in present:
            raise TraceError(f"{root}: not a decoded ATT folder: {required} is missing "
                             "(expected the ui_output_agent_<pid>_dispatch_<n> directory "
                             "rocprofv3's ATT decoder writes)")
    # The collector paused while the files' objects are made (a wave file holds hundreds of
    # thousands of records; see asterism.support.gcpause).
    was_enabled = pause_cyclic_gc()
    try:
        return _read_folder(root, files, skipped, present)
    finally:
        resume_cyclic_gc(was_enabled)


def _read_folder(root: Path, files: list[str], skipped: list[tuple[str, str]],
                 present: set[str]) -> Trace:
    """read_att of a folder whose entries are listed (see there)."""
    code = _read_code(root / CODE_FILE)
    info, index, modeled, producer = _read_filenames(root / FILENAMES_FILE)

    # Waves listed in filenames.json, plus wave files it does not list (kept, not dropped).
    wave_files: dict[tuple[int, int, int, int], str] = dict(index)
    for name in files:
        m = WAVE_FILE_RE.match(name)
        if m is not None:
            ident = (int(m[1]), int(m[2]), int(m[3]), int(m[4]))
            wave_files.setdefault(ident, name)
    waves = []
    for ident in sorted(wave_files):
        name = wave_files[ident]
        m = WAVE_FILE_RE.match(name)
        if m is None or (int(m[1]), int(m[2]), int(m[3]), int(m[4])) != ident:
            raise TraceError(f"{root / FILENAMES_FILE}: wave SE{ident[0]} SIMD{ident[1]} "
                             f"slot{ident[2]} #{ident[3]} is listed as {name!r}, expected "
                             f"se{ident[0]}_sm{ident[1]}_sl{ident[2]}_wv{ident[3]}.json")
        if name not in present:
            raise TraceError(f"{root}: {name} is listed in {FILENAMES_FILE} but missing")
        waves.append(_read_wave(root / name, ident))

    lines = {r.line for r in code.rows}
    for wave in waves:
        if {rec.line for rec in wave.instructions} <= lines:
            continue  # (the common case, one pass in C: which record is wrong only if any)
        for i, rec in enumerate(wave.instructions):
            if rec.line not in lines:
                raise TraceError(f"{root / wave.filename}: instruction #{i} refers to line "
                                 f"{rec.line}, which {CODE_FILE} does not have")
        for link in wave.waitcnt:
            for line in (link.line, *link.producers):
                if line not in lines:
                    raise TraceError(f"{root / wave.filename}: waitcnt link refers to line "
                                     f"{line}, which {CODE_FILE} does not have")

    occupancy = _read_occupancy(root / OCCUPANCY_FILE) if OCCUPANCY_FILE in files else None
    realtime = _read_realtime(root / REALTIME_FILE) if REALTIME_FILE in files else None
    wstates: dict[int, WaveStateSeries] = {}
    extra_files: dict[str, bytes] = {}
    known = {CODE_FILE, FILENAMES_FILE, OCCUPANCY_FILE, REALTIME_FILE,
             *(w.filename for w in waves)}
    budget = EXTRA_FILES_MAX_BYTES
    for name in files:
        m = WSTATES_FILE_RE.match(name)
        if m is not None:
            wstates[int(m[1])] = _read_wstates(root / name, int(m[1]))
        elif name not in known:
            data = read_input_file(root / name, follow_links=False, error=TraceError)
            budget -= len(data)
            if budget < 0:
                raise TraceError(f"{root}: the files besides the trace's own (source copies, "
                                 f"counter files...) hold more than {EXTRA_FILES_MAX_BYTES} "
                                 f"bytes together, more than asterism keeps ({name})")
            extra_files[name] = data
    return Trace(code=code, waves=waves, info=info, occupancy=occupancy, wstates=wstates,
                 realtime=realtime, modeled=modeled, producer=producer,
                 extra_files=extra_files, path=root, skipped=skipped)
