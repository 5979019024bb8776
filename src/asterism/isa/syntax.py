"""Encoded values with names in the assembly syntax (GFX9-family ISA facts).

Operand encodings of scalar sources/destinations, inline constants, s_waitcnt / hwreg /
sendmsg immediates, DPP controls, SDWA selects and MTBUF formats. Hand-written from the
CDNA3/CDNA4 ISA references and checked against LLVM 22 by the differential tests.
"""

from __future__ import annotations

import math

# 9-bit source operand codes (SSRC/SRC): scalar registers, constants and VGPRs (256+).
SGPR_MAX = 101
TTMP_BASE = 108
TTMP_COUNT = 16  # trap temporaries ttmp0..ttmp15
NAMED_SCALAR_CODES: dict[str, int] = {
    "flat_scratch_lo": 102, "flat_scratch_hi": 103, "xnack_mask_lo": 104, "xnack_mask_hi": 105,
    "vcc_lo": 106, "vcc_hi": 107, "m0": 124, "exec_lo": 126, "exec_hi": 127,
    "src_shared_base": 235, "src_shared_limit": 236, "src_private_base": 237,
    "src_private_limit": 238, "src_pops_exiting_wave_id": 239, "src_vccz": 251,
    "src_flat_scratch_base_lo": 230, "src_flat_scratch_base_hi": 231, "null": 125,
    "src_execz": 252, "src_scc": 253, "src_lds_direct": 254,
}
# 64-bit pairs of named registers, by the code of their low half.
NAMED_PAIR_CODES: dict[str, int] = {
    "flat_scratch": 102, "xnack_mask": 104, "vcc": 106, "exec": 126,
    "src_shared_base": 235, "src_shared_limit": 236, "src_private_base": 237,
    "src_private_limit": 238,
}
# Spellings the assembler accepts for the same registers.
SCALAR_ALIASES = {"vccz": "src_vccz", "execz": "src_execz", "scc": "src_scc",
                  "lds_direct": "src_lds_direct", "shared_base": "src_shared_base",
                  "shared_limit": "src_shared_limit", "private_base": "src_private_base",
                  "private_limit": "src_private_limit",
                  "pops_exiting_wave_id": "src_pops_exiting_wave_id"}

INLINE_INT_ZERO = 128  # 128 = 0, 129..192 = 1..64, 193..208 = -1..-16
INLINE_FLOATS: dict[int, float] = {
    240: 0.5, 241: -0.5, 242: 1.0, 243: -1.0, 244: 2.0, 245: -2.0, 246: 4.0, 247: -4.0,
    248: 0.15915494309189535,  # 1 / (2 * pi)
}
# 1/(2*pi) as the hardware delivers it for each operand type (raw bits).
INV_2PI_BITS = {"f16": 0x3118, "bf16": 0x3E22, "f32": 0x3E22F983, "f64": 0x3FC45F306DC9C882}
SRC_LITERAL = 255
SRC_VGPR_BASE = 256
# Named scalar registers that cannot start a 64-bit (or wider) operand: llvm-objdump rejects
# them there. (null is a register of any width: "s_ashr_i64 null, ...".)
NOT_PAIR_STARTS = frozenset(("vcc_hi", "exec_hi", "flat_scratch_hi", "xnack_mask_hi", "m0",
                             "src_lds_direct", "src_flat_scratch_base_hi"))


def inline_int_code(value: int) -> int | None:
    """The source code of an inline integer constant, or None if not inline."""
    if 0 <= value <= 64:
        return INLINE_INT_ZERO + value
    if -16 <= value <= -1:
        return 192 - value
    return None


def inline_int_value(code: int) -> int | None:
    """The integer an inline constant code stands for, or None."""
    if 128 <= code <= 192:
        return code - INLINE_INT_ZERO
    if 193 <= code <= 208:
        return 192 - code
    return None


def inline_float_code(value: float) -> int | None:
    """The source code of an inline float constant, or None."""
    if value == 0.0 and math.copysign(1.0, value) > 0:
        # +0.0 has the bits of the integer 0 in every float type: LLVM encodes it as the
        # inline constant 0 (code 128); -0.0 has no inline code (a literal).
        return INLINE_INT_ZERO
    for code, v in INLINE_FLOATS.items():
        if v == value or (code == 248 and abs(value - v) < 1e-7):
            return code
    return None


# s_waitcnt simm16 layout on GFX9: vmcnt[3:0] + vmcnt_hi[15:14], expcnt[6:4], lgkmcnt[11:8].
WAITCNT_MAX = {"vmcnt": 63, "expcnt": 7, "lgkmcnt": 15}


