"""Vector operand machinery: typed source readers and destination writers for VALU ops.

A source reader turns an operand (VGPR, AGPR, SGPR, special register, inline constant or
literal) plus its modifiers (neg/abs, SDWA select and sext, VOP3 op_sel, DPP lane
permutation) into a NumPy value of the requested kind, broadcastable to (waves, 64):
VGPRs give (n, 64) arrays, scalars give (n, 1), constants give NumPy scalars.

Kinds: u32 i32 f32 (32-bit), u16 i16 f16 bf16 (16-bit, bf16 is delivered as float32),
u64 i64 f64 (64-bit register pairs). A writer takes a value of its kind and stores it with
the EXEC mask (and DPP row/bank masks), handling 16-bit halves, SDWA destination selects
and 64-bit pairs. `clamp_omod` is the float output modifiers (clamp, omod) of a VALU or
conversion result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from asterism.emu.core import EXEC, LANES, VCC, Group
from asterism.emu.errors import CompileError
from asterism.emu.fp import apply_omod, bf16_to_f32, clamp01, f32_to_bf16
from asterism.emu.info import OpInfo, special_index
from asterism.emu.sops import const_bits, is_const
from asterism.mc.operands import Mod, Operand, Reg, Special

U16, U32, U64 = np.uint16, np.uint32, np.uint64
I16, I32, I64 = np.int16, np.int32, np.int64
F16, F32, F64 = np.float16, np.float32, np.float64

KIND_BITS = {"u32": 32, "i32": 32, "f32": 32, "b32": 32, "u16": 16, "i16": 16, "f16": 16,
             "bf16": 16, "b16": 16, "u64": 64, "i64": 64, "f64": 64, "b64": 64}
FLOAT_KINDS = {"f16", "f32", "f64", "bf16"}
_VIEW = {"u32": U32, "b32": U32, "i32": I32, "f32": F32, "u16": U16, "b16": U16, "i16": I16,
         "f16": F16, "u64": U64, "b64": U64, "i64": I64, "f64": F64}
_CONST_KIND = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}

Reader = Callable[[Group], object]

LANE = np.arange(LANES)


def vreg_row(info: OpInfo, op: Reg) -> int:
    """Row of a VGPR/AGPR in the group's register array."""
    if op.kind == "v":
        return op.index
    if op.kind == "a":
        return info.agpr_base + op.index
    raise CompileError(f"{op} is not a vector register")


# ---------------------------------------------------------------------------- raw fetch

