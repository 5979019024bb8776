"""Lowering of the upstream `amdgpu` ops (the dialect: asterism.frontend.dialects.amdgpu).

* `raw_buffer_load/store/atomic_*`: MUBUF instructions with the memref's buffer resource, the
  indices (times the element size, plus `indexOffset` elements) as the VGPR offset and
  `sgprOffset` as soffset (bytes, outside the range check, as the hardware does). CDNA checks
  raw buffer ranges always: `boundsCheck = false` changes nothing there.
* `fat_raw_buffer_cast`: the same memref with a new resource (num_records = `validBytes` when
  given); `cacheSwizzleStride` only affects caching and is not encoded; `resetOffset` is a
  no-op for the static identity-layout memrefs supported.
* `mfma`: the instruction `v_mfma_<out>_<m>x<n>x<k>[_<blocks>b]_<in>` the types and m/n/k/
  blocks name (an error lists the shapes the target has otherwise), operands packed as the
  dialect documents (vectors little-endian in consecutive VGPRs), cbsz/abid/blgp as modifiers.
* `dpp`: `v_mov_b32_dpp` into a copy of `old` per 32-bit register.
* `lds_barrier`: `s_waitcnt lgkmcnt(0)` + `s_barrier`; `sched_barrier`: `amdgcn.sched_barrier`
  with LLVM's mask, no machine code (as LLVM's pseudo): the `schedule` pass moves nothing across
  it, a full fence whatever the mask would allow.
* fp8: `v_cvt_f32_fp8`/`v_cvt_pk_f32_fp8` (ext_packed_fp8), `v_cvt_pk_fp8_f32`
  (packed_trunc_2xfp8), `v_cvt_sr_fp8_f32` (packed_stoch_round_fp8) and their bf8 forms; the
  FNUZ types on gfx942 and the OCP types on gfx950 (the formats those chips convert).
* `wmma`: an error on gfx942/gfx950 (RDNA only).
* MLIR 22 ops beyond the seed: `scaled_mfma` (gfx950 `v_mfma_scale_f32_*_f8f6f4`, format
  codes in cbsz/blgp, scale byte selects in op_sel/op_sel_hi), `sparse_mfma` (`v_smfmac_*`
  over a copy of C), `gather_to_lds` (MUBUF loads with `lds`, M0 = the LDS destination),
  `transpose_load` (gfx950 `ds_read_b*_tr_b*`), `swizzle_bitmode` (`ds_swizzle_b32`),
  `permlane_swap` (gfx950 `v_permlane16/32_swap_b32`), `memory_counter_wait` (`s_waitcnt`),
  `scaled_ext_packed` / `packed_scaled_trunc` (gfx950 `v_cvt_scalef32_pk_*`, fp8/bf8/fp4);
  an op a target lacks is an error naming the op, the instruction and the target.
"""

from __future__ import annotations

import dataclasses

from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IntegerType,
    VectorType,
    i32,
)
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation

from asterism.frontend.dialects import amdgpu
from asterism.frontend.emit import align, int_binary, words_of
from asterism.frontend.lowering import HandlerTable, KernelLowering
from asterism.frontend.memory import (
    RSRC_WORD3,
    address,
    byte_offset,
    cas_loop,
    load,
    store,
    wait_all,
)
from asterism.frontend.values import (
    LV,
    const_lv,
    elem_bits,
    fail,
    fp8_kind,
    memref_info,
    reg_count,
    signed32,
    type_bits,
    type_name,
)
from asterism.isa import get_isa


def _lds_barrier(low: KernelLowering, op: amdgpu.LDSBarrierOp) -> None:
    wait_all(low, vm=False)
    low.kb.s_barrier()


SCHED_MASK = {"none": 0, "non_mem_non_sideffect": 1, "valu": 2, "salu": 4, "mfma_wmma": 8,
              "all_vmem": 16, "vmem_read": 32, "vmem_write": 64, "all_ds": 128,
              "ds_read": 256, "ds_write": 512, "transcendental": 1024}


def _sched_barrier(low: KernelLowering, op: amdgpu.SchedBarrierOp) -> None:
    mask = 0
    for name in op.opts.flags.data.split("|"):
        mask |= SCHED_MASK[name]
    from asterism.ir.ops import SchedBarrierOp

    low.kb._insert(SchedBarrierOp(mask))


def _wmma(low: KernelLowering, op: amdgpu.WMMAOp) -> None:
    raise fail(op, f"WMMA exists only on RDNA chips (gfx11, gfx12); {low.target} has "
                   "matrix cores through amdgpu.mfma")


# ----------------------------------------------------------------------------- buffers


def _buffer_memref(low: KernelLowering, op, value):
    lv = low.get(value)
    if lv.kind != "m" or lv.value.space != "global":
        raise fail(op, "expects a global memref (a kernel argument or a fat_raw_buffer_cast "
                       "of one)")
    return lv


