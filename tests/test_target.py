"""Chip facts (asterism.target) against LLVM 22 and hand-computed values."""

from __future__ import annotations

import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

from asterism.errors import TargetError
from asterism.mc.llvm_tools import INSTALL_HINT, find_llvm_tool
from asterism.target import (
    DEFAULT_CODE_OBJECT_VERSION,
    EM_AMDGPU,
    abi_version,
    accum_offset,
    accum_offset_field,
    accum_offset_from_field,
    code_object_version,
    decode_e_flags,
    encode_e_flags,
    extra_sgprs,
    get_target,
    granulated_sgpr_count,
    granulated_vgpr_count,
    known_targets,
    lds_granules,
    occupancy,
    sgprs_from_granulated,
    target_for_mach,
    total_vgprs,
    vgprs_from_granulated,
)

TARGETS = ("gfx942", "gfx950")


@pytest.fixture(scope="session")
def llc() -> str:
    """Path of llc (LLVM 22); conftest has no fixture for it, so this mirrors theirs."""
    path = find_llvm_tool("llc")
    if path is None:
        if os.environ.get("ASTERISM_REQUIRE_LLVM") == "1":
            pytest.fail(f"ASTERISM_REQUIRE_LLVM=1 but llc is missing. {INSTALL_HINT}")
        pytest.skip(INSTALL_HINT)
    return path


# --- Names and facts -----------------------------------------------------------------------


def test_known_targets() -> None:
    assert set(TARGETS) <= set(known_targets())


@pytest.mark.parametrize(
    ("text", "name", "xnack", "sramecc"),
    [
        ("gfx942", "gfx942", None, None),
        ("  gfx950 ", "gfx950", None, None),
        ("gfx942:xnack-", "gfx942", False, None),
        ("gfx942:xnack+:sramecc-", "gfx942", True, False),
        ("amdgcn-amd-amdhsa--gfx942", "gfx942", None, None),
        ("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", "gfx942", False, True),
        ("hipv4-amdgcn-amd-amdhsa--gfx950:xnack+", "gfx950", True, None),
    ],
)
def test_get_target_parses_names_and_target_ids(text, name, xnack, sramecc) -> None:
    t = get_target(text)
    assert (t.name, t.xnack, t.sramecc) == (name, xnack, sramecc)
    assert get_target(t.target_id) == t
    assert get_target(t) is t


def test_target_id_prints_features_in_llvm_order() -> None:
    t = get_target("gfx942:xnack-:sramecc+")
    assert t.target_id == "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
    assert get_target("gfx950").target_id == "amdgcn-amd-amdhsa--gfx950"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gfx1234", "unknown target 'gfx1234'; known targets: gfx942, gfx950"),
        ("", "bad target name"),
        ("x86_64-unknown-linux--gfx942", "not an AMDGPU target"),
        ("gfx942:xnack", "bad target feature 'xnack'"),
        ("gfx942:wavefrontsize32+", "unknown target feature 'wavefrontsize32'"),
        ("gfx942:xnack+:xnack-", "given twice"),
        ("amdgcn-amd-amdhsa-gfx942", "cannot read target"),
    ],
)
def test_bad_target_names(text, message) -> None:
    with pytest.raises(TargetError, match=re.escape(message)):
        get_target(text)


def test_unknown_target_lists_known_ones() -> None:
    with pytest.raises(TargetError) as err:
        get_target("gfx90a")
    for name in known_targets():
        assert name in str(err.value)


def test_targets_are_frozen_and_hashable() -> None:
    t = get_target("gfx942")
    with pytest.raises(AttributeError):
        t.wave_size = 32  # type: ignore[misc]
    assert {t: 1}[get_target("gfx942")] == 1


