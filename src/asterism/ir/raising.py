"""Raising code objects and assembly files to editable amdgcn IR (`asterism raise`).

A code object's kernels are decoded (every word kept: bits no operand shows go to the
instruction's `hidden_bits` attribute), branch targets become labelled blocks, the kernel
arguments, workgroup size and LDS size come from the metadata and descriptor, the dispatch
inputs the descriptor enables become ABI value ops, and the descriptor settings and metadata
keys the IR does not imply are kept as kernel/module attributes (ir/kernel_attrs.py). So
`asterism compile` of the raised IR gives the same .text, descriptors and metadata.

An assembly file is parsed, assembled once (for the descriptors and metadata it makes) and
its kernels are raised from the parsed instructions, so labels keep their names.

`relocatable=True` then turns registers into SSA values the passes can re-allocate
(ir/relocate.py).

What the IR cannot express is an error naming the address (or source line) and the reason:
words that do not decode (data in .text), bytes before the first kernel, indirect branches
and calls, branches out of the kernel or into the middle of an instruction, code that runs
past the kernel's end.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ModuleOp as BuiltinModuleOp
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from asterism.errors import AsterismError, VerifyError
from asterism.ir import kernel_attrs
from asterism.ir.from_mc import _KernelRaising
from asterism.ir.kernel_attrs import set_code_object_version
from asterism.ir.ops import KernelOp, ModuleOp
from asterism.ir.verify import BuiltOps, VerifiedFacts
from asterism.mc.inst import HIDDEN_BITS, Inst
from asterism.mc.operands import Label
from asterism.mc.program import AbiRequest, KernelArg, LabelDef, McKernel
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc

ELF_MAGIC = b"\x7fELF"
S_NOP_0 = 0xBF800000
KERNEL_ALIGN = 256  # (the assembler's kernel alignment, padded with s_nop 0)
# Descriptor directives and metadata keys that follow from the registers the code uses:
# recomputed after re-allocation instead of kept.
REGISTER_DIRECTIVES = ("next_free_vgpr", "next_free_sgpr", "accum_offset", "reserve_vcc",
                       "reserve_flat_scratch", "reserve_xnack_mask")
REGISTER_METADATA = (".sgpr_count", ".vgpr_count", ".agpr_count")


class RaiseError(AsterismError):
    """Code the raiser cannot express as IR (with its address or source line)."""


@dataclass
class RaiseOptions:
    """What `raise_file` does beyond the fixed-register IR."""

    kernel: str | None = None  # raise only this kernel
    target: str | None = None  # the expected target (a code object's own must match)
    relocatable: bool = False
    keep_pinned: str = ""  # registers that stay fixed with relocatable, "v[0:3],s[4:5]"
    drop_waits: bool = False
    drop_nops: bool = False


@dataclass
class _Original:
    """One kernel as the input has it: body, descriptor, metadata entry."""

    kernel: McKernel
    descriptor: Any
    metadata: dict[str, Any] | None
    addresses: dict[int, int] = field(default_factory=dict)  # id(Inst) -> address
    meta_path: tuple[str | int, ...] = ()  # where `metadata` is in the map (for messages)
    raw: dict[int, bytes] = field(default_factory=dict)  # id(Inst) -> its words in .text


# ---------------------------------------------------------------------- entry points

def raise_file(source: bytes | str | os.PathLike[str], options: RaiseOptions | None = None,
               filename: str | None = None) -> BuiltinModuleOp:
    """The IR of a code object or assembly file (path or bytes/text)."""
    options = options or RaiseOptions()
    data, name = _read(source, filename)
    # (the ops made would otherwise start full collections that re-scan the growing IR; see
    # support.gcpause)
    was_enabled = pause_cyclic_gc()
    try:
        if data[:4] == ELF_MAGIC:
            return raise_code_object(data, options, name)
        from asterism.textio import decode_text

        return raise_asm(decode_text(data, name), options, name)
    finally:
        resume_cyclic_gc(was_enabled)


def raise_code_object(data: bytes, options: RaiseOptions | None = None,
                      filename: str = "<code object>") -> BuiltinModuleOp:
    """The IR of a code object's kernels."""
    from asterism.errors import CodeObjectError
    from asterism.mc.codeobject import read_code_object

    options = options or RaiseOptions()
    try:
        obj = read_code_object(data)
    except CodeObjectError as err:
        raise CodeObjectError(f"{filename}: {err.message}") from None
    _check_target(obj.target, options.target, filename)
    originals = _decode_kernels(obj, filename)
    features = obj.target.target_id[len("amdgcn-amd-amdhsa--" + obj.target.name):]
    return _raise(originals, obj.target.name, features, obj.metadata or {}, options, filename,
                  obj.code_object_version)


