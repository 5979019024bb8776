"""The instruction cache: a taken branch to code not fetched yet in the dispatch waits for the
cache line. Sourced sizes, measured latency; modeled, not measured.

Facts ([gpu-specs] ROCm "GPU hardware specifications" table: MI300X/MI325X (gfx942) and
MI350X/MI355X (gfx950): "L1 Instruction Cache 64 KiB per 2 CUs"; [rpc-se] ROCm Compute
Profiler docs, "Shader engine": the L1I is shared between CUs of a shader engine, backed by
the L2; [rpc-sol] its gfx942 / gfx950 speed-of-light configs count L1I bandwidth as
SQC_ICACHE_REQ x 64 bytes, peak 64 bytes per clock: 64-byte requests, ``dispatch.icache_line``):

* The CUs share their instruction cache in pairs (which two is not documented: the model
  pairs CUs 2k and 2k+1; in a capture's replay, the traced CUs' (SE, CU // 2)). A line is
  fetched once per pair in a dispatch.
* Sequential code does not wait: fetching runs ahead of execution. Each instruction a wave
  of the pair executes makes its line and the ``dispatch.icache_ahead`` lines after it
  fetched ([att] flash_attn_func_small: after its waves ran only the entry line 0x1700, the
  branch back to 0x1900, 8 lines further, waited the plain 16 cycles; a forward branch 46
  lines past the last line run (0x2074 -> 0x2bfc) too; one 164 lines past (0x1730 ->
  0x403c) did not: 46 <= ahead < 164). A wave's first line (and those ahead of it) come with
  its launch (``dispatch.wave_start``).
* A taken branch to a line the pair has not fetched requests it (and the lines ahead of it)
  when the branch has issued; the wave's next instruction is tried ``dispatch.icache_miss``
  cycles later instead of ``dispatch.taken_branch`` ([att] flash_attn_func_small, the loop
  pre-header's ``s_cbranch_scc0`` 0x1730 -> 0x403c, every wave of both traced CUs: 884-904
  cycles from the branch's end to the next instruction, 888 for the first wave of each CU,
  the other waves of the CU, which branched 4-16 cycles later, resumed with it: one fill).
  Waves of the pair that branch to a line whose fill is in flight wait for that fill.

Not modeled: the capacity (64 KiB: both captures' kernels and asterism's are far smaller,
so nothing is evicted within a dispatch), a cache warm from an earlier dispatch of the same
code (pa_mqa_logits_fp4_small's waves start 28-32 cycles after launch, flash_attn_func's
208-252: the model starts every wave ``dispatch.wave_start`` after its launch), the fetch
bandwidth. ``TimingOptions.off`` / ``--timing-off`` "icache": every taken branch costs
``dispatch.taken_branch`` (the model before).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from asterism.target.timing import TimingModel
from asterism.timing.state import ModelWave


class InstructionCache:
    """The instruction lines each CU pair has fetched in one model run (see the module
    docstring). `addresses`: each instruction index's address; `entries`: the indices waves
    start at; `on=False`: left out (taken branches cost dispatch.taken_branch)."""

    def __init__(self, tm: TimingModel, addresses: Sequence[int], entries: Iterable[int] = (0,),
                 on: bool = True) -> None:
        d = tm.dispatch
        self.on = on
        self.miss = d["icache_miss"]
        self.ahead = d["icache_ahead"]
        self.branch_cycles = d["taken_branch"]
        line = d["icache_line"]
        self.line_of = [a // line for a in addresses]
        self.entry_lines = sorted({self.line_of[i] for i in entries if 0 <= i < len(addresses)})
        self.fetched: dict[int, set[int]] = {}  # pair -> lines fetched (available)
        self.filling: dict[int, dict[int, int]] = {}  # pair -> line -> when its fill arrives
        self.misses = self.wait_cycles = 0  # for the report (result.PathUse)

    @staticmethod
    def pair(w: ModelWave) -> int:
        """The wave's instruction-cache group: as its driver set it, else its CU's pair."""
        return w.icache if w.icache >= 0 else w.cu // 2

    def _lines(self, pair: int) -> set[int]:
        lines = self.fetched.get(pair)
        if lines is None:
            lines = self.fetched[pair] = set()
            for e in self.entry_lines:
                lines.update(range(e, e + self.ahead + 1))
            self.filling[pair] = {}
        return lines

    def executed(self, w: ModelWave, index: int) -> None:
        """The wave issued the instruction at `index`: its line and those ahead are fetched."""
        line = self.line_of[index]
        if line == w.fetch_line or not self.on:
            return
        w.fetch_line = line
        lines = self._lines(self.pair(w))
        if line + self.ahead not in lines:
            lines.update(range(line, line + self.ahead + 1))

    def branched(self, w: ModelWave, target: int, done: int) -> int:
        """A taken branch of the wave to instruction `target` finished issuing at `done`:
        the earliest its next instruction may be tried (done + taken_branch on a hit)."""
        ready = done + self.branch_cycles
        if not self.on or target >= len(self.line_of):
            return ready
        pair = self.pair(w)
        line = self.line_of[target]
        lines = self._lines(pair)
        filling = self.filling[pair]
        fill = filling.get(line)
        if fill is None:
            if line in lines:
                return ready
            fill = done + self.miss
            for k in range(line, line + self.ahead + 1):
                if k not in lines:
                    filling[k] = fill
            lines.update(range(line, line + self.ahead + 1))
            self.misses += 1
        if fill > ready:
            self.wait_cycles += fill - ready
        return max(ready, fill)


__all__ = ["InstructionCache"]
