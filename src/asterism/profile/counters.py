"""rocprofv3's counter and dispatch output, read into one model: agents, kernel symbols,
kernel dispatches with their durations and PMC counter values, and rates derived from them.

Inputs (one or more files, any mix):

``*_results.json``  (``--output-format json``; the ``rocprofiler-sdk-tool`` writer)
    ``{"rocprofiler-sdk-tool": [{"metadata", "agents", "counters", "kernel_symbols",
    "callback_records": {"counter_collection": [...]}, "buffer_records":
    {"kernel_dispatch": [...]}, ...}]}``. Read here:

    - ``metadata.command``: the profiled command line.
    - ``agents[]``: ``id.handle``, ``type`` (1 CPU, 2 GPU), ``name`` (gfx target),
      ``product_name``, ``cu_count``, ``simd_per_cu``, ``max_waves_per_simd``,
      ``lds_size_in_kb``, ``wave_front_size``, ``max_engine_clk_fcompute`` (MHz).
    - ``kernel_symbols[]``: ``kernel_id``, ``kernel_name`` (``.kd`` symbol),
      ``formatted_kernel_name``, ``code_object_id``, ``arch_vgpr_count``,
      ``accum_vgpr_count``, ``sgpr_count``, ``group_segment_size`` (LDS bytes),
      ``private_segment_size`` (scratch bytes per lane).
    - ``counters[]``: counter definitions, ``id.handle`` -> ``name``.
    - ``buffer_records.kernel_dispatch[]``: ``start_timestamp``/``end_timestamp`` (ns) and
      ``dispatch_info`` (``dispatch_id``, ``kernel_id``, ``agent_id.handle``,
      ``queue_id.handle``, ``grid_size``/``workgroup_size`` ``{x, y, z}``).
    - ``callback_records.counter_collection[]``: ``dispatch_data.dispatch_info`` (as above)
      and ``records[]`` ``{"counter_id": {"handle"}, "value"}``, one per counter instance
      (dimension); the values of one counter are summed, as rocprofv3's CSV does.

``*_counter_collection.csv``  one row per (dispatch, counter): ``Dispatch_Id``,
    ``Kernel_Name``, ``Counter_Name``, ``Counter_Value``, and optionally ``Agent_Id``,
    ``Kernel_Id``, ``Grid_Size``, ``Workgroup_Size``, ``LDS_Block_Size``, ``Scratch_Size``,
    ``VGPR_Count``, ``Accum_VGPR_Count``, ``SGPR_Count``, ``Start_Timestamp``,
    ``End_Timestamp``.
``*_kernel_trace.csv``  one row per dispatch: ``Kind``, ``Dispatch_Id``, ``Kernel_Name``,
    ``Start_Timestamp``, ``End_Timestamp`` (ns), and optionally ``Agent_Id``, ``Kernel_Id``,
    ``Grid_Size_X..Z``, ``Workgroup_Size_X..Z``, ``VGPR_Count``, ``SGPR_Count``...
    ``Agent_Id`` is written as rocprofv3's ``--agent-index`` says: ``Agent <node id>``
    (relative, the default, and absolute), ``GPU <n>`` / ``CPU <n>`` (type-relative: no node
    id), or a bare number.
``*_agent_info.csv``  one row per agent (``Node_Id``, ``Agent_Type``, ``Name``,
    ``Product_Name``, ``Cu_Count``, ``Simd_Per_Cu``, ``Max_Waves_Per_Simd``...).

rocprofv3's summary CSVs (``*_kernel_stats.csv``, ``*_domain_stats.csv``: totals per name)
are recognized and refused with that reason: they hold no dispatch.

A file that is missing, not JSON/CSV, lacks the fields above or holds an integer past 64 bits
(a grid or workgroup size past 32) is a :class:`CounterError` naming the file (and line or
JSON path) and what was expected. :func:`read_counters_each` reads what it can and names
the files it cannot (what a bundle does).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asterism.errors import AsterismError, SourceLocation
from asterism.textio import decode_text, parse_json_bounded, read_input_file

TOOL_KEY = "rocprofiler-sdk-tool"


class CounterError(AsterismError):
    """A rocprofv3 counter/dispatch file that is missing, malformed or of an unknown kind."""


@dataclass
class Agent:
    """A CPU or GPU agent of the profiled node."""

    id: int
    type: str  # "GPU" or "CPU"
    name: str  # gfx target for GPUs (gfx950)
    product: str = ""
    cu_count: int = 0
    simd_per_cu: int = 0
    max_waves_per_simd: int = 0
    lds_kb: int = 0
    wave_size: int = 0
    max_clock_mhz: int = 0


@dataclass
class KernelSymbol:
    """A kernel the profiled process loaded, with its resource use."""

    kernel_id: int
    name: str  # without the ``.kd`` suffix
    code_object_id: int = 0
    vgprs: int = 0  # architected VGPRs
    agprs: int = 0  # accumulation VGPRs
    sgprs: int = 0
    lds_bytes: int = 0
    scratch_bytes: int = 0


@dataclass
class Dispatch:
    """One kernel launch: where and when it ran, its shape and its counter values."""

    dispatch_id: int
    kernel_name: str
    kernel_id: int | None = None
    agent_id: int | None = None  # the agent's node id (Agent.id), when the file gives one
    agent_label: str | None = None  # the agent as the file names it ("Agent 2", "GPU 0")
    start_ns: int | None = None
    end_ns: int | None = None
    grid: tuple[int, int, int] | None = None  # work-items
    workgroup: tuple[int, int, int] | None = None
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def duration_ns(self) -> int | None:
        """End minus start timestamp (ns), if both are known."""
        if self.start_ns is None or self.end_ns is None:
            return None
        return self.end_ns - self.start_ns

    @property
    def workgroup_size(self) -> int | None:
        """Work-items per workgroup."""
        if self.workgroup is None:
            return None
        x, y, z = self.workgroup
        return x * y * z


@dataclass
class CounterData:
    """Everything read from one or more rocprofv3 output files."""

    files: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    agents: list[Agent] = field(default_factory=list)
    kernels: dict[int, KernelSymbol] = field(default_factory=dict)
    dispatches: list[Dispatch] = field(default_factory=list)

    def gpus(self) -> list[Agent]:
        """The GPU agents."""
        return [a for a in self.agents if a.type == "GPU"]

    def agent(self, agent_id: int | None) -> Agent | None:
        """The agent with that id (None if unknown)."""
        return next((a for a in self.agents if a.id == agent_id), None)

    def kernel(self, name: str, code_object_id: int | None = None) -> KernelSymbol | None:
        """The kernel symbol called `name` (the one in `code_object_id` if several are)."""
        found = [k for k in self.kernels.values() if _same_kernel(k.name, name)]
        if code_object_id:
            found = [k for k in found if k.code_object_id == code_object_id] or found
        return found[0] if found else None

    def dispatches_of(self, name: str | None) -> list[Dispatch]:
        """The dispatches of kernel `name` (all of them for None)."""
        if name is None:
            return list(self.dispatches)
        return [d for d in self.dispatches if _same_kernel(d.kernel_name, name)]

    def counter_names(self) -> list[str]:
        """PMC counter names present in any dispatch, sorted."""
        return sorted({n for d in self.dispatches for n in d.counters})


def _same_kernel(a: str, b: str) -> bool:
    return a.removesuffix(".kd") == b.removesuffix(".kd")


# ---------------------------------------------------------------------------- derived rates


@dataclass(frozen=True)
class DerivedMetric:
    """A rate computed from counters of one dispatch (and its duration)."""

    name: str
    unit: str
    needs: tuple[str, ...]  # counter names; "duration_ns" is the dispatch duration
    formula: Callable[..., float | None]
    text: str  # how it is computed, for the report


def _ratio(a: float, b: float, scale: float = 1.0) -> float | None:
    return scale * a / b if b else None


# The rates a report shows when their counters are present; the formula gets the values of
# `needs` in order. Counter names as rocprofv3 gives them on gfx9 (FETCH_SIZE and WRITE_SIZE
# are its derived counters in KB).
DERIVED_METRICS: tuple[DerivedMetric, ...] = (
    DerivedMetric("L2 hit rate", "%", ("TCC_HIT_sum", "TCC_MISS_sum"),
                  lambda h, m: _ratio(h, h + m, 100.0), "100 * TCC_HIT / (TCC_HIT + TCC_MISS)"),
    DerivedMetric("HBM read bandwidth", "GB/s", ("FETCH_SIZE", "duration_ns"),
                  lambda kb, ns: _ratio(kb * 1024.0, ns), "FETCH_SIZE (KB) * 1024 / duration"),
    DerivedMetric("HBM write bandwidth", "GB/s", ("WRITE_SIZE", "duration_ns"),
                  lambda kb, ns: _ratio(kb * 1024.0, ns), "WRITE_SIZE (KB) * 1024 / duration"),
    DerivedMetric("busy clock", "GHz", ("GRBM_GUI_ACTIVE", "duration_ns"),
                  lambda c, ns: _ratio(c, ns), "GRBM_GUI_ACTIVE cycles / duration"),
    DerivedMetric("VALU instructions per wave", "", ("SQ_INSTS_VALU", "SQ_WAVES"),
                  lambda i, w: _ratio(i, w), "SQ_INSTS_VALU / SQ_WAVES"),
    DerivedMetric("MFMA instructions per wave", "", ("SQ_INSTS_MFMA", "SQ_WAVES"),
                  lambda i, w: _ratio(i, w), "SQ_INSTS_MFMA / SQ_WAVES"),
    DerivedMetric("VMEM instructions per wave", "", ("SQ_INSTS_VMEM", "SQ_WAVES"),
                  lambda i, w: _ratio(i, w), "SQ_INSTS_VMEM / SQ_WAVES"),
    DerivedMetric("LDS instructions per wave", "", ("SQ_INSTS_LDS", "SQ_WAVES"),
                  lambda i, w: _ratio(i, w), "SQ_INSTS_LDS / SQ_WAVES"),
    DerivedMetric("LDS bank conflicts per LDS instruction", "",
                  ("SQ_LDS_BANK_CONFLICT", "SQ_INSTS_LDS"),
                  lambda c, i: _ratio(c, i), "SQ_LDS_BANK_CONFLICT / SQ_INSTS_LDS"),
    DerivedMetric("waves per microsecond", "", ("SQ_WAVES", "duration_ns"),
                  lambda w, ns: _ratio(w * 1000.0, ns), "SQ_WAVES / duration (us)"),
)


def counter_value(d: Dispatch, name: str) -> float | None:
    """A counter of the dispatch by name; ``X_sum`` and ``X`` stand for each other, and
    ``duration_ns`` is the dispatch duration."""
    if name == "duration_ns":
        dur = d.duration_ns
        return float(dur) if dur is not None else None
    for key in (name, name.removesuffix("_sum"), name + "_sum"):
        if key in d.counters:
            return d.counters[key]
    return None


def derived_metrics(d: Dispatch) -> list[tuple[DerivedMetric, float]]:
    """The derived rates whose counters the dispatch has, with their values."""
    out = []
    for metric in DERIVED_METRICS:
        values = [counter_value(d, n) for n in metric.needs]
        if any(v is None for v in values):
            continue
        result = metric.formula(*values)
        if result is not None:
            out.append((metric, result))
    return out


# ---------------------------------------------------------------------------- reading


class _Where:
    """A JSON path in a file, for error messages."""

    def __init__(self, file: str, path: str = ""):
        self.file, self.path = file, path

    def at(self, key: str | int) -> _Where:
        return _Where(self.file, f"{self.path}[{key!r}]" if isinstance(key, str)
                      else f"{self.path}[{key}]")

    def fail(self, what: str) -> CounterError:
        where = f" at {self.path}" if self.path else ""
        return CounterError(f"{self.file}{where}: {what}")


def _get(obj: Any, key: str, where: _Where, kind: type | tuple[type, ...],
         default: Any = ...) -> Any:
    if not isinstance(obj, dict):
        raise where.fail("expected an object")
    if key not in obj:
        if default is not ...:
            return default
        raise where.at(key).fail("missing")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        names = {int: "an integer", str: "a string", list: "a list", dict: "an object",
                 float: "a number"}
        want = " or ".join(names.get(k, k.__name__) for k in
                           (kind if isinstance(kind, tuple) else (kind,)))
        raise where.at(key).fail(f"expected {want}, got {type(value).__name__}")
    if isinstance(value, int) and not _INT_MIN <= value <= _INT_MAX:
        raise where.at(key).fail(f"{value} is out of range (a 64-bit integer)")
    return value


def _handle(obj: Any, key: str, where: _Where) -> int:
    return _get(_get(obj, key, where, dict), "handle", where.at(key), int)


def _xyz(obj: Any, key: str, where: _Where) -> tuple[int, int, int] | None:
    raw = _get(obj, key, where, dict, None)
    if raw is None:
        return None
    out = tuple(_get(raw, k, where.at(key), int) for k in "xyz")
    for k, v in zip("xyz", out, strict=True):
        if not 0 <= v < 2**32:  # (rocprofv3's dim3 is uint32)
            raise where.at(key).at(k).fail(f"{v} is out of range (0 to 2^32-1)")
    return out  # type: ignore[return-value]


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise CounterError(f"{path}: counter file is missing (expected rocprofv3 output: a "
                           "*_results.json or a *_counter_collection.csv / *_kernel_trace.csv /"
                           " *_agent_info.csv file)")
    if path.is_dir():
        raise CounterError(f"{path}: is a folder; give the rocprofv3 output files in it "
                           "(*_results.json or the CSV files)")
    # A file the user named: a link to it is followed; its size is bounded.
    return read_input_file(path, error=CounterError, what="counter file")


def _json_agents(tool: dict, w: _Where) -> list[Agent]:
    out = []
    for i, a in enumerate(_get(tool, "agents", w, list, [])):
        aw = w.at("agents").at(i)
        kind = _get(a, "type", aw, int)
        out.append(Agent(
            id=_handle(a, "id", aw), type={1: "CPU", 2: "GPU"}.get(kind, f"type {kind}"),
            name=_get(a, "name", aw, str), product=_get(a, "product_name", aw, str, ""),
            cu_count=_get(a, "cu_count", aw, int, 0),
            simd_per_cu=_get(a, "simd_per_cu", aw, int, 0),
            max_waves_per_simd=_get(a, "max_waves_per_simd", aw, int, 0),
            lds_kb=_get(a, "lds_size_in_kb", aw, int, 0),
            wave_size=_get(a, "wave_front_size", aw, int, 0),
            max_clock_mhz=_get(a, "max_engine_clk_fcompute", aw, int, 0)))
    return out


def _json_kernels(tool: dict, w: _Where) -> dict[int, KernelSymbol]:
    out = {}
    for i, k in enumerate(_get(tool, "kernel_symbols", w, list, [])):
        kw = w.at("kernel_symbols").at(i)
        kid = _get(k, "kernel_id", kw, int)
        name = _get(k, "formatted_kernel_name", kw, str, "") or _get(k, "kernel_name", kw, str)
        out[kid] = KernelSymbol(
            kid, name.removesuffix(".kd"), _get(k, "code_object_id", kw, int, 0),
            _get(k, "arch_vgpr_count", kw, int, 0), _get(k, "accum_vgpr_count", kw, int, 0),
            _get(k, "sgpr_count", kw, int, 0), _get(k, "group_segment_size", kw, int, 0),
            _get(k, "private_segment_size", kw, int, 0))
    return out


def _json_dispatch(info: dict, w: _Where, kernels: dict[int, KernelSymbol]) -> Dispatch:
    kid = _get(info, "kernel_id", w, int)
    sym = kernels.get(kid)
    return Dispatch(
        dispatch_id=_get(info, "dispatch_id", w, int),
        kernel_name=sym.name if sym else f"kernel_id {kid}", kernel_id=kid,
        agent_id=_handle(info, "agent_id", w) if "agent_id" in info else None,
        grid=_xyz(info, "grid_size", w), workgroup=_xyz(info, "workgroup_size", w))


def _json_tool(tool: Any, w: _Where, data: CounterData) -> None:
    if not isinstance(tool, dict):
        raise w.fail("expected an object")
    meta = _get(tool, "metadata", w, dict, {})
    command = _get(meta, "command", w.at("metadata"), list, [])
    data.command = data.command or [str(c) for c in command]
    data.agents += _json_agents(tool, w)
    kernels = _json_kernels(tool, w)
    data.kernels.update(kernels)
    names = {}
    for i, c in enumerate(_get(tool, "counters", w, list, [])):
        cw = w.at("counters").at(i)
        names[_handle(c, "id", cw)] = _get(c, "name", cw, str)
    by_id: dict[int, Dispatch] = {}
    bw = w.at("buffer_records")
    buffers = _get(tool, "buffer_records", w, dict, {})
    for i, rec in enumerate(_get(buffers, "kernel_dispatch", bw, list, [])):
        rw = bw.at("kernel_dispatch").at(i)
        d = _json_dispatch(_get(rec, "dispatch_info", rw, dict), rw.at("dispatch_info"),
                           kernels)
        d.start_ns = _get(rec, "start_timestamp", rw, int)
        d.end_ns = _get(rec, "end_timestamp", rw, int)
        by_id[d.dispatch_id] = d
    cw = w.at("callback_records")
    callbacks = _get(tool, "callback_records", w, dict, {})
    for i, rec in enumerate(_get(callbacks, "counter_collection", cw, list, [])):
        rw = cw.at("counter_collection").at(i)
        dd = _get(rec, "dispatch_data", rw, dict)
        info = _get(dd, "dispatch_info", rw.at("dispatch_data"), dict)
        d = _json_dispatch(info, rw.at("dispatch_data").at("dispatch_info"), kernels)
        d = by_id.setdefault(d.dispatch_id, d)
        for j, r in enumerate(_get(rec, "records", rw, list)):
            vw = rw.at("records").at(j)
            cid = _handle(r, "counter_id", vw)
            if cid not in names:
                raise vw.at("counter_id").fail(f"counter id {cid} is not in 'counters'")
            value = _get(r, "value", vw, (int, float))
            d.counters[names[cid]] = d.counters.get(names[cid], 0.0) + float(value)
    data.dispatches += sorted(by_id.values(), key=lambda d: d.dispatch_id)


def _read_json(path: Path, text: str, data: CounterData) -> None:
    doc = parse_json_bounded(text, str(path), CounterError)
    w = _Where(str(path))
    if not isinstance(doc, dict) or TOOL_KEY not in doc:
        raise w.fail(f"not a rocprofv3 results file: expected a JSON object with the key "
                     f"{TOOL_KEY!r} (rocprofv3 --output-format json)")
    tools = doc[TOOL_KEY]
    if not isinstance(tools, list):
        raise w.at(TOOL_KEY).fail("expected a list")
    for i, tool in enumerate(tools):
        _json_tool(tool, w.at(TOOL_KEY).at(i), data)


# CSV kinds, told apart by the columns they must have.
_CSV_KINDS = {
    "counter_collection": ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value"),
    "kernel_trace": ("Dispatch_Id", "Kernel_Name", "Start_Timestamp", "End_Timestamp"),
    "agent_info": ("Node_Id", "Agent_Type", "Name"),
}
# rocprofv3's summary CSVs (--stats: *_kernel_stats.csv, *_domain_stats.csv...): per-name
# totals, nothing per dispatch; recognized to say so.
_STATS_COLUMNS = ("Name", "Calls", "TotalDurationNs", "AverageNs")
# Agent_Id as rocprofv3 writes it: "Agent <node id>" (its default --agent-index relative, and
# absolute), "<GPU|CPU> <index among that type>" (type-relative), or a bare number.
_AGENT_RE = re.compile(r"(?:(Agent)|[A-Z]{3}) ([0-9]{1,10})", re.ASCII)
# Integers of these files: 64-bit (rocprofv3 writes uint64 ids and nanosecond times).
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


class _Row:
    """One CSV row with typed access and located errors."""

    def __init__(self, path: Path, line: int, row: dict[str, str]):
        self.path, self.line, self.row = path, line, row

    def fail(self, column: str, what: str) -> CounterError:
        return CounterError(f"column {column}: {what}",
                            SourceLocation(str(self.path), self.line, 1))

    def int(self, column: str, default: int | None = None) -> int | None:
        raw = (self.row.get(column) or "").strip()
        if not raw:
            return default
        try:
            value = int(raw) if len(raw) <= 24 else None
        except ValueError:
            value = None
        if value is None:
            raise self.fail(column, f"expected an integer, got {raw[:40]!r}")
        if not _INT_MIN <= value <= _INT_MAX:
            raise self.fail(column, f"{value} is out of range (a 64-bit integer)")
        return value

    def agent(self, column: str) -> tuple[int | None, str | None]:
        """(node id, label) of an agent column: "Agent 2" and "2" give the id 2; a
        type-relative "GPU 0" gives no node id (the index counts GPUs only)."""
        raw = (self.row.get(column) or "").strip()
        if not raw:
            return None, None
        m = _AGENT_RE.fullmatch(raw)
        if m is not None:
            return (int(m.group(2)) if m.group(1) else None), raw
        return self.int(column), raw

    def num(self, column: str) -> float:
        raw = (self.row.get(column) or "").strip()
        try:
            return float(raw)
        except ValueError:
            raise self.fail(column, f"expected a number, got {raw[:40]!r}") from None

    def str(self, column: str) -> str:
        return (self.row.get(column) or "").strip()

    def xyz(self, prefix: str) -> tuple[int, int, int] | None:
        vals = [self.int(f"{prefix}_{a}") for a in "XYZ"]
        for a, v in zip("XYZ", vals, strict=True):
            if v is not None and not 0 <= v < 2**32:
                raise self.fail(f"{prefix}_{a}", f"{v} is out of range (0 to 2^32-1)")
        if any(v is None for v in vals):
            total = self.int(prefix)
            return (total, 1, 1) if total is not None else None
        return tuple(vals)  # type: ignore[return-value]


def _csv_rows(path: Path, text: str) -> tuple[str, list[_Row]]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        return _csv_kind_and_rows(path, reader)
    except csv.Error as exc:  # a cell past csv's field limit (128 KiB), a stray quote...
        # (line_num counts the lines read before the record that failed)
        raise CounterError(f"not CSV as rocprofv3 writes it: {exc}",
                           SourceLocation(str(path), reader.line_num + 1, 1)) from None


def _csv_kind_and_rows(path: Path, reader: csv.DictReader) -> tuple[str, list[_Row]]:
    header = reader.fieldnames or []
    kind = next((k for k, cols in _CSV_KINDS.items() if all(c in header for c in cols)), None)
    if kind is None and all(c in header for c in _STATS_COLUMNS):
        raise CounterError(f"{path}: rocprofv3's summary statistics (per kernel or domain "
                           "totals, no dispatch records): not used by asterism; give the "
                           "*_kernel_trace.csv, *_counter_collection.csv or *_results.json "
                           "of the run")
    if kind is None:
        expected = "; ".join(f"{k}: {', '.join(c)}" for k, c in _CSV_KINDS.items())
        raise CounterError(f"{path}: not a rocprofv3 CSV file this reader knows: the header "
                           f"has {', '.join(repr(h[:40]) for h in header[:8]) or 'no columns'}; "
                           "expected the columns "
                           f"of one of {expected}")
    rows = []
    for row in reader:
        if None in row:  # more cells than header columns
            raise CounterError(f"{len(header)} columns in the header but more in this row",
                               SourceLocation(str(path), reader.line_num, 1))
        rows.append(_Row(path, reader.line_num, row))
    return kind, rows


def _csv_dispatch(r: _Row, by_id: dict[int, Dispatch]) -> Dispatch:
    did = r.int("Dispatch_Id")
    if did is None:
        raise r.fail("Dispatch_Id", "missing")
    d = by_id.get(did)
    if d is None:
        d = by_id[did] = Dispatch(did, r.str("Kernel_Name").removesuffix(".kd"))
    d.kernel_id = r.int("Kernel_Id", d.kernel_id)
    agent_id, label = r.agent("Agent_Id")
    if label is not None:
        d.agent_id, d.agent_label = agent_id, label
    d.start_ns = r.int("Start_Timestamp", d.start_ns)
    d.end_ns = r.int("End_Timestamp", d.end_ns)
    d.grid = r.xyz("Grid_Size") or d.grid
    d.workgroup = r.xyz("Workgroup_Size") or d.workgroup
    return d


def _csv_kernel(r: _Row, d: Dispatch, data: CounterData) -> None:
    """Resource columns of a dispatch row, as a kernel symbol when none is known."""
    if r.int("VGPR_Count") is None or any(k.name == d.kernel_name
                                          for k in data.kernels.values()):
        return
    kid = d.kernel_id if d.kernel_id is not None else -1 - len(data.kernels)
    data.kernels[kid] = KernelSymbol(
        kid, d.kernel_name, 0, r.int("VGPR_Count", 0) or 0, r.int("Accum_VGPR_Count", 0) or 0,
        r.int("SGPR_Count", 0) or 0, r.int("LDS_Block_Size", 0) or 0,
        r.int("Scratch_Size", 0) or 0)


def _read_csv(path: Path, text: str, data: CounterData, by_id: dict[int, Dispatch],
              agents: list[Agent]) -> None:
    kind, rows = _csv_rows(path, text)
    for r in rows:
        if kind == "agent_info":
            agents.append(Agent(
                id=r.int("Node_Id") or 0, type=r.str("Agent_Type"), name=r.str("Name"),
                product=r.str("Product_Name"), cu_count=r.int("Cu_Count", 0) or 0,
                simd_per_cu=r.int("Simd_Per_Cu", 0) or 0,
                max_waves_per_simd=r.int("Max_Waves_Per_Simd", 0) or 0,
                lds_kb=r.int("Lds_Size_In_Kb", 0) or 0,
                wave_size=r.int("Wave_Front_Size", 0) or 0,
                max_clock_mhz=r.int("Max_Engine_Clk_Fcompute", 0) or 0))
            continue
        d = _csv_dispatch(r, by_id)
        _csv_kernel(r, d, data)
        if kind == "counter_collection":
            name = re.sub(r"\[.*\]$", "", r.str("Counter_Name"))
            if not name:
                raise r.fail("Counter_Name", "empty")
            d.counters[name] = d.counters.get(name, 0.0) + r.num("Counter_Value")


def read_counters_each(paths: Iterable[str | Path]
                       ) -> tuple[CounterData | None, list[tuple[str, str]]]:
    """Like :func:`read_counters`, but a file that cannot be read is left out instead of
    failing the rest: (the data of the good files or None, [(file, why)] of the others).
    Each file is checked on its own first, so a bad one leaves nothing half-read."""
    good, bad = [], []
    for p in paths:
        try:
            read_counters([p])
        except CounterError as err:
            bad.append((str(p), f"{err.location}: {err.message}" if err.location
                        else err.message.removeprefix(f"{p}: ")))
        else:
            good.append(p)
    return (read_counters(good) if good else None), bad


def read_counters(paths: Iterable[str | Path]) -> CounterData:
    """Read rocprofv3 output files (results JSON and/or CSV files) into one CounterData."""
    data = CounterData()
    csv_dispatches: dict[int, Dispatch] = {}
    csv_agents: list[Agent] = []
    for p in paths:
        path = Path(p)
        raw = _read_bytes(path)
        text = decode_text(raw, str(path), CounterError)
        data.files.append(str(path))
        if path.suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
            _read_json(path, text, data)
        elif path.suffix.lower() == ".csv" or "," in text.split("\n", 1)[0]:
            _read_csv(path, text, data, csv_dispatches, csv_agents)
        else:
            raise CounterError(f"{path}: neither JSON nor CSV (expected rocprofv3's "
                               "*_results.json or its CSV files)")
    known = {d.dispatch_id for d in data.dispatches}
    data.dispatches += [d for i, d in sorted(csv_dispatches.items()) if i not in known]
    # agent_info.csv repeats the JSON's agents (under node ids): take it only on its own.
    if not data.agents:
        data.agents = csv_agents
    if not data.files:
        raise CounterError("no counter file given")
    return data
