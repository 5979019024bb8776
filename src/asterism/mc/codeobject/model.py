"""The in-memory code object: target, code, kernels (symbol + descriptor + metadata), note."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asterism.mc.codeobject.descriptor import KernelDescriptor
from asterism.mc.codeobject.elf import (
    STB_GLOBAL,
    STB_LOCAL,
    STT_NOTYPE,
    STV_DEFAULT,
    STV_PROTECTED,
    Note,
)
from asterism.target import DEFAULT_CODE_OBJECT_VERSION, Target, encode_e_flags, get_target
from asterism.version import __version__

# What the writer puts in .comment unless told otherwise (ld.lld puts "Linker: LLD <version>").
DEFAULT_COMMENT = f"asterism {__version__}".encode() + b"\0"


@dataclass
class KernelSymbol:
    """One kernel: its code (offset/size in .text), its descriptor and its metadata entry.

    `address` and `descriptor_address` are where the file read had them; the writer lays the
    file out itself and derives both (and the descriptor's kernel_code_entry_byte_offset)."""

    name: str
    offset: int
    descriptor: KernelDescriptor
    size: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    address: int = 0
    descriptor_address: int = 0
    binding: int = STB_GLOBAL
    visibility: int = STV_PROTECTED
    descriptor_binding: int = STB_GLOBAL
    descriptor_visibility: int = STV_DEFAULT

    @property
    def descriptor_name(self) -> str:
        """The descriptor symbol's name, "<kernel>.kd"."""
        return self.name + ".kd"


@dataclass
class ExtraSymbol:
    """A symbol other than the kernels' (labels, data), placed by section name and offset.

    `section` is ".text" or ".rodata" (the sections the writer produces), "*ABS*" for an
    absolute symbol whose `offset` is its value, or "" for an undefined symbol."""

    name: str
    section: str
    offset: int
    size: int = 0
    type: int = STT_NOTYPE
    bind: int = STB_LOCAL
    visibility: int = STV_DEFAULT


@dataclass
class CodeObject:
    """An AMDGPU HSA code object: what `read_code_object` returns and `write_code_object` takes.

    `metadata` is the whole NT_AMDGPU_METADATA map; each kernel's `metadata` is its entry in
    amdhsa.kernels (the same dict object after reading). When `metadata` is None the writer
    builds the map from the kernels' entries (see metadata.make_metadata), deriving a minimal
    entry from the descriptor for a kernel whose `metadata` is empty.
    """

    target: Target
    text: bytes
    kernels: list[KernelSymbol] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    code_object_version: int = DEFAULT_CODE_OBJECT_VERSION
    text_address: int = 0
    symbols: list[ExtraSymbol] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    comment: bytes = DEFAULT_COMMENT
    generic_version: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.target, str):
            self.target = get_target(self.target)

    @property
    def target_name(self) -> str:
        """The processor name, e.g. "gfx942"."""
        return self.target.name

    @property
    def made_by_asterism(self) -> bool:
        """True if asterism wrote this code object (its .comment names asterism, as the
        writer's default does); False for others' code objects (LLVM, AITER...)."""
        return self.comment.startswith(b"asterism ")

    @property
    def xnack(self) -> bool | None:
        """The xnack setting of the target ID (None = any)."""
        return self.target.xnack

    @property
    def sramecc(self) -> bool | None:
        """The sramecc setting of the target ID (None = any)."""
        return self.target.sramecc

    @property
    def e_flags(self) -> int:
        """The ELF header flags for this target, features and code object version."""
        flags = encode_e_flags(self.target, code_object_version=self.code_object_version)
        return flags | (self.generic_version << 24)

    def kernel(self, name: str) -> KernelSymbol:
        """The kernel called `name` (KeyError listing the kernels if absent)."""
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r}; kernels: {', '.join(k.name for k in self.kernels)}")