def _soffset(low: KernelLowering, op, mem: LV):
    """The soffset operand: `sgprOffset` in bytes. MLIR's raw_buffer_load/store/atomic
    documentation: "All indices and offsets are in units of the memref's data type and are
    converted to bytes during lowering" (AMDGPUToROCDL multiplies sgprOffset by the element
    byte width), so it is scaled by the element size here."""
    if op.sgprOffset is None:
        return 0
    lv = low.get(op.sgprOffset)
    if not lv.uniform:
        raise fail(op, "sgprOffset must be the same in every lane")
    scaled = int_binary(low, "arith.muli", lv, const_lv(mem.value.elem_bytes, i32), i32)
    return low.operand(scaled)


def _offset(low: KernelLowering, op, mem) -> LV:
    extra = op.indexOffset.value.data if op.indexOffset is not None else 0
    return byte_offset(low, op, mem, [low.get(i) for i in op.indices], extra)


def _raw_load(low: KernelLowering, op: amdgpu.RawBufferLoadOp) -> None:
    mem = _buffer_memref(low, op, op.memref)
    low.set(op.value, load(low, op, mem, _offset(low, op, mem), op.value.type,
                           _soffset(low, op, mem)))


def _raw_store(low: KernelLowering, op: amdgpu.RawBufferStoreOp) -> None:
    mem = _buffer_memref(low, op, op.memref)
    store(low, op, mem, _offset(low, op, mem), low.get(op.value), op.value.type,
          _soffset(low, op, mem))


def _atomic_mnemonic(op, t, target: str) -> str:
    kind = op.name.removeprefix("amdgpu.raw_buffer_atomic_")
    tn = type_name(t) if not isinstance(t, VectorType) else f"vector<{t}>"
    names = {
        ("fadd", "f32"): "buffer_atomic_add_f32", ("fadd", "f64"): "buffer_atomic_add_f64",
        ("fmax", "f64"): "buffer_atomic_max_f64",
        ("smax", "i32"): "buffer_atomic_smax", ("smax", "i64"): "buffer_atomic_smax_x2",
        ("umin", "i32"): "buffer_atomic_umin", ("umin", "i64"): "buffer_atomic_umin_x2",
        ("cmpswap", "i32"): "buffer_atomic_cmpswap", ("cmpswap", "f32"): "buffer_atomic_cmpswap",
        ("cmpswap", "i64"): "buffer_atomic_cmpswap_x2",
    }
    if isinstance(t, VectorType) and kind == "fadd" and t.get_shape() == (2,):
        et = type_name(t.element_type)
        names[("fadd", tn)] = {"f16": "buffer_atomic_pk_add_f16",
                               "bf16": "buffer_atomic_pk_add_bf16"}.get(et, "")
    name = names.get((kind, tn), "")
    if not name or name not in get_isa(target):
        supported = sorted(k[1] for k in names if k[0] == kind and names[k] in get_isa(target))
        raise fail(op, f"{t} is not supported on {target} (types: {', '.join(supported)})")
    return name


RAW_ATOMICS = (amdgpu.RawBufferAtomicFaddOp, amdgpu.RawBufferAtomicFmaxOp,
               amdgpu.RawBufferAtomicSmaxOp, amdgpu.RawBufferAtomicUminOp)


def _raw_atomic(low: KernelLowering, op: IRDLOperation) -> None:  # one of RAW_ATOMICS
    mem = _buffer_memref(low, op, op.memref)
    if isinstance(op, amdgpu.RawBufferAtomicFmaxOp) and type_name(op.value.type) == "f32":
        # CDNA has no f32 buffer max (buffer_atomic_max_f64 only): a compare-and-swap loop
        # of v_max_f32 (the maximum the f64 instruction and non-GFX9 chips' f32 one take)
        cas_loop(low, op, mem, _offset(low, op, mem), low.get(op.value), op.value.type,
                 "arith.maxnumf", _soffset(low, op, mem))
        return
    name = _atomic_mnemonic(op, op.value.type, low.target)
    off = low.vgpr(_offset(low, op, mem))
    low.kb.emit(name, low.vgpr(low.get(op.value)), off, mem.value.rsrc, _soffset(low, op, mem),
                offen=True)


def _raw_cmpswap(low: KernelLowering, op: amdgpu.RawBufferAtomicCmpswapOp) -> None:
    mem = _buffer_memref(low, op, op.memref)
    t = op.src.type
    name = _atomic_mnemonic(op, t, low.target)
    n = reg_count(t)
    kb = low.kb
    # data = (new value, compare value) in consecutive registers; sc0 returns the old value
    words = [kb.v_mov_b32(None, low.operand(w)) for lv in (low.get(op.src), low.get(op.cmp))
             for w in words_of(low, lv, n)]
    data = kb.join(*words, align=2 if n == 1 else 4)
    off = low.vgpr(_offset(low, op, mem))
    old = kb.emit(name, data, off, mem.value.rsrc, _soffset(low, op, mem), offen=True, sc0=True)
    low.set(op.value, LV("v", t, kb.sub(old, 0, n) if n > 1 else kb.sub(old, 0)))


