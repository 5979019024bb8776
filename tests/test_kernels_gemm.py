"""The GEMM kernel of asterism.kernels on the emulator against NumPy (float64 products of the
stored f16/bf16 inputs), over shapes (ragged ones included), dtypes, targets, layouts, tile
and schedule parameters; every parameter limit gives a KernelParamError naming it; and the
shared runner's reports (checks, modeled TFLOPS against the data-sheet peak).
"""

from __future__ import annotations

import numpy as np
import pytest

from asterism import kernels
from asterism.kernels import KernelParamError, run_case
from asterism.kernels.gemm import from_bf16, from_fp8, to_bf16, to_fp8
from asterism.kernels.run import (
    check_outputs,
    format_list,
    format_run,
    parse_params,
    parse_shape,
    run_report,
)

TARGETS = ("gfx942", "gfx950")

# (params) of small problems; sizes not multiples of the tiles are the ragged edges.
CASES = [
    dict(m=64, n=64, k=64, tile_m=64, tile_n=64),
    dict(m=128, n=128, k=160, dtype="bf16"),  # 5 K tiles: loop pair, ragged-free tail
    dict(m=200, n=136, k=264),  # ragged M, N and K (K = 8 tiles + 8)
    dict(m=96, n=72, k=40, layout="nn", tile_m=64, tile_n=64, mfma=16),
    dict(m=72, n=104, k=96, layout="tn", tile_m=64, tile_n=64, dtype="bf16"),
    dict(m=64, n=96, k=48, layout="tt", tile_m=64, tile_n=64, waves=2),
    dict(m=128, n=64, k=128, waves=8, tile_m=128, tile_n=64, tile_k=64, mfma=16),
    dict(m=64, n=64, k=96, waves=1, tile_m=64, tile_n=64, interleave=False),
]


def _ids(p: dict) -> str:
    return "-".join(f"{k}{v}" for k, v in p.items())


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("params", CASES, ids=_ids)
def test_gemm_matches_numpy(target, params):
    case = kernels.get("gemm").build(target, params)
    run = run_case(case, backend="emu", check=True)
    assert run.passed, format_run(run)
    (check,) = run.checks
    assert check.max_abs_error <= case.atol
    # A real comparison: the reference is far from zero, and the runner ran on copies.
    assert np.abs(case.reference()["c"]).max() > 1
    assert not np.any(case.args["c"])


def test_check_fails_on_a_wrong_result():
    case = kernels.get("gemm").build("gfx942", dict(m=64, n=64, k=64, tile_m=64, tile_n=64))
    want = case.reference()["c"]
    wrong = want.copy()
    wrong[3, 5] += 10 * case.atol + 1.0
    (check,) = check_outputs(case, {"c": wrong})
    assert not check.passed and check.worst_index == (3, 5)
    (ok,) = check_outputs(case, {"c": want})
    assert ok.passed and ok.max_abs_error == 0


def test_reference_is_the_product_of_the_stored_values():
    case = kernels.get("gemm").build("gfx950", dict(m=64, n=64, k=64, tile_m=64, tile_n=64,
                                                    dtype="bf16", layout="tn"))
    a = from_bf16(case.args["a"]).astype(np.float64).T  # stored as [K][M]
    b = from_bf16(case.args["b"]).astype(np.float64)  # stored as [K][N]
    np.testing.assert_allclose(case.reference()["c"], a @ b, rtol=1e-6, atol=1e-6)


def test_bf16_conversion_rounds_to_nearest_even():
    x = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -2.5], np.float32)
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even code (1.0).
    np.testing.assert_array_equal(from_bf16(to_bf16(x)),
                                  np.array([1.0, 1.0, 1.0 + 2 ** -6, -2.5], np.float32))


