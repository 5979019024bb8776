#!/usr/bin/env python3
"""Generate asterism's ISA database (src/asterism/isa/data/<target>.json) from LLVM 22.

Run at development time only (needs llvm-22, llvm-22-dev and g++); the package reads the
committed JSON and never needs LLVM.

How the facts are derived, all from LLVM 22's own MC layer:
1. **Decoder enumeration.** For every encoding format (isa/formats.py) the opcode field is
   swept with the other fields set to distinct, recognisable values (src0 = v10, src1 = v20,
   vdst = v30, ...). Each word goes through LLVM's disassembler (tools/isa_probe, a small C++
   program linked against libLLVM) which reports the printed text and, from LLVM's
   instruction descriptors, the operand register classes, operand types, implicit
   registers, TSFlags (counters, MFMA, ...) and MCID flags (branch, barrier, ...).
   Which printed operand came from which field follows from the distinct values.
2. **Modifier probing.** Modifier bits (clamp, omod, op_sel, cache bits, ...) are set one at
   a time and decoded again: a modifier is recorded when LLVM prints it. Likewise every other
   bit outside the form's operand fields (and the DPP/SDWA dword's bit groups) is flipped
   alone: when LLVM then rejects the word, the bit is reserved for the form (the decoder
   rejects words that do not hold it at its value).
3. **Operand-kind probing.** Each operand of each form is replaced by an SGPR, a VGPR, an
   AGPR, an inline constant and a literal, and the lines are assembled in one batch with
   `llvm-mc`; what LLVM accepts is what the database allows.
4. **MFMA passes** come from `llvm-mca`'s reciprocal throughput (LLVM's MAI pass model).
5. **Coverage**: candidate mnemonics are the instruction-name strings of libLLVM's AMDGPU
   assembler tables; `llvm-mc` classifies each one per target; the database must cover the
   accepted ones (the rest are listed in the output).

Usage: python tools/gen_isa.py [--targets gfx942 gfx950] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from asterism.isa.formats import DPP, FORMATS, SDWA, SRC_DPP, SRC_SDWA, format_of  # noqa: E402

LLVM_BIN = Path("/usr/lib/llvm-22/bin")
BUILD = REPO / "tools" / "build"
OUT = REPO / "src" / "asterism" / "isa" / "data"
PROBE_SRC = REPO / "tools" / "isa_probe" / "isa_probe.cpp"

# Trailing bytes after each word: a literal constant if the instruction wants one.
LITERAL = 0x1234  # fits every literal operand, 16-bit ones too
TAIL = LITERAL.to_bytes(4, "little") * 3

# AMDGPU::OperandType values of LLVM 22 (SIDefines.h; OPERAND_FIRST_TARGET = 13).
OPERAND_TYPES = [
    "REG_IMM_INT32", "REG_IMM_INT64", "REG_IMM_INT16", "REG_IMM_FP32", "REG_IMM_FP64",
    "REG_IMM_BF16", "REG_IMM_FP16", "REG_IMM_V2BF16", "REG_IMM_V2FP16", "REG_IMM_V2FP16_SPLAT",
    "REG_IMM_V2INT16", "REG_IMM_NOINLINE_V2FP16", "REG_IMM_V2INT32", "REG_IMM_V2FP32",
    "REG_INLINE_C_INT16", "REG_INLINE_C_INT32", "REG_INLINE_C_INT64", "REG_INLINE_C_BF16",
    "REG_INLINE_C_FP16", "REG_INLINE_C_FP32", "REG_INLINE_C_FP64", "REG_INLINE_C_V2INT16",
    "REG_INLINE_C_V2BF16", "REG_INLINE_C_V2FP16", "INLINE_SPLIT_BARRIER_INT32", "KIMM32",
    "KIMM16", "KIMM64", "REG_INLINE_AC_INT32", "REG_INLINE_AC_FP32", "REG_INLINE_AC_FP64",
    "INLINE_C_AV64_PSEUDO", "INPUT_MODS", "SDWA_VOPC_DST",
]
OPERAND_FIRST_TARGET = 13
INPUT_MODS = OPERAND_FIRST_TARGET + OPERAND_TYPES.index("INPUT_MODS")
TYPE_DTYPE = {
    "INT32": "i32", "INT64": "i64", "INT16": "i16", "FP32": "f32", "FP64": "f64", "BF16": "bf16",
    "FP16": "f16", "V2BF16": "v2bf16", "V2FP16": "v2f16", "V2FP16_SPLAT": "v2f16",
    "V2INT16": "v2i16", "NOINLINE_V2FP16": "v2f16", "V2INT32": "v2i32", "V2FP32": "v2f32",
}

# TSFlags bits (SIDefines.h, SIInstrFlags).
TS = {
    "SALU": 0, "VALU": 1, "SOP1": 2, "SOP2": 3, "SOPC": 4, "SOPK": 5, "SOPP": 6, "VOP1": 7,
    "VOP2": 8, "VOPC": 9, "VOP3": 10, "VOP3P": 12, "SDWA": 14, "DPP": 15, "TRANS": 16,
    "MUBUF": 17, "MTBUF": 18, "SMRD": 19, "FLAT": 24, "DS": 25, "VM_CNT": 32, "EXP_CNT": 33,
    "LGKM_CNT": 34, "IsPacked": 49, "FlatGlobal": 51, "FPAtomic": 53, "IsMAI": 54,
    "IsDOT": 55, "FlatScratch": 56, "IsAtomicNoRet": 57, "IsAtomicRet": 58,
}

# Distinct field values used while sweeping, so that each printed operand names its field.
V_SRC0, V_SRC1, V_DST, V_SRC2 = 10, 20, 30, 40
S_SRC0, S_SRC1, S_DST, S_SRC2 = 2, 4, 6, 8
# MFMA accumulators are up to 32 registers and must not partly overlap the destination.
M_DST, M_SRC2 = 64, 96


def ts_bit(ts: int, name: str) -> bool:
    return bool((ts >> TS[name]) & 1)


# ----------------------------------------------------------------------------- LLVM drivers


def build_probe() -> Path:
    """Compile tools/isa_probe/isa_probe.cpp against libLLVM 22 (cached by mtime)."""
    exe = BUILD / "isa_probe"
    if exe.exists() and exe.stat().st_mtime > PROBE_SRC.stat().st_mtime:
        return exe
    BUILD.mkdir(parents=True, exist_ok=True)
    cfg = str(LLVM_BIN / "llvm-config")
    cxxflags = subprocess.check_output([cfg, "--cxxflags"], text=True).split()
    ldflags = subprocess.check_output([cfg, "--ldflags"], text=True).split()
    libdir = subprocess.check_output([cfg, "--libdir"], text=True).strip()
    cmd = ["g++", "-O1", *cxxflags, str(PROBE_SRC), "-o", str(exe), *ldflags, "-lLLVM-22",
           f"-Wl,-rpath,{libdir}"]
    print("building isa_probe:", " ".join(cmd), file=sys.stderr)
    subprocess.check_call(cmd)
    return exe


def probe(target: str, hexlines: list[str]) -> list[dict]:
    """Decode hex lines with LLVM; one JSON record per line. Words LLVM's disassembler
    crashes on (some SDWA words) get {"ok": false, "crashed": true}; the probe resumes after
    them (in chunks, so that a crash re-feeds few lines)."""
    out: list[dict] = []
    for start in range(0, len(hexlines), PROBE_CHUNK):
        chunk = hexlines[start:start + PROBE_CHUNK]
        while chunk:
            done = _probe_run(target, chunk)
            out += done
            chunk = chunk[len(done):]
            if chunk:  # (it crashed on chunk[0])
                out.append({"ok": False, "crashed": True})
                chunk = chunk[1:]
    return out


PROBE_CHUNK = 8192


def _probe_run(target: str, hexlines: list[str]) -> list[dict]:
    """The records of one isa_probe run: all lines, or those before the word it crashed on
    (the probe flushes each record)."""
    res = subprocess.run([str(build_probe()), target], input="\n".join(hexlines) + "\n",
                         capture_output=True, text=True)
    if res.returncode > 0:  # (an error of the probe itself, not a crash on a word)
        raise RuntimeError(f"isa_probe failed ({res.returncode}): {res.stderr.strip()}")
    done = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(done) == len(hexlines) or res.returncode < 0, (len(done), len(hexlines))
    return done


def llvm_mc_accepts(target: str, lines: list[str]) -> list[bool]:
    """Assemble `lines` in one llvm-mc run; True for each line LLVM accepted."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        res = subprocess.run([str(LLVM_BIN / "llvm-mc"), "-arch=amdgcn", f"-mcpu={target}",
                              "-show-encoding", path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    bad = set()
    for m in re.finditer(r"^.*?:(\d+):\d+: error:", res.stderr, re.M):
        bad.add(int(m.group(1)) - 1)
    return [i not in bad for i in range(len(lines))]


