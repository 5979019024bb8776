"""Instruction kinds and the checks of emitted code: groups (`Group(mfma=1, ds_read=2)`),
order patterns (`"(mfma ds_read){4} vmem_read"`), per-kind counts, captured regions
(`Capture`) and the kinds of a finished kernel (`unit_sequence`). The builder's scheduling
(asterism.builder.schedule) checks what it emits with them; they need no builder."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Block, Operation

from asterism.builder.location import user_line
from asterism.errors import VerifyError
from asterism.ir.ops import BranchOp, EndKernelOp, InstructionOp, KernelOp, ModuleOp
from asterism.isa import IsaDatabase, get_isa
from asterism.target.timing import timing_class

KINDS = ("salu", "smem", "valu", "trans", "mfma", "ds_read", "ds_write", "vmem_read",
         "vmem_write", "branch", "wait", "nop", "barrier")
# Keys that stand for several kinds (a group counts an instruction under its own kind when
# the group names it, else under the umbrella).
UMBRELLAS: dict[str, tuple[str, ...]] = {
    "ds": ("ds_read", "ds_write"), "lds": ("ds_read", "ds_write"),
    "vmem": ("vmem_read", "vmem_write"), "valu": ("valu", "trans"), "exp": ("trans",)}
_CONTROL_KINDS = {"s_waitcnt": "wait", "s_nop": "nop", "s_barrier": "barrier"}


class ScheduleError(VerifyError):
    """An interleaving pattern, group or order check that the emitted code does not meet."""


# --------------------------------------------------------------------------- kinds


def instruction_kind(op: Operation, isa: IsaDatabase) -> str | None:
    """The kind of an op as groups and order checks count it (None if it emits nothing)."""
    if isinstance(op, InstructionOp):
        mnemonic = op.mnemonic_text
    elif isinstance(op, BranchOp):
        return "branch"
    elif isinstance(op, EndKernelOp):
        return "branch"
    else:
        return None
    inst = isa.get(mnemonic)
    if inst is None:
        return None
    return _CONTROL_KINDS.get(inst.mnemonic) or timing_class(inst)


def _mnemonic(op: Operation) -> str:
    if isinstance(op, InstructionOp | BranchOp):
        return op.mnemonic_text
    return "s_endpgm" if isinstance(op, EndKernelOp) else op.name


def key_kinds(key: str) -> tuple[str, ...]:
    if key in UMBRELLAS:
        return UMBRELLAS[key]
    if key in KINDS:
        return (key,)
    known = ", ".join(list(KINDS) + list(UMBRELLAS))
    raise ScheduleError(f"unknown instruction kind '{key}' (kinds: {known})", user_line())


# --------------------------------------------------------------------------- groups


class Group:
    """Exactly these numbers of instructions per kind (and nothing else unless
    exact=False): `Group(mfma=1, ds_read=2)`, `Group("g3", mfma=1, valu=2, exact=False)`."""

    def __init__(self, name: str | None = None, *, exact: bool = True, **counts: int):
        if not counts:
            raise ScheduleError("a Group names at least one kind, e.g. Group(mfma=1, "
                                "ds_read=2)", user_line())
        for key, n in counts.items():
            key_kinds(key)
            if not isinstance(n, int) or n < 0:
                raise ScheduleError(f"Group: {key}={n!r} is not a count", user_line())
        self.name = name
        self.exact = exact
        self.counts: dict[str, int] = dict(counts)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v}" for k, v in self.counts.items())
        name = f"{self.name!r}, " if self.name else ""
        return f"Group({name}{body}{'' if self.exact else ', exact=False'})"

    def describe(self) -> str:
        """`exactly 1 mfma + 2 ds_read` for messages."""
        body = " + ".join(f"{v} {k}" for k, v in self.counts.items())
        return f"{'exactly' if self.exact else 'at least'} {body}"

    def key_for(self, kind: str) -> str | None:
        """Which of the group's keys an instruction of `kind` counts under."""
        if kind in self.counts:
            return kind
        for key in self.counts:
            if kind in UMBRELLAS.get(key, ()):
                return key
        return None

    def check(self, items: Sequence[tuple[str, str]], label: str) -> None:
        """Raise ScheduleError unless (kind, mnemonic) items meet the group."""
        got: Counter[str] = Counter()
        extra: list[str] = []
        for kind, mnemonic in items:
            key = self.key_for(kind)
            if key is None:
                extra.append(f"{kind} ({mnemonic})")
            else:
                got[key] += 1
        problems = []
        missing = [f"{n - got[k]} {k}" for k, n in self.counts.items() if got[k] < n]
        over = [f"{got[k] - n} {k}" for k, n in self.counts.items()
                if got[k] > n and self.exact]
        if missing:
            problems.append("missing " + ", ".join(missing))
        if over:
            problems.append("too many: " + ", ".join(over))
        if extra and self.exact:
            problems.append("not allowed: " + ", ".join(extra))
        if problems:
            seq = " ".join(m for _k, m in items) or "nothing"
            raise ScheduleError(f"{label} ({self.describe()}): {'; '.join(problems)} "
                                f"(emitted: {seq})", user_line())


# --------------------------------------------------------------------------- order checks


_TOKEN_RE = re.compile(r"\s*(?:(\{\d+(?:,\d*)?\})|([()|+?.])|(\*)|([A-Za-z_][\w*]*))")


def _word_regex(word: str) -> str:
    if word in KINDS or word in UMBRELLAS:
        kinds = "|".join(key_kinds(word))
        return rf"(?:{kinds})/\S+ "
    glob = re.escape(word).replace(r"\*", r"[^ /]*")
    return rf"[a-z_]+/{glob} "


