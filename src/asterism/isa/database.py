"""The ISA database: every instruction of a target, its encodings and operand shapes.

The data is generated from LLVM 22 by `tools/gen_isa.py` and committed under `isa/data/`;
this module only loads and indexes it (no LLVM needed). See `tools/gen_isa.py` for how each
fact is derived.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

import msgpack

from asterism.errors import TargetError
from asterism.version import package_file

SUFFIXES = ("_e32", "_e64", "_dpp", "_sdwa")

# Operand kinds (OperandSpec.kinds):
#   v vgpr, a agpr, s sgpr (and special scalar registers), i inline constant,
#   l 32-bit literal, k plain immediate field, off the "off" placeholder.
KIND_NAMES = {"v": "VGPR", "a": "AGPR", "s": "SGPR", "i": "inline constant", "l": "literal",
              "k": "immediate", "off": "off"}


@dataclass(frozen=True)
class OperandSpec:
    """One operand slot of an instruction form, in assembly order."""

    name: str  # the encoding field (vdst, src0, vsrc1, saddr, simm16...) or a fixed register
    role: str  # "def" or "use"
    kinds: tuple[str, ...]  # see KIND_NAMES
    width: int = 0  # registers (dwords); 0 for immediates
    align: int = 1  # register tuple alignment
    type: str | None = None  # value type for constants: f32, i32, f16, v2f16, f64, ...
    mods: bool = False  # accepts neg/abs (float) or sext (int) source modifiers
    # Which modifiers the assembler takes: "fp" -x / |x|, "int" sext(x), None either, "none"
    # nothing (the decoder still prints what the bits say, as llvm-objdump does).
    mod_kind: str | None = None
    tied: bool = False  # a destination that is also read (v_fmac, DPP "old", writelane)
    fixed: str | None = None  # an implicit register printed as an operand (vcc)
    syntax: str | None = None  # special immediate syntax: label, waitcnt, hwreg, sendmsg...
    optional: bool = False  # an immediate LLVM omits when zero (s_endpgm)
    excludes: tuple[str, ...] = ()  # special registers the slot's class leaves out (m0, exec)

    @property
    def is_register(self) -> bool:
        """True if the slot can hold a register."""
        return bool({"v", "a", "s"} & set(self.kinds)) or self.fixed is not None


@dataclass(frozen=True)
class Form:
    """One encoding of a mnemonic (e.g. v_add_f32 as VOP2 _e32, VOP3 _e64, DPP, SDWA)."""

    mnemonic: str
    enc: str  # SOP1 SOP2 SOPK SOPC SOPP SMEM VOP1 VOP2 VOPC VOP3 VOP3P MAI MAI_SCALE DS FLAT
    #          GLOBAL SCRATCH MUBUF MTBUF DPP SDWA
    opcode: int
    format: str  # the hardware format (isa/formats.py): VOP1 for a VOP1 DPP form, FLAT for
    #              GLOBAL/SCRATCH, VOP3P for MAI...
    suffix: str  # the suffix LLVM prints for this form ("_e32", "_e64", "_dpp", "_sdwa", "")
    size: int  # bytes, without a literal
    operands: tuple[OperandSpec, ...]
    modifiers: tuple[str, ...]
    counters: tuple[str, ...]
    variant: str | None = None  # addressing variant: global_saddr, scratch_svs, lds, imm...
    fixed: dict[str, int] = field(default_factory=dict)  # field values the variant implies
    mc_name: str = ""  # LLVM's internal opcode name (for reference)
    example: str = ""  # LLVM's printed text of a sample encoding
    target: str = ""  # the target whose database holds this form
    op_sel_len: int = 0  # VOP3 op_sel: how many bits LLVM prints (sources + destination)
    assembles: bool = True  # False: LLVM decodes this form but its assembler rejects it
    # (mask, value): bits of the instruction word LLVM's decoder holds at these values for
    # this form (unused operand fields, modifier bits it does not have), probed from LLVM
    reserved: tuple[int, int] = (0, 0)
    reserved_extra: tuple[int, int] = (0, 0)  # the same for the DPP/SDWA dword

    @property
    def base_variant(self) -> str | None:
        """The addressing variant without "+rtn" (the returning-atomic marker)."""
        return self.variant.split("+")[0] if self.variant else None

    @property
    def returns(self) -> bool:
        """True for the returning form of an atomic (selected by sc0 / glc)."""
        return bool(self.variant) and self.variant.endswith("rtn")

    @property
    def instruction(self) -> Instruction:
        """The instruction this form belongs to."""
        return get_isa(self.target).instructions[self.mnemonic]

    @property
    def printed_mnemonic(self) -> str:
        """The mnemonic as LLVM prints it for this form (with its suffix)."""
        return self.example.split(" ", 1)[0]



@dataclass(frozen=True)
class Instruction:
    """A mnemonic of the target with every form it can be encoded in."""

    mnemonic: str
    unit: str  # salu valu trans mfma smem lds vmem branch
    flags: frozenset[str]
    counters: tuple[str, ...]  # vmcnt, lgkmcnt, expcnt
    implicit_defs: tuple[str, ...]
    implicit_uses: tuple[str, ...]
    forms: tuple[Form, ...]
    passes: int | None = None  # MFMA passes (4 cycles each)
    aliases: tuple[str, ...] = ()

    def forms_with_suffix(self, suffix: str) -> list[Form]:
        """Forms whose LLVM suffix is `suffix` (VOP3 forms answer to _e64, VOP1/2/C to _e32)."""
        return [f for f in self.forms if f.suffix == suffix]


class IsaDatabase:
    """All instructions of one target, indexed by mnemonic and by (encoding, opcode).

    Instruction objects are made on first use (a listing needs a few dozen of the ~1,200):
    `instructions` and `by_opcode` are read-only mappings over the database's tables."""

    def __init__(self, target: str, data: dict):
        self._init_tables(target, _split(data))

    @classmethod
    def from_tables(cls, target: str, tables: dict) -> IsaDatabase:
        """The database from its tables (see `_split`: what the cache holds)."""
        db = cls.__new__(cls)
        db._init_tables(target, tables)
        return db

    def _init_tables(self, target: str, tables: dict) -> None:
        self.target = target
        self.llvm_version: str = tables["llvm_version"]
        self.coverage: dict = tables["coverage"]
        names = tables["names"]
        self.instructions: Mapping[str, Instruction] = _Instructions(
            target, dict(zip(names, tables["raw"], strict=True)))
        self.aliases: dict[str, str] = dict(tables["aliases"])
        # (format, encoding, opcode) -> forms (several for addressing variants).
        self.by_opcode: Mapping[tuple[str, str, int], list[Form]] = _FormIndex(
            self.instructions, {(fmt, enc, op): [(names[k], i) for k, i in refs]
                                for fmt, enc, op, refs in tables["index"]})

    def __contains__(self, mnemonic: str) -> bool:
        return self.resolve(mnemonic) is not None

    def __len__(self) -> int:
        return len(self.instructions)

    def resolve(self, mnemonic: str) -> tuple[Instruction, str] | None:
        """(instruction, suffix) for a mnemonic as written (with _e32/_e64/... or an alias)."""
        name = mnemonic.lower()
        suffix = ""
        get = self.instructions.get
        inst = get(name)
        if inst is None:
            for suf in SUFFIXES:
                if name.endswith(suf):
                    name, suffix = name[: -len(suf)], suf
                    break
            inst = get(name)
            if inst is None and name in self.aliases:
                inst = self.instructions[self.aliases[name]]
            if inst is None and mnemonic.lower() in self.aliases:
                inst, suffix = self.instructions[self.aliases[mnemonic.lower()]], ""
        if inst is None:
            return None
        return inst, suffix

    def get(self, mnemonic: str) -> Instruction | None:
        """The instruction for a mnemonic (suffixes and aliases accepted), or None."""
        found = self.resolve(mnemonic)
        return found[0] if found else None

    def similar(self, mnemonic: str, n: int = 3) -> list[str]:
        """Known mnemonics close to `mnemonic` (for 'did you mean' messages)."""
        import difflib

        return difflib.get_close_matches(mnemonic.lower(), list(self.instructions), n=n)


