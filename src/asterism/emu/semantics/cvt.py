"""Narrow-float conversions: fp8/bf8 (gfx942 FNUZ, gfx950 OCP), the gfx950 microscaling
v_cvt_scalef32_* family (fp8/bf8/fp6/bf6/fp4 with an f32 scale of which only the exponent
counts), and the stochastic-rounding converts. The number formats and rounding live in
numerics.py; this module maps operands, OPSEL byte/word selects and packing to them, as the
CDNA3/CDNA4 pseudo-code describes:

* byte/word selects: OPSEL[1:0] picks the source byte (OPSEL[0] the source word for packed
  pairs); OPSEL[3] the destination word, OPSEL[3:2] the destination byte, and the other
  destination bits are preserved;
* the SR pk forms step their random dword through v_prng_b32 between elements;
* fp6 vectors pack 32 six-bit codes into 6 dwords (code i at bits [6i, 6i+6)); 2xpk16
  interleaves its two sources (S0[k] at code 2k, S1[k] at code 2k+1).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from asterism.emu import numerics as nx
from asterism.emu.core import Group
from asterism.emu.errors import CompileError
from asterism.emu.info import OpInfo
from asterism.emu.semantics.registry import Table, unsupported_op
from asterism.emu.vops import clamp_omod, make_src, op_sel_bits, store, vreg_row
from asterism.mc.operands import Mod, Reg

TABLE = Table("cvt")
builder = TABLE.builder

U16, U32, F32 = np.uint16, np.uint32, np.float32

_NARROW = {"fp6": nx.E2M3, "bf6": nx.E3M2, "fp4": nx.E2M1}


def _fmt(target: str, name: str) -> nx.FloatFormat:
    if name in ("fp8", "bf8"):
        return nx.fp8_formats(target)[name]
    return _NARROW[name]


def prng(x: np.ndarray) -> np.ndarray:
    """v_prng_b32: the next pseudo-random dword (shift left, xor 197 when bit 31 was set)."""
    x = np.asarray(x, U32)
    return (x << U32(1)) ^ np.where(x >> U32(31), U32(197), U32(0))


def _opsel(info: OpInfo) -> tuple[int, int, int, int]:
    """OPSEL[0..3] (sources, then the destination bit)."""
    return tuple(int(b) for b in op_sel_bits(info))  # type: ignore[return-value]


def _words(info: OpInfo, slot: str, pos: int, nregs: int) -> Callable[[Group], np.ndarray]:
    """Reader of a source as raw dwords: (n, 64) for one register, (n, 64, nregs) else."""
    if nregs == 1:
        raw = make_src(info, slot, "u32", pos)
        return lambda g: np.broadcast_to(np.asarray(raw(g), U32), (g.n, 64))
    op = info.op(slot)
    if isinstance(op, Mod):
        op = op.operand
    if not isinstance(op, Reg) or op.kind not in ("v", "a"):
        raise CompileError(f"{info.mnemonic}: {slot} must be a VGPR tuple, not {op}")
    row = vreg_row(info, op)
    return lambda g: np.moveaxis(g.v[row:row + nregs], 0, -1)


def _f32(info: OpInfo, slot: str, pos: int) -> Callable[[Group], np.ndarray]:
    """Reader of an f32 source (modifiers applied), broadcast to (n, 64)."""
    rd = make_src(info, slot, "f32", pos)
    return lambda g: np.broadcast_to(np.asarray(rd(g), F32), (g.n, 64))


def _writer(info: OpInfo, nregs: int):
    """write(g, dwords) for vdst: (n, 64) or (n, 64, nregs) uint32 under EXEC."""
    row = vreg_row(info, info.op("vdst"))

    def write(g: Group, words: np.ndarray) -> None:
        words = np.asarray(words, U32)
        if nregs == 1:
            store(g, g.v[row], words, None)
        else:
            for k in range(nregs):
                store(g, g.v[row + k], words[..., k], None)
    return write


def _vdst_old(info: OpInfo) -> Callable[[Group], np.ndarray]:
    row = vreg_row(info, info.op("vdst"))
    return lambda g: g.v[row]


def _as_f32(codes16: np.ndarray, kind: str) -> np.ndarray:
    return nx.f16_to_f32(codes16) if kind == "f16" else nx.bf16_to_f32(codes16)


def _halves(words: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The two 16-bit float values of each dword as float32 (low, high)."""
    return (_as_f32(words & U32(0xFFFF), kind), _as_f32(words >> U32(16), kind))


