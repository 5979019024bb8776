"""Sub-register views in the IR and the builder: `amdgcn.split_register_range` (a range's
registers as separate values) and `amdgcn.make_register_range` (consecutive values as one
range). Text round trip (custom and generic syntax, through `asterism opt` too), every
verification error with its location, lowering (no instruction; relocatable pieces keep the
regalloc error), and `kb.split` / `kb.sub` / `kb.join`."""

from __future__ import annotations

import re

import pytest

from asterism.builder import KernelBuilder
from asterism.cli import main
from asterism.errors import VerifyError
from asterism.ir import lower_module, parse_ir, print_ir
from asterism.ir.ops import MakeRegisterRangeOp, SplitRegisterRangeOp
from asterism.ir.types import SGPRType, VGPRType
from asterism.mc.printer import format_inst

HEADER = 'amdgcn.module @m target = "gfx942" {\n  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {\n'
FOOTER = "    amdgcn.sopp s_endpgm\n  }\n}\n"
DECLS = """\
    %acc = amdgcn.alloca : !amdgcn.vgpr<[? + 4], align 4>
    %v = amdgcn.alloca : !amdgcn.vgpr
    %w = amdgcn.alloca : !amdgcn.vgpr
    %s = amdgcn.alloca : !amdgcn.sgpr
    %a = amdgcn.alloca : !amdgcn.agpr<[? + 2]>
    %f = amdgcn.alloca : !amdgcn.vgpr<[4:8]>
    %f4 = amdgcn.alloca : !amdgcn.vgpr<4>
    %f5 = amdgcn.alloca : !amdgcn.vgpr<5>
    %f6 = amdgcn.alloca : !amdgcn.vgpr<6>
    %sp = amdgcn.alloca : !amdgcn.sgpr<[10:12]>
"""
DECL_LINES = DECLS.count("\n")


def kernel(body: str) -> str:
    return HEADER + DECLS + body + FOOTER


ROUND_TRIP = """\
    %c0, %c1, %c2, %c3 = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4>
    %lo, %hi = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4> -> !amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr<[? + 2], align 2>
    %f0, %f1, %f2, %f3 = amdgcn.split_register_range %f : !amdgcn.vgpr<[4:8]>
    %fm, %fr = amdgcn.split_register_range %f : !amdgcn.vgpr<[4:8]> -> !amdgcn.vgpr<4>, !amdgcn.vgpr<[5:8]>
    %a0, %a1 = amdgcn.split_register_range %a : !amdgcn.agpr<[? + 2]>
    %s0, %s1 = amdgcn.split_register_range %sp : !amdgcn.sgpr<[10:12]>
    %r = amdgcn.make_register_range %c1, %c0 : !amdgcn.vgpr, !amdgcn.vgpr
    %r2 = amdgcn.make_register_range %v, %w : !amdgcn.vgpr, !amdgcn.vgpr -> !amdgcn.vgpr<[? + 2], align 2>
    %r3 = amdgcn.make_register_range %f1, %f2 : !amdgcn.vgpr<5>, !amdgcn.vgpr<6>
    %r4 = amdgcn.make_register_range %lo, %c2, %c3 {note = "x"} : !amdgcn.vgpr<[? + 2], align 2>, !amdgcn.vgpr, !amdgcn.vgpr
    %r5 = amdgcn.make_register_range %v, %f4 : !amdgcn.vgpr, !amdgcn.vgpr<4>
    %r6 = amdgcn.make_register_range %s1, %s : !amdgcn.sgpr<11>, !amdgcn.sgpr -> !amdgcn.sgpr<[11:13]>
"""


