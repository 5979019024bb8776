"""Code objects (asterism.mc.codeobject) without LLVM: samples, descriptor, metadata, errors.

The LLVM oracle tests (ld.lld layout, llvm-objdump/readelf views) are in
test_codeobject_llvm.py.
"""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asterism.errors import CodeObjectError
from asterism.mc.codeobject import (
    KERNEL_DESCRIPTOR_SIZE,
    CodeObject,
    ComputePgmRsrc1,
    ComputePgmRsrc2,
    ComputePgmRsrc3,
    KernargPreload,
    KernelCodeProperties,
    KernelDescriptor,
    KernelSymbol,
    decode_metadata,
    encode_metadata,
    make_kernel_descriptor,
    make_kernel_metadata,
    make_metadata,
    read_code_object,
    write_code_object,
    write_file_atomic,
)
from asterism.mc.codeobject.elf import build_gnu_hash, gnu_hash, parse_elf, sysv_hash
from asterism.mc.codeobject.reader import path_text
from asterism.target import get_target

SAMPLES_DIR = Path(__file__).resolve().parent / "data" / "shared" / "codeobjects"
SAMPLES = sorted(SAMPLES_DIR.glob("*.co"))
S_ENDPGM = b"\x00\x00\x81\xbf"
S_NOP = b"\x00\x00\x80\xbf"


def _sample_bytes() -> list[bytes]:
    return [p.read_bytes() for p in SAMPLES]


@pytest.fixture(scope="module")
def samples(shared_data: Path) -> dict[str, bytes]:
    files = sorted((shared_data / "codeobjects").glob("*.co"))
    assert len(files) == 5  # the shared samples: 2 GEMMs, 3 flash-attention forwards
    return {p.name: p.read_bytes() for p in files}


def _section(data: bytes, name: str) -> bytes:
    elf = parse_elf(data)
    sec = elf.section(name)
    assert sec is not None, name
    return sec.data


# --- The shared samples ---------------------------------------------------------------------


def test_samples_are_v6_with_xnack_and_sramecc_any(samples) -> None:
    for name, data in samples.items():
        co = read_code_object(data)
        assert co.code_object_version == 6, name
        assert co.target_name == ("gfx950" if "gfx950" in name else "gfx942")
        assert (co.xnack, co.sramecc) == (None, None)
        assert co.e_flags == struct.unpack_from("<I", data, 0x30)[0]
        assert len(co.kernels) == 1
        k = co.kernels[0]
        assert k.metadata[".symbol"] == k.descriptor_name
        assert k.metadata is co.metadata["amdhsa.kernels"][0]
        assert co.text == _section(data, ".text")
        assert k.address == co.text_address + k.offset


def test_sample_fmha_descriptor_fields(samples) -> None:
    co = read_code_object(samples["aiter_gfx942_fmha_fwd_hd128_bf16_rtz.co"])
    k = co.kernels[0]
    kd = k.descriptor
    # Values llvm-objdump -D prints for this descriptor (test_codeobject_llvm checks all).
    assert kd.group_segment_fixed_size == 65536
    assert kd.accum_offset(co.target) == 160
    assert kd.next_free_vgpr(co.target) == 256
    assert kd.sgprs(co.target) == 104
    assert kd.compute_pgm_rsrc1.float_denorm_mode_16_64 == 3
    assert kd.compute_pgm_rsrc2.user_sgpr_count == 2 == kd.implied_user_sgpr_count()
    assert kd.kernel_code_properties.nonzero() == {"enable_sgpr_kernarg_segment_ptr": 1}
    assert k.address - k.descriptor_address == kd.kernel_code_entry_byte_offset == 0x1100
    assert (k.name, k.size) == ("_ZN5aiter23fmha_fwd_hd128_bf16_rtzE", 0)
    assert k.metadata[".kernarg_segment_size"] == 512
    assert len(k.metadata[".args"]) == 110
    assert co.comment.startswith(b"Linker: AMD LLD 20.0.0")
    assert [s.name for s in co.symbols][:2] == ["label_0196", "label_0B8C"]


