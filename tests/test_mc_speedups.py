"""The MC layer's speed-ups must not change answers.

* the matcher's quick acceptance tests accept only what match_form accepts, its quick
  refusals refuse only what match_form refuses, and select_form picks the form a plain
  match_form loop picks (with the same error), also when it reuses a choice made for an
  instruction of the same shape;
* parse results reused by text never depend on `.set` symbols;
* the decoder's shared operand tables give the same instructions as fresh decoding;
* decode_code with skip_undecodable lists words like api.disassemble's loop.
"""

from __future__ import annotations

import random

import pytest

from asterism.errors import AsterismError, VerifyError
from asterism.isa import get_isa
from asterism.mc import asm_syntax, decoder, matcher
from asterism.mc.asm_syntax import InstParser
from asterism.mc.decoder import Decoder
from asterism.mc.encoder import encode_inst
from asterism.mc.inst import Inst
from asterism.mc.matcher import (
    _QUICK,
    MatchError,
    candidate_forms,
    match_form,
    select_form,
)
from asterism.mc.operands import OFF, FloatImm, Imm, Label, Literal, Mod, Reg, Special
from asterism.mc.parser import parse_asm
from asterism.mc.per_form import PerForm
from asterism.mc.printer import format_inst
from asterism.mc.random_inst import random_inst

TARGETS = ["gfx942", "gfx950"]


def _mutations(inst: Inst, rng: random.Random) -> list[Inst]:
    """Variants of `inst` that stress operand checks (wrong kinds, widths, alignments...)."""
    pool = [Reg("v", 3), Reg("v", 1, 2), Reg("v", 2, 4), Reg("a", 5), Reg("a", 2, 4),
            Reg("s", 7), Reg("s", 1, 2), Reg("s", 4, 4), Reg("ttmp", 2), Reg("ttmp", 2, 2),
            Special("vcc"), Special("vcc_lo"), Special("m0"), Special("exec"),
            Special("exec_lo"), Special("scc"), Imm(5), Imm(-3), Imm(1000), Imm(0xFFFFFFFF),
            Imm(0xFFFF), FloatImm(0.5), FloatImm(1.5), Literal(0x1234), Label("x"),
            Mod(Reg("v", 4), neg=True), Mod(Reg("s", 3), abs=True), Mod(Imm(2), neg=True),
            OFF]
    out = []
    for _ in range(4):
        ops = list(inst.operands)
        if ops:
            ops[rng.randrange(len(ops))] = rng.choice(pool)
        out.append(Inst(inst.mnemonic, ops, dict(inst.modifiers)))
    out.append(Inst(inst.mnemonic, list(inst.operands) + [Imm(1)], dict(inst.modifiers)))
    out.append(Inst(inst.mnemonic, list(inst.operands), {**inst.modifiers, "clamp": True}))
    for flags in ({}, {"offen": True}, {"idxen": True}, {"offen": True, "idxen": True}):
        # (a buffer address is `off`, a VGPR or a pair by these flags)
        mods = {k: v for k, v in inst.modifiers.items() if k not in ("offen", "idxen")}
        out.append(Inst(inst.mnemonic, list(inst.operands), {**mods, **flags}))
    return out


def _select_by_match_form(inst: Inst, target: str):
    """select_form as a plain loop over match_form (the reference)."""
    forms = candidate_forms(get_isa(target), inst)
    errors = []
    for form in forms:
        try:
            match_form(inst, form)
            return form
        except MatchError as err:
            errors.append(err)
    best = max(errors, key=lambda e: e.score)
    return f"{inst.mnemonic}: {best.message}"


@pytest.mark.parametrize("target", TARGETS)
def test_quick_match_accepts_only_what_match_form_accepts(target):
    rng = random.Random(f"quick-{target}")
    isa = get_isa(target)
    checked = refused = 0
    for instruction in isa.instructions.values():
        for form in instruction.forms:
            if not form.assembles:
                continue  # decode-only: select_form explains those differently
            base = random_inst(form, rng)
            base.mnemonic = form.printed_mnemonic
            for inst in [base, *_mutations(base, rng)]:
                for cand in candidate_forms(isa, inst):
                    if _QUICK(cand).fits(inst):
                        match_form(inst, cand)  # must not raise
                        checked += 1
                    elif _QUICK(cand).refuses(inst):
                        with pytest.raises(MatchError):
                            match_form(inst, cand)
                        refused += 1
                try:
                    got = select_form(inst, target)
                except VerifyError as err:
                    got = err.message
                assert got == _select_by_match_form(inst, target), format_inst(inst)
    assert checked > 1000 and refused > 1000


