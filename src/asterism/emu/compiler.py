"""Pre-decoding: each instruction becomes a Python closure once, before the run.

`compile_program` turns decoded instructions (anything with `.address`, `.size`, `.inst`) into
`Op`s: a function `run(group) -> next index` with its operand accessors resolved, plus an
`OpInfo` (text, registers read and written, counters) for the sanitizer, the hazard checker
and error messages. Semantics live in the `sem_*` modules, which register builders here by
mnemonic. An instruction without a builder compiles to an op that raises
`UnsupportedInstruction` when (and only when) it is executed.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from asterism.emu.core import (
    EXEC,
    KEY_SGPR,
    M0,
    VCC,
    Group,
    reg_keys,
)
from asterism.emu.errors import EmulatorFault, UnsupportedInstruction
from asterism.isa import Form, Instruction, get_isa
from asterism.isa.database import SUFFIXES
from asterism.isa.facts import def_is_read, implicit_names
from asterism.isa.syntax import INLINE_FLOATS, INV_2PI_BITS, NAMED_PAIR_CODES, NAMED_SCALAR_CODES
from asterism.mc.inst import Inst
from asterism.mc.operands import FloatImm, Imm, Label, Literal, Mod, Off, Operand, Reg, Special
from asterism.mc.printer import format_inst
from asterism.target.hazards import KEY_SCC

Op = Callable[[Group], int]
Builder = Callable[["OpInfo"], Op]

BUILDERS: dict[str, Builder] = {}


def builder(*mnemonics: str) -> Callable[[Builder], Builder]:
    """Register a semantics builder for the given base mnemonics."""
    def deco(fn: Builder) -> Builder:
        for m in mnemonics:
            BUILDERS[m] = fn
        return fn
    return deco


class ProgramInst(Protocol):
    """What the emulator needs of a decoded instruction (mc.decoder.DecodedInst has it)."""

    address: int
    size: int
    inst: Inst


@dataclass
class PlainInst:
    """A ProgramInst built by hand (address, size, inst)."""

    address: int
    size: int
    inst: Inst


class CompileError(Exception):
    """An instruction whose operands the emulator cannot set up (raised when executed)."""


@dataclass
class OpInfo:
    """Everything known about one instruction before the run."""

    index: int
    address: int  # absolute: code base + offset
    offset: int  # byte offset in the program
    size: int
    inst: Inst
    target: str
    isa: Instruction | None
    form: Form | None
    mnemonic: str  # base mnemonic (lower case, no _e32/_e64/_dpp/_sdwa)
    suffix: str
    next_index: int
    index_of: dict[int, int]  # program byte offset -> instruction index
    agpr_base: int = 256
    uses: frozenset[int] = frozenset()
    defs: frozenset[int] = frozenset()
    counters: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    _text: str | None = None

    @property
    def text(self) -> str:
        """The instruction as disassembled text (printer), or its mnemonic as a fallback."""
        if self._text is None:
            try:
                self._text = format_inst(self.inst)
            except Exception:
                ops = ", ".join(str(o) for o in self.inst.operands)
                self._text = f"{self.inst.mnemonic} {ops}".strip()
        return self._text

    @property
    def enc(self) -> str:
        """The form's encoding name (VOP1, VOP3, DPP, SDWA, SMEM, ...)."""
        return self.form.enc if self.form is not None else ""

    @property
    def mods(self) -> dict[str, object]:
        """The instruction's modifiers."""
        return self.inst.modifiers

    def op(self, name: str) -> Operand | None:
        """The operand in the form slot called `name` (None if absent)."""
        if self.form is None:
            return None
        for spec, operand in zip(self.form.operands, self.inst.operands, strict=False):
            if spec.name == name:
                return operand
        return None

    def has(self, name: str) -> bool:
        """True if the form has an operand slot called `name`."""
        return self.form is not None and any(s.name == name for s in self.form.operands)

    def spec(self, name: str):
        """The OperandSpec of slot `name` (None if absent)."""
        if self.form is None:
            return None
        for spec in self.form.operands:
            if spec.name == name:
                return spec
        return None

    def branch_index(self, simm16: int) -> int | None:
        """Instruction index of the branch target pc + 4 + 4 * simm16 (None if not one)."""
        return self.index_of.get(self.offset + 4 + 4 * simm16)

    def fault(self, message: str, **where) -> EmulatorFault:
        """An EmulatorFault located at this instruction."""
        return EmulatorFault(message, pc=self.address, inst=self.text, **where)


