"""Code objects against the LLVM 22 oracle: llvm-mc + ld.lld output, llvm-readelf, llvm-objdump.

Kernels are described once in Python (directives, body, metadata); the same description
becomes an assembly file for llvm-mc/ld.lld and the pieces for our writer.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from asterism.errors import CodeObjectError
from asterism.mc.codeobject import (
    CodeObject,
    ExtraSymbol,
    KernelSymbol,
    amdhsa_directives,
    descriptor_from_directives,
    make_kernel_metadata,
    make_metadata,
    read_code_object,
    write_code_object,
)
from asterism.mc.codeobject.elf import STB_LOCAL, STT_FUNC, parse_elf
from asterism.mc.llvm_tools import find_llvm_tool
from asterism.target import get_target

pytestmark = pytest.mark.llvm


@dataclass
class Kernel:
    """One kernel: `.amdhsa_*` directives (without prefix), body lines, metadata extras."""

    name: str
    directives: dict[str, int]
    body: list[str]
    args: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


KERNELS = [
    Kernel(
        "copy_kernel",
        {"next_free_vgpr": 3, "next_free_sgpr": 8, "accum_offset": 4, "kernarg_size": 16,
         "user_sgpr_kernarg_segment_ptr": 1},
        ["s_load_dwordx4 s[4:7], s[0:1], 0x0",
         "v_lshlrev_b32 v0, 2, v0",
         "s_waitcnt lgkmcnt(0)",
         "global_load_dword v2, v0, s[4:5]",
         "s_waitcnt vmcnt(0)",
         "global_store_dword v0, v2, s[6:7]",
         "s_endpgm"],
        args=[{".name": "src", ".offset": 0, ".size": 8, ".value_kind": "global_buffer",
               ".address_space": "global"},
              {".name": "dst", ".offset": 8, ".size": 8, ".value_kind": "global_buffer",
               ".address_space": "global"}],
    ),
    Kernel(
        "agpr_loop",
        {"next_free_vgpr": 300, "next_free_sgpr": 33, "accum_offset": 128,
         "private_segment_fixed_size": 16, "kernarg_size": 64, "enable_private_segment": 1,
         "user_sgpr_dispatch_ptr": 1, "user_sgpr_queue_ptr": 1,
         "user_sgpr_kernarg_segment_ptr": 1, "user_sgpr_dispatch_id": 1,
         "user_sgpr_private_segment_size": 1, "user_sgpr_kernarg_preload_length": 2,
         "system_sgpr_workgroup_id_y": 1, "system_sgpr_workgroup_info": 1,
         "system_vgpr_workitem_id": 2, "float_round_mode_32": 1, "float_denorm_mode_32": 2,
         "dx10_clamp": 0, "ieee_mode": 0, "fp16_overflow": 1, "tg_split": 1,
         "exception_fp_ieee_invalid_op": 1, "exception_int_div_zero": 1,
         "uses_dynamic_stack": 1},
        ["v_accvgpr_write_b32 a0, v0",
         "s_mov_b32 s20, 4",
         "loop_top:",
         "s_sub_u32 s20, s20, 1",
         "s_cmp_lg_u32 s20, 0",
         "s_cbranch_scc1 loop_top",
         "v_accvgpr_read_b32 v1, a0",
         "s_endpgm"],
        metadata={"agpr_count": 172, "reqd_workgroup_size": [256, 1, 1]},
    ),
    Kernel(
        "lds_barrier",
        {"next_free_vgpr": 2, "next_free_sgpr": 0, "accum_offset": 4,
         "group_segment_fixed_size": 4096, "reserve_vcc": 0},
        ["v_mov_b32 v1, 1.0",
         "ds_write_b32 v0, v1",
         "s_waitcnt lgkmcnt(0)",
         "s_barrier",
         "s_endpgm"],
    ),
]


def _kernel_metadata(k: Kernel) -> dict[str, Any]:
    kernarg = k.directives.get("kernarg_size", 0)
    return make_kernel_metadata(
        k.name, kernarg_segment_size=kernarg,
        group_segment_fixed_size=k.directives.get("group_segment_fixed_size", 0),
        private_segment_fixed_size=k.directives.get("private_segment_fixed_size", 0),
        sgpr_count=k.directives["next_free_sgpr"] + 6, vgpr_count=k.directives["next_free_vgpr"],
        max_flat_workgroup_size=256, args=k.args, **k.metadata)


def _yaml(value: Any, indent: int) -> list[str]:
    """A tiny YAML emitter for the metadata shapes used here."""
    pad = " " * indent
    lines: list[str] = []
    for key, v in value.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            lines.append(f"{pad}{key}:")
            for item in v:
                sub = _yaml(item, indent + 4)
                lines.append(f"{pad}  - {sub[0].lstrip()}")
                lines.extend(sub[1:])
        elif isinstance(v, list):
            lines.append(f"{pad}{key}: [{', '.join(str(x) for x in v)}]")
        else:
            lines.append(f"{pad}{key}: {v}")
    return lines


def _source(tid: str, version: int | None, kernels: list[Kernel]) -> str:
    lines = []
    if version is not None:
        lines.append(f".amdhsa_code_object_version {version}")
    lines.append(f'.amdgcn_target "amdgcn-amd-amdhsa--{tid}"')
    for k in kernels:
        lines += [".text", f".globl {k.name}", ".p2align 8", f".type {k.name},@function",
                  f"{k.name}:", *(f"  {b}" if not b.endswith(":") else b for b in k.body),
                  f".L{k.name}_end:", f".size {k.name}, .L{k.name}_end-{k.name}",
                  ".rodata", ".p2align 6", f".amdhsa_kernel {k.name}",
                  *(f"  .amdhsa_{d} {v}" for d, v in k.directives.items()),
                  ".end_amdhsa_kernel"]
    meta = make_metadata([_kernel_metadata(k) for k in kernels], tid,
                         code_object_version=version or 6)
    lines += [".amdgpu_metadata", "---", *_yaml(meta, 0), "...", ".end_amdgpu_metadata"]
    return "\n".join(lines) + "\n"


_MATTR = {"xnack+": "+xnack", "xnack-": "-xnack", "sramecc+": "+sramecc", "sramecc-": "-sramecc"}


def _build(tmp_path: Path, llvm_mc: str, ld_lld: str, tid: str, version: int | None,
           kernels: list[Kernel] = KERNELS) -> tuple[bytes, bytes]:
    """(llvm-mc object, ld.lld -shared code object) for the kernels."""
    cpu, *features = tid.split(":")
    (tmp_path / "k.s").write_text(_source(tid, version, kernels))
    cmd = [llvm_mc, "-triple", "amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-filetype=obj",
           str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")]
    if features:
        cmd.append("-mattr=" + ",".join(_MATTR[f] for f in features))
    subprocess.run(cmd, check=True)
    subprocess.run([ld_lld, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.co")],
                   check=True)
    return (tmp_path / "k.o").read_bytes(), (tmp_path / "k.co").read_bytes()


def _pieces_from_object(obj: bytes, tid: str, version: int, kernels: list[Kernel]
                        ) -> CodeObject:
    """Our CodeObject from llvm-mc's .text bytes and symbols plus the Python description."""
    elf = parse_elf(obj)
    text = elf.section(".text")
    symtab = elf.sections_of_type(2)[0]
    syms = {s.name: s for s in elf.symbols(symtab)}
    labels = [ExtraSymbol(s.name, ".text", s.value) for s in elf.symbols(symtab)[1:]
              if s.bind == STB_LOCAL and s.type != STT_FUNC and s.shndx == elf.sections.index(text)]
    target = get_target(tid)
    return CodeObject(
        target=target,
        text=text.data,
        kernels=[KernelSymbol(k.name, syms[k.name].value,
                              descriptor_from_directives(target, k.directives),
                              size=syms[k.name].size) for k in kernels],
        metadata=make_metadata([_kernel_metadata(k) for k in kernels], tid,
                               code_object_version=version),
        code_object_version=version,
        symbols=labels,
    )


