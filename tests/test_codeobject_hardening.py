"""Crafted code objects and metadata against raise, disasm, stats and hazards: each reported
case gives a one-line located error or the right result."""

from __future__ import annotations

import copy
import dataclasses
import struct
import subprocess
from pathlib import Path

import pytest
from codeobject_crafting import (
    SPACED_ASM,
    deep_note,
    with_metadata,
    with_metadata_note,
    with_symbol_size,
)

from asterism import api
from asterism.cli.main import main
from asterism.errors import AsterismError, CodeObjectError, ParseError
from asterism.ir import parse_ir, print_ir, raise_module
from asterism.ir.raising import raise_file
from asterism.mc.codeobject import read_code_object
from asterism.mc.codeobject.elf import parse_elf
from asterism.mc.kernel_abi import kernarg_layout, kernel_args_from_metadata
from asterism.mc.lossless import reassemblable_text
from asterism.mc.parser import parse_asm
from asterism.profile.stats import code_object_stats

GEMM = "aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co"
FMHA = "aiter_gfx942_fmha_fwd_hd128_bf16_rtz.co"


def _sample(shared_data: Path, name: str = GEMM) -> bytes:
    return (shared_data / "codeobjects" / name).read_bytes()


def _mutated(shared_data: Path, change) -> bytes:
    """The GEMM sample with `change(metadata)` applied, re-packed."""
    meta = copy.deepcopy(read_code_object(_sample(shared_data)).metadata)
    change(meta)
    return with_metadata(_sample(shared_data), meta)


def _arg(n: int, key: str, value):
    return lambda m: m["amdhsa.kernels"][0][".args"][n].__setitem__(key, value)


def _kernel(key: str, value):
    return lambda m: m["amdhsa.kernels"][0].__setitem__(key, value)