def raise_asm(text: str, options: RaiseOptions | None = None,
              filename: str = "<asm>") -> BuiltinModuleOp:
    """The IR of an assembly file's kernels (labels keep their names)."""
    from asterism.mc.assembler import assemble_module
    from asterism.mc.parser import parse_asm

    options = options or RaiseOptions()
    module = parse_asm(text, filename, options.target)
    obj = assemble_module(module)
    by_name = {k.name: k for k in obj.kernels}
    originals = []
    for mk in module.kernels:
        for item in mk.body:
            if isinstance(item, Inst) and item.mnemonic == ".long":
                raise RaiseError("these words do not decode as instructions (data in the "
                                 "code): the IR has no data", item.loc)
        sym = by_name[mk.name]
        originals.append(_Original(_bare_kernel(mk.name, mk.body), sym.descriptor,
                                   sym.metadata, meta_path=_entry_path(obj.metadata,
                                                                       sym.metadata)))
    return _raise(originals, module.target, module.features or "", obj.metadata or {}, options,
                  filename, module.code_object_version)


def _read(source, filename: str | None) -> tuple[bytes, str]:
    if isinstance(source, bytes):
        return source, filename or "<input>"
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            return f.read(), filename or path
    except OSError as err:
        raise AsterismError(f"cannot read {path}: {err.strerror}") from None


def _check_target(target, wanted: str | None, filename: str) -> None:
    if wanted is None:
        return
    from asterism.target import get_target

    if get_target(wanted).name != target.name:
        raise AsterismError(f"{filename}: the code object is for {target.name}, not {wanted}")


# ---------------------------------------------------------------------- decoding

def _at(filename: str, address: int) -> str:
    return f"{filename}: 0x{address:x}"


def _decode_kernels(obj, filename: str) -> list[_Original]:
    """Each kernel's decoded body, labels at branch targets, with the checks that keep the
    raised IR exact."""
    from asterism.mc.codeobject import find_kernel_metadata
    from asterism.mc.decoder import decode_code

    kernels = sorted(obj.kernels, key=lambda k: k.offset)
    if not kernels:
        raise RaiseError(f"{filename}: the code object has no kernel")
    if kernels[0].offset:
        raise RaiseError(f"{_at(filename, 0)}: .text has {kernels[0].offset} bytes before its "
                         f"first kernel '{kernels[0].name}': no kernel holds them")
    items = decode_code(obj.text, obj.target.name, 0, skip_undecodable=True)
    names = _label_symbols(obj)
    ends = [k.offset for k in kernels[1:]] + [len(obj.text)]
    out = []
    for index, (sym, end) in enumerate(zip(kernels, ends)):
        body = [d for d in items if sym.offset <= _address(d) < end]
        last = index == len(kernels) - 1
        body = _without_padding(body, end, last)
        kernel, addresses, raw = _kernel_of(sym.name, body, sym.offset, end, filename, names)
        meta = find_kernel_metadata(obj.metadata, sym.name) if obj.metadata else None
        meta = meta or sym.metadata or None
        out.append(_Original(kernel, sym.descriptor, meta, addresses,
                             _entry_path(obj.metadata, meta), raw))
    return out


