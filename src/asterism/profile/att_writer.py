"""Write a :class:`~asterism.profile.att.Trace` as a decoded ATT folder.

The output has the decoder's file names, JSON shapes, key names and byte format (compact,
sorted keys, no trailing newline, ``null`` for an empty list inside a wave), so AMD's ATT
viewer and our analyzer read it like a hardware capture; a capture read with
:func:`~asterism.profile.att.read_att` and written back is byte-identical.

A timing model builds a ``Trace`` with code rows, waves (instructions + timeline) and
``modeled=True``; whatever it leaves out is derived here the way the decoder derives it:
code.json totals (when every row's totals are 0), ``wstates*.json`` (when ``wstates`` is
empty) and ``waitcnt`` links (when ``derive_waitcnt=True``).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from asterism.paths import check_file_name
from asterism.profile.att import (
    CODE_FILE,
    FILENAMES_FILE,
    MODEL_KEY,
    OCCUPANCY_FILE,
    REALTIME_FILE,
    WAVE_FILE_RE,
    WSTATES_FILE_RE,
    CodeListing,
    Trace,
    TraceError,
    Wave,
    WaveStateSeries,
    compute_code_stats,
    compute_wstates,
)
from asterism.profile.waitcnt import decoder_links


def dumps(obj: Any) -> str:
    """JSON text exactly as the decoder (nlohmann::json) writes it: compact, sorted keys."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _or_null(items: list[Any]) -> list[Any] | None:
    # nlohmann::json starts as null and becomes an array on the first push_back.
    return items if items else None


def code_json(code: CodeListing) -> dict[str, Any]:
    """The code.json object of a listing."""
    rows = [[r.isa, r.reserved, r.line, r.source, r.codeobj, r.vaddr, r.hit, r.latency,
             r.stall, r.idle] for r in code.rows]
    return {**code.extra, "code": _or_null(rows), "header": code.header,
            "version": code.version}


def wave_json(wave: Wave) -> dict[str, Any]:
    """The se*_sm*_sl*_wv*.json object of a wave."""
    insts = [[r.time, r.category, r.stall, r.duration, r.line, *r.extra]
             for r in wave.instructions]
    timeline = [[s.state, s.cycles] for s in wave.timeline]
    waitcnt = [[link.line, [list(dep) for dep in link.deps]] for link in wave.waitcnt]
    body = {
        **wave.extra,
        "begin": wave.begin, "cu": wave.cu, "end": wave.end, "id": wave.id,
        "instructions": _or_null(insts), "simd": wave.simd, "slot": wave.slot,
        "timeline": _or_null(timeline), "waitcnt": _or_null(waitcnt),
    }
    return {
        **wave.file_extra,
        "duration": wave.duration, "name": wave.name, "num_insts": wave.num_insts,
        "num_stitched": wave.num_stitched, "wave": body,
    }


def filenames_json(trace: Trace) -> dict[str, Any]:
    """The filenames.json object: metadata plus the wave index."""
    index: dict[str, Any] = {}
    for w in trace.waves:
        index.setdefault(str(w.se), {}).setdefault(str(w.simd), {}).setdefault(
            str(w.slot), {})[str(w.id)] = [w.filename, w.begin, w.end]
    out: dict[str, Any] = {
        **trace.info.extra,
        "counter_names": list(trace.info.counter_names),
        "gfxip": trace.info.gfxip,
        "gfxv": trace.info.gfxv,
        "global_begin_time": trace.info.global_begin_time,
        "version": trace.info.version,
        "wave_filenames": index or None,
    }
    if trace.modeled:
        marker: dict[str, Any] = {"modeled": True}
        if trace.producer:
            marker["producer"] = trace.producer
        out[MODEL_KEY] = marker
    return out


def occupancy_json(trace: Trace) -> dict[str, Any] | None:
    """The occupancy.json object, or None if the trace has no occupancy."""
    occ = trace.occupancy
    if occ is None:
        return None
    out: dict[str, Any] = dict(occ.extra)
    for se, events in occ.events.items():
        out[str(se)] = [[e.time, e.cu, e.simd, e.slot, e.start, e.kernel_id] for e in events]
    out["dispatches"] = {str(k): v for k, v in occ.dispatches.items()}
    out["version"] = occ.version
    return out


def wstates_json(series: WaveStateSeries) -> dict[str, Any]:
    """A wstates<S>.json object."""
    return {**series.extra, "name": series.name, "state": series.count, "time": series.time}


