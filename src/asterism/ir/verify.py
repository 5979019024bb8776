"""Verification of amdgcn IR against the ISA database and the target description.

`verify_module` checks that every value is defined before its uses (ir.dominance), runs
xDSL's structural checks, then checks every instruction op against the
database form of the module's target (mnemonic, availability, operands, immediates,
modifiers, destination passing), the ABI value ops against the registers the ABI assigns,
LDS and kernel-argument declarations, and register numbers against the target's register
files. The first problem is raised as a `VerifyError` naming the op, the operand (by its
database name) and what was expected, at the op's source location.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
)
from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    ErasedSSAValue,
    Operation,
    OpResult,
    SSAValues,
)
from xdsl.irdl import (
    AnyAttr,
    BaseAttr,
    OptPropertyDef,
    PropertyDef,
    RangeOf,
    ResultDef,
    VarOperandDef,
    VarResultDef,
)
from xdsl.utils.exceptions import VerifyException

from asterism.errors import TargetError, VerifyError
from asterism.ir.abi import USER_SGPR_OPS, KernelLayout, compute_layout, lds_size
from asterism.ir.dominance import check_dominance
from asterism.ir.kernel_attrs import DECODE_ONLY_ATTR
from asterism.ir.loops import STRUCTURED_OPS, TOKEN_VAR_OPS
from asterism.ir.match import (
    Match,
    MatchError,
    check_modifiers,
    check_results,
    is_relocatable_key,
    match_op,
    modifiers_key,
    operands_key,
    resolve,
    shape_of,
    type_key,
)
from asterism.ir.ops import (
    ABI_VALUE_OPS,
    INSTRUCTION_OPS,
    AllocaOp,
    BranchOp,
    EndKernelOp,
    FallthroughOp,
    InstructionOp,
    KernargOffsetOp,
    KernelOp,
    LdsAllocOp,
    LiteralOp,
    MakeRegisterRangeOp,
    ModuleOp,
    OffOp,
    SchedBarrierOp,
    SplitRegisterRangeOp,
    WaitOp,
    WorkgroupIdOp,
    WorkitemIdOp,
    attr_to_modifiers,
    op_location,
    walk_ops,
)
from asterism.ir.types import (
    AGPRType,
    RegisterType,
    SGPRType,
    SpecialRegType,
    TTMPType,
    VGPRType,
    type_text,
)
from asterism.isa import IsaDatabase, get_isa
from asterism.isa.syntax import TTMP_COUNT
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc
from asterism.target import Target, get_target


def op_title(op: Operation) -> str:
    """`amdgcn.vop2 v_add_u32` style name of an op for messages."""
    mnemonic = getattr(op, "mnemonic", None)
    if mnemonic is not None and hasattr(mnemonic, "data"):
        return f"{op.name} {mnemonic.data}"
    return op.name


def error_at(op: Operation, message: str) -> VerifyError:
    """A VerifyError for `op` with its location and name."""
    return VerifyError(f"{op_title(op)}: {message}", op_location(op))


def amdgcn_modules(module: Operation) -> list[ModuleOp]:
    """The amdgcn.module ops of a parsed file (the op itself if it is one)."""
    if isinstance(module, ModuleOp):
        return [module]
    if isinstance(module, BuiltinModuleOp):
        out: list[ModuleOp] = []
        for op in module.ops:
            if isinstance(op, ModuleOp):
                out.append(op)
            elif isinstance(op, BuiltinModuleOp):
                out.extend(amdgcn_modules(op))
            elif op.name != "gpu.module":  # upstream kernels: frontend.lower
                raise error_at(op, "expected amdgcn.module at the top level")
        return out
    raise VerifyError(f"expected a module, got {module.name}", op_location(module))


# --- structural checks --------------------------------------------------------------------
#
# xDSL's generic verification interprets each op's IRDL definition and costs ~20 us per op;
# a kernel is mostly instruction ops and amdgcn.alloca, whose definitions leave only a few
# ways to fail. `_passes_xdsl_checks` recognises the ops that certainly pass and leaves
# everything else (and every error message) to xDSL. It is enabled only while the definitions
# are the ones it was written for (checked once below).


def _instruction_props_ok(props: dict) -> bool:
    # mnemonic (StringAttr) required, modifiers (DictionaryAttr) optional, nothing else.
    if type(props.get("mnemonic")) is not StringAttr:
        return False
    n = len(props)
    return n == 1 or (n == 2 and type(props.get("modifiers")) is DictionaryAttr)


def _passes_xdsl_checks(op: Operation) -> bool:
    """True if `op.verify(verify_nested_ops=False)` would certainly pass: an instruction op,
    amdgcn.alloca, arith.constant or amdgcn.literal that is not the last op of its block
    (terminator rules), has no successors or regions, no erased operands, properties of the
    declared kinds and (constants) a result of its value's type."""
    # (the fields behind xDSL's views: the views are made anew on every access)
    cls = type(op)
    if cls in _VALUE_OPS:
        return (op._next_op is not None and op.parent is not None
                and _VALUE_OPS[cls](op))  # type: ignore[operator]
    if cls not in _TRIVIAL_DEFINITIONS or op._next_op is None or op.parent is None:
        return False
    if op._successors or op.regions:
        return False
    if cls is AllocaOp:
        results = op.results
        return (not op.properties and not op._operands and len(results) == 1
                and isinstance(results[0].type, RegisterType | SpecialRegType))
    if not _instruction_props_ok(op.properties):
        return False
    for v in op._operands:
        if type(v) not in _LIVE_VALUES and isinstance(v, ErasedSSAValue):
            return False
    return True


