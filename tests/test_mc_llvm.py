"""Live differential tests against LLVM 22 (skip without it; CI has it).

Fresh random instructions of every database form are encoded by llvm-mc and by asterism
(bit-identical), and their bytes are decoded by llvm-objdump and by asterism (same text).
The default run uses one instance per form; `-m sweep` runs more (CI bounds it with
ASTERISM_SWEEP_PER_FORM).
"""

from __future__ import annotations

import os

import pytest
from mc_differential import TARGETS, family_of, our_encoding, our_text, random_lines, summarize

from asterism.mc.llvm_oracle import llvm_disassemble, llvm_encode

pytestmark = pytest.mark.llvm


def _differential(target: str, per_form: int, seed: int) -> tuple[dict, dict, list, list]:
    lines = random_lines(target, per_form, seed)
    llvm = llvm_encode(lines, target)
    accepted = [(line, data) for line, data in zip(lines, llvm) if isinstance(data, bytes)]
    enc_results, enc_bad = [], []
    for line, data in accepted:
        ours = our_encoding(line, target)
        good = ours == data
        enc_results.append((family_of(line, target), good))
        if not good:
            enc_bad.append((line, data.hex(), ours))
    texts = llvm_disassemble([d for _l, d in accepted], target)
    dec_results, dec_bad = [], []
    for (_line, data), text in zip(accepted, texts):
        ours = our_text(data, target)
        good = ours == text
        dec_results.append((family_of(data, target), good))
        if not good:
            dec_bad.append((data.hex(), text, ours))
    return summarize(enc_results), summarize(dec_results), enc_bad, dec_bad


@pytest.mark.parametrize("target", TARGETS)
def test_random_instructions_match_llvm(llvm_mc, llvm_objdump, target):
    enc, dec, enc_bad, dec_bad = _differential(target, per_form=1, seed=20261123)
    assert sum(t for _ok, t in enc.values()) > 1500
    assert not enc_bad, f"encoding mismatches: {enc_bad[:5]}"
    assert not dec_bad, f"decoding mismatches: {dec_bad[:5]}"


@pytest.mark.sweep
@pytest.mark.parametrize("target", TARGETS)
def test_random_instruction_sweep(llvm_mc, llvm_objdump, target, tmp_path):
    per_form = int(os.environ.get("ASTERISM_SWEEP_PER_FORM", "8"))
    enc, dec, enc_bad, dec_bad = _differential(target, per_form=per_form, seed=7)
    assert not enc_bad, f"encoding mismatches: {enc_bad[:5]}"
    assert not dec_bad, f"decoding mismatches: {dec_bad[:5]}"
    _listing_equals_llvm_objdump(random_lines(target, per_form, seed=7), target, tmp_path,
                                 llvm_objdump)


@pytest.mark.parametrize("target", TARGETS)
def test_database_examples_reassemble_identically(llvm_mc, target):
    """A broad re-check of the ISA database against llvm-mc: every form's example encodes
    to LLVM's bytes through asterism."""
    from asterism.isa import get_isa

    lines = sorted({f.example for i in get_isa(target).instructions.values() for f in i.forms})
    llvm = llvm_encode(lines, target)
    rejected = [line for line, data in zip(lines, llvm) if not isinstance(data, bytes)]
    assert not rejected, f"LLVM rejects database examples: {rejected[:5]}"
    bad = [(line, data.hex()) for line, data in zip(lines, llvm)
           if our_encoding(line, target) != data]
    assert not bad, bad[:5]


def _kernel_source(lines: list[str], target: str) -> str:
    return "\n".join([
        f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"', ".text", ".globl k", ".p2align 8",
        ".type k,@function", "k:", *lines, "s_endpgm", ".rodata", ".p2align 6",
        ".amdhsa_kernel k", "  .amdhsa_next_free_vgpr 256", "  .amdhsa_next_free_sgpr 96",
        "  .amdhsa_accum_offset 256", ".end_amdhsa_kernel", ""])


def _listing_equals_llvm_objdump(lines: list[str], target: str, tmp_path,
                                 llvm_objdump: str) -> None:
    """A kernel of the lines LLVM accepts, assembled by asterism: `asterism disasm` prints
    what llvm-objdump -d prints, byte for byte."""
    import subprocess

    from asterism import api

    accepted = [line for line, data in zip(lines, llvm_encode(lines, target))
                if isinstance(data, bytes)]
    path = tmp_path / "k.co"
    path.write_bytes(api.assemble(_kernel_source(accepted, target), None, "k.s"))
    theirs = subprocess.run([llvm_objdump, "-d", str(path)], capture_output=True, text=True,
                            check=True).stdout
    ours = api.disassembly_listing(path)
    assert len(ours.splitlines()) > len(accepted)
    assert ours == theirs


