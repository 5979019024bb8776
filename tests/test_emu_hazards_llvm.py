"""asterism's wait-state table against LLVM's hazard recognizer.

tests/data/emu/llvm_hazards.json holds, per scenario and target, the code llc emits for a
producer/consumer pair after its hazard recognizer ran (see gen_llvm_hazards.py): the s_nops
LLVM inserted are what the hardware needs. With them removed, `required_wait_states` must ask
for exactly as many wait states before the same instruction; with them kept, for none.
"""

from __future__ import annotations

import pytest
from test_emu_asm import program
from test_passes_hazards_llvm import DATA, split

from asterism.emu.hazard_check import required_wait_states


@pytest.mark.parametrize("case", sorted(DATA))
def test_wait_states_match_llvm(case):
    # target: a processor, or one with an xnack setting (gfx942:xnack-) for the soft clauses
    name, target = case.split("@")
    proc = target.split(":")[0]
    insts, nops = split(DATA[case])
    got = {i: n for i, n, _ in required_wait_states(program("\n".join(insts), proc), target)}
    assert got == nops, f"{name} on {target}: LLVM pads {nops}, asterism asks {got}"
    padded = required_wait_states(program("\n".join(DATA[case]), proc), target)
    assert padded == []
