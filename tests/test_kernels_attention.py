"""flash_attention_fwd from asterism.kernels: the kernel against a float64 NumPy attention on
the emulator (both targets, both dtypes, causal and not, head dims 64 and 128, ragged
sequence lengths, one and several waves), the reference itself against hand-known values,
and parameters that do not fit.
"""

from __future__ import annotations

import numpy as np
import pytest

import asterism
from asterism import kernels
from asterism.kernels import KernelParamError
from asterism.kernels.attention import EPS, ROW_RTOL, encode, reference, row_relative_error

GEN = "flash_attention_fwd"


def run_case(case) -> tuple[float, float]:
    """Compile with `auto`, run on the emulator; (max |error| - allowed, max |error|), and
    the per-row norm check: no row's ||error|| / ||O_ref|| above ROW_RTOL * eps."""
    code = asterism.compile(case.module, pipeline="auto")
    asterism.launch(code, case.kernel, grid=case.grid, block=case.block,
                    args=list(case.args.values()), backend="emu")
    got = case.output_values("o")
    want = case.reference()["o"]
    err = np.abs(got - want)
    rows = row_relative_error(got, want)
    allowed = ROW_RTOL * EPS[case.params.get("dtype", "bf16")]
    assert np.all(np.isfinite(got)), f"{np.count_nonzero(~np.isfinite(got))} values not finite"
    assert rows.max() <= allowed, (f"row {np.unravel_index(rows.argmax(), rows.shape)}: "
                                   f"||error|| / ||O|| = {rows.max():.4g} > {allowed:.4g}")
    return float((err - case.atol - case.rtol * np.abs(want)).max()), float(err.max())


# (target, parameters): small shapes, every feature at least once per target.
CASES = [
    ("gfx950", dict(seq_q=64, head_dim=128, dtype="bf16", waves=2, block_m=64, block_n=64)),
    ("gfx942", dict(seq_q=64, head_dim=128, dtype="bf16", causal=True, waves=2, block_m=64,
                    block_n=32)),
    ("gfx950", dict(seq_q=40, seq_k=72, head_dim=64, dtype="f16", causal=True, waves=1,
                    block_m=32, block_n=32)),
    ("gfx942", dict(seq_q=33, seq_k=50, head_dim=64, dtype="f16", waves=1, block_m=32,
                    block_n=64)),
    ("gfx950", dict(batch=2, heads=1, seq_q=48, head_dim=128, dtype="f16", causal=True,
                    waves=1, block_m=32, block_n=32)),
    ("gfx942", dict(heads=1, seq_q=40, seq_k=140, head_dim=64, dtype="bf16", waves=1,
                    block_m=32, block_n=128)),
    # one LDS buffer on gfx950 (the others there are double-buffered: stages 0 = 2)
    ("gfx950", dict(heads=1, seq_q=64, seq_k=160, head_dim=128, dtype="bf16", waves=2,
                    block_m=64, block_n=64, stages=1)),
    # ping-pong S (the gfx950 default where it fits), forced: 1 full block then 1 masked
    # one; scf loops (the default): the odd full block runs after the (empty) pairs loop
    # and moves the next scores to S, as the unrolled loop's odd exit
    ("gfx950", dict(heads=1, seq_q=64, seq_k=128, head_dim=64, dtype="bf16", causal=True,
                    waves=2, block_m=64, block_n=64, s_buffers=2)),
    # the same through the unrolled loop: the next scores are moved from S2 to S at its
    # exit, and the masked loop reads them from S
    ("gfx950", dict(heads=1, seq_q=64, seq_k=128, head_dim=64, dtype="bf16", causal=True,
                    waves=2, block_m=64, block_n=64, s_buffers=2, loop="unrolled")),
    # ping-pong, scf, causal over 4 row tiles: 0..3 full blocks (counts known at launch:
    # pairs loops of 0 and 1 trips, the odd blocks in scf.ifs after them, the full ones
    # with the carried values as results)
    ("gfx950", dict(heads=1, seq_q=256, head_dim=64, dtype="f16", causal=True, waves=2,
                    block_m=64, block_n=64, s_buffers=2, causal_order="in_order")),
    # ping-pong, scf, no mask: 3 blocks (one pair, the odd one after); ragged: 3 full
    # blocks (the odd one after the pair, S2 moved to S for the masked last block)
    ("gfx950", dict(heads=1, seq_q=64, seq_k=192, head_dim=64, waves=2, block_n=64,
                    s_buffers=2)),
    ("gfx950", dict(heads=1, seq_q=64, seq_k=200, head_dim=64, waves=2, block_n=64,
                    s_buffers=2)),
    # O in AGPRs (MFMA C/D; the rescale and the output through v_accvgpr_read/write)
    ("gfx942", dict(heads=1, seq_q=40, head_dim=64, dtype="f16", waves=1, block_m=32,
                    block_n=32, o_regs="agpr")),
    # block_n 128 on gfx950: ping-pong fits only with O in AGPRs (the auto choice)
    ("gfx950", dict(heads=1, seq_q=64, seq_k=200, head_dim=128, dtype="bf16", waves=2,
                    block_m=64, block_n=128)),
    # 8 waves (the default: two per SIMD, 256 query rows), ragged and causal, both targets
    ("gfx950", dict(heads=1, seq_q=300, seq_k=330, head_dim=64, causal=True, waves=8)),
    ("gfx942", dict(heads=1, seq_q=260, seq_k=270, head_dim=128, dtype="f16", waves=8)),
    # the key loops as blocks and branches (loop=unrolled), both targets
    ("gfx950", dict(heads=1, seq_q=300, seq_k=330, head_dim=64, causal=True, waves=8,
                    loop="unrolled")),
    ("gfx942", dict(heads=1, seq_q=96, seq_k=140, head_dim=64, causal=True, waves=2,
                    block_n=64, loop="unrolled")),
]


@pytest.mark.parametrize("target", ["gfx950", "gfx942"])
def test_key_loops_are_scf_loops(target):
    # loop=scf: the key loops are scf.for (the rescale an scf.if on vcc, no label); after
    # lowering, the same instructions as loop=unrolled but the loop control (SALU).
    from collections import Counter

    params = dict(heads=1, seq_q=256, seq_k=300, causal=True)
    gen = kernels.get(GEN)
    scf = gen.build(target, dict(params, loop="scf")).module
    text = str(scf)
    assert text.count("scf.for") == 2 and text.count("scf.if") == 2
    assert "amdgcn.branch" not in text.split("scf.for", 1)[1].rsplit("scf.yield", 1)[0]
    unrolled = gen.build(target, dict(params, loop="unrolled")).module
    assert "scf.for" not in str(unrolled)

    def vector_ops(module) -> Counter:
        asm = asterism.translate(module, pipeline="auto")
        return Counter(line.split()[0] for line in asm.splitlines()
                       if line.startswith("\t") and line.split()[0][:2] in ("v_", "ds",
                                                                                "bu"))

    assert vector_ops(scf) == vector_ops(unrolled)


@pytest.mark.parametrize(("target", "params"), CASES,
                         ids=[f"{t}-" + "-".join(f"{k}{v}" for k, v in p.items())
                              for t, p in CASES])
def test_matches_numpy(target, params):
    case = kernels.get(GEN).build(target, params)
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"
    assert err > 0  # the check compares real values (16-bit P and O cannot be exact)


