"""The package's imports go down the layer order, with no circle (tools/import_graph.py's
analysis: lazy imports count, only `if TYPE_CHECKING:` ones do not)."""

from __future__ import annotations

from pathlib import Path


def test_no_circle_and_no_upward_import(import_graph):
    """Every module imports only its own layer or lower ones, and no circle holds two
    modules."""
    tool, graph = import_graph
    found = tool.finding_lines(tool.circles(graph), tool.upward_imports(graph))
    assert found == [], "\n" + "\n".join(found)


def test_the_analysis_finds_circles_and_upward_imports(import_graph):
    """The analysis the first test relies on reports a circle (lazy imports too) and an
    import up the layer order in a made-up graph."""
    tool, _graph = import_graph
    edges = {
        "asterism.sweep.plot": {"asterism.sweep.result"},  # a circle in sweep/
        "asterism.sweep.result": {"asterism.sweep.plot"},
        "asterism.emu.b": {"asterism.profile.att"},  # an upward import
        "asterism.profile.att": set(),
    }
    graph = tool.Graph({m: Path(m) for m in edges}, edges)
    assert tool.finding_lines(tool.circles(graph), tool.upward_imports(graph)) == [
        "circle of 2: asterism.sweep.plot asterism.sweep.result",
        "upward: asterism.emu.b -> asterism.profile.att (emu below profile)",
    ]
