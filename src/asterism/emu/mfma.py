"""MFMA / SMFMAC semantics of gfx942 and gfx950 on raw register contents (NumPy).

`execute_mfma` takes the A, B, C operands as uint32 arrays shaped (waves, 64 lanes, nregs)
exactly as they sit in the VGPR/AGPR file and returns D in the layout of C. `mfma_layout`
says which matrix element every (lane, register, bits) holds; the same tables drive
execution and `pack_a` / `pack_b` / `pack_c` / `unpack_d`, which turn NumPy matrices into
register images and back (for tests and GEMM kernels).

Register layouts (sources)
--------------------------
* Dense gfx9 layout, from AMD's Matrix Instruction Calculator (InstCalcGfx9): an input
  matrix with outer size `dim` (M for A, N for B), K and `blocks` holds
  `epl = K * dim * blocks / 64` elements per lane; element (block b, row i, k) lives in lane
  `b*dim + (k // epl)*dim*blocks + i`, element `k % epl` of the lane's registers (element e
  occupies bits [e*w, (e+1)*w) of the lane's concatenated dwords). Outputs: 4-row
  "multi-rows" of N lanes (1 row for f64), see `_output_loc`.
* gfx950: 8-bit operands with more than 16 elements per lane (fp8/bf8 of the f8f6f4 MFMAs)
  are split in 16-element chunks that rotate over the lane groups: chunk c = k // 16 goes
  to lane group c % groups, elements (c // groups)*16 + k % 16. AMD's CDNA3/CDNA4 matrix
  core blog (section 5.4) shows it for 32x32x64 fp8; ROCm's rocjitsu emulator uses the
  same rule. fp6/fp4 operands stay contiguous (blog section 5.5 for fp4); fp6 codes are a
  little-endian bit stream, so some straddle two dwords.
* CBSZ/ABID (multi-block A): with CBSZ=c, block (b & ~(2**c-1)) | ABID replaces block b
  (calculator README: "CBSZ=1, ABID=1: block 1 in place of blocks 0 and 1, block 3 in place
  of 2 and 3"). BLGP (B lanes): 0 identity, 1 lanes 0-31 to 32-63, 2 lanes 32-63 to 0-31,
  3 rotate down by 16, 4..7 broadcast lanes 0-15/16-31/32-47/48-63 to all groups.
* f64 MFMAs (CDNA3/4): the BLGP field (LLVM prints it as neg:[a,b,c]) negates A (bit 0),
  B (bit 1) and C (bit 2) (calculator README, "BLGP modifier to negate FP64 inputs").
* f8f6f4 (gfx950): CBSZ/BLGP select the A/B formats (0 fp8 E4M3FN, 1 bf8 E5M2, 2 fp6 E2M3,
  3 bf6 E3M2, 4 fp4 E2M1), which sets the register count (8/8/6/6/4).
* v_mfma_scale_*: E8M0 scales, one per 32 K elements: A's scale of (row i, k-block kb) is in
  lane i + M*kb of scale_src0, B's of (kb, column j) in lane j + N*kb of scale_src1; the byte
  is op_sel[x] | op_sel_hi[x] << 1 (x = 0 for A, 1 for B). Value 2**(code-127), 255 is NaN.
  The unscaled f8f6f4 MFMAs apply no scaling.
* SMFMAC (2:4 sparse A): A holds, per 4 consecutive K, two stored values; each stored value
  has a 2-bit index (its position in the group) in the index VGPR (src2): stored element s
  of a lane uses bits [2s, 2s+2) of the lane's index field. The stored elements of a lane
  are those of its dense layout (the K elements it would hold densely, two per group of
  four). The index field is 8 bits for 16-bit types and 16 bits for 8-bit types on CDNA3
  (ABID picks the byte/half when CBSZ=0, calculator README "compression index"), 16 or 32
  bits for the gfx950 K-doubled forms. D accumulates in place (C = the old D).

Numerics (assumptions stated, not known to be bit-exact against silicon)
-----------------------------------------------------------------------
Inputs are decoded exactly; every product is exact in float64 (f16/bf16/fp8/fp6/fp4/xf32
products have at most 24 significant bits, f32 products 48); the K products and C are
summed in float64 and the sum is rounded once to f32 (round to nearest even). This models
the hardware's wide internal accumulation; real MI300/MI350 results can differ from it by a
few f32 ulps of the sum of |products| (the hardware adds in its own order with its own
internal widths), so tests compare with a tolerance of that size. Denormals are kept (not
flushed). NaN/inf follow IEEE (inf*0 = NaN, inf-inf = NaN). i8 MFMAs are exact and wrap
modulo 2**32. f64 MFMAs accumulate in float64 (NumPy matmul order). xf32 inputs are f32
values rounded (nearest even) to a 10-bit mantissa before the product (assumption: the
hardware's exact xf32 input rounding is not documented publicly).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from asterism.emu import numerics as nm
from asterism.isa import get_isa

__all__ = [
    "MfmaInfo", "MfmaLayout", "OperandLayout", "RegisterPlan", "execute_mfma", "mfma_info",
    "mfma_layout", "mfma_mnemonics", "mfma_on_registers", "pack_a", "pack_b", "pack_c",
    "pack_scale", "pack_sparse_a", "register_plan", "unpack_d",
]

_NAME = re.compile(
    r"v_(?P<sparse>s)?mfma(?:c)?(?P<scale>_scale)?_(?P<out>f32|i32|f64)_"
    r"(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)(?:_(?P<blocks>\d+)b)?_(?P<ty>[a-z0-9_]+)$")
_WIDTH = {"f64": 64, "f32": 32, "xf32": 32, "f16": 16, "bf16": 16, "i8": 8, "fp8": 8,
          "bf8": 8}
_F8F6F4_NAMES = {"fp8": 0, "bf8": 1, "fp6": 2, "bf6": 3, "fp4": 4}


@dataclass(frozen=True)
class MfmaInfo:
    """Shape and types of one MFMA/SMFMAC of a target (from its mnemonic and the ISA DB)."""

    target: str
    mnemonic: str  # canonical ISA-database name
    m: int
    n: int
    k: int
    blocks: int
    a_type: str  # f64 f32 xf32 f16 bf16 i8 fp8 bf8 f8f6f4
    b_type: str
    out_type: str  # f32 i32 f64
    sparse: bool
    scaled: bool
    a_regs: int  # ISA-database operand widths (dwords); f8f6f4: the fp8 maximum
    b_regs: int
    c_regs: int
    passes: int | None


@dataclass(frozen=True)
class OperandLayout:
    """Where every element of one operand matrix lives: arrays indexed like the matrix,
    shaped (blocks, rows, cols): A (B, M, K), B (B, K, N), C/D (B, M, N); sparse A is the
    stored (B, M, K/2) matrix and its index operand has the same shape; scale operands are
    (1, M, K/32) for A and (1, K/32, N) for B."""

    role: str  # "a", "b", "c", "idx", "scale_a", "scale_b"
    fmt: str  # element format name (numerics.FORMATS key, or "i8", "i32", "f64", ...)
    width: int  # bits per element
    nregs: int  # dwords per lane the operand uses
    lane: np.ndarray
    bit: np.ndarray  # bit offset in the lane's concatenated dwords (dword = bit // 32)

    def __post_init__(self) -> None:
        # Layouts are cached and shared: keep their tables immutable.
        self.lane.setflags(write=False)
        self.bit.setflags(write=False)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the matrix (blocks, rows, cols)."""
        return self.lane.shape

    @property
    def reg(self) -> np.ndarray:
        """Dword (register offset from the operand's first register) of every element."""
        return self.bit // 32

    def element_map(self) -> np.ndarray:
        """The inverse: (64, elements per lane, 3) int array of (block, row, col) held by each
        lane's element slot e (bits [e*width, (e+1)*width)), -1 where a slot holds nothing.
        With broadcasting modifiers several elements share a slot; the first one is shown."""
        per_lane = self.nregs * 32 // self.width
        out = np.full((64, per_lane, 3), -1, dtype=np.int64)
        idx = np.indices(self.shape).reshape(3, -1).T
        lanes = self.lane.reshape(-1)
        slots = self.bit.reshape(-1) // self.width
        for j in range(len(lanes) - 1, -1, -1):  # reversed so the first element wins
            out[lanes[j], slots[j]] = idx[j]
        return out


