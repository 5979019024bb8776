"""The waits pass: exact s_waitcnt counts on hand-computed sequences.

Each test builds a kernel with fixed registers, runs `waits` and compares the instruction
listing with the expected one (the waits are hand-computed from the counting rules in the
pass's docstring), then runs the result on the emulator with the sanitizer on where the
sequence is executable.
"""

from __future__ import annotations

import pytest

from asterism import api
from asterism.builder import KernelBuilder
from asterism.errors import AsterismError, ParseError, VerifyError
from asterism.ir import parse_ir, print_ir
from asterism.mc.printer import format_inst
from asterism.passes.waits import WaitState, insert_waits


def kernel(body, target: str = "gfx942", end: bool = True):
    """A kernel `k(a: buffer)` whose body `body(kb)` writes (s[4:5] = a by convention)."""
    kb = KernelBuilder("k", target)
    kb.arg_buffer("a", "f32")
    body(kb)
    if end:
        kb.s_endpgm()
    return kb.finish()


def listing(module, pipeline: str = "waits") -> list[str]:
    """The instructions (and labels) the module lowers to after `pipeline`."""
    mc = api.lower(module, pipeline)
    out = []
    for item in mc.kernels[0].body:
        out.append(format_inst(item) if hasattr(item, "mnemonic") else f"{item.name}:")
    return out


def waits_of(module, pipeline: str = "waits") -> list[str]:
    """Only the s_waitcnt lines, each with the instruction after it."""
    lines = listing(module, pipeline)
    return [f"{a} -> {b}" for a, b in zip(lines, lines[1:]) if a.startswith("s_waitcnt")]


def gload(kb, dst: int, offset: int = 0):
    """global_load_dword v<dst>, v1, s[4:5] offset:<offset>."""
    return kb.global_load_dword(kb.v(dst), kb.v(1), kb.s[4:6], offset=offset)


def use(kb, *regs: int, dst: int = 40):
    """v_add_u32 v<dst>, v<a>, v<b> (reads the given VGPRs)."""
    a, b = (regs + regs)[:2]
    kb.v_add_u32(kb.v(dst), kb.v(a), kb.v(b))


# ---------------------------------------------------------------------------- vmcnt


def test_in_order_vmcnt_counts_younger_loads():
    def body(kb):
        for r in (2, 3, 4, 5):
            gload(kb, r, 4 * r)
        use(kb, 3)          # v3: two younger loads (v4, v5) may stay in flight
        use(kb, 2)          # already guaranteed by the previous wait
        use(kb, 5)          # the youngest: vmcnt(0)
    assert waits_of(kernel(body)) == [
        "s_waitcnt vmcnt(2) -> v_add_u32 v40, v3, v3",
        "s_waitcnt vmcnt(0) -> v_add_u32 v40, v5, v5"]


def test_stores_count_on_vmcnt_in_issue_order():
    def body(kb):
        gload(kb, 2)
        kb.global_store_dword(kb.v(1), kb.v(6), kb.s[4:6], offset=64)
        kb.global_store_dword(kb.v(1), kb.v(7), kb.s[4:6], offset=128)
        use(kb, 2)          # the two younger stores may stay in flight
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(2) -> v_add_u32 v40, v2, v2"]


def test_wide_load_any_register_of_the_range():
    def body(kb):
        kb.global_load_dwordx4(kb.v[8:12], kb.v(1), kb.s[4:6])
        gload(kb, 2)
        use(kb, 11)
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(1) -> v_add_u32 v40, v11, v11"]


def test_same_stream_overwrite_needs_no_wait_but_valu_overwrite_does():
    def body(kb):
        gload(kb, 2)
        gload(kb, 2, 64)    # WAW by a later VMEM load: it lands after the first one
        kb.v_mov_b32(kb.v(2), 0)  # WAW by a VALU: both loads must have landed
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(0) -> v_mov_b32 v2, 0"]


def test_address_register_read_is_a_use():
    def body(kb):
        gload(kb, 1)        # v1 is the address of the next load and the load's result
        gload(kb, 3)
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(0) -> global_load_dword v3, v1, s[4:5]"]


