"""Property tests for the metadata readers: mutated metadata either reads or is refused with
an AsterismError, through every verb that reads code objects (raise + compile, stats,
disasm, disasm --reassemblable + asm) and assembly metadata (asm, raise, hazards' reader).

Seeds: the shipped AITER code objects (tests/data/shared/codeobjects) and the compiled demo
(examples/demo/add_10.mlir), whose metadata notes are mutated (type swaps, huge numbers,
deep nesting, unknown keys, long strings, removed keys) and re-packed into a valid ELF by
the writer, so the mutation reaches the metadata reader and not the ELF checks; and the
demo's and a 16-byte spaced kernel's assembly, whose `.amdgpu_metadata` block is mutated the
same way (plus integer literals of thousands of digits and deep YAML nesting).

Derandomized by default (CI sees the same inputs every run); ASTERISM_FUZZ_EXAMPLES=N runs a
campaign of N inputs per test with new ones. ASTERISM_FUZZ_STATS=FILE appends one line per
input (test, seconds, peak RSS, outcome) for a campaign's report.
"""

from __future__ import annotations

import copy
import json
import os
import resource
import time
from functools import cache
from pathlib import Path
from typing import Any

import msgpack
import pytest
from codeobject_crafting import SPACED_ASM, with_metadata, with_metadata_note
from hypothesis import assume, given
from hypothesis import strategies as st
from test_fuzz_inputs import fuzz_settings

from asterism import api
from asterism.errors import AsterismError, ParseError
from asterism.ir import parse_ir, print_ir, raise_module
from asterism.ir.raising import raise_file
from asterism.mc import yaml_subset
from asterism.mc.codeobject import read_code_object
from asterism.mc.lossless import reassemblable_text
from asterism.mc.parser import parse_asm
from asterism.profile.stats import code_object_stats

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "examples" / "demo" / "add_10.mlir"
SHIPPED = sorted((REPO / "tests" / "data" / "shared" / "codeobjects").glob("*.co"))


@cache
def _objects() -> tuple[tuple[str, bytes], ...]:
    """(name, bytes) of the seeds: the compiled demo first (fast), then the shipped ones."""
    return (("demo", api.compile(DEMO)),) + tuple((p.name, p.read_bytes()) for p in SHIPPED)


@cache
def _asm_seeds() -> tuple[tuple[str, str], ...]:
    return (("demo", api.translate(DEMO)), ("spaced", SPACED_ASM.format(version=5, minor=2)))


# ----------------------------------------------------------------------- mutations

