"""Program flow: branches, s_endpgm, s_barrier, s_waitcnt, s_setpc/s_swappc/s_call, s_trap.

Conditional branches evaluate their condition per wave. If every wave of the group agrees the
op returns the next instruction index; otherwise it stores each wave's next index in
`Group.split_to` and returns SPLIT, and the scheduler divides the group.
"""

from __future__ import annotations

import numpy as np

from asterism.emu.core import BARRIER, END, EXEC, SPLIT, VCC, Group
from asterism.emu.info import OpInfo
from asterism.emu.semantics.registry import Table, unsupported_op
from asterism.emu.sops import sread, swrite
from asterism.mc.operands import Imm, Syntax

TABLE = Table("branch")
builder = TABLE.builder


def _simm(info: OpInfo) -> int:
    op = info.op("simm16")
    return op.value if isinstance(op, Imm | Syntax) else 0


def _offset(info: OpInfo) -> int:
    """The branch offset in words (simm16 is signed whether the decoder sign-extends or not)."""
    v = _simm(info) & 0xFFFF
    return v - 0x10000 if v & 0x8000 else v


def _target(info: OpInfo) -> int | None:
    return info.branch_index(_offset(info))


def _bad_target(info: OpInfo):
    def run(g: Group) -> int:
        tgt = info.offset + 4 + 4 * _offset(info)
        raise info.fault(f"branch target offset 0x{tgt:x} is not an instruction of the program")
    return run


@builder("s_branch")
def _branch(info: OpInfo):
    tgt = _target(info)
    if tgt is None:
        return _bad_target(info)
    return lambda g: tgt


def _cond(info: OpInfo, cond):
    tgt = _target(info)
    nxt = info.next_index
    if tgt is None:
        return _bad_target(info)

    def run(g: Group) -> int:
        c = cond(g)
        if c.all():
            return tgt
        if not c.any():
            return nxt
        g.split_to = np.where(c, tgt, nxt)
        return SPLIT
    return run


builder("s_cbranch_scc0")(lambda info: _cond(info, lambda g: ~g.scc))
builder("s_cbranch_scc1")(lambda info: _cond(info, lambda g: g.scc))
builder("s_cbranch_vccz")(lambda info: _cond(info, lambda g: g.s64[:, VCC // 2] == 0))
builder("s_cbranch_vccnz")(lambda info: _cond(info, lambda g: g.s64[:, VCC // 2] != 0))
builder("s_cbranch_execz")(lambda info: _cond(info, lambda g: g.s64[:, EXEC // 2] == 0))
builder("s_cbranch_execnz")(lambda info: _cond(info, lambda g: g.s64[:, EXEC // 2] != 0))


@builder("s_endpgm")
def _endpgm(info: OpInfo):
    return lambda g: END


@builder("s_barrier")
def _barrier(info: OpInfo):
    nxt = info.next_index

    def run(g: Group) -> int:
        g.idx = nxt
        return BARRIER
    return run


@builder("s_waitcnt")
def _waitcnt(info: OpInfo):
    # Memory effects happen at issue in the emulator; the sanitizer wrapper retires the
    # pending operations this wait covers.
    nxt = info.next_index
    return lambda g: nxt


def _jump_to(g: Group, info: OpInfo, addrs: np.ndarray) -> int:
    """Next index for absolute target addresses (n,) uint64 (SPLIT if waves disagree)."""
    base = g.ctx.code_base
    offs = addrs.astype(np.int64) - base
    idx = np.array([info.index_of.get(int(o), -1) for o in offs], np.int64)
    if (idx < 0).any():
        bad = int(np.flatnonzero(idx < 0)[0])
        raise info.fault(f"jump to 0x{int(addrs[bad]):x}, which is not an instruction of the "
                         f"program (code at 0x{base:x})", wave=int(g.waves[bad]))
    if (idx == idx[0]).all():
        return int(idx[0])
    g.split_to = idx
    return SPLIT


@builder("s_setpc_b64")
def _setpc(info: OpInfo):
    src = sread(info, info.op("ssrc0"), 2)
    return lambda g: _jump_to(g, info, src(g))


@builder("s_swappc_b64")
def _swappc(info: OpInfo):
    src = sread(info, info.op("ssrc0"), 2)
    wr = swrite(info, info.op("sdst"), 2)
    ret = np.uint64(info.address + info.size)

    def run(g: Group) -> int:
        target = src(g).copy()
        wr(g, np.full(g.n, ret, np.uint64))
        return _jump_to(g, info, target)
    return run


@builder("s_call_b64")
def _call(info: OpInfo):
    wr = swrite(info, info.op("sdst"), 2)
    ret = np.uint64(info.address + info.size)
    tgt = _target(info)
    if tgt is None:
        return _bad_target(info)

    def run(g: Group) -> int:
        wr(g, np.full(g.n, ret, np.uint64))
        return tgt
    return run


@builder("s_trap")
def _trap(info: OpInfo):
    def run(g: Group) -> int:
        raise info.fault(f"s_trap {_simm(info) & 0xFF} executed (no trap handler in the "
                         "emulator)", wave=int(g.waves[0]))
    return run


for _m, _why in (("s_cbranch_cdbgsys", "debugger condition branches"),
                 ("s_cbranch_cdbguser", "debugger condition branches"),
                 ("s_cbranch_cdbgsys_or_user", "debugger condition branches"),
                 ("s_cbranch_cdbgsys_and_user", "debugger condition branches"),
                 ("s_cbranch_g_fork", "legacy fork/join"), ("s_cbranch_i_fork", "legacy fork"),
                 ("s_cbranch_join", "legacy fork/join"), ("s_endpgm_saved", "context save"),
                 ("s_endpgm_ordered_ps_done", "graphics"), ("s_rfe_b64", "trap return"),
                 ("s_rfe_restore_b64", "trap return"), ("s_sendmsg", "messages to the SPI"),
                 ("s_sendmsghalt", "messages to the SPI"), ("s_setvskip", "vskip mode"),
                 ("s_set_gpr_idx_on", "VGPR indexing mode"),
                 ("s_set_gpr_idx_off", "VGPR indexing mode"),
                 ("s_set_gpr_idx_idx", "VGPR indexing mode"),
                 ("s_set_gpr_idx_mode", "VGPR indexing mode")):
    builder(_m)(lambda info, why=_why: unsupported_op(info, why))
