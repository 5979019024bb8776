"""`asterism raise`: code objects and assembly -> IR, and `compile` of that IR gives the same
.text (byte for byte), descriptors and metadata; what the IR cannot express is an error with
its address."""

from __future__ import annotations

import dataclasses
import random
import re
import subprocess

import pytest
from mc_lossless_words import decoded, random_words

from asterism import api
from asterism.cli.main import main
from asterism.errors import AsterismError
from asterism.ir import parse_ir, print_ir
from asterism.ir.raising import RaiseError, raise_file
from asterism.isa import get_isa
from asterism.mc.assembler import assemble as assemble_mc
from asterism.mc.codeobject import read_code_object, write_code_object
from asterism.mc.codeobject.metadata import encode_metadata
from asterism.mc.encoder import encode_inst
from asterism.mc.exact import exact_inst, insts_of_words
from asterism.mc.inst import DATA, HIDDEN_BITS, data_inst
from asterism.mc.lossless import lossless_text
from asterism.mc.parser import parse_asm
from asterism.mc.program import McKernel, McModule
from asterism.mc.random_inst import random_inst

SAMPLES = ["aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co",
           "aiter_gfx942_fmha_fwd_hd128_bf16_rtz.co",
           "aiter_gfx950_bf16gemm_tn_32x64_bshuffle_splitk.co"]
# Instructions a straight-line random kernel cannot hold (they end or leave it).
CONTROL = {"branch", "call", "terminator", "ends_program", "return"}


def _round_trip(data: bytes) -> bytes:
    """raise -> IR text -> parse -> compile."""
    return api.compile(parse_ir(print_ir(raise_file(data)), "raised.mlir"))


def _same_code_object(original: bytes, again: bytes) -> None:
    a, b = read_code_object(original), read_code_object(again)
    assert b.text == a.text
    assert [k.name for k in b.kernels] == [k.name for k in a.kernels]
    for ka, kb in zip(a.kernels, b.kernels):
        assert kb.offset == ka.offset
        assert dataclasses.replace(kb.descriptor, kernel_code_entry_byte_offset=0) == \
            dataclasses.replace(ka.descriptor, kernel_code_entry_byte_offset=0)
    assert b.metadata == a.metadata
    assert encode_metadata(b.metadata) == encode_metadata(a.metadata)


@pytest.mark.parametrize("name", SAMPLES)
def test_shared_code_objects_round_trip(shared_data, name) -> None:
    """Every shared (AITER, hand-written) code object comes back byte for byte."""
    data = (shared_data / "codeobjects" / name).read_bytes()
    module = raise_file(data)
    text = print_ir(module)
    assert "amdgcn.branch" in text and "amdgcn.kernarg_ptr" in text
    _same_code_object(data, api.compile(parse_ir(text)))


def test_raised_listing_equals_llvm_objdump(shared_data, llvm_objdump, tmp_path) -> None:
    """LLVM reads the recompiled code object as the same instructions at the same addresses."""
    src = shared_data / "codeobjects" / SAMPLES[1]
    out = tmp_path / "again.co"
    out.write_bytes(_round_trip(src.read_bytes()))

    def words(path) -> list[str]:
        listing = subprocess.run([llvm_objdump, "-d", str(path)], capture_output=True,
                                 text=True, check=True).stdout
        # "address: words" of each instruction (a branch's target note names the label
        # symbol the original has and the recompiled one may not)
        return [line.split("//", 1)[1].split("<")[0].strip() for line in listing.splitlines()
                if "//" in line and ":" in line.split("//", 1)[1]]

    original = words(src)
    assert len(original) > 2000
    assert words(out) == original


def test_raised_kernel_attributes(shared_data) -> None:
    """The descriptor settings and metadata the IR does not imply are kernel attributes, the
    arguments come from the metadata and the dispatch inputs are ABI ops."""
    module = raise_file(shared_data / "codeobjects" / SAMPLES[0])
    text = print_ir(module)
    assert "workgroup_size(256, 1, 1) lds_size(65536)" in text
    assert "args(D: buffer, pad: i64, C: buffer" in text
    # AITER kernels allocate 512 registers and clear ieee_mode/dx10_clamp
    assert "next_free_vgpr = 512" in text and "ieee_mode = 0" in text
    assert '".kernarg_segment_align" = 4' in text
    assert "amdgcn.workgroup_id x" in text or "amdgcn.workgroup_id" in text


def test_one_kernel_and_target_check(shared_data) -> None:
    path = shared_data / "codeobjects" / SAMPLES[0]
    name = read_code_object(path.read_bytes()).kernels[0].name
    assert "amdgcn.kernel @" + name in print_ir(api.raise_kernel(str(path), name))
    with pytest.raises(AsterismError, match="no kernel 'nope'"):
        api.raise_kernel(str(path), "nope")
    with pytest.raises(AsterismError, match="is for gfx942, not gfx950"):
        api.raise_kernel(str(path), target="gfx950")


