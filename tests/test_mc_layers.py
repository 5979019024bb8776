"""The MC layer is a DAG: its modules in tiers (docs/design.md), each importing only its own
tier or lower ones, no import circle, the instruction a plain value at the bottom and the
lossless text on top (tools/import_graph.py reads the imports, the lazy ones too)."""

from __future__ import annotations

from asterism.mc.asm_syntax import InstParser
from asterism.mc.matcher import select_form
from asterism.mc.printer import format_inst

# Lowest first (docs/design.md, "The MC layer's order"). A module may import modules of its
# own tier or of earlier tiers; circles inside a tier are caught by the circle test.
MC_TIERS = [
    # values: the instruction and its operands, programs, small helpers that know no Inst
    {"operands", "inst", "program", "per_form", "yaml_subset", "llvm_tools"},
    # tables: field codes; the code object (ELF, descriptor, metadata; knows no Inst)
    {"operand_codes", "codeobject", "codeobject.descriptor", "codeobject.elf",
     "codeobject.metadata", "codeobject.model", "codeobject.reader", "codeobject.schema",
     "codeobject.writer", "llvm_oracle"},
    {"matcher"},  # form selection and verification
    {"encoder", "decoder"},  # siblings: neither imports the other
    {"exact", "random_inst"},  # decode -> encode exactly; random instructions of a form
    {"printer", "asm_syntax", "decoded_text"},  # one instruction's text, both ways
    {"kernel_abi", "listing"},
    {"assembler", "asm_writer", "parser", "source_map"},
    {"lossless"},  # lossless text: prints, parses, encodes, decodes and writes modules
]


def _mc_modules(graph) -> list[str]:
    return sorted(m for m in graph.files if m.startswith("asterism.mc."))


def _tier(module: str) -> int:
    name = module.removeprefix("asterism.mc.")
    for k, tier in enumerate(MC_TIERS):
        if name in tier:
            return k
    raise AssertionError(f"{module} is in no tier of MC_TIERS (tests/test_mc_layers.py): "
                         "put it in the lowest tier above everything it imports")


def test_mc_modules_form_no_import_circle(import_graph):
    """No circle among mc modules, counting imports inside functions."""
    tool, g = import_graph
    mc = set(_mc_modules(g))
    sub = tool.Graph({m: g.files[m] for m in mc}, {m: g.edges[m] & mc for m in mc})
    assert tool.circles(sub) == []


def test_every_mc_module_imports_only_its_tier_or_lower(import_graph):
    """An mc module imports mc modules of its own tier or lower ones, and outside mc only
    layers below it (support, isa, target; never the package root)."""
    tool, g = import_graph
    mc_layer = tool.LAYERS.index("mc")
    wrong = []
    for m in _mc_modules(g):
        for t in sorted(g.edges[m]):
            if t.startswith("asterism.mc."):
                if _tier(t) > _tier(m):
                    wrong.append(f"{m} (tier {_tier(m)}) imports {t} (tier {_tier(t)})")
            elif t != "asterism.mc" and tool.layer_of(t) >= mc_layer:
                wrong.append(f"{m} imports {t}, which is not below mc")
    assert wrong == []


def test_inst_and_lossless_ends(import_graph):
    """The instruction imports only its operands (and errors); no mc module imports the
    lossless text."""
    _tool, g = import_graph
    assert g.edges["asterism.mc.inst"] <= {"asterism.errors", "asterism.mc.operands"}
    assert [m for m in _mc_modules(g) if "asterism.mc.lossless" in g.edges[m]] == []


def test_inst_text_is_its_fields_and_the_printer_prints_assembly():
    """str/repr of an Inst show its fields; the assembly text is the printer's."""
    inst = InstParser().parse("v_add_f32 v1, v2, v3 clamp")
    inst.form = select_form(inst, "gfx942")
    assert format_inst(inst) == "v_add_f32 v1, v2, v3 clamp"  # (the mnemonic as written)
    assert str(inst) == repr(inst) == \
        "Inst('v_add_f32', [v1, v2, v3], {'clamp': True}, form=VOP3 v_add_f32_e64)"