def _finish(info: OpInfo, op: Callable[[Group], np.ndarray], write) -> Callable[[Group], int]:
    nxt = info.next_index

    def run(g: Group) -> int:
        with np.errstate(all="ignore"):
            write(g, op(g))
        return nxt
    return run


# ---------------------------------------------------------------------------- fp8 (both)

def _cvt_f32_f8(kind: str):
    def build(info: OpInfo):
        src = _words(info, "src0", 0, 1)
        sel = _opsel(info)
        byte = sel[0] | (sel[1] << 1)
        sdwa = info.mods.get("src0_sel") if info.enc == "SDWA" else None
        if sdwa:
            byte = {"BYTE_0": 0, "BYTE_1": 1, "BYTE_2": 2, "BYTE_3": 3}.get(sdwa, 0)
        post = clamp_omod(info, "f32")
        target = info.target
        write = _writer(info, 1)

        def op(g: Group) -> np.ndarray:
            r = nx.cvt_f32_f8(target, kind, src(g), byte_sel=byte)
            if post is not None:
                r = np.asarray(post(r, g), F32)
            return r.view(U32)
        return _finish(info, op, write)
    return build


def _cvt_pk_f32_f8(kind: str):
    def build(info: OpInfo):
        src = _words(info, "src0", 0, 1)
        word = _opsel(info)[0]
        if info.enc == "SDWA" and info.mods.get("src0_sel") == "WORD_1":
            word = 1
        post = clamp_omod(info, "f32")
        target = info.target
        write = _writer(info, 2)

        def op(g: Group) -> np.ndarray:
            lo, hi = nx.cvt_pk_f32_f8(target, kind, src(g), word_sel=word)
            if post is not None:
                lo, hi = (np.asarray(post(x, g), F32) for x in (lo, hi))
            return np.stack([lo.view(U32), hi.view(U32)], axis=-1)
        return _finish(info, op, write)
    return build


def _cvt_pk_f8_f32(kind: str):
    def build(info: OpInfo):
        a, b = _f32(info, "src0", 0), _f32(info, "src1", 1)
        old = _vdst_old(info)
        word = _opsel(info)[3]
        sat = bool(info.mods.get("clamp"))
        target = info.target

        def op(g: Group) -> np.ndarray:
            return nx.cvt_pk_f8_f32(target, kind, a(g), b(g), old(g), word_sel=word,
                                    saturate=sat)
        return _finish(info, op, _writer(info, 1))
    return build


def _cvt_sr_f8_f32(kind: str):
    def build(info: OpInfo):
        a = _f32(info, "src0", 0)
        rnd = _words(info, "src1", 1, 1)
        old = _vdst_old(info)
        sel = _opsel(info)
        byte = sel[2] | (sel[3] << 1)
        sat = bool(info.mods.get("clamp"))
        target = info.target

        def op(g: Group) -> np.ndarray:
            return nx.cvt_sr_f8_f32(target, kind, a(g), rnd(g), old(g), byte_sel=byte,
                                    saturate=sat)
        return _finish(info, op, _writer(info, 1))
    return build


