"""ISA statistics of a code object: registers, LDS, occupancy, instruction mix, waits.

Works on any HSACO (ours, LLVM's, hand-written ones) and on .mlir/.s inputs (compiled or
assembled first). Instruction classes come from the ISA database (unit, flags), never from
mnemonic patterns.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field

from asterism.isa.syntax import WAITCNT_MAX, decode_waitcnt
from asterism.mc.decoder import DecodedInst, get_decoder
from asterism.mc.kernel_abi import register_usage
from asterism.mc.operands import Syntax
from asterism.target import get_target, occupancy
from asterism.target.registers import extra_sgprs
from asterism.target.timing import timing_class

# What each register figure counts, printed with --json so a reader can compare them with the
# code object's metadata (.vgpr_count, .sgpr_count) and llvm-objdump's descriptor directives.
REGISTER_FIELDS = {
    "vgprs": "ArchVGPRs the descriptor allocates per lane (below accum_offset when the code "
             "uses AGPRs, else the whole unified allocation)",
    "agprs": "AccVGPRs the descriptor allocates per lane (from accum_offset up)",
    "vgprs_total": "vgprs + agprs: the unified VGPR allocation, what metadata .vgpr_count "
                   "and the descriptor's .amdhsa_next_free_vgpr give",
    "sgprs": "SGPRs the descriptor allocates per wave (GRANULATED_WAVEFRONT_SGPR_COUNT, "
             "llvm-objdump's .amdhsa_next_free_sgpr); VCC, FLAT_SCRATCH and XNACK_MASK, when "
             "the code uses them, live inside this allocation",
    "sgprs_reserved": "SGPRs the descriptor reserves for VCC, FLAT_SCRATCH, XNACK_MASK: "
                      "none, the descriptor has no such field (llvm-objdump reads "
                      ".amdhsa_reserve_vcc 0, .amdhsa_reserve_xnack_mask 0)",
    "sgprs_total": "sgprs + sgprs_reserved (= sgprs); metadata .sgpr_count counts the same",
    "next_free_sgpr": "sgprs less what an assembler reserves beyond .amdhsa_next_free_sgpr "
                      "(LLVM's getNumExtraSGPRs: 6 with architected flat scratch): the figure "
                      "target.occupancy() takes",
    "used_vgprs": "highest VGPR index the code names + 1 (likewise used_agprs, used_sgprs)",
    "used_special_sgprs": "VCC, FLAT_SCRATCH, XNACK_MASK as the code names them (operands "
                          "and implicit VCC uses)",
}


@dataclass
class KernelStats:
    """Everything `asterism stats` reports about one kernel."""

    name: str
    target: str
    code_bytes: int
    instructions: int
    # Registers as the descriptor allocates them, and as the code actually uses them
    # (REGISTER_FIELDS says what each counts).
    vgprs: int
    agprs: int
    sgprs: int
    accum_offset: int
    vgprs_total: int
    sgprs_reserved: int
    sgprs_total: int
    next_free_sgpr: int
    metadata_vgpr_count: int | None
    metadata_sgpr_count: int | None
    used_vgprs: int
    used_agprs: int
    used_sgprs: int
    used_special_sgprs: list[str]
    lds_bytes: int
    scratch_bytes: int
    kernarg_bytes: int
    workgroup_size: list[int]
    waves_per_simd: int
    occupancy_limited_by: list[str]
    mix: dict[str, int] = field(default_factory=dict)
    mfma: dict[str, int] = field(default_factory=dict)
    waitcnt: dict[str, int] = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)


def classify(d: DecodedInst) -> str:
    """The mix category of one instruction (from the ISA database facts)."""
    inst = d.inst
    facts = inst.form.instruction
    unit, flags = facts.unit, facts.flags
    m = facts.mnemonic
    if m == "s_waitcnt":
        return "s_waitcnt"
    if m == "s_nop":
        return "s_nop"
    if "workgroup_barrier" in flags:
        return "barrier"
    if unit == "mfma":
        # The MAI unit also holds v_accvgpr_read/write, VALU moves with no matrix pass.
        return "mfma" if timing_class(facts) == "mfma" else "valu"
    if unit == "vmem":
        if "atomic" in flags:
            return "vmem_atomic"
        if "lds_dma" in flags or inst.modifiers.get("lds"):
            return "vmem_load_lds"
        return "vmem_store" if "may_store" in flags and "may_load" not in flags else "vmem_load"
    if unit == "lds":
        if "may_store" in flags and "may_load" not in flags:
            return "ds_write"
        return "ds_read" if "may_load" in flags else "ds_other"
    if unit == "smem":
        return "smem_store" if "may_store" in flags and "may_load" not in flags else "smem"
    if unit == "branch":
        return "branch" if "branch" in flags else "program_end"
    if unit in ("valu", "trans"):
        return "valu"
    return "salu"


SPECIAL_SGPRS = ("vcc", "flat_scratch", "xnack_mask")


def _used_registers(items: list[DecodedInst]) -> tuple[int, int, int, list[str]]:
    """Next free VGPR, AGPR, SGPR the code names, and the special SGPRs it uses."""
    use = register_usage([d.inst for d in items])
    # (RegisterUsage has a flag named after each special SGPR)
    return use.vgprs, use.agprs, use.sgprs, [n for n in SPECIAL_SGPRS if getattr(use, n)]


def _meta_int(meta: dict, key: str) -> int | None:
    value = meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _waitcnt_label(simm: int) -> str:
    counts = decode_waitcnt(simm)
    parts = [f"{n}({counts[n]})" for n in ("vmcnt", "expcnt", "lgkmcnt")
             if counts[n] != WAITCNT_MAX[n]]
    return " ".join(parts) or "none"


def kernel_stats(obj, kernel, items: list[DecodedInst]) -> KernelStats:
    """Statistics of one kernel whose decoded instructions are `items`."""
    t = get_target(obj.target.name)
    kd = kernel.descriptor
    total = kd.next_free_vgpr(t)
    accum = kd.accum_offset(t)
    used_v, used_a, used_s, specials = _used_registers(items)
    # The descriptor gives the unified-file allocation; it splits at accum_offset only when
    # the code uses AGPRs (otherwise every entry is an ArchVGPR).
    agprs = max(0, total - accum) if used_a else 0
    vgprs = accum if agprs else total
    # The descriptor gives the wave's whole SGPR allocation and records no reserved
    # VCC/FLAT_SCRATCH/XNACK_MASK (llvm-objdump: .amdhsa_reserve_* 0). occupancy() takes
    # next_free_sgpr and adds what an assembler reserves (extra_sgprs); handing it the
    # allocation less that makes it count exactly the allocation.
    sgprs = kd.sgprs(t)
    reserved = 0
    next_free_sgpr = max(0, sgprs - extra_sgprs(t))
    meta = kernel.metadata or {}
    wg = list(meta.get(".reqd_workgroup_size") or [meta.get(".max_flat_workgroup_size", 64), 1, 1])
    waves_per_wg = max(1, -(-(wg[0] * wg[1] * wg[2]) // t.wave_size))
    occ = occupancy(t, vgprs=min(vgprs, t.vgpr.arch), agprs=min(agprs, t.vgpr.acc),
                    sgprs=min(next_free_sgpr, t.sgpr.addressable),
                    lds_bytes=min(kd.group_segment_fixed_size, t.lds.bytes_per_workgroup),
                    waves_per_workgroup=min(waves_per_wg, t.max_waves_per_workgroup))
    mix, mfma, waits = Counter(), Counter(), Counter()
    for d in items:
        cat = classify(d)
        mix[cat] += 1
        if cat == "mfma":
            mfma[d.inst.form.mnemonic] += 1
        if cat == "s_waitcnt":
            op = d.inst.operands[0] if d.inst.operands else None
            waits[_waitcnt_label(op.value if isinstance(op, Syntax) else 0)] += 1
    code = sum(d.size for d in items)
    return KernelStats(
        name=kernel.name, target=t.target_id, code_bytes=code, instructions=len(items),
        vgprs=vgprs, agprs=agprs, sgprs=sgprs, accum_offset=accum,
        vgprs_total=vgprs + agprs, sgprs_reserved=reserved, sgprs_total=sgprs + reserved,
        next_free_sgpr=next_free_sgpr,
        metadata_vgpr_count=_meta_int(meta, ".vgpr_count"),
        metadata_sgpr_count=_meta_int(meta, ".sgpr_count"), used_vgprs=used_v,
        used_agprs=used_a, used_sgprs=used_s, used_special_sgprs=specials,
        lds_bytes=kd.group_segment_fixed_size,
        scratch_bytes=kd.private_segment_fixed_size,
        kernarg_bytes=max(kd.kernarg_size, int(meta.get(".kernarg_segment_size", 0))),
        workgroup_size=wg, waves_per_simd=occ.waves_per_simd,
        occupancy_limited_by=list(occ.limited_by), mix=dict(sorted(mix.items())),
        mfma=dict(sorted(mfma.items())), waitcnt=dict(waits.most_common()),
        metadata={k: v for k, v in meta.items() if k != ".args"})


def code_object_stats(source) -> list[KernelStats]:
    """Statistics of every kernel of a code object (bytes, path, .mlir, .s)."""
    from asterism.api import load_code_object

    obj, _data = load_code_object(source)
    dec = get_decoder(obj.target.name)
    starts = sorted((k.offset, k) for k in obj.kernels)
    out = []
    for n, (start, kernel) in enumerate(starts):
        end = start + kernel.size if kernel.size else (
            starts[n + 1][0] if n + 1 < len(starts) else len(obj.text))
        end = min(end, len(obj.text))  # (the reader bounds symbol sizes by .text already)
        items, pos = [], start
        while pos < end:
            try:
                d = dec.decode(obj.text, pos, obj.text_address + pos)
            except Exception:
                pos += 4
                continue
            if d.inst.mnemonic == "s_code_end":
                break  # padding after the kernel
            items.append(d)
            pos += d.size
            if d.inst.form.instruction.unit == "branch" and "ends_program" in \
                    d.inst.form.instruction.flags and not kernel.size and _only_padding(
                        obj.text, pos, end):
                break
        out.append(kernel_stats(obj, kernel, items))
    return out


def _only_padding(text: bytes, pos: int, end: int) -> bool:
    """True if the rest of the range is s_nop 0 / s_code_end padding."""
    pads = {0xBF800000, 0xBF9F0000}
    return all(int.from_bytes(text[p:p + 4], "little") in pads for p in range(pos, end - 3, 4))


def render_stats(stats: list[KernelStats]) -> str:
    """Human-readable report."""
    lines = []
    for s in stats:
        lines.append(f"kernel {s.name} ({s.target})")
        lines.append(f"  code: {s.instructions} instructions, {s.code_bytes} bytes")
        lines.extend(_register_lines(s))
        lines.append(f"  memory: LDS {s.lds_bytes} B, scratch {s.scratch_bytes} B, kernargs "
                     f"{s.kernarg_bytes} B; workgroup {tuple(s.workgroup_size)}")
        lines.append(f"  occupancy: {s.waves_per_simd} waves/SIMD (limited by "
                     f"{', '.join(s.occupancy_limited_by)})")
        lines.append("  mix: " + ", ".join(f"{k} {v}" for k, v in s.mix.items()))
        if s.mfma:
            lines.append("  mfma: " + ", ".join(f"{k} x{v}" for k, v in s.mfma.items()))
        if s.waitcnt:
            lines.append("  s_waitcnt: " + ", ".join(f"{k} x{v}" for k, v in s.waitcnt.items()))
    return "\n".join(lines) + "\n"


def _metadata_note(key: str, value: int | None, total: int) -> str:
    if value is None:
        return f"no metadata {key}"
    return f"metadata {key} {value}" + ("" if value == total else f", differs by {value - total}")


def _register_lines(s: KernelStats) -> list[str]:
    """The register figures, each with what it counts and the total the metadata uses."""
    vnote = _metadata_note(".vgpr_count", s.metadata_vgpr_count, s.vgprs_total)
    snote = _metadata_note(".sgpr_count", s.metadata_sgpr_count, s.sgprs_total)
    return [
        f"  VGPRs allocated: {s.vgprs} arch + {s.agprs} acc (accum_offset {s.accum_offset}) "
        f"= {s.vgprs_total} unified ({vnote})",
        f"  SGPRs allocated: {s.sgprs_total} ({snote}); the descriptor reserves "
        + (f"{s.sgprs_reserved}" if s.sgprs_reserved else "none")
        + " for VCC, FLAT_SCRATCH, XNACK_MASK (whichever the code uses live inside the "
        "allocation)",
        f"  registers used by the code (highest index + 1): v{s.used_vgprs} a{s.used_agprs} "
        f"s{s.used_sgprs}" + "".join(f", {n}" for n in s.used_special_sgprs),
    ]


def render_diff(a: list[KernelStats], b: list[KernelStats], name_a: str, name_b: str) -> str:
    """Side-by-side numbers of the matching kernels of two code objects."""
    pairs = [(x, next((y for y in b if y.name == x.name), None)) for x in a]
    if all(y is None for _x, y in pairs) and a and b:
        pairs = [(a[0], b[0])]  # different names: compare the first kernels
    lines = []
    for x, y in pairs:
        if y is None:
            lines.append(f"kernel {x.name}: only in {name_a}")
            continue
        lines.append(f"kernel {x.name} vs {y.name}   ({name_a} -> {name_b})")
        for key in ("target", "instructions", "code_bytes", "vgprs", "agprs", "vgprs_total",
                    "sgprs", "lds_bytes", "scratch_bytes", "waves_per_simd"):
            va, vb = getattr(x, key), getattr(y, key)
            mark = "" if va == vb else "   *"
            lines.append(f"  {key:<16} {va!s:>26} {vb!s:>26}{mark}")
        for cat in sorted(set(x.mix) | set(y.mix)):
            va, vb = x.mix.get(cat, 0), y.mix.get(cat, 0)
            lines.append(f"  mix.{cat:<12} {va:>26} {vb:>26}{'' if va == vb else '   *'}")
        for m in sorted(set(x.mfma) | set(y.mfma)):
            lines.append(f"  {m:<28} {x.mfma.get(m, 0):>14} {y.mfma.get(m, 0):>26}")
    return "\n".join(lines) + "\n"


def stats_json(stats: list[KernelStats]) -> str:
    """JSON for tools."""
    return json.dumps([{**asdict(s), "register_fields": REGISTER_FIELDS} for s in stats],
                      indent=1) + "\n"
