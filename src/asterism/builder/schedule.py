"""Declarative instruction interleaving for the builder: streams, modular patterns, groups,
keep-order regions and checks of the final order.

A GEMM inner loop as three *streams* merged by a *pattern*: "after every MFMA one DS read of
the next k-slice; after every 2nd MFMA one global load", checked as groups of exactly
1 MFMA + 1 DS read (+ 1 VMEM load on odd steps), kept in that order by later passes::

    from asterism.builder import Group, I, KernelBuilder, Stream, after, unroll

    kb = KernelBuilder("gemm_tile", "gfx942")
    A = [kb.v[8 + 2 * i:10 + 2 * i] for i in range(2)]          # this k-slice's fragments
    B = [kb.v[12 + 2 * j:14 + 2 * j] for j in range(2)]
    C = [[kb.a[16 * i + 4 * j:16 * i + 4 * j + 4] for j in range(2)] for i in range(2)]

    # One MFMA per (i, j) of a 2x2 tile; j is the inner dimension.
    mfma = Stream.over("mfma", unroll(2, 2), lambda kb, i, j:
                       kb.v_mfma_f32_16x16x16_f16(C[i][j], A[i], B[j], C[i][j]))
    # The next k-slice's fragments from LDS (callables run when they are placed) ...
    ds = Stream.over("ds_read", range(4), lambda kb, k:
                     kb.ds_read_b64(kb.v[20 + 2 * k:22 + 2 * k], kb.v(1), offset=512 * k))
    # ... and the next tile from global memory, as recorded instructions.
    gl = Stream("vmem_read", [I.global_load_dwordx4(f"v[{40 + 4 * k}:{43 + 4 * k}]", "v2",
                                                    "s[4:5]", offset=64 * k)
                              for k in range(2)])
    kb.interleave(mfma, after(ds), after(gl, every=2),
                  expect=[Group(mfma=1, ds_read=1), Group(mfma=1, ds_read=1, vmem_read=1)])
    kb.assert_counts(mfma=4, ds_read=4, vmem_read=2)
    kb.assert_order("(mfma ds_read mfma ds_read vmem_read){2}")

emits::

    v_mfma  ds_read  v_mfma  ds_read  global_load  v_mfma  ds_read  v_mfma  ds_read  global_load

Pieces:

* `unroll(4, 2)` iterates (i, j) with the last dimension innermost (`order=` changes the
  nesting); plain Python loops unroll too.
* `Stream(name, items, kind=)` is an ordered, consumable list of emitters: callables taking
  the builder (`Stream.over(name, space, fn)` maps `fn(kb, *index)` over an index space) or
  recorded instruction specs (`I.ds_read_b64("v[4:5]", "v1", offset=8)`: register operands
  as assembly text, resolved when placed).
* `kb.interleave(driver, *rules)`: emits the driver's items in order; a rule
  `after(stream, every=n, phase=p, count=m, when=...)` places m items of its stream after
  driver step k when k % n == p (`phase` defaults to the last step of each group of n: "every
  4th"), `before(...)` places them before it. `every`/`phase` may be tuples, one per dimension
  of the driver's index (`every=(1, 2)`: odd j of every i), `when(*index)` adds any other
  condition. A stream that runs dry, or items left over at the end, are errors unless
  `exhausted="stop"` / `leftover="append"` or `"keep"` say otherwise. `expect=` checks each
  step's window (its before-items, the driver item, its after-items) against a `Group` (a
  list cycles).
* `kb.emit_groups([Group(mfma=1, ds_read=2), Group(mfma=1, vmem_read=1)] * 4, *streams)` is
  the sched_group_barrier style: each group pulls its counts from the streams of those kinds
  and must come out exactly so.
* `Group(mfma=1, valu=2, ds_read=1)` means exactly that many instructions of each kind and
  nothing else (`exact=False` allows others). Kinds: salu, smem, valu, trans (alias exp),
  mfma, ds_read, ds_write, vmem_read, vmem_write, branch, wait (s_waitcnt), nop (s_nop),
  barrier (s_barrier); umbrella keys ds, vmem and valu (valu + trans) count whatever a more
  specific key of the group does not. A group that cannot be met raises `ScheduleError`
  naming the group, what is missing and what is extra. `with kb.group(mfma=1, ds_read=2):`
  checks hand-written code the same way.
* `with kb.keep_order():` marks what is emitted inside with the `sched.keep_order`
  attribute: the `schedule` pass neither moves those instructions nor interleaves anything
  into the span (lowering ignores the attribute). `interleave`, `emit_groups` and `group`
  keep their order by default (`keep=False` lets the scheduler move them).
* Checks: `kb.units()` (kinds of the kernel so far, in order), `kb.assert_counts(mfma=16,
  ds_read=8)`, `kb.assert_order("(mfma ds_read){4} vmem_read")` (words are kinds, umbrella
  keys or mnemonic globs such as `v_mfma*`; `( )`, `|`, `.`, `{n}`, `{n,m}`, `+`, `?`, and `*`
  after `)`); `with kb.capture() as cap:` collects a region's instructions for the same
  checks; `unit_sequence(module)` gives the kinds of a finished (or pass-scheduled) kernel.

Layout: the builder holds a `Scheduler` (this module) that does the work of `kb.interleave`,
`kb.emit_groups`, `kb.group`, `kb.keep_order`, ...; it sees the builder through the
`ScheduleHost` protocol only. Kinds, `Group`, order patterns, `Capture` and `unit_sequence`
live in asterism.builder.checks (they need no builder). Import them all from
`asterism.builder`.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, SSAValue

from asterism.builder.checks import (
    KINDS,
    UMBRELLAS,
    Capture,
    Group,
    ScheduleError,
    assert_counts,
    check_order,
    key_kinds,
)
from asterism.builder.location import user_line
from asterism.builder.registers import RegisterSource, parse_register_range
from asterism.ir.ops import (
    KEEP_ORDER_ATTR,
    BranchOp,
    EndKernelOp,
    InstructionOp,
    KernelOp,
)
from asterism.isa import IsaDatabase
from asterism.mc.operands import SPECIAL_REGISTERS


class ScheduleHost(RegisterSource, Protocol):
    """What the scheduler and recorded instructions need from the builder that holds them
    (KernelBuilder): where emission stands, the kernel, and emitting by mnemonic."""

    isa: IsaDatabase
    name: str
    kernel: KernelOp
    block: Block

    @property
    def off(self) -> SSAValue:
        """The `off` operand."""
        ...

    def special(self, name: str) -> SSAValue:
        """The current value of a named register (vcc, exec, m0, scc, ...)."""
        ...

    def emit(self, mnemonic: str, *operands: Any, enc: str | None = None,
             **modifiers: Any) -> Any:
        """Emit `mnemonic` with assembly-order operands; returns its destination value(s)."""
        ...


# --------------------------------------------------------------------------- index spaces


@dataclass(frozen=True)
class Unroll:
    """A multi-dimensional index space, iterated with the last dimension innermost unless
    `order` (outermost first) says otherwise; 1-D spaces yield ints."""

    extents: tuple[int, ...]
    order: tuple[int, ...]

    def __iter__(self) -> Iterator:
        ranges = [range(self.extents[d]) for d in self.order]
        for combo in itertools.product(*ranges):
            idx = [0] * len(self.extents)
            for d, v in zip(self.order, combo):
                idx[d] = v
            yield idx[0] if len(idx) == 1 else tuple(idx)

    def __len__(self) -> int:
        n = 1
        for e in self.extents:
            n *= e
        return n


def unroll(*extents: int, order: Sequence[int] | None = None) -> Unroll:
    """The index space of `extents` (e.g. unroll(4, 2) -> (0,0), (0,1), (1,0), ...)."""
    if not extents or any(not isinstance(e, int) or e < 0 for e in extents):
        raise ScheduleError(f"unroll takes non-negative sizes, got {extents}", user_line())
    nest = tuple(order) if order is not None else tuple(range(len(extents)))
    if sorted(nest) != list(range(len(extents))):
        raise ScheduleError(f"unroll order {nest} must be a permutation of the "
                            f"{len(extents)} dimensions", user_line())
    return Unroll(tuple(extents), nest)


# --------------------------------------------------------------------------- streams


@dataclass(frozen=True)
class Inst:
    """A recorded instruction: mnemonic, operands (registers as assembly text such as
    "v[4:5]", "s2", "vcc", "off", resolved when placed; or any builder operand) and
    modifiers. Calling it with a builder emits it."""

    mnemonic: str
    operands: tuple = ()
    modifiers: tuple[tuple[str, Any], ...] = ()

    def __call__(self, kb: ScheduleHost):
        """Emit the instruction into `kb`; returns what the builder method returns."""
        ops = [_operand(kb, o) for o in self.operands]
        return kb.emit(self.mnemonic, *ops, **dict(self.modifiers))

    def __str__(self) -> str:
        parts = [str(o) for o in self.operands]
        parts += [k if v is True else f"{k}:{v}" for k, v in self.modifiers]
        return f"{self.mnemonic} {', '.join(parts)}".rstrip()


def _operand(kb: ScheduleHost, operand: Any) -> Any:
    if not isinstance(operand, str):
        return operand(kb) if callable(operand) and not isinstance(operand, SSAValue) \
            else operand
    text = operand.strip().lower()
    if text == "off":
        return kb.off
    if text in SPECIAL_REGISTERS:
        return kb.special(text)
    t = parse_register_range(text)
    return kb.register(t.KIND, t.first, t.width)


class _InstSpecs:
    """`I.ds_read_b64("v[4:5]", "v1", offset=8)` -> Inst (a recorded instruction)."""

    def __getattr__(self, mnemonic: str) -> Callable[..., Inst]:
        if mnemonic.startswith("_"):
            raise AttributeError(mnemonic)

        def make(*operands: Any, **modifiers: Any) -> Inst:
            return Inst(mnemonic, tuple(operands), tuple(modifiers.items()))

        make.__name__ = mnemonic
        return make


I = _InstSpecs()  # noqa: E741 (the short name is the point)

Emitter = Callable[[ScheduleHost], Any]  # (given the builder: kb.v_mfma_..., kb.emit)


@dataclass
class Stream:
    """An ordered list of emitters, consumed front to back by patterns and groups."""

    name: str
    items: list[Emitter]
    kind: str | None = None  # what emit_groups pulls it for (default: the name if a kind)
    index: list[tuple] = field(default_factory=list)  # the index of each item
    pos: int = 0  # items consumed

    def __post_init__(self) -> None:
        self.items = list(self.items)
        if not self.index:
            self.index = [(k,) for k in range(len(self.items))]
        for k, item in enumerate(self.items):
            if not callable(item):
                raise ScheduleError(f"stream '{self.name}': item {k} is {type(item).__name__}"
                                    ", not a callable taking the builder or an Inst",
                                    user_line())

    @classmethod
    def over(cls, name: str, space: Iterable, fn: Callable[..., Any],
             kind: str | None = None) -> Stream:
        """A stream of `fn(kb, *index)` for every index of `space` (unroll(...) or a range)."""
        idx = [i if isinstance(i, tuple) else (i,) for i in space]
        items = [(lambda kb, _i=i: fn(kb, *_i)) for i in idx]
        return cls(name, items, kind, idx)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def left(self) -> int:
        """Items not consumed yet."""
        return len(self.items) - self.pos

    @property
    def group_kind(self) -> str | None:
        """The instruction kind emit_groups pulls this stream for."""
        if self.kind is not None:
            return self.kind
        return self.name if self.name in KINDS or self.name in UMBRELLAS else None

    def take(self, n: int) -> list[Emitter]:
        """The next `n` items (fewer if the stream runs out), consumed."""
        out = self.items[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def reset(self) -> None:
        """Make every item available again."""
        self.pos = 0


@dataclass(frozen=True)
class Rule:
    """Place `count` items of `stream` before/after the driver steps the rule selects."""

    stream: Stream
    every: int | tuple[int, ...] = 1
    phase: int | tuple[int, ...] | None = None
    count: int = 1
    when: Callable[..., bool] | None = None
    place: str = "after"
    exhausted: str = "error"  # or "stop": a dry stream simply stops contributing

    def fires(self, k: int, index: tuple) -> bool:
        """True if the rule places items at driver step k (with that index)."""
        if isinstance(self.every, int):
            n = max(1, self.every)
            default = n - 1 if self.place == "after" else 0
            p = default if self.phase is None else self.phase
            if not isinstance(p, int) or k % n != p % n:
                return False
        else:
            every = self.every
            if len(every) != len(index):
                raise ScheduleError(f"rule for stream '{self.stream.name}': every={every} "
                                    f"has {len(every)} dimensions, the driver index "
                                    f"{index} has {len(index)}", user_line())
            phases = self.phase if isinstance(self.phase, tuple) else tuple(
                (e - 1 if self.place == "after" else 0) if self.phase is None else self.phase
                for e in every)
            if any(i % max(1, e) != p % max(1, e) for i, e, p in zip(index, every, phases)):
                return False
        return self.when is None or bool(self.when(*index))

    def describe(self) -> str:
        """`after(ds, every=4, phase=3)` for messages."""
        args = [self.stream.name]
        if self.every != 1:
            args.append(f"every={self.every}")
        if self.phase is not None:
            args.append(f"phase={self.phase}")
        if self.count != 1:
            args.append(f"count={self.count}")
        if self.when is not None:
            args.append("when=...")
        return f"{self.place}({', '.join(args)})"


def after(stream: Stream, every: int | tuple[int, ...] = 1,
          phase: int | tuple[int, ...] | None = None, count: int = 1,
          when: Callable[..., bool] | None = None, exhausted: str = "error") -> Rule:
    """A rule placing `count` items of `stream` after every `every`-th driver step."""
    return Rule(stream, every, phase, count, when, "after", exhausted)


def before(stream: Stream, every: int | tuple[int, ...] = 1,
           phase: int | tuple[int, ...] | None = None, count: int = 1,
           when: Callable[..., bool] | None = None, exhausted: str = "error") -> Rule:
    """A rule placing `count` items of `stream` before every `every`-th driver step."""
    return Rule(stream, every, phase, count, when, "before", exhausted)


# --------------------------------------------------------------------------- the scheduler


@dataclass
class _Mark:
    block: Block
    last: Operation | None


class Scheduler:
    """Interleaving, groups, keep-order spans and checks of one kernel builder, which holds
    it and offers these methods as its own (`kb.interleave`, `kb.group`, ...)."""

    def __init__(self, kb: ScheduleHost):
        self.kb = kb
        self._keep_depth = 0
        self._keep_name: str | None = None
        self._keep_count = 0

    # --- positions ------------------------------------------------------------------------

    def _mark(self) -> _Mark:
        block = self.kb.block
        return _Mark(block, block.last_op)

    def _ops_since(self, mark: _Mark) -> list[Operation]:
        """The ops emitted since `mark` (instructions only are of interest to callers)."""
        out: list[Operation] = []
        block: Block | None = mark.block
        op = mark.last.next_op if mark.last is not None else mark.block.first_op
        current = self.kb.block
        while block is not None:
            while op is not None:
                out.append(op)
                op = op.next_op
            if block is current:
                break
            block = block.next_block
            op = block.first_op if block is not None else None
        return [o for o in out if isinstance(o, InstructionOp | BranchOp | EndKernelOp)]

    def _items(self, ops: Sequence[Operation]) -> list[tuple[str, str]]:
        return Capture(list(ops), self.kb.isa).items()

    def _all_ops(self) -> list[Operation]:
        return [op for b in self.kb.kernel.body.blocks for op in b.ops]

    # --- keep order -----------------------------------------------------------------------

    @contextlib.contextmanager
    def keep_order(self, name: str | None = None) -> Iterator[Capture]:
        """Mark the instructions emitted inside as one span the scheduler keeps as written
        (nothing moves out of it or into it)."""
        outer = self._keep_depth > 0
        if not outer:
            label = name or f"keep{self._keep_count}"
            self._keep_count += 1
            self._keep_name = label
        self._keep_depth += 1
        mark = self._mark()
        cap = Capture([], self.kb.isa)
        try:
            yield cap
        finally:
            self._keep_depth -= 1
            ops = self._ops_since(mark)
            for op in ops:
                op.attributes[KEEP_ORDER_ATTR] = StringAttr(self._keep_name or "keep")
            cap.ops = ops

    def _maybe_keep(self, keep: bool):
        return self.keep_order() if keep else contextlib.nullcontext(None)

    # --- groups and captures --------------------------------------------------------------

    @contextlib.contextmanager
    def group(self, name: str | None = None, *, exact: bool = True, keep: bool = True,
              **counts: int) -> Iterator[Capture]:
        """Check that the code emitted inside is exactly `counts` (see Group); kept in
        order by the scheduler unless keep=False."""
        g = Group(name, exact=exact, **counts)
        mark = self._mark()
        cap = Capture([], self.kb.isa)
        with self._maybe_keep(keep):
            yield cap
        cap.ops = self._ops_since(mark)
        g.check(cap.items(), f"group {name!r}" if name else "group")

    @contextlib.contextmanager
    def capture(self) -> Iterator[Capture]:
        """Collect the instructions emitted inside (for assert_counts / assert_order)."""
        mark = self._mark()
        cap = Capture([], self.kb.isa)
        yield cap
        cap.ops = self._ops_since(mark)

    def units(self) -> list[str]:
        """The kinds of the kernel's instructions so far, in order."""
        return Capture(self._all_ops(), self.kb.isa).units()

    def assert_counts(self, **counts: int) -> None:
        """The kernel so far has exactly these numbers of instructions per kind."""
        assert_counts(Capture(self._all_ops(), self.kb.isa).items(), counts,
                      f"kernel {self.kb.name}")

    def assert_order(self, pattern: str) -> None:
        """The kernel's instruction kinds so far match the order pattern entirely."""
        check_order(Capture(self._all_ops(), self.kb.isa).items(), pattern,
                    f"kernel {self.kb.name}")

    # --- interleaving ---------------------------------------------------------------------

    def interleave(self, driver: Stream, *rules: Rule, leftover: str = "error",
                   expect: Group | Sequence[Group] | None = None,
                   keep: bool = True) -> Capture:
        """Emit `driver`'s items in order with the rules' items placed around them (see the
        module docstring); returns a Capture of everything emitted."""
        if leftover not in ("error", "append", "keep"):
            raise ScheduleError(f"interleave: leftover must be error, append or keep, got "
                                f"{leftover!r}", user_line())
        kb = self.kb
        groups = [expect] if isinstance(expect, Group) else list(expect or [])
        start = self._mark()
        first = driver.pos
        with self._maybe_keep(keep):
            for k, item in enumerate(driver.take(driver.left)):
                index = driver.index[first + k]
                window = self._mark()
                self._apply(rules, "before", k, index, driver)
                item(kb)
                self._apply(rules, "after", k, index, driver)
                if groups:
                    g = groups[k % len(groups)]
                    g.check(self._items(self._ops_since(window)),
                            f"interleave step {k} (driver '{driver.name}' index "
                            f"{index if len(index) > 1 else index[0]})"
                            + (f", group {g.name!r}" if g.name else ""))
            for rule in rules:
                s = rule.stream
                if s.left and leftover == "append":
                    for it in s.take(s.left):
                        it(kb)
                elif s.left and leftover == "error":
                    raise ScheduleError(
                        f"interleave: stream '{s.name}' has {s.left} item(s) left after "
                        f"the driver '{driver.name}' ended ({s.pos} of {len(s)} used); "
                        "change the rules, or pass leftover='append' or 'keep'", user_line())
        return Capture(self._ops_since(start), kb.isa)

    def _apply(self, rules: Sequence[Rule], place: str, k: int, index: tuple,
               driver: Stream) -> None:
        for rule in rules:
            if rule.place != place or not rule.fires(k, index):
                continue
            items = rule.stream.take(rule.count)
            if len(items) < rule.count and rule.exhausted == "error":
                s = rule.stream
                shown = index if len(index) > 1 else index[0]
                raise ScheduleError(
                    f"interleave: {rule.describe()} wants {rule.count} item(s) at "
                    f"'{driver.name}' step {k} (index {shown}), but stream '{s.name}' has "
                    f"{len(items)} left ({len(s)} in all); use fewer items per step, a "
                    "larger every=, or exhausted='stop'", user_line())
            for it in items:
                it(self.kb)

    def emit_groups(self, groups: Sequence[Group], *streams: Stream,
                    keep: bool = True) -> Capture:
        """Emit groups in order, each pulling its counts from the streams of those kinds
        (`Stream.kind`, or a stream named after a kind), then checking what came out."""
        by_kind: dict[str, list[Stream]] = {}
        for s in streams:
            kind = s.group_kind
            if kind is None:
                raise ScheduleError(f"emit_groups: stream '{s.name}' has no kind (name it "
                                    f"after a kind or pass kind=)", user_line())
            key_kinds(kind)
            by_kind.setdefault(kind, []).append(s)
        start = self._mark()
        with self._maybe_keep(keep):
            for n, g in enumerate(groups):
                label = f"group {n}" + (f" {g.name!r}" if g.name else "")
                window = self._mark()
                for key, count in g.counts.items():
                    sources = by_kind.get(key, [])
                    need = count
                    for s in sources:
                        got = s.take(need)
                        for it in got:
                            it(self.kb)
                        need -= len(got)
                        if not need:
                            break
                    if need and sources:
                        names = ", ".join(f"'{s.name}' ({len(s)} items)" for s in sources)
                        raise ScheduleError(f"{label} ({g.describe()}): needs {count} {key} "
                                            f"but stream {names} ran out: missing {need} "
                                            f"{key}", user_line())
                g.check(self._items(self._ops_since(window)), label)
        return Capture(self._ops_since(start), self.kb.isa)


__all__ = ["I", "Inst", "Rule", "ScheduleHost", "Scheduler", "Stream", "Unroll", "after",
           "before", "unroll"]
