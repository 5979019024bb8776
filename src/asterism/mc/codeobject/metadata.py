"""The NT_AMDGPU_METADATA note: a MessagePack map (AMDGPUUsage "Code Object V3+ Metadata").

Decoding keeps the key order of the file (Python dicts are ordered) and re-encoding uses the
smallest MessagePack forms, the same choices LLVM's msgpack writer makes, so
encode_metadata(decode_metadata(b)) == b for LLVM-written notes (tests check the samples).
LLVM writes map keys sorted; encode_metadata keeps the caller's order unless sort_keys=True.
"""

from __future__ import annotations

from typing import Any

import msgpack

from asterism.errors import CodeObjectError
from asterism.mc.codeobject.descriptor import KernelDescriptor
from asterism.mc.codeobject.schema import check_metadata
from asterism.target import METADATA_VERSION, Target, get_target

NOTE_OWNER = "AMDGPU"
NT_AMDGPU_METADATA = 32


def decode_metadata(desc: bytes) -> dict[str, Any]:
    """Decode the note's MessagePack descriptor into a dict, checked against the metadata
    schema (CodeObjectError if malformed, MetadataError naming a bad field)."""
    try:
        # (msgpack's unpacker limits nesting itself, to 1024 levels: StackError; the schema
        # then allows far fewer)
        meta = msgpack.unpackb(desc, raw=False, strict_map_key=False, use_list=True)
    # Bad input raises ValueError subclasses (ExtraData, FormatError, StackError, bad UTF-8),
    # TypeError (unhashable map key), OverflowError or RecursionError (nesting past Python's
    # own limit in the pure-Python unpacker).
    except (ValueError, TypeError, OverflowError, RecursionError,
            msgpack.UnpackException) as exc:
        raise CodeObjectError(f"AMDGPU metadata note is not valid MessagePack: {exc}") from None
    if not isinstance(meta, dict):
        raise CodeObjectError(
            f"AMDGPU metadata note must hold a map, found {type(meta).__name__}"
        )
    check_metadata(meta)
    return meta


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_sorted(v) for v in value]
    return value


def encode_metadata(meta: dict[str, Any], *, sort_keys: bool = False) -> bytes:
    """Encode metadata as MessagePack (sort_keys=True orders maps as LLVM does)."""
    if sort_keys:
        meta = _sorted(meta)
    try:
        return msgpack.packb(meta, use_bin_type=True)
    except (ValueError, TypeError, OverflowError) as exc:
        raise CodeObjectError(f"metadata cannot be encoded as MessagePack: {exc}") from None


def kernel_entries(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The amdhsa.kernels list (empty if absent); CodeObjectError if it is not a list of maps."""
    kernels = meta.get("amdhsa.kernels", [])
    if not isinstance(kernels, list) or not all(isinstance(k, dict) for k in kernels):
        raise CodeObjectError("metadata amdhsa.kernels must be a list of maps")
    return kernels


def find_kernel_metadata(meta: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The amdhsa.kernels entry whose .symbol is name.kd (or whose .name is name)."""
    kernels = kernel_entries(meta)
    for entry in kernels:
        if entry.get(".symbol") == name + ".kd":
            return entry
    for entry in kernels:
        if entry.get(".name") == name:
            return entry
    return None


def make_kernel_metadata(
    name: str,
    *,
    kernarg_segment_size: int,
    group_segment_fixed_size: int = 0,
    private_segment_fixed_size: int = 0,
    kernarg_segment_align: int = 8,
    wavefront_size: int = 64,
    sgpr_count: int,
    vgpr_count: int,
    agpr_count: int | None = None,
    max_flat_workgroup_size: int = 1024,
    args: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One amdhsa.kernels entry with the keys AMDGPUUsage requires, sorted as LLVM sorts them.

    Extra keyword arguments add keys with a leading dot (reqd_workgroup_size=[256, 1, 1]
    becomes ".reqd_workgroup_size").
    """
    entry: dict[str, Any] = {
        ".args": [dict(sorted(a.items())) for a in args or []],
        ".group_segment_fixed_size": group_segment_fixed_size,
        ".kernarg_segment_align": kernarg_segment_align,
        ".kernarg_segment_size": kernarg_segment_size,
        ".max_flat_workgroup_size": max_flat_workgroup_size,
        ".name": name,
        ".private_segment_fixed_size": private_segment_fixed_size,
        ".sgpr_count": sgpr_count,
        ".symbol": name + ".kd",
        ".vgpr_count": vgpr_count,
        ".wavefront_size": wavefront_size,
    }
    if agpr_count is not None:
        entry[".agpr_count"] = agpr_count
    for key, value in extra.items():
        entry["." + key.lstrip(".")] = value
    return dict(sorted(entry.items()))


def kernel_metadata_from_descriptor(
    name: str, descriptor: KernelDescriptor, target: Target | str, **overrides: Any
) -> dict[str, Any]:
    """A minimal amdhsa.kernels entry derived from a kernel descriptor (no .args).

    Segment sizes come from the descriptor, .vgpr_count/.sgpr_count are its granulated
    allocations (the unified VGPR file and SGPRs with VCC/FLAT_SCRATCH/XNACK_MASK, as LLVM
    reports them), .max_flat_workgroup_size is 1024 and .kernarg_segment_align 8 unless
    overridden (keyword arguments as in make_kernel_metadata).
    """
    target = get_target(target)
    values: dict[str, Any] = {
        "kernarg_segment_size": descriptor.kernarg_size,
        "group_segment_fixed_size": descriptor.group_segment_fixed_size,
        "private_segment_fixed_size": descriptor.private_segment_fixed_size,
        "wavefront_size": target.wave_size,
        "sgpr_count": descriptor.sgprs(target),
        "vgpr_count": descriptor.next_free_vgpr(target),
    }
    values.update(overrides)
    return make_kernel_metadata(name, **values)


def make_metadata(
    kernels: list[dict[str, Any]],
    target: Target | str,
    *,
    code_object_version: int = 5,
) -> dict[str, Any]:
    """A whole metadata map: amdhsa.kernels, amdhsa.target and amdhsa.version (LLVM's order)."""
    target = get_target(target)
    try:
        version = METADATA_VERSION[code_object_version]
    except KeyError:
        raise CodeObjectError(
            f"no metadata version known for code object v{code_object_version}"
        ) from None
    return {
        "amdhsa.kernels": list(kernels),
        "amdhsa.target": target.target_id,
        "amdhsa.version": list(version),
    }
