"""Scalar operand machinery: the bits a constant delivers, scalar source readers and
destination writers (the scalar counterpart of `vops.py`, which reads constants through here).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from asterism.emu.core import EXEC, VCC, Group
from asterism.emu.errors import CompileError
from asterism.emu.info import OpInfo, special_index
from asterism.isa.syntax import INLINE_FLOATS, INV_2PI_BITS
from asterism.mc.operands import FloatImm, Imm, Literal, Mod, Off, Operand, Reg, Special

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

