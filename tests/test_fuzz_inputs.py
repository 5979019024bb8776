"""Bad-input fuzzing of every reader, through the Python API and the CLI.

Inputs are mutations of real files (the lit inputs, the demo kernel, the shared code objects
and ATT capture), truncations and random bytes. Whatever the input, only `AsterismError`
may escape the API; the CLI (`asterism.cli.main`, in process) returns 0 or 1, says
`error:` without a traceback, and leaves no output file behind when it fails.

The default run is small (CI, about 30 s); ASTERISM_FUZZ_EXAMPLES=N runs N inputs per test
for a campaign (300 to 2000 per test were run when this file was written).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asterism import api
from asterism.cli import main as cli_main
from asterism.errors import AsterismError, ParseError

REPO = Path(__file__).resolve().parent.parent
LIT = REPO / "tests" / "lit"
DEMO = REPO / "examples" / "demo" / "add_10.mlir"
SHARED = REPO / "tests" / "data" / "shared"
CAPTURE = SHARED / "att" / "pa_mqa_logits_fp4_small"


def _examples(default: int) -> int:
    """Inputs per test: small by default, ASTERISM_FUZZ_EXAMPLES for a campaign."""
    return int(os.environ.get("ASTERISM_FUZZ_EXAMPLES", default))


def fuzz_settings(default: int):
    """Bounded hypothesis settings (no deadline: the first example pays for imports). The
    default run is derandomized, so CI sees the same inputs every time; a campaign
    (ASTERISM_FUZZ_EXAMPLES or ASTERISM_FUZZ_RANDOM=1) draws new ones."""
    random_run = "ASTERISM_FUZZ_EXAMPLES" in os.environ or bool(
        os.environ.get("ASTERISM_FUZZ_RANDOM"))
    return settings(max_examples=_examples(default), deadline=None,
                    derandomize=not random_run,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- seeds


def _ir_seeds() -> list[str]:
    return [DEMO.read_text()] + [p.read_text() for p in sorted(LIT.glob("*.mlir"))]


def _asm_seeds() -> list[str]:
    """Assembly written by the translator from the IR seeds that translate as they are."""
    out = []
    for text in _ir_seeds():
        try:
            out.append(api.translate(text))
        except AsterismError:
            continue
    return out


def _code_object_seeds() -> list[bytes]:
    objs = [p.read_bytes() for p in sorted((SHARED / "codeobjects").glob("*.co"))]
    return objs + [api.compile(DEMO.read_text())]


IR_SEEDS = _ir_seeds()
ASM_SEEDS = _asm_seeds()
CO_SEEDS = _code_object_seeds()
CAPTURE_FILES = sorted(p.name for p in CAPTURE.glob("*.json"))
PIPELINE_SEEDS = ["", "auto", "inline", "copy-prop,dce", "inline,regalloc,waits,hazards",
                  "regalloc{report=1}", "regalloc{max-vgprs=2}", "hazards{check-only=1}",
                  "regalloc{reserve=v0-v1,max-vgprs=4}", "schedule", "builtin.module(dce)"]
ARG_SEEDS = ["zeros:256", "zeros:256:i32", "ones:64x4:f32", "arange:256:i32", "rand:1024:f16",
             "full:16:f32:1.5", "full:4:i32:7", "42", "0x10", "1.5", "-3", "rand:8:u8"]
# Pieces that steer mutations towards the corners of each grammar.
IR_TOKENS = ['"', "{", "}", "(", ")", "[", "]", "<", ">", "%", "^", "@", "!", "#", ":", ",",
             "=", ".", "...", "->", "\n", "//", "\\", "0", "-1", "300", "0x", "[250:260]",
             "^loop", "^loop:", "!amdgcn.vgpr<", "!amdgcn.sgpr<[", "amdgcn.", "%v", "\x00", "é"]
ASM_TOKENS = [",", "[", "]", ":", "(", ")", "\n", ";", "//", "\"", "s[", "v[", "a[", "0x",
              "-", "lit(", "off", "offset:", "0xffffffffffffffff", ".amdhsa_", ".end_amdhsa_kernel",
              "---", "...", "\t", "1e400", "vcc", "sel:", "BYTE_0", "\\", "\x00", "é"]
SPEC_TOKENS = [":", "x", ",", "=", "{", "}", "-", "0", "1e400", "nan", "inf", "0x", "f16", "bf16",
               "i64", "S5", "O", "V8", ".npy", "full", "rand", "zeros", "999", " ", "\x00", "é"]


# ----------------------------------------------------------------------------- strategies


_WORD_RE = re.compile(r"[A-Za-z_][\w.$-]*")
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+")
NUMBERS = ["0", "1", "-1", "2", "3", "4", "7", "63", "64", "101", "102", "255", "256", "511",
           "512", "1024", "4095", "4096", "65535", "65536", "2147483647", "-2147483648",
           "4294967295", "4294967296", "18446744073709551616", "99999999999999999999"]


def _replace_word(draw, text: str, kind: str) -> str:
    """`text` with one word (or number) replaced by another word of it (or a corner value)."""
    pattern = _WORD_RE if kind == "word" else _NUMBER_RE
    spans = [m.span() for m in pattern.finditer(text)]
    if not spans:
        return text
    i, j = draw(st.sampled_from(spans))
    if kind == "word":
        new = draw(st.sampled_from(sorted({text[a:b] for a, b in spans})))
    else:
        new = draw(st.sampled_from(NUMBERS))
    return text[:i] + new + text[j:]


@st.composite
def mutated_text(draw, seeds: list[str], tokens: list[str]) -> str:
    """A seed text after 1-4 edits: delete, insert a token or random text, duplicate a
    slice, swap two characters, truncate."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 64)))
        kind = draw(st.sampled_from(["delete", "token", "text", "dup", "swap", "truncate",
                                     "word", "word", "number", "number"]))
        if kind in ("word", "number"):
            # Swap a whole word or number: the text stays well-formed more often, so the
            # input gets past the parser to the verifier, the passes and the encoder.
            text = _replace_word(draw, text, kind)
        elif kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "token":
            text = text[:i] + draw(st.sampled_from(tokens)) + text[i:]
        elif kind == "text":
            text = text[:i] + draw(st.text(max_size=8)) + text[j:]
        elif kind == "dup":
            text = text[:j] + text[i:j] * draw(st.integers(1, 3)) + text[j:]
        elif kind == "swap" and j > i:
            text = text[:i] + text[j - 1] + text[i + 1:j - 1] + text[i] + text[j:]
        elif kind == "truncate":
            text = text[:i]
    return text


