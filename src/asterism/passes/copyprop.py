"""Copy propagation (`copy-prop`, opt-in, never in a default pipeline).

For a plain copy `%d = v_mov_b32 %new, %s` (also `s_mov_b32`, `s_mov_b64`, `v_mov_b64`,
`v_accvgpr_mov_b32`; VOP1/VOP3/SOP1 without modifiers) into a new relocatable value (the
destination operand is an `amdgcn.alloca` of a relocatable type), every later read of `%d`
is rewritten to read `%s` instead when that is legal:
* the copy is *available* at the read: on every path from the copy to it, neither the
  register of `%d` nor that of `%s` (nor, for pinned registers, an overlapping one) is
  written again (a forward "available copies" dataflow over the CFG, intersecting at joins);
* the instruction still fits its ISA form with `%s` in that slot (a VGPR-only slot does not
  take an SGPR, the constant bus allows one SGPR or literal, ...), checked against the ISA
  database; otherwise the read is left alone;
* the read is a source, not a destination being continued.

The source may also be an immediate (`v_mov_b32 %d, 1.0`), which then replaces `%d` where
the slot accepts it. The copy itself stays (WYSIWYG); `dce` removes it once nothing reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from asterism.errors import VerifyError
from asterism.ir.abi import compute_layout
from asterism.ir.match import is_immediate
from asterism.ir.ops import AllocaOp, InstructionOp, KernelOp
from asterism.ir.types import RegisterType
from asterism.ir.verify import amdgcn_modules, check_instruction
from asterism.isa import IsaDatabase, get_isa
from asterism.passes.base import Pass
from asterism.passes.instfacts import facts_cache
from asterism.passes.liveness import KernelLiveness
from asterism.support.gcpause import gc_paused


class _KernelCopyProp:
    def __init__(self, kernel: KernelOp, isa: IsaDatabase):
        self.kernel = kernel
        self.isa = isa
        self.facts = facts_cache(isa)
        self.layout = compute_layout(kernel)

    def run(self) -> int:
        live = KernelLiveness(self.kernel, self.isa)
        classes = live.classes
        # The copies: (op index, result %d, source value, classes whose writes kill it).
        copies: list[tuple[int, SSAValue, SSAValue]] = []
        by_index: dict[int, int] = {}
        by_unit: dict[tuple[str, int], list[int]] = {}
        for c in classes:
            for u in c.units:
                by_unit.setdefault((c.kind, u), []).append(c.id)

        def related(cid: int) -> list[int]:
            c = classes[cid]
            if c.fixed is None:
                return [cid]
            return sorted({o for u in c.units for o in by_unit[(c.kind, u)]})

        kill_of_class: dict[int, int] = {}
        for i, op in enumerate(live.ops):
            if not isinstance(op, InstructionOp):
                continue
            facts = self.facts.facts(op)
            if not facts.is_copy:
                continue
            dpos = facts.def_positions[0]
            args = op.operands
            if type(args[dpos].owner) is not AllocaOp or dpos + 1 >= len(args):
                continue
            dst_class = live.class_of.get(args[dpos])
            if dst_class is None or dst_class.fixed is not None:
                # (a pinned register's other lanes may matter, see passes.liveness; a value in
                # a register range made by make_register_range keeps its copy)
                continue
            src = args[dpos + 1]
            if isinstance(src.type, RegisterType):
                if src not in live.class_of:
                    continue  # a piece of a range: its writes are tracked per register
            elif not is_immediate(src):
                continue
            k = len(copies)
            copies.append((i, op.results[0], src))
            by_index[i] = k
            bit = 1 << k
            killers = related(dst_class.id)
            if src in live.class_of:
                killers += related(live.class_of[src].id)
            for cid in killers:
                kill_of_class[cid] = kill_of_class.get(cid, 0) | bit
        if not copies:
            return 0
        # Forward dataflow: copies available on entry to each block.
        nb = len(live.blocks)
        everything = (1 << len(copies)) - 1
        avail_in = [everything] * nb
        avail_in[0] = 0
        avail_out = [everything] * nb

        def transfer(b: int, bits: int, visit=None) -> int:
            start, end = live.block_range[b]
            for i in range(start, end):
                if visit is not None:
                    visit(i, bits)
                for w in live.writes[i]:
                    kill = kill_of_class.get(w)
                    if kill:
                        bits &= ~kill
                k = by_index.get(i)
                if k is not None:
                    bits |= 1 << k
            return bits

        changed = True
        while changed:
            changed = False
            for b in range(nb):
                if b:
                    bits = everything
                    for p in live.preds[b]:
                        bits &= avail_out[p]
                    if not live.preds[b]:
                        bits = 0  # unreachable: nothing is known
                    avail_in[b] = bits
                out = transfer(b, avail_in[b])
                if out != avail_out[b]:
                    avail_out[b] = out
                    changed = True
        result_copy = {copies[k][1]: k for k in range(len(copies))}
        rewrites = 0

        def visit(i: int, bits: int) -> None:
            nonlocal rewrites
            op = live.ops[i]
            if not isinstance(op, InstructionOp):
                return
            defs = self.facts.facts(op).def_positions
            for pos, arg in enumerate(op.operands):
                k = result_copy.get(arg)
                if k is None or pos in defs or not bits >> k & 1:
                    continue
                if self._try_replace(op, pos, copies[k][2]):
                    rewrites += 1

        for b in range(nb):
            transfer(b, avail_in[b], visit)
        return rewrites

    def _try_replace(self, op: InstructionOp, pos: int, value: SSAValue) -> bool:
        old = op.operands[pos]
        op.operands = tuple(value if k == pos else a for k, a in enumerate(op.operands))
        try:
            check_instruction(op, self.isa, self.layout)
        except VerifyError:
            op.operands = tuple(old if k == pos else a for k, a in enumerate(op.operands))
            return False
        return True


def copy_prop_module(module: Operation) -> int:
    """Copy propagation on every kernel; returns the number of operands rewritten."""
    total = 0
    with gc_paused():
        for amod in amdgcn_modules(module):
            isa = get_isa(amod.target_name)
            for op in amod.body.ops:
                if isinstance(op, KernelOp):
                    total += _KernelCopyProp(op, isa).run()
    return total


@dataclass(frozen=True)
class CopyPropPass(Pass):
    """`copy-prop` (no options)."""

    name = "copy-prop"
    summary = "read the sources of plain register copies instead of their results where " \
              "legal (opt-in; dce then removes the copies)"

    def apply(self, module: Operation) -> None:
        """Propagate the copies of `module` in place."""
        copy_prop_module(module)


__all__ = ["CopyPropPass", "copy_prop_module"]
