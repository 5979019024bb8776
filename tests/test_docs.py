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

Run alone: `pytest -m docs`; the whole file takes about a minute on 2 cores.
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
    ("docs/kernels.md", "python benchmarks/bench_attention.py"):
        "a benchmark (wall times of several timing-model runs, ~1 min): benchmarks are never "
        "part of the test run",
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