def _same_shape(inst: Inst, rng: random.Random) -> Inst:
    """`inst` with other register numbers (same alignment), other constants of the same
    class (inline / literal) and other modifier values: the same shape for select_form's
    table of choices, so that the rules reading values (an MFMA's C overlapping its
    destination, gds, op_sel, cbsz/blgp, DPP controls...) are what decides."""
    def other(op):
        t = type(op)
        if t is Mod:
            return Mod(other(op.operand), neg=op.neg, abs=op.abs, sext=op.sext)
        if t is Reg and op.kind != "ttmp":
            # (a low index keeps every kind in range; many such operands overlap)
            return Reg(op.kind, (op.index & 3) + 4 * rng.randrange(4), op.count)
        if t is Imm:
            if -16 <= op.value <= 64:
                return Imm(rng.randint(-16, 64))
            return Imm(op.value + 1 if op.value > 64 else op.value - 1)
        return op

    def other_value(name, value):
        if name in matcher._VALUE_MODIFIERS:
            return value
        if type(value) is bool:
            return rng.random() < 0.5
        if type(value) is int:
            return rng.choice([0, 1, 2, 3, value, 0x150, 0x15F])
        if type(value) is tuple:
            return tuple(rng.randint(0, 1) for _ in value)
        return value

    return Inst(inst.mnemonic, [other(op) for op in inst.operands],
                {name: other_value(name, value) for name, value in inst.modifiers.items()})


def _select_or_message(inst: Inst, target: str):
    try:
        return select_form(inst, target)
    except VerifyError as err:
        return err.message


@pytest.mark.parametrize("target", TARGETS)
def test_choices_reused_by_shape_equal_the_full_path(target, monkeypatch):
    monkeypatch.setattr(matcher, "_BY_SHAPE", {})
    rng = random.Random(f"shape-{target}")
    isa = get_isa(target)
    reused = 0
    for instruction in isa.instructions.values():
        for form in instruction.forms:
            if not form.assembles:
                continue
            base = random_inst(form, rng)
            base.mnemonic = form.printed_mnemonic
            for inst in [base, *_mutations(base, rng)[:3]]:
                _select_or_message(inst, target)  # (remembers the choice by shape)
                for _ in range(3):
                    variant = _same_shape(inst, rng)
                    key = matcher._shape_key(variant, target)
                    reused += key is not None and key in matcher._BY_SHAPE
                    assert _select_or_message(variant, target) == \
                        _select_by_match_form(variant, target), format_inst(variant)
    assert reused > 2000


def test_reused_operands_do_not_depend_on_symbols():
    src = """.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
.globl k
.type k,@function
k:
  .set x, {x}
  s_mov_b32 s0, x
  s_mov_b32 s1, x+1
  v_mov_b32_e32 v0, 5
  ds_read_b32 v1, v2 offset:x
  s_branch k
"""
    for x in (5, 7, 5):
        body = parse_asm(src.format(x=x)).kernels[0].body
        assert body[0].operands[1] == Imm(x)
        assert body[1].operands[1] == Imm(x + 1)
        assert body[2].operands[1] == Imm(5)
        assert body[3].modifiers["offset"] == x
        assert body[4].operands[0] == Label("k")


def test_reused_parses_equal_fresh_parses():
    lines = ["v_add_f32_e64 v1, -|s2|, 0x3f800000 clamp mul:2",
             "buffer_load_dword v[2:3], v1, s[4:7], 0 offen offset:12 sc0",
             "v_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3] cbsz:1 abid:2",
             "v_mov_b32_dpp v0, v1 quad_perm:[1,0,3,2] row_mask:0x3 bank_mask:0xf",
             "v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7] op_sel_hi:[0,1,1] neg_lo:[1,0,0]"]
    for line in lines:
        first = InstParser().parse(line)  # fills the reuse tables
        second = InstParser().parse(line)  # served from them
        asm_syntax._OPERANDS.clear()
        asm_syntax._MODIFIERS.clear()
        asm_syntax._IS_MODIFIER.clear()
        fresh = InstParser().parse(line)
        assert first == second == fresh
        assert [repr(o) for o in second.operands] == [repr(o) for o in fresh.operands]


def test_reuse_tables_are_bounded(monkeypatch):
    monkeypatch.setattr(asm_syntax, "_TABLE_LIMIT", 8)
    asm_syntax._OPERANDS.clear()
    parser = InstParser()
    for k in range(40):
        assert parser.operand(f"v{k}") == Reg("v", k)
        assert len(asm_syntax._OPERANDS) <= 8


def test_parse_errors_are_not_reused():
    parser = InstParser()
    for _ in range(2):
        with pytest.raises(AsterismError, match="cannot parse operand"):
            parser.parse("s_mov_b32 s0, ?bad")


def _decode_all(target: str, words: list[bytes]) -> list:
    dec = Decoder(target)
    out = []
    for data in words:
        try:
            d = dec.decode(data, 0, 0x100)
            out.append((d.size, d.raw, format_inst(d.inst), d.inst))
        except AsterismError as err:
            out.append(f"{type(err).__name__}: {err}")
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_shared_decoder_tables_match_fresh_decoding(target, monkeypatch):
    rng = random.Random(f"decode-{target}")
    isa = get_isa(target)
    words = []
    for instruction in isa.instructions.values():
        for form in instruction.forms:
            inst = random_inst(form, rng)
            inst.mnemonic = form.printed_mnemonic
            try:
                inst.form = select_form(inst, target)
                words.append(encode_inst(inst))
            except AsterismError:
                continue
    words += [rng.randbytes(rng.choice([4, 8, 12, 16])) for _ in range(3000)]
    _decode_all(target, words)  # fills the shared tables
    warm = _decode_all(target, words)
    # Decode again with every table empty: each answer is then made fresh.
    fresh = []
    for data in words:
        monkeypatch.setattr(decoder, "_PLANS", PerForm(decoder._Plan))
        monkeypatch.setattr(decoder, "_TABLES", {})
        monkeypatch.setattr(decoder, "_REGS", {})
        fresh += _decode_all(target, [data])
    assert warm == fresh


