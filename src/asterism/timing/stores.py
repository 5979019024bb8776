"""The store write-out queue: how long a vector store takes to leave the CU. Modeled, not
measured.

A store's data leaves the CU for the L2 in write requests of ``memory.write_bytes`` (64) bytes,
one request per clock per CU ([rpc]: the vector L1 writes to the L2 in 64-byte requests; the
rate is inferred), in the order the vector memory path accepted the stores: a store's requests
start when the stores accepted before it on the CU have left, and its counter entry (vmcnt)
completes ``memory.l2_hit`` after its last request left (the L2 acknowledges the write). So
stores that are accepted faster than they leave queue up, and the wave's ``s_endpgm`` (which
waits for its outstanding memory) drains the queue: flash_attn_func_small's 16
global_store_dwordx2 per wave, accepted in a burst, take about 1200 cycles to drain after the
last one issues ([att]; before this mechanism the model charged each store l2_hit alone).

Requests per store: the vector memory address path takes ``memory.vmem_bytes_per_cycle``
(64) bytes of lane data per clock (the bytes rule), i.e. one group of consecutive lanes per
clock: 16 lanes of 32-bit or smaller data, 8 of 64-bit, 4 of 96/128-bit ([gcn-coal]: AMD
GPUOpen, "Understanding Memory Coalescing on GCN", gpuopen.com/learn/gcn-memory-coalescing:
32-bit or smaller single-channel buffer loads take 4 clocks a wave, multi-channel ones 16;
that stores go through the same per-clock address path is inferred [inf]). Coalescing merges
only the lanes of one clock: a store makes one request per distinct ``write_bytes``-byte
block per clock group of its active lanes (`lanes_per_clock`, `clock_blocks`). With
addresses (the functional model) from the lanes' real addresses (`write_requests`); without
(a capture's replay), from the lanes' address pattern where it follows from the code
(lanes.py, the same `clock_blocks`), else ``memory.store_unknown`` cycles. Measured check
([att], the s_endpgm records of `trace replay --memory accept` wait for the stores' drain):
pa_mqa_logits' buffer_store_dword (each clock's 16 lanes one 64-byte block: 4 requests)
964 measured / 1000 modeled; flash_attn_func's global_store_dwordx2 (lanes 0-31 each a
different 4 KiB row, lanes l and l + 32 one block but different clocks: 64 requests, not
the wave's 32 blocks) 9548 / 9688 (2276 with the wave's 32).

``TimingOptions.off`` "store_queue" (and `trace replay --timing-off store_queue`) leaves the
queue out: a store then completes l2_hit after issue, as before.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

CLOCK_LANES = 16  # lanes of 32-bit or smaller data the address path takes a clock [gcn-coal]


def lanes_per_clock(lane_bytes: int, path_bytes: int) -> int:
    """Consecutive lanes whose data the vector memory address path takes in one clock:
    `path_bytes` of lane data per clock, at most 16 lanes ([gcn-coal]: 32-bit or smaller
    accesses take 4 clocks a wave), a power of two (the clock groups tile the wave)."""
    lanes = max(1, min(CLOCK_LANES, path_bytes // max(lane_bytes, 4)))
    return 1 << (lanes.bit_length() - 1)


def clock_blocks(lanes: np.ndarray, addrs: np.ndarray, nbytes: int, block: int,
                 per_clock: int) -> set[tuple[int, int]]:
    """(clock group, block) pairs of an access: lane `lanes[i]` moves `nbytes` at `addrs[i]`,
    `per_clock` consecutive lanes share a clock and coalesce into one request per distinct
    `block`-byte block (lane ids past 63 are further waves' lanes: `per_clock` divides 64, so
    no group spans two waves)."""
    a = np.asarray(addrs, np.int64)
    if not a.size:
        return set()
    group = np.asarray(lanes, np.int64) // per_clock
    first = a // block
    last = (a + max(nbytes, 1) - 1) // block
    pairs: set[tuple[int, int]] = set()
    for k in range(int((last - first).max()) + 1):
        pairs.update(zip(group.tolist(), np.minimum(first + k, last).tolist(), strict=True))
    return pairs


def write_requests(spans: Iterable[tuple[np.ndarray, np.ndarray, int]], write_bytes: int,
                   per_clock: int) -> int:
    """Write requests of one store: the distinct `write_bytes`-byte blocks each clock group of
    `per_clock` lanes writes, over its accesses (lane ids, addresses, bytes per lane)."""
    pairs: set[tuple[int, int]] = set()
    for lanes, addrs, nbytes in spans:
        pairs |= clock_blocks(lanes, addrs, nbytes, write_bytes, per_clock)
    return len(pairs)


class StoreQueue:
    """Per CU: when its last accepted store's data has left (the write-out queue's tail)."""

    def __init__(self) -> None:
        self.free: dict[int, int] = {}  # CU -> when its write-out path is free
        self.stores = self.cycles = self.queued = 0  # for the report (result.PathUse)

    def write(self, cu: int, start: int, cycles: int) -> int:
        """A store ready to leave at `start` whose requests take `cycles`: when its last
        request has left (it waits for the stores queued before it on the CU)."""
        begin = max(start, self.free.get(cu, 0))
        done = begin + max(cycles, 0)
        self.free[cu] = done
        self.stores += 1
        self.cycles += max(cycles, 0)
        self.queued += begin - start
        return done


__all__ = ["StoreQueue", "clock_blocks", "lanes_per_clock", "write_requests"]
