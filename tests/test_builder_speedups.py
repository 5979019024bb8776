"""The builder's speed-ups (cached forms per operand pattern, shared attributes, lazy method
docs) build the same IR as before them: the printed IR of the pipeline benchmark's kernel
equals the IR the builder printed before the speed-ups (its digest, recorded with the
builder of commit 9b63775), and every example builds the same IR with the caches on as with
them off."""

from __future__ import annotations

import hashlib
import io
import sys
import types
from pathlib import Path

import pytest
from xdsl.printer import Printer

from asterism.builder import KernelBuilder
from asterism.builder import kernel as kernel_mod
from asterism.builder import location as location_mod
from asterism.errors import VerifyError
from asterism.ir.text import print_ir

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_pipeline  # noqa: E402

# sha256 of print_ir(bench_pipeline.build(n, seed, target)) by the builder before the
# speed-ups (commit 9b63775).
BEFORE = {
    (2000, 1, "gfx942"): "1d972fd0f20e5abb3f18e265a654215a3354dbe00ad7d29aacb2bd176a5d6ccf",
    (1000, 3, "gfx950"): "e4cba9c8f3210f9e7a814eaec118f0b251e6f054790479b23d0cb44acc0efc59",
}

EXAMPLES = {
    "examples/gemm/gemm_f16.py": (64, 64, 64),
    "examples/vector_add/vector_add.py": (),
    "examples/demo/generate_add_10.py": (),
    "examples/demo/generate_mfma_10.py": (),
    "examples/schedule/interleave_gemm_tile.py": (),
    "examples/auto/gemm_f16.py": (64, 64, 64),
    "examples/auto/gemm_lds_64x64.py": (128, 128, 128),
    "examples/auto/gemm_pieces.py": (64, 48, 32),
    "examples/auto/row_sum.py": (),
    "examples/auto/vector_add.py": (),
}


class _Forgetful(dict):
    """A cache that never keeps anything: every lookup misses."""

    def __setitem__(self, key, value) -> None:
        pass


def _no_caches(monkeypatch) -> None:
    for name in ("_MATCHES", "_RESOLVED"):
        monkeypatch.setattr(kernel_mod, name, _Forgetful())
    monkeypatch.setattr(location_mod, "_LOCATIONS", _Forgetful())


def _generic_text(module) -> str:
    """The generic form with locations: every op, attribute and source line."""
    out = io.StringIO()
    Printer(stream=out, print_generic_format=True, print_debuginfo=True).print_op(module)
    return out.getvalue()


def _load_example(path: str) -> types.ModuleType:
    src = (ROOT / path).read_text()
    mod = types.ModuleType(Path(path).stem)
    mod.__file__ = str(ROOT / path)
    exec(compile(src, str(ROOT / path), "exec"), mod.__dict__)
    return mod


@pytest.mark.parametrize("args", sorted(BEFORE))
def test_benchmark_kernel_ir_as_before(args):
    text = print_ir(bench_pipeline.build(*args))
    assert hashlib.sha256(text.encode()).hexdigest() == BEFORE[args]


@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_examples_same_ir_with_and_without_caches(path, monkeypatch):
    example = _load_example(path)
    cached = [_generic_text(example.build(*EXAMPLES[path])) for _ in range(2)]
    _no_caches(monkeypatch)
    uncached = _generic_text(example.build(*EXAMPLES[path]))
    assert cached[0] == cached[1] == uncached


def test_benchmark_kernel_same_ir_with_and_without_caches(monkeypatch):
    cached = _generic_text(bench_pipeline.build(600, 5))
    _no_caches(monkeypatch)
    assert _generic_text(bench_pipeline.build(600, 5)) == cached


def test_cached_form_tells_operand_identity_apart():
    """One SGPR read twice fits the constant bus; two different SGPRs do not, even after the
    first pattern's form was remembered."""
    kb = KernelBuilder("k")
    s1, s2, v = kb.sreg(), kb.sreg(), kb.vreg()
    kb.v_fma_f32(None, s1, s1, v)
    kb.v_fma_f32(None, s2, s2, v)
    with pytest.raises(VerifyError, match="constant-bus"):
        kb.v_fma_f32(None, s1, s2, v)


