"""Required wait states between dependent instructions ("manually inserted wait states").

The hardware does not interlock some dependencies: the program must separate the producer and
the consumer by enough wait states (independent instructions, or `s_nop N` = N+1 states).
This module holds those rules as data, per target, for two users: the emulator's sanitizer
checks them while it runs (emu/hazard_check.py) and the hazard pass inserts `s_nop` from
them. Each rule names the producer and consumer instruction classes, which operand of each
links them, the register file, and the wait states (for MFMA producers, per pass count).

Sources: LLVM 22 GCNHazardRecognizer.cpp (checkVMEMHazards, checkDPPHazards,
checkDivFMasHazards, checkRWLaneHazards, checkReadM0Hazards, checkGetRegHazards,
checkSetRegHazards, checkVALUHazards with hasTransForwardingHazard /
hasDstSelForwardingHazard / hasVDecCoExecHazard / has12DWordStoreHazard, checkMAIHazards90A,
checkMAIVALUHazards with the GFX940 XDL/SMFMA formulas and the GFX950 "+1" adjustments), the
CDNA3 ISA "Manually Inserted Wait States" table, and ROCm rocRoller's wait-state observers
(which quote the CDNA3/CDNA4 tables: readlane of a VALU-written VGPR = 1, gfx950 permlane of a
VALU-written VGPR = 2, v_cmpx write EXEC read by readlane/permlane = 4). Where the sources
differ, LLVM wins (it is what the hazard pass must reproduce): e.g. a VALU-written VCC read by
a VALU needs 2 wait states (hasVDecCoExecHazard), not the 1 rocRoller uses.

A distance of d wait states means d instructions (s_nop N counting N+1) between the producer
and the consumer; a rule of W wait states is met when d >= W.

Soft-clause rules (`clause` names the class whose instructions form the clause: smem or vmem)
are not distances. With XNACK enabled (`xnack=True` rules: the target ID says xnack+ or leaves
xnack as "any", which code must assume may run with XNACK on; not xnack-), SMEM instructions
issued back to back, or VMEM (buffer/global/flat/scratch) instructions issued back to back,
form a soft clause that the hardware may replay from its first instruction after a page
fault. Any other instruction in between (s_nop, s_waitcnt, SALU, VALU, DS, the other memory
kind, a branch) ends the clause. An instruction that would join a clause is checked against
all of it (LLVM 22 GCNHazardRecognizer::checkSoftClauseHazards, called from checkSMRDHazards
and checkVMEMHazards; its clause is only the last 5 issued instructions, 19 in kernels that
use AGPRs, where asterism takes the whole clause): nothing is needed unless an earlier
instruction of the clause writes a register; then ("def", "use") a register written by any
instruction of the clause, the joining one included, may not be read by any of them, the
joining one included (operands, explicit and tied; no SMEM or VMEM instruction writes a
register that one reads implicitly), and ("def", "none") a store, atomic or LDS DMA (class
smem_store / vmem_store) may not join at all (LLVM: "just start a new clause whenever we see
a store"). The fix is one wait state, `s_nop 0`, right before the joining instruction: it
starts a new clause there.

Instruction classes (see `instruction_classes`): valu (non-MFMA vector ALU, incl. trans,
dot, lane ops, v_accvgpr_*), trans, dot, mfma, xdl (MFMA on the XDL path: everything but the
f32-input SGEMM and f64 DGEMM ones on CDNA3/4), smfma (f32-input MFMA), dgemm (f64 MFMA),
salu, smem, smem_store (scalar store or atomic), vmem (MUBUF/MTBUF/FLAT/GLOBAL/SCRATCH),
vmem_store (VMEM store, atomic or LDS DMA: what LLVM's mayStore says), ds, lds_dma, vcmpx,
readlane (v_readlane, v_readfirstlane), writelane, rwlane (v_readlane, v_writelane),
permlane (gfx950 swaps), dpp, div_fmas, movrel, addtid (ds_*_addtid), sendmsg, setreg,
getreg, sel16 (VALU writing part of a VGPR through a shift: SDWA dst_sel, VOP3 op_sel[3],
fp8/fp4 destination selects), store_wide (VMEM store of more than 64 bits of data, for
MUBUF/MTBUF only with a constant soffset), fma64 (v_fma_f64, v_fmac_f64).

Operand roles (see `operand_roles`): def (written registers), use (read registers, explicit
operands only), touch (use or def), sgpr_use (SGPRs read: explicit operands and implicit
VCC), srcC (MFMA C; the accumulator for SMFMAC), srcAB (MFMA A and B),
lane_select (src1 of v_readlane/v_writelane), src0, data (store data), exec_read (EXEC read as
an explicit operand), exec_def, vcc_def, m0_def, hwreg (s_setreg/s_getreg hardware register), none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from asterism.isa.syntax import NAMED_SCALAR_CODES, TTMP_BASE
from asterism.target.chip import Target, get_target

# Register keys: how the hazards pass and the emulator's checker number the registers they
# track (both must agree: their reports are compared). VGPRs 0..255, AGPRs from KEY_AGPR,
# scalar codes from KEY_SGPR (vcc, exec, m0 by their codes), scc, hardware registers.
KEY_AGPR = 256
KEY_SGPR = 1024
KEY_SCC = 1200
KEY_HWREG = 2000  # s_setreg/s_getreg hardware registers (KEY_HWREG + id)
_SCALAR_NAMES = {code: name for name, code in reversed(NAMED_SCALAR_CODES.items())
                 if code < 128}


def register_key_name(key: int) -> str:
    """Assembly name of a register key (v5, a3, s7, vcc_lo, exec_hi, m0, ttmp2, scc)."""
    if key < KEY_AGPR:
        return f"v{key}"
    if key < KEY_SGPR:
        return f"a{key - KEY_AGPR}"
    if key == KEY_SCC:
        return "scc"
    s = key - KEY_SGPR
    if s in _SCALAR_NAMES:
        return _SCALAR_NAMES[s]
    if TTMP_BASE <= s < TTMP_BASE + 16:
        return f"ttmp{s - TTMP_BASE}"
    return f"s{s}"

ALL = ("gfx942", "gfx950")


@dataclass(frozen=True)
class HazardRule:
    """One required-wait-states rule: `consumer` needs `wait_states` after `producer`."""

    name: str
    doc: str
    producer: str  # instruction class of the earlier instruction
    produces: str  # its operand role that links the two (def, srcC, data, exec_def...)
    consumer: str  # instruction class of the later instruction
    consumes: str  # its operand role (use, def, srcC, srcAB, lane_select, src0, ...)
    regs: str  # register file of the link: vgpr (incl. AGPRs), sgpr, vcc, exec, m0, hwreg,
    # any (every register: soft-clause rules), none
    wait_states: int = 0
    by_passes: tuple[tuple[int, int], ...] = ()  # MFMA producer passes -> wait states
    overlap: str = "any"  # any, exact (same register range) or partial (overlapping, not same)
    producer_not: tuple[str, ...] = ()  # classes excluded from the producer
    consumer_not: tuple[str, ...] = ()  # classes excluded from the consumer
    same_opcode: bool | None = None  # True/False: only when the mnemonics are equal/differ
    targets: tuple[str, ...] = ALL
    clause: str = ""  # soft-clause rule: the class whose back-to-back instructions form it
    xnack: bool = False  # only when XNACK is enabled (xnack+ or any, see Target.xnack_enabled)

    def waits_for(self, passes: int | None) -> int:
        """Wait states needed after a producer with `passes` MFMA passes (a pass count the
        table does not list needs none; an unknown one the table's maximum)."""
        if self.by_passes:
            table = dict(self.by_passes)
            if passes is None:
                return max(table.values())
            return table.get(passes, 0)
        return self.wait_states


def _xdl(plus: int, gfx950: bool = False) -> tuple[tuple[int, int], ...]:
    """Pass table NumPasses + plus (+1 more on gfx950 for 4/8/16 passes)."""
    return tuple((p, p + plus + (1 if gfx950 and p != 2 else 0)) for p in (2, 4, 8, 16))


def _passes(base: int, gfx950_all: bool = False) -> tuple[tuple[int, int], ...]:
    return tuple((p, p + base + (1 if gfx950_all else 0)) for p in (2, 4, 8, 16))


RULES: tuple[HazardRule, ...] = (
    # ---------------------------------------------------------------- SGPR / EXEC / M0
    HazardRule("valu_sgpr_vmem",
               "A VALU write of an SGPR (incl. VCC) read by a VMEM instruction (address, "
               "resource, offset) needs 5 wait states.",
               "valu", "def", "vmem", "use", "sgpr", 5),
    HazardRule("valu_exec_vmem",
               "A VALU write of EXEC (v_cmpx) before a VMEM instruction, which reads EXEC, "
               "needs 5 wait states (LLVM checkVMEMHazards counts the implicit EXEC use; llc "
               "pads v_cmpx_eq_u32_e32 + global_load_dword with s_nop 4 on gfx942 and "
               "gfx950).",
               "valu", "exec_def", "vmem", "none", "exec", 5),
    HazardRule("valu_vcc_div_fmas",
               "v_div_fmas reads VCC as its scale select: 4 wait states after a VALU writes VCC.",
               "valu", "vcc_def", "div_fmas", "none", "vcc", 4),
    HazardRule("valu_sgpr_lane_select",
               "A VALU-written SGPR used as the lane select of v_readlane/v_writelane needs 4 "
               "wait states.",
               "valu", "def", "rwlane", "lane_select", "sgpr", 4),
    HazardRule("valu_exec_dpp",
               "A VALU write of EXEC (v_cmpx) before a DPP instruction needs 5 wait states.",
               "valu", "exec_def", "dpp", "none", "exec", 5),
    HazardRule("valu_vgpr_dpp",
               "A VALU-written VGPR read by a DPP instruction needs 2 wait states.",
               "valu", "def", "dpp", "use", "vgpr", 2),
    HazardRule("salu_m0_lds_dma",
               "An SALU write of M0 before an LDS DMA (buffer/global load with lds) that reads "
               "M0 as the LDS address needs 1 wait state.",
               "salu", "m0_def", "lds_dma", "none", "m0", 1),
    HazardRule("salu_m0_movrel",
               "An SALU write of M0 before s_movrel* needs 1 wait state.",
               "salu", "m0_def", "movrel", "none", "m0", 1),
    HazardRule("salu_m0_addtid",
               "An SALU write of M0 before ds_read/ds_write_addtid_b32 needs 1 wait state.",
               "salu", "m0_def", "addtid", "none", "m0", 1),
    HazardRule("salu_m0_sendmsg",
               "An SALU write of M0 before s_sendmsg/s_ttracedata needs 1 wait state.",
               "salu", "m0_def", "sendmsg", "none", "m0", 1),
    HazardRule("setreg_getreg",
               "s_getreg of a hardware register written by s_setreg needs 2 wait states.",
               "setreg", "hwreg", "getreg", "hwreg", "hwreg", 2),
    HazardRule("setreg_setreg",
               "Two s_setreg of the same hardware register need 2 wait states between them.",
               "setreg", "hwreg", "setreg", "hwreg", "hwreg", 2),
    # ---------------------------------------------------------------- VALU forwarding (GFX940+)
    HazardRule("valu_sgpr_valu",
               "CDNA3/4 (no VALU co-issue interlock): an SGPR or VCC written by a VALU and "
               "read by a VALU (any explicit SGPR operand, lane masks and carries included, "
               "and VCC read implicitly) needs 2 wait states.",
               "valu", "def", "valu", "sgpr_use", "sgpr", 2),
    HazardRule("valu_vgpr_readlane",
               "CDNA3/4: v_readlane/v_readfirstlane of a VGPR written by a VALU needs 1 wait "
               "state.",
               "valu", "def", "readlane", "src0", "vgpr", 1),
    HazardRule("valu_exec_rwlane",
               "CDNA3/4: a VALU write of EXEC (v_cmpx) before v_readlane/v_readfirstlane/"
               "v_writelane needs 4 wait states.",
               "valu", "exec_def", "lane_op", "none", "exec", 4),
    HazardRule("vcmpx_exec_read",
               "CDNA3/4: v_cmpx writing EXEC then a VALU reading EXEC as an operand needs 2 "
               "wait states.",
               "vcmpx", "exec_def", "valu", "exec_read", "exec", 2),
    HazardRule("valu_vgpr_permlane",
               "CDNA4: v_permlane*_swap of a VGPR written by a VALU needs 2 wait states.",
               "valu", "def", "permlane", "use", "vgpr", 2, targets=("gfx950",)),
    HazardRule("vcmpx_exec_permlane",
               "CDNA4: v_cmpx writing EXEC before v_permlane*_swap needs 4 wait states.",
               "vcmpx", "exec_def", "permlane", "none", "exec", 4, targets=("gfx950",)),
    HazardRule("trans_forward",
               "CDNA3/4: a transcendental (v_exp, v_log, v_rcp, v_rsq, v_sqrt, v_sin, v_cos) "
               "result read by a non-transcendental VALU needs 1 wait state.",
               "trans", "def", "valu", "use", "vgpr", 1, consumer_not=("trans",)),
    HazardRule("sel16_forward",
               "CDNA3/4: a VALU that writes part of a VGPR through a shifted result (SDWA "
               "dst_sel other than DWORD, VOP3 op_sel[3], an fp8/fp4 byte-select conversion "
               "with op_sel[2], v_cvt_scalef32_sr_pk_fp4) followed by a VALU that reads or "
               "writes that VGPR needs 1 wait state.",
               "sel16", "def", "valu", "touch", "vgpr", 1),
    HazardRule("store_data_valu_write",
               "A VMEM store of more than 64 bits of data (MUBUF/MTBUF with a constant "
               "soffset, or FLAT/GLOBAL/SCRATCH) whose data VGPRs a VALU overwrites: 2 wait "
               "states on CDNA3/4 (the store reads its data after issue).",
               "store_wide", "data", "valu", "def", "vgpr", 2),
    HazardRule("dot_write_read",
               "A v_dot* result read by a different VALU opcode needs 3 wait states.",
               "dot", "def", "valu", "use", "vgpr", 3, same_opcode=False),
    HazardRule("dot_write_same_srcab",
               "A v_dot* result read by the same opcode as source A/B needs 3 wait states "
               "(as the accumulator it needs none).",
               "dot", "def", "dot", "src01", "vgpr", 3, same_opcode=True),
    HazardRule("dot_write_write",
               "A v_dot* result overwritten by a different VALU opcode needs 3 wait states.",
               "dot", "def", "valu", "def", "vgpr", 3, same_opcode=False),
    # ---------------------------------------------------------------- VALU -> MFMA
    HazardRule("valu_exec_mfma",
               "A VALU write of EXEC before an MFMA needs 4 wait states.",
               "valu", "exec_def", "mfma", "none", "exec", 4),
    HazardRule("valu_vgpr_mfma",
               "A VGPR written by a (non-MFMA, non-dot) VALU and read by an MFMA needs 2 wait "
               "states.",
               "valu", "def", "mfma", "use", "vgpr", 2, producer_not=("dot",)),
    # ---------------------------------------------------------------- MFMA -> MFMA
    HazardRule("xdl_srcc_overlap",
               "An XDL MFMA result read as SrcC by an MFMA through a register range that "
               "overlaps but differs: NumPasses + 1 wait states (+1 on CDNA4).",
               "xdl", "def", "mfma", "srcC", "vgpr", by_passes=_passes(1), overlap="partial",
               targets=("gfx942",)),
    HazardRule("xdl_srcc_overlap_950",
               "CDNA4: an XDL MFMA result read as SrcC through an overlapping, different "
               "range: NumPasses + 2 wait states.",
               "xdl", "def", "mfma", "srcC", "vgpr", by_passes=_passes(1, True),
               overlap="partial", targets=("gfx950",)),
    HazardRule("smfma_srcc_overlap",
               "An SGEMM (f32-input) MFMA result read as SrcC by a non-XDL MFMA through an "
               "overlapping, different range: NumPasses wait states.",
               "smfma", "def", "mfma", "srcC", "vgpr", by_passes=_passes(0),
               overlap="partial", consumer_not=("xdl",)),
    HazardRule("mfma2_srcc_same",
               "A 2-pass (4x4) MFMA result read as SrcC through the same range by the next MFMA "
               "needs 2 wait states.",
               "mfma", "def", "mfma", "srcC", "vgpr", by_passes=((2, 2),), overlap="exact",
               producer_not=("dgemm",)),
    HazardRule("dgemm4_srcc_same",
               "v_mfma_f64_4x4x4 result read as SrcC (same range) by v_mfma_f64_4x4x4: 4 wait "
               "states.",
               "dgemm4", "def", "dgemm4", "srcC", "vgpr", 4, overlap="exact"),
    HazardRule("dgemm_srcc_overlap",
               "A DGEMM result read as SrcC by a DGEMM through an overlapping, different range: "
               "9 wait states (16x16) or 4 (4x4).",
               "dgemm", "def", "dgemm", "srcC", "vgpr", by_passes=((4, 4), (8, 9)),
               overlap="partial", targets=("gfx942",)),
    HazardRule("dgemm_srcc_overlap_950",
               "CDNA4: a DGEMM result read as SrcC by a DGEMM through an overlapping, different "
               "range: 17 wait states (16x16, 16 passes) or 4 (4x4).",
               "dgemm", "def", "dgemm", "srcC", "vgpr", by_passes=((4, 4), (16, 17)),
               overlap="partial", targets=("gfx950",)),
    HazardRule("xdl_srcab",
               "An XDL MFMA result read as SrcA/B by an MFMA: NumPasses + 3 wait states (CDNA4: "
               "+1 more for 4/8/16 passes).",
               "xdl", "def", "mfma", "srcAB", "vgpr", by_passes=_xdl(3),
               targets=("gfx942",)),
    HazardRule("xdl_srcab_950",
               "CDNA4: an XDL MFMA result read as SrcA/B by an MFMA.",
               "xdl", "def", "mfma", "srcAB", "vgpr", by_passes=_xdl(3, True),
               targets=("gfx950",)),
    HazardRule("smfma_srcab",
               "An SGEMM (f32-input) MFMA result read as SrcA/B by an MFMA: NumPasses + 2.",
               "smfma", "def", "mfma", "srcAB", "vgpr", by_passes=_passes(2)),
    HazardRule("dgemm_srcab",
               "A DGEMM result read as SrcA/B by an MFMA: 11 wait states (16x16) or 6 (4x4).",
               "dgemm", "def", "mfma", "srcAB", "vgpr", by_passes=((4, 6), (8, 11)),
               targets=("gfx942",)),
    HazardRule("dgemm_srcab_950",
               "CDNA4: a DGEMM result read as SrcA/B by an MFMA: 19 wait states (16x16, 16 "
               "passes) or 6 (4x4).",
               "dgemm", "def", "mfma", "srcAB", "vgpr", by_passes=((4, 6), (16, 19)),
               targets=("gfx950",)),
    # ---------------------------------------------------------------- MFMA -> VALU / memory
    HazardRule("xdl_valu_read",
               "An XDL MFMA result read by a VALU, VMEM or DS instruction: NumPasses + 3 wait "
               "states.",
               "xdl", "def", "valu_mem", "use", "vgpr", by_passes=_xdl(3),
               targets=("gfx942",)),
    HazardRule("xdl_valu_read_950",
               "CDNA4: an XDL MFMA result read by a VALU, VMEM or DS instruction: NumPasses + 3, "
               "+1 for 4/8/16 passes.",
               "xdl", "def", "valu_mem", "use", "vgpr", by_passes=_xdl(3, True),
               targets=("gfx950",)),
    HazardRule("smfma_valu_read",
               "An SGEMM (f32-input) MFMA result read by a VALU, VMEM or DS instruction: "
               "NumPasses + 2 wait states.",
               "smfma", "def", "valu_mem", "use", "vgpr", by_passes=_passes(2)),
    HazardRule("dgemm_valu_read",
               "A DGEMM result read by a VALU: 6 wait states (4x4) or 11 (16x16; 19 on CDNA4).",
               "dgemm", "def", "valu", "use", "vgpr", by_passes=((4, 6), (8, 11), (16, 11)),
               targets=("gfx942",)),
    HazardRule("dgemm_valu_read_950",
               "CDNA4: a DGEMM result read by a VALU: 6 wait states (4x4) or 19 (16x16).",
               "dgemm", "def", "valu", "use", "vgpr", by_passes=((4, 6), (8, 19), (16, 19)),
               targets=("gfx950",)),
    HazardRule("dgemm_mem_read",
               "A DGEMM result read by a VMEM or DS instruction: 9 wait states (4x4) or 18 "
               "(16x16).",
               "dgemm", "def", "mem", "use", "vgpr", by_passes=((4, 9), (8, 18), (16, 18))),
    HazardRule("xdl_valu_write",
               "A VALU/VMEM/DS write of a register an XDL MFMA writes (WAW): NumPasses + 3.",
               "xdl", "def", "valu_mem", "def", "vgpr", by_passes=_xdl(3),
               targets=("gfx942",)),
    HazardRule("xdl_valu_write_950",
               "CDNA4: a VALU/VMEM/DS write of a register an XDL MFMA writes (WAW).",
               "xdl", "def", "valu_mem", "def", "vgpr", by_passes=_xdl(3, True),
               targets=("gfx950",)),
    HazardRule("smfma_valu_write",
               "A VALU/VMEM/DS write of a register an SGEMM MFMA writes (WAW): NumPasses + 2.",
               "smfma", "def", "valu_mem", "def", "vgpr", by_passes=_passes(2)),
    HazardRule("dgemm_valu_write",
               "A VALU/VMEM/DS write of a register a DGEMM writes (WAW): 6 (4x4) or 11 (16x16).",
               "dgemm", "def", "valu_mem", "def", "vgpr", by_passes=((4, 6), (8, 11), (16, 11))),
    HazardRule("xdl_srcc_war",
               "A VALU/VMEM/DS write of a register an XDL MFMA reads as SrcC (WAR): 1, 3, 7 or "
               "15 wait states for 2, 4, 8, 16 passes.",
               "xdl", "srcC", "valu_mem", "def", "vgpr",
               by_passes=((2, 1), (4, 3), (8, 7), (16, 15))),
    HazardRule("dgemm_fma64",
               "v_fma_f64/v_fmac_f64 within 2 wait states of any DGEMM.",
               "dgemm", "none", "fma64", "none", "none", 2),
    # ---------------------------------------------------------------- XNACK soft clauses
    HazardRule("xnack_smem_clause",
               "XNACK (xnack+ or any): back-to-back SMEM instructions form a soft clause that "
               "a page fault replays from its start, so once one of them writes a register, "
               "no register written by one may be read by one (the joining instruction "
               "included); s_nop 0 starts a new clause.",
               "smem", "def", "smem", "use", "any", 1, clause="smem", xnack=True),
    HazardRule("xnack_smem_clause_store",
               "XNACK (xnack+ or any): a scalar store or atomic may not join a soft clause of "
               "SMEM instructions in which one writes a register; s_nop 0 starts a new "
               "clause.",
               "smem", "def", "smem_store", "none", "none", 1, clause="smem", xnack=True),
    HazardRule("xnack_vmem_clause",
               "XNACK (xnack+ or any): back-to-back VMEM (buffer/global/flat/scratch) "
               "instructions form a soft clause that a page fault replays from its start, so "
               "once one of them writes a register, no register written by one may be read "
               "by one (the joining instruction included); s_nop 0 starts a new clause.",
               "vmem", "def", "vmem", "use", "any", 1, clause="vmem", xnack=True),
    HazardRule("xnack_vmem_clause_store",
               "XNACK (xnack+ or any): a VMEM store, atomic or LDS DMA may not join a soft "
               "clause of VMEM instructions in which one writes a register; s_nop 0 starts a "
               "new clause.",
               "vmem", "def", "vmem_store", "none", "none", 1, clause="vmem", xnack=True),
)


# Where each rule comes from: the GCNHazardRecognizer check that LLVM 22's
# PreEmitNoopsCommon runs for the consumer's instruction class (VMEM -> checkVMEMHazards, VALU
# -> checkVALUHazards, DPP -> checkDPPHazards, v_div_fmas -> checkDivFMasHazards,
# v_readlane/v_writelane lane select -> checkRWLaneHazards, VALU/VMEM/DS after an MFMA ->
# checkMAIVALUHazards, s_getreg/s_setreg -> checkGetRegHazards/checkSetRegHazards, an M0 reader
# -> checkReadM0Hazards, MFMA -> checkMAIHazards (checkMAIHazards90A on gfx90a and later),
# gfx950 v_permlane*_swap -> checkPermlaneHazards); the
# soft clauses come from checkSoftClauseHazards. Rules not named here (VALU consumers) are
# checkVALUHazards ones.
_LLVM_CHECKS = {
    "valu_sgpr_vmem": "checkVMEMHazards", "valu_exec_vmem": "checkVMEMHazards",
    "valu_vcc_div_fmas": "checkDivFMasHazards", "valu_sgpr_lane_select": "checkRWLaneHazards",
    "valu_exec_dpp": "checkDPPHazards", "valu_vgpr_dpp": "checkDPPHazards",
    "valu_vgpr_permlane": "checkPermlaneHazards", "vcmpx_exec_permlane": "checkPermlaneHazards",
    "salu_m0_lds_dma": "checkReadM0Hazards (hasReadM0LdsDmaHazard)",
    "salu_m0_movrel": "checkReadM0Hazards", "salu_m0_addtid": "checkReadM0Hazards",
    "salu_m0_sendmsg": "checkReadM0Hazards", "setreg_getreg": "checkGetRegHazards",
    "setreg_setreg": "checkSetRegHazards",
    **{name: "checkMAIHazards90A" for name in (
        "valu_exec_mfma", "valu_vgpr_mfma", "xdl_srcc_overlap", "xdl_srcc_overlap_950",
        "smfma_srcc_overlap", "mfma2_srcc_same", "dgemm4_srcc_same", "dgemm_srcc_overlap",
        "dgemm_srcc_overlap_950", "xdl_srcab", "xdl_srcab_950", "smfma_srcab", "dgemm_srcab",
        "dgemm_srcab_950")},
    **{name: "checkMAIVALUHazards" for name in (
        "xdl_valu_read", "xdl_valu_read_950", "smfma_valu_read", "dgemm_valu_read",
        "dgemm_valu_read_950", "dgemm_mem_read", "xdl_valu_write", "xdl_valu_write_950",
        "smfma_valu_write", "dgemm_valu_write", "xdl_srcc_war", "dgemm_fma64")},
}


def rule_source(rule: HazardRule) -> str:
    """Where `rule` comes from: the LLVM 22 GCNHazardRecognizer check that enforces it."""
    if rule.clause:
        check = "checkSoftClauseHazards"
    else:
        check = _LLVM_CHECKS.get(rule.name, "checkVALUHazards")
    return f"LLVM 22 GCNHazardRecognizer.cpp {check}"


def rules_for(target: str | Target) -> tuple[HazardRule, ...]:
    """The rules that apply to `target`: a processor ("gfx942", XNACK then "any", so enabled),
    a processor with features ("gfx942:xnack-"), a target ID or a `Target`."""
    t = get_target(target)
    return _rules(t.name, t.xnack_enabled)


@cache
def _rules(name: str, xnack: bool) -> tuple[HazardRule, ...]:
    return tuple(r for r in RULES if name in r.targets and (xnack or not r.xnack))


def distance_rules(rules: tuple[HazardRule, ...]) -> tuple[HazardRule, ...]:
    """The wait-state rules among `rules` (without the soft-clause rules)."""
    return tuple(r for r in rules if not r.clause)


def clause_rules(rules: tuple[HazardRule, ...]) -> tuple[HazardRule, ...]:
    """The soft-clause rules among `rules` (see the module docstring)."""
    return tuple(r for r in rules if r.clause)


def soft_clause_kinds(target: str | Target) -> frozenset[str]:
    """The instruction classes whose back-to-back instructions form soft clauses on `target`
    (smem, vmem with XNACK on; none with it off)."""
    return frozenset(r.clause for r in clause_rules(rules_for(target)))


class SoftClause:
    """An open soft clause, for the hazards pass and the emulator's checker alike: the
    registers its instructions write and read, each with one instruction that does (`who`:
    whatever the caller names instructions by, for reports), an instruction that writes a
    register and one whose joining made a register both written and read in the clause."""

    __slots__ = ("defs", "uses", "writer", "conflict")

    def __init__(self) -> None:
        self.defs: dict = {}
        self.uses: dict = {}
        self.writer: object = None
        self.conflict: object = None

    def hazard(self, defs, uses, rules) -> tuple[HazardRule, object] | None:
        """The first of `rules` (the clause rules the joining instruction is a consumer of,
        in table order) that an instruction writing `defs` and reading `uses` would break by
        joining, with the instruction of the clause it conflicts with; None if it may join."""
        if self.writer is None:
            return None
        for rule in rules:
            if rule.consumes == "none":  # a store may not join once a register is written
                return rule, self.writer
            if self.conflict is not None:
                return rule, self.conflict
            for k in defs:
                who = self.uses.get(k)
                if who is not None:
                    return rule, who
            for k in uses:
                who = self.defs.get(k)
                if who is not None:
                    return rule, who
            if defs and not uses.isdisjoint(defs):
                return rule, self.writer
        return None

    def add(self, defs, uses, who: object) -> None:
        """Let an instruction that writes `defs` and reads `uses` join the clause."""
        mine_defs, mine_uses = self.defs, self.uses
        if self.conflict is None:
            for k in defs:
                if k in uses or k in mine_uses:
                    self.conflict = who
                    break
            else:
                if mine_defs:
                    for k in uses:
                        if k in mine_defs:
                            self.conflict = who
                            break
        for k in defs:
            if k not in mine_defs:
                mine_defs[k] = who
        for k in uses:
            if k not in mine_uses:
                mine_uses[k] = who
        if defs and self.writer is None:
            self.writer = who

    def join(self, other: SoftClause) -> bool:
        """Union with the clause open on another path; True if this one grew."""
        changed = False
        for mine, theirs in ((self.defs, other.defs), (self.uses, other.uses)):
            for k, who in theirs.items():
                if k not in mine:
                    mine[k] = who
                    changed = True
        if self.writer is None and other.writer is not None:
            self.writer = other.writer
            changed = True
        if self.conflict is None and other.conflict is not None:
            self.conflict = other.conflict
            changed = True
        return changed

    def copy(self) -> SoftClause:
        """An independent copy."""
        c = SoftClause()
        c.defs = dict(self.defs)
        c.uses = dict(self.uses)
        c.writer = self.writer
        c.conflict = self.conflict
        return c


def join_clause(clauses: dict[str, SoftClause], kind: str, defs, uses, who: object) -> None:
    """Let an instruction of clause `kind` join the clause of that kind open in `clauses`
    (one is opened if none is); the clause of the other kind ends."""
    clause = clauses.get(kind)
    if clause is None:
        clauses.clear()  # an instruction of the other kind ends that clause
        clause = clauses[kind] = SoftClause()
    elif len(clauses) > 1:
        for other in [k for k in clauses if k != kind]:
            del clauses[other]
    clause.add(defs, uses, who)


# ---------------------------------------------------------------------------- classification

_TRANS = {"v_exp_f32", "v_log_f32", "v_rcp_f32", "v_rcp_iflag_f32", "v_rsq_f32", "v_rcp_f64",
          "v_rsq_f64", "v_sqrt_f32", "v_sqrt_f64", "v_sin_f32", "v_cos_f32", "v_rcp_f16",
          "v_sqrt_f16", "v_rsq_f16", "v_log_f16", "v_exp_f16", "v_sin_f16", "v_cos_f16",
          "v_exp_legacy_f32", "v_log_legacy_f32"}


def mfma_kind(mnemonic: str) -> str | None:
    """"dgemm", "smfma" (f32-input SGEMM) or "xdl" for an MFMA/SMFMAC mnemonic, else None."""
    m = mnemonic
    if not (m.startswith(("v_mfma_", "v_smfmac_"))):
        return None
    if m.startswith("v_mfma_f64"):
        return "dgemm"
    if m.startswith("v_mfma_f32_") and m.endswith("f32") and "xf32" not in m:
        return "smfma"
    return "xdl"


def mfma_passes(mnemonic: str, db_passes: int | None, modifiers: dict) -> int | None:
    """The pass count that the wait-state rules use for an MFMA. The ISA database gives one
    number per mnemonic; the gfx950 f8f6f4 MFMAs run twice as many passes when either
    operand is 8-bit (cbsz or blgp 0 = fp8, 1 = bf8) as when both are fp6/fp4 (llc agrees)."""
    if db_passes is None or "f8f6f4" not in mnemonic:
        return db_passes
    cbsz = int(modifiers.get("cbsz", 0) or 0)
    blgp = int(modifiers.get("blgp", 0) or 0)
    return db_passes * 2 if min(cbsz, blgp) <= 1 else db_passes


@dataclass
class InstFacts:
    """Hazard-relevant facts of one instruction: classes, register keys per role, passes."""

    classes: frozenset[str]
    roles: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    passes: int | None = None
    mnemonic: str = ""
    wait_states: int = 1  # how many wait states this instruction itself provides


def _shifted_write(m: str, enc: str, modifiers: dict) -> bool:
    """True if a VALU writes its result into part of the VGPR through a shift (LLVM's
    getDstSelForwardingOperand): SDWA dst_sel != DWORD, VOP3 op_sel[3] (the destination bit),
    fp8/fp4 byte-select conversions with op_sel[2] set, and v_cvt_scalef32_sr_pk_fp4_* always
    (checked against llc's hazard recognizer, tests/data/emu/llvm_hazards.json)."""
    if enc == "SDWA":
        return modifiers.get("dst_sel", "DWORD") != "DWORD"
    if m.startswith("v_cvt_scalef32_sr_pk_fp4_"):
        return True
    sel = tuple(modifiers.get("op_sel") or ())
    if not sel:
        return False
    if sel[-1]:
        return True
    return (m.startswith(("v_cvt_sr_fp8_", "v_cvt_sr_bf8_", "v_cvt_scalef32_sr_fp8_",
                          "v_cvt_scalef32_sr_bf8_", "v_cvt_scalef32_pk_fp4_"))
            and len(sel) >= 4 and bool(sel[2]))


def instruction_classes(mnemonic: str, unit: str, flags: frozenset[str], enc: str,
                        modifiers: dict, data_bits: int = 0,
                        soffset_is_reg: bool = False) -> frozenset[str]:
    """The hazard classes of an instruction (see the module docstring)."""
    m = mnemonic
    c: set[str] = set()
    mk = mfma_kind(m)
    if mk:
        c.update(("mfma", mk))
        if m.startswith("v_mfma_f64_4x4"):
            c.add("dgemm4")
    elif unit in ("valu", "trans") or m.startswith("v_accvgpr_"):
        c.add("valu")
    if m in _TRANS:
        c.add("trans")
    if "dot" in flags or m.startswith("v_dot"):
        c.add("dot")
    if unit == "salu" or (unit == "branch" and m != "s_endpgm"):
        c.add("salu")
    if unit == "smem":
        c.add("smem")
    if unit == "vmem":
        c.add("vmem")
    if unit == "lds":
        c.add("ds")
    if "lds_dma" in flags or modifiers.get("lds"):
        c.add("lds_dma")
    if m.startswith("v_cmpx_"):
        c.add("vcmpx")
    if m in ("v_readlane_b32", "v_readfirstlane_b32"):
        c.update(("readlane", "lane_op"))
    if m == "v_writelane_b32":
        c.update(("writelane", "lane_op"))
    if m in ("v_readlane_b32", "v_writelane_b32"):
        c.add("rwlane")
    if m.startswith("v_permlane"):
        c.add("permlane")
    if enc == "DPP":
        c.add("dpp")
    if m.startswith("v_div_fmas"):
        c.add("div_fmas")
    if m.startswith("s_movrel"):
        c.add("movrel")
    if m in ("ds_read_addtid_b32", "ds_write_addtid_b32"):
        c.add("addtid")
    if m in ("s_sendmsg", "s_sendmsghalt", "s_ttracedata"):
        c.add("sendmsg")
    if m.startswith("s_setreg"):
        c.add("setreg")
    if m == "s_getreg_b32":
        c.add("getreg")
    if m in ("v_fma_f64", "v_fmac_f64"):
        c.add("fma64")
    if "valu" in c and _shifted_write(m, enc, modifiers):
        c.add("sel16")
    if unit == "vmem" and "may_store" in flags and data_bits > 64 and \
            not (enc in ("MUBUF", "MTBUF") and soffset_is_reg):
        c.add("store_wide")
    if unit == "smem" and "may_store" in flags:
        c.add("smem_store")
    if unit == "vmem" and ("may_store" in flags or "lds_dma" in c):
        c.add("vmem_store")
    if "valu" in c or "vmem" in c or "ds" in c:
        c.add("valu_mem")
    if "vmem" in c or "ds" in c:
        c.add("mem")
    return frozenset(c)
