"""The lanes' address patterns a replay derives from the code (timing/lanes.py), by hand
and on the shipped pa_mqa capture."""

from __future__ import annotations

from pathlib import Path

from asterism.emu.info import PlainInst, make_infos
from asterism.mc.asm_syntax import InstParser
from asterism.mc.matcher import select_form
from asterism.profile.replay import replay
from asterism.timing.lanes import lane_bytes, lane_patterns

SHARED = Path(__file__).parent / "data" / "shared" / "att"


def _infos(lines: list[str], target: str = "gfx950"):
    insts = []
    for text in lines:
        inst = InstParser().parse(text)
        inst.form = select_form(inst, target)
        insts.append(inst)
    return make_infos([PlainInst(4 * i, 4, inst) for i, inst in enumerate(insts)], target)


def test_store_patterns_by_hand():
    """v0 = lane + an unknown multiple of 64 (wave in the workgroup). By hand, 64-byte
    blocks with the uniform base 64-byte aligned:
    * lane * 4 (dword stores, lane-contiguous): bytes 0..255 -> 4 blocks;
    * lane * 256 (a row stride of 256 bytes): 64 blocks;
    * lane * s8 (a stride not known): no pattern (the replay keeps store_unknown);
    * a 64-bit address (lane * 8 in the low dword, an SGPR high dword), dwordx2: 512 bytes
      -> 8 blocks; with offset:60 the span 60..571 -> blocks 0..8 = 9;
    * v_cndmask of -4 and lane * 4 by a mask not known: 4 blocks + the one of -4 = 5;
    * (lane & 15) * 4 + (v0 & 0xc0) (the wave part of v0 is uniform: bits 6-7 of a lane
      id below 64 are 0): 64 bytes -> 1 block;
    * a value loaded from memory: no pattern;
    * uniform + carry-in from vcc (v_addc_co_u32): lane-dependent, no pattern; uniform +
      uniform: every lane the same dword, 1 block."""
    lines = [
        "v_lshlrev_b32 v1, 2, v0",                              # 0
        "buffer_store_dword v2, v1, s[4:7], 0 offen",           # 1: 4
        "v_mul_u32_u24 v3, 0x100, v0",                          # 2
        "buffer_store_dword v2, v3, s[4:7], 0 offen",           # 3: 64
        "v_mul_lo_u32 v4, s8, v0",                              # 4
        "buffer_store_dword v2, v4, s[4:7], 0 offen",           # 5: none
        "v_lshlrev_b32 v6, 3, v0",                              # 6
        "v_mov_b32 v7, s3",                                     # 7
        "global_store_dwordx2 v[6:7], v[8:9], off",             # 8: 8
        "global_store_dwordx2 v[6:7], v[8:9], off offset:60",   # 9: 9
        "v_cndmask_b32 v5, -4, v1, vcc",                        # 10
        "buffer_store_dword v2, v5, s[4:7], 0 offen",           # 11: 5
        "v_and_b32 v10, 15, v0",                                # 12
        "v_and_b32 v11, 0xc0, v0",                              # 13
        "v_lshl_add_u32 v12, v10, 2, v11",                      # 14
        "buffer_store_dword v2, v12, s[4:7], 0 offen",          # 15: 1
        "buffer_load_dword v13, v1, s[4:7], 0 offen",           # 16: load, 256 bytes: 2 lines of 128
        "s_waitcnt vmcnt(0)",                                   # 17
        "buffer_store_dword v2, v13, s[4:7], 0 offen",          # 18: none
        "v_mov_b32 v14, s9",                                    # 19
        "v_addc_co_u32 v15, vcc, v14, 0, vcc",                  # 20: carry-in per lane
        "buffer_store_dword v2, v15, s[4:7], 0 offen",          # 21: none
        "v_add_u32 v16, s9, v14",                               # 22: uniform
        "buffer_store_dword v2, v16, s[4:7], 0 offen",          # 23: 1
        "s_endpgm"]
    infos = _infos(lines)
    got = lane_patterns(list(range(len(lines))), infos, 64, 128)
    assert got == {1: 4, 3: 64, 8: 8, 9: 9, 11: 5, 15: 1, 16: 2, 23: 1}
    assert [lane_bytes(i.mnemonic) for i in infos[:2]] == [4, 4]
    assert lane_bytes("global_store_dwordx2") == 8
    assert lane_bytes("buffer_load_ubyte") == 1