def _tool(*cmd: str) -> str:
    out = subprocess.run(list(cmd), check=True, capture_output=True, text=True).stdout
    # Drop lines naming the input file.
    return "\n".join(line for line in out.splitlines() if "file format" not in line
                     and not line.startswith("File:"))


VARIANTS = [
    ("gfx942", 5), ("gfx942", None), ("gfx942", 4), ("gfx942:sramecc+:xnack-", 6),
    ("gfx950", 5), ("gfx950:xnack+", 5),
]


@pytest.mark.parametrize(("tid", "version"), VARIANTS)
def test_read_then_write_is_byte_identical(tid, version, llvm_mc, ld_lld, tmp_path) -> None:
    _, lld = _build(tmp_path, llvm_mc, ld_lld, tid, version)
    co = read_code_object(lld)
    assert co.target == get_target(tid)
    assert co.code_object_version == (version or 6)  # llvm-mc 22 defaults to v6
    assert [k.name for k in co.kernels] == [k.name for k in KERNELS]
    assert write_code_object(co) == lld


@pytest.mark.parametrize(("tid", "version"), VARIANTS)
def test_from_pieces_equals_ld_lld(tid, version, llvm_mc, ld_lld, llvm_readelf, llvm_objdump,
                                   tmp_path) -> None:
    """Text from llvm-mc, descriptors and metadata from Python: the file ld.lld links."""
    obj, lld = _build(tmp_path, llvm_mc, ld_lld, tid, version)
    pieces = _pieces_from_object(obj, tid, version or 6, KERNELS)
    ours = write_code_object(pieces)

    lld_elf, our_elf = parse_elf(lld), parse_elf(ours)
    for name in (".text", ".rodata", ".note", ".dynsym", ".dynstr", ".hash", ".gnu.hash",
                 ".dynamic", ".symtab", ".strtab", ".shstrtab"):
        assert our_elf.section(name).data == lld_elf.section(name).data, name

    # Same views through the LLVM tools. Only .comment (the producer's name) differs, which
    # moves the non-allocated sections and the section header table.
    (tmp_path / "ours.co").write_bytes(ours)
    for args in (["-l"], ["-s"], ["--dyn-syms"], ["-d"], ["--notes"], ["-r"]):
        assert (_tool(llvm_readelf, *args, str(tmp_path / "ours.co"))
                == _tool(llvm_readelf, *args, str(tmp_path / "k.co"))), args
    header = [ln for ln in _tool(llvm_readelf, "-h", str(tmp_path / "ours.co")).splitlines()
              if "Start of section headers" not in ln]
    assert header == [ln for ln in _tool(llvm_readelf, "-h", str(tmp_path / "k.co")).splitlines()
                      if "Start of section headers" not in ln]
    sections = _tool(llvm_readelf, "-S", str(tmp_path / "ours.co")).splitlines()
    lld_sections = _tool(llvm_readelf, "-S", str(tmp_path / "k.co")).splitlines()
    alloc = [ln for ln in sections if re.search(r"\] \.(note|dyn|gnu|hash|rodata|text|relro)", ln)]
    assert alloc == [ln for ln in lld_sections
                     if re.search(r"\] \.(note|dyn|gnu|hash|rodata|text|relro)", ln)]
    assert len(alloc) == 9
    cpu = tid.split(":")[0]
    assert (_tool(llvm_objdump, "-d", f"--mcpu={cpu}", str(tmp_path / "ours.co"))
            == _tool(llvm_objdump, "-d", f"--mcpu={cpu}", str(tmp_path / "k.co")))

    # With ld.lld's .comment the whole file is identical.
    pieces.comment = lld_elf.section(".comment").data
    assert write_code_object(pieces) == lld