@st.composite
def mutated_bytes(draw, seeds: list[bytes]) -> bytes:
    """A seed blob after 1-6 edits: flipped/overwritten bytes (often in the ELF header and
    tables), deleted or duplicated slices, a truncation, 32-bit fields set to extremes."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 6))):
        n = len(data)
        # Half the edits hit the first 512 bytes, where the headers and tables are.
        hi = min(n, 512) if draw(st.booleans()) else n
        i = draw(st.integers(0, max(0, hi - 1)))
        kind = draw(st.sampled_from(["byte", "word", "delete", "dup", "truncate"]))
        if kind == "byte" and n:
            data[i] = draw(st.integers(0, 255))
        elif kind == "word" and i + 4 <= n:
            word = draw(st.sampled_from([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]))
            data[i:i + 4] = word.to_bytes(4, "little")
        elif kind == "delete":
            del data[i:i + draw(st.integers(1, 64))]
        elif kind == "dup":
            data[i:i] = data[i:i + draw(st.integers(1, 64))]
        elif kind == "truncate":
            del data[i:]
    return bytes(data)


def _expect_clean(fn, *args, **kwargs):
    """Call `fn`; only AsterismError may escape. Returns the error or None."""
    try:
        fn(*args, **kwargs)
    except AsterismError as err:
        assert str(err), "an error without a message"
        return err
    return None


def _run_cli(argv: list[str], capsys, output: Path | None = None) -> int:
    """Run the CLI in process: exit 0 or 1, no traceback, no output file after a failure."""
    if output is not None and output.exists():
        output.unlink()
    rc = cli_main(argv)
    err = capsys.readouterr().err
    assert rc in (0, 1), (rc, err)
    assert "Traceback" not in err
    if rc == 1:
        assert "error:" in err, err
        if output is not None:
            assert not output.exists(), f"partial output {output} after: {err}"
    return rc


# ----------------------------------------------------------------------------- IR text


def _ir_through_api(text: str) -> None:
    err = _expect_clean(api.parse, text)
    if isinstance(err, ParseError):
        assert err.location is not None, f"parse error without a location: {err}"
    if err is None:
        for pipeline in ("", "auto"):
            _expect_clean(api.compile, text, pipeline)


@fuzz_settings(40)
@given(mutated_text(IR_SEEDS, IR_TOKENS))
def test_ir_mutations_api(text):
    _ir_through_api(text)


@fuzz_settings(30)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_ir_random_api(data):
    _ir_through_api(data)


@fuzz_settings(15)
@given(mutated_text(IR_SEEDS, IR_TOKENS))
def test_ir_mutations_cli(tmp_path, capsys, text):
    src, out = tmp_path / "k.mlir", tmp_path / "k.hsaco"
    src.write_text(text, encoding="utf-8", errors="surrogateescape")
    _run_cli(["compile", str(src), "-o", str(out)], capsys, out)
    _run_cli(["translate", str(src), "-o", str(tmp_path / "k.s")], capsys, tmp_path / "k.s")


# ----------------------------------------------------------------------------- assembly


def _asm_through_api(text: str) -> None:
    _expect_clean(api.assemble, text)
    _expect_clean(api.assemble, text, "gfx950")


@fuzz_settings(60)
@given(mutated_text(ASM_SEEDS, ASM_TOKENS))
def test_asm_mutations_api(text):
    _asm_through_api(text)


@fuzz_settings(25)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_asm_random_api(data):
    _asm_through_api(data)


@fuzz_settings(25)
@given(mutated_text(ASM_SEEDS, ASM_TOKENS))
def test_asm_mutations_cli(tmp_path, capsys, text):
    src, out = tmp_path / "k.s", tmp_path / "k.hsaco"
    src.write_text(text, encoding="utf-8", errors="surrogateescape")
    _run_cli(["asm", str(src), "-o", str(out)], capsys, out)


# ----------------------------------------------------------------------------- pipelines


@fuzz_settings(60)
@given(mutated_text(PIPELINE_SEEDS, IR_TOKENS + ["{", "}", "=", ",", "regalloc", "max-vgprs"]),
       st.sampled_from(["passes_regalloc.mlir", "passes_inline.mlir", "passes_hazards.mlir"]))
def test_pipeline_mutations_api(pipeline, seed):
    _expect_clean(api.optimize, (LIT / seed).read_text(), pipeline)


@fuzz_settings(15)
@given(mutated_text(PIPELINE_SEEDS, ["{", "}", "=", ",", "regalloc", "max-vgprs"]))
def test_pipeline_mutations_cli(tmp_path, capsys, pipeline):
    out = tmp_path / "o.mlir"
    # `--pipeline=...`: a value starting with '-' must not read as an option.
    _run_cli(["opt", str(LIT / "passes_regalloc.mlir"), f"--pipeline={pipeline}",
              "-o", str(out)], capsys, out)


# ----------------------------------------------------------------------------- --arg specs


def _spec_is_small(spec: str) -> bool:
    """Keep array sizes small: the fuzzer must not allocate gigabytes on a shared machine."""
    digits = "".join(c if c.isdigit() else " " for c in spec).split()
    return all(len(d) <= 6 for d in digits) or not any(
        spec.startswith(m) for m in ("zeros", "ones", "arange", "rand", "full"))


@fuzz_settings(80)
@given(mutated_text(ARG_SEEDS, SPEC_TOKENS),
       st.sampled_from([None, {".name": "out", ".type_name": "int*"},
                        {".name": "x", ".type_name": "half"}, {".name": "y"}]))
def test_arg_spec_mutations_api(spec, param):
    from asterism.runtime.argspec import make_arg

    if _spec_is_small(spec):
        _expect_clean(make_arg, spec, param, 0)


@fuzz_settings(10)
@given(mutated_text(ARG_SEEDS, SPEC_TOKENS))
def test_arg_spec_mutations_cli(capsys, spec):
    if _spec_is_small(spec):
        _run_cli(["run", str(DEMO), "--backend", "emu", f"--arg=out={spec}"], capsys)


# ----------------------------------------------------------------------------- code objects


def _code_object_through_api(data: bytes) -> None:
    _expect_clean(api.disassembly_listing, data)
    _expect_clean(api.disassemble, data)


@fuzz_settings(60)
@given(mutated_bytes(CO_SEEDS))
def test_code_object_mutations_api(data):
    _code_object_through_api(data)


@fuzz_settings(20)
@given(st.binary(max_size=512))
def test_code_object_random_api(data):
    _code_object_through_api(data)


@fuzz_settings(25)
@given(mutated_bytes(CO_SEEDS), st.sampled_from([["disasm"], ["disasm", "--json"], ["stats"]]))
def test_code_object_mutations_cli(tmp_path, capsys, data, verb):
    src, out = tmp_path / "k.co", tmp_path / "k.txt"
    src.write_bytes(data)
    _run_cli(verb + [str(src), "-o", str(out)], capsys, out)


# ----------------------------------------------------------------------------- ATT captures


@pytest.fixture(scope="module")
def capture_copy(tmp_path_factory):
    """A private copy of the shared capture that the tests may damage (and restore)."""
    path = tmp_path_factory.mktemp("att") / CAPTURE.name
    shutil.copytree(CAPTURE, path)
    return path


@st.composite
def damaged_capture_file(draw):
    """(file name, new bytes or None to delete it) for one file of the capture."""
    name = draw(st.sampled_from(CAPTURE_FILES))
    if draw(st.integers(0, 9)) == 0:
        return name, None
    text = (CAPTURE / name).read_text()
    if draw(st.booleans()):
        return name, _json_value_swapped(draw, text).encode()
    tokens = ['"', "{", "}", "[", "]", ",", ":", "null", "-1", "1e400", "0", "[]", "{}",
              "true", '"x"', "NaN", "99999999999999999999"]
    return name, draw(mutated_text([text], tokens)).encode("utf-8", "surrogatepass")


JSON_VALUES = [None, True, -1, 0, 1, 2**31, 2**64, 1.5, 1e308, "", "x", [], {}, [0], {"a": 1}]


def _json_paths(value, path=(), out=None, limit=4000):
    """Paths (tuples of keys/indexes) to the values inside a JSON document, up to `limit`."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    out.append(path)
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        _json_paths(item, path + (key,), out, limit)
    return out