def _trivial_definitions() -> frozenset[type[Operation]]:
    """The op classes whose IRDL definitions are the ones `_passes_xdsl_checks` mirrors (their
    own verify_ methods, in ir/ops.py, are mirrored there too: none for instruction ops, the
    result type for amdgcn.alloca)."""
    any_range = RangeOf(AnyAttr())
    instruction = (
        [("args", VarOperandDef(any_range))], [("outs", VarResultDef(any_range))],
        {"mnemonic": PropertyDef(BaseAttr(StringAttr)),
         "modifiers": OptPropertyDef(BaseAttr(DictionaryAttr))})
    alloca = ([], [("result", ResultDef(AnyAttr()))], {})
    out: set[type[Operation]] = set()
    for cls, (operands, results, props) in [*((c, instruction) for c in INSTRUCTION_OPS),
                                            (AllocaOp, alloca)]:
        d = cls.get_irdl_definition()
        if (d.operands == operands and d.results == results and d.properties == props
                and not d.attributes and not d.regions and not d.successors and not d.options
                and not list(d.traits)):
            out.add(cls)
    return frozenset(out)


_TRIVIAL_DEFINITIONS = _trivial_definitions()


def _value_op_shape(op: Operation, prop: str) -> Attribute | None:
    """The one property `prop` of an op with no operands, successors, regions or
    attributes and one result (None otherwise)."""
    props = op.properties
    if (op._operands or op._successors or op.regions or op.attributes or len(props) != 1
            or len(op.results) != 1):
        return None
    return props.get(prop)


def _constant_ok(op: Operation) -> bool:
    """arith.constant with a signless integer or a float value of its result's type."""
    value = _value_op_shape(op, "value")
    cls = type(value)
    if cls is IntegerAttr:
        t = value.type  # type: ignore[union-attr]
        if type(t) is not IntegerType or t.signedness.data is not Signedness.SIGNLESS:
            return False
    elif cls is not FloatAttr:
        return False
    return op.results[0].type == value.type  # type: ignore[union-attr]


def _literal_ok(op: Operation) -> bool:
    """amdgcn.literal: its bits an IntegerAttr, its result an integer type."""
    return (type(_value_op_shape(op, "bits")) is IntegerAttr
            and type(op.results[0].type) is IntegerType)