def _operand_from_json(raw: dict) -> OperandSpec:
    return OperandSpec(
        name=raw["name"], role=raw["role"], kinds=tuple(raw.get("kinds", ())),
        width=raw.get("width", 0), align=raw.get("align", 1), type=raw.get("type"),
        mods=raw.get("mods", False), mod_kind=raw.get("mod_kind"), tied=raw.get("tied", False),
        fixed=raw.get("fixed"),
        syntax=raw.get("syntax"), optional=raw.get("optional", False),
        excludes=tuple(raw.get("excludes", ())))


def _instruction_from_json(raw: dict, target: str) -> Instruction:
    mnemonic = raw["mnemonic"]
    forms = tuple(
        Form(mnemonic=mnemonic, enc=f["enc"], opcode=f["opcode"], format=f["format"],
             suffix=f["suffix"],
             size=f["size"], operands=tuple(_operand_from_json(o) for o in f["operands"]),
             modifiers=tuple(f.get("modifiers", ())), counters=tuple(f.get("counters", ())),
             variant=f.get("variant"), fixed=dict(f.get("fixed", {})),
             mc_name=f.get("mc_name", ""), example=f.get("example", ""), target=target,
             op_sel_len=f.get("op_sel_len", 0), assembles=f.get("reassembles", True),
             reserved=tuple(f.get("reserved", (0, 0))),
             reserved_extra=tuple(f.get("reserved_extra", (0, 0))))
        for f in raw["forms"])
    return Instruction(
        mnemonic=mnemonic, unit=raw["unit"], flags=frozenset(raw.get("flags", ())),
        counters=tuple(raw.get("counters", ())), implicit_defs=tuple(raw.get("implicit_defs", ())),
        implicit_uses=tuple(raw.get("implicit_uses", ())), forms=forms,
        passes=raw.get("passes"), aliases=tuple(raw.get("aliases", ())))