def llvm_mc_errors(target: str, lines: list[str]) -> list[str | None]:
    """Assemble `lines` in one llvm-mc run; the first error message per line (None if ok)."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        res = subprocess.run([str(LLVM_BIN / "llvm-mc"), "-arch=amdgcn", f"-mcpu={target}", path],
                             capture_output=True, text=True)
    finally:
        os.unlink(path)
    errs: list[str | None] = [None] * len(lines)
    for m in re.finditer(r"^.*?:(\d+):\d+: error: (.*)$", res.stderr, re.M):
        i = int(m.group(1)) - 1
        if errs[i] is None:
            errs[i] = m.group(2)
    return errs


def mca_passes(target: str, lines: list[str]) -> list[float | None]:
    """Reciprocal throughput of each instruction per llvm-mca (MFMA: number of passes)."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        res = subprocess.run([str(LLVM_BIN / "llvm-mca"), "-mtriple=amdgcn", f"-mcpu={target}",
                              "-instruction-info", "-iterations=1",
                              "-skip-unsupported-instructions=any", path],
                             capture_output=True, text=True)
    finally:
        os.unlink(path)
    rows = []
    on = False
    for line in res.stdout.splitlines():
        if line.startswith("[1]    [2]"):
            on = True
            continue
        if on:
            if not line.strip():
                break
            parts = line.split()
            rows.append(float(parts[2]))
    if len(rows) != len(lines):
        return [None] * len(lines)
    return rows


# ----------------------------------------------------------------------------- enumeration


def word(fmt: str, **vals: int) -> int:
    f = FORMATS[fmt]
    w = f.base()
    for k, v in vals.items():
        w = f.fields[k].put(w, v)
    return w


class Probe:
    """One word to decode, with how it was made."""

    def __init__(self, fmt: str, variant: str, op: int, value: int, size: int,
                 fields: dict[str, int], extra: int | None = None):
        self.fmt, self.variant, self.op, self.value, self.size = fmt, variant, op, value, size
        self.fields = fields
        self.extra = extra  # second dword of DPP/SDWA
        self.alt = 0  # index among alternative field sets for the same opcode

    def hex(self) -> str:
        data = self.value.to_bytes(self.size, "little")
        if self.extra is not None:
            data += self.extra.to_bytes(4, "little")
        return (data + TAIL).hex()


def sweep(fmt: str, variant: str, nops: int, **fields: int) -> list[Probe]:
    """One probe per opcode value of `fmt` with `fields` set."""
    return sweep_alternatives(fmt, variant, nops, [fields])


def sweep_alternatives(fmt: str, variant: str, nops: int,
                       alternatives: list[dict[str, int]]) -> list[Probe]:
    """Probes per opcode for each field set, most fields first: LLVM's decoder rejects words
    whose unused operand fields are not zero, so the first set that decodes is exact."""
    out = []
    size = FORMATS[fmt].size
    for op in range(nops):
        for alt, fields in enumerate(alternatives):
            w = word(fmt, op=op, **fields)
            f = format_of(w)
            if f is None or f.name != fmt:
                break  # this opcode value lands in another format's space
            pr = Probe(fmt, variant, op, w, size, dict(fields))
            pr.alt = alt
            out.append(pr)
    return out


def enumerate_probes() -> list[Probe]:
    """Every (format, addressing variant, opcode) word to decode."""
    p: list[Probe] = []
    # Alternatives, most operands first (see sweep_alternatives).
    p += sweep_alternatives("SOP2", "", 128, [dict(ssrc0=S_SRC0, ssrc1=S_SRC1, sdst=S_DST),
                                              dict(ssrc0=S_SRC0, ssrc1=S_SRC1), {}])
    p += sweep_alternatives("SOPK", "", 32, [dict(sdst=S_DST, simm16=0x402), dict(simm16=0x402),
                                             {}])
    p += sweep_alternatives("SOP1", "", 256, [dict(ssrc0=S_SRC0, sdst=S_DST), dict(sdst=S_DST),
                                              dict(ssrc0=S_SRC0), {}])
    p += sweep_alternatives("SOPC", "", 128, [dict(ssrc0=S_SRC0, ssrc1=S_SRC1),
                                              dict(ssrc0=S_SRC0), {}])
    p += sweep_alternatives("SOPP", "", 128, [dict(simm16=3), {}])
    p += sweep_alternatives("SMEM", "imm", 256, [dict(sbase=2, sdata=16, imm=1, offset=0x10),
                                                 dict(sdata=16), {}])
    p += sweep("SMEM", "soff", 256, sbase=2, sdata=16, imm=0, offset=7)
    p += sweep("VOP2", "", 64, src0=256 + V_SRC0, vsrc1=V_SRC1, vdst=V_DST)
    p += sweep_alternatives("VOP1", "", 256, [dict(src0=256 + V_SRC0, vdst=V_DST),
                                              dict(vdst=V_DST), dict(src0=256 + V_SRC0), {}])
    p += sweep("VOPC", "", 256, src0=256 + V_SRC0, vsrc1=V_SRC1)
    # Some VOP3 sources are SGPR-only (v_readlane's lane select, v_writelane's value).
    # Carry-in and v_cndmask's mask are SGPR pairs (s[8:9]); v_writelane takes one SGPR and
    # an inline constant lane (1 = 129) because only one SGPR may be read.
    vop3 = [dict(vdst=V_DST, src0=256 + V_SRC0, src1=256 + V_SRC1, src2=256 + V_SRC2),
            dict(vdst=V_DST, src0=256 + V_SRC0, src1=256 + V_SRC1, src2=S_SRC2),
            dict(vdst=V_DST, src0=256 + V_SRC0, src1=S_SRC1, src2=256 + V_SRC2),
            dict(vdst=V_DST, src0=S_SRC0, src1=S_SRC1, src2=256 + V_SRC2),
            dict(vdst=V_DST, src0=S_SRC0, src1=129, src2=256 + V_SRC2)]
    p += sweep_alternatives("VOP3", "", 1024, vop3)
    # VOP3P with op_sel_hi at its default (1s), and MFMA (same format) with acc/abid at 0.
    p += sweep_alternatives("VOP3P", "", 128, [
        dict(vdst=V_DST, src0=256 + V_SRC0, src1=256 + V_SRC1, src2=256 + V_SRC2, op_sel_hi=3,
             op_sel_hi2=1),
        dict(src0=256 + V_SRC0, src1=256 + V_SRC1)])  # v_mfma_ld_scale_b32: no destination
    p += sweep("VOP3P", "mai", 128, vdst=M_DST, src0=256 + V_SRC0, src1=256 + V_SRC1,
               src2=256 + M_SRC2)
    # The gds forms (ds_gws_*: data0 only, gds set) come last so that ordinary LDS ops keep
    # their address operand.
    ds = [dict(addr=V_SRC0, data0=V_SRC1, data1=V_SRC2, vdst=V_DST),
          dict(addr=V_SRC0, data0=V_SRC1, vdst=V_DST),
          dict(addr=V_SRC0, data0=V_SRC1, data1=V_SRC2),
          dict(addr=V_SRC0, data0=V_SRC1), dict(addr=V_SRC0, vdst=V_DST), dict(addr=V_SRC0),
          dict(vdst=V_DST), dict(data0=V_SRC1), {}, dict(addr=V_SRC0, gds=1), dict(gds=1)]
    p += sweep_alternatives("DS", "", 256, ds)
    p += sweep("FLAT", "flat", 128, seg=0, addr=V_SRC0, data=V_SRC1, vdst=V_DST, saddr=0)
    p += sweep("FLAT", "global_off", 128, seg=2, addr=V_SRC0, data=V_SRC1, vdst=V_DST,
               saddr=0x7F)
    p += sweep("FLAT", "global_saddr", 128, seg=2, addr=V_SRC0, data=V_SRC1, vdst=V_DST,
               saddr=S_SRC1)
    p += sweep("FLAT", "scratch_vaddr", 128, seg=1, sve=1, addr=V_SRC0, data=V_SRC1,
               vdst=V_DST, saddr=0x7F)
    p += sweep("FLAT", "scratch_saddr", 128, seg=1, sve=0, addr=0, data=V_SRC1, vdst=V_DST,
               saddr=S_SRC1)
    p += sweep("FLAT", "scratch_svs", 128, seg=1, sve=1, addr=V_SRC0, data=V_SRC1, vdst=V_DST,
               saddr=S_SRC1)
    p += sweep_alternatives("MUBUF", "offen", 128, [
        dict(offen=1, vaddr=V_SRC0, vdata=V_SRC1, srsrc=1, soffset=8), {}])
    p += sweep("MUBUF", "lds", 128, offen=1, lds=1, vaddr=V_SRC0, vdata=V_SRC1, srsrc=1,
               soffset=8)
    # Scalar atomics that return the old value are selected by glc.
    for pr in [q for q in p if q.fmt == "SMEM" and q.variant in ("imm", "soff")
               and "sdata" in q.fields]:
        p.append(Probe("SMEM", pr.variant + "+rtn", pr.op, FORMATS["SMEM"].fields["glc"].put(
            pr.value, 1), pr.size, dict(pr.fields, glc=1)))
    # Atomics that return the old value are other instructions (..._RTN) selected by sc0.
    for variant in ("flat", "global_off", "global_saddr", "scratch_vaddr", "scratch_saddr",
                    "scratch_svs"):
        for pr in [q for q in p if q.fmt == "FLAT" and q.variant == variant]:
            rtn = Probe("FLAT", variant + "+rtn", pr.op, FORMATS["FLAT"].fields["sc0"].put(
                pr.value, 1), pr.size, dict(pr.fields, sc0=1))
            p.append(rtn)
    for pr in [q for q in p if q.fmt == "MUBUF" and q.variant == "offen" and q.fields]:
        p.append(Probe("MUBUF", "offen+rtn", pr.op, FORMATS["MUBUF"].fields["sc0"].put(
            pr.value, 1), pr.size, dict(pr.fields, sc0=1)))
    p += sweep("MTBUF", "offen", 16, offen=1, dfmt=4, nfmt=7, vaddr=V_SRC0, vdata=V_SRC1,
               srsrc=1, soffset=8)
    # DPP and SDWA: the e32 formats with src0 selecting the extra dword.
    dpp = DPP["src0"].put(0, V_SRC0)
    dpp = DPP["dpp_ctrl"].put(dpp, 0xE4)  # quad_perm:[0,1,2,3], the identity
    dpp = DPP["row_mask"].put(dpp, 0xF)
    dpp = DPP["bank_mask"].put(dpp, 0xF)
    sdwa = SDWA["src0"].put(0, V_SRC0)
    for name in ("dst_sel", "src0_sel", "src1_sel"):
        sdwa = SDWA[name].put(sdwa, 6)  # DWORD
    # gfx950 scaled MFMA: a v_mfma_ld_scale_b32 word (VOP3P opcode 0x2c) carrying the two
    # scale operands, followed by the MFMA word; LLVM decodes the pair as one instruction.
    prefix = word("VOP3P", op=0x2C, src0=256 + 50, src1=256 + 52)
    # (bit 11 of the MFMA word is set in LLVM's encoding of the pair; without it the
    # prefix decodes alone.)
    for pr in sweep("VOP3P", "mai_scale", 128, vdst=M_DST, src0=256 + V_SRC0,
                    src1=256 + V_SRC1, src2=256 + M_SRC2, abid=1):
        pr.value = prefix | (pr.value << 64)
        pr.size = 16
        p.append(pr)
    dpp64 = DPP["dpp_ctrl"].put(dpp, 0x151)  # row_newbcast:1, the only 64-bit DPP control
    sdwa_vop1 = SDWA["src1_sel"].put(sdwa, 0)  # LLVM rejects VOP1 SDWA words with src1_sel
    for fmt, n, flds in (("VOP1", 256, {"vdst": V_DST}),
                         ("VOP2", 64, {"vdst": V_DST, "vsrc1": V_SRC1}),
                         ("VOPC", 256, {"vsrc1": V_SRC1})):
        sdwa_word = sdwa_vop1 if fmt == "VOP1" else sdwa
        for kind, extras, src0 in (("dpp", (dpp, dpp64), SRC_DPP),
                                   ("sdwa", (sdwa_word,), SRC_SDWA)):
            # (v_nop_dpp has no destination: a second alternative leaves vdst at 0)
            field_sets = [flds, {}] if fmt == "VOP1" else [flds]
            alt = 0
            for fields in field_sets:
                for extra in extras:
                    for pr in sweep(fmt, kind, n, src0=src0, **fields):
                        pr.extra = extra
                        pr.alt = alt
                        p.append(pr)
                    alt += 1
    p.sort(key=lambda pr: (pr.fmt, pr.variant, pr.op, pr.alt))
    return p


