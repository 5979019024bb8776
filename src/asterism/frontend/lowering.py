"""The core of the upstream lowering: the state of one kernel being lowered (`KernelLowering`:
the builder, the map from upstream values to what they became, loop and call frames), the
dispatch of an op to its handler with errors located at the op, and the handler table type.

A handler lowers one op: `handler(low, op)` emits through `low.kb` and records the op's
results with `low.set`. Each dialect module (asterism.frontend.gpu, .arith, ...) has a
`HANDLERS` table keyed by the xDSL op class; the pass (asterism.frontend.lower) merges them and
hands the table to every KernelLowering. This module imports no handler module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, FileLineColLoc
from xdsl.ir import Block, Operation, SSAValue

from asterism.errors import VerifyError
from asterism.frontend.values import LV, LoweringError, fail, signed32

# `handler(low, op)`: the op is typed Any because each handler takes its own op class.
Handler = Callable[["KernelLowering", Any], None]
HandlerTable = Mapping[type[Operation], Handler]

DEFAULT_BLOCK = (64, 1, 1)

# asterism's own source folder: an instruction located there was stamped by the builder with
# the lowering's Python line, not a line of the user's input.
_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


def merge_tables(*tables: HandlerTable) -> dict[type[Operation], Handler]:
    """One table from the dialect modules' tables (an op class in two of them is a bug)."""
    merged: dict[type[Operation], Handler] = {}
    for table in tables:
        for cls, handler in table.items():
            if cls in merged:
                raise ValueError(f"{cls.name} has two handlers: {merged[cls].__module__}."
                                 f"{merged[cls].__name__} and {handler.__module__}."
                                 f"{handler.__name__}")
            merged[cls] = handler
    return merged


def block_size(func_op, default=DEFAULT_BLOCK) -> tuple[int, int, int]:
    """The gpu.func's `known_block_size` (padded to 3 dimensions), else `default`."""
    size = func_op.properties.get("known_block_size") or func_op.attributes.get(
        "known_block_size") or func_op.attributes.get("gpu.known_block_size")
    if isinstance(size, DenseArrayBase):
        vals = tuple(int(v) for v in size.get_values())
        return (vals + (1, 1, 1))[:3]  # type: ignore[return-value]
    return default


@dataclass
class LoopFrame:
    """An enclosing scf.for being lowered: its yield, iter block arguments and registers."""

    yield_op: Operation
    args: list[SSAValue]
    regs: list[SSAValue]
    body: Block
    taken: list[bool] = field(default_factory=list)  # iter registers already written into


