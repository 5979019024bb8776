"""MC layer: parser, matcher, encoder, decoder, assembler and their errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asterism import api
from asterism.errors import AsterismError, DecodeError, ParseError, VerifyError
from asterism.mc.asm_syntax import InstParser
from asterism.mc.codeobject import read_code_object
from asterism.mc.decoder import DecodedInst, decode_code, get_decoder
from asterism.mc.encoder import encode_inst
from asterism.mc.matcher import select_form
from asterism.mc.parser import parse_asm
from asterism.mc.printer import format_inst

HEADER = '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n'


def enc(line: str, target: str = "gfx942") -> bytes:
    inst = InstParser().parse(line)
    inst.form = select_form(inst, target)
    return encode_inst(inst)


# Encodings worked out by hand from the CDNA3 ISA microcode formats.
@pytest.mark.parametrize("line,word", [
    ("s_endpgm", "bf810000"),  # SOPP op 1
    ("s_nop 0", "bf800000"),  # SOPP op 0
    ("s_mov_b32 s5, s2", "be850002"),  # SOP1: 101111101 sdst=5 op=0 ssrc0=2
    ("s_add_u32 s5, s2, s3", "80050302"),  # SOP2: 10 op=0 sdst=5 ssrc1=3 ssrc0=2
    ("v_add_u32 v1, v2, v3", "68020702"),  # VOP2 op 0x34: vdst 1, vsrc1 3, src0 v2 (258)
    ("v_mov_b32 v5, 1", "7e0a0281"),  # VOP1 op 1, src0 = inline 1 (129)
    ("s_waitcnt vmcnt(0) lgkmcnt(0)", "bf8c0070"),  # expcnt 7 (no wait), others 0
])
def test_hand_checked_encodings(line, word):
    assert enc(line)[:4] == int(word, 16).to_bytes(4, "little")


@pytest.mark.parametrize("line,word", [
    ("s_mov_b32 s4, 0xFFFFFFFF", "be8400c1"),  # -1 as a 32-bit operand: inline, as llvm-mc
    ("v_add_u32 v1, 0xfffffff0, v2", "680204d0"),  # -16: inline
    ("v_add_f16 v1, 0xffff, v2", "3e0204c1"),  # f16 operand: 0xffff reads as -1
])
def test_unsigned_spellings_of_inline_constants(line, word):
    assert enc(line) == int(word, 16).to_bytes(4, "little")


def test_literal_and_e64_selection():
    # Without a suffix the 32-bit encoding is chosen when the operands fit (as LLVM does) ...
    assert len(enc("v_add_f32 v1, s2, v3")) == 4
    # ... a literal follows the instruction ...
    assert enc("v_add_f32 v1, 1.5, v2")[4:] == (0x3FC00000).to_bytes(4, "little")
    # ... an SGPR as the second source needs VOP3, and _e64 forces it.
    assert len(enc("v_add_f32 v1, v2, s3")) == 8
    assert len(enc("v_add_f32_e64 v1, v2, v3")) == 8


@pytest.mark.parametrize("line,expected", [
    ("v_add_f32_e32 v1, v2, s3", "operand 3 (vsrc1): expected VGPR"),
    ("v_mfma_f32_16x16x16_f16 v[1:4], v[4:5], v[6:7], v[0:3]", "multiple of 2"),
    ("s_load_dwordx2 s0, s[2:3], 0", "expected 2 registers"),
    ("v_add_f32_e64 v1, s2, s3", "more than one SGPR"),
    ("v_add_u33 v1, v2, v3", "unknown instruction 'v_add_u33'"),
    ("ds_read_b64_tr_b16 v[0:1], v2", "not available on gfx942"),
    ("global_load_dword v1, v[2:3], off sc2", "unknown modifier 'sc2'"),
    ("global_load_dword v1, v[2:3], off glc", "not valid for global_load_dword"),
])
def test_verifier_errors_name_the_operand(line, expected):
    with pytest.raises(AsterismError, match=re.escape(expected)):
        enc(line)


@pytest.mark.parametrize("line,expected", [
    ("ds_read_b32 v0, v1 offset:70000", "out of range"),
    ("global_load_dword v0, v[2:3], off offset:5000", "out of range"),
    ("buffer_load_dword v0, v1, s[4:7], 0 offen offset:4096", "out of range"),
    ("s_load_dword s0, s[2:3], 0x200000", "out of range"),
])
def test_out_of_range_immediates(line, expected):
    with pytest.raises(AsterismError, match=expected):
        enc(line)


def test_asm_file_errors_have_locations():
    with pytest.raises(VerifyError) as err:
        parse_asm(HEADER + "k:\n  v_add_u32 v1, v2\n  s_bogus 1\n", "k.s")
    assert str(err.value.location) == "k.s:3:3"
    assert "expected 3 operands (vdst, src0, vsrc1), got 2" in err.value.message
    with pytest.raises(ParseError) as err:
        parse_asm(HEADER + "k:\n  v_add_u32 v1, v[2:, v3\n", "k.s")
    assert str(err.value.location) == "k.s:3:3"
    with pytest.raises(AsterismError) as err:
        parse_asm(HEADER + "k:\n  s_nop 0\n  s_bogus 1\n", "k.s")
    assert str(err.value.location) == "k.s:4:3"
    assert "unknown instruction" in err.value.message


def test_undefined_label_is_an_error():
    module = parse_asm(HEADER + ".globl k\n.type k,@function\nk:\n s_branch missing\n s_endpgm\n"
                       ".amdhsa_kernel k\n .amdhsa_next_free_vgpr 1\n .amdhsa_next_free_sgpr 1\n"
                       " .amdhsa_accum_offset 4\n.end_amdhsa_kernel\n", "k.s")
    with pytest.raises(AsterismError, match="undefined label 'missing'"):
        api.assemble(HEADER + ".globl k\n.type k,@function\nk:\n s_branch missing\n s_endpgm\n"
                     ".amdhsa_kernel k\n .amdhsa_next_free_vgpr 1\n .amdhsa_next_free_sgpr 1\n"
                     " .amdhsa_accum_offset 4\n.end_amdhsa_kernel\n")
    assert module.kernels[0].name == "k"


def test_branch_offsets_resolve_from_labels():
    text = (HEADER + ".globl k\n.type k,@function\nk:\n s_branch .Lend\n s_nop 0\n"
            ".Lend:\n s_cbranch_scc0 k\n s_endpgm\n.amdhsa_kernel k\n .amdhsa_next_free_vgpr 1\n"
            " .amdhsa_next_free_sgpr 1\n .amdhsa_accum_offset 4\n.end_amdhsa_kernel\n")
    obj = read_code_object(api.assemble(text))
    words = [int.from_bytes(obj.text[i:i + 4], "little") for i in range(0, 16, 4)]
    assert words[0] == 0xBF820001  # skip one instruction
    assert words[2] == 0xBF84FFFD  # back to the start: (0 - (8 + 4)) / 4 = -3


@pytest.mark.parametrize("name", ["aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co",
                                  "aiter_gfx942_fmha_fwd_hd128_bf16_rtz.co",
                                  "aiter_gfx950_bf16gemm_tn_32x64_bshuffle_splitk.co"])
def test_samples_round_trip_byte_identical(shared_data, name):
    """read -> decode -> encode -> write: identical .text, descriptors and metadata."""
    from asterism.mc.codeobject import write_code_object

    path = shared_data / "codeobjects" / name
    obj, items = api.disassemble(path)
    text = bytearray()
    for item in items:
        if isinstance(item, DecodedInst):
            again = InstParser().parse(format_inst(item.inst))
            again.form = select_form(again, obj.target.name)
            text += encode_inst(again, item.address - obj.text_address)
        else:
            text += item[1].to_bytes(4, "little")
    assert bytes(text) == obj.text
    obj.text = bytes(text)
    back = read_code_object(write_code_object(obj))
    assert back.text == obj.text
    assert [k.descriptor for k in back.kernels] == [k.descriptor for k in obj.kernels]
    assert back.metadata == obj.metadata


def test_demo_compiles_and_reads_back():
    hsaco = api.compile("examples/demo/add_10.mlir")
    obj = read_code_object(hsaco)
    assert [k.name for k in obj.kernels] == ["add_10"]
    insts = decode_code(obj.text[obj.kernels[0].offset:], "gfx942")
    texts = [format_inst(d.inst) for d in insts]
    assert texts.count("v_add_u32_e32 v1, 1, v1") == 10
    assert texts[-1] == "s_endpgm"
    # The printed assembly assembles to the same code object.
    assert api.assemble(api.translate("examples/demo/add_10.mlir")) == hsaco


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=40))
def test_decoder_fuzz_only_decode_errors(data):
    dec = get_decoder("gfx942")
    pos = 0
    while pos < len(data):
        try:
            d = dec.decode(data, pos, pos)
        except DecodeError:
            break
        format_inst(d.inst)
        pos += d.size


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="vsa0123456789[]:,_ .-|()xabcdefgnmopqrtuw", max_size=40))
def test_asm_parser_fuzz_only_asterism_errors(text):
    try:
        parse_asm(HEADER + "k:\n" + text + "\n", "fuzz.s")
    except AsterismError:
        pass


BAD_OPERANDS = [
    "v_readfirstlane_b32 m0, v1",  # LLVM's class for this vdst leaves M0 out
    "v_readlane_b32 m0, v1, 2",
    "  v_mfma_f32_16x16x16_f16 v[0:3], v[4:5], v[6:7], s[0:3] ; comment",
    "v_add_u32 v1, v2, s[0:1]",
    "lbl: v_add_u32 v1, v2, s[0:1]",
    "global_load_dword v1, v2, exec",
]


@pytest.mark.parametrize("line", BAD_OPERANDS)
def test_operand_errors_point_at_the_operand(line):
    with pytest.raises(VerifyError) as err:
        parse_asm(HEADER + "k:\n" + line + "\n", "k.s")
    loc = err.value.location
    bad = line.split(",")[-1].split(";")[0].strip() if "m0" not in line else "m0"
    assert (loc.line, loc.col) == (3, line.index(bad) + 1), err.value.message


@pytest.mark.parametrize("line", BAD_OPERANDS)
def test_operand_error_columns_match_llvm_mc(llvm_mc, tmp_path, line):
    import subprocess

    src = tmp_path / "k.s"
    src.write_text(HEADER + "k:\n" + line + "\n")
    proc = subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", str(src),
                           "-o", "/dev/null"], capture_output=True, text=True)
    theirs = next(x for x in proc.stderr.splitlines() if ": error:" in x)
    with pytest.raises(VerifyError) as err:
        parse_asm(src.read_text(), str(src))
    assert str(err.value.location) == theirs.split(": error:")[0]


# Lines LLVM 22's assembler rejects although the bits exist (LLVM decodes them), each once
# accepted here: the assembler must refuse them too.
LLVM_REJECTS = [
    ("v_cmp_eq_f32_sdwa vcc, v1, v2 dst_sel:DWORD", "modifier 'dst_sel' is not valid"),
    ("v_cmp_eq_f32_sdwa vcc, v1, v2 clamp", "modifier 'clamp' is not valid"),
    ("v_mov_b32_sdwa v1, v2 src1_sel:WORD_1", "modifier 'src1_sel' is not valid"),
    ("v_nop src0_sel:DWORD", "not valid"),
    ("v_clrexcp row_mirror row_mask:0xf bank_mask:0xf", "has no DPP form"),
    ("v_clrexcp src0_sel:DWORD", "has no SDWA form"),
    ("v_ldexp_f16_sdwa v1, v2, -v3", "integer operand takes sext"),
    ("v_cmp_class_f32_sdwa vcc, v1, -v2", "integer operand takes sext"),
    ("v_cvt_f32_bf8_sdwa v1, sext(v2) src0_sel:BYTE_0", "source modifiers are not accepted"),
    ("v_dot2_i32_i16 v81, s58, v196, v113 op_sel:[1,0,0]", "invalid op_sel operand"),
    ("v_dot2_f32_f16 v1, v2, v3, v4 op_sel_hi:[1,1,1]", "invalid op_sel operand"),
]


@pytest.mark.parametrize("line, message", LLVM_REJECTS)
def test_lines_llvm_rejects_are_rejected(line, message):
    with pytest.raises(AsterismError, match=message):
        enc(line)


def test_lines_llvm_rejects_are_rejected_by_llvm_too(llvm_mc):
    from asterism.mc.llvm_oracle import llvm_encode

    lines = [line for line, _ in LLVM_REJECTS]
    assert [isinstance(x, bytes) for x in llvm_encode(lines, "gfx942")] == [False] * len(lines)
    fine = ["v_ldexp_f16_sdwa v1, v2, sext(v3)", "v_dot2_i32_i16 v1, v2, v3, v4 neg_lo:[1,0,0]",
            "v_nop row_mirror row_mask:0xf bank_mask:0xf"]
    assert [enc(line) for line in fine] == llvm_encode(fine, "gfx942")


# Words one to three bits away from valid encodings (tools/mc_word_fuzz_report.py), with
# what llvm-objdump 22 makes of them: None where it rejects the word (".long").
OFF_BY_A_BIT = [
    ("8595ff91", None),  # s_bfm_b64 into exec_hi: a 64-bit destination cannot start there
    ("df169090", None),  # s_ashr_i64 with source code 223 (reserved on gfx9)
    ("0c02b390", None),  # s_ashr_i64 s[51:52]: a misaligned SGPR pair
    ("891493d207000000", None),  # v_bfm_b32 with abs on a third source it does not have
    ("310334d15a4e0308", None),  # v_add_u32_e64 with omod (mul:2): it has none
    ("3e00fd90", "s_ashr_i64 null, s[62:63], s0"),  # null is a register of any width
    # abs bits of sources without modifiers (and op_sel bits) are ignored, as LLVM does
    ("488a92d26abe0210", "v_trig_preop_f64 v[72:73], vcc, v95 clamp mul:4"),
    ("a68339d15b4b0000", "v_dot4c_i32_i8_e64 v166, v91, s37 clamp"),
    # ... where the form has source modifiers at all: neg of sources without them too
    ("aa5eddd17035e4c1", "v_cvt_pk_u8_f32 v170, v112, s26, ttmp13"),
    # the reserved bits LLVM's decoder holds (probed per form by tools/gen_isa.py)
    ("b0008bd2e3770340", None),  # v_bcnt_u32_b32 with neg: no source takes modifiers
    ("000012d8cc0d0044", None),  # ds_and_b32 with a vdst field: it returns nothing
    ("000009dd34020878", None),  # flat_atomic_add with a saddr field: FLAT has none
    ("f9d6487c9d008189", None),  # v_cmp_gt_f16_sdwa with sext on a float source
    ("fa163c7f8a418115", None),  # v_cvt_f32_f16_dpp with abs on a second source
    # scalar register ranges: pairs start even, quads at a multiple of 4, no m0 base
    ("008004dd664e5f00", None),  # global_atomic_cmpswap with saddr s[95:96]
    ("eb0818c07c004000", None),  # s_scratch_load_dwordx2 into s[35:36]
    ("be0c04c216000020", None),  # s_atomic_cmpswap with base m0
    ("7d2330c03c000000", None),  # s_buffer_load_dwordx16 with base ttmp[14:17]
    # bits LLVM ignores: buffer_wbl2 has no offset and no nt
    ("0700a2e000000000", "buffer_wbl2"),
    # operand codes: a buffer resource at m0, a reserved soffset or SDWA source code,
    # register ranges past a255
    ("865302e1c4a41f5d", None),  # buffer_atomic_swap with srsrc m0
    ("002080e1fc6891d5", None),  # buffer_atomic_swap_x2 with soffset code 213
    ("f9ae957d37208381", None),  # v_cmp_eq_u32_sdwa with source code 215
    ("00605fdcda00fffe", None),  # scratch_load_dwordx4 into a[254:257]
    ("f480c8d3c293a21d", None),  # v_mfma_f32_32x32x4_2b_f16 into a[244:275]
]
OFF_BY_A_BIT_GFX950 = [
    # a bf16 literal prints whole (an f16 one by its low 16 bits); lit() by the low 16 bits
    ("ffb68a7ed8110040", "v_cvt_f32_bf16_e32 v69, 0x400011d8"),
    ("ffb68a7e803f0040", "v_cvt_f32_bf16_e32 v69, lit(0x40003f80)"),
    ("ff168a7ed8110040", "v_cvt_f32_f16_e32 v69, 0x11d8"),
    ("7a00fad09dce0100", None),  # src_flat_scratch_base_hi cannot start a 64-bit source
]
_OFF_BY_A_BIT_ALL = [("gfx942", w, t) for w, t in OFF_BY_A_BIT] + \
    [("gfx950", w, t) for w, t in OFF_BY_A_BIT_GFX950]


@pytest.mark.parametrize("target,word,text", _OFF_BY_A_BIT_ALL)
def test_words_llvm_rejects_are_rejected(target, word, text):
    data = bytes.fromhex(word)
    if text is None:
        with pytest.raises(DecodeError, match="cannot have"):
            get_decoder(target).decode(data)
    else:
        assert format_inst(get_decoder(target).decode(data).inst) == text


@pytest.mark.llvm
@pytest.mark.parametrize("target,words", [("gfx942", OFF_BY_A_BIT),
                                          ("gfx950", OFF_BY_A_BIT_GFX950)])
def test_off_by_a_bit_words_as_llvm_objdump_reads_them(llvm_objdump, target, words):
    from asterism.mc.llvm_oracle import llvm_disassemble

    texts = llvm_disassemble([bytes.fromhex(w) for w, _t in words], target)
    for (word, text), theirs in zip(words, texts):
        if text is None:  # rejected: shown as data, or read together with what follows
            dword = f".long 0x{word[6:8]}{word[4:6]}{word[2:4]}{word[0:2]}"
            assert theirs in (dword, "<no instruction>"), word
        else:
            assert theirs == text, word


def test_sdwa_compare_with_an_sgpr_destination_round_trips():
    """A real gfx942 kernel's word (issue 12): read -> print -> parse -> encode gives it back
    (the destination is any SGPR pair, with the sd bit, not only vcc)."""
    words = bytes.fromhex("f916867d00900604")  # 7D8616F9 04069000
    text = format_inst(get_decoder("gfx942").decode(words, 0, 0).inst)
    assert text == "v_cmp_le_i32_sdwa s[16:17], v0, v11 src0_sel:DWORD src1_sel:WORD_0"
    assert enc(text) == words
    assert api.assemble(HEADER + text + "\n", None, "t.s")  # the `asterism asm` path


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_random_operands_draw_every_alternative(target):
    """The differential tests' generator draws every operand alternative of every slot (an
    older one never drew TTMPs, constant registers, inline floats in 16-bit integer slots or
    an SGPR pair as an SDWA compare's destination)."""
    import random

    from asterism.isa import get_isa
    from asterism.mc.random_inst import alternative_of, random_inst, slot_alternatives

    rng = random.Random(5)
    missing = []
    for form in (f for i in get_isa(target).instructions.values() for f in i.forms):
        want = {(k, alt) for k, spec in enumerate(form.operands)
                for alt in slot_alternatives(form, spec)}
        for _ in range(400):
            inst = random_inst(form, rng)
            want -= {(k, alternative_of(spec, op))
                     for k, (spec, op) in enumerate(zip(form.operands, inst.operands))}
            if not want:
                break
        missing += [(form.printed_mnemonic, k, alt) for k, alt in want]
    assert not missing, missing[:10]
    sdwa_cmp = next(f for f in get_isa(target).resolve("v_cmp_le_i32_sdwa")[0].forms
                    if f.enc == "SDWA")
    assert set(slot_alternatives(sdwa_cmp, sdwa_cmp.operands[0])) >= {"fixed", "sgpr", "ttmp"}