def test_many_kernels_fill_several_gnu_hash_buckets(llvm_mc, ld_lld, tmp_path) -> None:
    """33 kernels: 66 dynamic symbols in 16 buckets, sorted as ld.lld sorts them."""
    kernels = [Kernel(f"k{i}_{'x' * (i % 7)}", {"next_free_vgpr": i + 1, "next_free_sgpr": i,
                                                "accum_offset": 4}, ["s_endpgm"])
               for i in range(33)]
    obj, lld = _build(tmp_path, llvm_mc, ld_lld, "gfx942", 5, kernels)
    assert write_code_object(read_code_object(lld)) == lld
    pieces = _pieces_from_object(obj, "gfx942", 5, kernels)
    pieces.comment = parse_elf(lld).section(".comment").data
    assert write_code_object(pieces) == lld


def _objdump_directives(llvm_objdump: str, path: Path, cpu: str) -> dict[str, dict[str, int]]:
    out = _tool(llvm_objdump, "-D", "-j", ".rodata", f"--mcpu={cpu}", str(path))
    result: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in out.splitlines():
        line = line.strip()
        if line.startswith(".amdhsa_kernel "):
            current = result.setdefault(line.split()[1], {})
        elif line.startswith(".amdhsa_") and current is not None:
            name, value = line.split()
            current[name.removeprefix(".amdhsa_")] = int(value, 0)
    return result


def test_descriptors_decode_like_llvm_objdump(llvm_mc, ld_lld, llvm_objdump, shared_data,
                                              tmp_path) -> None:
    """Every `.amdhsa_*` value llvm-objdump -D prints equals ours (samples + our kernels)."""
    _build(tmp_path, llvm_mc, ld_lld, "gfx942", 5)
    files = [tmp_path / "k.co", *sorted((shared_data / "codeobjects").glob("*.co"))]
    checked = 0
    for path in files:
        co = read_code_object(path)
        printed = _objdump_directives(llvm_objdump, path, co.target_name)
        assert sorted(printed) == sorted(k.name for k in co.kernels)
        for k in co.kernels:
            ours = amdhsa_directives(k.descriptor, co.target)
            for name, value in printed[k.name].items():
                assert ours[name] == value, (path.name, k.name, name)
                checked += 1
    assert checked > 100


