"""`lower-upstream`: upstream MLIR kernels (gpu, arith, vector, memref, scf, func and amdgpu
dialects) -> amdgcn IR with relocatable registers.

    asterism compile k.mlir                       # implied pipeline: lower-upstream,auto
    asterism opt --pipeline lower-upstream k.mlir # the amdgcn IR before allocation

Every `gpu.func ... kernel` of every `gpu.module` becomes an `amdgcn.kernel` of an
`amdgcn.module` of the same name, written through a KernelBuilder; `amdgcn.module`s already in
the input are left as they are. Kernel arguments come from the signature (a memref is a global
buffer pointer, a scalar a by-value argument), the workgroup size from `known_block_size`
(default 64x1x1). Values the same in every lane live in SGPRs, the others in VGPRs (see
asterism.passes.upstream_values for the representation); memrefs are accessed through buffer
resources whose num_records is the memref's size in bytes, so an out-of-range access reads 0
and drops writes as the hardware does. Structured control flow becomes branches: `scf.for`
needs uniform bounds (a scalar loop counter), `scf.if` on a uniform condition branches, on a
per-lane condition masks EXEC. `gpu.barrier` waits for all outstanding memory operations then
`s_barrier`s; `amdgpu.lds_barrier` waits for LDS only. Nothing is removed as dead code.

Ops outside the supported set (docs/upstream_mlir.md) are an error naming the op, its location
and, where it helps, what is supported.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerType,
    MemRefType,
    StringAttr,
    i32,
)
from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.ir import Block, Operation, SSAValue

from asterism.errors import VerifyError
from asterism.passes.upstream_values import (
    LV,
    LoweringError,
    MemInfo,
    const_lv,
    fail,
    op_location,
    reg_count,
    signed32,
    type_bits,
    type_name,
)

DEFAULT_TARGET = "gfx942"
DEFAULT_BLOCK = (64, 1, 1)
# dword3 of a raw buffer resource on gfx9: DST_SEL_XYZW = XYZW, DATA_FORMAT = 32 (as LLVM).
RSRC_WORD3 = 0x00027000
HANDLERS: dict[str, object] = {}


def handles(*names: str):
    """Decorator: `fn(lowering, op)` lowers the ops named `names`."""

    def wrap(fn):
        for name in names:
            HANDLERS[name] = fn
        return fn

    return wrap


class KernelLowering:
    """Lowers one gpu.func kernel through a KernelBuilder."""

    def __init__(self, func_op, kb, target: str):
        self.func = func_op
        self.kb = kb
        self.target = target
        self.vals: dict[SSAValue, LV] = {}
        self.block_size = _block_size(func_op)
        self.block_known = _block_size(func_op, None) is not None
        self.functions: dict[str, Operation] = {}
        self.inline_frames: list[list[LV]] = []  # results of the func.call being inlined
        self.loops: list[dict] = []  # enclosing scf.for frames (iter registers, block args)
        self._sgpr_cache: dict[tuple, SSAValue] = {}
        self._call_depth = 0
        self._ptrs: dict[str, SSAValue] = {}

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
        into when that is safe (so accumulators stay in place), else None (a new register)."""
        hint = self._yield_hint(result)
        if hint is not None and hint.type.KIND == file:
            return hint
        return None

    def _yield_hint(self, result: SSAValue):
        if not self.loops or len(list(result.uses)) != 1:
            return None
        use = next(iter(result.uses))
        frame = self.loops[-1]
        if use.operation is not frame["yield"]:
            return None
        arg = frame["args"][use.index]
        op = result.owner
        if not isinstance(op, Operation) or op.parent_block() is not frame["body"]:
            return None
        # The iter register is overwritten here: nothing may read the old value later on.
        order = {o: k for k, o in enumerate(frame["body"].ops)}
        here = order[op]
        for u in arg.uses:
            top = u.operation
            while top.parent_block() is not frame["body"]:
                top = top.parent_op()
            if order[top] > here and top is not frame["yield"]:
                return None
        if any(v is not result and frame["yield"].operands[k] is arg
               for k, v in enumerate(frame["yield"].operands)):
            return None
        if frame["taken"][use.index]:
            return None
        frame["taken"][use.index] = True
        return frame["regs"][use.index]

    # --- kernel -------------------------------------------------------------------------

    def lower(self) -> None:
        """Declare the arguments, then lower the body."""
        block = self.func.body.blocks[0]
        ninputs = len(self.func.function_type.inputs.data)
        args = [self._argument(arg, k) for k, arg in enumerate(block.args[:ninputs])]
        for arg, lv in zip(block.args, args):  # descriptors after all the kernarg loads
            if lv.kind == "m":
                lv.value.rsrc = self._resource(lv.value.rsrc, lv.value.nbytes)
            self.set(arg, lv)
        self._workgroup_attributions(block.args[ninputs:])
        self.lower_block(block)

    def _argument(self, arg: SSAValue, k: int) -> LV:
        name = arg.name_hint or f"arg{k}"
        t = arg.type
        kb = self.kb
        if isinstance(t, MemRefType):
            info = self.memref_info(t, self.func, "global")
            karg = kb.arg_buffer(name, _dtype(t.element_type))
            info.rsrc = kb.s_load_dwordx2(None, kb.kernarg_ptr(), karg)  # the pointer, for now
            return LV("m", t, info)
        if type_bits(t) > 64 or reg_count(t) > 2:
            raise fail(self.func, f"argument {k} of type {t} is not supported (memrefs and "
                                  "scalars of at most 64 bits)")
        dtype = "i64" if isinstance(t, IndexType) else _dtype(t)
        if dtype == "i1":
            dtype = "i32"
        karg = kb.arg_value(name, dtype)
        if reg_count(t) == 2:
            return LV("s", t, kb.s_load_dwordx2(None, kb.kernarg_ptr(), karg))
        if dtype == "i64":  # index: the low 32 bits
            return LV("s", t, kb.sub(kb.s_load_dwordx2(None, kb.kernarg_ptr(), karg), 0))
        return LV("s", t, kb.s_load_dword(None, kb.kernarg_ptr(), karg))

    def _resource(self, ptr: SSAValue, nbytes: int) -> SSAValue:
        """A raw buffer resource for the 64-bit pointer `ptr`: stride 0, num_records =
        `nbytes`, so accesses past the end read 0 and write nothing (hardware clamping)."""
        kb = self.kb
        lo, hi = kb.split(ptr)
        hi16 = kb.s_and_b32(None, hi, 0xFFFF)
        return kb.join(kb.s_mov_b32(None, lo), hi16, kb.s_mov_b32(None, signed32(nbytes)),
                       kb.s_mov_b32(None, signed32(RSRC_WORD3)), align=4)

    def _workgroup_attributions(self, args) -> None:
        for k, arg in enumerate(args):
            t = arg.type
            if not isinstance(t, MemRefType):
                raise fail(self.func, f"attribution {k} is not a memref")
            info = self.memref_info(t, self.func, "workgroup")
            alloc = self.kb.lds_alloc(arg.name_hint or f"wg{k}", info.nbytes,
                                      max(4, info.elem_bytes))
            info.lds_offset = alloc.offset
            self.set(arg, LV("m", t, info))

    def memref_info(self, t: MemRefType, op: Operation, space: str) -> MemInfo:
        """Shape, strides and size of a static memref (identity or strided layout)."""
        from asterism.ir.upstream import memref_space

        shape = list(t.get_shape())
        if any(d < 0 for d in shape):
            raise fail(op, f"memref {t} has a dynamic size; only static shapes are supported")
        where = memref_space(t)
        if where not in ("global", "workgroup", "fat_raw_buffer"):
            raise fail(op, f"memref {t} is in {where}; global and workgroup memory are "
                           "supported")
        strides = []
        acc = 1
        for d in reversed(shape):
            strides.insert(0, acc)
            acc *= d
        layout = getattr(t, "layout", None)
        if layout is not None and type(layout).__name__ not in ("NoneAttr",):
            get = getattr(layout, "get_strides", None)
            if get is not None and get() is not None and list(get()) != strides:
                raise fail(op, f"memref {t}: only the identity layout is supported")
        info = MemInfo(t, "workgroup" if where == "workgroup" else "global",
                       strides=strides)
        info.nbytes = acc * info.elem_bytes
        return info

    # --- blocks and ops -----------------------------------------------------------------

    def lower_block(self, block: Block) -> None:
        """Lower the ops of an upstream block in order."""
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        """Lower one op through its handler."""
        handler = HANDLERS.get(op.name)
        if handler is None:
            raise fail(op, "not supported by asterism's upstream lowering (see "
                           "docs/upstream_mlir.md for the supported ops)")
        try:
            handler(self, op)
        except LoweringError as err:
            if err.location is None:
                raise fail(op, err.message) from None
            raise
        except VerifyError as err:
            raise fail(op, f"lowering failed: {err.message}") from None
        except (AttributeError, KeyError, ValueError, TypeError, IndexError) as err:
            # an op shape the handlers do not expect: still an error naming the op
            raise fail(op, f"cannot be lowered ({type(err).__name__}: {err})") from None