# ----------------------------------------------------------------------------- text parsing

REG_RE = re.compile(r"^(v|s|a|ttmp)(\d+)$|^(v|s|a|ttmp)\[(\d+):(\d+)\]$")
SPECIALS = {
    "vcc", "vcc_lo", "vcc_hi", "exec", "exec_lo", "exec_hi", "m0", "scc", "flat_scratch",
    "flat_scratch_lo", "flat_scratch_hi", "xnack_mask", "xnack_mask_lo", "xnack_mask_hi",
    "src_vccz", "src_execz", "src_scc", "src_shared_base", "src_shared_limit",
    "src_private_base", "src_private_limit", "src_pops_exiting_wave_id", "src_lds_direct",
    "tba", "tma", "tba_lo", "tba_hi", "tma_lo", "tma_hi", "lds_direct",
}
BARE_MODIFIERS = {
    "offen", "idxen", "addr64", "glc", "slc", "dlc", "sc0", "sc1", "nt", "lds", "gds", "tfe",
    "lwe", "clamp", "nv", "d16", "unorm", "da", "r128", "a16", "noreturn", "fi",
    "bound_ctrl", "row_mirror", "row_half_mirror", "wave_shl", "wave_rol", "wave_shr",
    "wave_ror",
}


def split_text(text: str) -> tuple[str, list[str], list[str]]:
    """Split printed assembly into (mnemonic, operands, modifiers)."""
    # Tokenise on spaces outside brackets/parentheses.
    toks, cur, depth = [], "", 0
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == " " and depth == 0:
            if cur:
                toks.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        toks.append(cur)
    mnem, rest = toks[0], toks[1:]
    ops: list[str] = []
    mods: list[str] = []
    i = 0
    while i < len(rest) and rest[i].endswith(","):
        ops.append(rest[i][:-1])
        i += 1
    if i < len(rest):
        tok = rest[i]
        is_mod = tok in BARE_MODIFIERS or (":" in tok and not REG_RE.match(tok)
                                           and not tok.startswith(("v[", "s[", "a[", "ttmp[")))
        if ops or not is_mod:  # the token after the last comma is always an operand
            ops.append(tok)
            i += 1
    mods = rest[i:]
    return mnem, ops, mods


def parse_reg(tok: str) -> tuple[str, int, int] | None:
    """'v[10:11]' -> ('v', 10, 2); 's5' -> ('s', 5, 1); None if not a register."""
    m = REG_RE.match(tok)
    if not m:
        return None
    if m.group(1):
        return m.group(1), int(m.group(2)), 1
    lo, hi = int(m.group(4)), int(m.group(5))
    return m.group(3), lo, hi - lo + 1


def mc_reg_to_tok(name: str) -> str | None:
    """LLVM register name ('VGPR10_VGPR11', 'SGPR4', 'AGPR0_AGPR1') -> asm token."""
    parts = name.split("_")
    m = [re.match(r"^(VGPR|SGPR|AGPR|TTMP)(\d+)(?:_LO16|_HI16)?$", p) for p in parts]
    if not all(m):
        return None
    kind = {"VGPR": "v", "SGPR": "s", "AGPR": "a", "TTMP": "ttmp"}[m[0].group(1)]
    lo = int(m[0].group(2))
    if len(parts) == 1:
        return f"{kind}{lo}"
    return f"{kind}[{lo}:{lo + len(parts) - 1}]"


SUFFIXES = ("_e32", "_e64", "_dpp", "_sdwa")


def base_mnemonic(mnem: str) -> tuple[str, str]:
    for suf in SUFFIXES:
        if mnem.endswith(suf):
            return mnem[: -len(suf)], suf
    return mnem, ""


# ----------------------------------------------------------------------------- records


def form_encoding(pr: Probe, rec: dict, suffix: str) -> str:
    """The database encoding name of a decoded word."""
    ts = int(rec["ts"])
    if pr.variant in ("dpp", "sdwa"):
        return pr.variant.upper()
    if pr.variant == "mai_scale":
        return "MAI_SCALE"
    if pr.fmt == "VOP3P" and ts_bit(ts, "IsMAI"):
        return "MAI"
    if pr.fmt == "FLAT":
        return {"flat": "FLAT", "global_off": "GLOBAL", "global_saddr": "GLOBAL",
                "scratch_vaddr": "SCRATCH", "scratch_saddr": "SCRATCH",
                "scratch_svs": "SCRATCH"}[pr.variant.split("+")[0]]
    if pr.fmt == "VOP3" and suffix == "_e64":
        return "VOP3"
    return pr.fmt


