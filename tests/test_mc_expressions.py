"""Integer expressions in assembly (`.set`, operands, `.long`, `.amdhsa_*` values): LLVM's
64-bit semantics, checked against llvm-mc-22, and bounded before computing (literal digits,
shift counts, nesting, division by zero) with located errors instead of tracebacks or
gigabytes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from asterism import api
from asterism.cli import main as cli_main
from asterism.errors import ParseError
from asterism.mc.asm_syntax import eval_int, int_literal
from asterism.mc.parser import parse_asm

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo" / "add_10.mlir"
HEAD = '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.text\n'

# Each was checked with llvm-mc-22 (and is again by test_values_match_llvm_mc): wrapping,
# C division, logical >>, GNU precedence (| & ^ bind tighter than + -), octal, unsigned literals.
EXPRESSIONS = {
    "-7/2": -3, "-7%2": -1, "7/-2": -3, "7%-2": 1, "1+2<<3": 17, "1|2+3": 6, "6&3^1": 3,
    "~0": -1, "-8>>1": 0x7FFFFFFFFFFFFFFC, "2*3%4": 2, "0b101": 5, "017": 15, "00": 0,
    "1<<2<<3": 32, "8/2/2": 2, "-(1<<63)": -(1 << 63), "1<<63": -(1 << 63),
    "0x7fffffffffffffff*3": 0x7FFFFFFFFFFFFFFD, "9223372036854775807+1": -(1 << 63),
    "18446744073709551615": -1, "0xffffffffffffffff": -1, "(1<<62)*4": 0, "-(-(-1))": -1,
    "+5": 5, "~~5": 5, "5 - -3": 8, "1+2*3": 7, "(1+2)*3": 9, "0x8000000000000000>>63": 1,
    "-0xffffffffffffffff": 1, "3-2-1": 0, "2^3|4": 5, "100%7*3": 6,
    "-1>>0": -1, "-8>>0": -8,  # (found by the fuzz campaign: was 2**64 - 1)
}


@pytest.mark.parametrize("text, value", sorted(EXPRESSIONS.items()))
def test_expression_values(text, value):
    assert eval_int(text) == value


def test_values_match_llvm_mc(llvm_mc, tmp_path):
    src = tmp_path / "e.s"
    src.write_text("".join(f".set e{k}, {t}\n.quad e{k}\n"
                           for k, t in enumerate(EXPRESSIONS)))
    out = subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", str(src)],
                         capture_output=True, text=True, check=True).stdout
    quads = [int(v) for v in re.findall(r"\.quad\s+(-?\d+)", out)]
    assert quads == list(EXPRESSIONS.values())


def test_symbols_are_64_bit_values():
    assert eval_int("a*a*a", {"a": 1 << 62}) == 0
    assert eval_int("b + 1", {"b": 7}) == 8
    assert eval_int("c", {}) is None  # unknown symbol: not an expression (maybe a label)


@pytest.mark.parametrize("text, words", [
    ("1<<2000000000", "shift count 2000000000 in '1<<2000000000' is outside 0..63"),
    ("1<<64", "shift count 64"), ("1>>-1", "shift count -1"),
    ("5/0", "division by zero in '5/0'"), ("5%(2-2)", "division by zero"),
    ("18446744073709551616", "integer literal '18446744073709551616' does not fit 64 bits"),
    ("0x1ffffffffffffffff", "does not fit 64 bits"),
    ("9" * 5000, "(5000 characters) does not fit 64 bits"),   # Python's int() limit is 4300
    ("(" * 65 + "1" + ")" * 65, "nested more than 64 levels deep"),
    ("-" * 100_000 + "1", "nested more than 64 levels deep"),  # was a RecursionError
    ("09", "invalid octal number '09'"),
])
def test_values_past_the_bounds_are_errors(text, words):
    with pytest.raises(ParseError) as info:
        eval_int(text)
    assert words in info.value.message


def test_literal_digits_are_counted_before_converting():
    assert int_literal("0x" + "0" * 100_000 + "1") == 1  # leading zeros are free
    with pytest.raises(ParseError, match="does not fit 64 bits"):
        int_literal("1" * 1_000_000)


@pytest.mark.parametrize("line, col, words", [
    (".set a, 1<<2000000000", 1, "shift count 2000000000"),          # was 250 MB
    (".set a, " + "9" * 5000, 1, "does not fit 64 bits"),             # was ValueError
    ("s_mov_b32 s0, " + "9" * 5000, 1, "does not fit 64 bits"),       # was ValueError
    ("s_mov_b32 s0, " + "-" * 100_000 + "1", 1, "nests more than 8"),  # was RecursionError
    ("s_mov_b32 s0, " + "(" * 99 + "1" + ")" * 99, 1, "nested more than 64"),
    ("s_mov_b32 s0, lit(1<<99)", 1, "shift count 99"),
    ("s_waitcnt vmcnt(1<<70)", 1, "shift count 70"),
    (".long 1<<99", 1, "shift count 99"),
])
def test_assembly_errors_are_located(line, col, words):
    with pytest.raises(ParseError) as info:
        api.assemble(HEAD + line + "\n", filename="k.s")
    err = info.value
    assert words in err.message
    assert (err.location.file, err.location.line, err.location.col) == ("k.s", 3, col)
    assert len(err.message) < 300  # the operand is quoted cut short


def test_a_huge_set_value_reused_stays_64_bit():
    # (was: 1<<100000 squared twice, then a ValueError printing it)
    text = HEAD + ".set a, 1<<62\n.set b, a*a\n.set c, b*b+5\ns_mov_b32 s0, c\n"
    module = parse_asm(text, "k.s")
    assert module.kernels[0].body[0].operands[1].value == 5


def test_amdhsa_values_are_bounded():
    asm = api.translate(DEMO.read_text())
    bad = re.sub(r"(\.amdhsa_next_free_vgpr) \d+", r"\1 1<<3000000000", asm, count=1)
    assert bad != asm
    with pytest.raises(ParseError, match="shift count 3000000000"):
        api.assemble(bad)


def test_cli_reports_them_without_traceback(tmp_path, capsys):
    src, out = tmp_path / "k.s", tmp_path / "k.hsaco"
    src.write_text(HEAD + ".set a, 1<<2000000000\n")
    assert cli_main(["asm", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{src}:3:1: error: shift count 2000000000" in err
    assert "Traceback" not in err and not out.exists()