def test_samples_round_trip_byte_identical(samples) -> None:
    for name, data in samples.items():
        co = read_code_object(data)
        out = write_code_object(co)
        assert out == data, name


def test_samples_round_trip_from_pieces(samples) -> None:
    """Rebuilt from the pieces alone: identical .text, descriptors and metadata."""
    for name, data in samples.items():
        co = read_code_object(data)
        pieces = CodeObject(
            target=co.target.processor_id,
            text=co.text,
            kernels=[KernelSymbol(k.name, k.offset, k.descriptor, k.size, k.metadata)
                     for k in co.kernels],
            metadata=co.metadata,
            code_object_version=co.code_object_version,
        )
        back = read_code_object(write_code_object(pieces))
        assert back.text == co.text, name
        assert [k.descriptor for k in back.kernels] == [k.descriptor for k in co.kernels]
        assert back.metadata == co.metadata
        assert _section(write_code_object(pieces), ".note") == _section(data, ".note")
        assert _section(write_code_object(pieces), ".rodata") == _section(data, ".rodata")


def test_metadata_reencodes_byte_identical(samples) -> None:
    for data in samples.values():
        note = _section(data, ".note")
        namesz, descsz, ntype = struct.unpack_from("<III", note)
        assert (namesz, ntype) == (7, 32)
        desc = note[20:20 + descsz]
        meta = decode_metadata(desc)
        assert list(meta) == ["amdhsa.kernels", "amdhsa.version"]
        assert encode_metadata(meta) == desc
        assert encode_metadata(meta, sort_keys=True) == desc  # LLVM writes keys sorted


def test_edit_a_sample(samples) -> None:
    data = samples["aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co"]
    co = read_code_object(data)
    co.text = co.text[:-4] + S_ENDPGM
    co.kernels[0].metadata[".max_flat_workgroup_size"] = 128
    co.kernels[0].descriptor.group_segment_fixed_size = 1024
    back = read_code_object(write_code_object(co))
    assert back.text.endswith(S_ENDPGM)
    assert back.kernels[0].metadata[".max_flat_workgroup_size"] == 128
    assert back.kernels[0].descriptor.group_segment_fixed_size == 1024
    co.target = get_target("gfx950:xnack-")
    back = read_code_object(write_code_object(co))
    assert back.target.processor_id == "gfx950:xnack-" and back.e_flags == 0x64F


# --- Kernel descriptor ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls",
    [ComputePgmRsrc1, ComputePgmRsrc2, ComputePgmRsrc3, KernelCodeProperties, KernargPreload],
)
def test_register_layouts_cover_every_bit_once(cls) -> None:
    covered = 0
    for name, shift, width in cls.LAYOUT:
        mask = ((1 << width) - 1) << shift
        assert not covered & mask, name
        covered |= mask
    assert covered == (1 << cls.BITS) - 1
    assert [n for n, _, _ in cls.LAYOUT] == [f.name for f in dataclasses.fields(cls)]


@given(st.binary(min_size=KERNEL_DESCRIPTOR_SIZE, max_size=KERNEL_DESCRIPTOR_SIZE))
def test_descriptor_bytes_round_trip(data: bytes) -> None:
    assert KernelDescriptor.from_bytes(data).to_bytes() == data


def test_descriptor_bit_positions() -> None:
    kd = KernelDescriptor()
    kd.compute_pgm_rsrc1.granulated_wavefront_sgpr_count = 0xF
    kd.compute_pgm_rsrc2.granulated_lds_size = 0x1FF
    kd.compute_pgm_rsrc3.tg_split = 1
    kd.kernel_code_properties.uses_dynamic_stack = 1
    kd.kernarg_preload.offset = 3
    kd.kernel_code_entry_byte_offset = -64
    raw = kd.to_bytes()
    rsrc3, rsrc1, rsrc2, props, preload = struct.unpack_from("<IIIHH", raw, 44)
    assert (rsrc1, rsrc2, rsrc3, props, preload) == (0x3C0, 0x1FF << 15, 1 << 16, 1 << 11,
                                                     3 << 7)
    assert struct.unpack_from("<q", raw, 16)[0] == -64