class KernelLowering:
    """Lowers one gpu.func kernel through a KernelBuilder."""

    def __init__(self, func_op, kb, target: str, handlers: HandlerTable):
        self.func = func_op
        self.kb = kb
        self.target = target
        self.handlers = handlers
        self.vals: dict[SSAValue, LV] = {}
        self.block_size = block_size(func_op)
        self.block_known = block_size(func_op, None) is not None
        self.functions: dict[str, Operation] = {}
        self.inline_frames: list[list[LV]] = []  # results of the func.call being inlined
        self.loops: list[LoopFrame] = []  # enclosing scf.for frames
        self.divergent: set[SSAValue] | None = None  # asterism.frontend.uniformity, on demand
        self.cfg: Any = None  # the several-block body being lowered (asterism.frontend.cf)
        self._sgpr_cache: dict[tuple, SSAValue] = {}

    # --- values -------------------------------------------------------------------------

    def get(self, value: SSAValue) -> LV:
        """The lowered form of an upstream value."""
        found = self.vals.get(value)
        if found is None:
            owner = value.owner
            name = owner.name if isinstance(owner, Operation) else "a block argument"
            raise LoweringError(f"value defined by {name} was not lowered (unsupported use)")
        return found

    def set(self, value: SSAValue, lv: LV) -> LV:
        """Record what `value` became."""
        self.vals[value] = lv
        return lv

    def sgpr(self, lv: LV) -> SSAValue:
        """`lv` in SGPR(s) (constants materialized with s_mov_b32)."""
        if lv.kind == "s":
            return lv.value
        if lv.kind == "c":
            key = (id(self.kb.block), tuple(lv.value))
            if key not in self._sgpr_cache:
                words = [self.kb.s_mov_b32(None, signed32(w)) for w in lv.value]
                self._sgpr_cache[key] = words[0] if len(words) == 1 else self.kb.join(
                    *words, align=2 if len(words) == 2 else 4 if len(words) >= 4 else 1)
            return self._sgpr_cache[key]
        raise LoweringError("a per-lane value is used where a uniform one is needed")

    def vgpr(self, lv: LV) -> SSAValue:
        """`lv` in VGPR(s) (constants and SGPRs copied with v_mov_b32)."""
        if lv.kind == "v":
            return lv.value
        if lv.kind == "c":
            words = [self.kb.v_mov_b32(None, w if -16 <= signed32(w) <= 64 else signed32(w))
                     for w in lv.value]
        elif lv.kind == "s":
            src = self.kb.split(lv.value) if lv.regs > 1 else [lv.value]
            words = [self.kb.v_mov_b32(None, s) for s in src]
        else:
            raise LoweringError("a memref is used where a value is needed")
        if len(words) == 1:
            return words[0]
        return self.kb.join(*words, align=2 if len(words) == 2 else 4 if len(words) % 4 == 0
                            else 1)

    def operand(self, lv: LV):
        """A VALU/SALU source: an inline constant as a Python int/float, else a register."""
        if lv.kind == "c" and len(lv.value) == 1:
            w = signed32(lv.value[0])
            if -16 <= w <= 64:
                return w
            return self.sgpr(lv)
        if lv.kind == "c":
            return self.sgpr(lv)
        return lv.value

    def valu_operands(self, lvs: list[LV]) -> list:
        """Sources of one VALU instruction: at most one SGPR or literal (the constant bus of
        gfx9), the others moved to VGPRs."""
        out = []
        bus = 0
        for lv in lvs:
            op = self.operand(lv)
            if isinstance(op, int):
                out.append(op)
            elif lv.kind == "v":
                out.append(op)
            elif bus == 0 and lv.regs == 1:
                bus = 1
                out.append(op)
            else:
                out.append(self.vgpr(lv))
        return out

    def dest(self, result: SSAValue, file: str = "v"):
        """The destination for an op producing `result`: the loop register it is yielded
        into, or the register of the block argument it is branched to, when that is safe
        (so accumulators stay in place), else None (a new register)."""
        hint = self._yield_hint(result)
        if hint is not None and hint.type.KIND == file:
            return hint
        return None

    def _carried_into(self, use) -> LoopFrame | None:
        """The loop (its frame) or branch (a frame made for it) that carries the value of
        `use` into a register: the innermost loop's yield, or a cf.br to a block whose
        arguments are registers (asterism.frontend.cf)."""
        if self.loops and use.operation is self.loops[-1].yield_op:
            return self.loops[-1]
        if self.cfg is not None and use.operation.name == "cf.br":
            br = use.operation
            dest = br.successors[0]
            regs = self.cfg.regs.get(dest)
            if not regs:
                return None
            key = id(br)
            if key not in self.cfg.taken:
                self.cfg.taken[key] = [False] * len(regs)
            return LoopFrame(br, list(dest.args), regs, br.parent_block(),
                             self.cfg.taken[key])
        return None

    def _yield_hint(self, result: SSAValue):
        if len(list(result.uses)) != 1:
            return None
        use = next(iter(result.uses))
        frame = self._carried_into(use)
        if frame is None:
            return None
        arg = frame.args[use.index]
        op = result.owner
        if not isinstance(op, Operation) or op.parent_block() is not frame.body:
            return None
        # The iter register is overwritten here: nothing may read the old value later on.
        order = {o: k for k, o in enumerate(frame.body.ops)}
        here = order[op]
        for u in arg.uses:
            top = u.operation
            while top is not None and top.parent_block() is not frame.body:
                top = top.parent_op()
            # (a use in another block of a several-block body reads the argument after the
            # branch has written it: the value it has there anyway)
            if top is not None and order[top] > here and top is not frame.yield_op:
                return None
        if any(v is not result and frame.yield_op.operands[k] is arg
               for k, v in enumerate(frame.yield_op.operands)):
            return None
        if frame.taken[use.index]:
            return None
        frame.taken[use.index] = True
        return frame.regs[use.index]

    # --- blocks and ops -----------------------------------------------------------------

    def lower_block(self, block: Block) -> None:
        """Lower the ops of an upstream block in order."""
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        """Lower one op through its handler; every error names the op at its location."""
        handler = self.handlers.get(type(op))
        if handler is None:
            raise fail(op, "not supported by asterism's upstream lowering (see "
                           "docs/upstream_mlir.md for the supported ops)")
        start = self.mark()
        try:
            handler(self, op)
            self.locate(start, op.location)
        except LoweringError as err:
            if err.location is None:
                raise fail(op, err.message) from None
            raise
        except VerifyError as err:
            raise fail(op, f"lowering failed: {err.message}") from None
        except (AttributeError, KeyError, ValueError, TypeError, IndexError) as err:
            # an op shape the handlers do not expect: still an error naming the op
            raise fail(op, f"cannot be lowered ({type(err).__name__}: {err})") from None

    def mark(self) -> tuple[Block, Operation | None]:
        """Where the next instruction goes (for `locate`)."""
        return self.kb.block, self.kb.block.last_op

    def locate(self, start: tuple[Block, Operation | None], loc) -> None:
        """Give the instructions emitted since `start` (block, its last op then) the upstream
        op's location: the builder stamps the Python line that emitted them, and an error a
        later pass finds in one must point into the user's file, not asterism's source."""
        if not isinstance(loc, FileLineColLoc):
            return
        block, last = start
        blocks = list(self.kb.kernel.body.blocks)
        if block not in blocks:
            return
        op = last.next_op if last is not None else block.first_op
        for b in blocks[blocks.index(block):]:
            if b is not block:
                op = b.first_op
            while op is not None:
                here = op.location
                if not isinstance(here, FileLineColLoc) or \
                        here.filename.data.startswith(_PACKAGE_DIR):
                    op.location = loc
                op = op.next_op

    def lower_return(self, op: Operation) -> None:
        """A return (gpu.return, func.return): the results of the call being inlined, else the
        end of the kernel."""
        if self.inline_frames:
            frame = self.inline_frames[-1]
            frame.extend(self.get(v) for v in op.operands)
            return
        if op.operands:
            raise fail(op, "a kernel returns nothing")
        self.kb.s_endpgm()


__all__ = ["DEFAULT_BLOCK", "Handler", "HandlerTable", "KernelLowering", "LoopFrame",
           "block_size", "merge_tables"]