def _block_size(func_op, default=DEFAULT_BLOCK) -> tuple[int, int, int]:
    size = func_op.properties.get("known_block_size") or func_op.attributes.get(
        "known_block_size") or func_op.attributes.get("gpu.known_block_size")
    if isinstance(size, DenseArrayBase):
        vals = tuple(int(v) for v in size.get_values())
        return (vals + (1, 1, 1))[:3]  # type: ignore[return-value]
    return default


def _dtype(t) -> str:
    name = type_name(t)
    if name == "index":
        return "i64"
    if name.startswith("i") and name not in ("i8", "i16", "i32", "i64"):
        return "i32"
    return name if name in ("i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64") else ""


# ----------------------------------------------------------------------------- module


def _target_of(module: BuiltinModuleOp, option: str | None) -> str:
    if option:
        return option
    attr = module.attributes.get("asterism.target")
    if isinstance(attr, StringAttr):
        return attr.data
    return DEFAULT_TARGET


SUPPORTED_CHIPS = ("gfx942", "gfx950")


def _module_target(gpu_module, default: str) -> str:
    """The chip of the gpu.module's `#rocdl.target` (the first one that names a chip), else
    `default`; `--target` / `api.retarget` / the pass option override it."""
    from asterism.ir.upstream import RocdlTargetAttr

    for attr in (gpu_module.targets.data if gpu_module.targets is not None else ()):
        if isinstance(attr, RocdlTargetAttr) and attr.chip is not None:
            if attr.chip not in SUPPORTED_CHIPS:
                raise fail(gpu_module, f"#rocdl.target chip \"{attr.chip}\" is not supported "
                                       f"(asterism compiles for {', '.join(SUPPORTED_CHIPS)})")
            return attr.chip
    return default


