"""Chip facts as data: the `Target` record, loaded from `target/data/<processor>.json`.

Every number here comes from the JSON files; adding a processor (gfx90a, gfx1201) means adding
a JSON file, not code. Where each fact comes from (checked against LLVM 22, see
tests/test_target.py for the oracle tests):

* `wave_size`, `simds_per_cu`, `max_waves_per_simd`, `max_workgroups_per_cu`: LLVM 22
  AMDGPUBaseInfo (getWavefrontSize, getEUsPerCU = 4, getMaxWavesPerEU = 8 for GFX90A-class
  chips, getMaxWorkGroupsPerCU: 16 barriers per CU); checked through `llc`'s "; Occupancy:".
* `products`: AMD product data sheets (MI300X 304 CUs, MI300A 228, MI325X 304; MI355X and
  MI350X 256). `peak_tflops`: the data sheets' peak dense (no sparsity) matrix figures:
  MI300X / MI325X FP16 and BF16 1307.4 TFLOPS, MI300A 980.6 (= CUs x peak clock x 2048
  flops per clock per CU on CDNA3); MI355X FP16/BF16 2.5 PFLOPS (2516.6 = 256 CUs x 2400
  MHz x 4096 flops per clock per CU on CDNA4), MI350X 2.3 PFLOPS (2306.9 at 2200 MHz);
  their OCP FP8 figures are twice that: 5.0 PFLOPS (5033.2) and 4.6 PFLOPS (4613.7).
  `load_clock_mhz`: the engine clock under dense MFMA load, where a figure exists: MI300X
  1207 and MI325X 1447 MHz measured by AMD (ROCm blog "Measuring Max-Achievable FLOPs" part 2,
  Feb 2025: hipBLASLt bf16 GEMM 4096x4864x32896, median engine clock); MI355X 1615 MHz
  estimated (no measured clock is published): mamf-finder's 1565.0 TFLOPS bf16 matmul on
  MI355X (stas00/ml-engineering, compute/accelerator/README.md, ROCm 7.0.2) over 256 CUs x
  4096 flops per clock at the 92.39 % MFMA efficiency hipblaslt-bench reports for that
  kind of GEMM on gfx950 (ROCm/rocm-libraries PR #4026); 1565.0 TFLOPS alone needs at least
  1492 MHz. MI350X and MI300A: none found (0).
* `max_scratch_per_lane`: the most private (scratch) memory a work-item of a wave64 kernel
  can have, 131056 bytes: SPI_TMPRING_SIZE.WAVESIZE is 13 bits in units of 1 KiB per wave
  (8191 KiB / 64 lanes); LLVM 22's llc rejects a larger stack on gfx942 and gfx950
  ("stack frame size (...) exceeds limit (131056)"; llvm/test/CodeGen/AMDGPU/
  stack-size-overflow.ll).
* `lds`: AMDGPUUsage "Memory Spaces" / LLVM's addressable-local-memory-size feature (64 KiB on
  gfx942, 160 KiB on gfx950); the allocation granule is the unit LLVM 22 encodes
  COMPUTE_PGM_RSRC2.LDS_SIZE in (`llc -mtriple=amdgcn-mesa-mesa3d` prints it as
  granulated_lds_size: 512 bytes on gfx942, 2048 bytes on gfx950).
* `vgpr`: AMDGPUUsage "Register numbering" and "Kernel descriptor" (GFX90A+: unified 512-entry
  VGPR/AGPR file per lane, ArchVGPRs then AccVGPRs from ACCUM_OFFSET, granule 8), checked by
  assembling `.amdhsa_next_free_vgpr`/`.amdhsa_accum_offset` with llvm-mc.
* `sgpr`: AMDGPUUsage (102 addressable SGPRs on GFX8-GFX9 plus VCC, FLAT_SCRATCH, XNACK_MASK),
  the SGPR file of 800 per SIMD behind LLVM's getOccupancyWithNumSGPRs, and the encoding
  granule 8 that llvm-mc uses for GRANULATED_WAVEFRONT_SGPR_COUNT.
* `elf`: AMDGPUUsage "ELF Header" (EF_AMDGPU_MACH_AMDGCN_GFX942 = 0x04c, GFX950 = 0x04f;
  both support the xnack and sramecc target features).
* `descriptor_defaults`: the values llvm-mc 22 puts in a kernel descriptor when the
  `.amdhsa_*` directive is absent (FLOAT_DENORM_MODE_16_64 = 3, DX10_CLAMP = 1,
  IEEE_MODE = 1).
"""