def _fat_cast(low: KernelLowering, op: amdgpu.FatRawBufferCastOp) -> None:
    src = _buffer_memref(low, op, op.source)
    # the same sizes and strides (dynamic ones: the source's registers)
    info = dataclasses.replace(memref_info(op.result.type, op, dynamic=True),
                               sizes=src.value.sizes, strides=src.value.strides)
    info.nbytes = src.value.nbytes
    kb = low.kb
    if op.validBytes is None:
        info.rsrc = src.value.rsrc
    else:
        valid = low.get(op.validBytes)
        if not valid.uniform:
            raise fail(op, "validBytes must be the same in every lane")
        lo, hi, _num, _w3 = kb.split(src.value.rsrc)
        # validBytes is an i64: num_records takes its low 32 bits
        num = LV("c", i32, valid.value[:1], scalar=valid.scalar) if valid.kind == "c" else \
            LV("s", i32, kb.sub(valid.value, 0) if valid.regs > 1 else valid.value)
        info.rsrc = kb.join(kb.s_mov_b32(None, lo), kb.s_mov_b32(None, hi),
                            kb.s_mov_b32(None, low.operand(num)),
                            kb.s_mov_b32(None, signed32(RSRC_WORD3)), align=4)
    low.set(op.result, LV("m", op.result.type, info))


# ----------------------------------------------------------------------------- mfma


def _mfma_input(op, ta, tb, target: str) -> str:
    if isinstance(ta, Float32Type):
        return "f32"
    if isinstance(ta, Float64Type):
        return "f64"
    if not isinstance(ta, VectorType):
        raise fail(op, f"source type {ta} is not supported")
    et = ta.element_type
    fa, fb = fp8_kind(et), fp8_kind(tb.element_type) if isinstance(tb, VectorType) else None
    if fa is not None:
        if fb is None:
            raise fail(op, "both sources must be 8-bit floats")
        for _kind, chip in (fa, fb):
            if chip != target:
                want = "FNUZ (f8E4M3FNUZ, f8E5M2FNUZ)" if target == "gfx942" else \
                    "OCP (f8E4M3FN, f8E5M2)"
                raise fail(op, f"{target} converts {want} 8-bit floats, not {et}")
        return f"{fa[0]}_{fb[0]}"
    if isinstance(et, Float32Type):
        return "xf32"
    if isinstance(et, IntegerType) and et.width.data == 8:
        return "i8"
    return type_name(et)


def mfma_mnemonic(op, target: str) -> str:
    """The v_mfma instruction an amdgpu.mfma names on `target` (an error lists the ones the
    source type has otherwise)."""
    ta, tb, tc = op.sourceA.type, op.sourceB.type, op.destC.type
    ec = tc.element_type if isinstance(tc, VectorType) else tc
    out = "f64" if isinstance(ec, Float64Type) else "i32" if isinstance(ec, IntegerType) \
        else "f32"
    src = _mfma_input(op, ta, tb, target)
    m, n, k = (op.m.value.data, op.n.value.data, op.k.value.data)
    blocks = op.blocks.value.data if op.blocks is not None else 1
    suffix = f"_{blocks}b" if blocks > 1 else ""
    name = f"v_mfma_{out}_{m}x{n}x{k}{suffix}_{src}"
    isa = get_isa(target)
    if name in isa:
        regs = {"a": reg_count(ta), "c": reg_count(tc)}
        inst = isa.get(name)
        form = inst.forms[0]
        widths = [s.width for s in form.operands]
        if widths and widths[0] != regs["c"]:
            raise fail(op, f"{name} produces {widths[0]} registers but the accumulator "
                           f"{tc} has {regs['c']}")
        return name
    pattern = f"v_mfma_{out}_"
    options = sorted(x.removeprefix("v_mfma_") for x in isa.instructions
                     if x.startswith(pattern) and x.endswith(f"_{src}"))
    raise fail(op, f"no {m}x{n}x{k} blocks={blocks} MFMA for {ta} on {target} (it has: "
                   f"{', '.join(options) or 'none for this type'})")


_BLGP = ["none", "bcast_first_32", "bcast_second_32", "rotate_16_right", "bcast_first_16",
         "bcast_second_16", "bcast_third_16", "bcast_fourth_16"]