def test_wrong_output_is_caught():
    # The check can fail: a case whose reference uses another scale must not match.
    case = kernels.get(GEN).build("gfx942", dict(heads=1, seq_q=32, head_dim=64, waves=1,
                                                 block_m=32, block_n=32))
    good = case.reference
    case.reference = lambda: {"o": reference(*(case.decode("x", case.args[n])
                                               for n in "qkv"), 0.5, False)}
    with pytest.raises(AssertionError, match="error"):
        run_case(case)
    case.reference = good


def test_reference_hand_values():
    # Causal, seq_q == seq_k: query 0 sees key 0 only, so O[0] = V[0]; equal scores give the
    # mean of the visible V rows.
    rng = np.random.default_rng(1)
    q = np.zeros((1, 1, 4, 8))
    k = rng.standard_normal((1, 1, 4, 8))
    v = rng.standard_normal((1, 1, 4, 8))
    o = reference(q, k, v, 0.3, causal=True)
    for i in range(4):
        np.testing.assert_allclose(o[0, 0, i], v[0, 0, :i + 1].mean(axis=0))
    # Bottom-right alignment: 2 queries, 4 keys; query 0 sees keys 0..2.
    o = reference(q[:, :, :2], k, v, 0.3, causal=True)
    np.testing.assert_allclose(o[0, 0, 0], v[0, 0, :3].mean(axis=0))
    # One dominant key takes all the weight.
    q1 = np.ones((1, 1, 1, 8))
    k1 = np.zeros((1, 1, 3, 8))
    k1[0, 0, 1] = 50.0
    np.testing.assert_allclose(reference(q1, k1, v[:, :, :3], 1.0, False)[0, 0, 0],
                               v[0, 0, 1], atol=1e-12)


@pytest.mark.parametrize(("params", "names"), [
    (dict(head_dim=96), "head_dim"),
    (dict(dtype="f32"), "dtype"),
    (dict(block_m=48), "block_m"),
    (dict(block_n=48), "block_n"),
    (dict(block_n=512), "block_n"),
    (dict(waves=3), "waves"),
    (dict(waves=8, block_n=128, o_regs="agpr", s_buffers=2), "waves"),
    (dict(causal=True, seq_q=64, seq_k=32), "causal"),
    (dict(seq_q=0), "seq_q"),
    (dict(scale=-1.0), "scale"),
    (dict(blocks=3), "blocks"),
    (dict(stages=3), "stages"),
    (dict(o_regs="sgpr"), "o_regs"),
])
def test_bad_parameters(params, names):
    with pytest.raises(KernelParamError, match=names):
        kernels.get(GEN).build("gfx950", params)


def test_register_and_lds_budgets_are_checked():
    from asterism.kernels.attention import check

    params = kernels.get(GEN).resolve({"block_n": 128, "waves": 2})
    assert check("gfx950", params).vgpr_estimate() <= 256
    # 8 S tiles (128 pinned VGPRs) + O + Q + the packed P do not fit in 256 VGPRs.
    with pytest.raises(KernelParamError, match=r"block_n: needs about \d+ VGPRs.*256"):
        kernels.get(GEN).build("gfx950", {"block_n": 256})
    # 2 x 256 x 128 x 2 bytes of K/V tiles: more than gfx942's 64 KiB.
    with pytest.raises(KernelParamError,
                       match=r"block_n: 1 stage\(s\) of K and V tiles need 131072 bytes.*65536"):
        kernels.get(GEN).build("gfx942", {"block_n": 256})


def test_double_buffering_parameters():
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    assert check("gfx950", gen.resolve({})).stages == 2
    # gfx942: two stages through registers (block_n 64 at d128: 2 x 32 KiB), one with the
    # one-stage choices (block_n 128 there), or where the copy's registers do not fit (one
    # wave holds a whole 128-key d64 tile: 128 VGPRs).
    two = check("gfx942", gen.resolve({}))
    assert (two.stages, two.reg_stages, two.block_n, two.lds_bytes) == (2, True, 64, 65536)
    assert (two.k_ahead, two.exchange_on_rescale, two.pinned_vgprs["C"]) == (2, True, 16)
    for one in ({"stages": 1}, {"prefetch": False}, {"lds_writes": "split"},
                {"waves": 1, "head_dim": 64, "block_n": 128}):
        cfg = check("gfx942", gen.resolve(one))
        assert (cfg.stages, cfg.reg_stages, "C" in cfg.pinned_vgprs) == (1, False, False), one
    assert check("gfx942", gen.resolve({"stages": 1})).block_n == 128
    assert check("gfx942", gen.resolve({"head_dim": 64})).block_n == 128  # 2 x 32 KiB
    with pytest.raises(KernelParamError, match="stages: 2 on gfx942 .* needs prefetch=true"):
        gen.build("gfx942", {"stages": 2, "prefetch": False})
    with pytest.raises(KernelParamError, match="lds_writes: split needs .* one LDS stage"):
        gen.build("gfx942", {"stages": 2, "lds_writes": "split"})
    # gfx950 has 160 KiB per workgroup: two stages of 256-key d128 tiles need 256 KiB.
    with pytest.raises(KernelParamError, match=r"stages: 2 stage\(s\) .* need 262144 bytes"):
        gen.build("gfx950", {"block_n": 256, "stages": 2})


def test_ping_pong_parameters():
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    # The defaults: 8 waves, block_n 128 on gfx950 and 64 on gfx942 (two K/V stages: 128 KiB,
    # 64 KiB), one S buffer (two waves per SIMD hide each other's softmax).
    default = check("gfx950", gen.resolve({}))
    assert (default.waves, default.block_n, default.s_buffers) == (8, 128, 1)
    assert (check("gfx942", gen.resolve({})).block_n, check("gfx942", gen.resolve({})).waves,
            check("gfx942", gen.resolve({})).s_buffers) == (64, 8, 1)
    # One wave per SIMD: ping-pong S where the registers fit.
    two = {"waves": 2, "block_n": 64}
    assert check("gfx950", gen.resolve(two)).s_buffers == 2
    assert "S2" in check("gfx950", gen.resolve(two)).pinned_vgprs
    assert check("gfx950", gen.resolve({**two, "stages": 1})).s_buffers == 1
    # block_n 128: a second 64-VGPR S buffer fits beside Q and S only with O in AGPRs.
    big = check("gfx950", gen.resolve({"block_n": 128, "waves": 2}))
    assert (big.s_buffers, big.o_agprs, "O" in big.pinned_vgprs) == (2, True, False)
    assert big.pinned_agprs == {"O": 64}
    assert check("gfx950", gen.resolve({"block_n": 128, "o_regs": "vgpr", "waves": 2})
                 ).s_buffers == 1
    # 8 waves (two per SIMD): VGPRs + AGPRs <= 256, so block_n 128 keeps O in VGPRs and
    # gives up the second S buffer.
    eight = check("gfx950", gen.resolve({"block_n": 128}))
    assert (eight.waves, eight.s_buffers, eight.o_agprs) == (8, 1, False)
    assert not check("gfx950", gen.resolve(two)).o_agprs  # block_n 64: O stays in VGPRs
    with pytest.raises(KernelParamError, match="s_buffers: 2 .* needs gfx950 with stages 2"):
        gen.build("gfx942", {"s_buffers": 2})
    with pytest.raises(KernelParamError, match="s_buffers: 2 .* needs gfx950 with stages 2"):
        gen.build("gfx950", {"s_buffers": 2, "stages": 1})


def test_generator_is_listed():
    gen = kernels.get(GEN)
    assert gen in kernels.generators()
    assert gen.targets == ("gfx950", "gfx942")
    assert {p.name for p in gen.params} >= {"batch", "heads", "seq_q", "seq_k", "head_dim",
                                             "dtype", "causal", "block_m", "block_n", "waves"}


