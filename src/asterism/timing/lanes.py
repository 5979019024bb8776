"""Lane address patterns of a stream without addresses (a capture's replay): how many
64-byte blocks (stores) or cache lines (loads) a vector memory instruction's 64 lanes touch,
where that follows from the code. Static analysis, not measured.

A capture records which instructions a wave executed, not the values it computed. Many
address computations, though, are lane-affine: the lane's workitem id shifted, masked and
added to wave-uniform values (kernel arguments, the workgroup id). `lane_patterns` runs an
abstract interpretation over a wave's executed stream in which every register holds

* `Lin`: 64 known lane offsets plus an unknown wave-uniform part (a sum of symbols, each
  an SGPR value or a product the analysis cannot follow; `align`: the part is known to be a
  multiple of 2**align), or
* `Alt`: one of a few `Lin`s per lane (``v_cndmask`` by a mask the analysis does not know:
  each lane takes one of them), or
* unknown (None): lane-dependent and not followed (loaded values, DPP, floating point, ...).

Sources: v0 = the lane id + an unknown wave-uniform multiple of 64 (assumption: a 1-D
workgroup, or an x size that is a multiple of 64, with the workitem ids packed in v0 as on
gfx90a and later; both shipped captures index waves by v0 >> 6), ``v_mbcnt_lo/hi`` with an
all-ones mask = the lane id, constants; every SGPR is wave-uniform (a symbol named by the
instruction that wrote it); everything loaded from memory is unknown. Operations: add, sub,
shifts, multiplication by a constant, and/or/bfe where the lane part and the uniform part
occupy different bits (the uniform part's alignment says which), readfirstlane; any VALU
result of only wave-uniform operands is wave-uniform.

A buffer instruction's resource is taken as a raw buffer (no per-lane swizzle, an
assumption: the code does not say); an ``idxen`` access is not followed.

Blocks touched = the distinct ``block``-byte blocks of (lane offsets + instruction offset)
over each lane's bytes (a store's per clock group of consecutive lanes, the functional
model's rule: stores.clock_blocks), with the unknown uniform part taken ``block``-aligned (an
assumption: base pointers and uniform offsets are aligned to 64 bytes, and the unknown part
does not wrap the lanes' 32-bit offsets); an `Alt` counts the blocks of each alternative
(alternatives with the same uniform part together: an upper bound). The exec mask is taken
as all 64 lanes (an upper bound: the stream does not say which lanes are off). An
instruction whose pattern is unknown in any execution gets none: the replay then charges
memory.store_unknown / vmem_unknown as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from asterism.emu.core import KEY_SGPR
from asterism.emu.info import OpInfo, operand_keys
from asterism.mc.operands import Imm, Mod, Reg
from asterism.timing.stores import clock_blocks, lanes_per_clock

LANES = 64
MASK32 = (1 << 32) - 1
MAX_ALTERNATIVES = 4  # an Alt of more options is not followed (unknown)
# VALU instructions whose result differs between lanes even when every register operand is
# wave-uniform: they read a lane mask (carry-in, a select), the lane id or other lanes
_LANE_DEPENDENT = ("addc", "subb", "div_fmas", "writelane", "permlane", "mbcnt", "swap",
                   "cndmask", "bpermute", "lane_id")
_LANE_IDS = np.arange(LANES, dtype=np.int64)


@dataclass(frozen=True)
class Lin:
    """lanes[l] + the unknown wave-uniform part (sum of coef * symbol), which is a multiple
    of 2**align (align 64: no unknown part)."""

    lanes: np.ndarray
    syms: tuple[tuple[int, int], ...] = ()
    align: int = 64

    @property
    def uniform(self) -> bool:
        """Every lane holds the same value."""
        return bool((self.lanes == self.lanes[0]).all())

    @property
    def const(self) -> int | None:
        """The value, when it is a known constant."""
        return int(self.lanes[0]) if not self.syms and self.uniform else None


@dataclass(frozen=True)
class Alt:
    """One of `options` per lane (a select by a mask not known)."""

    options: tuple[Lin, ...]


@dataclass(frozen=True)
class _Hi:
    """The high dword of a 64-bit value held at the pair's low register."""

    of: Lin