def test_descriptor_from_directives_matches_llvm_mc(llvm_mc, ld_lld, tmp_path) -> None:
    """Each kernel's descriptor bytes, entry offset aside, as llvm-mc assembles them."""
    for tid in ("gfx942", "gfx950:xnack-"):
        _, lld = _build(tmp_path, llvm_mc, ld_lld, tid, 5)
        co = read_code_object(lld)
        for spec, k in zip(KERNELS, co.kernels, strict=True):
            ours = descriptor_from_directives(tid, spec.directives)
            ours.kernel_code_entry_byte_offset = k.descriptor.kernel_code_entry_byte_offset
            assert ours.to_bytes() == k.descriptor.to_bytes(), (tid, spec.name)


def test_stripped_file_reads_through_dynsym(llvm_mc, ld_lld, tmp_path) -> None:
    """llvm-strip removes .symtab; the kernels are still found through .dynsym."""
    strip = find_llvm_tool("llvm-strip")
    if strip is None:
        pytest.skip("llvm-strip not found")
    _, lld = _build(tmp_path, llvm_mc, ld_lld, "gfx942", 5)
    subprocess.run([strip, str(tmp_path / "k.co"), "-o", str(tmp_path / "s.co")], check=True)
    full, stripped = read_code_object(lld), read_code_object(tmp_path / "s.co")
    assert parse_elf((tmp_path / "s.co").read_bytes()).section(".symtab") is None
    assert [k.name for k in stripped.kernels] == [k.name for k in full.kernels]
    assert [k.descriptor for k in stripped.kernels] == [k.descriptor for k in full.kernels]
    assert stripped.text == full.text and stripped.metadata == full.metadata
    assert stripped.symbols == []  # the local labels went with .symtab
    assert read_code_object(write_code_object(stripped)).text == full.text


def test_relocatable_object_is_refused(llvm_mc, ld_lld, tmp_path) -> None:
    obj, _ = _build(tmp_path, llvm_mc, ld_lld, "gfx942", 5)
    with pytest.raises(CodeObjectError, match="relocatable object"):
        read_code_object(obj)


LABELLED_KERNELS = """
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl first
.p2align 8
.type first,@function
first:
  s_cbranch_scc0 done
top:
  s_sub_u32 s2, s2, 1
  s_cbranch_scc1 .Lskip
  s_branch top
.Lskip:
  v_mov_b32 v0, 1
done:
  s_endpgm
.globl second
.p2align 8
.type second,@function
second:
again:
  s_cbranch_execz again
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel first
  .amdhsa_next_free_vgpr 4
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 4
.end_amdhsa_kernel
.amdhsa_kernel second
  .amdhsa_next_free_vgpr 4
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 4
.end_amdhsa_kernel
"""


def test_assembled_labels_are_symbols_like_ld_lld(llvm_mc, ld_lld, llvm_readelf, llvm_objdump,
                                                  tmp_path) -> None:
    """`asterism asm` keeps named labels as local symbols in llvm-mc's order (first
    mention) and drops .L labels: the file reads as ld.lld's does (only .comment, the
    producer's name, differs), so branches to labels disassemble to their names."""
    from asterism import api
    from asterism.mc.asm_writer import print_module
    from asterism.mc.parser import parse_asm

    # (print_module adds the metadata block llvm-mc needs and asterism would make itself)
    source = print_module(parse_asm(LABELLED_KERNELS, "k.s", None))
    (tmp_path / "k.s").write_text(source)
    subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                    str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")], check=True)
    subprocess.run([ld_lld, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.co")],
                   check=True)
    ours = api.assemble(source, None, "k.s")
    (tmp_path / "ours.co").write_bytes(ours)
    lld_elf, our_elf = parse_elf((tmp_path / "k.co").read_bytes()), parse_elf(ours)
    for name in (".text", ".rodata", ".note", ".dynsym", ".symtab", ".strtab", ".dynamic"):
        assert our_elf.section(name).data == lld_elf.section(name).data, name
    for tool, args in ((llvm_readelf, ["-s"]), (llvm_objdump, ["-d"])):
        assert (_tool(tool, *args, str(tmp_path / "ours.co"))
                == _tool(tool, *args, str(tmp_path / "k.co"))), args
    symbols = _tool(llvm_readelf, "-s", str(tmp_path / "ours.co"))
    assert re.search(r"NOTYPE +LOCAL +DEFAULT +\d+ done\n.*NOTYPE +LOCAL +DEFAULT +\d+ top\n",
                     symbols) and ".Lskip" not in symbols
    assert "s_cbranch_scc0 done " in api.disassembly_listing(ours)