def _mfma(low: KernelLowering, op: amdgpu.MFMAOp) -> None:
    name = mfma_mnemonic(op, low.target)
    if op.reducePrecision is not None:
        raise fail(op, "reducePrecision is not supported yet")
    neg = [int(getattr(op, f) is not None) for f in ("negateA", "negateB", "negateC")]
    if any(neg) and "f64" not in name:
        # MLIR's amdgpu.mfma: "negateA, negateB, and negateC ... are only supported for
        # double-precision operations on gfx94x"
        flags = ", ".join(f for f, on in zip(("negateA", "negateB", "negateC"), neg) if on)
        raise fail(op, f"{flags}: only the f64 MFMAs can negate operands ({name} cannot)")
    kb = low.kb
    a, b = low.vgpr(low.get(op.sourceA)), low.vgpr(low.get(op.sourceB))
    c = low.get(op.destC)
    if c.kind == "c" and all(w == 0 for w in c.value):
        csrc = 0
    else:
        csrc = low.vgpr(c)
    mods = {}
    for key in ("cbsz", "abid"):
        attr = getattr(op, key)
        if attr is not None and attr.value.data:
            mods[key] = attr.value.data
    if op.blgp is not None and op.blgp.data.value != "none":
        mods["blgp"] = _BLGP.index(op.blgp.data.value)
    if any(neg):
        # the f64 MFMAs' neg:[a,b,c] (llvm-mc-22 encodes it in the BLGP field, bits 61-63)
        mods["neg"] = tuple(neg)
    dest = low.dest(op.destD)
    low.set(op.destD, LV("v", op.destD.type, kb.emit(name, dest, a, b, csrc, **mods)))


# ----------------------------------------------------------------------------- dpp

_DPP_FIXED = {"wave_shl": 0x130, "wave_rol": 0x134, "wave_shr": 0x138, "wave_ror": 0x13C,
              "row_mirror": 0x140, "row_half_mirror": 0x141, "row_bcast_15": 0x142,
              "row_bcast_31": 0x143}
_DPP_ROW = {"row_shl": 0x100, "row_shr": 0x110, "row_ror": 0x120}


def dpp_ctrl(op) -> int:
    """The dpp_ctrl field of an amdgpu.dpp."""
    kind = op.kind.data.value
    arg = op.permArgument
    if kind in _DPP_FIXED:
        return _DPP_FIXED[kind]
    if kind == "quad_perm":
        lanes = [a.value.data for a in getattr(arg, "data", ())]
        if len(lanes) != 4 or any(not 0 <= x <= 3 for x in lanes):
            raise fail(op, "quad_perm takes four lanes 0..3")
        return lanes[0] | lanes[1] << 2 | lanes[2] << 4 | lanes[3] << 6
    amount = getattr(getattr(arg, "value", None), "data", None)
    if not isinstance(amount, int) or not 1 <= amount <= 15:
        raise fail(op, f"{kind} takes a shift of 1 to 15")
    return _DPP_ROW[kind] + amount


def _dpp(low: KernelLowering, op: amdgpu.DPPOp) -> None:
    t = op.result.type
    ctrl = dpp_ctrl(op)
    mods = {"dpp_ctrl": ctrl,
            "row_mask": op.row_mask.value.data if op.row_mask is not None else 0xF,
            "bank_mask": op.bank_mask.value.data if op.bank_mask is not None else 0xF}
    if op.bound_ctrl is not None and op.bound_ctrl.value.data:
        mods["bound_ctrl"] = True
    kb = low.kb
    n = reg_count(t)
    out = []
    for old, src in zip(words_of(low, low.get(op.old), n), words_of(low, low.get(op.src), n)):
        dst = kb.v_mov_b32(None, low.operand(old))
        out.append(kb.v_mov_b32(dst, low.vgpr(src), **mods))
    low.set(op.result, LV("v", t, out[0] if n == 1 else kb.join(*out, align=align(n))))


# ----------------------------------------------------------------------------- fp8


def _fp8_of(op, t, target: str) -> str:
    et = t.element_type if isinstance(t, VectorType) else t
    kind = fp8_kind(et)
    if kind is None:
        raise fail(op, f"{t} is not an 8-bit float type")
    if kind[1] != target:
        want = "f8E4M3FNUZ/f8E5M2FNUZ" if target == "gfx942" else "f8E4M3FN/f8E5M2"
        raise fail(op, f"{target} converts {want}, not {et}")
    return kind[0]


def _ext_fp8(low: KernelLowering, op: amdgpu.ExtPackedFp8Op) -> None:
    kind = _fp8_of(op, op.source.type, low.target)
    index = op.index.value.data
    rt = op.res.type
    kb = low.kb
    src = low.vgpr(low.get(op.source))
    pair = isinstance(rt, VectorType)
    shift = 16 * index if pair else 8 * index
    if pair and index > 1 or shift >= type_bits(op.source.type) + (8 if not pair else 0):
        raise fail(op, f"index {index} is outside the source")
    if shift:
        src = kb.v_lshrrev_b32(None, shift, src)
    name = f"v_cvt_pk_f32_{kind}" if pair else f"v_cvt_f32_{kind}"
    low.set(op.res, LV("v", rt, kb.emit(name, None, src)))


