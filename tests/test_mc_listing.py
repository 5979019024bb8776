"""The disassembly listing (`asterism disasm`): decoded and printed in one pass
(mc/decoded_text.py), it equals the instruction path - decode to `mc.Inst`, then
`format_line` - word for word, and llvm-objdump -d byte for byte (test_mc_llvm.py)."""

from __future__ import annotations

import random

import pytest
from mc_differential import TARGETS, load_vectors

from asterism import api
from asterism.errors import AsterismError
from asterism.isa import get_isa
from asterism.isa.formats import FORMATS
from asterism.mc.codeobject import read_code_object
from asterism.mc.codeobject.elf import parse_elf
from asterism.mc.decoded_text import _modifier_text, tail_bits, tail_code, text_of
from asterism.mc.decoder import _PLANS, DecodedInst, decode_code, get_decoder
from asterism.mc.listing import (
    TEXT_COLUMN,
    ListingSymbols,
    _line_dispatch,
    _list_code,
    format_line,
    listing,
)
from asterism.mc.printer import format_inst


def _instruction_path(code: bytes, target: str, base: int,
                      symbols: ListingSymbols) -> list[str]:
    """The listing lines made from decoded instructions (the reference)."""
    lines: list[str] = []
    starts = symbols.headers
    for item in decode_code(code, target, base, skip_undecodable=True):
        if isinstance(item, DecodedInst):
            addr = item.address
            line = format_line(item, symbols)
        else:
            addr, word = item
            line = "\t" + f".long 0x{word:08x}".ljust(TEXT_COLUMN) + f"// {addr:012X}: {word:08X}"
        if addr in starts:
            lines += ["", f"{addr:016x} <{starts[addr]}>:"]
        lines.append(line)
    return lines


def _one_pass(code: bytes, target: str, base: int, symbols: ListingSymbols) -> list[str]:
    out: list[str] = []
    _list_code(get_decoder(target), code, base, symbols, out)
    return out


def _flipped(data: bytes, rng: random.Random) -> bytes:
    """`data` with 1 to 3 random bits flipped."""
    value = int.from_bytes(data, "little")
    for _ in range(rng.randint(1, 3)):
        value ^= 1 << rng.randrange(8 * len(data))
    return value.to_bytes(len(data), "little")


@pytest.mark.parametrize("target", TARGETS)
def test_vector_words_list_as_their_instructions(target):
    words = [bytes.fromhex(r["bytes"]) for r in load_vectors(target)]
    code = b"".join(words)
    symbols = ListingSymbols(headers={0x1000: "k", 0x1000 + len(words[0]): "next"},
                             sections=[(0x1000, [(0x1000, "k")])])
    lines = _one_pass(code, target, 0x1000, symbols)
    assert lines == _instruction_path(code, target, 0x1000, symbols)
    assert len(lines) == len(words) + 4 and not any(".long" in line for line in lines)


@pytest.mark.parametrize("target", TARGETS)
def test_flipped_and_random_words_list_as_their_instructions(target):
    # Bit flips of valid words reach modifier bits, literals, reserved codes and forms the
    # target rejects; random dwords mostly decode to nothing (.long).
    rng = random.Random(f"listing-{target}")
    words = [bytes.fromhex(r["bytes"]) for r in load_vectors(target)]
    code = b"".join(_flipped(w, rng) for w in words) + rng.randbytes(4000) + b"\x01\x02"
    lines = _one_pass(code, target, 0, ListingSymbols())
    assert lines == _instruction_path(code, target, 0, ListingSymbols())
    assert sum(".long" in line for line in lines) > 100
    assert lines[-1].endswith("00000201")  # (the trailing half word, zero-padded)


def test_branch_targets_are_named_in_one_pass():
    text = "s_mov_b32 s0, 1\nL:\nv_add_u32 v1, v2, v3\ns_cbranch_scc0 L\n" \
           "s_branch 3\ns_cbranch_scc1 k\ns_branch 1000\ns_branch 30000\n" \
           "v_mfma_f32_16x16x16_f16 v[0:3], v[4:5], v[6:7], 0\ns_endpgm\n"
    data = api.assemble(
        ".amdgcn_target \"amdgcn-amd-amdhsa--gfx942\"\n.text\n.globl k\n.p2align 8\n"
        ".type k,@function\nk:\n" + text + ".rodata\n.p2align 6\n.amdhsa_kernel k\n"
        "  .amdhsa_next_free_vgpr 8\n  .amdhsa_next_free_sgpr 8\n"
        "  .amdhsa_accum_offset 8\n.end_amdhsa_kernel\n", None, "t.s")
    obj = read_code_object(data)
    base = obj.text_address
    symbols = ListingSymbols.of_elf(parse_elf(data))
    assert symbols.headers == {base: "k", base + 4: "L"} and symbols.labels == {base + 4: "L"}
    lines = listing(data).splitlines()[4:]
    assert lines == _instruction_path(obj.text, "gfx942", base, symbols)
    assert lines[6].startswith("\ts_cbranch_scc0 L ")  # (a label: named, not annotated)
    assert lines[6].endswith(": BF84FFFE")
    assert lines[7].startswith("\ts_branch 3 ") and lines[7].endswith(" <L+0x18>")
    # (a kernel symbol annotates the number, as LLVM's AMDGPU symbolizer names only labels)
    assert lines[8].startswith("\ts_cbranch_scc1 65531 ") and lines[8].endswith(" <k>")
    # (past .text's end but before the next section: still .text's last symbol, as LLVM)
    assert lines[9].startswith("\ts_branch 1000 ") and lines[9].endswith(" <L+0xfb4>")
    # (past every section: the last one starting before the target, .relro_padding, has no
    # symbol, so llvm-objdump does not annotate it)
    assert lines[10].startswith("\ts_branch 30000 ") and lines[10].endswith(": BF827530")


