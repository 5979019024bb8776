"""Tables of facts derived from ISA database forms, built on first use.

The matcher, encoder and decoder each precompute, per form, what does not depend on the
instruction at hand (field positions, which rule applies to which operand...). Forms are
unhashable (they hold a dict), so tables are keyed by identity; a table keeps its forms
alive, so an identity is never reused while its entry exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from asterism.isa import Form

T = TypeVar("T")


class PerForm(Generic[T]):
    """`table(form)` is `build(form)`, computed once per form object."""

    def __init__(self, build: Callable[[Form], T]):
        self._build = build
        self._table: dict[int, tuple[Form, T]] = {}

    def __call__(self, form: Form) -> T:
        """The value built for `form`."""
        entry = self._table.get(id(form))
        if entry is None:
            entry = self._table[id(form)] = (form, self._build(form))
        return entry[1]