def base_mnemonic(mnemonic: str) -> tuple[str, str]:
    """(base, suffix) of a printed mnemonic: v_add_f32_e64 -> (v_add_f32, _e64)."""
    m = mnemonic.lower()
    for suf in SUFFIXES:
        if m.endswith(suf):
            return m[: -len(suf)], suf
    return m, ""


# ---------------------------------------------------------------------------- registers

def special_index(name: str) -> int | None:
    """SGPR-file index of a named scalar register (vcc -> 106, exec_hi -> 127, m0 -> 124)."""
    if name in NAMED_PAIR_CODES and NAMED_PAIR_CODES[name] < 128:
        return NAMED_PAIR_CODES[name]
    code = NAMED_SCALAR_CODES.get(name)
    if code is not None and code < 128:
        return code
    return None


def operand_keys(op: Operand | None, width: int = 1) -> list[int]:
    """Register keys an operand names (empty for constants)."""
    if isinstance(op, Mod):
        op = op.operand
    if isinstance(op, Reg):
        return list(reg_keys(op.kind, op.index, op.count))
    if isinstance(op, Special):
        if op.name in ("scc", "src_scc"):
            return [KEY_SCC]
        idx = special_index(op.name)
        if idx is not None:
            return [KEY_SGPR + idx + k for k in range(op.count)]
        if op.name in ("src_execz", "execz"):
            return [KEY_SGPR + EXEC, KEY_SGPR + EXEC + 1]
        if op.name in ("src_vccz", "vccz"):
            return [KEY_SGPR + VCC, KEY_SGPR + VCC + 1]
    return []


IMPLICIT_KEYS = {
    "exec": (KEY_SGPR + EXEC, KEY_SGPR + EXEC + 1),
    "vcc": (KEY_SGPR + VCC, KEY_SGPR + VCC + 1),
    "m0": (KEY_SGPR + M0,),
    "scc": (KEY_SCC,),
}


# ---------------------------------------------------------------------------- constants

def _f16_bits(v: float) -> int:
    return struct.unpack("<H", struct.pack("<e", v))[0]


def _f32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