def test_chip_facts() -> None:
    mi300 = get_target("gfx942")
    mi355 = get_target("gfx950")
    for t in (mi300, mi355):
        assert t.wave_size == 64
        assert t.simds_per_cu == 4
        assert t.max_waves_per_simd == 8
        assert t.max_waves_per_cu == 32
        assert t.max_workgroup_size == 1024
        assert t.max_waves_per_workgroup == 16
        assert (t.vgpr.arch, t.vgpr.acc, t.vgpr.unified_per_lane) == (256, 256, 512)
        assert t.vgpr.alloc_granule == t.vgpr.encoding_granule == 8
        assert t.sgpr.addressable == 102
        assert extra_sgprs(t) == 6  # VCC + XNACK_MASK + FLAT_SCRATCH, always (architected)
    assert mi300.compute_units == 304 and mi300.flagship == "MI300X"
    assert mi300.product("MI300A").compute_units == 228
    assert mi355.compute_units == 256 and mi355.flagship == "MI355X"
    assert mi300.lds.bytes_per_workgroup == mi300.lds.bytes_per_cu == 64 * 1024
    assert mi355.lds.bytes_per_workgroup == mi355.lds.bytes_per_cu == 160 * 1024
    assert (mi300.lds.alloc_granule, mi355.lds.alloc_granule) == (512, 2048)
    assert (mi300.elf.mach, mi355.elf.mach) == (0x04C, 0x04F)
    with pytest.raises(TargetError, match="no product 'MI250X'"):
        mi300.product("MI250X")


# --- Register encodings ---------------------------------------------------------------------


def test_register_encodings_hand_computed() -> None:
    t = get_target("gfx942")
    assert total_vgprs(t, 37, 0) == 37
    assert total_vgprs(t, 37, 32) == 40 + 32  # AGPRs start at alignTo(37, 4)
    assert accum_offset(t, 37) == 40 and accum_offset(t, 0) == 4
    assert [granulated_vgpr_count(t, n) for n in (0, 1, 8, 9, 512)] == [0, 0, 0, 1, 63]
    assert vgprs_from_granulated(t, 63) == 512
    # 20 + 6 extra = 26 -> 32 -> 4 granules of 8 -> field 3
    assert granulated_sgpr_count(t, 20) == 3
    assert granulated_sgpr_count(t, 102) == 13
    assert sgprs_from_granulated(t, 13) == 112
    assert accum_offset_field(t, 4) == 0 and accum_offset_field(t, 256) == 63
    assert accum_offset_from_field(t, 63) == 256
    assert lds_granules(t, 513) == 2
    assert lds_granules(get_target("gfx950"), 2049) == 2


@pytest.mark.parametrize("bad", [0, 3, 258, 260, -4])
def test_accum_offset_range(bad) -> None:
    with pytest.raises(TargetError, match="accum_offset"):
        accum_offset_field(get_target("gfx942"), bad)


def test_register_limits() -> None:
    t = get_target("gfx942")
    with pytest.raises(TargetError, match="VGPR count = 257 exceeds"):
        total_vgprs(t, 257)
    with pytest.raises(TargetError, match="next_free_sgpr = 103 exceeds"):
        granulated_sgpr_count(t, 103)
    with pytest.raises(TargetError, match="next_free_vgpr = 513 exceeds"):
        granulated_vgpr_count(t, 513)


