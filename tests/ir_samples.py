"""Synthetic instances of database forms as IR text (shared by the IR tests)."""

from __future__ import annotations

from dataclasses import dataclass, field

from asterism.ir.match import FAMILY_OF_ENCODING, ir_specs
from asterism.isa import Form, get_isa, syntax
from asterism.mc.operands import OFF, Imm, Operand, Reg, Special

TYPE_NAMES = {"v": "vgpr", "a": "agpr", "s": "sgpr"}


@dataclass
class Sample:
    """One instruction op: its IR lines and the MC operands lowering must produce."""

    form: Form
    lines: list[str] = field(default_factory=list)
    expected: list[Operand] = field(default_factory=list)
    modifiers: dict = field(default_factory=dict)


def _reg_type(kind: str, index: int, count: int) -> str:
    if count == 1:
        return f"!amdgcn.{TYPE_NAMES[kind]}<{index}>"
    return f"!amdgcn.{TYPE_NAMES[kind]}<[{index}:{index + count}]>"


def sample(form: Form, tag: str) -> Sample | None:
    """IR for `form` with every operand filled, or None if it takes a branch target."""
    if any(s.syntax == "label" for s in form.operands):
        return None
    out = Sample(form)
    next_free = {"v": 4, "a": 4, "s": 8}
    names: list[str] = []
    types: list[str] = []
    results: list[str] = []
    if any(s.syntax == "waitcnt" for s in form.operands):
        out.expected.append(Imm(syntax.encode_waitcnt()))  # no counters written: no wait
    for k, spec in enumerate(ir_specs(form)):
        name = f"%{tag}_{k}"
        if spec.fixed:
            t = f"!amdgcn.special<{spec.fixed}>"
            out.lines.append(f"{name} = amdgcn.alloca : {t}")
            out.expected.append(Special(spec.fixed))
        else:
            order = "vas" if spec.role == "def" else "va" + "i" + "s" + "k" + "l" + "o"
            kinds = set(spec.kinds) | ({"o"} if "off" in spec.kinds else set())
            kind = next(c for c in order if c in kinds)
            if kind in "vas":
                align = max(4, spec.align)
                index = -(-next_free[kind] // align) * align
                next_free[kind] = index + max(1, spec.width)
                t = _reg_type(kind, index, max(1, spec.width))
                out.lines.append(f"{name} = amdgcn.alloca : {t}")
                out.expected.append(Reg(kind, index, max(1, spec.width)))
            elif kind == "o":
                t = "!amdgcn.off"
                out.lines.append(f"{name} = amdgcn.off")
                out.expected.append(OFF)
            else:
                value = {"i": 1, "k": 0, "l": 1000}[kind]
                t = "i32"
                out.lines.append(f"{name} = arith.constant {value} : i32")
                out.expected.append(Imm(value))
        names.append(name)
        types.append(t)
        if spec.role == "def":
            results.append(t)
    if form.counters:
        results.append("!amdgcn.token")
    mods: dict[str, object] = {m: True for m, v in form.fixed.items()
                               if v and m in ("sc0", "glc", "lds", "gds")}
    if form.enc in ("MUBUF", "MTBUF"):
        mods["offen"] = True
    if form.mnemonic.startswith("ds_gws"):
        mods["gds"] = True
    if form.enc == "DPP" and any(s.width == 2 for s in ir_specs(form)):
        mods["dpp_ctrl"] = 0x150  # row_newbcast:0, the only 64-bit DPP control
    out.modifiers = mods
    mod_text = "".join(f" {m}" if v is True else f" {m} = {v}" for m, v in mods.items())
    res_names = ", ".join(f"%{tag}_r{j}" for j in range(len(results)))
    lhs = f"{res_names} = " if results else ""
    sig = f" : ({', '.join(types)}) -> ({', '.join(results)})" if types or results else ""
    family = FAMILY_OF_ENCODING[form.enc]
    out.lines.append(f"{lhs}amdgcn.{family} {form.mnemonic}{' ' if names else ''}"
                     f"{', '.join(names)}{mod_text}{sig}")
    return out


def module_text(target: str, samples: list[Sample]) -> str:
    """A module with one kernel holding all the samples."""
    body = "\n".join(f"    {line}" for s in samples for line in s.lines)
    return (f'amdgcn.module @m target = "{target}" {{\n'
            f"  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {{\n{body}\n"
            "    amdgcn.sopp s_endpgm\n  }\n}\n")


def all_forms(target: str) -> list[Form]:
    """Every form of every instruction of `target`, in database order."""
    return [f for inst in get_isa(target).instructions.values() for f in inst.forms]


def per_family(target: str, per: int = 1) -> list[Form]:
    """`per` forms of each encoding (spread over the database) for quick tests."""
    by_enc: dict[str, list[Form]] = {}
    for form in all_forms(target):
        if any(s.syntax == "label" for s in form.operands):
            continue
        by_enc.setdefault(form.enc, []).append(form)
    out: list[Form] = []
    for forms in by_enc.values():
        step = max(1, len(forms) // per)
        out += forms[::step][:per]
    return out
