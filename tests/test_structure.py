"""The kernel's structure (asterism.profile.structure): loops, phases, time per phase per
wave, balance and bound, on a small synthetic capture with hand-computed figures and on the
shipped flash-attention capture."""

from __future__ import annotations

from pathlib import Path

from asterism.profile.att import CodeListing, CodeRow, InstRecord, Trace, Wave, read_att
from asterism.profile.report import analyze
from asterism.profile.structure import (
    analyze_structure,
    balance,
    decide_bound,
    find_loops,
    find_phases,
    mfma_usage,
    phase_times,
    row_class,
)
from asterism.timing.result import InstCategory as C

FLASH = Path(__file__).resolve().parent / "data" / "shared" / "att" / "flash_attn_func_small"

# A loop of four v_exp (softmax-like), four MFMAs and a barrier, then a backward branch.
ISA = ["; k",                                                   # 0
       "s_mov_b32 s0, 0",                                       # 1
       "v_exp_f32_e32 v1, v2", "v_exp_f32_e32 v3, v4",          # 2, 3
       "v_exp_f32_e32 v5, v6", "v_exp_f32_e32 v7, v8",          # 4, 5
       "v_mfma_f32_16x16x16_f16 v[10:13], v[2:3], v[4:5], 0",   # 6
       "v_mfma_f32_16x16x16_f16 v[14:17], v[2:3], v[4:5], 0",   # 7
       "v_mfma_f32_16x16x16_f16 v[18:21], v[2:3], v[4:5], 0",   # 8
       "v_mfma_f32_16x16x16_f16 v[22:25], v[2:3], v[4:5], 0",   # 9
       "s_barrier",                                             # 10
       "s_cbranch_scc1 65526",                                  # 11 (back to line 2)
       "s_endpgm"]                                              # 12
CATS = {1: C.SALU, 10: C.IMMED, 11: C.JUMP, 12: C.MESSAGE}


def _wave(cu: int, iterations: int, simd: int) -> Wave:
    """One wave: line 1, `iterations` times lines 2..11 (4 cycles each, 8 cycles of stall on
    the first MFMA), then s_endpgm."""
    lines = [1] + [ln for _ in range(iterations) for ln in range(2, 12)] + [12]
    recs, t = [], 0
    for ln in lines:
        stall = 8 if ln == 6 else 0
        recs.append(InstRecord(t, CATS.get(ln, C.VALU), stall, 4 + stall, ln))
        t += 4 + stall
    return Wave(se=0, simd=simd, slot=0, id=0, cu=cu, begin=0, end=t, instructions=recs)


def _trace() -> Trace:
    rows = [CodeRow(i, t, vaddr=0x100 + 4 * i) for i, t in enumerate(ISA)]
    return Trace(code=CodeListing(rows), waves=[_wave(0, 2, 0), _wave(1, 4, 1)])


def test_row_classes() -> None:
    assert [row_class(t) for t in (
        "v_mfma_f32_16x16x16_f16 v[0:3], v[0:1], v[0:1], 0", "v_exp_f32_e32 v1, v2",
        "buffer_load_dwordx4 v64, s[16:19], 0 offen sc0 lds", "global_load_dword v1, v[2:3], off",
        "ds_read_b128 v[0:3], v4", "v_add_f32_e32 v1, v2, v3", "s_add_u32 s0, s1, s2")] == \
        ["mfma", "trans", "dma", "global", "lds", "valu", "scalar"]


def test_loops_and_iterations() -> None:
    trace = _trace()
    loops = find_loops(trace)
    assert [(lp.head, lp.tail) for lp in loops] == [(2, 11)]
    assert loops[0].iterations == {"se0_sm0_sl0_wv0": 2, "se0_sm1_sl0_wv0": 4}


