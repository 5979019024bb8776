"""Python metaprogramming API: `KernelBuilder` (one method per ISA instruction, generated
from the database) and `ModuleBuilder`."""

from asterism.builder.checks import Capture, Group, ScheduleError, unit_sequence
from asterism.builder.kernel import (
    KernelArgument,
    KernelBuilder,
    Label,
    LdsAllocation,
    ModuleBuilder,
)
from asterism.builder.registers import ReservedRegion, parse_register_range
from asterism.builder.schedule import I, Inst, Rule, Stream, after, before, unroll

__all__ = ["Capture", "Group", "I", "Inst", "KernelArgument", "KernelBuilder", "Label",
           "LdsAllocation", "ModuleBuilder", "ReservedRegion", "Rule", "ScheduleError",
           "Stream", "after", "before", "parse_register_range", "unit_sequence", "unroll"]
