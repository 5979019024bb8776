"""AMD AITER's flash-attention forward code objects as the library entry aiter_fmha_fwd:
the shipped objects, the argument struct against hand-computed offsets and values (the
research note /work/wt/notes/aiter_fmha_args.md, AITER's mha_fwd.cu), and runs on the
emulator checked against flash_attention_fwd's NumPy reference (both gfx950 objects and the
gfx942 rtz one) at the smallest shapes."""

from __future__ import annotations

import csv
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from asterism import kernels
from asterism.kernels import aiter, attention
from asterism.kernels.base import KernelParamError

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "tests" / "data" / "shared" / "codeobjects"
NAME = "aiter_fmha_fwd"


def _quiet(_violation) -> None:
    """Warn-mode violations (AITER's kernels have some, see test_sanitizer_reports_...)."""


def _run(target: str, **params):
    case = kernels.get(NAME).build(target, params)
    return case, kernels.run_case(case, backend="emu", check=True, on_violation=_quiet)


# ------------------------------------------------------------------------------ provenance


@pytest.mark.parametrize("packaged, shared", [
    ("gfx950/fwd_hd128_bf16.co", "aiter_gfx950_fmha_fwd_hd128_bf16.co"),
    ("gfx950/fwd_hd128_bf16_causal.co", "aiter_gfx950_fmha_fwd_hd128_bf16_causal.co"),
    ("gfx942/MI300/fwd_hd128_bf16_rtz.co", "aiter_gfx942_fmha_fwd_hd128_bf16_rtz.co"),
    ("gfx950/fmha_fwd.csv", "aiter_gfx950_fmha_fwd.csv")])
def test_packaged_files_are_the_shared_samples(packaged, shared):
    data = (ROOT / "src/asterism/kernels/data/aiter" / packaged).read_bytes()
    assert data == (SHARED / shared).read_bytes()


def test_objects_agree_with_aiters_table():
    rows = list(csv.DictReader((SHARED / "aiter_gfx950_fmha_fwd.csv").open()))
    for causal in (False, True):
        path, symbol = aiter.OBJECTS[("gfx950", causal)]
        row = next(r for r in rows if r["co_name"] == Path(path).name)
        assert (row["dtype"], row["hdim_q"], row["mask"], row["mode"]) == \
            ("bf16", "128", "2" if causal else "0", "0")
        assert row["knl_name"] == symbol and int(row["ts_qo"]) == aiter.TILE_Q
    for (target, causal), (_path, symbol) in aiter.OBJECTS.items():
        meta = aiter.metadata(target, causal)
        assert meta[".name"] == symbol and meta[".kernarg_segment_size"] == 512
        assert meta[".reqd_workgroup_size"] == [aiter.BLOCK, 1, 1]


def test_list_shows_the_origin():
    gen = kernels.get(NAME)
    assert gen.describe_origin().startswith("code object: AITER fmha_v3_fwd")
    assert "e4048607" in gen.describe_origin()
    assert kernels.get("gemm").describe_origin() == "asterism generator (asterism.kernels.gemm)"
    text = kernels.format_list([gen])
    assert "    origin: code object: AITER" in text
    assert kernels.list_rows([gen])[0]["origin"] == gen.describe_origin()


# ------------------------------------------------------------------------------ the struct

# The note's worked example (bshd, B=2, Hq=16, Hk=4, Sq=Sk=1000, D=128), by hand: strides in
# bytes, Q/O row = Hq*D*2 = 4096, tile = 256 rows, K/V row = Hk*D*2 = 1024, LSE head = Sq*4.
NOTE_U32 = {0x60: 1000, 0x70: 4096, 0x80: 1048576, 0x90: 256, 0xa0: 4096000, 0xb0: 4,
            0xc0: 1024, 0xd0: 256, 0xe0: 1024000, 0x100: 1, 0x110: 1000, 0x120: 128,
            0x130: 128, 0x140: 16, 0x150: 1024, 0x160: 256, 0x170: 1024000, 0x180: 4096,
            0x190: 256, 0x1a0: 4096000, 0x1d0: 4000}


@pytest.mark.parametrize("causal, opt, grid_x", [(False, 5, 4), (True, 5, 2)])
def test_packing_matches_the_notes_offsets(causal, opt, grid_x):
    case = kernels.get(NAME).build("gfx950", dict(batch=2, heads=16, heads_kv=4, seq_q=1000,
                                                  causal=causal))
    assert case.grid == (grid_x, 16, 2) and case.block == (512, 1, 1)
    packed = case.pack(dict(case.args))
    seg = bytes(packed.segment)
    assert len(seg) == 512
    assert struct.unpack_from("<f", seg, 0x50)[0] == np.float32(1 / math.sqrt(128))
    for off, want in {**NOTE_U32, 0xf0: opt}.items():
        assert struct.unpack_from("<I", seg, off)[0] == want, hex(off)
    # pointers: O, Q, K, V, LSE at 0x00..0x40 (filled at launch); group-mode ones null
    assert {b.name: b.offset for b in packed.buffers} == \
        {"o": 0x00, "q": 0x10, "k": 0x20, "v": 0x30, "lse": 0x40}
    for off in (0x1b0, 0x1c0, 0x1e0, 0x1f0):
        assert seg[off:off + 8] == bytes(8)
    covered = set(NOTE_U32) | {0x50, 0xf0}
    for off in range(0, 512, 16):  # every other 16-byte slot holds nothing
        if off not in covered:
            assert seg[off:off + 16] == bytes(16), hex(off)
    k = next(b for b in packed.buffers if b.name == "k")
    assert k.array.size == (2 * 1000 + aiter.KV_PAD_ROWS) * 4 * 128 and not k.array[-1]
    assert [b.name for b in packed.buffers if b.copy_out] == ["o", "lse"]


