"""Python metaprogramming API: `KernelBuilder` (one method per ISA instruction, generated
from the database) and `ModuleBuilder`."""

from asterism.builder.kernel import (
    KernelArgument,
    KernelBuilder,
    Label,
    LdsAllocation,
    ModuleBuilder,
    ReservedRegion,
    parse_register_range,
)

__all__ = ["KernelArgument", "KernelBuilder", "Label", "LdsAllocation", "ModuleBuilder",
           "ReservedRegion", "parse_register_range"]