def raw_reader(info: OpInfo, op: Operand, bits: int) -> Reader:
    """Reader of an operand's raw bits: uint32 (bits 32/16) or uint64 (bits 64)."""
    if isinstance(op, Mod):
        op = op.operand
    if isinstance(op, Reg) and op.kind in ("v", "a"):
        row = vreg_row(info, op)
        if bits == 64:
            return lambda g: g.v[row].astype(U64) | (g.v[row + 1].astype(U64) << U64(32))
        return lambda g: g.v[row]
    if isinstance(op, Reg) and op.kind in ("s", "ttmp"):
        idx = op.index + (108 if op.kind == "ttmp" else 0)
        return _sgpr(idx, bits)
    if isinstance(op, Special):
        name = op.name
        if name in ("scc", "src_scc"):
            return lambda g: g.scc[:, None].astype(U64 if bits == 64 else U32)
        if name in ("src_execz", "execz"):
            return lambda g: (g.s64[:, EXEC // 2] == 0)[:, None].astype(U32)
        if name in ("src_vccz", "vccz"):
            return lambda g: (g.s64[:, VCC // 2] == 0)[:, None].astype(U32)
        if name.replace("src_", "") in ("shared_base", "shared_limit", "private_base",
                                        "private_limit"):
            which = name.replace("src_", "")

            def aperture(g: Group):
                base = g.ctx.shared_base if "shared" in which else g.ctx.private_base
                value = base if "base" in which else base + (1 << 32) - 1
                return U64(value) if bits == 64 else U32(value >> 32)
            return aperture
        idx = special_index(name)
        if idx is None:
            raise CompileError(f"reading {name} in a VALU instruction is not supported")
        return _sgpr(idx, bits)
    raise CompileError(f"unsupported vector source operand {op}")


def _sgpr(idx: int, bits: int) -> Reader:
    if bits == 64:
        if idx % 2:
            raise CompileError(f"64-bit operand at odd SGPR s{idx}")
        q = idx // 2
        return lambda g: g.s64[:, q:q + 1]
    return lambda g: g.s[:, idx:idx + 1]


def const_value(op: Operand, kind: str, signed_literal: bool = False):
    """A constant operand as a NumPy scalar of `kind`."""
    bits = KIND_BITS[kind]
    ckind = _CONST_KIND.get(kind, "int")
    raw = const_bits(op.operand if isinstance(op, Mod) else op, ckind, bits, signed_literal)
    if kind == "bf16":
        return bf16_to_f32(np.array([raw & 0xFFFF], U32))[0]
    return np.array([raw], {16: U16, 32: U32, 64: U64}[bits]).view(_VIEW[kind])[0]


# ---------------------------------------------------------------------------- conversions

def to_kind(kind: str) -> Callable:
    """Raw bits (uint32/uint64, array or scalar) -> typed value."""
    bits = KIND_BITS[kind]
    if bits == 32:
        if kind in ("u32", "b32"):
            return _ident
        view = _VIEW[kind]
        return lambda x: x.view(view)
    if bits == 64:
        if kind in ("u64", "b64"):
            return _ident
        view = _VIEW[kind]
        return lambda x: x.view(view)
    if kind == "bf16":
        return lambda x: bf16_to_f32(x & U32(0xFFFF))
    view = _VIEW[kind]
    if kind in ("u16", "b16"):
        return lambda x: x.astype(U16)
    return lambda x: x.astype(U16).view(view)


def _ident(x):
    return x


def from_kind(kind: str) -> Callable:
    """Typed value -> raw bits: uint32 for 32/16-bit kinds (16 bits in the low half), uint64."""
    if kind == "f32":
        return lambda v: np.asarray(v, F32).view(U32)
    if kind in ("u32", "i32", "b32"):
        # (no copy of a uint32 result: the writer copies it into the register)
        return lambda v: np.asarray(v).astype(U32, copy=False)
    if kind == "f16":
        return lambda v: np.asarray(v, F16).view(U16).astype(U32)
    if kind in ("u16", "i16", "b16"):
        return lambda v: np.asarray(v).astype(U16).astype(U32)
    if kind == "bf16":
        return lambda v: f32_to_bf16(np.asarray(v, F32))
    if kind == "f64":
        return lambda v: np.asarray(v, F64).view(U64)
    return lambda v: np.asarray(v).astype(U64)


# ---------------------------------------------------------------------------- DPP / SDWA

def dpp_pattern(ctrl: int) -> tuple[np.ndarray, np.ndarray]:
    """(source lane per lane, valid) for a DPP control (GFX9/GFX90A encodings)."""
    lanes = np.arange(LANES)
    row = lanes & ~15
    valid = np.ones(LANES, bool)
    if ctrl <= 0xFF:
        sel = np.array([(ctrl >> (2 * k)) & 3 for k in range(4)])
        src = (lanes & ~3) + sel[lanes & 3]
    elif 0x101 <= ctrl <= 0x10F:  # row_shl
        n = ctrl & 0xF
        src = lanes + n
        valid = (lanes & 15) + n < 16
    elif 0x111 <= ctrl <= 0x11F:  # row_shr
        n = ctrl & 0xF
        src = lanes - n
        valid = (lanes & 15) >= n
    elif 0x121 <= ctrl <= 0x12F:  # row_ror
        n = ctrl & 0xF
        src = row + (((lanes & 15) - n) & 15)
    elif ctrl == 0x130:  # wave_shl1
        src = lanes + 1
        valid = lanes < 63
    elif ctrl == 0x134:  # wave_rol1
        src = (lanes + 1) % 64
    elif ctrl == 0x138:  # wave_shr1
        src = lanes - 1
        valid = lanes >= 1
    elif ctrl == 0x13C:  # wave_ror1
        src = (lanes - 1) % 64
    elif ctrl == 0x140:  # row_mirror
        src = row + 15 - (lanes & 15)
    elif ctrl == 0x141:  # row_half_mirror
        src = (lanes & ~7) + 7 - (lanes & 7)
    elif ctrl == 0x142:  # row_bcast15: last lane of the previous row
        src = row - 1
        valid = row >= 16
    elif ctrl == 0x143:  # row_bcast31: lane 31 to rows 2 and 3
        src = np.full(LANES, 31)
        valid = lanes >= 32
    elif 0x150 <= ctrl <= 0x15F:  # row_newbcast (GFX90A+): lane n of each row
        src = row + (ctrl & 0xF)
    else:
        raise CompileError(f"unsupported DPP control 0x{ctrl:x}")
    src = np.where(valid, src, 0).astype(np.intp)
    return src, valid


def dpp_row_bank(row_mask: int, bank_mask: int) -> np.ndarray:
    """(64,) bool: lanes the DPP row_mask / bank_mask allow to be written."""
    lanes = np.arange(LANES)
    return (((row_mask >> (lanes >> 4)) & 1) == 1) & (((bank_mask >> ((lanes >> 2) & 3)) & 1) == 1)


SDWA_SEL = {"BYTE_0": (0, 8), "BYTE_1": (8, 8), "BYTE_2": (16, 8), "BYTE_3": (24, 8),
            "WORD_0": (0, 16), "WORD_1": (16, 16), "DWORD": (0, 32)}


def sdwa_extract(sel: str, sext: bool) -> Callable:
    """Function selecting an SDWA byte/word of a uint32 value (zero or sign extended)."""
    shift, width = SDWA_SEL[sel]
    if width == 32:
        return _ident
    mask = U32((1 << width) - 1)
    if not sext:
        return lambda x: (x >> U32(shift)) & mask
    dt = np.int8 if width == 8 else np.int16
    return lambda x: ((x >> U32(shift)) & mask).astype(dt).astype(I32).view(U32)


# ---------------------------------------------------------------------------- sources

def source_slots(info: OpInfo) -> list[str]:
    """Names of the value-source slots of a VALU form, in order (src0, vsrc1/src1, src2)."""
    out = []
    for spec in info.form.operands:
        if spec.role != "use" or spec.fixed or spec.name in ("literal",):
            continue
        out.append(spec.name)
    return out


def make_src(info: OpInfo, slot: str, kind: str, pos: int, *, dpp_perm=None,
             op_sel_hi: bool = False, signed_literal: bool = False) -> Reader:
    """Typed reader of source `slot` (pos = 0, 1, 2 for the SDWA/op_sel/modifier bits)."""
    op = info.op(slot)
    if op is None:
        raise CompileError(f"{info.mnemonic} has no operand {slot}")
    neg = isinstance(op, Mod) and op.neg
    absm = isinstance(op, Mod) and op.abs
    sext = isinstance(op, Mod) and op.sext
    bits = KIND_BITS[kind]
    fkind = kind in FLOAT_KINDS
    if is_const(op):
        if info.enc == "SDWA":
            # SDWA selects apply to constants too (the 32-bit value is what gets selected).
            raw = np.uint32(const_bits(op.operand if isinstance(op, Mod) else op,
                                       _CONST_KIND.get(kind, "int"), 32))
            sel = info.mods.get(f"src{pos}_sel", "DWORD")
            val = to_kind(kind)(np.asarray(sdwa_extract(sel, sext)(raw)))
        else:
            val = const_value(op, kind, signed_literal)
            if bits == 16 and op_sel_hi:
                val = const_value(op, kind, signed_literal)
        if fkind:
            if absm:
                val = np.abs(val)
            if neg:
                val = -val
        return lambda g, v=val: v
    raw = raw_reader(info, op, 64 if bits == 64 else 32)
    if dpp_perm is not None:
        perm = dpp_perm
        base = raw
        raw = lambda g: base(g)[:, perm]
    if info.enc == "SDWA" and bits != 64:
        sel = info.mods.get(f"src{pos}_sel", "DWORD")
        ext = sdwa_extract(sel, sext)
        if sel != "DWORD":
            base2 = raw
            raw = lambda g: ext(base2(g))
    if bits == 16 and op_sel_hi:
        base3 = raw
        raw = lambda g: base3(g) >> U32(16)
    conv = to_kind(kind)
    if fkind and (neg or absm):
        if absm and neg:
            return lambda g: -np.abs(conv(raw(g)))
        if absm:
            return lambda g: np.abs(conv(raw(g)))
        return lambda g: -conv(raw(g))
    if conv is _ident:
        return raw
    return lambda g: conv(raw(g))


def op_sel_bits(info: OpInfo) -> tuple[int, ...]:
    """VOP3 op_sel bits (one per source, then the destination bit); zeros if absent."""
    sel = info.mods.get("op_sel")
    if not sel:
        return (0, 0, 0, 0)
    sel = tuple(sel)
    srcs = len(sel) - 1
    return tuple(sel[:srcs]) + (0,) * (3 - srcs) + (sel[-1],)


# ---------------------------------------------------------------------------- destinations

def store(g: Group, dst: np.ndarray, bits, mask) -> None:
    """Write `bits` into `dst` (n, 64) under `mask` (None: EXEC)."""
    if mask is None:
        if g.exec_full:
            dst[...] = bits
        else:
            np.copyto(dst, bits, where=g.exec)
    else:
        np.copyto(dst, bits, where=mask)


# 16-bit ops that keep the other half of the destination on GFX9 (the VOP3 op_sel-capable
# mad/fma family); every other 16-bit VALU result zeroes bits [31:16].
PRESERVE_HI16 = {"v_mad_f16", "v_mad_u16", "v_mad_i16", "v_fma_f16", "v_div_fixup_f16",
                 "v_mac_f16"}


def make_dst(info: OpInfo, kind: str, slot: str = "vdst") -> Callable[[Group, object, object],
                                                                      None]:
    """Writer of the destination slot for a value of `kind`: write(g, value, mask)."""
    op = info.op(slot)
    if not isinstance(op, Reg) or op.kind not in ("v", "a"):
        raise CompileError(f"destination {op} is not a vector register")
    row = vreg_row(info, op)
    conv = from_kind(kind)
    bits = KIND_BITS[kind]
    if bits == 64:
        def w64(g: Group, value, mask) -> None:
            b = conv(value)
            lo = (b & U64(0xFFFFFFFF)).astype(U32)
            hi = (b >> U64(32)).astype(U32)
            store(g, g.v[row], lo, mask)
            store(g, g.v[row + 1], hi, mask)
        return w64
    if info.enc == "SDWA" and "dst_sel" in info.mods:
        sel = info.mods.get("dst_sel", "DWORD")
        unused = info.mods.get("dst_unused", "UNUSED_PAD")
        shift, width = SDWA_SEL[sel]
        if width < 32:
            fmask = U32(((1 << width) - 1) << shift)

            def wsdwa(g: Group, value, mask) -> None:
                b = conv(value)
                field = (b << U32(shift)) & fmask
                if unused == "UNUSED_PRESERVE":
                    out = (g.v[row] & ~fmask) | field
                elif unused == "UNUSED_SEXT":
                    top = U32(shift + width - 1)
                    sign = ((field >> top) & U32(1)) == 1
                    high = ~U32((1 << (shift + width)) - 1)
                    out = np.where(sign, field | high, field)
                else:
                    out = field
                store(g, g.v[row], np.asarray(out, U32), mask)
            return wsdwa
    if bits == 16:
        hi = op_sel_bits(info)[3] == 1 if info.enc == "VOP3" else False
        preserve = info.mnemonic in PRESERVE_HI16 or hi
        if hi:
            def whi(g: Group, value, mask) -> None:
                store(g, g.v[row], (g.v[row] & U32(0xFFFF)) | (conv(value) << U32(16)), mask)
            return whi
        if preserve:
            def wlo(g: Group, value, mask) -> None:
                store(g, g.v[row], (g.v[row] & U32(0xFFFF0000)) | conv(value), mask)
            return wlo

    def w32(g: Group, value, mask) -> None:
        store(g, g.v[row], conv(value), mask)
    return w32


def lane_mask_reader(info: OpInfo, op: Operand) -> Reader:
    """Reader of a 64-bit lane mask operand (VCC or an SGPR pair): (n, 64) bool."""
    if isinstance(op, Mod):
        op = op.operand
    if is_const(op):
        bits = np.uint64(const_bits(op, "int", 64))
        m = ((bits >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(bool)
        return lambda g: np.broadcast_to(m, (g.n, 64))
    if isinstance(op, Special) and op.name in ("exec",):
        return lambda g: g.exec
    if isinstance(op, Special):
        idx = special_index(op.name)
    elif isinstance(op, Reg) and op.kind in ("s", "ttmp"):
        idx = op.index + (108 if op.kind == "ttmp" else 0)
    else:
        raise CompileError(f"{op} is not a lane mask")
    if idx is None or idx % 2:
        raise CompileError(f"{op} is not an aligned SGPR pair")
    q = idx // 2
    shifts = np.arange(64, dtype=np.uint64)
    return lambda g: ((g.s64[:, q:q + 1] >> shifts) & U64(1)).astype(bool)


def lane_mask_writer(info: OpInfo, op: Operand) -> Callable[[Group, np.ndarray], None]:
    """Writer of a 64-bit lane mask destination from (n, 64) bool (inactive lanes -> 0)."""
    from asterism.emu.core import mask_to_bits

    if isinstance(op, Special) and op.name == "exec":
        def wexec(g: Group, m: np.ndarray) -> None:
            g.set_exec_mask(m)
        return wexec
    if isinstance(op, Special):
        idx = special_index(op.name)
    elif isinstance(op, Reg) and op.kind in ("s", "ttmp"):
        idx = op.index + (108 if op.kind == "ttmp" else 0)
    else:
        raise CompileError(f"{op} cannot hold a lane mask")
    if idx is None or idx % 2:
        raise CompileError(f"{op} is not an aligned SGPR pair")
    q = idx // 2
    if q == EXEC // 2:
        return lambda g, m: g.set_exec_mask(m)

    def w(g: Group, m: np.ndarray) -> None:
        g.s64[:, q] = mask_to_bits(np.ascontiguousarray(m))
    return w


def clamp_omod(info: OpInfo, kind: str) -> Callable | None:
    """Clamp / omod post-processing for a float result (None when there is none)."""
    clamp = bool(info.mods.get("clamp"))
    omod = int(info.mods.get("omod", 0) or 0)
    if kind not in FLOAT_KINDS or (not clamp and not omod):
        return None

    def post(r, g: Group):
        r = np.asarray(r)
        if omod:
            r = apply_omod(r, omod)
        if clamp:
            r = clamp01(r, dx10=bool((g.mode >> 8) & 1))
        return r
    return post