def test_words_go_from_bits_to_text():
    # The common forms print from tables, without building the instruction; forms whose
    # source modifiers are set go through it.
    dec = get_decoder("gfx942")
    for data, built in ((bytes.fromhex("02030180"), False),  # s_add_u32 s0, s2, s3
                        (bytes.fromhex("0205020a"), False),  # v_mul_f32_e32 v1, v2, v2
                        (bytes.fromhex("010101d101050220"), True)):  # v_add_f32_e64 v1, -|v1|, v2
        expected = format_inst(dec.decode(data).inst)
        plan, value, extra, literal, prefix, _size = dec.locate(data, 0, 0)
        calls = []
        plan_build = plan.build
        plan.build = lambda *args, calls=calls, build=plan_build: \
            calls.append(args) or build(*args)
        try:
            assert text_of(plan)(value, extra, literal, prefix) == expected
        finally:
            plan.build = plan_build
        assert bool(calls) == built, expected


@pytest.mark.parametrize("target", TARGETS)
def test_learnt_line_functions_print_what_the_instruction_path_prints(target):
    # Each word twice (and its flipped copy twice): the first time it is located and its
    # plan learnt, the second time its line function prints it from the first bits.
    rng = random.Random(f"learnt-{target}")
    words = [bytes.fromhex(r["bytes"]) for r in load_vectors(target)]
    flipped = [_flipped(w, rng) for w in words]
    code = b"".join(words + words + flipped + flipped) + b"\0" * 12
    dispatch_before = len(_line_dispatch(get_decoder(target)).routes)
    lines = _one_pass(code, target, 0, ListingSymbols())
    assert lines == _instruction_path(code, target, 0, ListingSymbols())
    assert dispatch_before == 512


def _random_word(plan, rng: random.Random) -> int:
    """A random word of the plan's form: its opcode and fixed bits, random elsewhere."""
    fmt = FORMATS[plan.form.format]
    value = rng.getrandbits(8 * fmt.size)
    for lo, mask, want in plan.variant_fields:
        value = value & ~(mask << lo) | want << lo
    op = fmt.fields["op"]
    value = value & ~(op.mask << op.lo) | plan.form.opcode << op.lo
    ident_lo, ident_width, ident = fmt.ident
    return value & ~(((1 << ident_width) - 1) << ident_lo) | ident << ident_lo


def _forms_with_readers(target):
    isa = get_isa(target)
    for name in isa.instructions:
        for form in isa.instructions[name].forms:
            plan = _PLANS(form)
            if plan.modifiers is not None and form.enc:
                yield plan


@pytest.mark.parametrize("target", TARGETS)
def test_generated_tails_equal_the_reader_and_the_printer(target):
    # Every form whose modifier tail is generated (buffer, DS, FLAT family, SMEM), random
    # words: the tail equals the one the reader and the printer make.
    rng = random.Random(f"tails-{target}")
    checked = 0
    for plan in _forms_with_readers(target):
        env: dict[str, object] = {}
        body = tail_code(plan, env)
        if body is None:
            continue
        exec("def tail_of(value):\n" + "\n".join(body) + "\n    return tail\n", env)
        reference = _modifier_text(plan)
        for _ in range(40):
            value = _random_word(plan, rng)
            assert env["tail_of"](value) == reference(value, None, None, None), (
                plan.form.mc_name, hex(value))
        checked += 1
    assert checked > 300


@pytest.mark.parametrize("target", TARGETS)
def test_remembered_tails_depend_only_on_the_tail_bits(target):
    # A modifier reader reads no bit of a table slot's field: a tail remembered for the
    # word's tail bits is the word's tail (the bits outside are drawn at random).
    rng = random.Random(f"tail-bits-{target}")
    fmt_size = {}
    for plan in _forms_with_readers(target):
        if plan.form.enc in ("DPP", "SDWA", "MAI_SCALE") or plan.modifiers_touch_operands:
            continue  # (not remembered; a reader that touches operands has no tail alone)
        bits = tail_bits(plan)
        tail = _modifier_text(plan).__closure__  # (the reader and printer, not remembered)
        reference = next(c.cell_contents for c in tail if callable(c.cell_contents)
                         and c.cell_contents.__name__ == "tail")
        size = fmt_size.setdefault(plan.form.format, 8 * FORMATS[plan.form.format].size)
        for _ in range(10):
            value = _random_word(plan, rng)
            other = value ^ (rng.getrandbits(size) & ~bits)
            try:
                want = reference(value, None, None, None)
            except (AsterismError, KeyError):
                continue
            assert reference(other, None, None, None) == want, (plan.form.mc_name, hex(value))