def field_by_value(pr: Probe, kind: str, start: int, width: int) -> str | None:
    """Which field of the probe word printed the register (kind, start)."""
    f = pr.fields
    if pr.fmt in ("SOP1", "SOP2", "SOPC", "SOPK"):
        table = {S_SRC0: "ssrc0", S_SRC1: "ssrc1", S_DST: "sdst"}
        return table.get(start) if kind == "s" else None
    if pr.fmt == "SMEM":
        if kind == "s" and start == 4:
            return "sbase"
        if kind == "s" and start == 16:
            return "sdata"
        if kind == "s" and start == 7:
            return "soffset"
        return None
    if pr.fmt in ("VOP1", "VOP2", "VOPC", "VOP3", "VOP3P"):
        if pr.variant in ("dpp", "sdwa") and start == V_SRC0 and kind in "va":
            return "src0"
        if pr.variant in ("mai", "mai_scale") and kind in "va":
            return {V_SRC0: "src0", V_SRC1: "src1", M_DST: "vdst", M_SRC2: "src2",
                    50: "scale_src0", 52: "scale_src1"}.get(start)
        table = {V_SRC0: "src0", V_SRC1: "vsrc1" if pr.fmt in ("VOP2", "VOPC") else "src1",
                 V_DST: "vdst", V_SRC2: "src2", 50: "scale_src0", 52: "scale_src1"}
        if kind in ("v", "a"):
            return table.get(start)
        if kind == "s" and start == V_DST and pr.fmt in ("VOP3", "VOP1"):
            return "vdst"  # an SGPR destination encoded in the vdst field
        if kind == "s" and start == 0 and pr.fmt == "VOP3":
            return "sdst"
        if kind == "s" and pr.fmt == "VOP3" and f.get("src0") == S_SRC0 and start == S_SRC0:
            return "src0"
        if kind == "s" and pr.fmt == "VOP3" and f.get("src1") == S_SRC1 and start == S_SRC1:
            return "src1"
        if kind == "s" and pr.fmt == "VOP3" and f.get("src2") == S_SRC2 and start == S_SRC2:
            return "src2"
        return None
    if pr.fmt == "DS":
        table = {V_SRC0: "addr", V_SRC1: "data0", V_SRC2: "data1", V_DST: "vdst"}
        return table.get(start) if kind in "va" else None
    if pr.fmt == "FLAT":
        if kind in "va":
            return {V_SRC0: "addr", V_SRC1: "data", V_DST: "vdst"}.get(start)
        if kind == "s" and start == S_SRC1:
            return "saddr"
        return None
    if pr.fmt in ("MUBUF", "MTBUF"):
        if kind in "va":
            return {V_SRC0: "vaddr", V_SRC1: "vdata"}.get(start)
        if kind == "s" and start == 4:
            return "srsrc"
        if kind == "s" and start == 8:
            return "soffset"
        return None
    return None


# The field an "off" operand stands for, per (format, variant).
OFF_FIELD = {("FLAT", "global_off"): "saddr", ("FLAT", "scratch_vaddr"): "saddr",
             ("FLAT", "scratch_saddr"): "addr", ("MUBUF", "offen"): "vaddr",
             ("MUBUF", "lds"): "vaddr", ("MTBUF", "offen"): "vaddr"}

# Field values implied by an addressing variant (set by the encoder, read by the decoder).
VARIANT_FIXED = {
    ("FLAT", "flat"): {"seg": 0}, ("FLAT", "global_off"): {"seg": 2, "saddr": 0x7F},
    ("FLAT", "global_saddr"): {"seg": 2}, ("FLAT", "scratch_vaddr"): {"seg": 1, "sve": 1,
                                                                      "saddr": 0x7F},
    ("FLAT", "scratch_saddr"): {"seg": 1, "sve": 0}, ("FLAT", "scratch_svs"): {"seg": 1, "sve": 1},
    ("MUBUF", "lds"): {"lds": 1},
    ("SMEM", "imm"): {"imm": 1}, ("SMEM", "soff"): {"imm": 0},
}
# Variants that only exist to sweep the opcode space; they are not part of the database.
PLAIN_VARIANTS = {"", "mai", "offen", "dpp", "sdwa", "mai_scale"}

# Special printed syntax of immediate operands.
IMM_SYNTAX = (("vmcnt(", "waitcnt"), ("expcnt(", "waitcnt"), ("lgkmcnt(", "waitcnt"),
              ("hwreg(", "hwreg"), ("sendmsg(", "sendmsg"), ("gpr_idx(", "gpr_idx"))


def imm_field(pr: Probe, tok: str) -> str | None:
    """Which field printed an immediate token."""
    if pr.fmt == "SOPK":
        return "literal" if tok == f"0x{LITERAL:x}" else "simm16"
    if pr.fmt == "SOPP":
        return "simm16"
    if pr.fmt == "SOPC":
        return "ssrc1"  # s_set_gpr_idx_on's mode immediate
    if pr.fmt == "SMEM":
        return "sdata" if tok == "16" else "offset"
    if pr.fmt == "VOP3" and pr.fields.get("src1") == 129 and tok == "1":
        return "src1"
    if pr.fmt in ("VOP1", "VOP2", "VOP3", "VOPC"):
        return "literal"
    return None


def analyse(target: str, pr: Probe, rec: dict) -> dict | None:
    """Turn one decoded word into a form record (mnemonic, encoding, operand slots...)."""
    text = rec["text"]
    mnem, ops, mods = split_text(text)
    if mnem == "s_waitcnt" and ops:
        ops, mods = [" ".join([ops[0], *mods])], []  # "vmcnt(0) lgkmcnt(0)" is one operand
    base, suffix = base_mnemonic(mnem)
    enc = form_encoding(pr, rec, suffix)
    mc_regs = {}
    for k, op in enumerate(rec["ops"]):
        if "reg" in op:
            tok = mc_reg_to_tok(op["reg"])
            if tok and tok not in mc_regs:
                mc_regs[tok] = k
    desc = rec["desc"]
    ndefs = rec["ndefs"]
    slots = []
    for tok in ops:
        slot: dict = {"tok": tok}
        r = parse_reg(tok.strip("-|"))
        if r:
            kind, start, width = r
            slot["field"] = field_by_value(pr, kind, start, width)
            slot["reg"] = [kind, start, width]
            k = mc_regs.get(tok.strip("-|"))
            if k is not None and k < len(desc):
                d = desc[k]
                slot["rc"] = d["rc"]
                slot["type"] = d["type"]
                slot["def"] = k < ndefs
                slot["tied"] = d["tied"]
                # INPUT_MODS operand right before a source: neg/abs/sext allowed.
                slot["mods"] = k > 0 and desc[k - 1]["type"] == INPUT_MODS
            else:
                slot["def"] = None
        elif tok.lower() in SPECIALS:
            slot["fixed"] = tok.lower()
        elif tok == "off":
            slot["off"] = True
            slot["field"] = OFF_FIELD.get((pr.fmt, pr.variant.split("+")[0]), "vaddr")
        else:
            slot["imm"] = tok
            slot["field"] = imm_field(pr, tok)
        slots.append(slot)
    ts = int(rec["ts"])
    return {
        "target": target, "fmt": pr.fmt, "variant": pr.variant, "op": pr.op,
        "mnemonic": base, "suffix": suffix, "enc": enc, "mc_name": rec["name"],
        "size": rec["size"], "text": text, "slots": slots, "mods": mods, "ts": ts,
        "idefs": rec["idefs"], "iuses": rec["iuses"], "flags": rec["flags"],
        "desc": desc, "ndefs": ndefs, "mc_ops": rec["ops"], "probe": pr,
    }


def decode_all(target: str) -> list[dict]:
    """Decode every probe; per (format, variant, opcode) keep the first alternative that LLVM
    decodes cleanly and whose printed text LLVM assembles again."""
    probes = enumerate_probes()
    recs = probe(target, [p.hex() for p in probes])
    cands: dict[tuple, list[tuple[Probe, dict]]] = defaultdict(list)
    for pr, rec in zip(probes, recs):
        # A "/*" comment in LLVM's text flags an operand LLVM finds invalid.
        if not rec["ok"] or "/*" in rec["text"]:
            continue
        ts = int(rec["ts"])
        if pr.fmt == "VOP3P" and ts_bit(ts, "IsMAI") != (pr.variant in ("mai", "mai_scale")):
            continue
        if pr.variant == "mai_scale" and rec["size"] != 16:
            continue
        if pr.variant.endswith("+rtn") and "_RTN" not in rec["name"]:
            continue  # not an atomic: sc0 is just a cache bit
        cands[(pr.fmt, pr.variant, pr.op)].append((pr, rec))
    texts = sorted({rec["text"] for lst in cands.values() for _pr, rec in lst})
    ok = dict(zip(texts, llvm_mc_accepts(target, texts)))
    out = []
    for key in sorted(cands, key=lambda k: (k[0], k[1], k[2])):
        lst = cands[key]
        pr, rec = next(((p, r) for p, r in lst if ok[r["text"]]), lst[0])
        a = analyse(target, pr, rec)
        a["reassembles"] = ok[rec["text"]]
        if pr.fmt == "SOPP" and a["slots"]:
            # LLVM omits some SOPP immediates when they are zero (s_endpgm, s_barrier...).
            zero = [r for p, r in lst if not p.fields and r["name"] == rec["name"]]
            if zero and len(split_text(zero[0]["text"])[1]) < len(a["slots"]):
                a["slots"][-1]["optional"] = True
        out.append(a)
    return out


