"""Read an AMDGPU HSA code object (ELF64, code object v3-v6) into a CodeObject.

Kernels are found through their descriptor symbols (`<name>.kd`, OBJECT, global) in .symtab
(or .dynsym when the file is stripped); the descriptor's kernel_code_entry_byte_offset gives
the code address, which must lie in .text and agree with the `<name>` FUNC symbol if present.
Everything the writer needs to reproduce the file is kept: other symbols (labels), other
notes and the .comment text. Sections the writer does not produce (.data, .bss...) are not
kept; their symbols are, and writing them back is refused with a CodeObjectError.
"""

from __future__ import annotations

import os

from asterism.errors import CodeObjectError, TargetError
from asterism.mc.codeobject.descriptor import KERNEL_DESCRIPTOR_SIZE, KernelDescriptor
from asterism.mc.codeobject.elf import (
    ET_REL,
    SHN_ABS,
    SHN_LORESERVE,
    SHN_UNDEF,
    SHT_DYNSYM,
    SHT_NOBITS,
    SHT_NOTE,
    SHT_SYMTAB,
    STB_LOCAL,
    STT_FUNC,
    STT_OBJECT,
    STT_SECTION,
    ElfFile,
    ElfSymbol,
    Note,
    parse_elf,
    parse_notes,
)
from asterism.mc.codeobject.metadata import (
    NOTE_OWNER,
    NT_AMDGPU_METADATA,
    decode_metadata,
    find_kernel_metadata,
)
from asterism.mc.codeobject.model import CodeObject, ExtraSymbol, KernelSymbol
from asterism.target import (
    ELFOSABI_AMDGPU_HSA,
    EM_AMDGPU,
    code_object_version,
    decode_e_flags,
    encode_e_flags,
)

# Symbols ld.lld synthesizes; the writer makes its own.
_LINKER_SYMBOLS = {"_DYNAMIC"}


def _load(source: bytes | bytearray | memoryview | str | os.PathLike[str]) -> tuple[bytes, str]:
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), "<bytes>"
    path = path_text(source)
    try:
        with open(path, "rb") as f:
            return f.read(), path
    except OSError as exc:
        raise CodeObjectError(f"{path}: cannot read code object: {exc.strerror or exc}") from None


def path_text(source: str | os.PathLike[str]) -> str:
    """str(pathlib.Path(source)) on POSIX, without importing pathlib (~5 ms of the start-up
    of `asterism disasm`): empty and `.` components and repeated or trailing slashes
    dropped, a leading `//` kept (POSIX leaves its meaning to the system), `.` if nothing
    is left."""
    text = os.fspath(source)
    if os.name != "posix":  # pragma: no cover - (pathlib's rules differ there)
        from pathlib import Path

        return str(Path(text))
    root = "//" if text.startswith("//") and not text.startswith("///") else \
        "/" if text.startswith("/") else ""
    parts = [part for part in text.split("/") if part and part != "."]
    return root + "/".join(parts) if root or parts else "."


def read_code_object(source: bytes | bytearray | memoryview | str | os.PathLike[str]
                     ) -> CodeObject:
    """Read a code object from bytes or a path; CodeObjectError says what is wrong with it."""
    return load_code_object(source)[0]


def load_code_object(source: bytes | bytearray | memoryview | str | os.PathLike[str]
                     ) -> tuple[CodeObject, bytes]:
    """read_code_object, with the file's bytes too (for readers of its ELF, the listing)."""
    data, where = _load(source)
    try:
        return _read(data), data
    except CodeObjectError as exc:
        if where == "<bytes>":
            raise
        raise CodeObjectError(f"{where}: {exc.message}") from None


def _symbol_table(elf: ElfFile) -> list[ElfSymbol]:
    # .symtab has the labels and sizes; a stripped file still has .dynsym.
    for sh_type in (SHT_SYMTAB, SHT_DYNSYM):
        tables = elf.sections_of_type(sh_type)
        if tables:
            return elf.symbols(tables[0])
    return []