@cache
def known_isa_targets() -> tuple[str, ...]:
    """Targets that have a generated ISA database."""
    names = os.listdir(package_file("isa", "data"))
    return tuple(sorted(name[:-5] for name in names if name.endswith(".json")))


class _Instructions(Mapping):
    """mnemonic -> Instruction, each made from its raw data (a dict, or msgpack bytes from
    the cache) on first use and then kept (forms are keyed by identity elsewhere)."""

    def __init__(self, target: str, raw: dict[str, dict | bytes]):
        self._target = target
        self._raw = raw
        self._made: dict[str, Instruction] = {}

    def __getitem__(self, mnemonic: str) -> Instruction:
        inst = self._made.get(mnemonic)
        if inst is None:
            raw = self._raw[mnemonic]
            if isinstance(raw, bytes):
                raw = msgpack.unpackb(raw)
            inst = self._made[mnemonic] = _instruction_from_json(raw, self._target)
        return inst

    def get(self, mnemonic: str, default=None):
        """The instruction, or `default` for an unknown mnemonic."""
        inst = self._made.get(mnemonic)
        if inst is not None:
            return inst
        return self[mnemonic] if mnemonic in self._raw else default

    def __contains__(self, mnemonic: object) -> bool:
        return mnemonic in self._raw

    def __iter__(self):
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class _FormIndex(Mapping):
    """(format, encoding, opcode) -> the forms with that opcode, in database order."""

    def __init__(self, instructions: Mapping[str, Instruction],
                 refs: dict[tuple[str, str, int], list[tuple[str, int]]]):
        self._instructions = instructions
        self._refs = refs
        self._made: dict[tuple[str, str, int], list[Form]] = {}

    def __getitem__(self, key: tuple[str, str, int]) -> list[Form]:
        forms = self._made.get(key)
        if forms is None:
            insts = self._instructions
            forms = self._made[key] = [insts[m].forms[i] for m, i in self._refs[key]]
        return forms

    def get(self, key: tuple[str, str, int], default=None):
        """The forms of `key`, or `default`."""
        forms = self._made.get(key)
        if forms is not None:
            return forms
        return self[key] if key in self._refs else default

    def __contains__(self, key: object) -> bool:
        return key in self._refs

    def __iter__(self):
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)


def _split(data: dict, pack: bool = False) -> dict:
    """The database's tables from the generated JSON data: the instructions' raw data in
    order (msgpack bytes each if `pack`, to be unpacked on first use), the aliases and the
    (format, encoding, opcode) index as (mnemonic position, form position) pairs."""
    names, raw, aliases = [], [], []
    index: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
    for k, inst in enumerate(data["instructions"]):
        names.append(inst["mnemonic"])
        raw.append(msgpack.packb(inst) if pack else inst)
        aliases += [(alias, inst["mnemonic"]) for alias in inst.get("aliases", ())]
        for i, f in enumerate(inst["forms"]):
            index.setdefault((f["format"], f["enc"], f["opcode"]), []).append((k, i))
    return {"llvm_version": data.get("llvm_version", ""), "coverage": data.get("coverage", {}),
            "names": names, "raw": raw, "aliases": aliases,
            "index": [(*key, refs) for key, refs in index.items()]}


def _load_tables(name: str, text: bytes) -> dict:
    """The tables of a database file's content, from the user cache when it holds them
    (keyed by the content's hash and the asterism version), else made and cached."""
    from asterism import cache

    cache_name = f"isa-{name}-{cache.key_of(_TABLES_FORMAT, text)}.msgpack"
    body = cache.read(cache_name)
    if body is not None:
        try:
            tables = msgpack.unpackb(body)
            if isinstance(tables, dict) and len(tables["names"]) == len(tables["raw"]):
                return tables
        except (ValueError, KeyError, TypeError, msgpack.UnpackException):
            pass  # (a file of an incompatible writer: made again below)
    tables = _split(json.loads(text), pack=True)
    cache.write(cache_name, msgpack.packb(tables))
    return tables


_TABLES_FORMAT = "isa-tables-1"  # (change when _split's layout changes)


@cache
def get_isa(target: str) -> IsaDatabase:
    """The ISA database of `target` (e.g. "gfx942"); loaded once per process."""
    name = target.split(":")[0].split("--")[-1] if isinstance(target, str) else None
    known = known_isa_targets()
    # (checked against the listing before any file is opened: the name may come from IR
    # text, and joined into a path it could name any *.json on the machine)
    if name not in known:
        raise TargetError.unknown(target, known)
    with open(package_file("isa", "data", f"{name}.json"), "rb") as f:
        data = f.read()
    return IsaDatabase.from_tables(name, _load_tables(name, data))