@pytest.mark.parametrize("target", TARGETS)
def test_disasm_listing_equals_llvm_objdump(llvm_mc, llvm_objdump, target, tmp_path):
    """A random instance of every form the target has (branches included)."""
    _listing_equals_llvm_objdump(random_lines(target, 1, seed=11), target, tmp_path,
                                 llvm_objdump)


def test_disasm_listing_of_shared_samples_equals_llvm_objdump(llvm_objdump, shared_data):
    import subprocess

    from asterism import api

    paths = sorted((shared_data / "codeobjects").glob("*.co"))
    assert paths
    for path in paths:
        theirs = subprocess.run([llvm_objdump, "-d", str(path)], capture_output=True,
                                text=True, check=True).stdout
        assert api.disassembly_listing(path) == theirs, path.name


def test_disasm_of_several_files_equals_llvm_objdump(llvm_objdump, shared_data, capsys):
    """`asterism disasm A B C` prints what `llvm-objdump -d A B C` prints; --json takes one."""
    import subprocess

    from asterism.cli import main

    paths = [str(p) for p in sorted((shared_data / "codeobjects").glob("*.co"))]
    # llvm-objdump-22 given several files decodes them all for the first file's processor
    # (a gfx942 first file turns gfx950's `buffer_load_dwordx4 ... lds` into `.long`), so the
    # reference is its output file by file, which is the same text when the targets agree.
    theirs = "".join(subprocess.run([llvm_objdump, "-d", p], capture_output=True, text=True,
                                    check=True).stdout for p in paths)
    assert main(["disasm", *paths]) == 0
    assert capsys.readouterr().out == theirs
    assert main(["disasm", "--json", *paths]) == 1
    assert "take one code object" in capsys.readouterr().err


