"""asterism's wait-state table against LLVM's hazard recognizer.

tests/data/emu/llvm_hazards.json holds, per scenario and target, the code llc emits for a
producer/consumer pair after its hazard recognizer ran (see gen_llvm_hazards.py): the s_nops
LLVM inserted are what the hardware needs. With them removed, `required_wait_states` must ask
for exactly as many wait states before the same instruction; with them kept, for none.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_emu_asm import program

from asterism.emu.hazard_check import required_wait_states

DATA = json.loads((Path(__file__).parent / "data" / "emu" / "llvm_hazards.json").read_text())


def _split(lines: list[str]) -> tuple[list[str], dict[int, int]]:
    """The instructions without s_nop, and the wait states LLVM put before each index."""
    insts: list[str] = []
    nops: dict[int, int] = {}
    for line in lines:
        if line.startswith("s_nop"):
            nops[len(insts)] = nops.get(len(insts), 0) + int(line.split()[1], 0) + 1
        else:
            insts.append(line)
    return insts, nops


@pytest.mark.parametrize("case", sorted(DATA))
def test_wait_states_match_llvm(case):
    # target: a processor, or one with an xnack setting (gfx942:xnack-) for the soft clauses
    name, target = case.split("@")
    proc = target.split(":")[0]
    insts, nops = _split(DATA[case])
    got = {i: n for i, n, _ in required_wait_states(program("\n".join(insts), proc), target)}
    assert got == nops, f"{name} on {target}: LLVM pads {nops}, asterism asks {got}"
    padded = required_wait_states(program("\n".join(DATA[case]), proc), target)
    assert padded == []