# ----------------------------------------------------------------------------- modifiers

# (encodings, field, value, printed token that proves LLVM reads the bit) for each probe.
MODIFIER_PROBES: list[tuple[tuple[str, ...], str, int, str]] = [
    (("VOP3",), "clamp", 1, "clamp"),
    (("VOP3",), "omod", 1, "mul:2"),
    (("VOP3",), "op_sel", 1, "op_sel:"),
    (("VOP3P",), "clamp", 1, "clamp"),
    (("VOP3P",), "op_sel", 1, "op_sel:"),
    (("VOP3P",), "op_sel_hi", 0, "op_sel_hi:"),
    (("VOP3P",), "neg", 1, "neg_lo:"),
    (("VOP3P",), "neg_hi", 1, "neg_hi:"),
    (("MAI",), "cbsz", 1, "cbsz:1"),
    (("MAI",), "abid", 1, "abid:1"),
    (("MAI",), "blgp", 1, "blgp:1"),
    (("MAI",), "blgp", 1, "neg:["),  # f64 MFMA: the BLGP field negates A/B/C
    (("MAI_SCALE",), "cbsz", 1, "cbsz:1"),
    (("MAI_SCALE",), "blgp", 1, "blgp:1"),
    (("DS",), "offset0", 1, "offset"),
    (("DS",), "offset1", 2, "offset"),
    (("DS",), "gds", 1, "gds"),
    (("FLAT", "GLOBAL", "SCRATCH"), "offset", 16, "offset:16"),
    (("FLAT", "GLOBAL", "SCRATCH"), "sc0", 1, "sc0"),
    (("FLAT", "GLOBAL", "SCRATCH"), "sc1", 1, "sc1"),
    (("FLAT", "GLOBAL", "SCRATCH"), "nt", 1, "nt"),
    (("MUBUF", "MTBUF"), "offset", 16, "offset:16"),
    (("MUBUF", "MTBUF"), "sc0", 1, "sc0"),
    (("MUBUF", "MTBUF"), "sc1", 1, "sc1"),
    (("MUBUF", "MTBUF"), "nt", 1, "nt"),
    (("MUBUF", "MTBUF"), "idxen", 1, "idxen"),
    (("SMEM",), "glc", 1, "glc"),
    (("SMEM",), "nv", 1, "nv"),
]
SDWA_PROBES = [("clamp", 1, "clamp"), ("omod", 1, "mul:2"), ("src0_sext", 1, "sext(")]


# Per encoding: (operand field, (bit field, layout) that negates it) for input-modifier probing.
NEG_BITS = {
    "VOP3": {"src0": ("neg", 1), "src1": ("neg", 2), "src2": ("neg", 4)},
    "VOP3P": {"src0": ("neg", 1), "src1": ("neg", 2), "src2": ("neg", 4)},
}


def probe_input_mods(target: str, forms: list[dict]) -> None:
    """Mark the source slots whose negate bit LLVM prints (-x, neg(x), sext(x)): these take
    input modifiers. Decoding is the ground truth: some LLVM descriptors carry modifier
    operands that the printer ignores."""
    jobs: list[tuple[dict, int]] = []
    lines: list[str] = []
    for f in forms:
        pr: Probe = f["probe"]
        for k, slot in enumerate(f["slots"]):
            slot["mods"] = False
            field = slot.get("field")
            if field not in ("src0", "src1", "src2", "vsrc1") or "reg" not in slot:
                continue
            if f["enc"] in ("VOP3", "VOP3P") and field in NEG_BITS[f["enc"]]:
                name, bit = NEG_BITS[f["enc"]][field]
                fmt = FORMATS[pr.fmt]
                val = fmt.fields[name].put(pr.value, bit)
                data = val.to_bytes(pr.size, "little")
            elif f["enc"] in ("DPP", "SDWA"):
                layout = DPP if f["enc"] == "DPP" else SDWA
                which = "src0" if field == "src0" else "src1"
                for bit in ("neg", "sext") if f["enc"] == "SDWA" else ("neg",):
                    extra = layout[f"{which}_{bit}"].put(pr.extra, 1)
                    data = pr.value.to_bytes(pr.size, "little") + extra.to_bytes(4, "little")
                    jobs.append((f, k))
                    lines.append((data + TAIL).hex())
                continue
            else:
                continue
            jobs.append((f, k))
            lines.append((data + TAIL).hex())
    for (f, k), rec in zip(jobs, probe(target, lines)):
        if not rec["ok"] or rec["name"] != f["mc_name"]:
            continue
        _m, ops, _mods = split_text(rec["text"])
        if k < len(ops) and (ops[k].startswith(("-", "neg(", "sext(")) or "|" in ops[k]):
            f["slots"][k]["mods"] = True


def probe_modifiers(target: str, forms: list[dict]) -> None:
    """Record, per form, the modifiers LLVM decodes (prints) when their bits are set."""
    jobs: list[tuple[dict, str, str]] = []
    lines: list[str] = []
    for f in forms:
        pr: Probe = f["probe"]
        f["modifiers"] = []
        if f["enc"] == "SDWA":
            for field, value, token in SDWA_PROBES:
                extra = SDWA[field].put(pr.extra, value)
                data = pr.value.to_bytes(pr.size, "little") + extra.to_bytes(4, "little") + TAIL
                jobs.append((f, field, token))
                lines.append(data.hex())
            continue
        for encs, field, value, token in MODIFIER_PROBES:
            if f["enc"] not in encs:
                continue
            fmt = FORMATS[pr.fmt]
            if f["enc"] == "MAI_SCALE":
                w = (pr.value >> 64)
                w = fmt.fields[field].put(w, value)
                val = (pr.value & ((1 << 64) - 1)) | (w << 64)
            else:
                val = fmt.fields[field].put(pr.value, value)
            jobs.append((f, field, token))
            lines.append((val.to_bytes(pr.size, "little") + TAIL).hex())
    recs = probe(target, lines)
    for (f, field, token), rec in zip(jobs, recs):
        # (whole-token match: "nv" must not match inside "s_dcache_inv")
        if rec["ok"] and re.search(r"(?:^|\s)" + re.escape(token), rec["text"]) \
                and rec["name"] == f["mc_name"]:
            if field == "op_sel":
                m = re.search(r"op_sel:\[([^\]]*)\]", rec["text"])
                if m:
                    f["op_sel_len"] = len(m.group(1).split(","))
            if field in ("neg", "neg_hi"):
                name = {"neg": "neg_lo", "neg_hi": "neg_hi"}[field]
                if f"{name}:" not in rec["text"]:
                    continue  # v_fma_mix*: these bits are printed as source modifiers
            elif field in ("offset0", "offset1"):
                # Two 8-bit offsets (ds_*2*) print offset0:/offset1:; others one 16-bit offset.
                name = field if f"{field}:" in rec["text"] else "offset"
            elif field == "blgp" and token == "neg:[":
                name = "neg"
            elif field not in ("neg", "neg_hi"):
                name = field
            if name not in f["modifiers"]:
                f["modifiers"].append(name)


def _extra_groups(layout: dict, overlays: tuple[str, ...]) -> list[tuple[int, int]]:
    """(lo, width) of the bit groups of a DPP/SDWA dword after src0: its fields (not the
    `overlays`, fields laid over others) and each bit no field covers. A group is reserved
    for a form when every single-bit change of it makes LLVM reject the word, so multi-bit
    controls with other valid values (dpp_ctrl, a select) are not."""
    groups = [(f.lo, f.width) for name, f in layout.items()
              if name != "src0" and name not in overlays]
    covered = 0
    for f in layout.values():
        covered |= f.mask << f.lo
    groups += [(bit, 1) for bit in range(32) if not (covered >> bit) & 1]
    return sorted(groups)


# (SDWA's sdst and sd are the VOPC reading of dst_sel/dst_unused/clamp and omod's high bit)
EXTRA_GROUPS = {"DPP": _extra_groups(DPP, ()), "SDWA": _extra_groups(SDWA, ("sdst", "sd"))}


