"""The timing model data (target/data/timing.toml) and its loader (asterism.target.timing)."""

from __future__ import annotations

import pytest

from asterism.errors import TargetError
from asterism.isa import get_isa
from asterism.target import timing as tt


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_every_instruction_has_a_class_and_numbers(target):
    tm = tt.get_timing(target)
    isa = get_isa(target)
    for inst in isa.instructions.values():
        cls = tt.timing_class(inst)
        assert cls in tt.TIMING_CLASSES
        assert tm.latency_of(inst) > 0 and tm.occupancy_of(inst) > 0
        if inst.passes is not None:  # MFMA: passes * 4 on the matrix core
            assert cls == "mfma" and tm.unit_of(cls) == "xdl"
            assert tm.occupancy_of(inst) == 4 * inst.passes
            assert tm.latency_of(inst) == 4 * inst.passes + tm.mfma.result_extra
            assert tm.latency_of(inst, srcc_forward=True) == 4 * inst.passes
    get = isa.get
    assert [tt.timing_class(get(m)) for m in (
        "v_add_u32", "v_exp_f32", "v_accvgpr_write_b32", "s_add_u32", "s_load_dword",
        "ds_read_b128", "ds_write_b64", "ds_add_rtn_u32", "global_load_dwordx4",
        "global_store_dword", "buffer_load_dword", "global_atomic_add", "s_branch")] == [
        "valu", "trans", "valu", "salu", "smem", "ds_read", "ds_write", "ds_read",
        "vmem_read", "vmem_write", "vmem_read", "vmem_read", "branch"]


def test_numbers_and_inheritance():
    a, b = tt.get_timing("gfx942"), tt.get_timing("gfx950")
    assert (a.issue_cycles, a.latency["valu"], a.latency["trans"], a.latency["ds_read"],
            a.latency["vmem_read"], a.mfma.cycles_per_pass) == (4, 4, 16, 64, 600, 4)
    # Read latencies are the memory section's numbers (one source for both models).
    assert (a.latency["smem"], a.latency["ds_read"], a.latency["vmem_read"]) == (
        a.memory["smem"], a.memory["lds"], a.memory["hbm"])
    slow = a.with_memory(lds=128, hbm=700)
    assert (slow.latency["ds_read"], slow.latency["vmem_read"]) == (128, 700)
    # gfx950 inherits gfx942 and overrides the clock, the LDS bandwidth and what its
    # captures measure (trans occupancy, the MFMA's hold on the VALU, barrier release);
    # read latencies follow the memory table.
    assert {k: v for k, v in b.occupancy.items() if k != "trans"} == {
        k: v for k, v in a.occupancy.items() if k != "trans"}
    assert (a.occupancy["trans"], b.occupancy["trans"]) == (16, 8)
    assert (a.mfma.valu_hold, b.mfma.valu_hold) == (4, 8)
    assert (a.dispatch["barrier"], b.dispatch["barrier"]) == (4, 8)
    assert b.memory == a.memory
    assert {k: v for k, v in b.latency.items() if k not in ("ds_read", "vmem_read")} == {
        k: v for k, v in a.latency.items() if k not in ("ds_read", "vmem_read")}
    assert (b.latency["ds_read"], b.latency["vmem_read"]) == (b.memory["lds"], b.memory["hbm"])
    assert (a.lds_bytes_per_cycle, b.lds_bytes_per_cycle) == (128, 256)
    assert (a.clock_mhz, b.clock_mhz) == (2100, 2400)
    isa = get_isa("gfx942")
    # A wave64 ds_read_b128 moves 1 KiB: 8 cycles of 128 B; a b32 read only needs a slot.
    assert a.occupancy_of(isa.get("ds_read_b128"), 4) == 8
    assert b.occupancy_of(isa.get("ds_read_b128"), 4) == 4
    assert a.occupancy_of(isa.get("ds_read_b32"), 1) == 4
    assert a.nanoseconds(2100) == pytest.approx(1000.0)
    assert tt.get_timing("gfx942:xnack-") is a


def test_bad_data_is_reported(monkeypatch):
    good = tt._raw()

    def use(data):
        monkeypatch.setattr(tt, "_raw", lambda: data)
        tt._timing.cache_clear()

    try:
        use({**good, "gfx942": {**good["gfx942"], "latency": {**good["gfx942"]["latency"],
                                                               "tensor": 3}}})
        with pytest.raises(TargetError, match=r"\[gfx942.latency\]: unknown keys \['tensor'\]"):
            tt.get_timing("gfx942")
        lat = dict(good["gfx942"]["latency"])
        del lat["valu"]
        use({**good, "gfx942": {**good["gfx942"], "latency": lat}})
        with pytest.raises(TargetError, match=r"missing \['valu'\]"):
            tt.get_timing("gfx942")
        use({**good, "gfx942": {**good["gfx942"], "latency": {**good["gfx942"]["latency"],
                                                               "ds_read": 64}}})
        with pytest.raises(TargetError, match=r"\['ds_read'\] come from \[gfx942.memory\]"):
            tt.get_timing("gfx942")
        use({**good, "gfx950": {**good["gfx950"], "base": "gfx950"}})
        with pytest.raises(TargetError, match="inherits from itself"):
            tt.get_timing("gfx950")
        use({k: v for k, v in good.items() if k != "gfx950"})
        with pytest.raises(TargetError, match=r"no section \[gfx950\]"):
            tt.get_timing("gfx950")
    finally:
        monkeypatch.undo()
        tt._timing.cache_clear()
    assert tt.get_timing("gfx942").latency["valu"] == 4
