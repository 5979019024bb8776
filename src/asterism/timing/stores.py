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

Requests per store: with addresses (the functional model), one per distinct
``write_bytes``-byte block its active lanes write (`write_requests`); without addresses (a
capture's replay), the blocks the lanes' address pattern touches where it follows from the
code (lanes.py), else ``memory.store_unknown`` cycles. ``TimingOptions.off`` "store_queue" (and
`trace replay --timing-off store_queue`) leaves the queue out: a store then completes
l2_hit after issue, as before.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def write_requests(spans: Iterable[tuple[np.ndarray, int]], write_bytes: int) -> int:
    """Write requests of one store: the distinct `write_bytes`-byte blocks its lanes' accesses
    (addresses, bytes per lane) touch."""
    blocks: set[int] = set()
    for addrs, nbytes in spans:
        a = np.asarray(addrs, np.uint64).astype(np.int64, copy=False)
        if a.size:
            first = a // write_bytes
            last = (a + max(nbytes, 1) - 1) // write_bytes
            for k in range(int((last - first).max()) + 1):
                blocks.update(np.unique(np.minimum(first + k, last)).tolist())
    return len(blocks)


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


__all__ = ["StoreQueue", "write_requests"]