def test_gfx950_output_stores_are_dwordx4():
    # 128 head-dim values per row as 2-byte values: 8 stores of 16 bytes per lane (after one
    # v_permlane32_swap_b32 per dword) instead of 16 stores of 8 bytes (gfx942 keeps those).
    def text(target):
        return str(kernels.get(GEN).build(target, {"seq_q": 64}).module)

    gfx950, gfx942 = text("gfx950"), text("gfx942")
    assert gfx950.count("buffer_store_dwordx4") == 8
    assert "buffer_store_dwordx2" not in gfx950
    assert gfx942.count("buffer_store_dwordx2") == 16


@pytest.mark.parametrize("growth", [0.05, 3.0])
def test_running_max_growth_with_and_without_rescale(growth):
    # Scores that grow key block after key block: by a little (the running max stays, P up
    # to 2^RESCALE_SLACK) or by a lot (a rescale of O and l in every block).
    from asterism.kernels.attention import encode

    case = kernels.get(GEN).build("gfx950", dict(heads=1, seq_q=32, seq_k=192, head_dim=64,
                                                 waves=1, block_m=32, block_n=32))
    rng = np.random.default_rng(3)
    q = np.abs(rng.standard_normal((1, 1, 32, 64))) * 0.5
    k = np.abs(rng.standard_normal((1, 1, 192, 64))) * (1 + growth * np.arange(192) / 32)[
        None, None, :, None] * 0.2
    case.args["q"], case.args["k"] = encode(q, "bf16"), encode(k, "bf16")
    qf, kf, vf = (case.decode(n, case.args[n]) for n in "qkv")
    case.reference = lambda: {"o": reference(qf, kf, vf, 1 / 8, False)}
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"