from __future__ import annotations

import json
import os
from dataclasses import MISSING, dataclass, replace
from functools import cache
from typing import Any

from asterism.errors import TargetError, shown
from asterism.version import package_file

# The triple every HSA code object for these chips uses (AMDGPUUsage "Target Triples").
HSA_TRIPLE = "amdgcn-amd-amdhsa"


@dataclass(frozen=True)
class Product:
    """A shipping part built on the processor (name, enabled compute units and the data
    sheet's peak dense matrix TFLOPS per element type, where recorded)."""

    name: str
    compute_units: int
    peak_tflops: tuple[tuple[str, float], ...] = ()
    # The engine clock the part holds under dense MFMA load (MHz; 0: none published) and
    # where that figure comes from: power management lowers the clock well below the peak
    # when the matrix cores are busy (AMD, "Measuring Max-Achievable FLOPs", part 2).
    load_clock_mhz: int = 0
    load_clock_source: str = ""

    def peak(self, dtype: str) -> float | None:
        """The data sheet's peak dense TFLOPS for `dtype` (e.g. "f16"), or None."""
        return dict(self.peak_tflops).get(dtype)


@dataclass(frozen=True)
class LdsFacts:
    """Local data share: per-workgroup limit, per-CU capacity and allocation granule (bytes)."""

    bytes_per_workgroup: int
    bytes_per_cu: int
    alloc_granule: int


@dataclass(frozen=True)
class VgprFacts:
    """Vector registers per lane: ArchVGPRs, AccVGPRs (AGPRs), the unified file and granules."""

    arch: int
    acc: int
    unified_per_lane: int
    alloc_granule: int
    encoding_granule: int
    accum_offset_granule: int


@dataclass(frozen=True)
class SgprFacts:
    """Scalar registers per wave, the SIMD's SGPR file and the extra SGPRs the hardware adds."""

    addressable: int
    per_simd: int
    encoding_granule: int
    vcc: int
    xnack_mask: int
    flat_scratch: int
    architected_flat_scratch: bool


@dataclass(frozen=True)
class ElfFacts:
    """ELF identity: EF_AMDGPU_MACH value and which target features e_flags can carry."""

    mach: int
    xnack: bool
    sramecc: bool


