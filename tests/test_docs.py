"""The docs run as written: every command, session and snippet of README.md and docs/*.md.

Each doc runs top to bottom in its own temporary folder holding copies of examples/,
benchmarks/ and tests/upstream/ (and tests/data/ linked read-only), as a newcomer's checkout
would: shell lines through bash with `asterism` = `python -m asterism.cli` and `python` = this
interpreter (PYTHONPATH = this tree's src/), Python snippets as scripts. A ```console block's
output must appear in what the command prints (tests/doc_blocks.py says how). A command is
run as written unless it is in OVERRIDES (run in another form, with the reason) or NOT_RUN
(cannot run here, with the reason); an entry that matches no doc command fails, so neither
table can go stale. Inline `asterism ...` spans that are not complete commands (NAME, FILE,
`...`) are syntax references: their verbs and options must exist.

Figures the docs quote (cycles, TFLOPS, counts) are checked against the command named next
to them (FIGURES), and the pictures in docs/images against the doc command that draws them.
docs/cli.md must equal what tools/gen_cli_doc.py prints now.

Run alone: `pytest -m docs`. Cost: about 95 s of CPU (user + sys) on the 2-core machine, most
of it the full-size figure commands (1024^3 GEMMs, seq-1024 attention: ~5-7 s each, each run
once and shared with the doc commands that name the same command line).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from doc_blocks import REPO, DocItem, all_items, output_matches

pytestmark = pytest.mark.docs

ITEMS = all_items()


# --- what is not run as written, and why ----------------------------------------------------

# (doc, the command as the doc writes it) -> (the command the test runs, why).
OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    ("README.md", "pip install . && asterism run examples/demo/add_10.mlir --grid 4 "
                  "--arg out=zeros:256:i32"):
        ("asterism run examples/demo/add_10.mlir --grid 4 --arg out=zeros:256:i32",
         "the install step changes the environment; the test runs this checkout's tree"),
}

# (doc, the command as the doc writes it) -> why it cannot run in the test suite.
NOT_RUN: dict[tuple[str, str], str] = {
    ("README.md", "pip install -e '.[test]' && pytest"):
        "the whole test suite itself (this test is part of it); .ci/run runs this line "
        "word for word",
    ("README.md", "pip install '.[cluster]'"):
        "installs Ray into the environment (test_pip_extras_exist checks the extra)",
    ("docs/kernels.md", "asterism kernels compare flash_attention_fwd aiter_fmha_fwd --target "
                        "gfx950 --shape 1x8x4096x128 --timing"):
        "a few minutes of emulation (two kernels' 128 workgroups of 4096 keys), too long for "
        "the doc tests: the doc quotes its figures as a record, marked not re-measured",
    ("docs/kernels.md", "asterism kernels run aiter_fmha_fwd --target gfx942 --shape "
                        "1x8x4096x128 --timing"):
        "about 3 minutes of emulation (AITER's 128 workgroups of 4096 keys on gfx942): the "
        "doc quotes its figures as a record of the model at the time",
}

# (doc, command) -> the exit code the doc shows (an error example).
EXIT_CODES: dict[tuple[str, str], int] = {
    ("docs/raise.md", "asterism raise bad.co"): 1,
}

# (doc, command) -> files (relative to the doc's folder) the command must leave behind.
EXPECT_FILES: dict[tuple[str, str], tuple[str, ...]] = {
    # `compile` without -o writes beside the input, as its --help says. NOTE: this needs the
    # compile-output fix of the CLI hardening branch (before it, the file went to the current
    # folder); it fails on a tree without that fix.
    ("docs/upstream_mlir.md", "asterism compile --target gfx950 tests/upstream/fp8_gfx950.mlir"):
        ("tests/upstream/fp8_gfx950.hsaco",),
}


def _key(item: DocItem) -> tuple[str, str]:
    return (item.doc, item.text)


def _strip_comment(cmd: str) -> str:
    """A shell line without its trailing `  # comment` (for matching table keys)."""
    return re.sub(r"\s+#\s.*$", "", cmd).strip()


def _item_key(item: DocItem) -> tuple[str, str]:
    return (item.doc, _strip_comment(item.text))


# --- inline spans: commands or syntax references --------------------------------------------

_PLACEHOLDER = re.compile(r"(\b[A-Z][A-Z0-9_]*\b|\.\.\.|\||\[)")


def _parses(argv: list[str]) -> bool:
    """Whether `asterism ARGV` is a complete command line for the real parser."""
    from asterism.cli.main import build_parser

    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:
            return False
    return getattr(args, "fn", None) is not None  # `asterism trace` alone only prints help


def _inline_is_command(item: DocItem) -> bool:
    """A complete, placeholder-free `asterism ...` or `python FILE ...` span."""
    words = shlex.split(item.text)
    if _PLACEHOLDER.search(" ".join(words[1:])):
        return False
    if words[0] == "python":
        return len(words) > 1 and words[1].endswith(".py")
    if words[0] == "asterism":
        return _parses(words[1:])
    return False


def _runnable(item: DocItem) -> bool:
    if item.kind == "inline":
        return item.text.split()[0] in ("asterism", "python") and _inline_is_command(item)
    return item.kind in ("sh", "console", "python")


RUN_ITEMS = [it for it in ITEMS if _runnable(it)]
REFERENCES = [it for it in ITEMS if it.kind == "inline" and not _runnable(it)]


# --- the doc sessions -----------------------------------------------------------------------


@dataclass
class Session:
    """One doc's folder and what has run in it."""

    root: Path
    env: dict[str, str]
    done: dict[str, str | None]  # item id -> None (ran fine) or the failure