def _cvt_sr_16_f32(kind: str):
    """gfx950 v_cvt_sr_{f16,bf16}_f32: stochastic rounding into the word OPSEL[3] picks."""
    conv = nx.f32_to_f16 if kind == "f16" else nx.f32_to_bf16

    def build(info: OpInfo):
        a = _f32(info, "src0", 0)
        rnd = _words(info, "src1", 1, 1)
        old = _vdst_old(info)
        word = _opsel(info)[3]

        def op(g: Group) -> np.ndarray:
            code = conv(a(g), rounding="sr", rand=rnd(g))
            return nx.insert_field(old(g), code, 16 * word, 16)
        return _finish(info, op, _writer(info, 1))
    return build


for _k in ("fp8", "bf8"):
    builder(f"v_cvt_f32_{_k}")(_cvt_f32_f8(_k))
    builder(f"v_cvt_pk_f32_{_k}")(_cvt_pk_f32_f8(_k))
    builder(f"v_cvt_pk_{_k}_f32")(_cvt_pk_f8_f32(_k))
    builder(f"v_cvt_sr_{_k}_f32")(_cvt_sr_f8_f32(_k))
builder("v_cvt_sr_f16_f32")(_cvt_sr_16_f32("f16"))
builder("v_cvt_sr_bf16_f32")(_cvt_sr_16_f32("bf16"))


# ---------------------------------------------------------------------------- scalef32

def _scale_reader(info: OpInfo, slot: str, pos: int):
    return _f32(info, slot, pos)


def _encode(x, fmt, scale, **kw):
    return nx.cvt_scalef32_encode(x, fmt, scale, **kw).astype(U32)


def _scale_pk_down(src_kind: str, dst: str):
    """v_cvt_scalef32_pk_{fp8,bf8,fp4}_{f32,f16,bf16}: two values -> two codes placed in the
    destination word (8-bit codes, OPSEL[3]) or byte (fp4, OPSEL[3:2])."""
    def build(info: OpInfo):
        fmt = _fmt(info.target, dst)
        width = fmt.bits
        sel = _opsel(info)
        if src_kind == "f32":
            a, b = _f32(info, "src0", 0), _f32(info, "src1", 1)
            scale = _scale_reader(info, "src2", 2)

            def values(g: Group):
                return a(g), b(g)
        else:
            w = _words(info, "src0", 0, 1)
            scale = _scale_reader(info, "src1", 1)

            def values(g: Group):
                return _halves(w(g), src_kind)
        old = _vdst_old(info)
        field = 16 * sel[3] if width == 8 else 8 * (sel[2] | (sel[3] << 1))

        def op(g: Group) -> np.ndarray:
            x0, x1 = values(g)
            s = scale(g)
            pair = _encode(x0, fmt, s) | (_encode(x1, fmt, s) << U32(width))
            return nx.insert_field(old(g), pair, field, 2 * width)
        return _finish(info, op, _writer(info, 1))
    return build


def _scale_sr_down(src_kind: str, dst: str):
    """v_cvt_scalef32_sr_{fp8,bf8}_{f32,f16,bf16}: one value, stochastic rounding with the
    S1 dword, the code into byte OPSEL[3:2]."""
    def build(info: OpInfo):
        fmt = _fmt(info.target, dst)
        sel = _opsel(info)
        if src_kind == "f32":
            a = _f32(info, "src0", 0)
        else:
            w = _words(info, "src0", 0, 1)
            a = lambda g: _as_f32(w(g) & U32(0xFFFF), src_kind)
        rnd = _words(info, "src1", 1, 1)
        scale = _scale_reader(info, "src2", 2)
        old = _vdst_old(info)
        byte = sel[2] | (sel[3] << 1)

        def op(g: Group) -> np.ndarray:
            code = _encode(a(g), fmt, scale(g), rounding="sr", rand=rnd(g))
            return nx.insert_field(old(g), code, 8 * byte, 8)
        return _finish(info, op, _writer(info, 1))
    return build