def _elf_section(data: bytes, wanted: str) -> tuple[int, bytes]:
    """(address, contents) of a section of an ELF64 file, read with struct only."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + 64 * i) for i in range(shnum)]
    names = headers[shstrndx]
    for name_off, _t, _f, addr, off, size in headers:
        start = names[4] + name_off
        if data[start:data.index(b"\0", start)].decode() == wanted:
            return addr, data[off:off + size]
    raise KeyError(wanted)


# (next_free_vgpr, accum_offset, next_free_sgpr, reserve_vcc)
REGISTER_CASES = [
    (1, 4, 0, 1), (8, 4, 1, 1), (9, 4, 1, 0), (37, 20, 20, 1), (40, 40, 26, 0),
    (64, 64, 95, 1), (100, 32, 96, 1), (128, 128, 100, 0), (255, 252, 101, 1),
    (256, 256, 102, 1), (257, 4, 10, 1), (300, 256, 50, 0), (384, 128, 7, 1), (511, 256, 2, 1),
    (512, 256, 102, 0),
]


@pytest.mark.llvm
@pytest.mark.parametrize("name", TARGETS)
def test_descriptor_register_fields_match_llvm_mc(name, llvm_mc, tmp_path: Path) -> None:
    """Assemble .amdhsa_next_free_vgpr/_sgpr/.amdhsa_accum_offset with llvm-mc; compare bits."""
    t = get_target(name)
    src = [f'.amdgcn_target "amdgcn-amd-amdhsa--{name}"', ".text", "k:", "  s_endpgm", ".rodata"]
    for i, (v, a, s, vcc) in enumerate(REGISTER_CASES):
        src += [f".amdhsa_kernel k{i}", f"  .amdhsa_next_free_vgpr {v}",
                f"  .amdhsa_accum_offset {a}", f"  .amdhsa_next_free_sgpr {s}",
                f"  .amdhsa_reserve_vcc {vcc}", ".end_amdhsa_kernel"]
    (tmp_path / "r.s").write_text("\n".join(src) + "\n")
    subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", f"-mcpu={name}", "-filetype=obj",
                    str(tmp_path / "r.s"), "-o", str(tmp_path / "r.o")], check=True)
    _, rodata = _elf_section((tmp_path / "r.o").read_bytes(), ".rodata")
    for i, (v, a, s, vcc) in enumerate(REGISTER_CASES):
        rsrc3, rsrc1 = struct.unpack_from("<II", rodata, 64 * i + 44)
        assert rsrc1 & 0x3F == granulated_vgpr_count(t, v), (v, a, s)
        assert (rsrc1 >> 6) & 0xF == granulated_sgpr_count(t, s, vcc=bool(vcc)), (v, a, s)
        assert rsrc3 & 0x3F == accum_offset_field(t, a), (v, a, s)


@pytest.mark.llvm
def test_llvm_mc_rejects_what_we_reject(llvm_mc, tmp_path: Path) -> None:
    """The limits we enforce are llvm-mc's: 102 SGPRs, accum_offset in 4..256 step 4."""
    t = get_target("gfx942")
    cases = [
        ((8, 4, 103), lambda: granulated_sgpr_count(t, 103)),
        ((8, 6, 10), lambda: accum_offset_field(t, 6)),
        ((512, 260, 10), lambda: accum_offset_field(t, 260)),
        ((513, 4, 10), lambda: granulated_vgpr_count(t, 513)),
    ]
    for (v, a, s), ours in cases:
        src = (f'.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n.rodata\n.amdhsa_kernel k\n'
               f".amdhsa_next_free_vgpr {v}\n.amdhsa_accum_offset {a}\n"
               f".amdhsa_next_free_sgpr {s}\n.end_amdhsa_kernel\n")
        (tmp_path / "e.s").write_text(src)
        r = subprocess.run([llvm_mc, "-triple", "amdgcn-amd-amdhsa", "-mcpu=gfx942",
                            "-filetype=obj", str(tmp_path / "e.s"), "-o", os.devnull],
                           check=False, capture_output=True, text=True)
        assert r.returncode != 0, (v, a, s)
        with pytest.raises(TargetError):
            ours()


# --- ELF identity ---------------------------------------------------------------------------


def test_abi_versions() -> None:
    assert [abi_version(v) for v in (2, 3, 4, 5, 6)] == [0, 1, 2, 3, 4]
    assert [code_object_version(b) for b in (0, 1, 2, 3, 4)] == [2, 3, 4, 5, 6]
    assert DEFAULT_CODE_OBJECT_VERSION == 5 and EM_AMDGPU == 224
    with pytest.raises(TargetError, match="unknown code object version 7"):
        abi_version(7)
    with pytest.raises(TargetError, match="unknown AMDGPU HSA ABI version 9"):
        code_object_version(9)


@pytest.mark.parametrize(
    ("text", "flags"),
    [
        ("gfx942", 0x54C), ("gfx942:xnack-", 0x64C), ("gfx942:sramecc+:xnack-", 0xE4C),
        ("gfx942:sramecc-:xnack+", 0xB4C), ("gfx950:xnack+", 0x74F), ("gfx950", 0x54F),
    ],
)
def test_e_flags_hand_computed(text, flags) -> None:
    t = get_target(text)
    for version in (4, 5, 6):
        assert encode_e_flags(t, code_object_version=version) == flags
        back = decode_e_flags(flags, code_object_version=version)
        assert back.target == t and (back.xnack, back.sramecc) == (t.xnack, t.sramecc)