@pytest.mark.parametrize("target, params, name, words", [
    ("gfx950", dict(tile_m=512, m=512, tile_n=256), "tile_n", "AGPRs"),  # 256x128 / wave
    ("gfx942", dict(tile_k=128, k=256, tile_m=256, m=256), "tile_k", "LDS"),
    ("gfx942", dict(tile_m=256, m=128), "tile_m", "larger than the problem"),
    ("gfx942", dict(k=20), "k", "multiple of 8"),
    ("gfx942", dict(layout="nn", n=100), "n", "multiple of 8"),
    ("gfx942", dict(tile_k=12), "tile_k", "multiple of 8"),
    ("gfx950", dict(tile_k=8), "tile_k", "v_mfma_f32_32x32x16_f16"),
    ("gfx942", dict(tile_m=96), "tile_m", "multiple of 64"),
    ("gfx942", dict(lds_pad=4), "lds_pad", "multiple of 8"),
    ("gfx942", dict(waves=3), "waves", "not one of"),
    ("gfx942", dict(dtype="f32"), "dtype", "not one of"),
    ("gfx942", dict(m="big"), "m", "expected int"),
    ("gfx950", dict(tile_k=256, k=256, tile_m=64, tile_n=64, waves=1, dma=False), "tile_k",
     "VGPRs"),
    ("gfx950", dict(tile_k=256, k=256, tile_m=64, tile_n=64, waves=1), "tile_k", "M0 values"),
    ("gfx942", dict(lds_stages=3), "lds_stages", "direct-to-LDS"),
    ("gfx942", dict(m=0), "m", "positive"),
    ("gfx942", dict(dtype="fp8", tile_k=64), "dtype", "gfx950"),
    ("gfx950", dict(dtype="fp8", layout="tn", tile_k=64), "layout", "nt only"),
    ("gfx950", dict(dtype="fp8"), "tile_k", "v_mfma_f32_32x32x64_f8f6f4"),
    ("gfx950", dict(dtype="fp8", tile_k=64, k=200), "k", "multiple of 16"),
])
def test_bad_parameters_name_the_parameter_and_limit(target, params, name, words):
    with pytest.raises(KernelParamError) as err:
        kernels.get("gemm").build(target, params)
    assert f"parameter {name}" in str(err.value) and words in str(err.value)


def test_gfx950_lds_fits_tiles_gfx942_cannot():
    big = dict(m=256, n=256, k=256, tile_m=256, tile_n=256, tile_k=64, waves=8)
    with pytest.raises(KernelParamError, match="65536 per workgroup"):
        kernels.get("gemm").build("gfx942", big)
    case = kernels.get("gemm").build("gfx950", big)
    assert case.notes["lds_bytes"] > 65536


def test_unknown_parameter_and_target():
    gen = kernels.get("gemm")
    with pytest.raises(KernelParamError, match="no parameter 'tile'"):
        gen.build("gfx942", {"tile": 64})
    with pytest.raises(KernelParamError, match="supports targets gfx942, gfx950"):
        gen.build("gfx90a")


def test_timing_reports_modeled_tflops_against_the_peak():
    case = kernels.get("gemm").build("gfx950", dict(m=128, n=128, k=64))
    run = run_case(case, timing=True)
    assert run.passed and run.modeled and run.cycles > 0
    assert run.peak_tflops == 2516.6 and run.compute_units == 256
    # One workgroup on CU 0: the grid's flops in CU 0's time.
    assert run.workgroups == run.modeled_workgroups == 1
    seconds = run.cycles / (run.clock_mhz * 1e6)
    assert run.tflops == pytest.approx(2 * 128 * 128 * 64 / seconds / 1e12)
    assert run.per_cu_tflops == pytest.approx(run.tflops * 256)
    text = format_run(run)
    assert "modeled:" in text and "% of peak" in text and "not a measurement" in text
    report = run_report(run)
    assert report["timing"]["modeled"] is True and report["passed"] is True
    assert report["registers"]["agpr"] == 64  # the pinned ACC region: 2x2 blocks of 16


def test_build_code_object_and_list():
    case = kernels.get("gemm").build("gfx942", dict(m=64, n=64, k=64, tile_m=64, tile_n=64))
    data = kernels.build_code_object(case)
    assert data[:4] == b"\x7fELF" and case.kernel.encode() in data
    table = format_list(kernels.generators())
    assert "gemm  [gfx942, gfx950]" in table and "tile_k" in table
    rows = kernels.list_rows(kernels.generators())
    assert {p["name"] for p in next(r for r in rows if r["name"] == "gemm")["params"]} >= {"m", "n", "k", "layout", "dtype"}


def test_param_and_shape_parsing():
    assert parse_params(["m=512", " dtype = bf16"]) == {"m": "512", "dtype": "bf16"}
    assert parse_shape("512x256x128") == {"m": "512", "n": "256", "k": "128"}
    with pytest.raises(KernelParamError, match="name=value"):
        parse_params(["m"])
    with pytest.raises(KernelParamError, match="--shape"):
        parse_shape("512xbig")