_SESSIONS: dict[str, Session] = {}


def _make_root(root: Path) -> None:
    """A reader's checkout: examples, benchmarks, tests/upstream copied; tests/data linked."""
    for name in ("examples", "benchmarks"):
        shutil.copytree(REPO / name, root / name)
    shutil.copytree(REPO / "tests" / "upstream", root / "tests" / "upstream")
    (root / "tests" / "data").symlink_to(REPO / "tests" / "data")
    (root / "docs" / "images").mkdir(parents=True)


def _env(shims: Path, cache: Path) -> dict[str, str]:
    """PATH with `asterism` and `python` shims, this tree first on PYTHONPATH, a fresh cache
    (the sweep's result cache lives there: a doc sweep runs every point)."""
    return dict(os.environ, PATH=f"{shims}{os.pathsep}{os.environ.get('PATH', '')}",
                PYTHONPATH=str(REPO / "src"), MPLBACKEND="Agg", PYTHONUNBUFFERED="1",
                ASTERISM_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")


@pytest.fixture(scope="session")
def doc_env(tmp_path_factory) -> dict[str, str]:
    """The environment every doc command runs in."""
    shims = tmp_path_factory.mktemp("shims")
    for name, line in (("asterism", f'exec "{sys.executable}" -m asterism.cli "$@"'),
                       ("python", f'exec "{sys.executable}" "$@"')):
        (shims / name).write_text(f"#!/bin/sh\n{line}\n")
        (shims / name).chmod(0o755)
    return _env(shims, tmp_path_factory.mktemp("cache"))


def _session(doc: str, tmp_path_factory, env: dict[str, str]) -> Session:
    if doc not in _SESSIONS:
        root = tmp_path_factory.mktemp(doc.replace("/", "_").replace(".md", ""))
        _make_root(root)
        for it in ITEMS:  # files the doc asks the reader to save
            if it.doc == doc and it.kind == "file":
                (root / it.name).write_text(it.text)
        _SESSIONS[doc] = Session(root, env, {})
    return _SESSIONS[doc]


def _command_of(item: DocItem) -> str | None:
    """The shell command the test runs for an item (None: a Python snippet)."""
    if item.kind == "python":
        return None
    key = _item_key(item)
    if key in OVERRIDES:
        return OVERRIDES[key][0]
    return item.text


def _run_item(item: DocItem, session: Session) -> str | None:
    """Run one item in its doc's folder; None when it did what the doc says."""
    cmd = _command_of(item)
    if cmd is None:
        script = session.root / f"snippet_{item.line}.py"
        script.write_text(item.text)
        argv: list[str] | str = [sys.executable, script.name]
    else:
        argv = ["bash", "-c", cmd]
    proc = subprocess.run(argv, cwd=session.root, env=session.env, capture_output=True,
                          text=True, timeout=600)
    output = proc.stdout + proc.stderr
    if cmd is not None and proc.returncode == 0 and item.kind in ("inline", "sh"):
        _OUTPUTS.setdefault(cmd, output)  # a figure check naming the same command reuses it
    want_rc = EXIT_CODES.get(_item_key(item), 0)
    if proc.returncode != want_rc:
        what = cmd or "the snippet"
        return (f"exit code {proc.returncode} (the doc expects {want_rc}) for: {what}"
                f"\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
    if item.expected is not None:
        missing = output_matches(item.expected, proc.stdout + "\n" + proc.stderr)
        if missing:
            return f"{missing}\n--- the command printed:\n{output[-6000:]}"
    for rel in EXPECT_FILES.get(_item_key(item), ()):
        if not (session.root / rel).is_file():
            return f"{rel} was not written by: {cmd}"
    return None


def _run_up_to(item: DocItem, tmp_path_factory, env) -> str | None:
    """Run the doc's items before `item` (once), then `item`; its failure or None."""
    session = _session(item.doc, tmp_path_factory, env)
    for it in RUN_ITEMS:
        if it.doc != item.doc or it.id in session.done or _item_key(it) in NOT_RUN:
            continue
        session.done[it.id] = _run_item(it, session)
        if it.id == item.id:
            break
    return session.done[item.id]


@pytest.mark.parametrize("item", [it for it in RUN_ITEMS if _item_key(it) not in NOT_RUN],
                         ids=lambda it: it.id)
def test_doc_command_runs_as_written(item, tmp_path_factory, doc_env):
    """The command / session step / snippet does what the doc says, in the doc's order."""
    failure = _run_up_to(item, tmp_path_factory, doc_env)
    assert failure is None, f"{item.id}: {failure}"


def test_every_doc_command_is_run_or_listed_with_a_reason():
    """Each table entry names a command a doc has; every listed command says why."""
    keys = {_item_key(it) for it in ITEMS}
    for table in (OVERRIDES, NOT_RUN, EXIT_CODES, EXPECT_FILES):
        stale = [k for k in table if k not in keys]
        assert not stale, f"entries that match no doc command (edit the table): {stale}"
    assert all(reason for _cmd, reason in OVERRIDES.values())
    assert all(NOT_RUN.values())


def test_pip_extras_exist():
    """Every `pip install '.[EXTRA]'` a doc names is an extra of pyproject.toml."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    named = [(it.id, e) for it in ITEMS if it.text.startswith("pip install")
             for group in re.findall(r"\.\[([\w,]+)\]", it.text) for e in group.split(",")]
    assert named, "the docs name no pip extra any more: update this test"
    assert [n for n in named if n[1] not in extras] == []
    # and from a checkout (asterism is not on an index)
    assert not [it.id for it in ITEMS if re.search(r"pip install '?asterism", it.text)]


@pytest.mark.parametrize("item", REFERENCES, ids=lambda it: f"{it.id}:{it.text[:40]}")
def test_syntax_references_name_real_verbs_and_options(item):
    """`asterism VERB [ACTION] --opt ...` spans: the verb, action and options exist."""
    words = item.text.split()
    if words[0] == "pip":
        assert words[1] == "install"
        return
    if words[0] == "python":
        if words[1] == "-m":
            __import__(words[2])
        else:
            assert (REPO / words[1]).is_file(), f"{item.id}: {words[1]} does not exist"
        return
    from asterism.cli.main import build_parser

    parser = build_parser()
    if len(words) < 2 or _PLACEHOLDER.fullmatch(words[1]):
        return  # `asterism VERB --help`
    sub = _subcommand(parser, words[1].split("|")[0])
    assert sub is not None, f"{item.id}: no verb {words[1]!r}"
    rest = words[2:]
    if rest and _subcommand(sub, rest[0].split("|")[0]) is not None:
        for action in rest[0].split("|"):
            assert _subcommand(sub, action) is not None, f"{item.id}: no action {action!r}"
        sub = _subcommand(sub, rest[0].split("|")[0])
        rest = rest[1:]
    known = {s for a in sub._actions for s in a.option_strings}
    for word in rest:
        opt = word.strip("[]").split("=")[0]
        if opt.startswith("-") and opt != "-":
            assert opt in known, f"{item.id}: {words[1]} has no option {opt}"


def _subcommand(parser, name: str):
    """The parser of sub-command `name`, or None."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    return None


# --- docs/cli.md ----------------------------------------------------------------------------


def test_cli_reference_is_what_the_parsers_say():
    """docs/cli.md is regenerated whenever a verb or option changes."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import gen_cli_doc
    finally:
        sys.path.remove(str(REPO / "tools"))
    want = gen_cli_doc.render()
    have = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert have == want, ("docs/cli.md is stale: run `python tools/gen_cli_doc.py -o "
                          "docs/cli.md`")


def test_cli_reference_covers_every_verb():
    """Every verb has a section in docs/cli.md (and so every option)."""
    from asterism.cli.main import VERB_GROUPS

    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for verbs in VERB_GROUPS.values():
        for verb in verbs:
            assert f"## `asterism {verb}`" in text


# --- pictures -------------------------------------------------------------------------------


def _picture_items() -> dict[str, DocItem]:
    """docs/images/NAME.png -> the doc command that draws it."""
    found: dict[str, DocItem] = {}
    for it in RUN_ITEMS:
        for rel in re.findall(r"docs/images/[\w.-]+\.png", it.text):
            found[rel] = it
    return found


@pytest.mark.parametrize("picture", sorted(p.relative_to(REPO).as_posix()
                                           for p in (REPO / "docs" / "images").glob("*.png")))
def test_pictures_are_what_their_doc_command_draws(picture, tmp_path_factory, doc_env):
    """Each picture in docs/images is drawn by a doc command, and is what it draws now."""
    from matplotlib import image

    item = _picture_items().get(picture)
    assert item is not None, f"no doc command draws {picture}"
    assert _run_up_to(item, tmp_path_factory, doc_env) is None, f"{item.id} failed"
    drawn = image.imread(_SESSIONS[item.doc].root / picture)
    kept = image.imread(REPO / picture)
    assert drawn.shape == kept.shape, (f"{picture} is {kept.shape}, the command draws "
                                       f"{drawn.shape}: regenerate it with {item.id}")
    differ = (abs(drawn - kept).max(axis=-1) > 0.1).mean()
    # Exact on one matplotlib; a little room for another's text anti-aliasing.
    assert differ < 0.005, (f"{differ:.1%} of {picture}'s pixels differ from what {item.id} "
                            "draws now: regenerate it with that command")


# --- figures quoted in prose and tables ------------------------------------------------------

# Commands a figure check runs, with their output (a doc command run as written is reused).
_OUTPUTS: dict[str, str] = {}
FIGURES: list = []


def figure(fn):
    """Register a figure check: fn(run, doc=None) asserts the doc's figures (the doc's text,
    by default the checked-in one) are what run(command) prints."""
    FIGURES.append(fn)
    return fn


def _doc_text(doc: str) -> str:
    """A doc with runs of whitespace as one space (figures may wrap across lines)."""
    return " ".join((REPO / doc).read_text(encoding="utf-8").split())


def _quoted(doc_text: str, fragment: str) -> None:
    fragment = " ".join(fragment.split())
    assert fragment in doc_text, f"the doc should say (what the command prints now): {fragment}"


def _one(pattern: str, text: str) -> tuple[str, ...]:
    m = re.search(pattern, text, re.M)
    assert m, f"the command's output has no {pattern!r}:\n{text[-3000:]}"
    return m.groups()


_KRUN = "asterism kernels run"


def _kernel_figures(out: str) -> dict[str, str]:
    """The figures of `asterism kernels run ... --check --timing`."""
    f = dict(zip(("vgpr", "agpr", "sgpr", "lds"),
                 _one(r"registers: (\d+) VGPR, (\d+) AGPR, (\d+) SGPR; LDS (\d+) bytes", out),
                 strict=True))
    f["insts"] = _one(r"ran in .* s wall, (\d+) wave-instructions", out)[0]
    if "max abs error" in out:
        f["err"], f["atol"] = _one(r"max abs error ([\d.e+-]+),.*atol ([\d.e+-]+)", out)
    if "modeled:" in out:
        f["cycles"] = _one(r"modeled: (\d+) cycles on CU 0", out)[0]
        f["grid"] = _one(r"modeled: ([\d.]+) TFLOPS for the whole grid", out)[0]
        f["percu"], f["pct"], f["peak"] = _one(
            r"modeled: ([\d.]+) TFLOPS if every CU ran as CU 0 does \(([\d.]+%) of peak\); "
            r"peak ([\d.]+) TFLOPS", out)
    return f


@figure
def readme_replay_table(run, doc: str | None = None):
    """README: the replay table (trace replay of the two shared captures)."""
    doc = doc or _doc_text("README.md")
    for capture in ("pa_mqa_logits_fp4_small", "flash_attn_func_small"):
        for memory in ("model", "measured"):
            out = run(f"asterism trace replay tests/data/shared/att/{capture} --memory {memory}")
            meas, mod, err = _one(r"measured (\d+), modeled (\d+) \(([+-]?[\d.]+ %)\)", out)
            both = _one(r"top-10 hotspots by stall: (\d+) of 10 in both", out)[0]
            points = re.findall(r"^\s+\w+\s+[\d.]+ %\s+[\d.]+ %\s+([+-]?[\d.]+)\s*$", out, re.M)
            assert len(points) == 5, out
            worst = max(points, key=lambda p: abs(float(p))).lstrip("+-")
            _quoted(doc, f"| {capture} | {memory} | {int(meas):,} | {int(mod):,} | {err} | "
                         f"{both} | {worst} points")
            if capture == "flash_attn_func_small" and memory == "model":
                flat = _one(r"^\s+FLAT\s+(\d+) / \d+\s+(\d+) / \d+", out)
                _quoted(doc, f"FLAT category is {flat[0]} measured cycles, {flat[1]} modeled")


_GEMM_1024 = ("--shape 1024x1024x1024 --param dtype=bf16 --param tile_m=256 --param tile_n=256")


@figure
def kernels_gemm_speed_table(run, doc: str | None = None):
    """kernels.md: the GEMM modeled-speed table, the fp8 paragraph, the register map."""
    doc = doc or _doc_text("docs/kernels.md")
    rows = {
        "gfx950 `--shape 1024x1024x1024` `dtype=bf16 tile_m=256 tile_n=256 tile_k=64`":
            f"--target gfx950 {_GEMM_1024} --param tile_k=64",
        "same, `c_dtype=bf16`": f"--target gfx950 {_GEMM_1024} --param tile_k=64 "
                                "--param c_dtype=bf16",
        "gfx950 default (256^3 f16, 128x128x32)": "--target gfx950",
        "gfx942 `--shape 1024x1024x1024` `dtype=bf16 tile_m=256 tile_n=256 tile_k=16`":
            f"--target gfx942 {_GEMM_1024} --param tile_k=16",
        "gfx942 default (256^3 f16, 128x128x32)": "--target gfx942",
    }
    for label, options in rows.items():
        f = _kernel_figures(run(f"{_KRUN} gemm {options} --check --timing"))
        _quoted(doc, f"| {label} | {f['cycles']} | {f['percu']} ({f['pct']}) | {f['grid']} | "
                     f"{f['peak']} |")
    big = _kernel_figures(run(f"{_KRUN} gemm --target gfx950 {_GEMM_1024} --param tile_k=64 "
                              "--check --timing"))
    _quoted(doc, f"executes {big['insts']} wave-instructions for the 1024^3 gfx950 build")
    small = "--target gfx950 --param tile_k=64 --shape 512x512x512 --check --timing"
    dma = _kernel_figures(run(f"{_KRUN} gemm {small}"))
    staged = _kernel_figures(run(f"{_KRUN} gemm {small} --param dma=false"))
    _quoted(doc, f"models {dma['cycles']} cycles with the direct-to-LDS loads and "
                 f"{staged['cycles']} with `--param dma=false`")
    default = _kernel_figures(run(f"{_KRUN} gemm --target gfx950 --check --timing"))
    staged = _kernel_figures(run(f"{_KRUN} gemm --target gfx950 --param dma=false"))
    _quoted(doc, f"{default['vgpr']} VGPRs ({staged['vgpr']} with register staging")
    _quoted(doc, f"prints `registers: {default['vgpr']} VGPR, {default['agpr']} AGPR, "
                 f"{default['sgpr']} SGPR`")


def _stats_table(out: str) -> dict[str, list[str]]:
    """`asterism stats A --diff B`: key -> the two columns."""
    table = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) >= 3 and not line.startswith("kernel"):
            table[words[0]] = words[1:3]
    return table


def _stats_one(out: str) -> dict[str, str]:
    """`asterism stats K` (one kernel): the figures the table quotes."""
    f = dict(zip(("insts",), _one(r"code: (\d+) instructions", out), strict=True))
    f["vgpr"], f["agpr"] = _one(r"VGPRs allocated: (\d+) arch \+ (\d+) acc", out)
    f["sgpr"] = _one(r"SGPRs allocated: (\d+)", out)[0]
    f["lds"] = _one(r"LDS (\d+) B", out)[0]
    mix = dict(re.findall(r"(\w+) (\d+)", _one(r"mix: (.*)$", out)[0]))
    f.update({f"mix.{k}": v for k, v in mix.items()})
    f["mfma"] = _one(r"mfma: v_mfma_f32_(\w+?)_\w+ x(\d+)", out)
    return f


@figure
def kernels_stats_table(run, doc: str | None = None):
    """kernels.md: the `asterism stats` table and the default builds' paragraph."""
    doc = doc or _doc_text("docs/kernels.md")
    run(f"asterism kernels build gemm --target gfx942 {_GEMM_1024} --param tile_k=16 "
        "-o g942.hsaco")
    run(f"asterism kernels build gemm --target gfx950 {_GEMM_1024} --param tile_k=64 "
        "-o g950.hsaco")
    t = _stats_table(run("asterism stats g942.hsaco --diff g950.hsaco"))
    a = _stats_one(run("asterism stats tests/data/shared/codeobjects/"
                       "aiter_gfx950_bf16gemm_tn_32x64_bshuffle_splitk.co"))
    mfma = {k: v for k, v in t.items() if k.startswith("v_mfma")}
    shapes = [" / ".join(f"{v[i]} x {k.split('_')[3]}" for k, v in mfma.items() if v[i] != "0")
              for i in (0, 1)]

    def cells(*keys):
        return [" / ".join(t.get(k, ["0", "0"])[i] for k in keys) for i in (0, 1)]

    def aiter(*keys):
        return " / ".join(a.get(k, "0") for k in keys)

    rows = [("instructions", cells("instructions"), a["insts"]),
            ("VGPR / AGPR / SGPR", cells("vgprs", "agprs", "sgprs"), aiter("vgpr", "agpr", "sgpr")),
            ("LDS bytes", cells("lds_bytes"), a["lds"]),
            ("MFMA", shapes, f"{a['mfma'][1]} x {a['mfma'][0]}"),
            ("ds_read / ds_write", cells("mix.ds_read", "mix.ds_write"),
             aiter("mix.ds_read", "mix.ds_write")),
            ("vmem load / load-lds / store",
             cells("mix.vmem_load", "mix.vmem_load_lds", "mix.vmem_store"),
             aiter("mix.vmem_load", "mix.vmem_load_lds", "mix.vmem_store")),
            ("s_waitcnt / s_nop / barrier", cells("mix.s_waitcnt", "mix.s_nop", "mix.barrier"),
             aiter("mix.s_waitcnt", "mix.s_nop", "mix.barrier")),
            ("SALU / VALU", cells("mix.salu", "mix.valu"), aiter("mix.salu", "mix.valu"))]
    for label, (g942, g950), aiter_cell in rows:
        _quoted(doc, f"| {label} | {g942} | {g950} | {aiter_cell} |")
    run("asterism kernels build gemm --target gfx950 -o d950.hsaco")
    run("asterism kernels build gemm --target gfx942 -o d942.hsaco")
    d = _stats_table(run("asterism stats d942.hsaco --diff d950.hsaco"))
    _quoted(doc, f"gfx950 {d['instructions'][1]} instructions (3 tiles per loop iteration), "
                 f"{d['mix.s_waitcnt'][1]} s_waitcnt, {d['mix.ds_write'][1]} ds_write, "
                 f"{d['mix.vmem_load_lds'][1]} loads to LDS, {d['vgprs'][1]} VGPRs; gfx942 "
                 f"{d['instructions'][0]} instructions, {d['mix.s_waitcnt'][0]} s_waitcnt, "
                 f"{d['mix.ds_write'][0]} ds_write, {d['mix.vmem_load'][0]} vmem loads, "
                 f"{d['vgprs'][0]} VGPRs")


_ATT = f"{_KRUN} flash_attention_fwd --target gfx950 --shape 1x2x1024x128 --check --timing"


@figure
def kernels_attention_figures(run, doc: str | None = None):
    """kernels.md: attention registers, the side-by-side table with AITER, accuracy."""
    doc = doc or _doc_text("docs/kernels.md")
    base = _kernel_figures(run(_ATT))
    agpr = _kernel_figures(run(f"{_ATT} --param o_regs=agpr"))
    bn64 = _kernel_figures(run(f"{_ATT} --param block_n=64"))
    _quoted(doc, f"**{base['vgpr']} VGPRs, {base['agpr']} AGPRs, {base['sgpr']} SGPRs**, "
                 f"{base['lds']} bytes of LDS")
    _quoted(doc, f"`o_regs=agpr`: {agpr['vgpr']} VGPRs + {agpr['agpr']} AGPRs.")
    _quoted(doc, f"block_n 64: {bn64['vgpr']} VGPRs + {bn64['agpr']} AGPRs, {bn64['lds']} bytes")
    cmp = run("asterism kernels compare flash_attention_fwd aiter_fmha_fwd --target gfx950 "
              "--shape 1x2x1024x128 --timing -q")
    for row in ("modeled cycles (CU 0)", "modeled TFLOPS, per CU x CUs",
                "modeled TFLOPS, whole grid"):
        ours, theirs = _one(re.escape(row) + r" +(\S+(?: \([\d.]+%\))?) +(\S+(?: \([\d.]+%\))?)$",
                            cmp)
        _quoted(doc, f"| {row} | {ours} | {theirs} |")
    _quoted(doc, f"executes {base['insts']} wave-instructions")
    _quoted(doc, f"| `--target gfx950 --shape 1x2x1024x128` (any `o_regs`, `block_n` 64 or 128) "
                 f"| {base['err']} | {base['atol']} |")
    assert base["err"] == agpr["err"] == bn64["err"]
    for options in ("--target gfx942 --shape 1x1x32x64 --param dtype=bf16 --param waves=1 "
                    "--param block_m=32 --param block_n=32",
                    "--target gfx950 --shape 1x1x96x128 --param causal=true --param waves=1 "
                    "--param block_m=32"):
        f = _kernel_figures(run(f"{_KRUN} flash_attention_fwd {options} --check"))
        _quoted(doc, f"| `{options}` | {f['err']} | {f['atol']} |")
    f16 = "--shape 1x1x100x128 --param seq_k=130 --param dtype=f16 --param causal=true"
    e950 = _kernel_figures(run(f"{_KRUN} flash_attention_fwd --target gfx950 {f16} --check"))
    e942 = _kernel_figures(run(f"{_KRUN} flash_attention_fwd --target gfx942 {f16} --check"))
    assert (e950["err"], e950["atol"]) == (e942["err"], e942["atol"])
    _quoted(doc, f"| `--target gfx950 {f16}` (gfx942: the same) | {e950['err']} | "
                 f"{e950['atol']} |")
    run("asterism kernels build flash_attention_fwd --target gfx942 --shape 1x2x1024x128 "
        "-o fa942.hsaco")
    out = run("asterism stats fa942.hsaco")
    vgprs = _one(r"metadata .vgpr_count (\d+)", out)[0]
    _quoted(doc, f"gfx942 (block_n 64, two stages of 32 KiB, 8 waves): {vgprs} VGPRs")


_ATT942 = ("asterism kernels compare flash_attention_fwd flash_attention_fwd@away "
           "flash_attention_fwd@rtz flash_attention_fwd@noprio flash_attention_fwd@scores "
           "flash_attention_fwd@k3 flash_attention_fwd@b64 flash_attention_fwd@every "
           "flash_attention_fwd@stage1 flash_attention_fwd@start flash_attention_fwd@split "
           "flash_attention_fwd@n32 flash_attention_fwd@rows flash_attention_fwd@noprefetch "
           "flash_attention_fwd@qdirect flash_attention_fwd@odirect flash_attention_fwd@toggle "
           "flash_attention_fwd@top flash_attention_fwd@plain flash_attention_fwd@before "
           "aiter_fmha_fwd --target gfx942 --shape 1x2x512x128 --param "
           "flash_attention_fwd@away.bf16_round=nearest_away --param "
           "flash_attention_fwd@rtz.bf16_round=truncate --param "
           "flash_attention_fwd@noprio.setprio=none --param "
           "flash_attention_fwd@scores.setprio=scores --param flash_attention_fwd@k3.k_ahead=3 "
           "--param flash_attention_fwd@b64.k_read=b64 --param "
           "flash_attention_fwd@every.max_exchange=every_block --param "
           "flash_attention_fwd@stage1.stages=1 --param flash_attention_fwd@start.stages=1 "
           "--param flash_attention_fwd@start.setprio=none --param "
           "flash_attention_fwd@start.k_ahead=2 --param flash_attention_fwd@start.k_read=b64 "
           "--param flash_attention_fwd@split.lds_writes=split --param "
           "flash_attention_fwd@n32.block_n=32 --param flash_attention_fwd@rows.v_layout=rows "
           "--param flash_attention_fwd@noprefetch.prefetch=false --param "
           "flash_attention_fwd@qdirect.q_staging=direct --param "
           "flash_attention_fwd@odirect.o_staging=direct --param "
           "flash_attention_fwd@toggle.stage_offsets=toggle --param "
           "flash_attention_fwd@top.block_barrier=top --param "
           "flash_attention_fwd@plain.lds_layout=plain --param "
           "flash_attention_fwd@before.v_layout=rows --param "
           "flash_attention_fwd@before.prefetch=false --param "
           "flash_attention_fwd@before.q_staging=direct --timing -q")


def _technique_table(doc: str, out: str, labels: list[str]) -> list[str]:
    """Check a per-technique table of `doc` (one `| label | cycles | TFLOPS per CU |` row per
    column of a `kernels compare` output, in order); return the columns' cycles."""
    cycles = _one(r"^modeled cycles \(CU 0\) +(.+)$", out)[0].split()
    per_cu = re.findall(r"([\d.]+) \([\d.]+%\)",
                        _one(r"^modeled TFLOPS, per CU x CUs +(.+)$", out)[0])
    assert len(cycles) == len(per_cu) == len(labels)
    for label, c, t in zip(labels, cycles, per_cu, strict=True):
        _quoted(doc, f"| {label} | {c} | {t} |")
    return cycles


@figure
def kernels_attention_gfx942_techniques(run, doc: str | None = None):
    """kernels.md: the gfx942 per-technique table and the side-by-side sentence."""
    doc = doc or _doc_text("docs/kernels.md")
    labels = ["default (two LDS stages named in the DS offsets, block_n 64, V^T at copy "
              "time, Q and O through LDS, `k_read=b128`, `setprio=s_mfma`, `k_ahead=2`, "
              "the block's barrier in the P V phase before it, `max_exchange=on_rescale`, "
              "round to nearest even)",
              "`bf16_round=nearest_away`", "`bf16_round=truncate` (AITER's rounding)",
              "`setprio=none` (issue by age)", "`setprio=scores`", "`k_ahead=3`",
              "`k_read=b64`", "`max_exchange=every_block`",
              "`stages=1` (one stage of 128-key tiles, writes between two barriers: the "
              "default before)",
              "`stages=1 setprio=none k_ahead=2 k_read=b64` (branch fa942b's starting point)",
              "`lds_writes=split` (one stage)", "`block_n=32` (two stages of 32-key tiles)",
              "`v_layout=rows` (4 `ds_read_u16` per V^T operand)",
              "`prefetch=false` (one stage, loads between the barriers)",
              "`q_staging=direct` (a lane loads its own Q row)",
              "`o_staging=direct` (a lane stores 8 bytes of its own O row: 8 rows a clock)",
              "`stage_offsets=toggle` (the stage flipped by v_xor_b32 after each block)",
              "`block_barrier=top` (the block's barrier before its S MFMAs)",
              "`lds_layout=plain` (no swizzle: K, Q and V^T conflicts)",
              "`v_layout=rows prefetch=false q_staging=direct` (the three copy techniques "
              "off, one stage; the scheduling of the P V phase stays)",
              "`aiter_fmha_fwd` (rtz object)"]
    cycles = _technique_table(doc, run(_ATT942), labels)
    ratio = int(cycles[-1]) / int(cycles[0])
    _quoted(doc, f"ours {cycles[0]} cycles at its default rounding (to nearest even), "
                 f"{cycles[2]} with `bf16_round=truncate`")
    _quoted(doc, f"ratio {ratio:.3f} at the default, "
                 f"{int(cycles[-1]) / int(cycles[2]):.3f} at the same rounding "
                 f"({int(cycles[-1]) / int(cycles[1]):.3f} with `nearest_away`)")


_ATT950 = ("asterism kernels compare flash_attention_fwd flash_attention_fwd@noprio "
           "flash_attention_fwd@group flash_attention_fwd@noexp flash_attention_fwd@nomax "
           "flash_attention_fwd@v4 flash_attention_fwd@k3 flash_attention_fwd@before "
           "aiter_fmha_fwd --target gfx950 --shape 1x2x1024x128 --param "
           "flash_attention_fwd@noprio.setprio=none --param "
           "flash_attention_fwd@group.setprio=group --param "
           "flash_attention_fwd@noexp.exp_under_pv=off --param "
           "flash_attention_fwd@nomax.max_under_s=off --param "
           "flash_attention_fwd@v4.v_ahead=4 --param flash_attention_fwd@k3.k_ahead=3 --param "
           "flash_attention_fwd@before.exp_under_pv=off --param "
           "flash_attention_fwd@before.max_under_s=off --param "
           "flash_attention_fwd@before.setprio=none --param "
           "flash_attention_fwd@before.v_ahead=4 --param flash_attention_fwd@before.k_ahead=2 "
           "--timing -q")


@figure
def kernels_attention_gfx950_placement(run, doc: str | None = None):
    """kernels.md: the gfx950 softmax placement and s_setprio table (issue 24)."""
    doc = doc or _doc_text("docs/kernels.md")
    labels = ["default (`exp_under_pv`, `max_under_s`, `setprio=stage`, `v_ahead=2`, "
              "`k_ahead=4`, unpacked f32 math)",
              "`setprio=none`", "`setprio=group` (AITER's placement: waves 4-7 priority 1)",
              "`exp_under_pv=off` (all exps before the P V MFMAs)",
              "`max_under_s=off` (the whole max after the S MFMAs)", "`v_ahead=4`",
              "`k_ahead=3`",
              "`exp_under_pv=off max_under_s=off setprio=none v_ahead=4 k_ahead=2` (the kernel "
              "before)",
              "`aiter_fmha_fwd`"]
    _technique_table(doc, run(_ATT950), labels)


@pytest.fixture(scope="session")
def run_figure_command(tmp_path_factory, doc_env):
    """run(command) -> its output, run once in a reader's folder."""
    root = tmp_path_factory.mktemp("figures")
    _make_root(root)

    def run(command: str) -> str:
        if command not in _OUTPUTS:
            proc = subprocess.run(["bash", "-c", command], cwd=root, env=doc_env, text=True,
                                  capture_output=True, timeout=600)
            assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
            _OUTPUTS[command] = proc.stdout + proc.stderr
        return _OUTPUTS[command]

    return run


@pytest.mark.parametrize("check", FIGURES, ids=lambda fn: fn.__name__)
def test_quoted_figures_are_what_their_commands_print(check, run_figure_command):
    """Each figure a doc quotes is what the command it names prints now."""
    check(run_figure_command)
