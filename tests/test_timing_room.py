"""The timing model's room (asterism/timing/): it imports downwards only, emu imports none
of it (the emulator takes a dispatch hook instead), the engine imports no driver and the
mechanisms no engine; the hook API, and the clear error for a bad hook."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from test_emu_asm import run

from asterism.emu import EmulatorError
from asterism.timing.functional import TimedRun
from asterism.timing.params import TimingOptions

REPO = Path(__file__).resolve().parent.parent
MECHANISMS = {f"asterism.timing.{m}" for m in ("memory", "lds", "mfma", "barriers", "dispatch")}
DRIVERS = {"asterism.timing.functional", "asterism.timing.replay"}

# out[lane] = lane + 1, with a wait on the store (one wave)
STORE = """
s_load_dwordx2 s[4:5], s[0:1], 0
s_waitcnt lgkmcnt(0)
v_lshlrev_b32 v1, 2, v0
v_add_u32 v2, 1, v0
global_store_dword v1, v2, s[4:5]
s_waitcnt vmcnt(0)
s_endpgm
"""


def _import_graph():
    spec = importlib.util.spec_from_file_location("import_graph",
                                                  REPO / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_graph", module)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules["import_graph"])
    return sys.modules["import_graph"]


def test_the_room_imports_downwards_without_circles():
    graph_mod = _import_graph()
    graph = graph_mod.build_graph()
    room = {m for m in graph.files if m.startswith("asterism.timing")}
    assert MECHANISMS | DRIVERS <= room
    inner = graph_mod.Graph({m: graph.files[m] for m in room},
                            {m: graph.edges[m] & room for m in room})
    assert graph_mod.circles(inner) == []
    assert [(m, t) for m, t in graph_mod.upward_imports(graph) if m in room] == []
    # the emulator runs the model through its dispatch hook, never by importing it
    emu = {m for m in graph.files if m.startswith("asterism.emu")}
    assert {(m, t) for m in emu for t in graph.edges[m] if t in room} == set()
    # the engine knows no driver; a mechanism knows neither the engine nor a driver
    assert not graph.edges["asterism.timing.issue"] & DRIVERS
    for m in MECHANISMS:
        assert not graph.edges[m] & (DRIVERS | {"asterism.timing.issue"}), m


def test_a_dispatch_hook_runs_the_workgroups():
    calls = []

    class Plain:
        """Runs every workgroup in one batch, as the emulator would."""

        def run_dispatch(self, d):
            calls.append((d.kernel, d.grid, d.block, d.per_batch))
            d.run_batch(np.arange(d.grid[0] * d.grid[1] * d.grid[2]))
    out = np.zeros(64, np.uint32)
    emu, (addr,), stats = run(STORE, args=[out], dispatch_hook=Plain())
    assert emu.memory.download(addr, 64, np.uint32).tolist() == list(range(1, 65))
    assert calls == [("kernel", (1, 1, 1), (64, 1, 1), calls[0][3])] and stats.timing is None


def test_the_timed_run_hook_gives_the_timing_result():
    for l2_hit in (100, 200):
        out = np.zeros(64, np.uint32)
        hook = TimedRun(TimingOptions(latency={"l2_hit": l2_hit}))
        emu, (addr,), stats = run(STORE, args=[out], dispatch_hook=hook)
        assert emu.memory.download(addr, 64, np.uint32).tolist() == list(range(1, 65))
        (wave,) = stats.timing.waves
        # The s_waitcnt vmcnt(0) after the store ends at the first issue cycle (4 clocks)
        # after the L2 acknowledged the store, l2_hit cycles after its data left the CU: 64
        # lanes' dwords, 256 contiguous bytes, are 4 write requests of 64 bytes, one per clock
        # (asterism/timing/stores.py).
        store, wait = wave.records[4], wave.records[5]
        issued = store[0] + store[2]
        assert wait[0] + wait[3] == -(-(issued + 4 + l2_hit) // 4) * 4
    assert TimedRun.of(False) is None and TimedRun.of(True).options == TimingOptions()


@pytest.mark.parametrize("hook", [True, "timing", TimingOptions()])
def test_a_bad_dispatch_hook_is_refused(hook):
    with pytest.raises(EmulatorError, match="dispatch_hook must be an object with a "
                                            "run_dispatch"):
        run(STORE, args=[np.zeros(64, np.uint32)], dispatch_hook=hook)
