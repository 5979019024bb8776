"""Crafted code objects for tests: a real object with its metadata or a symbol changed and
re-packed as a valid ELF, so the change reaches the reader under test (not the ELF checks)."""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from asterism.mc.codeobject import read_code_object, write_code_object
from asterism.mc.codeobject import writer as writer_module
from asterism.mc.codeobject.elf import SHT_SYMTAB, SYM_SIZE, parse_elf

SPACED_ASM = """\
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version {version}
.text
.globl k
.p2align 8
.type k,@function
k:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_load_dwordx2 s[6:7], s[0:1], 0x10
  s_cmp_eq_u32 s2, 0
  s_cbranch_scc1 loop_12
  s_nop 1
loop_12:
  v_mov_b32_e32 v1, s2
  s_waitcnt lgkmcnt(0)
  global_store_dword v0, v1, s[4:5]
  s_endpgm
.Lfunc_end0:
  .size k, .Lfunc_end0-k
.rodata
.p2align 6
.amdhsa_kernel k
  .amdhsa_next_free_vgpr 2
  .amdhsa_next_free_sgpr 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_kernarg_size 24
  .amdhsa_accum_offset 4
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.kernels:
  - .args:
      - .address_space:  global
        .name:           a
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .address_space:  global
        .name:           b
        .offset:         16
        .size:           8
        .value_kind:     global_buffer
    .group_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .kernarg_segment_size: 24
    .max_flat_workgroup_size: 64
    .name:           k
    .private_segment_fixed_size: 0
    .sgpr_count:     16
    .symbol:         k.kd
    .vgpr_count:     2
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
amdhsa.version:
  - 1
  - {minor}
...
.end_amdgpu_metadata
"""
"""A kernel whose two pointer arguments are 16 bytes apart (as some AITER kernels' are),
with a `loop_12` label; format with version (4, 5, 6) and minor (amdhsa.version [1, minor])."""


def with_metadata(data: bytes, meta: dict[str, Any]) -> bytes:
    """`data` with its metadata map replaced by `meta` (any MessagePack-encodable value)."""
    obj = read_code_object(data)
    obj.metadata = meta
    return write_code_object(obj)


def with_metadata_note(data: bytes, desc: bytes) -> bytes:
    """`data` with the raw bytes `desc` as its metadata note's descriptor (for what the
    MessagePack packer refuses to make: nesting past its limit)."""
    obj = read_code_object(data)
    obj.metadata = {}
    # (the writer encodes the map itself; hand it the bytes instead, for this one call)
    saved = writer_module.encode_metadata
    writer_module.encode_metadata = lambda _meta, **_kw: desc
    try:
        return write_code_object(obj)
    finally:
        writer_module.encode_metadata = saved


def deep_note(levels: int) -> bytes:
    """A metadata map whose key "x" holds lists nested `levels` deep."""
    head = msgpack.packb({"amdhsa.version": [1, 0], "amdhsa.kernels": []})
    assert head[0] == 0x82  # (a fixmap of 2: make it 3 and append the deep entry)
    return b"\x83" + head[1:] + msgpack.packb("x") + b"\x91" * levels + b"\x00"


def with_symbol_size(data: bytes, name: str, size: int) -> bytes:
    """`data` with the st_size of the .symtab symbol `name` set to `size`."""
    elf = parse_elf(data)
    (symtab,) = elf.sections_of_type(SHT_SYMTAB)
    index = next(i for i, s in enumerate(elf.symbols(symtab)) if s.name == name)
    out = bytearray(data)
    struct.pack_into("<Q", out, symtab.offset + index * SYM_SIZE + 16, size)
    return bytes(out)