def _json_value_swapped(draw, text: str) -> str:
    """The JSON document with one value (at any depth) replaced by one of another kind: the
    file stays valid JSON, so the reader's checks of each field are what is exercised."""
    import json

    doc = json.loads(text)
    path = draw(st.sampled_from(_json_paths(doc)))
    new = draw(st.sampled_from(JSON_VALUES))
    if not path:
        return json.dumps(new)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return json.dumps(doc)


def _with_damage(folder: Path, damage, fn):
    name, data = damage
    target = folder / name
    original = target.read_bytes()
    try:
        if data is None:
            target.unlink()
        else:
            target.write_bytes(data)
        return fn()
    finally:
        target.write_bytes(original)


@fuzz_settings(20)
@given(damaged_capture_file())
def test_att_mutations_api(capture_copy, damage):
    from asterism.profile import trace_report

    def read():
        _expect_clean(trace_report, capture_copy)
        _expect_clean(trace_report, capture_copy, as_json=True)

    _with_damage(capture_copy, damage, read)


@fuzz_settings(8)
@given(damaged_capture_file())
def test_att_mutations_cli(capture_copy, tmp_path, capsys, damage):
    out = tmp_path / "report.md"
    _with_damage(capture_copy, damage, lambda: _run_cli(
        ["trace", "report", str(capture_copy), "-o", str(out)], capsys, out))


