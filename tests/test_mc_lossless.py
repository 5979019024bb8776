"""Lossless text: read -> print (lossless) -> parse -> encode gives back every word the
decoder accepts, while the default text stays LLVM's (llvm-objdump's listing)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mc_lossless_words import decoded, random_words, round_trip

from asterism import api
from asterism.errors import AsterismError
from asterism.mc.codeobject import read_code_object
from asterism.mc.codeobject.elf import parse_elf
from asterism.mc.decoder import DecodedInst, get_decoder
from asterism.mc.encoder import encode_inst
from asterism.mc.inst import HIDDEN_BITS
from asterism.mc.lossless import decoded_text, reassemblable_text
from asterism.mc.parser import parse_asm
from asterism.mc.printer import format_inst

SAMPLES = ["aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co",
           "aiter_gfx942_fmha_fwd_hd128_bf16_rtz.co",
           "aiter_gfx950_bf16gemm_tn_32x64_bshuffle_splitk.co"]
# v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:7], v[12:15], v[0:3], v20, v21
# op_sel_hi:[0,0,0] cbsz:4 blgp:4 as llvm-mc-22 encodes it, with the prefix word's op_sel[2]
# and op_sel_hi[2] bits set (0xD3AC6000), as real gfx950 kernels have them.
SCALED_MFMA = bytes.fromhex("0060acd3142b0200000cadd304190284")
SCALED_MFMA_TEXT = ("v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:7], v[12:15], v[0:3], v20, "
                    "v21 op_sel_hi:[0,0,0] cbsz:4 blgp:4")


def _encode_text(lines: list[str], target: str) -> bytes:
    module = parse_asm("\n".join([f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"', ".text",
                                  *lines]) + "\n", "t.s")
    return b"".join(encode_inst(i) for i in module.kernels[0].body)


def test_scaled_mfma_hidden_op_sel_bits_survive() -> None:
    """The issue's words: LLVM's text drops the prefix's 0x6000 (print -> parse -> encode
    gives D3AC0000); the lossless text keeps them, and the default text is unchanged."""
    d = get_decoder("gfx950").decode(SCALED_MFMA)
    assert format_inst(d.inst) == SCALED_MFMA_TEXT
    assert _encode_text([format_inst(d.inst)], "gfx950")[:4] == bytes.fromhex("0000acd3")
    text = decoded_text(d)
    assert text.startswith(".long 0xd3ac6000, 0x00022b14, 0xd3ad0c00, 0x84021904 ; ")
    assert SCALED_MFMA_TEXT in text and "dword 0: 0x00006000" in text
    assert _encode_text([text], "gfx950") == SCALED_MFMA
    # read back, the words are the instruction again (operands and form), with its bits
    inst = parse_asm('.amdgcn_target "amdgcn-amd-amdhsa--gfx950"\n.text\n' + text + "\n"
                     ).kernels[0].body[0]
    assert format_inst(inst) == SCALED_MFMA_TEXT and inst.modifiers[HIDDEN_BITS] == 0x6000


def test_text_that_round_trips_stays_llvm_text() -> None:
    """An instruction whose LLVM text carries all its bits prints as that text."""
    d = get_decoder("gfx942").decode(bytes.fromhex("8002027e"))  # v_mov_b32_e32 v1, 0
    assert decoded_text(d) == format_inst(d.inst) == "v_mov_b32_e32 v1, 0"


@pytest.mark.parametrize("name", SAMPLES)
def test_shared_code_objects_round_trip_losslessly(shared_data, name) -> None:
    """Every instruction of the shared code objects, and the whole file through
    `reassemblable_text` and our assembler: same .text, descriptors and metadata."""
    path = shared_data / "codeobjects" / name
    obj, items = api.disassemble(path)
    insts = [d for d in items if isinstance(d, DecodedInst)]
    result = round_trip(insts, obj.target.name)
    assert result.total == len(insts) > 1000 and not result.mismatches
    again = read_code_object(api.assemble(reassemblable_text(path), None, "re.s"))
    assert again.text == obj.text
    assert [k.descriptor for k in again.kernels] == [k.descriptor for k in obj.kernels]
    assert again.metadata == obj.metadata


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_random_words_round_trip_losslessly(target) -> None:
    """Random instructions of every form and 1-3-bit neighbours of them (bounded sample;
    tools/mc_lossless_report.py runs a larger one): every word the decoder accepts comes
    back identical, some of them only through `.long`."""
    items = decoded(random_words(target, 1, 1, seed=12), target)
    result = round_trip(items, target)
    assert result.total > 3000 and not result.mismatches, result.mismatches[:5]
    assert result.words > 100 and result.llvm_text > result.words


def test_long_words_that_do_not_decode_stay_data() -> None:
    """`.long` of a word no instruction has is kept as data, byte for byte."""
    assert _encode_text([".long 0xffffffff, 0xbf810000"], "gfx942") == \
        bytes.fromhex("ffffffff0000 81bf".replace(" ", ""))


def test_long_outside_text_and_bad_values_are_errors() -> None:
    """`.long` is code only in .text; a value that is not a 32-bit integer names its line."""
    head = '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n'
    with pytest.raises(AsterismError, match="unsupported directive '.long'"):
        parse_asm(head + ".rodata\n.long 1\n", "t.s")
    with pytest.raises(AsterismError, match="bad .long value '0x1ffffffff'") as err:
        parse_asm(head + ".text\n.long 1, 0x1ffffffff\n", "t.s")
    assert err.value.location.line == 3


def test_cli_reassemblable_round_trips(shared_data, tmp_path) -> None:
    """`asterism disasm --reassemblable` then `asterism asm`: the same .text."""
    src = shared_data / "codeobjects" / SAMPLES[2]
    run = [sys.executable, "-m", "asterism.cli"]
    subprocess.run([*run, "disasm", "--reassemblable", str(src), "-o", str(tmp_path / "k.s")],
                   check=True)
    subprocess.run([*run, "asm", str(tmp_path / "k.s"), "-o", str(tmp_path / "k.co")],
                   check=True)
    assert read_code_object(tmp_path / "k.co").text == read_code_object(src).text


@pytest.mark.llvm
@pytest.mark.parametrize("name", SAMPLES)
def test_reassemblable_text_is_valid_for_llvm_mc(shared_data, name, llvm_mc, ld_lld,
                                                 tmp_path) -> None:
    """llvm-mc-22 + ld.lld-22 make the same .text, descriptors and metadata of it."""
    path = shared_data / "codeobjects" / name
    obj = read_code_object(path)
    (tmp_path / "k.s").write_text(reassemblable_text(path))
    subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", f"-mcpu={obj.target.name}",
                    "-filetype=obj", str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")],
                   check=True)
    subprocess.run([ld_lld, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.co")],
                   check=True)
    theirs = read_code_object(tmp_path / "k.co")
    assert theirs.text == obj.text
    assert [k.descriptor for k in theirs.kernels] == [k.descriptor for k in obj.kernels]
    assert theirs.metadata == obj.metadata


@pytest.mark.llvm
def test_long_lines_are_valid_for_llvm_mc(llvm_mc, tmp_path) -> None:
    """The `.long` lines (words with bits LLVM's text drops) assemble with llvm-mc-22 to
    the same bytes, comment and all."""
    target = "gfx950"
    items = decoded(random_words(target, 1, 1, seed=12), target)
    picked = [(d, text) for d in items if (text := decoded_text(d)).startswith(".long")]
    picked.append((get_decoder(target).decode(SCALED_MFMA), decoded_text(
        get_decoder(target).decode(SCALED_MFMA))))
    (tmp_path / "k.s").write_text(".text\n" + "\n".join(t for _d, t in picked) + "\n")
    subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", f"-mcpu={target}",
                    "-filetype=obj", str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")],
                   check=True)
    text = parse_elf((tmp_path / "k.o").read_bytes()).section(".text").data
    assert text == b"".join(d.raw for d, _t in picked)