def _trunc_fp8(low: KernelLowering, op: amdgpu.PackedTrunc2xFp8Op) -> None:
    kind = _fp8_of(op, op.res.type, low.target)
    if type_name(op.sourceA.type) != "f32":
        raise fail(op, "sources must be f32")
    kb = low.kb
    word = op.wordIndex.value.data
    dst = kb.v_mov_b32(None, low.operand(low.get(op.existing))) \
        if op.existing is not None else None
    a = low.get(op.sourceA)
    b = low.get(op.sourceB) if op.sourceB is not None else const_lv(0.0, Float32Type())
    x, y = low.valu_operands([a, b])
    mods = {"op_sel": (0, 0, 1)} if word else {}
    low.set(op.res, LV("v", op.res.type, kb.emit(f"v_cvt_pk_{kind}_f32", dst, x, y, **mods)))


def _stoch_fp8(low: KernelLowering, op: amdgpu.PackedStochRoundFp8Op) -> None:
    kind = _fp8_of(op, op.res.type, low.target)
    if type_name(op.source.type) != "f32":
        raise fail(op, "the source must be f32")
    kb = low.kb
    index = op.storeIndex.value.data
    dst = kb.v_mov_b32(None, low.operand(low.get(op.existing))) \
        if op.existing is not None else None
    x, y = low.valu_operands([low.get(op.source), low.get(op.stochiasticParam)])
    mods = {"op_sel": (0, 0, index & 1, index >> 1)} if index else {}
    low.set(op.res, LV("v", op.res.type, kb.emit(f"v_cvt_sr_{kind}_f32", dst, x, y, **mods)))


# ----------------------------------------------------------------------------- MLIR 22 ops
# beyond the seed (gfx950 instructions where the op needs them).


def _require(low: KernelLowering, op, mnemonic: str, what: str) -> None:
    if mnemonic not in get_isa(low.target):
        raise fail(op, f"{what} needs gfx950 ({mnemonic}); {low.target} does not have it")


# OCP small floats of the gfx950 f8f6f4 MFMAs: (CBSZ/BLGP format code, bits).
F8F6F4 = {"f8E4M3FN": 0, "f8E5M2": 1, "f6E2M3FN": 2, "f6E3M2FN": 3, "f4E2M1FN": 4}


def f8f6f4_code(op, t, which: str) -> int:
    """The CBSZ/BLGP format code of a vector<32x small float> MFMA source."""
    name = getattr(getattr(t, "element_type", None), "name", "")
    if not isinstance(t, VectorType) or t.get_shape() != (32,) or name not in F8F6F4:
        raise fail(op, f"source {which} must be a vector<32x T> with T one of "
                       f"{', '.join(F8F6F4)}; got {t}")
    return F8F6F4[name]


def _scale_operand(low: KernelLowering, op, value) -> SSAValue:
    """A scale (f8E8M0FNU, zero-extended as MLIR does, or vector<4xf8E8M0FNU>) in a VGPR."""
    t = value.type
    et = t.element_type if isinstance(t, VectorType) else t
    if getattr(et, "name", "") != "f8E8M0FNU" or (isinstance(t, VectorType)
                                                  and t.get_shape() != (4,)):
        raise fail(op, f"scales must be f8E8M0FNU or vector<4xf8E8M0FNU>, got {t}")
    lv = low.get(value)
    if isinstance(t, VectorType):
        return low.vgpr(lv)
    if lv.kind == "c":
        return low.vgpr(LV("c", i32, [lv.value[0] & 0xFF]))
    # a scalar's register may hold other bytes above it (vector.extract shifts, no mask)
    return low.kb.v_and_b32(None, 0xFF, low.vgpr(lv))


def _scaled_mfma(low: KernelLowering, op: amdgpu.ScaledMFMAOp) -> None:
    m, n, k = (op.m.value.data, op.n.value.data, op.k.value.data)
    name = f"v_mfma_scale_f32_{m}x{n}x{k}_f8f6f4"
    if not any(x.startswith("v_mfma_scale_") for x in get_isa(low.target).instructions):
        raise fail(op, f"scaled MFMAs need gfx950; {low.target} has none")
    if name not in get_isa(low.target):
        raise fail(op, f"no {m}x{n}x{k} scaled MFMA on {low.target} (it has: 16x16x128, "
                       "32x32x64)")
    want = 4 if m == 16 else 16
    tc = op.destC.type
    if not isinstance(tc, VectorType) or tc.get_shape() != (want,) or \
            type_name(tc.element_type) != "f32":
        raise fail(op, f"the accumulator of a {m}x{n}x{k} scaled MFMA is vector<{want}xf32>, "
                       f"not {tc}")
    code_a = f8f6f4_code(op, op.sourceA.type, "A")
    code_b = f8f6f4_code(op, op.sourceB.type, "B")
    kb = low.kb
    a, b = low.vgpr(low.get(op.sourceA)), low.vgpr(low.get(op.sourceB))
    c = low.get(op.destC)
    csrc = 0 if c.kind == "c" and all(w == 0 for w in c.value) else low.vgpr(c)
    sa = _scale_operand(low, op, op.scalesA)
    sb = _scale_operand(low, op, op.scalesB)
    ia, ib = op.scalesIdxA.value.data, op.scalesIdxB.value.data
    mods: dict = {"op_sel_hi": (ia >> 1, ib >> 1, 0)}
    if ia & 1 or ib & 1:
        mods["op_sel"] = (ia & 1, ib & 1, 0)
    if code_a:
        mods["cbsz"] = code_a
    if code_b:
        mods["blgp"] = code_b
    dest = low.dest(op.destD)
    low.set(op.destD, LV("v", op.destD.type, kb.emit(name, dest, a, b, csrc, sa, sb, **mods)))


