"""Upstream MLIR test inputs: the files of tests/upstream/ and generated MFMA kernels (one per
MFMA the dialect can express on each target). Shared by the emulator tests and the mlir-opt-22
oracle test."""

from __future__ import annotations

from pathlib import Path

from asterism.emu import mfma as mf

DIR = Path(__file__).resolve().parent / "upstream"
TARGETS = ("gfx942", "gfx950")

_ELEM = {"f16": ("f16", 16), "bf16": ("bf16", 16), "i8": ("i8", 8), "xf32": ("f32", 32)}
_FP8 = {"gfx942": {"fp8": "f8E4M3FNUZ", "bf8": "f8E5M2FNUZ"},
        "gfx950": {"fp8": "f8E4M3FN", "bf8": "f8E5M2"}}

MFMA_TEMPLATE = """module {{
  gpu.module @m {{
    gpu.func @mfma(%a: memref<{na}xi32>, %b: memref<{nb}xi32>, %c: memref<{nc}x{ec}>,
                   %d: memref<{nc}x{ec}>) kernel
        attributes {{known_block_size = array<i32: 64, 1, 1>}} {{
      %l = gpu.thread_id x
      %ka = arith.constant {ra} : index
      %kb = arith.constant {rb} : index
      %kc = arith.constant {pc} : index
      %ia = arith.muli %l, %ka : index
      %ib = arith.muli %l, %kb : index
      %ic = arith.muli %l, %kc : index
      %wa = vector.load %a[%ia] : memref<{na}xi32>, vector<{ra}xi32>
      %wb = vector.load %b[%ib] : memref<{nb}xi32>, vector<{rb}xi32>
{cast_a}
{cast_b}
      {load_c}
      %vd = amdgpu.mfma {m}x{n}x{k} %va * %vb + %vc {{blocks = {blocks} : i32{mods}}} blgp = {blgp} : {ta}, {tb}, {tc}
      {store_d}
      gpu.return
    }}
  }}
}}
"""


def operand_type(target: str, kind: str, regs: int) -> str:
    """The upstream type of an MFMA source of element kind `kind` in `regs` registers."""
    if kind in ("f32", "f64"):
        return kind
    if kind in ("fp8", "bf8"):
        return f"vector<{regs * 4}x{_FP8[target][kind]}>"
    name, bits = _ELEM[kind]
    return f"vector<{regs * 32 // bits}x{name}>"


def _cast(name: str, ta: str, regs: int) -> str:
    src = f"%w{name}"
    if ta == "f32":
        return (f"      %e{name} = vector.extract {src}[0] : i32 from vector<1xi32>\n"
                f"      %v{name} = arith.bitcast %e{name} : i32 to f32")
    if ta == "f64":
        return f"      %v{name} = vector.bitcast {src} : vector<2xi32> to vector<1xf64>" \
               f"\n      %v{name}_s = vector.extract %v{name}[0] : f64 from vector<1xf64>"
    return f"      %v{name} = vector.bitcast {src} : vector<{regs}xi32> to {ta}"


def mfma_text(target: str, mnemonic: str, cbsz: int = 0, abid: int = 0,
              blgp: str = "none", negate: tuple[bool, bool, bool] = (False, False, False)
              ) -> str:
    """An upstream kernel: each lane loads its A, B, C registers, one amdgpu.mfma, stores D."""
    info = mf.mfma_info(target, mnemonic)
    ta = operand_type(target, info.a_type, info.a_regs)
    tb = operand_type(target, info.b_type, info.b_regs)
    ec = info.out_type
    cregs = info.c_regs // (2 if ec == "f64" else 1)
    tc = f"vector<{cregs}x{ec}>" if cregs > 1 else ec
    if cregs > 1:
        load_c = f"%vc = vector.load %c[%ic] : memref<{64 * cregs}x{ec}>, {tc}"
        store_d = f"vector.store %vd, %d[%ic] : memref<{64 * cregs}x{ec}>, {tc}"
    else:
        load_c = f"%vc = memref.load %c[%l] : memref<64x{ec}>"
        store_d = f"memref.store %vd, %d[%l] : memref<64x{ec}>"
    mods = "".join(f", {k} = {v} : i32" for k, v in (("cbsz", cbsz), ("abid", abid)) if v)
    mods += "".join(f", {f}" for f, on in zip(("negateA", "negateB", "negateC"), negate) if on)
    text = MFMA_TEMPLATE.format(
        na=64 * info.a_regs, nb=64 * info.b_regs, nc=64 * cregs, ec=ec, ra=info.a_regs,
        rb=info.b_regs, pc=cregs, cast_a=_cast("a", ta, info.a_regs),
        cast_b=_cast("b", tb, info.b_regs), load_c=load_c, store_d=store_d, m=info.m,
        n=info.n, k=info.k, blocks=info.blocks, mods=mods, blgp=blgp, ta=ta, tb=tb, tc=tc)
    if ta == "f64":
        text = text.replace("%va * %vb", "%va_s * %vb_s")
    return text