def test_e_flags_errors() -> None:
    with pytest.raises(TargetError, match="unknown EF_AMDGPU_MACH 0x0ff"):
        decode_e_flags(0xFF)
    with pytest.raises(TargetError, match="needs code object v6"):
        decode_e_flags(0x0100054C, code_object_version=5)
    assert decode_e_flags(0x0100054C, code_object_version=6).generic_version == 1
    assert target_for_mach(0x4F).name == "gfx950"
    assert encode_e_flags("gfx942", code_object_version=3, xnack=True) == 0x14C


@pytest.mark.llvm
@pytest.mark.parametrize("version", [4, 5, 6])
@pytest.mark.parametrize(
    ("tid", "mattr"),
    [("gfx942", None), ("gfx942:xnack-", "-xnack"), ("gfx942:sramecc+:xnack-", "-xnack,+sramecc"),
     ("gfx942:sramecc-:xnack+", "+xnack,-sramecc"), ("gfx950", None),
     ("gfx950:xnack+", "+xnack")],
)
def test_e_flags_match_llvm_mc(version, tid, mattr, llvm_mc, tmp_path: Path) -> None:
    cpu = tid.split(":")[0]
    (tmp_path / "f.s").write_text(f'.amdhsa_code_object_version {version}\n'
                                  f'.amdgcn_target "amdgcn-amd-amdhsa--{tid}"\n'
                                  ".text\ns_endpgm\n")
    cmd = [llvm_mc, "-triple", "amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-filetype=obj",
           str(tmp_path / "f.s"), "-o", str(tmp_path / "f.o")]
    if mattr:
        cmd.append(f"-mattr={mattr}")
    subprocess.run(cmd, check=True)
    data = (tmp_path / "f.o").read_bytes()
    e_machine, = struct.unpack_from("<H", data, 0x12)
    e_flags, = struct.unpack_from("<I", data, 0x30)
    assert e_machine == EM_AMDGPU
    assert data[8] == abi_version(version)
    assert data[7] == 64  # ELFOSABI_AMDGPU_HSA
    assert e_flags == encode_e_flags(get_target(tid), code_object_version=version)
    assert decode_e_flags(e_flags, code_object_version=version).target == get_target(tid)


# --- Occupancy ------------------------------------------------------------------------------


def test_occupancy_hand_computed() -> None:
    t = get_target("gfx942")
    # Nothing used: 8 waves, every limit at the maximum.
    o = occupancy(t, vgprs=1, sgprs=0)
    assert o.waves_per_simd == 8 and "waves" in o.limited_by
    # 72 unified VGPRs (40 arch aligned to 4... 37 -> 40, + 32 AGPRs): 512 // 72 = 7.
    o = occupancy(t, vgprs=37, agprs=32, sgprs=20)
    assert (o.waves_per_simd, o.limited_by) == (7, ("vgprs",))
    # 128 VGPRs: 512 // 128 = 4 waves; 129 rounds to 136 -> 3.
    assert occupancy(t, vgprs=128).waves_per_simd == 4
    assert occupancy(t, vgprs=129).waves_per_simd == 3
    assert occupancy(t, vgprs=256, agprs=256).waves_per_simd == 1
    # SGPRs: 96 + 6 = 102 -> 800 // 102 = 7.
    o = occupancy(t, vgprs=8, sgprs=96)
    assert (o.waves_per_simd, o.limited_by) == (7, ("sgprs",))
    assert occupancy(t, vgprs=8, sgprs=94).waves_per_simd == 8  # 100 -> 8
    # LDS: 64 KiB per CU, 16 KiB per 4-wave workgroup -> 4 workgroups = 16 waves = 4 per SIMD.
    o = occupancy(t, vgprs=8, lds_bytes=16 * 1024, waves_per_workgroup=4)
    assert (o.waves_per_simd, o.limited_by, o.workgroups_per_cu) == (4, ("lds",), 4)
    # The LDS granule counts: 16385 bytes take 16896, so only 3 workgroups fit.
    assert occupancy(t, vgprs=8, lds_bytes=16385, waves_per_workgroup=4).waves_per_simd == 3
    # One wave per workgroup, 8 KiB each: 8 workgroups on the CU -> ceil(8 / 4) = 2.
    assert occupancy(t, vgprs=8, lds_bytes=8192).waves_per_simd == 2
    # Barriers: at most 16 multi-wave workgroups per CU; 2 waves each -> 32 waves -> 8.
    assert occupancy(t, vgprs=8, waves_per_workgroup=2).waves_per_simd == 8
    # 16-wave workgroups: 32 slots // 16 = 2 workgroups -> 8 per SIMD.
    assert occupancy(t, vgprs=8, waves_per_workgroup=16).waves_per_simd == 8
    # 12-wave workgroups: 2 fit (24 waves) -> 6 per SIMD.
    o = occupancy(t, vgprs=8, waves_per_workgroup=12)
    assert (o.waves_per_simd, o.limited_by) == (6, ("workgroups",))
    # gfx950's 160 KiB: 8 KiB one-wave workgroups -> 20 per CU -> 5 per SIMD.
    assert occupancy("gfx950", vgprs=8, lds_bytes=8192).waves_per_simd == 5


