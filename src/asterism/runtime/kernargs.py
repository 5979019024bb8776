"""Kernel argument packing from code object metadata (explicit and code object v5 hidden args).

The metadata's `.args` says where each argument lives in the kernarg segment, how big it is,
what kind it is (global_buffer, by_value, hidden_*) and, when known, its C type. Buffers are
given as NumPy arrays (the backend supplies their device addresses), by-value arguments as
Python or NumPy scalars; hidden arguments are filled from the launch geometry.

A memref descriptor (an upstream MLIR kernel's memref with a dynamic size, passed as MLIR's
gpu-to-rocdl lowering passes it: allocated pointer, aligned pointer, offset, sizes, strides)
is the buffer argument `NAME` followed by arguments named `NAME.aligned`, `NAME.offset`,
`NAME.size0`..., `NAME.stride0`...: the caller gives one array for it, whose shape fills the
sizes and whose C-order layout the strides (in elements; the offset is 0).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from asterism.errors import AsterismError

# C type names (metadata `.type_name`) -> NumPy dtypes.
TYPE_NAME_DTYPES = {"float": "float32", "half": "float16", "__bf16": "uint16",
                    "double": "float64", "char": "int8", "uchar": "uint8", "short": "int16",
                    "ushort": "uint16", "int": "int32", "uint": "uint32", "long": "int64",
                    "ulong": "uint64"}


class ArgumentError(AsterismError):
    """Arguments that do not match the kernel's signature."""


@dataclass
class BufferArg:
    """A buffer argument: the array, where its pointer goes, and whether to copy it back."""

    name: str
    array: np.ndarray
    offset: int
    copy_in: bool
    copy_out: bool
    aliases: tuple[int, ...] = ()  # more offsets that get the same address (a descriptor's)


@dataclass
class PackedArgs:
    """The kernarg segment (with zeroed buffer pointers) and the buffers to place."""

    segment: bytearray
    buffers: list[BufferArg]

    def set_pointer(self, buf: BufferArg, address: int) -> None:
        """Write a buffer's device address into the segment."""
        for offset in (buf.offset, *buf.aliases):
            struct.pack_into("<Q", self.segment, offset, address)


# the fields of a memref descriptor after its allocated pointer (see the module docstring)
_FIELD = re.compile(r"(.+)\.(aligned|offset|size\d+|stride\d+)")


def _all_explicit(meta: dict) -> list[dict]:
    return [a for a in meta.get(".args", []) or []
            if not str(a.get(".value_kind", "")).startswith("hidden_")]


def descriptor_fields(meta: dict) -> dict[str, list[dict]]:
    """The memref descriptors among the explicit arguments: buffer name -> the arguments
    after it that hold its descriptor's other fields."""
    fields: dict[str, list[dict]] = {}
    buffers = set()
    for a in _all_explicit(meta):
        name = str(a.get(".name", ""))
        match = _FIELD.fullmatch(name)
        if match and match.group(1) in buffers:
            fields.setdefault(match.group(1), []).append(a)
        elif a.get(".value_kind") == "global_buffer":
            buffers.add(name)
    return fields


def explicit_args(meta: dict) -> list[dict]:
    """The kernel's explicit (non-hidden) arguments, in order; a memref descriptor counts as
    its buffer (one array fills every field)."""
    inner = {id(f) for group in descriptor_fields(meta).values() for f in group}
    return [a for a in _all_explicit(meta) if id(a) not in inner]


def describe_signature(meta: dict) -> str:
    """`name: kind type` for every explicit argument (for error messages and --help)."""
    parts = []
    descriptors = descriptor_fields(meta)
    for a in explicit_args(meta):
        kind = "buffer" if a.get(".value_kind") == "global_buffer" else "value"
        tname = a.get(".type_name", "")
        fields = descriptors.get(a.get(".name", "?"), [])
        rank = sum(1 for f in fields if ".size" in f.get(".name", ""))
        note = f" (memref descriptor, rank {rank})" if fields else ""
        parts.append(f"{a.get('.name', '?')}: {kind}{' ' + tname if tname else ''}{note}")
    return ", ".join(parts) or "(no arguments)"


