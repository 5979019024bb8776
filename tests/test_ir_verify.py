"""Verifier and parser errors: each names the op, the operand (by its database name), what
was expected, and where (file:line:col)."""

from __future__ import annotations

import re

import pytest

from asterism.errors import ParseError, VerifyError
from asterism.ir import parse_ir

HEADER = 'amdgcn.module @m target = "{target}" {{\n  amdgcn.kernel @k {sig} {{\n'
FOOTER = "    amdgcn.sopp s_endpgm\n  }\n}\n"
DECLS = """\
    %v1 = amdgcn.alloca : !amdgcn.vgpr<1>
    %v2 = amdgcn.alloca : !amdgcn.vgpr<2>
    %v4 = amdgcn.alloca : !amdgcn.vgpr<[4:6]>
    %v8 = amdgcn.alloca : !amdgcn.vgpr<[8:12]>
    %s4 = amdgcn.alloca : !amdgcn.sgpr<4>
    %s6 = amdgcn.alloca : !amdgcn.sgpr<6>
    %s8 = amdgcn.alloca : !amdgcn.sgpr<[8:10]>
    %s12 = amdgcn.alloca : !amdgcn.sgpr<[12:16]>
    %c1 = arith.constant 1 : i32
    %c100 = arith.constant 100 : i32
"""
DECL_LINES = DECLS.count("\n")


def kernel(body: str, target: str = "gfx942", sig: str = "args() workgroup_size(64, 1, 1)",
           decls: str = DECLS) -> str:
    return HEADER.format(target=target, sig=sig) + decls + body + FOOTER


def error_of(text: str, kind: type = VerifyError):
    with pytest.raises(kind) as info:
        parse_ir(text, "t.mlir")
    return info.value


def body_error(line: str, pattern: str, target: str = "gfx942", **kw):
    """The error of a kernel whose body is one op line; checks the message and location."""
    err = error_of(kernel(f"    {line}\n", target, **kw))
    assert re.search(pattern, err.message), err.message
    assert err.location is not None and err.location.file == "t.mlir"
    assert err.location.line == 3 + DECL_LINES and err.location.col == 5, err.location
    return err


def test_valid_kernel_verifies():
    parse_ir(kernel("    %r = amdgcn.vop2 v_add_u32 %v1, %c1, %v2 : (!amdgcn.vgpr<1>, i32, "
                    "!amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>\n"), "t.mlir")


def test_wrong_register_class():
    err = body_error("%r = amdgcn.vop2 v_add_u32 %v1, %c1, %s4 : (!amdgcn.vgpr<1>, i32, "
                     "!amdgcn.sgpr<4>) -> !amdgcn.vgpr<1>",
                     r"amdgcn\.vop2 v_add_u32: operand #2 \(vsrc1\) expects VGPR, got "
                     r"!amdgcn\.sgpr<4>")
    # The 64-bit encoding takes an SGPR there: the message says so.
    assert "VOP3 encoding accepts these operands (write amdgcn.vop3)" in err.message


def test_width_mismatch_names_operand_and_width():
    body_error("%r = amdgcn.mai v_mfma_f32_16x16x16_f16 %v8, %v1, %v4, %v8 : "
               "(!amdgcn.vgpr<[8:12]>, !amdgcn.vgpr<1>, !amdgcn.vgpr<[4:6]>, "
               "!amdgcn.vgpr<[8:12]>) -> !amdgcn.vgpr<[8:12]>",
               r"operand #1 \(src0\) expects VGPR or AGPR range of 2 registers aligned to 2 "
               r"\(2 registers\), got !amdgcn\.vgpr<1> \(1\)")


def test_unknown_mnemonic_suggests():
    body_error("amdgcn.sopp s_nopp %c1 : (i32) -> ()",
               r"unknown instruction 's_nopp' for gfx942; did you mean s_nop")