def _value_ops() -> dict[type[Operation], Callable[[Operation], bool]]:
    """The short cuts for arith.constant and amdgcn.literal, each kept only if it agrees
    with xDSL's own verification on ops of every case it tells apart (checked once here:
    another xDSL could define the ops otherwise)."""
    from xdsl.dialects.builtin import f32, f64, i32, i64

    def agrees(check: Callable[[Operation], bool], op: Operation) -> bool:
        Block([op, EndKernelOp()])  # (not the last op of its block)
        try:
            op.verify(verify_nested_ops=False)
            accepted = True
        except VerifyException:
            accepted = False
        return check(op) is accepted or (accepted and not check(op))

    constants = [arith.ConstantOp(IntegerAttr(5, i32)), arith.ConstantOp(FloatAttr(1.5, f32)),
                 arith.ConstantOp(IntegerAttr(5, i64), i32),
                 arith.ConstantOp(FloatAttr(1.5, f64), f32),
                 arith.ConstantOp(IntegerAttr(5, IntegerType(32, Signedness.SIGNED)))]
    literals = [LiteralOp(0x3F800000)]
    bad_literal = LiteralOp(1)
    bad_literal.results[0]._type = f32
    literals.append(bad_literal)
    out: dict[type[Operation], Callable[[Operation], bool]] = {}
    for cls, check, samples in ((arith.ConstantOp, _constant_ok, constants),
                                (LiteralOp, _literal_ok, literals)):
        if all(agrees(check, op) for op in samples):
            out[cls] = check
    return out


_VALUE_OPS = _value_ops()


_LIVE_VALUES = (OpResult, BlockArgument)  # (exact types: not ErasedSSAValue)


def verify_structure(module: Operation) -> None:
    """xDSL's structural verification, reported at the offending op."""
    for op in walk_ops(module):
        if _passes_xdsl_checks(op):
            continue
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as err:
            message = str(err).split("\n\n")[0].strip()
            if "is not a terminator" in message:
                message += (" (end each block of a multi-block kernel with amdgcn.branch, "
                            "amdgcn.fallthrough or amdgcn.end_kernel)")
            raise error_at(op, message) from None


@dataclass
class VerifiedFacts:
    """What verifying a module established on the way, for lowering it without checking
    again: each instruction op's form and exact match key, each kernel's layout."""

    forms: dict[Operation, tuple[Match, tuple | None]] = field(default_factory=dict)
    layouts: dict[Operation, KernelLayout] = field(default_factory=dict)


class BuiltOps:
    """Instruction ops a builder made from a form it matched and checked, with their state
    then: the operand and result tuples (xDSL replaces the tuple on every change) and the
    mnemonic and modifiers attributes. `verify_module(built=...)` does not match such an op
    again while it is unchanged. (Three dicts rather than a record per op: a kernel has
    thousands of ops, and every object made per op is one more for the cyclic collector.
    Keyed by id: an op's __hash__ is a Python call; the recorded result tuple, whose results
    name their op, keeps the op alive, or for an op without results differs from any later
    op's, so an id is never taken for another op's.)"""

    __slots__ = ("_shared", "operands", "props", "results")

    def __init__(self) -> None:
        self.operands: dict[int, SSAValues] = {}
        self.results: dict[int, SSAValues] = {}
        self.props: dict[int, tuple[Attribute, Attribute | None]] = {}
        # (one pair per distinct pair of attributes, by identity: the pair keeps them alive)
        self._shared: dict[tuple[int, int], tuple[Attribute, Attribute | None]] = {}

    def __len__(self) -> int:
        return len(self.operands)

    def __contains__(self, op: Operation) -> bool:
        return self.results.get(id(op)) is op.results

    def add(self, op: Operation) -> None:
        """Record `op` as it is now."""
        props = op.properties
        mnemonic, mods = props["mnemonic"], props.get("modifiers")
        pair = self._shared.get((id(mnemonic), id(mods)))
        if pair is None:
            pair = self._shared[(id(mnemonic), id(mods))] = (mnemonic, mods)
        key = id(op)
        self.operands[key] = op._operands
        self.results[key] = op.results
        self.props[key] = pair

    def discard(self, op: Operation) -> None:
        """Forget `op` (verify matches it again)."""
        key = id(op)
        if self.results.get(key) is op.results:
            del self.operands[key], self.results[key], self.props[key]

    def update(self, other: BuiltOps) -> None:
        """Add the ops of `other`."""
        self._shared.update(other._shared)
        self.operands.update(other.operands)
        self.results.update(other.results)
        self.props.update(other.props)

    def unchanged(self, op: Operation) -> bool:
        """True if `op` was recorded and is still as it was, with no decode_only attribute."""
        key = id(op)
        results = self.results.get(key)
        if results is None or op.results is not results or op._operands is not \
                self.operands[key]:
            return False
        mnemonic, mods = self.props[key]
        props = op.properties
        return (props.get("mnemonic") is mnemonic and props.get("modifiers") is mods
                and len(props) == (1 if mods is None else 2) and not is_decode_only(op))