def _cli_error(capsys, tmp_path: Path, argv: list[str]) -> str:
    """Run the CLI expecting exit 1 with one error line, no traceback, no output file."""
    out = tmp_path / "out.txt"
    assert main([*argv, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    # ("error: ..." or, located, "file:line:col: error: ...")
    assert len(lines) == 1 and (lines[0].startswith("error: ") or ": error: " in lines[0]), err
    assert not out.exists()
    return lines[0]


# ------------------------------------------------------------- 1. argument offsets and sizes

@pytest.mark.parametrize(("change", "expected"), [
    # (a 4 KB file with this offset used to be padded byte by byte: 4.7 GB after 100 s)
    (_arg(2, ".offset", 4294967295),
     r"amdhsa\.kernels\[0\]\.args\[2\]\.offset: 4294967295 is out of range: must be an "
     r"integer in \[0, 65536\]"),
    (_arg(2, ".offset", 4000),
     r"args\[2\]\.offset: 4000 \+ size 8 runs past the kernarg segment \(336 bytes, "
     r"\.kernarg_segment_size\)"),
    (_arg(2, ".size", 60000), r"args\[2\]\.offset: 16 \+ size 60000 runs past"),
    (_kernel(".kernarg_segment_size", 1 << 20),
     r"kernels\[0\]\.kernarg_segment_size: 1048576 is out of range"),
])
def test_argument_offsets_are_bounded_by_the_segment(shared_data, tmp_path, capsys, change,
                                                     expected) -> None:
    data = _mutated(shared_data, change)
    with pytest.raises(CodeObjectError, match=expected):
        raise_file(data)
    path = tmp_path / "K.co"
    path.write_bytes(data)
    line = _cli_error(capsys, tmp_path, ["raise", str(path)])
    assert line.startswith(f"error: {path}: .amdgpu_metadata: amdhsa.kernels[0]")


def test_gaps_are_padded_with_aligned_pieces() -> None:
    """A gap becomes the fewest naturally aligned pieces (not one byte each), so the IR's
    natural layout puts every argument at its metadata offset."""
    args = kernel_args_from_metadata([
        {".name": "a", ".offset": 0, ".size": 8, ".value_kind": "global_buffer"},
        {".name": "b", ".offset": 4096, ".size": 8, ".value_kind": "global_buffer"},
        {".name": "c", ".offset": 4105, ".size": 1, ".value_kind": "by_value"},
        {".name": "d", ".offset": 4116, ".size": 4, ".value_kind": "by_value"},
    ])
    pads = [a for a in args if a.name.startswith("_pad")]
    # [8, 4096): 511 eight-byte pieces; [4104, 4105): one byte; [4106, 4116): 2 + 4 + 4
    assert len(pads) == 511 + 1 + 3
    assert [(a.offset, a.size) for a in pads[-4:]] == [(4104, 1), (4106, 2), (4108, 4),
                                                      (4112, 4)]
    laid, _size = kernarg_layout([dataclasses.replace(a, offset=-1) for a in args])
    offsets = {e[".name"]: e[".offset"] for e in laid if ".name" in e}
    assert (offsets["a"], offsets["b"], offsets["c"], offsets["d"]) == (0, 4096, 4105, 4116)


def test_arguments_the_ir_cannot_place_are_named() -> None:
    with pytest.raises(AsterismError, match=r"args\[1\]\.offset: 4 is not where the IR can "
                                            r"put a 8-byte argument"):
        kernel_args_from_metadata([
            {".offset": 0, ".size": 8, ".value_kind": "global_buffer"},
            {".offset": 4, ".size": 8, ".value_kind": "global_buffer"}], ("args",))
    with pytest.raises(AsterismError, match=r"args\[0\]\.size: a by_value argument of 12 "
                                            "bytes"):
        kernel_args_from_metadata([{".offset": 0, ".size": 12, ".value_kind": "by_value"}],
                                  ("args",))


# ------------------------------------------------------------- 2. field types and ranges

@pytest.mark.parametrize(("change", "expected"), [
    (_arg(0, ".access", "sideways"),
     r"args\[0\]\.access: 'sideways' is not one of read_only, read_write, write_only"),
    (_arg(1, ".size", (1 << 64) - 1),
     r"args\[1\]\.size: 18446744073709551615 is out of range"),
    (_kernel(".max_flat_workgroup_size", "lots"),
     r"kernels\[0\]\.max_flat_workgroup_size: must be an integer in \[1, 1024\], got 'lots'"),
    (_kernel(".group_segment_fixed_size", 1 << 40),
     r"group_segment_fixed_size: 1099511627776 is out of range: must be an integer in "
     r"\[0, 4294967295\]"),
    (_kernel(".reqd_workgroup_size", [256, 1]),
     r"reqd_workgroup_size: has 2 entries, must have 3"),
    (_arg(0, ".value_kind", "telepathy"), r"args\[0\]\.value_kind: 'telepathy' is not one of"),
    (lambda m: m["amdhsa.kernels"][0][".args"][0].pop(".offset"),
     r"args\[0\]: has no \.offset \(required\)"),
    (lambda m: m.__setitem__("amdhsa.kernels", {"k": 1}),
     r"amdhsa\.kernels: must be a list, got a map of 1"),
    (_kernel(".unknown_vendor_key", {"a": None}),
     r"kernels\[0\]\.unknown_vendor_key\.a: nil is not a metadata value"),
])
def test_bad_metadata_fields_are_named(shared_data, tmp_path, capsys, change,
                                       expected) -> None:
    data = _mutated(shared_data, change)
    with pytest.raises(CodeObjectError, match=expected):
        raise_file(data)
    path = tmp_path / "K.co"
    path.write_bytes(data)
    for verb in ("raise", "stats", "disasm"):
        assert f"{path}: .amdgpu_metadata: " in _cli_error(capsys, tmp_path, [verb, str(path)])


def test_unknown_keys_are_kept(shared_data) -> None:
    data = _mutated(shared_data, _kernel(".vendor_note", {"level": [1, 2, {"x": "y"}]}))
    again = api.compile(parse_ir(print_ir(raise_file(data))))
    assert read_code_object(again).metadata == read_code_object(data).metadata


def test_deeply_nested_metadata_note(shared_data, tmp_path, capsys) -> None:
    """A note nested 1000 deep (within MessagePack's own limit) is refused by depth, not
    by a RecursionError of whatever walks it first; past MessagePack's limit it is not
    valid MessagePack."""
    data = with_metadata_note(_sample(shared_data), deep_note(1000))
    with pytest.raises(CodeObjectError, match=r"x\[0\]\[0\].*more\).*: nested more than 32 levels"):
        read_code_object(data)
    path = tmp_path / "K.co"
    path.write_bytes(data)
    assert "nested more than 32 levels deep" in _cli_error(capsys, tmp_path, ["raise", str(path)])
    with pytest.raises(CodeObjectError, match="not valid MessagePack"):
        read_code_object(with_metadata_note(_sample(shared_data), deep_note(5000)))


def _asm_with(old: str, new: str) -> str:
    text = SPACED_ASM.format(version=5, minor=2)
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(("old", "new", "expected"), [
    (".size:           8", ".size:           " + "9" * 400,
     r"args\[0\]\.size: an integer of 400 digits does not fit 64 bits"),
    (".size:           8", ".size:           " + "9" * 5000,
     r"integer literal of 5000 digits \(at most 1000\)"),
    (".name:           a", ".name:           a\n        .access:         sideways",
     r"args\[0\]\.access: 'sideways' is not one of"),
    (".max_flat_workgroup_size: 64", ".max_flat_workgroup_size: lots",
     r"max_flat_workgroup_size: must be an integer in \[1, 1024\], got 'lots'"),
    (".offset:         16", ".offset:         0x100000000",
     r"args\[1\]\.offset: 4294967296 is out of range"),
])
def test_bad_asm_metadata_fields_are_named_at_their_line(tmp_path, capsys, old, new,
                                                         expected) -> None:
    text = _asm_with(old, new)
    with pytest.raises(ParseError, match=expected) as info:
        api.assemble(text)
    field = new.split(":")[0].strip().splitlines()[-1] if "\n" in new else old.split(":")[0]
    line = next(n for n, t in enumerate(text.splitlines(), 1) if new.splitlines()[-1] in t)
    assert info.value.location.line == line, field
    path = tmp_path / "k.s"
    path.write_text(text)
    assert f"{path}:{line}:" in _cli_error(capsys, tmp_path, ["raise", str(path)])


def test_deeply_nested_asm_metadata(tmp_path, capsys) -> None:
    deep = "".join(" " * n + f"k{n}:\n" for n in range(1, 400)) + " " * 400 + "k: 1\n"
    text = _asm_with("amdhsa.target:", "deep:\n" + deep + "amdhsa.target:")
    with pytest.raises(ParseError, match="YAML nested more than 64 levels deep"):
        api.assemble(text)
    path = tmp_path / "k.s"
    path.write_text(text)
    assert "nested more than 64 levels" in _cli_error(capsys, tmp_path, ["raise", str(path)])


# ------------------------------------------------------------- 3. symbol sizes

def test_symbol_sizes_are_bounded_by_their_section(shared_data, tmp_path, capsys) -> None:
    """A kernel symbol claiming 256 MiB of code used to make `stats` walk it 4 bytes at a
    time (hours); the reader refuses it before anything walks the code."""
    data = _sample(shared_data)
    name = read_code_object(data).kernels[0].name
    bad = with_symbol_size(data, name, 256 << 20)
    expected = (r"symbol size 268435456 at \.text offset 0x0 runs past the end of \.text "
                r"\(6808 bytes\)")
    with pytest.raises(CodeObjectError, match=expected):
        code_object_stats(bad)
    path = tmp_path / "K.co"
    path.write_bytes(bad)
    assert _cli_error(capsys, tmp_path, ["stats", str(path)]).startswith(f"error: {path}: ")
    label = "label_0196"
    with pytest.raises(CodeObjectError, match=f"symbol {label}: 4294967296 bytes at 0x3958 "
                                              r"lie outside its section \.text"):
        read_code_object(with_symbol_size(_sample(shared_data, FMHA), label, 1 << 32))


# ------------------------------------------------------------- 4. code object versions

def _sections(data: bytes) -> dict[str, bytes]:
    """Every section's contents but .comment (which names the producer)."""
    return {s.name: s.data for s in parse_elf(data).sections if s.name != ".comment"}


@pytest.mark.parametrize("name", [GEMM, FMHA, "aiter_gfx950_fmha_fwd_hd128_bf16.co"])
def test_raise_keeps_the_shipped_objects_version(shared_data, name) -> None:
    """The AITER objects are v6 (ABI version 4) with amdhsa.version [1, 0]: raise + compile
    keeps both, and the note byte for byte."""
    data = _sample(shared_data, name)
    again = api.compile(parse_ir(print_ir(raise_file(data))))
    a, b = parse_elf(data), parse_elf(again)
    assert (b.header.abi_version, b.header.flags) == (a.header.abi_version, a.header.flags)
    assert a.header.abi_version == 4
    assert b.section(".note").data == a.section(".note").data
    assert b.section(".text").data == a.section(".text").data


@pytest.mark.llvm
def test_shipped_objects_versions_as_llvm_reads_them(shared_data, llvm_readelf,
                                                     tmp_path) -> None:
    path = tmp_path / "again.co"
    path.write_bytes(api.compile(parse_ir(print_ir(raise_file(_sample(shared_data))))))

    def header_and_version(p) -> tuple[str, list[str]]:
        out = subprocess.run([llvm_readelf, "-h", "--notes", str(p)], capture_output=True,
                             text=True, check=True).stdout
        abi = next(line for line in out.splitlines() if "ABI Version" in line)
        version = out.split("amdhsa.version:")[1].split()[:4]
        return abi, version

    assert header_and_version(shared_data / "codeobjects" / GEMM) == \
        header_and_version(path) == ("  ABI Version:                       4",
                                     ["-", "1", "-", "0"])


@pytest.mark.llvm
@pytest.mark.parametrize("version", [4, 5, 6])
def test_hand_made_versions_come_back(llvm_mc, ld_lld, tmp_path, version) -> None:
    """llvm-mc --amdhsa-code-object-version=N + ld.lld: raise + compile gives every section
    (.note with the version's metadata, .text, .rodata, symbols) and the header back;
    disasm --reassemblable + asm the version, note, code and descriptor."""
    minor = {4: 1, 5: 2, 6: 2}[version]
    (tmp_path / "k.s").write_text(SPACED_ASM.format(version=version, minor=minor))
    subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", "-mcpu=gfx942",
                    f"--amdhsa-code-object-version={version}", "-filetype=obj",
                    str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")], check=True)
    subprocess.run([ld_lld, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.co")],
                   check=True)
    data = (tmp_path / "k.co").read_bytes()
    original = parse_elf(data)
    assert original.header.abi_version == version - 2
    raised = api.compile(parse_ir(print_ir(raise_file(data))))
    reassembled = api.assemble(reassemblable_text(data))
    for again in (raised, reassembled):
        header = parse_elf(again).header
        assert (header.abi_version, header.flags) == (original.header.abi_version,
                                                      original.header.flags)
        for name in (".note", ".text", ".rodata"):
            assert _sections(again)[name] == _sections(data)[name], name
    assert _sections(raised) == _sections(data)


# ------------------------------------------------------------- 5. label names

def test_raise_keeps_label_names_ending_in_digits(shared_data) -> None:
    """docs/raise.md: labels keep their exact names; AITER's `label_0196` (digits after the
    underscore) used to become `.L0x658`."""
    data = _sample(shared_data, FMHA)
    ir = print_ir(raise_file(data))
    assert "^label_0196:" in ir and "^label_0B8C:" in ir and "^.L0x" not in ir
    again = api.compile(parse_ir(ir))

    def labels(blob: bytes) -> list[tuple[str, int]]:
        return sorted((s.name, s.offset) for s in read_code_object(blob).symbols
                      if s.section == ".text")

    assert len(labels(data)) == 14 and labels(again) == labels(data)


# ------------------------------------------------------------- 6. hazards and raise agree

def test_hazards_and_raise_read_spaced_arguments_alike(tmp_path, capsys) -> None:
    """Arguments 16 bytes apart: `raise` padded them, `hazards` refused them ("not the
    natural layout"); both read them through kernel_abi.kernel_args_from_metadata now."""
    text = SPACED_ASM.format(version=5, minor=2)
    path = tmp_path / "k.s"
    path.write_text(text)
    assert main(["hazards", str(path)]) == 0
    assert "no hazard violations" in capsys.readouterr().err
    via_hazards = print_ir(raise_module(parse_asm(text)))
    via_raise = print_ir(raise_file(text.encode()))
    signature = "args(a: buffer, _pad8: i64, b: buffer)"
    assert signature in via_hazards and signature in via_raise


# ------------------------------------------------------------- 7. reserved SGPRs

def test_stats_sgprs_are_the_descriptors(shared_data) -> None:
    """Hand-computed from the descriptor: COMPUTE_PGM_RSRC1 (byte 48) bits 6-9 hold
    GRANULATED_WAVEFRONT_SGPR_COUNT, (count + 1) * 8 SGPRs; nothing in the descriptor
    reserves VCC/FLAT_SCRATCH/XNACK_MASK."""
    data = _sample(shared_data)
    rodata = parse_elf(data).section(".rodata").data
    rsrc1 = struct.unpack_from("<I", rodata, 48)[0]
    allocated = ((rsrc1 >> 6 & 0xF) + 1) * 8
    (s,) = code_object_stats(data)
    assert allocated == 112
    assert (s.sgprs, s.sgprs_reserved, s.sgprs_total) == (allocated, 0, allocated)


def test_yaml_edge_cases_are_values_or_located_errors() -> None:
    """A trailing "-" used to raise IndexError; an integer of more than 4300 digits Python's
    ValueError."""
    from asterism.mc import yaml_subset

    assert yaml_subset.load("a:\n  -\nb: 1") == {"a": [None], "b": 1}
    assert yaml_subset.load("a:\n  -") == {"a": [None]}
    with pytest.raises(ParseError, match=r"<m>:2:1: integer literal of 5000 digits"):
        yaml_subset.load("x: 1\na: " + "9" * 5000, "<m>")