def _dtype_for(arg: dict) -> np.dtype | None:
    tname = str(arg.get(".type_name", "")).rstrip("*").strip()
    name = TYPE_NAME_DTYPES.get(tname)
    return np.dtype(name) if name else None


def _pack_value(arg: dict, value: Any, name: str) -> bytes:
    size = int(arg.get(".size", 4))
    dtype = _dtype_for(arg)
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ArgumentError(f"argument '{name}' is passed by value: expected a scalar, "
                                f"got an array of shape {value.shape}")
        value = value.reshape(()).item() if dtype is None else value.reshape(())
    if dtype is None:
        if isinstance(value, (bool, int, np.integer)):
            dtype = np.dtype({1: "int8", 2: "int16", 4: "int32", 8: "int64"}.get(size, "int32"))
            if int(value) > np.iinfo(dtype).max:  # fits the unsigned type of the same size
                dtype = np.dtype(f"uint{dtype.itemsize * 8}")
        elif isinstance(value, (float, np.floating)):
            dtype = np.dtype({2: "float16", 4: "float32", 8: "float64"}.get(size, "float32"))
        else:
            raise ArgumentError(f"argument '{name}': expected a number, got {type(value).__name__}")
    if dtype.itemsize != size:
        raise ArgumentError(f"argument '{name}' takes {size} bytes; {dtype} has {dtype.itemsize}")
    if np.issubdtype(dtype, np.integer):
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise ArgumentError(f"argument '{name}' is {dtype}: got the non-integer {value}")
        info = np.iinfo(dtype)
        v = int(value)
        if not info.min <= v <= info.max:
            raise ArgumentError(f"argument '{name}' ({dtype}): {v} is out of range "
                                f"[{info.min}, {info.max}]")
        return np.array(v, dtype=dtype).tobytes()
    return np.array(value, dtype=dtype).tobytes()


def pack_kernargs(meta: dict, args: list[Any] | dict[str, Any], grid: tuple[int, int, int],
                  block: tuple[int, int, int]) -> PackedArgs:
    """Lay out the kernarg segment for a kernel's metadata entry.

    `args` lists the explicit arguments in order (or maps their names to values). Errors name
    the argument and say what was expected.
    """
    name = meta.get(".name", "kernel")
    params = explicit_args(meta)
    if isinstance(args, dict):
        unknown = set(args) - {p.get(".name") for p in params}
        if unknown:
            raise ArgumentError(f"{name}: unknown argument(s) {', '.join(sorted(unknown))}; "
                                f"the kernel takes {describe_signature(meta)}")
        missing = [p.get(".name") for p in params if p.get(".name") not in args]
        if missing:
            raise ArgumentError(f"{name}: missing argument(s) {', '.join(missing)}; the kernel "
                                f"takes {describe_signature(meta)}")
        values = [args[p.get(".name")] for p in params]
    else:
        values = list(args)
        if len(values) != len(params):
            raise ArgumentError(f"{name} takes {len(params)} argument(s) "
                                f"({describe_signature(meta)}), got {len(values)}")
    raw_size = meta.get(".kernarg_segment_size", 0)
    if not isinstance(raw_size, int) or isinstance(raw_size, bool) or raw_size < 0:
        raise ArgumentError(f"{name}: .kernarg_segment_size {raw_size!r} in the metadata is "
                            "not a size")
    size = raw_size
    from asterism.support.limits import check_memory

    check_memory(size, f"the kernarg segment of {name} (.kernarg_segment_size {size})")
    segment = bytearray(size)
    buffers: list[BufferArg] = []
    descriptors = descriptor_fields(meta)
    for param, value in zip(params, values):
        pname = param.get(".name", f"arg{len(buffers)}")
        offset, psize = int(param[".offset"]), int(param.get(".size", 8))
        if offset + psize > size:
            raise ArgumentError(f"argument '{pname}' lies outside the kernarg segment")
        if param.get(".value_kind") == "global_buffer":
            if not isinstance(value, np.ndarray):
                raise ArgumentError(f"argument '{pname}' is a buffer: expected a NumPy array, "
                                    f"got {type(value).__name__}")
            want = _dtype_for(param)
            if want is not None and value.dtype != want:
                raise ArgumentError(f"argument '{pname}': expected an array of {want} "
                                    f"({param.get('.type_name')}), got {value.dtype}")
            access = param.get(".access") or param.get(".actual_access")
            aliases = _pack_descriptor(descriptors.get(pname, []), value, pname, segment)
            buffers.append(BufferArg(pname, value, offset,
                                     copy_in=access != "write_only",
                                     copy_out=access != "read_only", aliases=aliases))
        elif param.get(".value_kind") == "by_value":
            segment[offset:offset + psize] = _pack_value(param, value, pname)
        else:
            raise ArgumentError(f"argument '{pname}': value kind {param.get('.value_kind')} "
                                "is not supported")
    _fill_hidden(meta, segment, grid, block)
    return PackedArgs(segment, buffers)


