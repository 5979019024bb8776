"""The hazards pass against LLVM's hazard recognizer.

tests/data/emu/llvm_hazards.json holds, per scenario and target, the code llc 22 emits for a
producer/consumer pair (see tests/data/emu/gen_llvm_hazards.py): the s_nops LLVM inserted
are what the hardware needs. With them removed, the pass must insert exactly as many wait
states, before the same instructions; with them kept, none.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asterism.ir import lower_module, raise_module
from asterism.mc.parser import parse_asm
from asterism.mc.printer import format_inst
from asterism.passes.hazards import check_hazards, insert_nops

DATA = json.loads((Path(__file__).parent / "data" / "emu" / "llvm_hazards.json").read_text())


def split(lines: list[str]) -> tuple[list[str], dict[int, int]]:
    """The instructions without s_nop, and the wait states before each index."""
    insts: list[str] = []
    nops: dict[int, int] = {}
    for line in lines:
        if line.startswith("s_nop"):
            nops[len(insts)] = nops.get(len(insts), 0) + int(line.split()[1], 0) + 1
        else:
            insts.append(line)
    return insts, nops


def module_of(lines: list[str], target: str):
    """IR of a straight-line kernel given as assembly lines."""
    text = f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"\n.text\nk:\n' + "\n".join(lines)
    return raise_module(parse_asm(text + "\n", "llvm.s"))


@pytest.mark.parametrize("case", sorted(DATA))
def test_nops_match_llvm(case):
    name, target = case.split("@")
    insts, want = split(DATA[case])
    module = module_of(insts, target)
    insert_nops(module)
    out = [format_inst(i) for i in lower_module(module).kernels[0].body if hasattr(i, "mnemonic")]
    got_insts, got = split(out)
    assert got_insts == [format_inst(i) for i in lower_module(module_of(insts, target)).kernels[0].body
                         if hasattr(i, "mnemonic")]
    assert got == want, f"{name} on {target}: LLVM pads {want}, the pass {got}"
    assert check_hazards(module_of(DATA[case], target)) == []
