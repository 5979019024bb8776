"""Flash-attention forward: O = softmax(Q K^T * scale [+ causal mask]) V, one kernel.

Q and O are [batch, heads, seq_q, head_dim], K and V [batch, heads_kv, seq_k, head_dim] arrays
(bf16 or f16, contiguous; grouped-query attention: query head h reads K/V head
h // (heads / heads_kv)); with `lse` the kernel also writes the log-sum-exp of each row
(float32 [batch, heads, seq_q]). A workgroup
of `waves` waves takes `block_m` = 32 * waves query rows of one (batch, head); each wave owns
32 rows and walks the keys `block_n` at a time. Per key block the workgroup copies the K and
V tiles to LDS (on gfx950 straight from memory with `buffer_load_dwordx4 ... lds`, M0 values
precomputed in SGPRs; on gfx942 through registers and `ds_write_b128`; double-buffered by
default: on gfx950 the next block's DMA runs under this block's S MFMAs, on gfx942 its loads
under the S MFMAs into registers of their own and its LDS writes under the P V MFMAs, one
barrier per block), then each wave:

1. computes S^T = K Q^T with 32x32 MFMAs (v_mfma_f32_32x32x16 on gfx950, 32x32x8 on gfx942):
   K is the A operand (from LDS), Q^T the B operand (held in registers for the whole loop).
   In the accumulator layout lane l holds query column i = l % 32 and 16 keys of each
   32-key tile, so the row statistics are per lane plus one exchange with lane l ^ 32;
2. masks keys past seq_k and, when causal, keys after the query (bottom-right aligned:
   key j is visible to query i when j <= i + seq_k - seq_q), only in the blocks that need it;
3. online softmax in base 2: m_new = max(m, scale*log2(e) * max_j s), p = exp2(s * scale *
   log2(e) - m_new) (one v_fma_f32 + v_exp_f32 per score), alpha = exp2(m - m_new); the
   running sum l and the O accumulator are rescaled by alpha (skipped when no row of the
   wave's max changed: the deferred rescale); l is kept per lane and summed with lane l ^ 32
   only at the end;
4. converts P to 16 bits: the S^T accumulator registers of 8 (gfx942) or 16 (gfx950)
   consecutive keys are exactly the B operand of O^T += V^T P^T, no shuffle; the V^T A
   operand is read from LDS transposed (ds_read_b64_tr_b16 on gfx950, ds_read_u16_d16 /
   _d16_hi pairs on gfx942).

At the end O^T / l is converted and stored: on gfx950 8 head-dim values (16 bytes) per lane
and store after a v_permlane32_swap_b32; on gfx942 through the LDS (o_staging), read back
row-contiguous and stored 8 bytes a lane, 8 lanes on 64 contiguous bytes. Ragged
sequence lengths use the buffer descriptors' range checks: K/V rows past seq_k read as zero
(and are masked), O rows past seq_q are not written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from asterism.builder import Group, Stream, after, before, unroll
from asterism.builder.checks import instruction_kind
from asterism.isa import get_isa
from asterism.kernels.base import (
    KernelCase,
    KernelGenerator,
    KernelParamError,
    LazyArgs,
    Param,
    Shape,
    register,
    require,
)
from asterism.kernels.features import KernelFeatures, kernel_features
from asterism.target.timing import get_timing

NAME = "flash_attention_fwd"
TARGETS = ("gfx950", "gfx942")
ROWS_PER_WAVE = 32  # one 32x32 MFMA tile of queries per wave
LOG2E = 1.4426950408889634
NEG_INF_BITS = 0xFF800000
RESCALE_SLACK = 8.0  # growth of the running max (log2 units) tolerated before a rescale
M_INIT = -1.0e30  # finite start of the running max: exp2(M_INIT - m) is 0, never NaN
COPY_LAG = 4  # global -> LDS copies through registers: loads in flight before the writes
READ_AHEAD = 2  # MFMA steps the LDS operand reads run ahead of their MFMA
# max_under_s: MFMAs between a tile's last S MFMA and the first read of it (a VALU read of an
# MFMA result waits for it; 2: modeled 1.7 % slower at 1x8x4096x128)
MAX_LAG = 3
# gfx942 stages 2: S MFMAs per load of the next block (all 8 waves load at once after the
# block's barrier; one load after each MFMA queues them at the CU's vector memory: modeled
# 48226 vs 47254 cycles at 1x2x512x128)
STAGE_LOAD_SPACING = 4
# gfx942 stages 2: k_ahead auto (modeled 46610 with 3, 46242 with 2 at 1x2x512x128; with one
# barrier per block the waves start their S MFMAs together and the LDS port queues less)
STAGES_K_AHEAD = 2
PV_READ_AHEAD = 4  # the same for the V^T reads of gfx950 (2 ds_read_b64_tr_b16 per MFMA)
# block_barrier pv: P V MFMAs after the barrier (modeled at 1x2x512x128: 1 46546, 2 46506,
# 3 46634, 4 47066, 6 53646: more and the barrier waits for reads the MFMAs need first)
PV_BARRIER_LAG = 2
AUTO_V_AHEAD = 2  # v_ahead auto with 8 waves and one S buffer on gfx950 (modeled faster)
DMA_M0_SGPR = 64  # first SGPR of the pinned DMA M0 values (gfx950)
BUFFER_WORD3 = 0x00020000  # raw buffer, 32-bit data format (range-checked, stride 0)
REFERENCE_BLOCK_BYTES = 64 << 20  # float64 scores the reference holds at once, at most
# s_setprio levels per setprio mode at the points of a key block (_Builder.priority): scores
# (before the S MFMAs), softmax (after them), exps (after the row max's lane exchange, before
# the rescale branch), pv (before the P V MFMAs). stage: the wave behind in the block first.
PRIORITY_POINTS = {"mfma": {"scores": 1, "softmax": 0, "pv": 1},
                   "stage": {"scores": 2, "softmax": 1, "pv": 0},
                   "scores": {"scores": 1, "exps": 0},
                   "s_mfma": {"scores": 1, "softmax": 0}}
EPS = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}  # relative rounding error bound of the dtype

PARAMS = (
    Param("batch", 1, "batch size"),
    Param("heads", 2, "attention heads"),
    Param("heads_kv", 0, "key/value heads (0: same as heads); grouped-query attention: query "
          "head h reads K/V head h // (heads / heads_kv)"),
    Param("seq_q", 128, "query sequence length"),
    Param("seq_k", 0, "key/value sequence length (0: same as seq_q)"),
    Param("head_dim", 128, "head dimension", choices=(64, 128)),
    Param("dtype", "bf16", "element type of Q, K, V and O", choices=("bf16", "f16")),
    Param("causal", False, "causal mask (bottom-right aligned when seq_k > seq_q)"),
    Param("causal_order", "auto", "causal: which row tiles a workgroup takes (the last "
          "tiles see the most keys): paired = tiles n-1-x then x (every workgroup the same "
          "work, half as many workgroups), longest_first = tile n-1-x (the grid runs as long "
          "as its longest tile), in_order = tile x; auto = paired where the paired grid "
          "still has a workgroup for every CU, else longest_first",
          choices=("auto", "paired", "longest_first", "in_order")),
    Param("scale", 0.0, "softmax scale (0: 1/sqrt(head_dim))", type=float),
    Param("block_m", 0, "query rows per workgroup (32 per wave; 0: 32 * waves)"),
    Param("block_n", 0, "keys per loop iteration: 32, 64, 128 or 256 where it fits; 0: 128 "
          "where two LDS stages of 128-key tiles fit (gfx950's 160 KiB; gfx942's 64 KiB at "
          "head_dim 64), else 64 (gfx942 head_dim 128: two stages of 32 KiB; with one stage "
          "128)"),
    Param("waves", 0, "waves per workgroup: 1, 2, 4 (one per SIMD) or 8 (two per SIMD, 256 "
          "query rows: the K/V tiles in LDS serve 8 waves, and each SIMD runs one wave's "
          "softmax under the other's MFMAs); 0: 8 where a K/V tile splits into 16-byte "
          "copies over 8 waves, else the most that it splits over"),
    Param("stages", 0, "LDS buffers of K/V tiles: 2 = double buffering (gfx950: the DMA of "
          "the next key block runs under this block's MFMAs; gfx942: its loads go under "
          "the S MFMAs into registers of their own, its LDS writes under the P V MFMAs, one "
          "barrier per block: modeled 45998 vs 46790 cycles for one stage at 1x2x512x128, "
          "156686 vs 164150 at 1x8x2048x128, with its k_ahead 2 and max_exchange "
          "on_rescale), "
          "1 = one buffer (gfx942: the writes between two barriers), 0 = 2 where it fits "
          "(gfx942: with prefetch and lds_writes between)", choices=(0, 1, 2)),
    Param("s_buffers", 0, "S register buffers: 2 = ping-pong (the S MFMAs of the next key "
          "block co-issue with this block's softmax, gfx950 with stages 2), 1 = one, 0 = 2 "
          "where they fit", choices=(0, 1, 2)),
    Param("o_regs", "auto", "registers of the O accumulator: vgpr, agpr (MFMA C/D in AGPRs, "
          "VALU through v_accvgpr_read/write; frees head_dim / 2 VGPRs), auto = vgpr where "
          "the rest fits", choices=("auto", "vgpr", "agpr")),
    Param("lds_layout", "swizzle", "K/V tiles in LDS: swizzle = 16-byte chunks XOR-permuted "
          "per row so the K (and gfx950 V^T) reads of a phase hit distinct banks, plain = "
          "row-major as in memory", choices=("swizzle", "plain")),
    Param("packed", "auto", "packed f32 math: v_pk_fma_f32 for the scores' scaling, "
          "v_pk_mul_f32 for the rescale of O and l, v_pk_add_f32 for the running sum (two "
          "lanes' values per VALU instruction); false: one; auto = two unpacked ops where an "
          "MFMA of the SIMD would hold the packed one (passes + 2 issue cycles, + 1 after a "
          "16-byte source; LLVM's SIPreEmitPeephole does the same): with 8 waves (two per "
          "SIMD, the softmax under the other wave's MFMAs) everywhere, else where the wave's "
          "own MFMA is that close in the generated order",
          choices=("auto", "true", "false")),
    Param("bf16_round", "nearest", "gfx942, bf16: how P and O are rounded to bf16 (gfx942 has "
          "no conversion instruction): nearest = to nearest even (2 VALU per value + 1 per "
          "pair), nearest_away = to nearest, ties away from zero (1 v_add_u32 per value + 1 "
          "per pair; AITER's rtna rounding), truncate = toward zero (1 v_perm_b32 per pair; "
          "what AITER's gfx942 fmha_fwd_hd128_bf16_rtz object does; P and O biased low by "
          "up to 2^-8)", choices=("nearest", "nearest_away", "truncate")),
    Param("v_layout", "auto", "V tile in LDS: transposed = gfx942 writes V^T at copy time "
          "(4 key rows per lane, v_perm_b32 into 4-key pairs, ds_write_b128; a V^T operand "
          "is one ds_read_b64), rows = row-major as in memory (gfx942: 4 ds_read_u16 per "
          "operand; gfx950 reads rows transposed with ds_read_b64_tr_b16); auto = transposed "
          "on gfx942, rows on gfx950", choices=("auto", "rows", "transposed")),
    Param("k_read", "auto", "K operand reads: b128 = one ds_read_b128 per two 32x32x8 MFMA "
          "steps on gfx942 (lane half h takes head-dims 16 p + 8 h..+7 for steps 2p, 2p + 1; "
          "Q loaded in the same order; the XOR swizzle makes its 8-lane phases "
          "conflict-free; half the reads: modeled 47390 vs 48210 cycles at 1x2x512x128 with "
          "setprio scores and k_ahead 3), b64 = one ds_read_b64 per step (2-way conflicts on "
          "gfx942); auto = b128 on gfx942 (gfx950 always reads 16 bytes: one 32x32x16 step)",
          choices=("auto", "b64", "b128")),
    Param("prefetch", True, "gfx942: the global loads of the next key block's K/V tiles "
          "ahead of their LDS writes; one LDS stage: issued before this block's P V MFMAs, "
          "into the S registers (free once P is packed), and only their LDS writes sit "
          "between the two barriers (false: loads and writes between the barriers, one "
          "stage); two stages (needs it): under the S MFMAs, into registers of their own"),
    Param("max_exchange", "auto", "where the row max is exchanged with the other half "
          "of the row (lane l ^ 32; gfx942: ds_bpermute_b32 through the LDS, gfx950: "
          "v_permlane32_swap_b32): every_block = before the deferred-rescale test; "
          "on_rescale = only inside the rescale branch (the test on each half's own max "
          "takes the branch exactly when the row's max grew past the slack; without it the "
          "old max stays, the same in both halves): no LDS access between the S MFMAs and "
          "the exps in most blocks (gfx942 one stage: modeled 46706 vs 46790 cycles at "
          "1x2x512x128; two stages: 45998 vs 46242); auto = on_rescale on gfx942 with two "
          "LDS stages, else every_block", choices=("auto", "every_block", "on_rescale")),
    Param("lds_writes", "between", "gfx942 with prefetch and transposed V, one LDS stage: "
          "where the copy's LDS writes go. between = K and V^T of the next block written "
          "between two barriers at the block's start (no MFMA runs meanwhile); split = V^T "
          "written after the block's barrier (the previous block's P V reads are done), "
          "before the S MFMAs, and K of the next block at the end of the P V phase, after a "
          "second barrier that the waves 4-7 pass after their S MFMAs and the waves 0-3 after "
          "their softmax (every wave is done with K then; each SIMD's first wave is in its "
          "softmax and the second in its S MFMAs there anyway). split is modeled slower "
          "(48250 vs 47390 cycles at 1x2x512x128: the SIMDs, up to 600 cycles apart, now meet "
          "twice a block); with two stages (stages 0 takes them with between) the writes go "
          "into the other stage under the P V MFMAs", choices=("between", "split")),
    Param("q_staging", "auto", "how Q reaches its registers: lds = row-contiguous "
          "buffer_load_dwordx4 (4 rows of 1 KiB per instruction) into the wave's part of the "
          "LDS (chunks XOR-swizzled by row), then read in the MFMA layout; direct = each lane "
          "loads its own row (32 rows, 32 cache lines per instruction); auto = lds on gfx942 "
          "where 32 rows per wave fit the kernel's LDS", choices=("auto", "lds", "direct")),
    Param("o_staging", "auto", "how O reaches memory on gfx942: lds = each wave writes its "
          "32 O rows from the MFMA layout to its part of the LDS (16 ds_write_b64 at "
          "d128), reads them back row-contiguous (ds_read_b64) and stores them with "
          "buffer_store_dwordx2 whose 8 lanes a clock write one 64-byte block (AITER's "
          "gfx942 kernel stages O through LDS too); one barrier first; direct = each lane "
          "stores 4 head-dims (8 bytes) of its own row (8 rows, 8 blocks a clock); auto = "
          "lds on gfx942 where 32 rows per wave fit the kernel's LDS (modeled 47790 vs "
          "51770 cycles at 1x2x512x128, with the epilogue's v_pk_mul_f32)",
          choices=("auto", "lds", "direct")),
    Param("stage_offsets", "auto", "gfx942 two stages: how the LDS stage alternates. "
          "immediate = the key loop runs two blocks per trip and each block names its stages "
          "in the ds_read / ds_write offsets (no VALU per block; an odd block count leaves "
          "one block after the loop), toggle = the loop carries the read and write addresses "
          "and flips them by v_xor_b32 after each block (12 at d128, 8 waves); auto = "
          "immediate where the trip counts are known when the kernel is built (not causal, "
          "loop scf), else toggle (modeled 47022 vs 47790 cycles at 1x2x512x128)",
          choices=("auto", "immediate", "toggle")),
    Param("block_barrier", "auto", "gfx942 two stages: where the one barrier of a key block "
          "goes. top = before the block's S MFMAs; pv = in the previous block's P V phase, 2 "
          "MFMAs before its end (after the copy's LDS writes; the V^T reads done): the last "
          "P V MFMAs cover the barrier and the next block's first K reads; auto = pv with "
          "two stages (modeled 46502 vs 46894 cycles at 1x2x512x128, 84310 vs 85230 at "
          "1x2x1024x128, causal 89034 vs 90562)", choices=("auto", "top", "pv")),
    Param("lse", False, "also write the log-sum-exp of each row (natural log, float32 "
          "[batch, heads, seq_q]: what a backward pass reads) to the output buffer lse"),
    Param("loop", "scf", "how the key loops are written: scf = scf.for (kb.loop) whose "
          "iter_args carry the key offsets, LDS stages and read addresses, the deferred "
          "rescale an scf.if on vcc, ping-pong S two bodies per trip with the odd trip after "
          "the loop; unrolled = blocks and branches written by the generator",
          choices=("scf", "unrolled")),
    Param("setprio", "auto", "s_setprio (the wave priority of the SIMD's issue arbitration) "
          "where two waves share a SIMD (8 waves): group = the second wave group (waves 4-7, "
          "each the second wave of its SIMD) raises its priority once at the start, as "
          "AITER's kernel does; mfma = every wave raises it to 1 before its MFMA phases and "
          "lowers it to 0 before its softmax; stage = 2 for a key block's S MFMAs, 1 for its "
          "softmax, 0 for its P V (the wave behind in the block goes first); scores = 1 from "
          "the S MFMAs through the row max's lane exchange, 0 from the exps on (the second "
          "wave's S MFMAs go before the first wave's P V MFMAs, the first wave's exchange "
          "before the second wave's K reads); s_mfma = 1 for the S MFMAs only (gfx942 with "
          "k_read b128: modeled 46790 vs 47390 for scores at 1x2x512x128; with b64 52410 vs "
          "48210); mfma, stage, scores and s_mfma need one S buffer; none = issue by age; "
          "auto = stage on gfx950 and s_mfma on gfx942, each with 8 waves and one S buffer, "
          "else none", choices=("auto", "none", "group", "mfma", "stage", "scores", "s_mfma")),
    Param("exp_under_pv", "auto", "gfx950, one S buffer: on = the P V MFMAs go tile by tile "
          "(32 keys) and the fma, exp and packing of tile u + 1 run under tile u's MFMAs "
          "(only tile 0's P before them; the running-sum adds after the exps); off = all of P "
          "before the P V MFMAs; auto = on with 8 waves", choices=("auto", "on", "off")),
    Param("max_under_s", "auto", "gfx950, one S buffer: on = the row max of each 32-key tile "
          "(v_max3 over its 16 scores) runs under the S MFMAs of the next tile, one per MFMA "
          "(unmasked blocks; the last tile's and the combination after the MFMAs); off = "
          "the whole max after them; auto = on with 8 waves", choices=("auto", "on", "off")),
    Param("k_ahead", 0, "S MFMA steps the K reads run ahead of their MFMA with one S buffer "
          "(gfx950 ds_read_b128; gfx942 ds_read_b64, or with k_read b128 reads of two steps "
          "each) (1-6; 0: 3 on gfx942 with one LDS stage, whose 32-cycle 32x32x8 MFMAs do not "
          "cover the LDS latency and the SIMD-pair port's queue in 2 steps, 4 on gfx950 (its DS "
          "reads wait after each MFMA: modeled 51462 vs 53002 with 2 at 1x2x1024x128), else "
          "2)",
          choices=(0, 1, 2, 3, 4, 5, 6)),
    Param("v_ahead", 0, "P V MFMAs the V^T reads run ahead of their MFMA (gfx950: 2 "
          "ds_read_b64_tr_b16 per MFMA; gfx942 with v_layout transposed: one ds_read_b64) "
          "(1-6; 0: 2 on gfx950 with 8 waves and one S buffer, else 4; gfx942 with two "
          "stages and block_barrier pv: 6 modeled the same as 4, 46506 vs 46502 at "
          "1x2x512x128)",
          choices=(0, 1, 2, 3, 4, 5, 6)),
    Param("seed", 0, "random seed of the inputs"),
)


@dataclass(frozen=True)
class Config:
    """The checked parameters and the quantities derived from them."""

    target: str
    batch: int
    heads: int
    seq_q: int
    seq_k: int
    head_dim: int
    dtype: str
    causal: bool
    scale: float
    block_m: int
    block_n: int
    waves: int
    stages: int = 1
    s_buffers: int = 1
    o_agprs: bool = False
    heads_kv: int = 0  # 0: heads
    lse: bool = False
    swizzle: bool = False
    packed: bool = False
    # packed auto: a v_pk_*_f32 within an MFMA's packed-VALU hold becomes two unpacked ops
    unpack_near_mfma: bool = False
    packed_store: bool = False  # O / l in the epilogue by v_pk_mul_f32 (packed auto, true)
    causal_order: str = "in_order"
    truncate: bool = False  # gfx942 bf16: round toward zero
    loop: str = "scf"  # key loops: scf.for or blocks and branches
    away: bool = False  # gfx942 bf16: round to nearest, ties away from zero
    vt: bool = False  # gfx942: V stored transposed in LDS (v_layout transposed)
    k_bytes: int = 16  # bytes of a lane's K read (8 on gfx942 with k_read b64)
    prefetch: bool = False  # gfx942: next block's K/V loaded into the S registers early
    q_lds: bool = False  # gfx942: Q staged through LDS with row-contiguous loads
    o_lds: bool = False  # gfx942: O through LDS, stored row-contiguous (o_staging lds)
    stage_imm: bool = False  # gfx942 two stages: stages in the DS offsets, two blocks a trip
    pv_barrier: bool = False  # gfx942 two stages: the block's barrier in the previous P V phase
    # s_setprio: none, group (waves 4-7 once), mfma, stage, scores or s_mfma (per phase)
    setprio: str = "none"
    exp_under_pv: bool = False  # gfx950: tiles 1..'s fma / exp / pack under the P V MFMAs
    max_under_s: bool = False  # gfx950: tile maxima under the S MFMAs of the next tile
    k_ahead: int = READ_AHEAD  # S MFMA steps the K reads run ahead (one S buffer)
    v_ahead: int = PV_READ_AHEAD  # P V MFMAs the V^T reads run ahead (one read per operand)
    exchange_on_rescale: bool = False  # the row max's lane exchange only in the rescale
    split_writes: bool = False  # gfx942 prefetch: V^T writes after the block's barrier, K's
    # after a mid-block barrier (lds_writes split)

    @property
    def row_tiles(self) -> int:
        """Tiles of block_m query rows covering seq_q."""
        return -(-self.seq_q // self.block_m)

    @property
    def paired(self) -> bool:
        """True when each workgroup takes two row tiles, n - 1 - x and x (causal)."""
        return self.causal and self.causal_order == "paired" and self.row_tiles > 1

    @property
    def grid_x(self) -> int:
        """Workgroups along the query rows (half the tiles, rounded up, when paired)."""
        return -(-self.row_tiles // 2) if self.paired else self.row_tiles

    @property
    def features(self) -> KernelFeatures:
        """The target's kernel capabilities (asterism.kernels.features)."""
        return kernel_features(self.target)

    @property
    def bank_line(self) -> int:
        """Bytes of one row of LDS banks (4-byte banks, the target's count: 64 on gfx950,
        32 on gfx942)."""
        return 4 * get_timing(self.target).lds_banks

    @property
    def rows_per_line(self) -> int:
        """Tile rows per bank line (1 when a row spans a line or more)."""
        return max(1, self.bank_line // self.row_bytes)

    @property
    def rows_per_copy(self) -> int:
        """Tile rows one copy instruction of the workgroup moves (16 bytes per lane)."""
        return 16 * 64 * self.waves // self.row_bytes

    @property
    def k_swizzle_rows(self) -> int:
        """Period (rows) of the K swizzle: row r's 16-byte chunks are XORed with
        (r % period) / rows_per_line. A full period spreads the 16 rows of a read phase over
        every bank; it must divide the rows of one copy instruction, so that each lane's
        XOR is the same in all the copies (one source offset per lane): fewer waves, a
        shorter period (gfx950 d128, 2 waves: 8 rows, 2-way conflicts left)."""
        if not self.swizzle:
            return self.rows_per_line
        chunks = min(self.row_bytes, self.bank_line) // 16
        return min(self.rows_per_line * chunks, self.rows_per_copy)

    @property
    def v_swizzle_rows(self) -> int:
        """Period of the V swizzle (gfx950): row r's 64-byte quarters XORed with
        (r % period) / rows_per_line, so the 4 rows a transposed read takes per phase land
        in 4 different quarters of the banks."""
        if not self.swizzle or not self.features.ds_read_tr:
            return self.rows_per_line
        return self.rows_per_line * (self.row_bytes // 64)

    @property
    def vt_width(self) -> int:
        """Bytes of a V row each lane copies per group of 4 key rows (v_layout transposed):
        16 where the tile has a 4-row x 16-byte piece for every lane, else 8 or 4."""
        lanes = 64 * self.waves
        pieces = (self.block_n // 4) * (self.row_bytes // 16)
        return 16 if pieces >= lanes else 16 * pieces // lanes

    @property
    def vt_reps(self) -> int:
        """Groups of 4 key rows each lane copies per V tile (v_layout transposed)."""
        lanes = 64 * self.waves
        return max(1, (self.block_n // 4) * (self.row_bytes // 16) // lanes)

    @property
    def group(self) -> int:
        """Query heads per K/V head (grouped-query attention; 1: plain multi-head)."""
        return self.heads // (self.heads_kv or self.heads)

    @property
    def kstep(self) -> int:
        """Contraction length of one MFMA: 16 on gfx950 (32x32x16), 8 on gfx942 (32x32x8)."""
        return self.features.mfma_k

    @property
    def frag(self) -> int:
        """VGPRs of one 16-bit MFMA operand fragment (kstep / 2 values per lane... / 2)."""
        return self.kstep // 4

    @property
    def copy_vgprs(self) -> int:
        """VGPRs per lane that hold one key block's K and V tiles on their way to LDS."""
        v = 4 * self.vt_reps * (self.vt_width // 4) if self.vt else 4 * self.loads_per_lane
        return 4 * self.loads_per_lane + v

    @property
    def k_steps(self) -> int:
        """MFMA steps one K read (k_bytes per lane) serves: kstep bytes per lane and step."""
        return self.k_bytes // self.kstep

    @property
    def mfma(self) -> str:
        """The MFMA mnemonic for this target and dtype."""
        return f"v_mfma_f32_32x32x{self.kstep}_{self.dtype}"

    @property
    def packed_hold_slots(self) -> int:
        """Issue cycles after an S / P V MFMA issues before its SIMD takes a packed-FP32
        VALU instruction (LLVM PR #233721, the timing model's mfma.packed_hold): its passes
        + mfma.packed_extra, + mfma.packed_xdl2x after a 16-byte source (a lane's kstep
        16-bit values of a 32x32 operand: 16 bytes on gfx950, 8 on gfx942)."""
        tm = get_timing(self.target).mfma
        passes = get_isa(self.target).resolve(self.mfma)[0].passes or 1
        cycles = tm.packed_hold(passes, self.kstep >= 16)  # a lane: kstep / 2 values of 2 bytes
        return -(-cycles // tm.cycles_per_pass)

    @property
    def tiles(self) -> int:
        """32-key S tiles per key block."""
        return self.block_n // 32

    @property
    def row_bytes(self) -> int:
        """Bytes of one row of Q, K, V or O."""
        return 2 * self.head_dim

    @property
    def tile_bytes(self) -> int:
        """Bytes of a K (or V) tile of block_n rows in LDS."""
        return self.block_n * self.row_bytes

    @property
    def loads_per_lane(self) -> int:
        """16-byte loads per lane to copy one K (or V) tile."""
        return self.tile_bytes // (16 * 64 * self.waves)

    @property
    def key_blocks(self) -> int:
        """Key blocks covering seq_k."""
        return -(-self.seq_k // self.block_n)

    @property
    def log2_scale(self) -> float:
        """scale * log2(e): scores are pre-scaled by it so the softmax uses exp2."""
        return self.scale * LOG2E

    @property
    def ragged(self) -> bool:
        """True when the last key block is partial."""
        return self.seq_k % self.block_n != 0

    @property
    def stage_bytes(self) -> int:
        """LDS of one buffer stage: a K and a V tile."""
        return 2 * self.tile_bytes

    @property
    def reg_stages(self) -> bool:
        """Two LDS stages filled through registers (gfx942, no direct-to-LDS loads)."""
        return self.stages == 2 and not self.features.lds_dma

    @property
    def lds_bytes(self) -> int:
        """LDS of the kernel: `stages` buffers of a K and a V tile."""
        return self.stages * self.stage_bytes

    @property
    def pinned_vgprs(self) -> dict[str, int]:
        """The pinned register regions and their sizes (VGPRs)."""
        regions = {"O": self.head_dim // 2, "Q": self.head_dim // 4, "S": 16 * self.tiles,
                   "stats": 4}  # m, (unused), l as a pair (two partial sums, packed adds)
        if self.o_agprs:
            del regions["O"]
        if self.s_buffers == 2:
            regions["S2"] = 16 * self.tiles
        if self.reg_stages:  # the next block's K and V on their way to LDS
            regions["C"] = self.copy_vgprs
        return regions

    @property
    def pinned_agprs(self) -> dict[str, int]:
        """The pinned AGPR regions (O when o_regs is agpr)."""
        return {"O": self.head_dim // 2} if self.o_agprs else {}

    def vgpr_estimate(self) -> int:
        """VGPRs of the kernel: v0-v7 (work-item id, early temporaries), the pinned regions
        (8-aligned) and what an iteration keeps live at its peak: the packed P of the whole
        block (8 per tile), one V fragment pair and a few addresses and statistics."""
        pinned = sum(-(-n // 8) * 8 for n in self.pinned_vgprs.values())
        return 8 + pinned + 8 * self.tiles + (self.k_ahead + 1) * self.frag + 4 * COPY_LAG + 8


def check(target: str, p: dict[str, Any]) -> Config:
    """The parameters as a Config, or a KernelParamError naming the one that does not fit."""
    from asterism.target import get_target

    chip = get_target(target)
    feats = kernel_features(target)
    if p["stages"] == 0 and not feats.lds_dma and _register_stages(p):
        # gfx942 auto: two stages where they fit (LDS, and the copy's registers: few
        # waves hold a lot of a tile each), else what one stage gives (its errors too).
        try:
            return check(target, dict(p, stages=2))
        except KernelParamError:
            return check(target, dict(p, stages=1))
    if not p["block_n"]:
        # 128 where two K/V stages (gfx950; gfx942 where its copy takes two) or one
        # (gfx942 with one) fit: fewer barriers per key.
        stages = 2 if feats.lds_dma or _register_stages(p) else 1
        fits = stages * 2 * 128 * 2 * p["head_dim"] <= chip.lds.bytes_per_workgroup
        p = dict(p, block_n=128 if fits else 64)
    seq_k = p["seq_k"] or p["seq_q"]
    for name in ("batch", "heads", "seq_q"):
        require(p[name] >= 1, name, f"must be at least 1, got {p[name]}")
    require(p["bf16_round"] == "nearest" or (not feats.cvt_pk_bf16 and p["dtype"] == "bf16"),
            "bf16_round", f"{p['bf16_round']} is for bf16 on gfx942 (gfx950 converts with "
            "v_cvt_pk_bf16_f32 at no cost; f16 converts in hardware)")
    heads_kv = p["heads_kv"] or p["heads"]
    require(heads_kv >= 1 and p["heads"] % heads_kv == 0, "heads_kv",
            f"must divide heads ({p['heads']}) (or be 0 for heads), got {p['heads_kv']}")
    require(p["heads"] < 2 ** 16, "heads", f"at most 65535 heads, got {p['heads']}")
    require(seq_k >= 1, "seq_k", f"must be at least 1 (or 0 for seq_q), got {seq_k}")
    require(p["waves"] in (0, 1, 2, 4, 8), "waves", f"must be 1, 2, 4 (one per SIMD) or 8 (two "
            f"per SIMD), or 0 for the most that fit, got {p['waves']}")
    waves = p["waves"] or _default_waves(p)
    block_m = p["block_m"] or ROWS_PER_WAVE * waves
    require(block_m == ROWS_PER_WAVE * waves, "block_m",
            f"must be {ROWS_PER_WAVE} * waves = {ROWS_PER_WAVE * waves} (one 32-row "
            f"MFMA tile per wave), got {p['block_m']}")
    require(p["block_n"] in (32, 64, 128, 256), "block_n",
            f"must be 32, 64, 128 or 256, got {p['block_n']}")
    require(p["seed"] >= 0, "seed", f"must be at least 0, got {p['seed']}")
    require(p["scale"] >= 0, "scale", f"must be positive (or 0 for 1/sqrt(head_dim)), "
            f"got {p['scale']}")
    if p["causal"]:
        require(seq_k >= p["seq_q"], "causal",
                f"needs seq_k >= seq_q (bottom-right aligned mask; rows with no visible key "
                f"are undefined), got seq_q={p['seq_q']} seq_k={seq_k}")
    stages = _stages(target, p, chip)
    reg_stages = stages == 2 and not feats.lds_dma  # Config.reg_stages
    max_exchange = p["max_exchange"]
    if max_exchange == "auto":
        max_exchange = "on_rescale" if reg_stages else "every_block"
    cfg = Config(target, p["batch"], p["heads"], p["seq_q"], seq_k, p["head_dim"], p["dtype"],
                 p["causal"], p["scale"] or 1.0 / math.sqrt(p["head_dim"]), block_m,
                 p["block_n"], waves, stages=stages,
                 heads_kv=heads_kv, lse=p["lse"], swizzle=p["lds_layout"] == "swizzle",
                 # auto: with 8 waves (two per SIMD) each wave's softmax runs under the
                 # other's MFMAs by design, so every packed op would be held: none packed
                 packed=p["packed"] == "true" or (p["packed"] == "auto" and waves <= 4),
                 unpack_near_mfma=p["packed"] == "auto" and waves <= 4,
                 packed_store=p["packed"] != "false",
                 causal_order=_causal_order(p, block_m, chip),
                 truncate=p["bf16_round"] == "truncate", loop=p["loop"],
                 away=p["bf16_round"] == "nearest_away",
                 vt=not feats.ds_read_tr and p["v_layout"] != "rows",
                 # b64: one 32x32x8 step's 8 bytes per lane (16 where the step reads them)
                 k_bytes=16 if feats.mfma_k != 8 or p["k_read"] != "b64" else 8,
                 k_ahead=p["k_ahead"] or (STAGES_K_AHEAD if reg_stages else feats.fa_k_ahead),
                 exchange_on_rescale=max_exchange == "on_rescale")
    require(p["k_read"] != "b64" or feats.mfma_k == 8, "k_read",
            "b64 is the gfx942 choice (a gfx950 32x32x16 step reads 16 bytes per lane)")
    require(p["v_layout"] != "transposed" or not feats.ds_read_tr, "v_layout",
            "transposed is the gfx942 copy (gfx950 reads V rows transposed with "
            "ds_read_b64_tr_b16 straight from its DMA-written tiles)")
    cfg = _with_registers(cfg, p, chip.vgpr.arch)
    cfg = _placement(cfg, p)
    require(cfg.setprio == "none" or cfg.waves == 8, "setprio",
            f"{cfg.setprio} orders the two waves of a SIMD: it needs 8 waves, got {cfg.waves}")
    require(cfg.setprio not in ("mfma", "stage", "scores", "s_mfma") or cfg.s_buffers == 1,
            "setprio",
            f"{cfg.setprio} needs one S buffer (with ping-pong S the MFMAs and the softmax "
            "co-issue: no phases to prioritize)")
    require(p["k_ahead"] == 0 or cfg.s_buffers == 1, "k_ahead",
            "is for one S buffer (ping-pong S keeps 2)")
    require(not cfg.exp_under_pv or (not feats.pv_tile_by_tile and cfg.s_buffers == 1),
            "exp_under_pv", "on is for gfx950 with one S buffer (gfx942 always packs tiles "
            "1.. under the P V MFMAs; ping-pong S puts the whole softmax under the S MFMAs)")
    require(not cfg.max_under_s or (not feats.pv_tile_by_tile and cfg.s_buffers == 1),
            "max_under_s", "on is for gfx950 with one S buffer (ping-pong S puts the whole "
            "softmax under the S MFMAs)")
    q_fits = cfg.waves * ROWS_PER_WAVE * cfg.row_bytes <= cfg.lds_bytes
    # Q through LDS and the prefetch into the S registers: choices of the copy through
    # registers (no direct-to-LDS loads).
    require(p["q_staging"] != "lds" or (not feats.lds_dma and q_fits), "q_staging",
            f"lds is the gfx942 choice and needs {cfg.waves} x 32 Q rows "
            f"({cfg.waves * ROWS_PER_WAVE * cfg.row_bytes} bytes) within the kernel's "
            f"{cfg.lds_bytes} bytes of LDS")
    if not feats.lds_dma and p["q_staging"] != "direct" and q_fits:
        import dataclasses

        cfg = dataclasses.replace(cfg, q_lds=True)
    require(p["o_staging"] != "lds" or not feats.permlane_swap, "o_staging",
            "lds is the gfx942 choice (gfx950 stores 16 bytes a lane after "
            "v_permlane32_swap_b32)")
    require(p["o_staging"] != "lds" or q_fits, "o_staging",
            f"lds needs {cfg.waves} x 32 O rows ({cfg.waves * ROWS_PER_WAVE * cfg.row_bytes} "
            f"bytes) within the kernel's {cfg.lds_bytes} bytes of LDS")
    if not feats.permlane_swap and p["o_staging"] != "direct" and q_fits:
        import dataclasses

        cfg = dataclasses.replace(cfg, o_lds=True)
    if not feats.lds_dma and p["prefetch"] and cfg.tile_bytes % (16 * 64 * cfg.waves) == 0:
        import dataclasses

        # Where the S registers hold a block's K and V (the copy's VGPRs per lane); two
        # stages hold them in their own registers.
        cfg = dataclasses.replace(cfg, prefetch=cfg.reg_stages
                                  or cfg.copy_vgprs <= 16 * cfg.tiles)
    split_fits = cfg.prefetch and cfg.vt and cfg.stages == 1
    require(p["lds_writes"] != "split" or split_fits, "lds_writes",
            "split needs the gfx942 copy with prefetch=true, v_layout transposed (the next "
            "block's tiles in the S registers) and one LDS stage")
    if p["lds_writes"] == "split":
        import dataclasses

        cfg = dataclasses.replace(cfg, split_writes=True)
    require(cfg.tile_bytes % (16 * 64 * cfg.waves) == 0, "waves",
            f"{cfg.waves} waves cannot split a {cfg.block_n}x{cfg.head_dim} tile into 16-byte "
            f"loads evenly ({cfg.tile_bytes} bytes); use fewer waves or a larger block_n")
    static = not cfg.causal and cfg.loop == "scf"  # every trip count an int
    require(p["stage_offsets"] != "immediate" or (cfg.reg_stages and static), "stage_offsets",
            "immediate is for gfx942 with two LDS stages, loop=scf and trip counts known at "
            "build time (not causal)")
    if cfg.reg_stages and static and p["stage_offsets"] != "toggle":
        import dataclasses

        cfg = dataclasses.replace(cfg, stage_imm=True)
    require(p["block_barrier"] != "pv" or cfg.reg_stages, "block_barrier",
            "pv is for gfx942 with two LDS stages")
    if p["block_barrier"] != "top" and cfg.reg_stages:
        import dataclasses

        cfg = dataclasses.replace(cfg, pv_barrier=True)
    require(not cfg.reg_stages or cfg.prefetch, "stages",
            "2 on gfx942 fills the other stage from registers loaded a block ahead: it needs "
            "prefetch=true")
    require(not cfg.vt or cfg.vt_width >= 4, "v_layout",
            f"transposed needs a 4-key x 4-byte piece of the {cfg.block_n}x{cfg.head_dim} V "
            f"tile per lane of {cfg.waves} waves; use fewer waves, a larger block_n or "
            f"v_layout=rows")
    require(cfg.lds_bytes <= chip.lds.bytes_per_workgroup,
            "stages" if cfg.stages > 1 else "block_n",
            f"{cfg.stages} stage(s) of K and V tiles need {cfg.lds_bytes} bytes of LDS, "
            f"{target} has {chip.lds.bytes_per_workgroup} per workgroup")
    budget = chip.vgpr.arch
    require(cfg.vgpr_estimate() <= budget, "block_n",
            f"needs about {cfg.vgpr_estimate()} VGPRs (pinned "
            f"{sum(cfg.pinned_vgprs.values())}), {target} has {budget} per lane")
    if cfg.waves > 4:  # two waves per SIMD share its 512 registers per lane
        agprs = sum(cfg.pinned_agprs.values())
        require(cfg.vgpr_estimate() + agprs <= 256, "waves",
                f"8 waves (two per SIMD) need at most 256 VGPRs + AGPRs per wave, this "
                f"configuration about {cfg.vgpr_estimate()} + {agprs} (O in AGPRs: "
                f"o_regs=vgpr, a smaller block_n or fewer waves)")
    for name, value, heads in (("q", cfg.seq_q, cfg.heads), ("k", seq_k, heads_kv)):
        nbytes = cfg.batch * heads * value * cfg.row_bytes
        require(nbytes < 2 ** 32, f"seq_{name}", f"{name} is {nbytes} bytes; buffer "
                "offsets are 32-bit (at most 4 GiB per tensor)")
    return cfg


def _placement(cfg: Config, p: dict[str, Any]) -> Config:
    """The softmax placement and priority choices, `auto` resolved: on gfx950 with 8 waves
    and one S buffer exp_under_pv and max_under_s on, setprio stage, v_ahead 2 (modeled
    fastest at 1x8x4096x128, see docs/kernels.md); elsewhere off, none and 4."""
    import dataclasses

    tuned = cfg.waves == 8 and cfg.s_buffers == 1
    auto = tuned and not cfg.features.pv_tile_by_tile
    # setprio auto: the target's tuned choice (gfx942: s_mfma, see docs/kernels.md's gfx942
    # table), with 8 waves and one S buffer only.
    return dataclasses.replace(
        cfg, exp_under_pv=p["exp_under_pv"] == "on" or (p["exp_under_pv"] == "auto" and auto),
        max_under_s=p["max_under_s"] == "on" or (p["max_under_s"] == "auto" and auto),
        setprio=(cfg.features.fa_setprio if tuned else "none")
        if p["setprio"] == "auto" else p["setprio"],
        v_ahead=p["v_ahead"] or (AUTO_V_AHEAD if auto else PV_READ_AHEAD))


def _causal_order(p: dict[str, Any], block_m: int, chip) -> str:
    """The causal order: the parameter, or for auto paired when half the row tiles times
    heads times batch is at least the CU count (pairs balance the work and every CU still
    has a workgroup), else longest_first (fewer workgroups than CUs: the grid takes as long
    as its longest workgroup, a single tile beats a pair)."""
    if p["causal_order"] != "auto":
        return p["causal_order"]
    tiles = -(-p["seq_q"] // block_m)
    paired = -(-tiles // 2) * p["heads"] * p["batch"]
    return "paired" if paired >= chip.compute_units else "longest_first"


def _default_waves(p: dict[str, Any]) -> int:
    """8 waves, or fewer when a block_n x head_dim tile is smaller than one 16-byte copy per
    lane of the workgroup (block_n 32 at head_dim 64: 4 waves)."""
    tile = p["block_n"] * 2 * p["head_dim"]
    waves = 8
    while waves > 1 and tile % (16 * 64 * waves):
        waves //= 2
    return waves


def _stages(target: str, p: dict[str, Any], chip) -> int:
    """The LDS stages: the parameter, or for 0 two where they fit (gfx950) else one (gfx942's
    0 is resolved by `check`: two where they fit, see `_register_stages`)."""
    if p["stages"]:  # gfx942's 2 (through registers) is checked with the copy's choices
        return p["stages"]
    block = 2 * p["block_n"] * 2 * p["head_dim"]  # one stage: K and V tiles
    fits = 2 * block <= chip.lds.bytes_per_workgroup
    return 2 if kernel_features(target).lds_dma and fits else 1


def _register_stages(p: dict[str, Any]) -> bool:
    """gfx942 (no LDS DMA): whether stages 0 / 2 means two stages filled through registers:
    stages 2, or 0 with the register copy ahead of time (prefetch) and lds_writes between
    (split is the one-stage schedule)."""
    return p["stages"] == 2 or (p["stages"] == 0 and p["prefetch"]
                                and p["lds_writes"] == "between")


def _with_registers(cfg: Config, p: dict[str, Any], budget: int) -> Config:
    """The Config with its S buffers and O registers: the parameters, or for 0 / auto two S
    buffers where they fit with one wave per SIMD (with O in VGPRs, else in AGPRs unless
    o_regs says vgpr), and O in VGPRs where the rest fits."""
    import dataclasses

    o_options = {"vgpr": (False,), "agpr": (True,), "auto": (False, True)}[p["o_regs"]]
    if p["s_buffers"] == 2:
        require(cfg.features.lds_dma and cfg.stages == 2, "s_buffers",
                "2 (ping-pong S) needs gfx950 with stages 2 (the K tile of the next block "
                f"in LDS one phase early), got {cfg.target} stages {cfg.stages}")
        buffers: tuple[int, ...] = (2,)
    elif (p["s_buffers"] == 1 or not cfg.features.lds_dma or cfg.stages != 2
          or cfg.waves > 4):
        # Two waves per SIMD (8 waves): each SIMD runs one wave's softmax under the other's
        # MFMAs; a second S buffer only costs registers and moves there (modeled: 30546 vs
        # 31558 cycles at 1x2x512x128, block_n 64).
        buffers = (1,)
    else:
        buffers = (2, 1)
    for n in buffers:
        for agpr in o_options:
            c = dataclasses.replace(cfg, s_buffers=n, o_agprs=agpr)
            # Two waves per SIMD: VGPRs and AGPRs together within half the SIMD's 512.
            shared = sum(c.pinned_agprs.values()) if cfg.waves > 4 else 0
            if c.vgpr_estimate() + shared <= budget:
                return c
    # Nothing fits: the last choice, refused with its estimate by the caller.
    return dataclasses.replace(cfg, s_buffers=buffers[-1], o_agprs=o_options[-1])


class _Builder:
    """Writes the kernel for one Config (state shared by the phases)."""

    def __init__(self, cfg: Config):
        from asterism.builder import KernelBuilder

        self.cfg = cfg
        self.late_packs: list = []  # gfx942: P packing of tiles 1.. (accumulate)
        # stage_offsets immediate: the LDS stage this block reads (0 / 1; writes the other)
        self.phase = 0
        self.kb = KernelBuilder(NAME, cfg.target, workgroup_size=(64 * cfg.waves, 1, 1),
                                lds_size=cfg.lds_bytes)

    # --- set-up -------------------------------------------------------------------------

    def regions(self) -> None:
        """Pin O, Q, S and the row statistics (m, l) to named VGPR ranges."""
        kb, first = self.kb, 8  # v0 holds the work-item id at entry
        self.region = {}
        for name, size in self.cfg.pinned_vgprs.items():
            self.region[name] = kb.reserve(name, f"v{first}-v{first + size - 1}")
            first += -(-size // 8) * 8  # 8-aligned starts: any operand alignment holds
        for name, size in self.cfg.pinned_agprs.items():
            self.region[name] = kb.reserve(name, f"a0-a{size - 1}")

    def resource(self, ptr, bh_bytes, seq: int, row_bytes: int = 0):
        """A buffer descriptor for one (batch, head) slice: base + bh_bytes, seq rows of
        row_bytes (0: a row of Q, K, V or O)."""
        kb = self.kb
        lo, hi = kb.split(ptr)
        base_lo = kb.s_add_u32(None, lo, bh_bytes)
        base_hi = kb.s_addc_u32(None, hi, 0)
        word1 = kb.s_and_b32(None, 0xFFFF, base_hi)
        word2 = kb.s_mov_b32(None, seq * (row_bytes or self.cfg.row_bytes))
        word3 = kb.s_mov_b32(None, BUFFER_WORD3)
        return kb.join(base_lo, word1, word2, word3, align=4)

    def kv_head(self, head):
        """The K/V head of query head `head` (SGPR): head // group, a shift for a power of
        two, else the high word of head * ceil(2^32 / group) (exact for head < 2^16)."""
        group, kb = self.cfg.group, self.kb
        if group == 1:
            return head
        if group & (group - 1) == 0:
            return kb.s_lshr_b32(None, head, _log2(group))
        return kb.s_mul_hi_u32(None, head, kb.s_mov_b32(None, -(-(1 << 32) // group)))

    def setup(self) -> None:
        """Arguments, descriptors, lane indices and the constant per-lane values."""
        cfg, kb = self.cfg, self.kb
        args = [kb.arg_buffer(n, cfg.dtype, "read_only") for n in "qkv"]
        args.append(kb.arg_buffer("o", cfg.dtype, "write_only"))
        if cfg.lse:
            args.append(kb.arg_buffer("lse", "f32", "write_only"))
        kp = kb.kernarg_ptr()
        ptrs = [kb.s_load_dwordx2(None, kp, a) for a in args]
        wg_m, head, batch = (kb.workgroup_id(d) for d in "xyz")
        self.wg_m = wg_m
        bh = kb.s_add_u32(None, kb.s_mul_i32(None, batch, cfg.heads), head)
        bh_kv = kb.s_add_u32(None, kb.s_mul_i32(None, batch, cfg.heads // cfg.group),
                             self.kv_head(head))
        q_bytes = kb.s_mul_i32(None, bh, cfg.seq_q * cfg.row_bytes)
        k_bytes = kb.s_mul_i32(None, bh_kv, cfg.seq_k * cfg.row_bytes)
        self.rq = self.resource(ptrs[0], q_bytes, cfg.seq_q)
        self.rk = self.resource(ptrs[1], k_bytes, cfg.seq_k)
        self.rv = self.resource(ptrs[2], k_bytes, cfg.seq_k)
        self.ro = self.resource(ptrs[3], q_bytes, cfg.seq_q)
        if cfg.lse:
            # Raw buffers count num_records in bytes: seq_q f32 values per (batch, head).
            self.rl = self.resource(ptrs[4], kb.s_mul_i32(None, bh, 4 * cfg.seq_q),
                                    cfg.seq_q, row_bytes=4)
        tid = kb.workitem_id("x")
        self.tid = tid
        self.lane32 = kb.v_and_b32(None, 31, tid)  # query column of this lane
        self.half = kb.v_bfe_u32(None, tid, 5, 1)  # h = (l / 32) % 2
        # 32 * wave = (tid & ~63) / 2
        wave_row = kb.v_lshrrev_b32(None, 1, kb.v_and_b32(None, 0xFFFFFFC0, tid))
        self.row_in_wg = kb.v_add_u32(None, wave_row, self.lane32)

    def init_state(self) -> None:
        """O = 0, m = M_INIT, l = 0; Q into its registers."""
        cfg, kb = self.cfg, self.kb
        acc_o, st = self.region["O"], self.region["stats"]
        for r in range(len(acc_o)):
            if self.cfg.o_agprs:
                kb.v_accvgpr_write_b32(acc_o[r], 0)
            else:
                kb.v_mov_b32(acc_o[r], 0)
        kb.v_mov_b32(st[0], M_INIT)
        kb.v_mov_b32(st[2], 0)
        kb.v_mov_b32(st[3], 0)
        # Lane l holds Q[row][2 chunk r + chunk h ...] (chunk = k_bytes / 2 values) for each
        # K read r: the k_steps MFMA steps it serves take them in order (the same head-dims
        # as the lane's K read: the contraction order is permuted alike in both operands).
        if cfg.q_lds:
            self.load_q_lds()
            return
        chunk = cfg.k_bytes
        Q = self.region["Q"]
        # Raw buffers range-check voffset + offset, not soffset: rows go into voffset.
        voff = self.row_offset(self.query_row(), kb.v_lshlrev_b32(None, _log2(chunk), self.half))
        soff = 0
        load = "buffer_load_dwordx4" if chunk == 16 else "buffer_load_dwordx2"
        n = chunk // 4  # VGPRs per read
        for r in range(cfg.row_bytes // (2 * chunk)):
            getattr(kb, load)(Q[n * r:n * (r + 1)], voff, self.rq, soff,
                              offen=True, offset=2 * chunk * r)

    def lane_row(self, per: int):
        """A wave's lanes over its rows, `per` lanes a row (a power of two): (the lane's row
        within one read, its piece of the row, its row of the workgroup's tile for k = 0)."""
        kb = self.kb
        lane = kb.v_and_b32(None, 63, self.tid)
        t_row = kb.v_lshrrev_b32(None, _log2(per), lane)
        piece = kb.v_and_b32(None, per - 1, lane)
        wave_rows = kb.v_lshrrev_b32(None, 1, kb.v_and_b32(None, 0xFFFFFFC0, self.tid))
        return t_row, piece, kb.v_add_u32(None, wave_rows, t_row)

    def load_q_lds(self) -> None:
        """gfx942 q_staging lds: the wave's 32 Q rows by row-contiguous buffer_load_dwordx4
        (lane t: row t / per + rows * k, chunk t % per, per = row_bytes / 16 chunks a row,
        rows = 64 / per rows an instruction) into its 32 x row_bytes part of the LDS (chunk c
        of row r at c ^ (r % 8): the 8 rows of a read phase on 8 different 16-byte bank
        groups), then read in the MFMA layout as the K fragments are (k_bytes per lane and
        read). A barrier first: in a second row-tile pass other waves may still read the last
        K/V tiles there."""
        cfg, kb = self.cfg, self.kb
        per = cfg.row_bytes // 16
        rows = 64 // per
        t_row, chunk, row = self.lane_row(per)
        src = self.row_offset(kb.v_add_u32(None, self.row0, row),
                              kb.v_lshlrev_b32(None, 4, chunk))
        voffs = {0: src}
        data = []
        for k in range(32 // rows):
            hi, lo = divmod(k * rows * cfg.row_bytes, 4096)
            if hi not in voffs:
                voffs[hi] = kb.v_add_u32(None, 4096 * hi, src)
            data.append(kb.buffer_load_dwordx4(kb.vregs(4, align=4), voffs[hi], self.rq, 0,
                                               offen=True, offset=lo))
        kb.s_barrier()
        # r % 8 = t_row ^ (rows k % 8) (t_row < rows, a power of two): one register per value.
        dst = self.row_offset(row, kb.v_lshlrev_b32(None, 4, kb.v_xor_b32(None, chunk, t_row)))
        regs = {x: dst if x == 0 else kb.v_xor_b32(None, 16 * x, dst)
                for x in sorted({rows * k % 8 for k in range(32 // rows)})}
        for k, d in enumerate(data):
            kb.ds_write_b128(regs[rows * k % 8], d, offset=k * rows * cfg.row_bytes)
        # Reads: lane (i, h) row 32 w + i, bytes 2 k_bytes r + k_bytes h.
        base = self.row_offset(self.row_in_wg, kb.v_lshlrev_b32(None, _log2(cfg.k_bytes),
                                                                self.half))
        offsets = [2 * cfg.k_bytes * r for r in range(cfg.row_bytes // (2 * cfg.k_bytes))]
        addr = self.swizzled(base, self.lane32, 8, 4, offsets)
        mask = self.swizzle_mask(8, 4)
        Q, n = self.region["Q"], cfg.k_bytes // 4
        read = kb.ds_read_b128 if cfg.k_bytes == 16 else kb.ds_read_b64
        for r, off in enumerate(offsets):
            reg, imm = self.swizzle_offset(addr, off, mask)
            read(Q[n * r:n * (r + 1)], reg, offset=imm)

    def read_addresses(self) -> None:
        """Per-lane LDS addresses of the K/V fragments (in the first buffer stage; the
        double-buffered loop toggles them, so each row tile's pass makes them afresh)."""
        cfg, kb = self.cfg, self.kb
        # K fragment: row l % 32 of the 32-key tile, bytes k_bytes * h of each read.
        addr_k = self.row_offset(self.lane32, kb.v_lshlrev_b32(None, _log2(cfg.k_bytes),
                                                               self.half))
        self.addr_k = self.swizzled(addr_k, self.lane32, cfg.k_swizzle_rows, 4,
                                    [2 * cfg.k_bytes * r
                                     for r in range(cfg.row_bytes // (2 * cfg.k_bytes))])
        if cfg.features.ds_read_tr:
            # Transposed reads: lane i of 16-lane group g reads row 4h + i/4 of the key
            # block, head-dim columns 16 (g % 2) + 4 (i % 4).
            i16 = kb.v_and_b32(None, 15, self.tid)
            krow = kb.v_lshl_add_u32(None, self.half, 2, kb.v_lshrrev_b32(None, 2, i16))
            col = kb.v_lshl_add_u32(None, kb.v_bfe_u32(None, self.tid, 4, 1), 4,
                                    kb.v_lshlrev_b32(None, 2, kb.v_and_b32(None, 3, i16)))
            addr_v = self.row_offset(krow, kb.v_lshl_add_u32(
                None, col, 1, kb.v_mov_b32(None, cfg.tile_bytes)))
            self.addr_v = self.swizzled(addr_v, krow, cfg.v_swizzle_rows, 6,
                                        [64 * db for db in range(cfg.head_dim // 32)])
        elif cfg.vt:
            self.addr_v = self.vt_read_addresses()
        else:
            # Lane l reads the 2-byte column l % 32 of rows 4h + kk.
            self.addr_v = {0: self.row_offset(kb.v_lshlrev_b32(None, 2, self.half),
                                              kb.v_lshl_add_u32(None, self.lane32, 1,
                                                                kb.v_mov_b32(None,
                                                                             cfg.tile_bytes)))}

    def lane_constants(self) -> None:
        """Per-lane constants: -inf, the exchange partner, the scale, the copy offsets."""
        cfg, kb = self.cfg, self.kb
        if cfg.causal or cfg.ragged:
            # v_cndmask_b32 reads vcc on the constant bus: -inf cannot be a literal there.
            self.neg_inf = kb.v_mov_b32(None, NEG_INF_BITS)
        if not cfg.features.permlane_swap:
            self.partner = kb.v_lshlrev_b32(None, 2, kb.v_xor_b32(None, 32, self.tid))
        self.c_scale = kb.s_mov_b32(None, _f32_bits(cfg.log2_scale))
        if cfg.packed:
            self.c_pair = kb.join(kb.v_mov_b32(None, self.c_scale),
                                  kb.v_mov_b32(None, self.c_scale), align=2)
        if cfg.dtype == "bf16" and not cfg.features.cvt_pk_bf16:
            self.c_round = kb.v_mov_b32(None, 0x7FFF)
            self.c_perm = kb.s_mov_b32(None, 0x07060302)
        # Copy of the K/V tiles: lane t moves 16-byte chunks t + 64 * waves * r; with the
        # swizzle the chunk it places at row r, chunk c of the tile is chunk c ^ f(r) of the
        # row (f the same for all its copies, see Config.k_swizzle_rows): K's in the source
        # offset (gfx950: the DMA writes contiguously) or the LDS address (gfx942).
        self.copy_voff = kb.v_lshlrev_b32(None, 4, self.tid)
        row = kb.v_lshrrev_b32(None, _log2(cfg.row_bytes // 16), self.tid)
        self.copy_k = kb.v_xor_b32(None, self.copy_voff,
                                   self.swizzle_bits(row, cfg.k_swizzle_rows, 4))
        self.copy_v = kb.v_xor_b32(None, self.copy_voff,
                                   self.swizzle_bits(row, cfg.v_swizzle_rows, 6))
        if cfg.features.lds_dma:
            self.dma_m0()
        if cfg.vt:
            self.vt_copy_offsets()
        # LDS addresses of the copy's writes (gfx942): K rows, V rows, V^T units q; with
        # two stages the loop carries copies of them pointing at the stage being filled.
        self.base_dst = {"k": self.copy_k, "v": self.copy_v,
                         **(self.vt_dst if cfg.vt else {})}
        self.wdst = dict(self.base_dst)

    # --- gfx942: V^T in LDS (v_layout transposed) -----------------------------------------
    # The V^T tile holds, per group g of 4 keys, head_dim entries of 8 bytes (the 4 keys'
    # values of one head-dim d, key order): entry (g, d) in 16-byte unit (g, d / 2), the units
    # of a group XOR-permuted (`vt_unit`) so that both the ds_write_b128 of the copy (8 lanes
    # per phase: 8 chunks of one group) and the ds_read_b64 of an operand (16 lanes: head-dims
    # 16m..16m+15 of one group) hit 32 distinct banks.

    def vt_unit(self, unit: int) -> int:
        """The stored position of 16-byte unit `unit` (head-dims 2 unit, 2 unit + 1) of a
        group: its low 3 bits XORed with the next 3 (none with lds_layout=plain)."""
        return unit ^ ((unit >> 3) & 7) if self.cfg.swizzle else unit

    def vt_copy_offsets(self) -> None:
        """Lane t copies rows 4g..4g+3, bytes c w..c w + w - 1 of the V tile (w = vt_width,
        per = row_bytes / w chunks per row; c = t % per, g = t / per, then + lanes / per groups
        per repetition): self.vt_src its source offset, self.vt_dst {q: LDS address of unit
        c w / 4 + q of group g} (units q share the lane's XOR: vt_unit(u0 + q) = vt_unit(u0)
        ^ q for u0 = c w / 4, aligned to w / 4)."""
        cfg, kb = self.cfg, self.kb
        per = cfg.row_bytes // cfg.vt_width
        c = kb.v_and_b32(None, per - 1, self.tid)
        g = kb.v_lshrrev_b32(None, _log2(per), self.tid)
        group_bytes = 4 * cfg.row_bytes
        self.vt_src = kb.v_lshl_add_u32(None, g, _log2(group_bytes),
                                        kb.v_lshlrev_b32(None, _log2(cfg.vt_width), c))
        u0 = kb.v_lshlrev_b32(None, _log2(cfg.vt_width // 4), c)
        unit = kb.v_xor_b32(None, u0, kb.v_bfe_u32(None, u0, 3, 3)) if cfg.swizzle else u0
        first = kb.v_lshl_add_u32(None, unit, 4, kb.v_lshlrev_b32(None, _log2(group_bytes), g))
        self.vt_dst = {q: first if q == 0 else kb.v_xor_b32(None, 16 * q, first)
                       for q in range(cfg.vt_width // 4)}
        self.c_perm_lo = kb.s_mov_b32(None, 0x05040100)
        self.c_perm_hi = kb.s_mov_b32(None, 0x07060302)

    def vt_read_addresses(self) -> dict:
        """{db % 4: LDS address} of the V^T operand reads: lane (i, h) reads entry (g, d) of
        group g = key0 / 4 + h, head-dim d = 32 db + i: unit 16 db + i / 2 of the group, whose
        stored position is (16 db + ((i / 2) ^ i / 16)) ^ 2 (db % 4) (`vt_unit`): a register
        per db % 4, the rest (tile base, group, 256 db) in the immediate offset."""
        cfg, kb = self.cfg, self.kb
        i = self.lane32
        half_unit = kb.v_lshrrev_b32(None, 1, i)
        if cfg.swizzle:
            half_unit = kb.v_xor_b32(None, half_unit, kb.v_lshrrev_b32(None, 4, i))
        # 16 * unit + 8 * (i % 2) + 4 row_bytes * h
        lane = kb.v_lshl_add_u32(None, half_unit, 4,
                                 kb.v_lshlrev_b32(None, 3, kb.v_and_b32(None, 1, i)))
        base = kb.v_lshl_add_u32(None, self.half, _log2(4 * cfg.row_bytes), lane)
        if not cfg.swizzle:
            return {0: base}
        return {x: base if x == 0 else kb.v_xor_b32(None, 32 * x, base)
                for x in sorted({db % 4 for db in range(cfg.head_dim // 32)})}

    def load_vt(self, key_off, dest=None, split: bool = False) -> list:
        """The copy of the V tile at byte offset `key_off` as (loads, writes) emitters per
        repetition: the loads of 4 key rows of vt_width bytes per lane (into `dest(n)`'s
        registers, default new ones), the transposing writes (4 v_perm_b32 and one
        ds_write_b128 per dword of a row piece)."""
        cfg, kb = self.cfg, self.kb
        lanes = 64 * cfg.waves
        per = cfg.row_bytes // cfg.vt_width
        rep_bytes = lanes // per * 4 * cfg.row_bytes  # the groups of one repetition
        dwords = cfg.vt_width // 4
        first = kb.v_add_u32(None, key_off, self.vt_src)
        pages = sorted({(r * rep_bytes + j * cfg.row_bytes) // 4096
                        for r in range(cfg.vt_reps) for j in range(4)})
        voffs = {hi: first if hi == 0 else kb.v_add_u32(None, 4096 * hi, first) for hi in pages}
        rows: dict[int, list] = {}
        dests = {(r, j): dest(dwords) for r in range(cfg.vt_reps)
                 for j in range(4)} if dest else {}

        def pieces(kb, data) -> list:
            return kb.split(data) if dwords > 1 else [data]

        def load_row(kb, r, j):
            load = {4: kb.buffer_load_dword, 8: kb.buffer_load_dwordx2,
                    16: kb.buffer_load_dwordx4}[cfg.vt_width]
            hi, lo = divmod(r * rep_bytes + j * cfg.row_bytes, 4096)
            if dest:  # pinned registers: the writes name them afresh where they are
                at, regs = dests[r, j], self.copy_regs
                load(regs[at:at + dwords], voffs[hi], self.rv, 0, offen=True, offset=lo)
                rows.setdefault(r, []).append(
                    lambda kb, at=at: pieces(kb, regs[at:at + dwords]))
                return
            data = load(kb.vregs(dwords, align=min(dwords, 4)), voffs[hi], self.rv, 0,
                        offen=True, offset=lo)
            rows.setdefault(r, []).append(lambda kb, data=data: pieces(kb, data))

        def loads(kb, r):
            for j in range(4):
                load_row(kb, r, j)

        def writes(kb, r):
            data = [row(kb) for row in rows.pop(r)]
            for q in range(dwords):
                self.write_vt_unit([row[q] for row in data], q, cfg.tile_bytes + r * rep_bytes)

        if split:  # one emitter per load instruction
            return [([lambda kb, r=r, j=j: load_row(kb, r, j) for j in range(4)],
                     lambda kb, r=r: writes(kb, r)) for r in range(cfg.vt_reps)]
        return [(lambda kb, r=r: loads(kb, r), lambda kb, r=r: writes(kb, r))
                for r in range(cfg.vt_reps)]

    def write_vt_unit(self, x: list, q: int, offset: int) -> None:
        """One 16-byte unit of V^T from dword q of 4 key rows x[0..3] (head-dims d, d + 1):
        (d: keys 0, 1 | keys 2, 3), (d + 1: keys 0, 1 | keys 2, 3)."""
        kb = self.kb
        lo, hi = self.c_perm_lo, self.c_perm_hi
        data = kb.join(kb.v_perm_b32(None, x[1], x[0], lo), kb.v_perm_b32(None, x[3], x[2], lo),
                       kb.v_perm_b32(None, x[1], x[0], hi), kb.v_perm_b32(None, x[3], x[2], hi),
                       align=4)
        kb.ds_write_b128(self.wdst[q], data, offset=offset + self.write_off())

    @property
    def copy_regs(self):
        """The pinned registers a prefetched block's K and V wait in for their LDS writes:
        the S registers (one stage), or their own region C (two stages: held across a
        whole key block)."""
        return self.region["C" if self.cfg.reg_stages else "S"]

    def swizzle_bits(self, row, period: int, shift: int):
        """The byte XOR of a tile row's swizzle: ((row % period) / rows_per_line) << shift
        (shift 4: 16-byte chunks, 6: 64-byte quarters); 0 without a swizzle."""
        kb, per_line = self.kb, self.cfg.rows_per_line
        if period <= per_line:
            return kb.v_mov_b32(None, 0)
        f = kb.v_and_b32(None, period - 1, row)
        if per_line > 1:
            f = kb.v_lshrrev_b32(None, _log2(per_line), f)
        return kb.v_lshlrev_b32(None, shift, f)

    def swizzled(self, base, row, period: int, shift: int, offsets) -> dict:
        """Read addresses of a swizzled tile: {x: base ^ f(row) ^ x} for each value x the
        swizzle's bits take in the read `offsets` (bytes in a row); a read at offset T uses
        register T & mask (XOR) and adds T & ~mask (the bits the swizzle leaves alone:
        rows, tiles, stages) as its offset (see `swizzle_offset`)."""
        kb = self.kb
        mask = self.swizzle_mask(period, shift)
        lane = kb.v_xor_b32(None, base, self.swizzle_bits(row, period, shift))
        return {x: lane if x == 0 else kb.v_xor_b32(None, x, lane)
                for x in sorted({t & mask for t in offsets})}

    def swizzle_mask(self, period: int, shift: int) -> int:
        """The offset bits a swizzle of `period` rows XORs."""
        return ((period // self.cfg.rows_per_line) - 1) << shift

    @staticmethod
    def swizzle_offset(regs: dict, offset: int, mask: int):
        """(register, immediate offset) of a read at `offset` from a swizzled tile."""
        return regs[offset & mask], offset & ~mask

    def row_limits(self) -> None:
        """The key limit of this lane's query row (masks at the ragged end and the causal
        diagonal): keys j < lim are visible to query i, lim = seq_k, and when causal
        min(seq_k, i + 1 + seq_k - seq_q); kept as lim - 4 h (key 8 (r / 4) + 4 h + r % 4 of a
        tile: compared with r-constants)."""
        cfg, kb = self.cfg, self.kb
        if not (cfg.causal or cfg.ragged):
            return
        lim = kb.v_mov_b32(None, cfg.seq_k)
        if cfg.causal:
            i = kb.v_add_u32(None, self.row0, self.row_in_wg)
            vis = kb.v_add_u32(None, 1 + cfg.seq_k - cfg.seq_q, i)
            lim = kb.v_min_u32(None, lim, vis)
        self.lim = kb.v_sub_u32(None, lim, kb.v_lshlrev_b32(None, 2, self.half))

    def row_tile_passes(self) -> list:
        """The first query row of each row tile the workgroup takes, as emitters that set
        self.row0 (SGPR): tile x; tile n - 1 - x (longest first); or both, n - 1 - x first
        (paired: the second skipped by the middle workgroup of an odd n)."""
        cfg = self.cfg
        last = cfg.row_tiles - 1

        def tile(kb, reverse: bool):
            x = kb.s_sub_u32(None, last, self.wg_m) if reverse else self.wg_m
            self.row0 = kb.s_mul_i32(None, x, cfg.block_m)

        reverse_first = cfg.causal and cfg.causal_order != "in_order"
        passes = [lambda kb: tile(kb, reverse_first)]
        if cfg.paired:
            passes.append(lambda kb: tile(kb, False))
        return passes

    def query_row(self):
        """This lane's query row in the (batch, head) slice."""
        return self.kb.v_add_u32(None, self.row0, self.row_in_wg)

    def row_offset(self, row, extra):
        """row * row_bytes + extra (row_bytes is a power of two)."""
        return self.kb.v_lshl_add_u32(None, row, _log2(self.cfg.row_bytes), extra)

    # --- the loop -----------------------------------------------------------------------

    def load_tiles(self, key_off) -> None:
        """Copy the K and V tiles of the key block at byte offset `key_off` to LDS."""
        cfg, kb = self.cfg, self.kb
        step = 16 * 64 * cfg.waves
        # Raw buffers range-check voffset + offset (not soffset): the key offset goes into
        # voffset, the load's place in the tile into the 12-bit offset where it fits.
        if cfg.features.lds_dma:
            self.load_tiles_dma(kb.v_add_u32(None, key_off, self.copy_k),
                                kb.v_add_u32(None, key_off, self.copy_v))
            return
        if cfg.prefetch:  # loaded by prefetch_tiles already
            for emit in self.pending + self.pending_v:
                emit(kb)
            self.pending, self.pending_v = [], []
            return
        # v_layout transposed: V's first loads go first, its writes after K's, each
        # repetition's writes after the next one's loads.
        vt = self.load_vt(key_off) if cfg.vt else []
        if vt:
            vt[0][0](kb)
        first = kb.v_add_u32(None, key_off, self.copy_voff)
        voffs = {0: first}
        tiles = ((self.rk, 0),) if cfg.vt else ((self.rk, 0), (self.rv, cfg.tile_bytes))
        copies = [(rsrc, base, r) for rsrc, base in tiles for r in range(cfg.loads_per_lane)]
        loaded = []

        def load(rsrc, base, r):
            hi, lo = divmod(r * step, 4096)
            if hi not in voffs:
                voffs[hi] = kb.v_add_u32(None, 4096 * hi, first)
            loaded.append((kb.buffer_load_dwordx4(kb.vregs(4, align=4), voffs[hi], rsrc, 0,
                                                  offen=True, offset=lo), base + r * step))

        def write():
            data, offset = loaded.pop(0)
            kb.ds_write_b128(self.wdst["k" if offset < cfg.tile_bytes else "v"], data,
                             offset=offset)

        # COPY_LAG loads in flight: each write waits for the oldest (vmcnt(COPY_LAG - 1)).
        for k, copy in enumerate(copies):
            load(*copy)
            if k >= COPY_LAG - 1:
                write()
        while loaded:
            write()
        for r, (_loads, writes) in enumerate(vt):
            if r + 1 < len(vt):
                vt[r + 1][0](kb)
            writes(kb)

    def prefetch_tiles(self, key_off, issue: bool = True) -> list:
        """gfx942 prefetch: the loads of the K and V tiles at byte offset `key_off` (SGPR)
        into the S registers (dead from P's packing to the next S MFMAs), issued now or
        (issue false) returned as one emitter per load instruction; their LDS writes wait
        in self.pending for load_tiles, between the barriers of the next iteration (the
        last iteration's loads read past seq_k: zeros, never written)."""
        cfg, kb = self.cfg, self.kb
        S = self.copy_regs
        used = [0]

        def dest(n: int) -> int:
            """The first of n S registers for a load (the loads and the writes, in another
            block of a later iteration, name them afresh: S[at:at + n])."""
            at = used[0]
            used[0] += n
            return at

        step = 16 * 64 * cfg.waves
        first = kb.v_add_u32(None, key_off, self.copy_voff)
        voffs = {hi: first if hi == 0 else kb.v_add_u32(None, 4096 * hi, first)
                 for hi in sorted({r * step // 4096 for r in range(cfg.loads_per_lane)})}
        tiles = ((self.rk, 0),) if cfg.vt else ((self.rk, 0), (self.rv, cfg.tile_bytes))
        writes, loads = [], []

        def load(kb, rsrc, r, offset):
            hi, lo = divmod(r * step, 4096)
            at = regs[offset]
            kb.buffer_load_dwordx4(S[at:at + 4], voffs[hi], rsrc, 0, offen=True, offset=lo)

        def write(kb, offset):
            addr = self.wdst["k" if offset < cfg.tile_bytes else "v"]
            at = regs[offset]
            kb.ds_write_b128(addr, S[at:at + 4], offset=offset + self.write_off())

        regs = {}
        for rsrc, base in tiles:
            for r in range(cfg.loads_per_lane):
                offset = base + r * step
                regs[offset] = dest(4)
                loads.append(lambda kb, rs=rsrc, r=r, o=offset: load(kb, rs, r, o))
                writes.append(lambda kb, o=offset: write(kb, o))
        v_writes = []
        if cfg.vt:
            for rep_loads, vt_writes in self.load_vt(key_off, dest, split=True):
                loads += rep_loads
                v_writes.append(vt_writes)
        # split_writes: K's writes (pending) and V^T's (pending_v) go to different places.
        self.pending, self.pending_v = writes, v_writes
        if issue:
            for emit in loads:
                emit(kb)
            return []
        return loads

    def pipelined(self, reads: Stream, mfmas: Stream, per_step: int, valu: int = 0,
                  dma: tuple[Stream, Stream] | None = None, softmax: Stream | None = None,
                  total: int = 0, first: int = 0, ahead: int = READ_AHEAD,
                  every: int = 1) -> None:
        """MFMA step k co-issued with the LDS reads of step k + READ_AHEAD (the first
        READ_AHEAD steps' reads go first): the waits become lgkmcnt(n > 0). `dma`: direct-
        to-LDS loads of the next key block spread evenly over the MFMA steps (their
        shadows): the M0 writes before the MFMA, the loads after it (the MFMA is the wait
        state an LDS DMA needs after an M0 write: no s_nop). `softmax`: VALU work of the
        other S buffer spread evenly after the MFMAs (ping-pong; what is left goes after
        the last one). A sequence of MFMAs may be split over several calls: `total` MFMA
        steps in all, this call's first being step `first` (0, total 0: this call is all).
        `every` > 1: one group of reads after every `every`-th MFMA (each read serves
        `every` steps; `ahead` counts reads)."""
        kb = self.kb
        if first == 0:
            for emit in reads.take(ahead):
                emit(kb)
        n = len(mfmas)
        total = total or n
        extra = {"valu": valu} if valu else {}
        groups = [Group(mfma=1, ds_read=per_step if (first + k) % every == every - 1
                        and first + k < total - every * ahead else 0, **extra)
                  for k in range(n)]
        rules = [after(reads, every=every, exhausted="stop")]
        if dma is not None:
            m0s, dma_loads = dma
            per = -(-len(dma_loads) // total)  # DMA loads per MFMA step
            left = dma_loads.left
            for k, g in enumerate(groups):
                took = min(per, left)
                left -= took
                if took:
                    groups[k] = Group(**g.counts, salu=took, vmem_read=took)
            rules += [before(m0s, count=per, exhausted="stop"),
                      after(dma_loads, count=per, exhausted="stop")]
        if softmax is not None:
            per = -(-softmax.left // n)
            rules.append(after(softmax, count=per, exhausted="stop"))
            # VALU work of the softmax joins the groups: at least the MFMA, reads and DMA.
            groups = [Group(**g.counts, exact=False) for g in groups]
        if softmax is None:
            kb.interleave(mfmas, *rules, expect=groups)
            return
        # Reads and DMA left over continue in the next call; the softmax's go here.
        kb.interleave(mfmas, *rules, expect=groups, leftover="keep")
        for emit in softmax.take(softmax.left):
            emit(kb)

    def dma_m0(self) -> None:
        """gfx950: the M0 value (LDS destination of lane 0) of every direct-to-LDS load of a
        key block, precomputed once in a pinned SGPR region: K/V base + 4 KiB pages of the
        load + 1 KiB per wave (the 12-bit load offset adds to both addresses)."""
        cfg, kb = self.cfg, self.kb
        pages = sorted({(base, r * 16 * 64 * cfg.waves // 4096) for base in (0, cfg.tile_bytes)
                        for r in range(cfg.loads_per_lane)})
        first = DMA_M0_SGPR
        self.m0_region = kb.reserve("M0", f"s{first}-s{first + len(pages) - 1}")
        wave = kb.v_readfirstlane_b32(None, kb.v_lshrrev_b32(None, 6, self.tid))
        wave_kib = kb.s_lshl_b32(None, wave, 10)
        self.m0_index = {}
        for k, (base, page) in enumerate(pages):
            kb.s_add_u32(self.m0_region[k], wave_kib, base + 4096 * page)
            self.m0_index[base, page] = k

    def load_tiles_dma(self, first_k, first_v) -> None:
        """gfx950: buffer_load_dwordx4 ... lds straight into the tiles (no VGPRs, no
        ds_write); lane l of wave w lands at M0 + offset + 16 l."""
        self.run_dma(self.dma_stream([(self.rk, 0, first_k, None), (self.rv, 1, first_v, None)],
                                     deferred=False))

    def run_dma(self, dma: tuple[Stream, Stream]) -> None:
        """The DMA streams' M0 writes and loads, in pairs, not interleaved with anything."""
        for set_m0, load in zip(dma[0].items, dma[1].items, strict=True):
            set_m0(self.kb)
            load(self.kb)

    def dma_stream(self, parts, deferred: bool = True) -> tuple[Stream, Stream]:
        """Direct-to-LDS loads of whole K / V tiles as two streams: the M0 writes
        (precomputed value [+ the target buffer's LDS offset, an SGPR]) and the
        buffer_load_dwordx4 ... lds; their tokens go to self.dma_tokens. `parts`: (rsrc,
        tile, first voffset, stage SGPR or None) per tile, tile 0 for K, anything else V
        (its LDS base is tile_bytes into the stage). `deferred`: waited for by token only."""
        cfg, kb = self.cfg, self.kb
        step = 16 * 64 * cfg.waves
        pages = sorted({r * step // 4096 for r in range(cfg.loads_per_lane)})
        voffs = {(i, p): first if p == 0 else kb.v_add_u32(None, 4096 * p, first)
                 for i, (_rs, _t, first, _st) in enumerate(parts) for p in pages}
        self.dma_tokens = []

        def set_m0(kb, i, r):
            _rsrc, tile, _first, stage = parts[i]
            base = 0 if tile == 0 else cfg.tile_bytes
            m0 = self.m0_region[self.m0_index[base, r * step // 4096]]
            if stage is None:
                kb.s_mov_b32(kb.m0, m0)
            else:
                kb.s_add_u32(kb.m0, m0, stage)

        def load(kb, i, r):
            page, lo = divmod(r * step, 4096)
            tok = kb.buffer_load_dwordx4(voffs[i, page], parts[i][0], 0, offen=True, lds=True,
                                         offset=lo)
            if deferred:
                kb.tokens_only(tok)  # waited for by token at the end of the iteration
            self.dma_tokens.append(tok)

        space = [(i, r) for i in range(len(parts)) for r in range(cfg.loads_per_lane)]
        return (Stream.over("m0", space, set_m0, kind="salu"),
                Stream.over("dma", space, load, kind="vmem_read"))

    def scores(self, S, dma: tuple[Stream, Stream] | None = None,
               softmax: tuple[list, Any, list] | None = None,
               valu: list | None = None) -> None:
        """S^T = K Q^T into S for each 32-key tile of the block (MFMAs from LDS and Q);
        `dma`: the next block's direct-to-LDS loads, co-issued with the MFMAs; `softmax`
        (ping-pong): the other S buffer's softmax, (VALU before the rescale branch, the
        branch, VALU after it), its VALU co-issued with the MFMAs, the MFMAs split in two
        at the branch in proportion to the VALU work on either side."""
        cfg, kb = self.cfg, self.kb
        Q = self.region["Q"]
        read = kb.ds_read_b128 if cfg.k_bytes == 16 else kb.ds_read_b64
        steps = cfg.head_dim // cfg.kstep
        per = cfg.k_steps  # MFMA steps one read serves (2: gfx942 k_read b128)
        frags = {}

        mask = self.swizzle_mask(cfg.k_swizzle_rows, 4)

        def read_k(kb, u, r):
            addr, off = self.swizzle_offset(self.addr_k, 2 * cfg.k_bytes * r, mask)
            data = read(kb.vregs(cfg.k_bytes // 4, align=2), addr,
                        offset=32 * u * cfg.row_bytes + off + self.read_off())
            if per == 1:
                frags[u, r] = data
                return
            for k, part in enumerate(kb.split(data, *[cfg.frag] * per)):
                frags[u, per * r + k] = part

        def mfma(kb, u, s):
            acc = S[16 * u:16 * u + 16]
            kb.emit(cfg.mfma, acc, frags.pop((u, s)), Q[cfg.frag * s:cfg.frag * (s + 1)],
                    0 if s == 0 else acc)

        space = list(unroll(cfg.tiles, steps))
        reads = Stream.over("ds_read", list(unroll(cfg.tiles, steps // per)), read_k)
        if softmax is None:
            own = Stream("valu", valu) if valu else None
            self.pipelined(reads, Stream.over("mfma", space, mfma), 1, dma=dma, every=per,
                           softmax=own, ahead=cfg.k_ahead)
            return
        before_branch, branch, after_branch = softmax
        n = len(space)
        split = min(n - 1, max(1, round(n * len(before_branch)
                                        / (len(before_branch) + len(after_branch)))))
        self.pipelined(reads, Stream.over("mfma", space[:split], mfma), 1, dma=dma,
                       softmax=Stream("valu", before_branch), total=n, ahead=cfg.k_ahead)
        branch(kb)
        self.pipelined(reads, Stream.over("mfma", space[split:], mfma), 1, dma=dma,
                       softmax=Stream("valu", after_branch), total=n, first=split,
                       ahead=cfg.k_ahead)

    def tile_max_items(self, S, v: dict, u: int) -> list:
        """Emitters setting v[("t", u)] to this lane's max over the 16 scores of tile u."""
        key, r0 = ("t", u), 16 * u
        items = [lambda kb: v.__setitem__(key, kb.v_max_f32(None, S[r0], S[r0 + 1]))]
        items += [lambda kb, r=r: v.__setitem__(key, kb.v_max3_f32(None, v[key], S[r],
                                                                   S[r + 1]))
                  for r in range(r0 + 2, r0 + 16, 2)]
        return items

    def softmax_items(self, S, key0=None, v: dict | None = None) -> tuple[list, Any, list]:
        """The online softmax of the scores in S as (VALU emitters before the branch of the
        deferred rescale, the branch with the rescale, VALU emitters after it); P, packed
        to 16 bits, goes to self.p. key0 (SGPR): the block's first key when masked. `v`
        (max_under_s): the maxima of tiles 0..tiles-2, computed under the S MFMAs (the
        last tile's and the combination come first here)."""
        cfg = self.cfg
        acc_o, st = self.region["O"], self.region["stats"]
        n = 16 * cfg.tiles
        first = []
        if v is not None:
            for u in range(v.pop("done"), cfg.tiles):
                first += self.tile_max_items(S, v, u)
            keys = [("t", u) for u in range(cfg.tiles)]
            first.append(lambda kb: v.__setitem__("t", v[keys[0]]))
            for k in range(1, len(keys), 2):
                if k + 1 < len(keys):
                    first.append(lambda kb, k=k: v.__setitem__("t", kb.v_max3_f32(
                        None, v["t"], v[keys[k]], v[keys[k + 1]])))
                else:
                    first.append(lambda kb, k=k: v.__setitem__("t", kb.v_max_f32(
                        None, v["t"], v[keys[k]])))
        else:
            v = {}  # values passed between the emitters
            if key0 is not None:
                first.append(lambda kb: v.__setitem__("rem", kb.v_sub_u32(None, self.lim,
                                                                           key0)))
                for r in range(n):
                    first.append(lambda kb, r=r: self.mask_one(S, r, v["rem"]))
            first.append(lambda kb: v.__setitem__("t", kb.v_max_f32(None, S[0], S[1])))
            for r in range(2, n - 1, 2):
                first.append(lambda kb, r=r: v.__setitem__(
                    "t", kb.v_max3_f32(None, v["t"], S[r], S[r + 1])))
        # The row's max with the other half of the row (lane l ^ 32): every block, or
        # (max_exchange on_rescale) only in the rescale branch: the test below on each
        # half's own max takes the branch exactly when the test on the row's max would (the
        # row's max grew past the slack iff one of its halves' did), and without the branch
        # the old max, the same in both halves, stays.
        exchange = self.exchange_items(v, "t", "o") + [
            lambda kb: v.__setitem__("t", kb.v_max_f32(None, v["t"], v["o"]))]
        new_max = [lambda kb: v.__setitem__("m", kb.v_max_f32(
            None, st[0], kb.v_mul_f32(None, self.c_scale, v["t"])))]
        if not cfg.exchange_on_rescale:
            first += exchange
        first += new_max
        # Deferred rescale: while no row's max grew by more than RESCALE_SLACK (log2 units)
        # the old max stays (p <= 2^RESCALE_SLACK, exact: O and l share it); skip the
        # multiplications of l and the D/2 O accumulators.
        first.append(lambda kb: kb.v_cmp_lt_f32(RESCALE_SLACK, kb.v_sub_f32(None, v["m"],
                                                                            st[0])))

        def branch(kb):
            if cfg.loop == "scf":  # structured: an scf.if on vcc (s_cbranch_vccz)
                with kb.if_(kb.vcc).then():
                    rescale(kb)
                return
            same = kb.new_label("max_kept")
            kb.s_cbranch_vccz(same)
            rescale(kb)
            kb.place(same)

        def rescale(kb):
            if cfg.exchange_on_rescale:  # the row's max (both halves) for the new max
                for emit in exchange + new_max:
                    emit(kb)
            alpha = kb.v_exp_f32(None, kb.v_sub_f32(None, st[0], v["m"]))
            if cfg.packed:
                # (alpha, alpha): a VALU op reading v_exp_f32's result costs a wait state
                # anyway; the pair is the operand of the packed multiplies.
                pair = kb.join(kb.v_mov_b32(None, alpha), kb.v_mov_b32(None, alpha), align=2)
                self.pk_f32(kb, lambda kb: kb.v_pk_mul_f32(st[2:4], pair, st[2:4]),
                            lambda kb: [kb.v_mul_f32(st[k], alpha, st[k]) for k in (2, 3)])
            else:
                kb.v_mul_f32(st[2], alpha, st[2])
                kb.v_mul_f32(st[3], alpha, st[3])
            for r in range(0, len(acc_o), 2 if cfg.packed else 1):
                if cfg.o_agprs:  # VALU reads no AGPR: through a VGPR and back
                    for k in range(r, r + (2 if cfg.packed else 1)):
                        o = kb.v_mul_f32(None, alpha, kb.v_accvgpr_read_b32(None, acc_o[k]))
                        kb.v_accvgpr_write_b32(acc_o[k], o)
                elif cfg.packed:
                    self.pk_f32(kb, lambda kb, r=r: kb.v_pk_mul_f32(acc_o[r:r + 2], pair,
                                                                   acc_o[r:r + 2]),
                                lambda kb, r=r: [kb.v_mul_f32(acc_o[k], alpha, acc_o[k])
                                                 for k in (r, r + 1)])
                else:
                    kb.v_mul_f32(acc_o[r], alpha, acc_o[r])
            kb.v_mov_b32(st[0], v["m"])

        second = [lambda kb: v.__setitem__("neg_m", kb.v_sub_f32(None, 0, st[0]))]
        # fma, exp and sum in separate sweeps: a VALU op reading a v_exp_f32 result right
        # after it costs a wait state (s_nop) on gfx950.
        if cfg.packed:
            second.append(lambda kb: v.__setitem__("neg_m2", kb.join(
                v["neg_m"], kb.v_mov_b32(None, v["neg_m"]), align=2)))
            fmas = [lambda kb, r=r: self.pk_f32(
                kb, lambda kb: kb.v_pk_fma_f32(S[r:r + 2], S[r:r + 2], self.c_pair, v["neg_m2"]),
                lambda kb: [kb.v_fma_f32(S[k], S[k], self.c_scale, v["neg_m"])
                            for k in (r, r + 1)]) for r in range(0, n, 2)]
        else:
            fmas = [lambda kb, r=r: kb.v_fma_f32(S[r], S[r], self.c_scale, v["neg_m"])
                    for r in range(n)]
        exps = [lambda kb, r=r: kb.v_exp_f32(S[r], S[r]) for r in range(n)]
        packs = self.pack_items(S)
        if cfg.exp_under_pv:
            # gfx950: tile u's fma, exp and packing sweeps (in that order: no trans wait
            # states), only tile 0's before the P V MFMAs, which go tile by tile: tile
            # u + 1's under tile u's MFMAs (accumulate).
            tiles = [[*_part(fmas, cfg.tiles, u), *_part(exps, cfg.tiles, u),
                      *_part(packs, cfg.tiles, u)] for u in range(cfg.tiles)]
            second += tiles[0]
            self.late_packs = [item for tile in tiles[1:] for item in tile]
        else:
            second += fmas + exps
            if cfg.features.pv_tile_by_tile:
                # Only tile 0's P before the P V MFMAs, which go tile by tile on gfx942: the
                # packing of tile u + 1 runs under tile u's MFMAs (accumulate).
                first_tile = len(packs) // cfg.tiles
                packs, self.late_packs = packs[:first_tile], packs[first_tile:]
            second += packs
        # The running sum is not needed by P V: its adds can wait for the P V MFMAs. Two
        # partial sums l = (l0, l1): keys of even and odd registers, added at the end.
        if cfg.packed:
            self.late = [lambda kb, r=r: self.pk_f32(
                kb, lambda kb: kb.v_pk_add_f32(st[2:4], S[r:r + 2], st[2:4]),
                lambda kb: [kb.v_add_f32(st[k], S[r + k - 2], st[k]) for k in (2, 3)])
                for r in range(0, n, 2)]
        else:
            self.late = [lambda kb, r=r: kb.v_add_f32(st[2 + r % 2], S[r], st[2 + r % 2])
                         for r in range(n)]
        return first, branch, second

    def pk_f32(self, kb, packed, unpacked) -> None:
        """Emit a packed-FP32 op (`packed(kb)`), or with packed auto its two unpacked halves
        (`unpacked(kb)`) when it would issue within the packed-VALU hold of an MFMA emitted
        before it in this block (the generated order: one issue cycle per instruction, an
        s_nop counted as one: the count errs towards unpacking)."""
        if self.cfg.unpack_near_mfma and self.near_mfma(kb):
            unpacked(kb)
        else:
            packed(kb)

    def near_mfma(self, kb) -> bool:
        """True when an MFMA sits fewer than cfg.packed_hold_slots instructions back in the
        block being built (packed auto with at most 4 waves: one per SIMD; with 8 no op is
        packed, see `check`)."""
        slots, op = 0, kb.block.last_op
        while op is not None and slots < self.cfg.packed_hold_slots:
            kind = instruction_kind(op, kb.isa)
            if kind == "mfma":
                return True
            slots += kind is not None
            op = op.prev_op
        return False

    def mask_one(self, S, r: int, rem) -> None:
        """-inf for score register r when its key is at or past this lane's limit."""
        kb = self.kb
        key = 32 * (r // 16) + 8 * (r % 16 // 4) + r % 4
        kb.v_cmp_lt_i32(key, rem)
        kb.v_cndmask_b32(S[r], self.neg_inf, S[r], kb.vcc)

    def softmax(self, S, key0=None, v: dict | None = None) -> None:
        """Online softmax update of S in place (masked when key0 is given), not
        interleaved: m, l, the O rescale, P = exp2(S * c - m) packed into self.p; `v`: the
        tile maxima computed under the S MFMAs (softmax_items)."""
        first, branch, second = self.softmax_items(S, key0, v)
        for emit in first:
            emit(self.kb)
        self.priority("exps")
        branch(self.kb)
        for emit in second:
            emit(self.kb)
        if not self.cfg.features.pv_tile_by_tile and not self.cfg.exp_under_pv:
            # gfx942 keeps the running-sum adds for the P V MFMAs (accumulate): off the
            # path from the S MFMAs to the P V MFMAs (and exp_under_pv: after the exps).
            for emit in self.late:
                emit(self.kb)
            self.late = []

    def exchange_items(self, v: dict, src: str, dst: str) -> list:
        """Emitters setting v[dst] to the max of v[src] with lane l ^ 32's (the other half of
        this lane's query row)."""
        if not self.cfg.features.permlane_swap:
            return [lambda kb: v.__setitem__(dst, kb.ds_bpermute_b32(None, self.partner,
                                                                     v[src]))]

        def swap(kb):
            v["a"], v["b"] = kb.v_permlane32_swap_b32(v["a"], v["b"])

        # lanes 0-31 get the partner in b, lanes 32-63 in a; the other is their own.
        return [lambda kb: v.__setitem__("a", kb.v_mov_b32(None, v[src])),
                lambda kb: v.__setitem__("b", kb.v_mov_b32(None, v[src])),
                swap,
                lambda kb: v.__setitem__(dst, kb.v_max_f32(None, v["a"], v["b"]))]

    def pack_items(self, S) -> list:
        """Emitters packing P (S after the softmax) to 16-bit B operands into self.p: the
        registers of kstep consecutive keys are one MFMA step's operand."""
        cfg = self.cfg
        self.p = {}
        words: dict[tuple[int, int], list] = {}
        items = []
        for u in range(cfg.tiles):
            for t in range(32 // cfg.kstep):
                first = 16 * u + cfg.kstep // 2 * t  # lane holds kstep / 2 of its keys
                for w in range(cfg.frag):
                    items.append(lambda kb, u=u, t=t, a=first + 2 * w: words.setdefault(
                        (u, t), []).append(self.pack(S[a], S[a + 1])))
                items.append(lambda kb, u=u, t=t: self.p.__setitem__(
                    (u, t), kb.join(*words.pop((u, t)), align=2)))
        return items

    def pack(self, lo, hi):
        """Two f32 values as one dword of two 16-bit values of the dtype (lo first)."""
        cfg, kb = self.cfg, self.kb
        if cfg.dtype == "f16":
            if cfg.features.cvt_pk_f16:
                return kb.v_cvt_pk_f16_f32(None, lo, hi)
            return kb.v_pack_b32_f16(None, kb.v_cvt_f16_f32(None, lo),
                                     kb.v_cvt_f16_f32(None, hi))
        if cfg.features.cvt_pk_bf16:
            return kb.v_cvt_pk_bf16_f32(None, lo, hi)
        # gfx942 has no bf16 conversion: round to nearest even by hand, keep the high halves.
        if cfg.truncate:  # the high halves as they are: round toward zero
            return kb.v_perm_b32(None, hi, lo, self.c_perm)
        if cfg.away:  # + half an ulp of bf16 carries into the kept half: ties away from 0
            return kb.v_perm_b32(None, kb.v_add_u32(None, 0x8000, hi),
                                 kb.v_add_u32(None, 0x8000, lo), self.c_perm)
        lo_r = kb.v_add3_u32(None, lo, self.c_round, kb.v_bfe_u32(None, lo, 16, 1))
        hi_r = kb.v_add3_u32(None, hi, self.c_round, kb.v_bfe_u32(None, hi, 16, 1))
        return kb.v_perm_b32(None, hi_r, lo_r, self.c_perm)

    def accumulate(self) -> None:
        """O^T += V^T P^T: P packed in self.p (by the softmax), V^T read transposed from
        LDS."""
        cfg, acc_o = self.cfg, self.region["O"]
        loads = []
        if cfg.reg_stages:  # the LDS writes of the next block, into the other stage
            loads, self.pending, self.pending_v = self.pending + self.pending_v, [], []
        elif cfg.prefetch:  # the next key block's tiles, into the S registers (P is packed)
            key_off = self.kb.s_add_u32(None, self.key_off, cfg.tile_bytes)
            loads = self.prefetch_tiles(key_off, issue=False)
        steps = 32 // cfg.kstep
        p = self.p
        frags = {}

        def read_v(kb, db, u, t):
            frags[db, u, t] = self.v_fragment(32 * u + cfg.kstep * t, db)

        def mfma(kb, db, u, t):
            acc = acc_o[16 * db:16 * db + 16]
            vf = frags.pop((db, u, t))
            if isinstance(vf, list):  # gfx942: pair the 16-bit halves now
                vf = kb.join(*(kb.v_lshl_or_b32(None, vf[2 * w + 1], 16, vf[2 * w])
                               for w in range(2)), align=2)
            kb.emit(cfg.mfma, acc, vf, p[u, t], acc)

        by_tile = cfg.features.pv_tile_by_tile
        if not by_tile and not self.late_packs:
            space = list(unroll(cfg.head_dim // 32, cfg.tiles, steps))
        else:  # tile by tile: the packing of the next tile's P under this tile's MFMAs
            space = [(db, u, t) for u in range(cfg.tiles) for db in range(cfg.head_dim // 32)
                     for t in range(steps)]
        # gfx942: the packing of tiles 1.., the running-sum adds (ping-pong, gfx942), then the
        # prefetch loads (into the S registers the packing and the adds read), in this order
        # after the MFMAs (at least as many per MFMA as keep each tile's P ahead of its MFMAs).
        packs, self.late_packs = self.late_packs, []
        # two stages: the LDS writes last, under the last MFMAs (modeled 46610 vs 47254
        # cycles at 1x2x512x128 for writes before the adds, 46942 after the MFMAs)
        late_items = packs + self.late + loads
        if packs:  # one item stream, ceil(items / MFMAs) after each MFMA: tile u's P first
            per, tile_items = -(-len(late_items) // len(space)), len(packs) // (cfg.tiles - 1)
            mfmas_per_tile = len(space) // cfg.tiles
            if not by_tile and tile_items > per * mfmas_per_tile:
                # exp_under_pv with few MFMAs per tile (block_n 64, 2 tiles): more items
                # after each MFMA (no-ops pad the stream to that rate) so that tile u + 1's P
                # is ready before its MFMAs.
                per = -(-tile_items // mfmas_per_tile)
                late_items += [lambda kb: None] * (per * len(space) - len(late_items))
            if any(-(-u * tile_items // per) > u * mfmas_per_tile
                   for u in range(1, cfg.tiles)):
                raise NotImplementedError(
                    f"{NAME}: the P packing of a tile would come after its P V MFMAs "
                    f"({cfg.tiles} tiles, {len(space)} MFMAs, {len(late_items)} items)")
        if cfg.pv_barrier:
            # The next block's barrier PV_BARRIER_LAG MFMAs before the end: after the LDS
            # writes (the waits pass adds lgkmcnt(0) for them and the V^T reads before it).
            keep = len(space) - PV_BARRIER_LAG
            per = -(-(len(late_items) + 1) // keep)
            late_items = late_items + [lambda kb: None] * (per * keep - 1 - len(late_items))
            late_items += [lambda kb: kb.s_barrier()]
            late_items += [lambda kb: None] * (per * len(space) - len(late_items))
        late = Stream("valu", late_items) if late_items else None
        tr = cfg.features.ds_read_tr
        one_read = tr or cfg.vt  # gfx942 rows: 4 ds_read_u16 + 2 VALU per operand
        self.pipelined(Stream.over("ds_read", space, read_v), Stream.over("mfma", space, mfma),
                       2 if tr else 1 if cfg.vt else 4, valu=0 if one_read else 2,
                       ahead=cfg.v_ahead if one_read else READ_AHEAD, softmax=late)
        self.late = []

    def v_fragment(self, key: int, db: int):
        """The V^T operand of keys key.. (kstep of them) and head-dim block db."""
        cfg, kb = self.cfg, self.kb
        rb = cfg.row_bytes
        if cfg.features.ds_read_tr:
            addr, off = self.swizzle_offset(self.addr_v, 64 * db,
                                            self.swizzle_mask(cfg.v_swizzle_rows, 6))
            first = kb.ds_read_b64_tr_b16(kb.vregs(2, align=2), addr, offset=key * rb + off)
            second = kb.ds_read_b64_tr_b16(kb.vregs(2, align=2), addr,
                                           offset=(key + 8) * rb + off)
            return kb.join(*kb.split(first), *kb.split(second), align=4)
        if cfg.vt:  # V^T in LDS: the 4 keys of head-dim 32 db + i are one 8-byte entry
            return kb.ds_read_b64(kb.vregs(2, align=2), self.addr_v[db % len(self.addr_v)],
                                  offset=cfg.tile_bytes + key * rb + 256 * db
                                  + self.read_off())
        # Four zero-extended 16-bit reads, paired by one VALU op each at the MFMA.
        # (ds_read_u16_d16_hi into the first read's register would save that op, but a d16
        # load reads the half it keeps: LLVM and the sanitizer want lgkmcnt(0) between.)
        return [kb.ds_read_u16(None, self.addr_v[0],
                               offset=(key + kk) * rb + 64 * db + self.read_off())
                for kk in range(4)]

    def loop(self) -> None:
        """The key-block loops: first the blocks no mask touches (no mask code), then the
        ones at the ragged end or the causal diagonal (masked)."""
        cfg, kb = self.cfg, self.kb
        self.key_off = kb.s_mov_b32(None, 0)  # byte offset of the block's first key row
        self.key0 = kb.s_mov_b32(None, 0)  # its first key
        if cfg.reg_stages:
            self.first_copy_stage()
        elif cfg.stages == 2:
            self.first_stage()
        elif cfg.prefetch:
            self.prefetch_tiles(self.key_off)
            if cfg.split_writes:
                self.split_prologue()
        if cfg.loop == "scf":
            self.loops_scf()
            return
        count = self.block_count()
        loop = self.key_loop_pingpong if cfg.s_buffers == 2 else self.key_loop
        if not (cfg.causal or cfg.ragged):
            loop(count, masked=False, name="key_loop")
            return
        full = self.full_blocks()
        rest = kb.s_sub_u32(None, count, full)
        loop(full, masked=False, name="key_loop")
        loop(rest, masked=True, name="masked_loop")

    def loops_scf(self) -> None:
        """The key loops as scf.for (`loop=scf`): the blocks no mask touches, then the
        masked ones; trip counts known at build time (no causal mask) as ints."""
        cfg, kb = self.cfg, self.kb
        run = self.key_loop_pingpong_scf if cfg.s_buffers == 2 else self.key_loop_scf
        if not (cfg.causal or cfg.ragged):
            run(cfg.key_blocks, masked=False)
            return
        if cfg.causal:
            count, full = self.block_count(), self.full_blocks()
            rest = kb.s_sub_u32(None, count, full)
        else:  # ragged: the last block alone is masked
            full, rest = cfg.seq_k // cfg.block_n, 1
        run(full, masked=False, then_scores=True)
        run(rest, masked=True)

    def carried(self) -> list:
        """What an iteration of the key loop updates (the scf.for iter_args): the key
        offset and first key; double-buffered, the DMA stage(s) and the LDS read
        addresses."""
        cfg = self.cfg
        values = [self.key_off, self.key0]
        if cfg.reg_stages:
            return values + [*self.addr_k.values(), *self.addr_v.values(),
                             *self.wdst.values()]
        if cfg.stages == 2:
            values.append(self.dma_stage)
            if cfg.s_buffers == 2:
                values.append(self.k_stage)
            values += [*self.addr_k.values(), *self.addr_v.values()]
        return values

    def take_carried(self, values) -> None:
        """Set what `carried` lists from the loop's arguments (in the body) or results."""
        it = iter(values)
        self.key_off, self.key0 = next(it), next(it)
        if self.cfg.reg_stages:
            self.addr_k = {x: next(it) for x in self.addr_k}
            self.addr_v = {x: next(it) for x in self.addr_v}
            self.wdst = {x: next(it) for x in self.wdst}
        elif self.cfg.stages == 2:
            self.dma_stage = next(it)
            if self.cfg.s_buffers == 2:
                self.k_stage = next(it)
            self.addr_k = {x: next(it) for x in self.addr_k}
            self.addr_v = {x: next(it) for x in self.addr_v}

    def scf_loop(self, count, bodies) -> None:
        """`count` (int or SGPR, may be 0) trips of `bodies()` as an scf.for carrying
        `carried()`; a known count of one is the bodies alone (no loop control)."""
        kb = self.kb
        if isinstance(count, int) and count <= 1:
            if count == 1:
                bodies()
            return
        with kb.loop(0, count, 1, iter_args=self.carried()) as loop:
            self.take_carried(loop.args)
            bodies()
            loop.yield_(*self.carried())
        self.take_carried(loop.results)

    def key_loop_scf(self, count, masked: bool, then_scores: bool = False) -> None:
        """`count` (int or SGPR, may be 0) iterations of the loop body as an scf.for."""
        del then_scores  # one S buffer: the body leaves nothing in flight
        if self.cfg.stage_imm:  # two blocks a trip (stages p, 1 - p), the odd one after
            pairs, odd = divmod(count, 2)
            self.scf_loop(pairs, lambda: (self.body(masked), self.body(masked)))
            if odd:
                self.body(masked)
            return
        self.scf_loop(count, lambda: self.body(masked))

    def key_loop_pingpong_scf(self, count, masked: bool, then_scores: bool = False) -> None:
        """Ping-pong S as an scf.for over pairs of key blocks: two bodies per trip, S and S2
        swapping roles between them (pinned registers: no copies, no iter_args), so the
        scores of the next block are in S at the top of every trip. An odd count leaves one
        block, run after the loop (in an scf.if when the count is known at launch only);
        `then_scores` (another loop follows): it moves the next block's scores from S2 to
        S, as the unrolled loop does at an odd exit (cheaper in the timing model than
        handing the block to the masked loop: a copy of S against the mask's VALU)."""
        kb = self.kb
        S, S2 = self.region["S"], self.region["S2"]
        if isinstance(count, int):
            pairs, odd = divmod(count, 2)
        else:
            pairs = kb.s_lshr_b32(None, count, 1)
            odd = kb.s_and_b32(None, count, 1)

        def two() -> None:
            self.body(masked, S, S2)
            self.body(masked, S2, S)

        def one() -> None:
            self.body(masked, S, S2)
            if then_scores:
                for r in range(len(S)):
                    kb.v_mov_b32(S[r], S2[r])

        self.scf_loop(pairs, two)
        if isinstance(odd, int):
            if odd:
                one()
            return
        before = self.carried()
        br = kb.if_(odd, [v.type for v in before] if then_scores else [])
        with br.then():
            one()
            if then_scores:
                br.yield_(*self.carried())
        self.take_carried(before)
        if then_scores:
            with br.otherwise():
                br.yield_(*before)
            self.take_carried(br.results)

    def key_loop(self, count, masked: bool, name: str) -> None:
        """`count` (SGPR, may be 0) iterations of the loop body."""
        kb = self.kb
        before = self.carried()  # the body updates them in place: these registers after it
        done = kb.new_label(f"{name}_end")
        kb.s_cmp_eq_u32(count, 0)
        kb.s_cbranch_scc1(done)
        top = kb.label(name)
        self.body(masked)
        kb.s_sub_u32(count, count, 1)
        kb.s_cmp_lg_u32(count, 0)
        kb.s_cbranch_scc1(top)
        kb.place(done)
        self.take_carried(before)

    def key_loop_pingpong(self, count, masked: bool, name: str) -> None:
        """`count` (SGPR, may be 0) iterations, unrolled by two so that the S buffers swap
        roles statically (S holds this block's scores at the top of the first copy, S2 at
        the top of the second). An odd count leaves the next block's scores in S2: one copy
        to S at the exit keeps "scores in S" true between the loops."""
        kb = self.kb
        before = self.carried()  # the bodies update them in place: these registers after
        S, S2 = self.region["S"], self.region["S2"]
        done = kb.new_label(f"{name}_end")
        odd = kb.new_label(f"{name}_odd")
        kb.s_cmp_eq_u32(count, 0)
        kb.s_cbranch_scc1(done)
        top = kb.label(name)
        self.body(masked, S, S2)
        kb.s_sub_u32(count, count, 1)
        kb.s_cmp_eq_u32(count, 0)
        kb.s_cbranch_scc1(odd)
        self.body(masked, S2, S)
        kb.s_sub_u32(count, count, 1)
        kb.s_cmp_lg_u32(count, 0)
        kb.s_cbranch_scc1(top)
        kb.s_branch(done)
        kb.place(odd)
        for r in range(len(S)):
            kb.v_mov_b32(S[r], S2[r])
        kb.place(done)
        self.take_carried(before)

    def body(self, masked: bool, S=None, S_next=None) -> None:
        """One key block: tiles to LDS, S, (mask), softmax, O += P V. Double-buffered: the
        tiles of this block are in LDS already; the next block's go to the other buffer
        under the S MFMAs, and one barrier at the end publishes them (gfx942: a barrier at
        the top, the loads under the S MFMAs, the writes under the P V MFMAs). Ping-pong (S_next
        given): S holds this block's scores already; the MFMAs of the next block's go to
        S_next while the softmax of S co-issues with them."""
        cfg, kb = self.cfg, self.kb
        key0 = self.key0 if masked else None
        if S_next is not None:
            # DMA of K of block n + 2 (its buffer: the one K of block n was read from) and V
            # of block n + 1 (past seq_k the range check reads zeros).
            k_first = kb.v_add_u32(None, self.key_off, self.copy_voff_k)
            v_first = kb.v_add_u32(None, self.key_off, self.next_v)
            dma = self.dma_stream([(self.rk, 0, k_first, self.k_stage),
                                   (self.rv, 1, v_first, self.dma_stage)])
            self.scores(S_next, dma, softmax=self.softmax_items(S, key0))
        else:
            S = self.region["S"]
            dma = None
            loads = []
            if cfg.reg_stages:
                # This block's tiles are complete (this wave's writes: the barrier waits for
                # them; the others' by it), and every wave is done with the stage the writes
                # below fill (the block before last). At the top, not the bottom: the last
                # block's waves go on to their stores without meeting.
                if not cfg.pv_barrier:
                    kb.s_barrier()
                # The next block's loads under the S MFMAs, one after every
                # STAGE_LOAD_SPACING-th (no-ops pad the stream), a whole phase ahead of
                # their LDS writes under this block's P V MFMAs, into the other stage (past
                # seq_k: zeros).
                loads = [x for load in self.prefetch_tiles(
                    kb.s_add_u32(None, self.key_off, cfg.tile_bytes), issue=False)
                    for x in (load, *[lambda kb: None] * (STAGE_LOAD_SPACING - 1))]
            elif cfg.split_writes:
                # Every wave is done with the previous V^T (and K of this block is written).
                kb.s_barrier()
                for emit in self.pending_v:
                    emit(kb)
                self.pending_v = []
            elif cfg.stages == 1:
                kb.s_barrier()  # every wave is done with the previous tiles
                self.load_tiles(self.key_off)
                kb.s_barrier()
            else:
                # Next block: key_off + tile_bytes (past seq_k the range check reads zeros).
                k_first = kb.v_add_u32(None, self.key_off, self.next_k)
                v_first = kb.v_add_u32(None, self.key_off, self.next_v)
                dma = self.dma_stream([(self.rk, 0, k_first, self.dma_stage),
                                       (self.rv, 1, v_first, self.dma_stage)])
            self.priority("scores")
            v = self.max_under_s(S, key0)
            self.scores(S, dma, valu=(v and v.pop("items")) or loads)
            self.mid_barrier(second=True)
            self.priority("softmax")
            self.softmax(S, key0, v)
            self.mid_barrier(second=False)
            self.priority("pv")
        self.accumulate()
        if cfg.split_writes:  # the next block's K: every wave is past its S MFMAs
            for emit in self.pending:
                emit(kb)
            self.pending = []
        if cfg.stages == 2:
            self.next_stage()
        self.key_off = kb.s_add_u32(self.key_off, self.key_off, cfg.tile_bytes)
        self.key0 = kb.s_add_u32(self.key0, self.key0, cfg.block_n)

    def split_prologue(self) -> None:
        """lds_writes split, before the key loops: the wave groups (the second wave of each
        SIMD passes the mid-block barrier after its S MFMAs, the first after its softmax),
        then a barrier (every wave is done with the LDS: Q staging, a previous pass's tiles)
        and the first block's K writes (its V^T is written at the top of the first
        iteration)."""
        cfg, kb = self.cfg, self.kb
        self.second_group = None
        if cfg.waves > 4:
            wave = kb.v_readfirstlane_b32(None, kb.v_lshrrev_b32(None, 6, self.tid))
            self.second_group = kb.s_lshr_b32(None, wave, _log2(cfg.waves // 2))
            self.first_group = kb.s_xor_b32(None, self.second_group, 1)
        kb.s_barrier()
        for emit in self.pending:
            emit(kb)
        self.pending = []

    def mid_barrier(self, second: bool) -> None:
        """lds_writes split: the mid-block barrier after which K may be overwritten, for the
        second wave group after its S MFMAs (second), for the first after its softmax (the
        only group with 4 waves or fewer)."""
        cfg, kb = self.cfg, self.kb
        if not cfg.split_writes:
            return
        if self.second_group is None:
            if not second:
                kb.s_barrier()
            return
        with kb.if_(self.second_group if second else self.first_group).then():
            kb.s_barrier()

    def first_stage(self) -> None:
        """Double buffering: the first key block's tiles into buffer 0, then the loop reads
        buffer 0 while the DMA fills buffer 1 (self.dma_stage: its LDS offset). Ping-pong:
        also K of block 1 into buffer 1, and the scores of block 0 into S before the loop;
        the loop then reads K from buffer 1 and V from buffer 0, and DMAs K to buffer 0
        (self.k_stage) and V to buffer 1."""
        cfg, kb = self.cfg, self.kb
        first = kb.v_add_u32(None, self.key_off, self.copy_k)
        parts = [(self.rk, 0, first, None),
                 (self.rv, 1, kb.v_add_u32(None, self.key_off, self.copy_v), None)]
        if cfg.s_buffers == 2:
            self.dma_stage = kb.s_mov_b32(None, cfg.stage_bytes)
            k1 = kb.v_add_u32(None, cfg.tile_bytes, first)
            parts.append((self.rk, 0, k1, self.dma_stage))
        self.run_dma(self.dma_stream(parts, deferred=False))
        kb.wait(*self.dma_tokens)
        kb.s_barrier()
        if cfg.s_buffers == 2:
            self.k_stage = kb.s_mov_b32(None, 0)
            self.copy_voff_k = kb.v_add_u32(None, 2 * cfg.tile_bytes, self.copy_k)
            self.scores(self.region["S"])
            # The loop's first DMA writes K of block 2 where K of block 0 is: every wave
            # must be done reading it (a race the timing model's wave order showed with 4
            # waves; the sanitizer reports it).
            kb.s_barrier()
            self.toggle(self.addr_k)
        else:
            self.dma_stage = kb.s_mov_b32(None, cfg.stage_bytes)
            self.next_k = kb.v_add_u32(None, cfg.tile_bytes, self.copy_k)
        self.next_v = kb.v_add_u32(None, cfg.tile_bytes, self.copy_v)

    def read_off(self) -> int:
        """stage_offsets immediate: the DS offset of the stage this block reads (else 0)."""
        return self.phase * self.cfg.stage_bytes if self.cfg.stage_imm else 0

    def write_off(self) -> int:
        """stage_offsets immediate: the DS offset of the stage this block's copy writes."""
        return (1 - self.phase) * self.cfg.stage_bytes if self.cfg.stage_imm else 0

    def toggle(self, regs: dict) -> None:
        """Point LDS read addresses at the other buffer stage."""
        for x, reg in regs.items():
            regs[x] = self.kb.v_xor_b32(reg, self.cfg.stage_bytes, reg)

    def first_copy_stage(self) -> None:
        """gfx942 two stages: the first key block's tiles through the copy registers into
        stage 0 after a barrier (every wave is done with the LDS: Q staging, a previous
        pass's tiles; the loop's first barrier publishes them); the loop's writes then start
        at stage 1."""
        cfg, kb = self.cfg, self.kb
        self.prefetch_tiles(self.key_off)
        self.wdst = dict(self.base_dst)
        kb.s_barrier()
        self.phase = 1  # stage_offsets immediate: write_off() 0, stage 0
        for emit in self.pending + self.pending_v:
            emit(kb)
        self.pending, self.pending_v = [], []
        self.phase = 0
        if cfg.pv_barrier:  # (the loop's barriers are in the P V phases)
            kb.s_barrier()
        if not cfg.stage_imm:
            self.wdst = {x: kb.v_xor_b32(None, cfg.stage_bytes, reg)
                         for x, reg in self.wdst.items()}

    def next_stage(self) -> None:
        """End of a double-buffered iteration: the next block's tiles are complete (this
        wave's DMA by token, the others' by the barrier); swap the buffers."""
        cfg, kb = self.cfg, self.kb
        if cfg.stage_imm:  # the next block names the other stages in its offsets
            self.phase ^= 1
            return
        if cfg.reg_stages:  # (the barrier is at the top of the next block)
            for regs in (self.addr_k, self.addr_v, self.wdst):
                self.toggle(regs)
            return
        kb.wait(*self.dma_tokens)
        kb.s_barrier()
        self.dma_stage = kb.s_xor_b32(self.dma_stage, self.dma_stage, cfg.stage_bytes)
        if cfg.s_buffers == 2:
            self.k_stage = kb.s_xor_b32(self.k_stage, self.k_stage, cfg.stage_bytes)
        self.toggle(self.addr_k)
        self.toggle(self.addr_v)

    def full_blocks(self):
        """Key blocks before the first one a mask touches, for every row of the workgroup:
        all keys below min(seq_k, row0 + 1 + seq_k - seq_q) are visible to its rows."""
        cfg, kb = self.cfg, self.kb
        if not cfg.causal:
            return kb.s_mov_b32(None, cfg.seq_k // cfg.block_n)
        lim = kb.s_add_u32(None, self.row0, 1 + cfg.seq_k - cfg.seq_q)
        lim = kb.s_min_u32(None, lim, cfg.seq_k)
        return kb.s_lshr_b32(None, lim, _log2(cfg.block_n))

    def block_count(self):
        """Key blocks this workgroup visits (fewer when causal: up to its last visible key)."""
        cfg, kb = self.cfg, self.kb
        if not cfg.causal:
            return kb.s_mov_b32(None, cfg.key_blocks)
        # last visible key + 1 = row0 + block_m + seq_k - seq_q, capped at seq_k.
        end = kb.s_add_u32(None, self.row0, cfg.block_m + cfg.seq_k - cfg.seq_q)
        end = kb.s_min_u32(None, end, cfg.seq_k)
        end = kb.s_add_u32(None, end, cfg.block_n - 1)
        return kb.s_lshr_b32(None, end, int(math.log2(cfg.block_n)))

    def store(self) -> None:
        """O = O^T / l, converted and stored: 8 head-dim values per lane and store on gfx950
        (permlane-swapped), 4 on gfx942."""
        cfg, kb = self.cfg, self.kb
        st = self.region["stats"]
        own = kb.v_add_f32(None, st[2], st[3])
        total = kb.v_add_f32(None, own, self.exchange_sum(own))
        inv = kb.v_rcp_f32(None, total)
        if cfg.packed_store and not cfg.o_agprs:
            self.inv_pair = kb.join(inv, kb.v_mov_b32(None, inv), align=2)
        if cfg.lse:
            self.store_lse(total)
        if cfg.features.permlane_swap:
            self.store_dwordx4(inv)
            return
        if cfg.o_lds:
            self.store_through_lds(inv)
            return
        voff = self.row_offset(self.query_row(), kb.v_lshlrev_b32(None, 3, self.half))
        soff = 0
        for db in range(cfg.head_dim // 32):
            for g in range(4):
                data = kb.join(*self.packed_group(inv, db, g), align=2)
                kb.buffer_store_dwordx2(data, voff, self.ro, soff, offen=True,
                                        offset=2 * (32 * db + 8 * g))

    def store_through_lds(self, inv) -> None:
        """gfx942 o_staging lds: the wave's 32 O rows into its 32 x row_bytes part of the
        LDS from the MFMA layout (lane (i, h): 8 bytes, head-dims 32 db + 8 g + 4 h.., of row
        i), read back row-contiguous 8 bytes a lane (lane t: row t / per + rows k, piece
        t % per) and stored with one buffer_store_dwordx2 per `rows` rows (8 lanes a clock
        write one 64-byte block). 16-byte chunk c of row r sits at c ^ (r % 8) and its 8-byte
        halves swap when r & 8: a write phase (16 lanes: 16 rows, one half) and a read phase
        (16 lanes: 128 bytes of one row) each hit 32 distinct banks. A barrier first: other
        waves may still read the last K/V tiles there."""
        cfg, kb = self.cfg, self.kb
        kb.s_barrier()
        half = kb.v_xor_b32(None, self.half, kb.v_bfe_u32(None, self.lane32, 3, 1))
        base = self.row_offset(self.row_in_wg, kb.v_lshlrev_b32(None, 3, half))
        offsets = [16 * (4 * db + g) for db in range(cfg.head_dim // 32) for g in range(4)]
        addr = self.swizzled(base, self.lane32, 8, 4, offsets)
        mask = self.swizzle_mask(8, 4)
        for db in range(cfg.head_dim // 32):
            for g in range(4):
                data = kb.join(*self.packed_group(inv, db, g), align=2)
                reg, imm = self.swizzle_offset(addr, 16 * (4 * db + g), mask)
                kb.ds_write_b64(reg, data, offset=imm)
        per = cfg.row_bytes // 8
        rows = 64 // per
        t_row, piece, row = self.lane_row(per)
        # Row r = t_row + rows k (t_row < rows, a power of two): r % 8 = t_row ^ (rows k % 8)
        # and r & 8 = rows k & 8, XORed into the address bits 3-6 per read.
        chunk = kb.v_xor_b32(None, kb.v_lshrrev_b32(None, 1, piece), t_row)
        src = self.row_offset(row, kb.v_lshl_add_u32(None, chunk, 4, kb.v_lshlrev_b32(
            None, 3, kb.v_and_b32(None, 1, piece))))

        def flip(k: int) -> int:
            return 16 * (rows * k % 8) + 8 * ((rows * k >> 3) & 1)

        regs = {x: src if x == 0 else kb.v_xor_b32(None, x, src)
                for x in sorted({flip(k) for k in range(32 // rows)})}
        data = [kb.ds_read_b64(kb.vregs(2, align=2), regs[flip(k)],
                               offset=k * rows * cfg.row_bytes)
                for k in range(32 // rows)]
        # Raw buffers range-check voffset + offset: rows past seq_q are not written.
        dst = self.row_offset(kb.v_add_u32(None, self.row0, row),
                              kb.v_lshlrev_b32(None, 3, piece))
        voffs = {0: dst}
        for k, d in enumerate(data):
            hi, lo = divmod(k * rows * cfg.row_bytes, 4096)
            if hi not in voffs:
                voffs[hi] = kb.v_add_u32(None, 4096 * hi, dst)
            kb.buffer_store_dwordx2(d, voffs[hi], self.ro, 0, offen=True, offset=lo)

    def store_lse(self, total) -> None:
        """LSE = ln 2 * (m + log2 l): m is the running max in base-2 units (possibly stale by
        the deferred rescale; l shares it). Both lanes of a row (l, l ^ 32) hold the same
        value and store it to the same address; rows past seq_q fall outside the buffer."""
        kb, st = self.kb, self.region["stats"]
        lse2 = kb.v_add_f32(None, st[0], kb.v_log_f32(None, total))
        value = kb.v_mul_f32(None, kb.v_mov_b32(None, _f32_bits(math.log(2.0))), lse2)
        voff = kb.v_lshlrev_b32(None, 2, self.query_row())
        kb.buffer_store_dword(value, voff, self.rl, 0, offen=True)

    def packed_group(self, inv, db: int, g: int) -> list:
        """O / l of register group g of head-dim block db (4 head-dim values 32 db + 8 g +
        4 h..) as two 16-bit-pair dwords."""
        kb, acc_o = self.kb, self.region["O"]
        r = 16 * db + 4 * g
        acc = [kb.v_accvgpr_read_b32(None, acc_o[r + k]) if self.cfg.o_agprs else acc_o[r + k]
               for k in range(4)]
        if self.cfg.packed_store and not self.cfg.o_agprs:
            # After the loop: one v_pk_mul_f32 per two values (AITER's gfx942 epilogue too).
            vals = [v for k in (0, 2) for v in kb.split(kb.v_pk_mul_f32(
                kb.vregs(2, align=2), self.inv_pair, acc_o[r + k:r + k + 2]))]
        else:
            vals = [kb.v_mul_f32(None, inv, a) for a in acc]
        return [self.pack(vals[0], vals[1]), self.pack(vals[2], vals[3])]

    def store_dwordx4(self, inv) -> None:
        """gfx950: 16 contiguous bytes per lane and store. Of register groups 2k and 2k + 1
        lane l < 32 holds head-dim values 16k + 0..3 and 16k + 8..11, lane l + 32 16k + 4..7
        and 16k + 12..15: one v_permlane32_swap_b32 per dword trades group 2k + 1 of the low
        half for group 2k of the high half, so lane l holds 16k + 0..7 and lane l + 32
        16k + 8..15, stored with one buffer_store_dwordx4 (half the stores of dwordx2)."""
        cfg, kb = self.cfg, self.kb
        voff = self.row_offset(self.query_row(), kb.v_lshlrev_b32(None, 4, self.half))
        for db in range(cfg.head_dim // 32):
            for k in range(2):
                a = self.packed_group(inv, db, 2 * k)
                b = self.packed_group(inv, db, 2 * k + 1)
                for w in range(2):
                    # a's lanes 32-63 <-> b's lanes 0-31.
                    a[w], b[w] = kb.v_permlane32_swap_b32(a[w], b[w])
                data = kb.join(*a, *b, align=4)
                kb.buffer_store_dwordx4(data, voff, self.ro, 0, offen=True,
                                        offset=2 * (32 * db + 16 * k))

    def exchange_sum(self, value):
        """The value of lane l ^ 32."""
        kb = self.kb
        if self.cfg.features.permlane_swap:
            a = kb.v_mov_b32(None, value)
            b = kb.v_mov_b32(None, value)
            a, b = kb.v_permlane32_swap_b32(a, b)
            # lanes 0-31: partner in b; lanes 32-63: partner in a.
            own_low = kb.v_cmp_gt_u32(32, self.tid_in_wave())
            return kb.v_cndmask_b32(None, a, b, own_low)
        return kb.ds_bpermute_b32(None, self.partner, value)

    def max_under_s(self, S, key0) -> dict | None:
        """max_under_s (unmasked blocks): the emitters of the maxima of the first tiles,
        one per S MFMA from MAX_LAG MFMAs after tile 0's last one (each tile's after its
        own MFMAs), as many tiles as fit, in v["items"]; v["done"]: the first tile left for
        softmax_items; None otherwise."""
        cfg = self.cfg
        if not cfg.max_under_s or key0 is not None or cfg.tiles < 2:
            return None
        v: dict = {"done": cfg.tiles - 1}
        steps = cfg.head_dim // cfg.kstep
        # Tile 0's MFMAs and MAX_LAG more: a VALU read of an MFMA result needs wait states.
        items = [lambda kb: None] * (steps + MAX_LAG)
        for u in range(cfg.tiles - 1):
            more = self.tile_max_items(S, v, u)
            if len(items) + len(more) > steps * cfg.tiles:  # one per MFMA at most
                v["done"] = u
                break
            items += more
        v["items"] = items
        return v

    def group_priority(self) -> None:
        """setprio=group: the second wave of each SIMD (waves waves/2..) raises its priority
        once, so its MFMA stream goes first and the first group's VALU fills the gaps."""
        cfg, kb = self.cfg, self.kb
        if cfg.setprio != "group":
            return
        wave = kb.v_readfirstlane_b32(None, kb.v_lshrrev_b32(None, 6, self.tid))
        with kb.if_(kb.s_lshr_b32(None, wave, _log2(cfg.waves // 2))).then():
            kb.s_setprio(1)

    def priority(self, at: str) -> None:
        """setprio mfma / stage / scores: this wave's priority for the part of the key block
        that begins `at` (PRIORITY_POINTS: "scores", "softmax", "exps", "pv")."""
        level = PRIORITY_POINTS.get(self.cfg.setprio, {}).get(at)
        if level is not None:
            self.kb.s_setprio(level)

    def tid_in_wave(self):
        """The lane index 0..63."""
        return self.kb.v_and_b32(None, 63, self.tid)

    def build(self):
        """The whole kernel as a module."""
        cfg, kb = self.cfg, self.kb
        self.regions()
        self.setup()
        self.lane_constants()
        self.group_priority()
        done = kb.new_label("done")
        for k, set_row0 in enumerate(self.row_tile_passes()):
            if k == 1 and cfg.row_tiles % 2:
                # The middle tile of an odd count is the first pass's n - 1 - x already.
                kb.s_cmp_eq_u32(self.wg_m, cfg.row_tiles // 2)
                kb.s_cbranch_scc1(done)
            set_row0(kb)
            self.read_addresses()
            self.init_state()
            self.row_limits()
            self.loop()
            self.store()
        kb.place(done)
        kb.s_endpgm()
        return kb.finish()


def _part(items: list, parts: int, k: int) -> list:
    """Part k of `items` cut into `parts` equal parts."""
    size = len(items) // parts
    return items[k * size:(k + 1) * size]


def _log2(n: int) -> int:
    """log2 of a power of two."""
    return n.bit_length() - 1


def _f32_bits(x: float) -> int:
    """The IEEE bits of x as float32."""
    return int(np.array(x, np.float32).view(np.uint32))


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool, *,
              lse: bool = False, round_p: Any = None) -> Any:
    """Attention in float64 from the same (16-bit) inputs: [b, h, sq, d]; with `lse` also
    the log-sum-exp of each row's scaled, masked scores (natural log): ([b, h, sq, d],
    [b, h, sq]).

    K and V may have fewer heads than Q (grouped-query attention: query head i reads K/V
    head i // (h / hk)). `round_p` (a function of a float64 array) models a kernel that rounds
    the probabilities before the P V product but sums them unrounded: O = round_p(P) V /
    sum(P), P = exp(s - max s) per row. (A flash kernel's P is relative to its running max,
    not the final one, so this models the rounding, not its exact bits.)
    Computed per (batch, head) and block of query rows, so the float64 scores in flight
    stay under REFERENCE_BLOCK_BYTES whatever the sequence lengths."""
    b, h, sq, d = q.shape
    hk, sk = k.shape[1], k.shape[2]
    group = h // hk
    out = np.empty((b, h, sq, v.shape[3]), np.float64)
    lses = np.empty((b, h, sq), np.float64) if lse else None
    rows = max(1, REFERENCE_BLOCK_BYTES // (8 * max(1, sk)))
    for bi in range(b):
        for hi in range(h):
            k64, v64 = k[bi, hi // group].astype(np.float64), v[bi, hi // group].astype(np.float64)
            for r0 in range(0, sq, rows):
                r1 = min(sq, r0 + rows)
                s = (q[bi, hi, r0:r1].astype(np.float64) @ k64.T) * scale
                if causal:
                    visible = np.arange(sk)[None, :] <= np.arange(r0, r1)[:, None] + (sk - sq)
                    s = np.where(visible, s, -np.inf)
                top = s.max(axis=-1, keepdims=True)
                p = np.exp(s - top)
                total = p.sum(axis=-1, keepdims=True)
                out[bi, hi, r0:r1] = ((p if round_p is None else round_p(p)) @ v64) / total
                if lses is not None:
                    lses[bi, hi, r0:r1] = (top + np.log(total))[:, 0]
    return (out, lses) if lse else out


def bf16_toward_zero(x: np.ndarray) -> np.ndarray:
    """float values rounded to bf16 toward zero (truncated float32), as float32."""
    from asterism.emu.numerics import bf16_to_f32, f32_to_bf16

    return bf16_to_f32(f32_to_bf16(np.asarray(x, np.float32), rounding="rtz"))


def tolerance(v: np.ndarray, dtype: str) -> tuple[float, float]:
    """(atol, rtol) of the check of an attention output whose V (decoded) is `v`: P is
    rounded to the 16-bit dtype before P V (relative error eps / 2 per weight) and O is
    rounded on the way out: |error| <= eps * max|V| covers both with room, rtol eps."""
    eps = EPS[dtype]
    return eps * float(np.abs(v).max()), eps


ROW_RTOL = 2.0  # the per-row norm check allows ROW_RTOL * eps (rounding alone: < 0.9 eps seen)


def row_relative_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Per query row, ||got - want|| / ||want|| over the head dimension (the last axis).

    The element check (atol = eps * max|V|) cannot see an error proportional to |O| when
    |O| is much smaller than |V| (random V: the weighted mean of many rows nearly cancels):
    a kernel whose running sum misses 2 keys in 64 (O 3 % too large) passes it. The rounding
    errors of a correct kernel (P to 16 bits, O on output) are independent per weight, a
    random walk over the same weights as O itself, so the norm of a row's error grows with
    the norm of the row: below eps relative; that 3 % is 8 eps (bf16). Rows whose reference
    is all zero count as their error's norm."""
    diff = np.sqrt(np.square(got - want).sum(axis=-1))
    norm = np.sqrt(np.square(want).sum(axis=-1))
    return np.where(norm > 0, diff / np.where(norm > 0, norm, 1.0), diff)


def attention_flops(batch: int, heads: int, seq_q: int, seq_k: int, head_dim: int,
                    causal: bool) -> int:
    """Useful flops of one forward pass: 4 per (query, visible key, head-dim element); a
    causal (bottom-right aligned) mask leaves sq * sk - sq * (sq - 1) / 2 pairs visible."""
    pairs = seq_q * seq_k
    if causal:
        pairs -= seq_q * (seq_q - 1) // 2
    return 4 * batch * heads * pairs * head_dim


def encode(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values as the kernel's 16-bit dtype (f16 as float16, bf16 as uint16 codes)."""
    if dtype == "f16":
        return x.astype(np.float16)
    from asterism.emu.numerics import f32_to_bf16

    return f32_to_bf16(x.astype(np.float32))


def decode(x: np.ndarray, dtype: str) -> np.ndarray:
    """The kernel's 16-bit values as float32."""
    if dtype == "f16":
        return x.astype(np.float32)
    from asterism.emu.numerics import bf16_to_f32

    return bf16_to_f32(x)


def input_bytes(cfg: Config) -> int:
    """Host memory the inputs, the output, the run's copy of it and the check take: the 16-bit
    Q, K, V, O, the float32 decoded Q, K, V of the reference and its float64 result."""
    q = cfg.batch * cfg.heads * cfg.seq_q * cfg.head_dim
    kv = cfg.batch * (cfg.heads // cfg.group) * cfg.seq_k * cfg.head_dim
    return 2 * (q + 2 * kv + 2 * q) + 4 * (q + 2 * kv) + 8 * q + REFERENCE_BLOCK_BYTES * 4


def make_inputs(cfg: Config, seed: int) -> dict[str, np.ndarray]:
    """Q, K, V (standard normal, in the dtype) and a zero O, checked against the memory
    budget first; drawn a batch at a time (the same values as one draw)."""
    from asterism.support.limits import check_memory

    check_memory(input_bytes(cfg), f"the arguments and reference of {NAME} (batch "
                 f"{cfg.batch}, heads {cfg.heads}, seq_q {cfg.seq_q}, seq_k {cfg.seq_k}, "
                 f"head_dim {cfg.head_dim})", hint="use a smaller problem")
    rng = np.random.default_rng(seed)
    dtype = np.float16 if cfg.dtype == "f16" else np.uint16
    out = {}
    heads_kv = cfg.heads // cfg.group
    for name, seq, heads in (("q", cfg.seq_q, cfg.heads), ("k", cfg.seq_k, heads_kv),
                             ("v", cfg.seq_k, heads_kv)):
        shape = (heads, seq, cfg.head_dim)
        out[name] = np.empty((cfg.batch, *shape), dtype)
        for b in range(cfg.batch):
            out[name][b] = encode(rng.standard_normal(shape), cfg.dtype)
    out["o"] = np.zeros((cfg.batch, cfg.heads, cfg.seq_q, cfg.head_dim), dtype)
    if cfg.lse:
        out["lse"] = np.zeros((cfg.batch, cfg.heads, cfg.seq_q), np.float32)
    return out


def build_case(target: str, params: dict[str, Any]) -> KernelCase:
    """The flash-attention forward kernel; its inputs and NumPy reference are made when a run
    or a check first needs them (a code object alone costs the same at any batch)."""
    cfg = check(target, params)
    module = _Builder(cfg).build()
    outputs = ("o", "lse") if cfg.lse else ("o",)
    args = LazyArgs(("q", "k", "v", *outputs), lambda: make_inputs(cfg, params["seed"]))

    def expected() -> dict[str, np.ndarray]:
        q, k, v = (decode(args[n], cfg.dtype) for n in "qkv")
        # bf16_round=truncate: P and O rounded toward zero as the kernel rounds them.
        round_p = bf16_toward_zero if cfg.truncate else None
        o, lse = reference(q, k, v, cfg.scale, cfg.causal, lse=True, round_p=round_p)
        out = {"o": bf16_toward_zero(o) if cfg.truncate else o}
        if cfg.lse:
            out["lse"] = lse
        return out

    def decode_output(name: str, x: np.ndarray) -> np.ndarray:
        return x if name == "lse" else decode(x, cfg.dtype)

    def atol() -> float:
        return tolerance(decode(args["v"], cfg.dtype), cfg.dtype)[0]

    flops = attention_flops(cfg.batch, cfg.heads, cfg.seq_q, cfg.seq_k, cfg.head_dim,
                            cfg.causal)
    grid = (cfg.grid_x, cfg.heads, cfg.batch)
    return KernelCase(
        name=NAME, target=target, params=dict(params), module=module, kernel=NAME,
        grid=grid, block=(64 * cfg.waves, 1, 1), args=args, outputs=outputs,
        reference=expected, decode=decode_output,
        atol=atol, rtol=EPS[cfg.dtype], flops=flops,
        notes={"pinned_vgprs": cfg.pinned_vgprs, "mfma": cfg.mfma, "lds_bytes": cfg.lds_bytes},
    )


GENERATOR = register(KernelGenerator(
    name=NAME,
    description="flash-attention forward, O = softmax(Q K^T * scale) V (online softmax, "
                "exp2, MFMA, K/V tiles in LDS)",
    targets=TARGETS,
    params=PARAMS,
    build_case=build_case,
    shape=Shape((("BATCH", "batch"), ("HEADS", "heads"), ("SEQ", "seq_q"), ("DIM", "head_dim")),
                "1x8x4096x128"),
))