@pytest.mark.parametrize(("line", "mnemonic"), [
    (("%r = amdgcn.mai v_mfma_f32_16x16x32_f16 %v8, %v8, %v8, %v8 : (!amdgcn.vgpr<[8:12]>, "
     "!amdgcn.vgpr<[8:12]>, !amdgcn.vgpr<[8:12]>, !amdgcn.vgpr<[8:12]>) -> "
     "!amdgcn.vgpr<[8:12]>"), "v_mfma_f32_16x16x32_f16"),
    (("%r, %t = amdgcn.ds ds_read_b64_tr_b16 %v4, %v1 : (!amdgcn.vgpr<[4:6]>, "
     "!amdgcn.vgpr<1>) -> (!amdgcn.vgpr<[4:6]>, !amdgcn.token)"), "ds_read_b64_tr_b16"),
])
def test_gfx950_instruction_on_gfx942(line, mnemonic):
    body_error(line, rf"'{mnemonic}' is not available on gfx942 \(it is a gfx950 instruction\)")
    parse_ir(kernel(f"    {line}\n", "gfx950"))  # ... and fine on gfx950


def test_wrong_family():
    body_error("%r = amdgcn.vop1 v_add_u32 %v1, %c1, %v2 : (!amdgcn.vgpr<1>, i32, "
               "!amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>",
               r"'v_add_u32' has no VOP1 encoding; write it as amdgcn\.vop2, amdgcn\.dpp, "
               r"amdgcn\.sdwa, amdgcn\.vop3")
    body_error("%r = amdgcn.vop2 v_add_u32_e64 %v1, %c1, %v2 : (!amdgcn.vgpr<1>, i32, "
               "!amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>",
               r"no VOP2 encoding; write it as amdgcn\.vop3")


@pytest.mark.parametrize(("line", "pattern"), [
    # VOP3 has no literal on gfx9: only inline constants.
    (("%r = amdgcn.vop3 v_add_u32 %v1, %c100, %v2 : (!amdgcn.vgpr<1>, i32, !amdgcn.vgpr<2>) "
     "-> !amdgcn.vgpr<1>"),
     (r"operand #1 \(src0\) takes an inline constant here .*: 100 would need a 32-bit literal, "
     r"which the VOP3 encoding cannot hold")),
    (("%t = amdgcn.global global_store_dword %v1, %v2, %s8 offset = 4096 : (!amdgcn.vgpr<1>, "
     "!amdgcn.vgpr<2>, !amdgcn.sgpr<[8:10]>) -> !amdgcn.token"),
     r"modifier offset: 4096 is out of range \[-4096, 4095\] \(13-bit signed\)"),
    (("%r, %t = amdgcn.flat flat_load_dword %v1, %v4 offset = -1 : (!amdgcn.vgpr<1>, "
     "!amdgcn.vgpr<[4:6]>) -> (!amdgcn.vgpr<1>, !amdgcn.token)"),
     r"modifier offset: -1 is out of range \[0, 4095\] \(12-bit unsigned\)"),
    (("%r, %t = amdgcn.ds ds_read_b32 %v1, %v2 offset = 65536 : (!amdgcn.vgpr<1>, "
     "!amdgcn.vgpr<2>) -> (!amdgcn.vgpr<1>, !amdgcn.token)"),
     r"modifier offset: 65536 is out of range \[0, 65535\] \(16-bit unsigned\)"),
    (("%r, %t = amdgcn.mubuf buffer_load_dword %v1, %v2, %s12, %c1 offen offset = 4096 : "
     "(!amdgcn.vgpr<1>, !amdgcn.vgpr<2>, !amdgcn.sgpr<[12:16]>, i32) -> (!amdgcn.vgpr<1>, "
     "!amdgcn.token)"),
     r"modifier offset: 4096 is out of range \[0, 4095\] \(12-bit unsigned\)"),
    ("%r = amdgcn.sopk s_movk_i32 %s4, %big : (!amdgcn.sgpr<4>, i32) -> !amdgcn.sgpr<4>",
     r"operand #1 \(simm16\) is a 16-bit immediate field: 70000 is out of range"),
    (("%r, %t = amdgcn.smem s_load_dword %s4, %s8, %big2 : (!amdgcn.sgpr<4>, "
     "!amdgcn.sgpr<[8:10]>, i32) -> (!amdgcn.sgpr<4>, !amdgcn.token)"),
     r"operand #2 \(offset\) is a 21-bit signed immediate field: 1048576 is out of range"),
    ("amdgcn.sopp s_waitcnt vmcnt = 64",
     r"modifier vmcnt: 64 is out of range \[0, 63\]"),
])
def test_immediate_out_of_range(line, pattern):
    decls = DECLS + "    %big = arith.constant 70000 : i32\n" \
        "    %big2 = arith.constant 1048576 : i32\n"
    err = error_of(kernel(f"    {line}\n", decls=decls))
    assert re.search(pattern, err.message), err.message
    assert err.location.line == 3 + DECL_LINES + 2


