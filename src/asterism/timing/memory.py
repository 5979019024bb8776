"""Memory in the timing model: the counters (vmcnt, lgkmcnt) and when their entries
complete, the cost of a vector memory instruction on the CU's path, the cache-line helper.

Static facts (per instruction): the counter streams an instruction's entries go to (the
sanitizer's classification; an LDS DMA load holds vmcnt only) and how long it keeps the CU's
vector memory path busy: max(``occupancy``, 64 lanes * 4 bytes * dwords /
``memory.vmem_bytes_per_cycle``).
"""

from __future__ import annotations

from asterism.emu import sanitizer as san
from asterism.emu.compiler import OpInfo
from asterism.target.timing import TimingModel


def counter_streams(info: OpInfo) -> tuple[tuple[str, bool], ...]:
    """(counter, in order) of each counter entry the instruction makes (none: not memory).
    [att] An LDS DMA load (buffer_load ... lds) holds only vmcnt on the hardware: in
    flash_attn_func_small, `s_waitcnt lgkmcnt(3)` right after four of them never stalls."""
    mc = san.classify(info)
    return mc.streams if mc is not None else ()


def vmem_busy(timing_cls: str, data_dwords: int, tm: TimingModel) -> int:
    """Cycles a vector memory instruction moving `data_dwords` per lane keeps the CU's
    vector memory path busy (the path moves 64 lanes * dwords * 4 bytes)."""
    bw = tm.memory["vmem_bytes_per_cycle"]
    return max(tm.occupancy[timing_cls], -(-64 * 4 * data_dwords // bw))