def verify_module(module: Operation, facts: VerifiedFacts | None = None,
                  built: BuiltOps | None = None) -> None:
    """Verify a parsed or built module; raises VerifyError on the first problem. With
    `facts`, records what lowering needs (see VerifiedFacts). `built`: instruction ops whose
    form their builder matched (and checked) when it made them (see BuiltOps); such an op,
    if unchanged, is not matched again (the structure, register bounds and every other op
    are checked as always); with `facts`, only if `facts.forms` already holds its form."""
    # (the keys and facts made per op would otherwise start full collections of the IR)
    was_enabled = pause_cyclic_gc()
    try:
        _verify_module(module, facts, built)
    finally:
        resume_cyclic_gc(was_enabled)


def _verify_module(module: Operation, facts: VerifiedFacts | None,
                   built: BuiltOps | None) -> None:
    # (first: xDSL's structural checks would report a value from a sibling region as
    # "defined out of its IsolatedFromAbove parent" at the kernel, naming no operand)
    check_dominance(module)
    verify_structure(module)
    for amod in amdgcn_modules(module):
        try:
            isa = get_isa(amod.target_name)
            target = get_target(amod.target_name)
        except TargetError as err:
            raise error_at(amod, err.message) from None
        for op in amod.body.ops:
            if isinstance(op, KernelOp):
                verify_kernel(op, isa, target, facts, built)
            elif isinstance(op, func.FuncOp):
                verify_fragment(op, isa, target)
            else:
                raise error_at(op, "an amdgcn.module holds amdgcn.kernel and func.func ops")


