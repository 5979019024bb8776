"""asterism.target: chip facts (registers, LDS, waves, occupancy, ELF identity) as data.

Every fact lives once, in `target/data/<processor>.json`; this package loads it into a frozen
`Target` and derives the encodings (kernel-descriptor register fields, e_flags) and occupancy
from it. See chip.py for where each fact comes from.
"""

from asterism.target.chip import (
    HSA_TRIPLE,
    ElfFacts,
    LdsFacts,
    Product,
    SgprFacts,
    Target,
    VgprFacts,
    get_target,
    known_targets,
)
from asterism.target.elf import (
    CODE_OBJECT_VERSIONS,
    DEFAULT_CODE_OBJECT_VERSION,
    ELFOSABI_AMDGPU_HSA,
    EM_AMDGPU,
    METADATA_VERSION,
    ElfTarget,
    abi_version,
    code_object_version,
    decode_e_flags,
    encode_e_flags,
    target_for_mach,
)
from asterism.target.occupancy import Occupancy, occupancy
from asterism.target.registers import (
    accum_offset,
    accum_offset_field,
    accum_offset_from_field,
    align_up,
    check_register_budget,
    extra_sgprs,
    granulated_sgpr_count,
    granulated_vgpr_count,
    lds_granules,
    sgprs_from_granulated,
    total_sgprs,
    total_vgprs,
    vgprs_from_granulated,
)

__all__ = [
    "CODE_OBJECT_VERSIONS",
    "DEFAULT_CODE_OBJECT_VERSION",
    "ELFOSABI_AMDGPU_HSA",
    "EM_AMDGPU",
    "HSA_TRIPLE",
    "METADATA_VERSION",
    "ElfFacts",
    "ElfTarget",
    "LdsFacts",
    "Occupancy",
    "Product",
    "SgprFacts",
    "Target",
    "VgprFacts",
    "abi_version",
    "accum_offset",
    "accum_offset_field",
    "accum_offset_from_field",
    "align_up",
    "check_register_budget",
    "code_object_version",
    "decode_e_flags",
    "encode_e_flags",
    "extra_sgprs",
    "get_target",
    "granulated_sgpr_count",
    "granulated_vgpr_count",
    "known_targets",
    "lds_granules",
    "occupancy",
    "sgprs_from_granulated",
    "target_for_mach",
    "total_sgprs",
    "total_vgprs",
    "vgprs_from_granulated",
]
