"""What the emulator knows of each instruction before the run: `OpInfo` and `make_infos`.

`make_infos` turns decoded instructions (anything with `.address`, `.size`, `.inst`) into
`OpInfo`s: the ISA entry and form, the base mnemonic, the branch-target map, the register keys
read and written (explicit operands plus the implicit ones of `asterism.isa.facts`) and the
counters. The semantics (`emu/semantics/`) build ops from them; the sanitizer, the hazard
checker, the timing model and error messages read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from asterism.emu.core import EXEC, KEY_SGPR, M0, VCC, reg_keys
from asterism.emu.errors import EmulatorFault
from asterism.isa import Form, Instruction, get_isa
from asterism.isa.database import SUFFIXES
from asterism.isa.facts import def_is_read, implicit_names
from asterism.isa.syntax import NAMED_PAIR_CODES, NAMED_SCALAR_CODES
from asterism.mc.inst import Inst
from asterism.mc.operands import Mod, Operand, Reg, Special
from asterism.mc.printer import format_inst
from asterism.target.hazards import KEY_SCC


class ProgramInst(Protocol):
    """What the emulator needs of a decoded instruction (mc.decoder.DecodedInst has it)."""

    address: int
    size: int
    inst: Inst


@dataclass
class PlainInst:
    """A ProgramInst built by hand (address, size, inst)."""

    address: int
    size: int
    inst: Inst



@dataclass
class OpInfo:
    """Everything known about one instruction before the run."""

    index: int
    address: int  # absolute: code base + offset
    offset: int  # byte offset in the program
    size: int
    inst: Inst
    target: str
    isa: Instruction | None
    form: Form | None
    mnemonic: str  # base mnemonic (lower case, no _e32/_e64/_dpp/_sdwa)
    suffix: str
    next_index: int
    index_of: dict[int, int]  # program byte offset -> instruction index
    agpr_base: int = 256
    uses: frozenset[int] = frozenset()
    defs: frozenset[int] = frozenset()
    counters: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    _text: str | None = None

    @property
    def text(self) -> str:
        """The instruction as disassembled text (printer), or its mnemonic as a fallback."""
        if self._text is None:
            try:
                self._text = format_inst(self.inst)
            except Exception:
                ops = ", ".join(str(o) for o in self.inst.operands)
                self._text = f"{self.inst.mnemonic} {ops}".strip()
        return self._text

    @property
    def enc(self) -> str:
        """The form's encoding name (VOP1, VOP3, DPP, SDWA, SMEM, ...)."""
        return self.form.enc if self.form is not None else ""

    @property
    def mods(self) -> dict[str, object]:
        """The instruction's modifiers."""
        return self.inst.modifiers

    def op(self, name: str) -> Operand | None:
        """The operand in the form slot called `name` (None if absent)."""
        if self.form is None:
            return None
        for spec, operand in zip(self.form.operands, self.inst.operands, strict=False):
            if spec.name == name:
                return operand
        return None

    def has(self, name: str) -> bool:
        """True if the form has an operand slot called `name`."""
        return self.form is not None and any(s.name == name for s in self.form.operands)

    def spec(self, name: str):
        """The OperandSpec of slot `name` (None if absent)."""
        if self.form is None:
            return None
        for spec in self.form.operands:
            if spec.name == name:
                return spec
        return None

    def branch_index(self, simm16: int) -> int | None:
        """Instruction index of the branch target pc + 4 + 4 * simm16 (None if not one)."""
        return self.index_of.get(self.offset + 4 + 4 * simm16)

    def fault(self, message: str, **where) -> EmulatorFault:
        """An EmulatorFault located at this instruction."""
        return EmulatorFault(message, pc=self.address, inst=self.text, **where)


def base_mnemonic(mnemonic: str) -> tuple[str, str]:
    """(base, suffix) of a printed mnemonic: v_add_f32_e64 -> (v_add_f32, _e64)."""
    m = mnemonic.lower()
    for suf in SUFFIXES:
        if m.endswith(suf):
            return m[: -len(suf)], suf
    return m, ""


# ---------------------------------------------------------------------------- registers

def special_index(name: str) -> int | None:
    """SGPR-file index of a named scalar register (vcc -> 106, exec_hi -> 127, m0 -> 124)."""
    if name in NAMED_PAIR_CODES and NAMED_PAIR_CODES[name] < 128:
        return NAMED_PAIR_CODES[name]
    code = NAMED_SCALAR_CODES.get(name)
    if code is not None and code < 128:
        return code
    return None


def operand_keys(op: Operand | None, width: int = 1) -> list[int]:
    """Register keys an operand names (empty for constants)."""
    if isinstance(op, Mod):
        op = op.operand
    if isinstance(op, Reg):
        return list(reg_keys(op.kind, op.index, op.count))
    if isinstance(op, Special):
        if op.name in ("scc", "src_scc"):
            return [KEY_SCC]
        idx = special_index(op.name)
        if idx is not None:
            return [KEY_SGPR + idx + k for k in range(op.count)]
        if op.name in ("src_execz", "execz"):
            return [KEY_SGPR + EXEC, KEY_SGPR + EXEC + 1]
        if op.name in ("src_vccz", "vccz"):
            return [KEY_SGPR + VCC, KEY_SGPR + VCC + 1]
    return []


IMPLICIT_KEYS = {
    "exec": (KEY_SGPR + EXEC, KEY_SGPR + EXEC + 1),
    "vcc": (KEY_SGPR + VCC, KEY_SGPR + VCC + 1),
    "m0": (KEY_SGPR + M0,),
    "scc": (KEY_SCC,),
}


def make_infos(insts: Sequence[ProgramInst], target: str, code_base: int = 0,
               agpr_base: int = 256) -> list[OpInfo]:
    """OpInfo for every instruction (address-sorted; offsets relative to the first)."""
    isa = get_isa(target)
    if not insts:
        return []
    start = insts[0].address
    index_of = {p.address - start: i for i, p in enumerate(insts)}
    infos = []
    for i, p in enumerate(insts):
        inst = p.inst
        base, suffix = base_mnemonic(inst.mnemonic)
        resolved = isa.resolve(inst.mnemonic)
        isa_inst = resolved[0] if resolved else None
        if isa_inst is not None:
            base = isa_inst.mnemonic
        info = OpInfo(index=i, address=code_base + p.address - start, offset=p.address - start,
                      size=p.size, inst=inst, target=isa.target, isa=isa_inst, form=inst.form,
                      mnemonic=base, suffix=suffix, next_index=i + 1, index_of=index_of,
                      agpr_base=agpr_base)
        _fill_keys(info)
        infos.append(info)
    return infos


def _fill_keys(info: OpInfo) -> None:
    uses: set[int] = set()
    defs: set[int] = set()
    form = info.form
    if form is not None:
        for spec, op in zip(form.operands, info.inst.operands, strict=False):
            keys = operand_keys(op)
            if spec.role == "def":
                defs.update(keys)
                if def_is_read(spec):
                    uses.update(keys)
            else:
                uses.update(keys)
    if info.isa is not None:
        imp_uses, imp_defs = implicit_names(info.isa)
        for name in imp_uses:
            uses.update(IMPLICIT_KEYS.get(name, ()))
        for name in imp_defs:
            defs.update(IMPLICIT_KEYS.get(name, ()))
        counters = (form.counters if form is not None and form.counters else info.isa.counters)
        info.counters = tuple(counters)
    info.uses = frozenset(uses)
    info.defs = frozenset(defs)

