"""The emulator's semantics sit behind a registry (docs/design.md, the paragraph on the
emulator's semantics): the families under emu/semantics/ import no other family and nothing
above them (compiler, emulator), only semantics/all.py imports them all, and merging two
tables that both claim a mnemonic is an error (tools/import_graph.py reads the imports, the
lazy ones too)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from asterism.emu.semantics import all as semantics_all
from asterism.emu.semantics.registry import Table, merge

REPO = Path(__file__).resolve().parent.parent
SEM = "asterism.emu.semantics."
FAMILIES = {SEM + f for f in ("branch", "cvt", "lds", "mem", "mfma", "salu", "valu")}
# What the compiler builds on, below the semantics: none of these may import the compiler,
# the emulator or a semantics family.
BELOW = {"asterism.emu." + m for m in ("info", "sops", "vops", "spaces", "sanitizer", "core",
                                       "errors", "memory", "fp", "numerics", "mfma",
                                       "atomic_ops")}
ABOVE = {"asterism.emu.compiler", "asterism.emu.emulator", "asterism.emu.timing",
         "asterism.emu.hazard_check", "asterism.emu.bench"}


@pytest.fixture(scope="module")
def graph():
    """tools/import_graph.py's graph of the package."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import import_graph
    finally:
        sys.path.remove(str(REPO / "tools"))
    return import_graph, import_graph.build_graph()


def test_every_family_is_known(graph):
    """The family list here is the folder's (a new family is added to it and to all.py)."""
    _, g = graph
    helpers = {SEM + m for m in ("registry", "all", "bits", "vmem")}
    found = {m for m in g.files if m.startswith(SEM)} - helpers
    assert found == FAMILIES


def test_only_all_imports_the_families(graph):
    """all.py imports every family; no other module imports any family."""
    _, g = graph
    assert g.edges[SEM + "all"] >= FAMILIES
    importers = {m for m, targets in g.edges.items() if targets & FAMILIES}
    assert importers == {SEM + "all"}


def test_semantics_and_their_helpers_import_nothing_above_them(graph):
    """Nothing in emu/semantics/ nor the helpers below it imports the compiler, the
    emulator, the timing model or the hazard checker (the old circle went through them)."""
    _, g = graph
    low = {m for m in g.files if m.startswith(SEM) or m == SEM[:-1]} | BELOW
    wrong = sorted(f"{m} imports {t}" for m in low for t in g.edges[m] if t in ABOVE)
    assert wrong == []
    assert not g.edges[SEM + "registry"] & FAMILIES
    assert g.edges[SEM[:-1]] == set()  # the package module loads nothing


def test_no_import_circle_below_the_emulator(graph):
    """No circle among the emulator's modules other than the emulator and timing driver
    (their circle is the timing room's)."""
    tool, g = graph
    emu = {m for m in g.files if m.startswith("asterism.emu")} - {
        "asterism.emu", "asterism.emu.emulator", "asterism.emu.timing"}
    sub = tool.Graph({m: g.files[m] for m in emu}, {m: g.edges[m] & emu for m in emu})
    assert tool.circles(sub) == []


def test_merge_refuses_a_mnemonic_in_two_families():
    """A mnemonic with builders in two families is an error naming both."""
    a, b = Table("alpha"), Table("beta")
    a.builder("v_x")(lambda info: None)
    b.builder("v_y", "v_x")(lambda info: None)
    with pytest.raises(ValueError, match="v_x has semantics in two families: alpha and beta"):
        merge(a, b)
    assert set(merge(a, Table("empty"))) == {"v_x"}


def test_the_merged_table_is_the_union_of_the_families():
    """all.TABLE holds every family's entries, each with its family's builder."""
    families = [sys.modules[f] for f in sorted(FAMILIES)]
    assert sum(len(f.TABLE) for f in families) == len(semantics_all.TABLE)
    for fam in families:
        for mnemonic, fn in fam.TABLE.items():
            assert semantics_all.TABLE[mnemonic] is fn
    assert "v_add_f32" in semantics_all.TABLE and "s_endpgm" in semantics_all.TABLE
