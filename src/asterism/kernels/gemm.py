"""GEMM `C = A x B` (f16/bf16/fp8 in, f32/f16/bf16 out), multi-wave macro tiles, with the builder.

    case = kernels.get("gemm").build("gfx950", {"m": 512, "n": 512, "k": 512})

Design (docs/kernels.md has the register map and the schedule of one loop iteration):

* A workgroup of `waves` waves computes a `tile_m x tile_n` tile of C; the waves split it
  `waves_m x waves_n` and each wave runs `bm x bn` MFMA blocks of `mfma x mfma` (32x32x8 or
  16x16x16 on gfx942, the x16/x32-K variants on gfx950). The accumulators live in a pinned
  AGPR region `ACC` (`kb.reserve`); everything else is relocatable and placed by `auto`.
* K advances `tile_k` at a time through two LDS buffers: while the waves multiply the tile
  in one buffer, the next tile (already in registers) is written to the other and the one
  after it is loaded from global memory; one `s_barrier` per tile. The K loop runs over
  pairs of tiles (buffer 1, buffer 0); the first tile and the last three are peeled, so the
  only load that may reach past K (a ragged last tile) is outside the loop.
* In LDS both operands are K-contiguous rows (`[m][k]`, `[n][k]`, padded by `lds_pad`
  elements), so a lane's MFMA fragment is one `ds_read_b64` (gfx942) or `ds_read_b128`
  (gfx950). A K-contiguous operand in memory (`n` for A, `t` for B) is copied with
  `buffer_load_dwordx4` + `ds_write_b128`; an MN-contiguous one is transposed on the way in
  (eight `ds_write_b16`/`_d16_hi` per 16 bytes).
* gfx950 (`dma`, the default): both operands go straight to LDS with `buffer_load_dwordx4
  ... lds` (M0 from pinned SGPRs, one per load and buffer) into a blocked layout
  (`DmaLayout`: 1024-byte blocks, consecutive rows in different blocks), through 2-3 LDS
  buffers (`lds_stages`); MN-contiguous operands stay [k][m] in LDS and are read with
  `ds_read_b64_tr_b16`. No staging registers, no ds_write, no transposing VALU work.
* Schedule: the MFMAs of a tile drive `kb.interleave`: after each MFMA the DS reads of the
  next k-step's fragments (`reads_per_mfma`), after every `vmem_every`-th MFMA one item of
  the global stream (the LDS writes of the next tile, then the loads of the one after).
* The waits (`s_waitcnt`), nops and registers come from the `auto` pipeline.
* Ragged edges: loads go through buffer resources whose `num_records` is the matrix size,
  so rows past M/N/K read zeros; a chunk past the contiguous dimension (which would wrap
  into the next row) gets an offset beyond `num_records`; C stores past N likewise, rows
  past M fall outside the buffer.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from asterism.builder import KernelBuilder, Stream, after
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

LAYOUTS = ("nt", "nn", "tn", "tt")
DTYPES = ("f16", "bf16", "fp8")
TARGETS = ("gfx942", "gfx950")
WAVE_GRID = {1: (1, 1), 2: (2, 1), 4: (2, 2), 8: (4, 2)}  # waves -> (waves_m, waves_n)
BUFFER_WORD3 = 0x00020000  # buffer resource dword 3 (DATA_FORMAT = 32, as the compilers use)
OUT_OF_RANGE = 0x80000000  # an offset past every buffer this kernel makes (all < 2 GiB)
MAX_BUFFER = 1 << 31
DS_OFFSET_LIMIT = 1 << 16
MUBUF_OFFSET_LIMIT = 1 << 12
SCRATCH_VGPRS = 24  # addresses, masks and temporaries besides fragments and staging
DMA_BLOCK = 1024  # bytes one wave's buffer_load_dwordx4 ... lds writes (64 lanes x 16)
DMA_M0_SGPR = 32  # first SGPR of the pinned M0 values of the direct-to-LDS loads
MAX_SGPR = 102
MAX_VMCNT = 63
REFERENCE_BLOCK_BYTES = 64 << 20  # float64 operand blocks of the reference, at most each
C_DTYPES = ("f32", "f16", "bf16")
# `auto` with the waits of the direct-to-LDS loads left to the kernel (see `dma_wait`): the
# default (`lds-dma=wait`) would wait for every load in flight before each DS read.
DMA_PIPELINE = "inline,regalloc,waits{lds-dma=tokens},hazards"

PARAMS = (
    Param("m", 256, "rows of A and C"),
    Param("n", 256, "columns of B and C"),
    Param("k", 256, "columns of A, rows of B"),
    Param("dtype", "f16", "element type of A and B (fp8: OCP e4m3 codes as uint8, gfx950 "
          "only, v_mfma_f32_*_f8f6f4, register-staged, layout nt, tile_k a multiple of 64 "
          "(32x32) or 128 (16x16))", DTYPES),
    Param("c_dtype", "f32", "element type of C (f16/bf16: the f32 accumulators rounded to "
          "nearest even)", C_DTYPES),
    Param("layout", "nt", "storage of A and B: n = as is (A[M][K], B[K][N]), t = "
          "transposed (A as [K][M], B as [N][K]); nt has both K-contiguous", LAYOUTS),
    Param("tile_m", 128, "rows of C per workgroup"),
    Param("tile_n", 128, "columns of C per workgroup"),
    Param("tile_k", 32, "K per LDS tile"),
    Param("waves", 4, "waves per workgroup (1, 2, 4, 8: 1x1, 2x1, 2x2, 4x2 over M x N)",
          tuple(WAVE_GRID)),
    Param("mfma", 32, "MFMA block size (32: 32x32, 16: 16x16)", (16, 32)),
    Param("lds_pad", 8, "padding per LDS row in 2-byte units (bank spreading; 16-bit "
          "elements for f16/bf16, pairs of fp8 codes)"),
    Param("interleave", True, "co-issue DS reads and global loads/LDS writes with the MFMAs "
          "(False: each in its own phase)"),
    Param("reads_per_mfma", 0, "DS fragment reads placed after each MFMA (0: direct-to-LDS: "
          "enough to issue a k-step's reads in the first half of the previous k-step; "
          "register-staged: just enough)"),
    Param("vmem_every", 0, "place one global-stream item after every N-th MFMA (0: spread "
          "evenly over the tile)"),
    Param("dma", True, "gfx950: load A and B straight into LDS (buffer_load_dwordx4 ... lds, "
          "M0 in SGPRs) and read MN-contiguous operands with ds_read_b64_tr_b16 (False, or "
          "gfx942: buffer_load + ds_write through registers)"),
    Param("lds_stages", 0, "LDS buffers of the direct-to-LDS path (2 or 3; 0: 3 when they "
          "fit); the register-staged path uses 2", (0, 2, 3)),
    Param("read_waits", "auto", "waits for the DS fragment reads: step = one s_waitcnt per "
          "k-step after the first (amdgcn.wait on all its reads before its first MFMA), "
          "fragment = one before each MFMA whose fragment is still in flight; auto = step on "
          "the direct-to-LDS path, fragment on the register-staged one (faster there in the "
          "timing model)", ("auto", "step", "fragment")),
    Param("kloop", "scf", "how the K loop is written: scf = an scf.for (kb.loop) whose "
          "iter_args carry the global offsets, the staging registers and the load tokens, so "
          "the waits pass makes every wait; unrolled = blocks and a branch written by the "
          "generator (the cross-iteration waits of the direct-to-LDS loads by hand; the same "
          "code but the loop control)", ("scf", "unrolled")),
    Param("seed", 0, "random seed of the inputs"),
)


@dataclass(frozen=True)
class GemmConfig:
    """The checked parameters and everything derived from them."""

    target: str
    m: int
    n: int
    k: int
    dtype: str
    layout: str
    tile_m: int
    tile_n: int
    tile_k: int
    waves: int
    block: int  # MFMA block size
    pad: int
    interleave: bool
    reads_per_mfma: int
    vmem_every: int
    seed: int
    dma: bool = False
    lds_stages: int = 0
    read_waits: str = "auto"
    c_dtype: str = "f32"
    kloop: str = "scf"

    @property
    def features(self) -> KernelFeatures:
        """The target's kernel capabilities (asterism.kernels.features)."""
        return kernel_features(self.target)

    @property
    def c_bytes(self) -> int:
        """Bytes of one element of C."""
        return 4 if self.c_dtype == "f32" else 2

    @property
    def step_waits(self) -> bool:
        """True if the fragment reads of a k-step are waited for together."""
        return self.read_waits == "step" or (self.read_waits == "auto" and self.use_dma)

    @property
    def threads(self) -> int:
        """Work-items per workgroup."""
        return 64 * self.waves

    @property
    def wave_grid(self) -> tuple[int, int]:
        """(waves_m, waves_n)."""
        return WAVE_GRID[self.waves]

    @property
    def wave_tile(self) -> tuple[int, int]:
        """Rows and columns of C one wave computes."""
        wm, wn = self.wave_grid
        return self.tile_m // wm, self.tile_n // wn

    @property
    def blocks(self) -> tuple[int, int]:
        """(bm, bn): MFMA blocks per wave along M and N."""
        wtm, wtn = self.wave_tile
        return wtm // self.block, wtn // self.block

    @property
    def esize(self) -> int:
        """Bytes of one element of A and B."""
        return 1 if self.dtype == "fp8" else 2

    @property
    def pad_bytes(self) -> int:
        """Bytes of padding per LDS row (`lds_pad` counts 2-byte units)."""
        return 2 * self.pad

    @property
    def chunk_elems(self) -> int:
        """Elements of A or B in one 16-byte chunk."""
        return 16 // self.esize

    @property
    def kper(self) -> int:
        """K elements one lane holds per MFMA operand (4 on gfx942, 8 on gfx950, 32 for
        fp8's f8f6f4 MFMA)."""
        if self.dtype == "fp8":
            return 32
        return self.features.lane_k

    @property
    def frag_bytes(self) -> int:
        """Bytes of one lane's MFMA operand fragment."""
        return self.kper * self.esize

    @property
    def lane_groups(self) -> int:
        """Groups of `block` lanes in a wave (2 for 32x32, 4 for 16x16)."""
        return 64 // self.block

    @property
    def mfma_k(self) -> int:
        """K of one MFMA."""
        return self.kper * self.lane_groups

    @property
    def mfma_name(self) -> str:
        """The MFMA instruction."""
        b = self.block
        if self.dtype == "fp8":
            return f"v_mfma_f32_{b}x{b}x{self.mfma_k}_f8f6f4"  # CBSZ = BLGP = 0: fp8 e4m3
        return f"v_mfma_f32_{b}x{b}x{self.mfma_k}_{self.dtype}"

    @property
    def acc_regs(self) -> int:
        """Accumulator registers per lane of one MFMA block."""
        return self.block * self.block // 64

    @property
    def k_steps(self) -> int:
        """MFMA k-steps per LDS tile."""
        return self.tile_k // self.mfma_k

    @property
    def k_tiles(self) -> int:
        """LDS tiles along K (the last one may be ragged)."""
        return -(-self.k // self.tile_k)

    @property
    def row_bytes(self) -> int:
        """Bytes of one LDS row (tile_k elements and the padding)."""
        return self.esize * self.tile_k + self.pad_bytes

    @property
    def use_dma(self) -> bool:
        """True if the operands go straight to LDS (gfx950, `dma`, 16-bit elements, and the
        tiles fit)."""
        return (self.dma and self.features.lds_dma and self.dtype != "fp8"
                and not dma_misfit(self))

    def dma_layout(self, operand: str) -> DmaLayout:
        """The LDS layout of `operand` on the direct-to-LDS path: rows of the contiguous
        dimension (K rows of M/N elements for an MN-contiguous operand, read transposed)."""
        mn = self.tile_m if operand == "a" else self.tile_n
        if self.k_contiguous(operand):
            return DmaLayout(mn, self.tile_k, 2 * self.pad)
        # ds_read_b64_tr_b16: 4 K rows x 32 bytes per 16 lanes; rows 2 pads apart spread them.
        return DmaLayout(self.tile_k, mn, 4 * self.pad)

    def operand_bytes(self, operand: str) -> int:
        """Bytes of `operand` in one LDS buffer."""
        if self.use_dma:
            return self.dma_layout(operand).nbytes
        return (self.tile_m if operand == "a" else self.tile_n) * self.row_bytes

    @property
    def a_bytes(self) -> int:
        """Bytes of A in one LDS buffer (B follows)."""
        return self.operand_bytes("a")

    @property
    def buffer_bytes(self) -> int:
        """Bytes of one LDS buffer (A then B)."""
        return self.operand_bytes("a") + self.operand_bytes("b")

    @property
    def stages(self) -> int:
        """LDS buffers: 2 (register staging), 2 or 3 (direct-to-LDS; 0 = 3 if they fit)."""
        if not self.use_dma:
            return 2
        if self.lds_stages:
            return self.lds_stages
        from asterism.target import get_target

        fits = 3 * self.buffer_bytes <= get_target(self.target).lds.bytes_per_workgroup
        return 3 if fits else 2

    @property
    def dma_per_tile(self) -> int:
        """Direct-to-LDS loads one wave issues per K tile (A and B)."""
        return sum(self.dma_layout(x).blocks // self.waves for x in ("a", "b"))

    @property
    def lds_bytes(self) -> int:
        """LDS of the workgroup (`stages` buffers)."""
        return self.stages * self.buffer_bytes

    @property
    def grid(self) -> tuple[int, int, int]:
        """Workgroups: x over N, y over M."""
        return -(-self.n // self.tile_n), -(-self.m // self.tile_m), 1

    def k_contiguous(self, operand: str) -> bool:
        """True if `operand` ("a" or "b") is stored with K contiguous."""
        return self.layout[0] == "n" if operand == "a" else self.layout[1] == "t"

    def chunks(self, operand: str) -> int:
        """16-byte chunks of `operand` per LDS tile."""
        rows = self.tile_m if operand == "a" else self.tile_n
        return rows * self.tile_k // self.chunk_elems

    def chunks_per_thread(self, operand: str) -> int:
        """16-byte chunks each work-item copies per tile."""
        return self.chunks(operand) // self.threads

    def vgpr_estimate(self) -> int:
        """Arch VGPRs the kernel needs at most (fragments, staging, addresses)."""
        bm, bn = self.blocks
        frag = self.frag_bytes // 4
        frags = 2 * (bm + bn) * frag * max(1, self.k_steps > 1)
        staging = 0 if self.use_dma else \
            4 * (self.chunks_per_thread("a") + self.chunks_per_thread("b"))
        offsets = self.chunks_per_thread("a") + self.chunks_per_thread("b")
        return frags + staging + offsets + SCRATCH_VGPRS


@dataclass(frozen=True)
class DmaLayout:
    """An operand tile in LDS for direct-to-LDS loads: `rows` rows of `row_elems` contiguous
    16-bit elements in blocks of 1024 bytes (what one wave's buffer_load_dwordx4 ... lds
    writes: lane l at M0 + 16 l) followed by `pad` bytes. Row r is row r // blocks of block
    r % blocks, so consecutive rows (the lanes of one DS read) are a block plus a pad apart:
    different banks without padding inside a block, which a DMA write cannot skip."""

    rows: int
    row_elems: int
    pad: int

    @property
    def chunks_per_row(self) -> int:
        """16-byte chunks per row."""
        return self.row_elems // 8

    @property
    def rows_per_block(self) -> int:
        """Rows in one 1024-byte block."""
        return 64 // self.chunks_per_row

    @property
    def blocks(self) -> int:
        """Blocks of the tile (one DMA instruction each)."""
        return self.rows // self.rows_per_block

    @property
    def block_bytes(self) -> int:
        """Distance between blocks."""
        return DMA_BLOCK + self.pad

    @property
    def nbytes(self) -> int:
        """Bytes of the tile in LDS."""
        return self.blocks * self.block_bytes

    def addr(self, row: int, elem: int) -> int:
        """LDS byte offset of element `elem` of row `row`."""
        return ((row % self.blocks) * self.block_bytes
                + (row // self.blocks) * 2 * self.row_elems + 2 * elem)

    def misfit(self) -> str:
        """Why this tile cannot be loaded this way ("" if it can)."""
        cpr = self.row_elems // 8
        if self.row_elems % 8 or cpr == 0 or 64 % cpr:
            return f"rows of {self.row_elems} elements do not tile 1024-byte blocks"
        if self.rows % self.rows_per_block or self.blocks & (self.blocks - 1):
            return (f"{self.rows} rows of {self.row_elems} elements are not a power-of-two "
                    "number of 1024-byte blocks")
        return ""


def _read_lanes(cfg: GemmConfig, operand: str):
    """Per-lane (row, elem) and per-instruction (row, elem) parts of the fragment reads of
    `operand` in its DMA layout: [(lane part of wave w, lane l)], [(immediate part)]."""
    wm, wn = cfg.wave_grid
    waves_along, wtile = (wm, cfg.wave_tile[0]) if operand == "a" else (wn, cfg.wave_tile[1])
    bcount = cfg.blocks[0] if operand == "a" else cfg.blocks[1]
    b = cfg.block
    lanes, imms = [], []
    for w in range(waves_along):
        for lane in range(64):
            idx, grp = lane % b, lane // b
            if cfg.k_contiguous(operand):
                lanes.append((w * wtile + idx, 8 * grp))
            else:
                k, q = (lane % 16) // 4, lane % 4
                lanes.append((8 * grp + k, w * wtile + (idx // 16) * 16 + 4 * q))
    for blk in range(bcount):
        for s in range(cfg.k_steps):
            if cfg.k_contiguous(operand):
                imms.append((blk * b, s * cfg.mfma_k))
            else:
                imms += [(s * cfg.mfma_k + 4 * half, blk * b) for half in range(2)]
    return lanes, imms


@functools.lru_cache(maxsize=256)
def dma_misfit(cfg: GemmConfig) -> str:
    """Why the tiles of `cfg` cannot take the direct-to-LDS path ("" if they can)."""
    for operand in ("a", "b"):
        lay = cfg.dma_layout(operand)
        why = lay.misfit()
        if why:
            return f"{operand.upper()}: {why}"
        if lay.blocks % cfg.waves:
            return f"{operand.upper()}: {lay.blocks} blocks do not split over {cfg.waves} waves"
        # Every read address must be (lane base) + (immediate): check it for all of them.
        lanes, imms = _read_lanes(cfg, operand)
        for r0, e0 in imms:
            shift = lay.addr(r0, e0) - lay.addr(0, 0)
            if any(lay.addr(r + r0, e + e0) != lay.addr(r, e) + shift for r, e in lanes):
                return f"{operand.upper()}: fragment addresses are not lane base + offset"
    return ""


def _check(cfg: GemmConfig) -> None:
    """KernelParamError for every parameter that does not fit the problem or the chip."""
    from asterism.target import get_target

    chip = get_target(cfg.target)
    if cfg.dtype == "fp8":
        require(cfg.features.mfma_f8f6f4, "dtype",
                f"fp8 needs gfx950's f8f6f4 MFMA (OCP e4m3); {cfg.target} is not supported")
        require(cfg.layout == "nt", "layout",
                f"fp8 supports layout nt only (A and B K-contiguous), got {cfg.layout}")
    for name in ("m", "n", "k", "tile_m", "tile_n", "tile_k"):
        require(getattr(cfg, name) > 0, name, f"must be positive, got {getattr(cfg, name)}")
    require(cfg.seed >= 0, "seed", f"must be at least 0, got {cfg.seed}")
    require(cfg.pad >= 0 and cfg.pad % 8 == 0, "lds_pad",
            f"must be a non-negative multiple of 8 (16-byte rows), got {cfg.pad}")
    require(cfg.reads_per_mfma >= 0, "reads_per_mfma", "must be >= 0")
    require(cfg.vmem_every >= 0, "vmem_every", "must be >= 0")
    # Rows of 16-byte chunks: the contiguous dimension of each matrix is a multiple of 8.
    contiguous = {"a": "k" if cfg.k_contiguous("a") else "m",
                  "b": "k" if cfg.k_contiguous("b") else "n"}
    for operand, dim in contiguous.items():
        require(getattr(cfg, dim) % cfg.chunk_elems == 0, dim,
                f"{getattr(cfg, dim)} is not a multiple of {cfg.chunk_elems}: "
                f"{operand.upper()} is "
                f"{dim.upper()}-contiguous in layout {cfg.layout} and is copied in "
                "16-byte chunks")
    require(cfg.n % 4 == 0, "n", f"{cfg.n} is not a multiple of 4 (C is stored 16 bytes "
            "at a time)")
    for name, size in (("m", cfg.m * cfg.k * cfg.esize), ("n", cfg.k * cfg.n * cfg.esize),
                       ("n", cfg.m * cfg.n * cfg.c_bytes)):
        require(size < MAX_BUFFER, name, f"a matrix of {size} bytes exceeds the 2 GiB "
                "buffer offsets this kernel uses")
    for tile, dim in (("tile_m", "m"), ("tile_n", "n"), ("tile_k", "k")):
        require(getattr(cfg, tile) <= max(getattr(cfg, dim), cfg.block), tile,
                f"{getattr(cfg, tile)} is larger than the problem ({dim} = "
                f"{getattr(cfg, dim)}); use a smaller tile")
    wm, wn = cfg.wave_grid
    for tile, w in (("tile_m", wm), ("tile_n", wn)):
        require(getattr(cfg, tile) % (w * cfg.block) == 0, tile,
                f"{getattr(cfg, tile)} is not a multiple of {w * cfg.block} ({w} waves of "
                f"{cfg.block}x{cfg.block} MFMA blocks)")
    require(cfg.tile_k % cfg.mfma_k == 0, "tile_k",
            f"{cfg.tile_k} is not a multiple of {cfg.mfma_k} (the K of {cfg.mfma_name})")
    for operand, tile in (("a", "tile_m"), ("b", "tile_n")):
        per_row = (cfg.tile_k if cfg.k_contiguous(operand) else getattr(cfg, tile)) \
            // cfg.chunk_elems
        require(cfg.chunks(operand) % cfg.threads == 0 and cfg.threads % per_row == 0,
                "tile_k" if cfg.k_contiguous(operand) else tile,
                f"the {cfg.chunks(operand)} 16-byte chunks of an {operand.upper()} tile "
                f"({per_row} per row) do not split evenly over {cfg.threads} work-items")
    require(cfg.lds_stages in (0, 2) or cfg.use_dma, "lds_stages",
            f"{cfg.lds_stages} buffers need the direct-to-LDS path (gfx950, dma=true, tiles "
            f"that fit it{': ' + dma_misfit(cfg) if cfg.features.lds_dma else ''})")
    require(cfg.lds_bytes <= chip.lds.bytes_per_workgroup, "tile_k",
            f"{cfg.stages} LDS buffers of the A and B tiles ((tile_m + tile_n) x tile_k "
            f"elements and padding) need {cfg.lds_bytes} bytes; {cfg.target} has "
            f"{chip.lds.bytes_per_workgroup} per workgroup")
    if cfg.use_dma:
        m0s = cfg.stages * cfg.dma_per_tile
        require(DMA_M0_SGPR + m0s <= MAX_SGPR, "tile_k",
                f"{m0s} M0 values of the direct-to-LDS loads do not fit the SGPRs "
                f"s{DMA_M0_SGPR}..s{MAX_SGPR - 1}")
        require(cfg.dma_per_tile * (cfg.stages - 2) <= MAX_VMCNT, "lds_stages",
                f"{cfg.dma_per_tile} loads per tile in flight exceed vmcnt's {MAX_VMCNT}")
    bm, bn = cfg.blocks
    acc = bm * bn * cfg.acc_regs
    require(acc <= chip.vgpr.acc, "tile_n",
            f"the accumulators of a {cfg.wave_tile[0]}x{cfg.wave_tile[1]} wave tile need "
            f"{acc} AGPRs per lane; {cfg.target} has {chip.vgpr.acc} (use smaller tiles "
            "or more waves)")
    vgprs = cfg.vgpr_estimate()
    require(vgprs <= chip.vgpr.arch, "tile_k",
            f"fragments, staging and addresses need about {vgprs} VGPRs per lane; "
            f"{cfg.target} has {chip.vgpr.arch} (use a smaller tile_k or fewer blocks)")
    # DS immediate offsets reach across one operand's tile (the bases are registers).
    span = max(cfg.operand_bytes("a"), cfg.operand_bytes("b"))
    require(span < DS_OFFSET_LIMIT, "tile_m" if cfg.tile_m >= cfg.tile_n else "tile_n",
            f"an operand tile of {span} bytes in LDS exceeds the 64 KiB DS offsets")


def config(target: str, params: dict[str, Any]) -> GemmConfig:
    """The checked configuration of a GEMM."""
    cfg = GemmConfig(target, params["m"], params["n"], params["k"], params["dtype"],
                     params["layout"], params["tile_m"], params["tile_n"], params["tile_k"],
                     params["waves"], params["mfma"], params["lds_pad"], params["interleave"],
                     params["reads_per_mfma"], params["vmem_every"], params["seed"],
                     params["dma"], params["lds_stages"], params["read_waits"],
                     params["c_dtype"], params.get("kloop", "scf"))
    _check(cfg)
    return cfg


# ------------------------------------------------------------------------------ the kernel


class _GemmWriter:
    """Writes the kernel of one configuration with a KernelBuilder."""

    def __init__(self, cfg: GemmConfig):
        self.cfg = cfg
        self.kb = KernelBuilder(f"gemm_{cfg.dtype}_{cfg.layout}", cfg.target,
                                workgroup_size=(cfg.threads, 1, 1), lds_size=cfg.lds_bytes)
        bm, bn = cfg.blocks
        self.acc = self.kb.reserve("ACC", f"a[0:{bm * bn * cfg.acc_regs - 1}]")
        self.started: set[tuple[int, int]] = set()
        self.step: dict[str, Any] = {}  # SGPR: bytes a global offset moves per K tile

    # --- small helpers --------------------------------------------------------------------

    def sconst(self, value: int):
        """An SGPR holding `value` (VOP3 has no literal operand on gfx9)."""
        return self.kb.s_mov_b32(None, value & 0xFFFFFFFF)

    def vconst(self, value: int):
        """A VGPR holding `value` (v_cndmask_b32_e64 takes no SGPR or literal src0)."""
        return self.kb.v_mov_b32(None, value & 0xFFFFFFFF)

    def mul_add(self, x, factor: int, addend):
        """x * factor + addend (24-bit unsigned multiply)."""
        return self.kb.v_mad_u32_u24(None, x, self.sconst(factor), addend)

    def add(self, x, value: int):
        """x + value (a new VGPR)."""
        if value == 0:
            return x
        return self.kb.v_add_u32(None, self.sconst(value), x)

    def resource(self, kernarg, arg, nbytes: int):
        """A buffer resource for `arg` covering `nbytes` (out-of-range reads give zeros)."""
        kb = self.kb
        ptr = kb.s_load_dwordx2(kb.sregs(2, align=2), kernarg, arg)
        lo, hi = kb.split(ptr)
        return kb.join(lo, hi, self.sconst(nbytes), self.sconst(BUFFER_WORD3), align=4)

    # --- set-up ---------------------------------------------------------------------------

    def setup(self) -> None:
        """Arguments, resources, workgroup origin and the per-lane offsets."""
        cfg, kb = self.cfg, self.kb
        # fp8 codes travel as bytes (there is no C type name for e4m3).
        ab_dtype = "u8" if cfg.dtype == "fp8" else cfg.dtype
        a = kb.arg_buffer("a", ab_dtype, "read_only")
        b = kb.arg_buffer("b", ab_dtype, "read_only")
        c = kb.arg_buffer("c", cfg.c_dtype, "write_only")
        kernarg = kb.kernarg_ptr()
        wg_n, wg_m = kb.workgroup_id("x"), kb.workgroup_id("y")
        self.tid = kb.workitem_id("x")
        self.rsrc = {"a": self.resource(kernarg, a, cfg.m * cfg.k * cfg.esize),
                     "b": self.resource(kernarg, b, cfg.k * cfg.n * cfg.esize),
                     "c": self.resource(kernarg, c, cfg.m * cfg.n * cfg.c_bytes)}
        self.origin = {"a": kb.s_mul_i32(None, wg_m, self.sconst(cfg.tile_m)),
                       "b": kb.s_mul_i32(None, wg_n, self.sconst(cfg.tile_n))}
        if cfg.use_dma:
            self.dma_setup()
            self.dma_fragment_setup()
        else:
            self.copy_setup("a")
            self.copy_setup("b")
            self.fragment_setup()
        self.c_setup()

    def copy_setup(self, operand: str) -> None:
        """Global offsets and LDS write addresses of this work-item's chunks of `operand`."""
        cfg, kb, tid = self.cfg, self.kb, self.tid
        rows = cfg.tile_m if operand == "a" else cfg.tile_n
        mn = cfg.m if operand == "a" else cfg.n
        per = cfg.chunks_per_thread(operand)
        lds_base = 0 if operand == "a" else cfg.a_bytes
        origin = self.origin[operand]
        if cfg.k_contiguous(operand):
            # Row r of the tile (M or N index), chunk kc of 8 K-elements; rows of K elements.
            cpr = cfg.tile_k // cfg.chunk_elems
            row = kb.v_lshrrev_b32(None, int(math.log2(cpr)), tid)
            kc = kb.v_and_b32(None, cpr - 1, tid)
            kc16 = kb.v_lshlrev_b32(None, 4, kc)
            grow = kb.v_add_u32(None, origin, row)
            row_bytes = cfg.esize * cfg.k
            base = self.mul_add(grow, row_bytes, kc16)
            step_rows = cfg.threads // cpr
            offs = [self.add(base, i * step_rows * row_bytes) for i in range(per)]
            lds = self.mul_add(row, cfg.row_bytes, kc16)
            lds_offsets = [i * step_rows * cfg.row_bytes for i in range(per)]
            if not hasattr(self, "kc8"):  # the same for A and B (same chunks per row)
                self.kc8 = kb.v_lshlrev_b32(None, int(math.log2(cfg.chunk_elems)), kc)
            advance = cfg.esize * cfg.tile_k
        else:
            # Row kr of the tile (K index), chunk mc of 8 M/N-elements; rows of M/N elements.
            cpr = rows // 8
            kr = kb.v_lshrrev_b32(None, int(math.log2(cpr)), tid)
            mc = kb.v_and_b32(None, cpr - 1, tid)
            col = kb.v_add_u32(None, origin, kb.v_lshlrev_b32(None, 3, mc))
            base = self.mul_add(kr, 2 * mn, kb.v_lshlrev_b32(None, 1, col))
            if mn % rows:
                # A chunk past M (N) would wrap into the next row: push it out of range.
                inside = kb.v_cmp_gt_u32(kb.sregs(2, align=2), self.sconst(mn), col)
                base = kb.v_cndmask_b32(None, self.vconst(OUT_OF_RANGE), base, inside)
            step_rows = cfg.threads // cpr
            offs = [self.add(base, i * step_rows * 2 * mn) for i in range(per)]
            lds = self.mul_add(mc, 8 * cfg.row_bytes, kb.v_lshlrev_b32(None, 1, kr))
            lds_offsets = [i * step_rows * 2 for i in range(per)]
            advance = 2 * cfg.tile_k * mn
        setattr(self, f"g_{operand}", offs)
        setattr(self, f"lds_w_{operand}", [self.add(lds, lds_base + p * cfg.buffer_bytes)
                                           for p in range(2)])
        setattr(self, f"lds_w_off_{operand}", lds_offsets)
        self.step[operand] = self.sconst(advance)  # in the entry block: dominates the loop

    def fragment_setup(self) -> None:
        """LDS read addresses of this lane's fragments and its C store offsets."""
        cfg, kb = self.cfg, self.kb
        wm, wn = cfg.wave_grid
        wtm, wtn = cfg.wave_tile
        idx, grp, wi, wj = self.lane_ids()
        kpart = kb.v_lshlrev_b32(None, int(math.log2(cfg.frag_bytes)), grp)
        lane = self.mul_add(idx, cfg.row_bytes, kpart)
        a_lane = self.mul_add(wi, wtm * cfg.row_bytes, lane) if wi is not None else lane
        b_lane = self.mul_add(wj, wtn * cfg.row_bytes, lane) if wj is not None else lane
        self.lds_r = {"a": [self.add(a_lane, p * cfg.buffer_bytes) for p in range(2)],
                      "b": [self.add(b_lane, p * cfg.buffer_bytes + cfg.a_bytes)
                            for p in range(2)]}

    def lane_ids(self):
        """(row in the MFMA block, lane group, wave row, wave column) of this lane (wave
        row/column None when the grid has one); computed once."""
        if not hasattr(self, "_lane_ids"):
            cfg, kb, tid = self.cfg, self.kb, self.tid
            wm, wn = cfg.wave_grid
            log_b = int(math.log2(cfg.block))
            idx = kb.v_and_b32(None, cfg.block - 1, tid)
            grp = kb.v_bfe_u32(None, tid, log_b, int(math.log2(cfg.lane_groups)))
            wj = kb.v_bfe_u32(None, tid, 6, int(math.log2(wn))) if wn > 1 else None
            wi = kb.v_bfe_u32(None, tid, 6 + int(math.log2(wn)), int(math.log2(wm))) \
                if wm > 1 else None
            self._lane_ids = (idx, grp, wi, wj)
        return self._lane_ids

    def c_setup(self) -> None:
        """This lane's C store offset and column."""
        cfg, kb = self.cfg, self.kb
        wm, wn = cfg.wave_grid
        wtm, wtn = cfg.wave_tile
        idx, grp, wi, wj = self.lane_ids()
        # C: lane holds C[i][j..j+3], i = row0 + wi*wtm + idx (+ block), j = col0 + wj*wtn
        # + 4*grp (+ block and register group); B^T is the MFMA's first operand.
        row = kb.v_add_u32(None, self.origin["a"], idx)
        if wi is not None:
            row = self.mul_add(wi, wtm, row)
        col = kb.v_add_u32(None, self.origin["b"], kb.v_lshlrev_b32(None, 2, grp))
        if wj is not None:
            col = self.mul_add(wj, wtn, col)
        self.c_col = col
        self.c_base = kb.v_lshlrev_b32(None, int(math.log2(cfg.c_bytes)),
                                       self.mul_add(row, cfg.n, col))

    # --- one K tile -----------------------------------------------------------------------

    def load(self, operand: str, stage, masked_tile: int | None):
        """Global -> registers: this work-item's chunks of the next tile of `operand`."""
        count = len(getattr(self, f"g_{operand}"))
        return [self.load_chunk(operand, i, stage[i] if stage is not None else None,
                                masked_tile) for i in range(count)]

    def load_chunk(self, operand: str, i: int, dest, masked_tile: int | None):
        """Chunk i of `operand` into `dest` (None: new registers); a chunk of a ragged last
        tile past K gets an offset beyond the buffer (it would wrap into the next row)."""
        cfg, kb = self.cfg, self.kb
        off = getattr(self, f"g_{operand}")[i]
        if masked_tile is not None and cfg.k_contiguous(operand):
            room = cfg.k - masked_tile * cfg.tile_k
            inside = kb.v_cmp_gt_u32(kb.sregs(2, align=2), self.sconst(room), self.kc8)
            off = kb.v_cndmask_b32(None, self.vconst(OUT_OF_RANGE), off, inside)
        dest = dest if dest is not None else kb.vregs(4, align=4)
        return kb.buffer_load_dwordx4(dest, off, self.rsrc[operand], 0, offen=True)

    def advance(self, operand: str, i: int | None = None) -> None:
        """Move this work-item's global offset(s) of `operand` (chunk i, or all) to the next
        K tile."""
        kb = self.kb
        offs = getattr(self, f"g_{operand}")
        for j in range(len(offs)) if i is None else (i,):
            offs[j] = kb.v_add_u32(offs[j], self.step[operand], offs[j])

    def load_items(self, stage, masked_tile: int | None, out: list) -> list:
        """Emitters: advance and load each chunk of the tile after next (one VMEM each);
        they fill `out` with the new staging registers [A chunks, B chunks]."""
        items = []
        for slot, operand in enumerate(("a", "b")):
            out.append([None] * len(stage[slot]))
            for i, regs in enumerate(stage[slot]):
                def item(kb, operand=operand, i=i, regs=regs, slot=slot):
                    self.advance(operand, i)
                    out[slot][i] = self.load_chunk(operand, i, regs, masked_tile)
                items.append(item)
        return items

    def write_items(self, operand: str, stage, buf: int) -> list:
        """Emitters: registers -> LDS buffer `buf` for `operand` (transposing if needed)."""
        cfg = self.cfg
        addr = getattr(self, f"lds_w_{operand}")[buf]
        offsets = getattr(self, f"lds_w_off_{operand}")
        items = []
        for i, regs in enumerate(stage):
            if cfg.k_contiguous(operand):
                items.append(lambda kb, r=regs, o=offsets[i]:
                             kb.ds_write_b128(addr, r, offset=o))
                continue
            for e in range(8):
                name = "ds_write_b16_d16_hi" if e % 2 else "ds_write_b16"
                items.append(lambda kb, r=regs, e=e, o=offsets[i], name=name:
                             kb.emit(name, addr, kb.sub(r, e // 2),
                                     offset=o + e * cfg.row_bytes))
        return items

    def fragment(self, operand: str, buf: int, step: int, blk: int):
        """DS read of one MFMA operand fragment (block `blk`, k-step `step`)."""
        cfg, kb = self.cfg, self.kb
        offset = blk * cfg.block * cfg.row_bytes + step * cfg.mfma_k * cfg.esize
        base = self.lds_r[operand][buf]
        if cfg.frag_bytes == 32:
            # fp8's f8f6f4 fragment: 32 contiguous K bytes per lane in two reads. The MFMA
            # spreads a lane's bytes over K in 16-byte chunks rotating over the lane groups
            # (emu/mfma.py); A and B follow the same rule, so feeding both from contiguous K
            # only permutes the products of the dot product and the sum is the same.
            halves = [kb.ds_read_b128(kb.vregs(4, align=4), base, offset=offset + 16 * h)
                      for h in range(2)]
            return kb.join(*kb.split(halves[0]), *kb.split(halves[1]), align=4)
        read = kb.ds_read_b128 if cfg.frag_bytes == 16 else kb.ds_read_b64
        return read(kb.vregs(cfg.frag_bytes // 4, align=2), base, offset=offset)

    def mfma(self, bi: int, bj: int, fa, fb) -> None:
        """acc[bi][bj] += A block bi x B block bj (B^T first: lanes hold rows of C)."""
        cfg, kb = self.cfg, self.kb
        _, bn = cfg.blocks
        first = (bi * bn + bj) * cfg.acc_regs
        acc = self.acc[first:first + cfg.acc_regs]
        src_c = acc if (bi, bj) in self.started else 0
        self.started.add((bi, bj))
        kb.emit(cfg.mfma_name, acc, fb, fa, src_c)

    def k_tile(self, buf: int, stage, write_next: bool = False, load_next: bool = False,
               masked_tile: int | None = None, loads: list | None = None):
        """One K tile from LDS buffer `buf`: MFMAs, with the next tile's LDS writes and the
        loads of the one after interleaved (or, direct-to-LDS, the `loads` emitters).
        Returns the staging registers."""
        cfg, kb = self.cfg, self.kb
        bm, bn = cfg.blocks
        kb.s_barrier()
        frags: dict[tuple[str, int, int], Any] = {}
        reads = [(s, op, blk) for s in range(cfg.k_steps)
                 for op, count in (("a", bm), ("b", bn)) for blk in range(count)]

        fragment = self.dma_fragment if cfg.use_dma else self.fragment

        tokens: dict[int, list] = {}

        def read(kb, s, op, blk):
            frags[op, s, blk] = fragment(op, buf, s, blk)
            tokens.setdefault(s, []).append(kb.last_token)

        def mfma(kb, s, i, j):
            if cfg.step_waits and (i, j) == (0, 0) and s > 0:
                # One wait for the k-step's fragments (exact: the pass counts the reads
                # issued after them) instead of one per fragment as it arrives. Not for
                # k-step 0: its reads follow the barrier with no MFMA to hide behind, so the
                # first MFMAs start as their own fragments arrive.
                kb.wait(*tokens[s])
            self.mfma(i, j, frags["a", s, i], frags["b", s, j])

        first = [r for r in reads if r[0] == 0]
        for r in first:
            read(kb, *r)
        ds = Stream.over("ds_read", [r for r in reads if r[0] > 0], read)
        items = []
        new_stage: list = []
        if write_next:
            items += self.write_items("a", stage[0], 1 - buf)
            items += self.write_items("b", stage[1], 1 - buf)
        if load_next:
            items += self.load_items(stage, masked_tile, new_stage)
        items += loads or []
        gl = Stream("vmem", items)
        blocks = [(s, i, j) for s in range(cfg.k_steps) for i in range(bm) for j in range(bn)]
        driver = Stream.over("mfma", blocks, mfma)
        if not cfg.interleave:
            for item in ds.items + gl.items:
                item(kb)
            for item in driver.items:
                item(kb)
        else:
            # Default: the next k-step's reads go out during the first half of this one's
            # MFMAs, so they have landed when its first MFMA waits for them.
            # (The register-staged path keeps just enough: its LDS writes share the slots.)
            ahead = 2 if cfg.use_dma else 1
            per = cfg.reads_per_mfma or -(-ahead * (bm + bn) // (bm * bn))
            # Direct-to-LDS loads go first (after every MFMA): their tile is waited for at
            # most one tile later; register staging spreads its items over the tile.
            spread = max(1, len(blocks) // max(1, len(items)))
            every = cfg.vmem_every or (1 if cfg.use_dma else spread)
            kb.interleave(driver, after(ds, count=per, exhausted="stop"),
                          after(gl, every=every, exhausted="stop"), leftover="append")
        return new_stage if load_next else stage


    # --- direct-to-LDS (gfx950) -----------------------------------------------------------

    def dma_setup(self) -> None:
        """Per-lane global offsets of the direct-to-LDS loads and their M0 values (pinned
        SGPRs, one per load of a tile per LDS buffer). Load i of wave w writes block
        i * waves + w of the operand's DmaLayout; lane l lands at M0 + 16 l, i.e. chunk
        l % chunks_per_row of row (l // chunks_per_row) * blocks + i * waves + w."""
        cfg, kb, tid = self.cfg, self.kb, self.tid
        lane = kb.v_and_b32(None, 63, tid)
        wave = kb.v_lshrrev_b32(None, 6, tid)
        self.g, self.m0 = {}, {}
        m0_values = []
        for operand in ("a", "b"):
            lay = cfg.dma_layout(operand)
            cpr = lay.chunks_per_row
            chunk = kb.v_and_b32(None, cpr - 1, lane)
            slot = kb.v_lshrrev_b32(None, int(math.log2(cpr)), lane)
            row = self.mul_add(slot, lay.blocks, wave)  # row of the tile, load 0
            mn = cfg.m if operand == "a" else cfg.n
            origin = self.origin[operand]
            per = lay.blocks // cfg.waves
            if cfg.k_contiguous(operand):
                grow = kb.v_add_u32(None, origin, row)
                base = self.mul_add(grow, 2 * cfg.k, kb.v_lshlrev_b32(None, 4, chunk))
                self.kc8 = kb.v_lshlrev_b32(None, 3, chunk)  # K element of the chunk
                row_step, advance = 2 * cfg.k, 2 * cfg.tile_k
            else:
                col = kb.v_add_u32(None, origin, kb.v_lshlrev_b32(None, 3, chunk))
                base = self.mul_add(row, 2 * mn, kb.v_lshlrev_b32(None, 1, col))
                if mn % lay.row_elems:
                    # A chunk past M (N) would wrap into the next row: push it out of range.
                    inside = kb.v_cmp_gt_u32(kb.sregs(2, align=2), self.sconst(mn), col)
                    base = kb.v_cndmask_b32(None, self.vconst(OUT_OF_RANGE), base, inside)
                row_step, advance = 2 * mn, 2 * cfg.tile_k * mn
            self.g[operand] = [self.add(base, i * cfg.waves * row_step) for i in range(per)]
            self.step[operand] = self.sconst(advance)
            first = 0 if operand == "a" else cfg.a_bytes
            for p in range(cfg.stages):
                for i in range(per):
                    self.m0[operand, p, i] = len(m0_values)
                    m0_values.append(p * cfg.buffer_bytes + first
                                     + i * cfg.waves * lay.block_bytes)
        region = kb.reserve("M0", f"s{DMA_M0_SGPR}-s{DMA_M0_SGPR + len(m0_values) - 1}")
        self.m0_region = region
        wave_s = kb.v_readfirstlane_b32(None, wave)
        per_wave = {}  # block_bytes -> wave * block_bytes (one per layout)
        for operand in ("a", "b"):
            bb = cfg.dma_layout(operand).block_bytes
            if bb not in per_wave:
                per_wave[bb] = kb.s_mul_i32(None, wave_s, self.sconst(bb))
        for operand in ("a", "b"):
            bb = cfg.dma_layout(operand).block_bytes
            for (op, _p, _i), k in self.m0.items():
                if op == operand:
                    kb.s_add_u32(region[k], per_wave[bb], self.sconst(m0_values[k]))

    def dma_fragment_setup(self) -> None:
        """LDS read bases of this lane's fragments in the DmaLayouts (per operand and
        buffer; the block, k-step and half are immediates: `dma_misfit` checked that)."""
        cfg, kb, tid = self.cfg, self.kb, self.tid
        wm, wn = cfg.wave_grid
        lane = kb.v_and_b32(None, 63, tid)
        b = cfg.block
        idx = kb.v_and_b32(None, b - 1, lane)
        grp = kb.v_lshrrev_b32(None, int(math.log2(b)), lane)
        wj = kb.v_bfe_u32(None, tid, 6, int(math.log2(wn))) if wn > 1 else None
        wi = kb.v_bfe_u32(None, tid, 6 + int(math.log2(wn)), int(math.log2(wm))) \
            if wm > 1 else None
        self.lds_r = {}
        for operand, w, wtile in (("a", wi, cfg.wave_tile[0]), ("b", wj, cfg.wave_tile[1])):
            lay = cfg.dma_layout(operand)
            if cfg.k_contiguous(operand):
                row = idx if w is None else self.mul_add(w, wtile, idx)
                elem = kb.v_lshlrev_b32(None, 3, grp)
            else:
                k = kb.v_bfe_u32(None, lane, 2, 2)
                q4 = kb.v_lshlrev_b32(None, 2, kb.v_and_b32(None, 3, lane))
                mpart = kb.v_add_u32(None, kb.v_and_b32(None, b - 16, lane), q4)
                elem = mpart if w is None else self.mul_add(w, wtile, mpart)
                row = kb.v_lshl_add_u32(None, grp, 3, k)
            # addr = (row % blocks) * block_bytes + (row // blocks) * 2 * row_elems + 2 elem
            low = kb.v_and_b32(None, lay.blocks - 1, row)
            high = kb.v_lshrrev_b32(None, int(math.log2(lay.blocks)), row)
            addr = self.mul_add(high, 2 * lay.row_elems, kb.v_lshlrev_b32(None, 1, elem))
            addr = self.mul_add(low, lay.block_bytes, addr)
            first = 0 if operand == "a" else cfg.a_bytes
            self.lds_r[operand] = [self.add(addr, p * cfg.buffer_bytes + first)
                                   for p in range(cfg.stages)]

    def dma_items(self, buf: int, masked_tile: int | None, advance: bool,
                  tokens: list | None = None) -> list:
        """Emitters: the direct-to-LDS loads of one tile into LDS buffer `buf` (A, then B):
        advance the offset, set M0 from its pinned SGPR, load (its token appended to
        `tokens` when given)."""
        cfg = self.cfg
        items = []
        for operand in ("a", "b"):
            for i in range(len(self.g[operand])):
                def item(kb, operand=operand, i=i):
                    # M0 first: the offset's VALU op covers the M0 -> LDS DMA wait state.
                    kb.s_mov_b32(kb.m0, self.m0_region[self.m0[operand, buf, i]])
                    if advance:
                        offs = self.g[operand]
                        offs[i] = kb.v_add_u32(offs[i], self.step[operand], offs[i])
                    off = self.g[operand][i]
                    if masked_tile is not None and cfg.k_contiguous(operand):
                        room = cfg.k - masked_tile * cfg.tile_k
                        inside = kb.v_cmp_gt_u32(kb.sregs(2, align=2), self.sconst(room),
                                                 self.kc8)
                        off = kb.v_cndmask_b32(None, self.vconst(OUT_OF_RANGE), off, inside)
                    kb.buffer_load_dwordx4(off, self.rsrc[operand], 0, offen=True, lds=True)
                    if tokens is not None:
                        tokens.append(kb.last_token)
                items.append(item)
        return items

    def dma_fragment(self, operand: str, buf: int, step: int, blk: int):
        """DS read(s) of one MFMA operand fragment from the DmaLayout: one ds_read_b128
        (K-contiguous) or two ds_read_b64_tr_b16 (MN-contiguous: 4 K rows each)."""
        cfg, kb = self.cfg, self.kb
        lay = cfg.dma_layout(operand)
        base = self.lds_r[operand][buf]
        if cfg.k_contiguous(operand):
            off = lay.addr(blk * cfg.block, step * cfg.mfma_k) - lay.addr(0, 0)
            return kb.ds_read_b128(kb.vregs(4, align=4), base, offset=off)
        halves = []
        for half in range(2):
            off = lay.addr(step * cfg.mfma_k + 4 * half, blk * cfg.block) - lay.addr(0, 0)
            halves.append(kb.ds_read_b64_tr_b16(kb.vregs(2, align=2), base, offset=off))
        return kb.join(*kb.split(halves[0]), *kb.split(halves[1]), align=4)

    def dma_wait(self, younger: int) -> None:
        """Wait until this wave's direct-to-LDS loads but the `younger` last are done, by hand
        (`kloop=unrolled`: the loads of a tile are issued one or two tiles before it, across
        the K loop's back edge, a branch no token follows; `kloop=scf` carries the tokens as
        iter_args and waits on them instead). The count is exact (these loads are the only
        VMEM instructions in flight, and vmcnt retires in order)."""
        self.kb.s_waitcnt(vmcnt=younger)

    def body_dma(self) -> None:
        """Direct-to-LDS K loop: tile t computes from buffer t % stages and loads tile
        t + stages - 1 into the buffer tile t - 1 read (free after this tile's barrier)."""
        cfg, kb = self.cfg, self.kb
        nt, S, D = cfg.k_tiles, cfg.stages, cfg.dma_per_tile
        ragged = cfg.k % cfg.tile_k != 0

        def mask(t: int) -> int | None:
            return t if ragged and t == nt - 1 else None

        for t in range(min(S - 1, nt)):
            for item in self.dma_items(t % S, mask(t), t > 0):
                item(kb)

        def tile(t: int) -> None:
            loads = []
            if t + S - 1 < nt:
                loads = self.dma_items((t + S - 1) % S, mask(t + S - 1), True)
            self.dma_wait(D * (min(t + S - 2, nt - 1) - t))
            self.k_tile(t % S, None, loads=loads)

        tile(0)
        count = max(0, nt - S - 1)  # tiles 1.. whose loads are never the ragged last one
        groups, singles = divmod(count, S)
        if groups:
            counter = kb.s_mov_b32(None, groups)
            top = kb.label("k_loop")
            for t in range(1, S + 1):
                tile(t)
            counter = kb.s_sub_u32(counter, counter, 1)
            kb.s_cmp_lg_u32(counter, 0)
            kb.s_cbranch_scc1(top)
            kb.label("k_tail")
        # The loop's tiles are 1..S*groups; buffer and wait counts depend on t mod S and on
        # how far t is from the end, so the tail continues with the true tile indices.
        for t in range(1 + S * groups, nt):
            tile(t)
        del singles
        self.store_c()
        kb.s_endpgm()

    def body_dma_scf(self) -> None:
        """The direct-to-LDS K loop as an scf.for (`kloop=scf`): the tiles as in `body_dma`
        (S per trip: the LDS buffer of a tile is its index mod S), the global offsets and
        the tokens of the S-1 tiles in flight as iter_args; before a tile, an amdgcn.wait
        on its loads' tokens (the waits pass counts the loads issued after them, around
        the back edge too)."""
        cfg, kb = self.cfg, self.kb
        nt, S = cfg.k_tiles, cfg.stages
        ragged = cfg.k % cfg.tile_k != 0

        def mask(t: int) -> int | None:
            return t if ragged and t == nt - 1 else None

        pending: list[list] = []  # the tokens of each tile loaded and not yet waited for
        for t in range(min(S - 1, nt)):
            pending.append([])
            for item in self.dma_items(t % S, mask(t), t > 0, pending[-1]):
                item(kb)

        def tile(t: int) -> None:
            loads: list = []
            new: list = []
            if t + S - 1 < nt:
                loads = self.dma_items((t + S - 1) % S, mask(t + S - 1), True, new)
            kb.wait(*pending.pop(0))
            self.k_tile(t % S, None, loads=loads)
            if loads:
                pending.append(new)

        tile(0)
        groups = max(0, nt - S - 1) // S  # tiles 1.. whose loads are never the ragged last
        if groups:
            shape = [len(p) for p in pending]
            names = ("a", "b")
            carried = [v for op in names for v in self.g[op]] + \
                [tok for p in pending for tok in p]
            with kb.loop(0, groups, 1, iter_args=carried) as loop:
                _trip, args = loop
                self._take_carried(args, shape, pending)
                for t in range(1, S + 1):
                    tile(t)
                loop.yield_(*[v for op in names for v in self.g[op]],
                            *[tok for p in pending for tok in p])
            self._take_carried(list(loop.results), shape, pending)
        for t in range(1 + S * groups, nt):
            tile(t)
        self.store_c()
        kb.s_endpgm()

    def _take_carried(self, values: list, shape: list[int], pending: list[list]) -> None:
        """The global offsets (A, then B) and the pending tokens (tiles of `shape`) from the
        loop's arguments or results."""
        k = 0
        for op in ("a", "b"):
            n = len(self.g[op])
            self.g[op] = list(values[k:k + n])
            k += n
        pending.clear()
        for n in shape:
            pending.append(list(values[k:k + n]))
            k += n

    # --- the whole kernel -----------------------------------------------------------------

    def body(self) -> None:
        """Prologue, the K loop over pairs of tiles, the peeled last tiles, the C stores."""
        cfg, kb = self.cfg, self.kb
        nt = cfg.k_tiles
        ragged = cfg.k % cfg.tile_k != 0

        def mask(t: int) -> int | None:
            return t if ragged and t == nt - 1 else None

        stage = [self.load("a", None, mask(0)), self.load("b", None, mask(0))]
        for item in self.write_items("a", stage[0], 0) + self.write_items("b", stage[1], 0):
            item(kb)
        if nt > 1:
            self.advance("a")
            self.advance("b")
            stage = [self.load("a", stage[0], mask(1)), self.load("b", stage[1], mask(1))]
        # Tile t writes tile t+1 to LDS and loads tile t+2 (the loads of t <= nt-4 are never
        # ragged: the loop holds those).
        stage = self.k_tile(0, stage, nt > 1, nt > 2, mask(2))
        loop_tiles = max(0, nt - 4)
        pairs, single = divmod(loop_tiles, 2)
        if pairs and cfg.kloop == "scf":
            stage = self.pairs_scf(pairs, stage)
        elif pairs:
            count = kb.s_mov_b32(None, pairs)
            top = kb.label("k_loop")
            stage = self.k_tile(1, stage, True, True, None)
            stage = self.k_tile(0, stage, True, True, None)
            count = kb.s_sub_u32(count, count, 1)
            kb.s_cmp_lg_u32(count, 0)
            kb.s_cbranch_scc1(top)
            kb.label("k_tail")
        first_tail = 1 + 2 * pairs
        if single:
            stage = self.k_tile(1, stage, True, True, None)
            first_tail += 1
        for t in range(first_tail, nt):
            stage = self.k_tile(t % 2, stage, t + 1 < nt, t + 2 < nt, mask(t + 2))
        self.store_c()
        kb.s_endpgm()

    def pairs_scf(self, pairs: int, stage: list) -> list:
        """The register-staged K loop over pairs of tiles as an scf.for (`kloop=scf`): the
        global offsets and the staging registers are its iter_args (each yielded by the
        instruction that rewrites it: no copies); returns the staging registers after it."""
        kb = self.kb

        def carried(stage: list) -> list:
            return [*self.g_a, *self.g_b, *stage[0], *stage[1]]

        def take(values: list) -> list:
            na, nb, sa = len(self.g_a), len(self.g_b), len(stage[0])
            self.g_a, self.g_b = list(values[:na]), list(values[na:na + nb])
            rest = list(values[na + nb:])
            return [rest[:sa], rest[sa:]]

        with kb.loop(0, pairs, 1, iter_args=carried(stage)) as loop:
            _trip, args = loop
            inner = take(list(args))
            inner = self.k_tile(1, inner, True, True, None)
            inner = self.k_tile(0, inner, True, True, None)
            loop.yield_(*carried(inner))
        return take(list(loop.results))

    def store_c(self) -> None:
        """C from the accumulators, 16 (f32) or 8 bytes per lane and store; columns past N
        skipped."""
        cfg, kb = self.cfg, self.kb
        if cfg.c_dtype == "bf16" and not cfg.features.cvt_pk_bf16:
            self.round_bias = self.sconst(0x7FFF)
            self.pack_high = self.sconst(0x07060302)
        bm, bn = cfg.blocks
        groups = cfg.acc_regs // 4
        ragged_n = cfg.n % cfg.tile_n != 0
        for bi in range(bm):
            row_off = self.add(self.c_base, bi * cfg.block * cfg.n * cfg.c_bytes)
            for bj in range(bn):
                for g in range(groups):
                    col = bj * cfg.block + g * 4 * cfg.lane_groups
                    off = row_off
                    if ragged_n:
                        inside = kb.v_cmp_gt_i32(kb.sregs(2, align=2),
                                                 self.sconst(cfg.n - col), self.c_col)
                        off = kb.v_cndmask_b32(None, self.vconst(OUT_OF_RANGE), off, inside)
                    first = (bi * bn + bj) * cfg.acc_regs + 4 * g
                    acc = self.acc[first:first + 4]
                    if cfg.c_dtype == "f32":
                        kb.buffer_store_dwordx4(acc, off, self.rsrc["c"], 0, offen=True,
                                                offset=4 * col)
                    else:
                        kb.buffer_store_dwordx2(self.convert(acc), off, self.rsrc["c"], 0,
                                                offen=True, offset=2 * col)

    def convert(self, acc):
        """Four f32 accumulators -> four 16-bit C elements in two VGPRs (round to nearest
        even): v_cvt_pk_{f16,bf16}_f32 on gfx950; on gfx942 v_cvt_f16_f32 + v_pack_b32_f16,
        or for bf16 the rounding by hand (x + 0x7fff + bit 16 of x, high halves packed)."""
        cfg, kb = self.cfg, self.kb
        vals = [kb.v_accvgpr_read_b32(None, kb.sub(acc, r)) for r in range(4)]
        words = []
        for lo, hi in (vals[0:2], vals[2:4]):
            if cfg.c_dtype == "f16" and cfg.features.cvt_pk_f16:
                words.append(kb.v_cvt_pk_f16_f32(None, lo, hi))
            elif cfg.c_dtype == "bf16" and cfg.features.cvt_pk_bf16:
                words.append(kb.v_cvt_pk_bf16_f32(None, lo, hi))
            elif cfg.c_dtype == "f16":
                words.append(kb.v_pack_b32_f16(None, kb.v_cvt_f16_f32(None, lo),
                                               kb.v_cvt_f16_f32(None, hi)))
            else:
                lo, hi = (kb.v_add3_u32(None, x, kb.v_bfe_u32(None, x, 16, 1),
                                        self.round_bias) for x in (lo, hi))
                # bytes 3,2 of hi : bytes 3,2 of lo (v_perm selects from {src0, src1}).
                words.append(kb.v_perm_b32(None, hi, lo, self.pack_high))
        return kb.join(*words, align=2)

    def finish(self):
        """The module."""
        self.setup()
        if self.cfg.use_dma:
            self.body_dma_scf() if self.cfg.kloop == "scf" else self.body_dma()
        else:
            self.body()
        return self.kb.finish()


# ------------------------------------------------------------------------ data and reference


def _np_dtype(dtype: str):
    """NumPy storage type of an element type (bf16 as raw uint16)."""
    return np.float16 if dtype == "f16" else np.uint16


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits (round to nearest even), as uint16."""
    bits = x.astype(np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    """bf16 bits (uint16) -> float32."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_fp8(x: np.ndarray) -> np.ndarray:
    """float32 -> OCP e4m3 (gfx950 "fp8") codes as uint8 (round to nearest even)."""
    from asterism.emu.numerics import E4M3FN, encode

    return encode(np.asarray(x, np.float32), E4M3FN).astype(np.uint8)


def from_fp8(codes: np.ndarray) -> np.ndarray:
    """OCP e4m3 codes (uint8) -> float64."""
    from asterism.emu.numerics import E4M3FN, decode

    return np.asarray(decode(np.asarray(codes), E4M3FN), np.float64)


def _stored(cfg: GemmConfig, rows: int, cols: int, rng) -> np.ndarray:
    """A random rows x cols matrix (standard normal) as stored elements, drawn a block of
    rows at a time (the same values as one draw; the float temporaries stay small)."""
    dtype = {"fp8": np.uint8, "f16": np.float16, "bf16": np.uint16}[cfg.dtype]
    out = np.empty((rows, cols), dtype)
    step = max(1, REFERENCE_BLOCK_BYTES // (8 * max(1, cols)))
    for r0 in range(0, rows, step):
        x = rng.standard_normal((min(rows, r0 + step) - r0, cols)).astype(np.float32)
        out[r0:r0 + x.shape[0]] = to_fp8(x) if cfg.dtype == "fp8" else \
            x.astype(np.float16) if cfg.dtype == "f16" else to_bf16(x)
    return out


def _values(cfg: GemmConfig, stored: np.ndarray) -> np.ndarray:
    """Stored elements of A or B as float64 numbers."""
    if cfg.dtype == "fp8":
        return from_fp8(stored)
    if cfg.dtype == "f16":
        return stored.astype(np.float64)
    return from_bf16(stored).astype(np.float64)


def input_bytes(cfg: GemmConfig) -> int:
    """Host memory of the inputs, C (and the run's copy of it) and the check: A and B
    stored, C twice, the float64 reference and its rounding, the reference's blocks."""
    mn = cfg.m * cfg.n
    return (cfg.esize * (cfg.m * cfg.k + cfg.k * cfg.n) + 2 * cfg.c_bytes * mn
            + (8 + 4 + 4) * mn + 4 * REFERENCE_BLOCK_BYTES)


def make_inputs(cfg: GemmConfig) -> dict[str, np.ndarray]:
    """A and B (random, in the layout's storage order) and a zero C, checked against the
    memory budget first."""
    from asterism.support.limits import check_memory

    check_memory(input_bytes(cfg), f"the arguments and reference of gemm (m {cfg.m}, n "
                 f"{cfg.n}, k {cfg.k}, {cfg.dtype})", hint="use a smaller problem")
    rng = np.random.default_rng(cfg.seed)
    a_st = _stored(cfg, cfg.m, cfg.k, rng)
    b_st = _stored(cfg, cfg.k, cfg.n, rng)
    a_arg = a_st if cfg.layout[0] == "n" else np.ascontiguousarray(a_st.T)
    del a_st
    b_arg = b_st if cfg.layout[1] == "n" else np.ascontiguousarray(b_st.T)
    del b_st
    c = np.zeros((cfg.m, cfg.n), np.float32 if cfg.c_dtype == "f32" else
                 _np_dtype(cfg.c_dtype))
    return {"a": a_arg, "b": b_arg, "c": c}


def reference_c(cfg: GemmConfig, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A x B in float64 from the stored A [M][K] and B [K][N] (views of the arguments),
    rounded as the kernel stores C; in blocks of rows and columns, so the float64 operands
    in flight stay under REFERENCE_BLOCK_BYTES each."""
    out = np.empty((cfg.m, cfg.n), np.float32)
    rows = max(1, REFERENCE_BLOCK_BYTES // (8 * cfg.k))
    cols = max(1, REFERENCE_BLOCK_BYTES // (8 * cfg.k))
    for c0 in range(0, cfg.n, cols):
        b_val = _values(cfg, b[:, c0:c0 + cols])
        for r0 in range(0, cfg.m, rows):
            out[r0:r0 + rows, c0:c0 + cols] = round_c(_values(cfg, a[r0:r0 + rows]) @ b_val,
                                                      cfg.c_dtype)
    return out


def round_c(x: np.ndarray, c_dtype: str) -> np.ndarray:
    """C values as the kernel stores them: f32, then rounded to f16/bf16 (nearest even);
    returned as numbers (float32)."""
    x = np.asarray(x).astype(np.float32)
    if c_dtype == "f16":
        return x.astype(np.float16).astype(np.float32)
    if c_dtype == "bf16":
        return from_bf16(to_bf16(x))
    return x


def build_case(target: str, params: dict[str, Any]) -> KernelCase:
    """The GEMM case: module and geometry; its inputs (in the layout's storage order) and
    reference are made when a run or a check first needs them."""
    cfg = config(target, params)
    module = _GemmWriter(cfg).finish()
    args = LazyArgs(("a", "b", "c"), lambda: make_inputs(cfg))

    def reference() -> dict[str, np.ndarray]:
        a = args["a"] if cfg.layout[0] == "n" else args["a"].T
        b = args["b"] if cfg.layout[1] == "n" else args["b"].T
        return {"c": reference_c(cfg, a, b)}

    # Products of f16/bf16/fp8 are exact in f32; the f32 sums of K of them (of size about
    # sqrt(K) for standard normal inputs) may round K times: K ulps of sqrt(K). A 16-bit C
    # rounds once more: the kernel's sum and the exact one may round to neighbours (1 ulp).
    atol = 2 * np.finfo(np.float32).eps * cfg.k * math.sqrt(cfg.k)
    rtol = {"f32": 1e-5, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}[cfg.c_dtype]
    return KernelCase(
        name="gemm", target=target, params=dict(params), module=module,
        kernel=f"gemm_{cfg.dtype}_{cfg.layout}", grid=cfg.grid, block=(cfg.threads, 1, 1),
        args=args, outputs=("c",), reference=reference,
        atol=float(atol), rtol=rtol, flops=2 * cfg.m * cfg.n * cfg.k,
        decode=(lambda name, x: from_bf16(x)) if cfg.c_dtype == "bf16" else None,
        notes={"mfma": cfg.mfma_name, "lds_bytes": cfg.lds_bytes, "k_tiles": cfg.k_tiles,
               "dma": cfg.use_dma, "lds_stages": cfg.stages,
               "pipeline": DMA_PIPELINE if cfg.use_dma else "auto",
               "accumulators": cfg.blocks[0] * cfg.blocks[1] * cfg.acc_regs,
               "wave_grid": cfg.wave_grid})


GEMM = register(KernelGenerator(
    name="gemm",
    description="C = A x B (f16/bf16/fp8 in, f32/f16/bf16 out): multi-wave MFMA tiles, LDS "
                "double buffering, ragged edges",
    targets=TARGETS,
    params=PARAMS,
    build_case=build_case,
    shape=Shape((("M", "m"), ("N", "n"), ("K", "k")), "1024x1024x1024"),
))

__all__ = ["GEMM", "GemmConfig", "KernelParamError", "build_case", "config", "from_bf16",
           "from_fp8", "round_c", "to_bf16", "to_fp8"]