def test_saturates_at_counter_maximum_minus_one():
    def body(kb):
        gload(kb, 2)
        for k in range(70):
            kb.global_store_dword(kb.v(1), kb.v(6), kb.s[4:6], offset=4 * (k % 512))
        use(kb, 2)
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(62) -> v_add_u32 v40, v2, v2"]


# ---------------------------------------------------------------------------- lgkmcnt


def test_smem_is_out_of_order_even_alone():
    def body(kb):
        kb.s_load_dword(kb.s(8), kb.s[4:6], 0)
        kb.s_load_dword(kb.s(9), kb.s[4:6], 4)
        kb.s_add_u32(kb.s(10), kb.s(9), 1)     # the younger one: still lgkmcnt(0)
    assert waits_of(kernel(body)) == ["s_waitcnt lgkmcnt(0) -> s_add_u32 s10, s9, 1"]


def test_lds_in_order_smem_does_not_count():
    def body(kb):
        kb.ds_read_b32(kb.v(2), kb.v(1))
        kb.s_load_dword(kb.s(8), kb.s[4:6], 0)   # may return before or after: not counted
        kb.ds_read_b32(kb.v(3), kb.v(1), offset=64)
        kb.ds_read_b32(kb.v(4), kb.v(1), offset=128)
        use(kb, 2)          # the two younger DS reads land after v2: lgkmcnt(2)
        use(kb, 4)          # the youngest DS read: lgkmcnt(0)
    assert waits_of(kernel(body)) == [
        "s_waitcnt lgkmcnt(2) -> v_add_u32 v40, v2, v2",
        "s_waitcnt lgkmcnt(0) -> v_add_u32 v40, v4, v4"]


def test_smem_result_needs_zero_with_lds_in_flight():
    def body(kb):
        kb.s_load_dword(kb.s(8), kb.s[4:6], 0)
        kb.ds_read_b32(kb.v(2), kb.v(1))
        kb.v_add_u32(kb.v(40), kb.s(8), kb.v(1))
    assert waits_of(kernel(body)) == ["s_waitcnt lgkmcnt(0) -> v_add_u32 v40, s8, v1"]


def test_flat_counts_on_both_counters():
    def body(kb):
        kb.flat_load_dword(kb.v(2), kb.v[6:8])
        gload(kb, 3)
        kb.ds_read_b32(kb.v(4), kb.v(1))
        use(kb, 2)          # FLAT may decrement either counter early: both to 0
    assert waits_of(kernel(body)) == [
        "s_waitcnt vmcnt(0) lgkmcnt(0) -> v_add_u32 v40, v2, v2"]


def test_flat_in_flight_does_not_count_for_others():
    def body(kb):
        gload(kb, 2)
        gload(kb, 3)
        kb.flat_load_dword(kb.v(4), kb.v[6:8])  # out of order on vmcnt: not counted
        use(kb, 2)          # only the global load v3 is known to land after v2
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(1) -> v_add_u32 v40, v2, v2"]


def test_gds_locks_its_vgprs_on_expcnt():
    def body(kb):
        kb.ds_gws_init(kb.v(2), gds=True)
        kb.v_mov_b32(kb.v(3), kb.v(2))      # reading the data is fine
        kb.v_mov_b32(kb.v(2), 0)            # overwriting it is not (expcnt)
    assert waits_of(kernel(body)) == ["s_waitcnt expcnt(0) -> v_mov_b32 v2, 0"]


def test_store_data_reuse_needs_no_wait_on_gfx9_unless_strict():
    def body(kb):
        gload(kb, 2)
        kb.global_store_dword(kb.v(1), kb.v(6), kb.s[4:6])
        kb.v_mov_b32(kb.v(6), 0)            # the store read v6 when it issued
        gload(kb, 3)
    assert waits_of(kernel(body)) == []
    assert waits_of(kernel(body), "waits{strict-store-data=1}") == [
        "s_waitcnt vmcnt(0) -> v_mov_b32 v6, 0"]


# ---------------------------------------------------------------------------- tokens