@dataclass(frozen=True)
class MfmaLayout:
    """Operand layouts of one MFMA with given modifiers (see module docstring)."""

    info: MfmaInfo
    a: OperandLayout
    b: OperandLayout
    c: OperandLayout  # also D
    idx: OperandLayout | None = None  # SMFMAC index operand (src2)
    scale_a: OperandLayout | None = None  # v_mfma_scale_*: scale_src0
    scale_b: OperandLayout | None = None  # v_mfma_scale_*: scale_src1
    a_negate: bool = False  # f64: BLGP bit 0
    b_negate: bool = False  # f64: BLGP bit 1
    c_negate: bool = False  # f64: BLGP bit 2


def _target_name(target: str) -> str:
    return target.split(":")[0].split("--")[-1]


def mfma_mnemonics(target: str) -> list[str]:
    """Every MFMA and SMFMAC mnemonic of a target's ISA database (canonical names)."""
    db = get_isa(_target_name(target))
    return sorted(m for m, inst in db.instructions.items()
                  if inst.unit == "mfma" and _NAME.match(m))


@cache
def mfma_info(target: str, mnemonic: str) -> MfmaInfo:
    """Shape, types and register widths of an MFMA/SMFMAC (aliases accepted)."""
    name = _target_name(target)
    db = get_isa(name)
    inst = db.get(mnemonic)
    match = _NAME.match(inst.mnemonic) if inst is not None else None
    if inst is None or match is None or inst.unit != "mfma":
        hint = db.similar(mnemonic) if inst is None else []
        more = f"; did you mean {', '.join(hint)}?" if hint else ""
        raise ValueError(f"'{mnemonic}' is not an MFMA/SMFMAC of {name}{more}")
    ty = match["ty"]
    if ty == "f8f6f4":
        a_type = b_type = "f8f6f4"
    elif "_" in ty:
        a_type, b_type = ty.split("_")
    else:
        a_type = b_type = ty
    widths = {op.name: op.width for op in inst.forms[0].operands}
    sparse = match["sparse"] is not None
    return MfmaInfo(
        target=name, mnemonic=inst.mnemonic, m=int(match["m"]), n=int(match["n"]),
        k=int(match["k"]), blocks=int(match["blocks"] or 1), a_type=a_type, b_type=b_type,
        out_type=match["out"], sparse=sparse, scaled=match["scale"] is not None,
        a_regs=widths["src0"], b_regs=widths["src1"],
        c_regs=widths["vdst"], passes=inst.passes)