# ---------------------------------------------------------------------- random kernels

def _asm(target: str, kernels: list[list[str]]) -> str:
    """An assembly file: one kernel per line list, each line followed by a conditional branch
    over the next one (so every kernel has labels, blocks and a join)."""
    out = [f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"', ".text"]
    for k, lines in enumerate(kernels):
        out += [f".globl k{k}", ".p2align 8", f".type k{k},@function", f"k{k}:"]
        for i, line in enumerate(lines):
            out += [f"  {line}", f"  s_cbranch_scc1 .Lk{k}_{i}x", "  s_nop 1", f".Lk{k}_{i}x:"]
        out.append("  s_endpgm")
    return "\n".join(out) + "\n"


def _random_lines(target: str, count: int, seed: int) -> list[str]:
    """Lossless text of random instructions of random non-control forms."""
    rng = random.Random(f"{seed}-{target}")
    forms = [f for i in get_isa(target).instructions.values() if not CONTROL & set(i.flags)
             for f in i.forms]
    out = []
    while len(out) < count:
        form = rng.choice(forms)
        try:
            inst = random_inst(form, rng)
            inst.form = form
            encode_inst(inst)
        except AsterismError:
            continue
        out.append(lossless_text(inst))
    return out


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_random_instructions_round_trip_or_are_reported(target) -> None:
    """Each random instruction (its own kernel) comes back byte for byte, or the raiser names
    its address and reason; most come back; those that do, together in one many-kernel code
    object (alignment padding between kernels), come back too."""
    lines = _random_lines(target, 60, 1)
    good, reported = [], 0
    for line in lines:
        data = api.assemble(_asm(target, [[line]]))
        try:
            again = _round_trip(data)
        except RaiseError as err:
            assert "<input>: 0x" in err.message, err.message
            reported += 1
            continue
        _same_code_object(data, again)
        good.append(line)
    assert len(good) >= len(lines) // 2, (len(good), reported)
    data = api.assemble(_asm(target, [good[i:i + 3] for i in range(0, len(good), 3)]))
    assert len(read_code_object(data).kernels) > 5
    _same_code_object(data, _round_trip(data))


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_sampled_forms_all_round_trip(target) -> None:
    """Every sampled form (a random instance of it, one kernel each, all in one code
    object) comes back byte for byte through raise -> print -> parse -> compile: no form
    is refused. Instances whose words do not decode (data, not an instruction) are left
    out; they are counted to keep the sample honest."""
    rng = random.Random(f"forms-{target}")
    forms = [f for i in get_isa(target).instructions.values() if not CONTROL & set(i.flags)
             for f in i.forms]
    endpgm = parse_asm("s_endpgm", "<t>", target).kernels[0].body[0]
    kernels, undecodable = [], 0
    for form in rng.sample(forms, 250):
        try:
            inst = random_inst(form, rng)
            inst.form = form
            data = encode_inst(inst)
        except AsterismError:
            continue
        words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]
        if insts_of_words(words, target)[0].mnemonic == DATA:
            undecodable += 1
            continue
        kernels.append(McKernel(f"k{len(kernels)}", body=[data_inst(words), endpgm]))
    assert len(kernels) >= 200 and undecodable <= 5
    data = assemble_mc(McModule(target, kernels))
    _same_code_object(data, _round_trip(data))


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_words_with_hidden_bits_round_trip(target) -> None:
    """Words whose bits LLVM's text drops (random neighbours of valid encodings) keep them
    through the IR (the hidden_bits attribute)."""
    items = [d for d in decoded(random_words(target, 1, 2, 5), target)
             if not CONTROL & set(d.inst.form.instruction.flags)
             and (i := exact_inst(d)) is not None and HIDDEN_BITS in i.modifiers]
    rng = random.Random(9)
    sample = rng.sample(items, 40)
    kept = 0
    for d in sample:
        words = ", ".join(f"0x{int.from_bytes(d.raw[i:i + 4], 'little'):08x}"
                          for i in range(0, d.size, 4))
        try:
            data = api.assemble(_asm(target, [[f".long {words}"]]))
        except AsterismError:
            continue  # (the assembler's .long read-back refuses a few words: not raising's)
        try:
            module = raise_file(data)
        except RaiseError as err:
            assert "0x" in err.message
            continue
        assert "hidden_bits" in print_ir(module)
        _same_code_object(data, api.compile(parse_ir(print_ir(module))))
        kept += 1
    assert kept >= 10


