"""Op lowerings of the upstream `amdgpu` dialect (driver: asterism.passes.lower_upstream)."""

from __future__ import annotations

from asterism.passes.lower_upstream import KernelLowering, handles
from asterism.passes.upstream_ops import _wait_all


@handles("amdgpu.lds_barrier")
def _lds_barrier(low: KernelLowering, op) -> None:
    _wait_all(low, vm=False)
    low.kb.s_barrier()