def test_disasm_listing_of_shared_addresses_equals_llvm_objdump(llvm_mc, ld_lld, llvm_objdump,
                                                                tmp_path):
    """Symbols sharing an address (kernel and labels): the header shows the last by name,
    a branch there names the first label, other targets annotate by the nearest symbol of
    the section they fall in (.rodata's k.kd below .text), as llvm-objdump does."""
    import subprocess

    from asterism import api

    body = ["start:", "aaa:", "s_nop 0", "s_branch start", "mid:", "s_branch 65533",
            "s_branch 65500", "s_branch 300"]
    (tmp_path / "k.s").write_text(_kernel_source(body, "gfx942"))
    subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                    str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")], check=True)
    subprocess.run([ld_lld, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.co")],
                   check=True)
    for path in (tmp_path / "k.co", tmp_path / "ours.co"):
        if path.name == "ours.co":
            path.write_bytes(api.assemble((tmp_path / "k.s").read_text(), None, "k.s"))
        theirs = subprocess.run([llvm_objdump, "-d", str(path)], capture_output=True,
                                text=True, check=True).stdout
        assert "<start>:" in theirs and "s_branch aaa" in theirs and "<k.kd+0x" in theirs
        assert api.disassembly_listing(path) == theirs, path.name


@pytest.mark.parametrize("target", TARGETS)
def test_sdwa_compare_destinations_encode_as_llvm(llvm_mc, target):
    """Every destination LLVM takes for an SDWA compare (vcc or any aligned SGPR pair, TTMP
    pair or named pair) encodes to llvm-mc's bytes; those it refuses are refused."""
    dsts = ["vcc", "s[16:17]", "s[100:101]", "exec", "ttmp[0:1]", "ttmp[14:15]",
            "flat_scratch", "xnack_mask", "s[101:102]", "s5", "v[0:1]"]
    lines = [f"{m} {d}, v0, {s1} src0_sel:{sel} src1_sel:WORD_0"
             for d in dsts for m, s1, sel in (("v_cmp_le_i32_sdwa", "v11", "DWORD"),
                                              ("v_cmpx_class_f32_sdwa", "s3", "BYTE_1"))]
    llvm = llvm_encode(lines, target)
    assert sum(isinstance(d, bytes) for d in llvm) == 16
    for line, data in zip(lines, llvm):
        ours = our_encoding(line, target)
        assert ours == data if isinstance(data, bytes) else not isinstance(ours, bytes), line


@pytest.mark.parametrize("target", TARGETS)
def test_every_operand_alternative_matches_llvm(llvm_mc, llvm_objdump, target):
    """A sample of instructions forcing each operand alternative (TTMPs, named and constant
    registers, inline floats, an SDWA compare's SGPR pair...) encode and decode as LLVM's."""
    from mc_differential import forced_alternative_lines

    by_alt = forced_alternative_lines(target, per_class=150, seed=3)
    for alt, lines in by_alt.items():
        llvm = llvm_encode(lines, target)
        accepted = [(line, data) for line, data in zip(lines, llvm) if isinstance(data, bytes)]
        assert accepted, f"LLVM accepts no {alt} operand: {lines[:3]}"
        bad = [(line, data.hex(), our_encoding(line, target)) for line, data in accepted
               if our_encoding(line, target) != data]
        assert not bad, f"{alt}: encoding mismatches {bad[:5]}"
        texts = llvm_disassemble([d for _l, d in accepted], target)
        bad = [(d.hex(), t, our_text(d, target)) for (_l, d), t in zip(accepted, texts)
               if our_text(d, target) != t]
        assert not bad, f"{alt}: decoding mismatches {bad[:5]}"


# Instructions with a 32-bit literal operand (first dword, then the literal), 64-bit and 32-bit.
LITERAL_HEADS = {"s_mov_b64": 0xBE8201FF, "s_and_b64": 0x8682FF04, "s_cmp_eq_u64": 0xBF12FF00,
                 "v_mov_b64": 0x7E0070FF, "v_fract_f64": 0x7E0064FF, "v_cmp_eq_f64": 0x7CC400FF,
                 "v_cmp_eq_u64": 0x7DD400FF, "s_mov_b32": 0xBE8200FF, "v_add_f32": 0x020002FF}
LITERAL_VALUES = [0, 1, 64, 65, 0xFFFFFFFF, 0xFFFFFFF0, 0xFFFFFFEF, 0x80000000, 0x12345678,
                  0x3FF00000, 0xBFF00000, 0x3FE00000, 0x40100000, 0xC0100000, 0x3FC45F30,
                  0x3F800000, 0x3E22F983, 0x40000000, 0xC0000000]


@pytest.mark.parametrize("target", TARGETS)
def test_literal_text_matches_llvm_objdump(llvm_mc, llvm_objdump, target, tmp_path):
    """A literal of a 64-bit operand reads as a 64-bit value (0xffffffff, not lit(0xffffffff);
    an f64 high word equal to an inline constant prints as it), in the printer and in the
    listing's fast path, as llvm-objdump prints it."""
    blobs = [head.to_bytes(4, "little") + v.to_bytes(4, "little")
             for head in LITERAL_HEADS.values() for v in LITERAL_VALUES]
    theirs = llvm_disassemble(blobs, target)
    bad = [(b.hex(), t, our_text(b, target)) for b, t in zip(blobs, theirs)
           if our_text(b, target) != t]
    assert not bad, bad[:5]
    assert "s_mov_b64 s[2:3], 0xffffffff" in theirs
    # The listing (its fast path) of the same words, each written as lit(bits).
    lines = [f"{name} {ops.format(f'lit(0x{v:x})')}" for name, ops in (
        ("s_mov_b64", "s[2:3], {}"), ("s_and_b64", "s[2:3], s[4:5], {}"),
        ("s_cmp_eq_u64", "s[0:1], {}"), ("v_mov_b64", "v[0:1], {}"),
        ("v_fract_f64", "v[0:1], {}"), ("v_cmp_eq_f64", "vcc, {}, v[0:1]"),
        ("v_cmp_eq_u64", "vcc, {}, v[0:1]"), ("s_mov_b32", "s2, {}"),
        ("v_add_f32", "v0, {}, v1")) for v in LITERAL_VALUES]
    assert [our_encoding(line, target) for line in lines] == blobs
    _listing_equals_llvm_objdump(lines, target, tmp_path, llvm_objdump)


LIT_LINES = """\
s_mov_b64 s[2:3], lit(0xffffffff)
s_mov_b64 s[2:3], lit(-1)
s_mov_b64 s[2:3], lit(1)
s_mov_b64 s[0:1], lit(-2)
s_mov_b64 s[2:3], lit64(0xffffffff)
s_mov_b64 s[0:1], lit64(1)
s_and_b64 s[2:3], s[4:5], lit(0xffffffff)
s_cmp_eq_u64 s[0:1], lit(0xffffffff)
s_mov_b32 s2, lit(0xffffffff)
s_mov_b32 s0, lit(1.0)
s_mov_b32 s0, lit64(1)
s_mov_b32 s0, lit64(1.0)
s_add_u32 s0, lit(1), s1
s_add_u32 s0, lit(2), 2
s_add_u32 s0, lit(2), lit(2)
s_movk_i32 s0, lit(1)
v_mov_b32 v0, lit(1)
v_mov_b32 v0, lit64(1)
v_add_f32 v0, lit(1.0), v1
v_add_f32 v0, lit( 1 ), v1
v_add_f32 v0, lit(0.5), v1
v_add_f16 v0, lit(1.0), v1
v_add_f16 v0, lit(0x3c00), v1
v_add_u16 v0, lit(1), v1
v_add_u16 v0, lit(1.0), v1
v_cvt_f32_f16 v0, lit(1.0)
v_mov_b64 v[0:1], lit(0xffffffff)
v_fract_f64 v[0:1], lit(1.0)
v_fract_f64 v[0:1], lit(1.5)
v_fract_f64 v[0:1], lit(0x3ff00000)
v_fract_f64 v[0:1], lit(-1)
v_cmp_eq_f64 vcc, lit(1.0), v[0:1]
v_cmp_eq_u64 vcc, lit64(1), v[0:1]
v_fmamk_f32 v0, v1, lit(0x3f800000), v2
v_fract_f64 v[0:1], lit64(0x3ff00000)
v_fract_f64 v[0:1], lit64(1.0)
v_add_f32 v0, lit64(1.0), v1
v_add_f16 v0, lit64(1), v1
v_fract_f64 v[0:1], lit(0x123456789)
s_mov_b64 s[0:1], lit(1.0)
s_mov_b64 s[0:1], 1.5
v_add_f32 v0, lit(s0), v1
v_add_f32 v0, -lit(1.0), v1
v_add_f32 v0, LIT(1), v1
v_mov_b32_sdwa v0, lit(1) dst_sel:DWORD
v_mov_b32_dpp v0, lit(1) quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf
""".splitlines()


@pytest.mark.parametrize("target", TARGETS)
def test_lit_operands_assemble_as_llvm_mc(llvm_mc, target):
    """lit(...) and lit64(...) are accepted where llvm-mc accepts them, with its bytes, and
    refused where it refuses them."""
    llvm = llvm_encode(LIT_LINES, target)
    assert sum(isinstance(d, bytes) for d in llvm) == 34
    for line, data in zip(LIT_LINES, llvm):
        ours = our_encoding(line, target)
        assert ours == data if isinstance(data, bytes) else not isinstance(ours, bytes), line


@pytest.mark.parametrize("line", ["v_add_f32_e64 v0, lit(1.0), v1", "v_fma_f32 v0, lit(1), v1, v2",
                                  "s_add_u32 s0, lit(2), lit(3)"])
def test_lit_where_llvm_mc_drops_the_literal_is_refused(llvm_mc, line):
    """llvm-mc 22 takes these but its bytes lose the value (a gfx9 VOP3 has no literal: it
    writes the literal code without the literal dword; two different literals become one);
    asterism refuses them rather than encode another instruction."""
    data = llvm_encode([line], "gfx942")[0]
    assert isinstance(data, bytes) and (len(data) == 8 and data[4] == 0xFF
                                        or data[4:] == (2).to_bytes(4, "little"))
    assert not isinstance(our_encoding(line, "gfx942"), bytes)


def test_disasm_listing_names_text_before_the_first_symbol(llvm_mc, ld_lld, llvm_objdump,
                                                          tmp_path):
    """Padding words at the start of .text that no symbol covers (a real gfx942 kernel has
    .text at 0x1800, its symbol at 0x1c00): llvm-objdump heads them `<.text>:`."""
    import subprocess

    from asterism import api

    source = _kernel_source(["s_endpgm"], "gfx942").replace(
        ".text\n", ".text\ns_nop 0\ns_nop 1\n.p2align 8\n", 1)
    (tmp_path / "k.s").write_text(source)
    subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                    str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")], check=True)
    subprocess.run([ld_lld, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.co")],
                   check=True)
    # (asterism's own assembler takes no instructions before the first kernel label)
    path = tmp_path / "k.co"
    theirs = subprocess.run([llvm_objdump, "-d", str(path)], capture_output=True, text=True,
                            check=True).stdout
    assert " <.text>:\n\ts_nop 0 " in theirs and " <k>:\n" in theirs
    assert api.disassembly_listing(path) == theirs


BUFFER_ADDRESS_LINES = [
    "buffer_load_dword v1, off, s[4:7], 0", "buffer_load_dword v1, off, s[4:7], 0 offen",
    "buffer_load_dword v1, v2, s[4:7], 0", "buffer_load_dword v1, v2, s[4:7], 0 offen",
    "buffer_load_dword v1, v2, s[4:7], s3 idxen offset:12",
    "buffer_load_dword v1, v[2:3], s[4:7], 0 idxen offen",
    "buffer_store_dword v1, off, s[4:7], s2 offset:8", "buffer_load_dword off, s[4:7], 0 lds",
    "buffer_load_dword v2, s[4:7], 0 offen lds", "buffer_atomic_add v1, off, s[4:7], 0 sc0",
    "buffer_load_dword v1, off, s[4:7], 0 idxen",
    "tbuffer_load_format_x v1, off, s[4:7], 0 format:[BUF_DATA_FORMAT_32,BUF_NUM_FORMAT_FLOAT]",
    "buffer_load_dwordx4 v[4:7], off, s[8:11], s2 offset:4095 sc0 sc1 nt"]


@pytest.mark.parametrize("target", TARGETS)
def test_buffer_address_off_as_llvm_mc(llvm_mc, target):
    """A buffer address is `off` exactly when neither offen nor idxen is set: llvm-mc's bytes
    where it accepts, refused where it refuses (a VGPR without offen/idxen was encoded and
    ignored by the hardware; `off` was refused although every such word disassembles to it)."""
    llvm = llvm_encode(BUFFER_ADDRESS_LINES, target)
    assert sum(isinstance(d, bytes) for d in llvm) == 10
    for line, data in zip(BUFFER_ADDRESS_LINES, llvm):
        ours = our_encoding(line, target)
        assert ours == data if isinstance(data, bytes) else not isinstance(ours, bytes), line


FLOAT_ZERO_LINES = [
    "v_cmp_gt_f32_e64 s[0:1], v1, 0.0", "v_cmp_gt_f32_e64 s[0:1], 0.0, v1",
    "v_cmp_gt_f64_e64 s[0:1], v[2:3], 0.0", "v_cmp_gt_f16_e64 s[0:1], v1, 0.0",
    "v_cmp_lt_i32_e64 s[0:1], v1, 0.0", "v_cmp_gt_f32_e32 vcc, 0.0, v1",
    "v_add_f32 v0, 0.0, v1", "v_add_f32_e64 v0, v1, 0.0", "v_fma_f32 v0, v1, 0.0, v2",
    "v_mov_b32 v0, 0.0", "s_mov_b32 s0, 0.0", "s_mov_b64 s[0:1], 0.0", "v_pk_fma_f16 v0, v1, 0.0, v2",
    "v_cndmask_b32_e64 v0, v1, 0.0, s[0:1]", "v_add_f64 v[0:1], v[2:3], 0.0",
    "v_mov_b32 v0, -0.0", "v_mov_b32 v0, lit(0.0)", "v_cmp_gt_f32_e64 s[0:1], v1, -0.0"]


@pytest.mark.parametrize("target", TARGETS)
def test_float_zero_is_the_inline_constant_0(llvm_mc, target):
    """A float 0.0 is the inline constant 0 (code 128), as llvm-mc encodes it: it was refused
    as a VOP3 source (`v_cmp_gt_f32_e64 s[0:1], v1, 0.0`) and became a literal elsewhere;
    -0.0 stays a literal (refused in a gfx9 VOP3). Both orders: 0.0 and -0.0 are equal
    Python keys, and the encoder's memory of source codes must not give one the other's."""
    llvm = llvm_encode(FLOAT_ZERO_LINES, target)
    assert sum(isinstance(d, bytes) for d in llvm) == len(FLOAT_ZERO_LINES) - 1
    pairs = list(zip(FLOAT_ZERO_LINES, llvm))
    for line, data in pairs + pairs[::-1]:
        ours = our_encoding(line, target)
        assert ours == data if isinstance(data, bytes) else not isinstance(ours, bytes), line
