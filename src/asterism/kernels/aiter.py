"""AMD AITER's hand-written flash-attention forward (fmha v3), as the library entry
`aiter_fmha_fwd`: others' production kernels through asterism's emulator and timing model.

The entry launches AITER's code objects as shipped (kernels/data/aiter/: gfx950
fwd_hd128_bf16.co and fwd_hd128_bf16_causal.co, gfx942 MI300/fwd_hd128_bf16_rtz.co; ROCm/aiter,
MIT) through kernels/codeobject.py, with AITER's host conventions (ROCm/aiter
csrc/cpp_itfs/mha_fwd.cu `init_fmha_fwd_v3_args` / `get_grid_dim`, csrc/include/mha_fwd.h
`fmha_fwd_v3_args`, hsa/<arch>/fmha_v3_fwd/codegen.py; each fact is cited where it is used):

* arguments: the packed 512-byte `fmha_fwd_v3_args` struct, every field in a 16-byte slot
  (a pointer then 8 pad bytes, a 32-bit value then 12), all strides in **bytes**. The offsets
  are the code object's own metadata (`.args`: R, Q, K, V, LSE, scalar, seq_len, Seqs, ...);
  the values are AITER's (`kernarg_values`). `scalar` is the plain softmax scale as a float
  (the metadata calls it i32; the kernel multiplies it by log2 e itself);
* layout: Q, K, V, O bf16 in bshd ([batch, seq, heads, 128]; AITER's torch path), LSE float32
  [batch, heads, seq_q], the natural-log log-sum-exp of each row;
* launch: 512 work-items (8 waves x 32 query rows = ts_qo 256 rows per workgroup), grid
  (ceil(seq_q / 256), heads, batch); the causal kernel pairs query tiles t and
  ntiles - 1 - t in one workgroup, so its grid x is ceil(ntiles / 2);
* causal: bottom-right aligned (key j visible to query i iff j <= i + seq_k - seq_q), AITER's
  `mask_bottom_right`; `s_opt` (msk_opt) as AITER's host sets it: 5, or 3 when heads % 8 or
  seq_q > 16384 (its workgroup remap 2 needs groups of 8 heads);
* K/V read past their end: K and V are streamed with the tile position in `soffset`, which the
  buffer range check does not cover (GFX9: only voffset + the instruction offset are checked;
  the emulator does the same, emu/semantics/mem.py), and the kernels prefetch key tiles ahead
  of the one they compute, so they read rows after the last (batch, head) slice: up to 191
  rows (gfx950) / 95 rows (gfx942) past seq_k, measured on the emulator. Those scores are
  masked (-inf) but the rows must be readable and finite; the launch gives K and V
  `KV_PAD_ROWS` (256) rows of zeros after their end (on a GPU the reads land in whatever
  follows the allocation: the allocator's slack, or a fault);
* gfx942's object is the "rtz" build (csv bf16_cvt 2): it rounds P toward zero before the
  P V MFMA (v_perm_b32 taking the high halves) and O on the way out, and sums the row in
  float32 before rounding; the reference models exactly that (`reference(round_p=...)` and an
  RTZ output), gfx950's objects convert with v_cvt_pk_bf16_f32 (nearest even).

The reference is flash_attention_fwd's (kernels/attention.py `reference`, with the LSE), and
so is the tolerance (`attention.tolerance`).
"""

from __future__ import annotations

import math
import struct
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from asterism.kernels import attention
from asterism.kernels.base import Param, Shape, require
from asterism.kernels.codeobject import register_code_object

NAME = "aiter_fmha_fwd"
TARGETS = ("gfx950", "gfx942")
HEAD_DIM = 128  # the kernels hard-code it (they load qk_head_dim / v_head_dim, never use it)
TILE_Q = 256  # query rows per workgroup (csv ts_qo; the kernel needs Ts = 256 * Seqs)
BLOCK = 512  # work-items per workgroup (.reqd_workgroup_size)
# Zero rows after K and V: the kernels prefetch key tiles within a 256-row window past the
# current one (they stop advancing once pos + 256 >= seq_k); on the emulator the reads reach
# at most 191 rows (gfx950, 64-row tiles) / 95 rows (gfx942, 32-row tiles) past seq_k.
KV_PAD_ROWS = 256
BF16_BYTES, F32_BYTES = 2, 4
# AITER's host (mha_fwd.cu): s_opt 5, downgraded to 3 "if num_head is not 8N, or seqlen is
# bigger than 16K"; only the causal kernel reads it.
OPT_DEFAULT, OPT_DOWNGRADED, OPT_MAX_SEQ = 5, 3, 16384
ORIGIN = ("AITER fmha_v3_fwd (ROCm/aiter, MIT): gfx950 hsa/gfx950/fmha_v3_fwd/"
          "fwd_hd128_bf16.co (commit e4048607) and fwd_hd128_bf16_causal.co, gfx942 "
          "hsa/gfx942/fmha_v3_fwd/MI300/fwd_hd128_bf16_rtz.co (commit not recorded); "
          "tests/data/shared/README.md, asterism/kernels/data/aiter/README.md")