def test_wait_on_tokens_resolves_to_minimal_count():
    def body(kb):
        gload(kb, 2)
        t2 = kb.last_token
        gload(kb, 3)
        t3 = kb.last_token
        gload(kb, 4)
        kb.wait(t2)                          # two younger loads stay in flight
        kb.s_nop(0)
        kb.wait(t3, t2)                      # the strongest of both: vmcnt(1)
        kb.s_nop(0)
        kb.wait(t2)                          # already complete: nothing
        kb.s_nop(0)
    assert listing(kernel(body)) == [
        "global_load_dword v2, v1, s[4:5]", "global_load_dword v3, v1, s[4:5]",
        "global_load_dword v4, v1, s[4:5]", "s_waitcnt vmcnt(2)", "s_nop 0",
        "s_waitcnt vmcnt(1)", "s_nop 0", "s_nop 0", "s_endpgm"]


def test_wait_on_store_token_and_smem_token():
    def body(kb):
        kb.global_store_dword(kb.v(1), kb.v(6), kb.s[4:6])
        ts = kb.last_token
        kb.s_load_dword(kb.s(8), kb.s[4:6], 0)
        tk = kb.last_token
        gload(kb, 2)
        kb.wait(ts)
        kb.wait(tk)
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(1) lgkmcnt(0) -> s_endpgm"]


def test_wait_merges_with_the_following_automatic_wait():
    def body(kb):
        gload(kb, 2)
        t2 = kb.last_token
        gload(kb, 3)
        kb.wait(t2)
        use(kb, 3)
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(0) -> v_add_u32 v40, v3, v3"]


def test_unresolved_wait_is_a_lowering_error():
    def body(kb):
        gload(kb, 2)
        kb.wait()
    with pytest.raises(VerifyError, match="--pipeline waits"):
        api.lower(kernel(body))


def test_wait_op_text_round_trip():
    def body(kb):
        gload(kb, 2)
        t = kb.last_token
        gload(kb, 3)
        kb.wait(t, kb.last_token)
    text = print_ir(kernel(body))
    assert "amdgcn.wait %tok, %tok_1" in text
    assert print_ir(parse_ir(text)) == text


@pytest.mark.parametrize("text, message", [
    ("amdgcn.wait", "names the tokens"),
    ("amdgcn.wait %v", "type"),
])
def test_wait_op_errors(text, message):
    src = f"""amdgcn.module @m target = "gfx942" {{
  amdgcn.kernel @k args() workgroup_size(64, 1, 1) {{
    %v = amdgcn.alloca : !amdgcn.vgpr<1>
    {text}
    amdgcn.sopp s_endpgm
  }}
}}"""
    with pytest.raises(AsterismError, match=message):
        parse_ir(src)


def test_builder_wait_needs_a_token():
    kb = KernelBuilder("k")
    with pytest.raises(VerifyError, match="none was emitted"):
        kb.wait()
    with pytest.raises(VerifyError, match="not a token"):
        kb.wait(kb.v(1))


# ---------------------------------------------------------------------------- hand-written


def test_hand_written_waits_are_kept_and_count():
    def body(kb):
        gload(kb, 2)
        gload(kb, 3)
        kb.s_waitcnt(vmcnt=1)
        use(kb, 2)          # covered by the hand-written wait
        kb.s_waitcnt(vmcnt=0, lgkmcnt=0)   # stronger than needed: kept as written
        use(kb, 3)
    assert waits_of(kernel(body)) == [
        "s_waitcnt vmcnt(1) -> v_add_u32 v40, v2, v2",
        "s_waitcnt vmcnt(0) lgkmcnt(0) -> v_add_u32 v40, v3, v3"]


def test_too_weak_hand_written_wait_is_completed_not_changed():
    def body(kb):
        gload(kb, 2)
        gload(kb, 3)
        kb.s_waitcnt(vmcnt=1)
        use(kb, 3)
    assert listing(kernel(body))[-4:] == [
        "s_waitcnt vmcnt(1)", "s_waitcnt vmcnt(0)", "v_add_u32 v40, v3, v3", "s_endpgm"]


