"""Errors the emulator raises: faults, sanitizer reports, budget exhaustion, gaps.

Every one is an `AsterismError`, so the CLI prints the message and exits 1. Each carries the
facts a person needs to find the problem (kernel, PC, the instruction as disassembled text,
workgroup, wave, lane, address) both in the message and as attributes for tools and tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asterism.errors import AsterismError

if TYPE_CHECKING:
    from asterism.emu.core import Group


class EmulatorError(AsterismError):
    """Base of everything the emulator raises while running a kernel."""

    def __init__(self, message: str, *, kernel: str = "", pc: int | None = None,
                 inst: str = "", workgroup: tuple[int, int, int] | None = None,
                 wave: int | None = None, lane: int | None = None,
                 address: int | None = None):
        self.kernel = kernel
        self.pc = pc
        self.inst = inst
        self.workgroup = workgroup
        self.wave = wave
        self.lane = lane
        self.address = address
        self.reason = message
        super().__init__(self._compose(message))

    def _compose(self, message: str) -> str:
        where = []
        if self.kernel:
            where.append(f"kernel {self.kernel}")
        if self.pc is not None:
            where.append(f"pc 0x{self.pc:x}")
        if self.inst:
            where.append(f"`{self.inst}`")
        if self.workgroup is not None:
            where.append("workgroup ({}, {}, {})".format(*self.workgroup))
        if self.wave is not None:
            where.append(f"wave {self.wave}")
        if self.lane is not None:
            where.append(f"lane {self.lane}")
        if self.address is not None:
            where.append(f"address 0x{self.address:x}")
        return f"{message} [{', '.join(where)}]" if where else message


class EmulatorFault(EmulatorError):
    """The program did something the hardware would fault on (bad address, s_trap...)."""


class SanitizerError(EmulatorError):
    """A missing s_waitcnt or s_nop: the result would depend on timing on real hardware.

    `needed` is the fix the sanitizer proposes, e.g. "s_waitcnt vmcnt(0)" or "s_nop 3";
    `kind` the class of violation (a key of emu.sanitizer.KINDS), `rule` the rule broken
    (a hazard rule's name, or a short name of the waitcnt/LDS/register rule) and `source`
    where that rule comes from."""

    def __init__(self, message: str, *, needed: str = "", kind: str = "", rule: str = "",
                 source: str = "", **where):
        self.needed = needed
        self.kind = kind
        self.rule = rule
        self.source = source
        super().__init__(message, **where)


class SanitizerWarning(UserWarning):
    """A violation the sanitizer reports in warn mode (the run goes on)."""


class BudgetExceeded(EmulatorError):
    """The instruction budget ran out (a runaway loop, or a budget set too low)."""


def budget_message(wave_instructions: int, steps: int, budget: int) -> str:
    """What BudgetExceeded says: how much ran, that the kernel did not end, how to go on."""
    return (f"stopped after {wave_instructions} wave-instructions: the kernel did not end (a "
            f"wave executed {steps} instructions, the per-wave instruction budget of "
            f"{budget}: a loop that never exits?); raise the budget with --max-instructions "
            "(API: instruction_budget=)")


class UnsupportedInstruction(EmulatorError):
    """An instruction the emulator does not implement (never executed as a silent no-op)."""


class DeadlockError(EmulatorError):
    """Waves wait at a barrier that can never complete."""


class CompileError(Exception):
    """An instruction whose operands the emulator cannot set up: the compiler turns it into an
    op that raises an `EmulatorFault` when (and only when) the instruction is executed."""


def with_context(exc: EmulatorError, kernel: str, g: Group) -> EmulatorError:
    """`exc` with the kernel, workgroup and wave of the group `g` that raised it filled in
    (the error itself if it names them already)."""
    if exc.kernel and exc.workgroup is not None:
        return exc
    wave = int(g.waves[0])
    kw = {"kernel": exc.kernel or kernel, "pc": exc.pc, "inst": exc.inst,
          "workgroup": exc.workgroup if exc.workgroup is not None else
          tuple(int(x) for x in g.ctx.wg_ids[wave]),
          "wave": exc.wave if exc.wave is not None else int(g.ctx.wave_in_wg[wave]),
          "lane": exc.lane, "address": exc.address}
    if isinstance(exc, SanitizerError):
        return SanitizerError(exc.reason, needed=exc.needed, kind=exc.kind, rule=exc.rule,
                              source=exc.source, **kw)
    return type(exc)(exc.reason, **kw)