def test_phases_and_times_by_hand() -> None:
    trace = _trace()
    loops = find_loops(trace)
    phases = find_phases(trace, loops)
    assert [(p.kind, p.first, p.last, p.loop) for p in phases] == [
        ("scalar", 1, 1, None), ("trans", 2, 5, 0), ("mfma", 6, 9, 0), ("scalar", 11, 11, 0),
        ("scalar", 12, 12, None)]
    assert phases[2].barriers == 1 and phases[2].mnemonics == {"v_mfma_f32_16x16x16_f16": 4}
    phase_times(trace, phases)
    # Per iteration: 4 v_exp x 4 = 16 (trans); 4 MFMAs x 4 + 8 stall + the barrier's 4 = 28
    # (mfma: the barrier counts in the phase before it); the branch 4.
    a, b = "se0_sm0_sl0_wv0", "se0_sm1_sl0_wv0"
    assert (phases[1].cycles[a], phases[2].cycles[a], phases[3].cycles[a]) == (32, 56, 8)
    assert (phases[1].cycles[b], phases[2].cycles[b], phases[3].cycles[b]) == (64, 112, 16)
    assert phases[2].stall[b] == 4 * 8
    for w in trace.waves:  # the phases share out each wave's lifetime
        assert sum(p.cycles[w.filename[:-5]] for p in phases) == w.duration


def test_balance_and_bound_by_hand() -> None:
    trace = _trace()
    bal = balance(trace)
    # Lifetimes: 4 + 2 * 48 + 4 = 104 and 4 + 4 * 48 + 4 = 200, each alone on its CU.
    assert bal.wave_cycles == {"se0_sm0_sl0_wv0": 104, "se0_sm1_sl0_wv0": 200}
    assert bal.wave_instructions == {"se0_sm0_sl0_wv0": 22, "se0_sm1_sl0_wv0": 42}
    assert bal.cu_span == {"SE0 CU0": 104, "SE0 CU1": 200}
    assert abs(bal.cu_loss - (1 - 152 / 200)) < 1e-12
    assert bal.busy_waves_per_simd == 304 / (304 * 4)  # one wave on 4 SIMDs
    busy, flops = mfma_usage(trace, "gfx950")
    # v_mfma_f32_16x16x16_f16: 4 passes (ISA database) = 16 cycles; 2 * 16^3 flops.
    assert busy == {"SE0 CU0 SIMD0": 2 * 4 * 16, "SE0 CU1 SIMD1": 4 * 4 * 16}
    assert flops == 6 * 4 * 2 * 16 ** 3
    report = analyze(trace)
    bound = decide_bound(report, bal, busy, 2)
    # MFMA 256 of 200 cycles: compute-bound.
    assert bound.kind == "compute" and "256 of 200 cycles" in bound.figures["compute"]
    bound = decide_bound(report, bal, {"x": 10}, 2)
    # Imbalance 24 % against stall on waits/barriers: 0 -> imbalance.
    assert bound.kind == "imbalance" and "104 to 200 cycles" in bound.text
    assert bound.scores["latency"] == 0.0


def test_flash_attention_structure() -> None:
    """The shipped capture: a KV loop at lines 471-1910 run 3 times by the waves of one CU and
    5 times by the other's (causal masking); MFMA, softmax-like and DMA phases in it; the
    traced CUs busy from 20,588 to 80,420 cycles (occupancy.json)."""
    trace = read_att(FLASH)
    st = analyze_structure(trace, analyze(trace), "gfx950", 3)
    kv = next(lp for lp in st.loops if lp.head == 471)
    assert kv.tail == 1910 and sorted(set(kv.iterations.values())) == [3, 5]
    kinds = {p.kind for p in st.phases if p.loop == st.loops.index(kv)}
    assert {"mfma", "trans", "dma"} <= kinds
    assert st.balance.wave_spread == (4237, 6603)
    assert (min(st.balance.cu_span.values()), max(st.balance.cu_span.values())) == \
        (20588, 80420)
    assert st.bound.kind == "imbalance"
    # 256 v_mfma_f32_32x32x16_bf16 per wave of 6603 instructions (8 passes = 32 cycles).
    assert max(st.mfma_busy.values()) == 320 * 32