def lower_gpu_module(gpu_module, target: str):
    """An amdgcn.module holding the kernels of a gpu.module."""
    from asterism.builder import ModuleBuilder
    from asterism.ir.upstream import GpuFuncOp
    from asterism.passes import upstream_amdgpu, upstream_ops  # noqa: F401  (handlers)

    mb = ModuleBuilder(gpu_module.sym_name.data, target)
    funcs = {}
    for op in gpu_module.body.ops:
        if isinstance(op, GpuFuncOp) or op.name == "func.func":
            funcs[op.sym_name.data] = op
    for op in gpu_module.body.ops:
        if isinstance(op, GpuFuncOp) and op.is_kernel:
            kb = mb.kernel(op.sym_name.data, workgroup_size=_block_size(op))
            lowering = KernelLowering(op, kb, target)
            lowering.functions = funcs
            lowering.lower()
        elif not isinstance(op, GpuFuncOp) and op.name != "func.func":
            raise fail(op, "not supported inside a gpu.module (gpu.func and func.func are)")
    if not mb.kernels:
        raise fail(gpu_module, "holds no `gpu.func ... kernel`")
    top = mb.finish()
    return top.body.blocks[0].first_op


def lower_upstream(module: BuiltinModuleOp, target: str | None = None) -> None:
    """Replace every gpu.module by the amdgcn.module of its kernels."""
    from asterism.ir.upstream import GpuModuleOp

    chosen = _target_of(module, target)
    explicit = bool(target) or "asterism.target" in module.attributes
    for op in list(module.body.blocks[0].ops):
        if isinstance(op, GpuModuleOp):
            new = lower_gpu_module(op, chosen if explicit else _module_target(op, chosen))
            new.detach()
            module.body.blocks[0].insert_op_before(new, op)
            op.detach()
            op.erase(safe_erase=False)
        elif op.name.split(".")[0] not in ("amdgcn", "func"):
            raise fail(op, "not supported at the top level (gpu.module and amdgcn.module are)")
    if "gpu.container_module" in module.attributes:
        del module.attributes["gpu.container_module"]
    if "asterism.target" in module.attributes:
        del module.attributes["asterism.target"]


def has_upstream(module: Operation) -> bool:
    """Whether a module holds upstream kernels (a gpu.module) still to lower."""
    from asterism.ir.upstream import GpuModuleOp

    return any(isinstance(op, GpuModuleOp) for op in module.walk())


__all__ = ["KernelLowering", "handles", "has_upstream", "lower_upstream", "op_location",
           "const_lv", "i32", "IntegerType"]