@dataclass(frozen=True)
class Target:
    """One processor plus its target-ID feature settings (xnack/sramecc: True, False or
    None = any)."""

    name: str
    architecture: str
    generation: str
    products: tuple[Product, ...]
    flagship: str
    wave_size: int
    simds_per_cu: int
    max_waves_per_simd: int
    max_workgroups_per_cu: int
    max_workgroup_size: int
    max_scratch_per_lane: int
    lds: LdsFacts
    vgpr: VgprFacts
    sgpr: SgprFacts
    elf: ElfFacts
    descriptor_defaults: tuple[tuple[str, int], ...] = ()
    xnack: bool | None = None
    sramecc: bool | None = None

    @property
    def compute_units(self) -> int:
        """Compute units of the flagship part (e.g. 304 for MI300X)."""
        return self.product(self.flagship).compute_units

    @property
    def max_waves_per_cu(self) -> int:
        """Wave slots per CU (max waves per SIMD times SIMDs per CU)."""
        return self.max_waves_per_simd * self.simds_per_cu

    @property
    def max_waves_per_workgroup(self) -> int:
        """Most waves one workgroup can have (max workgroup size / wave size)."""
        return self.max_workgroup_size // self.wave_size

    @property
    def xnack_enabled(self) -> bool:
        """True if memory instructions may be replayed after an XNACK page fault: the chip
        supports xnack and the target ID says xnack+ or leaves it as "any" (LLVM's
        isXNACKEnabled, which code for "any" must assume: it may run with XNACK on)."""
        return self.elf.xnack and self.xnack is not False

    @property
    def target_id(self) -> str:
        """The full target ID, e.g. "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"."""
        return f"{HSA_TRIPLE}--{self.processor_id}"

    @property
    def processor_id(self) -> str:
        """Processor plus explicit features in LLVM's order, e.g. "gfx942:sramecc+:xnack-"."""
        text = self.name
        # LLVM prints target-ID features sorted by name: sramecc before xnack.
        if self.sramecc is not None:
            text += ":sramecc" + ("+" if self.sramecc else "-")
        if self.xnack is not None:
            text += ":xnack" + ("+" if self.xnack else "-")
        return text

    def product(self, name: str) -> Product:
        """The product called `name` (e.g. "MI300A"); TargetError if this chip has none."""
        for prod in self.products:
            if prod.name.lower() == name.lower():
                return prod
        names = ", ".join(p.name for p in self.products)
        raise TargetError(f"{self.name} has no product {name!r}; known products: {names}")

    def with_features(
        self, *, xnack: bool | None | str = "keep", sramecc: bool | None | str = "keep"
    ) -> Target:
        """A copy with other xnack/sramecc settings (None = any); TargetError if unsupported."""
        new_xnack = self.xnack if xnack == "keep" else xnack
        new_sramecc = self.sramecc if sramecc == "keep" else sramecc
        if new_xnack is not None and not self.elf.xnack:
            raise TargetError(f"{self.name} does not support the xnack feature")
        if new_sramecc is not None and not self.elf.sramecc:
            raise TargetError(f"{self.name} does not support the sramecc feature")
        return replace(self, xnack=new_xnack, sramecc=new_sramecc)  # type: ignore[arg-type]

    def descriptor_default(self, name: str) -> int:
        """Default value llvm-mc uses for a kernel-descriptor bit field (0 if none recorded)."""
        return dict(self.descriptor_defaults).get(name, 0)


_DATA_FOLDER = ("target", "data")  # (in the package: version.package_file)


@cache
def known_targets() -> tuple[str, ...]:
    """Names of the processors described in target/data (e.g. ("gfx942", "gfx950"))."""
    names = os.listdir(package_file(*_DATA_FOLDER))
    return tuple(sorted(name[:-5] for name in names if name.endswith(".json")))


def _take(data: dict[str, Any], key: str, where: str) -> Any:
    try:
        return data.pop(key)
    except KeyError:
        raise TargetError(f"{where}: missing key {key!r}") from None


def _group(cls: type, data: dict[str, Any], where: str) -> Any:
    """Build a facts dataclass from a JSON object, rejecting missing (unless the field has a
    default) and unknown keys; JSON objects become sorted (key, value) tuples."""
    data = dict(data)
    kwargs = {}
    for name, fld in cls.__dataclass_fields__.items():
        if name not in data and fld.default is not MISSING:
            continue
        value = _take(data, name, where)
        kwargs[name] = tuple(sorted(value.items())) if isinstance(value, dict) else value
    if data:
        raise TargetError(f"{where}: unknown keys {sorted(data)}")
    return cls(**kwargs)