def realtime_json(trace: Trace) -> dict[str, Any] | None:
    """The realtime.json object, or None if the trace has no clock samples."""
    rt = trace.realtime
    if rt is None:
        return None
    out: dict[str, Any] = dict(rt.extra)
    for se, pairs in rt.samples.items():
        out[f"SE{se}"] = [[g, r] for g, r in pairs]
    out["metadata"] = {**rt.metadata_extra, "descriptor": rt.descriptor,
                       "frequency": rt.frequency}
    return out


def _check(trace: Trace) -> None:
    names: set[str] = set()
    for wave in trace.waves:
        if wave.filename in names:
            raise TraceError(f"two waves share SE{wave.se} SIMD{wave.simd} slot{wave.slot} "
                             f"wave #{wave.id} ({wave.filename})")
        names.add(wave.filename)
        for i, rec in enumerate(wave.instructions):
            if trace.code.row(rec.line) is None:
                raise TraceError(f"wave {wave.filename}: instruction #{i} refers to line "
                                 f"{rec.line}, which the code listing does not have")
    for name in trace.extra_files:
        check_file_name(name, "extra file name", TraceError)  # (names from a capture)
        if (name in (CODE_FILE, FILENAMES_FILE, OCCUPANCY_FILE, REALTIME_FILE)
                or WAVE_FILE_RE.match(name) or WSTATES_FILE_RE.match(name)):
            raise TraceError(f"extra file name {name!r} clashes with the trace layout")


def _files(trace: Trace, derive_waitcnt: bool) -> dict[str, str | bytes]:
    code = trace.code
    if trace.waves and not any(r.hit or r.latency or r.stall or r.idle for r in code.rows):
        code = compute_code_stats(code, trace.waves)
    waves = trace.waves
    if derive_waitcnt:
        waves = [replace(w, waitcnt=decoder_links(w, code)) for w in waves]
    files: dict[str, str | bytes] = {CODE_FILE: dumps(code_json(code)),
                                     FILENAMES_FILE: dumps(filenames_json(trace))}
    for wave in waves:
        files[wave.filename] = dumps(wave_json(wave))
    occ = occupancy_json(trace)
    if occ is not None:
        files[OCCUPANCY_FILE] = dumps(occ)
    rt = realtime_json(trace)
    if rt is not None:
        files[REALTIME_FILE] = dumps(rt)
    wstates = trace.wstates or compute_wstates(trace.waves)
    for state in sorted(wstates):
        files[f"wstates{state}.json"] = dumps(wstates_json(wstates[state]))
    files.update(trace.extra_files)
    return files


def _fresh_dir(parent: Path, name: str) -> Path:
    # Path.mkdir honours the umask (tempfile.mkdtemp would make the trace owner-only).
    tmp = parent / f".{name}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    return tmp


def _is_replaceable(folder: Path) -> bool:
    # Only ever delete an empty folder or one that is itself an ATT folder.
    entries = list(folder.iterdir())
    return not entries or (folder / CODE_FILE).is_file() or (folder / FILENAMES_FILE).is_file()


def write_att(trace: Trace, out_dir: str | Path, *, overwrite: bool = False,
              derive_waitcnt: bool = False) -> Path:
    """Write `trace` as a decoded ATT folder at `out_dir`; return the folder path."""
    out = Path(out_dir)
    _check(trace)
    files = _files(trace, derive_waitcnt)
    if out.exists():
        if not out.is_dir():
            raise TraceError(f"{out}: exists and is not a folder")
        if any(out.iterdir()) and not overwrite:
            raise TraceError(f"{out}: folder exists and is not empty (pass overwrite=True to "
                             "replace an existing ATT folder)")
        if not _is_replaceable(out):
            raise TraceError(f"{out}: refusing to replace a folder that is not an ATT folder")
    parent = out.parent
    if not parent.is_dir():
        raise TraceError(f"{parent}: no such folder")
    # Write everything into a sibling temp folder, then swap it in, so a failure never
    # leaves a half-written trace behind.
    try:
        tmp = _fresh_dir(parent, out.name)
    except OSError as exc:
        raise TraceError(f"{parent}: cannot create a folder: {exc.strerror}") from None
    try:
        for name, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            (tmp / name).write_bytes(data)
        if out.exists():
            old = parent / f".{out.name}.old-{uuid.uuid4().hex}"
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise TraceError(f"{out}: cannot write the trace: {exc.strerror or exc}") from None
    return out
