"""ELF identity of AMDGPU code objects: e_machine, OS ABI, ABI version and e_flags.

From AMDGPUUsage "ELF Code Object" ("ELF Header", "AMDGPU ELF Header e_flags"), checked in
tests/test_target.py against the headers llvm-mc 22 writes for each code object version and
target-ID feature combination:

* e_machine EM_AMDGPU = 224; EI_OSABI ELFOSABI_AMDGPU_HSA = 64.
* EI_ABIVERSION: code object v2 -> 0, v3 -> 1, v4 -> 2, v5 -> 3, v6 -> 4.
* e_flags bits 0-7: EF_AMDGPU_MACH (the processor, e.g. 0x04c gfx942, 0x04f gfx950).
* v3: bit 8 EF_AMDGPU_FEATURE_XNACK_V3, bit 9 EF_AMDGPU_FEATURE_SRAMECC_V3 (on/off only).
* v4+: bits 8-9 EF_AMDGPU_FEATURE_XNACK_V4 and bits 10-11 EF_AMDGPU_FEATURE_SRAMECC_V4, each
  0 unsupported, 1 any, 2 off, 3 on.
* v6: bits 24-31 EF_AMDGPU_GENERIC_VERSION (0 for a specific processor such as gfx942).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from asterism.errors import TargetError
from asterism.target.chip import Target, get_target, known_targets, processor_facts

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
ELFOSABI_AMDGPU_PAL = 65
ELFOSABI_AMDGPU_MESA3D = 66

DEFAULT_CODE_OBJECT_VERSION = 5
CODE_OBJECT_VERSIONS = (3, 4, 5, 6)
_ABI_VERSION = {2: 0, 3: 1, 4: 2, 5: 3, 6: 4}

# The amdhsa.version the metadata note carries for each code object version (llc 22 output).
METADATA_VERSION = {3: (1, 0), 4: (1, 1), 5: (1, 2), 6: (1, 2)}

EF_AMDGPU_MACH = 0x0FF
EF_AMDGPU_FEATURE_XNACK_V3 = 0x100
EF_AMDGPU_FEATURE_SRAMECC_V3 = 0x200
EF_AMDGPU_FEATURE_XNACK_V4 = 0x300
EF_AMDGPU_FEATURE_SRAMECC_V4 = 0xC00
EF_AMDGPU_GENERIC_VERSION = 0xFF000000
EF_AMDGPU_GENERIC_VERSION_OFFSET = 24

# v4+ two-bit feature states, in XNACK position; SRAMECC uses the same values shifted by 2.
_UNSUPPORTED, _ANY, _OFF, _ON = 0, 1, 2, 3
_XNACK_SHIFT, _SRAMECC_SHIFT = 8, 10


def abi_version(code_object_version: int) -> int:
    """EI_ABIVERSION byte for a code object version (v4 -> 2, v5 -> 3, v6 -> 4)."""
    try:
        return _ABI_VERSION[code_object_version]
    except KeyError:
        raise TargetError(
            f"unknown code object version {code_object_version!r}; known: 2, 3, 4, 5, 6"
        ) from None


def code_object_version(abi: int) -> int:
    """Code object version for an EI_ABIVERSION byte (2 -> v4, 3 -> v5, 4 -> v6)."""
    for version, byte in _ABI_VERSION.items():
        if byte == abi:
            return version
    raise TargetError(f"unknown AMDGPU HSA ABI version {abi!r}; known: 0..4 (code object v2..v6)")


@dataclass(frozen=True)
class ElfTarget:
    """What e_flags says: the target (with its xnack/sramecc settings) and generic version."""

    target: Target
    xnack: bool | None
    sramecc: bool | None
    generic_version: int = 0


def _state(setting: bool | None, supported: bool) -> int:
    if not supported:
        return _UNSUPPORTED
    if setting is None:
        return _ANY
    return _ON if setting else _OFF


def encode_e_flags(
    target: Target | str,
    *,
    code_object_version: int = DEFAULT_CODE_OBJECT_VERSION,
    xnack: bool | None | str = "target",
    sramecc: bool | None | str = "target",
) -> int:
    """e_flags for a target; xnack/sramecc default to the target ID's settings (None = any)."""
    target = get_target(target)
    xnack_set = target.xnack if xnack == "target" else xnack
    sramecc_set = target.sramecc if sramecc == "target" else sramecc
    if xnack_set is not None and not target.elf.xnack:
        raise TargetError(f"{target.name} does not support xnack")
    if sramecc_set is not None and not target.elf.sramecc:
        raise TargetError(f"{target.name} does not support sramecc")
    flags = target.elf.mach
    if code_object_version == 3:
        # v3 can only say "on"; any and off both encode as 0.
        flags |= EF_AMDGPU_FEATURE_XNACK_V3 if xnack_set else 0
        flags |= EF_AMDGPU_FEATURE_SRAMECC_V3 if sramecc_set else 0
        return flags
    abi_version(code_object_version)
    if code_object_version < 3:
        raise TargetError(f"code object v{code_object_version} has no e_flags encoding here")
    flags |= _state(xnack_set, target.elf.xnack) << _XNACK_SHIFT  # type: ignore[arg-type]
    flags |= _state(sramecc_set, target.elf.sramecc) << _SRAMECC_SHIFT  # type: ignore[arg-type]
    return flags


@cache
def _by_mach() -> dict[int, str]:
    return {processor_facts(name).elf.mach: name for name in known_targets()}


def target_for_mach(mach: int) -> Target:
    """The Target whose EF_AMDGPU_MACH is `mach` (TargetError if none is known)."""
    name = _by_mach().get(mach)
    if name is None:
        raise TargetError(
            f"unknown EF_AMDGPU_MACH 0x{mach:03x}; known targets: "
            + ", ".join(f"{n} (0x{processor_facts(n).elf.mach:03x})" for n in known_targets())
        )
    return processor_facts(name)


def decode_e_flags(e_flags: int, *, code_object_version: int = DEFAULT_CODE_OBJECT_VERSION
                   ) -> ElfTarget:
    """Split e_flags into (target with xnack/sramecc settings, xnack, sramecc, generic version)."""
    target = target_for_mach(e_flags & EF_AMDGPU_MACH)
    if code_object_version == 3:
        xnack: bool | None = bool(e_flags & EF_AMDGPU_FEATURE_XNACK_V3)
        sramecc: bool | None = bool(e_flags & EF_AMDGPU_FEATURE_SRAMECC_V3)
        if not target.elf.xnack:
            xnack = None
        if not target.elf.sramecc:
            sramecc = None
        generic = 0
    else:
        states = {_UNSUPPORTED: None, _ANY: None, _OFF: False, _ON: True}
        xnack = states[(e_flags >> _XNACK_SHIFT) & 3]
        sramecc = states[(e_flags >> _SRAMECC_SHIFT) & 3]
        generic = (e_flags & EF_AMDGPU_GENERIC_VERSION) >> EF_AMDGPU_GENERIC_VERSION_OFFSET
        if code_object_version < 6 and generic:
            raise TargetError(
                f"e_flags 0x{e_flags:x} sets a generic version, which needs code object v6"
            )
    try:
        with_features = target.with_features(xnack=xnack, sramecc=sramecc)
    except TargetError as exc:
        raise TargetError(f"e_flags 0x{e_flags:x}: {exc.message}") from None
    return ElfTarget(with_features, xnack, sramecc, generic)