def _pack_descriptor(fields: list[dict], array: np.ndarray, name: str,
                     segment: bytearray) -> tuple[int, ...]:
    """Fill a memref descriptor's fields from `array` (the sizes its shape, the strides its
    C-order layout's, in elements; the offset 0); returns the offsets of the aligned
    pointer."""
    if not fields:
        return ()
    rank = sum(1 for f in fields if _FIELD.fullmatch(f[".name"]).group(2).startswith("size"))
    if array.ndim != rank:
        raise ArgumentError(f"argument '{name}' is a rank-{rank} memref: expected a {rank}-D "
                            f"array, got shape {array.shape}")
    strides = [int(np.prod(array.shape[d + 1:], dtype=np.int64)) for d in range(rank)]
    aliases = []
    for f in fields:
        kind = _FIELD.fullmatch(f[".name"]).group(2)
        offset, size = f.get(".offset"), f.get(".size", 8)
        if not isinstance(offset, int) or not isinstance(size, int) or offset < 0 or \
                offset + size > len(segment) or size != 8:
            raise ArgumentError(f"argument '{f['.name']}' of the memref descriptor of "
                                f"'{name}' is not an 8-byte field of the kernarg segment")
        if kind == "aligned":
            aliases.append(offset)
            continue
        value = 0  # the offset
        if kind != "offset":
            d = int(kind.removeprefix("size").removeprefix("stride"))
            if d >= rank:
                raise ArgumentError(f"argument '{f['.name']}': '{name}' has rank {rank}")
            value = array.shape[d] if kind.startswith("size") else strides[d]
        struct.pack_into("<q", segment, offset, value)
    return tuple(aliases)


def _fill_hidden(meta: dict, segment: bytearray, grid, block) -> None:
    """Code object v5 hidden arguments from the launch geometry (grid in workgroups)."""
    values = {
        "hidden_block_count_x": (grid[0], "<I"), "hidden_block_count_y": (grid[1], "<I"),
        "hidden_block_count_z": (grid[2], "<I"), "hidden_group_size_x": (block[0], "<H"),
        "hidden_group_size_y": (block[1], "<H"), "hidden_group_size_z": (block[2], "<H"),
        "hidden_remainder_x": (0, "<H"), "hidden_remainder_y": (0, "<H"),
        "hidden_remainder_z": (0, "<H"), "hidden_global_offset_x": (0, "<Q"),
        "hidden_global_offset_y": (0, "<Q"), "hidden_global_offset_z": (0, "<Q"),
        "hidden_grid_dims": (sum(1 for g, b in zip(grid, block) if g * b > 1) or 1, "<H"),
    }
    for a in meta.get(".args", []) or []:
        kind = a.get(".value_kind", "")
        if kind in values:
            value, fmt = values[kind]
            if int(a[".offset"]) + struct.calcsize(fmt) <= len(segment):
                struct.pack_into(fmt, segment, int(a[".offset"]), value)
