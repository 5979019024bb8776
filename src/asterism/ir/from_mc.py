"""Raising: MC layer (`McModule` from assembly or decoded code) -> amdgcn IR.

Every register is fixed. Register values are threaded through destination passing: a
register read before any write in a block comes from an `amdgcn.alloca` (or the ABI value op
that delivers it) in the entry block; a write makes the op's result the register's current
value for the rest of the block. Labels become blocks (named after the label), branches
become `amdgcn.branch`, a label reached by falling through gets `amdgcn.fallthrough`.
Lowering the raised IR gives back the same instructions.
"""

from __future__ import annotations

import math
import struct

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    bf16,
    f16,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.traits import IsTerminator

from asterism.errors import VerifyError
from asterism.ir.abi import USER_SGPR_OPS, compute_layout, mc_kernel_args
from asterism.ir.kernel_attrs import HIDDEN_BITS_ATTR, hidden_bits_attr
from asterism.ir.match import WAITCNT_COUNTERS, ir_specs
from asterism.ir.ops import (
    OP_FOR_ENCODING,
    AllocaOp,
    BranchOp,
    FallthroughOp,
    KernelOp,
    LiteralOp,
    ModuleOp,
    OffOp,
    WorkgroupIdOp,
    WorkitemIdOp,
    close_blocks,
)
from asterism.ir.text import keep_block_name
from asterism.ir.types import (
    NAMED_REGISTER_TYPES,
    REGISTER_TYPES,
    SCALAR_SIZES,
    KernelArgAttr,
    SpecialRegType,
    TokenType,
)
from asterism.isa import Form, get_isa, syntax
from asterism.mc.inst import HIDDEN_BITS, Inst
from asterism.mc.matcher import select_form
from asterism.mc.operands import (
    FloatImm,
    Imm,
    Label,
    Literal,
    Mod,
    Off,
    Operand,
    Reg,
    Special,
    Syntax,
)
from asterism.mc.program import LabelDef, McKernel, McModule

_ABI_HINTS = {**USER_SGPR_OPS, WorkgroupIdOp: "workgroup_id", WorkitemIdOp: "workitem_id"}
_VALUE_TYPES_BY_SIZE = {1: "i8", 2: "i16", 4: "i32", 8: "i64"}
_FLOAT_TYPES = {"f16": f16, "bf16": bf16, "f64": f64}


def raise_module(module: McModule, name: str = "module") -> BuiltinModuleOp:
    """The IR of an MC module: one amdgcn.module holding a kernel per McKernel."""
    from asterism.ir.kernel_attrs import set_code_object_version

    kernels = [_KernelRaising(k, module.target).run() for k in module.kernels]
    amod = ModuleOp(name, module.target, kernels, features=module.features or None)
    set_code_object_version(amod, module.code_object_version)
    return BuiltinModuleOp([amod])


def _loc(inst: Inst) -> FileLineColLoc | None:
    if inst.loc is None:
        return None
    return FileLineColLoc(StringAttr(inst.loc.file), IntAttr(inst.loc.line),
                          IntAttr(inst.loc.col))


def _kernel_args(kernel: McKernel) -> list[KernelArgAttr]:
    out: list[KernelArgAttr] = []
    for arg in kernel.args:
        if arg.kind == "buffer":
            dtype = arg.dtype if arg.dtype in SCALAR_SIZES else ""
            out.append(KernelArgAttr(arg.name, "buffer", dtype, arg.access or ""))
            continue
        dtype = arg.dtype if arg.dtype in SCALAR_SIZES and SCALAR_SIZES[arg.dtype] == arg.size \
            else _VALUE_TYPES_BY_SIZE.get(arg.size)
        if dtype is None:
            raise VerifyError(f"kernel {kernel.name}: argument '{arg.name}' of {arg.size} bytes "
                              "has no scalar type in the IR (1, 2, 4 or 8 bytes)")
        out.append(KernelArgAttr(arg.name, "value", dtype))
    natural = [a.offset for a in mc_kernel_args(out)]
    given = [a.offset for a in kernel.args]
    if any(g >= 0 and g != n for g, n in zip(given, natural)):
        raise VerifyError(f"kernel {kernel.name}: argument offsets {given} are not the natural "
                          f"layout {natural} the IR assumes")
    return out