def test_assembly_input_keeps_labels() -> None:
    """A .s file raises with its own label names; compiled it equals the assembled file."""
    text = _asm("gfx942", [["s_mov_b32 s4, 1", "v_mov_b32_e32 v1, s4"]])
    module = api.raise_kernel(text.encode(), None)
    assert "^.Lk0_0x" in print_ir(module)
    _same_code_object(api.assemble(text), api.compile(parse_ir(print_ir(module))))


@pytest.mark.llvm
def test_label_names_ending_in_digits_are_kept(llvm_objdump, tmp_path) -> None:
    """Labels such as `loop_12` and `.LBB0_3` keep their `_<digits>` (xDSL's name setter
    strips it) through raise -> print -> parse -> compile: the same file, same symbols."""
    text = _asm("gfx942", []) + "".join(
        [".globl k\n", ".p2align 8\n", ".type k,@function\n", "k:\n",
         "  s_cbranch_scc1 loop_12\n", "  s_nop 1\n", "loop_12:\n",
         "  s_cbranch_scc0 .LBB0_3\n", "  s_nop 0\n", ".LBB0_3:\n", "  s_endpgm\n"])
    ir = print_ir(api.raise_kernel(text.encode()))
    assert "^loop_12:" in ir and "^.LBB0_3:" in ir
    again = parse_ir(ir)
    assert "^loop_12:" in print_ir(again)
    paths = [tmp_path / "orig.co", tmp_path / "again.co"]
    paths[0].write_bytes(api.assemble(text))
    paths[1].write_bytes(api.compile(again))

    def symbols(path) -> list[str]:
        out = subprocess.run([llvm_objdump, "-t", str(path)], capture_output=True, text=True,
                             check=True).stdout
        return sorted(line.split()[-1] for line in out.splitlines() if " .text" in line)

    assert "loop_12" in symbols(paths[0])
    assert symbols(paths[1]) == symbols(paths[0])
    assert paths[1].read_bytes() == paths[0].read_bytes()


# ---------------------------------------------------------------------- errors

def _kernel_asm(*lines: str) -> bytes:
    return api.assemble(_asm("gfx942", []) + "".join(
        [".globl k\n", ".p2align 8\n", ".type k,@function\n", "k:\n",
         *(f"  {line}\n" for line in lines)]))


@pytest.mark.parametrize(("lines", "expected"), [
    (["s_mov_b32 s0, 1", "s_setpc_b64 s[0:1]"],
     r"0x4: s_setpc_b64 is an indirect branch \(its target is a register value\)"),
    (["s_swappc_b64 s[0:1], s[2:3]", "s_endpgm"], r"0x0: s_swappc_b64 is a call"),
    ([".long 0xffffffff", "s_endpgm"],
     r"0x0: the word 0xffffffff does not decode as an instruction \(data in .text"),
    (["s_branch 5", "s_endpgm"], r"0x0: s_branch jumps to 0x18, outside the kernel"),
    (["s_mov_b32 s4, 0x12345678", "s_branch -2", "s_endpgm"],
     r"0x8: s_branch jumps to 0x4, into the middle of an instruction"),
])
def test_inexpressible_code_is_reported_with_its_address(lines, expected) -> None:
    with pytest.raises(RaiseError, match=expected):
        raise_file(_kernel_asm(*lines))


def test_trap_registers_raise_as_ttmp_types() -> None:
    """Trap temporaries (ttmp*) are !amdgcn.ttmp values: raised, printed, parsed and compiled
    back to the same code, also with --relocatable (they stay where they are)."""
    data = _kernel_asm("s_mov_b32 ttmp0, 1", "s_add_u32 ttmp2, ttmp1, s4",
                       "s_load_dwordx4 ttmp[4:7], ttmp[8:9], 0x0",
                       "s_add_u32 s6, ttmp2, s4", "v_mov_b32 v1, ttmp5",
                       "s_endpgm")
    text = print_ir(raise_file(data))
    assert "!amdgcn.ttmp<0>" in text and "!amdgcn.ttmp<[4:8]>" in text
    _same_code_object(data, api.compile(parse_ir(text)))
    text = print_ir(api.raise_kernel(data, relocatable=True))
    assert "!amdgcn.ttmp<2>" in text and "!amdgcn.sgpr<6>" not in text
    listing = api.translate(parse_ir(text), "auto")
    for reg in ("ttmp0", "ttmp2", "ttmp1", "ttmp[4:7]", "ttmp[8:9]", "ttmp5"):
        assert reg in listing


