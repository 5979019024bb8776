"""The demo: add_10.mlir is exactly what generate_add_10.py prints, lowers to the assembly the
kernel promises (10 dependent v_add_u32), and the MFMA generator emits only MFMAs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from asterism.ir import lower_module, parse_ir
from asterism.mc.inst import Inst
from asterism.mc.operands import Imm, Reg

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, DEMO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


add_gen = _load("generate_add_10")
mfma_gen = _load("generate_mfma_10")


def test_generator_prints_exactly_the_checked_in_file():
    written = (DEMO / "add_10.mlir").read_text()
    generated = add_gen.render(10)
    assert generated == written
    assert parse_ir(generated).is_structurally_equivalent(parse_ir(written, "add_10.mlir"))


@pytest.mark.parametrize("n", [0, 1, 10, 37])
def test_add_kernel_has_n_dependent_adds(n):
    kernel = lower_module(add_gen.build(n)).kernels[0]
    insts = [i for i in kernel.body if isinstance(i, Inst)]
    adds = [i for i in insts if i.mnemonic == "v_add_u32"]
    assert len(adds) == n
    assert all(i.operands == [Reg("v", 1), Imm(1), Reg("v", 1)] for i in adds)
    assert [i.mnemonic for i in insts if i.mnemonic != "v_add_u32"] == [
        "s_load_dwordx2", "v_lshl_add_u32", "v_lshlrev_b32", "s_waitcnt", "global_store_dword",
        "s_endpgm"]
    # out[i] = i + n: the stored value is v1 = (wg * 64 + tid) + n, at byte offset 4 * i.
    shift = insts[1]
    assert shift.operands == [Reg("v", 1), Reg("s", 2), Imm(6), Reg("v", 0)]
    assert kernel.workgroup_size == (64, 1, 1)  # the shift by 6 assumes 64 work-items
    store = insts[-2]
    assert store.operands == [Reg("v", 2), Reg("v", 1), Reg("s", 4, 2)]


@pytest.mark.parametrize("n", [1, 10, 70])
def test_mfma_kernel_is_only_independent_mfmas(n):
    insts = [i for i in lower_module(mfma_gen.build(n)).kernels[0].body
             if isinstance(i, Inst)]
    assert [i.mnemonic for i in insts] == ["v_mfma_f32_16x16x16_f16"] * n + ["s_endpgm"]
    dests = [i.operands[0] for i in insts[:-1]]
    for i in insts[:-1]:
        # A = v[0:1], B = v[2:3], C = 0: nothing reads another MFMA's result.
        assert i.operands[1:] == [Reg("v", 0, 2), Reg("v", 2, 2), Imm(0)]
        assert i.operands[0].count == 4 and i.operands[0].index >= 4
    assert len(set(dests)) == min(n, 63)


def test_command_lines():
    out = subprocess.run([sys.executable, str(DEMO / "generate_add_10.py"),
                          "--num-add-instructions", "3"], capture_output=True, text=True,
                         check=True).stdout
    assert out.count("v_add_u32") == 3 and "amdgcn.kernel @add_3" in out
    parse_ir(out)
    bad = subprocess.run([sys.executable, str(DEMO / "generate_mfma_10.py"), "--num-mfma",
                          "-1"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "--num-mfma must be >= 0" in bad.stderr


@pytest.mark.parametrize("n", [10, 3])
def test_add_kernel_computes_i_plus_n_on_the_emulator(n):
    np = pytest.importorskip("numpy")
    from asterism.mc.assembler import assemble
    from asterism.runtime import launch

    hsaco = assemble(lower_module(add_gen.build(n)))
    out = np.zeros(256, dtype=np.int32)
    launch(hsaco, f"add_{n}", grid=(4, 1, 1), block=(64, 1, 1), args=[out], backend="emu")
    assert (out == np.arange(256, dtype=np.int32) + n).all()