SCALED_TEMPLATE = """module {{
  gpu.module @m {{
    gpu.func @scaled(%a: memref<{na}xi32>, %b: memref<{nb}xi32>, %c: memref<{nc}xf32>,
                     %s: memref<128xi32>, %d: memref<{nc}xf32>) kernel
        attributes {{known_block_size = array<i32: 64, 1, 1>}} {{
      %l = gpu.thread_id x
      %ka = arith.constant {ra} : index
      %kb = arith.constant {rb} : index
      %kc = arith.constant {rc} : index
      %k64 = arith.constant 64 : index
      %ia = arith.muli %l, %ka : index
      %ib = arith.muli %l, %kb : index
      %ic = arith.muli %l, %kc : index
      %is = arith.addi %l, %k64 : index
      %wa = vector.load %a[%ia] : memref<{na}xi32>, vector<{ra}xi32>
      %wb = vector.load %b[%ib] : memref<{nb}xi32>, vector<{rb}xi32>
      %vc = vector.load %c[%ic] : memref<{nc}xf32>, vector<{rc}xf32>
      %va = vector.bitcast %wa : vector<{ra}xi32> to vector<32x{ta}>
      %vb = vector.bitcast %wb : vector<{rb}xi32> to vector<32x{tb}>
      %wsa = vector.load %s[%l] : memref<128xi32>, vector<1xi32>
      %wsb = vector.load %s[%is] : memref<128xi32>, vector<1xi32>
      %sa4 = vector.bitcast %wsa : vector<1xi32> to vector<4xf8E8M0FNU>
      %sb4 = vector.bitcast %wsb : vector<1xi32> to vector<4xf8E8M0FNU>
{scales}
      %vd = amdgpu.scaled_mfma {m}x{n}x{k} ({sa}[{xa}] * %va) * ({sb}[{xb}] * %vb) + %vc : {tsa}, vector<32x{ta}>, {tsb}, vector<32x{tb}>, vector<{rc}xf32>
      vector.store %vd, %d[%ic] : memref<{nc}xf32>, vector<{rc}xf32>
      gpu.return
    }}
  }}
}}
"""
SMALL_FLOAT_TYPES = ("f8E4M3FN", "f8E5M2", "f6E2M3FN", "f6E3M2FN", "f4E2M1FN")  # codes 0-4
SMALL_FLOAT_BITS = (8, 8, 6, 6, 4)


def scaled_mfma_text(m: int, a_code: int, b_code: int, byte_a: int, byte_b: int,
                     scalar_scales: bool = False) -> str:
    """An upstream kernel around one amdgpu.scaled_mfma (gfx950): A, B and C registers and
    the two scale words (A's in s[0:64], B's in s[64:128]) loaded per lane. With
    `scalar_scales`, the scale bytes are extracted to f8E8M0FNU scalars first."""
    k = 128 if m == 16 else 64
    ra, rb, rc = SMALL_FLOAT_BITS[a_code], SMALL_FLOAT_BITS[b_code], 4 if m == 16 else 16
    if scalar_scales:
        scales = (f"      %sa = vector.extract %sa4[{byte_a}] : f8E8M0FNU from vector<4xf8E8M0FNU>\n"
                  f"      %sb = vector.extract %sb4[{byte_b}] : f8E8M0FNU from vector<4xf8E8M0FNU>")
        xa = xb = 0
        tsa = tsb = "f8E8M0FNU"
        sa, sb = "%sa", "%sb"
    else:
        scales = ""
        xa, xb = byte_a, byte_b
        tsa = tsb = "vector<4xf8E8M0FNU>"
        sa, sb = "%sa4", "%sb4"
    return SCALED_TEMPLATE.format(
        na=64 * ra, nb=64 * rb, nc=64 * rc, ra=ra, rb=rb, rc=rc, ta=SMALL_FLOAT_TYPES[a_code],
        tb=SMALL_FLOAT_TYPES[b_code], m=m, n=m, k=k, scales=scales, xa=xa, xb=xb, tsa=tsa,
        tsb=tsb, sa=sa, sb=sb)


