"""The machine facts shared by the passes of one pipeline (passes.machine.machine_kernel):
one MachineKernel per kernel while the passes keep the code's ops as they are, a new one
after a pass that may change them, none shared outside a pipeline; and the auto pipeline
gives the same code with the sharing as with a fresh MachineKernel per pass."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import ClassVar

from asterism import api
from asterism.builder import KernelBuilder
from asterism.isa import get_isa
from asterism.passes import machine
from asterism.passes.base import Pass
from asterism.passes.machine import MachineKernel, kernels_of, machine_kernel, module_target
from asterism.passes.pipeline import parse_pipeline, run_pipeline

SEEN: list[MachineKernel] = []


@dataclass(frozen=True)
class _Probe(Pass):
    """Records the MachineKernel a pass would get; changes nothing."""

    name = "probe"
    summary = "test probe"
    keeps_machine_facts: ClassVar[bool] = True

    def apply(self, module):
        for kernel in kernels_of(module):
            SEEN.append(machine_kernel(kernel, get_isa(module_target(kernel))))


@dataclass(frozen=True)
class _Changer(_Probe):
    """A probe that says it may change ops (as regalloc does)."""

    name = "changer"
    keeps_machine_facts: ClassVar[bool] = False


def _module():
    kb = KernelBuilder("k", "gfx942")
    kb.arg_buffer("a", "f32")
    x = kb.v_mov_b32(None, 1)
    kb.v_add_u32(None, x, x)
    kb.s_endpgm()
    return kb.finish()


def test_one_machine_kernel_until_a_pass_may_change_the_ops():
    SEEN.clear()
    run_pipeline(_module(), [_Probe(), _Probe(), _Changer(), _Probe(), _Probe()])
    first, second, changer, after, last = SEEN
    assert first is second  # kept by a pass that changes no op
    assert changer is second  # (the changer reads them before it changes anything)
    assert after is not changer  # dropped after a pass that may change ops
    assert last is after


def test_nothing_shared_outside_a_pipeline():
    module = _module()
    kernel = kernels_of(module)[0]
    isa = get_isa("gfx942")
    assert machine_kernel(kernel, isa) is not machine_kernel(kernel, isa)


def test_each_pipeline_has_its_own_store():
    SEEN.clear()
    module = _module()
    run_pipeline(module, [_Probe()])
    run_pipeline(module, [_Probe()])
    assert SEEN[0] is not SEEN[1]


def _gemm_like() -> str:
    """IR text of a kernel with loads, MFMAs and VALU reads of their results (waits and
    hazards to place), relocatable registers."""
    from asterism.ir import print_ir

    kb = KernelBuilder("k", "gfx942")
    a = kb.arg_buffer("a", "f16", "read_only")
    pa = kb.s_load_dwordx2(None, kb.kernarg_ptr(), a)
    off = kb.v_lshlrev_b32(None, 3, kb.workitem_id("x"))
    acc = kb.v_mfma_f32_16x16x16_f16(kb.vregs(4, align=2), kb.v_mov_b64(None, 0),
                                     kb.v_mov_b64(None, 0), 0)
    for k in range(3):
        frag = kb.global_load_dwordx2(None, off, pa, offset=64 * k)
        acc = kb.v_mfma_f32_16x16x16_f16(acc, frag, frag, acc)
        kb.global_store_dwordx4(off, acc, pa, offset=256 * k)
    kb.s_endpgm()
    return print_ir(kb.finish())


def test_auto_pipeline_same_code_as_unshared(monkeypatch):
    """The waits and hazards passes of `auto` share their facts: the code object is the
    one they make each with a MachineKernel of its own."""
    text = _gemm_like()
    shared = api.compile(text, "auto")
    # With no store, machine_kernel makes a new MachineKernel for every pass.
    monkeypatch.setattr(machine, "shared_machine_facts", lambda: nullcontext({}))
    assert api.compile(text, "auto") == shared


def test_parse_pipeline_auto_passes_that_keep_facts():
    kept = {p.name for p in parse_pipeline("auto") if p.keeps_machine_facts}
    assert kept == {"waits", "hazards"}