# (target, causal) -> the code object (under kernels/data/aiter/) and its symbol.
OBJECTS = {
    ("gfx950", False): ("gfx950/fwd_hd128_bf16.co", "_ZN5aiter19fmha_fwd_hd128_bf16E"),
    ("gfx950", True): ("gfx950/fwd_hd128_bf16_causal.co",
                       "_ZN5aiter26fmha_fwd_hd128_bf16_causalE"),
    ("gfx942", False): ("gfx942/MI300/fwd_hd128_bf16_rtz.co",
                        "_ZN5aiter23fmha_fwd_hd128_bf16_rtzE"),
}
RTZ_TARGETS = ("gfx942",)  # the shipped gfx942 object is the round-toward-zero build

PARAMS = (
    Param("batch", 1, "batch size"),
    Param("heads", 2, "query heads"),
    Param("seq_q", 256, "query sequence length"),
    Param("seq_k", 0, "key/value sequence length (0: same as seq_q)"),
    Param("head_dim", HEAD_DIM, "head dimension (the kernels are built for 128)",
          choices=(HEAD_DIM,)),
    Param("heads_kv", 0, "key/value heads, grouped-query attention (0: same as heads; "
          "heads must be a multiple)"),
    Param("causal", False, "causal mask, bottom-right aligned (gfx950's causal object)"),
    Param("lse", True, "write and check the log-sum-exp of each row (s_lse)"),
    Param("msk_opt", -1, "s_opt of the causal kernel: -1 = AITER's host choice (5, or 3 when "
          "heads % 8 or seq_q > 16384); bits 2:1 a workgroup remap (2 needs heads % 8 == 0), "
          "bit 0 the reversed key order of the second tile", choices=tuple(range(-1, 6))),
    Param("scale", 0.0, "softmax scale (0: 1/sqrt(head_dim))", type=float),
    Param("dtype", "bf16", "element type of Q, K, V and O", choices=("bf16",)),
    Param("seed", 0, "random seed of the inputs"),
)


