"""amdgpu.mfma lowered and run on the emulator: every MFMA the dialect can express on gfx942
and gfx950 (shapes, blocks, f32/f64/xf32/f16/bf16/i8/fp8/bf8 sources), written in upstream
MLIR (tests/upstream_inputs.py), against an independent NumPy float64 matmul of the inputs
laid out by the Matrix Instruction Calculator's equations (test_emu_mfma's references); then
cbsz/abid/blgp, and shapes a target lacks as errors."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from test_emu_mfma import (
    _rng,
    assert_close,
    blgp_source,
    c_values,
    decode_values,
    input_formats,
    random_operand,
    ref_input,
    ref_output,
    reference,
)
from upstream_inputs import TARGETS, expressible_mfmas, mfma_text

import asterism
from asterism import api
from asterism.emu import mfma as mf
from asterism.errors import AsterismError, VerifyError

CASES = [(t, m) for t in TARGETS for m in expressible_mfmas(t)]


def _lane_words(codes: np.ndarray, info, which: str, regs: int, width: int) -> np.ndarray:
    """(64 * regs,) uint32: the register words of every lane for A (or B) codes
    (blocks, rows, k)."""
    blocks, rows, kk = codes.shape
    per = 32 // width if width < 32 else 1
    lanes = np.zeros((64, regs * per), np.uint64)
    for b in range(blocks):
        for i in range(rows):
            for k in range(kk):
                lane, slot = ref_input(info, which, width, b, i, k)
                lanes[lane, slot] = int(codes[b, i, k])
    if width == 64:
        lo = lanes[:, 0] & 0xFFFFFFFF
        return np.stack([lo, lanes[:, 0] >> 32], axis=1).astype(np.uint32).view(np.int32).reshape(-1)
    shifts = ((np.arange(regs * per) % per) * width).astype(np.uint64)
    words = np.zeros((64, regs), np.uint64)
    for s in range(regs * per):
        words[:, s // per] |= (lanes[:, s] & np.uint64((1 << width) - 1)) << shifts[s]
    return words.astype(np.uint32).view(np.int32).reshape(-1)


def _codes(vals: np.ndarray, fmt: str) -> np.ndarray:
    if fmt in ("f32", "xf32"):
        return vals.astype(np.float32).view(np.uint32)
    if fmt == "f64":
        return vals.astype(np.float64).view(np.uint64)
    if fmt == "i8":
        return vals.astype(np.int8).view(np.uint8)
    return vals


def run_mfma(target: str, mnemonic: str, cbsz: int = 0, abid: int = 0, blgp: int = 0,
             negate: tuple[bool, bool, bool] = (False, False, False)):
    """Compile the upstream kernel, run one wave, check D against NumPy."""
    info = mf.mfma_info(target, mnemonic)
    rng = _rng("upstream", target, mnemonic, cbsz, abid, blgp)
    fa, fb = input_formats(info)
    width = {"f64": 64, "f32": 32, "xf32": 32, "f16": 16, "bf16": 16}.get(info.a_type, 8)
    blocks = info.blocks
    a = random_operand(rng, fa, (blocks, info.m, info.k))
    b = random_operand(rng, fb, (blocks, info.k, info.n))
    c = c_values(rng, info, (blocks, info.m, info.n))
    a_words = _lane_words(_codes(a, fa), info, "a", info.a_regs, width)
    b_words = _lane_words(_codes(np.swapaxes(b, 1, 2), fb), info, "b", info.b_regs, width)
    cregs = info.c_regs // (2 if info.out_type == "f64" else 1)
    dtype = {"f32": np.float32, "i32": np.int32, "f64": np.float64}[info.out_type]
    c_lanes = np.zeros((64, cregs), dtype)
    for bb in range(blocks):
        for i in range(info.m):
            for j in range(info.n):
                lane, slot = ref_output(info, bb, i, j)
                c_lanes[lane, slot] = c[bb, i, j]
    d_lanes = np.zeros_like(c_lanes)
    names = ("none", "bcast_first_32", "bcast_second_32", "rotate_16_right", "bcast_first_16",
             "bcast_second_16", "bcast_third_16", "bcast_fourth_16")
    module = api.parse(mfma_text(target, mnemonic, cbsz, abid, names[blgp], negate))
    api.retarget(module, target)
    code = asterism.compile(module)
    asterism.launch(code, "mfma", grid=(1, 1, 1), block=(64, 1, 1),
                    args=[a_words, b_words, c_lanes.reshape(-1), d_lanes.reshape(-1)],
                    backend="emu")
    got = np.zeros((blocks, info.m, info.n), dtype)
    for bb in range(blocks):
        for i in range(info.m):
            for j in range(info.n):
                lane, slot = ref_output(info, bb, i, j)
                got[bb, i, j] = d_lanes[lane, slot]
    av, bv = decode_values(a, fa), decode_values(b, fb)
    if cbsz:  # block abid's A goes to the blocks of each 2^cbsz group
        group = 1 << cbsz
        src = [(bb // group) * group + abid for bb in range(blocks)]
        av = av[src]
    if blgp:  # B data of lane l comes from lane blgp_source(l): permute B's columns per block
        bv = _permute_b(bv, info, blgp)
    av, bv = (-av if negate[0] else av), (-bv if negate[1] else bv)
    c = -c if negate[2] else c
    acc, mag = reference(av, bv, c.astype(np.float64 if info.out_type != "i32" else np.int64),
                         info.out_type)
    assert_close(got, acc, mag, info.out_type)


def _permute_b(bv: np.ndarray, info, blgp: int) -> np.ndarray:
    out = np.empty_like(bv)
    for bb in range(info.blocks):
        for k in range(info.k):
            for j in range(info.n):
                lane, _slot = ref_input(info, "b", 16, bb, j, k)
                src_lane = blgp_source(lane, blgp)
                # the (block, column, k) the source lane holds at this slot
                found = [(b2, j2, k2) for b2 in range(info.blocks) for j2 in range(info.n)
                         for k2 in range(info.k)
                         if ref_input(info, "b", 16, b2, j2, k2) == (src_lane, _slot)]
                b2, j2, k2 = found[0]
                out[bb, k, j] = bv[b2, k2, j2]
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_mfma_matches_numpy(case):
    run_mfma(*case)


@pytest.mark.parametrize("target", TARGETS)
def test_mfma_modifiers(target):
    run_mfma(target, "v_mfma_f32_4x4x4_16b_f16", cbsz=2, abid=1)
    run_mfma(target, "v_mfma_f32_16x16x16_f16", blgp=3)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("negate", [(True, False, False), (False, True, True),
                                    (True, True, True)])
def test_f64_mfma_negate_flags(target, negate):
    run_mfma(target, "v_mfma_f64_16x16x4_f64", negate=negate)
    run_mfma(target, "v_mfma_f64_4x4x4_4b_f64", negate=negate)


def test_negate_flags_encode_as_llvm_prints_them(tmp_path, llvm_objdump):
    text = mfma_text("gfx950", "v_mfma_f64_16x16x4_f64", negate=(False, True, True))
    path = tmp_path / "n.co"
    path.write_bytes(asterism.compile(api.parse(text)))
    listing = subprocess.run([llvm_objdump, "-d", str(path)], capture_output=True, text=True,
                             check=True).stdout
    assert [ln for ln in listing.splitlines() if "v_mfma_f64_16x16x4_f64" in ln and
            "neg:[0,1,1]" in ln]


def test_f64_mfma_neg_assembles_as_llvm_mc(llvm_mc):
    line = "v_mfma_f64_16x16x4_f64 v[0:7], v[8:9], v[10:11], v[0:7] neg:[1,0,1]"
    out = subprocess.run([llvm_mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942",
                          "-show-encoding"], input=line + "\n", capture_output=True, text=True,
                         check=True).stdout
    want = bytes(int(x, 16) for x in out.split("encoding: [")[1].split("]")[0].split(","))
    source = (".amdgcn_target \"amdgcn-amd-amdhsa--gfx942\"\n.text\n.globl k\n.p2align 8\n"
              ".type k,@function\nk:\n  " + line + "\n  s_endpgm\n")
    assert want in asterism.api.assemble(source)


def test_negate_on_a_non_f64_mfma_is_a_located_error():
    text = mfma_text("gfx942", "v_mfma_f32_16x16x16_f16", negate=(False, True, False))
    with pytest.raises(AsterismError) as err:
        asterism.compile(api.parse(text, "n.mlir"))
    assert "negateB: only the f64 MFMAs can negate operands" in err.value.message
    assert err.value.location.file == "n.mlir"


def test_old_attribute_form_parses_to_the_same_code():
    new = mfma_text("gfx942", "v_mfma_f32_16x16x16_f16")
    old = new.replace("amdgpu.mfma 16x16x16 %va * %vb + %vc {blocks = 1 : i32}",
                      "amdgpu.mfma %va * %vb + %vc {abid = 0 : i32, cbsz = 0 : i32, "
                      "k = 16 : i32, m = 16 : i32, n = 16 : i32, blocks = 1 : i32}")
    assert old != new
    assert asterism.compile(api.parse(old)) == asterism.compile(api.parse(new))


def test_missing_shape_is_an_error_listing_the_shapes():
    text = mfma_text("gfx942", "v_mfma_f32_16x16x16_f16").replace("16x16x16 %va",
                                                                     "16x16x8 %va")
    with pytest.raises(VerifyError, match=r"amdgpu.mfma: no 16x16x8 blocks=1 MFMA .*"
                                          r"16x16x16_f16") as err:
        asterism.compile(api.parse(text))
    assert err.value.location is not None and err.value.location.line > 1