def test_s_opt_follows_aiters_host_rule():
    def opt(**p):
        return aiter.check("gfx950", kernels.get(NAME).resolve(p)).opt
    assert opt(heads=16, causal=True) == 5
    assert opt(heads=12, causal=True) == 3                       # heads % 8
    assert opt(heads=8, seq_q=16385, causal=True) == 3           # seq_q > 16384
    assert opt(heads=12, causal=True, msk_opt=0) == 0


@pytest.mark.parametrize("params, match", [
    (dict(head_dim=64), "head_dim"),
    (dict(heads=3, heads_kv=2), "multiple of heads_kv"),
    (dict(causal=True, seq_q=512, seq_k=256), "seq_k >= seq_q"),
    (dict(causal=True, heads=2, msk_opt=5), "multiple of 8"),
    (dict(batch=0), "batch"),
])
def test_bad_parameters(params, match):
    with pytest.raises(KernelParamError, match=match):
        kernels.get(NAME).build("gfx950", params)


def test_gfx942_has_no_causal_object():
    with pytest.raises(KernelParamError, match="no causal object"):
        kernels.get(NAME).build("gfx942", {"causal": True})


def test_cli_bad_shape_is_one_line():
    out = subprocess.run([sys.executable, "-m", "asterism.cli", "kernels", "run", NAME,
                          "--shape", "1x1x256x64"], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "head_dim" in out.stderr


# ------------------------------------------------------------------------------ runs


@pytest.mark.parametrize("target, params", [
    ("gfx950", dict(batch=1, heads=1, seq_q=256)),
    ("gfx950", dict(batch=1, heads=1, seq_q=256, causal=True)),
    ("gfx942", dict(batch=1, heads=1, seq_q=256)),
])
def test_smallest_shape_matches_the_reference(target, params):
    case, run = _run(target, **params)
    assert [c.output for c in run.checks] == ["o", "lse"]
    assert run.passed, run.checks
    assert run.checks[0].max_abs_error < run.checks[0].atol / 2
    assert run.checks[1].max_abs_error < 1e-5  # LSE in float32


def test_causal_tile_pairing_with_an_odd_tile_count():
    # 3 query tiles: workgroup 0 does tiles 0 and 2, workgroup 1 tile 1 (twice); AITER's
    # host s_opt (3 for one head) keeps the workgroup remap off.
    case, run = _run("gfx950", batch=1, heads=1, seq_q=600, seq_k=700, causal=True)
    assert case.grid == (2, 1, 1) and run.passed, run.checks


def test_ragged_gqa_and_the_kv_read_past_the_end():
    # seq_k = 65: the kernel's key prefetch reads 191 rows past the end of K (the 256 zero
    # rows of padding cover it; without them the emulator faults on the read)
    _, run = _run("gfx950", batch=1, heads=4, heads_kv=2, seq_q=100, seq_k=65)
    assert run.passed, run.checks


def test_gfx942_reference_rounds_toward_zero_like_the_kernel():
    case, run = _run("gfx942", batch=1, heads=1, seq_q=256, seq_k=96)
    assert run.passed, run.checks
    # the run's output against the plain reference (no rounding model) is biased toward
    # zero; against the rtz model it is not, and most values match exactly
    from asterism import runtime

    args = {k: (v.copy() if k in case.outputs else v) for k, v in case.args.items()}
    runtime.launch(case.code, case.kernel, grid=case.grid, block=case.block,
                   args=case.pack(args), backend="emu", on_violation=_quiet)
    got = attention.decode(args["o"], "bf16").astype(np.float64)
    cfg = aiter.Config("gfx942", case.params)
    q, k, v = (attention.decode(case.args[n], "bf16").transpose(0, 2, 1, 3) for n in "qkv")
    plain = attention.reference(q, k, v, cfg.scale, False).transpose(0, 2, 1, 3)
    model = case.reference()["o"]
    bias_plain = np.mean((got - plain) * np.sign(plain))
    bias_model = np.mean((got - model) * np.sign(model))
    assert bias_plain < -1e-4 and abs(bias_model) < abs(bias_plain) / 4, (bias_plain,
                                                                           bias_model)
    assert np.mean(got == model) > 0.4


def test_lse_off_checks_only_o():
    case, run = _run("gfx950", batch=1, heads=1, seq_q=64, lse=False)
    assert "lse" not in case.args and [c.output for c in run.checks] == ["o"]
    assert run.passed


def test_sanitizer_reports_aiters_violations_once_each():
    seen = []
    case = kernels.get(NAME).build("gfx950", dict(batch=1, heads=1, seq_q=256))
    run = kernels.run_case(case, backend="emu", check=True, iterations=10,
                           on_violation=seen.append)
    assert run.passed
    # each distinct violation once, even with iterations (the emulator runs once)
    assert seen == run.sanitizer.violations
    first = seen[0]
    assert (first.kind, first.pc, first.rule) == ("wait_states", 0x3a88, "salu_m0_lds_dma")
    assert first.inst.startswith("buffer_load_dwordx4") and "s_mov_b32 m0, s64" in first.message
    assert {v.rule for v in seen} == {"salu_m0_lds_dma", "valu_vgpr_permlane",
                                      "valu_sgpr_valu"}
    report = kernels.run_report(run)
    assert report["sanitizer"]["counts"]["wait_states"]["distinct"] == len(seen)