def order_regex(pattern: str) -> re.Pattern[str]:
    """Compile an order pattern ("(mfma ds_read){4} vmem_read") to a regex over
    "kind/mnemonic " words."""
    out: list[str] = []
    pos = 0
    prev_close = False
    while pos < len(pattern):
        m = _TOKEN_RE.match(pattern, pos)
        if not m or m.end() == pos:
            if pattern[pos:].strip() == "":
                break
            raise ScheduleError(f"bad order pattern at '{pattern[pos:]}' (words are kinds, "
                                "umbrella keys or mnemonic globs; ( ) | . {n} + ? and * "
                                "after ')')", user_line())
        quant, punct, star, word = m.groups()
        if quant:
            out.append(quant)
        elif punct:
            out.append({"(": "(?:", ")": ")", "|": "|", "+": "+", "?": "?",
                        ".": r"\S+ "}[punct])
        elif star:
            if not prev_close:
                raise ScheduleError("'*' repeats a parenthesized group only ('(mfma ds)*'); "
                                    "inside a word it is a mnemonic glob ('v_mfma*')",
                                    user_line())
            out.append("*")
        else:
            out.append(_word_regex(word))
        prev_close = punct == ")"
        pos = m.end()
    try:
        return re.compile("".join(out))
    except re.error as err:
        raise ScheduleError(f"bad order pattern '{pattern}': {err}", user_line()) from None


def _sequence_text(items: Sequence[tuple[str, str]]) -> str:
    return "".join(f"{k}/{m} " for k, m in items)


def check_order(items: Sequence[tuple[str, str]], pattern: str, label: str = "order") -> None:
    """Raise ScheduleError unless the (kind, mnemonic) sequence matches `pattern` entirely."""
    rx = order_regex(pattern)
    if rx.fullmatch(_sequence_text(items)):
        return
    shown = " ".join(k for k, _m in items[:48]) + (" ..." if len(items) > 48 else "")
    raise ScheduleError(f"{label}: the order does not match '{pattern}': got "
                        f"{shown or 'nothing'} ({len(items)} instructions)", user_line())


@dataclass
class Capture:
    """The instruction ops of a region of the kernel, for checks."""

    ops: list[Operation]
    isa: IsaDatabase

    def items(self) -> list[tuple[str, str]]:
        """(kind, mnemonic) of every instruction, in order."""
        out = []
        for op in self.ops:
            kind = instruction_kind(op, self.isa)
            if kind is not None:
                out.append((kind, _mnemonic(op)))
        return out

    def units(self) -> list[str]:
        """The kinds, in order."""
        return [k for k, _m in self.items()]

    def mnemonics(self) -> list[str]:
        """The mnemonics, in order."""
        return [m for _k, m in self.items()]

    def counts(self) -> Counter[str]:
        """Instructions per kind."""
        return Counter(self.units())

    def assert_counts(self, **counts: int) -> None:
        """Each named kind (or umbrella key) occurs exactly that many times."""
        assert_counts(self.items(), counts)

    def assert_order(self, pattern: str) -> None:
        """The whole sequence matches the order pattern."""
        check_order(self.items(), pattern)


def assert_counts(items: Sequence[tuple[str, str]], counts: dict[str, int],
                  label: str = "counts") -> None:
    """Raise ScheduleError unless each named kind/umbrella key has exactly its count."""
    have = Counter(k for k, _m in items)
    wrong = []
    for key, want in counts.items():
        n = sum(have[k] for k in key_kinds(key))
        if n != want:
            wrong.append(f"{key}: {n} (expected {want})")
    if wrong:
        raise ScheduleError(f"{label}: {', '.join(wrong)}", user_line())


def unit_sequence(source: Operation | Block | Sequence[Operation],
                  kernel: str | None = None, *, mnemonics: bool = False) -> list[str]:
    """The kinds (or mnemonics) of a kernel's instructions in emission order: `source` is a
    module (its only kernel, or `kernel=`), a KernelOp, a Block or a list of ops."""
    ops, isa = _ops_of(source, kernel)
    cap = Capture(ops, isa)
    return cap.mnemonics() if mnemonics else cap.units()


def _ops_of(source, kernel: str | None) -> tuple[list[Operation], IsaDatabase]:
    if isinstance(source, Block):
        return list(source.ops), _isa_of(source.parent_op())
    if isinstance(source, list | tuple):
        ops = list(source)
        return ops, _isa_of(ops[0] if ops else None)
    kernels = [op for op in source.walk() if isinstance(op, KernelOp)]
    if kernel is not None:
        kernels = [k for k in kernels if k.kernel_name == kernel]
    if len(kernels) != 1:
        names = ", ".join(k.kernel_name for k in source.walk() if isinstance(k, KernelOp))
        raise ScheduleError(f"unit_sequence: {'no' if not kernels else 'more than one'} "
                            f"kernel{f' named {kernel!r}' if kernel else ''} (kernels: "
                            f"{names or 'none'}); pass kernel=")
    k = kernels[0]
    return [op for b in k.body.blocks for op in b.ops], _isa_of(k)


def _isa_of(op: Operation | None) -> IsaDatabase:
    while op is not None and not isinstance(op, ModuleOp):
        op = op.parent_op()
    return get_isa(op.target_name if op is not None else "gfx942")


__all__ = ["KINDS", "UMBRELLAS", "Capture", "Group", "ScheduleError", "assert_counts",
           "check_order", "instruction_kind", "key_kinds", "order_regex", "unit_sequence"]