@pytest.mark.parametrize("line", [
    "v_add_u32_e64 v1, src_shared_base, v2",  # a 64-bit aperture read as a 32-bit constant
    "s_add_u32 s1, src_private_limit, s2",
    "v_cmp_eq_f32_sdwa s[4:5], v1, v2 src0_sel:WORD_1 src1_sel:DWORD",  # sd: any SGPR pair
    "v_cmpx_lt_u16_sdwa exec, v1, v2 src0_sel:BYTE_0 src1_sel:WORD_1",
    "v_cmp_gt_i32_sdwa ttmp[2:3], v1, s3 src0_sel:WORD_0 src1_sel:DWORD",
    "v_fma_mix_f32 v0, -v1, |v2|, v3 op_sel_hi:[1,0,1]",  # mix: per-source neg/abs
    "v_fma_mixlo_f16 v0, |v1|, -v2, -|v3|",
])
@pytest.mark.llvm
def test_valid_instructions_the_ir_refused_round_trip(llvm_mc, line) -> None:
    """Instructions LLVM's assembler takes that the IR's rules refused: apertures as 32-bit
    sources, SDWA compares writing an SGPR pair other than vcc."""
    subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-o", "/dev/null"],
                   input=line, text=True, check=True)
    data = _kernel_asm(line, "s_endpgm")
    _same_code_object(data, _round_trip(data))


@pytest.mark.llvm
@pytest.mark.parametrize(("words", "text", "rule"), [
    ("0xd2800000, 0x00000400", "v_add_f64 v[0:1], s[0:1], s[2:3]", "constant-bus"),
    ("0xc0220144, 0x001ffffc", "s_buffer_load_dword s5, s[8:11], -0x4", "20-bit unsigned"),
])
def test_decode_only_instructions_are_kept_as_decoded(llvm_mc, words, text, rule) -> None:
    """Words LLVM decodes but its assembler refuses (constant-bus overuse, an offset out of
    the assembler's range) raise as ops marked decode_only with the rule they break, and
    compile back to the same words; without the mark the IR refuses them with that rule."""
    listing = subprocess.run([llvm_mc, "-disassemble", "-triple=amdgcn-amd-amdhsa",
                              "-mcpu=gfx942"], input=_bytes_text(words), text=True,
                             capture_output=True, check=True).stdout
    assert text in listing
    refused = subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942",
                              "-o", "/dev/null"], input=text, text=True, capture_output=True)
    assert refused.returncode != 0
    data = _kernel_asm(f".long {words}", "s_endpgm")
    ir = print_ir(raise_file(data))
    marked = [line for line in ir.splitlines() if "decode_only" in line]
    assert len(marked) == 1 and rule in marked[0], marked
    _same_code_object(data, api.compile(parse_ir(ir)))
    unmarked = re.sub(r'\{decode_only = "[^"]*"\}', "", ir)
    with pytest.raises(AsterismError, match=rule):
        api.compile(parse_ir(unmarked))


def _bytes_text(words: str) -> str:
    """`0x..., 0x...` words as the byte list llvm-mc -disassemble reads."""
    out = [b for w in words.split(", ") for b in int(w, 16).to_bytes(4, "little")]
    return ",".join(f"0x{b:02x}" for b in out)


@pytest.mark.parametrize(("text", "expected"), [
    ("!amdgcn.ttmp", "trap registers are always fixed"),
    ("!amdgcn.ttmp<[? + 2]>", "trap registers are always fixed"),
    ("!amdgcn.ttmp<16>", r"ttmp16 is past the last TTMP \(ttmp15\)"),
])
def test_bad_trap_register_types(text, expected) -> None:
    src = (f'amdgcn.module @m target = "gfx942" {{\n amdgcn.kernel @k {{\n'
           f'  %t = amdgcn.alloca : {text}\n  amdgcn.sop1 s_mov_b32 %t, %t : ({text}, {text})'
           f' -> {text}\n  amdgcn.sopp s_endpgm\n }}\n}}\n')
    with pytest.raises(AsterismError, match=expected):
        api.compile(parse_ir(src))


def test_bytes_before_the_first_kernel() -> None:
    obj = read_code_object(_kernel_asm("s_endpgm"))
    obj.text = bytes(256) + obj.text
    for k in obj.kernels:
        k.offset += 256
    with pytest.raises(RaiseError, match=r"0x0: .text has 256 bytes before its first kernel"):
        raise_file(write_code_object(obj))


def test_cli_raise_and_compile(shared_data, tmp_path, capsys) -> None:
    src = shared_data / "codeobjects" / SAMPLES[2]
    out, co = tmp_path / "k.mlir", tmp_path / "k.co"
    assert main(["raise", str(src), "-o", str(out)]) == 0
    assert main(["compile", str(out), "-o", str(co)]) == 0
    _same_code_object(src.read_bytes(), co.read_bytes())
    bad = tmp_path / "bad.co"
    bad.write_bytes(_kernel_asm("s_setpc_b64 s[0:1]"))
    target = tmp_path / "bad.mlir"
    assert main(["raise", str(bad), "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "0x0: s_setpc_b64 is an indirect branch" in err
    assert "Traceback" not in err and not target.exists()
