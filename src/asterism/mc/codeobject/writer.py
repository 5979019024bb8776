"""Write a CodeObject as an ELF64 AMDGPU shared object laid out the way `ld.lld -shared` does.

For the output of `llvm-mc -filetype=obj` on a kernel, `ld.lld -shared` (LLVM 22) produces:

    ELF header, 8 program headers (PHDR, LOAD r, LOAD rx, LOAD rw, DYNAMIC, GNU_RELRO,
    GNU_STACK, NOTE), then the sections
    .note .dynsym .gnu.hash .hash .dynstr .rodata | .text | .dynamic .relro_padding |
    .comment .symtab .shstrtab .strtab, then the section headers.

Each `|` starts a new PT_LOAD whose first address is alignTo(dot, 4096) + dot % 4096 (then
the section's own alignment) and whose file offset is congruent to it modulo 4096. This
writer reproduces that layout, the symbol order (.symtab: locals, _DYNAMIC, then per kernel
`name` FUNC and `name.kd` OBJECT; .dynsym: the globals sorted into .gnu.hash bucket order)
and both hash tables, so for such an input our bytes equal ld.lld's except for .comment,
which names the producer (tests/test_codeobject_llvm.py compares the files).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from asterism.errors import CodeObjectError, TargetError
from asterism.mc.codeobject.descriptor import (
    KERNEL_DESCRIPTOR_ALIGN,
    KERNEL_DESCRIPTOR_SIZE,
    KernelDescriptor,
)
from asterism.mc.codeobject.elf import (
    DT_GNU_HASH,
    DT_HASH,
    DT_STRSZ,
    DT_STRTAB,
    DT_SYMENT,
    DT_SYMTAB,
    DYN_SIZE,
    EHDR_SIZE,
    ET_DYN,
    PF_R,
    PF_W,
    PF_X,
    PHDR_SIZE,
    PT_DYNAMIC,
    PT_GNU_RELRO,
    PT_GNU_STACK,
    PT_LOAD,
    PT_NOTE,
    PT_PHDR,
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHF_MERGE,
    SHF_STRINGS,
    SHF_WRITE,
    SHN_ABS,
    SHN_UNDEF,
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_GNU_HASH,
    SHT_HASH,
    SHT_NOBITS,
    SHT_NOTE,
    SHT_NULL,
    SHT_PROGBITS,
    SHT_STRTAB,
    SHT_SYMTAB,
    STB_LOCAL,
    STT_FUNC,
    STT_NOTYPE,
    STT_OBJECT,
    STV_DEFAULT,
    STV_HIDDEN,
    STV_PROTECTED,
    SYM_SIZE,
    ElfHeader,
    ElfSymbol,
    Note,
    ProgramHeader,
    Section,
    StringTable,
    align_to,
    build_gnu_hash,
    build_sysv_hash,
    order_for_gnu_hash,
    pack_dynamic,
)
from asterism.mc.codeobject.metadata import (
    NOTE_OWNER,
    NT_AMDGPU_METADATA,
    encode_metadata,
    kernel_metadata_from_descriptor,
    make_metadata,
)
from asterism.mc.codeobject.model import CodeObject
from asterism.target import ELFOSABI_AMDGPU_HSA, EM_AMDGPU, abi_version

# ld.lld's max-page-size and common-page-size for AMDGPU.
PAGE_SIZE = 0x1000
# Kernel code must start on a 256-byte boundary (AMDGPUUsage "Kernel Descriptor").
KERNEL_CODE_ALIGN = 256
_NUM_PHDRS = 8


@dataclass
class _Sym:
    """A symbol before layout: where it goes and how to compute its value."""

    name: str
    section: str  # ".text", ".rodata", ".dynamic", "*ABS*" or "" (undefined)
    offset: int
    size: int
    type: int
    bind: int
    visibility: int


def _exported(sym: _Sym) -> bool:
    return sym.bind != STB_LOCAL and sym.visibility in (STV_DEFAULT, STV_PROTECTED)


def _check_input(obj: CodeObject) -> None:
    if not isinstance(obj.text, bytes | bytearray):
        raise CodeObjectError(f"text must be bytes, got {type(obj.text).__name__}")
    try:
        abi_version(obj.code_object_version)
    except TargetError as exc:
        raise CodeObjectError(exc.message) from None
    if obj.code_object_version < 4:
        raise CodeObjectError(
            f"writing code object v{obj.code_object_version} is not supported; use v4, v5 or v6"
        )
    seen: set[str] = set()
    for k in obj.kernels:
        if not k.name or "\0" in k.name:
            raise CodeObjectError(f"bad kernel name {k.name!r}")
        if k.name in seen:
            raise CodeObjectError(f"kernel {k.name!r} appears twice")
        seen.add(k.name)
        if not isinstance(k.descriptor, KernelDescriptor):
            raise CodeObjectError(f"kernel {k.name}: descriptor must be a KernelDescriptor")
        if not 0 <= k.offset < len(obj.text):
            raise CodeObjectError(
                f"kernel {k.name}: code offset {k.offset} is outside .text ({len(obj.text)} bytes)"
            )
        if k.offset % KERNEL_CODE_ALIGN:
            raise CodeObjectError(
                f"kernel {k.name}: code offset {k.offset} is not a multiple of "
                f"{KERNEL_CODE_ALIGN} (kernel entry points must be 256-byte aligned)"
            )
        if k.size < 0 or k.offset + k.size > len(obj.text):
            raise CodeObjectError(
                f"kernel {k.name}: code size {k.size} at offset {k.offset} runs past the end "
                f"of .text ({len(obj.text)} bytes)"
            )


def _symbols(obj: CodeObject) -> tuple[list[_Sym], list[_Sym]]:
    """(locals, globals) in .symtab order: other locals, _DYNAMIC, kernels, other globals."""
    extra_locals: list[_Sym] = []
    extra_globals: list[_Sym] = []
    for s in obj.symbols:
        if s.section not in (".text", ".rodata", "*ABS*", ""):
            raise CodeObjectError(
                f"symbol {s.name} is in section {s.section!r}, which the writer does not "
                f"produce (it writes .text and .rodata)"
            )
        sym = _Sym(s.name, s.section, s.offset, s.size, s.type, s.bind, s.visibility)
        (extra_locals if s.bind == STB_LOCAL else extra_globals).append(sym)
    kernel_syms: list[_Sym] = []
    for i, k in enumerate(obj.kernels):
        kernel_syms.append(_Sym(k.name, ".text", k.offset, k.size, STT_FUNC, k.binding,
                                k.visibility))
        kernel_syms.append(_Sym(k.descriptor_name, ".rodata", i * KERNEL_DESCRIPTOR_ALIGN,
                                KERNEL_DESCRIPTOR_SIZE, STT_OBJECT, k.descriptor_binding,
                                k.descriptor_visibility))
    # ld.lld keeps the input's locals first and turns its own hidden _DYNAMIC into a local.
    locals_ = extra_locals + [s for s in kernel_syms if s.bind == STB_LOCAL]
    locals_.append(_Sym("_DYNAMIC", ".dynamic", 0, 0, STT_NOTYPE, STB_LOCAL, STV_HIDDEN))
    globals_ = [s for s in kernel_syms if s.bind != STB_LOCAL] + extra_globals
    names = [s.name for s in locals_ + globals_]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise CodeObjectError(f"symbol names defined more than once: {', '.join(dup)}")
    return locals_, globals_


def write_code_object(obj: CodeObject | None = None, /, **pieces: Any) -> bytes:
    """The bytes of an HSA code object for `obj` (or for CodeObject(**pieces)).

    Raises CodeObjectError for inconsistent input; nothing is written anywhere (see
    write_file_atomic for files).
    """
    if obj is None:
        try:
            obj = CodeObject(**pieces)
        except TypeError as exc:
            raise CodeObjectError(f"write_code_object: {exc}") from None
        except TargetError as exc:
            raise CodeObjectError(exc.message) from None
    elif pieces:
        raise CodeObjectError("write_code_object takes a CodeObject or keyword pieces, not both")
    _check_input(obj)
    text = bytes(obj.text)

    meta = obj.metadata
    if meta is None:
        # The loader needs an entry per kernel; derive the minimal one from the descriptor
        # for kernels given without metadata.
        meta = make_metadata(
            [k.metadata or kernel_metadata_from_descriptor(k.name, k.descriptor, obj.target)
             for k in obj.kernels],
            obj.target, code_object_version=obj.code_object_version)
    notes = [Note(NOTE_OWNER, NT_AMDGPU_METADATA, encode_metadata(meta)), *obj.notes]
    note_data = b"".join(n.pack() for n in notes)

    locals_, globals_ = _symbols(obj)
    exported = [s for s in globals_ if _exported(s)]
    undefined = [s for s in exported if s.section == ""]
    defined = [s for s in exported if s.section != ""]
    # .dynstr follows the .symtab order; .dynsym puts undefined symbols first, then the
    # defined ones sorted into .gnu.hash bucket order (ld.lld).
    dynstr = StringTable()
    dyn_name_off = {s.name: dynstr.add(s.name) for s in exported}
    dyn_order = undefined + [defined[i] for i in order_for_gnu_hash([s.name for s in defined])]
    dynstr_data = dynstr.bytes()
    gnu_hash_data = build_gnu_hash([s.name for s in dyn_order[len(undefined):]],
                                   1 + len(undefined))
    sysv_hash_data = build_sysv_hash([""] + [s.name for s in dyn_order])
    dynsym_size = SYM_SIZE * (1 + len(dyn_order))
    rodata_size = KERNEL_DESCRIPTOR_ALIGN * len(obj.kernels)

    # --- Layout (addresses and offsets), as ld.lld assigns them.
    sections: list[Section] = [Section("", SHT_NULL)]

    def add(sec: Section) -> Section:
        sections.append(sec)
        return sec

    off = EHDR_SIZE + _NUM_PHDRS * PHDR_SIZE
    ro_specs = [
        (".note", SHT_NOTE, 4, len(note_data)),
        (".dynsym", SHT_DYNSYM, 8, dynsym_size),
        (".gnu.hash", SHT_GNU_HASH, 8, len(gnu_hash_data)),
        (".hash", SHT_HASH, 4, len(sysv_hash_data)),
        (".dynstr", SHT_STRTAB, 1, len(dynstr_data)),
        (".rodata", SHT_PROGBITS, KERNEL_DESCRIPTOR_ALIGN, rodata_size),
    ]
    sec_by_name: dict[str, Section] = {}
    for name, sh_type, align, size in ro_specs:
        off = align_to(off, align)
        sec_by_name[name] = add(Section(name, sh_type, SHF_ALLOC, off, off, size,
                                        addralign=align))
        off += size
    ro_end = off

    def start_segment(dot: int, file_off: int, align: int) -> tuple[int, int]:
        addr = align_to(align_to(dot, PAGE_SIZE) + dot % PAGE_SIZE, align)
        # File offset congruent to the address modulo the page size.
        file_off = file_off + ((addr - file_off) % PAGE_SIZE)
        return addr, file_off

    text_addr, text_off = start_segment(ro_end, off, KERNEL_CODE_ALIGN)
    add(Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text_addr,
                           text_off, len(text), addralign=KERNEL_CODE_ALIGN, data=text))
    dyn_size = DYN_SIZE * 7
    dyn_addr, dyn_off = start_segment(text_addr + len(text), text_off + len(text), 8)
    dyn_sec = add(Section(".dynamic", SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE, dyn_addr, dyn_off,
                          dyn_size, addralign=8, entsize=DYN_SIZE))
    pad_addr = dyn_addr + dyn_size
    pad_size = align_to(pad_addr, PAGE_SIZE) - pad_addr
    add(Section(".relro_padding", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, pad_addr,
                          dyn_off + dyn_size, pad_size, addralign=1))
    off = dyn_off + dyn_size

    if obj.comment:
        add(Section(".comment", SHT_PROGBITS, SHF_MERGE | SHF_STRINGS, 0, off,
                                  len(obj.comment), addralign=1, entsize=1,
                                  data=bytes(obj.comment)))
        off += len(obj.comment)
    symtab_sec = add(Section(".symtab", SHT_SYMTAB, 0, addralign=8, entsize=SYM_SIZE))
    shstrtab_sec = add(Section(".shstrtab", SHT_STRTAB, 0, addralign=1))
    strtab_sec = add(Section(".strtab", SHT_STRTAB, 0, addralign=1))
    index = {s.name: i for i, s in enumerate(sections)}

    # --- Symbol values now that addresses are known.
    base = {".text": text_addr, ".rodata": sec_by_name[".rodata"].addr, ".dynamic": dyn_addr}

    def elf_sym(s: _Sym, name_off: int) -> ElfSymbol:
        if s.section == "":
            shndx, value = SHN_UNDEF, s.offset
        elif s.section == "*ABS*":
            shndx, value = SHN_ABS, s.offset
        else:
            shndx, value = index[s.section], base[s.section] + s.offset
        return ElfSymbol(s.name, value, s.size, s.type, s.bind, s.visibility, shndx, name_off)

    # ld.lld adds names in its symbol-table order, where its own _DYNAMIC comes after the
    # input's globals, then sorts locals first; so _DYNAMIC's name is last in .strtab.
    strtab = StringTable()
    name_off = {s.name: strtab.add(s.name) for s in locals_[:-1] + globals_ + locals_[-1:]}
    symtab_entries = [ElfSymbol("")]
    for s in locals_ + globals_:
        symtab_entries.append(elf_sym(s, name_off[s.name]))
    symtab_data = b"".join(e.pack() for e in symtab_entries)
    strtab_data = strtab.bytes()
    dynsym_data = ElfSymbol("").pack() + b"".join(
        elf_sym(s, dyn_name_off[s.name]).pack() for s in dyn_order)

    # --- Section contents and the remaining (non-alloc) offsets.
    rodata = bytearray()
    for i, k in enumerate(obj.kernels):
        kd_addr = sec_by_name[".rodata"].addr + i * KERNEL_DESCRIPTOR_ALIGN
        kd = dataclasses.replace(k.descriptor,
                                 kernel_code_entry_byte_offset=text_addr + k.offset - kd_addr)
        rodata += kd.to_bytes()
    dynamic_data = pack_dynamic([
        (DT_SYMTAB, sec_by_name[".dynsym"].addr),
        (DT_SYMENT, SYM_SIZE),
        (DT_STRTAB, sec_by_name[".dynstr"].addr),
        (DT_STRSZ, len(dynstr_data)),
        (DT_GNU_HASH, sec_by_name[".gnu.hash"].addr),
        (DT_HASH, sec_by_name[".hash"].addr),
    ])
    assert len(dynamic_data) == dyn_size
    contents = {
        ".note": note_data, ".dynsym": dynsym_data, ".gnu.hash": gnu_hash_data,
        ".hash": sysv_hash_data, ".dynstr": dynstr_data, ".rodata": bytes(rodata),
    }
    for name, body in contents.items():
        sec_by_name[name].data = body
    dyn_sec.data = dynamic_data

    shstrtab = StringTable()
    for sec in sections[1:]:
        sec.name_offset = shstrtab.add(sec.name)
    shstrtab_data = shstrtab.bytes()

    off = align_to(off, 8)
    symtab_sec.offset, symtab_sec.size, symtab_sec.data = off, len(symtab_data), symtab_data
    symtab_sec.link = index[".strtab"]
    symtab_sec.info = 1 + len(locals_)
    off += len(symtab_data)
    shstrtab_sec.offset, shstrtab_sec.size, shstrtab_sec.data = off, len(shstrtab_data), \
        shstrtab_data
    off += len(shstrtab_data)
    strtab_sec.offset, strtab_sec.size, strtab_sec.data = off, len(strtab_data), strtab_data
    off += len(strtab_data)
    shoff = align_to(off, 8)

    dynstr_index = index[".dynstr"]
    sec_by_name[".dynsym"].link = dynstr_index
    sec_by_name[".dynsym"].info = 1  # every dynamic symbol after the null one is global
    sec_by_name[".dynsym"].entsize = SYM_SIZE
    sec_by_name[".gnu.hash"].link = index[".dynsym"]
    sec_by_name[".hash"].link = index[".dynsym"]
    sec_by_name[".hash"].entsize = 4
    dyn_sec.link = dynstr_index

    rw_memsz = dyn_size + pad_size
    note_sec = sec_by_name[".note"]
    phdrs = [
        ProgramHeader(PT_PHDR, PF_R, EHDR_SIZE, EHDR_SIZE, EHDR_SIZE, _NUM_PHDRS * PHDR_SIZE,
                      _NUM_PHDRS * PHDR_SIZE, 8),
        ProgramHeader(PT_LOAD, PF_R, 0, 0, 0, ro_end, ro_end, PAGE_SIZE),
        ProgramHeader(PT_LOAD, PF_R | PF_X, text_off, text_addr, text_addr, len(text),
                      len(text), PAGE_SIZE),
        ProgramHeader(PT_LOAD, PF_R | PF_W, dyn_off, dyn_addr, dyn_addr, dyn_size, rw_memsz,
                      PAGE_SIZE),
        ProgramHeader(PT_DYNAMIC, PF_R | PF_W, dyn_off, dyn_addr, dyn_addr, dyn_size, dyn_size,
                      8),
        ProgramHeader(PT_GNU_RELRO, PF_R, dyn_off, dyn_addr, dyn_addr, dyn_size, rw_memsz, 1),
        ProgramHeader(PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 0, 0),
        ProgramHeader(PT_NOTE, PF_R, note_sec.offset, note_sec.addr, note_sec.addr,
                      len(note_data), len(note_data), 4),
    ]
    header = ElfHeader(
        os_abi=ELFOSABI_AMDGPU_HSA, abi_version=abi_version(obj.code_object_version),
        type=ET_DYN, machine=EM_AMDGPU, phoff=EHDR_SIZE, shoff=shoff, flags=obj.e_flags,
        phnum=len(phdrs), shnum=len(sections), shstrndx=index[".shstrtab"],
    )

    out = bytearray(shoff + len(sections) * 64)
    out[0:EHDR_SIZE] = header.pack()
    out[EHDR_SIZE:EHDR_SIZE + len(phdrs) * PHDR_SIZE] = b"".join(p.pack() for p in phdrs)
    for sec in sections:
        if sec.type not in (SHT_NULL, SHT_NOBITS) and sec.data:
            out[sec.offset:sec.offset + len(sec.data)] = sec.data
    out[shoff:] = b"".join(s.pack_header() for s in sections)
    return bytes(out)


def write_file_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` through a temporary file and a rename: never a partial file."""
    from asterism.textio import write_file_atomic as write_atomic

    write_atomic(path, data, CodeObjectError)