def test_occupancy_rejects_impossible_requests() -> None:
    t = get_target("gfx942")
    with pytest.raises(TargetError, match="LDS size 65537"):
        occupancy(t, vgprs=1, lds_bytes=65537)
    occupancy("gfx950", vgprs=1, lds_bytes=65537)  # fine on 160 KiB
    with pytest.raises(TargetError, match="waves per workgroup 17"):
        occupancy(t, vgprs=1, waves_per_workgroup=17)
    with pytest.raises(TargetError, match="SGPR count 103"):
        occupancy(t, vgprs=1, sgprs=103)
    with pytest.raises(TargetError, match="VGPR count = 300"):
        occupancy(t, vgprs=300)


def _occupancy_module(cases) -> str:
    out = []
    for i, (v, a, s, lds, wg) in enumerate(cases):
        clobbers = [f"~{{v{v - 1}}}"] + ([f"~{{a{a - 1}}}"] if a else []) + [f"~{{s{s - 1}}}"]
        if lds:
            out.append(f"@lds{i} = addrspace(3) global [{lds} x i8] poison")
        body = f"  store volatile i8 0, ptr addrspace(3) @lds{i}\n" if lds else ""
        out.append(
            f"define amdgpu_kernel void @k{i}() #{i} {{\n{body}"
            f'  call void asm sideeffect "", "{",".join(clobbers)}"()\n  ret void\n}}\n'
            f'attributes #{i} = {{ "amdgpu-flat-work-group-size"="{wg},{wg}" }}'
        )
    return "\n".join(out) + "\n"


