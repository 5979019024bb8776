"""The AMDGPU metadata schema: every key's type and range, checked when metadata is read.

One table (AMDGPUUsage "Code Object V3 Metadata" and its v4/v5 additions) serves both
readers: the NT_AMDGPU_METADATA note of a code object (MessagePack) and the
`.amdgpu_metadata` block of an assembly file (YAML). Metadata comes from files made
elsewhere, so before anything is built from it:

* nesting is at most MAX_DEPTH levels, strings at most MAX_STRING characters, lists at most
  MAX_ITEMS entries, map keys are strings and values are booleans, integers, floats, strings,
  lists or maps (no nil, no binary);
* every known key has its type and range: sizes, offsets and counts are unsigned 32-bit,
  `.access` and friends one of their names, `.wavefront_size` 32 or 64...;
* every kernel argument lies inside its kernel's kernarg segment, whose size is at most
  MAX_KERNARG_SEGMENT_SIZE.

Keys the table does not know are kept (vendor extensions), within the general limits.
A violation is a MetadataError naming the field, e.g.
`amdhsa.kernels[0].args[2].offset: 4294967295 + size 8 runs past the kernarg segment (336
bytes, .kernarg_segment_size)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from asterism.errors import CodeObjectError

MAX_DEPTH = 32  # levels of maps/lists (AMDGPUUsage's deepest is 5: map, kernels, kernel, args, arg)
MAX_STRING = 65536  # characters (mangled C++ kernel names run to a few thousand)
MAX_ITEMS = 65536  # entries of one list or map
# The largest kernarg segment accepted. HIP and OpenCL runtimes cap explicit arguments at a
# few KiB; raising an object gives the IR one padding argument per gap piece (8 bytes at
# most), so this also bounds the raised signature (8192 pieces).
MAX_KERNARG_SEGMENT_SIZE = 65536
U32_MAX = (1 << 32) - 1


class MetadataError(CodeObjectError):
    """A metadata field of the wrong type or out of range: `path` names it, `reason` says
    what was expected."""

    def __init__(self, path: tuple[str | int, ...], reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f".amdgpu_metadata: {format_path(path)}: {reason}")


def format_path(path: tuple[str | int, ...]) -> str:
    """`amdhsa.kernels[0].args[2].offset` for ("amdhsa.kernels", 0, ".args", 2, ".offset")."""
    if len(path) > 10:  # (a deep path: its start and its end)
        return f"{format_path(path[:5])}...({len(path) - 8} more)...{format_path(path[-3:])}"
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out and not part.startswith("."):
            out += "." + part
        else:
            out += part
    return out or "the metadata"


@dataclass(frozen=True)
class Field:
    """What one key holds: a kind ("int", "bool", "str", "list", "map") and its limits."""

    kind: str
    low: int = 0
    high: int = U32_MAX
    choices: frozenset[str] | None = None
    pattern: str | None = None  # (a str must match it when it is not one of `choices`)
    item: Field | None = None  # (list items)
    length: tuple[int, int] | None = None  # (list length)
    keys: dict[str, Field] | None = None  # (map keys; unknown keys are kept)
    required: tuple[str, ...] = ()  # (map keys that must be there)
    power_of_two: bool = False


def _u32(low: int = 0, high: int = U32_MAX) -> Field:
    return Field("int", low, high)


def _names(*names: str, pattern: str | None = None) -> Field:
    return Field("str", choices=frozenset(names), pattern=pattern)


def _ints(count: int, low: int = 0, high: int = U32_MAX) -> Field:
    return Field("list", item=_u32(low, high), length=(count, count))


STR = Field("str")
BOOL = Field("bool")
_ACCESS = _names("read_only", "write_only", "read_write")

ARG_FIELDS: dict[str, Field] = {
    ".name": STR,
    ".type_name": STR,
    ".size": _u32(0, MAX_KERNARG_SEGMENT_SIZE),
    ".offset": _u32(0, MAX_KERNARG_SEGMENT_SIZE),
    ".value_kind": _names(
        "by_value", "global_buffer", "dynamic_shared_pointer", "sampler", "image", "pipe",
        "queue", pattern=r"hidden_[a-z0-9_]+"),
    ".value_type": STR,  # (deprecated since v3; LLVM still reads any name)
    ".pointee_align": Field("int", 1, U32_MAX, power_of_two=True),
    ".address_space": _names("private", "global", "constant", "local", "generic", "region"),
    ".access": _ACCESS,
    ".actual_access": _ACCESS,
    ".is_const": BOOL,
    ".is_restrict": BOOL,
    ".is_volatile": BOOL,
    ".is_pipe": BOOL,
}

KERNEL_FIELDS: dict[str, Field] = {
    ".name": STR,
    ".symbol": STR,
    ".language": STR,
    ".language_version": _ints(2),
    ".args": Field("list", item=Field("map", keys=ARG_FIELDS,
                                      required=(".offset", ".size", ".value_kind"))),
    ".reqd_workgroup_size": _ints(3, 0, 1024),
    ".workgroup_size_hint": _ints(3, 0, 1024),
    ".vec_type_hint": STR,
    ".device_enqueue_symbol": STR,
    ".kernarg_segment_size": _u32(0, MAX_KERNARG_SEGMENT_SIZE),
    ".group_segment_fixed_size": _u32(),
    ".private_segment_fixed_size": _u32(),
    ".kernarg_segment_align": Field("int", 1, 1 << 16, power_of_two=True),
    ".wavefront_size": Field("int", 32, 64, power_of_two=True),
    ".sgpr_count": _u32(),
    ".vgpr_count": _u32(),
    ".agpr_count": _u32(),
    ".max_flat_workgroup_size": _u32(1, 1024),
    ".sgpr_spill_count": _u32(),
    ".vgpr_spill_count": _u32(),
    ".kind": _names("normal", "init", "fini"),
    ".uses_dynamic_stack": BOOL,
    ".workgroup_processor_mode": BOOL,
    ".uniform_work_group_size": _u32(0, 1),
    ".max_num_workgroups_x": _u32(),
    ".max_num_workgroups_y": _u32(),
    ".max_num_workgroups_z": _u32(),
}

METADATA_FIELDS: dict[str, Field] = {
    "amdhsa.version": _ints(2),
    "amdhsa.target": STR,
    "amdhsa.printf": Field("list", item=STR),
    "amdhsa.kernels": Field("list", item=Field("map", keys=KERNEL_FIELDS)),
}
METADATA = Field("map", keys=METADATA_FIELDS)

_KIND_NAMES = {"int": "an integer", "bool": "true or false", "str": "a string",
               "list": "a list", "map": "a map", "float": "a number"}


def _kind_of(value: Any) -> str | None:
    # (bool before int: True is an int in Python)
    for kind, types in (("bool", bool), ("int", int), ("float", float), ("str", str),
                        ("list", list), ("map", dict)):
        if isinstance(value, types):
            return kind
    return None


def _shown(value: Any) -> str:
    """A value for a message: short, whatever its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, str) and len(value) > 40:
        return repr(value[:40]) + f"... ({len(value)} characters)"
    if isinstance(value, list | dict):
        return f"a {'list' if isinstance(value, list) else 'map'} of {len(value)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def check_structure(meta: Any) -> None:
    """The general limits (depth, sizes, key and value types), without recursion: a crafted
    file nested thousands deep is refused before anything walks it recursively."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(meta, ())]
    while stack:
        value, path = stack.pop()
        kind = _kind_of(value)
        if kind is None:
            what = "nil" if value is None else type(value).__name__
            raise MetadataError(path, f"{what} is not a metadata value (boolean, integer, "
                                      "number, string, list or map)")
        if kind == "int" and not -(1 << 63) <= value <= (1 << 64) - 1:
            raise MetadataError(path, f"{_shown(value)} does not fit 64 bits")
        if kind == "str" and len(value) > MAX_STRING:
            raise MetadataError(path, f"a string of {len(value)} characters (at most "
                                      f"{MAX_STRING})")
        if kind not in ("list", "map"):
            continue
        if len(path) + 1 > MAX_DEPTH:
            raise MetadataError(path, f"nested more than {MAX_DEPTH} levels deep")
        if len(value) > MAX_ITEMS:
            raise MetadataError(path, f"{len(value)} entries (at most {MAX_ITEMS})")
        if kind == "list":
            stack.extend((item, (*path, n)) for n, item in enumerate(value))
            continue
        for key, item in value.items():
            if not isinstance(key, str):
                raise MetadataError(path, f"map key {_shown(key)} is not a string")
            if len(key) > MAX_STRING:
                raise MetadataError(path, f"a key of {len(key)} characters (at most "
                                          f"{MAX_STRING})")
            stack.append((item, (*path, key)))


def _check(value: Any, field: Field, path: tuple[str | int, ...]) -> None:
    kind = _kind_of(value)
    if kind != field.kind:
        raise MetadataError(path, f"must be {_expected(field)}, got {_shown(value)}")
    if kind == "int":
        if not field.low <= value <= field.high:
            raise MetadataError(path, f"{_shown(value)} is out of range: must be "
                                      f"{_expected(field)}")
        if field.power_of_two and value & (value - 1):
            raise MetadataError(path, f"{value} is not a power of two")
    elif kind == "str":
        if field.choices is not None and value not in field.choices and not (
                field.pattern and re.fullmatch(field.pattern, value)):
            raise MetadataError(path, f"{_shown(value)} is not {_expected(field)}")
    elif kind == "list":
        if field.length and not field.length[0] <= len(value) <= field.length[1]:
            raise MetadataError(path, f"has {len(value)} entries, must have "
                                      f"{field.length[0]}")
        if field.item is not None:
            for n, item in enumerate(value):
                _check(item, field.item, (*path, n))
    elif kind == "map" and field.keys is not None:
        missing = [key for key in field.required if key not in value]
        if missing:
            raise MetadataError(path, f"has no {missing[0]} (required)")
        for key, item in value.items():
            known = field.keys.get(key)
            if known is not None:
                _check(item, known, (*path, key))


def _expected(field: Field) -> str:
    if field.kind == "int":
        if field.power_of_two:
            return f"a power of two in [{field.low}, {field.high}]"
        return f"an integer in [{field.low}, {field.high}]"
    if field.kind == "str" and field.choices is not None:
        names = ", ".join(sorted(field.choices))
        return f"one of {names}" + (f" or {field.pattern}" if field.pattern else "")
    if field.kind == "list" and field.length:
        return f"a list of {field.length[0]} {_KIND_NAMES[field.item.kind]}s" \
            if field.item else "a list"
    return _KIND_NAMES[field.kind]


def _check_kernarg_segments(meta: dict[str, Any]) -> None:
    """Every argument inside its kernel's kernarg segment (MAX_KERNARG_SEGMENT_SIZE when the
    entry gives no .kernarg_segment_size)."""
    for k, entry in enumerate(meta.get("amdhsa.kernels", [])):
        size = entry.get(".kernarg_segment_size")
        limit, what = (size, ".kernarg_segment_size") if size is not None else (
            MAX_KERNARG_SEGMENT_SIZE, "the largest accepted")
        for n, arg in enumerate(entry.get(".args", [])):
            offset, arg_size = arg.get(".offset", 0), arg.get(".size", 0)
            if offset + arg_size > limit:
                raise MetadataError(
                    ("amdhsa.kernels", k, ".args", n, ".offset"),
                    f"{offset} + size {arg_size} runs past the kernarg segment ({limit} "
                    f"bytes, {what})")


def check_metadata(meta: Any) -> None:
    """Check a whole metadata map against the schema (MetadataError naming the field)."""
    check_structure(meta)
    _check(meta, METADATA, ())
    _check_kernarg_segments(meta)


__all__ = ["ARG_FIELDS", "KERNEL_FIELDS", "MAX_DEPTH", "MAX_ITEMS", "MAX_KERNARG_SEGMENT_SIZE",
           "MAX_STRING", "METADATA_FIELDS", "Field", "MetadataError", "check_metadata",
           "check_structure", "format_path"]
