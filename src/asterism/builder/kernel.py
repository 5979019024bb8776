"""`KernelBuilder` / `ModuleBuilder`: write amdgcn IR from Python.

    kb = KernelBuilder("add_one", target="gfx942")
    out = kb.arg_buffer("out", "i32", access="write_only")
    kb.s_load_dwordx2(kb.s[2:4], kb.kernarg_ptr(), out)      # s[2:3] = out pointer
    kb.v_lshlrev_b32(kb.v(1), 2, kb.workitem_id("x"))       # v1 = tid * 4
    kb.v_add_u32(kb.v(2), 1, kb.v(0))                       # v2 = tid + 1
    kb.s_waitcnt(lgkmcnt=0)
    kb.global_store_dword(kb.v(1), kb.v(2), kb.s[2:4])
    kb.s_endpgm()
    module = kb.finish()

Every ISA instruction of the target is a method (generated from the database; see
`help(kb.v_add_u32)`). Registers: `kb.v(10)` / `kb.v[8:12]` (half-open, 4 registers) /
`kb.s(4)` / `kb.a[0:4]` name fixed registers and return their current value (the last
instruction that wrote them, in this block); `kb.vreg()`, `kb.vregs(4, align=2)` make
relocatable ones; `kb.reserve("S", "v32-v95")` names a region. Pieces of a register value (an
MFMA accumulator, a 64-bit address, an SGPR pointer pair) are `kb.sub(acc, j)` (register j),
`kb.sub(acc, i, j)` (registers i..j-1, half-open) or `kb.split(acc)` (all of them, or
`kb.split(acc, 2, 2)` in sub-ranges); `kb.join(x0, x1, x2, x3, align=4)` makes one range of
values the allocator places in consecutive registers. They emit no instruction
(`amdgcn.split_register_range` / `amdgcn.make_register_range`: the pieces *are* the range's
registers) and work for relocatable and fixed values alike. Python ints and floats become
`arith.constant`s, Python loops unroll, `kb.label()` starts a block for loops. Memory
instructions return (or set `kb.last_token` to) a token; `kb.wait(tok, ...)` asks the waits
pass for the minimal s_waitcnt that makes their results available.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DictionaryAttr,
    FileLineColLoc,
    FloatAttr,
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
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.traits import IsTerminator

from asterism.builder.checks import Capture, Group
from asterism.builder.location import caller_location, source_location
from asterism.builder.methods import instruction_methods
from asterism.builder.registers import RegisterFile, ReservedRegion, parse_register_range
from asterism.builder.schedule import Rule, Scheduler, Stream
from asterism.builder.structured import If, build_if, build_loop
from asterism.errors import VerifyError
from asterism.ir.abi import compute_layout
from asterism.ir.from_mc import constant_hint
from asterism.ir.match import (
    ENCODING_MODIFIERS,
    Match,
    MatchError,
    Shape,
    _match_form,
    check_modifiers,
    immediate_of,
    ir_specs,
    is_immediate,
    modifiers_key,
    resolve,
    shape_of,
    type_key,
)
from asterism.ir.ops import (
    INSTRUCTION_OPS,
    LDS_DMA_TOKENS_ATTR,
    OP_FOR_ENCODING,
    AllocaOp,
    BranchOp,
    DispatchIdOp,
    DispatchPtrOp,
    FallthroughOp,
    InstructionOp,
    KernargOffsetOp,
    KernargPtrOp,
    KernelOp,
    LdsAllocOp,
    MakeRegisterRangeOp,
    ModuleOp,
    OffOp,
    QueuePtrOp,
    SplitRegisterRangeOp,
    WaitOp,
    WorkgroupIdOp,
    WorkitemIdOp,
    append_new_op,
    close_blocks,
    join_type,
    split_types,
)
from asterism.ir.types import (
    REGISTER_TYPES,
    RELOCATABLE,
    SCALAR_SIZES,
    KernelArgAttr,
    RegisterType,
    SGPRType,
    SpecialRegType,
    TokenType,
    type_text,
)
from asterism.ir.verify import BuiltOps, match_instruction, verify_module
from asterism.isa import Form, Instruction, OperandSpec, get_isa
from asterism.mc.operands import SPECIAL_REGISTERS

FAMILIES = {cls.FAMILY: cls for cls in INSTRUCTION_OPS}
_FLOAT_TYPES = {"f16": f16, "bf16": bf16, "f64": f64}
_ENC_PREFERENCE = {"VOP3": 1, "VOP3P": 1, "MAI": 1, "MAI_SCALE": 1, "DPP": 2, "SDWA": 2}


# What emit works out from a mnemonic and from the operands' shapes, kept across calls: a
# kernel emits the same few hundred (mnemonic, operand shape) patterns thousands of times.
_RESOLVED: dict[tuple[str, str], tuple[Instruction, str, bool]] = {}  # -> inst, suffix, branch
_MATCHES: dict[tuple, _BuildFacts] = {}  # (see _emit_key) -> the form emit chose
_MATCHES_LIMIT = 1 << 16


class _BuildFacts(NamedTuple):
    """What building an op of a match needs, worked out once per match."""

    match: Match
    op_class: type[InstructionOp]
    defs: tuple[int, ...]  # match.def_positions
    token: bool  # match.has_token
    specs: tuple[OperandSpec, ...]  # ir_specs(match.form)
    fixed: bool  # some spec is an implicit named register (see _with_fixed_operands)

    @classmethod
    def of(cls, match: Match) -> _BuildFacts:
        """The facts of `match`."""
        specs = ir_specs(match.form)
        return cls(match, OP_FOR_ENCODING[match.form.enc], tuple(match.def_positions),
                   match.has_token, specs, any(spec.fixed for spec in specs))


_TOKEN_TYPE = TokenType()
_TERMINATORS: dict[type, bool] = {}


def _is_terminator(cls: type[Operation]) -> bool:
    """`cls.has_trait(IsTerminator)`, once per op class (traits are class-level)."""
    found = _TERMINATORS.get(cls)
    if found is None:
        found = _TERMINATORS[cls] = cls.has_trait(IsTerminator)
    return found


_HINTS: dict[str, str] = {}


def _valid_hint(name: str) -> str:
    """What setting `name` as a value's name_hint stores (xDSL drops a _<digits> suffix),
    once per name: a kernel names its values with a few names, thousands of times."""
    valid = _HINTS.get(name)
    if valid is None:
        valid = OpResult.extract_valid_name(name)
        if len(_HINTS) < 1 << 16:
            _HINTS[name] = valid
    return valid
_SSA_CLASSES = (OpResult, BlockArgument)  # (exact types: isinstance on SSAValue is slow)


def _emit_key(target: str, mnemonic: str, enc: str | None, mods: dict,
              operands: tuple) -> tuple | None:
    """Everything emit's choice of a form depends on, exactly (None: not cached): the
    operands as `match.operands_key` describes IR values (relocatable registers by which
    operands are the same value), Python numbers by type and value (floats by their bits),
    kernel arguments and LDS allocations by offset, new registers (None) as such."""
    keys: list[object] = []
    for operand in operands:
        if operand is None:
            keys.append(None)
        elif type(operand) in _SSA_CLASSES or isinstance(operand, SSAValue):
            k = type_key(operand.type)
            if k is None:
                if not is_immediate(operand):
                    return None
                imm, imm_type, literal = immediate_of(operand)
                k = ("imm", type(imm), imm.hex() if isinstance(imm, float) else imm, imm_type,
                     literal)
            elif type(k) is tuple and k[1] == RELOCATABLE:
                k = (k, next(i for i, o in enumerate(operands) if o is operand))
            keys.append(k)
        elif type(operand) in (int, float, bool):
            keys.append((type(operand), operand.hex() if type(operand) is float else operand))
        elif isinstance(operand, KernelArgument | LdsAllocation):
            keys.append((type(operand), operand.offset))
        else:
            return None
    key = (target, mnemonic, enc, modifiers_key(mods) if mods else (), tuple(keys))
    try:
        hash(key)
    except TypeError:  # (an unhashable modifier value: the slow path reports it)
        return None
    return key


@dataclass
class Label:
    """A block: a branch target. Placed with `kb.place(label)` (or at `kb.label()`)."""

    block: Block
    name: str


@dataclass(frozen=True)
class KernelArgument:
    """A declared kernel argument; pass it as an operand to mean its kernarg offset."""

    name: str
    kind: str
    dtype: str
    offset: int


@dataclass(frozen=True)
class LdsAllocation:
    """A named LDS allocation; pass it (or `.value`) as an operand to mean its offset."""

    name: str
    size: int
    align: int
    offset: int
    value: SSAValue


@cache
def _builder_class(target: str) -> type:
    """A KernelBuilder subclass with one method per instruction of `target`."""
    return type(f"KernelBuilder_{target}", (KernelBuilder,),
                {**instruction_methods(target), "__module__": __name__,
                 "__doc__": f"KernelBuilder for {target} (one method per instruction)."})


class KernelBuilder:
    """Builds one `amdgcn.kernel` (see the module docstring for a tour; interleaving,
    groups and keep-order spans: asterism.builder.schedule, held as a `Scheduler`)."""

    def __new__(cls, name: str = "kernel", target: str = "gfx942", **_kwargs):
        concrete = _builder_class(get_isa(target).target) if cls is KernelBuilder else cls
        return super().__new__(concrete)

    def __init__(self, name: str = "kernel", target: str = "gfx942", *,
                 workgroup_size: Sequence[int] = (64, 1, 1), lds_size: int | None = None,
                 module: ModuleBuilder | None = None):
        self.isa = get_isa(target)
        self.target = self.isa.target
        self.name = name
        self.kernel = KernelOp(name, [], tuple(workgroup_size), lds_size)
        self.entry = self.kernel.body.blocks[0]
        self.block = self.entry
        self._body_start: Operation | None = None  # first non-prologue op of the entry block
        self._entry_values: dict[tuple, SSAValue] = {}
        self._local: dict[tuple, SSAValue] = {}
        self._consts: dict[tuple, SSAValue] = {}
        self._abi: dict[tuple, Operation] = {}
        self._args: list[KernelArgAttr] = []
        self._reserved: dict[str, RegisterType] = {}
        self._block_names: set[str] = set()
        self._off: SSAValue | None = None
        self._module = module
        self._finished = False
        # Instruction ops made from a form whose first op in this kernel finish() matched and
        # checked in full, with their state as built: finish does not match them again
        # (verify_module's `built`). An op built from the same emit key gets the same form
        # and the same verdict (see _emit_key), so checking one op per key suffices.
        self._built = BuiltOps()
        self._checked_keys: set[int] = set()  # ids of the _MATCHES facts seen in this kernel
        self.last_token: SSAValue | None = None
        self.v = RegisterFile(self, "v")
        self.s = RegisterFile(self, "s")
        self.a = RegisterFile(self, "a")
        self._scheduler = Scheduler(self)

    # --- attribute access for suffixed names and aliases ----------------------------------

    def __getattr__(self, name: str):
        if name.startswith("_") or "isa" not in self.__dict__:
            raise AttributeError(name)
        if self.isa.resolve(name) is not None:
            def method(*operands, enc=None, **modifiers):
                return self.emit(name, *operands, enc=enc, **modifiers)
            method.__name__ = name
            return method
        raise AttributeError(f"'{type(self).__name__}' has no attribute '{name}' (and "
                             f"{self.target} has no instruction of that name)")

    # --- insertion ------------------------------------------------------------------------

    def _prologue(self, op: Operation) -> Operation:
        """Add an op to the top of the entry block (declarations dominate everything)."""
        if self._body_start is None:
            self.entry.add_op(op)
        else:
            self.entry.insert_op_before(op, self._body_start)
        return op

    def _insert(self, op: Operation, loc: FileLineColLoc | None = None) -> Operation:
        if self._finished:
            raise VerifyError(f"kernel {self.name} is finished; no more instructions",
                              source_location(loc))
        last = self.block._last_op
        if last is not None and _is_terminator(type(last)):
            self._start(Block())  # code after a branch starts a new (unlabeled) block
        if loc is not None:
            op.location = loc
        append_new_op(self.block, op)
        if self.block is self.entry and self._body_start is None:
            self._body_start = op
        return op

    def _start(self, block: Block) -> None:
        if self.block.parent is not self.kernel.body:
            raise VerifyError("labels and branches are not allowed inside a kb.loop or kb.if_ "
                              "body (a structured region is one block)",
                              source_location(caller_location()))
        last = self.block._last_op
        if last is None or not _is_terminator(type(last)):
            self._insert(FallthroughOp(block))
        self.kernel.body.add_block(block)
        self.block = block
        self._local = {}

    # --- registers ------------------------------------------------------------------------

    def register(self, kind: str, index: int, count: int = 1) -> SSAValue:
        """The current value of a fixed register (range) of file `kind` (v, s, a)."""
        key = (kind, index, count)
        if key in self._local:
            return self._local[key]
        if key not in self._entry_values:
            t = REGISTER_TYPES[kind](index, count)
            op = self._prologue(AllocaOp(t))
            op.results[0].name_hint = (f"{kind}{index}" if count == 1
                                       else f"{kind}{index}_{kind}{index + count - 1}")
            self._entry_values[key] = op.results[0]
        return self._entry_values[key]

    def special(self, name: str) -> SSAValue:
        """The current value of a named register (vcc, exec, m0, scc, ...)."""
        if name not in SPECIAL_REGISTERS:
            raise VerifyError(f"unknown special register '{name}'",
                              source_location(caller_location()))
        key = ("special", name)
        if key in self._local:
            return self._local[key]
        if key not in self._entry_values:
            op = self._prologue(AllocaOp(SpecialRegType(name)))
            op.results[0].name_hint = name
            self._entry_values[key] = op.results[0]
        return self._entry_values[key]

    vcc = property(lambda self: self.special("vcc"), doc="The vcc register pair.")
    vcc_lo = property(lambda self: self.special("vcc_lo"), doc="vcc_lo.")
    vcc_hi = property(lambda self: self.special("vcc_hi"), doc="vcc_hi.")
    exec = property(lambda self: self.special("exec"), doc="The exec mask.")
    exec_lo = property(lambda self: self.special("exec_lo"), doc="exec_lo.")
    exec_hi = property(lambda self: self.special("exec_hi"), doc="exec_hi.")
    m0 = property(lambda self: self.special("m0"), doc="The m0 register.")
    scc = property(lambda self: self.special("scc"), doc="The scc bit.")

    @property
    def off(self) -> SSAValue:
        """The `off` operand."""
        if self._off is None:
            op = self._prologue(OffOp())
            op.results[0].name_hint = "off"
            self._off = op.results[0]
        return self._off

    def _relocatable(self, kind: str, count: int, align: int, hint: str,
                     loc: FileLineColLoc | None = None) -> SSAValue:
        """A new register value; `loc` the user's line when the caller knows it already."""
        op = self._insert(AllocaOp(REGISTER_TYPES[kind].relocatable(count, align)),
                          loc or caller_location())
        result = op.results[0]
        result._name = _valid_hint(hint)  # (name_hint's setter; see _valid_hint)
        return result

    def vreg(self) -> SSAValue:
        """A new relocatable VGPR."""
        return self._relocatable("v", 1, 1, "v")

    def vregs(self, count: int, align: int = 1) -> SSAValue:
        """`count` new relocatable VGPRs (one range) aligned to `align`."""
        return self._relocatable("v", count, align, "v")

    def sreg(self) -> SSAValue:
        """A new relocatable SGPR."""
        return self._relocatable("s", 1, 1, "s")

    def sregs(self, count: int, align: int = 1) -> SSAValue:
        """`count` new relocatable SGPRs aligned to `align`."""
        return self._relocatable("s", count, align, "s")

    def areg(self) -> SSAValue:
        """A new relocatable AGPR."""
        return self._relocatable("a", 1, 1, "a")

    def aregs(self, count: int, align: int = 1) -> SSAValue:
        """`count` new relocatable AGPRs aligned to `align`."""
        return self._relocatable("a", count, align, "a")

    def reserve(self, name: str, registers: str | RegisterType) -> ReservedRegion:
        """Name a fixed region ("v32-v95", "s[63:67]"); the allocator will not use it."""
        t = parse_register_range(registers) if isinstance(registers, str) else registers
        if name in self._reserved:
            raise VerifyError(f"region '{name}' is already reserved",
                              source_location(caller_location()))
        self._reserved[name] = t
        return ReservedRegion(self, name, t)

    # --- sub-registers --------------------------------------------------------------------

    def _range_value(self, value, what: str, loc) -> RegisterType:
        if not isinstance(value, SSAValue) or not isinstance(value.type, RegisterType):
            raise VerifyError(f"{what}: expected a register value (VGPR, AGPR or SGPR, single "
                              f"or a range), got {value!r}", source_location(loc))
        return value.type

    def split(self, value: SSAValue, *sizes: int) -> list[SSAValue]:
        """The registers of `value` as separate values (`amdgcn.split_register_range`, no
        instruction): `kb.split(acc)` gives one value per register, `kb.split(acc, 2, 2)` two
        pairs. A piece is the range's register: writing it (as a destination) changes that
        register of the range and no other. Cached per block: splitting the same value the
        same way again returns the same pieces."""
        loc = caller_location()
        t = self._range_value(value, "kb.split", loc)
        sizes = tuple(sizes) or (1,) * t.width
        if any(not isinstance(n, int) or n < 1 for n in sizes) or sum(sizes) != t.width:
            raise VerifyError(f"kb.split: the sizes {list(sizes)} do not add up to the "
                              f"{t.width} registers of {type_text(t)}", source_location(loc))
        key = ("split", id(value), sizes)
        found = self._local.get(key)
        if found is not None and found[0].source is value:
            return list(found[0].pieces)
        op = self._insert(SplitRegisterRangeOp(value, split_types(t, sizes)), loc)
        base = value.name_hint or t.KIND
        offset = 0
        for r, n in zip(op.pieces, sizes):
            r.name_hint = f"{base}_{offset}"
            offset += n
        self._local[key] = (op,)  # type: ignore[assignment]
        return list(op.pieces)

    def sub(self, value: SSAValue, i: int, j: int | None = None) -> SSAValue:
        """Register `i` of `value` (negative counts from the end), or with `j` the registers
        i..j-1 (half-open, like a slice) as one range: `kb.sub(acc, 2)`,
        `kb.sub(addr, 0, 2)`. See `split`."""
        loc = caller_location()
        t = self._range_value(value, "kb.sub", loc)
        width = t.width
        if j is None:
            if not -width <= i < width:
                raise VerifyError(f"kb.sub: {type_text(t)} has {width} registers; index {i} "
                                  "is outside it", source_location(loc))
            return self.split(value)[i % width]
        if not 0 <= i < j <= width:
            raise VerifyError(f"kb.sub: registers {i}..{j - 1} are not a non-empty part of the "
                              f"{width} registers of {type_text(t)}", source_location(loc))
        if (i, j) == (0, width):
            return value
        sizes = [n for n in (i, j - i, width - j) if n]
        return self.split(value, *sizes)[1 if i else 0]

    def join(self, *values: SSAValue, align: int = 1) -> SSAValue:
        """One range made of `values` in consecutive registers (`amdgcn.make_register_range`,
        no instruction): `kb.join(x0, x1, x2, x3)` as a `global_store_dwordx4` operand,
        `kb.join(lo, hi, align=2)` as a 64-bit operand. The result is fixed when every value
        is (they must then be consecutive), else relocatable with alignment `align`; the
        register allocator places the values there (and copies one that cannot be)."""
        loc = caller_location()
        if len(values) == 1 and isinstance(values[0], list | tuple):
            values = tuple(values[0])
        if not values:
            raise VerifyError("kb.join: give at least one value", source_location(loc))
        types = [self._range_value(v, f"kb.join operand #{k}", loc)
                 for k, v in enumerate(values)]
        if len({type(t) for t in types}) != 1:
            files = ", ".join(t.FILE_NAME for t in types)
            raise VerifyError(f"kb.join: the values are in different register files ({files})",
                              source_location(loc))
        op = self._insert(MakeRegisterRangeOp(list(values), join_type(types, align)), loc)
        op.result.name_hint = values[0].name_hint or types[0].KIND
        return op.result

    # --- constants, arguments, LDS, ABI ---------------------------------------------------

    def const(self, value: float, type_: str | Attribute | None = None) -> SSAValue:
        """An arith.constant (cached per block): ints are i32 (i64 if needed), floats f32."""
        if isinstance(type_, str):
            type_ = {"i32": i32, "i64": i64, "f32": f32, **_FLOAT_TYPES}[type_]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise VerifyError(f"a constant is an int or a float, got {value!r}",
                              source_location(caller_location()))
        if type_ is None:
            if isinstance(value, float):
                type_ = f32
            else:
                type_ = i32 if -(1 << 31) <= value < (1 << 31) else i64
        # (the attribute is a function of these; repr tells -0.0 from 0.0, which compare
        # equal; the attribute is made only for a new constant)
        key = (id(self.block), type(value), value, repr(value), type_)
        if key not in self._consts:
            attr = FloatAttr(float(value), type_) if isinstance(value, float) or type_ in (
                f32, f16, bf16, f64) else IntegerAttr(value, type_)
            op = self._insert(arith.ConstantOp(attr), caller_location())
            op.results[0].name_hint = constant_hint(value)
            self._consts[key] = op.results[0]
        return self._consts[key]

    def _add_arg(self, attr: KernelArgAttr) -> KernelArgument:
        if any(a.arg_name.data == attr.arg_name.data for a in self._args):
            raise VerifyError(f"kernel argument '{attr.arg_name.data}' is declared twice",
                              source_location(caller_location()))
        self._args.append(attr)
        self.kernel.properties["arguments"] = type(self.kernel.arguments)(list(self._args))
        offset = compute_layout(self.kernel).arg_offsets[attr.arg_name.data]
        return KernelArgument(attr.arg_name.data, attr.kind.data, attr.dtype.data, offset)

    def arg_buffer(self, name: str, dtype: str = "", access: str = "") -> KernelArgument:
        """Declare a global-buffer argument (a 64-bit pointer in the kernarg segment)."""
        return self._add_arg(KernelArgAttr(name, "buffer", dtype, access))

    def arg_value(self, name: str, dtype: str = "i32") -> KernelArgument:
        """Declare a by-value scalar argument (i32, f32, i64, ...)."""
        if dtype not in SCALAR_SIZES:
            raise VerifyError(f"unknown argument type '{dtype}' (one of "
                              f"{', '.join(SCALAR_SIZES)})", source_location(caller_location()))
        return self._add_arg(KernelArgAttr(name, "value", dtype))

    def lds_alloc(self, name: str, size: int, align: int = 4) -> LdsAllocation:
        """A named static LDS allocation; its offset is an immediate operand."""
        op = self._prologue(LdsAllocOp(name, size, align))
        op.location = caller_location() or op.location
        op.results[0].name_hint = name
        offset = compute_layout(self.kernel).lds_offsets[name]
        return LdsAllocation(name, size, align, offset, op.results[0])

    def _abi_value(self, key: tuple, make) -> SSAValue:
        if key not in self._abi:
            op = self._prologue(make())
            op.location = caller_location() or op.location
            op.results[0].name_hint = key[0] if len(key) == 1 else f"{key[0]}_{key[1]}"
            self._abi[key] = op
            self._place_abi_values()
        return self._abi[key].results[0]

    def _place_abi_values(self) -> None:
        """Give every ABI value the register the ABI assigns for the current request set."""
        layout = compute_layout(self.kernel)
        for op in list(self._abi.values()):
            want = layout.abi_register(op)
            value = op.results[0]
            if want is None or value.type == want:
                continue
            old_key = (value.type.KIND, value.type.first, value.type.width) \
                if isinstance(value.type, RegisterType) and value.type.is_fixed else None
            if old_key is not None and self._entry_values.get(old_key) is value:
                del self._entry_values[old_key]
            new_value = self._retype(value, want)
            self._entry_values[(want.KIND, want.first, want.width)] = new_value

    def _retype(self, value: SSAValue, new_type: RegisterType) -> SSAValue:
        """Change a value's register in place (Python handles to it stay valid), and that of
        the destination-passing chain it starts."""
        old_type = value.type
        value._type = new_type  # xDSL values have no public type setter
        for use in list(value.uses):
            op = use.operation
            self._built.discard(op)  # (its operand changed: finish checks it again)
            if isinstance(op, SplitRegisterRangeOp) and new_type.is_fixed:
                for piece, want in zip(op.pieces, split_types(
                        new_type, [p.type.width for p in op.pieces])):
                    if piece.type != want:
                        self._retype(piece, want)
            elif isinstance(op, MakeRegisterRangeOp):
                types = [p.type for p in op.parts]
                if all(isinstance(t, RegisterType) and t.is_fixed for t in types):
                    want = join_type(types)
                    if op.result.type != want:
                        self._retype(op.result, want)
            elif isinstance(op, InstructionOp):
                match = match_instruction(op, self.isa)
                if use.index in match.def_positions:
                    res = op.outs[match.def_positions.index(use.index)]
                    if res.type == old_type:
                        self._retype(res, new_type)
        return value

    def kernarg_ptr(self) -> SSAValue:
        """The kernarg segment pointer (SGPR pair, placed by the ABI)."""
        return self._abi_value(("kernarg_ptr",), lambda: KernargPtrOp(
            REGISTER_TYPES["s"].relocatable(2)))

    def dispatch_ptr(self) -> SSAValue:
        """The dispatch packet pointer (SGPR pair)."""
        return self._abi_value(("dispatch_ptr",), lambda: DispatchPtrOp(
            REGISTER_TYPES["s"].relocatable(2)))

    def queue_ptr(self) -> SSAValue:
        """The queue pointer (SGPR pair)."""
        return self._abi_value(("queue_ptr",), lambda: QueuePtrOp(
            REGISTER_TYPES["s"].relocatable(2)))

    def dispatch_id(self) -> SSAValue:
        """The 64-bit dispatch id (SGPR pair)."""
        return self._abi_value(("dispatch_id",), lambda: DispatchIdOp(
            REGISTER_TYPES["s"].relocatable(2)))

    def workgroup_id(self, dim: str = "x") -> SSAValue:
        """The workgroup id in `dim` (a system SGPR after the user SGPRs)."""
        return self._abi_value(("workgroup_id", dim), lambda: WorkgroupIdOp(
            dim, REGISTER_TYPES["s"].relocatable()))

    def workitem_id(self, dim: str = "x") -> SSAValue:
        """The work-item id register v0 (x in bits 0-9, y 10-19, z 20-29 when requested)."""
        return self._abi_value(("workitem_id", dim), lambda: WorkitemIdOp(
            dim, REGISTER_TYPES["v"].relocatable()))

    def cycle_timer(self, name: str, regions: int = 1, *, sgprs: int | None = None):
        """s_memtime timing regions stored per wave to buffer argument `name`
        (asterism.builder.cycle_timer.CycleTimer)."""
        from asterism.builder.cycle_timer import CycleTimer

        return CycleTimer(self, name, regions, sgprs=sgprs)

    # --- scheduling (asterism.builder.schedule; the held Scheduler does the work) ---------

    def keep_order(self, name: str | None = None) -> AbstractContextManager[Capture]:
        """Mark the instructions emitted inside as one span the scheduler keeps as written
        (nothing moves out of it or into it)."""
        return self._scheduler.keep_order(name)

    def group(self, name: str | None = None, *, exact: bool = True, keep: bool = True,
              **counts: int) -> AbstractContextManager[Capture]:
        """Check that the code emitted inside is exactly `counts` (see Group); kept in
        order by the scheduler unless keep=False."""
        return self._scheduler.group(name, exact=exact, keep=keep, **counts)

    def capture(self) -> AbstractContextManager[Capture]:
        """Collect the instructions emitted inside (for assert_counts / assert_order)."""
        return self._scheduler.capture()

    def units(self) -> list[str]:
        """The kinds of the kernel's instructions so far, in order."""
        return self._scheduler.units()

    def assert_counts(self, **counts: int) -> None:
        """The kernel so far has exactly these numbers of instructions per kind."""
        self._scheduler.assert_counts(**counts)

    def assert_order(self, pattern: str) -> None:
        """The kernel's instruction kinds so far match the order pattern entirely."""
        self._scheduler.assert_order(pattern)

    def interleave(self, driver: Stream, *rules: Rule, leftover: str = "error",
                   expect: Group | Sequence[Group] | None = None,
                   keep: bool = True) -> Capture:
        """Emit `driver`'s items in order with the rules' items placed around them
        (asterism.builder.schedule); returns a Capture of everything emitted."""
        return self._scheduler.interleave(driver, *rules, leftover=leftover, expect=expect,
                                          keep=keep)

    def emit_groups(self, groups: Sequence[Group], *streams: Stream,
                    keep: bool = True) -> Capture:
        """Emit groups in order, each pulling its counts from the streams of those kinds
        (`Stream.kind`, or a stream named after a kind), then checking what came out."""
        return self._scheduler.emit_groups(groups, *streams, keep=keep)

    # --- structured control flow (builder.structured) -------------------------------------

    def loop(self, lo, hi, step=1, iter_args: Sequence[SSAValue] = ()):
        """`with kb.loop(lo, hi, step, iter_args=[...]) as loop:` an scf.for (SGPR counter
        from `lo` while < `hi`; ints or SGPR values); `loop.iv`, `loop.args`,
        `loop.yield_(...)`, `loop.results` (see asterism.builder.structured)."""
        return build_loop(self, lo, hi, step, iter_args, caller_location())

    def if_(self, cond: SSAValue, result_types: Sequence[Attribute] = ()) -> If:
        """An scf.if on the SGPR `cond` or `kb.vcc` (taken when not zero): `with br.then():`,
        `with br.otherwise():`, `br.yield_(...)`, `br.results`."""
        return build_if(self, cond, result_types, caller_location())

    def _enter_region(self, block: Block) -> object:
        saved = (self.block, self._local)
        self.block, self._local = block, {}
        return saved

    def _leave_region(self, saved: object) -> None:
        self.block, self._local = saved  # type: ignore[misc]

    def _counter(self, value, what: str, loc) -> SSAValue:
        """A loop bound as a relocatable SGPR value (ints and fixed SGPRs are copied)."""
        if isinstance(value, bool) or not isinstance(value, int | SSAValue):
            raise VerifyError(f"kb.loop: the {what} is an int or an SGPR value, not "
                              f"{value!r}", source_location(loc))
        if isinstance(value, SSAValue) and value.type == SGPRType.relocatable():
            return value
        if isinstance(value, SSAValue) and (type(value.type) is not SGPRType
                                            or value.type.width != 1):
            raise VerifyError(f"kb.loop: the {what} is {type_text(value.type)}, expected "
                              "one SGPR", source_location(loc))
        return self.emit("s_mov_b32", self.sreg(), value)

    # --- blocks ---------------------------------------------------------------------------

    def _block_name(self, name: str | None) -> str | None:
        if name is None:
            return None
        base, k = name, 1
        while name in self._block_names:
            name = f"{base}{k}"
            k += 1
        self._block_names.add(name)
        return name

    def new_label(self, name: str | None = None) -> Label:
        """A block not placed yet (for forward branches); place it with `kb.place`."""
        block = Block()
        hint = self._block_name(name)
        if hint:
            block.name_hint = hint
        return Label(block, hint or "")

    def place(self, label: Label) -> Label:
        """Continue emitting in `label`'s block (the current block falls through to it)."""
        if label.block.parent is not None:
            raise VerifyError(f"label {label.name or '?'} is already placed",
                              source_location(caller_location()))
        self._start(label.block)
        return label

    def label(self, name: str | None = None) -> Label:
        """Start a new block here (e.g. a loop head) and return it."""
        return self.place(self.new_label(name))

    def _branch(self, mnemonic: str, operands: tuple, fallthrough: Label | None,
                loc: FileLineColLoc | None) -> None:
        inst, _suffix = resolve(self.isa, mnemonic)
        if len(operands) != 1 or not isinstance(operands[0], Label):
            raise VerifyError(f"{mnemonic} takes one operand, the target label "
                              "(kb.label() / kb.new_label())", source_location(loc))
        target = operands[0]
        if "cond_branch" in inst.flags:
            nxt = fallthrough or self.new_label()
            op = BranchOp(mnemonic, target.block, nxt.block)
            self._insert(op, loc)
            self.place(nxt)
        else:
            self._insert(BranchOp(mnemonic, target.block), loc)

    # --- instructions ---------------------------------------------------------------------

    def emit(self, mnemonic: str, *operands, enc: str | None = None, **modifiers):
        """Emit `mnemonic` with assembly-order operands; returns its destination value(s)."""
        loc = caller_location()
        resolved = _RESOLVED.get((self.isa.target, mnemonic))
        if resolved is None:
            try:
                inst, suffix = resolve(self.isa, mnemonic)
            except MatchError as err:
                raise VerifyError(err.message, source_location(loc)) from None
            branch = any(s.syntax == "label" for f in inst.forms for s in f.operands)
            resolved = _RESOLVED[(self.isa.target, mnemonic)] = (inst, suffix, branch)
        inst, suffix, branch = resolved
        if branch:
            return self._branch(mnemonic, operands, modifiers.pop("fallthrough", None), loc)
        mods = {k: (tuple(int(b) for b in v) if isinstance(v, list | tuple) else v)
                for k, v in modifiers.items() if v is not False and v is not None
                } if modifiers else {}
        key = _emit_key(self.isa.target, mnemonic, enc, mods, operands)
        facts = _MATCHES.get(key) if key is not None else None
        if facts is not None:  # (the same form as below, without trying the forms again)
            given = self._with_fixed_operands(facts.specs, operands) if facts.fixed \
                else operands
            seen = id(facts) in self._checked_keys  # (facts in _MATCHES live for good)
            if not seen:
                self._checked_keys.add(id(facts))
            return self._build(mnemonic, facts.match, given, mods, loc, facts, seen)
        forms = self._candidate_forms(inst, suffix, enc, mods, loc)
        errors: list[tuple[Form, MatchError]] = []
        for form in forms:
            specs = ir_specs(form)
            given = self._with_fixed_operands(specs, operands)
            shapes = [self._shape(o, spec) for o, spec in
                      zip(given, specs + (None,) * len(given))]
            try:
                match = _match_form(inst, form, suffix, shapes, mods)
                check_modifiers(match, mods, shapes)
            except MatchError as err:
                errors.append((form, err))
                continue
            facts = _BuildFacts.of(match)
            if key is not None and len(_MATCHES) < _MATCHES_LIMIT:
                _MATCHES[key] = facts
                self._checked_keys.add(id(facts))
            return self._build(mnemonic, match, given, mods, loc, facts)
        best_form, best = max(errors, key=lambda e: e[1].score)
        where = f" ({best_form.enc})" if len(forms) > 1 else ""
        raise VerifyError(f"{mnemonic}{where}: {best.message}", source_location(loc))

    def wait(self, *tokens: SSAValue) -> WaitOp:
        """`amdgcn.wait` on these tokens (default: the token of the last memory instruction of
        the current block); the waits pass turns it into the minimal s_waitcnt."""
        loc = caller_location()
        if not tokens:
            for op in reversed(list(self.block.ops)):
                token = op.token if isinstance(op, InstructionOp) else None
                if token is not None:
                    tokens = (token,)
                    break
        if not tokens:
            if self.last_token is None:
                raise VerifyError("kb.wait() without tokens waits for the last memory "
                                  "instruction, but none was emitted yet",
                                  source_location(loc))
            tokens = (self.last_token,)
        for k, tok in enumerate(tokens):
            if not isinstance(tok, SSAValue) or not isinstance(tok.type, TokenType):
                raise VerifyError(f"kb.wait: argument #{k} is not a token (memory "
                                  "instructions return one; see kb.last_token)",
                                  source_location(loc))
        op = WaitOp(list(tokens))
        self._insert(op, loc)
        return op

    def tokens_only(self, *tokens: SSAValue) -> None:
        """Order these LDS DMA loads (`buffer_load ... lds`) by `kb.wait(token)` alone: the
        waits pass no longer waits for them before every DS access and s_barrier (the
        default), so a DMA into one LDS buffer can fly while another buffer is read."""
        loc = caller_location()
        for k, tok in enumerate(tokens):
            op = tok.owner if isinstance(tok, SSAValue) else None
            is_dma = isinstance(op, InstructionOp) and op.token is tok and (
                bool(op.mods.get("lds")) or "lds_dma" in self._inst_flags(op))
            if not is_dma:
                raise VerifyError(f"kb.tokens_only: argument #{k} is not the token of an LDS "
                                  "DMA load (buffer_load ... lds / global_load_lds_*)",
                                  source_location(loc))
            op.attributes[LDS_DMA_TOKENS_ATTR] = StringAttr("tokens")

    def _inst_flags(self, op: InstructionOp) -> frozenset:
        inst, _suffix = resolve(self.isa, op.mnemonic_text)
        return frozenset(inst.flags)

    def _with_fixed_operands(self, specs, operands: tuple) -> tuple:
        """The operands with the implicit named registers (vcc of VOPC/VOP2 carries) filled
        in when the caller left them out."""
        fixed = [k for k, spec in enumerate(specs) if spec.fixed]
        if not fixed or len(operands) != len(specs) - len(fixed):
            return operands
        it = iter(operands)
        return tuple(self.special(spec.fixed) if spec.fixed else next(it) for spec in specs)

    def _candidate_forms(self, inst, suffix: str, enc: str | None, mods: dict,
                         loc) -> list[Form]:
        if enc is not None:
            cls = FAMILIES.get(enc.lower().removeprefix("amdgcn."))
            if cls is None:
                raise VerifyError(f"unknown encoding '{enc}' (one of {', '.join(FAMILIES)})",
                                  source_location(loc))
            forms = [f for f in inst.forms if f.enc in cls.ENCODINGS]
        else:
            forms = list(inst.forms)
        if suffix:
            forms = [f for f in forms if f.suffix == suffix
                     or (suffix == "_e64" and f.enc == "VOP3")]
        if enc is None and not suffix:
            # DPP/SDWA only when their controls are given (as the assembler decides).
            forms = [f for f in forms if f.enc not in ENCODING_MODIFIERS or f.enc not in (
                "DPP", "SDWA") or set(mods) & ENCODING_MODIFIERS[f.enc]]
            forms.sort(key=lambda f: _ENC_PREFERENCE.get(f.enc, 0))
        if not forms:
            raise VerifyError(f"{inst.mnemonic} has no form for enc={enc!r} suffix={suffix!r}",
                              source_location(loc))
        return forms

    def _shape(self, operand, spec) -> Shape:
        if isinstance(operand, SSAValue):
            return shape_of(operand)
        if isinstance(operand, LdsAllocation):
            return Shape("imm", imm=operand.offset, imm_type="i32", text=str(operand.offset))
        if isinstance(operand, KernelArgument):
            return Shape("imm", imm=operand.offset, imm_type="i32", text=str(operand.offset))
        if isinstance(operand, bool):
            return Shape("other", text=repr(operand))
        if isinstance(operand, int | float):
            return Shape("imm", imm=operand, text=repr(operand))
        if operand is None and spec is not None:
            kind = next((k for k in spec.kinds if k in REGISTER_TYPES), "v")
            return Shape(kind, count=max(1, spec.width), text=f"a new {kind} register")
        return Shape("other", text=type(operand).__name__)

    def _value(self, operand, spec, loc: FileLineColLoc | None = None) -> SSAValue:
        if isinstance(operand, SSAValue):
            return operand
        if isinstance(operand, LdsAllocation):
            return operand.value
        if isinstance(operand, KernelArgument):
            op = self._insert(KernargOffsetOp(operand.name), caller_location())
            op.results[0].name_hint = f"{operand.name}_offset"
            return op.results[0]
        if isinstance(operand, float):
            base = (spec.type or "f32").removeprefix("v2")
            return self.const(operand, _FLOAT_TYPES.get(base, f32))
        if isinstance(operand, int):
            return self.const(operand)
        kind = next((k for k in spec.kinds if k in REGISTER_TYPES), "v")
        return self._relocatable(kind, max(1, spec.width), max(1, spec.align), kind, loc)

    def _build(self, mnemonic: str, match, operands: tuple, mods: dict,
               loc: FileLineColLoc | None, facts: _BuildFacts, seen: bool = False):
        """Make and insert the op of `match`; `seen`: an op of the same emit key was built
        in this kernel before (finish checks that one: this one need not be matched again)."""
        value = self._value
        args = [o if type(o) in _SSA_CLASSES else value(o, spec, loc)
                for o, spec in zip(operands, match.specs)]
        # (match.result_types, from the facts worked out once per match)
        n = len(args)
        result_types = [args[i]._type for i in facts.defs if i < n]  # (.type: a property)
        if facts.token:
            result_types.append(_TOKEN_TYPE)
        op = facts.op_class(mnemonic, args, result_types, mods)
        self._insert(op, loc)
        if seen:
            self._built.add(op)
        defs = []
        for res, pos in zip(op.results, facts.defs):  # (outs: all the results)
            hint = args[pos]._name
            # (name_hint's setter, with the name's validation done once per name)
            res._name = None if hint is None else _valid_hint(hint)
            t = res.type
            if isinstance(t, RegisterType) and t.is_fixed:
                self._local[(t.KIND, t.first, t.width)] = res
            elif isinstance(t, SpecialRegType):
                self._local[("special", t.reg_name)] = res
            defs.append(res)
        # (the token is the last result exactly when the form is counted: see above)
        token = self.last_token = op.results[-1] if facts.token else None
        if token is not None:
            token._name = "tok"  # (name_hint's setter, for a name known to be valid)
        if len(defs) == 1:
            return defs[0]
        if not defs:
            return token
        return tuple(defs)

    # --- finishing ------------------------------------------------------------------------

    def _finalize(self) -> KernelOp:
        if not self._finished:
            self._place_abi_values()
            if self._reserved:
                self.kernel.properties["reserved"] = DictionaryAttr(dict(self._reserved))
            try:
                close_blocks(self.kernel.body, f"kernel {self.name}")
            except ValueError as err:
                raise VerifyError(str(err)) from None
            self._finished = True
        return self.kernel

    def finish(self) -> BuiltinModuleOp:
        """Complete the kernel and return the verified module holding it."""
        if self._module is not None:
            return self._module.finish()
        kernel = self._finalize()
        if kernel.parent is None:
            self._top = BuiltinModuleOp([ModuleOp(self.name, self.target, [kernel])])
        verify_module(self._top, built=self._built)
        return self._top