def test_descriptor_errors() -> None:
    with pytest.raises(CodeObjectError, match="needs 64 bytes, got 63"):
        KernelDescriptor.from_bytes(bytes(63))
    kd = KernelDescriptor()
    kd.compute_pgm_rsrc1.granulated_workitem_vgpr_count = 64
    with pytest.raises(CodeObjectError, match="granulated_workitem_vgpr_count = 64 does not fit"):
        kd.to_bytes()
    with pytest.raises(CodeObjectError, match="kernarg_size"):
        KernelDescriptor(kernarg_size=-1).to_bytes()
    with pytest.raises(CodeObjectError, match="unknown kernel descriptor field 'bogus'"):
        make_kernel_descriptor("gfx942", next_free_vgpr=1, next_free_sgpr=1, bogus=1)


def test_make_kernel_descriptor_hand_computed() -> None:
    kd = make_kernel_descriptor("gfx942", next_free_vgpr=37, next_free_sgpr=20, accum_offset=20,
                                enable_sgpr_kernarg_segment_ptr=1, kernarg_size=16)
    r1 = kd.compute_pgm_rsrc1
    assert (r1.granulated_workitem_vgpr_count, r1.granulated_wavefront_sgpr_count) == (4, 3)
    assert (r1.float_denorm_mode_16_64, r1.enable_dx10_clamp, r1.enable_ieee_mode) == (3, 1, 1)
    assert kd.compute_pgm_rsrc3.accum_offset == 4
    assert kd.compute_pgm_rsrc2.enable_sgpr_workgroup_id_x == 1
    assert kd.compute_pgm_rsrc2.user_sgpr_count == 2
    assert kd.kernarg_size == 16
    # The register words llvm-mc writes for these directives (see test_codeobject_llvm).
    assert struct.unpack_from("<III", kd.to_bytes(), 44) == (0x4, 0x00AC00C4, 0x84)


# --- Metadata -------------------------------------------------------------------------------


def test_metadata_helpers() -> None:
    entry = make_kernel_metadata("k", kernarg_segment_size=8, sgpr_count=16, vgpr_count=8,
                                 reqd_workgroup_size=[64, 1, 1])
    assert list(entry) == sorted(entry)
    assert entry[".symbol"] == "k.kd" and entry[".reqd_workgroup_size"] == [64, 1, 1]
    meta = make_metadata([entry], "gfx942:xnack-", code_object_version=5)
    assert meta["amdhsa.target"] == "amdgcn-amd-amdhsa--gfx942:xnack-"
    assert meta["amdhsa.version"] == [1, 2]
    assert decode_metadata(encode_metadata(meta)) == meta
    with pytest.raises(CodeObjectError, match="not valid MessagePack"):
        decode_metadata(b"\xc1")
    with pytest.raises(CodeObjectError, match="must hold a map"):
        decode_metadata(msgpack.packb([1, 2]))
    with pytest.raises(CodeObjectError, match="cannot be encoded"):
        encode_metadata({"x": object()})


def test_metadata_keeps_key_order() -> None:
    meta = {"b": 1, "a": {"z": 1, "y": 2}}
    assert list(decode_metadata(encode_metadata(meta))["a"]) == ["z", "y"]
    assert list(decode_metadata(encode_metadata(meta, sort_keys=True))) == ["a", "b"]


# --- Writing from pieces --------------------------------------------------------------------


def _pieces(**over) -> dict:
    text = S_NOP + S_ENDPGM + S_NOP * 62 + S_ENDPGM
    kernels = [
        KernelSymbol("first", 0, make_kernel_descriptor("gfx942", next_free_vgpr=4,
                                                        next_free_sgpr=8), size=8),
        KernelSymbol("second", 256, make_kernel_descriptor("gfx942", next_free_vgpr=300,
                                                           next_free_sgpr=30,
                                                           accum_offset=64), size=4),
    ]
    for k in kernels:
        k.metadata = make_kernel_metadata(k.name, kernarg_segment_size=0, sgpr_count=16,
                                          vgpr_count=8)
    base = {"target": "gfx942:sramecc+:xnack-", "text": text, "kernels": kernels}
    base.update(over)
    return base


