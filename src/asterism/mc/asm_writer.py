"""Module-level assembly output: kernels with their `.amdhsa_kernel` and metadata blocks.

The instructions print through mc/printer.py (the one printing path) or a text function the
caller passes (mc/lossless.py's lossless text); this module adds the directives llvm-mc and
ld.lld need to build a code object from the text.
"""

from __future__ import annotations

from collections.abc import Callable

from asterism.mc import yaml_subset
from asterism.mc.codeobject import make_metadata
from asterism.mc.inst import Inst
from asterism.mc.kernel_abi import kernel_directives, kernel_metadata
from asterism.mc.printer import format_inst
from asterism.mc.program import LabelDef, McModule
from asterism.target import get_target

# Directive order (as LLVM prints the .amdhsa_kernel block).
DIRECTIVE_ORDER = [
    "group_segment_fixed_size", "private_segment_fixed_size", "kernarg_size",
    "user_sgpr_count", "user_sgpr_dispatch_ptr", "user_sgpr_queue_ptr",
    "user_sgpr_kernarg_segment_ptr", "user_sgpr_dispatch_id", "user_sgpr_private_segment_size",
    "uses_dynamic_stack", "enable_private_segment", "system_sgpr_workgroup_id_x",
    "system_sgpr_workgroup_id_y", "system_sgpr_workgroup_id_z", "system_sgpr_workgroup_info",
    "system_vgpr_workitem_id", "next_free_vgpr", "next_free_sgpr", "accum_offset",
    "reserve_vcc", "reserve_xnack_mask", "float_round_mode_32", "float_round_mode_16_64",
    "float_denorm_mode_32", "float_denorm_mode_16_64", "dx10_clamp", "ieee_mode",
    "fp16_overflow", "tg_split",
]


def print_module(module: McModule, inst_text: Callable[[Inst], str] = format_inst) -> str:
    """LLVM-syntax assembly for a whole module (llvm-mc + ld.lld turn it into an HSACO);
    `inst_text` prints one instruction (mc/lossless.py passes its lossless text)."""
    target = get_target(module.target + (module.features or ""))
    out = [f'\t.amdgcn_target "{target.target_id}"',
           f"\t.amdhsa_code_object_version {module.code_object_version}", "\t.text"]
    entries = []
    for n, kernel in enumerate(module.kernels):
        out += [f"\t.globl\t{kernel.name}", "\t.p2align\t8", f"\t.type\t{kernel.name},@function",
                f"{kernel.name}:"]
        for item in kernel.body:
            if isinstance(item, LabelDef):
                out.append(f"{item.name}:")
            elif isinstance(item, Inst):
                out.append("\t" + inst_text(item))
        out += [f".Lfunc_end{n}:", f"\t.size\t{kernel.name}, .Lfunc_end{n}-{kernel.name}", ""]
        directives = kernel_directives(kernel, target.name)
        entries.append(getattr(kernel, "metadata", None)
                       or kernel_metadata(kernel, target.name, directives))
        out += ["\t.rodata", "\t.p2align\t6", f"\t.amdhsa_kernel {kernel.name}"]
        keys = [k for k in DIRECTIVE_ORDER if k in directives]
        keys += [k for k in directives if k not in DIRECTIVE_ORDER]
        out += [f"\t\t.amdhsa_{k} {directives[k]}" for k in keys]
        out += ["\t.end_amdhsa_kernel", "\t.text", ""]
    meta = getattr(module, "metadata", None) or make_metadata(
        entries, target, code_object_version=module.code_object_version)
    out += ["\t.amdgpu_metadata", "---", yaml_subset.dump(meta).rstrip(), "...",
            "\t.end_amdgpu_metadata", ""]
    return "\n".join(out)