# ----------------------------------------------------------------------------- regressions
# Each input below escaped (or hung) before its fix; they stay as plain tests.

UNTERMINATED = 'amdgcn.module @m target = "gf  amdgcn.kernel @k args() {\n}\n'


def _parse_error(text) -> ParseError:
    with pytest.raises(ParseError) as info:
        api.parse(text)
    return info.value


def test_unterminated_string_is_a_prompt_error():
    # xDSL's string pattern backtracked exponentially here (18 s for this line, a 400-byte
    # variant over 60 s, 1 MB never ends); the linear lexer fails in one scan.
    err = _parse_error(UNTERMINATED)
    assert (err.location.line, err.location.col) == (1, 27)
    assert "closing string literal" in err.message
    big = 'amdgcn.module @m target = "' + "gf  amdgcn.kernel @k args() {" * 36_000 + "\n}\n"
    assert len(big) > 1_000_000
    err = _parse_error(big)
    assert (err.location.line, err.location.col) == (1, 27)


def test_escapes_still_lexed_by_the_linear_lexer():
    text = DEMO.read_text().replace('target = "gfx942"', 'target = "gfx\\39\\342"')
    module = api.parse(text)  # \39 \34 are hex escapes: "gfx942"
    assert 'target = "gfx942"' in __import__("asterism.ir", fromlist=["x"]).print_ir(module)


@pytest.mark.parametrize("text, line, col, words", [
    (".x", 1, 1, "three consecutive '.'"),              # xDSL's ParseError escaped
    ("amdgcn.module @m target = \"gfx942\" {\n}\n.", 3, 1, "three consecutive '.'"),
    ("", 1, 1, "got the end of the input"),
    ("^loop:\n", 1, 1, "got '^loop:'"),
    ("builtin.module {" * 5000, 1, None, "nesting too deep"),   # RecursionError
])
def test_foreign_parser_errors_become_parse_errors(text, line, col, words):
    err = _parse_error(text)
    assert err.location.line == line and (col is None or err.location.col == col)
    assert words in err.message