def test_write_from_pieces_and_read_back() -> None:
    data = write_code_object(**_pieces())
    co = read_code_object(data)
    assert co.target.processor_id == "gfx942:sramecc+:xnack-"
    assert co.code_object_version == 5 and data[8] == 3  # v5 by default
    assert struct.unpack_from("<HI", data, 0x12)[0] == 224
    assert [(k.name, k.offset, k.size) for k in co.kernels] == [("first", 0, 8),
                                                              ("second", 256, 4)]
    for k in co.kernels:
        assert k.descriptor_address % 64 == 0
        assert k.address % 256 == 0
        assert k.address - k.descriptor_address == k.descriptor.kernel_code_entry_byte_offset
    assert co.metadata["amdhsa.version"] == [1, 2]
    assert co.metadata["amdhsa.target"] == "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
    assert [e[".name"] for e in co.metadata["amdhsa.kernels"]] == ["first", "second"]
    assert co.kernels[1].descriptor.accum_offset(co.target) == 64
    # Writing what we read gives the same bytes again.
    assert write_code_object(co) == data


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"text": "abc"}, "text must be bytes"),
        ({"code_object_version": 3}, "writing code object v3 is not supported"),
        ({"code_object_version": 9}, "unknown code object version 9"),
        ({"target": "gfx1234"}, "unknown target 'gfx1234'"),
        ({"bogus": 1}, "unexpected keyword argument 'bogus'"),
    ],
)
def test_writer_rejects_bad_pieces(over, message) -> None:
    with pytest.raises(CodeObjectError, match=message):
        write_code_object(**_pieces(**over))


def test_writer_rejects_bad_kernels() -> None:
    p = _pieces()
    p["kernels"][1].offset = 128
    with pytest.raises(CodeObjectError, match="not a multiple of 256"):
        write_code_object(**p)
    p["kernels"][1].offset = 512
    with pytest.raises(CodeObjectError, match="outside .text"):
        write_code_object(**p)
    p = _pieces()
    p["kernels"][1].name = "first"
    with pytest.raises(CodeObjectError, match="kernel 'first' appears twice"):
        write_code_object(**p)
    p = _pieces()
    p["kernels"][0].size = 4096
    with pytest.raises(CodeObjectError, match="runs past the end"):
        write_code_object(**p)
    with pytest.raises(CodeObjectError, match="not both"):
        write_code_object(CodeObject(**_pieces()), text=b"")


def test_write_file_atomic(tmp_path: Path) -> None:
    out = tmp_path / "k.hsaco"
    data = write_code_object(**_pieces())
    write_file_atomic(out, data)
    assert out.read_bytes() == data
    write_file_atomic(out, b"second")
    assert out.read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.hsaco"]  # no temp file left
    with pytest.raises(CodeObjectError, match="cannot write"):
        write_file_atomic(tmp_path / "missing" / "k.hsaco", data)
    assert not (tmp_path / "missing").exists()


# --- Hash tables (values from the ELF gABI and glibc's documentation) -----------------------


def test_hash_functions() -> None:
    assert sysv_hash(b"") == 0 and gnu_hash(b"") == 5381
    assert gnu_hash(b"printf") == 0x156B2BB8
    assert sysv_hash(b"printf") == 0x077905A6
    assert len(build_gnu_hash(["a", "b"], 1)) == 16 + 8 + 4 + 8


# --- Bad input ------------------------------------------------------------------------------


def _valid() -> bytes:
    return write_code_object(**_pieces())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: b"", "not an ELF file"),
        (lambda d: b"MZ\x90\x00" + d[4:], "not an ELF file"),
        (lambda d: d[:40], "truncated ELF file: 40 bytes"),
        (lambda d: d[:4] + b"\x01" + d[5:], "not a 64-bit ELF file"),
        (lambda d: d[:5] + b"\x02" + d[6:], "not a little-endian ELF file"),
        (lambda d: d[:0x12] + struct.pack("<H", 62) + d[0x14:], "e_machine is 62"),
        (lambda d: d[:7] + b"\x00" + d[8:], "not an HSA code object"),
        (lambda d: d[:8] + b"\x09" + d[9:], "unknown AMDGPU HSA ABI version 9"),
        (lambda d: d[:0x30] + struct.pack("<I", 0x5FF) + d[0x34:], "unknown EF_AMDGPU_MACH"),
        (lambda d: d[:-100], "truncated ELF file"),
        (lambda d: d[:len(d) // 2], "truncated ELF file"),
    ],
)
def test_read_errors(mutate, message) -> None:
    with pytest.raises(CodeObjectError, match=message):
        read_code_object(mutate(_valid()))


