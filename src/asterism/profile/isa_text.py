"""What the analyzer needs to know about an instruction, read from its disassembly text.

Traces carry instructions as text (the decoder's disassembly), so these rules work on
mnemonics and operands, like the decoder's own waitcnt analysis does. They cover the GFX9
family (gfx942, gfx950). When the ISA database (``asterism.isa``) offers the same facts
(MFMA-ness, counters an opcode increments, destination operands), these helpers should
become thin queries on it.
"""

from __future__ import annotations

import re

from asterism.timing.result import InstCategory

# (At most 9 digits: the text comes from a capture, and Python refuses to convert 4300.)
_REG_RE = re.compile(r"\b([va])(?:(\d{1,9})\b|\[(\d{1,9}):(\d{1,9})\])", re.ASCII)
_COUNT_RE = re.compile(
    r"\b(vmcnt|lgkmcnt|expcnt|vscnt)\s*\(\s*(0x[0-9a-fA-F]{1,8}|\d{1,9})\s*\)", re.ASCII)
# The last VGPR/AGPR of a GFX9 register file: a register past it is not one (and a range
# from a capture's text must not drive a loop of its own size).
_LAST_REG = 255

Reg = tuple[str, int]  # ("v", 12) or ("a", 3)


def mnemonic(isa: str) -> str:
    """The opcode mnemonic of a disassembly line (lower case)."""
    parts = isa.split(None, 1)
    return parts[0].lower() if parts else ""


def operand_text(isa: str) -> list[str]:
    """The comma-separated operands after the mnemonic (modifiers stay on the last one)."""
    parts = isa.split(None, 1)
    if len(parts) < 2:
        return []
    return [op.strip() for op in parts[1].split(",")]


def vector_regs(text: str) -> set[Reg]:
    """VGPRs and AGPRs named in `text` (``v7``, ``v[2:5]``, ``a[0:3]``), one per register;
    a register or range past v255/a255 (or reversed) names none."""
    out: set[Reg] = set()
    for m in _REG_RE.finditer(text):
        if m.group(2) is not None:
            if int(m.group(2)) <= _LAST_REG:
                out.add((m.group(1), int(m.group(2))))
        else:
            lo, hi = int(m.group(3)), int(m.group(4))
            if lo <= hi <= _LAST_REG:
                out.update((m.group(1), i) for i in range(lo, hi + 1))
    return out


def is_mfma(mn: str) -> bool:
    """True for matrix-core instructions (MFMA, sparse SMFMAC)."""
    return mn.startswith(("v_mfma", "v_smfmac"))


def is_waitcnt(mn: str) -> bool:
    """True for ``s_waitcnt`` and its per-counter forms."""
    return mn.startswith("s_waitcnt")


def is_barrier(mn: str) -> bool:
    """True for workgroup barriers."""
    return mn.startswith("s_barrier")


def waitcnt_counts(isa: str) -> dict[str, int]:
    """The counters an s_waitcnt waits on and their thresholds; vscnt folds into vmcnt."""
    out: dict[str, int] = {}
    for name, value in _COUNT_RE.findall(isa):
        key = "vmcnt" if name == "vscnt" else name
        out[key] = int(value, 0)
    mn = mnemonic(isa)
    # gfx10-style "s_waitcnt_vmcnt null, 0x0" forms carry the count as the last operand.
    if not out and mn in ("s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt", "s_waitcnt_expcnt",
                          "s_waitcnt_vscnt"):
        ops = operand_text(isa)
        try:
            value = int(ops[-1], 0) if ops else 0
        except ValueError:
            value = 0
        name = mn.removeprefix("s_waitcnt_")
        out["vmcnt" if name == "vscnt" else name] = value
    return out


def writes_first_operand(mn: str) -> bool:
    """True when the first operand is a destination (not for stores, LDS writes, waits)."""
    if mn.startswith(("s_waitcnt", "s_nop", "s_barrier", "s_branch", "s_cbranch", "s_endpgm")):
        return False
    return "store" not in mn and "write" not in mn


def memory_kind(mn: str, category: int) -> str | None:
    """Which memory path an instruction uses: "VMEM", "FLAT", "SMEM", "LDS", "MSG" or None.

    The hardware category of the record decides; the mnemonic is the fallback for records
    without one (category NONE) and for messages, which the hardware files as MESSAGE.
    """
    if category == InstCategory.VMEM:
        return "VMEM"
    if category == InstCategory.FLAT:
        # The hardware files every FLAT-encoded op as FLAT, but global_* and scratch_* only
        # reach vector memory: they count in vmcnt alone and return in order like buffer_*.
        return "VMEM" if mn.startswith(("global_", "scratch_")) else "FLAT"
    if category == InstCategory.SMEM:
        return "SMEM"
    if category == InstCategory.LDS:
        return "LDS"
    if mn.startswith("s_sendmsg"):
        return "MSG"
    if category != InstCategory.NONE:
        return None
    if mn.startswith(("buffer_", "tbuffer_", "global_", "scratch_")):
        return "VMEM"
    if mn.startswith("flat_"):
        return "FLAT"
    if mn.startswith(("s_load", "s_store", "s_buffer_load", "s_buffer_store", "s_scratch_",
                      "s_dcache", "s_memtime", "s_memrealtime")):
        return "SMEM"
    if mn.startswith("ds_"):
        return "LDS"
    return None


def counters_of(kind: str | None) -> tuple[str, ...]:
    """The wait counters a memory path increments on GFX9 (stores count in vmcnt)."""
    return {"VMEM": ("vmcnt",), "FLAT": ("vmcnt", "lgkmcnt"), "SMEM": ("lgkmcnt",),
            "LDS": ("lgkmcnt",), "MSG": ("lgkmcnt",)}.get(kind or "", ())


def unit_name(mn: str, category: int) -> str:
    """Execution unit for display: the category name, with MFMA split from VALU and
    s_waitcnt split from IMMED."""
    if category == InstCategory.VALU and is_mfma(mn):
        return "MFMA"
    if category == InstCategory.IMMED and is_waitcnt(mn):
        return "WAITCNT"
    if category == InstCategory.NONE and is_mfma(mn):
        return "MFMA"
    try:
        return InstCategory(category).name
    except ValueError:
        return f"CATEGORY_{category}"