# Transfer sizes of gather_to_lds: MUBUF loads with the `lds` bit (LDS DMA; 1- and 2-byte
# values land zero-extended in a dword per lane, as MLIR documents).
_LDS_DMA = {1: "buffer_load_ubyte", 2: "buffer_load_ushort", 4: "buffer_load_dword",
            16: "buffer_load_dwordx4"}


def _uniform_sgpr(low: KernelLowering, lv: LV) -> SSAValue:
    """A value every lane agrees on in an SGPR (a per-lane one: lane 0's, as MLIR's
    readfirstlane)."""
    if lv.uniform:
        return low.sgpr(lv)
    return low.kb.v_readfirstlane_b32(None, low.vgpr(lv))


def _gather_to_lds(low: KernelLowering, op: amdgpu.GatherToLDSOp) -> None:
    src = _buffer_memref(low, op, op.src)
    dst = low.get(op.dst)
    if dst.kind != "m" or dst.value.space != "workgroup":
        raise fail(op, "the destination must be a workgroup (LDS) memref")
    t = op.transferType
    nbytes = type_bits(t) // 8
    name = _LDS_DMA.get(nbytes, "")
    if not name:
        raise fail(op, f"transfer type {t} ({nbytes} bytes) is not supported (1, 2, 4 or 16 "
                       "bytes; 12-byte transfers: not yet)")
    _require(low, op, f"{name}" if nbytes < 16 else "global_load_lds_dwordx4",
             "a 16-byte gather_to_lds")
    kb = low.kb
    off = low.vgpr(byte_offset(low, op, src, [low.get(i) for i in op.srcIndices]))
    lds = byte_offset(low, op, dst, [low.get(i) for i in op.dstIndices], 0)
    lds = int_binary(low, "arith.addi", lds, const_lv(dst.value.lds_offset, i32), i32)
    # LDS DMA writes lane l's data at M0 + l * size: M0 is the wave's base address
    kb.s_mov_b32(kb.m0, _uniform_sgpr(low, lds))
    kb.emit(name, off, src.value.rsrc, 0, offen=True, lds=True)


_TRANSPOSE = {(16, 64): "ds_read_b64_tr_b16", (8, 64): "ds_read_b64_tr_b8",
              (4, 64): "ds_read_b64_tr_b4", (6, 96): "ds_read_b96_tr_b6"}


def _transpose_load(low: KernelLowering, op: amdgpu.TransposeLoadOp) -> None:
    mem = low.get(op.src)
    if mem.kind != "m" or mem.value.space != "workgroup":
        raise fail(op, "the source must be a workgroup (LDS) memref")
    rt = op.result.type
    key = (elem_bits(rt.element_type), type_bits(rt))
    name = _TRANSPOSE.get(key, "")
    if not name:
        raise fail(op, f"result {rt} is not supported (vector<4x 16-bit>, vector<8x 8-bit>, "
                       "vector<16x 4-bit> or vector<16x 6-bit>)")
    _require(low, op, name, "transpose_load")
    off = byte_offset(low, op, mem, [low.get(i) for i in op.srcIndices])
    addr = address(low, mem, off)
    low.set(op.result, LV("v", rt, low.kb.emit(name, None, addr)))


def _swizzle_bitmode(low: KernelLowering, op: amdgpu.SwizzleBitModeOp) -> None:
    masks = [op.and_mask.value.data, op.or_mask.value.data, op.xor_mask.value.data]
    if any(not 0 <= x < 32 for x in masks):
        raise fail(op, f"masks must be 0..31 (5 bits), got {masks}")
    offset = masks[0] | masks[1] << 5 | masks[2] << 10  # bit 15 clear: bit-mask mode
    t = op.result.type
    n = reg_count(t)
    kb = low.kb
    out = [kb.ds_swizzle_b32(None, low.vgpr(w), offset=offset)
           for w in words_of(low, low.get(op.src), n)]
    low.set(op.result, LV("v", t, out[0] if n == 1 else kb.join(*out, align=align(n))))


# Lanes of the odd rows (16) / the upper half (32): where v_permlane*_swap's vdst receives the
# swapped data (the rest of it keeps its value).
_SWAP_UPPER = {16: 0xFFFF0000FFFF0000, 32: 0xFFFFFFFF00000000}


