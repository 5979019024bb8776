"""Builder-level scheduling (asterism.builder.schedule): unroll, streams, modular rules,
exact groups, keep-order spans, order/count checks. Every expected order below is written
out by hand from the rule's definition."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import StringAttr

import asterism
from asterism.builder import (
    Group,
    I,
    Inst,
    KernelBuilder,
    ScheduleError,
    Stream,
    after,
    before,
    unit_sequence,
    unroll,
)
from asterism.builder import schedule as bs
from asterism.ir import lower_module, parse_ir, print_ir
from asterism.ir.ops import InstructionOp
from asterism.mc.inst import Inst as McInst
from asterism.mc.printer import format_inst
from asterism.passes import schedule as ps

HERE = __file__


def asm(module) -> list[str]:
    return [format_inst(i) for k in lower_module(module).kernels for i in k.body
            if isinstance(i, McInst)]


def streams(kb: KernelBuilder, n_mfma: int = 8, n_ds: int = 8, n_gl: int = 2):
    """MFMA on a[4i:4i+4], DS reads into v[10+2k:12+2k], global loads into v[40+4k:44+4k];
    each item is tagged by its index through an offset so the order can be read back."""
    mfma = Stream("mfma", [
        (lambda kb, i=i: kb.v_mfma_f32_16x16x16_f16(kb.a[4 * i:4 * i + 4], kb.v[0:2],
                                                    kb.v[2:4], kb.a[4 * i:4 * i + 4]))
        for i in range(n_mfma)])
    ds = Stream.over("ds_read", range(n_ds), lambda kb, k: kb.ds_read_b64(
        kb.v[10 + 2 * k:12 + 2 * k], kb.v(4), offset=8 * k))
    gl = Stream("vmem_read", [I.global_load_dwordx4(f"v[{40 + 4 * k}:{43 + 4 * k}]",
                                                    "v[6:7]", "off", offset=16 * k)
                              for k in range(n_gl)])
    return mfma, ds, gl


# --------------------------------------------------------------------------- unroll


def test_unroll_orders_and_errors():
    assert list(unroll(3)) == [0, 1, 2]
    assert list(unroll(2, 3)) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    # order=(1, 0): dimension 1 outermost, indices still (i, j).
    assert list(unroll(2, 3, order=(1, 0))) == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    assert len(unroll(2, 3, 4)) == 24 and list(unroll(2, 0)) == []
    with pytest.raises(ScheduleError, match="permutation"):
        unroll(2, 2, order=(0, 0))
    with pytest.raises(ScheduleError, match="non-negative"):
        unroll(-1)


# --------------------------------------------------------------------------- interleave


def test_after_every_mfma_one_ds_every_4th_one_global_load():
    kb = KernelBuilder("k")
    mfma, ds, gl = streams(kb)
    cap = kb.interleave(mfma, after(ds), after(gl, every=4))
    # every=4: after MFMA #4 and #8 (steps 3 and 7); the DS rule comes first.
    want = (["mfma", "ds_read"] * 3 + ["mfma", "ds_read", "vmem_read"]) * 2
    assert cap.units() == want
    assert kb.units() == want
    # Items come in stream order: DS offsets 0, 8, 16 ... and loads 0, 16.
    text = asm(kb.finish())
    ds_lines = [t for t in text if t.startswith("ds_read_b64")]
    assert ds_lines[0] == "ds_read_b64 v[10:11], v4" and ds_lines[3].endswith("offset:24")
    loads = [t for t in text if t.startswith("global_load")]
    assert loads == ["global_load_dwordx4 v[40:43], v[6:7], off",
                     "global_load_dwordx4 v[44:47], v[6:7], off offset:16"]
    mfmas = [t for t in text if t.startswith("v_mfma")]
    assert mfmas[1] == "v_mfma_f32_16x16x16_f16 a[4:7], v[0:1], v[2:3], a[4:7]"


def test_phase_before_count_and_when():
    kb = KernelBuilder("k")
    mfma, ds, gl = streams(kb, n_mfma=6, n_ds=6, n_gl=2)
    # phase=0 with every=3: after steps 0 and 3; before(..., every=2): before steps 0, 2, 4.
    kb.interleave(mfma, after(gl, every=3, phase=0), before(ds, every=2, count=2))
    assert kb.units() == [
        "ds_read", "ds_read", "mfma", "vmem_read", "mfma",
        "ds_read", "ds_read", "mfma", "mfma", "vmem_read",
        "ds_read", "ds_read", "mfma", "mfma"]


def test_multi_dimensional_rules():
    kb = KernelBuilder("k")
    C = {(i, j): kb.a[8 * i + 4 * j:8 * i + 4 * j + 4] for i, j in unroll(2, 2)}
    mfma = Stream.over("mfma", unroll(2, 2), lambda kb, i, j: kb.v_mfma_f32_16x16x16_f16(
        C[i, j], kb.v[0:2], kb.v[2:4], C[i, j]))
    assert mfma.index == [(0, 0), (0, 1), (1, 0), (1, 1)]
    ds = Stream.over("ds_read", range(2), lambda kb, k: kb.ds_read_b64(
        kb.v[10 + 2 * k:12 + 2 * k], kb.v(4), offset=8 * k))
    gl = Stream("vmem_read", [I.global_load_dword("v20", "v[6:7]", "off")])
    # Per dimension: after every step whose j is odd (every=(1, 2): any i, j % 2 == 1);
    # when=: a load only after (1, 0).
    kb.interleave(mfma, after(ds, every=(1, 2)), after(gl, when=lambda i, j: (i, j) == (1, 0)))
    assert kb.units() == ["mfma", "mfma", "ds_read", "mfma", "vmem_read", "mfma", "ds_read"]
    text = asm(kb.finish())
    assert text[0].startswith("v_mfma_f32_16x16x16_f16 a[0:3]")
    assert text[3].startswith("v_mfma_f32_16x16x16_f16 a[8:11]")  # (1, 0)
    with pytest.raises(ScheduleError, match="every=\\(1, 2, 1\\) has 3 dimensions"):
        k2 = KernelBuilder("k2")
        m2 = Stream.over("mfma", unroll(2, 2), lambda kb, i, j: kb.s_nop(0))
        k2.interleave(m2, after(Stream("x", [lambda kb: None]), every=(1, 2, 1)))


def test_streams_running_dry_and_leftovers():
    kb = KernelBuilder("k")
    mfma, ds, _gl = streams(kb, n_mfma=4, n_ds=2)
    with pytest.raises(ScheduleError) as err:
        kb.interleave(mfma, after(ds))
    msg = err.value.message
    assert "after(ds_read) wants 1 item(s) at 'mfma' step 2 (index 2)" in msg
    assert "stream 'ds_read' has 0 left (2 in all)" in msg
    assert err.value.location is not None and err.value.location.file == HERE

    kb = KernelBuilder("k")
    mfma, ds, _gl = streams(kb, n_mfma=4, n_ds=2)
    kb.interleave(mfma, after(ds, exhausted="stop"))
    assert kb.units() == ["mfma", "ds_read", "mfma", "ds_read", "mfma", "mfma"]

    kb = KernelBuilder("k")
    mfma, ds, _gl = streams(kb, n_mfma=2, n_ds=5)
    with pytest.raises(ScheduleError, match="stream 'ds_read' has 3 item\\(s\\) left after "
                                            "the driver 'mfma' ended \\(2 of 5 used\\)"):
        kb.interleave(mfma, after(ds))

    kb = KernelBuilder("k")
    mfma, ds, _gl = streams(kb, n_mfma=2, n_ds=5)
    kb.interleave(mfma, after(ds), leftover="append")
    assert kb.units() == ["mfma", "ds_read", "mfma", "ds_read", "ds_read", "ds_read", "ds_read"]

    # leftover="keep": the rest stays in the stream for the next pattern.
    kb = KernelBuilder("k")
    mfma, ds, _gl = streams(kb, n_mfma=4, n_ds=3)
    first = Stream("m1", mfma.take(2))
    kb.interleave(first, after(ds), leftover="keep")
    assert ds.left == 1
    kb.interleave(Stream("m2", mfma.take(2)), after(ds, every=2))
    assert kb.units() == ["mfma", "ds_read", "mfma", "ds_read", "mfma", "mfma", "ds_read"]


def test_expected_groups_per_step_name_what_is_wrong():
    kb = KernelBuilder("k")
    mfma, ds, gl = streams(kb, n_mfma=4, n_ds=4, n_gl=2)
    kb.interleave(mfma, after(ds), after(gl, every=2),
                  expect=[Group(mfma=1, ds_read=1), Group(mfma=1, ds_read=1, vmem_read=1)])
    # An emitter that needs address arithmetic breaks an exact group: the error names the
    # step, the group and the extra VALU.
    kb = KernelBuilder("k")
    mfma, _ds, _gl = streams(kb, n_mfma=2)

    def ds_with_address(kb, k):
        kb.v_add_u32(kb.v(5), 8 * k, kb.v(4))
        kb.ds_read_b64(kb.v[10 + 2 * k:12 + 2 * k], kb.v(5))

    ds = Stream.over("ds_read", range(2), ds_with_address)
    with pytest.raises(ScheduleError) as err:
        kb.interleave(mfma, after(ds), expect=Group("slot", mfma=1, ds_read=1))
    msg = err.value.message
    assert msg.startswith("interleave step 0 (driver 'mfma' index 0), group 'slot' "
                          "(exactly 1 mfma + 1 ds_read): not allowed: valu (v_add_u32)")
    assert "(emitted: v_mfma_f32_16x16x16_f16 v_add_u32 ds_read_b64)" in msg
    # Counting the VALU (or allowing others) makes it pass.
    kb = KernelBuilder("k")
    mfma, _ds, _gl = streams(kb, n_mfma=2)
    ds = Stream.over("ds_read", range(2), ds_with_address)
    kb.interleave(mfma, after(ds), expect=Group(mfma=1, ds_read=1, valu=1))


def test_emit_groups_sched_group_barrier_style():
    kb = KernelBuilder("k")
    mfma, ds, gl = streams(kb, n_mfma=4, n_ds=4, n_gl=2)
    cap = kb.emit_groups([Group(mfma=1, ds_read=2), Group(mfma=1, vmem_read=1)] * 2,
                         mfma, ds, gl)
    assert cap.units() == ["mfma", "ds_read", "ds_read", "mfma", "vmem_read"] * 2
    # Not enough items: the group and what is missing are named.
    kb = KernelBuilder("k")
    mfma, ds, gl = streams(kb, n_mfma=4, n_ds=3, n_gl=2)
    with pytest.raises(ScheduleError, match=r"group 2 \(exactly 1 mfma \+ 2 ds_read\): needs 2 "
                                            r"ds_read but stream 'ds_read' \(3 items\) ran "
                                            r"out: missing 1 ds_read"):
        kb.emit_groups([Group(mfma=1, ds_read=2), Group(mfma=1, vmem_read=1)] * 2,
                       mfma, ds, gl)
    # A stream whose items emit another kind than its name says: the check catches it.
    kb = KernelBuilder("k")
    mfma, _ds, _gl = streams(kb, n_mfma=2)
    fake = Stream("ds_read", [lambda kb: kb.v_mov_b32(kb.v(9), 0)] * 2)
    with pytest.raises(ScheduleError, match=r"group 0 'g' \(exactly 1 mfma \+ 1 ds_read\): "
                                            r"missing 1 ds_read; not allowed: valu"):
        kb.emit_groups([Group("g", mfma=1, ds_read=1)], mfma, fake)
    with pytest.raises(ScheduleError, match="stream 'misc' has no kind"):
        kb.emit_groups([Group(mfma=1)], Stream("misc", []))


def test_group_context_umbrellas_and_exactness():
    kb = KernelBuilder("k")
    with kb.group(mfma=1, ds=2, valu=2):  # ds = ds_read + ds_write; valu = valu + trans
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
        kb.ds_read_b64(kb.v[10:12], kb.v(4))
        kb.ds_write_b32(kb.v(4), kb.v(12))
        kb.v_exp_f32(kb.v(13), kb.v(13))
        kb.v_add_f32(kb.v(14), kb.v(13), kb.v(14))
    with kb.group(mfma=1, exp=1, valu=1):  # exp (trans) counted apart from valu
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
        kb.v_exp_f32(kb.v(13), kb.v(13))
        kb.v_add_f32(kb.v(14), kb.v(13), kb.v(14))
    with kb.group(mfma=1, exact=False):
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
        kb.s_nop(0)
    with pytest.raises(ScheduleError) as err:
        with kb.group("tail", mfma=2, ds_read=1):
            kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
            kb.ds_read_b64(kb.v[10:12], kb.v(4))
            kb.ds_read_b64(kb.v[10:12], kb.v(4))
            kb.s_waitcnt(lgkmcnt=0)
    assert err.value.message.startswith(
        "group 'tail' (exactly 2 mfma + 1 ds_read): missing 1 mfma; too many: 1 ds_read; "
        "not allowed: wait (s_waitcnt)")
    assert err.value.location.file == HERE  # the `with` line, not contextlib
    with pytest.raises(ScheduleError, match="unknown instruction kind 'tensor'"):
        Group(tensor=1)


def test_recorded_instructions_resolve_registers_when_placed():
    kb = KernelBuilder("k")
    spec = I.v_add_u32("v3", "v1", "v2")
    assert spec == Inst("v_add_u32", ("v3", "v1", "v2"))
    assert str(I.ds_read_b64("v[4:5]", "v1", offset=8)) == "ds_read_b64 v[4:5], v1, offset:8"
    kb.v_mov_b32(kb.v(1), 7)
    spec(kb)  # reads v1 as written by the v_mov (its current value when placed)
    I.v_cndmask_b32("v5", 0, "v3", "vcc")(kb)
    I.global_store_dword("v[6:7]", "v5", "off")(kb)
    mod = kb.finish()
    assert asm(mod) == ["v_mov_b32 v1, 7", "v_add_u32 v3, v1, v2",
                        "v_cndmask_b32 v5, 0, v3, vcc", "global_store_dword v[6:7], v5, off"]
    add = [op for op in mod.walk() if isinstance(op, InstructionOp)][1]
    assert add.args[1].owner.mnemonic_text == "v_mov_b32"
    with pytest.raises(ScheduleError, match="item 0 is int"):
        Stream("bad", [3])


# --------------------------------------------------------------------------- keep order


def test_keep_order_marks_spans_round_trips_and_lowering_ignores_it():
    kb = KernelBuilder("k")
    kb.v_mov_b32(kb.v(1), 1)
    with kb.keep_order("hot") as span:
        kb.v_mfma_f32_16x16x16_f16(kb.a[0:4], kb.v[0:2], kb.v[2:4], kb.a[0:4])
        with kb.keep_order():  # nested: the same span
            kb.ds_read_b64(kb.v[10:12], kb.v(4))
    with kb.keep_order():
        kb.v_mov_b32(kb.v(2), 2)
    kb.s_endpgm()
    mod = kb.finish()
    insts = [op for op in mod.walk() if isinstance(op, InstructionOp)]
    marks = [op.attributes.get(ps.KEEP_ORDER_ATTR) for op in insts]
    assert marks == [None, StringAttr("hot"), StringAttr("hot"), StringAttr("keep1"), None]
    assert span.units() == ["mfma", "ds_read"]
    text = print_ir(mod)
    assert '{sched.keep_order = "hot"}' in text
    again = parse_ir(text)
    assert print_ir(again) == text
    # Lowering ignores the attribute: same assembly as the same kernel without it.
    for op in insts:
        op.attributes.pop(ps.KEEP_ORDER_ATTR, None)
    assert asm(again) == asm(mod)
    assert asterism.compile(again) == asterism.compile(mod)


def test_interleave_and_groups_keep_order_by_default():
    kb = KernelBuilder("k")
    mfma, ds, _gl = streams(kb, n_mfma=2, n_ds=2)
    kb.interleave(mfma, after(ds))
    mfma, ds, _gl = streams(kb, n_mfma=2, n_ds=2)
    kb.interleave(mfma, after(ds), keep=False)
    insts = [op for op in kb.finish().walk() if isinstance(op, InstructionOp)]
    marks = [ps._keep_key(op) for op in insts]
    assert marks == ["keep0"] * 4 + [None] * 4


# --------------------------------------------------------------------------- checks


def test_counts_order_patterns_and_unit_sequence():
    kb = KernelBuilder("k")
    mfma, ds, gl = streams(kb, n_mfma=4, n_ds=4, n_gl=1)
    with kb.capture() as cap:
        kb.interleave(mfma, after(ds), after(gl, every=4))
    kb.s_endpgm()
    kb.assert_counts(mfma=4, ds_read=4, vmem=1, branch=1)
    cap.assert_counts(mfma=4, ds=4)
    cap.assert_order("(mfma ds_read){3} mfma ds vmem_read")
    cap.assert_order("(v_mfma* ds_read_b64)+ global_load_dwordx4")
    cap.assert_order("(. .){4} vmem")
    cap.assert_order("(mfma|ds_read)* vmem_read")
    kb.assert_order("(mfma ds_read){4} vmem_read branch")
    with pytest.raises(ScheduleError, match=r"kernel k: mfma: 4 \(expected 5\), ds: 4 "
                                            r"\(expected 3\)"):
        kb.assert_counts(mfma=5, ds=3)
    with pytest.raises(ScheduleError) as err:
        cap.assert_order("(mfma ds_read){4}")
    assert "got mfma ds_read mfma ds_read mfma ds_read mfma ds_read vmem_read (9 " \
           "instructions)" in err.value.message
    with pytest.raises(ScheduleError, match=r"'\*' repeats a parenthesized group only"):
        cap.assert_order("mfma *")
    with pytest.raises(ScheduleError, match="bad order pattern"):
        cap.assert_order("(mfma")
    mod = kb.finish()
    assert unit_sequence(mod) == kb.units() == cap.units() + ["branch"]
    assert unit_sequence(mod, mnemonics=True)[:2] == ["v_mfma_f32_16x16x16_f16", "ds_read_b64"]
    assert unit_sequence(mod, kernel="k") == kb.units()
    with pytest.raises(ScheduleError, match="no kernel named 'x'"):
        unit_sequence(mod, kernel="x")


def test_docstring_example_runs_as_written():
    """The GEMM example of the module docstring, executed."""
    doc = bs.__doc__
    code = doc.split("::\n\n", 1)[1].split("\nemits::")[0]
    source = "\n".join(line[4:] for line in code.splitlines())
    env: dict = {}
    exec(compile(source, "<docstring>", "exec"), env)
    kb = env["kb"]
    assert kb.units() == ["mfma", "ds_read", "mfma", "ds_read", "vmem_read"] * 2