def _entry_path(metadata: dict[str, Any] | None, entry: dict[str, Any] | None
                ) -> tuple[str | int, ...]:
    """("amdhsa.kernels", <index>) of a kernel's metadata entry, for messages."""
    for n, e in enumerate((metadata or {}).get("amdhsa.kernels", [])):
        if e is entry:
            return ("amdhsa.kernels", n)
    return ("amdhsa.kernels",)


def _address(item) -> int:
    return item[0] if isinstance(item, tuple) else item.address


def _without_padding(body: list, end: int, last: bool) -> list:
    """`body` without the s_nop 0 words after its last instruction that the assembler's
    kernel alignment puts back (the last kernel keeps them: nothing follows to align)."""
    cut = len(body)
    while cut and not isinstance(body[cut - 1], tuple) and body[cut - 1].raw == \
            S_NOP_0.to_bytes(4, "little"):
        cut -= 1
    if last or cut == len(body) or cut == 0:
        return body
    stop = body[cut].address
    if -(-stop // KERNEL_ALIGN) * KERNEL_ALIGN != end:
        return body
    return body[:cut]


def _label_symbols(obj) -> dict[int, str]:
    """Names of the code object's .text symbols that are not kernels, by offset (labels of
    hand-written assembly, such as AITER's `label_0389`): raised blocks keep them exactly
    (ir.text.keep_block_name keeps a `_<digits>` suffix xDSL's name setter would strip).
    Names that are not valid block names (or xDSL's own `bb<N>`) are left out."""
    from xdsl.ir import Block

    kernels = {k.name for k in obj.kernels}
    out: dict[int, str] = {}
    for sym in getattr(obj, "symbols", ()) or ():
        if sym.section != ".text" or sym.name in kernels or sym.offset in out:
            continue
        if Block.is_valid_name(sym.name) and not Block.is_default_block_name(sym.name):
            out[sym.offset] = sym.name
    return out


def _kernel_of(name: str, body: list, start: int, end: int, filename: str,
               names: dict[int, str] | None = None
               ) -> tuple[McKernel, dict[int, int], dict[int, bytes]]:
    """An McKernel of decoded items (exact instructions, branches to labels), checked; the
    address and the words of each instruction, by id."""
    from asterism.mc.exact import exact_inst

    starts = {_address(d) for d in body}
    labels: set[int] = set()
    out: list[Inst | LabelDef] = []
    addresses: dict[int, int] = {}
    raw: dict[int, bytes] = {}
    targets: dict[int, int] = {}
    for d in body:
        if isinstance(d, tuple):
            raise RaiseError(f"{_at(filename, d[0])}: the word 0x{d[1]:08x} does not decode as "
                             f"an instruction (data in .text of kernel '{name}'?): the IR has "
                             "no data")
        if d.address + d.size > end:
            raise RaiseError(f"{_at(filename, d.address)}: {d.inst.mnemonic} runs past the end "
                             f"of kernel '{name}' (0x{end:x})")
        target = _branch_target(d, name, filename)
        if target is not None:
            if target not in starts:
                where = "outside the kernel" if not start <= target < end else \
                    "into the middle of an instruction"
                raise RaiseError(f"{_at(filename, d.address)}: {d.inst.mnemonic} jumps to "
                                 f"0x{target:x}, {where} ('{name}' is 0x{start:x}..0x{end:x})")
            targets[d.address] = target
            labels.add(target)
    names = names or {}
    labels |= {a for a in names if start <= a < end and a in starts}

    def label(address: int) -> str:
        return names.get(address) or block_label(address)

    for d in body:
        if d.address in labels:
            out.append(LabelDef(label(d.address)))
        inst = _ir_inst(exact_inst(d), d, filename)
        if d.address in targets:
            inst = copy.copy(inst)
            inst.operands = [Label(label(targets[d.address])) if s.syntax == "label"
                             else o for s, o in zip(inst.form.operands, inst.operands)]
        addresses[id(inst)] = d.address
        raw[id(inst)] = d.raw
        out.append(inst)
    return _bare_kernel(name, out), addresses, raw


def _ir_inst(inst: Inst | None, d, filename: str) -> Inst:
    """`inst` with the modifiers the IR spells (integers for Syntax values) and every other
    bit of its words in `hidden_bits`."""
    from asterism.ir.ops import MODIFIER_NAMES
    from asterism.mc.encoder import encode_inst
    from asterism.mc.operands import Syntax

    if inst is None:
        raise RaiseError(f"{_at(filename, d.address)}: {d.inst.mnemonic} ({d.raw.hex()}) does "
                         "not encode back to its bytes")
    mods = {k: v.value if isinstance(v, Syntax) else v for k, v in inst.modifiers.items()
            if k in MODIFIER_NAMES}
    if mods == inst.modifiers:
        return inst
    inst = copy.copy(inst)
    inst.modifiers = mods
    try:
        again = encode_inst(inst, d.address)
    except AsterismError as err:
        raise RaiseError(f"{_at(filename, d.address)}: {d.inst.mnemonic}: the IR has no "
                         f"modifier for what its words hold ({err.message})") from None
    hidden = int.from_bytes(again, "little") ^ int.from_bytes(d.raw, "little")
    if len(again) != d.size:
        raise RaiseError(f"{_at(filename, d.address)}: {d.inst.mnemonic}: the IR's modifiers "
                         "give another instruction size")
    if hidden:
        inst.modifiers[HIDDEN_BITS] = hidden
    return inst


def block_label(address: int) -> str:
    """The label of a raised branch target: `.L` + its address (a valid block name that
    lowers to a local label, as LLVM's; no `_<digits>` suffix, which xDSL's printer treats
    as its own uniquing suffix)."""
    return f".L0x{address:x}"


def _branch_target(d, name: str, filename: str) -> int | None:
    """The address a direct branch jumps to; RaiseError for jumps the IR cannot express."""
    from asterism.mc.listing import branch_target

    form = d.inst.form
    flags = form.instruction.flags if form is not None else frozenset()
    if "call" in flags:
        raise RaiseError(f"{_at(filename, d.address)}: {d.inst.mnemonic} is a call: kernels "
                         "with calls (subroutines) are not raised")
    target = branch_target(d)
    if target is None and "branch" in flags:
        raise RaiseError(f"{_at(filename, d.address)}: {d.inst.mnemonic} is an indirect branch "
                         "(its target is a register value): the raiser cannot resolve it to "
                         "a block")
    return target


def _bare_kernel(name: str, body: list) -> McKernel:
    return McKernel(name, body=list(body))


# ---------------------------------------------------------------------- kernel facts

def _abi_request(kd) -> AbiRequest:
    """The dispatch inputs the descriptor enables, as the IR's ABI ops request them."""
    props, rsrc2 = kd.kernel_code_properties, kd.compute_pgm_rsrc2
    return AbiRequest(
        kernarg_ptr=bool(props.enable_sgpr_kernarg_segment_ptr),
        dispatch_ptr=bool(props.enable_sgpr_dispatch_ptr),
        queue_ptr=bool(props.enable_sgpr_queue_ptr),
        dispatch_id=bool(props.enable_sgpr_dispatch_id),
        workgroup_ids=(bool(rsrc2.enable_sgpr_workgroup_id_x),
                       bool(rsrc2.enable_sgpr_workgroup_id_y),
                       bool(rsrc2.enable_sgpr_workgroup_id_z)),
        workitem_id_dims=rsrc2.enable_vgpr_workitem_id + 1)


def abi_matches(kd, abi: AbiRequest) -> bool:
    """True if the IR's ABI ops (user SGPRs from s0, then workgroup ids) put the inputs in the
    registers this descriptor's dispatch does: no user SGPR the IR has no op for."""
    from asterism.mc.kernel_abi import user_sgpr_layout

    props = kd.kernel_code_properties
    if props.enable_sgpr_private_segment_buffer or props.enable_sgpr_flat_scratch_init \
            or props.enable_sgpr_private_segment_size or kd.kernarg_preload.length:
        return False
    return user_sgpr_layout(abi)["_count"] == kd.compute_pgm_rsrc2.user_sgpr_count


def _kernel_args(meta: dict[str, Any] | None, path: tuple[str | int, ...]) -> list[KernelArg]:
    """The explicit arguments of a metadata entry (mc.kernel_abi's reader: gaps padded)."""
    from asterism.mc.kernel_abi import kernel_args_from_metadata

    return kernel_args_from_metadata((meta or {}).get(".args", []), (*path, ".args"))


def _workgroup_size(meta: dict[str, Any] | None) -> tuple[int, int, int]:
    wg = (meta or {}).get(".reqd_workgroup_size")
    if isinstance(wg, list) and len(wg) == 3:
        return tuple(int(x) for x in wg)  # type: ignore[return-value]
    flat = int((meta or {}).get(".max_flat_workgroup_size", 64) or 64)
    return (min(flat, 1024), 1, 1)


# ---------------------------------------------------------------------- raising

def _raise(originals: list[_Original], target: str, features: str, metadata: dict[str, Any],
           options: RaiseOptions, filename: str, version: int) -> BuiltinModuleOp:
    if options.kernel is not None:
        chosen = [o for o in originals if o.kernel.name == options.kernel]
        if not chosen:
            names = ", ".join(o.kernel.name for o in originals)
            raise AsterismError(f"{filename}: no kernel '{options.kernel}' (kernels: {names})")
        originals = chosen
    checked = _Checked(VerifiedFacts(), BuiltOps())
    kernels = [_raise_kernel(o, target, filename, checked) for o in originals]
    amod = ModuleOp("module", target, kernels, features=features or None)
    set_code_object_version(amod, version)
    module = BuiltinModuleOp([amod])
    _keep_descriptors_and_metadata(module, amod, originals, metadata, options, checked)
    if options.relocatable:
        from asterism.ir.relocate import relocate_module

        relocate_module(module, options)
    return module


@dataclass
class _Checked:
    """The instruction ops the raiser checked on its own (each lowered and encoded back):
    their forms and the ops as they were, so lowering the new module does not match them
    again (verify_module's `built`; everything else is verified as always)."""

    facts: VerifiedFacts
    built: BuiltOps


def _raise_kernel(original: _Original, target: str, filename: str,
                  checked: _Checked) -> KernelOp:
    kd, meta = original.descriptor, original.metadata
    mk = original.kernel
    abi = _abi_request(kd)
    # (without the ABI ops the registers stay plain fixed registers; the descriptor
    # attribute keeps the enables)
    mk.abi = abi if abi_matches(kd, abi) else AbiRequest()
    try:
        mk.args = _kernel_args(meta, original.meta_path)
    except VerifyError as err:
        raise RaiseError(f"{filename}: {err.message}") from None
    mk.workgroup_size = _workgroup_size(meta)
    mk.lds_size = kd.group_segment_fixed_size
    raiser = _AddressedRaising(mk, target, original.addresses, filename, original.raw)
    try:
        op = raiser.run()
    except VerifyError as err:
        raise RaiseError(f"{filename}: kernel '{mk.name}': {err.message}", err.location) \
            from None
    _check_instructions(op, raiser, filename, checked)
    return op


class _AddressedRaising(_KernelRaising):
    """The raiser, remembering the address (or source line) of every instruction op."""

    def __init__(self, kernel: McKernel, target: str, addresses: dict[int, int],
                 filename: str, raw: dict[int, bytes] | None = None):
        super().__init__(kernel, target)
        self.addresses = addresses
        self.raw = raw or {}  # id(Inst) -> the words it was decoded from
        self.filename = filename
        self.origin: dict[Operation, str] = {}
        self.words: dict[Operation, Inst] = {}  # the instruction each op was raised from

    def instruction(self, inst: Inst, form) -> Operation:
        """The instruction op of `inst`, its origin noted for error messages."""
        try:
            op = super().instruction(inst, form)
        except VerifyError as err:
            raise RaiseError(f"{self.where(inst)}: {inst.mnemonic}: {err.message}") from None
        self.origin[op] = self.where(inst)
        self.words[op] = inst
        return op

    def where(self, inst: Inst) -> str:
        """`0x<address>` of a decoded instruction, `file:line:col` of a parsed one."""
        address = self.addresses.get(id(inst))
        if address is not None:
            return f"{self.filename}: 0x{address:x}"
        return str(inst.loc) if inst.loc is not None else self.filename


def _check_instructions(kernel: KernelOp, raiser: _AddressedRaising, filename: str,
                        checked: _Checked) -> None:
    """RaiseError (with the address) for an instruction the decoder accepts but the IR's
    or the MC layer's rules refuse (trap registers, misaligned ranges, constant-bus
    overuse...) or that would not come back as the same words: each instruction op is
    lowered and encoded once on its own. The ops that pass as they are go to `checked`."""
    from collections import Counter

    from asterism.ir.ops import InstructionOp
    from asterism.ir.to_mc import _KernelLowering
    from asterism.ir.verify import check_instruction_keyed
    from asterism.isa import get_isa
    from asterism.mc.encoder import encode_inst

    isa = get_isa(raiser.target)
    forms = checked.facts.forms
    lowering = _KernelLowering(kernel, isa, Counter(), VerifiedFacts(forms=forms))
    for op in kernel.walk():
        if not isinstance(op, InstructionOp):
            continue
        where = raiser.origin.get(op, filename)
        try:
            # (the full check, as verify_module makes it: its result is kept for lowering)
            forms[op] = check_instruction_keyed(op, isa, lowering.layout)
            again = encode_inst(lowering.lower_instruction(op))
        except AsterismError as err:
            forms.pop(op, None)  # (decode_only or refused: verified again when lowered)
            why = _assembler_refuses(raiser.words.get(op))
            if why is None:  # (the assembler takes it: the IR should too)
                raise RaiseError(f"{where}: {op.mnemonic_text}: the IR cannot express this "
                                 f"instruction: {err.message}") from None
            again = _decode_only(op, lowering, why, where)
        else:
            checked.built.add(op)
        source = raiser.words.get(op)
        # (a decoded instruction encodes back to its words, hidden bits included (see
        # mc.exact): equal words need no second encoding)
        if source is not None and again != raiser.raw.get(id(source)) and \
                again != encode_inst(source):
            raise RaiseError(f"{where}: {op.mnemonic_text}: the IR does not give back its "
                             f"words ({encode_inst(source).hex()} -> {again.hex()})")


def _assembler_refuses(inst: Inst | None) -> str | None:
    """Why the assembler's rules (the MC layer's, as LLVM's) refuse a decoded instruction;
    None if they take it."""
    from asterism.mc.matcher import MatchError as McMatchError
    from asterism.mc.matcher import match_form

    if inst is None or inst.form is None:
        return None
    plain = copy.copy(inst)
    plain.modifiers = {k: v for k, v in inst.modifiers.items() if k != HIDDEN_BITS}
    try:
        match_form(plain, inst.form)
    except McMatchError as err:
        return err.message
    return None


def _decode_only(op, lowering, why: str, where: str) -> bytes:
    """The words of an instruction the decoder accepts but the assembler's rules refuse
    (`why`): marked `decode_only` with that reason, its operands are checked for their kinds
    only and it is encoded as it is. RaiseError if even that fails."""
    from asterism.mc.encoder import encode_inst

    op.attributes[kernel_attrs.DECODE_ONLY_ATTR] = StringAttr(why)
    try:
        return encode_inst(lowering.lower_instruction(op))
    except AsterismError as err:
        raise RaiseError(f"{where}: {op.mnemonic_text}: the IR cannot express this "
                         f"instruction (decoded, refused by the assembler: {why}): "
                         f"{err.message}") from None


def _keep_descriptors_and_metadata(module: BuiltinModuleOp, amod: ModuleOp,
                                   originals: list[_Original], metadata: dict[str, Any],
                                   options: RaiseOptions, checked: _Checked) -> None:
    """Set the `descriptor`/`metadata` attributes: what lowering would not make by itself."""
    from asterism.ir.to_mc import lower_module

    lowered = lower_module(module, checked.facts, checked.built)
    kernel_ops = [op for op in amod.body.ops if isinstance(op, KernelOp)]
    for op, low, original in zip(kernel_ops, lowered.kernels, originals):
        desc = _descriptor_overrides(low, original.descriptor, lowered.target)
        if options.relocatable:
            desc = {k: v for k, v in desc.items() if k not in REGISTER_DIRECTIVES}
        if desc:
            op.attributes[kernel_attrs.DESCRIPTOR_ATTR] = kernel_attrs.overrides_attr(
                desc, f"kernel {low.name}: descriptor")
        kernel_attrs.apply_kernel_attributes(op, low, lowered.target)
        if original.metadata:
            computed = kernel_attrs.computed_kernel_metadata(low, lowered.target)
            meta = kernel_attrs.diff(original.metadata, computed)
            if options.relocatable:
                meta = {k: v for k, v in meta.items() if k not in REGISTER_METADATA}
            if meta:
                op.attributes[kernel_attrs.METADATA_ATTR] = kernel_attrs.overrides_attr(
                    meta, f"kernel {low.name}: metadata")
            kernel_attrs.apply_kernel_attributes(op, low, lowered.target)
    if metadata:
        original = dict(metadata)
        if options.kernel is not None or options.relocatable:
            # (one kernel of several, or register counts left to re-allocation: the
            # kernels' entries are the kernels' own)
            original.pop("amdhsa.kernels", None)
            computed = {k: v for k, v in kernel_attrs.computed_module_metadata(lowered).items()
                        if k != "amdhsa.kernels"}
        else:
            computed = kernel_attrs.computed_module_metadata(lowered)
        meta = kernel_attrs.diff(original, computed)
        if meta:
            amod.attributes[kernel_attrs.METADATA_ATTR] = kernel_attrs.overrides_attr(
                meta, "module metadata")


def _descriptor_overrides(low: McKernel, kd, target: str) -> dict[str, int]:
    """The directive values that, laid over what lowering computes, give descriptor `kd`."""
    from asterism.mc.codeobject import amdhsa_directives, descriptor_from_directives
    from asterism.mc.kernel_abi import kernel_directives
    from asterism.mc.lossless import reassemblable_directives
    from asterism.target import get_target

    t = get_target(target)
    wanted = reassemblable_directives(kd, t)
    computed = kernel_directives(low, target)
    full = amdhsa_directives(descriptor_from_directives(t, computed), t)
    full.update(computed)
    over = {k: v for k, v in wanted.items() if full.get(k) != v}

    def same(d: dict[str, int]) -> bool:
        try:
            made = descriptor_from_directives(t, {**computed, **d})
        except AsterismError:
            return False
        return dataclasses.replace(made, kernel_code_entry_byte_offset=0) == \
            dataclasses.replace(kd, kernel_code_entry_byte_offset=0)

    if same(over):
        return over
    if same(wanted):
        return wanted
    raise RaiseError(f"kernel '{low.name}': no .amdhsa directives give its descriptor back "
                     "(a descriptor field the assembler cannot set)")


def raise_kernel(source, kernel: str | None = None, *, target: str | None = None,
                 relocatable: bool = False, keep_pinned: str = "", drop_waits: bool = False,
                 drop_nops: bool = False) -> BuiltinModuleOp:
    """Raise a code object or assembly file (path or bytes) to amdgcn IR: every kernel, or
    the one named `kernel`; fixed registers unless `relocatable`."""
    return raise_file(source, RaiseOptions(kernel, target, relocatable, keep_pinned,
                                           drop_waits, drop_nops))


__all__ = ["RaiseError", "RaiseOptions", "raise_file", "raise_code_object", "raise_asm",
           "raise_kernel", "block_label", "abi_matches"]
