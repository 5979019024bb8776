"""`asterism kernels compare`: library kernels side by side (asterism.kernels.compare).

The figures of the table are checked against each kernel run on its own (kernels.run_case
with the same parameters) and computed by hand from those runs: the ratio from their cycles,
the stall total from the timing model's per-wave stall cycles, the registers and occupancy
from `asterism stats` of the code object.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from asterism import kernels
from asterism.cli import main
from asterism.kernels import base
from asterism.kernels.compare import (
    compare_kernels,
    compare_report,
    format_compare,
    plan_compare,
    route_params,
    split_label,
)
from asterism.kernels.run import build_code_object, run_case
from asterism.profile.stats import code_object_stats

SHAPE = "128x128x64"
GEMM = {"m": 128, "n": 128, "k": 64}
FA_SHAPE = "1x1x64x64"


@pytest.fixture(scope="module")
def gemm_pair():
    """gemm against itself with its schedule knob off (interleave=false), with timing."""
    target, entries = plan_compare(["gemm", "gemm@seq"], "gfx942", SHAPE,
                                   ["gemm@seq.interleave=false"])
    return compare_kernels(entries, target, SHAPE, timing=True)


def _alone(params: dict) -> tuple:
    """A kernel run on its own (the independent reference of a column)."""
    case = kernels.get("gemm").build("gfx942", {**GEMM, **params})
    code = build_code_object(case)
    run = run_case(case, check=True, timing=True, code=code)
    stats = next(s for s in code_object_stats(code) if s.name == case.kernel)
    return run, stats


def test_ratio_is_the_first_kernels_cycles_over_each(gemm_pair):
    first, second = (_alone({})[0], _alone({"interleave": False})[0])
    rows = gemm_pair.rows
    assert [r.label for r in rows] == ["gemm", "gemm@seq"]
    assert [r.run.cycles for r in rows] == [first.cycles, second.cycles]
    assert first.cycles != second.cycles  # the two param sets do differ
    # Same shape, same flops, same clock: the throughput ratio is a cycle ratio.
    assert rows[0].ratio_to_first == 1.0
    assert rows[1].ratio_to_first == pytest.approx(first.cycles / second.cycles, rel=1e-12)
    assert rows[0].params["interleave"] is True and rows[1].params["interleave"] is False
    assert [r.run.tflops for r in rows] == [first.tflops, second.tflops]
    assert [r.run.per_cu_tflops for r in rows] == [first.per_cu_tflops, second.per_cu_tflops]
    assert gemm_pair.ok


def test_stalls_registers_and_occupancy(gemm_pair):
    run, stats = _alone({})
    waves = run.timing_result.waves
    stalled = 100 * sum(w.stall for w in waves) / sum(w.cycles for w in waves)
    row = gemm_pair.rows[0]
    # every stalled cycle goes to exactly one cause
    assert sum(row.stalls.values()) == pytest.approx(stalled, rel=1e-12)
    assert all(v >= 0 for v in row.stalls.values()) and "vmcnt wait" in row.stalls
    assert row.registers == {"vgpr": stats.vgprs, "agpr": stats.agprs, "sgpr": stats.sgprs}
    assert row.lds == stats.lds_bytes == run.registers["lds"]
    assert (row.waves_per_simd, list(row.limited_by)) == (stats.waves_per_simd,
                                                          stats.occupancy_limited_by)
    assert row.run.timing_result is None  # the records are dropped once analysed


def test_text_table_labels_modeled_figures(gemm_pair):
    text = format_compare(gemm_pair)
    lines = text.splitlines()
    assert lines[0] == f"kernels compare on gfx942, --shape {SHAPE} (asterism emulator)"
    assert lines[1].startswith("modeled: MI300X, 304 CUs")
    header = next(line for line in lines if line.split() == ["gemm", "gemm@seq"])
    assert header
    cycles = next(line for line in lines if line.startswith("modeled cycles"))
    assert cycles.split()[-2:] == [str(r.run.cycles) for r in gemm_pair.rows]
    ratio = next(line for line in lines if line.startswith("modeled ratio"))
    assert ratio.split()[-1] == f"{gemm_pair.rows[1].ratio_to_first:.3f}"
    assert any(line.startswith("parameters set") and line.endswith("interleave=false")
               for line in lines)
    stalls = lines.index(next(line for line in lines if line.startswith("modeled stalls")))
    causes = [line.split()[0] for line in lines[stalls + 1:] if line.startswith("  ")]
    assert causes[:2] == ["vmcnt", "lgkmcnt"] and lines[stalls + 1].startswith("  vmcnt")
    for line in lines[:stalls]:
        if "TFLOPS" in line or "cycles" in line or "ratio" in line:
            assert line.startswith(("modeled", "peak")), line


def test_flash_attention_alias_json(tmp_path, capsys):
    out = tmp_path / "cmp.json"
    rc = main(["kernels", "compare", "flash_attention_fwd", "flash_attention_fwd@agpr",
               "--target", "gfx950", "--shape", FA_SHAPE, "--param", "block_n=32",
               "--param", "flash_attention_fwd@agpr.o_regs=agpr", "--timing", "--json",
               "-o", str(out), "-q"])
    assert rc == 0
    assert capsys.readouterr().out == ""
    report = json.loads(out.read_text())
    assert report["modeled"] is True
    assert (report["target"], report["shape"]) == ("gfx950", FA_SHAPE)
    names = [k["name"] for k in report["kernels"]]
    assert names == ["flash_attention_fwd", "flash_attention_fwd@agpr"]
    keys = {"name", "check_ok", "max_error", "tolerance", "modeled_cycles", "modeled_tflops",
            "per_cu_tflops", "percent_of_peak", "stalls", "registers", "lds", "occupancy",
            "ratio_to_first", "params"}
    first, second = report["kernels"]
    for k in report["kernels"]:
        assert keys <= set(k)
        assert k["check_ok"] is True and k["max_error"] <= k["tolerance"]["atol"]
        assert (k["params"]["batch"], k["params"]["heads"], k["params"]["seq_q"],
                k["params"]["head_dim"], k["params"]["block_n"]) == (1, 1, 64, 64, 32)
        assert k["percent_of_peak"] == pytest.approx(
            100 * k["modeled_tflops"] / k["peak_tflops"])
        assert set(k["occupancy"]) == {"waves_per_simd", "limited_by"}
    assert (first["params"]["o_regs"], second["params"]["o_regs"]) == ("auto", "agpr")
    assert first["registers"]["agpr"] == 0 < second["registers"]["agpr"]
    assert first["ratio_to_first"] == 1.0
    assert second["ratio_to_first"] == pytest.approx(
        first["modeled_cycles"] / second["modeled_cycles"], rel=1e-12)


# ---------------------------------------------------------------------------- routing

GEMMS = {"gemm": kernels.get("gemm"), "gemm@b": kernels.get("gemm")}


def test_plain_param_goes_to_every_kernel_that_has_it_scoped_wins():
    routed = route_params(GEMMS, ["tile_k=16", "gemm@b.tile_k=64", "gemm@b.waves=8"])
    assert routed == {"gemm": {"tile_k": "16"}, "gemm@b": {"tile_k": "64", "waves": "8"}}


def test_plain_param_only_to_kernels_that_have_it():
    gens = {"gemm": kernels.get("gemm"),
            "fa": kernels.get("flash_attention_fwd")}
    assert route_params(gens, ["layout=tn", "causal=1"]) == {
        "gemm": {"layout": "tn"}, "fa": {"causal": "1"}}


@pytest.mark.parametrize("labels, target, shape, params, message", [
    (["gemm", "gemm@b"], None, None, ["bogus=1"],
     "none of the compared kernels has this parameter"),
    (["gemm", "gemm@b"], None, None, ["gemm@c.tile_k=16"],
     "'gemm@c' is not one of the compared kernels (gemm, gemm@b)"),
    (["gemm", "gemm@b"], None, None, ["flash_attention_fwd.causal=1"],
     "is not one of the compared kernels"),
    (["gemm", "gemm@b"], None, None, ["gemm@b.causal=1"], "gemm has no parameter 'causal'"),
    (["gemm", "gemm@b"], None, None, ["gemm@b.tile_m=abc"],
     "gemm@b: parameter tile_m: expected int"),
    (["gemm", "gemm@b"], None, SHAPE, ["m=256"], "parameter m is set by --shape"),
    (["gemm", "gemm@b"], None, SHAPE, ["gemm@b.k=256"], "gemm@b: parameter k is set by"),
    (["gemm", "gemm"], None, None, [], "gemm is compared twice"),
    (["gemm"], None, None, [], "two or more kernels"),
    (["gemm", "gemm@"], None, None, [], "expected NAME or NAME@ALIAS"),
    (["gemm", "gemm@a.b"], None, None, [], "expected NAME or NAME@ALIAS"),
    (["gemm", "nope"], None, None, [], "unknown kernel 'nope' (known: aiter_fmha_fwd, flash_attention_fwd"),
    (["gemm", "gemm@b"], "gfx90a", None, [], "gemm supports targets gfx942, gfx950, not"),
    (["gemm", "flash_attention_fwd"], None, SHAPE, [],
     "gemm takes --shape MxNxK but flash_attention_fwd takes --shape BATCHxHEADSxSEQxDIM"),
    (["gemm", "gemm@b"], None, "1x2x3x4", [], "--shape for gemm is MxNxK"),
    (["gemm", "gemm@b"], None, None, ["tile_k"], "name=value"),
])
def test_bad_commands_stop_before_running(labels, target, shape, params, message):
    with pytest.raises(kernels.KernelParamError) as err:
        plan_compare(labels, target, shape, params)
    assert message in str(err.value)


def test_split_label():
    assert split_label("gemm") == ("gemm", "")
    assert split_label("flash_attention_fwd@agpr-2") == ("flash_attention_fwd", "agpr-2")


def test_default_target_is_the_first_kernels_first():
    target, entries = plan_compare(["gemm", "gemm@b"], None, SHAPE)
    assert target == kernels.get("gemm").targets[0]
    assert entries[0].overrides() == {"m": "128", "n": "128", "k": "64"}


# ---------------------------------------------------------------------------- exit codes


def test_bad_command_exit_1_and_no_output_file(tmp_path, capsys):
    out = tmp_path / "r.txt"
    assert main(["kernels", "compare", "gemm", "gemm@b", "--param", "bogus=1",
                 "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "error: --param bogus" in err and "Traceback" not in err
    assert not out.exists()


def test_a_kernel_that_fails_to_build_gets_its_row_and_exit_1(capsys):
    # tile_k=64 needs 72 KiB of LDS for its two buffers; gfx942 has 64 KiB per workgroup
    rc = main(["kernels", "compare", "gemm", "gemm@big", "--target", "gfx942", "--shape",
               SHAPE, "--param", "gemm@big.tile_k=64"])
    out = capsys.readouterr()
    assert rc == 1
    lines = out.out.splitlines()
    check = next(line for line in lines if line.split()[:1] == ["check"])
    assert check.split()[-2:] == ["ok", "error"]
    assert any(line.startswith("gemm@big: build failed: parameter tile_k") for line in lines)
    assert "modeled cycles" not in out.out  # without --timing: check, registers, occupancy
    assert "[2/2] gemm@big: build failed in" in out.err


@pytest.fixture
def wrong_reference(monkeypatch):
    """A library kernel whose reference is off by one: its check must fail."""
    gemm = kernels.get("gemm")

    def build(target, params):
        case = gemm.build_case(target, params)
        right = case.reference
        return dataclasses.replace(case, name="gemm_wrong",
                                   reference=lambda: {k: v + 1 for k, v in right().items()})

    gen = dataclasses.replace(gemm, name="gemm_wrong", build_case=build)
    base._load_library()
    monkeypatch.setitem(base._REGISTRY, "gemm_wrong", gen)
    return gen


def test_a_failing_check_gets_its_row_and_exit_1(wrong_reference, capsys):
    rc = main(["kernels", "compare", "gemm", "gemm_wrong", "--target", "gfx942", "--shape",
               SHAPE, "--json", "-q"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 1
    good, bad = report["kernels"]
    assert (good["check_ok"], bad["check_ok"]) == (True, False)
    assert bad["max_error"] == pytest.approx(1.0, abs=1e-3) and bad["error"] is None
    assert bad["registers"] == good["registers"]
    assert report["timing"] is False and good["modeled_cycles"] is None


def test_all_ok_exit_0_and_the_report_file(tmp_path, capsys):
    out = tmp_path / "r.txt"
    assert main(["kernels", "compare", "gemm", "gemm@w2", "--target", "gfx942", "--shape",
                 SHAPE, "--param", "gemm@w2.waves=2", "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    text = out.read_text()
    assert text.splitlines()[0] == f"kernels compare on gfx942, --shape {SHAPE} (asterism " \
                                   "emulator)"
    assert "occupancy waves/SIMD" in text
    assert "check, registers and occupancy only" in text


def test_a_kernel_that_fails_to_run_gets_its_row_and_exit_1(capsys):
    # the instruction budget stops each wave long before the GEMM ends
    rc = main(["kernels", "compare", "gemm", "gemm@w2", "--target", "gfx942", "--shape",
               SHAPE, "--param", "gemm@w2.waves=2", "--max-instructions", "50", "--json",
               "-q"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 1
    for k in report["kernels"]:
        assert k["error"].startswith("run failed: ") and "50" in k["error"]
        assert k["check_ok"] is None and k["registers"] is not None  # built, then stopped


def test_the_sanitizer_option_reaches_every_run(monkeypatch, capsys):
    """`kernels compare --sanitizer MODE` runs each kernel with that mode (it was accepted
    and ignored: an own kernel ran in error mode whatever the option said)."""
    from asterism.kernels import compare as compare_mod

    seen = []
    real = compare_mod.run_case

    def spy(case, **kw):
        seen.append((kw.get("sanitizer"), kw.get("on_violation") is not None))
        return real(case, **kw)

    monkeypatch.setattr(compare_mod, "run_case", spy)
    assert main(["kernels", "compare", "gemm", "gemm@b", "--target", "gfx942", "--shape",
                 SHAPE, "--sanitizer", "warn", "-q"]) == 0
    assert seen == [("warn", True), ("warn", True)]
    capsys.readouterr()


def test_load_clock_row_scales_per_cu_tflops_by_the_clock_ratio(gemm_pair):
    """MI300X's clock under dense MFMA load (1207 MHz, AMD's measured median) beside the
    peak clock (2100 MHz): the same modeled cycles, time longer by 2100 / 1207."""
    for row in gemm_pair.rows:
        run = row.run
        assert (run.clock_mhz, run.load_clock_mhz) == (2100.0, 1207.0)
        assert run.per_cu_tflops_load_clock == pytest.approx(run.per_cu_tflops * 1207 / 2100,
                                                             rel=1e-12)
    lines = format_compare(gemm_pair).splitlines()
    assert lines[2].startswith("  and at 1207 MHz, its clock under dense MFMA load (measured")
    per_cu = lines.index(next(line for line in lines
                              if line.startswith("modeled TFLOPS, per CU x CUs")))
    row = lines[per_cu + 1]
    assert row.startswith("  at 1207 MHz under load")
    assert row.split()[-2:] == [f"{r.run.per_cu_tflops_load_clock:.1f}" for r in gemm_pair.rows]
    report = compare_report(gemm_pair)
    assert report["load_clock_mhz"] == 1207.0
    assert [k["per_cu_tflops_load_clock"] for k in report["kernels"]] == [
        r.run.per_cu_tflops_load_clock for r in gemm_pair.rows]


def test_the_load_clocks_follow_from_their_sources():
    """The products' clocks under load: MI355X's estimate recomputed from its two sources
    (1565.0 TFLOPS measured by mamf-finder over 256 CUs x 4096 flops per clock at 92.39 %
    MFMA efficiency), inside its bounds (1565.0 TFLOPS needs >= 1492 MHz; peak 2400);
    MI350X has none published."""
    from asterism.target import get_target

    gfx950 = get_target("gfx950")
    mi355x = gfx950.product("MI355X")
    assert mi355x.load_clock_mhz == round(1565.0e12 / (256 * 4096 * 0.9239) / 1e6) == 1615
    assert 1565.0e12 / (256 * 4096) / 1e6 < mi355x.load_clock_mhz < 2400
    assert gfx950.product("MI350X").load_clock_mhz == 0
    assert get_target("gfx942").product("MI300X").load_clock_mhz == 1207
