"""Function inlining (`inline`): replace every `func.call` in a kernel by the body of the
`func.func` fragment it names.

Fragments are reusable instruction sequences written once (`func.func @f(%x : !amdgcn.vgpr)
-> !amdgcn.vgpr`); they are never emitted on their own, so after inlining the pass removes
them from the module (option `keep=1` keeps them). A call maps the fragment's arguments to
its operands and its results to the values the fragment returns.

* Calls inside fragments are inlined first (callees before callers); a recursive call
  (directly or through other fragments) is an error naming the cycle, as is a call to an
  unknown fragment.
* Arguments are register values (or immediates) passed by register: a fragment that writes
  its argument's chain (`%x1 = v_add_u32 %x, ...`) writes the caller's register, as the
  destination-passing rule says. The IR verifier makes calls match the fragment's types; for
  modules built without verification the inliner also accepts a relocatable argument type
  for any register of that file and width (the chains starting from it then take the
  caller's type) and rejects anything else.
* A single-block fragment is copied in place of the call. A fragment with several blocks
  (loops) splits the caller's block: the caller falls through into the fragment's first
  block; `func.return` becomes a fall-through (or an `s_branch`, when it is not the last
  block) to the rest of the caller. All returns must then return the same values.
* Ops keep their source locations (the fragment's lines), so errors after inlining point at
  the fragment's text.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Block, Operation, Region, SSAValue

from asterism.errors import VerifyError
from asterism.ir.ops import (
    BranchOp,
    FallthroughOp,
    InstructionOp,
    KernelOp,
    MakeRegisterRangeOp,
    SplitRegisterRangeOp,
    close_blocks,
    join_type,
    op_location,
    split_types,
)
from asterism.ir.types import RegisterType, type_text
from asterism.ir.verify import amdgcn_modules
from asterism.isa import IsaDatabase, get_isa
from asterism.passes.base import Pass, option
from asterism.passes.instfacts import facts_cache


class InlineError(VerifyError):
    """A call that cannot be inlined (unknown callee, recursion, argument mismatch)."""


def _callee(call: func.CallOp) -> str:
    return call.callee.root_reference.data


def _calls_in(op: Operation) -> list[func.CallOp]:
    return [o for o in op.walk() if isinstance(o, func.CallOp)]


def _check_recursion(funcs: dict[str, func.FuncOp]) -> list[str]:
    """Fragments in callee-first order; InlineError on a cycle or an unknown callee."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str], call: func.CallOp | None) -> None:
        if name not in funcs:
            known = ", ".join(f"@{n}" for n in funcs) or "none"
            raise InlineError(f"func.call: no fragment named @{name} in this module (fragments:"
                              f" {known})", op_location(call) if call is not None else None)
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = path[path.index(name):] + [name]
            raise InlineError("recursive call: " + " -> ".join(f"@{n}" for n in cycle) +
                              " (fragments are inlined; recursion cannot be)",
                              op_location(call) if call is not None else None)
        state[name] = 1
        for inner in _calls_in(funcs[name]):
            visit(_callee(inner), path + [name], inner)
        state[name] = 2
        order.append(name)

    for name in funcs:
        visit(name, [], None)
    return order


def _compatible(arg_type, value: SSAValue) -> bool:
    t = value.type
    if t == arg_type:
        return True
    if isinstance(arg_type, RegisterType) and not arg_type.is_fixed:
        if type(t) is not type(arg_type) or t.width != arg_type.width:
            return False
        return not t.is_fixed or t.first % arg_type.alignment == 0
    return False


class _Inliner:
    def __init__(self, funcs: dict[str, func.FuncOp], isa: IsaDatabase):
        self.funcs = funcs
        self.isa = isa
        self.count = 0

    def inline_all(self, calls: list[func.CallOp]) -> int:
        """Inline `calls` (and the calls their bodies bring in are already inlined: callees
        come first); returns how many were inlined."""
        for call in calls:
            self.inline(call)
        return len(calls)

    def inline(self, call: func.CallOp) -> None:
        name = _callee(call)
        fn = self.funcs[name]
        body: Region = fn.body
        entry = body.blocks[0]
        operands = list(call.operands)
        if len(operands) != len(entry.args):
            raise InlineError(f"func.call: @{name} takes {len(entry.args)} arguments, the call "
                              f"passes {len(operands)}", op_location(call))
        for k, (arg, value) in enumerate(zip(entry.args, operands)):
            if not _compatible(arg.type, value):
                raise InlineError(
                    f"func.call: argument #{k} of @{name} has type {type_text(arg.type)}, the "
                    f"call passes {type_text(value.type)}", op_location(call))
        for block in list(body.blocks)[1:]:
            if block.args:
                raise InlineError(f"@{name}: blocks of a fragment take no arguments (values "
                                  "cross blocks in their registers)", op_location(fn))
        mapper: dict[SSAValue, SSAValue] = dict(zip(entry.args, operands))
        self.count += 1
        if len(body.blocks) == 1:
            returned = self._inline_block(call, entry, mapper)
        else:
            returned = self._inline_blocks(call, fn, mapper)
        if len(returned) != len(call.results):
            raise InlineError(f"func.call: @{name} returns {len(returned)} values, the call "
                              f"expects {len(call.results)}", op_location(call))
        for res, value in zip(call.results, returned):
            res.replace_all_uses_with(value)
        call.parent_block().erase_op(call)

    def _inline_block(self, call: func.CallOp, block: Block,
                      mapper: dict[SSAValue, SSAValue]) -> list[SSAValue]:
        returned: list[SSAValue] = []
        target = call.parent_block()
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                returned = [mapper.get(v, v) for v in op.operands]
                break
            target.insert_op_before(op.clone_without_regions(mapper), call)
        return returned

    def _inline_blocks(self, call: func.CallOp, fn: func.FuncOp,
                       mapper: dict[SSAValue, SSAValue]) -> list[SSAValue]:
        caller = call.parent_block()
        region = caller.parent
        rest = caller.split_before(call)  # the call and what follows it
        blocks = list(fn.body.blocks)
        block_map: dict[Block, Block] = {}
        prev = caller
        for old in blocks:
            new = Block()
            if old.name_hint:  # named blocks become labels: make the name unique per copy
                new.name_hint = f"{_callee(call)}{self.count}_{old.name_hint}"
            block_map[old] = new
            region.insert_block_after(new, prev)
            prev = new
        caller.add_op(FallthroughOp(block_map[blocks[0]]))
        returns: list[list[SSAValue]] = []
        for j, old in enumerate(blocks):
            new = block_map[old]
            for op in old.ops:
                if isinstance(op, func.ReturnOp):
                    returns.append([mapper.get(v, v) for v in op.operands])
                    if j == len(blocks) - 1:
                        jump = FallthroughOp(rest)
                    else:
                        jump = BranchOp("s_branch", rest)
                    jump.location = op.location
                    new.add_op(jump)
                    break
                new.add_op(op.clone_without_regions(mapper, block_map))
        if any(r != returns[0] for r in returns[1:]):
            raise InlineError(f"func.call: @{_callee(call)} returns different values from "
                              "different blocks; return the same values from every block",
                              op_location(call))
        return returns[0] if returns else []