SCALARS = st.one_of(
    st.integers(-(1 << 63), (1 << 64) - 1), st.booleans(), st.none(),
    st.floats(allow_nan=False), st.text(max_size=12),
    st.sampled_from([0, 1, -1, 3, 8, 1023, 1024, 1025, 65535, 65536, 65537, (1 << 31) - 1,
                     1 << 31, (1 << 32) - 1, 1 << 32, (1 << 63) - 1, (1 << 64) - 1,
                     "read_only", "global_buffer", "hidden_block_count_x", "by_value", ""]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6)
KEYS = st.one_of(st.sampled_from([".offset", ".size", ".access", ".value_kind", ".name",
                                  ".args", ".kernarg_segment_size", "amdhsa.kernels",
                                  ".reqd_workgroup_size", ".max_flat_workgroup_size",
                                  ".wavefront_size", ".vendor"]), st.text(max_size=10))


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every node of a metadata tree, by its path of keys and indices."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for n, v in enumerate(value):
            out += _paths(v, (*path, n))
    return out


def _nest(value: Any, depth: int, in_maps: bool) -> Any:
    for _ in range(depth):
        value = {"k": value} if in_maps else [value]
    return value


@st.composite
def mutations(draw) -> tuple[str, tuple, Any]:
    """(kind, which node (an index into the tree's paths, modulo), new value or key)."""
    kind = draw(st.sampled_from(["swap", "huge", "deep", "unknown", "long", "delete"]))
    where = draw(st.integers(0, 10_000))
    if kind == "swap":
        return kind, where, draw(VALUES)
    if kind == "huge":
        return kind, where, draw(st.one_of(
            st.integers(-(1 << 63), (1 << 64) - 1),
            st.sampled_from([(1 << 64) - 1, 1 << 32, -(1 << 63), 1 << 40])))
    if kind == "deep":
        return kind, where, (draw(st.integers(1, 200)), draw(st.booleans()))
    if kind == "unknown":
        return kind, where, (draw(KEYS), draw(VALUES))
    if kind == "long":
        return kind, where, "x" * draw(st.sampled_from([100, 5000, 65536, 65537, 200_000]))
    return kind, where, None


def mutate(meta: dict[str, Any], mutation: tuple[str, int, Any]) -> dict[str, Any]:
    """A deep copy of `meta` with one mutation applied."""
    meta = copy.deepcopy(meta)
    kind, where, arg = mutation
    paths = _paths(meta)
    path = paths[where % len(paths)]
    parent = meta
    for part in path[:-1]:
        parent = parent[part]
    old = parent[path[-1]] if path else meta
    if kind == "unknown":
        key, value = arg
        target = old if isinstance(old, dict) else parent
        if isinstance(target, dict):
            target[key] = value
        return meta
    if not path:
        return meta  # (the root stays a map: the note reader checks that before the schema)
    if kind == "delete":
        del parent[path[-1]]
    elif kind == "deep":
        parent[path[-1]] = _nest(old, *arg)
    else:
        parent[path[-1]] = arg
    return meta


# ----------------------------------------------------------------------- what each input runs

def _attempt(step) -> str:
    """Run one verb: "ok" or "refused" (an AsterismError); anything else propagates."""
    try:
        step()
    except AsterismError:
        return "refused"
    return "ok"


def _exercise_code_object(data: bytes) -> str:
    """Every verb that reads a code object; the outcome of the reader."""
    try:
        read_code_object(data)
    except AsterismError:
        return "refused"
    _attempt(lambda: api.compile(parse_ir(print_ir(raise_file(data)))))
    _attempt(lambda: code_object_stats(data))
    _attempt(lambda: api.disassembly_listing(data))
    _attempt(lambda: api.assemble(reassemblable_text(data)))
    return "read"


def _exercise_asm(text: str) -> str:
    """The assembler, raise and the reader `hazards` uses, on one assembly text."""
    outcome = _attempt(lambda: api.assemble(text))
    _attempt(lambda: raise_file(text.encode()))
    _attempt(lambda: raise_module(parse_asm(text)))
    return outcome


def _measured(test: str, run) -> str:
    """`run()`, with its time and the process's peak RSS (and how much this input raised
    it) appended to ASTERISM_FUZZ_STATS."""
    stats = os.environ.get("ASTERISM_FUZZ_STATS")
    if not stats:
        return run()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    outcome = "raised"
    try:
        outcome = run()
    finally:
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # (KiB on Linux)
        with open(stats, "a") as f:
            f.write(json.dumps({"test": test, "seconds": round(seconds, 3), "peak_kib": peak,
                                "grew_kib": peak - before, "outcome": outcome}) + "\n")
    return outcome


# ----------------------------------------------------------------------- the properties

@fuzz_settings(12)
@given(seed=st.integers(0, 100), mutation=mutations())
def test_mutated_metadata_notes_are_read_or_refused(seed, mutation) -> None:
    """A mutated metadata note: every verb either works or says what is wrong."""
    objects = _objects()
    # (the demo, fast, half of the time; a shipped AITER object the other half)
    name, data = objects[0] if seed % 2 else objects[1 + seed % (len(objects) - 1)]
    meta = mutate(read_code_object(data).metadata, mutation)
    try:
        crafted = with_metadata(data, meta)
    except AsterismError:
        assume(False)  # (the mutation is not MessagePack: a deep nest past its packer)
    _measured("note", lambda: _exercise_code_object(crafted))


@fuzz_settings(8)
@given(levels=st.integers(20, 1200), seed=st.integers(0, 100))
def test_deeply_nested_notes_are_refused(levels, seed) -> None:
    """Nesting past the packer's limit, written as raw MessagePack."""
    objects = _objects()
    data = objects[seed % len(objects)][1]
    head = msgpack.packb({"amdhsa.version": [1, 0], "amdhsa.kernels": []})
    deep = b"\x83" + head[1:] + msgpack.packb("x") + b"\x91" * levels + b"\x00"
    crafted = with_metadata_note(data, deep)
    outcome = _measured("deep note", lambda: _exercise_code_object(crafted))
    assert outcome == ("read" if levels < 32 else "refused")


def _splice(text: str, meta_text: str) -> str:
    """`text` with its `.amdgpu_metadata` block's YAML replaced by `meta_text`."""
    start = text.index(".amdgpu_metadata") + len(".amdgpu_metadata")
    end = text.index(".end_amdgpu_metadata")
    return text[:start] + "\n---\n" + meta_text + "...\n" + text[end:]


def _yaml_metadata(text: str) -> dict[str, Any]:
    start = text.index(".amdgpu_metadata") + len(".amdgpu_metadata")
    return yaml_subset.load(text[start:text.index(".end_amdgpu_metadata")])


@fuzz_settings(12)
@given(seed=st.integers(0, 100), mutation=mutations(),
       literal=st.one_of(st.none(), st.integers(20, 6000)))
def test_mutated_asm_metadata_is_read_or_refused(seed, mutation, literal) -> None:
    """A mutated `.amdgpu_metadata` block (written back as YAML; or with an integer literal
    of `literal` digits): assembling, raising and the hazards reader work or say why."""
    name, text = _asm_seeds()[seed % len(_asm_seeds())]
    meta = mutate(_yaml_metadata(text), mutation)
    body = yaml_subset.dump(meta)
    if literal is not None:
        body = body.replace(".size:", ".size: " + "7" * literal + " #", 1)
    _measured("asm", lambda: _exercise_asm(_splice(text, body)))


@fuzz_settings(6)
@given(levels=st.integers(1, 3000), indent=st.integers(1, 3))
def test_deep_yaml_is_refused(levels, indent) -> None:
    """YAML nesting thousands deep: a ParseError (from the YAML reader past its depth, from
    the metadata schema past 32 levels), never a RecursionError."""
    from asterism.mc.codeobject.schema import MAX_DEPTH

    name, text = _asm_seeds()[0]
    deep = "".join(" " * (indent * n) + f"k{n}:\n" for n in range(levels)) + \
        " " * (indent * levels) + "leaf: 1\n"
    body = yaml_subset.dump(_yaml_metadata(text)) + "deep:\n" + \
        "".join(" " * indent + line + "\n" for line in deep.splitlines())
    spliced = _splice(text, body)
    outcome = _measured("deep yaml", lambda: _exercise_asm(spliced))
    assert outcome == ("ok" if levels + 2 <= MAX_DEPTH else "refused")
    if levels + 2 > MAX_DEPTH:
        with pytest.raises(ParseError, match="nested more than"):
            api.assemble(spliced)