# (m, A format, B format, A scale byte, B scale byte, scalar scales): every format on A and
# on B, both shapes, every byte select.
SCALED_CASES = [(16, 0, 0, 0, 0, False), (16, 1, 2, 1, 2, False), (16, 2, 3, 2, 3, False),
                (16, 3, 4, 3, 0, False), (16, 4, 1, 0, 1, True), (32, 0, 4, 2, 1, False),
                (32, 4, 0, 3, 2, True), (32, 2, 2, 1, 3, False)]


SPARSE_TEMPLATE = """module {{
  gpu.module @m {{
    gpu.func @sparse(%a: memref<{na}xi32>, %b: memref<{nb}xi32>, %c: memref<{nc}x{ec}>,
                     %x: memref<64xi32>, %d: memref<{nc}x{ec}>) kernel
        attributes {{known_block_size = array<i32: 64, 1, 1>}} {{
      %l = gpu.thread_id x
      %ka = arith.constant {ra} : index
      %kb = arith.constant {rb} : index
      %kc = arith.constant {rc} : index
      %ia = arith.muli %l, %ka : index
      %ib = arith.muli %l, %kb : index
      %ic = arith.muli %l, %kc : index
      %wa = vector.load %a[%ia] : memref<{na}xi32>, vector<{ra}xi32>
      %wb = vector.load %b[%ib] : memref<{nb}xi32>, vector<{rb}xi32>
      %vc = vector.load %c[%ic] : memref<{nc}x{ec}>, vector<{rc}x{ec}>
      %wx = vector.load %x[%l] : memref<64xi32>, vector<1xi32>
      %va = vector.bitcast %wa : vector<{ra}xi32> to {ta}
      %vb = vector.bitcast %wb : vector<{rb}xi32> to {tb}
      {idx}
      %vd = amdgpu.sparse_mfma {m}x{n}x{k} %va * %vb + %vc sparse(%vx : {tx}) {{abid = {abid} : i32}} : {ta}, {tb}, vector<{rc}x{ec}>
      vector.store %vd, %d[%ic] : memref<{nc}x{ec}>, vector<{rc}x{ec}>
      gpu.return
    }}
  }}
}}
"""


# (target, SMFMAC, abid): 16- and 8-bit sources, both index-field selects, gfx950's
# K-doubled forms.
SPARSE_CASES = [("gfx942", "v_smfmac_f32_16x16x32_f16", 0),
                ("gfx942", "v_smfmac_f32_16x16x32_f16", 1),
                ("gfx942", "v_smfmac_i32_32x32x32_i8", 0),
                ("gfx942", "v_smfmac_f32_16x16x64_fp8_bf8", 1),
                ("gfx950", "v_smfmac_f32_32x32x16_bf16", 0),
                ("gfx950", "v_smfmac_f32_16x16x64_f16", 0),
                ("gfx950", "v_smfmac_f32_16x16x128_fp8_fp8", 0)]