def test_misaligned_range():
    # global_load_dword with saddr=off takes a 64-bit VGPR address aligned to 2.
    decls = DECLS + "    %v5 = amdgcn.alloca : !amdgcn.vgpr<[5:7]>\n    %off = amdgcn.off\n"
    err = error_of(kernel("    %r, %t = amdgcn.global global_load_dword %v1, %v5, %off : "
                          "(!amdgcn.vgpr<1>, !amdgcn.vgpr<[5:7]>, !amdgcn.off) -> "
                          "(!amdgcn.vgpr<1>, !amdgcn.token)\n", decls=decls))
    assert "operand #1 (addr) needs a register range aligned to 2" in err.message
    assert "starts at v5" in err.message
    # SGPR tuples: pairs even, quads a multiple of 4.
    decls = DECLS + "    %s9 = amdgcn.alloca : !amdgcn.sgpr<[9:11]>\n"
    err = error_of(kernel("    %r, %t = amdgcn.smem s_load_dword %s4, %s9, %c1 : "
                          "(!amdgcn.sgpr<4>, !amdgcn.sgpr<[9:11]>, i32) -> "
                          "(!amdgcn.sgpr<4>, !amdgcn.token)\n", decls=decls))
    assert "operand #1 (sbase) needs a register range aligned to 2" in err.message


def test_type_alignment_is_checked_at_parse_time():
    text = kernel("", decls="    %x = amdgcn.alloca : !amdgcn.vgpr<[9:13], align 4>\n")
    err = error_of(text, ParseError)
    assert "not aligned to 4" in err.message
    assert (err.location.line, err.location.col) == (3, 39)


def test_empty_range_is_a_parse_error():
    err = error_of(kernel("", decls="    %x = amdgcn.alloca : !amdgcn.vgpr<[8:8]>\n"),
                   ParseError)
    assert "half-open" in err.message and (err.location.line, err.location.col) == (3, 39)


def test_destination_passing_result_type():
    body_error("%r = amdgcn.vop2 v_add_u32 %v1, %c1, %v2 : (!amdgcn.vgpr<1>, i32, "
               "!amdgcn.vgpr<2>) -> !amdgcn.vgpr<2>",
               r"result #0 must have the type of its destination operand vdst "
               r"\(!amdgcn\.vgpr<1>\), got !amdgcn\.vgpr<2>")
    body_error("%r = amdgcn.global global_load_dword %v1, %v2, %s8 : (!amdgcn.vgpr<1>, "
               "!amdgcn.vgpr<2>, !amdgcn.sgpr<[8:10]>) -> !amdgcn.vgpr<1>",
               r"returns 2 values \(vdst, token\), but the op has 1 result")


def test_constant_as_destination():
    body_error("%r = amdgcn.vop2 v_add_u32 %c1, %c1, %v2 : (i32, i32, !amdgcn.vgpr<2>) -> i32",
               r"operand #0 \(vdst\) is a destination: it needs a register value")