def test_shipped_pa_mqa_stores_get_their_pattern():
    """pa_mqa_logits_fp4_small: its four executed buffer_store_dword per wave address
    (row + lane & 15) * 4 (a uniform row) or -4 (v_cndmask by a bounds mask): 1 block + 1,
    so 2 write requests each instead of memory.store_unknown (64); 16 stores on the 4
    traced CUs. Left out (--timing-off lane_patterns): 64 each, as before."""
    r = replay(SHARED / "pa_mqa_logits_fp4_small", memory="accept")
    stores = {ln: d for ln, d in r.patterns.derived.items() if ln in r.patterns.stores}
    assert stores == {600: {2: 4}, 714: {2: 4}, 724: {2: 4}, 725: {2: 4}}
    assert (r.paths.stores, r.paths.store_cycles) == (16, 32)
    assert r.to_json()["lane_patterns"]["per_line"]["600"]["blocks"] == {"2": 4}
    assert "lane address patterns" in r.summary()
    off = replay(SHARED / "pa_mqa_logits_fp4_small", memory="accept", off=["lane_patterns"])
    assert off.patterns is None
    assert (off.paths.stores, off.paths.store_cycles) == (16, 16 * 64)
    assert off.modeled.cycles > r.modeled.cycles


def test_replayed_load_with_a_known_pattern_pays_its_line_lookups():
    """--memory model (no measured acceptance): a buffer_load_dword whose lanes touch 64
    lines (given per stream position, as lanes.py derives them) keeps the CU's vector memory
    path busy 64 x memory.cycles_per_line (1) = 64 cycles instead of its bytes rule (256
    bytes at 64 B/clk = 4), so the next load issues 64 after it, and it completes
    vmem_unknown + (64 - 4) after issue; without a pattern 4 and vmem_unknown (by hand)."""
    from asterism.target import get_target
    from asterism.target.timing import get_timing
    from asterism.timing.replay import StreamWave, TraceDrivenModel
    from asterism.timing.static import make_static

    lines = ["buffer_load_dword v1, v2, s[4:7], 0 offen",
             "buffer_load_dword v3, v2, s[4:7], 0 offen", "s_endpgm"]
    tm = get_timing("gfx950")
    statics = [make_static(i, tm) for i in _infos(lines)]
    assert (tm.memory["cycles_per_line"], statics[0].occupancy) == (1, 4)

    def run(blocks):
        (w,) = TraceDrivenModel(get_target("gfx950"), tm, statics, [1, 2, 3],
                                [StreamWave(0, 0, 0, 100, [0, 1, 2], blocks=blocks)]).run()
        issue = [r[0] + r[2] for r in w.records]
        return issue[1] - issue[0], w.end - issue[1]

    unknown = tm.memory["vmem_unknown"]
    gap, tail = run({0: 64, 1: 64})
    assert gap == 64
    assert tail >= unknown + 60
    gap0, tail0 = run(None)
    assert gap0 == 4
    assert tail - tail0 == 60


def test_modeled_trace_with_stores_replays_to_its_own_cycles(tmp_path):
    """The functional model charges a store its 64-byte write requests from the lanes' real
    addresses (stores.write_requests); a trace it writes carries no addresses, but the
    exchange kernel's store address (s[4:5] + wg * 1024 + tid * 4) follows from the code:
    the replay derives the same 4 requests per store and replays record for record with the
    write-out queue on in both. Without the lane patterns it charges memory.store_unknown
    (64) per store and ends later."""
    import numpy as np
    from test_timing_trace import exchange_kernel

    import asterism
    from asterism.timing.params import TimingOptions

    out = np.zeros(64 * 4 * 2, np.uint32)
    asterism.launch(exchange_kernel(4), "exchange", grid=2, block=256, args=[out],
                    timing=TimingOptions(), trace_dir=tmp_path / "t")
    r = replay(tmp_path / "t", target="gfx942", memory="model")
    assert {b for d in r.patterns.derived.values() for b in d} == {4}
    assert r.modeled.cycles == r.measured.cycles > 0
    for name, recs in r.measured_records.items():
        assert r.modeled_records[name] == recs
    off = replay(tmp_path / "t", target="gfx942", memory="model", off={"lane_patterns"})
    assert off.modeled.cycles > off.measured.cycles