def probe_reserved_bits(target: str, forms: list[dict]) -> None:
    """Record, per form, the bits of its instruction word that LLVM's decoder holds at their
    value in the form's sample word (flipping one alone makes LLVM reject the word): unused
    operand fields (DS vdst of a store, FLAT saddr), modifier bits of forms without the
    modifier (VOP3 neg/abs/clamp/omod), reserved bits; and the bit groups of the DPP/SDWA
    dword it holds (see EXTRA_GROUPS). The opcode, the format bits (23..31 of the first
    dword) and the form's operand fields are not probed: operand codes are checked one by
    one. Scaled MFMAs (two words) are left out."""
    jobs: list[tuple[dict, str, int]] = []
    lines: list[str] = []
    for f in forms:
        pr: Probe = f["probe"]
        f["reserved"] = f["reserved_extra"] = 0
        if f["enc"] == "MAI_SCALE":
            continue
        fmt = FORMATS[pr.fmt]
        covered = 0
        for fld in fmt.fields.values():
            covered |= fld.mask << fld.lo
        skip = (0x1FF << 23) & ~covered  # the format bits
        for name in ["op", *(slot.get("field") for slot in f["slots"])]:
            if name in fmt.fields:
                skip |= fmt.fields[name].mask << fmt.fields[name].lo
        extra = pr.extra.to_bytes(4, "little") if pr.extra is not None else b""
        for bit in range(8 * pr.size):
            if not (skip >> bit) & 1:
                jobs.append((f, "word", bit))
                data = (pr.value ^ (1 << bit)).to_bytes(pr.size, "little") + extra + TAIL
                lines.append(data.hex())
        for lo, width in EXTRA_GROUPS.get(f["enc"], []):
            for bit in range(lo, lo + width):
                jobs.append((f, "extra", bit))
                data = pr.value.to_bytes(pr.size, "little") + \
                    (pr.extra ^ (1 << bit)).to_bytes(4, "little") + TAIL
                lines.append(data.hex())
    rejected: dict[int, int] = defaultdict(int)  # id(form) -> the extra bits LLVM rejects
    for (f, where, bit), rec in zip(jobs, probe(target, lines)):
        if rec["ok"]:
            continue
        if where == "word":
            f["reserved"] |= 1 << bit
        else:
            rejected[id(f)] |= 1 << bit
    for f in forms:
        for lo, width in EXTRA_GROUPS.get(f["enc"], []):
            group = ((1 << width) - 1) << lo
            if rejected[id(f)] & group == group:
                f["reserved_extra"] |= group


# ----------------------------------------------------------------------------- operand kinds


def reg_token(kind: str, start: int, width: int) -> str:
    return f"{kind}{start}" if width == 1 else f"{kind}[{start}:{start + width - 1}]"


KIND_SAMPLES = {
    "v": lambda w: reg_token("v", 12, w),
    "a": lambda w: reg_token("a", 12, w),
    "s": lambda w: reg_token("s", 12, w),
    "i": lambda w: "1",
    "l": lambda w: "0x1234",  # not inline, and small enough for 16-bit operands
}


MCOI_OPERAND_REGISTER = 2


def rc_kinds(rc: str) -> set[str] | None:
    """Register kinds a register class admits (None if it is not a pure V/A class)."""
    if rc.startswith(("VGPR_", "VReg_")):
        return {"v"}
    if rc.startswith(("AGPR_", "AReg_")):
        return {"a"}
    if rc.startswith(("AV_", "AVDst")):
        return {"v", "a"}
    return None


# Special registers probed in scalar slots whose register class leaves some out
# (SReg_32_XM0_XEXEC, SReg_64_XEXEC...): what llvm-mc rejects there is excluded.
SPECIAL_SAMPLES = {1: ("m0", "exec_lo", "exec_hi"), 2: ("exec",)}


def probes_specials(slot: dict) -> bool:
    """A scalar register slot whose class name says it leaves special registers out."""
    rc = slot.get("rc", "")
    return ("reg" in slot and slot["reg"][0] == "s" and slot["reg"][2] in SPECIAL_SAMPLES
            and ("XM0" in rc or "XEXEC" in rc))


JOINT_AGPR_FIELDS = {"vdst", "data", "data0", "data1", "vdata", "src2"}


def probe_kinds(target: str, forms: list[dict]) -> None:
    """Record, per operand slot, which operand kinds llvm-mc accepts."""
    lines: list[str] = []
    jobs: list[tuple[dict, int | None, str]] = []
    for f in forms:
        mnem, ops, mods = split_text(f["text"])
        f["_parts"] = (mnem, ops, mods)
        lines.append(f["text"])
        jobs.append((f, None, ""))
        for k, slot in enumerate(f["slots"]):
            if slot.get("fixed") or slot.get("field") in ("literal",):
                continue
            width = slot["reg"][2] if "reg" in slot else 1
            # Only one SGPR may be read (constant bus): reuse another slot's SGPR if present.
            other_sgpr = next((o for j, o in enumerate(ops) if j != k and parse_reg(o)
                               and parse_reg(o)[0] == "s" and parse_reg(o)[2] == width), None)
            for kind, make in KIND_SAMPLES.items():
                new_ops = list(ops)
                new_ops[k] = other_sgpr if (kind == "s" and other_sgpr) else make(width)
                text = mnem + " " + ", ".join(new_ops) + (" " + " ".join(mods) if mods else "")
                lines.append(text)
                jobs.append((f, k, kind))
            if slot.get("mods") and "reg" in slot:
                # Which spelling of the modifiers the assembler takes: -x (float operands)
                # or sext(x) (integer ones); the decoder prints both from the same bit.
                plain = ops[k].lstrip("-").strip("|")
                for style, text_op in (("neg", "-" + plain), ("sext", f"sext({plain})")):
                    new_ops = list(ops)
                    new_ops[k] = text_op
                    lines.append(mnem + " " + ", ".join(new_ops)
                                 + (" " + " ".join(mods) if mods else ""))
                    jobs.append((f, k, "mods:" + style))
            if probes_specials(slot):
                for name in SPECIAL_SAMPLES[width]:
                    new_ops = list(ops)
                    new_ops[k] = name
                    lines.append(mnem + " " + ", ".join(new_ops)
                                 + (" " + " ".join(mods) if mods else ""))
                    jobs.append((f, k, "special:" + name))
        # Data and destination registers of memory ops (and MFMA's C/D) switch to AGPRs
        # together, with one bit: probe them jointly.
        group = [k for k, slot in enumerate(f["slots"]) if slot.get("field") in JOINT_AGPR_FIELDS
                 and "reg" in slot and slot["reg"][0] == "v"
                 and (f["enc"] in ("MAI", "MAI_SCALE") or f["fmt"] in (
                     "DS", "FLAT", "MUBUF", "MTBUF"))]
        if f["enc"] in ("MAI", "MAI_SCALE"):
            group = [k for k in group if f["slots"][k]["field"] in ("vdst", "src2")]
        if group:
            new_ops = list(ops)
            for k in group:
                _kind, start, width = f["slots"][k]["reg"]
                new_ops[k] = reg_token("a", start, width)
            lines.append(mnem + " " + ", ".join(new_ops) + (" " + " ".join(mods) if mods else ""))
            jobs.append((f, tuple(group), "a"))
    ok = llvm_mc_accepts(target, lines)
    for (f, k, kind), accepted in zip(jobs, ok):
        if k is None:
            continue
        if kind.startswith("mods:"):
            if accepted:
                f["slots"][k].setdefault("mod_styles", []).append(kind.split(":", 1)[1])
            continue
        if kind.startswith("special:"):
            if not accepted:
                f["slots"][k].setdefault("rejects", []).append(kind.split(":", 1)[1])
            continue
        for j in (k if isinstance(k, tuple) else (k,)):
            slot = f["slots"][j]
            slot.setdefault("kinds", [])
            if accepted and kind not in slot["kinds"]:
                slot["kinds"].append(kind)
    for f in forms:
        for slot in f["slots"]:
            if slot.get("type") == MCOI_OPERAND_REGISTER and slot.get("rc"):
                # A register-only operand: LLVM's assembler sometimes accepts a constant there
                # and encodes garbage; the register class is the truth.
                # (Only scalar/constant kinds are dropped: the AGPR form of an operand is
                # another LLVM opcode whose class is not the one decoded here.)
                if rc_kinds(slot["rc"]):
                    slot["kinds"] = [k for k in slot.get("kinds", []) if k in ("v", "a")]
            if slot.get("off"):
                slot.setdefault("kinds", []).append("off")
            if f["fmt"] == "SMEM" and f["variant"] == "soff" and slot.get("field") == "soffset":
                # Immediates written there select the "imm" variant instead.
                slot["kinds"] = ["s"]
            variant = f["variant"].split("+")[0]
            if variant == "scratch_saddr" and slot.get("field") == "addr":
                slot["kinds"] = ["off"]  # a VGPR there selects the scratch_svs variant
            if variant in ("scratch_vaddr", "global_off") and slot.get("field") == "saddr":
                slot["kinds"] = ["off"]  # an SGPR there selects another variant


