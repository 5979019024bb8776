"""The `lower-upstream` pass: upstream MLIR kernels -> amdgcn IR as a pipeline step (the
lowering itself: `lower_upstream`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from asterism.frontend.lower import SUMMARY, lower_upstream
from asterism.passes.base import Pass, option


@dataclass(frozen=True)
class LowerUpstreamPass(Pass):
    """`lower-upstream{target=gfx950}`."""

    name = "lower-upstream"
    summary = SUMMARY

    target: str | None = option(None, "the chip to lower for (default: the module's "
                                      "target or #rocdl.target, else gfx942)")

    def apply(self, module: Operation) -> None:
        """Lower every gpu.module of `module` in place."""
        lower_upstream(module, self.target)


__all__ = ["LowerUpstreamPass"]
