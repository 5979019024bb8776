"""ELF64 little-endian structures: parse with bounds checks, pack, and the dynamic-linking tables.

Only what AMDGPU code objects use: header, section and program headers, symbols, string
tables, notes, the SysV and GNU hash tables (built exactly as ld.lld builds them) and
dynamic entries. Every malformed input raises CodeObjectError, never struct.error/IndexError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from asterism.errors import CodeObjectError

ELF_MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
EV_CURRENT = 1
EI_OSABI = 7
EI_ABIVERSION = 8

ET_REL = 1
ET_EXEC = 2
ET_DYN = 3

SHT_NULL = 0
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_RELA = 4
SHT_HASH = 5
SHT_DYNAMIC = 6
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_DYNSYM = 11
SHT_GNU_HASH = 0x6FFFFFF6

SHF_WRITE = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHF_MERGE = 0x10
SHF_STRINGS = 0x20

PT_NULL = 0
PT_LOAD = 1
PT_DYNAMIC = 2
PT_NOTE = 4
PT_PHDR = 6
PT_GNU_STACK = 0x6474E551
PT_GNU_RELRO = 0x6474E552

PF_X = 0x1
PF_W = 0x2
PF_R = 0x4

STB_LOCAL = 0
STB_GLOBAL = 1
STB_WEAK = 2

STT_NOTYPE = 0
STT_OBJECT = 1
STT_FUNC = 2
STT_SECTION = 3
STT_FILE = 4

STV_DEFAULT = 0
STV_INTERNAL = 1
STV_HIDDEN = 2
STV_PROTECTED = 3

SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_ABS = 0xFFF1

DT_NULL = 0
DT_HASH = 4
DT_STRTAB = 5
DT_SYMTAB = 6
DT_STRSZ = 10
DT_SYMENT = 11
DT_GNU_HASH = 0x6FFFFEF5

EHDR_SIZE = 64
PHDR_SIZE = 56
SHDR_SIZE = 64
SYM_SIZE = 24
DYN_SIZE = 16

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_DYN = struct.Struct("<qQ")


def align_to(value: int, alignment: int) -> int:
    """Round `value` up to a multiple of `alignment` (0 and 1 mean no alignment)."""
    if alignment <= 1:
        return value
    return -(-value // alignment) * alignment


@dataclass
class ElfHeader:
    """The Elf64_Ehdr fields (ident split into OS ABI and ABI version)."""

    os_abi: int = 0
    abi_version: int = 0
    type: int = ET_DYN
    machine: int = 0
    version: int = EV_CURRENT
    entry: int = 0
    phoff: int = 0
    shoff: int = 0
    flags: int = 0
    ehsize: int = EHDR_SIZE
    phentsize: int = PHDR_SIZE
    phnum: int = 0
    shentsize: int = SHDR_SIZE
    shnum: int = 0
    shstrndx: int = 0

    def pack(self) -> bytes:
        """The 64-byte header."""
        ident = ELF_MAGIC + bytes([ELFCLASS64, ELFDATA2LSB, EV_CURRENT, self.os_abi,
                                   self.abi_version]) + bytes(7)
        return _EHDR.pack(ident, self.type, self.machine, self.version, self.entry, self.phoff,
                          self.shoff, self.flags, self.ehsize, self.phentsize, self.phnum,
                          self.shentsize, self.shnum, self.shstrndx)


@dataclass
class ProgramHeader:
    """One Elf64_Phdr."""

    type: int
    flags: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    align: int

    def pack(self) -> bytes:
        """The 56-byte program header."""
        return _PHDR.pack(self.type, self.flags, self.offset, self.vaddr, self.paddr,
                          self.filesz, self.memsz, self.align)


@dataclass
class Section:
    """One section: its Elf64_Shdr fields, its name and (unless NOBITS) its bytes."""

    name: str
    type: int
    flags: int = 0
    addr: int = 0
    offset: int = 0
    size: int = 0
    link: int = 0
    info: int = 0
    addralign: int = 0
    entsize: int = 0
    data: bytes = b""
    name_offset: int = 0

    def pack_header(self) -> bytes:
        """The 64-byte section header (name_offset must be set)."""
        return _SHDR.pack(self.name_offset, self.type, self.flags, self.addr, self.offset,
                          self.size, self.link, self.info, self.addralign, self.entsize)


@dataclass
class ElfSymbol:
    """One Elf64_Sym with its resolved name."""

    name: str
    value: int = 0
    size: int = 0
    type: int = STT_NOTYPE
    bind: int = STB_LOCAL
    visibility: int = STV_DEFAULT
    shndx: int = SHN_UNDEF
    name_offset: int = 0

    @property
    def info(self) -> int:
        """st_info byte (binding << 4 | type)."""
        return (self.bind << 4) | self.type

    def pack(self) -> bytes:
        """The 24-byte symbol entry (name_offset must be set)."""
        return _SYM.pack(self.name_offset, self.info, self.visibility, self.shndx, self.value,
                         self.size)


@dataclass
class Note:
    """One ELF note: owner name, type and descriptor bytes."""

    name: str
    type: int
    desc: bytes

    def pack(self) -> bytes:
        """namesz, descsz, type, then name and desc each padded to 4 bytes (as LLVM writes)."""
        name = self.name.encode() + b"\0"
        return (struct.pack("<III", len(name), len(self.desc), self.type)
                + name + bytes(align_to(len(name), 4) - len(name))
                + self.desc + bytes(align_to(len(self.desc), 4) - len(self.desc)))


@dataclass
class ElfFile:
    """A parsed ELF64 file: header, sections (with names and data) and program headers."""

    header: ElfHeader
    sections: list[Section]
    segments: list[ProgramHeader]
    data: bytes = field(repr=False, default=b"")

    def section(self, name: str) -> Section | None:
        """The first section called `name`, or None."""
        for sec in self.sections:
            if sec.name == name:
                return sec
        return None

    def sections_of_type(self, sh_type: int) -> list[Section]:
        """All sections of one sh_type."""
        return [s for s in self.sections if s.type == sh_type]

    def symbols(self, sec: Section) -> list[ElfSymbol]:
        """The symbols of a SYMTAB/DYNSYM section, names resolved through its sh_link table."""
        if sec.link >= len(self.sections):
            raise CodeObjectError(f"symbol table {sec.name}: string table index {sec.link} "
                                  f"out of range")
        strtab = self.sections[sec.link].data
        if sec.entsize not in (0, SYM_SIZE):
            raise CodeObjectError(f"symbol table {sec.name}: entry size {sec.entsize}, "
                                  f"expected {SYM_SIZE}")
        out = []
        for i in range(len(sec.data) // SYM_SIZE):
            name_off, info, other, shndx, value, size = _SYM.unpack_from(sec.data, i * SYM_SIZE)
            out.append(ElfSymbol(
                name=read_cstring(strtab, name_off, f"{sec.name} symbol {i}"),
                value=value, size=size, type=info & 0xF, bind=info >> 4,
                visibility=other & 3, shndx=shndx, name_offset=name_off,
            ))
        return out


def read_cstring(table: bytes, offset: int, what: str) -> str:
    """The NUL-terminated string at `offset` of a string table, decoded as UTF-8."""
    if offset >= len(table) and not (offset == 0 and not table):
        raise CodeObjectError(f"{what}: name offset {offset} is outside the string table "
                              f"({len(table)} bytes)")
    end = table.find(b"\0", offset)
    if end < 0:
        raise CodeObjectError(f"{what}: name at offset {offset} is not NUL-terminated")
    try:
        return table[offset:end].decode("utf-8")
    except UnicodeDecodeError:
        raise CodeObjectError(f"{what}: name at offset {offset} is not valid UTF-8") from None


def parse_elf(data: bytes) -> ElfFile:
    """Parse an ELF64 little-endian file, checking every offset and size against its length."""
    n = len(data)
    if n < 4 or data[:4] != ELF_MAGIC:
        raise CodeObjectError("not an ELF file (bad magic; expected 7f 45 4c 46)")
    if n < EHDR_SIZE:
        raise CodeObjectError(f"truncated ELF file: {n} bytes, the ELF header alone needs 64")
    if data[4] != ELFCLASS64:
        raise CodeObjectError(f"not a 64-bit ELF file (EI_CLASS = {data[4]}); AMDGPU code "
                              f"objects are ELF64")
    if data[5] != ELFDATA2LSB:
        raise CodeObjectError(f"not a little-endian ELF file (EI_DATA = {data[5]})")
    (_ident, e_type, machine, version, entry, phoff, shoff, flags, ehsize, phentsize, phnum,
     shentsize, shnum, shstrndx) = _EHDR.unpack_from(data, 0)
    header = ElfHeader(os_abi=data[EI_OSABI], abi_version=data[EI_ABIVERSION], type=e_type,
                       machine=machine, version=version, entry=entry, phoff=phoff, shoff=shoff,
                       flags=flags, ehsize=ehsize, phentsize=phentsize, phnum=phnum,
                       shentsize=shentsize, shnum=shnum, shstrndx=shstrndx)

    segments: list[ProgramHeader] = []
    if phnum:
        if phentsize != PHDR_SIZE:
            raise CodeObjectError(f"program header entry size {phentsize}, expected {PHDR_SIZE}")
        if phoff + phnum * PHDR_SIZE > n:
            raise CodeObjectError(f"truncated ELF file: {phnum} program headers at offset "
                                  f"{phoff} run past the end ({n} bytes)")
        for i in range(phnum):
            segments.append(ProgramHeader(*_PHDR.unpack_from(data, phoff + i * PHDR_SIZE)))

    sections: list[Section] = []
    if shnum:
        if shentsize != SHDR_SIZE:
            raise CodeObjectError(f"section header entry size {shentsize}, expected {SHDR_SIZE}")
        if shoff + shnum * SHDR_SIZE > n:
            raise CodeObjectError(f"truncated ELF file: {shnum} section headers at offset "
                                  f"{shoff} run past the end ({n} bytes)")
        for i in range(shnum):
            (name_off, sh_type, sh_flags, addr, off, size, link, info, align,
             entsize) = _SHDR.unpack_from(data, shoff + i * SHDR_SIZE)
            if sh_type not in (SHT_NOBITS, SHT_NULL):
                if off + size > n:
                    raise CodeObjectError(f"truncated ELF file: section {i} ({size} bytes at "
                                          f"offset {off}) runs past the end ({n} bytes)")
                body = data[off:off + size]
            else:
                body = b""
            sections.append(Section("", sh_type, sh_flags, addr, off, size, link, info, align,
                                    entsize, body, name_off))
        if shstrndx >= shnum:
            raise CodeObjectError(f"section name table index {shstrndx} out of range "
                                  f"({shnum} sections)")
        names = sections[shstrndx].data
        for i, sec in enumerate(sections):
            if i:
                sec.name = read_cstring(names, sec.name_offset, f"section {i}")
    return ElfFile(header, sections, segments, data)


def parse_notes(data: bytes, what: str) -> list[Note]:
    """The notes in a SHT_NOTE section body (4-byte aligned name and desc, as on AMDGPU)."""
    notes = []
    pos = 0
    while pos < len(data):
        if pos + 12 > len(data):
            raise CodeObjectError(f"{what}: truncated note header at offset {pos}")
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        name_start = pos + 12
        desc_start = name_start + align_to(namesz, 4)
        end = desc_start + align_to(descsz, 4)
        if desc_start + descsz > len(data):
            raise CodeObjectError(f"{what}: note at offset {pos} (name {namesz} bytes, desc "
                                  f"{descsz} bytes) runs past the section end")
        raw_name = data[name_start:name_start + namesz]
        try:
            name = raw_name.rstrip(b"\0").decode("utf-8")
        except UnicodeDecodeError:
            raise CodeObjectError(f"{what}: note name at offset {pos} is not UTF-8") from None
        notes.append(Note(name, ntype, data[desc_start:desc_start + descsz]))
        pos = end
    return notes


def parse_dynamic(data: bytes) -> list[tuple[int, int]]:
    """(tag, value) pairs of a .dynamic section, up to and excluding DT_NULL."""
    out = []
    for i in range(len(data) // DYN_SIZE):
        tag, val = _DYN.unpack_from(data, i * DYN_SIZE)
        if tag == DT_NULL:
            break
        out.append((tag, val))
    return out


def pack_dynamic(entries: list[tuple[int, int]]) -> bytes:
    """A .dynamic section body: the entries then DT_NULL."""
    return b"".join(_DYN.pack(t, v) for t, v in [*entries, (DT_NULL, 0)])


class StringTable:
    """An ELF string table under construction; like ld.lld, names are not shared or merged."""

    def __init__(self) -> None:
        self._data = bytearray(b"\0")

    def add(self, name: str) -> int:
        """Append `name` and return its offset (the empty name is offset 0)."""
        if not name:
            return 0
        off = len(self._data)
        self._data += name.encode() + b"\0"
        return off

    def bytes(self) -> bytes:
        """The table contents."""
        return bytes(self._data)


def sysv_hash(name: bytes) -> int:
    """The System V ELF hash of a symbol name."""
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def gnu_hash(name: bytes) -> int:
    """The GNU (DJB) hash of a symbol name."""
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def gnu_hash_buckets(count: int) -> int:
    """Number of .gnu.hash buckets ld.lld uses for `count` defined dynamic symbols."""
    return max(count // 4, 1)


def order_for_gnu_hash(names: list[str]) -> list[int]:
    """The permutation (indices into `names`) ld.lld sorts defined dynamic symbols into.

    ld.lld sorts by (hash % nbuckets, dynstr offset); dynstr offsets follow the original
    order, so a stable sort on the bucket index gives the same result.
    """
    nb = gnu_hash_buckets(len(names))
    return sorted(range(len(names)), key=lambda i: gnu_hash(names[i].encode()) % nb)


def build_gnu_hash(names: list[str], symndx: int) -> bytes:
    """A .gnu.hash section for the defined dynamic symbols `names` (already in hash order)
    that start at dynamic symbol index `symndx`, laid out as ld.lld lays it out for ELF64."""
    nbuckets = gnu_hash_buckets(len(names))
    # 12 bloom bits per symbol in 64-bit words, then LLVM's NextPowerOf2 (strictly greater).
    mask_words = 1 << (len(names) * 12 // 64).bit_length()
    shift2 = 26
    hashes = [gnu_hash(n.encode()) for n in names]
    bloom = [0] * mask_words
    for h in hashes:
        i = (h // 64) & (mask_words - 1)
        bloom[i] |= (1 << (h % 64)) | (1 << ((h >> shift2) % 64))
    buckets = [0] * nbuckets
    chain = []
    for pos, h in enumerate(hashes):
        b = h % nbuckets
        last = pos + 1 == len(hashes) or hashes[pos + 1] % nbuckets != b
        chain.append((h | 1) if last else (h & ~1))
        if pos == 0 or hashes[pos - 1] % nbuckets != b:
            buckets[b] = symndx + pos
    return (struct.pack("<IIII", nbuckets, symndx, mask_words, shift2)
            + struct.pack(f"<{mask_words}Q", *bloom)
            + struct.pack(f"<{nbuckets}I", *buckets)
            + struct.pack(f"<{len(chain)}I", *chain))


def build_sysv_hash(names: list[str]) -> bytes:
    """A .hash section for a dynamic symbol table whose entry i is named names[i] (entry 0 is
    the null symbol), with nbucket = nchain = number of symbols, as ld.lld builds it."""
    n = len(names)
    buckets = [0] * n
    chains = [0] * n
    for i, name in enumerate(names):
        if i == 0:
            continue
        b = sysv_hash(name.encode()) % n
        chains[i] = buckets[b]
        buckets[b] = i
    return struct.pack(f"<II{n}I{n}I", n, n, *buckets, *chains)