def _read(data: bytes) -> CodeObject:
    elf = parse_elf(data)
    hdr = elf.header
    if hdr.machine != EM_AMDGPU:
        raise CodeObjectError(
            f"not an AMDGPU code object: e_machine is {hdr.machine}, expected {EM_AMDGPU} "
            f"(EM_AMDGPU)"
        )
    if hdr.type == ET_REL:
        raise CodeObjectError(
            "this is a relocatable object (ET_REL), not a code object: link it first "
            "(ld.lld -shared) or write it with write_code_object"
        )
    if hdr.os_abi != ELFOSABI_AMDGPU_HSA:
        raise CodeObjectError(
            f"not an HSA code object: OS ABI is {hdr.os_abi}, expected {ELFOSABI_AMDGPU_HSA} "
            f"(ELFOSABI_AMDGPU_HSA)"
        )
    try:
        version = code_object_version(hdr.abi_version)
        if version < 3:
            raise CodeObjectError(
                f"code object v{version} (ABI version {hdr.abi_version}) is not supported; "
                f"v3 to v6 are"
            )
        elf_target = decode_e_flags(hdr.flags, code_object_version=version)
    except TargetError as exc:
        raise CodeObjectError(exc.message) from None
    flags = encode_e_flags(elf_target.target, code_object_version=version)
    flags |= elf_target.generic_version << 24
    if flags != hdr.flags:
        raise CodeObjectError(
            f"e_flags 0x{hdr.flags:x} has bits this reader does not model "
            f"(expected 0x{flags:x} for {elf_target.target.processor_id})"
        )

    text_sec = elf.section(".text")
    if text_sec is not None and text_sec.type == SHT_NOBITS:
        raise CodeObjectError(".text has no contents (SHT_NOBITS)")
    text = text_sec.data if text_sec else b""
    text_addr = text_sec.addr if text_sec else 0

    metadata: dict | None = None
    notes: list[Note] = []
    for sec in elf.sections_of_type(SHT_NOTE):
        for note in parse_notes(sec.data, f"note section {sec.name}"):
            if note.name == NOTE_OWNER and note.type == NT_AMDGPU_METADATA:
                if metadata is not None:
                    raise CodeObjectError("more than one AMDGPU metadata note")
                metadata = decode_metadata(note.desc)
            else:
                notes.append(note)

    symbols = _symbol_table(elf)
    funcs = {s.name: s for s in symbols if s.type == STT_FUNC and s.bind != STB_LOCAL}
    kernels: list[KernelSymbol] = []
    kernel_syms: set[str] = set()
    for sym in symbols:
        if sym.type != STT_OBJECT or not sym.name.endswith(".kd") or sym.bind == STB_LOCAL:
            continue
        name = sym.name[:-3]
        if any(k.name == name for k in kernels):
            raise CodeObjectError(f"kernel descriptor {sym.name} is defined twice")
        kernels.append(_kernel(elf, sym, name, funcs.get(name), text_addr, len(text), metadata))
        kernel_syms.update((sym.name, name))

    extras: list[ExtraSymbol] = []
    for i, sym in enumerate(symbols):
        if i == 0 or sym.name in kernel_syms or sym.name in _LINKER_SYMBOLS:
            continue
        if sym.type == STT_SECTION:
            continue
        extras.append(_extra(elf, sym))

    comment_sec = elf.section(".comment")
    return CodeObject(
        target=elf_target.target,
        text=text,
        kernels=kernels,
        metadata=metadata,
        code_object_version=version,
        text_address=text_addr,
        symbols=extras,
        notes=notes,
        comment=comment_sec.data if comment_sec else b"",
        generic_version=elf_target.generic_version,
    )


def _kernel(elf: ElfFile, kd_sym: ElfSymbol, name: str, func: ElfSymbol | None,
            text_addr: int, text_size: int, metadata: dict | None) -> KernelSymbol:
    if kd_sym.shndx == SHN_UNDEF or kd_sym.shndx >= min(len(elf.sections), SHN_LORESERVE):
        raise CodeObjectError(f"kernel descriptor {kd_sym.name} is not defined in a section")
    sec = elf.sections[kd_sym.shndx]
    start = kd_sym.value - sec.addr
    if sec.type == SHT_NOBITS or start < 0 or start + KERNEL_DESCRIPTOR_SIZE > len(sec.data):
        raise CodeObjectError(
            f"kernel descriptor {kd_sym.name} at 0x{kd_sym.value:x} lies outside the contents "
            f"of section {sec.name or sec.type}"
        )
    kd = KernelDescriptor.from_bytes(sec.data[start:start + KERNEL_DESCRIPTOR_SIZE])
    code_addr = kd_sym.value + kd.kernel_code_entry_byte_offset
    offset = code_addr - text_addr
    if not 0 <= offset < max(text_size, 1) or text_size == 0:
        raise CodeObjectError(
            f"kernel {name}: descriptor points at code address 0x{code_addr:x}, outside .text "
            f"(0x{text_addr:x}..0x{text_addr + text_size:x})"
        )
    if func is not None and func.value != code_addr:
        raise CodeObjectError(
            f"kernel {name}: symbol says its code is at 0x{func.value:x} but its descriptor "
            f"points at 0x{code_addr:x}"
        )
    if func is not None and func.size > text_size - offset:
        # (readers walk the code by the symbol's size: bound it by the section that holds it)
        raise CodeObjectError(
            f"kernel {name}: symbol size {func.size} at .text offset 0x{offset:x} runs past "
            f"the end of .text ({text_size} bytes)"
        )
    kmeta = find_kernel_metadata(metadata, name) if metadata is not None else None
    kernel = KernelSymbol(
        name=name,
        offset=offset,
        descriptor=kd,
        size=func.size if func is not None else 0,
        metadata=kmeta if kmeta is not None else {},
        address=code_addr,
        descriptor_address=kd_sym.value,
        descriptor_binding=kd_sym.bind,
        descriptor_visibility=kd_sym.visibility,
    )
    if func is not None:
        kernel.binding = func.bind
        kernel.visibility = func.visibility
    return kernel


def _extra(elf: ElfFile, sym: ElfSymbol) -> ExtraSymbol:
    if sym.shndx == SHN_UNDEF:
        section, offset = "", sym.value
    elif sym.shndx == SHN_ABS or sym.shndx >= SHN_LORESERVE:
        section, offset = "*ABS*", sym.value
    elif sym.shndx < len(elf.sections):
        sec = elf.sections[sym.shndx]
        section, offset = sec.name, sym.value - sec.addr
        # (a symbol lies in its section: 0 <= offset, offset + size <= the section's size;
        # a label may stand at the very end)
        if not 0 <= offset <= sec.size or sym.size > sec.size - offset:
            raise CodeObjectError(
                f"symbol {sym.name}: {sym.size} bytes at 0x{sym.value:x} lie outside its "
                f"section {sec.name or sym.shndx} (0x{sec.addr:x}..0x{sec.addr + sec.size:x})")
    else:
        raise CodeObjectError(f"symbol {sym.name}: section index {sym.shndx} out of range")
    return ExtraSymbol(sym.name, section, offset, sym.size, sym.type, sym.bind, sym.visibility)