# ----------------------------------------------------------------------------- database

def dtype_of(type_id: int) -> str | None:
    k = type_id - OPERAND_FIRST_TARGET
    if 0 <= k < len(OPERAND_TYPES):
        name = OPERAND_TYPES[k]
        for prefix in ("REG_IMM_", "REG_INLINE_C_", "REG_INLINE_AC_"):
            if name.startswith(prefix):
                return TYPE_DTYPE.get(name[len(prefix):])
        if name.startswith("KIMM"):
            return {"KIMM32": "f32", "KIMM16": "f16", "KIMM64": "f64"}[name]
    return None


def unit_of(f: dict) -> str:
    ts = f["ts"]
    if ts_bit(ts, "IsMAI"):
        return "mfma"
    if ts_bit(ts, "SMRD"):
        return "smem"
    if ts_bit(ts, "DS"):
        return "lds"
    if ts_bit(ts, "FLAT") or ts_bit(ts, "MUBUF") or ts_bit(ts, "MTBUF"):
        return "vmem"
    if ts_bit(ts, "VALU"):
        return "trans" if ts_bit(ts, "TRANS") else "valu"
    if "branch" in f["flags"] or f["mnemonic"] in ("s_endpgm", "s_endpgm_saved"):
        return "branch"
    return "salu"


def flags_of(f: dict) -> list[str]:
    fl = set(f["flags"]) - {"side_effects", "convergent", "commutable", "move_imm", "compare",
                             "barrier", "trap"}
    ts, m = f["ts"], f["mnemonic"]
    if ts_bit(ts, "IsAtomicRet") or ts_bit(ts, "IsAtomicNoRet"):
        fl.add("atomic")
    if ts_bit(ts, "IsAtomicRet"):
        fl.add("atomic_return")
    if ts_bit(ts, "IsPacked"):
        fl.add("packed")
    if ts_bit(ts, "IsDOT"):
        fl.add("dot")
    if ts_bit(ts, "TRANS"):
        fl.add("trans")
    if "compare" in f["flags"]:
        fl.add("compare")
    if m.startswith("s_endpgm"):
        fl.add("ends_program")
    if m == "s_barrier":
        fl.add("workgroup_barrier")
    if "barrier" in f["flags"] and "branch" in f["flags"]:
        fl.add("unconditional")
    if f["enc"] == "MUBUF" and f["variant"] == "lds":
        fl.add("lds_dma")
    if m.startswith("global_load_lds_"):
        fl.add("lds_dma")
    return sorted(fl)


SOURCE_FIELDS = {"src0", "src1", "src2", "vsrc1", "ssrc0", "ssrc1", "soffset", "scale_src0",
                 "scale_src1"}


def slot_spec(f: dict, k: int, slot: dict, seen_src: bool) -> dict:
    """The database entry of one operand slot."""
    if slot.get("fixed"):
        reg = slot["fixed"]
        return {"name": reg, "fixed": reg, "role": "use" if seen_src else "def"}
    field = slot.get("field") or f"op{k}"
    spec: dict = {"name": field}
    kinds = list(slot.get("kinds", []))
    if "reg" in slot:
        spec["role"] = "def" if slot.get("def") else "use"
        spec["width"] = slot["reg"][2]
        if "Align2" in slot.get("rc", ""):
            spec["align"] = 2
        t = dtype_of(slot.get("type", 0))
        if t:
            spec["type"] = t
        if slot.get("mods"):
            spec["mods"] = True
            styles = slot.get("mod_styles", [])
            if styles == ["sext"]:
                spec["mod_kind"] = "int"  # sext(x) only
            elif styles == ["neg"]:
                spec["mod_kind"] = "fp"  # -x and |x| only
            elif not styles:
                spec["mod_kind"] = "none"  # decoded and printed, but not assembled
        # Probed, not read off the class name: VOP3 carry-in/mask sources have XEXEC
        # classes too, yet LLVM takes exec there.
        excludes = slot.get("rejects", [])
        if excludes:
            spec["excludes"] = excludes
    elif slot.get("off"):
        spec["role"] = "use"
    elif field == "literal":
        spec["role"] = "use"
        kinds = ["l"]
        kimm = [d["type"] for d in f["desc"] if dtype_of(d["type"]) and OPERAND_TYPES[
            d["type"] - OPERAND_FIRST_TARGET].startswith("KIMM")]
        if kimm:
            spec["type"] = dtype_of(kimm[0])
    elif field in SOURCE_FIELDS and not any(p in slot["imm"] for p, _s in IMM_SYNTAX):
        spec["role"] = "use"
        spec["width"] = 1
    else:
        # A plain immediate field (simm16, SMEM offset, ...), possibly with its own syntax.
        spec["role"] = "use"
        kinds = ["k"]
        tok = slot["imm"]
        if "branch" in f["flags"] and f["fmt"] in ("SOPP", "SOPK"):
            spec["syntax"] = "label"
        for prefix, syntax in IMM_SYNTAX:
            if prefix in tok:
                spec["syntax"] = syntax
                break
    spec["kinds"] = kinds
    if slot.get("optional"):
        spec["optional"] = True  # printed only when not zero
    return spec


def tied_use(f: dict) -> bool:
    """True if LLVM ties a source to the destination (v_mac/v_fmac, DPP's old value)."""
    return any(k >= f["ndefs"] and 0 <= d["tied"] < f["ndefs"] for k, d in enumerate(f["desc"]))


def build_database(target: str, forms: list[dict], coverage: dict, passes: dict) -> dict:
    by_mnem: dict[str, dict] = {}
    for f in forms:
        m = f["mnemonic"]
        inst = by_mnem.setdefault(m, {
            "mnemonic": m, "unit": unit_of(f), "flags": set(), "counters": set(),
            "implicit_defs": set(), "implicit_uses": set(), "forms": []})
        ts = f["ts"]
        if f["variant"] != "lds":  # the LDS-DMA variant's counters/flags stay on its form
            for name, c in (("VM_CNT", "vmcnt"), ("LGKM_CNT", "lgkmcnt"), ("EXP_CNT", "expcnt")):
                if ts_bit(ts, name):
                    inst["counters"].add(c)
            inst["flags"].update(flags_of(f))
        inst["implicit_defs"].update(r.lower() for r in f["idefs"])
        inst["implicit_uses"].update(r.lower() for r in f["iuses"])
        seen_src = False
        operands = []
        for k, slot in enumerate(f["slots"]):
            spec = slot_spec(f, k, slot, seen_src)
            if spec["role"] == "use" or (not slot.get("fixed") and not slot.get("def")):
                seen_src = seen_src or spec["role"] == "use"
            operands.append(spec)
        if tied_use(f):
            for spec in operands:
                if spec["role"] == "def" and not spec.get("fixed"):
                    spec["tied"] = True  # the destination is also read
                    break
        mods = list(f.get("modifiers", []))
        for name in ("op_sel", "op_sel_hi", "neg_lo", "neg_hi"):
            if f"{name}:" in f["text"] and name not in mods:  # printed at the sweep's defaults
                mods.append(name)
        if f["enc"] in ("MUBUF", "MTBUF") and f["variant"] != "lds":
            mods = ["offen", *mods]
        form = {"enc": f["enc"], "format": f["fmt"], "opcode": f["op"], "suffix": f["suffix"],
                "size": f["size"],
                "operands": operands, "modifiers": mods,
                "counters": sorted(c for name, c in (("VM_CNT", "vmcnt"), ("LGKM_CNT", "lgkmcnt"),
                                                     ("EXP_CNT", "expcnt")) if ts_bit(ts, name)),
                "mc_name": f["mc_name"], "example": f["text"]}
        base_variant, _, rtn = f["variant"].partition("+")
        if base_variant not in PLAIN_VARIANTS:
            form["variant"] = base_variant + ("+rtn" if rtn else "")
        elif rtn:
            form["variant"] = "rtn"
        if f.get("op_sel_len"):
            form["op_sel_len"] = f["op_sel_len"]  # how many op_sel bits LLVM prints
        # Only the variant bits this opcode's decoded word actually had set.
        fixed = {k: v for k, v in VARIANT_FIXED.get((f["fmt"], f["variant"].split("+")[0]),
                                                    {}).items() if k in f["probe"].fields}
        if f["variant"].endswith("+rtn"):
            # the returning atomic is selected by sc0 (glc for scalar atomics)
            fixed["glc" if f["fmt"] == "SMEM" else "sc0"] = 1
        if fixed:
            form["fixed"] = fixed
        if f.get("reserved"):
            # (mask, value): word bits LLVM's decoder holds at these values for this form
            form["reserved"] = [f["reserved"], f["probe"].value & f["reserved"]]
        if f.get("reserved_extra"):
            # the same for the DPP/SDWA dword
            form["reserved_extra"] = [f["reserved_extra"], f["probe"].extra & f["reserved_extra"]]
        if not f.get("reassembles", True):
            form["reassembles"] = False
        inst["forms"].append(form)
        if m in passes and passes[m]:
            inst["passes"] = int(passes[m])
    insts = []
    for alias, canon in coverage.get("aliases", {}).items():
        if canon in by_mnem:
            by_mnem[canon].setdefault("aliases", []).append(alias)
    for m in sorted(by_mnem):
        inst = by_mnem[m]
        for k in ("flags", "counters", "implicit_defs", "implicit_uses"):
            inst[k] = sorted(inst[k])
        insts.append(inst)
    return {
        "generated_by": "tools/gen_isa.py (from LLVM 22's MC layer); do not edit by hand",
        "llvm_version": llvm_version(),
        "target": target,
        "coverage": coverage,
        "instructions": insts,
    }