def test_truncated_region_names_what_is_missing():
    # printf ate `%v` in the issue's reproducer and left this; xDSL said "error:  in block
    # definition" (an empty message).
    text = 'amdgcn.module @m target = "gfx942" {\n  amdgcn.kernel @k args() {\n    '
    err = _parse_error(text)
    assert "end of file inside the region opened at 2:27" in err.message
    err = _parse_error(text + "]\n  }\n}\n")
    assert (err.location.line, err.location.col) == (3, 5)
    assert "expected an operation, a block label (^name:) or '}', got ']'" in err.message


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
@pytest.mark.parametrize("reg, shown, last", [
    ("vgpr<300>", "v300", "VGPR (v255)"), ("vgpr<[250:260]>", "v[250:259]", "VGPR (v255)"),
    ("agpr<256>", "a256", "AGPR (a255)"), ("agpr<[254:258]>", "a[254:257]", "AGPR (a255)"),
    ("sgpr<102>", "s102", "SGPR (s101)"), ("sgpr<[100:104]>", "s[100:103]", "SGPR (s101)"),
])
def test_register_past_the_file_names_register_range_and_place(target, reg, shown, last):
    from asterism.errors import VerifyError

    text = (f'amdgcn.module @m target = "{target}" {{\n  amdgcn.kernel @k args() {{\n'
            f"    %v = amdgcn.alloca : !amdgcn.{reg}\n    amdgcn.sopp s_endpgm\n  }}\n}}\n")
    with pytest.raises(VerifyError) as info:
        api.parse(text)
    assert (info.value.location.line, info.value.location.col) == (3, 5)
    assert f"{shown} is past the last {last} of {target}" in info.value.message


def test_ir_bytes_and_paths_that_are_not_text():
    err = _parse_error(b"amdgcn.module @m {\n \xff}")
    assert (err.location.line, err.location.col) == (2, 2) and "0xff" in err.message
    with pytest.raises(AsterismError):
        api.parse(b"\xff")
    err = _parse_error("/")  # an existing path that is a directory: text, not a file
    assert err.location is not None


def test_asm_metadata_fields_of_the_wrong_kind():
    asm = api.translate(DEMO.read_text())
    bad = asm.replace(".size:          8", ".size:          .value_kind: x", 1)
    assert bad != asm
    with pytest.raises(ParseError, match=r"amdhsa.kernels\[0\].args\[0\].size: must be an "
                                         r"integer") as info:
        api.assemble(bad)
    # (the location is the line of the field, not of the block)
    line = next(n for n, text in enumerate(bad.splitlines(), 1) if ".value_kind: x" in text)
    assert info.value.location.line == line
    bad = asm.replace("amdhsa.kernels:\n", "amdhsa.kernels: 3\nother:\n", 1)
    assert bad != asm
    with pytest.raises(ParseError, match="amdhsa.kernels: must be a list"):
        api.assemble(bad)


@pytest.mark.parametrize("spec, words", [
    ("full:16:f32::1.5", "cannot make"), ("full:4:u8:300", "out of bounds"),
    ("zeros:-1", "negative size"), ("zeros:4:S5", "not a numeric dtype"),
    ("rand:1024:024:f16", "bad shape or dtype"),  # NumPy's dtype parser raised SyntaxError
    ("rand:4:O", "not a numeric dtype"),
])
def test_bad_arg_specs(spec, words):
    from asterism.runtime.argspec import make_arg

    with pytest.raises(AsterismError, match=words):
        make_arg(spec, None, 0)


@pytest.mark.parametrize("spec, value", [("full:2:i32:0x1e", 30), ("full:2:f32:inf", float("inf")),
                                         ("full:2:f32:-1.5", -1.5), ("full:2:i32:7", 7)])
def test_full_arg_values(spec, value):
    from asterism.runtime.argspec import make_arg

    assert list(make_arg(spec, None, 0)) == [value, value]


def test_block_label_defined_twice_after_a_forward_branch():
    # xDSL's parser core raised KeyError: 'loop' (it forgets a label once a forward
    # reference to it is resolved).
    text = (LIT / "lower.mlir").read_text().replace("  ^done:\n", "  ^loop:\n  ^done:\n", 1)
    err = _parse_error(text)
    assert "block ^loop is already defined at line 23" in err.message
    assert (err.location.line, err.location.col) == (34, 3)