def test_text_round_trip_custom_and_generic(tmp_path, capsys):
    text = kernel(ROUND_TRIP)
    module = parse_ir(text, "t.mlir")
    printed = print_ir(module)
    assert ROUND_TRIP in printed  # the custom syntax prints back as written
    ops = [op for op in module.walk() if isinstance(op, SplitRegisterRangeOp | MakeRegisterRangeOp)]
    assert len(ops) == 12
    # Implied result types: single registers of the range; made ranges fixed when every
    # operand is, else relocatable.
    assert [r.type for r in ops[0].results] == [VGPRType.relocatable()] * 4
    assert [r.type for r in ops[2].results] == [VGPRType(4 + i) for i in range(4)]
    assert ops[6].result.type == VGPRType.relocatable(2)
    assert ops[8].result.type == VGPRType(5, 2)
    assert ops[10].result.type == VGPRType.relocatable(2)
    assert ops[11].result.type == SGPRType(11, 2)
    assert ops[9].attributes["note"].data == "x"
    assert ops[1].offsets == [0, 2] and ops[9].offsets == [0, 2, 3]
    generic = print_ir(module, generic=True)
    assert '"amdgcn.split_register_range"(%acc) : (!amdgcn.vgpr<[? + 4], align 4>) -> ' \
           "(!amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr, !amdgcn.vgpr)" in generic
    assert print_ir(parse_ir(generic, "g.mlir")) == printed
    # asterism opt with the empty pipeline prints it unchanged.
    path = tmp_path / "views.mlir"
    path.write_text(text)
    assert main(["opt", str(path)]) == 0
    assert capsys.readouterr().out == printed


def test_the_ops_emit_no_instruction_and_lower_their_registers():
    body = """\
    %f0, %f1, %f2, %f3 = amdgcn.split_register_range %f : !amdgcn.vgpr<[4:8]>
    %c1 = arith.constant 1 : i32
    %x = amdgcn.vop2 v_add_u32 %f2, %c1, %f1 : (!amdgcn.vgpr<6>, i32, !amdgcn.vgpr<5>) -> !amdgcn.vgpr<6>
    %p = amdgcn.make_register_range %f0, %f1 : !amdgcn.vgpr<4>, !amdgcn.vgpr<5>
    %s0, %s1 = amdgcn.split_register_range %sp : !amdgcn.sgpr<[10:12]>
    %t = amdgcn.global global_store_dword %p, %x, %off : (!amdgcn.vgpr<[4:6]>, !amdgcn.vgpr<6>, !amdgcn.off) -> !amdgcn.token
    %y = amdgcn.sop2 s_add_u32 %s1, %s0, %c1 : (!amdgcn.sgpr<11>, !amdgcn.sgpr<10>, i32) -> !amdgcn.sgpr<11>
"""
    text = kernel(body).replace(DECLS, DECLS + "    %off = amdgcn.off\n")
    mc = lower_module(parse_ir(text, "t.mlir"))
    assert [format_inst(i) for i in mc.kernels[0].body] == [
        "v_add_u32 v6, 1, v5", "global_store_dword v[4:5], v6, off",
        "s_add_u32 s11, s10, 1", "s_endpgm"]


def test_relocatable_pieces_keep_the_regalloc_error():
    body = """\
    %c0, %c1, %c2, %c3 = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4>
    %x = amdgcn.vop1 v_mov_b32 %c1, %c0 : (!amdgcn.vgpr, !amdgcn.vgpr) -> !amdgcn.vgpr
"""
    with pytest.raises(VerifyError, match=r"operand #0 \(vdst\) .*relocatable type "
                                          r"!amdgcn\.vgpr: run the register allocation pass"):
        lower_module(parse_ir(kernel(body), "t.mlir"))


def test_pieces_of_abi_inputs_lower_without_allocation():
    text = """\
amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args(n: i32) workgroup_size(64, 1, 1) {
    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[? + 2]>
    %lo, %hi = amdgcn.split_register_range %kp : !amdgcn.sgpr<[? + 2]>
    %d = amdgcn.alloca : !amdgcn.sgpr<7>
    %x = amdgcn.sop1 s_mov_b32 %d, %hi : (!amdgcn.sgpr<7>, !amdgcn.sgpr) -> !amdgcn.sgpr<7>
    amdgcn.sopp s_endpgm
  }
}
"""
    mc = lower_module(parse_ir(text, "t.mlir"))
    assert format_inst(mc.kernels[0].body[0]) == "s_mov_b32 s7, s1"  # kernarg_ptr is s[0:1]