@pytest.mark.llvm
@pytest.mark.parametrize("name", TARGETS)
def test_occupancy_matches_llc(name, llc, tmp_path: Path) -> None:
    """llc's "; Occupancy:" for kernels that clobber v/a/s registers and use LDS."""
    t = get_target(name)
    granule = t.lds.alloc_granule
    # LDS sizes are granule multiples: LLVM does not round to the granule (its FIXME), we do.
    cases = [(v, a, s, lds, wg)
             for v in (1, 40, 65, 129, 256)
             for a in (0, 100)
             for s in (10, 95, 101)
             for lds in (0, 4 * granule, 16384, t.lds.bytes_per_cu // 3 // granule * granule,
                         t.lds.bytes_per_cu)
             for wg in (64, 192, 256, 1024)]
    (tmp_path / "o.ll").write_text(_occupancy_module(cases))
    r = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={name}",
                        str(tmp_path / "o.ll"), "-o", "-"], capture_output=True, text=True,
                       check=True)
    infos = r.stdout.split("; Kernel info:")[1:]
    assert len(infos) == len(cases)
    checked = 0
    for (v, a, s, lds, wg), info in zip(cases, infos, strict=True):
        def num(key: str, info: str = info) -> int:
            return int(re.search(rf"; {key}: (\d+)", info).group(1))
        nv, na, total_s = num("NumVgprs"), num("NumAgprs"), num("TotalNumSgprs")
        lds_used = int(re.search(r"LDSByteSize: (\d+)", info).group(1))
        assert total_vgprs(t, nv, na) == num("TotalNumVgprs")
        ours = occupancy(t, vgprs=nv, agprs=na, sgprs=total_s - extra_sgprs(t),
                         lds_bytes=lds_used, waves_per_workgroup=-(-wg // 64))
        assert ours.waves_per_simd == num("Occupancy"), (v, a, s, lds, wg, ours)
        checked += 1
    assert checked == len(cases) == 600


@pytest.mark.llvm
@pytest.mark.parametrize("name", TARGETS)
def test_lds_granule_matches_llc(name, llc, tmp_path: Path) -> None:
    """The COMPUTE_PGM_RSRC2.LDS_SIZE granule, as llc prints it for amdgcn-mesa-mesa3d."""
    t = get_target(name)
    sizes = [1, 512, 513, 2048, 2049, 5000, t.lds.bytes_per_workgroup]
    src = []
    for i, n in enumerate(sizes):
        src.append(f"@lds{i} = addrspace(3) global [{n} x i8] poison\n"
                   f"define amdgpu_kernel void @k{i}() {{\n"
                   f"  store volatile i8 0, ptr addrspace(3) @lds{i}\n  ret void\n}}")
    (tmp_path / "l.ll").write_text("\n".join(src) + "\n")
    r = subprocess.run([llc, "-mtriple=amdgcn-mesa-mesa3d", f"-mcpu={name}",
                        str(tmp_path / "l.ll"), "-o", "-"], capture_output=True, text=True,
                       check=True)
    got = [int(x) for x in re.findall(r"granulated_lds_size = (\d+)", r.stdout)]
    assert got == [lds_granules(t, n) for n in sizes]


@pytest.mark.llvm
@pytest.mark.parametrize("name", TARGETS)
def test_scratch_limit_matches_llc(name, llc, tmp_path: Path) -> None:
    """max_scratch_per_lane is the stack limit llc enforces for a wave64 kernel."""
    t = get_target(name)
    (tmp_path / "s.ll").write_text(
        "define amdgpu_kernel void @k() {\n  %a = alloca [131057 x i8], addrspace(5)\n"
        "  store volatile i8 1, ptr addrspace(5) %a\n  ret void\n}\n")
    r = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={name}",
                        str(tmp_path / "s.ll"), "-o", "-"], capture_output=True, text=True)
    assert r.returncode != 0
    assert re.search(r"exceeds limit \((\d+)\)", r.stderr).group(1) == \
        str(t.max_scratch_per_lane)


@pytest.mark.parametrize("name", ["gfx942", "gfx950"])
def test_budget_inverses_agree_with_occupancy(name):
    """vgprs_for_waves / lds_for_workgroups are occupancy() read backwards: the budget fits
    the asked waves (workgroups), one granule more does not."""
    from asterism.target import get_target
    from asterism.target.occupancy import lds_for_workgroups, occupancy, vgprs_for_waves

    t = get_target(name)
    for waves in (1, 2, 3, 4, 5, 8):
        budget = vgprs_for_waves(t, waves)
        vg = min(budget, t.vgpr.arch)
        assert occupancy(t, vgprs=vg, agprs=budget - vg).vgpr_limit >= waves
        over = budget + t.vgpr.alloc_granule
        if over <= t.vgpr.unified_per_lane:
            vg = min(over, t.vgpr.arch)
            assert occupancy(t, vgprs=vg, agprs=over - vg).vgpr_limit < waves
    for wgs in (1, 2, 3, 5):
        lds = lds_for_workgroups(t, wgs)
        assert t.lds.bytes_per_cu // lds >= wgs
        assert t.lds.bytes_per_cu // (lds + t.lds.alloc_granule) < wgs