def _permlane_swap(low: KernelLowering, op: amdgpu.PermlaneSwapOp) -> None:
    width = op.row_length.value.data
    if width not in _SWAP_UPPER:
        raise fail(op, f"row_length must be 16 or 32, got {width}")
    name = f"v_permlane{width}_swap_b32"
    _require(low, op, name, "permlane_swap")
    for flag in ("fetch_inactive", "bound_ctrl"):
        attr = getattr(op, flag)
        if attr is not None and attr.value.data:
            raise fail(op, f"{flag} = true is not supported yet (all lanes are swapped as if "
                           "active)")
    t = op.result.type
    n = reg_count(t)
    kb = low.kb
    mask = _SWAP_UPPER[width]
    upper = kb.join(kb.s_mov_b32(None, signed32(mask)), kb.s_mov_b32(None, signed32(mask >> 32)),
                    align=2)
    out = []
    for w in words_of(low, low.get(op.src), n):
        # vdst's upper lanes receive src0's lower lanes and src0's lower lanes vdst's upper
        # ones: from two copies of the value, the swapped value is src0 below, vdst above.
        d = kb.v_mov_b32(None, low.operand(w))
        s = kb.v_mov_b32(None, low.operand(w))
        nd, ns = kb.emit(name, d, s)
        out.append(kb.v_cndmask_b32(None, ns, nd, upper))
    low.set(op.result, LV("v", t, out[0] if n == 1 else kb.join(*out, align=align(n))))


def _memory_counter_wait(low: KernelLowering, op: amdgpu.MemoryCounterWaitOp) -> None:
    if op.tensor is not None:
        raise fail(op, f"the tensor counter exists on gfx1250 only, not on {low.target}")
    counts = {}
    loads = [a.value.data for a in (op.load, op.store) if a is not None]
    if loads:  # gfx9 counts loads and stores in one counter (vmcnt)
        counts["vmcnt"] = min(min(loads), 63)
    if op.ds is not None:
        counts["lgkmcnt"] = min(op.ds.value.data, 15)
    if op.exp is not None:
        counts["expcnt"] = min(op.exp.value.data, 7)
    if counts:
        low.kb.s_waitcnt(**counts)


def _sparse_mfma(low: KernelLowering, op: amdgpu.SparseMFMAOp) -> None:
    ta, tc = op.sourceA.type, op.destC.type
    ec = tc.element_type if isinstance(tc, VectorType) else tc
    out = "i32" if isinstance(ec, IntegerType) else "f32"
    src = _mfma_input(op, ta, op.sourceB.type, low.target)
    m, n, k = (op.m.value.data, op.n.value.data, op.k.value.data)
    name = f"v_smfmac_{out}_{m}x{n}x{k}_{src}"
    isa = get_isa(low.target)
    if name not in isa:
        options = sorted(x.removeprefix(f"v_smfmac_{out}_") for x in isa.instructions
                         if x.startswith(f"v_smfmac_{out}_") and x.endswith(f"_{src}"))
        raise fail(op, f"no {m}x{n}x{k} sparse MFMA for {ta} on {low.target} (it has: "
                       f"{', '.join(options) or 'none for this type'})")
    if reg_count(op.sparseIdx.type) != 1:
        raise fail(op, f"the sparse index must be 32 bits, not {op.sparseIdx.type}")
    kb = low.kb
    a, b = low.vgpr(low.get(op.sourceA)), low.vgpr(low.get(op.sourceB))
    idx = low.vgpr(low.get(op.sparseIdx))
    # SMFMAC accumulates in place (vdst is also C): D is written over a copy of C
    nc = reg_count(tc)
    words = [kb.v_mov_b32(None, low.operand(w)) for w in words_of(low, low.get(op.destC), nc)]
    acc = words[0] if nc == 1 else kb.join(*words, align=align(nc))
    mods = {key: getattr(op, key).value.data for key in ("cbsz", "abid")
            if getattr(op, key) is not None and getattr(op, key).value.data}
    low.set(op.destD, LV("v", op.destD.type, kb.emit(name, acc, a, b, idx, **mods)))


# OCP small floats of the gfx950 v_cvt_scalef32_pk_* conversions: (instruction name, bits).
_SCALEF32 = {"f8E4M3FN": ("fp8", 8), "f8E5M2": ("bf8", 8), "f4E2M1FN": ("fp4", 4)}
_WIDE = ("f32", "f16", "bf16")


def _scalef32_format(op, t) -> tuple[str, int]:
    """(fp8/bf8/fp4, bits) of the packed small-float side of a scaled conversion."""
    name = getattr(getattr(t, "element_type", None), "name", "")
    if not isinstance(t, VectorType) or name not in _SCALEF32:
        raise fail(op, f"{t} is not supported: the packed side is a vector of f8E4M3FN, "
                       "f8E5M2 or f4E2M1FN")
    return _SCALEF32[name]