def growing_scores(seq_k: int, step: float, d: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Q = 1 and K rows whose scores (scale 1/sqrt(d)) grow by about `step` (natural log
    units) every 64 keys, with a little noise: Q [1, 1, 64, d], K [1, 1, seq_k, d]."""
    rng = np.random.default_rng(5)
    q = np.ones((1, 1, 64, d))
    level = step / np.sqrt(d) * (np.arange(seq_k) // 64)
    k = level[None, None, :, None] + 0.25 * rng.standard_normal((1, 1, seq_k, d))
    return q, k


# The rescale configurations: ping-pong S (the gfx950 default), one S buffer, gfx942.
RESCALE_CASES = [("gfx950", {}), ("gfx950", {"s_buffers": 1, "waves": 2}),
                 ("gfx942", {"block_n": 32, "waves": 2}), ("gfx950", {"packed": "false"}),
                 ("gfx950", {"packed": "true"}), ("gfx942", {"o_regs": "agpr", "waves": 2})]


@pytest.mark.parametrize(("target", "extra"), RESCALE_CASES,
                         ids=[f"{t}-{e}" for t, e in RESCALE_CASES])
def test_growing_maxima_need_every_rescale(target, extra):
    # Scores grow by 60 (87 in the kernel's log2 units) every 64 keys, 260 over the keys: a
    # kernel that keeps the first block's max (never rescales again) computes exp2(> 128)
    # = inf there, and one that moves the max without rescaling O and l mixes blocks
    # weighted 2^-87 apart. Only the last 64 keys carry weight in the reference.
    check_growing_maxima(target, extra)


def check_growing_maxima(target: str, extra: dict) -> None:
    """Run the kernel on scores that grow block by block (a rescale needed in every block)
    and check it against the float64 reference."""
    case = kernels.get(GEN).build(target, dict(heads=1, seq_q=64, seq_k=256, head_dim=64,
                                               **extra))
    q, k = growing_scores(256, 60.0)
    case.args["q"], case.args["k"] = encode(q, "bf16"), encode(k, "bf16")
    qf, kf, vf = (case.decode(n, case.args[n]) for n in "qkv")
    case.reference = lambda: {"o": reference(qf, kf, vf, 1 / 8, False)}
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"


@pytest.mark.parametrize("target", ["gfx950", "gfx942"])
def test_running_sum_counts_every_key(target):
    # V with a mean of 2 makes |O| about as large as |V|: a running sum l missing 2 keys in
    # 64 makes O 3 % too large, 0.06 here, beyond eps * max|V| + eps * |O| (the element
    # check) and 8 x the row norm check's 2 eps.
    case = kernels.get(GEN).build(target, dict(heads=1, seq_q=64, seq_k=192, head_dim=128))
    v = 2.0 + np.random.default_rng(6).standard_normal((1, 1, 192, 128))
    case.args["v"] = encode(v, "bf16")
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"


# The causal diagonal at block edges: seq_k - seq_q a multiple of block_n (the diagonal
# starts exactly at a block's first key), one key past it, one key short of it; the last
# query row ending on a block edge; a partial last block.
EDGE_CASES = [
    ("gfx950", dict(seq_q=64, seq_k=64)),
    ("gfx950", dict(seq_q=64, seq_k=128)),
    ("gfx950", dict(seq_q=63, seq_k=128)),
    ("gfx950", dict(seq_q=65, seq_k=129)),
    ("gfx942", dict(seq_q=32, seq_k=95, block_n=32, waves=2)),
    ("gfx942", dict(seq_q=33, seq_k=97, block_n=32, waves=1, block_m=32)),
]


@pytest.mark.parametrize(("target", "extra"), EDGE_CASES,
                         ids=[f"{t}-q{e['seq_q']}-k{e['seq_k']}" for t, e in EDGE_CASES])
def test_causal_mask_at_block_edges(target, extra):
    case = kernels.get(GEN).build(target, dict(heads=1, head_dim=64, causal=True, **extra))
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"


# Grouped-query attention: groups of 2 (a shift) and 3 (a multiply-high), batch 2 so the
# batch stride of K/V (heads_kv heads) differs from Q's; the log-sum-exp output with it.
GQA_CASES = [
    ("gfx950", dict(batch=2, heads=4, heads_kv=2, seq_q=64, seq_k=96, lse=True)),
    ("gfx942", dict(batch=2, heads=6, heads_kv=2, seq_q=40, seq_k=64, block_n=32,
                    waves=1, block_m=32, lse=True, causal=True)),
    ("gfx950", dict(heads=3, heads_kv=1, seq_q=32, dtype="f16", waves=1, block_m=32)),
]


@pytest.mark.parametrize(("target", "extra"), GQA_CASES,
                         ids=[f"{t}-h{e['heads']}-kv{e['heads_kv']}" for t, e in GQA_CASES])
def test_grouped_query_heads_and_lse(target, extra):
    case = kernels.get(GEN).build(target, dict(head_dim=64, **extra))
    assert case.args["k"].shape[1] == extra["heads_kv"]
    # Every query head must read its own group's K/V head: K/V heads far apart (V head g
    # has mean 4 g) make a wrong head an error of 4 per value.
    v = case.decode("v", case.args["v"]) + 4.0 * np.arange(extra["heads_kv"])[None, :, None,
                                                                                None]
    case.args["v"] = encode(v, case.params.get("dtype", "bf16"))
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"
    if extra.get("lse"):
        q, k, v = (case.decode(n, case.args[n]) for n in "qkv")
        _, want = reference(q, k, v, 1 / 8, extra.get("causal", False), lse=True)
        # f32 log-sum-exp of O(10): the hardware log2 and the f32 sums, well within 1e-4.
        np.testing.assert_allclose(case.args["lse"], want, rtol=0, atol=1e-4)
        assert np.abs(want).max() > 1.0  # a real value to compare


def test_lse_is_optional_and_heads_kv_must_divide():
    gen = kernels.get(GEN)
    assert gen.build("gfx950", {"seq_q": 64}).outputs == ("o",)
    assert gen.build("gfx950", {"seq_q": 64, "lse": True}).outputs == ("o", "lse")
    with pytest.raises(KernelParamError, match="heads_kv: must divide heads"):
        gen.build("gfx950", {"heads": 4, "heads_kv": 3})


def lds_conflict_cycles(target: str, params: dict) -> int:
    """Modeled LDS bank conflict cycles of one run (all LDS instructions), checked output."""
    from asterism.kernels.run import run_case as run_kernel

    run = run_kernel(kernels.get(GEN).build(target, params), timing=True)
    assert run.passed
    return sum(c.conflict_cycles for c in run.timing_result.lds_costs.values())


def test_swizzled_tiles_are_conflict_free_under_the_bank_model():
    # gfx950, 4 waves (a copy instruction moves 16 rows: the full 16-row K swizzle period):
    # no bank conflict in any K, V^T read (16-way on K, 4-way on V^T without the swizzle).
    # gfx942 with k_read=b64: 2-way left on K (16-byte chunks XORed over 8 rows; 16 rows per
    # phase; b128, the default, is conflict-free: test_gfx942_transposed_v_and_b128_...).
    small = dict(heads=1, seq_q=128, seq_k=128, head_dim=128, waves=4, block_m=128)
    assert lds_conflict_cycles("gfx950", small) == 0
    assert lds_conflict_cycles("gfx950", dict(small, lds_layout="plain")) > 0
    g942 = dict(heads=1, seq_q=64, seq_k=64, head_dim=128, block_n=32, k_read="b64")
    swizzled, plain = (lds_conflict_cycles("gfx942", dict(g942, lds_layout=layout))
                       for layout in ("swizzle", "plain"))
    assert 0 < 8 * swizzled <= plain


def test_packed_f32_math():
    # packed=true: the scaling, the rescale and the running sum two values per instruction;
    # packed=false: none (auto, the default: test_auto_packing_...).
    def count(params, op):
        return str(kernels.get(GEN).build("gfx950", dict(seq_q=128, waves=2, block_n=64,
                                                         **params)).module).count(op)

    on = {"packed": "true"}
    n = 16 * 2  # S registers per lane at block_n 64; two key blocks: two ping-pong bodies
    assert count(on, "v_pk_fma_f32") == 2 * n // 2
    # l and the 64 O registers (d128) per body, and O / l once in the epilogue
    assert count(on, "v_pk_mul_f32") == 2 * (1 + 64 // 2) + 64 // 2
    assert count(on, "v_pk_add_f32") == 2 * n // 2
    assert count({"packed": "false"}, "v_pk_") == 0


# Issue cycles an S / P V MFMA holds its SIMD's packed-FP32 VALU (LLVM PR #233721: passes + 2,
# + 1 after a 16-byte source): gfx950 32x32x16 (8 passes, 16 bytes) 11; gfx942 32x32x8 (16
# passes, 8 bytes) 18.
HOLD_SLOTS = {"gfx950": 11, "gfx942": 18}


def packed_in_mfma_hold(target: str, params: dict) -> tuple[int, int]:
    """(v_pk_*_f32 with an MFMA fewer than the hold's issue cycles before it in the same
    block of the generated order, all v_pk_*_f32) of a small build."""
    from xdsl.ir import Block

    from asterism.builder.checks import unit_sequence
    module = kernels.get(GEN).build(target, {"seq_q": 128, "seq_k": 256, "waves": 2,
                                             "block_n": 64, **params}).module
    inside = total = 0
    for block in (b for op in module.walk() for r in op.regions for b in r.blocks):
        assert isinstance(block, Block)
        seq = unit_sequence(block, mnemonics=True)
        for i, m in enumerate(seq):
            if m.startswith("v_pk_") and m.endswith("_f32"):
                total += 1
                back = seq[max(0, i - HOLD_SLOTS[target] + 1):i]
                inside += any(x.startswith("v_mfma") for x in back)
    return inside, total


@pytest.mark.parametrize("target", ["gfx950", "gfx942"])
def test_auto_packing_keeps_packed_f32_out_of_the_mfma_holds(target):
    # packed auto (the default): the v_pk_*_f32 an MFMA would hold become two unpacked ops
    # (the rest stay packed); packed=true issues some inside the holds.
    inside, total = packed_in_mfma_hold(target, {})
    assert inside == 0 and total > 0
    inside, _ = packed_in_mfma_hold(target, {"packed": "true"})
    assert inside > 0
    # 8 waves: two per SIMD, each wave's softmax under the other's MFMAs: none packed in the
    # loop; only the epilogue's O / l (64 O registers at d128: 32 v_pk_mul_f32), after it.
    assert packed_in_mfma_hold(target, {"waves": 8, "seq_q": 256}) == (0, 32)
    assert packed_in_mfma_hold(target, {"waves": 8, "seq_q": 256, "packed": "false"}) == (0, 0)


# Causal row-tile orders: pairs (n - 1 - x, x) with an odd tile count (the middle workgroup
# takes one tile) and an even one; longest first; a ragged last tile.
ORDER_CASES = [
    ("gfx950", dict(seq_q=96, seq_k=100, causal_order="paired")),
    ("gfx942", dict(seq_q=128, seq_k=128, causal_order="paired")),
    ("gfx950", dict(seq_q=90, seq_k=128, causal_order="longest_first")),
]


@pytest.mark.parametrize(("target", "extra"), ORDER_CASES,
                         ids=[f"{t}-{e['causal_order']}-q{e['seq_q']}" for t, e in ORDER_CASES])
def test_causal_row_tile_orders(target, extra):
    case = kernels.get(GEN).build(target, dict(heads=2, head_dim=64, causal=True, waves=1,
                                               block_n=32, **extra))
    tiles = -(-extra["seq_q"] // 32)
    assert case.grid[0] == (-(-tiles // 2) if extra["causal_order"] == "paired" else tiles)
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"


def test_causal_order_auto():
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    # 16 tiles x 8 heads: 64 pairs < 256 CUs: one tile per workgroup, longest first.
    few = check("gfx950", gen.resolve({"seq_q": 4096, "heads": 8, "causal": True}))
    assert (few.causal_order, few.grid_x) == ("longest_first", 16)
    many = check("gfx950", gen.resolve({"seq_q": 4096, "heads": 64, "causal": True}))
    assert (many.causal_order, many.grid_x) == ("paired", 8)


def test_gfx942_bf16_truncation_matches_its_rounding_model():
    # bf16_round=truncate (AITER's gfx942 rtz rounding): checked against the reference with
    # P and O rounded toward zero (the case's own), and biased low against the plain one.
    case = kernels.get(GEN).build("gfx942", dict(heads=1, seq_q=64, seq_k=256, head_dim=128,
                                                 waves=2, bf16_round="truncate"))
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"
    got = case.output_values("o")
    q, k, v = (case.decode(n, case.args[n]) for n in "qkv")
    plain = reference(q, k, v, case.params.get("scale") or 1 / np.sqrt(128), False)
    model = case.reference()["o"]
    bias_plain = np.mean((got - plain) * np.sign(plain))
    bias_model = np.mean((got - model) * np.sign(model))
    assert bias_plain < -1e-4 and abs(bias_model) < abs(bias_plain) / 4
    with pytest.raises(KernelParamError, match="bf16_round: truncate is for bf16 on gfx942"):
        kernels.get(GEN).build("gfx950", {"bf16_round": "truncate"})


# gfx942 copy and read techniques (issue 24), each with the others at their defaults where
# it matters: V^T written at copy time in all three piece widths (16, 8, 4 bytes of a row
# per lane and group of 4 keys), the prefetch into the S registers across the unmasked and
# the masked loop and across the two passes of a causal pair, Q staged through LDS, the
# ds_read_b128 K reads, and the old paths (rows, no prefetch, direct Q).
G942_CASES = [
    dict(heads=1, seq_q=64, seq_k=300, head_dim=128),  # 8 waves, block_n 128: width 16
    dict(heads=1, seq_q=40, seq_k=130, head_dim=128, block_n=64, dtype="f16"),  # width 8
    dict(heads=1, seq_q=64, seq_k=96, head_dim=128, block_n=32, causal=True),  # width 4
    dict(heads=1, seq_q=300, head_dim=64, causal=True, causal_order="paired"),
    dict(heads=2, heads_kv=1, seq_q=64, seq_k=200, head_dim=128, k_read="b128", lse=True),
    dict(heads=1, seq_q=64, seq_k=140, head_dim=128, v_layout="rows", prefetch=False,
         q_staging="direct", k_read="b64"),
    dict(heads=1, seq_q=64, seq_k=140, head_dim=128, v_layout="rows"),  # prefetch of rows
]


@pytest.mark.parametrize("extra", G942_CASES, ids=[
    "vt16", "vt8-f16", "vt4-causal", "d64-paired", "gqa-b128-lse", "all-off", "rows-prefetch"])
def test_gfx942_copy_techniques(extra):
    from asterism.kernels.attention import check

    cfg = check("gfx942", kernels.get(GEN).resolve(extra))
    off = extra.get("v_layout") == "rows"
    assert cfg.vt == (not off)
    assert cfg.vt_width == {128: 16, 64: 8, 32: 4}[cfg.block_n] or cfg.head_dim == 64
    assert cfg.prefetch == extra.get("prefetch", True)
    fits = cfg.waves * 32 * cfg.row_bytes <= cfg.lds_bytes  # 32 Q rows per wave in LDS
    assert cfg.q_lds == (extra.get("q_staging") != "direct" and fits)
    excess, err = run_case(kernels.get(GEN).build("gfx942", extra))
    assert excess <= 0, f"max error {err} above the tolerance"


def test_gfx942_transposed_v_and_b128_k_reads_are_conflict_free():
    # k_read=b128 and v_layout=transposed (every piece width): no bank conflict anywhere
    # in the kernel (Q staging, K/V^T writes, K and V^T reads) under the gfx942 bank model;
    # lds_layout=plain (no swizzle of K, Q or the V^T units) conflicts.
    base = dict(heads=1, seq_q=32, head_dim=128, k_read="b128")
    for block_n in (128, 64, 32):  # one key block each
        assert lds_conflict_cycles("gfx942", dict(base, block_n=block_n, seq_k=block_n)) == 0
    assert lds_conflict_cycles("gfx942", dict(base, block_n=32, seq_k=32,
                                              lds_layout="plain")) > 0


def test_gfx942_bf16_nearest_away_is_unbiased_and_cheaper():
    # nearest_away (+ half a bf16 ulp, keep the high half): the output is not biased low as
    # truncate's is, within the plain tolerance; 1 v_add_u32 per value instead of 2 VALU.
    params = dict(heads=1, seq_q=64, seq_k=256, head_dim=128, waves=2)
    biases = {}
    for mode in ("nearest_away", "truncate"):
        case = kernels.get(GEN).build("gfx942", dict(params, bf16_round=mode))
        excess, err = run_case(case)
        assert excess <= 0, f"{mode}: max error {err} above the tolerance"
        got = case.output_values("o")
        q, k, v = (case.decode(n, case.args[n]) for n in "qkv")
        plain = reference(q, k, v, 1 / np.sqrt(128), False)
        biases[mode] = np.mean((got - plain) * np.sign(plain))
    assert abs(biases["nearest_away"]) < abs(biases["truncate"]) / 4
    text = {mode: str(kernels.get(GEN).build("gfx942", dict(params, bf16_round=mode)).module)
            for mode in ("nearest", "nearest_away")}
    assert text["nearest_away"].count("v_bfe_u32") < text["nearest"].count("v_bfe_u32")


def test_gfx942_technique_params_refused_where_they_do_not_apply():
    gen = kernels.get(GEN)
    with pytest.raises(KernelParamError, match="v_layout: transposed is the gfx942 copy"):
        gen.build("gfx950", {"v_layout": "transposed"})
    with pytest.raises(KernelParamError, match="k_read: b64 is the gfx942 choice"):
        gen.build("gfx950", {"k_read": "b64"})
    with pytest.raises(KernelParamError, match="q_staging: lds is the gfx942 choice"):
        gen.build("gfx942", {"q_staging": "lds", "block_n": 64, "stages": 1})
    with pytest.raises(KernelParamError, match="bf16_round: nearest_away is for bf16 on gfx942"):
        gen.build("gfx942", {"bf16_round": "nearest_away", "dtype": "f16"})


def test_gfx942_v_transposed_reads_one_b64_per_operand():
    # v_layout=transposed: a V^T operand is one ds_read_b64 (64 per block of 128 keys at
    # d128: 4 head-dim blocks x 4 tiles x 4 steps) and the copy's v_perm_b32 pairs (16 per
    # lane); rows: 4 ds_read_u16 per operand, no perm in the copy (one LDS stage: block_n
    # 128, the copy's writes once in the module).
    def count(params, op):
        return str(kernels.get(GEN).build("gfx942", dict(seq_q=64, bf16_round="truncate",
                                                         stages=1, **params)).module).count(op)

    rows, vt = {"v_layout": "rows"}, {}
    assert count(vt, "ds_read_u16") == 0
    # the module text names each op the same number of times, whatever the op
    b64 = count(vt, "ds_read_b64") - count(rows, "ds_read_b64")  # the V^T reads
    assert b64 > 0 and count(rows, "ds_read_u16") == 4 * b64
    # v_perm_b32: 16 in the V copy per 64 V^T reads over the rows layout's (P, O packing)
    assert 64 * (count(vt, "v_perm_b32") - count(rows, "v_perm_b32")) == 16 * b64


# s_setprio (issue 24): group = waves 4-7 raise their priority once (AITER's placement),
# mfma = every wave raises it before its MFMA phases and lowers it before its softmax.
SETPRIO_CASES = [
    ("group", dict(heads=1, seq_q=256, seq_k=192, head_dim=64, dtype="f16")),
    ("mfma", dict(heads=1, seq_q=300, seq_k=330, head_dim=64, causal=True, lse=True)),
]


@pytest.mark.parametrize(("setprio", "extra"), SETPRIO_CASES, ids=[c[0] for c in SETPRIO_CASES])
def test_setprio_matches_numpy_and_emits_s_setprio(setprio, extra):
    gen = kernels.get(GEN)
    case = gen.build("gfx950", dict(waves=8, setprio=setprio, **extra))
    excess, _err = run_case(case)
    assert excess <= 0
    text = str(case.module)
    if setprio == "group":  # once, in the branch only waves 4-7 take
        assert text.count("s_setprio") == 1
    else:  # per key block: 1 before the S MFMAs, 0 before the softmax, 1 before P V
        assert text.count("s_setprio") % 3 == 0 and text.count("s_setprio") >= 3
    # llvm-mc-22 -mcpu=gfx950: s_setprio 1 is [0x01,0x00,0x8f,0xbf], s_setprio 0
    # [0x00,0x00,0x8f,0xbf]
    code = asterism.compile(gen.build("gfx950", dict(waves=8, setprio=setprio, **extra)).module,
                            pipeline="auto")  # (compile takes a module once: a new build)
    assert b"\x01\x00\x8f\xbf" in code
    assert (b"\x00\x00\x8f\xbf" in code) == (setprio == "mfma")
    assert "s_setprio" not in str(gen.build("gfx950", dict(waves=8, setprio="none",
                                                       **extra)).module)


def test_setprio_needs_two_waves_per_simd_and_phases():
    gen = kernels.get(GEN)
    with pytest.raises(KernelParamError, match="setprio: group .* needs 8 waves, got 4"):
        gen.build("gfx950", {"waves": 4, "setprio": "group"})
    with pytest.raises(KernelParamError, match="setprio: mfma needs one S buffer"):
        gen.build("gfx950", {"waves": 8, "block_n": 64, "s_buffers": 2, "setprio": "mfma"})


@pytest.mark.parametrize("setprio", ["auto", "scores"])
def test_gfx942_default_raises_priority_for_the_scores_and_reads_k_ahead(setprio):
    # gfx942 with 8 waves: setprio auto = s_mfma (s_setprio 1 before the S MFMAs, 0 after
    # them: 2 per key block; scores: 0 after the row max's lane exchange) and k_ahead auto =
    # 2 with two LDS stages (the default), 3 with one; 4 waves: none.
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    extra = dict(heads=1, seq_q=300, seq_k=330, head_dim=64, causal=True, lse=True,
                 setprio=setprio)
    cfg = check("gfx942", gen.resolve(extra))
    want = "s_mfma" if setprio == "auto" else setprio
    assert (cfg.waves, cfg.setprio, cfg.k_ahead) == (8, want, 2)
    assert check("gfx942", gen.resolve(dict(extra, stages=1))).k_ahead == 3
    assert check("gfx950", gen.resolve(dict(extra, setprio="auto"))).setprio == "stage"
    assert check("gfx942", gen.resolve(dict(extra, waves=4, setprio="auto"))).setprio == "none"
    case = gen.build("gfx942", extra)
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"
    text = str(case.module)
    assert text.count("s_setprio") >= 2 and text.count("s_setprio") % 2 == 0
    # llvm-mc-22 -mcpu=gfx942: s_setprio 1 is [0x01,0x00,0x8f,0xbf], 0 [0x00,0x00,0x8f,0xbf]
    code = asterism.compile(gen.build("gfx942", extra).module, pipeline="auto")
    assert b"\x01\x00\x8f\xbf" in code and b"\x00\x00\x8f\xbf" in code
    assert "s_setprio" not in str(gen.build("gfx942", dict(extra, setprio="none")).module)


@pytest.mark.parametrize(("read", "ahead"), [("b64", 1), ("b64", 3), ("b128", 2),
                                             ("b128", 5)])
def test_k_ahead_reads_before_the_first_s_mfma(read, ahead):
    # The first key block's S MFMAs: `ahead` K reads (ds_read_b64 / ds_read_b128 on gfx942,
    # k_read b64 / b128) go before the first MFMA, and the result still matches.
    case = kernels.get(GEN).build("gfx942", dict(heads=1, seq_q=64, seq_k=140, head_dim=128,
                                                 k_ahead=ahead, q_staging="direct",
                                                 k_read=read))
    text = str(case.module)
    first_mfma = text.index("v_mfma")
    start = text.rfind("s_barrier", 0, first_mfma)
    assert text.count(f"ds_read_{read}", start, first_mfma) == ahead
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"
    with pytest.raises(KernelParamError, match="k_ahead: 7 is not one of"):
        kernels.get(GEN).build("gfx942", {"k_ahead": 7})


# lds_writes=split: V^T after the block's barrier, K after a mid-block barrier that waves
# 4-7 pass after their S MFMAs and waves 0-3 after their softmax (the emulator runs the
# waves in step, so a missing barrier would not show in the output here:
# test_gfx942_split_lds_writes_barrier_placement checks where each wave passes it).
SPLIT_CASES = [
    dict(heads=1, seq_q=64, seq_k=300, head_dim=128),  # ragged: unmasked then masked loop
    dict(heads=1, seq_q=300, head_dim=64, causal=True, causal_order="paired"),  # 2 passes
    dict(heads=2, heads_kv=1, seq_q=64, seq_k=256, head_dim=128, lse=True, dtype="f16"),
    dict(heads=1, seq_q=64, seq_k=200, head_dim=128, waves=4, block_n=64),  # one group
    dict(heads=1, seq_q=96, seq_k=300, head_dim=128, loop="unrolled", causal=True),
]


@pytest.mark.parametrize("extra", SPLIT_CASES, ids=["ragged", "d64-paired", "gqa-lse-f16",
                                                    "4waves", "unrolled-causal"])
def test_gfx942_split_lds_writes(extra):
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    assert check("gfx942", gen.resolve(dict(extra, lds_writes="split"))).split_writes
    assert not check("gfx942", gen.resolve(extra)).split_writes  # between: the default
    case = gen.build("gfx942", dict(extra, lds_writes="split"))
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"


def test_gfx942_split_lds_writes_refused_without_the_register_copy():
    gen = kernels.get(GEN)
    for extra in ({"prefetch": False}, {"v_layout": "rows"}):
        with pytest.raises(KernelParamError, match="lds_writes: split needs the gfx942 copy"):
            gen.build("gfx942", dict(extra, lds_writes="split"))
    with pytest.raises(KernelParamError, match="lds_writes: split needs the gfx942 copy"):
        gen.build("gfx950", {"lds_writes": "split"})


def ops_between_barriers(t, w, counted) -> list[tuple[int, int]]:
    """Per stretch between a wave's s_barrier records in a timing result: how many of its
    executed instructions start with v_mfma, and how many satisfy `counted(opcode)`."""
    segs, cur = [], [0, 0]
    for rec in w.records:
        op = t.code[rec[4] - 1][1].split()[0]
        if op == "s_barrier":
            segs.append(tuple(cur))
            cur = [0, 0]
        elif op.startswith("v_mfma"):
            cur[0] += 1
        elif counted(op):
            cur[1] += 1
    segs.append(tuple(cur))
    return segs


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_max_exchange_on_rescale_keeps_every_rescale(target):
    # on_rescale: the lane exchange of the row max only in the rescale branch; the growing
    # maxima of test_growing_maxima_need_every_rescale (a rescale needed in every block,
    # the halves of a row seeing different keys) still match.
    extra = {"block_n": 32, "waves": 2} if target == "gfx942" else {}
    check_growing_maxima(target, {"max_exchange": "on_rescale", **extra})


def test_gfx942_split_lds_writes_barrier_placement():
    # In the timing model's run (every instruction each wave executed, in order): after the
    # prologue's barriers, each key block is two barrier intervals per wave. Waves 0-3:
    # their 64 S MFMAs and the exps (64, + 1 for a rescale) before the mid-block barrier,
    # the 64 P V MFMAs after it; waves 4-7: the S MFMAs before it, exps and P V after. So
    # every wave passes it only once every wave is done with this block's K (whose next
    # block's writes follow it) and has written its V^T (written before its S MFMAs).
    from asterism.kernels.run import run_case as run_timed

    # (o_staging direct: no epilogue barrier before O goes through the LDS)
    case = kernels.get(GEN).build("gfx942", dict(heads=1, seq_q=64, seq_k=256,
                                                 head_dim=128, lds_writes="split",
                                                 o_staging="direct"))
    t = run_timed(case, timing=True, check=False).timing_result
    assert len(t.waves) == 8
    for w in t.waves:
        segs = ops_between_barriers(t, w, lambda op: op.startswith("v_exp"))
        blocks = segs[3:]  # after the Q staging, first-copy and first block barriers
        assert len(blocks) == 4 and w.barriers == 6, (w.wave, segs)
        for before, after in zip(blocks[::2], blocks[1::2], strict=True):
            if w.wave < 4:
                assert before[0] == 64 and before[1] >= 64 and after == (64, 0), segs
            else:
                assert before == (64, 0) and after[0] == 64 and after[1] >= 64, segs


# stages=2 on gfx942 (the default where it fits): the next block's K/V loaded under the S
# MFMAs into a register region of their own (C), written to the other LDS stage under the
# P V MFMAs, one barrier per block at its top (the emulator runs the waves in step: a
# missing barrier would not show in the output; test_gfx942_two_stages_one_barrier_per_block
# checks where each wave passes them).
TWO_STAGE_CASES = [
    dict(heads=1, seq_q=64, seq_k=300, head_dim=128),  # ragged: unmasked then masked loop
    dict(heads=1, seq_q=300, head_dim=64, causal=True, causal_order="paired"),  # 2 passes
    dict(heads=2, heads_kv=1, seq_q=64, seq_k=256, head_dim=128, lse=True, dtype="f16"),
    dict(heads=1, seq_q=64, seq_k=200, head_dim=128, waves=4),  # one wave per SIMD
    dict(heads=1, seq_q=96, seq_k=300, head_dim=128, loop="unrolled", causal=True),
    dict(heads=1, seq_q=64, seq_k=200, head_dim=128, block_n=32, v_layout="rows"),
]


@pytest.mark.parametrize("extra", TWO_STAGE_CASES, ids=[
    "ragged", "d64-paired", "gqa-lse-f16", "4waves", "unrolled-causal", "n32-rows"])
def test_gfx942_two_stages(extra):
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    cfg = check("gfx942", gen.resolve(dict(extra, stages=2)))
    assert cfg.reg_stages and cfg.lds_bytes == 2 * cfg.stage_bytes
    case = gen.build("gfx942", dict(extra, stages=2))
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"


def test_gfx942_two_stages_keep_every_rescale():
    # The growing maxima of test_growing_maxima_need_every_rescale with two stages (and
    # max_exchange auto = on_rescale with them).
    check_growing_maxima("gfx942", {"stages": 2, "waves": 2, "block_n": 32})


def test_gfx942_two_stages_one_barrier_per_block():
    # In the timing model's run (every instruction each wave executed, in order): after the
    # prologue (Q staging's barrier, then the first block's writes to stage 0 after another),
    # each key block is one barrier interval per wave, its top barrier first: the block's 64
    # MFMAs (32 S, 32 P V at d128, block_n 64), its 6 loads of the next block (2 K, 4 V
    # rows) and their 4 ds_write_b128 (2 K, 2 V^T) into the other stage, after the loads.
    from asterism.kernels.run import run_case as run_timed

    # (o_staging direct: no epilogue barrier before O goes through the LDS; block_barrier
    # top: test_gfx942_block_barrier_in_the_pv_phase checks the default, pv)
    case = kernels.get(GEN).build("gfx942", dict(heads=1, seq_q=64, seq_k=256,
                                                 head_dim=128, o_staging="direct",
                                                 block_barrier="top"))
    t = run_timed(case, timing=True, check=False).timing_result
    assert len(t.waves) == 8
    for w in t.waves:
        segs, cur = [], []
        for rec in w.records:
            op = t.code[rec[4] - 1][1].split()[0]
            if op == "s_barrier":
                segs.append(cur)
                cur = []
            elif op.startswith("v_mfma"):
                cur.append("m")
            elif op == "ds_write_b128":
                cur.append("w")
            elif op.startswith("buffer_load"):
                cur.append("l")
        segs.append(cur)
        assert segs[2] == ["w"] * 4, segs[2]  # the first block's writes
        blocks = segs[3:]  # one per key block, from its top barrier
        assert len(blocks) == 4 and w.barriers == 6, (w.wave, segs)
        for block in blocks:
            assert (block.count("m"), block.count("l"), block.count("w")) == (64, 6, 4), block
            assert "".join(block).rindex("l") < "".join(block).index("w"), block


# Softmax placement (issue 24, gfx950, one S buffer): exp_under_pv = tiles 1..'s fma / exp /
# pack under the P V MFMAs (tile by tile), max_under_s = the tile maxima under the next
# tile's S MFMAs, k_ahead / v_ahead = how far the K / V^T reads run ahead of their MFMAs.
PLACEMENT = dict(exp_under_pv="on", max_under_s="on", setprio="stage", k_ahead=3, v_ahead=2)
PLACEMENT_CASES = [
    dict(heads=1, seq_q=256, seq_k=384, head_dim=128),
    dict(heads=2, heads_kv=1, seq_q=300, seq_k=330, head_dim=64, dtype="f16", causal=True,
         lse=True),
    # block_n 64: 2 tiles of 8 P V MFMAs, more P items after each MFMA than the even spread
    dict(heads=1, seq_q=256, seq_k=200, head_dim=128, block_n=64),
]


@pytest.mark.parametrize("extra", PLACEMENT_CASES,
                         ids=["plain_d128", "causal_gqa_lse_d64", "ragged_block_n64"])
def test_softmax_placement_matches_numpy(extra):
    excess, _err = run_case(kernels.get(GEN).build("gfx950", dict(waves=8, **PLACEMENT,
                                                                   **extra)))
    assert excess <= 0


def _order(params) -> str:
    """The kernel's MFMAs, exps, max3s, K / V^T reads and barriers in emission order: S / P
    = an S (accumulator in the S region, v104..) / P V MFMA, x, m, k, v, |."""
    import re

    text = str(kernels.get(GEN).build("gfx950", dict(heads=1, seq_q=256, seq_k=384,
                                                     **params)).module)
    marks = {"v_exp_f32": "x", "v_max3_f32": "m", "ds_read_b128": "k",
             "ds_read_b64_tr_b16": "v", "s_barrier": "|"}
    out = []
    for line in text.splitlines():
        mfma = re.search(r"%v(\d+)_v\d+(?:_\d+)? = amdgcn.mai", line)
        if mfma:
            out.append("S" if int(mfma.group(1)) >= 104 else "P")
        else:
            out += [m for op, m in marks.items() if op in line]
    return "".join(out)


def test_softmax_placement_moves_the_instructions():
    base = _order(dict(exp_under_pv="off", max_under_s="off", setprio="none", v_ahead=4,
                       k_ahead=2))
    placed = _order(PLACEMENT)
    assert _order({}) == _order({**PLACEMENT, "k_ahead": 4})  # auto: on with 8 waves
    body = base.split("|")[1]  # one key block (between the barriers)
    body_placed = placed.split("|")[1]
    # exps: all before the first P V MFMA by default; with exp_under_pv, 3 tiles' (48) between
    # the P V MFMAs.
    between = body_placed[body_placed.index("P"):body_placed.rindex("P")]
    assert between.count("x") == 48
    assert "x" not in body[body.index("P"):body.rindex("P")]
    # maxima: none between the S MFMAs by default, two tiles' (2 x 7 max3) with max_under_s.
    assert "m" not in body[body.index("S"):body.rindex("S")]
    assert body_placed[body_placed.index("S"):body_placed.rindex("S")].count("m") == 14
    # read-ahead: K reads before the first S MFMA, V^T reads (2 per MFMA) before the first P V.
    assert body.index("S") - body.index("k") == 2 and body_placed.index("S") == 3
    assert body[body.index("v"):body.index("P")].count("v") == 2 * 4
    assert body_placed[body_placed.index("v"):body_placed.index("P")].count("v") == 2 * 2
    assert body_placed.count("S") == body.count("S") and body_placed.count("x") == body.count("x")


def test_softmax_placement_params_refused_where_they_do_not_apply():
    gen = kernels.get(GEN)
    for name, value in (("exp_under_pv", "on"), ("max_under_s", "on"), ("k_ahead", 3)):
        if name != "k_ahead":  # (k_ahead applies to gfx942 as well: auto 3 there)
            with pytest.raises(KernelParamError, match=f"{name}: "):
                gen.build("gfx942", {name: value})
        with pytest.raises(KernelParamError, match=f"{name}: "):
            gen.build("gfx950", {name: value, "waves": 2, "block_n": 64, "s_buffers": 2})


def test_placement_auto_choices():
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    eight = check("gfx950", gen.resolve({}))
    assert (eight.exp_under_pv, eight.max_under_s, eight.setprio, eight.v_ahead,
            eight.k_ahead) == (True, True, "stage", 2, 4)
    for target, params in (("gfx942", {}), ("gfx950", {"waves": 4}),
                           ("gfx950", {"waves": 2, "block_n": 64})):
        cfg = check(target, gen.resolve(params))
        assert (cfg.exp_under_pv, cfg.max_under_s, cfg.setprio, cfg.v_ahead) == (
            False, False, "s_mfma" if target == "gfx942" else "none", 4)


# o_staging lds (the gfx942 default): O through the wave's part of the LDS, stored
# row-contiguous; ragged rows past seq_q (not written), d64 and d128, a causal pair (the
# second pass's Q staging reuses the LDS), 2 and 8 waves.
O_STAGING_CASES = [
    dict(heads=1, seq_q=50, seq_k=130, head_dim=128, waves=2),
    dict(heads=1, seq_q=300, head_dim=64, causal=True, causal_order="paired"),
    dict(heads=2, heads_kv=1, seq_q=200, seq_k=64, head_dim=128, lse=True),
]


@pytest.mark.parametrize("extra", O_STAGING_CASES, ids=["ragged-d128", "d64-paired", "gqa-8w"])
def test_gfx942_o_staging_through_lds(extra):
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    assert check("gfx942", gen.resolve(extra)).o_lds
    case = gen.build("gfx942", extra)
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"
    text = {mode: str(gen.build("gfx942", dict(extra, o_staging=mode)).module)
            for mode in ("lds", "direct")}
    # 8 bytes (4 head-dims) per lane and write, 32 rows x head_dim per wave.
    # (A causal pair stores twice: once per row-tile pass.)
    writes = 32 * extra["head_dim"] * 2 // (64 * 8) * (2 if "causal_order" in extra else 1)
    assert text["lds"].count("ds_write_b64") == writes
    assert text["direct"].count("ds_write_b64") == 0
    assert text["lds"].count("buffer_store_dwordx2") == text["direct"].count(
        "buffer_store_dwordx2")


def test_o_staging_refused_where_it_does_not_apply():
    from asterism.kernels.attention import check

    gen = kernels.get(GEN)
    assert not check("gfx950", gen.resolve({})).o_lds
    with pytest.raises(KernelParamError, match="o_staging: lds is the gfx942 choice"):
        gen.build("gfx950", {"o_staging": "lds"})
    with pytest.raises(KernelParamError, match="o_staging: lds needs 8 x 32 O rows"):
        gen.build("gfx942", {"o_staging": "lds", "stages": 1, "block_n": 32})
    with pytest.raises(KernelParamError, match="block_barrier: pv is for gfx942 with two"):
        gen.build("gfx942", {"block_barrier": "pv", "stages": 1})


@pytest.mark.parametrize("extra", [dict(seq_k=192), dict(seq_k=300), dict(seq_k=64)],
                         ids=["odd-3", "ragged-4+1", "one"])
def test_gfx942_stage_offsets_immediate(extra):
    # stage_offsets immediate (the non-causal gfx942 default): two key blocks a trip, each
    # naming its LDS stages in the DS offsets; an odd count's last block after the loop
    # (odd 3, ragged: 4 full blocks then the masked one, a single block). In the timing
    # model's run no wave executes a v_xor_b32 in its key blocks (toggle: the read and
    # write addresses flipped after each block).
    from asterism.kernels.attention import check
    from asterism.kernels.run import run_case as run_timed

    # (block_barrier top: one barrier at the top of each block delimits the blocks)
    params = dict(heads=1, seq_q=64, head_dim=128, block_barrier="top", **extra)
    gen = kernels.get(GEN)
    assert check("gfx942", gen.resolve(params)).stage_imm
    assert not check("gfx942", gen.resolve(dict(params, causal=True))).stage_imm
    case = gen.build("gfx942", params)
    excess, err = run_case(case)
    assert excess <= 0, f"max error {err} above the tolerance"

    def xors_per_block(p) -> list[int]:
        t = run_timed(gen.build("gfx942", p), timing=True, check=False).timing_result
        w = t.waves[0]
        counts, cur = [], 0
        for rec in w.records:
            op = t.code[rec[4] - 1][1].split()[0]
            if op == "s_barrier":
                counts.append(cur)
                cur = 0
            elif op.startswith("v_xor_b32"):
                cur += 1
        # after the Q staging and first-copy barriers, up to the epilogue's (O through LDS)
        return counts[3:]

    blocks = -(-extra["seq_k"] // 64)
    imm = xors_per_block(params)
    assert len(imm) == blocks and not any(imm[:-1]), imm
    tog = xors_per_block(dict(params, stage_offsets="toggle"))
    assert len(tog) == blocks and all(tog[:-1]), tog
    with pytest.raises(KernelParamError, match="stage_offsets: immediate is for gfx942"):
        gen.build("gfx942", dict(params, causal=True, stage_offsets="immediate"))


def test_gfx942_block_barrier_in_the_pv_phase():
    # block_barrier pv (the default with two stages): in the timing model's run each wave
    # passes one barrier per key block, PV_BARRIER_LAG P V MFMAs before the end of the block
    # before it, after that block's 4 ds_write_b128 of the next tiles: after the prologue's
    # barriers (Q staging, first copy, the loop's first) the intervals hold 64 MFMAs and 4
    # writes each, the last one PV_BARRIER_LAG MFMAs, then the O staging's. With top every
    # block's 64 MFMAs follow its barrier.
    from asterism.kernels.attention import PV_BARRIER_LAG
    from asterism.kernels.run import run_case as run_timed

    params = dict(heads=1, seq_q=64, seq_k=256, head_dim=128)
    excess, err = run_case(kernels.get(GEN).build("gfx942", params))
    assert excess <= 0, f"max error {err} above the tolerance"

    def intervals(p) -> list[tuple[int, int]]:
        t = run_timed(kernels.get(GEN).build("gfx942", p), timing=True,
                      check=False).timing_result
        return ops_between_barriers(t, t.waves[0], lambda op: op == "ds_write_b128")

    pv = intervals(params)
    lag = PV_BARRIER_LAG
    assert pv[3:] == [(64 - lag, 4), (64, 4), (64, 4), (64, 4), (lag, 0), (0, 0)], pv
    top = intervals(dict(params, block_barrier="top"))
    assert top[3:] == [(64, 4)] * 4 + [(0, 0)], top
