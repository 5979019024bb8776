"""What a pass is: a small frozen dataclass whose fields are its options (xDSL's ModulePass).

    @dataclass(frozen=True)
    class RegallocPass(Pass):
        name = "regalloc"
        summary = "assign registers to relocatable values ..."
        report: bool = option(False, "print used vs peak per register file to stderr")
        max_vgprs: int | None = option(None, "VGPR budget (default: the target's)")

        def apply(self, module): ...

An option is written in a pipeline as its field name with dashes (`regalloc{max-vgprs=8}`);
its type is `int`, `bool`, `str` or a `Literal[...]` of strings (an enum), optionally
`| None` (None: not given). `parse_options` is the one place option text becomes those
fields: pipeline strings (`passes.pipeline`) and the keyword-string APIs (`allocate_module(m,
**{"max-vgprs": "8"})`) both go through it, so every pass reports a bad option the same way,
at the option's place in the pipeline when there is one. This module imports nothing heavy:
the registry and `asterism opt --list-passes` read option specs without running a pass.
"""

from __future__ import annotations

import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

from asterism.errors import AsterismError, ParseError, SourceLocation, shown

if TYPE_CHECKING:
    from xdsl.ir import Operation

# Flag spellings, as the pipeline options always accepted them ("" is `report=`).
TRUE_WORDS = ("1", "true", "yes", "on", "")
FALSE_WORDS = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Pass(ABC):
    """A pass of a pipeline. Subclasses are frozen dataclasses: their fields are the
    options; `name` is how pipelines spell the pass and `summary` its one-line help."""

    name: ClassVar[str]
    summary: ClassVar[str]
    # True for a pass that works on scf loops (the software pipeliner); before any other,
    # run_pipeline lowers them to blocks and branches (ir.loop_lowering).
    structured: ClassVar[bool] = False
    # True for a pass that only inserts or erases whole ops and changes no operand, result
    # or type of an op it leaves: the machine facts (passes.machine) of the ops before it
    # stay true after it, so the next pass of the pipeline reuses them.
    keeps_machine_facts: ClassVar[bool] = False

    @abstractmethod
    def apply(self, module: Operation) -> Operation | None:
        """Run on `module` in place (None) or return the module that replaces it."""

    @classmethod
    def from_options(cls: type[P], options: Mapping[str, str]) -> P:
        """The pass with `options` given as text (`{"max-vgprs": "8"}`), checked."""
        return parse_options(cls, [OptionText(k, v) for k, v in options.items()])


P = TypeVar("P", bound=Pass)


def option(default: object, help: str, *, check: Callable[[str], object] | None = None):
    """A pass option field: its default, one-line help, and optionally `check(text)`, which
    raises an AsterismError for a value of the right type that still is not valid (e.g. a
    register range that does not parse)."""
    return field(default=default, metadata={"help": help, "check": check})


@dataclass(frozen=True)
class OptionSpec:
    """One option of a pass as pipelines write it: name, type, default, help."""

    name: str  # as written in a pipeline: max-vgprs
    attr: str  # the dataclass field: max_vgprs
    kind: str  # "int", "bool", "str" or "enum"
    choices: tuple[str, ...]  # the enum's values
    default: object
    help: str
    check: Callable[[str], object] | None = None

    @property
    def metavar(self) -> str:
        """What the value looks like in help text (N, 0|1, TEXT, a|b)."""
        return {"int": "N", "bool": "0|1", "str": "TEXT"}.get(self.kind) or "|".join(self.choices)

    def default_text(self) -> str | None:
        """The default as a pipeline would write it (None when there is none)."""
        if self.default is None:
            return None
        if self.kind == "bool":
            return "1" if self.default else "0"
        return str(self.default)

    def expected(self) -> str:
        """What a value must be, for error messages."""
        if self.kind == "int":
            return "an integer"
        if self.kind == "bool":
            return "a flag (1/0, true/false, yes/no, on/off)"
        return "one of " + ", ".join(self.choices)

    def convert(self, text: str) -> object:
        """The field value of `text`; ValueError when it is not of the option's type."""
        if self.kind == "int":
            return int(text)
        if self.kind == "bool":
            if text.lower() in TRUE_WORDS:
                return True
            if text.lower() in FALSE_WORDS:
                return False
            raise ValueError(text)
        if self.kind == "enum" and text not in self.choices:
            raise ValueError(text)
        return text


def _kind_of(hint: object, where: str) -> tuple[str, tuple[str, ...]]:
    """(kind, enum choices) of an option's type hint (`X | None` counts as X)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return _kind_of(rest[0], where)
    if typing.get_origin(hint) is Literal and all(isinstance(a, str)
                                                   for a in typing.get_args(hint)):
        return "enum", tuple(typing.get_args(hint))
    for kind in (bool, int, str):  # (bool first: it is an int)
        if hint is kind:
            return kind.__name__, ()
    raise TypeError(f"{where}: an option is int, bool, str or a Literal of strings, "
                    f"not {hint!r}")


@cache
def option_specs(cls: type[Pass]) -> tuple[OptionSpec, ...]:
    """The options of a pass class, in the order its fields declare them."""
    hints = typing.get_type_hints(cls)
    specs = []
    for f in fields(cls):
        where = f"{cls.__name__}.{f.name}"
        if f.default is MISSING or "help" not in f.metadata:
            raise TypeError(f"{where}: declare pass options with option(default, help)")
        kind, choices = _kind_of(hints[f.name], where)
        specs.append(OptionSpec(f.name.replace("_", "-"), f.name, kind, choices, f.default,
                                f.metadata["help"], f.metadata.get("check")))
    return tuple(specs)


@dataclass(frozen=True)
class OptionText:
    """One `key=value` as written, with where its key and value start (None: not from a
    pipeline string)."""

    key: str
    value: str
    key_at: SourceLocation | None = None
    value_at: SourceLocation | None = None


def parse_options(cls: type[P], given: Iterable[OptionText]) -> P:
    """The pass `cls` with the options `given` as text: ParseError (at the option) for an
    unknown or repeated option or a value that is not of the option's type."""
    specs = {s.name: s for s in option_specs(cls)}
    values: dict[str, object] = {}
    for item in given:
        key = item.key.replace("_", "-")  # (`lds_dma` too: Python keywords have no dashes)
        spec = specs.get(key)
        if spec is None:
            names = ", ".join(specs) or "none"
            raise ParseError(f"unknown option {shown(item.key)} of pass '{cls.name}'; "
                             f"options: {names}", item.key_at)
        if spec.attr in values:
            raise ParseError(f"option '{spec.name}' of '{cls.name}' is given twice",
                             item.key_at)
        try:
            values[spec.attr] = spec.convert(item.value)
        except ValueError:
            raise ParseError(f"option '{spec.name}' of '{cls.name}' expects {spec.expected()},"
                             f" got {shown(item.value)}", item.value_at) from None
        if spec.check is not None:
            try:
                spec.check(item.value)
            except AsterismError as err:
                raise ParseError(f"option '{spec.name}' of '{cls.name}': {err.message}",
                                 item.value_at) from None
    return cls(**values)


def describe(cls: type[Pass]) -> list[str]:
    """Help lines of a pass: its name and summary, then one line per option."""
    lines = [f"  {cls.name:<16}{cls.summary}"]
    for s in option_specs(cls):
        default = s.default_text()
        note = f" (default: {default})" if default not in (None, "") else ""
        lines.append(f"      {s.name + '=' + s.metavar:<28} {s.help}{note}")
    return lines


__all__ = ["OptionSpec", "OptionText", "Pass", "describe", "option", "option_specs",
           "parse_options"]