def encode_waitcnt(vmcnt: int = 63, expcnt: int = 7, lgkmcnt: int = 15) -> int:
    """simm16 of `s_waitcnt vmcnt(v) expcnt(e) lgkmcnt(l)`; absent counters = no wait."""
    return (vmcnt & 0xF) | ((expcnt & 0x7) << 4) | ((lgkmcnt & 0xF) << 8) | ((vmcnt >> 4) << 14)


def decode_waitcnt(simm16: int) -> dict[str, int]:
    """The counter values of an s_waitcnt simm16."""
    return {"vmcnt": (simm16 & 0xF) | (((simm16 >> 14) & 0x3) << 4),
            "expcnt": (simm16 >> 4) & 0x7, "lgkmcnt": (simm16 >> 8) & 0xF}


def format_waitcnt(simm16: int) -> str:
    """LLVM's text for an s_waitcnt immediate: only the counters that wait are printed."""
    counts = decode_waitcnt(simm16)
    parts = [f"{name}({counts[name]})" for name in ("vmcnt", "expcnt", "lgkmcnt")
             if counts[name] != WAITCNT_MAX[name]]
    if not parts:
        return "vmcnt(63) expcnt(7) lgkmcnt(15)"
    return " ".join(parts)


# hwreg(ID, offset, size): simm16 = id | offset << 6 | (size - 1) << 11.
HWREG_NAMES: dict[int, str] = {
    1: "HW_REG_MODE", 2: "HW_REG_STATUS", 3: "HW_REG_TRAPSTS", 4: "HW_REG_HW_ID",
    5: "HW_REG_GPR_ALLOC", 6: "HW_REG_LDS_ALLOC", 7: "HW_REG_IB_STS", 15: "HW_REG_SH_MEM_BASES",
    16: "HW_REG_TBA_LO", 17: "HW_REG_TBA_HI", 18: "HW_REG_TMA_LO", 19: "HW_REG_TMA_HI",
    20: "HW_REG_XCC_ID", 21: "HW_REG_SQ_PERF_SNAPSHOT_DATA",
    22: "HW_REG_SQ_PERF_SNAPSHOT_DATA1", 23: "HW_REG_SQ_PERF_SNAPSHOT_PC_LO",
    24: "HW_REG_SQ_PERF_SNAPSHOT_PC_HI",
}


def encode_hwreg(reg: int, offset: int = 0, size: int = 32) -> int:
    """simm16 of hwreg(reg, offset, size)."""
    return (reg & 0x3F) | ((offset & 0x1F) << 6) | (((size - 1) & 0x1F) << 11)


def format_hwreg(simm16: int) -> str:
    """LLVM's text for a hwreg immediate."""
    reg, offset, size = simm16 & 0x3F, (simm16 >> 6) & 0x1F, ((simm16 >> 11) & 0x1F) + 1
    name = HWREG_NAMES.get(reg, str(reg))
    if offset == 0 and size == 32:
        return f"hwreg({name})"
    return f"hwreg({name}, {offset}, {size})"


# sendmsg(MSG[, OP[, STREAM]]): simm16 = id | op << 4 | stream << 8.
SENDMSG_NAMES: dict[int, str] = {
    1: "MSG_INTERRUPT", 2: "MSG_GS", 3: "MSG_GS_DONE", 4: "MSG_SAVEWAVE",
    5: "MSG_STALL_WAVE_GEN", 6: "MSG_HALT_WAVES", 7: "MSG_ORDERED_PS_DONE",
    8: "MSG_EARLY_PRIM_DEALLOC", 9: "MSG_GS_ALLOC_REQ", 10: "MSG_GET_DOORBELL",
    15: "MSG_SYSMSG",
}
GS_OPS = {0: "GS_OP_NOP", 1: "GS_OP_CUT", 2: "GS_OP_EMIT", 3: "GS_OP_EMIT_CUT"}
SYSMSG_OPS = {1: "SYSMSG_OP_ECC_ERR_INTERRUPT", 2: "SYSMSG_OP_REG_RD",
              3: "SYSMSG_OP_HOST_TRAP_ACK", 4: "SYSMSG_OP_TTRACE_PC"}

