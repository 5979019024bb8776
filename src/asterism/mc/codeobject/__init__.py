"""asterism.mc.codeobject: AMDGPU HSA code objects (ELF64) read and written without LLVM.

`read_code_object` turns any HSACO (v3-v6) into a `CodeObject` (target, code, kernels with
their descriptors and metadata, the metadata note); `write_code_object` lays one out the way
`ld.lld -shared` does. Submodules: elf (ELF64 structures), descriptor (the kernel
descriptor), metadata (the MessagePack note), reader, writer.
"""

from asterism.mc.codeobject.descriptor import (
    KERNEL_DESCRIPTOR_SIZE,
    ComputePgmRsrc1,
    ComputePgmRsrc2,
    ComputePgmRsrc3,
    KernargPreload,
    KernelCodeProperties,
    KernelDescriptor,
    amdhsa_directives,
    descriptor_from_directives,
    make_kernel_descriptor,
)
from asterism.mc.codeobject.elf import Note
from asterism.mc.codeobject.metadata import (
    decode_metadata,
    encode_metadata,
    find_kernel_metadata,
    kernel_metadata_from_descriptor,
    make_kernel_metadata,
    make_metadata,
)
from asterism.mc.codeobject.model import CodeObject, ExtraSymbol, KernelSymbol
from asterism.mc.codeobject.reader import load_code_object, read_code_object
from asterism.mc.codeobject.writer import write_code_object, write_file_atomic

__all__ = [
    "KERNEL_DESCRIPTOR_SIZE",
    "CodeObject",
    "ComputePgmRsrc1",
    "ComputePgmRsrc2",
    "ComputePgmRsrc3",
    "ExtraSymbol",
    "KernargPreload",
    "KernelCodeProperties",
    "KernelDescriptor",
    "KernelSymbol",
    "Note",
    "amdhsa_directives",
    "decode_metadata",
    "descriptor_from_directives",
    "encode_metadata",
    "find_kernel_metadata",
    "kernel_metadata_from_descriptor",
    "make_kernel_descriptor",
    "make_kernel_metadata",
    "make_metadata",
    "load_code_object",
    "read_code_object",
    "write_code_object",
    "write_file_atomic",
]