class _Checker:
    """Checks the ops of one kernel or func body."""

    def __init__(self, isa: IsaDatabase, target: Target, layout: KernelLayout | None,
                 kernel: KernelOp | None, facts: VerifiedFacts | None = None,
                 built: BuiltOps | None = None):
        self.isa = isa
        self.target = target
        self.layout = layout
        self.kernel = kernel
        self.forms = facts.forms if facts is not None else None
        self.built = built if built else None
        self.limits = {VGPRType: target.vgpr.arch, AGPRType: target.vgpr.acc,
                       SGPRType: target.sgpr.addressable, TTMPType: TTMP_COUNT}

    def check_region_ops(self, parent: Operation) -> None:
        """Check every op (and block argument) of the regions of `parent`."""
        for region in parent.regions:
            for block in region.blocks:
                for arg in block.args:
                    self.check_register_bounds(parent, arg.type)
                op = block._first_op  # (block.ops iterates through a view and properties)
                while op is not None:
                    self.check_op(op)
                    op = op._next_op

    def check_register_bounds(self, op: Operation, t) -> None:
        """Fixed registers must exist in the target's register files."""
        # (by exact type first: isinstance on attribute classes is slow, and this runs for
        # every result of every op)
        limit = self.limits.get(type(t))
        if limit is None:
            if not isinstance(t, RegisterType) or not t.is_fixed:
                return
            limit = self.limits[type(t)]
        elif not t.is_fixed:
            # (a relocatable value wider than its file: nothing could place it, and the
            # register allocator's bit sets would be as wide as the text says)
            if t.width > limit:
                raise error_at(op, f"{type_text(t)} is {t.width} registers wide: more than "
                                   f"the {limit} {t.FILE_NAME}s of {self.target.name}")
            return
        if t.first + t.width > limit:
            raise error_at(op, f"{t.asm()} is past the last {t.FILE_NAME} "
                               f"({t.KIND}{limit - 1}) of {self.target.name}")

    def check_op(self, op: Operation) -> None:
        """Check one op of a kernel or fragment body."""
        for res in op.results:
            self.check_register_bounds(op, res.type)
        cls = type(op)
        if cls is AllocaOp:
            return  # the most common op after instructions: nothing more to check
        if cls in _INSTRUCTION_CLASSES or isinstance(op, InstructionOp):
            # (with `facts`, lowering needs the form: skipped only if the caller recorded it)
            if self.built is not None and self.built.unchanged(op) and (
                    self.forms is None or op in self.forms):
                return
            found = check_instruction_keyed(op, self.isa, self.layout)
            if self.forms is not None:
                self.forms[op] = found
        elif isinstance(op, BranchOp):
            check_branch(op, self.isa)
        elif isinstance(op, FallthroughOp):
            check_next_block(op, op.dest, "fall-through block")
        elif isinstance(op, EndKernelOp | AllocaOp | OffOp | LiteralOp | SplitRegisterRangeOp
                        | MakeRegisterRangeOp):
            pass  # (views check their types in verify_, run by verify_structure)
        elif isinstance(op, WaitOp):
            check_wait(op)
        elif isinstance(op, arith.ConstantOp):
            if not isinstance(op.value, IntegerAttr | FloatAttr):
                raise error_at(op, "immediates are integer or float scalars")
        elif isinstance(op, KernargOffsetOp):
            if self.layout is None:
                raise error_at(op, "kernel argument offsets exist only inside a kernel")
            names = [a.arg_name.data for a in self.kernel.args] if self.kernel else []
            if op.arg.data not in names:
                listed = ", ".join(dict.fromkeys(names)) or "none"
                raise error_at(op, f"no kernel argument named '{op.arg.data}' "
                                   f"(arguments: {listed})")
            if names.count(op.arg.data) > 1:
                raise error_at(op, f"{names.count(op.arg.data)} kernel arguments are named "
                                   f"'{op.arg.data}': the offset is ambiguous")
        elif isinstance(op, LdsAllocOp):
            if self.kernel is None:
                raise error_at(op, "LDS is allocated by kernels (not inside func.func)")
        elif isinstance(op, ABI_VALUE_OPS):
            if self.layout is None:
                raise error_at(op, "ABI inputs exist only inside a kernel")
            check_abi_value(op, self.layout)
        elif isinstance(op, func.CallOp | func.ReturnOp):
            pass  # calls are inlined by the inline pass; lowering rejects them
        elif isinstance(op, SchedBarrierOp):
            pass  # a scheduling fence: no operands, no machine code
        elif isinstance(op, STRUCTURED_OPS):
            if self.kernel is None:
                raise error_at(op, "scf loops and branches are lowered in kernels only")
            self.check_region_ops(op)  # (its own checks ran in verify_structure)
        elif isinstance(op, (scf.YieldOp, *TOKEN_VAR_OPS)):
            pass  # a region's end (checked by its parent); token variables (ir.loops)
        else:
            raise error_at(op, "not allowed in a kernel body (amdgcn ops, arith.constant, "
                               "func.call, scf.for and scf.if only)")


def verify_kernel(kernel: KernelOp, isa: IsaDatabase, target: Target,
                  facts: VerifiedFacts | None = None,
                  built: BuiltOps | None = None) -> None:
    """Check one kernel (declarations, then every op of its body)."""
    layout = compute_layout(kernel)
    if facts is not None:
        facts.layouts[kernel] = layout
    wg = kernel.launch_size
    if any(n < 1 for n in wg) or wg[0] * wg[1] * wg[2] > target.max_workgroup_size:
        raise error_at(kernel, f"workgroup size {wg} must have sizes >= 1 and at most "
                               f"{target.max_workgroup_size} work-items")
    seen: dict[str, LdsAllocOp] = {}
    for op in layout.lds_ops:
        if op.sym.data in seen:
            raise error_at(op, f"LDS allocation '{op.sym.data}' is declared twice")
        seen[op.sym.data] = op
    total = lds_size(kernel, layout)
    if total < layout.lds_used:
        raise error_at(kernel, f"lds_size({total}) is smaller than the {layout.lds_used} bytes "
                               "the amdgcn.lds_alloc ops need")
    if total > target.lds.bytes_per_workgroup:
        raise error_at(kernel, f"{total} bytes of LDS exceed the {target.lds.bytes_per_workgroup}"
                               f" bytes a workgroup may use on {target.name}")
    for block in kernel.body.blocks:
        if block.args:
            first = block.first_op or kernel
            raise error_at(first, "kernel blocks take no arguments: values cross blocks in "
                                  "their registers")
    regions = list(kernel.reserved_regions.items())
    checker = _Checker(isa, target, layout, kernel, facts, built)
    for k, (name, t) in enumerate(regions):
        checker.check_register_bounds(kernel, t)
        for other, u in regions[:k]:
            if type(t) is type(u) and t.first < u.first + u.width and u.first < t.first + t.width:
                raise error_at(kernel, f"reserved regions '{other}' ({u.asm()}) and '{name}' "
                                       f"({t.asm()}) overlap")
    checker.check_region_ops(kernel)


