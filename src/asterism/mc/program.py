"""Kernels at the MC level: instruction streams plus what the descriptor and metadata need.

The IR is lowered to an `McModule` once (ir/to_mc.py); the asm parser produces one from a .s
file; the asm printer, the encoder/HSACO writer and the runtime all start from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asterism.errors import SourceLocation
from asterism.mc.inst import Inst
from asterism.target import DEFAULT_CODE_OBJECT_VERSION


@dataclass
class KernelArg:
    """One explicit kernel argument as the code object metadata describes it."""

    name: str
    kind: str  # "buffer" (global pointer) or "value" (by-value scalar)
    size: int  # bytes
    offset: int = -1  # byte offset in the kernarg segment; -1 = assign in order
    align: int = 0  # 0 = natural (size, capped at 8)
    access: str | None = None  # read_only, write_only, read_write (buffers)
    dtype: str | None = None  # element type hint for the runtime ("f32", "i32", ...)


@dataclass
class LabelDef:
    """A label in an instruction stream (a branch target)."""

    name: str


@dataclass
class AbiRequest:
    """The dispatch ABI inputs a kernel reads (they set the descriptor's enable bits)."""

    kernarg_ptr: bool = False  # user SGPR pair: kernel argument segment pointer
    dispatch_ptr: bool = False  # user SGPR pair: hsa_kernel_dispatch_packet_t pointer
    queue_ptr: bool = False
    dispatch_id: bool = False
    workgroup_ids: tuple[bool, bool, bool] = (False, False, False)  # system SGPRs
    workitem_id_dims: int = 1  # 1: v0 = x; 2: x,y; 3: x,y,z (packed in v0 on gfx90a+)


@dataclass
class McKernel:
    """One kernel: its instruction stream, arguments and launch properties."""

    name: str
    body: list[Inst | LabelDef] = field(default_factory=list)
    args: list[KernelArg] = field(default_factory=list)
    workgroup_size: tuple[int, int, int] = (64, 1, 1)
    lds_size: int = 0  # bytes of group segment (LDS) statically allocated
    abi: AbiRequest = field(default_factory=AbiRequest)
    # Register counts; None = compute from the instructions that are used.
    vgpr_count: int | None = None
    agpr_count: int | None = None
    sgpr_count: int | None = None
    # Explicit descriptor values from an `.amdhsa_kernel` block (asm input), by directive name.
    descriptor_directives: dict[str, int] = field(default_factory=dict)
    # Where that block starts (errors in its values are reported there).
    descriptor_loc: SourceLocation | None = None


@dataclass
class McModule:
    """A set of kernels for one target (one code object)."""

    target: str  # "gfx942", "gfx950"
    kernels: list[McKernel] = field(default_factory=list)
    features: str = ""  # target features, e.g. ":sramecc+:xnack-"
    # The code object version written (ELF ABI version, e_flags layout, metadata
    # amdhsa.version): `.amdhsa_code_object_version` of an assembly file, or a raised
    # object's own, kept on the way back.
    code_object_version: int = DEFAULT_CODE_OBJECT_VERSION