ERRORS = [
    ("%x, %y = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4> -> !amdgcn.vgpr, !amdgcn.vgpr",
     r"amdgcn\.split_register_range: the results cover 2 registers \(1 \+ 1\) but the range "
     r"!amdgcn\.vgpr<\[\? \+ 4\], align 4> has 4"),
    ("%x, %y = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4> -> !amdgcn.vgpr<[? + 3]>, !amdgcn.sgpr",
     r"result #1 is an SGPR value but the range is a VGPR value: a register range lies in "
     r"one register file"),
    ("%x, %y = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4> -> !amdgcn.vgpr, !amdgcn.vgpr<[? + 3], align 2>",
     r"result #1 \(!amdgcn\.vgpr<\[\? \+ 3\], align 2>\) starts at register 1 of a range "
     r"aligned to 4: it is misaligned"),
    ("%x, %y = amdgcn.split_register_range %f : !amdgcn.vgpr<[4:8]> -> !amdgcn.vgpr<[4:6]>, !amdgcn.vgpr<[7:9]>",
     r"result #1 is registers 2\.\.3 of v\[4:7\]: its type is !amdgcn\.vgpr<\[6:8\]>, not "
     r"!amdgcn\.vgpr<\[7:9\]>"),
    ("%x, %y = amdgcn.split_register_range %acc : !amdgcn.vgpr<[? + 4], align 4> -> !amdgcn.vgpr<[4:6]>, !amdgcn.vgpr<[? + 2]>",
     r"result #0 has the fixed type !amdgcn\.vgpr<\[4:6\]> but the range .* is relocatable"),
    ("%x, %y = amdgcn.split_register_range %a : !amdgcn.agpr<[? + 2]> -> !amdgcn.agpr, !amdgcn.vgpr",
     r"result #1 is a VGPR value but the range is an AGPR value"),
    ("%r = amdgcn.make_register_range %v, %s : !amdgcn.vgpr, !amdgcn.sgpr",
     r"amdgcn\.make_register_range: operand #1 is an SGPR value but operand #0 is a VGPR "
     r"value: a register range lies in one register file \(v, a or s\)"),
    ("%r = amdgcn.make_register_range %v, %w : !amdgcn.vgpr, !amdgcn.vgpr -> !amdgcn.vgpr<[? + 3]>",
     r"the operands have 2 registers \(1 \+ 1\) but the result !amdgcn\.vgpr<\[\? \+ 3\]> has 3"),
    ("%r = amdgcn.make_register_range %f4, %f6 : !amdgcn.vgpr<4>, !amdgcn.vgpr<6>",
     r"operand #1 is v6 but must start at v5 to follow the result \(v\[4:5\]\): fixed "
     r"registers that are not consecutive cannot form a range"),
    ("%r = amdgcn.make_register_range %f4, %v : !amdgcn.vgpr<4>, !amdgcn.vgpr -> !amdgcn.vgpr<[6:8]>",
     r"operand #0 is v4 but must start at v6 to follow the result \(v\[6:7\]\)"),
    ("%r = amdgcn.make_register_range %v, %f4, %f6 : !amdgcn.vgpr, !amdgcn.vgpr<4>, !amdgcn.vgpr<6>",
     r"operand #2 is v6 but must start at v5 to follow operand #1 \(v4\)"),
    ("%r = amdgcn.make_register_range %f4, %f5 : !amdgcn.vgpr<4>, !amdgcn.vgpr<5> -> !amdgcn.vgpr<[? + 2]>",
     r"every operand is fixed, so the result is !amdgcn\.vgpr<\[4:6\]>, not "
     r"!amdgcn\.vgpr<\[\? \+ 2\]>"),
    ("%r = amdgcn.make_register_range %v, %acc : !amdgcn.vgpr, !amdgcn.vgpr<[? + 4], align 4> -> !amdgcn.vgpr<[? + 5], align 2>",
     r"operand #1 \(!amdgcn\.vgpr<\[\? \+ 4\], align 4>\) is misaligned: it starts at register "
     r"1 of the range"),
    ("%r = amdgcn.make_register_range %v, %f4 : !amdgcn.vgpr, !amdgcn.vgpr<4> -> !amdgcn.vgpr<[? + 2], align 2>",
     r"the range starts at v3 \(operand #1 \(v4\)\), which the alignment of the result"),
]