def test_pass_is_idempotent():
    def body(kb):
        for r in (2, 3, 4):
            gload(kb, r)
        use(kb, 2)
        kb.wait()
    module = kernel(body)
    once = print_ir(api.optimize(module, "waits"))
    twice = print_ir(api.optimize(parse_ir(once), "waits"))
    assert once == twice


# ---------------------------------------------------------------------------- memory model


def test_barrier_waits_for_lds_accesses():
    def body(kb):
        gload(kb, 2)
        kb.ds_write_b32(kb.v(1), kb.v(3))
        gload(kb, 4)
        kb.s_barrier()
    assert waits_of(kernel(body)) == ["s_waitcnt lgkmcnt(0) -> s_barrier"]
    assert waits_of(kernel(body), "waits{barrier=none}") == []


def test_lds_dma_before_ds_read_and_barrier():
    def body(kb):
        kb.s_mov_b32(kb.special("m0"), 0)
        kb.buffer_load_dword(kb.v(1), kb.s[12:16], 0, offen=True, lds=True)
        gload(kb, 2)
        kb.ds_read_b32(kb.v(3), kb.v(1))    # the DMA landed: one younger load may fly
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(1) -> ds_read_b32 v3, v1"]
    assert waits_of(kernel(body), "waits{lds-dma=tokens}") == []


def test_lds_dma_tokens_only_waits_at_its_token():
    # Double buffering: the DMA of the next stage flies across this stage's DS reads and
    # barrier; only kb.wait(tok) retires it, with the count of the younger load (vmcnt(1)).
    def body(kb):
        kb.s_mov_b32(kb.special("m0"), 0)
        tok = kb.buffer_load_dword(kb.v(1), kb.s[12:16], 0, offen=True, lds=True)
        kb.tokens_only(tok)
        kb.ds_read_b32(kb.v(3), kb.v(2))
        kb.s_barrier()
        gload(kb, 4)
        kb.wait(tok)
        kb.s_barrier()
    assert waits_of(kernel(body)) == ["s_waitcnt lgkmcnt(0) -> s_barrier",
                                      "s_waitcnt vmcnt(1) -> s_barrier"]


def test_tokens_only_takes_lds_dma_tokens():
    def body(kb):
        kb.tokens_only(gload(kb, 2))
    with pytest.raises(VerifyError, match="argument #0 is not the token of an LDS DMA"):
        kernel(body)


def test_lds_dma_tokens_leave_the_barrier_to_explicit_waits():
    # A pipelined direct-to-LDS loop keeps loads in flight across barriers: with
    # lds-dma=tokens the barrier does not drain them (vmcnt(0)); amdgcn.wait still does.
    def body(kb, wait: bool):
        kb.s_mov_b32(kb.special("m0"), 0)
        kb.buffer_load_dword(kb.v(1), kb.s[12:16], 0, offen=True, lds=True)
        first = kb.last_token
        kb.buffer_load_dword(kb.v(1), kb.s[12:16], 0, offen=True, lds=True)
        if wait:
            kb.wait(first)
        kb.s_barrier()
    assert waits_of(kernel(lambda kb: body(kb, False))) == ["s_waitcnt vmcnt(0) -> s_barrier"]
    assert waits_of(kernel(lambda kb: body(kb, False)), "waits{lds-dma=tokens}") == []
    assert waits_of(kernel(lambda kb: body(kb, True)), "waits{lds-dma=tokens}") == [
        "s_waitcnt vmcnt(1) -> s_barrier"]


def test_bad_option():
    with pytest.raises(ParseError, match="option 'barrier' of 'waits' expects one of lds, none, "
                                         "got 'all'"):
        api.optimize(kernel(lambda kb: None), "waits{barrier=all}")


# ---------------------------------------------------------------------------- control flow


def loop_kernel(kb, body_fn, trips: int = 3):
    kb.s_mov_b32(kb.s(10), trips)
    top = kb.label("loop")
    body_fn(kb)
    kb.s_sub_u32(kb.s(10), kb.s(10), 1)
    kb.s_cmp_lg_u32(kb.s(10), 0)
    kb.s_cbranch_scc1(top)