# DPP control values (dpp_ctrl, 9 bits).
DPP_QUAD_PERM_MAX = 0xFF
DPP_ROW_SHL, DPP_ROW_SHR, DPP_ROW_ROR = 0x100, 0x110, 0x120
DPP_NAMED: dict[int, str] = {
    0x130: "wave_shl:1", 0x134: "wave_rol:1", 0x138: "wave_shr:1", 0x13C: "wave_ror:1",
    0x140: "row_mirror", 0x141: "row_half_mirror", 0x142: "row_bcast:15", 0x143: "row_bcast:31",
}
DPP_ROW_NEWBCAST = 0x150  # gfx90a+: row_newbcast:n = 0x150 + n

SDWA_SEL = ["BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD"]
SDWA_UNUSED = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE"]

MTBUF_DFMT = ["BUF_DATA_FORMAT_INVALID", "BUF_DATA_FORMAT_8", "BUF_DATA_FORMAT_16",
              "BUF_DATA_FORMAT_8_8", "BUF_DATA_FORMAT_32", "BUF_DATA_FORMAT_16_16",
              "BUF_DATA_FORMAT_10_11_11", "BUF_DATA_FORMAT_11_11_10",
              "BUF_DATA_FORMAT_10_10_10_2", "BUF_DATA_FORMAT_2_10_10_10",
              "BUF_DATA_FORMAT_8_8_8_8", "BUF_DATA_FORMAT_32_32", "BUF_DATA_FORMAT_16_16_16_16",
              "BUF_DATA_FORMAT_32_32_32", "BUF_DATA_FORMAT_32_32_32_32",
              "BUF_DATA_FORMAT_RESERVED_15"]
MTBUF_NFMT = ["BUF_NUM_FORMAT_UNORM", "BUF_NUM_FORMAT_SNORM", "BUF_NUM_FORMAT_USCALED",
              "BUF_NUM_FORMAT_SSCALED", "BUF_NUM_FORMAT_UINT", "BUF_NUM_FORMAT_SINT",
              "BUF_NUM_FORMAT_RESERVED_6", "BUF_NUM_FORMAT_FLOAT"]
MTBUF_DEFAULT_FORMAT = 1  # dfmt 1 (8), nfmt 0 (unorm): LLVM omits it when printing


# ds_swizzle_b32 offset modes (16-bit offset field).
SWIZZLE_QUAD_PERM = 0x8000  # 0x8000..0x80ff: four 2-bit lane selects
SWIZZLE_ROTATE = 0xC000  # gfx9+: bit 10 direction, bits 9:5 count
SWIZZLE_FFT = 0xE000  # gfx9+: bits 4:0


def format_swizzle(offset: int) -> str:
    """LLVM's text for a ds_swizzle_b32 offset (swizzle(...) or a plain number)."""
    if offset & 0x8000:
        if offset < 0x8100:
            lanes = ",".join(str((offset >> (2 * k)) & 3) for k in range(4))
            return f"swizzle(QUAD_PERM,{lanes})"
        if offset >= SWIZZLE_FFT:
            return f"swizzle(FFT,{offset & 0x1F})"
        if offset >= SWIZZLE_ROTATE:
            return f"swizzle(ROTATE,{(offset >> 10) & 1},{(offset >> 5) & 0x1F})"
        return str(offset)
    and_mask, or_mask, xor_mask = offset & 0x1F, (offset >> 5) & 0x1F, (offset >> 10) & 0x1F
    if and_mask == 0x1F and or_mask == 0:
        if xor_mask and xor_mask & (xor_mask - 1) == 0:
            return f"swizzle(SWAP,{xor_mask})"
        if xor_mask in (3, 7, 15, 31):
            return f"swizzle(REVERSE,{xor_mask + 1})"
    if xor_mask == 0:
        for group in (2, 4, 8, 16, 32):
            if and_mask == (0x1F & ~(group - 1)) and or_mask < group:
                return f"swizzle(BROADCAST,{group},{or_mask})"
    chars = []
    for bit in range(4, -1, -1):
        a, o, x = (and_mask >> bit) & 1, (or_mask >> bit) & 1, (xor_mask >> bit) & 1
        if a and not o:
            chars.append("i" if x else "p")
        else:
            chars.append(str(o ^ x))
    return f'swizzle(BITMASK_PERM,"{"".join(chars)}")'