def _wide_type(op, t, what: str) -> tuple[str, int]:
    """(f32/f16/bf16, length) of the wide side of a scaled conversion (a vector of 1 or 2)."""
    et = type_name(t.element_type) if isinstance(t, VectorType) else ""
    if et not in _WIDE or t.get_shape() not in ((1,), (2,)):
        raise fail(op, f"the {what} must be a vector of 1 or 2 f32, f16 or bf16, not {t}")
    return et, t.get_shape()[0]


def _pair_index(op, bits: int, elements: int | None = None) -> int:
    """The pair `index` names: a 16-bit word of 8-bit codes or a byte of 4-bit codes."""
    index = op.index.value.data
    pairs = 32 // (2 * bits)
    if index >= pairs or (elements is not None and 2 * index >= elements):
        limit = min(pairs, -(-elements // 2)) if elements is not None else pairs
        raise fail(op, f"index {index} is outside the {limit} pairs of {bits}-bit values")
    return index


def _scaled_ext(low: KernelLowering, op: amdgpu.ScaledExtPackedOp) -> None:
    fmt, bits = _scalef32_format(op, op.source.type)
    dst, n = _wide_type(op, op.res.type, "result")
    if n != 2:
        raise fail(op, f"the result must be a vector of 2, not {op.res.type}")
    name = f"v_cvt_scalef32_pk_{dst}_{fmt}"
    _require(low, op, name, "scaled_ext_packed")
    index = _pair_index(op, bits, op.source.type.get_shape()[0])
    src, scale = low.valu_operands([low.get(op.source), low.get(op.scale)])
    # op_sel[0] picks the source word (8-bit codes), op_sel[1:0] the source byte (fp4)
    sel = (index, 0, 0) if bits == 8 else (index & 1, index >> 1, 0)
    mods = {"op_sel": sel} if index else {}
    low.set(op.res, LV("v", op.res.type, low.kb.emit(name, None, src, scale, **mods)))


def _scaled_trunc(low: KernelLowering, op: amdgpu.PackedScaledTruncOp) -> None:
    fmt, bits = _scalef32_format(op, op.res.type)
    src, n = _wide_type(op, op.source.type, "source")
    name = f"v_cvt_scalef32_pk_{fmt}_{src}"
    _require(low, op, name, "packed_scaled_trunc")
    index = _pair_index(op, bits)
    kb = low.kb
    # the instruction keeps the other bits of vdst: write into a copy of `existing`
    dst = kb.v_mov_b32(None, low.operand(low.get(op.existing))) \
        if op.existing is not None else None
    value, scale = low.get(op.source), low.get(op.scale)
    # the destination word (8-bit codes) or byte (fp4) select follows the sources in op_sel
    dsel = (index,) if bits == 8 else (index & 1, index >> 1)
    if src == "f32":
        words = words_of(low, value, n) + ([const_lv(0.0, Float32Type())] if n == 1 else [])
        srcs = low.valu_operands([*words, scale])
        sel = (0, 0, 0, *dsel) if bits == 8 else (0, 0, *dsel)
    else:  # a vector<1x16-bit> leaves the second value undefined, as MLIR does
        srcs = low.valu_operands([value, scale])
        sel = (0, 0, *dsel)
    mods = {"op_sel": sel} if index else {}
    low.set(op.res, LV("v", op.res.type, kb.emit(name, dst, *srcs, **mods)))


HANDLERS: HandlerTable = {
    amdgpu.LDSBarrierOp: _lds_barrier,
    amdgpu.SchedBarrierOp: _sched_barrier,
    amdgpu.WMMAOp: _wmma,
    amdgpu.RawBufferLoadOp: _raw_load,
    amdgpu.RawBufferStoreOp: _raw_store,
    **dict.fromkeys(RAW_ATOMICS, _raw_atomic),
    amdgpu.RawBufferAtomicCmpswapOp: _raw_cmpswap,
    amdgpu.FatRawBufferCastOp: _fat_cast,
    amdgpu.MFMAOp: _mfma,
    amdgpu.DPPOp: _dpp,
    amdgpu.ExtPackedFp8Op: _ext_fp8,
    amdgpu.PackedTrunc2xFp8Op: _trunc_fp8,
    amdgpu.PackedStochRoundFp8Op: _stoch_fp8,
    amdgpu.ScaledMFMAOp: _scaled_mfma,
    amdgpu.GatherToLDSOp: _gather_to_lds,
    amdgpu.TransposeLoadOp: _transpose_load,
    amdgpu.SwizzleBitModeOp: _swizzle_bitmode,
    amdgpu.PermlaneSwapOp: _permlane_swap,
    amdgpu.MemoryCounterWaitOp: _memory_counter_wait,
    amdgpu.SparseMFMAOp: _sparse_mfma,
    amdgpu.ScaledExtPackedOp: _scaled_ext,
    amdgpu.PackedScaledTruncOp: _scaled_trunc,
}

__all__ = ["HANDLERS", "dpp_ctrl", "f8f6f4_code", "mfma_mnemonic"]