def test_listing_line_of_an_instruction_without_form():
    from asterism.mc.decoder import DecodedInst
    from asterism.mc.listing import format_line

    d = DecodedInst(0x10, 4, Inst("s_nop", [Imm(0)]), bytes.fromhex("000080bf"))
    assert format_line(d, {0: "k"}) == "\t" + "s_nop 0".ljust(59) + "// 000000000010: BF800000"


def test_decode_code_skipping_undecodable_words_lists_them_like_disassemble():
    from asterism.mc.decoder import decode_code, get_decoder

    rng = random.Random(3)
    code = b"".join(rng.randbytes(4) for _ in range(400))
    dec = get_decoder("gfx942")
    expected, pos = [], 0
    while pos < len(code):  # (the loop of api.disassemble)
        try:
            d = dec.decode(code, pos, 0x100 + pos)
            expected.append(d)
            pos += d.size
        except AsterismError:
            expected.append((0x100 + pos, int.from_bytes(code[pos:pos + 4].ljust(4, b"\0"),
                                                         "little")))
            pos += 4
    got = decode_code(code, "gfx942", 0x100, skip_undecodable=True)
    assert any(isinstance(x, tuple) for x in got)
    assert got == expected
    with pytest.raises(AsterismError):
        decode_code(code, "gfx942", 0x100)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_only_sopp_forms_have_branch_targets(target):
    # listing() looks up branch targets only for SOPP forms.
    isa = get_isa(target)
    encodings = {f.enc for inst in isa.instructions.values() for f in inst.forms
                 if any(spec.syntax == "label" for spec in f.operands)}
    assert encodings == {"SOPP"}


def test_format_table_gives_the_first_matching_format():
    # (the table is laid down by ranges: it must agree with trying DECODE_ORDER in turn)
    from asterism.isa import formats

    expected = [formats._first_match(top << 23) for top in range(512)]
    assert formats._format_table() == expected
    assert sum(fmt is not None for fmt in expected) > 400


@pytest.mark.parametrize("target", TARGETS)
def test_generated_operand_encoders_equal_the_slot_handlers(target, monkeypatch):
    # Every form with a generated operand encoder, random instructions and mutations (other
    # kinds, constants, literals, named registers, modifiers): where it answers, its bytes
    # are the slot and modifier handlers' (and where they refuse, it does not answer).
    from asterism.errors import EncodeError
    from asterism.mc import encoder

    rng = random.Random(f"fast-encode-{target}")
    isa = get_isa(target)
    answered = with_modifiers = 0
    for instruction in isa.instructions.values():
        for form in instruction.forms:
            if not form.assembles:
                continue
            plan = encoder._PLANS(form)
            fast = encoder._compile_fast(plan)
            if fast is None:
                continue
            for _ in range(3):
                base = random_inst(form, rng)
                for inst in [base, *_mutations(base, rng)]:
                    inst.form = form
                    monkeypatch.setattr(plan, "fast", None)  # (the slot handlers alone)
                    try:
                        want = encode_inst(inst)
                    except (EncodeError, AttributeError, TypeError, KeyError, ValueError):
                        want = None
                    monkeypatch.undo()
                    got = fast(inst.operands) if plan.modifiers is None else \
                        encoder._fast_with_modifiers(plan, fast, inst)
                    assert got is None or got == want, (format_inst(inst), got, want)
                    answered += got is not None
                    with_modifiers += got is not None and plan.modifiers is not None
    assert answered > 2000 and with_modifiers > 1000


@pytest.mark.parametrize("line", ["ds_read_b32 v1, v2 offset:70000",
                                  "ds_write_b32 v1, v2 offset:-1",
                                  "v_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3] cbsz:9"])
def test_generated_encoder_reports_bad_modifiers_as_the_handlers_do(line, monkeypatch):
    # (the modifier handler runs on the generated encoder's word: its error, with the
    # instruction's name and place, is the one the slot-handler path gives)
    from asterism.errors import EncodeError
    from asterism.mc import encoder

    inst = parse_asm(f'.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n{line}\n', "k.s"
                     ).kernels[0].body[0]
    plan = encoder._PLANS(inst.form)
    assert encoder._compile_fast(plan) is not None  # (the generated encoder serves it)
    messages = []
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(plan, "fast", None)
        with pytest.raises(EncodeError) as err:
            encoder.ENCODER.encode(inst)
        messages.append((err.value.message, str(err.value.location)))
    assert messages[0] == messages[1] and messages[0][1] == "k.s:2:1"