def _scale_sr_pk_fp4(src_kind: str):
    """v_cvt_scalef32_sr_pk_fp4_*: two values, SR with S1 then v_prng_b32(S1), into the
    destination byte OPSEL[3:2]."""
    def build(info: OpInfo):
        fmt = nx.E2M1
        sel = _opsel(info)
        if src_kind == "f32":
            w2 = _words(info, "src0", 0, 2)

            def values(g: Group):
                x = w2(g)
                return x[..., 0].view(F32), x[..., 1].view(F32)
        else:
            w = _words(info, "src0", 0, 1)

            def values(g: Group):
                return _halves(w(g), src_kind)
        rnd = _words(info, "src1", 1, 1)
        scale = _scale_reader(info, "src2", 2)
        old = _vdst_old(info)
        byte = sel[2] | (sel[3] << 1)

        def op(g: Group) -> np.ndarray:
            x0, x1 = values(g)
            r0 = rnd(g)
            s = scale(g)
            c0 = _encode(x0, fmt, s, rounding="sr", rand=r0)
            c1 = _encode(x1, fmt, s, rounding="sr", rand=prng(r0))
            return nx.insert_field(old(g), c0 | (c1 << U32(4)), 8 * byte, 8)
        return _finish(info, op, _writer(info, 1))
    return build


def _scale_up(src: str, dst_kind: str, pair: bool):
    """v_cvt_scalef32_[pk_]{f32,f16,bf16}_{fp8,bf8,fp4}: codes times the scale. Single
    fp8 values take source byte OPSEL[1:0]; pairs of fp8 take word OPSEL[0]; fp4 pairs take
    byte OPSEL[1:0]. f32 pairs fill two VGPRs, 16-bit pairs one; a single f16 lands in the
    word OPSEL[3] picks (the other word kept)."""
    def build(info: OpInfo):
        fmt = _fmt(info.target, src)
        width = fmt.bits
        sel = _opsel(info)
        w = _words(info, "src0", 0, 1)
        scale = _scale_reader(info, "src1", 1)
        if pair and width == 8:
            shift = 16 * sel[0]
        else:
            shift = 8 * (sel[0] | (sel[1] << 1))
        mask = U32((1 << width) - 1)
        old = _vdst_old(info) if not pair and dst_kind != "f32" else None
        hi_word = sel[3]

        def dec(codes, s):
            r = nx.cvt_scalef32_decode(codes, fmt, s, out=dst_kind)
            return r.view(U32) if dst_kind == "f32" else r.astype(U32)

        def op(g: Group) -> np.ndarray:
            x = w(g) >> U32(shift)
            s = scale(g)
            c0 = x & mask
            if not pair:
                r = dec(c0, s)
                if old is not None:
                    return nx.insert_field(old(g), r, 16 * hi_word, 16)
                return r
            c1 = (x >> U32(width)) & mask
            r0, r1 = dec(c0, s), dec(c1, s)
            if dst_kind == "f32":
                return np.stack([r0, r1], axis=-1)
            return r0 | (r1 << U32(16))
        nregs = 2 if (pair and dst_kind == "f32") else 1
        return _finish(info, op, _writer(info, nregs))
    return build


def _scale_pk32_down(src_kind: str, dst: str, sr: bool):
    """v_cvt_scalef32_[sr_]pk32_{fp6,bf6}_{f32,f16,bf16}: 32 values -> 32 codes in 6
    dwords (SR: the random dword steps through v_prng_b32 per element)."""
    def build(info: OpInfo):
        fmt = _fmt(info.target, dst)
        nsrc = 32 if src_kind == "f32" else 16
        src = _words(info, "src0", 0, nsrc)
        if sr:
            rnd = _words(info, "src1", 1, 1)
            scale = _scale_reader(info, "src2", 2)
        else:
            rnd = None
            scale = _scale_reader(info, "src1", 1)

        def op(g: Group) -> np.ndarray:
            x = src(g)
            if src_kind == "f32":
                vals = x.view(F32)
            else:
                lo, hi = _halves(x, src_kind)
                vals = np.stack([lo, hi], axis=-1).reshape(*x.shape[:-1], 32)
            s = scale(g)[..., None]
            if rnd is None:
                codes = _encode(vals, fmt, np.broadcast_to(s, vals.shape))
            else:
                r = rnd(g)
                codes = np.empty(vals.shape, U32)
                for k in range(32):
                    codes[..., k] = _encode(vals[..., k], fmt, s[..., 0], rounding="sr",
                                            rand=r)
                    r = prng(r)
            return nx.pack_codes(codes, 6)
        return _finish(info, op, _writer(info, 6))
    return build