def test_constant_bus_and_literal_limits():
    body_error("%r = amdgcn.vop3 v_add_u32 %v1, %s4, %s6 : (!amdgcn.vgpr<1>, !amdgcn.sgpr<4>, "
               "!amdgcn.sgpr<6>) -> !amdgcn.vgpr<1>",
               r"reads 2 different SGPRs/literals; gfx9 VALU instructions have 1 constant-bus")
    decls = DECLS + "    %c200 = arith.constant 200 : i32\n"
    err = error_of(kernel("    %r = amdgcn.sop2 s_add_u32 %s4, %c100, %c200 : "
                          "(!amdgcn.sgpr<4>, i32, i32) -> !amdgcn.sgpr<4>\n", decls=decls))
    assert "holds one 32-bit literal" in err.message


def test_modifier_errors():
    body_error("%t = amdgcn.global global_store_dword %v1, %v2, %s8 glc : (!amdgcn.vgpr<1>, "
               "!amdgcn.vgpr<2>, !amdgcn.sgpr<[8:10]>) -> !amdgcn.token",
               r"modifier 'glc' is not accepted by this GLOBAL form \(accepted: nt, offset, "
               r"sc0, sc1\)")
    body_error("%r = amdgcn.vop3 v_add_f32 %v1, %v1, %v2 sext = [1] : (!amdgcn.vgpr<1>, "
               "!amdgcn.vgpr<1>, !amdgcn.vgpr<2>) -> !amdgcn.vgpr<1>",
               r"sext applies to integer sources; source #0 is f32")
    body_error("%r, %t = amdgcn.mubuf buffer_load_dword %v1, %v2, %s12, %c1 : "
               "(!amdgcn.vgpr<1>, !amdgcn.vgpr<2>, !amdgcn.sgpr<[12:16]>, i32) -> "
               "(!amdgcn.vgpr<1>, !amdgcn.token)",
               r"vaddr is a VGPR but neither offen nor idxen is set")
    err = error_of(kernel("    amdgcn.sopp s_waitcnt vmcnt = 0 ofset = 3\n"), ParseError)
    assert "unknown modifier 'ofset'" in err.message


def test_abi_register_must_match():
    decls = "    %kp = amdgcn.kernarg_ptr : !amdgcn.sgpr<[0:2]>\n" \
            "    %wg = amdgcn.workgroup_id x : !amdgcn.sgpr<3>\n"
    err = error_of(kernel("", decls=decls))
    assert re.search(r"amdgcn\.workgroup_id: the ABI delivers this input in s2 \(user SGPRs: "
                     r"kernarg_ptr; workgroup ids: x\), but the type says s3", err.message)
    assert err.location.line == 4
    decls = "    %wi = amdgcn.workitem_id x : !amdgcn.sgpr<0>\n"
    assert "the work-item ids arrive in v0" in error_of(kernel("", decls=decls)).message


def test_kernel_declarations():
    decls = "    %o = amdgcn.kernarg_offset nope\n"
    err = error_of(kernel("", sig="args(out: buffer) workgroup_size(64, 1, 1)", decls=decls))
    assert "no kernel argument named 'nope' (arguments: out)" in err.message
    decls = "    %a = amdgcn.lds_alloc a size 4096 align 16\n" \
            "    %b = amdgcn.lds_alloc b size 4096 align 16\n"
    err = error_of(kernel("", sig="args() workgroup_size(64, 1, 1) lds_size(4096)",
                          decls=decls))
    assert "lds_size(4096) is smaller than the 8192 bytes" in err.message
    err = error_of(kernel("", decls="    %a = amdgcn.lds_alloc a size 70000\n"))
    assert "70000 bytes of LDS exceed the 65536 bytes" in err.message
    parse_ir(kernel("", "gfx950", decls="    %a = amdgcn.lds_alloc a size 70000\n"))
    err = error_of(kernel("", sig="args() workgroup_size(2048, 1, 1)", decls=""))
    assert "at most 1024 work-items" in err.message
    # Padding arguments often share a name; only an offset by that name is ambiguous.
    sig = "args(pad: i32, pad: i32) workgroup_size(64, 1, 1)"
    parse_ir(kernel("", sig=sig, decls=""))
    err = error_of(kernel("", sig=sig, decls="    %o = amdgcn.kernarg_offset pad\n"))
    assert "2 kernel arguments are named 'pad': the offset is ambiguous" in err.message