def sparse_mfma_text(target: str, mnemonic: str, abid: int = 0) -> str:
    """An upstream kernel around one amdgpu.sparse_mfma: A (the stored half), B, C and the
    index word loaded per lane; the index type is the one the dialect documents for it."""
    info = mf.mfma_info(target, mnemonic)
    ta = operand_type(target, info.a_type.split("_")[0], info.a_regs)
    tb = operand_type(target, info.b_type.split("_")[-1], info.b_regs)
    bits = 16 if info.a_type in ("f16", "bf16") else 8
    # MLIR 22 takes vector<4xi8> (16-bit sources) or vector<2xi16> (8-bit): either way the
    # index VGPR, whatever the width of the instruction's index field
    field = 8 if bits == 16 else 16
    tx = {8: "vector<4xi8>", 16: "vector<2xi16>", 32: "i32"}[field]
    idx = (f"%vx = vector.bitcast %wx : vector<1xi32> to {tx}" if field < 32 else
           "%vx = vector.extract %wx[0] : i32 from vector<1xi32>")
    ec = info.out_type
    return SPARSE_TEMPLATE.format(
        na=64 * info.a_regs, nb=64 * info.b_regs, nc=64 * info.c_regs, ec=ec, ra=info.a_regs,
        rb=info.b_regs, rc=info.c_regs, ta=ta, tb=tb, idx=idx, m=info.m, n=info.n, k=info.k,
        abid=abid, tx=tx)


def bf8_text(target: str) -> str:
    """tests/upstream/fp8_<target>.mlir with the 5-bit-exponent 8-bit float (bf8) instead."""
    fp8, bf8 = _FP8[target]["fp8"], _FP8[target]["bf8"]
    return (DIR / f"fp8_{target}.mlir").read_text().replace(fp8, bf8)


def expressible_mfmas(target: str) -> list[str]:
    """The MFMAs amdgpu.mfma can name on `target` (dense, unscaled, not f8f6f4)."""
    out = []
    for name in mf.mfma_mnemonics(target):
        info = mf.mfma_info(target, name)
        if info.sparse or info.scaled or "f8f6f4" in name or "ld_scale" in name:
            continue
        out.append(name)
    return out


def static_inputs() -> list[Path]:
    """The hand-written upstream inputs."""
    return sorted(DIR.glob("*.mlir"))


def all_inputs() -> list[tuple[str, str]]:
    """(name, text) of every upstream test input, files and generated MFMA kernels."""
    out = [(p.name, p.read_text()) for p in static_inputs()]
    for t in TARGETS:
        out += [(f"{t}:{m}", mfma_text(t, m)) for m in expressible_mfmas(t)]
    out += [(f"{t}:bf8", bf8_text(t)) for t in TARGETS]
    out += [(f"{t}:{m}:abid{a}", sparse_mfma_text(t, m, a)) for t, m, a in SPARSE_CASES]
    out += [(f"gfx950:scaled_mfma:{'-'.join(map(str, c))}", scaled_mfma_text(*c))
            for c in SCALED_CASES]
    out += [(f"gfx950:scaled_ext_packed:{s}-{d}", scaled_ext_text(s, d))
            for s, d in SCALED_EXT_CASES]
    out += [(f"gfx950:packed_scaled_trunc:{d}-{s}", scaled_trunc_text(d, s))
            for s, d in SCALED_TRUNC_CASES]
    return out


# amdgpu.scaled_ext_packed / packed_scaled_trunc (gfx950 v_cvt_scalef32_pk_*): the packed
# small-float types and their (elements per dword, bits).
SCALED_CVT_TYPES = {"f8E4M3FN": (4, 8), "f8E5M2": (4, 8), "f4E2M1FN": (8, 4)}
SCALED_EXT_CASES = [(s, d) for s in SCALED_CVT_TYPES for d in ("f32", "f16", "bf16")]
SCALED_TRUNC_CASES = SCALED_EXT_CASES

SCALED_EXT_TEMPLATE = """module {{
  gpu.module @m {{
    gpu.func @ext(%w: memref<64xi32>, %s: memref<64xf32>, %out: memref<{nout}xi32>) kernel
        attributes {{known_block_size = array<i32: 64, 1, 1>}} {{
      %l = gpu.thread_id x
      %kp = arith.constant {per} : index
      %base = arith.muli %l, %kp : index
      %wv = vector.load %w[%l] : memref<64xi32>, vector<1xi32>
      %v = vector.bitcast %wv : vector<1xi32> to vector<{ne}x{ts}>
      %sc = memref.load %s[%l] : memref<64xf32>
{body}      gpu.return
    }}
  }}
}}
"""