def llvm_version() -> str:
    out = subprocess.check_output([str(LLVM_BIN / "llvm-config"), "--version"], text=True)
    return out.strip()


# ----------------------------------------------------------------------------- coverage


def candidate_mnemonics() -> list[str]:
    """AMDGPU-looking instruction names among libLLVM's strings (the asm matcher's tables)."""
    lib = next(Path(LLVM_BIN.parent / "lib").glob("libLLVM.so.22*"))
    out = subprocess.run(["strings", "-n", "3", str(lib)], capture_output=True, text=True).stdout
    pat = re.compile(r"^(v|s|ds|buffer|tbuffer|global|flat|scratch)_[a-z0-9_]+$")
    names = set()
    for line in out.splitlines():
        line = line.strip()
        # Names longer than 31 characters carry a printable length byte in front.
        for cand in (line, line[1:]):
            if pat.match(cand):
                names.add(cand)
    return sorted(names)


def accepted_mnemonics(target: str, names: list[str]) -> list[str]:
    """The subset of `names` that llvm-mc knows as an instruction of `target`."""
    errs = llvm_mc_errors(target, names)
    out = []
    for name, err in zip(names, errs):
        if err is None or not (err.startswith("invalid instruction")
                               or "not supported on this GPU" in err
                               or "variant of this instruction is not supported" in err
                               or err.startswith("unknown directive")):
            out.append(name)
    return out


def coverage_of(target: str, forms: list[dict]) -> dict:
    accepted = accepted_mnemonics(target, candidate_mnemonics())
    known = set()
    for f in forms:
        known.add(f["mnemonic"])
        known.add(f["mnemonic"] + f["suffix"])
        if f["enc"] in ("VOP1", "VOP2", "VOPC"):
            known.add(f["mnemonic"] + "_e32")
        if f["enc"] == "VOP3":
            known.add(f["mnemonic"] + "_e64")
        if f["enc"] == "DPP":
            known.add(f["mnemonic"] + "_dpp")
        if f["enc"] == "SDWA":
            known.add(f["mnemonic"] + "_sdwa")
    missing = [m for m in accepted if m not in known]
    # The suffixed DPP/SDWA variants are not separate strings in LLVM's tables: ask llvm-mc
    # about each 32-bit instruction's _dpp and _sdwa forms directly.
    variants = variant_mnemonics(target, forms)
    accepted += [v for v in variants if v not in accepted]
    missing += [v for v in variants if v not in known and v not in missing]
    aliases = find_aliases(target, missing, forms)
    missing = [m for m in missing if m not in aliases]
    return {"accepted": len(accepted), "covered": len(accepted) - len(missing),
            "missing": missing, "aliases": aliases}


def encode_line(target: str, line: str) -> bytes | None:
    """llvm-mc's encoding of one line of assembly, or None if LLVM rejects it."""
    res = subprocess.run([str(LLVM_BIN / "llvm-mc"), "-arch=amdgcn", f"-mcpu={target}",
                          "-show-encoding"], input=line + "\n", capture_output=True, text=True)
    m = re.search(r"encoding: \[([^\]]*)\]", res.stdout)
    if res.returncode or not m:
        return None
    return bytes(int(x, 16) for x in m.group(1).split(","))


def find_aliases(target: str, missing: list[str], forms: list[dict]) -> dict[str, str]:
    """Map alias mnemonics LLVM accepts (e.g. v_mul_lo_i32) to the instruction they encode."""
    import difflib

    examples: dict[str, dict] = {}
    for f in forms:
        examples.setdefault(f["mnemonic"], f)
    names = list(examples)
    squashed = {n.replace("_", ""): n for n in names}
    aliases = {}
    for m in missing:
        base, suffix = base_mnemonic(m)
        guesses = []
        if base.replace("_", "") in squashed:
            guesses.append(squashed[base.replace("_", "")])
        guesses += difflib.get_close_matches(base, names, n=6, cutoff=0.6)
        for g in dict.fromkeys(guesses):
            f = examples[g]
            mnem, ops, mods = split_text(f["text"])
            line = m + " " + ", ".join(ops) + (" " + " ".join(mods) if mods else "")
            data = encode_line(target, line)
            if data is None:
                continue
            rec = probe(target, [(data + TAIL).hex()])[0]
            if rec["ok"]:
                aliases[m] = base_mnemonic(split_text(rec["text"])[0])[0]
                break
    return aliases


def variant_mnemonics(target: str, forms: list[dict]) -> list[str]:
    """The `_dpp`/`_sdwa` variants llvm-mc accepts for the VOP1/VOP2/VOPC instructions."""
    lines, names = [], []
    for f in forms:
        if f["enc"] not in ("VOP1", "VOP2", "VOPC"):
            continue
        _m, ops, _mods = split_text(f["text"])
        wide = any("[" in o for o in ops)
        for suffix, mods in (("_dpp", "row_newbcast:1" if wide else "quad_perm:[0,1,2,3]"),
                             ("_sdwa", "")):
            lines.append(f"{f['mnemonic']}{suffix} {', '.join(ops)} {mods}".strip())
            names.append(f["mnemonic"] + suffix)
    ok = llvm_mc_accepts(target, lines)
    return sorted({n for n, good in zip(names, ok) if good})


def mfma_passes(target: str, forms: list[dict]) -> dict[str, float | None]:
    mai = {}
    for f in forms:
        if f["enc"] in ("MAI", "MAI_SCALE") and f["mnemonic"] not in mai:
            if "mfma" in f["mnemonic"] and "ld_scale" not in f["mnemonic"]:
                mai[f["mnemonic"]] = f["text"]
    names = list(mai)
    vals = mca_passes(target, [mai[n] for n in names])
    return dict(zip(names, vals))


def generate(target: str) -> dict:
    print(f"[{target}] decoding the opcode space ...", file=sys.stderr)
    forms = decode_all(target)
    print(f"[{target}] {len(forms)} forms; probing modifiers ...", file=sys.stderr)
    probe_modifiers(target, forms)
    probe_input_mods(target, forms)
    probe_reserved_bits(target, forms)
    print(f"[{target}] probing operand kinds with llvm-mc ...", file=sys.stderr)
    probe_kinds(target, forms)
    print(f"[{target}] MFMA passes (llvm-mca) and coverage ...", file=sys.stderr)
    passes = mfma_passes(target, forms)
    coverage = coverage_of(target, forms)
    # LLVM decodes DPP/SDWA words of some instructions whose _dpp/_sdwa variant its
    # assembler refuses (v_clrexcp): decode-only forms.
    variants = set(variant_mnemonics(target, forms))
    for f in forms:
        if f["enc"] in ("DPP", "SDWA") and \
                f["mnemonic"] + ("_dpp" if f["enc"] == "DPP" else "_sdwa") not in variants:
            f["reassembles"] = False
    db = build_database(target, forms, coverage, passes)
    print(f"[{target}] {len(db['instructions'])} mnemonics; coverage "
          f"{coverage['covered']}/{coverage['accepted']}", file=sys.stderr)
    return db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", nargs="+", default=["gfx942", "gfx950"])
    ap.add_argument("--dump", action="store_true", help="print decoded records and stop")
    args = ap.parse_args()
    for t in args.targets:
        recs = decode_all(t)
        if args.dump:
            for r in recs:
                slots = " ".join(
                    f"{s.get('field') or s.get('fixed') or ('off' if s.get('off') else '?')}"
                    f"{'*' if s.get('def') else ''}" for s in r["slots"])
                print(t, r["enc"], r["op"], r["mnemonic"] + r["suffix"], "|", r["text"], "|",
                      slots, "|", r["mc_name"])
            continue
        db = generate(t)
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / f"{t}.json"
        path.write_text(json.dumps(db, indent=None, separators=(",", ":"), sort_keys=False))
        print(f"wrote {path} ({path.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