# --------------------------------------------------------------------------- layouts


def _input_loc(dim: int, k: int, blocks: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(lane, element index in lane) of every (block, outer, k) input element."""
    b, i, kk = np.indices((blocks, dim, k))
    groups = 64 // (dim * blocks)  # lane groups along K
    epl = k // groups  # elements per lane
    if width >= 8 and epl > 16:
        chunk = kk // 16
        group = chunk % groups
        local = (chunk // groups) * 16 + kk % 16
    else:
        group = kk // epl
        local = kk % epl
    return b * dim + group * dim * blocks + i, local


def _output_loc(m: int, n: int, blocks: int, wide: bool) -> tuple[np.ndarray, np.ndarray]:
    """(lane, element slot) of every (block, row, col) of C/D (calculator InstCalcGfx9)."""
    b, i, j = np.indices((blocks, m, n))
    multirows = 64 // n  # multi-rows side by side in one register
    height = 1 if wide else 4  # rows (registers) per multi-row
    per_reg = -(-64 // (m * n // height))  # blocks side by side in one register
    slot = b * (m * n // 64) + (i // (height * multirows)) * height + i % height
    lane = (b % per_reg) * n + ((i // height) % multirows) * per_reg * n + j
    return lane, slot


def _block_source(blocks: int, cbsz: int, abid: int) -> np.ndarray:
    """Which A block feeds each block under CBSZ/ABID broadcast."""
    b = np.arange(blocks)
    mask = (1 << cbsz) - 1
    return (b & ~mask) | (abid & mask)


# Lane each B lane reads under BLGP 0..7 (calculator README, "BLGP modifier").
_BLGP = (
    lambda x: x, lambda x: x % 32, lambda x: x % 32 + 32, lambda x: (x + 16) % 64,
    lambda x: x % 16, lambda x: x % 16 + 16, lambda x: x % 16 + 32, lambda x: x % 16 + 48)


def _format_code(fmt: int | str | nm.FloatFormat | None, default: int) -> int:
    if fmt is None:
        nm.f8f6f4_format(default)  # range check: CBSZ/BLGP code 0-4
        return default
    if isinstance(fmt, nm.FloatFormat):
        if fmt not in nm.F8F6F4_FORMATS:
            raise ValueError(f"{fmt.name} is not an f8f6f4 operand format")
        return nm.F8F6F4_FORMATS.index(fmt)
    if isinstance(fmt, str):
        if fmt not in _F8F6F4_NAMES:
            raise ValueError(f"f8f6f4 format must be one of {', '.join(_F8F6F4_NAMES)}, "
                             f"not '{fmt}'")
        return _F8F6F4_NAMES[fmt]
    nm.f8f6f4_format(int(fmt))  # range check
    return int(fmt)


def _element_format(info: MfmaInfo, ty: str, f8_code: int) -> tuple[str, int]:
    """(format name, width) of one input operand's elements."""
    if ty == "f8f6f4":
        fmt = nm.F8F6F4_FORMATS[f8_code]
        return fmt.name, fmt.bits
    if ty in ("fp8", "bf8"):
        return nm.fp8_formats(info.target)[ty].name, 8
    return ty, _WIDTH[ty]


def _check_modifiers(info: MfmaInfo, cbsz: int, abid: int, blgp: int) -> None:
    name = f"{info.mnemonic} ({info.target})"
    if not (0 <= cbsz <= 7 and 0 <= abid <= 15 and 0 <= blgp <= 7):
        raise ValueError(f"{name}: modifier out of field range (cbsz {cbsz}, abid {abid}, "
                         f"blgp {blgp})")
    if info.a_type == "f8f6f4":
        return  # CBSZ/BLGP are operand formats, checked by _format_code
    if info.sparse:
        if blgp:
            raise ValueError(f"{name}: SMFMAC has no BLGP modifier (got blgp:{blgp})")
        return
    max_cbsz = info.blocks.bit_length() - 1
    if cbsz > max_cbsz:
        raise ValueError(f"{name}: cbsz:{cbsz} broadcasts more blocks than the instruction "
                         f"has ({info.blocks}); cbsz must be at most {max_cbsz}")
    if abid >= (1 << cbsz) and (cbsz or abid):
        raise ValueError(f"{name}: abid:{abid} must be below 2**cbsz = {1 << cbsz}")


@cache
def mfma_layout(target: str, mnemonic: str, *, cbsz: int = 0, abid: int = 0, blgp: int = 0,
                a_format: int | str | None = None, b_format: int | str | None = None,
                op_sel: tuple[int, int] = (0, 0),
                op_sel_hi: tuple[int, int] = (0, 0)) -> MfmaLayout:
    """Register layout of every operand of an MFMA under the given modifiers (A under
    CBSZ/ABID and B under BLGP show the lanes actually read, as the matrix instruction
    calculator does). For f8f6f4, cbsz/blgp (or a_format/b_format: 0-4 or
    "fp8"/"bf8"/"fp6"/"bf6"/"fp4") pick the operand formats; op_sel/op_sel_hi pick the scale
    bytes of v_mfma_scale_*."""
    info = mfma_info(target, mnemonic)
    _check_modifiers(info, cbsz, abid, blgp)
    m, n, k, nb = info.m, info.n, info.k, info.blocks
    a_code = _format_code(a_format, cbsz) if info.a_type == "f8f6f4" else 0
    b_code = _format_code(b_format, blgp) if info.b_type == "f8f6f4" else 0
    a_fmt, a_w = _element_format(info, info.a_type, a_code)
    b_fmt, b_w = _element_format(info, info.b_type, b_code)

    b_lane, b_elem = _input_loc(n, k, nb, b_w)  # (B, N, K): transpose to (B, K, N)
    b_lane, b_elem = b_lane.transpose(0, 2, 1), b_elem.transpose(0, 2, 1)
    permute_b = not info.sparse and info.out_type != "f64" and info.b_type != "f8f6f4"
    if permute_b and blgp:
        b_lane = _BLGP[blgp](b_lane)
    b_regs = _regs(b_elem, b_w)

    a_lane, a_elem = _input_loc(m, k, nb, a_w)
    idx_layout = None
    if info.sparse:
        # Stored element cs of a row is the (cs % 2)-th value of the group of four K
        # elements cs // 2; its lane and slot follow the dense layout of that group.
        a_lane, a_elem = a_lane[:, :, 0::4], a_elem[:, :, 0::4]
        a_lane = np.repeat(a_lane, 2, axis=2)
        a_elem = (np.repeat(a_elem, 2, axis=2) // 4) * 2 + np.arange(k // 2) % 2
        field = 2 * (a_elem.max() + 1)  # index bits per lane
        select = 0 if (cbsz or field >= 32) else abid % (32 // field)
        idx_layout = OperandLayout("idx", "u2", 2, 1, a_lane.copy(),
                                   select * field + 2 * a_elem)
    elif nb > 1 and cbsz:
        src = _block_source(nb, cbsz, abid)
        a_lane, a_elem = a_lane[src], a_elem[src]
    a_regs = _regs(a_elem, a_w)

    wide = info.out_type == "f64"
    c_lane, c_slot = _output_loc(m, n, nb, wide)
    c_w = 64 if wide else 32

    scale_a = scale_b = None
    if info.scaled:
        kb = k // 32
        i, q = np.indices((m, kb))
        byte_a = (op_sel[0] & 1) | ((op_sel_hi[0] & 1) << 1)
        scale_a = OperandLayout("scale_a", "e8m0", 8, 1, (i + m * q)[None],
                                np.full((1, m, kb), 8 * byte_a))
        q, j = np.indices((kb, n))
        byte_b = (op_sel[1] & 1) | ((op_sel_hi[1] & 1) << 1)
        scale_b = OperandLayout("scale_b", "e8m0", 8, 1, (j + n * q)[None],
                                np.full((1, kb, n), 8 * byte_b))

    neg = blgp if wide else 0
    return MfmaLayout(
        info=info,
        a=OperandLayout("a", a_fmt, a_w, a_regs, a_lane, a_elem * a_w),
        b=OperandLayout("b", b_fmt, b_w, b_regs, b_lane, b_elem * b_w),
        c=OperandLayout("c", info.out_type, c_w, c_slot.max() * c_w // 32 + c_w // 32,
                        c_lane, c_slot * c_w),
        idx=idx_layout, scale_a=scale_a, scale_b=scale_b,
        a_negate=bool(neg & 1), b_negate=bool(neg & 2), c_negate=bool(neg & 4))


def _regs(elem: np.ndarray, width: int) -> int:
    return -(-(int(elem.max()) + 1) * width // 32)


# --------------------------------------------------------------------------- gather/scatter


def _as_waves(x: np.ndarray | int, what: str, nregs: int, mnemonic: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1] != 64 or arr.shape[2] < nregs:
        raise ValueError(f"{mnemonic}: operand {what} must be uint32 shaped (waves, 64, "
                         f">= {nregs}) (or (64, >= {nregs})), got {np.shape(x)}")
    return arr.astype(np.uint32, copy=False)


_WORD_VIEWS = {8: np.uint8, 16: np.uint16, 32: np.uint32}


_ALIGNED: dict[tuple[int, int], tuple[OperandLayout, np.ndarray | None]] = {}


def _aligned_index(lay: OperandLayout, nregs: int) -> np.ndarray | None:
    """Element indices into the registers viewed as `width`-bit words, when every element is
    one whole aligned word (16-bit halves, 32-bit floats); None otherwise."""
    key = (id(lay), nregs)  # layouts are cached and immutable; the entry keeps `lay` alive
    hit = _ALIGNED.get(key)
    if hit is not None and hit[0] is lay:
        return hit[1]
    index = None
    if lay.width in _WORD_VIEWS and not np.any(lay.bit % lay.width):
        per = 32 // lay.width
        index = lay.lane * (nregs * per) + lay.bit // lay.width
    _ALIGNED[key] = (lay, index)
    return index


def _gather(regs: np.ndarray, lay: OperandLayout) -> np.ndarray:
    """Codes (uint64, shape (waves, *lay.shape)) of an operand from its registers."""
    waves, _, nregs = regs.shape
    index = _aligned_index(lay, nregs)
    if index is not None:
        # One fancy index of the registers seen as narrow words: no shifts or masks.
        words = np.ascontiguousarray(regs, dtype=np.uint32).view(_WORD_VIEWS[lay.width])
        return words.reshape(waves, -1)[:, index].astype(np.uint64)
    flat = regs.reshape(waves, -1).astype(np.uint64)
    word = lay.lane * nregs + lay.bit // 32
    shift = (lay.bit % 32).astype(np.uint64)
    lo = flat[:, word]
    if lay.width == 64:
        return lo | (flat[:, word + 1] << np.uint64(32))
    if np.any(lay.bit % 32 + lay.width > 32):  # fp6 codes straddle two dwords
        hi = flat[:, np.minimum(word + 1, flat.shape[1] - 1)]
        lo = lo | (hi << np.uint64(32))
    return (lo >> shift) & np.uint64((1 << lay.width) - 1)


_PERMUTATIONS: dict[int, tuple[OperandLayout, np.ndarray | None]] = {}


def _word_permutation(lay: OperandLayout) -> np.ndarray | None:
    """For a layout of whole 32-bit elements filling every register word: the element
    index of each word (registers = values[:, perm]); None for any other layout."""
    hit = _PERMUTATIONS.get(id(lay))
    if hit is not None and hit[0] is lay:
        return hit[1]
    perm = None
    word = (lay.lane * lay.nregs + lay.bit // 32).reshape(-1)
    if lay.width == 32 and not np.any(lay.bit % 32) and word.size == 64 * lay.nregs:
        perm = np.full(word.size, -1, np.int64)
        perm[word] = np.arange(word.size)
        if (perm < 0).any():
            perm = None
    _PERMUTATIONS[id(lay)] = (lay, perm)
    return perm


def _scatter(values: np.ndarray, lay: OperandLayout) -> np.ndarray:
    """Registers (waves, 64, lay.nregs) holding codes `values` (uint64, (waves, *shape))."""
    waves = values.shape[0]
    inverse = _word_permutation(lay)
    if inverse is not None:
        # Each element is one whole register word and every word holds one: the registers
        # are a permutation of the values (a gather, much faster than a scatter).
        return values.reshape(waves, -1).astype(np.uint32)[:, inverse].reshape(
            waves, 64, lay.nregs)
    out = np.zeros((waves, 64 * lay.nregs), dtype=np.uint64)
    word = (lay.lane * lay.nregs + lay.bit // 32).reshape(-1)
    shift = (lay.bit % 32).astype(np.uint64).reshape(-1)
    vals = values.reshape(waves, -1).astype(np.uint64) & np.uint64((1 << lay.width) - 1)
    if lay.width == 64:
        out[:, word] = vals & np.uint64(0xFFFFFFFF)
        out[:, word + 1] = vals >> np.uint64(32)
    else:
        # Distinct elements of a lane never overlap, so OR-accumulate per word.
        wide = vals << shift
        np.bitwise_or.at(out, (slice(None), word), wide & np.uint64(0xFFFFFFFF))
        spill = (lay.bit.reshape(-1) % 32 + lay.width) > 32
        if spill.any():
            np.bitwise_or.at(out, (slice(None), word[spill] + 1),
                             wide[:, spill] >> np.uint64(32))
    return out.astype(np.uint32).reshape(waves, 64, lay.nregs)


@cache
def _xf32_format() -> nm.FloatFormat:
    return nm.FloatFormat("xf32", 8, 10, 127, "ieee")


def _values(codes: np.ndarray, fmt: str) -> np.ndarray:
    """float64 (or int64 for i8) values of gathered codes."""
    if fmt == "f64":
        return codes.view(np.float64)
    if fmt == "f32":
        return codes.astype(np.uint32).view(np.float32).astype(np.float64)
    if fmt == "xf32":
        f = codes.astype(np.uint32).view(np.float32)
        return nm.decode(nm.encode(f, _xf32_format()), _xf32_format())
    if fmt == "f16":
        return codes.astype(np.uint16).view(np.float16).astype(np.float64)
    if fmt == "bf16":
        return (codes.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if fmt == "i8":
        return codes.astype(np.uint8).view(np.int8).astype(np.int64)
    if fmt == "i32":
        return codes.astype(np.uint32).view(np.int32).astype(np.int64)
    return nm.decode(codes, nm.FORMATS[fmt])


# --------------------------------------------------------------------------- execute


def execute_mfma(target: str, mnemonic: str, a: np.ndarray, b: np.ndarray,
                 c: np.ndarray | None, *, cbsz: int = 0, abid: int = 0, blgp: int = 0,
                 scale_a: np.ndarray | None = None, scale_b: np.ndarray | None = None,
                 op_sel: tuple[int, int] = (0, 0), op_sel_hi: tuple[int, int] = (0, 0),
                 sparse_idx: np.ndarray | None = None,
                 neg: int | tuple[int, int, int] = 0) -> np.ndarray:
    """D of one MFMA/SMFMAC from raw registers: a, b, c uint32 (waves, 64, nregs) (or
    (64, nregs)); returns D shaped like C. SMFMAC: c is the old D, sparse_idx the index VGPR
    (waves, 64[, 1]); v_mfma_scale_*: scale_a/scale_b the scale VGPRs (waves, 64[, 1]) with
    op_sel/op_sel_hi picking their bytes; f64: neg (LLVM's neg:[a,b,c], the BLGP field)
    negates A/B/C. c=None means zeros."""
    info = mfma_info(target, mnemonic)
    if not isinstance(neg, int):
        neg = sum((int(bit) & 1) << i for i, bit in enumerate(neg))
    if neg:
        if info.out_type != "f64":
            raise ValueError(f"{info.mnemonic}: only the f64 MFMAs have NEG modifiers")
        blgp |= neg  # the same encoding field (bits 61-63) as BLGP
    lay = mfma_layout(info.target, info.mnemonic, cbsz=cbsz, abid=abid, blgp=blgp,
                      op_sel=tuple(op_sel), op_sel_hi=tuple(op_sel_hi))
    name = info.mnemonic
    squeeze = np.asarray(a).ndim == 2
    a = _as_waves(a, "A (src0)", lay.a.nregs, name)
    b = _as_waves(b, "B (src1)", lay.b.nregs, name)
    waves = a.shape[0]
    c = np.zeros((waves, 64, lay.c.nregs), dtype=np.uint32) if c is None else _as_waves(
        c, "C (src2)", lay.c.nregs, name)
    if b.shape[0] != waves or c.shape[0] != waves:
        raise ValueError(f"{name}: A, B and C must have the same number of waves "
                         f"({waves}, {b.shape[0]}, {c.shape[0]})")

    av = _values(_gather(a, lay.a), lay.a.fmt)
    bv = _values(_gather(b, lay.b), lay.b.fmt)
    cv = _values(_gather(c, lay.c), lay.c.fmt)
    if lay.a_negate:
        av = -av
    if lay.b_negate:
        bv = -bv
    if lay.c_negate:
        cv = -cv

    if info.sparse:
        if sparse_idx is None:
            raise ValueError(f"{name}: SMFMAC needs sparse_idx (the index VGPR, src2)")
        idx = _as_waves(np.asarray(sparse_idx).reshape(-1, 64, 1), "index (src2)", 1, name)
        av = _densify(av, _gather(idx, lay.idx).astype(np.int64))
    if info.scaled:
        if scale_a is None or scale_b is None:
            raise ValueError(f"{name}: v_mfma_scale_* needs scale_a and scale_b (the scale "
                             f"VGPRs)")
        sa = nm.e8m0_to_float(_gather(_as_waves(np.asarray(scale_a).reshape(-1, 64, 1),
                                                "scale_a", 1, name), lay.scale_a))
        sb = nm.e8m0_to_float(_gather(_as_waves(np.asarray(scale_b).reshape(-1, 64, 1),
                                                "scale_b", 1, name), lay.scale_b))
        # Scaling each element by its block's power of two is exact, so this equals scaling
        # every 32-element partial dot product.
        av = av * np.repeat(sa, 32, axis=-1)
        bv = bv * np.repeat(sb, 32, axis=-2)

    if info.out_type == "i32":
        acc = np.matmul(av, bv) + cv
        out = acc & 0xFFFFFFFF
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            acc = np.matmul(av, bv) + cv
        if info.out_type == "f32":
            with np.errstate(over="ignore"):
                out = acc.astype(np.float32).view(np.uint32)
        else:
            out = acc.view(np.uint64)
    d = _scatter(out.astype(np.uint64), lay.c)
    return d[0] if squeeze else d


# --------------------------------------------------------------------------- register plan
#
# The common MFMAs (f32 result from f32/f16/bf16 inputs: no sparsity, scales, negation or
# 8-bit formats) run straight on the register file (registers, waves, 64): one fancy index
# per input from the registers to (waves, B, M, K) codes, the product permuted to D's
# register words, C added where it lies. The arithmetic is execute_mfma's (float64 values,
# A @ B + C, rounded once to f32), without its (waves, 64, nregs) copies of the operands
# and the gathers of C and scatter of D.

_PLAIN_INPUTS = {"f32": 32, "f16": 16, "bf16": 16}


@dataclass(frozen=True)
class RegisterPlan:
    """Register-file indices of one MFMA (see above): A and B as (register, word) per
    element (word: lane, or 2 lane + half for 16-bit elements), D as the element of
    (B, M, N) each (register, lane) word holds."""

    a_fmt: str
    a_nregs: int
    a_reg: np.ndarray
    a_word: np.ndarray
    b_fmt: str
    b_nregs: int
    b_reg: np.ndarray
    b_word: np.ndarray
    d_nregs: int
    d_elem: np.ndarray  # (d_nregs, 64)


_PLANS: dict[tuple, RegisterPlan | None] = {}


def register_plan(target: str, mnemonic: str, cbsz: int = 0, abid: int = 0,
                  blgp: int = 0) -> RegisterPlan | None:
    """The RegisterPlan of an MFMA with these modifiers, or None when it does not qualify
    (execute_mfma handles every MFMA)."""
    key = (target, mnemonic, cbsz, abid, blgp)
    if key in _PLANS:
        return _PLANS[key]
    plan = None
    info = mfma_info(target, mnemonic)
    if not info.sparse and not info.scaled and info.out_type == "f32":
        lay = mfma_layout(target, mnemonic, cbsz=cbsz, abid=abid, blgp=blgp)
        if not (lay.a_negate or lay.b_negate or lay.c_negate):
            a, b = _plain_input(lay.a), _plain_input(lay.b)
            d_perm = _word_permutation(lay.c)
            if a is not None and b is not None and d_perm is not None:
                plan = RegisterPlan(lay.a.fmt, lay.a.nregs, *a, lay.b.fmt, lay.b.nregs, *b,
                                    lay.c.nregs, d_perm.reshape(64, lay.c.nregs).T.copy())
    _PLANS[key] = plan
    return plan


def _plain_input(lay: OperandLayout) -> tuple[np.ndarray, np.ndarray] | None:
    """(register, word) per element of an input whose elements are whole aligned f32,
    f16 or bf16 words; None otherwise."""
    width = _PLAIN_INPUTS.get(lay.fmt)
    if width is None or lay.width != width or np.any(lay.bit % width):
        return None
    reg = lay.bit // 32
    word = lay.lane * (32 // width) + (lay.bit % 32) // width
    return reg.astype(np.intp), word.astype(np.intp)


def _register_values(regs: np.ndarray, reg: np.ndarray, word: np.ndarray,
                     fmt: str) -> np.ndarray:
    """float64 values (waves, *matrix) of an input from its registers (nregs, waves, 64)."""
    if fmt == "f32":
        return regs.view(np.float32).transpose(1, 0, 2)[:, reg, word].astype(np.float64)
    codes = regs.view(np.uint16).transpose(1, 0, 2)[:, reg, word]
    if fmt == "f16":
        return codes.view(np.float16).astype(np.float64)
    return np.left_shift(codes, 16, dtype=np.uint32).view(np.float32).astype(np.float64)


def mfma_on_registers(plan: RegisterPlan, a: np.ndarray, b: np.ndarray,
                      c: np.ndarray | float) -> np.ndarray:
    """D (d_nregs, waves, 64) as float64 values (to be rounded to f32) of an MFMA with a
    RegisterPlan, from its registers a (a_nregs, waves, 64), b, and c (d_nregs, waves, 64)
    uint32, or C's value when src2 is a constant."""
    av = _register_values(a, plan.a_reg, plan.a_word, plan.a_fmt)
    bv = _register_values(b, plan.b_reg, plan.b_word, plan.b_fmt)
    waves = av.shape[0]
    # (np.take: several times faster than the same fancy index)
    product = np.take(np.matmul(av, bv).reshape(waves, -1), plan.d_elem, axis=1)
    cv = c if isinstance(c, float) else c.view(np.float32).astype(np.float64)
    return product.transpose(1, 0, 2) + cv


def _densify(stored: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Dense A (waves, B, M, K) from stored 2:4 values and their 2-bit positions."""
    *lead, half = stored.shape
    groups = half // 2
    pos = index.reshape(*lead, groups, 2, 1) == np.arange(4)
    vals = stored.reshape(*lead, groups, 2, 1)
    dense = np.where(pos, vals, 0).sum(axis=-2)
    return dense.reshape(*lead, groups * 4)


# --------------------------------------------------------------------------- packing


def _split_matrix(x: np.ndarray, blocks: int, rows: int, cols: int,
                  what: str, name: str) -> np.ndarray:
    """(waves, blocks, rows, cols) view of a user matrix (..., [blocks,] rows, cols)."""
    x = np.asarray(x)
    want = (blocks, rows, cols) if blocks > 1 else (rows, cols)
    if x.shape[-len(want):] != want or x.ndim > len(want) + 1:
        lead = "[waves,] "
        raise ValueError(f"{name}: {what} must be shaped ({lead}{', '.join(map(str, want))})"
                         f", got {x.shape}")
    return x.reshape(-1, blocks, rows, cols)


def _codes(x: np.ndarray, fmt: str) -> np.ndarray:
    """Register codes of user values: unsigned integer arrays are raw codes (bit patterns);
    float arrays are encoded (nearest even); i8/i32 take integers."""
    if fmt in ("i8", "i32"):
        return np.asarray(x).astype(np.int64).astype(np.uint64)
    if np.issubdtype(x.dtype, np.unsignedinteger):
        return x.astype(np.uint64)
    if fmt == "f16" and x.dtype == np.float16:
        return x.view(np.uint16).astype(np.uint64)
    if fmt == "f64":
        return x.astype(np.float64).view(np.uint64)
    if fmt in ("f32", "xf32"):
        return x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return nm.encode(x, nm.FORMATS[fmt]).astype(np.uint64)


def pack_a(target: str, mnemonic: str, a: np.ndarray, *,
           a_format: int | str | None = None) -> np.ndarray:
    """A matrix (..., [blocks,] M, K) to src0 registers (waves, 64, nregs) uint32."""
    info = mfma_info(target, mnemonic)
    if info.sparse:
        raise ValueError(f"{info.mnemonic} has a sparse A: use pack_sparse_a")
    lay = mfma_layout(info.target, info.mnemonic, a_format=a_format).a
    x = _split_matrix(a, info.blocks, info.m, info.k, "A", info.mnemonic)
    return _scatter(_codes(x, lay.fmt), lay)


def pack_b(target: str, mnemonic: str, b: np.ndarray, *,
           b_format: int | str | None = None) -> np.ndarray:
    """B matrix (..., [blocks,] K, N) to src1 registers (waves, 64, nregs) uint32."""
    info = mfma_info(target, mnemonic)
    lay = mfma_layout(info.target, info.mnemonic, b_format=b_format).b
    x = _split_matrix(b, info.blocks, info.k, info.n, "B", info.mnemonic)
    return _scatter(_codes(x, lay.fmt), lay)


def pack_c(target: str, mnemonic: str, c: np.ndarray) -> np.ndarray:
    """C matrix (..., [blocks,] M, N) to src2 registers (waves, 64, nregs) uint32 (f32 for
    f32 MFMAs, int32 for i32, float64 for f64)."""
    info = mfma_info(target, mnemonic)
    lay = mfma_layout(info.target, info.mnemonic).c
    x = _split_matrix(c, info.blocks, info.m, info.n, "C", info.mnemonic)
    return _scatter(_codes(x, lay.fmt), lay)


def unpack_d(target: str, mnemonic: str, d: np.ndarray) -> np.ndarray:
    """D registers (waves, 64, nregs) to the matrix (waves, [blocks,] M, N) as float32,
    int32 or float64."""
    info = mfma_info(target, mnemonic)
    lay = mfma_layout(info.target, info.mnemonic).c
    codes = _gather(_as_waves(d, "D", lay.nregs, info.mnemonic), lay)
    if info.out_type == "f32":
        out = codes.astype(np.uint32).view(np.float32)
    elif info.out_type == "i32":
        out = codes.astype(np.uint32).view(np.int32)
    else:
        out = codes.view(np.float64)
    return out if info.blocks > 1 else out[:, 0]


def pack_sparse_a(target: str, mnemonic: str, a: np.ndarray, *, cbsz: int = 0,
                  abid: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Dense 2:4-sparse A (..., M, K) to (src0 registers, index VGPR (waves, 64) uint32):
    at most two nonzeros per group of four K elements; groups with fewer keep zeros at the
    lowest free positions. cbsz/abid choose the index bits as execute_mfma reads them."""
    info = mfma_info(target, mnemonic)
    if not info.sparse:
        raise ValueError(f"{info.mnemonic} is not a sparse (SMFMAC) instruction")
    lay = mfma_layout(info.target, info.mnemonic, cbsz=cbsz, abid=abid)
    x = np.asarray(a)
    dense = _split_matrix(x, 1, info.m, info.k, "A", info.mnemonic)
    nz = np.asarray(_values(_codes(dense, lay.a.fmt), lay.a.fmt) != 0)
    grouped = nz.reshape(*nz.shape[:-1], info.k // 4, 4)
    if (grouped.sum(axis=-1) > 2).any():
        raise ValueError(f"{info.mnemonic}: A is not 2:4 sparse (a group of four K elements "
                         f"has more than two nonzeros)")
    # Stable order: nonzero positions first (ascending), then the lowest zero positions.
    order = np.argsort(~grouped, axis=-1, kind="stable")[..., :2]
    order = np.sort(order, axis=-1)
    codes = _codes(dense, lay.a.fmt).reshape(*nz.shape[:-1], info.k // 4, 4)
    stored = np.take_along_axis(codes, order, axis=-1).reshape(*nz.shape[:-1], info.k // 2)
    regs = _scatter(stored, lay.a)
    idx = _scatter(order.reshape(*nz.shape[:-1], info.k // 2).astype(np.uint64), lay.idx)
    return regs, idx[..., 0]


def pack_scale(target: str, mnemonic: str, operand: str, scales: np.ndarray, *,
               byte: int = 0) -> np.ndarray:
    """E8M0 scale codes to a scale VGPR (waves, 64) uint32 for v_mfma_scale_*: operand "a"
    takes (..., M, K/32), "b" (..., K/32, N); the codes go to byte `byte` (op_sel)."""
    info = mfma_info(target, mnemonic)
    if not info.scaled:
        raise ValueError(f"{info.mnemonic} takes no scale operands")
    lo, hi = byte & 1, (byte >> 1) & 1
    lay = mfma_layout(info.target, info.mnemonic, op_sel=(lo, lo), op_sel_hi=(hi, hi))
    target_lay = lay.scale_a if operand == "a" else lay.scale_b
    rows, cols = target_lay.shape[1:]
    x = _split_matrix(np.asarray(scales).astype(np.uint64), 1, rows, cols,
                      f"scale_{operand}", info.mnemonic)
    return _scatter(x, target_lay)[..., 0]