def parse_swizzle(args: list[str]) -> int:
    """The offset of `swizzle(MODE, ...)` (args without the parentheses); ValueError if bad."""
    mode, rest = args[0].strip().upper(), [a.strip() for a in args[1:]]
    nums = [int(a, 0) for a in rest] if mode != "BITMASK_PERM" else []
    if mode == "QUAD_PERM" and len(nums) == 4 and all(0 <= n <= 3 for n in nums):
        return SWIZZLE_QUAD_PERM | sum(n << (2 * k) for k, n in enumerate(nums))
    if mode == "SWAP" and len(nums) == 1 and nums[0] in (1, 2, 4, 8, 16):
        return 0x1F | (nums[0] << 10)
    if mode == "REVERSE" and len(nums) == 1 and nums[0] in (2, 4, 8, 16, 32):
        return 0x1F | ((nums[0] - 1) << 10)
    if mode == "BROADCAST" and len(nums) == 2 and nums[0] in (2, 4, 8, 16, 32) \
            and 0 <= nums[1] < nums[0]:
        return (0x1F & ~(nums[0] - 1)) | (nums[1] << 5)
    if mode == "ROTATE" and len(nums) == 2 and nums[0] in (0, 1) and 0 <= nums[1] < 32:
        return SWIZZLE_ROTATE | (nums[0] << 10) | (nums[1] << 5)
    if mode == "FFT" and len(nums) == 1 and 0 <= nums[0] < 32:
        return SWIZZLE_FFT | nums[0]
    if mode == "BITMASK_PERM" and len(rest) == 1:
        pattern = rest[0].strip('"')
        if len(pattern) != 5 or any(c not in "01pi" for c in pattern):
            raise ValueError(f"bad BITMASK_PERM pattern {rest[0]}")
        and_m = or_m = xor_m = 0
        for k, c in enumerate(reversed(pattern)):
            if c in "pi":
                and_m |= 1 << k
            if c == "1":
                or_m |= 1 << k
            if c == "i":
                xor_m |= 1 << k
        return and_m | (or_m << 5) | (xor_m << 10)
    raise ValueError(f"bad swizzle({', '.join(args)})")


# Bit patterns of the inline float constants per operand type (0.5, -0.5, 1, -1, 2, -2, 4,
# -4, 1/(2pi)); a literal with one of these values would be re-read as the inline constant.
INLINE_FLOAT_BITS: dict[str, tuple[int, ...]] = {
    "f32": (0x3F000000, 0xBF000000, 0x3F800000, 0xBF800000, 0x40000000, 0xC0000000,
            0x40800000, 0xC0800000, 0x3E22F983),
    "f16": (0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118),
    "bf16": (0x3F00, 0xBF00, 0x3F80, 0xBF80, 0x4000, 0xC000, 0x4080, 0xC080, 0x3E22),
}
SIXTEEN_BIT_TYPES = {"f16", "bf16", "i16"}
# 16-bit operand types whose literal LLVM prints as its low 16 bits (a bf16 one prints whole)
SIXTEEN_BIT_PRINTED_TYPES = frozenset({"f16", "i16"})


def is_inline_bits(bits: int, type_: str | None) -> bool:
    """True if a literal with these bits equals an inline constant of the operand type."""
    if type_ in SIXTEEN_BIT_TYPES:
        v = bits & 0xFFFF
        if v <= 64 or v >= 0xFFF0:
            return True
        return type_ != "i16" and v in INLINE_FLOAT_BITS[type_]
    v = bits & 0xFFFFFFFF
    return v <= 64 or v >= 0xFFFFFFF0 or v in INLINE_FLOAT_BITS["f32"]


def format_sendmsg(value: int) -> str:
    """LLVM's text for an s_sendmsg immediate (symbolic only for valid triples)."""
    msg, op, stream = value & 0xF, (value >> 4) & 0x7, (value >> 8) & 0x3
    name = SENDMSG_NAMES.get(msg)
    # LLVM prints the symbolic form only for valid (message, operation, stream) triples.
    if name is None:
        return str(value)
    if msg in (2, 3):
        if op > 3 or (op == 0 and stream):
            return str(value)
        text = f"sendmsg({name}, {GS_OPS[op]}"
        return text + (f", {stream})" if op else ")")
    if msg == 15:
        if op not in SYSMSG_OPS or stream:
            return str(value)
        return f"sendmsg({name}, {SYSMSG_OPS[op]})"
    if op or stream:
        return str(value)
    return f"sendmsg({name})"


def format_gpr_idx(value: int) -> str:
    """LLVM's text for an s_set_gpr_idx_on mode immediate."""
    if value > 15:
        return f"0x{value:x}"
    names = ["SRC0", "SRC1", "SRC2", "DST"]
    on = [n for k, n in enumerate(names) if (value >> k) & 1]
    return f"gpr_idx({','.join(on)})"