def _mnemonics(case) -> list[str]:
    """The instructions of the case's code object, from our disassembler."""
    from asterism.api import disassemble

    _obj, items = disassemble(kernels.build_code_object(case))
    return [d.inst.mnemonic for d in items if hasattr(d, "inst")]


@pytest.mark.parametrize("layout", ["nt", "nn", "tn", "tt"])
def test_gfx950_loads_straight_to_lds(layout):
    # Both operands are direct-to-LDS loads (no VGPR staging, no ds_write); MN-contiguous
    # ones are read with ds_read_b64_tr_b16 instead of being transposed on the way in.
    case = kernels.get("gemm").build("gfx950", dict(m=64, n=64, k=64, tile_m=64, tile_n=64,
                                                    layout=layout))
    assert case.notes["dma"] and case.notes["lds_stages"] == 3
    ops = _mnemonics(case)
    assert "buffer_load_dwordx4" in ops and not any(o.startswith("ds_write") for o in ops)
    mn_contiguous = layout[0] == "t" or layout[1] == "n"
    assert ("ds_read_b64_tr_b16" in ops) == mn_contiguous
    assert ops.count("s_mov_b32") >= ops.count("buffer_load_dwordx4")  # M0 per load


@pytest.mark.parametrize("params", [
    dict(m=96, n=72, k=40, layout="nn", tile_m=64, tile_n=64, mfma=16, dma=False),
    dict(m=72, n=104, k=96, layout="tn", tile_m=64, tile_n=64, dtype="bf16", dma=False),
    dict(m=128, n=128, k=160, lds_stages=2),  # direct-to-LDS with two buffers
], ids=_ids)
def test_gfx950_register_staged_and_two_stage_paths(params):
    case = kernels.get("gemm").build("gfx950", params)
    assert case.notes["dma"] == params.get("dma", True)
    run = run_case(case, backend="emu", check=True)
    assert run.passed, format_run(run)


def test_step_waits_batch_the_fragment_reads():
    # 4 k-steps per tile: one wait per k-step after the first instead of one per fragment.
    params = dict(m=64, n=64, k=128, tile_m=64, tile_n=64, tile_k=64, waves=1)
    waits = {}
    for mode in ("step", "fragment"):
        case = kernels.get("gemm").build("gfx950", dict(params, read_waits=mode))
        assert run_case(case, check=True).passed
        waits[mode] = _mnemonics(case).count("s_waitcnt")
    assert waits["step"] < waits["fragment"]


