"""Values in IR and assembly text that would size an allocation or a loop are bounded before
anything is allocated, with a located error: integer literals and integer type widths in IR
text, dense constants and vector values of upstream input, relocatable register widths,
register numbers in assembly."""

from __future__ import annotations

from pathlib import Path

import pytest

from asterism import api
from asterism.errors import ParseError, VerifyError

REPO = Path(__file__).resolve().parent.parent
DEMO = (REPO / "examples" / "demo" / "add_10.mlir").read_text()
GEMM = (REPO / "tests" / "upstream" / "gemm.mlir").read_text()
BIG = "9" * 5000  # past Python's 4300-digit int() limit: a ValueError before


def demo_with(old: str, new: str) -> str:
    assert old in DEMO
    return DEMO.replace(old, new, 1)


@pytest.mark.parametrize("old, new, line, words", [
    ("%c6 = arith.constant 6 : i32", f"%c6 = arith.constant {BIG} : i32", 12,
     "integer literal of 5000 characters is longer than the 128 asterism IR reads"),
    ("workgroup_size(64, 1, 1)", f"workgroup_size({BIG}, 1, 1)", 3, "integer literal of 5000"),
    ("!amdgcn.vgpr<2>", f"!amdgcn.vgpr<{BIG}>", 9, "integer literal of 5000"),
    ("lgkmcnt = 0", f"lgkmcnt = 0x{BIG}", 27, "integer literal of 5002"),
    ("%c6 = arith.constant 6 : i32", "%c6 = arith.constant 6 : i2000000000", 12,
     "integer type i2000000000 is wider than 16777215 bits"),   # was 1 GB, 3 s
    ("%c6 = arith.constant 6 : i32", f"%c6 = arith.constant 6 : i{BIG}", 12,
     "is wider than 16777215 bits"),
])
def test_ir_numbers_past_the_bounds(old, new, line, words):
    with pytest.raises(ParseError) as info:
        api.parse(demo_with(old, new), "k.mlir")
    assert words in info.value.message
    assert (info.value.location.file, info.value.location.line) == ("k.mlir", line)
    assert len(info.value.message) < 200


def test_relocatable_register_wider_than_the_file():
    text = demo_with("%v2 = amdgcn.alloca : !amdgcn.vgpr<2>",
                     "%v2 = amdgcn.alloca : !amdgcn.vgpr<2>\n"
                     "    %w = amdgcn.alloca : !amdgcn.vgpr<[? + 2000000000]>")
    with pytest.raises(VerifyError) as info:
        api.parse(text, "k.mlir")
    assert info.value.message == ("amdgcn.alloca: !amdgcn.vgpr<[? + 2000000000]> is "
                                  "2000000000 registers wide: more than the 256 VGPRs of gfx942")
    assert info.value.location.line == 10


def test_dense_constants_are_bounded_before_expanding():
    text = GEMM.replace("dense<0.0> : vector<4xf32>", "dense<0.0> : vector<100000000xf32>", 1)
    assert text != GEMM
    with pytest.raises(ParseError) as info:  # was 3.7 GB, then a MemoryError
        api.parse(text, "g.mlir")
    assert "a dense constant of 100000000 elements: asterism takes at most 65536" \
        in info.value.message
    assert info.value.location.file == "g.mlir"


def test_vector_values_larger_than_the_registers():
    decl = "      %zero = arith.constant dense<0.0> : vector<4xf32>\n"
    big = ("      %f0 = arith.constant 0.0 : f32\n"
           "      %big = vector.broadcast %f0 : f32 to vector<10000000xf32>\n")
    assert decl in GEMM
    with pytest.raises(VerifyError) as info:  # was 17 s and 435 MB of lowering
        api.parse(GEMM.replace(decl, decl + big, 1), "g.mlir")
    assert info.value.message == ("vector.broadcast: a vector<10000000xf32> value holds "
                                  "320000000 bits: more than the 16384 bits of a work-item's "
                                  "vector registers")
    api.parse(GEMM.replace(decl, decl + big.replace("10000000", "512"), 1))  # 16384 bits: fine


@pytest.mark.parametrize("operand", [f"v[0:{BIG}]", f"v{BIG}", f"s[{BIG}:1]"])
def test_register_numbers_in_assembly(operand):
    text = f'.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.text\nv_mov_b32 v0, {operand}\n'
    with pytest.raises(ParseError) as info:  # was int()'s ValueError
        api.assemble(text, filename="k.s")
    assert info.value.message.startswith("bad register 'v") or "bad register 's" in \
        info.value.message
    assert "characters)" in info.value.message
    assert (info.value.location.line, info.value.location.col) == (3, 1)


def test_metadata_integers_are_bounded():
    # (found by test_fuzz_ir_values: the metadata reader's int() raised ValueError)
    asm = api.translate(DEMO)
    bad = asm.replace(".size:          8", f".size:          {BIG}", 1)
    assert bad != asm
    with pytest.raises(ParseError) as info:
        api.assemble(bad, filename="k.s")
    assert "integer literal of 5000 digits (at most 1000)" in info.value.message
    line = bad[:bad.index(BIG)].count("\n") + 1
    assert (info.value.location.file, info.value.location.line) == ("k.s", line)


@pytest.mark.parametrize("line, words", [
    ("v_mov_b32 v1, 999999999999999999999999999999999999999.0",
     "v_mov_b32: float constant 1e+39 is out of range for f32"),
    ("v_add_f16 v1, 70000.0, v1", "v_add_f16: float constant 70000 is out of range for f16"),
])
def test_float_constants_past_their_type(line, words):
    # (found by test_fuzz_ir_values: struct's OverflowError escaped the encoder; llvm-mc-22
    # says "invalid operand for instruction" for both)
    from asterism.errors import EncodeError

    text = f'.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.text\n{line}\n'
    with pytest.raises(EncodeError) as info:
        api.assemble(text, filename="k.s")
    assert info.value.message == words
    assert (info.value.location.line, info.value.location.col) == (3, 1)


@pytest.mark.parametrize("key, value, words", [
    (".amdhsa_next_free_vgpr", "4294967296", "next_free_vgpr = 4294967296 exceeds the limit"),
    (".amdhsa_group_segment_fixed_size", "9223372036854775807",
     "group_segment_fixed_size = 9223372036854775807 is not a u32"),
    (".amdhsa_user_sgpr_count", "-1", "user_sgpr_count = -1 does not fit in 5 bits"),
])
def test_amdhsa_values_past_their_fields_are_located(key, value, words):
    import re

    asm = api.translate(DEMO)
    bad = re.sub(rf"({re.escape(key)}) \S+", rf"\1 {value}", asm, count=1)
    assert bad != asm
    with pytest.raises(VerifyError) as info:
        api.assemble(bad, filename="k.s")
    assert words in info.value.message
    block = asm[:asm.index(".amdhsa_kernel")].count("\n") + 1  # (was: no location)
    assert (info.value.location.file, info.value.location.line) == ("k.s", block)