Value = Lin | Alt | None


def const(c: int) -> Lin:
    """A known constant in every lane."""
    return Lin(np.full(LANES, c, np.int64))


def lane_id() -> Lin:
    """The lane id (0..63)."""
    return Lin(_LANE_IDS.copy())


@dataclass
class Symbols:
    """Makes fresh wave-uniform unknowns."""

    ids: count = field(default_factory=count)

    def fresh(self, align: int = 0) -> Lin:
        """A new unknown wave-uniform value, a multiple of 2**align."""
        return Lin(np.zeros(LANES, np.int64), ((next(self.ids), 1),), min(align, 64))


# ---------------------------------------------------------------------------- arithmetic


def _tz(c: int) -> int:
    """Trailing zero bits of `c` (64 for 0)."""
    c &= (1 << 64) - 1
    return 64 if c == 0 else (c & -c).bit_length() - 1


def _merge(a: tuple, b: tuple, scale: int = 1) -> tuple:
    out: dict[int, int] = dict(a)
    for s, c in b:
        out[s] = out.get(s, 0) + scale * c
    return tuple(sorted((s, c) for s, c in out.items() if c))


def _align(syms: tuple, align: int) -> int:
    return align if syms else 64


def add(a: Lin, b: Lin, sign: int = 1) -> Lin:
    """a + b (sign -1: a - b)."""
    syms = _merge(a.syms, b.syms, sign)
    return Lin(a.lanes + sign * b.lanes, syms, _align(syms, min(a.align, b.align)))


def scale(a: Lin, c: int) -> Lin:
    """a * c for a known constant c."""
    syms = tuple((s, k * c) for s, k in a.syms if k * c)
    return Lin(a.lanes * c, syms, _align(syms, min(64, a.align + _tz(c))))