def _scale_2xpk16(dst: str):
    """v_cvt_scalef32_2xpk16_{fp6,bf6}_f32: S0[k] -> code 2k, S1[k] -> code 2k + 1."""
    def build(info: OpInfo):
        fmt = _fmt(info.target, dst)
        a = _words(info, "src0", 0, 16)
        b = _words(info, "src1", 1, 16)
        scale = _scale_reader(info, "src2", 2)

        def op(g: Group) -> np.ndarray:
            vals = np.stack([a(g).view(F32), b(g).view(F32)], axis=-1)
            vals = vals.reshape(*vals.shape[:-2], 32)
            s = np.broadcast_to(scale(g)[..., None], vals.shape)
            return nx.pack_codes(_encode(vals, fmt, s), 6)
        return _finish(info, op, _writer(info, 6))
    return build


def _scale_pk32_up(src: str, dst_kind: str):
    """v_cvt_scalef32_pk32_{f32,f16,bf16}_{fp6,bf6}: 32 codes of 6 dwords times the scale."""
    def build(info: OpInfo):
        fmt = _fmt(info.target, src)
        words = _words(info, "src0", 0, 6)
        scale = _scale_reader(info, "src1", 1)
        nout = 32 if dst_kind == "f32" else 16

        def op(g: Group) -> np.ndarray:
            codes = nx.unpack_codes(words(g), 6, 32)
            s = np.broadcast_to(scale(g)[..., None], codes.shape)
            r = nx.cvt_scalef32_decode(codes, fmt, s, out=dst_kind)
            if dst_kind == "f32":
                return r.view(U32)
            r = r.astype(U32).reshape(*r.shape[:-1], 16, 2)
            return r[..., 0] | (r[..., 1] << U32(16))
        return _finish(info, op, _writer(info, nout))
    return build


def _register() -> None:
    for s in ("f32", "f16", "bf16"):
        for d in ("fp8", "bf8", "fp4"):
            builder(f"v_cvt_scalef32_pk_{d}_{s}")(_scale_pk_down(s, d))
            builder(f"v_cvt_scalef32_pk_{s}_{d}")(_scale_up(d, s, pair=True))
        for d in ("fp8", "bf8"):
            builder(f"v_cvt_scalef32_sr_{d}_{s}")(_scale_sr_down(s, d))
            builder(f"v_cvt_scalef32_{s}_{d}")(_scale_up(d, s, pair=False))
        builder(f"v_cvt_scalef32_sr_pk_fp4_{s}")(_scale_sr_pk_fp4(s))
        for d in ("fp6", "bf6"):
            builder(f"v_cvt_scalef32_pk32_{d}_{s}")(_scale_pk32_down(s, d, sr=False))
            builder(f"v_cvt_scalef32_sr_pk32_{d}_{s}")(_scale_pk32_down(s, d, sr=True))
            builder(f"v_cvt_scalef32_pk32_{s}_{d}")(_scale_pk32_up(d, s))
    for d in ("fp6", "bf6"):
        builder(f"v_cvt_scalef32_2xpk16_{d}_f32")(_scale_2xpk16(d))


_register()


@builder("v_mfma_ld_scale_b32")
def _ld_scale(info: OpInfo):
    # The assembler fuses it into v_mfma_scale_*; alone it would set state for the next MFMA.
    return unsupported_op(info, "a standalone v_mfma_ld_scale_b32 is not modeled (write "
                          "v_mfma_scale_* instead)")
