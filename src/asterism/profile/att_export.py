"""A timed run (asterism.timing.result.TimingResult) as an ATT trace folder.

The modeled run becomes a :class:`~asterism.profile.att.Trace` marked modeled (its producer
named, the model's parameters in ``asterism_timing.json`` beside the wave files), written by
:func:`~asterism.profile.att_writer.write_att` in the decoder's layout, so one analyzer
(``asterism trace report|plot|replay``) reads captures and modeled runs alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from asterism.profile.att import (
    CodeListing,
    CodeRow,
    InstRecord,
    StateSpan,
    Trace,
    Wave,
    occupancy_from_waves,
)
from asterism.profile.att_writer import write_att
from asterism.timing.result import MODEL_NOTE, TimingResult

PRODUCER = "asterism emulator timing model (modeled, not measured)"
PARAMS_FILE = "asterism_timing.json"  # written beside the trace: parameters of the model


def to_trace(result: TimingResult, source_map: Mapping[int, str] | None = None) -> Trace:
    """The run as a Trace (marked modeled); `source_map`: address -> location for
    code.json's source column."""
    smap = source_map or {}
    entry = result.code[0][0] if result.code else 0
    rows = [CodeRow(0, f"; {result.kernel}", result.kernel, 0, entry)]
    rows += [CodeRow(i + 1, text, smap.get(addr, ""), 0, addr)
             for i, (addr, text) in enumerate(result.code)]
    waves = [Wave(se=w.cu, simd=w.simd, slot=w.slot, id=w.wv, cu=w.cu, begin=w.begin,
                  end=w.end, instructions=[InstRecord(*r) for r in w.records],
                  timeline=[StateSpan(s, c) for s, c in w.timeline()])
             for w in result.waves]
    params = json.dumps({"note": MODEL_NOTE, "producer": PRODUCER,
                         **result.to_json()}, indent=1, sort_keys=True)
    return Trace(code=CodeListing(rows), waves=waves,
                 occupancy=occupancy_from_waves(waves, result.kernel), modeled=True,
                 producer=PRODUCER, extra_files={PARAMS_FILE: params.encode()})


def write_trace(result: TimingResult, out_dir: str | Path,
                source_map: Mapping[int, str] | None = None, overwrite: bool = True) -> Path:
    """Write the run as an ATT folder (code.json, wave files, occupancy, wstates...)."""
    return write_att(to_trace(result, source_map), out_dir, overwrite=overwrite,
                     derive_waitcnt=True)


__all__ = ["PARAMS_FILE", "PRODUCER", "to_trace", "write_trace"]