class Config:
    """The checked parameters and what the launch derives from them."""

    def __init__(self, target: str, p: dict[str, Any]):
        self.target = target
        self.batch, self.heads, self.seq_q = p["batch"], p["heads"], p["seq_q"]
        self.seq_k = p["seq_k"] or p["seq_q"]
        self.heads_kv = p["heads_kv"] or p["heads"]
        self.causal, self.lse, self.seed = p["causal"], p["lse"], p["seed"]
        self.scale = p["scale"] or 1.0 / math.sqrt(HEAD_DIM)
        self.rtz = target in RTZ_TARGETS
        if p["msk_opt"] >= 0:
            self.opt = p["msk_opt"]
        else:
            downgrade = self.heads % 8 or self.seq_q > OPT_MAX_SEQ
            self.opt = OPT_DOWNGRADED if downgrade else OPT_DEFAULT

    @property
    def q_tiles(self) -> int:
        """Query tiles of 256 rows."""
        return -(-self.seq_q // TILE_Q)

    @property
    def grid(self) -> tuple[int, int, int]:
        """(x, heads, batch): x tiles, or tile pairs (t, ntiles - 1 - t) when causal."""
        x = -(-self.q_tiles // 2) if self.causal else self.q_tiles
        return (x, self.heads, self.batch)


def check(target: str, p: dict[str, Any]) -> Config:
    """The parameters as a Config, or a KernelParamError naming the one that does not fit."""
    for name in ("batch", "heads", "seq_q"):
        require(p[name] >= 1, name, f"must be at least 1, got {p[name]}")
    require(p["seq_k"] >= 0, "seq_k", f"must be at least 1 (or 0 for seq_q), got {p['seq_k']}")
    require(p["heads_kv"] >= 0, "heads_kv", f"must be at least 1 (or 0 for heads), got "
            f"{p['heads_kv']}")
    require(p["seed"] >= 0, "seed", f"must be at least 0, got {p['seed']}")
    require(p["scale"] >= 0, "scale", f"must be positive (or 0 for 1/sqrt(head_dim)), "
            f"got {p['scale']}")
    cfg = Config(target, p)
    require(cfg.heads % cfg.heads_kv == 0, "heads_kv",
            f"heads ({cfg.heads}) must be a multiple of heads_kv ({cfg.heads_kv})")
    require((target, cfg.causal) in OBJECTS, "causal",
            f"{target} has no causal object here (the shipped gfx942 object is the "
            "non-causal rtz build)")
    if cfg.causal:
        require(cfg.seq_k >= cfg.seq_q, "causal",
                f"needs seq_k >= seq_q (bottom-right aligned mask; rows with no visible key "
                f"are undefined), got seq_q={cfg.seq_q} seq_k={cfg.seq_k}")
        require((cfg.opt >> 1) & 3 != 2 or cfg.heads % 8 == 0, "msk_opt",
                f"{cfg.opt} remaps workgroups across groups of 8 heads: heads must be a "
                f"multiple of 8, got {cfg.heads}")
    # Byte offsets and strides are 32-bit in the struct and the buffer descriptors.
    for name, seq, heads in (("seq_q", cfg.seq_q, cfg.heads), ("seq_k", cfg.seq_k,
                                                               cfg.heads_kv)):
        nbytes = (cfg.batch * seq + KV_PAD_ROWS) * heads * HEAD_DIM * BF16_BYTES
        require(nbytes < 2 ** 32, name, f"a tensor of {nbytes} bytes; the kernel's strides "
                "and buffer offsets are 32-bit (under 4 GiB per tensor)")
    return cfg


# ------------------------------------------------------------------------------ the struct


def kernarg_values(cfg: Config) -> dict[str, float | int]:
    """The by-value fields of `fmha_fwd_v3_args`, by metadata name, for bshd tensors:
    strides in bytes (mha_fwd.cu multiplies torch's element strides by 2, by 4 for LSE)."""
    d = HEAD_DIM * BF16_BYTES  # one row of one head
    seqs, k_seqs = cfg.heads * d, cfg.heads_kv * d
    return {
        "scalar": cfg.scale, "seq_len": cfg.seq_q,
        "Seqs": seqs, "Ts": TILE_Q * seqs, "Hs": d, "Bs": cfg.seq_q * seqs,
        "gqa": cfg.heads // cfg.heads_kv,
        "k_Seqs": k_seqs, "k_Hs": d, "k_Bs": cfg.seq_k * k_seqs,
        "msk_opt": cfg.opt, "lse": int(cfg.lse), "kv_seq_len": cfg.seq_k,
        "qk_head_dim": HEAD_DIM, "v_head_dim": HEAD_DIM, "q_head_num": cfg.heads,
        "v_Seqs": k_seqs, "v_Hs": d, "v_Bs": cfg.seq_k * k_seqs,
        "r_Seqs": seqs, "r_Hs": d, "r_Bs": cfg.seq_q * seqs,
        "lse_Hs": cfg.seq_q * F32_BYTES,
    }


# Buffer fields (metadata name) and the case's argument in them; ptr_qseq, ptr_kseq and the
# padding pointers are group (varlen) mode only and stay null in batch mode.
POINTERS = {"R": "o", "Q": "q", "K": "k", "V": "v", "LSE": "lse"}


def pack(args: dict[str, Any], cfg: Config):
    """The launch's kernarg segment and buffers (runtime.PackedArgs): the struct at the
    metadata's offsets, K and V copied with KV_PAD_ROWS zero rows after their end."""
    from asterism.runtime.kernargs import BufferArg, PackedArgs

    meta = metadata(cfg.target, cfg.causal)
    fields = {a[".name"]: (int(a[".offset"]), int(a[".size"])) for a in meta[".args"]
              if a[".name"] != "pad"}
    segment = bytearray(int(meta[".kernarg_segment_size"]))
    for name, value in kernarg_values(cfg).items():
        offset, size = fields[name]
        # (the metadata says i32 for every value; `scalar` is a float in AITER's struct)
        struct.pack_into("<f" if name == "scalar" else "<I", segment, offset, value)
    buffers = []
    for field, arg in POINTERS.items():
        if arg not in args:
            continue  # (no LSE: a null pointer, s_lse 0)
        array = args[arg]
        if arg in ("k", "v"):
            pad = np.zeros(KV_PAD_ROWS * cfg.heads_kv * HEAD_DIM, array.dtype)
            array = np.concatenate([array.reshape(-1), pad])
        written = arg in ("o", "lse")
        buffers.append(BufferArg(arg, array, fields[field][0], copy_in=True, copy_out=written))
    return PackedArgs(segment, buffers)


@cache
def code_object(target: str, causal: bool) -> bytes:
    """The shipped code object for (target, causal)."""
    path, _ = OBJECTS[(target, causal)]
    return resources.files("asterism.kernels").joinpath("data/aiter", path).read_bytes()


@cache
def metadata(target: str, causal: bool) -> dict[str, Any]:
    """The metadata entry of that code object's kernel."""
    from asterism.mc.codeobject import read_code_object

    obj = read_code_object(code_object(target, causal))
    symbol = OBJECTS[(target, causal)][1]
    return next(k for k in obj.kernels if k.name == symbol).metadata or {}


# ------------------------------------------------------------------------------ data


def input_bytes(cfg: Config) -> int:
    """Host memory of a run and its check: Q, K, V, O (+ the run's copy), the padded device
    copies of K and V, LSE twice, the float32 decoded inputs and the float64 reference."""
    q = cfg.batch * cfg.seq_q * cfg.heads * HEAD_DIM
    kv = (cfg.batch * cfg.seq_k + KV_PAD_ROWS) * cfg.heads_kv * HEAD_DIM
    lse = cfg.batch * cfg.heads * cfg.seq_q
    return (2 * (3 * q + 4 * kv) + 4 * (q + 2 * kv + 2 * lse) + 8 * (q + lse)
            + attention.REFERENCE_BLOCK_BYTES * 4)


def make_inputs(cfg: Config, seed: int) -> dict[str, np.ndarray]:
    """Q, K, V (standard normal as bf16 codes, bshd), a zero O and LSE, checked against the
    memory budget first; drawn a batch at a time."""
    from asterism.support.limits import check_memory

    check_memory(input_bytes(cfg), f"the arguments and reference of {NAME} (batch "
                 f"{cfg.batch}, heads {cfg.heads}/{cfg.heads_kv}, seq_q {cfg.seq_q}, seq_k "
                 f"{cfg.seq_k})", hint="use a smaller problem")
    rng = np.random.default_rng(seed)
    out = {}
    for name, seq, heads in (("q", cfg.seq_q, cfg.heads), ("k", cfg.seq_k, cfg.heads_kv),
                             ("v", cfg.seq_k, cfg.heads_kv)):
        out[name] = np.empty((cfg.batch, seq, heads, HEAD_DIM), np.uint16)
        for b in range(cfg.batch):
            out[name][b] = attention.encode(rng.standard_normal((seq, heads, HEAD_DIM)),
                                            "bf16")
    out["o"] = np.zeros((cfg.batch, cfg.seq_q, cfg.heads, HEAD_DIM), np.uint16)
    if cfg.lse:
        out["lse"] = np.zeros((cfg.batch, cfg.heads, cfg.seq_q), np.float32)
    return out


def expected(args: dict[str, Any], cfg: Config) -> dict[str, np.ndarray]:
    """O (bshd) and LSE from flash_attention_fwd's reference; for the rtz build with P and O
    rounded toward zero as that kernel rounds them."""
    q, k, v = (attention.decode(args[n], "bf16").transpose(0, 2, 1, 3) for n in "qkv")
    o, lse = attention.reference(q, k, v, cfg.scale, cfg.causal, lse=True,
                                 round_p=attention.bf16_toward_zero if cfg.rtz else None)
    o = o.transpose(0, 2, 1, 3)
    out = {"o": attention.bf16_toward_zero(o) if cfg.rtz else o}
    if cfg.lse:
        out["lse"] = lse
    return out


def _decode(name: str, value: np.ndarray) -> np.ndarray:
    return attention.decode(value, "bf16") if name == "o" else value


GENERATOR = register_code_object(
    NAME, lambda target, cfg: code_object(target, cfg.causal),
    check=check, targets=TARGETS, params=PARAMS,
    args=lambda target, cfg: make_inputs(cfg, cfg.seed),
    pack=pack, grid=lambda target, cfg: cfg.grid, block=(BLOCK, 1, 1),
    outputs=lambda target, cfg: ("o", "lse") if cfg.lse else ("o",),
    reference=expected,
    atol=lambda args, cfg: attention.tolerance(attention.decode(args["v"], "bf16"), "bf16")[0],
    rtol=attention.EPS["bf16"], decode=_decode,
    flops=lambda cfg: attention.attention_flops(cfg.batch, cfg.heads, cfg.seq_q, cfg.seq_k,
                                                HEAD_DIM, cfg.causal),
    shape=Shape((("BATCH", "batch"), ("HEADS", "heads"), ("SEQ", "seq_q"),
                 ("DIM", "head_dim")), "1x8x4096x128"),
    description="AMD AITER's hand-written flash-attention forward (fmha v3, bf16, head "
                "dim 128), launched as shipped",
    origin=ORIGIN,
)