class _KernelRaising:
    def __init__(self, kernel: McKernel, target: str):
        self.mc = kernel
        self.target = target
        self.isa = get_isa(target)
        self.region = Region()
        self.entry = Block()
        self.region.add_block(self.entry)
        self.prologue: list[Operation] = []
        self.entry_values: dict[tuple, SSAValue] = {}
        self.local: dict[tuple, SSAValue] = {}
        self.constants: dict[tuple, SSAValue] = {}
        self.block = self.entry
        self.labels: dict[str, Block] = {}
        self.placed: set[Block] = {self.entry}
        self.off: SSAValue | None = None

    # --- values ---------------------------------------------------------------------------

    def _abi_prologue(self) -> None:
        abi = self.mc.abi
        wanted: list[Operation] = []
        for op_cls, attr in USER_SGPR_OPS.items():
            if getattr(abi, attr):
                wanted.append(op_cls(REGISTER_TYPES["s"].relocatable(2)))
        for dim, on in zip("xyz", abi.workgroup_ids):
            if on:
                wanted.append(WorkgroupIdOp(dim, REGISTER_TYPES["s"].relocatable()))
        if abi.workitem_id_dims > 1:
            wanted.append(WorkitemIdOp("xyz"[abi.workitem_id_dims - 1],
                                       REGISTER_TYPES["v"].relocatable()))
        # Place them with the registers the ABI gives the whole set.
        probe = KernelOp(self.mc.name, body=Region(Block(wanted)))
        layout = compute_layout(probe)
        for op in wanted:
            reg = layout.abi_register(op)
            final = type(op)(reg) if not hasattr(op, "dim") else type(op)(op.dim.data, reg)
            final.results[0].name_hint = _ABI_HINTS.get(type(final), "kernarg")
            self.prologue.append(final)
            self.entry_values[(reg.KIND, reg.first, reg.width)] = final.results[0]

    def register(self, op: Operand, defining: bool = False) -> SSAValue:
        """The current SSA value of a register operand (an entry alloca if not yet set)."""
        if isinstance(op, Reg):
            if op.kind not in NAMED_REGISTER_TYPES:
                raise VerifyError(f"{op} registers have no IR type")
            key: tuple = (op.kind, op.index, op.count)
        else:
            assert isinstance(op, Special)
            key = ("special", op.name)
        found = self.local.get(key)
        if found is not None:
            return found
        if key not in self.entry_values:
            # (the type only for a new register: most operands name one already set)
            type_: Attribute = (NAMED_REGISTER_TYPES[op.kind].fixed(op.index, op.count)
                                if isinstance(op, Reg) else SpecialRegType(op.name))
            alloca = AllocaOp(type_)
            alloca.results[0].name_hint = _hint(op)
            self.prologue.append(alloca)
            self.entry_values[key] = alloca.results[0]
        return self.entry_values[key]

    def constant(self, value: float, spec_type: str | None,
                 loc: FileLineColLoc | None) -> SSAValue:
        """An arith.constant for an immediate (one per value and block)."""
        if isinstance(value, float):
            base = (spec_type or "f32").removeprefix("v2")
            t = _FLOAT_TYPES.get(base, f32)
            if t is f32 and struct.unpack("<f", struct.pack("<f", value))[0] != value \
                    and value not in syntax.INLINE_FLOATS.values():
                t = f64  # keep the exact value written
            # (equal values of one type print alike but for the sign of zero)
            key: tuple = (float, value, t, math.copysign(1.0, value))
        else:
            t = i32 if -(1 << 31) <= value < (1 << 31) else i64  # (follows from the value)
            key = (type(value), value)
        if key not in self.constants:
            attr: Attribute = FloatAttr(value, t) if isinstance(value, float) \
                else IntegerAttr(value, t)
            op = arith.ConstantOp(attr)
            op.result.name_hint = constant_hint(value)
            if loc is not None:
                op.location = loc
            self.block.add_op(op)
            self.constants[key] = op.result
        return self.constants[key]

    # --- blocks ---------------------------------------------------------------------------

    def label_block(self, name: str) -> Block:
        """The block of a label (created on first reference)."""
        if name not in self.labels:
            block = Block()
            keep_block_name(block, name)  # (else: not a valid IR name, a generated one)
            self.labels[name] = block
        return self.labels[name]

    def start(self, block: Block) -> None:
        """Append `block` to the kernel and continue in it."""
        if block in self.placed:
            raise VerifyError(f"kernel {self.mc.name}: label {block.name_hint} defined twice")
        self.region.add_block(block)
        self.placed.add(block)
        self.block = block
        self.local = {}
        self.constants = {}

    def terminated(self) -> bool:
        """True if the current block already ends with a terminator."""
        last = self.block.last_op
        return last is not None and last.has_trait(IsTerminator)

    # --- instructions ---------------------------------------------------------------------

    def run(self) -> KernelOp:
        """Raise the whole kernel."""
        self._abi_prologue()
        body = self._without_end_labels(self.mc.body)
        pending: Block | None = None
        for index, item in enumerate(body):
            if isinstance(item, LabelDef):
                block = self.label_block(item.name)
                if not self.terminated():
                    self.block.add_op(FallthroughOp(block))
                self.start(block)
                pending = None
                continue
            if self.terminated():
                self.start(pending or Block())
                pending = None
            form = item.form or select_form(item, self.target)
            label = next((op for op in item.operands if isinstance(op, Label)), None)
            if label is not None:
                pending = self.branch(item, form, label, body, index)
            else:
                self.block.add_op(self.instruction(item, form))
        if pending is not None and pending not in self.placed:
            raise VerifyError(f"kernel {self.mc.name} ends with a conditional branch: there is "
                              "no next instruction to fall through to")
        missing = [n for n, b in self.labels.items() if b not in self.placed]
        if missing:
            raise VerifyError(f"kernel {self.mc.name}: branch to undefined label(s) "
                              f"{', '.join(missing)}")
        self._finish_blocks()
        first = self.entry.first_op
        for op in self.prologue:
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)
        lds = self.mc.lds_size or None
        return KernelOp(self.mc.name, _kernel_args(self.mc), self.mc.workgroup_size, lds,
                        body=self.region)

    def _without_end_labels(self, body: list) -> list:
        """`body` without the labels after its last instruction (.Lfunc_end0: they mark the
        end for .size); a branch to one of them would run past the kernel's code."""
        end = len(body)
        while end and isinstance(body[end - 1], LabelDef):
            end -= 1
        trailing = {item.name for item in body[end:]}
        for item in body[:end]:
            for op in getattr(item, "operands", ()):
                if isinstance(op, Label) and op.name in trailing:
                    raise VerifyError(f"kernel {self.mc.name}: {item.mnemonic} branches to "
                                      f"'{op.name}', which ends the kernel: no instruction "
                                      "follows it (execution would run past the code)",
                                      item.loc)
        return body[:end]

    def branch(self, inst: Inst, form: Form, label: Label, body: list, index: int
               ) -> Block | None:
        """Emit an amdgcn.branch; returns the fall-through block of a conditional one."""
        target = self.label_block(label.name)
        conditional = "cond_branch" in form.instruction.flags
        nxt = None
        if conditional:
            following = body[index + 1] if index + 1 < len(body) else None
            nxt = self.label_block(following.name) if isinstance(following, LabelDef) \
                else Block()
        op = BranchOp(inst.mnemonic, target, nxt)
        if (loc := _loc(inst)) is not None:
            op.location = loc
        self.block.add_op(op)
        return nxt

    def instruction(self, inst: Inst, form: Form) -> Operation:
        """The instruction op of an mc.Inst (destinations threaded through)."""
        loc = _loc(inst)
        specs = ir_specs(form)
        sources = [i for i, s in enumerate(specs) if s.role == "use" and not s.fixed]
        mods: dict[str, object] = dict(inst.modifiers)
        bits: dict[str, list[int]] = {"neg": [], "abs": [], "sext": []}
        args: list[SSAValue] = []
        defs: list[tuple[tuple, int]] = []
        k = 0
        for spec, operand in zip(form.operands, inst.operands):
            if spec.syntax == "waitcnt":
                counts = syntax.decode_waitcnt(_int(operand))
                for name in WAITCNT_COUNTERS:
                    if counts[name] != syntax.WAITCNT_MAX[name]:
                        mods[name] = counts[name]
                continue
            if isinstance(operand, Mod):
                s = sources.index(k) if k in sources else None
                if s is not None:
                    for name, on in (("neg", operand.neg), ("abs", operand.abs),
                                     ("sext", operand.sext)):
                        if on:
                            bits[name] += [0] * (s + 1 - len(bits[name]))
                            bits[name][s] = 1
                operand = operand.operand
            args.append(self.value(operand, spec, loc))
            if spec.role == "def" and isinstance(operand, Reg | Special):
                defs.append((self._key(operand), len(args) - 1))
            k += 1
        for name, b in bits.items():
            if any(b):
                mods[name] = tuple(b)
        result_types = [args[i].type for _key, i in defs]
        if form.counters:
            result_types.append(TokenType())
        cls = OP_FOR_ENCODING[form.enc]
        hidden = mods.pop(HIDDEN_BITS, 0)  # (no modifier: an attribute the encoder gets back)
        op = cls(inst.mnemonic, args, result_types, mods)  # type: ignore[arg-type]
        if hidden:
            op.attributes[HIDDEN_BITS_ATTR] = hidden_bits_attr(hidden)
        if loc is not None:
            op.location = loc
        for (key, _i), res in zip(defs, op.results):
            res.name_hint = args[_i].name_hint
            self.local[key] = res
        return op

    @staticmethod
    def _key(op: Reg | Special) -> tuple:
        return (op.kind, op.index, op.count) if isinstance(op, Reg) else ("special", op.name)

    def value(self, operand: Operand, spec, loc: FileLineColLoc | None) -> SSAValue:
        """The SSA value of one MC operand."""
        if isinstance(operand, Reg | Special):
            return self.register(operand)
        if isinstance(operand, Off):
            if self.off is None:
                op = OffOp()
                op.results[0].name_hint = "off"
                self.prologue.append(op)
                self.off = op.results[0]
            return self.off
        if isinstance(operand, Literal):
            op = LiteralOp(operand.bits)
            self.block.add_op(op)
            return op.results[0]
        if isinstance(operand, Syntax):
            return self.constant(operand.value, None, loc)
        if isinstance(operand, Imm):
            return self.constant(operand.value, spec.type, loc)
        if isinstance(operand, FloatImm):
            return self.constant(float(operand.value), spec.type, loc)
        raise VerifyError(f"operand {operand} ({spec.name}) has no IR form", None)

    def _finish_blocks(self) -> None:
        try:
            close_blocks(self.region, f"kernel {self.mc.name}")
        except ValueError as err:
            raise VerifyError(str(err)) from None


def _int(op: Operand) -> int:
    if isinstance(op, Syntax | Imm):
        return op.value
    raise VerifyError(f"expected an immediate, got {op}")


def constant_hint(value: float) -> str:
    """A readable SSA name for a constant (c1, c_m4, cf)."""
    if isinstance(value, float):
        return "cf"
    return f"c{value}" if value >= 0 else f"c_m{-value}"


def _hint(op: Reg | Special) -> str:
    if isinstance(op, Special):
        return op.name
    if op.count == 1:
        return f"{op.kind}{op.index}"
    return f"{op.kind}{op.index}_{op.kind}{op.index + op.count - 1}"


__all__ = ["raise_module"]