def test_cached_form_tells_number_types_apart():
    """1, 1.0, 0.0 and -0.0 are four constants (1 == 1.0 and 0.0 == -0.0 in Python)."""
    kb = KernelBuilder("k")
    v = kb.vreg()
    for x in (1, 1.0, 0.0, -0.0, 1, -0.0):
        kb.v_add_f32(None, x, v)
    consts = [op.value for op in kb.block.ops if op.name == "arith.constant"]
    assert [(type(c).__name__, c.value.data) for c in consts] == [
        ("IntegerAttr", 1), ("FloatAttr", 1.0), ("FloatAttr", 0.0), ("FloatAttr", -0.0)]
    assert str(consts[3].value.data) == "-0.0"


def test_methods_document_themselves_lazily():
    kb = KernelBuilder("k", target="gfx950")
    method = type(kb).__dict__["v_add_u32"]
    assert "v_add_u32" in kb.v_add_u32.__doc__
    assert method.__doc__ == kb.v_add_u32.__doc__
    assert kb.v_add_u32.__name__ == "v_add_u32"


def test_plain_op_init_equals_xdsl_init():
    """Instruction ops and allocas made by ops._init_plain hold what Operation.__init__
    would give them (fields it leaves at their class defaults aside)."""
    from xdsl.ir import Operation

    from asterism.ir import ops
    from asterism.ir.types import TokenType, VGPRType

    assert ops._PLAIN_INIT  # (else the fast path is off and this test compares nothing)
    kb = KernelBuilder("k")
    a, b = kb.vreg(), kb.vreg()
    t = VGPRType.relocatable(1, 1)
    made = [ops.GLOBALOp("global_load_dword", [a, b], [t, TokenType()], {"offset": 16}),
            ops.AllocaOp(t)]
    for op in made:
        ref = type(op).__new__(type(op))
        Operation.__init__(ref, operands=list(op.operands),
                           result_types=[r.type for r in op.results],
                           properties=dict(op.properties), attributes=dict(op.attributes))
        # (every field, read through the class where the instance does not set it)
        for name in (set(vars(op)) | set(vars(ref))) - {"results", "_operand_uses"}:
            mine, theirs = getattr(op, name), getattr(ref, name)
            assert mine == theirs or list(mine) == list(theirs), name
        assert [(r.type, r.index, r.owner is op) for r in op.results] == \
               [(r.type, r.index, r.owner is ref) for r in ref.results]
        assert len(op._operand_uses) == len(ref._operand_uses) == len(op.operands)
        assert str(op) == str(ref)
        for k, v in enumerate(op.operands):  # (each operand's use list holds this use)
            assert [(u.operation, u.index) for u in v.uses if u.operation is op] == [(op, k)]
    # (the use lists stay consistent: dropping the op's references removes its uses only)
    others = [len(list(a.uses)) - 1, len(list(b.uses)) - 1]
    made[0].drop_all_references()
    assert [len(list(a.uses)), len(list(b.uses))] == others
    assert not any(u.operation is made[0] for u in [*a.uses, *b.uses])


# --- finish() does not match again the instruction ops emit matched, unless they changed --


def _two_adds():
    """A kernel with two v_add_u32 of one operand pattern: finish checks the first in full
    and trusts the second as built."""
    kb = KernelBuilder("k")
    v = kb.vreg()
    kb.v_add_u32(None, v, v)
    second = kb.v_add_u32(None, v, v).owner
    kb.s_endpgm()
    return kb, second


def test_finish_trusts_only_repeated_patterns():
    kb, second = _two_adds()
    first = second.prev_op
    while first.name != "amdgcn.vop2":
        first = first.prev_op
    assert second in kb._built and first not in kb._built
    kb.finish()


