"""Pass options and the pass registry: every pass's options (names, types, defaults) as the
passes always took them, one parser for all of them with located errors (API and CLI), the
registry's lazy loaders, and `asterism opt --list-passes`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from asterism import api
from asterism.cli import main
from asterism.errors import ParseError
from asterism.passes.base import option_specs
from asterism.passes.pipeline import parse_pipeline
from asterism.passes.registry import PASSES, PIPELINES, load_pass

LIT = Path(__file__).parent / "lit"
SEED = LIT / "passes_regalloc.mlir"
UPSTREAM = Path(__file__).parent / "upstream" / "loops.mlir"

# Every option as the passes took it before they were dataclasses (hand-copied from the old
# hand-written parsers: regalloc.OPTIONS and its _flag/_int_option defaults, inline's keep,
# hazards' check-only, WaitOptions, schedule_pass's keywords, lower_upstream's target):
# name -> (kind, default).
OPTIONS = {
    "copy-prop": {},
    "dce": {},
    "liveness": {},
    "inline": {"keep": ("bool", False)},
    "hazards": {"check-only": ("bool", False)},
    "regalloc": {"report": ("bool", False), "reserve": ("str", ""), "coalesce": ("bool", True),
                 "max-vgprs": ("int", None), "max-agprs": ("int", None),
                 "max-sgprs": ("int", None), "max-total-vgprs": ("int", None)},
    "waits": {"barrier": ("enum", "lds"), "lds-dma": ("enum", "wait"),
              "strict-store-data": ("bool", False)},
    "schedule": {"guard": ("enum", "hazards"), "counters": ("enum", "auto")},
    "lower-upstream": {"target": ("str", None)},
    "scf-pipeline": {"rotate": ("bool", True)},
}


# ------------------------------------------------------------------------------- registry


def test_registry_names_every_pass_once_with_its_options():
    assert sorted(PASSES) == sorted(OPTIONS)
    for name, want in OPTIONS.items():
        cls = load_pass(name)
        assert cls.name == name and cls.summary
        specs = option_specs(cls)
        assert {s.name: (s.kind, s.default) for s in specs} == want
        assert all(s.help for s in specs)
    assert PIPELINES == {"auto": ("scf-pipeline", "inline", "regalloc", "waits", "hazards")}
    assert [s.choices for s in option_specs(load_pass("schedule"))] == [
        ("hazards", "off"), ("auto", "keep", "free")]


def test_importing_the_registry_imports_no_pass():
    code = ("import sys, asterism.passes.pipeline; "
            "print(sorted(m for m in sys.modules if m.startswith('asterism.passes.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == str(["asterism.passes.base", "asterism.passes.pipeline",
                               "asterism.passes.registry"])


def test_defaults_and_values():
    (ra,) = parse_pipeline("regalloc")
    assert (ra.report, ra.reserve, ra.coalesce, ra.max_vgprs) == (False, "", True, None)
    (ra,) = parse_pipeline("regalloc{report=, coalesce=off, max-vgprs=+12, reserve=v0-v3 s4}")
    assert (ra.report, ra.coalesce, ra.max_vgprs, ra.reserve) == (True, False, 12, "v0-v3 s4")
    for text, flag in (("1", True), ("TRUE", True), ("yes", True), ("on", True),
                       ("0", False), ("false", False), ("No", False), ("off", False)):
        assert parse_pipeline(f"inline{{keep={text}}}")[0].keep is flag
    # Underscores for dashes (Python keywords): the spelling waits and hazards always took.
    (w,) = parse_pipeline("waits{lds_dma=tokens,strict_store_data=1}")
    assert (w.barrier, w.lds_dma, w.strict_store_data) == ("lds", "tokens", True)
    assert parse_pipeline("hazards{check_only=true}")[0].check_only is True
    assert [p.name for p in parse_pipeline(" builtin.module( inline , auto, )")] == [
        "inline", "scf-pipeline", "inline", "regalloc", "waits", "hazards"]
    assert parse_pipeline("") == parse_pipeline("  ") == parse_pipeline("builtin.module()") == []


def test_lower_upstream_target_option():
    def target(pipeline: str) -> str:
        module = api.optimize(api.parse(UPSTREAM.read_text(), str(UPSTREAM)), pipeline)
        return module.body.block.first_op.target_name

    assert target("lower-upstream") == "gfx942"
    assert target("lower-upstream{target=gfx950}") == "gfx950"


# ------------------------------------------------------------------------------- errors

# (pipeline, where the error points "line:col", the message): one or more per error class.
ERRORS = [
    # unknown pass
    ("inline,bogus", "1:8", "unknown pass 'bogus'; known: copy-prop, dce, hazards, inline, "
                            "liveness, lower-upstream, regalloc, scf-pipeline, schedule, waits, auto"),
    # unknown option (also of passes without options, and of a named pipeline)
    ("regalloc{report=1, colour=1}", "1:20",
     "unknown option 'colour' of pass 'regalloc'; options: report, reserve, coalesce, "
     "max-vgprs, max-agprs, max-sgprs, max-total-vgprs"),
    ("dce{x=1}", "1:5", "unknown option 'x' of pass 'dce'; options: none"),
    ("liveness{verbose=1}", "1:10", "unknown option 'verbose' of pass 'liveness'; options: "
                                    "none"),
    ("lower-upstream{chip=gfx950}", "1:16", "unknown option 'chip' of pass 'lower-upstream'; "
                                            "options: target"),
    ("auto{keep=1}", "1:5", "'auto' is a named pipeline (scf-pipeline,inline,regalloc,waits,hazards): it "
                            "takes no options"),
    # wrong type (at the value)
    ("regalloc{max-vgprs=abc}", "1:20", "option 'max-vgprs' of 'regalloc' expects an integer,"
                                        " got 'abc'"),
    ("regalloc{max-sgprs=}", "1:20", "option 'max-sgprs' of 'regalloc' expects an integer, "
                                     "got ''"),
    ("inline{keep=2}", "1:13", "option 'keep' of 'inline' expects a flag (1/0, true/false, "
                               "yes/no, on/off), got '2'"),
    ("waits{barrier=all}", "1:15", "option 'barrier' of 'waits' expects one of lds, none, "
                                   "got 'all'"),
    ("schedule{counters=some}", "1:19", "option 'counters' of 'schedule' expects one of auto, "
                                        "keep, free, got 'some'"),
    ("regalloc{reserve=q7}", "1:18", "option 'reserve' of 'regalloc': expected a register "
                                     "range such as v32-v95 or s[4:7], got 'q7'"),
    # duplicate option (at the second one; `_` and `-` are one name)
    ("regalloc{report=1,report=0}", "1:19", "option 'report' of 'regalloc' is given twice"),
    ("hazards{check-only=1,check_only=0}", "1:22",
     "option 'check-only' of 'hazards' is given twice"),
    # bad syntax
    ("regalloc{report}", "1:10", "expected OPTION=VALUE in the options of 'regalloc', got "
                                 "'report'"),
    ("regalloc{report=1,}", "1:19", "expected OPTION=VALUE in the options of 'regalloc', "
                                    "got ''"),
    ("regalloc{=1}", "1:10", "expected OPTION=VALUE in the options of 'regalloc', got '=1'"),
    ("regalloc{max-vgprs=8", "1:9", "missing '}' after the options of 'regalloc'"),
    ("inline waits", "1:8", "expected ',' between passes at 'waits'"),
    ("inline,,waits", "1:8", "expected a pass name at ',waits' (e.g. 'inline,regalloc,waits')"),
    ("inline,\n  regalloc{\n  max-vgprs=x}", "3:13",
     "option 'max-vgprs' of 'regalloc' expects an integer, got 'x'"),
]


@pytest.mark.parametrize("pipeline,where,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_pipeline_errors_are_located(pipeline, where, message):
    with pytest.raises(ParseError) as info:
        parse_pipeline(pipeline)
    assert info.value.message == message
    assert str(info.value.location) == f"<pipeline>:{where}"
    # api.optimize parses before running anything: the module is untouched
    module = api.parse(SEED.read_text(), str(SEED))
    before = str(module)
    with pytest.raises(ParseError, match="^<pipeline>:" + where):
        api.optimize(module, pipeline)
    assert str(module) == before


@pytest.mark.parametrize("pipeline,where,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_pipeline_errors_on_the_command_line(pipeline, where, message, tmp_path, capsys):
    out = tmp_path / "out.mlir"
    seed = UPSTREAM if "lower-upstream" in pipeline else SEED
    code = main(["opt", str(seed), f"--pipeline={pipeline}", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err == f"<pipeline>:{where}: error: {message}\n"
    assert not out.exists()


def test_keyword_apis_share_the_parser():
    from asterism.passes.regalloc import allocate_module
    from asterism.passes.schedule import schedule_module
    from asterism.passes.waits import insert_waits

    module = api.parse(SEED.read_text(), str(SEED))
    with pytest.raises(ParseError, match="^option 'max-vgprs' of 'regalloc' expects an "
                                         "integer, got 'many'$"):
        allocate_module(module, max_vgprs="many")
    with pytest.raises(ParseError, match="^unknown option 'drain' of pass 'waits'"):
        insert_waits(module, drain="1")
    with pytest.raises(ParseError, match="^option 'guard' of 'schedule' expects one of "
                                         "hazards, off, got 'maybe'$"):
        schedule_module(module, guard="maybe")


# ------------------------------------------------------------------------------- listing


def test_list_passes(capsys):
    with pytest.raises(SystemExit) as info:
        main(["opt", "--list-passes"])
    assert info.value.code == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    for want in (
            "regalloc assign registers to relocatable values around pinned registers and "
            "reserved regions",
            "report=0|1 print used vs peak per register file to stderr (default: 0)",
            "coalesce=0|1 give copies and MFMA accumulators one register where that creates "
            "no conflict (default: 1)",
            "max-vgprs=N ArchVGPR budget (default: the target's)",
            "guard=hazards|off keep hazard-linked instructions their wait states apart (off: "
            "leave it to the hazards pass) (default: hazards)",
            "lds-dma=wait|tokens wait for in-flight LDS DMA loads before DS accesses (tokens: "
            "only where waited for) (default: wait)",
            "target=TEXT the chip to lower for (default: the module's target or "
            "#rocdl.target, else gfx942)",
            "dce remove pure instructions whose results nothing reads (opt-in)",
            "auto scf-pipeline,inline,regalloc,waits,hazards"):
        assert want in lines