def _launch(case) -> np.ndarray:
    """C as the kernel wrote it (emulator)."""
    from asterism import runtime

    args = {k: v.copy() for k, v in case.args.items()}
    runtime.launch(kernels.build_code_object(case), case.kernel, grid=case.grid,
                   block=case.block, args=args, backend="emu")
    return args["c"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("c_dtype", ["f16", "bf16"])
def test_16_bit_c_is_the_f32_result_rounded_to_nearest_even(target, c_dtype):
    # The same accumulation as the f32 build, so the 16-bit C must be exactly NumPy's
    # round-to-nearest-even of the f32 C (v_cvt_pk_*_f32 on gfx950, by hand on gfx942).
    params = dict(m=72, n=104, k=96, layout="tn", tile_m=64, tile_n=64, dtype="bf16")
    f32 = _launch(kernels.get("gemm").build(target, params))
    case = kernels.get("gemm").build(target, dict(params, c_dtype=c_dtype))
    got = _launch(case)
    assert got.dtype == (np.float16 if c_dtype == "f16" else np.uint16)
    want = f32.astype(np.float16) if c_dtype == "f16" else to_bf16(f32)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    if c_dtype == "bf16":  # rounding, not truncation, decides many elements
        assert np.count_nonzero(want != (f32.view(np.uint32) >> 16).astype(np.uint16)) > 100
    assert run_case(case, check=True).passed


def test_fp8_codes_are_ocp_e4m3():
    # Hand-decoded e4m3fn codes: 0x38 = 1.0, 0x7E = 448 (largest), 0x01 = 2^-9 (smallest
    # denormal), 0xC4 = -3.0; 1 + 2^-4 is halfway between 1 and 1.125: ties to even (1.0).
    codes = np.array([0x38, 0x7E, 0x01, 0xC4], np.uint8)
    np.testing.assert_array_equal(from_fp8(codes), [1.0, 448.0, 2.0 ** -9, -3.0])
    np.testing.assert_array_equal(to_fp8(np.array([1.0, 1.0625, 448.0, -3.0], np.float32)),
                                  [0x38, 0x38, 0x7E, 0xC4])


@pytest.mark.parametrize("params", [
    # ragged M, N and K (K = 5 tiles + 16), the 32x32x64 MFMA, f32 C
    dict(m=200, n=136, k=336, tile_k=64),
    # 8 waves of 16x16x128 MFMAs, 3 K tiles, f16 C
    dict(m=128, n=64, k=384, waves=8, tile_m=128, tile_n=64, tile_k=128, mfma=16,
         c_dtype="f16"),
], ids=_ids)
def test_gfx950_fp8_matches_numpy(params):
    case = kernels.get("gemm").build("gfx950", dict(params, dtype="fp8"))
    assert case.notes["mfma"].endswith("_f8f6f4") and not case.notes["dma"]
    assert case.args["a"].dtype == np.uint8 and case.args["b"].dtype == np.uint8
    # The reference is the float64 product of the decoded codes (A as [M][K], B as [N][K]).
    a, b = from_fp8(case.args["a"]), from_fp8(case.args["b"]).T
    want = (a @ b).astype(np.float32)
    if params.get("c_dtype") == "f16":
        want = want.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(case.reference()["c"], want)
    run = run_case(case, backend="emu", check=True, timing=True)
    assert run.passed, format_run(run)
    assert np.abs(want).max() > 1
    # MI355X's data-sheet dense FP8 peak: 256 CUs x 2400 MHz x 8192 flops per clock per CU.
    assert run.peak_tflops == 5033.2


# The K loop as an scf.for (kloop=scf, the default) and as blocks and a branch written by
# the generator (kloop=unrolled). K tiles of 32: gfx942 (register-staged) loops over pairs
# from 6 tiles on; gfx950 (direct-to-LDS, 3 LDS buffers) over threes from 7 on. 264 = 8
# tiles + 8 (ragged), 416 = 13 tiles (3 trips), 160 = 5 tiles (no loop).
SCF_CASES = [
    dict(m=64, n=64, k=264, tile_m=64, tile_n=64, kloop="scf"),
    dict(m=64, n=72, k=416, tile_m=64, tile_n=64, kloop="scf", dtype="bf16"),
    dict(m=64, n=64, k=160, tile_m=64, tile_n=64, kloop="scf", layout="tn"),
    dict(m=64, n=64, k=264, tile_m=64, tile_n=64, kloop="unrolled"),
    dict(m=64, n=72, k=416, tile_m=64, tile_n=64, kloop="unrolled", dtype="bf16"),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("params", SCF_CASES, ids=_ids)
def test_gemm_scf_k_loop_matches_numpy(target, params):
    case = kernels.get("gemm").build(target, params)
    run = run_case(case, backend="emu", check=True)
    assert run.passed, format_run(run)
    assert np.abs(case.reference()["c"]).max() > 1


def _waits_and_loop(target: str, params: dict) -> tuple[list[str], str]:
    from asterism import api
    from asterism.ir import print_ir

    case = kernels.get("gemm").build(target, params)
    ir = print_ir(case.module)
    asm = api.translate(case.module, pipeline=case.notes["pipeline"])
    waits = [s.strip() for s in asm.splitlines() if s.strip().startswith("s_waitcnt")]
    return waits, ir


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_scf_k_loop_is_an_scf_for_with_the_same_waits(target):
    # The scf variant's IR holds the K loop as an scf.for and no s_waitcnt written by the
    # generator: the waits pass makes them all from the tokens carried around the loop
    # (gfx950: the direct-to-LDS loads of the tiles in flight). They are the ones the
    # unrolled variant writes by hand (its vmcnt counts: the loads of the tiles after the
    # one waited for, D per tile), in the same places.
    params = dict(m=64, n=64, k=416, tile_m=64, tile_n=64)
    hand, hand_ir = _waits_and_loop(target, dict(params, kloop="unrolled"))
    made, scf_ir = _waits_and_loop(target, dict(params, kloop="scf"))
    assert "scf.for" in scf_ir and "scf.for" not in hand_ir
    assert "s_waitcnt" not in scf_ir
    assert made == hand
    if target == "gfx950":
        assert "s_waitcnt" in hand_ir  # (the hand-written cross-iteration waits)
        # a 64x32 tile of A (and of B) is 4 blocks of 1024 bytes over 4 waves: D = 2
        # loads per wave per tile; waiting for a tile with the next in flight: vmcnt(2)
        assert "s_waitcnt vmcnt(2)" in made