class ModuleBuilder:
    """Builds an `amdgcn.module` with several kernels: `mb.kernel("k")` -> KernelBuilder."""

    def __init__(self, name: str = "module", target: str = "gfx942", features: str | None = None):
        self.name = name
        self.target = get_isa(target).target
        self.features = features
        self.kernels: list[KernelBuilder] = []
        self._top: BuiltinModuleOp | None = None

    def kernel(self, name: str, **kwargs) -> KernelBuilder:
        """A new kernel builder in this module."""
        if any(k.name == name for k in self.kernels):
            raise VerifyError(f"kernel '{name}' is already defined",
                              source_location(caller_location()))
        kb = KernelBuilder(name, self.target, module=self, **kwargs)
        self.kernels.append(kb)
        return kb

    def finish(self) -> BuiltinModuleOp:
        """Complete every kernel and return the verified module."""
        if self._top is None:
            kernels = [kb._finalize() for kb in self.kernels]
            self._top = BuiltinModuleOp([ModuleOp(self.name, self.target, kernels,
                                                  self.features)])
        built = BuiltOps()
        for kb in self.kernels:
            built.update(kb._built)
        verify_module(self._top, built=built)
        return self._top


__all__ = ["KernelArgument", "KernelBuilder", "Label", "LdsAllocation", "ModuleBuilder",
           "type_text"]