def test_read_error_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.co"
    bad.write_bytes(b"hello")
    with pytest.raises(CodeObjectError, match=r"bad\.co: not an ELF file"):
        read_code_object(bad)
    with pytest.raises(CodeObjectError, match=r"nope\.co: cannot read code object"):
        read_code_object(tmp_path / "nope.co")


@given(st.text(alphabet="/.ab", max_size=10))
def test_path_text_is_pathlib_text(text: str) -> None:
    # (the reader names a file as pathlib would, without importing pathlib)
    assert path_text(text) == str(Path(text))


def test_read_errors_name_the_file_as_pathlib_does(tmp_path: Path) -> None:
    bad = tmp_path / "bad.co"
    bad.write_bytes(b"hello")
    with pytest.raises(CodeObjectError, match=r"^/.*[^/]/bad\.co: not an ELF file"):
        read_code_object(f"/{tmp_path}/./bad.co")
    with pytest.raises(CodeObjectError, match=r"^\.: cannot read code object"):
        read_code_object("")


def _read_only_code_object_errors(data: bytes) -> None:
    """Reading (and re-writing what was read) may fail, but only with CodeObjectError."""
    try:
        co = read_code_object(data)
    except CodeObjectError:
        return
    try:
        write_code_object(co)
    except CodeObjectError:
        pass


_FUZZ = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_INPUTS = _sample_bytes() + [_valid()]


@_FUZZ
@given(st.binary(max_size=2048))
def test_fuzz_random_bytes(data: bytes) -> None:
    _read_only_code_object_errors(data)
    _read_only_code_object_errors(b"\x7fELF\x02\x01\x01\x40\x04" + data)


@_FUZZ
@given(st.sampled_from(range(len(_INPUTS))),
       st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1,
                max_size=8))
def test_fuzz_byte_mutations(which: int, edits: list[tuple[int, int]]) -> None:
    data = bytearray(_INPUTS[which])
    for pos, value in edits:
        # Half the edits hit the headers and tables, where a flip matters most.
        pos = pos % 0x300 if pos & 1 else pos % len(data)
        data[pos] = value
    _read_only_code_object_errors(bytes(data))


@_FUZZ
@given(st.sampled_from(range(len(_INPUTS))), st.integers(0, 1 << 20))
def test_fuzz_truncations(which: int, cut: int) -> None:
    data = _INPUTS[which]
    _read_only_code_object_errors(data[:cut % len(data)])


def test_fuzz_header_fields_exhaustively() -> None:
    """Every header and section-header byte of a sample set to 0x00, 0x7f and 0xff."""
    data = _INPUTS[0]
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    positions = list(range(64 + 8 * 56)) + list(range(shoff, len(data)))
    for pos in positions:
        for value in (0x00, 0x7F, 0xFF):
            mutated = bytearray(data)
            mutated[pos] = value
            _read_only_code_object_errors(bytes(mutated))


def test_kernels_without_metadata_get_an_entry_from_the_descriptor() -> None:
    p = _pieces()
    for k in p["kernels"]:
        k.metadata = {}
    p["kernels"][1].descriptor.kernarg_size = 24
    co = read_code_object(write_code_object(**p))
    entries = co.metadata["amdhsa.kernels"]
    assert [e[".symbol"] for e in entries] == ["first.kd", "second.kd"]
    assert entries[1][".kernarg_segment_size"] == 24
    assert entries[1][".vgpr_count"] == 304  # 300 rounded to the granule of 8
    assert entries[0][".sgpr_count"] == 16  # 8 + 6 extra, rounded to 8
    assert co.kernels[1].metadata is entries[1]