@cache
def processor_facts(name: str) -> Target:
    """The Target for a processor name from target/data (no features set; cached)."""
    if name not in known_targets():  # (before the name becomes a path: it may come from input)
        raise _unknown(name)
    where = f"target/data/{name}.json"
    with open(package_file(*_DATA_FOLDER, f"{name}.json"), encoding="utf-8") as f:
        raw = json.load(f)
    elf = dict(_take(raw, "elf", where))
    elf["mach"] = int(elf["mach"], 0) if isinstance(elf.get("mach"), str) else elf.get("mach")
    target = Target(
        name=_take(raw, "name", where),
        architecture=_take(raw, "architecture", where),
        generation=_take(raw, "generation", where),
        products=tuple(_group(Product, p, where) for p in _take(raw, "products", where)),
        flagship=_take(raw, "flagship", where),
        wave_size=_take(raw, "wave_size", where),
        simds_per_cu=_take(raw, "simds_per_cu", where),
        max_waves_per_simd=_take(raw, "max_waves_per_simd", where),
        max_workgroups_per_cu=_take(raw, "max_workgroups_per_cu", where),
        max_workgroup_size=_take(raw, "max_workgroup_size", where),
        max_scratch_per_lane=_take(raw, "max_scratch_per_lane", where),
        lds=_group(LdsFacts, _take(raw, "lds", where), where + " lds"),
        vgpr=_group(VgprFacts, _take(raw, "vgpr", where), where + " vgpr"),
        sgpr=_group(SgprFacts, _take(raw, "sgpr", where), where + " sgpr"),
        elf=_group(ElfFacts, elf, where + " elf"),
        descriptor_defaults=tuple(sorted(_take(raw, "descriptor_defaults", where).items())),
    )
    if raw:
        raise TargetError(f"{where}: unknown keys {sorted(raw)}")
    if target.name != name:
        raise TargetError(f"{where}: file describes {target.name!r}")
    target.product(target.flagship)  # the flagship must be one of the products
    return target


def _unknown(name: object) -> TargetError:
    return TargetError.unknown(name, known_targets())


def _parse_features(processor: str, features: list[str], original: str) -> dict[str, bool]:
    settings: dict[str, bool] = {}
    for feat in features:
        if len(feat) < 2 or feat[-1] not in "+-":
            raise TargetError(
                f"bad target feature {shown(feat)} in {shown(original)}: expected e.g. "
                "'xnack+' or 'sramecc-'"
            )
        fname, on = feat[:-1], feat[-1] == "+"
        if fname not in ("xnack", "sramecc"):
            raise TargetError(
                f"unknown target feature {shown(fname)} in {shown(original)}; known: sramecc, "
                "xnack"
            )
        if fname in settings:
            raise TargetError(f"target feature {shown(fname)} given twice in {shown(original)}")
        settings[fname] = on
    return settings


def get_target(name: str | Target) -> Target:
    """The Target for "gfx942", "gfx950:xnack-" or "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"."""
    if isinstance(name, Target):
        return name
    if not isinstance(name, str) or not name.strip():
        shown_name = shown(name) if isinstance(name, str) else repr(name)
        raise TargetError(f"bad target name {shown_name}; known targets: "
                          f"{', '.join(known_targets())}")
    text = name.strip()
    proc_part = text
    if "--" in text:
        # Target ID: <triple>--<processor>[:feature±]...; the environment component is empty.
        triple, proc_part = text.rsplit("--", 1)
        # Offload bundles prefix the triple with a kind ("hipv4-amdgcn-amd-amdhsa").
        if "amdgcn" not in triple.split("-"):
            raise TargetError(f"{shown(text)} is not an AMDGPU target (triple {shown(triple)})")
    elif text.count("-") >= 2:
        raise TargetError(
            f"cannot read target {shown(text)}: expected a processor such as 'gfx942' or a "
            "target ID such as 'amdgcn-amd-amdhsa--gfx942:xnack-'"
        )
    processor, *features = proc_part.split(":")
    processor = processor.lower()
    if processor not in known_targets():
        raise _unknown(processor)
    settings = _parse_features(processor, features, text)
    return processor_facts(processor).with_features(
        xnack=settings.get("xnack"), sramecc=settings.get("sramecc")
    )


__all__ = [
    "HSA_TRIPLE",
    "ElfFacts",
    "LdsFacts",
    "Product",
    "SgprFacts",
    "Target",
    "VgprFacts",
    "get_target",
    "known_targets",
    "processor_facts",
]
