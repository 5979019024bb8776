"""Fixed registers by name for the builder: `parse_register_range` ("v32-v95", "s[4:7]"),
the register files `kb.v` / `kb.s` / `kb.a` and reserved regions (`kb.reserve`). They only
ask their builder for "the current value of these registers" (`RegisterSource`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from xdsl.ir import SSAValue

from asterism.builder.location import caller_location, source_location
from asterism.errors import VerifyError
from asterism.ir.types import REGISTER_TYPES, RegisterType


class RegisterSource(Protocol):
    """What register files and regions need from the builder."""

    def register(self, kind: str, index: int, count: int = 1) -> SSAValue:
        """The current value of a fixed register (range) of file `kind` (v, s, a)."""
        ...


class RegisterFile:
    """`kb.v(10)`, `kb.v(8, 4)`, `kb.v[8:12]`: current values of fixed registers."""

    def __init__(self, kb: RegisterSource, kind: str):
        self._kb = kb
        self._kind = kind

    def __call__(self, index: int, count: int = 1) -> SSAValue:
        return self._kb.register(self._kind, index, count)

    def __getitem__(self, key: int | slice) -> SSAValue:
        if isinstance(key, slice):
            if key.start is None or key.stop is None or key.step not in (None, 1):
                raise VerifyError(f"register ranges are {self._kind}[first:end] (half-open), "
                                  f"got {key}", source_location(caller_location()))
            return self._kb.register(self._kind, key.start, key.stop - key.start)
        return self._kb.register(self._kind, key)


@dataclass
class ReservedRegion:
    """A named fixed register region; `S[0]`, `S[0:4]` index it from its first register."""

    kb: RegisterSource
    name: str
    type: RegisterType

    def __len__(self) -> int:
        return self.type.width

    def __getitem__(self, key: int | slice) -> SSAValue:
        first, width = self.type.first, self.type.width
        if isinstance(key, slice):
            start, stop, step = key.indices(width)
            if step != 1 or stop <= start:
                raise VerifyError(f"region {self.name}: bad slice {key}",
                                  source_location(caller_location()))
            return self.kb.register(self.type.KIND, first + start, stop - start)
        if not -width <= key < width:
            raise VerifyError(f"region {self.name} has {width} registers; index {key} is "
                              "outside it", source_location(caller_location()))
        return self.kb.register(self.type.KIND, first + (key % width))


_RANGE_RE = re.compile(r"^([vsa])(\d+)(?:\s*-\s*\1?(\d+))?$|^([vsa])\[(\d+):(\d+)\]$")


def parse_register_range(text: str) -> RegisterType:
    """`v32-v95`, `v[32:95]` (inclusive, as in assembly) or `s63` -> a fixed range type."""
    m = _RANGE_RE.match(text.strip().lower())
    if not m:
        raise VerifyError(f"expected a register range such as v32-v95 or s[4:7], got '{text}'")
    if m.group(1):
        kind, lo = m.group(1), int(m.group(2))
        hi = int(m.group(3)) if m.group(3) else lo
    else:
        kind, lo, hi = m.group(4), int(m.group(5)), int(m.group(6))
    if hi < lo:
        raise VerifyError(f"empty register range '{text}'")
    return REGISTER_TYPES[kind](lo, hi - lo + 1)


__all__ = ["RegisterFile", "RegisterSource", "ReservedRegion", "parse_register_range"]