def test_register_past_the_file():
    err = error_of(kernel("", decls="    %x = amdgcn.alloca : !amdgcn.vgpr<[254:258]>\n"))
    assert "v[254:257] is past the last VGPR (v255) of gfx942" in err.message
    err = error_of(kernel("", decls="    %x = amdgcn.alloca : !amdgcn.sgpr<102>\n"))
    assert "past the last SGPR (s101)" in err.message


def test_reserved_regions_must_not_overlap():
    sig = "args() workgroup_size(64, 1, 1) reserved(S = !amdgcn.vgpr<[32:96]>, " \
          "O = !amdgcn.vgpr<[90:100]>)"
    err = error_of(kernel("", sig=sig, decls=""))
    assert "reserved regions 'S' (v[32:95]) and 'O' (v[90:99]) overlap" in err.message


def test_branch_structure():
    text = """amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    amdgcn.fallthrough ^a
  ^a:
    amdgcn.branch s_cbranch_scc1 ^a
  ^b:
    amdgcn.end_kernel
  }
}
"""
    err = error_of(text)
    assert "a conditional branch names its fall-through block" in err.message
    assert (err.location.line, err.location.col) == (5, 5)
    text2 = text.replace("amdgcn.fallthrough ^a", "amdgcn.fallthrough ^b").replace(
        "s_cbranch_scc1 ^a", "s_branch ^a")
    assert "must be the next block" in error_of(text2).message
    text3 = text.replace("s_cbranch_scc1 ^a", "s_nop ^a")
    assert "s_nop does not take a branch target" in error_of(text3).message


def test_multi_block_kernel_needs_terminators():
    text = """amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    amdgcn.sopp s_nop %c : (i32) -> ()
  ^a:
    amdgcn.end_kernel
  }
}
"""
    err = error_of(text, ParseError)
    assert "%c is used but never defined" in err.message and err.location.line == 3
    text = text.replace("%c : (i32) -> ()", "")
    err = error_of(text)
    assert "terminates block in multi-block region but is not a terminator" in err.message


def test_other_ops_are_rejected_in_kernels():
    err = error_of(kernel("    %x = arith.addi %c1, %c1 : i32\n"))
    assert "arith.addi: not allowed in a kernel body" in err.message


def test_unknown_target():
    err = error_of(kernel("").replace("gfx942", "gfx9000"))
    assert "unknown target 'gfx9000'; known targets: gfx942, gfx950" in err.message


def test_syntax_errors_have_locations():
    err = error_of("amdgcn.module @m target = \"gfx942\" {\n  amdgcn.kernel @k args(x: f33) "
                   "{\n  }\n}\n", ParseError)
    assert "unknown kernel argument type 'f33'" in err.message
    assert (err.location.line, err.location.col) == (2, 28)
    err = error_of(kernel("    %r = amdgcn.vop2 v_add_u32 %v1, %c1 %v2 : (!amdgcn.vgpr<1>)\n"),
                   ParseError)
    assert err.location.line == 3 + DECL_LINES


def test_fragments_are_checked_against_the_module_target():
    text = """amdgcn.module @m target = "gfx942" {
  func.func @f(%a : !amdgcn.vgpr<1>, %b : !amdgcn.sgpr<4>) -> !amdgcn.vgpr<1> {
    %r = amdgcn.vop2 v_add_u32 %a, %b, %b : (!amdgcn.vgpr<1>, !amdgcn.sgpr<4>,
      !amdgcn.sgpr<4>) -> !amdgcn.vgpr<1>
    func.return %r : !amdgcn.vgpr<1>
  }
}
"""
    err = error_of(text)
    assert "operand #2 (vsrc1) expects VGPR" in err.message and err.location.line == 3


def test_kernel_blocks_take_no_arguments():
    text = """amdgcn.module @m target = "gfx942" {
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {
    amdgcn.fallthrough ^a
  ^a(%x : !amdgcn.vgpr<1>):
    amdgcn.end_kernel
  }
}
"""
    err = error_of(text)
    assert "kernel blocks take no arguments" in err.message and err.location.line == 5