def scaled_ext_text(src: str, dst: str) -> str:
    """A gfx950 kernel: each lane extends every pair of its packed word (one amdgpu.
    scaled_ext_packed per index) with its scale and stores the results as dwords."""
    ne, _bits = SCALED_CVT_TYPES[src]
    words = 2 if dst == "f32" else 1  # dwords per vector<2x dst>
    pairs = ne // 2
    body = ""
    for i in range(pairs):
        body += (f"      %r{i} = amdgpu.scaled_ext_packed %v[{i}], %sc : vector<{ne}x{src}> to "
                 f"vector<2x{dst}>\n"
                 f"      %b{i} = vector.bitcast %r{i} : vector<2x{dst}> to vector<{words}xi32>\n"
                 f"      %k{i} = arith.constant {i * words} : index\n"
                 f"      %o{i} = arith.addi %base, %k{i} : index\n"
                 f"      vector.store %b{i}, %out[%o{i}] : memref<{64 * pairs * words}xi32>, "
                 f"vector<{words}xi32>\n")
    return SCALED_EXT_TEMPLATE.format(nout=64 * pairs * words, per=pairs * words, ne=ne, ts=src,
                                      body=body)


SCALED_TRUNC_TEMPLATE = """module {{
  gpu.module @m {{
    gpu.func @trunc(%x: memref<{nx}xi32>, %s: memref<64xf32>, %old: memref<64xi32>,
                    %out: memref<{nout}xi32>) kernel
        attributes {{known_block_size = array<i32: 64, 1, 1>}} {{
      %l = gpu.thread_id x
      %kx = arith.constant {perx} : index
      %ko = arith.constant {pero} : index
      %bx = arith.muli %l, %kx : index
      %bo = arith.muli %l, %ko : index
      %sc = memref.load %s[%l] : memref<64xf32>
      %ow = vector.load %old[%l] : memref<64xi32>, vector<1xi32>
      %e = vector.bitcast %ow : vector<1xi32> to vector<{ne}x{td}>
{body}      gpu.return
    }}
  }}
}}
"""


def scaled_trunc_text(src: str, dst: str) -> str:
    """A gfx950 kernel: each lane converts one pair of `src` values per index of the packed
    word (amdgpu.packed_scaled_trunc into its `old` word) and, last, pair 0 into undef; it
    stores the words."""
    ne, _bits = SCALED_CVT_TYPES[dst]
    words = 2 if src == "f32" else 1  # dwords per vector<2x src>
    pairs = ne // 2
    tv, tp = f"vector<2x{src}>", f"vector<{ne}x{dst}>"
    body = ""
    for i in range(pairs + 1):
        into, idx = (f"%e[{i}]", f" into {tp}") if i < pairs else ("undef[0]", "")
        body += (f"      %kx{i} = arith.constant {i * words} : index\n"
                 f"      %ix{i} = arith.addi %bx, %kx{i} : index\n"
                 f"      %xw{i} = vector.load %x[%ix{i}] : memref<{64 * (pairs + 1) * words}xi32>, "
                 f"vector<{words}xi32>\n"
                 f"      %xv{i} = vector.bitcast %xw{i} : vector<{words}xi32> to {tv}\n"
                 f"      %t{i} = amdgpu.packed_scaled_trunc %xv{i} into {into}, %sc : {tv} to "
                 f"{tp}{idx}\n"
                 f"      %tw{i} = vector.bitcast %t{i} : {tp} to vector<1xi32>\n"
                 f"      %ko{i} = arith.constant {i} : index\n"
                 f"      %io{i} = arith.addi %bo, %ko{i} : index\n"
                 f"      vector.store %tw{i}, %out[%io{i}] : memref<{64 * (pairs + 1)}xi32>, "
                 f"vector<1xi32>\n")
    return SCALED_TRUNC_TEMPLATE.format(nx=64 * (pairs + 1) * words, nout=64 * (pairs + 1),
                                        perx=(pairs + 1) * words, pero=pairs + 1, ne=ne,
                                        td=dst, body=body)