def verify_fragment(fn: func.FuncOp, isa: IsaDatabase, target: Target) -> None:
    """Check a func.func fragment's instruction ops against the module target."""
    _Checker(isa, target, None, None).check_region_ops(fn)


class _MatchCache:
    """The forms selected for the instruction ops of one ISA database, by exact key.

    Only successes are stored: an op that fails is matched again (and explains itself) every
    time, so errors and their messages do not depend on what was checked before."""

    LIMIT = 100_000  # keys kept per database; a long-running process starts over past this

    def __init__(self) -> None:
        self.forms: dict[tuple, Match] = {}
        self.results_ok: set[tuple] = set()  # (match key, result type keys) that passed

    def remember(self, key: tuple, match: Match) -> None:
        """Store the match of `key` (bounded)."""
        if len(self.forms) >= self.LIMIT:
            self.forms.clear()
            self.results_ok.clear()
        self.forms[key] = match


_MATCH_CACHES: weakref.WeakKeyDictionary[IsaDatabase, _MatchCache] = \
    weakref.WeakKeyDictionary()


def _match_cache(isa: IsaDatabase) -> _MatchCache:
    cache = _MATCH_CACHES.get(isa)
    if cache is None:
        cache = _MATCH_CACHES[isa] = _MatchCache()
    return cache


def _match_key(op: InstructionOp, layout: KernelLayout | None) -> tuple | None:
    """What decides the form of `op` and whether it fits, exactly (None: not cacheable)."""
    props = op.properties  # direct access: the property descriptors are slow
    mnemonic = props.get("mnemonic")
    if type(mnemonic) is not StringAttr:
        return None
    operands = operands_key(op.operands, layout)
    if operands is None:
        return None
    mods = props.get("modifiers")
    mods_key = modifiers_key(attr_to_modifiers(mods)) if mods is not None else ()
    return (type(op), mnemonic.data, operands, mods_key, is_decode_only(op))


def has_relocatable(key: tuple) -> bool:
    """True if a match key (of `_match_key`) has a relocatable register operand."""
    return any(is_relocatable_key(k) for k in key[2])


def is_decode_only(op: Operation) -> bool:
    """True if `op` is an instruction kept as decoded (its `decode_only` attribute)."""
    return bool(op.attributes) and DECODE_ONLY_ATTR in op.attributes


def _select_form(op: InstructionOp, isa: IsaDatabase, layout: KernelLayout | None) -> Match:
    shapes = [shape_of(v, layout) for v in op.args]
    mods = op.mods
    decode_only = is_decode_only(op)
    try:
        match = match_op(isa, type(op).ENCODINGS, op.mnemonic_text, shapes, mods, decode_only)
        if not decode_only:
            check_modifiers(match, mods, shapes)
    except MatchError as err:
        raise error_at(op, err.message) from None
    return match


def _cached_match(op: InstructionOp, isa: IsaDatabase, layout: KernelLayout | None,
                  cache: _MatchCache, key: tuple | None) -> Match:
    if key is not None:
        found = cache.forms.get(key)
        if found is not None:
            return found
    match = _select_form(op, isa, layout)
    if key is not None:
        cache.remember(key, match)
    return match


def match_instruction(op: InstructionOp, isa: IsaDatabase,
                      layout: KernelLayout | None = None) -> Match:
    """Select the database form of an instruction op (raises VerifyError)."""
    return _cached_match(op, isa, layout, _match_cache(isa), _match_key(op, layout))


def check_instruction(op: InstructionOp, isa: IsaDatabase,
                      layout: KernelLayout | None = None) -> Match:
    """Full check of an instruction op: form, operands, modifiers, results."""
    return check_instruction_keyed(op, isa, layout)[0]


