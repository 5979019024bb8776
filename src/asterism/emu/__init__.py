"""asterism.emu: the built-in emulator (the default backend when no AMD GPU is present).

It executes the decoded machine code of a kernel: waves that share a program counter run
together as NumPy arrays (waves x 64 lanes). See emulator.py (dispatch ABI and scheduling),
compiler.py (pre-decoding into closures), sem_*.py (instruction semantics), memory.py (device
memory), sanitizer.py and hazard_check.py (missing s_waitcnt / s_nop detection).
"""

from asterism.emu.emulator import Compiled, Emulator, RunStats
from asterism.emu.errors import (
    BudgetExceeded,
    DeadlockError,
    EmulatorError,
    EmulatorFault,
    SanitizerError,
    UnsupportedInstruction,
)
from asterism.emu.memory import DeviceMemory, MemoryAccessError

__all__ = [
    "BudgetExceeded",
    "Compiled",
    "DeadlockError",
    "DeviceMemory",
    "Emulator",
    "EmulatorError",
    "EmulatorFault",
    "MemoryAccessError",
    "RunStats",
    "SanitizerError",
    "UnsupportedInstruction",
]