def test_finish_checks_an_op_whose_operands_changed_after_emit():
    kb, second = _two_adds()
    s = kb.sreg()
    s.owner.detach()  # (made after the kernel's end: defined before its new use)
    second.parent.insert_op_before(s.owner, second)
    second.operands = [second.operands[0], second.operands[1], s]  # (vsrc1 takes no SGPR)
    with pytest.raises(VerifyError, match="v_add_u32"):
        kb.finish()


def test_finish_checks_an_op_whose_modifiers_changed_after_emit():
    from asterism.ir.ops import modifiers_to_attr

    kb, second = _two_adds()
    second.properties["modifiers"] = modifiers_to_attr({"offset": 16})
    with pytest.raises(VerifyError, match="offset"):
        kb.finish()


def test_finish_checks_an_op_whose_mnemonic_changed_after_emit():
    from xdsl.dialects.builtin import StringAttr

    kb, second = _two_adds()
    second.properties["mnemonic"] = StringAttr("v_mfma_f32_16x16x16_f16")
    with pytest.raises(VerifyError, match="v_mfma_f32_16x16x16_f16"):
        kb.finish()


def test_finish_checks_an_op_whose_results_changed_after_emit():
    from xdsl.ir import OpResult, SSAValues

    from asterism.ir.types import SGPRType

    kb, second = _two_adds()
    second.results = SSAValues([OpResult(SGPRType.relocatable(1, 1), second, 0)])
    with pytest.raises(VerifyError, match="v_add_u32"):
        kb.finish()


def test_finish_checks_ops_whose_operand_the_abi_moved():
    """An ABI value moves when another ABI input is requested (the kernarg pointer from
    s[0:1] to s[2:3] behind the dispatch pointer): the ops reading it lose their trust and
    finish matches them again."""
    kb = KernelBuilder("k")
    kp = kb.kernarg_ptr()
    kb.s_load_dword(None, kp, 0)
    second = kb.s_load_dword(None, kp, 0).owner
    assert second in kb._built
    kb.dispatch_ptr()  # (moves the kernarg pointer from s[0:1] to s[2:3])
    assert second not in kb._built
    kb.s_endpgm()
    kb.finish()


def test_value_of_another_kernel_is_rejected():
    """A value defined in another kernel is found, used in the entry block and in a later
    block (by the dominance check, which runs before the kernel's IsolatedFromAbove check
    and names the operand)."""
    from asterism.builder import ModuleBuilder

    for later_block in (False, True):
        mb = ModuleBuilder("m")
        ka, kb = mb.kernel("a"), mb.kernel("b")
        foreign = ka.v_mov_b32(None, 1)
        ka.s_endpgm()
        if later_block:
            kb.label("next")
        kb.v_add_u32(None, foreign, kb.vreg())
        kb.s_endpgm()
        with pytest.raises(VerifyError, match=r"operand #1 of 'amdgcn.vop2' \(%v\) is "
                           "defined inside a region that does not enclose this use"):
            mb.finish()


def test_appended_ops_are_linked_as_add_op_links_them():
    """ops.append_new_op gives a block the links Block.add_op gives it (both ways, first and
    last op, parents), and leaves an op already in a block to add_op's error."""
    from xdsl.ir import Block

    from asterism.ir import ops
    from asterism.ir.types import VGPRType

    t = VGPRType.relocatable(1, 1)
    mine, ref = Block(), Block()
    made = [ops.AllocaOp(t) for _ in range(3)]
    for op in made:
        ops.append_new_op(mine, op)
        ref.add_op(ops.AllocaOp(t))
    for block in (mine, ref):
        forward = list(block.ops)
        backward = []
        op = block.last_op
        while op is not None:
            backward.append(op)
            op = op.prev_op
        assert forward == backward[::-1] and len(forward) == 3
        assert all(op.parent is block for op in forward)
        assert forward[0].prev_op is None and forward[-1].next_op is None
    assert list(mine.ops) == made
    with pytest.raises(ValueError, match="already attached"):
        ops.append_new_op(ref, made[0])