@pytest.mark.parametrize(("line", "pattern"), ERRORS)
def test_verification_errors_name_the_op_and_point_at_it(line, pattern):
    with pytest.raises(VerifyError) as info:
        parse_ir(kernel(f"    {line}\n"), "t.mlir")
    err = info.value
    assert re.search(pattern, err.message), err.message
    assert err.location is not None and err.location.file == "t.mlir"
    assert (err.location.line, err.location.col) == (3 + DECL_LINES, 5)


def test_pieces_of_a_fixed_range_must_be_its_registers():
    # A well-formed split of a fixed range verifies; the pieces' registers are in range of
    # the file like any fixed register.
    parse_ir(kernel("    %x, %y = amdgcn.split_register_range %f : !amdgcn.vgpr<[4:8]> -> "
                    "!amdgcn.vgpr<[4:7]>, !amdgcn.vgpr<7>\n"), "t.mlir")


# --- builder ----------------------------------------------------------------------------


def test_builder_split_sub_join_types_and_caching():
    kb = KernelBuilder("k")
    acc = kb.vregs(4, align=4)
    pieces = kb.split(acc)
    assert [p.type for p in pieces] == [VGPRType.relocatable()] * 4
    assert kb.sub(acc, 2) is pieces[2]  # the same split, cached in the block
    assert kb.sub(acc, -1) is pieces[3]
    pair = kb.sub(acc, 2, 4)
    assert pair.type == VGPRType.relocatable(2, 2)  # offset 2 of an align-4 range
    assert kb.sub(acc, 1, 3).type == VGPRType.relocatable(2, 1)
    assert kb.sub(acc, 0, 4) is acc
    halves = kb.split(acc, 2, 2)
    assert [h.type for h in halves] == [VGPRType.relocatable(2, 2)] * 2
    joined = kb.join(pieces[1], pieces[0], align=2)
    assert joined.type == VGPRType.relocatable(2, 2)
    assert kb.join([pieces[0]]).type == VGPRType.relocatable(1)
    # Fixed ranges: pieces are their registers, made ranges of fixed registers fixed; the
    # register-file indexing of kb.v is unchanged.
    f = kb.v[4:8]
    assert [p.type for p in kb.split(f)] == [VGPRType(4 + i) for i in range(4)]
    assert kb.sub(f, 1, 3).type == VGPRType(5, 2)
    assert kb.join(kb.v(8), kb.v(9)).type == VGPRType(8, 2)
    assert kb.v(5).type == VGPRType(5) and kb.v[4:8] is f
    kb.s_endpgm()
    module = kb.finish()
    splits = [op for op in module.walk() if isinstance(op, SplitRegisterRangeOp)]
    assert len(splits) == 5  # acc: singles, 2+2 (twice: cached), 1+2+1; f: singles, 1+2+1
    assert print_ir(parse_ir(print_ir(module))) == print_ir(module)


def test_builder_pieces_of_abi_inputs_follow_their_registers():
    kb = KernelBuilder("k")
    lo, hi = kb.split(kb.kernarg_ptr())
    kb.dispatch_ptr()  # moves the kernarg pointer to s[2:3]
    kb.s_mov_b32(kb.s(10), hi)
    kb.s_endpgm()
    kb.finish()
    assert (lo.type, hi.type) == (SGPRType(2), SGPRType(3))


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda kb: kb.split(kb.vregs(4), 2, 1), r"kb\.split: the sizes \[2, 1\] do not add up "
                                              r"to the 4 registers"),
    (lambda kb: kb.sub(kb.vregs(2), 2), r"kb\.sub: .* has 2 registers; index 2 is outside it"),
    (lambda kb: kb.sub(kb.vregs(2), 1, 1), r"registers 1\.\.0 are not a non-empty part"),
    (lambda kb: kb.join(kb.vreg(), kb.sreg()), r"kb\.join: the values are in different "
                                               r"register files \(VGPR, SGPR\)"),
    (lambda kb: kb.split(kb.const(1)), r"kb\.split: expected a register value"),
    (lambda kb: kb.join(), r"kb\.join: give at least one value"),
])
def test_builder_errors_point_at_the_callers_line(call, pattern):
    kb = KernelBuilder("k")
    with pytest.raises(VerifyError) as info:
        call(kb)
    assert re.search(pattern, info.value.message), info.value.message
    assert info.value.location is not None
    assert info.value.location.file == __file__