def test_64_bit_literal_text_round_trips():
    """Issue 12: s_mov_b64's literal 0xffffffff printed lit(0xffffffff) (llvm-objdump prints
    0xffffffff) and `asterism asm` could not parse lit(...)."""
    words = bytes.fromhex("ff0182beffffffff")  # BE8201FF FFFFFFFF
    text = format_inst(get_decoder("gfx942").decode(words, 0, 0).inst)
    assert text == "s_mov_b64 s[2:3], 0xffffffff"
    assert enc(text) == words
    assert enc("s_mov_b64 s[2:3], lit(0xffffffff)") == words
    assert enc("s_mov_b32 s2, lit(1)") == bytes.fromhex("ff0082be01000000")
    with pytest.raises(ParseError, match="32-bit literal"):
        enc("s_mov_b32 s2, lit(0x100000000)")


@pytest.mark.parametrize("operand", ["\u00b2", "\u0663", "v\u0663", "s[\u0660:1]"])
def test_non_ascii_digits_are_not_numbers(operand, tmp_path):
    """Python's int() and regex \\d take Unicode digits ('²' crashed, '٣' assembled as 3):
    an operand is ASCII or a located ParseError, from the API and the CLI (exit 1, no file)."""
    import subprocess
    import sys

    from asterism import api
    from asterism.errors import AsterismError

    line = f"s_mov_b32 s0, {operand}\n" if not operand.startswith(("v", "s[")) else \
        f"v_mov_b32 v0, {operand}\n"
    with pytest.raises(AsterismError, match=r"<asm>:1:|operand|register"):
        api.assemble(line, target="gfx942", filename="<asm>")
    src = tmp_path / "bad.s"
    src.write_text(line, encoding="utf-8")
    out = tmp_path / "bad.o"
    r = subprocess.run([sys.executable, "-m", "asterism.cli", "asm", "--target", "gfx942",
                        str(src), "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{src}:1:" in r.stderr and not out.exists()