def retype_chains(region_op: Operation, isa: IsaDatabase) -> int:
    """Give every destination-passing result the type of its destination operand (after
    arguments of relocatable type were replaced by the caller's registers), and pieces and
    made ranges of such registers theirs; returns how many results changed."""
    facts = facts_cache(isa)
    changed_total = 0
    changed = True
    while changed:
        changed = False
        for op in region_op.walk():
            if isinstance(op, SplitRegisterRangeOp | MakeRegisterRangeOp):
                n = _retype_view(op)
                changed |= bool(n)
                changed_total += n
                continue
            if not isinstance(op, InstructionOp):
                continue
            defs = facts.facts(op).def_positions
            args = op.operands
            for k, pos in enumerate(defs):
                dest_type = args[pos].type
                res = op.results[k]
                if isinstance(dest_type, RegisterType) and res.type != dest_type:
                    res._type = dest_type  # xDSL values have no public type setter
                    changed = True
                    changed_total += 1
    return changed_total


def _retype_view(op: Operation) -> int:
    """Types of a split's pieces (or a made range) that follow from an operand that became
    a fixed register (or a range of another alignment); returns how many changed."""
    changed = 0
    if isinstance(op, SplitRegisterRangeOp):
        src = op.source.type
        if not isinstance(src, RegisterType):
            return 0
        pieces = list(op.pieces)
        widths = [p.type.width for p in pieces]  # type: ignore[attr-defined]
        want = split_types(src, widths)
        for piece, t, offset in zip(pieces, want, op.offsets):
            have = piece.type
            ok = have == t or (not src.is_fixed and not have.is_fixed  # type: ignore
                               and offset % have.alignment == 0  # type: ignore
                               and have.alignment <= src.alignment)  # type: ignore
            if not ok:
                piece._type = t  # xDSL values have no public type setter
                changed += 1
    elif isinstance(op, MakeRegisterRangeOp):
        types = [p.type for p in op.parts]
        if all(isinstance(t, RegisterType) and t.is_fixed for t in types):
            want = join_type(types)  # type: ignore[arg-type]
            if op.result.type != want:
                op.result._type = want
                changed += 1
    return changed


def inline_module(module: Operation, keep: bool = False) -> int:
    """Inline every call of every kernel; returns the number of calls inlined."""
    total = 0
    for amod in amdgcn_modules(module):
        isa = get_isa(amod.target_name)
        funcs = {op.sym_name.data: op for op in amod.body.ops if isinstance(op, func.FuncOp)}
        if not funcs:
            continue  # nothing to inline (the verifier rejects calls to unknown symbols)
        kernels = [op for op in amod.body.ops if isinstance(op, KernelOp)]
        kernel_calls = {kernel: _calls_in(kernel) for kernel in kernels}
        for calls in kernel_calls.values():
            for call in calls:
                if _callee(call) not in funcs:
                    known = ", ".join(f"@{n}" for n in funcs) or "none"
                    raise InlineError(f"func.call: no fragment named @{_callee(call)} in this "
                                      f"module (fragments: {known})", op_location(call))
        order = _check_recursion(funcs)
        inliner = _Inliner(funcs, isa)
        for name in order:
            if inliner.inline_all(_calls_in(funcs[name])):
                retype_chains(funcs[name], isa)
        for kernel in kernels:
            n = inliner.inline_all(kernel_calls[kernel])
            total += n
            if n:
                try:
                    close_blocks(kernel.body, f"kernel {kernel.kernel_name}")
                except ValueError as err:
                    raise InlineError(str(err), op_location(kernel)) from None
                retype_chains(kernel, isa)
        if not keep:
            for fn in funcs.values():
                amod.body.blocks[0].erase_op(fn)
    return total


@dataclass(frozen=True)
class InlinePass(Pass):
    """`inline{keep=1}`."""

    name = "inline"
    summary = "inline func.call fragments into kernels and drop the fragments"

    keep: bool = option(False, "keep the fragments in the module after inlining")

    def apply(self, module: Operation) -> None:
        """Inline every call of `module` in place."""
        inline_module(module, keep=self.keep)


__all__ = ["InlineError", "InlinePass", "inline_module", "retype_chains"]