def check_instruction_keyed(op: InstructionOp, isa: IsaDatabase,
                            layout: KernelLayout | None) -> tuple[Match, tuple | None]:
    """`check_instruction`, also returning the op's exact match key (None: uncacheable)."""
    cache = _match_cache(isa)
    key = _match_key(op, layout)
    match = _cached_match(op, isa, layout, cache, key)
    results = tuple(type_key(r.type) for r in op.results)
    checked = (key, results) if key is not None and None not in results else None
    if checked is not None and checked in cache.results_ok:
        return match, key
    try:
        check_results(match, [a.type for a in op.args], [r.type for r in op.outs])
    except MatchError as err:
        raise error_at(op, err.message) from None
    if checked is not None:
        cache.results_ok.add(checked)
    return match, key


def check_branch(op: BranchOp, isa: IsaDatabase) -> None:
    """A branch names a label-taking instruction; conditional ones also name the next block."""
    try:
        inst, _suffix = resolve(isa, op.mnemonic_text)
    except MatchError as err:
        raise error_at(op, err.message) from None
    if not any(s.syntax == "label" for f in inst.forms for s in f.operands):
        raise error_at(op, f"{inst.mnemonic} does not take a branch target; write it as an "
                           "instruction op (e.g. amdgcn.sopp)")
    conditional = "cond_branch" in inst.flags
    if conditional and op.fallthrough is None:
        raise error_at(op, "a conditional branch names its fall-through block: "
                           f"amdgcn.branch {op.mnemonic_text} ^target fallthrough ^next")
    if not conditional and op.fallthrough is not None:
        raise error_at(op, f"{inst.mnemonic} is unconditional: it has no fall-through block")
    if op.fallthrough is not None:
        check_next_block(op, op.fallthrough, "fall-through block")


def check_next_block(op: Operation, dest: Block, what: str) -> None:
    """`dest` must be the block right after the op's block (code falls through into it)."""
    block = op.parent_block()
    if block is None or block.next_block is not dest:
        raise error_at(op, f"the {what} must be the next block: execution continues with the "
                           "next instruction in memory")


def check_wait(op: WaitOp) -> None:
    """Every token of an amdgcn.wait comes from a memory instruction (or is carried: a loop's
    or an scf.if's token, a token variable; see ir.loops)."""
    for k, tok in enumerate(op.tokens):
        owner = tok.owner
        if isinstance(owner, InstructionOp) and owner.token is tok:
            continue
        if isinstance(tok, BlockArgument) and isinstance(owner.parent_op(), STRUCTURED_OPS):
            continue  # (scf.for's iter_arg: owner is the body block)
        if isinstance(owner, (*STRUCTURED_OPS, *TOKEN_VAR_OPS)):
            continue
        raise error_at(op, f"operand #{k} is not the token result of a memory instruction")


_ABI_WIDTH = {WorkgroupIdOp: 1, WorkitemIdOp: 1}
_INSTRUCTION_CLASSES = frozenset(INSTRUCTION_OPS)


def check_abi_value(op: Operation, layout: KernelLayout) -> None:
    """An ABI value's type is its ABI register (or a relocatable value of that shape)."""
    t = op.results[0].type
    want = layout.abi_register(op)
    assert want is not None
    if not isinstance(t, RegisterType) or t.width != want.width or type(t) is not type(want):
        raise error_at(op, f"the ABI delivers this input in {want.asm()}: the type must be "
                           f"{type_text(want)}, got {type_text(t)}")
    if t.is_fixed and t.first != want.first:
        enabled = [n for n in ("dispatch_ptr", "queue_ptr", "kernarg_ptr", "dispatch_id")
                   if getattr(layout.abi, n)]
        wg = [d for d, on in zip("xyz", layout.abi.workgroup_ids) if on]
        raise error_at(op, f"the ABI delivers this input in {want.asm()} (user SGPRs: "
                           f"{', '.join(enabled) or 'none'}; workgroup ids: "
                           f"{', '.join(wg) or 'none'}), but the type says {t.asm()}")


__all__ = [
    "USER_SGPR_OPS",
    "BuiltOps",
    "VerifiedFacts",
    "amdgcn_modules",
    "check_instruction",
    "check_instruction_keyed",
    "check_wait",
    "error_at",
    "has_relocatable",
    "match_instruction",
    "verify_fragment",
    "verify_kernel",
    "verify_module",
]