def _f64_bits(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def const_bits(op: Operand, kind: str, bits: int = 32, signed_literal: bool = False) -> int:
    """The bits a constant operand delivers to an operand of type `kind` and width `bits`.

    kind is "f16", "bf16", "f32", "f64" or "int". Integer inline constants are integers
    (sign-extended to the width) even for float operands; float inline constants are the
    value in the operand's float type (1/(2*pi) has fixed per-type bits); a 32-bit literal
    feeds the high half of an f64 operand and is zero- or sign-extended for 64-bit integers.
    """
    mask = (1 << bits) - 1
    if isinstance(op, Imm):
        return op.value & mask
    if isinstance(op, FloatImm):
        v = op.value
        inv2pi = abs(v - INLINE_FLOATS[248]) < 1e-7
        if kind in ("f16",) or (kind == "int" and bits == 16):
            return INV_2PI_BITS["f16"] if inv2pi else _f16_bits(v)
        if kind == "bf16":
            return INV_2PI_BITS["bf16"] if inv2pi else _f32_bits(v) >> 16
        if kind == "f64" or bits == 64:
            return INV_2PI_BITS["f64"] if inv2pi else _f64_bits(v)
        return INV_2PI_BITS["f32"] if inv2pi else _f32_bits(v)
    if isinstance(op, Literal):
        lit = op.bits & 0xFFFFFFFF
        if bits == 64:
            if kind == "f64":
                return lit << 32
            if signed_literal and lit & 0x80000000:
                return lit | 0xFFFFFFFF00000000
            return lit
        return lit & mask
    raise CompileError(f"not a constant operand: {op}")


def is_const(op: Operand | None) -> bool:
    """True for an inline constant or literal."""
    if isinstance(op, Mod):
        op = op.operand
    return isinstance(op, Imm | FloatImm | Literal)


# ---------------------------------------------------------------------------- scalar access

def sread(info: OpInfo, op: Operand, width: int = 1, kind: str = "int",
          signed_literal: bool = False) -> Callable[[Group], np.ndarray]:
    """Reader of a scalar source: returns (n,) uint32 (width 1) or (n,) uint64 (width 2)."""
    if isinstance(op, Mod):
        op = op.operand
    if is_const(op):
        bits = const_bits(op, kind, 32 * width, signed_literal)
        c = np.uint64(bits) if width == 2 else np.uint32(bits)
        if width == 2:
            return lambda g: np.full(g.n, c, np.uint64)
        return lambda g: np.full(g.n, c, np.uint32)
    if isinstance(op, Special):
        name = op.name
        if name in ("scc", "src_scc"):
            return lambda g: g.scc.astype(np.uint32) if width == 1 else g.scc.astype(np.uint64)
        if name in ("src_execz", "execz"):
            return lambda g: (g.s64[:, EXEC // 2] == 0).astype(np.uint32)
        if name in ("src_vccz", "vccz"):
            return lambda g: (g.s64[:, VCC // 2] == 0).astype(np.uint32)
        if name in ("src_shared_base", "shared_base", "src_private_base", "private_base",
                    "src_shared_limit", "shared_limit", "src_private_limit", "private_limit"):
            which = name.replace("src_", "")

            def aperture(g: Group) -> np.ndarray:
                base = g.ctx.shared_base if "shared" in which else g.ctx.private_base
                value = base if "base" in which else base + (1 << 32) - 1
                if width == 2:
                    return np.full(g.n, np.uint64(value), np.uint64)
                return np.full(g.n, np.uint32(value >> 32), np.uint32)
            return aperture
        if name in ("src_pops_exiting_wave_id", "pops_exiting_wave_id"):
            return lambda g: np.zeros(g.n, np.uint64 if width == 2 else np.uint32)
        idx = special_index(name)
        if idx is None:
            raise CompileError(f"reading {name} is not supported by the emulator")
        return _sgpr_reader(idx, width)
    if isinstance(op, Reg) and op.kind in ("s", "ttmp"):
        idx = op.index + (108 if op.kind == "ttmp" else 0)
        return _sgpr_reader(idx, width)
    raise CompileError(f"operand {op} is not a scalar source")


def _sgpr_reader(idx: int, width: int) -> Callable[[Group], np.ndarray]:
    if width == 2:
        if idx % 2:
            raise CompileError(f"64-bit scalar operand at odd register s{idx}")
        q = idx // 2
        return lambda g: g.s64[:, q]
    return lambda g: g.s[:, idx]


def swrite(info: OpInfo, op: Operand, width: int = 1) -> Callable[[Group, np.ndarray], None]:
    """Writer of a scalar destination (value: (n,) uint32, or uint64 for width 2)."""
    if isinstance(op, Special):
        if op.name in ("scc", "src_scc"):
            def wscc(g: Group, value: np.ndarray) -> None:
                g.scc = value.astype(bool)
            return wscc
        idx = special_index(op.name)
        if idx is None:
            raise CompileError(f"writing {op.name} is not supported by the emulator")
    elif isinstance(op, Reg) and op.kind in ("s", "ttmp"):
        idx = op.index + (108 if op.kind == "ttmp" else 0)
    elif isinstance(op, Imm | Off):
        return lambda g, value: None  # null destination: discarded
    else:
        raise CompileError(f"operand {op} is not a scalar destination")
    touches_exec = idx <= EXEC + 1 and idx + width > EXEC
    if width == 2:
        if idx % 2:
            raise CompileError(f"64-bit scalar destination at odd register s{idx}")
        q = idx // 2
        if touches_exec:
            def wexec64(g: Group, value: np.ndarray) -> None:
                g.s64[:, q] = value
                g.refresh_exec()
            return wexec64

        def w64(g: Group, value: np.ndarray) -> None:
            g.s64[:, q] = value
        return w64
    if touches_exec:
        def wexec(g: Group, value: np.ndarray) -> None:
            g.s[:, idx] = value
            g.refresh_exec()
        return wexec

    def w32(g: Group, value: np.ndarray) -> None:
        g.s[:, idx] = value
    return w32


# ---------------------------------------------------------------------------- compile

def unsupported_op(info: OpInfo, why: str) -> Op:
    """An op that raises UnsupportedInstruction naming the instruction when executed."""
    def run(g: Group) -> int:
        raise UnsupportedInstruction(f"the emulator does not implement {info.mnemonic}: {why}",
                                     pc=info.address, inst=info.text)
    return run


def error_op(info: OpInfo, exc: Exception) -> Op:
    """An op that raises a compile-time problem when executed."""
    def run(g: Group) -> int:
        raise EmulatorFault(f"cannot execute: {exc}", pc=info.address, inst=info.text)
    return run


def _load_semantics() -> None:
    # The sem_* modules register their builders on import.
    from asterism.emu import sem_branch, sem_cvt, sem_lds, sem_mem, sem_mfma, sem_salu, sem_valu

    del sem_branch, sem_cvt, sem_lds, sem_mem, sem_mfma, sem_salu, sem_valu


def make_infos(insts: Sequence[ProgramInst], target: str, code_base: int = 0,
               agpr_base: int = 256) -> list[OpInfo]:
    """OpInfo for every instruction (address-sorted; offsets relative to the first)."""
    isa = get_isa(target)
    if not insts:
        return []
    start = insts[0].address
    index_of = {p.address - start: i for i, p in enumerate(insts)}
    infos = []
    for i, p in enumerate(insts):
        inst = p.inst
        base, suffix = base_mnemonic(inst.mnemonic)
        resolved = isa.resolve(inst.mnemonic)
        isa_inst = resolved[0] if resolved else None
        if isa_inst is not None:
            base = isa_inst.mnemonic
        info = OpInfo(index=i, address=code_base + p.address - start, offset=p.address - start,
                      size=p.size, inst=inst, target=isa.target, isa=isa_inst, form=inst.form,
                      mnemonic=base, suffix=suffix, next_index=i + 1, index_of=index_of,
                      agpr_base=agpr_base)
        _fill_keys(info)
        infos.append(info)
    return infos


def _fill_keys(info: OpInfo) -> None:
    uses: set[int] = set()
    defs: set[int] = set()
    form = info.form
    if form is not None:
        for spec, op in zip(form.operands, info.inst.operands, strict=False):
            keys = operand_keys(op)
            if spec.role == "def":
                defs.update(keys)
                if def_is_read(spec):
                    uses.update(keys)
            else:
                uses.update(keys)
    if info.isa is not None:
        imp_uses, imp_defs = implicit_names(info.isa)
        for name in imp_uses:
            uses.update(IMPLICIT_KEYS.get(name, ()))
        for name in imp_defs:
            defs.update(IMPLICIT_KEYS.get(name, ()))
        counters = (form.counters if form is not None and form.counters else info.isa.counters)
        info.counters = tuple(counters)
    info.uses = frozenset(uses)
    info.defs = frozenset(defs)


def build_op(info: OpInfo) -> Op:
    """The op for one instruction (an unsupported/error op if it cannot be built)."""
    _load_semantics()
    if info.isa is None or info.form is None:
        return unsupported_op(info, "not an instruction of " + info.target)
    fn = BUILDERS.get(info.mnemonic)
    if fn is None:
        return unsupported_op(info, "no semantics yet")
    try:
        return fn(info)
    except CompileError as exc:
        return error_op(info, exc)


def label_free(op: Operand) -> bool:
    """True unless the operand is an unresolved label (programs must be decoded code)."""
    return not isinstance(op, Label)
