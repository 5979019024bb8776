"""The structure of the upstream front end (asterism.frontend): the handler table covers the
ops lowered before the move into the room, every handled op class is the class the upstream
parser makes for that op name (no handler is unreachable), an op class handled twice is
refused, and the room's imports: the core and the shared helpers import no dialect handler
module, only the pass module imports them, and no module of the room is in an import circle of
the room. (What the handlers emit: tests/lit/lower_upstream_*.mlir.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from asterism.frontend.lower import handler_table
from asterism.frontend.lowering import merge_tables
from asterism.frontend.parse import make_upstream_context

REPO = Path(__file__).resolve().parent.parent

# The op names passes/lower_upstream.py's string-keyed table held before the move, less
# arith.index_castui (xDSL 0.74 does not define it: it never parsed, so it never lowered).
LOWERED_BEFORE = {
    "amdgpu.dpp", "amdgpu.ext_packed_fp8", "amdgpu.fat_raw_buffer_cast", "amdgpu.gather_to_lds",
    "amdgpu.lds_barrier", "amdgpu.memory_counter_wait", "amdgpu.mfma",
    "amdgpu.packed_scaled_trunc", "amdgpu.packed_stoch_round_fp8", "amdgpu.packed_trunc_2xfp8",
    "amdgpu.permlane_swap", "amdgpu.raw_buffer_atomic_cmpswap", "amdgpu.raw_buffer_atomic_fadd",
    "amdgpu.raw_buffer_atomic_fmax", "amdgpu.raw_buffer_atomic_smax",
    "amdgpu.raw_buffer_atomic_umin", "amdgpu.raw_buffer_load", "amdgpu.raw_buffer_store",
    "amdgpu.scaled_ext_packed", "amdgpu.scaled_mfma", "amdgpu.sched_barrier",
    "amdgpu.sparse_mfma", "amdgpu.swizzle_bitmode", "amdgpu.transpose_load", "amdgpu.wmma",
    "arith.addf", "arith.addi", "arith.andi", "arith.bitcast", "arith.ceildivsi",
    "arith.ceildivui", "arith.cmpf", "arith.cmpi", "arith.constant", "arith.divf", "arith.divsi",
    "arith.divui", "arith.extf", "arith.extsi", "arith.extui", "arith.floordivsi",
    "arith.fptosi", "arith.fptoui", "arith.index_cast", "arith.maximumf", "arith.maxnumf",
    "arith.maxsi", "arith.maxui", "arith.minimumf", "arith.minnumf", "arith.minsi",
    "arith.minui", "arith.mulf", "arith.muli", "arith.negf", "arith.ori", "arith.remsi",
    "arith.remui", "arith.select", "arith.shli", "arith.shrsi", "arith.shrui", "arith.sitofp",
    "arith.subf", "arith.subi", "arith.truncf", "arith.trunci", "arith.uitofp", "arith.xori",
    "func.call", "func.return", "gpu.barrier", "gpu.block_dim", "gpu.block_id",
    "gpu.grid_dim", "gpu.lane_id", "gpu.return", "gpu.thread_id", "memref.alloc",
    "memref.alloca", "memref.load", "memref.store", "scf.for", "scf.if", "scf.yield",
    "vector.bitcast", "vector.broadcast", "vector.extract", "vector.extract_strided_slice",
    "vector.fma", "vector.from_elements", "vector.insert", "vector.load", "vector.splat",
    "vector.store",
}

# The dialect handler modules: only the pass module may import them.
HANDLER_MODULES = {f"asterism.frontend.{d}" for d in
                   ("gpu", "func", "arith", "scf", "cf", "memref", "vector", "transfer",
                    "amdgpu", "math")}


def _import_graph():
    spec = importlib.util.spec_from_file_location("import_graph",
                                                  REPO / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_graph", module)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules["import_graph"])
    return sys.modules["import_graph"]


# Ops added since (issue 26: upstream input as people write it).
ADDED = {
    "gpu.shuffle", "math.absf", "math.exp", "math.exp2", "math.fma", "math.log", "math.log2",
    "math.rsqrt", "math.sqrt", "scf.while", "vector.reduction",
    "cf.br", "cf.cond_br", "cf.switch", "cf.assert", "memref.subview", "vector.create_mask",
    "vector.maskedload", "vector.maskedstore", "vector.transfer_read", "vector.transfer_write",
    "memref.atomic_rmw", "memref.dim", "gpu.subgroup_reduce",
}


def test_the_table_lowers_what_was_lowered_before():
    assert {cls.name for cls in handler_table()} == LOWERED_BEFORE | ADDED


def test_every_handled_op_class_is_the_one_the_parser_makes():
    ctx = make_upstream_context()
    for cls in handler_table():
        assert ctx.get_optional_op(cls.name) is cls, f"{cls.name}: handled class unreachable"


def test_an_op_class_handled_twice_is_refused():
    from xdsl.dialects.arith import AddiOp

    from asterism.frontend import arith

    with pytest.raises(ValueError, match="arith.addi has two handlers: "
                                         "asterism.frontend.arith._int_op and .*_other"):
        def _other(low, op) -> None:
            pass

        merge_tables(arith.HANDLERS, {AddiOp: _other})


def test_the_room_imports_downwards_without_circles():
    graph_mod = _import_graph()
    graph = graph_mod.build_graph()
    room = {m for m in graph.files if m.startswith("asterism.frontend")}
    importers = {m for m in graph.files for t in graph.edges[m] if t in HANDLER_MODULES
                 and m not in HANDLER_MODULES}
    assert importers == {"asterism.frontend.lower"}
    # handler modules do not import one another (shared code lives in emit/memory/...)
    for m in HANDLER_MODULES:
        assert not graph.edges[m] & (HANDLER_MODULES - {m}), m
    assert not graph.edges["asterism.frontend.lowering"] & HANDLER_MODULES
    # no circle among the room's own modules
    inner = graph_mod.Graph({m: graph.files[m] for m in room},
                            {m: graph.edges[m] & room for m in room})
    assert graph_mod.circles(inner) == []
    # and nothing of the room imports a layer above it
    assert [(m, t) for m, t in graph_mod.upward_imports(graph) if m in room] == []