def test_loop_back_edge_pending_loads():
    # Software pipelining: the loads of the next iteration are issued at the end of the
    # body; at the top, v2 has one younger load (v4) in flight on both incoming edges.
    def body(kb):
        gload(kb, 2)
        gload(kb, 4)

        def it(kb):
            use(kb, 2)
            use(kb, 4, dst=41)
            gload(kb, 2)
            gload(kb, 4)
        loop_kernel(kb, it)
    assert waits_of(kernel(body)) == [
        "s_waitcnt vmcnt(1) -> v_add_u32 v40, v2, v2",
        "s_waitcnt vmcnt(0) -> v_add_u32 v41, v4, v4"]


def test_loop_entry_and_back_edge_differ():
    # Entry: nothing in flight for v2 (waited before the loop); back edge: v2 loaded with
    # two younger stores behind it -> vmcnt(2) at the top, which is also safe on entry.
    def body(kb):
        def it(kb):
            use(kb, 2)
            gload(kb, 2)
            kb.global_store_dword(kb.v(1), kb.v(6), kb.s[4:6])
            kb.global_store_dword(kb.v(1), kb.v(7), kb.s[4:6])
        loop_kernel(kb, it)
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(2) -> v_add_u32 v40, v2, v2"]


def test_branches_join_different_pending_states():
    # then-path issues one more load after v2 than the else-path: at the join the wait
    # for v2 is the stronger (smaller) count of the two paths.
    def body(kb):
        gload(kb, 2)
        gload(kb, 3)
        kb.s_cmp_eq_u32(kb.s(10), 0)
        other = kb.new_label("other")
        join = kb.new_label("join")
        kb.s_cbranch_scc1(other)
        gload(kb, 4)
        kb.s_branch(join)
        kb.place(other)
        kb.s_nop(0)
        kb.place(join)
        use(kb, 2)
    assert waits_of(kernel(body)) == ["s_waitcnt vmcnt(1) -> v_add_u32 v40, v2, v2"]


def test_wait_in_one_branch_only():
    # A load waited for on one path only is still in flight at the join.
    def body(kb):
        gload(kb, 2)
        kb.s_cmp_eq_u32(kb.s(10), 0)
        other = kb.new_label("other")
        kb.s_cbranch_scc1(other)
        use(kb, 2)
        kb.place(other)
        use(kb, 2, dst=41)
    assert waits_of(kernel(body)) == [
        "s_waitcnt vmcnt(0) -> v_add_u32 v40, v2, v2",
        "s_waitcnt vmcnt(0) -> v_add_u32 v41, v2, v2"]


# ---------------------------------------------------------------------------- relocatable


def test_relocatable_values_are_tracked_by_chain():
    def body(kb):
        x = kb.global_load_dword(None, kb.v(1), kb.s[4:6])
        y = kb.global_load_dword(None, kb.v(1), kb.s[4:6], offset=4)
        kb.v_add_u32(None, x, x)
        kb.v_add_u32(None, y, y)
    text = print_ir(api.optimize(kernel(body), "waits"))
    assert text.count("s_waitcnt vmcnt = 1") == 1 and text.count("s_waitcnt vmcnt = 0") == 1


# ---------------------------------------------------------------------------- state


def test_join_takes_the_smaller_count_and_the_union():
    a, b = WaitState(), WaitState()
    a.items[(1, "op")] = {"vmcnt": ("vmem", 3)}
    a.regs[2] = frozenset({(1, "op")})
    b.items[(1, "op")] = {"vmcnt": ("vmem", 1)}
    b.items[(2, "op")] = {"lgkmcnt": (None, 0)}
    b.regs[2] = frozenset({(2, "op")})
    assert a.join(b)
    assert a.items[(1, "op")] == {"vmcnt": ("vmem", 1)}
    assert a.regs[2] == {(1, "op"), (2, "op")}
    assert not a.join(b)


def test_insert_waits_api_counts():
    def body(kb):
        gload(kb, 2)
        use(kb, 2)
    module = kernel(body)
    insert_waits(module)
    assert "s_waitcnt vmcnt = 0" in print_ir(module)