def _normal(a: Lin, sym: Symbols) -> Lin:
    """`a` with the lanes' common multiple of 2**align moved into the uniform part (a new
    unknown of the same alignment), so that its lane offsets start in [0, 2**align)."""
    if not a.syms or a.align >= 63:
        return a
    step = 1 << a.align
    c = (int(a.lanes.min()) // step) * step
    if c == 0:
        return a
    part = sym.fresh(a.align)
    return Lin(a.lanes - c, part.syms, part.align)


def _lane_bits(a: Lin) -> int | None:
    """The bits any lane offset may have set (None: some lane offset is negative or wider
    than 32 bits, or the offsets reach the uniform part's bits)."""
    if (a.lanes < 0).any() or (a.lanes > MASK32).any():
        return None
    bits = int(np.bitwise_or.reduce(a.lanes))
    if a.syms and bits >> a.align:
        return None
    return bits


def _uniform_part(k: int, sym: Symbols, keep: bool = True) -> Lin:
    """A fresh unknown uniform multiple of 2**k (or zero when not `keep`)."""
    return sym.fresh(k) if keep and k < 32 else const(0)


def bit_or(a: Lin, b: Lin, sym: Symbols) -> Value:
    """a | b (32-bit). Split at k, the lowest alignment of their unknown uniform parts:
    when every lane offset lies below bit k, the bits below k are the lanes' (OR-ed) and
    the bits from k up a wave-uniform unknown."""
    if not a.syms and not b.syms:
        return Lin((a.lanes & MASK32) | (b.lanes & MASK32))
    if a.uniform and b.uniform:
        return sym.fresh(min(a.align, b.align, _tz(int(a.lanes[0]) | int(b.lanes[0]))))
    a, b = _normal(a, sym), _normal(b, sym)
    k = min(a.align, b.align, 32)
    la, lb = _lane_bits(a), _lane_bits(b)
    if la is None or lb is None or (la | lb) >> k:
        return None
    return add(Lin(a.lanes | b.lanes), _uniform_part(k, sym))


def bit_and(a: Lin, m: int, sym: Symbols) -> Value:
    """a & m for a known constant m (32-bit): below the uniform part's alignment k the
    lanes' bits, from k up the uniform part's (a new unknown, or zero if m has no bit
    there)."""
    m &= MASK32
    if not a.syms:
        return Lin((a.lanes & MASK32) & m)
    a = _normal(a, sym)
    k = min(a.align, 32)
    if _lane_bits(a) is None:
        return sym.fresh(_tz(m)) if a.uniform else None
    high = m & ~((1 << k) - 1)
    return add(Lin(a.lanes & m), _uniform_part(_tz(high), sym, bool(high)))


def shr(a: Lin, k: int, sym: Symbols) -> Value:
    """a >> k (logical, 32-bit; arithmetic alike for values known non-negative)."""
    k &= 31
    if not a.syms:
        return Lin((a.lanes & MASK32) >> k)
    a = _normal(a, sym)
    if _lane_bits(a) is None:
        return sym.fresh(0) if a.uniform else None
    # the lanes lie below bit a.align: no carry between the parts
    return add(Lin(a.lanes >> k), _uniform_part(max(a.align - k, 0), sym))


def shl(a: Lin, k: int) -> Lin:
    """a << k."""
    return scale(a, 1 << k)


def bfe(a: Lin, off: int, width: int, sym: Symbols) -> Value:
    """v_bfe_u32: (a >> off) & (2**width - 1)."""
    s = shr(a, off, sym)
    return bit_and(s, (1 << (width & 31)) - 1, sym) if isinstance(s, Lin) else None


def mul(a: Lin, b: Lin, sym: Symbols) -> Value:
    """a * b: by a known constant, or of two wave-uniform values."""
    if (c := b.const) is not None:
        return scale(a, c)
    if (c := a.const) is not None:
        return scale(b, c)
    if a.uniform and b.uniform:
        return sym.fresh(min(a.align if a.syms else _tz(int(a.lanes[0])),
                             b.align if b.syms else _tz(int(b.lanes[0]))))
    return None


def lift(f, *vals: Value) -> Value:
    """Apply `f` (Lin, ... -> Value) to values that may be alternatives (each combination)."""
    if any(v is None for v in vals):
        return None
    options: list[tuple[Lin, ...]] = [()]
    for v in vals:
        opts = v.options if isinstance(v, Alt) else (v,)
        options = [o + (x,) for o in options for x in opts]
        if len(options) > MAX_ALTERNATIVES:
            return None
    out: list[Lin] = []
    for o in options:
        r = f(*o)
        if r is None:
            return None
        for x in (r.options if isinstance(r, Alt) else (r,)):
            out.append(x)
    return _alt(out)


def _alt(options: Sequence[Lin]) -> Value:
    uniq: list[Lin] = []
    for o in options:
        if not any(o.syms == u.syms and np.array_equal(o.lanes, u.lanes) for u in uniq):
            uniq.append(o)
    if len(uniq) > MAX_ALTERNATIVES:
        return None
    return uniq[0] if len(uniq) == 1 else Alt(tuple(uniq))


# ---------------------------------------------------------------------------- interpreter


def _src_names(info: OpInfo) -> list[str]:
    names = [s.name for s in info.form.operands] if info.form is not None else []
    return [n for n in names if n.startswith(("src", "vsrc", "ssrc"))]


def _imm(op) -> int | None:
    if isinstance(op, Mod):
        return None
    return op.value if isinstance(op, Imm) and isinstance(op.value, int) else None


class LaneState:
    """The abstract registers of one wave (keys as the emulator's: emu.core.reg_keys)."""

    def __init__(self) -> None:
        self.sym = Symbols()
        v0 = add(lane_id(), scale(self.sym.fresh(0), LANES))
        self.regs: dict[int, Lin | Alt | _Hi | None] = {0: v0}

    def read(self, op, width: int = 1) -> Value:
        """The value of an operand (a register, pair or constant)."""
        if op is None:
            return None
        if (c := _imm(op)) is not None:
            return const(c)
        if isinstance(op, Mod):
            return None
        keys = operand_keys(op)
        if not keys:
            return None
        if isinstance(op, Reg) and op.count == 2 and width == 2:
            return self._pair(keys[0], keys[1])
        return self._one(keys[0])

    def _one(self, key: int) -> Value:
        if key not in self.regs:
            # never written in the stream: SGPRs are uniform (arguments, ids), VGPRs unknown
            self.regs[key] = self.sym.fresh(0) if key >= KEY_SGPR else None
        v = self.regs[key]
        if isinstance(v, _Hi):
            return self.sym.fresh(0) if v.of.uniform else None
        return v

    def _pair(self, lo: int, hi: int) -> Value:
        h = self.regs.get(hi)
        low = self._one(lo)
        if isinstance(h, _Hi) and h.of is low:
            return low
        high = self._one(hi)
        if not isinstance(low, Lin) or not isinstance(high, Lin) or not high.uniform:
            return None
        if _lane_bits(low) is None and not low.uniform:
            return None
        return add(low, scale(high, 1 << 32))

    def write(self, op, value: Value, width: int = 1) -> None:
        """Store `value` into the destination operand (a 64-bit value into a pair)."""
        keys = operand_keys(op)
        if not keys:
            return
        if width == 2 and len(keys) == 2:
            self.regs[keys[0]] = value
            self.regs[keys[1]] = _Hi(value) if isinstance(value, Lin) else None
            return
        self.regs[keys[0]] = value

    def clobber(self, info: OpInfo) -> None:
        """Forget what the instruction writes: VGPRs unknown, SGPRs fresh uniform values."""
        for k in info.defs:
            self.regs[k] = self.sym.fresh(0) if k >= KEY_SGPR else None

    def step(self, info: OpInfo) -> None:
        """Interpret one executed instruction."""
        dst = dst_of(info)
        if info.form is None or not info.defs or not isinstance(dst, Reg) or \
                info.enc in ("DPP", "SDWA") or info.mods.get("op_sel") or \
                info.mods.get("clamp"):
            self.clobber(info)
            return
        try:
            value, width = self._evaluate(info, info.mnemonic)
        except (TypeError, ValueError, OverflowError):
            value, width = None, 1
        self.clobber(info)  # (after reading: a source may be the destination)
        if value is None and dst.kind == "s":
            return  # (clobber left a fresh uniform)
        self.write(dst, value, width)

    def _evaluate(self, info: OpInfo, m: str) -> tuple[Value, int]:
        """The instruction's result and its width in dwords (by `_RULES`; any other VALU /
        SALU: wave-uniform operands give a wave-uniform result unless it reads a lane mask,
        the lane id or another lane)."""
        ops = [info.op(n) for n in _src_names(info)]

        def src(k: int, width: int = 1) -> Value:
            return self.read(ops[k], width) if k < len(ops) else None

        rule = _RULES.get(m)
        if rule is not None:
            return rule(self, info, src)
        if any(part in m for part in _LANE_DEPENDENT):
            return None, 1
        return self._uniform(*[src(k) for k in range(len(ops))]), 1

    def shift(self, f, value: Value, amount: Value, bits: int = 32) -> Value:
        """f(value, k) for a known shift amount k (taken modulo `bits`, as the hardware)."""
        if not isinstance(amount, Lin) or amount.const is None:
            return self._uniform(value, amount)
        k = amount.const & (bits - 1)
        return lift(lambda a: f(a, k), value)

    def masked(self, a: Value, b: Value) -> Value:
        """a & b where one of them is a known constant."""
        if isinstance(b, Lin) and b.const is not None:
            return lift(lambda x: bit_and(x, b.const, self.sym), a)
        if isinstance(a, Lin) and a.const is not None:
            return lift(lambda x: bit_and(x, a.const, self.sym), b)
        return self._uniform(a, b)

    def _uniform(self, *vals: Value) -> Value:
        """A fresh wave-uniform value when every operand is wave-uniform (else unknown)."""
        if vals and all(isinstance(v, Lin) and v.uniform for v in vals):
            return self.sym.fresh(0)
        return None


def dst_of(info: OpInfo):
    """The instruction's destination operand (vdst or sdst)."""
    return info.op("vdst") or info.op("sdst")


# ---------------------------------------------------------------------------- rules
# Each rule: (state, instruction, src(k, width)) -> (result, width in dwords).

Src = Callable[..., Value]
Rule = Callable[[LaneState, OpInfo, Src], tuple[Value, int]]


def _mov(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return src(0), 1


def _mov64(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return src(0, 2), 2


def _readfirstlane(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    v = src(0)  # one lane's value: the lanes' own if they all agree, else a new unknown
    return (v if isinstance(v, Lin) and v.uniform else st.sym.fresh(0)), 1


def _add(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return lift(add, src(0), src(1)), 1


def _sub(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return lift(lambda a, b: add(a, b, -1), src(0), src(1)), 1


def _subrev(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return lift(lambda a, b: add(b, a, -1), src(0), src(1)), 1


def _addk(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    k = _imm(info.op("simm16"))
    return lift(add, st.read(dst_of(info)), const(k if k is not None else 0)), 1


def _add3(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return lift(lambda a, b, c: add(add(a, b), c), src(0), src(1), src(2)), 1


def _lshlrev(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    w = 2 if info.mnemonic.endswith("64") else 1
    return st.shift(shl, src(1, w), src(0), 32 * w), w


def _s_lshl(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    w = 2 if info.mnemonic.endswith("64") else 1
    return st.shift(shl, src(0, w), src(1), 32 * w), w


def _lshrrev(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return st.shift(lambda a, k: shr(a, k, st.sym), src(1), src(0)), 1


def _s_lshr(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return st.shift(lambda a, k: shr(a, k, st.sym), src(0), src(1)), 1


def _lshl_add(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    w = 2 if info.mnemonic.endswith("64") else 1
    return lift(add, st.shift(shl, src(0, w), src(1), 32 * w), src(2, w)), w


def _add_lshl(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return st.shift(shl, lift(add, src(0), src(1)), src(2)), 1


def _lshl_or(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return lift(lambda a, b: bit_or(a, b, st.sym), st.shift(shl, src(0), src(1)), src(2)), 1


def _s_lshl_add(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    k = int(info.mnemonic[6])  # s_lshl<k>_add_u32
    return lift(lambda a, b: add(shl(a, k), b), src(0), src(1)), 1


def _or(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return lift(lambda a, b: bit_or(a, b, st.sym), src(0), src(1)), 1


def _or3(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    ab = lift(lambda a, b: bit_or(a, b, st.sym), src(0), src(1))
    return lift(lambda a, b: bit_or(a, b, st.sym), ab, src(2)), 1


def _and(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return st.masked(src(0), src(1)), 1


def _and_or(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    return lift(lambda a, b: bit_or(a, b, st.sym), st.masked(src(0), src(1)), src(2)), 1


def _bfe(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    off, width = src(1), src(2)
    if isinstance(off, Lin) and isinstance(width, Lin) and off.const is not None \
            and width.const is not None:
        return lift(lambda x: bfe(x, off.const, width.const, st.sym), src(0)), 1
    return st._uniform(src(0), off, width), 1


def _u24(value: Value) -> bool:
    """The known lane parts fit the 24-bit multiplier's operands."""
    opts = value.options if isinstance(value, Alt) else (value,) if value is not None else ()
    return all(not ((o.lanes < 0) | (o.lanes >= 1 << 24)).any() for o in opts)


def _mul(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    a, b = src(0), src(1)
    if "24" in info.mnemonic and not (_u24(a) and _u24(b)):
        return None, 1
    return lift(lambda x, y: mul(x, y, st.sym), a, b), 1


def _mad(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    w = 2 if info.mnemonic == "v_mad_u64_u32" else 1
    a, b = src(0), src(1)
    if w == 1 and not (_u24(a) and _u24(b)):
        return None, 1
    return lift(add, lift(lambda x, y: mul(x, y, st.sym), a, b), src(2, w)), w


def _cndmask(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    a, b = src(0), src(1)  # each lane takes one of them, by a mask not followed
    if a is None or b is None:
        return None, 1
    return _alt([*(a.options if isinstance(a, Alt) else (a,)),
                 *(b.options if isinstance(b, Alt) else (b,))]), 1


def _mbcnt(st: LaneState, info: OpInfo, src: Src) -> tuple[Value, int]:
    mask = src(0)  # with an all-ones mask: the lanes below this one (in its half)
    if not isinstance(mask, Lin) or mask.const not in (-1, MASK32):
        return None, 1
    part = np.minimum(_LANE_IDS, 32) if "_lo_" in info.mnemonic else \
        np.maximum(_LANE_IDS - 32, 0)
    return lift(lambda x: add(x, Lin(part.astype(np.int64))), src(1)), 1


def _rules() -> dict[str, Rule]:
    table: dict[tuple[str, ...], Rule] = {
        ("v_mov_b32", "s_mov_b32"): _mov,
        ("v_mov_b64", "s_mov_b64"): _mov64,
        ("v_readfirstlane_b32",): _readfirstlane,
        ("v_add_u32", "v_add_co_u32", "v_add_i32", "s_add_u32", "s_add_i32"): _add,
        ("v_sub_u32", "v_sub_co_u32", "v_sub_i32", "s_sub_u32", "s_sub_i32"): _sub,
        ("v_subrev_u32", "v_subrev_co_u32"): _subrev,
        ("s_addk_i32",): _addk,
        ("v_add3_u32",): _add3,
        ("v_lshlrev_b32", "v_lshlrev_b64"): _lshlrev,
        ("s_lshl_b32", "s_lshl_b64"): _s_lshl,
        ("v_lshrrev_b32", "v_ashrrev_i32"): _lshrrev,
        ("s_lshr_b32",): _s_lshr,
        ("v_lshl_add_u32", "v_lshl_add_u64"): _lshl_add,
        ("v_add_lshl_u32",): _add_lshl,
        ("v_lshl_or_b32",): _lshl_or,
        ("s_lshl1_add_u32", "s_lshl2_add_u32", "s_lshl3_add_u32", "s_lshl4_add_u32"):
            _s_lshl_add,
        ("v_or_b32", "s_or_b32"): _or,
        ("v_or3_b32",): _or3,
        ("v_and_b32", "s_and_b32"): _and,
        ("v_and_or_b32",): _and_or,
        ("v_bfe_u32",): _bfe,
        ("v_mul_u32_u24", "v_mul_lo_u32", "s_mul_i32", "v_mul_i32_i24"): _mul,
        ("v_mad_u32_u24", "v_mad_u64_u32"): _mad,
        ("v_cndmask_b32",): _cndmask,
        ("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32"): _mbcnt,
    }
    return {m: rule for names, rule in table.items() for m in names}


_RULES = _rules()


# ---------------------------------------------------------------------------- memory


_WIDTH = re.compile(r"_(dwordx(\d)|dword|b(\d+)|ubyte|sbyte|byte|ushort|sshort|short)")


def lane_bytes(mnemonic: str) -> int:
    """Bytes each lane of a vector memory instruction moves (from its mnemonic)."""
    m = _WIDTH.search(mnemonic)
    if m is None:
        return 4
    if m.group(2):
        return 4 * int(m.group(2))
    if m.group(1) == "dword":
        return 4
    if m.group(3):
        return max(1, int(m.group(3)) // 8)
    return 1 if "byte" in m.group(1) else 2


def _in_buffer(base: Alt, offset: int) -> Value:
    """A buffer access's alternatives less those out of range: a constant offset (vaddr +
    instruction offset, as unsigned 32 bits; soffset is not range-checked) of 2 GiB or more
    lies beyond any raw buffer below 2 GiB, and the buffer's range check drops those lanes'
    accesses (the emulator's rule, semantics/mem.py `_in_range`). The bounds idiom
    ``v_cndmask v, -4, offset, vcc`` selects such an offset for the lanes past the end
    (pa_mqa_logits' stores): an assumption, stated, that the buffer is below 2 GiB."""
    kept = [o for o in base.options
            if o.syms or not ((o.lanes + offset) & MASK32 >= 1 << 31).all()]
    return _alt(kept) if kept else base


def address(info: OpInfo, state: LaneState) -> Value:
    """The lanes' offsets from the instruction's unknown uniform base (None: not known)."""
    mods = info.mods
    offset = int(mods.get("offset", 0) or 0)
    enc = info.enc
    if enc == "MUBUF":
        if mods.get("idxen"):
            return None
        base = state.read(info.op("vaddr")) if mods.get("offen") else const(0)
        if isinstance(base, Alt):
            base = _in_buffer(base, offset)
        soff = state.read(info.op("soffset"))
        return lift(lambda a, b: add(add(a, b), const(offset)), base, soff)
    if enc in ("FLAT", "GLOBAL"):
        saddr = info.op("saddr")
        if isinstance(saddr, Reg):
            base = state.read(info.op("addr"))
            if isinstance(base, Lin | Alt):
                base = lift(lambda a: Lin(a.lanes & MASK32, a.syms, a.align)
                            if _lane_bits(a) is not None or not a.syms else a, base)
            return lift(lambda a, b: add(add(a, b), const(offset)), base,
                        state.read(saddr, 2))
        return lift(lambda a: add(a, const(offset)), state.read(info.op("addr"), 2))
    return None


def blocks(value: Value, nbytes: int, block: int, per_clock: int = LANES) -> int | None:
    """Distinct `block`-byte blocks the lanes' accesses of `nbytes` each touch, counted per
    clock group of `per_clock` consecutive lanes (stores.clock_blocks; a load's lines: the whole
    wave, 64); the unknown uniform part taken block-aligned, alternatives with different
    uniform parts apart."""
    if value is None:
        return None
    groups: dict[tuple, set[tuple[int, int]]] = {}
    for o in (value.options if isinstance(value, Alt) else (value,)):
        groups.setdefault(o.syms, set()).update(
            clock_blocks(_LANE_IDS, o.lanes, nbytes, block, per_clock))
    return sum(len(s) for s in groups.values())


def is_vector_memory(info: OpInfo) -> bool:
    """A vector memory instruction that addresses global memory (MUBUF, FLAT, GLOBAL; not
    SCRATCH, whose addresses the hardware swizzles per lane)."""
    return info.enc in ("MUBUF", "FLAT", "GLOBAL")


def lane_patterns(stream: Sequence[int], infos: Sequence[OpInfo], store_block: int,
                  load_block: int, path_bytes: int) -> dict[int, int]:
    """Stream position -> blocks its vector memory instruction's lanes touch, for the
    positions whose lane pattern follows from the code: a store's write requests (distinct
    `store_block`-byte blocks per clock group of lanes, the address path taking `path_bytes`
    of lane data a clock: stores.lanes_per_clock), a load's `load_block` cache lines."""
    state = LaneState()
    out: dict[int, int] = {}
    for pos, index in enumerate(stream):
        info = infos[index]
        if is_vector_memory(info):
            nbytes = lane_bytes(info.mnemonic)
            if "store" in info.mnemonic:
                n = blocks(address(info, state), nbytes, store_block,
                           lanes_per_clock(nbytes, path_bytes))
            else:
                n = blocks(address(info, state), nbytes, load_block)
            if n is not None and "atomic" not in info.mnemonic:
                out[pos] = n
        state.step(info)
    return out


__all__ = ["Alt", "LaneState", "Lin", "address", "blocks", "lane_bytes", "lane_patterns"]
