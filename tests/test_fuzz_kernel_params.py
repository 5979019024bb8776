"""Fuzzing of the values that drive the kernel library, the runtime and the emulator.

Kernel parameters (`--param k=v`, Python values through the API), `--shape`, the `--arg`
specs of `asterism run` (zeros:N:dtype...) and `--grid` / `--block` are drawn at random
(numbers small and huge, negative, non-numbers, unknown names, wrong dims). Whatever the
input, only `AsterismError` may escape the API, and the CLI (in process) returns 0 or 1
with no traceback and no partial output file.

Bounds: every test runs with ASTERISM_MEMORY_LIMIT=768M, so an input that would allocate more
is refused (before allocating) by the memory budget. Inputs whose run would be long by
design (a valid problem of millions of workgroups) are only built, not run: the `kernels
run` test draws small problem sizes and fuzzes the other parameters, and the `run` test
draws grids of at most 4096 workgroups besides the ones the dispatch packet cannot hold.

The default run is small and derandomized (CI sees the same inputs every time);
ASTERISM_FUZZ_EXAMPLES=N runs N inputs per test (a campaign draws new ones), and
ASTERISM_FUZZ_REPORT=FILE appends one JSON line per input: the test, the command line, the
exit code, the wall and CPU seconds and the peak traced memory (tracemalloc, NumPy arrays
included; tracemalloc itself makes the run slower).
"""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asterism import kernels
from asterism.cli import main
from asterism.errors import AsterismError

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "examples" / "demo" / "add_10.mlir"
LIMIT = "768M"
NAMES = ("gemm", "flash_attention_fwd")


def _examples(default: int) -> int:
    return int(os.environ.get("ASTERISM_FUZZ_EXAMPLES", default))


def fuzz_settings(default: int):
    """As tests/test_fuzz_inputs.py: bounded, derandomized unless a campaign."""
    random_run = "ASTERISM_FUZZ_EXAMPLES" in os.environ or bool(
        os.environ.get("ASTERISM_FUZZ_RANDOM"))
    return settings(max_examples=_examples(default), deadline=None,
                    derandomize=not random_run,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


@pytest.fixture(autouse=True)
def _memory_limit(monkeypatch):
    monkeypatch.setenv("ASTERISM_MEMORY_LIMIT", LIMIT)


def _measured(test: str, argv: list[str], fn):
    """Run fn(); with ASTERISM_FUZZ_REPORT set, append its time and peak memory there."""
    report = os.environ.get("ASTERISM_FUZZ_REPORT")
    if not report:
        return fn()
    tracemalloc.start()
    start, cpu = time.perf_counter(), time.process_time()
    result = None
    try:
        result = fn()
    finally:
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        with open(report, "a") as f:
            f.write(json.dumps({"test": test, "argv": argv, "rc": result, "seconds": seconds,
                                "cpu_seconds": cpu, "peak_bytes": peak}) + "\n")
    return result


def _cli(test: str, argv: list[str], capsys) -> tuple[int, str, str]:
    """main(argv) in process: (exit code, stdout, stderr), checked for a traceback."""
    rc = _measured(test, argv, lambda: main(argv))
    out = capsys.readouterr()
    assert rc in (0, 1), (argv, rc, out.err[-2000:])
    assert "Traceback" not in out.err, (argv, out.err[-2000:])
    if rc == 1:
        assert "error:" in out.err or "FAILED" in out.out, (argv, out.err[-2000:])
    return rc, out.out, out.err


# ----------------------------------------------------------------------------- values

JUNK = st.text(max_size=10)
HUGE = ["4096", "65536", str(2**31), str(2**32), str(2**32 + 1), str(2**63), str(2**64),
        "9" * 30, "9" * 5000, "-1", "0", "00", "+3", " 7", "1_000", "0x10", "1e3"]
INT_TEXT = st.one_of(st.integers(-4, 300).map(str), st.sampled_from(HUGE),
                     st.integers(-2**70, 2**70).map(str))
FLOAT_TEXT = st.one_of(st.floats().map(repr),
                       st.sampled_from(["nan", "inf", "-inf", "1e309", "-0.0", "0.125", "2"]))
BOOL_TEXT = st.sampled_from(["true", "false", "1", "0", "yes", "no", "maybe", ""])


def _value_text(param) -> st.SearchStrategy[str]:
    """Text for one --param value: mostly plausible (the choices, values near the default,
    powers of two), else any number of the parameter's kind, or junk."""
    kind = param.kind
    own = {int: INT_TEXT, float: FLOAT_TEXT, bool: BOOL_TEXT}.get(kind, JUNK)
    plausible = [str(c) for c in param.choices] or [str(param.default)]
    if kind is int and not param.choices:
        plausible += [str(1 << i) for i in range(9)] + [str(param.default * 2),
                                                        str(param.default // 2)]
    return st.one_of(st.sampled_from(plausible), st.sampled_from(plausible), own, JUNK)


@st.composite
def param_pairs(draw, name: str) -> list[str]:
    """--param NAME=VALUE items (known names mostly, some unknown or malformed)."""
    gen = kernels.get(name)
    out = []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(st.one_of(JUNK, JUNK.map(lambda t: t + "=1"))))
            continue
        param = draw(st.sampled_from(gen.params))
        out.append(f"{param.name}={draw(_value_text(param))}")
    return out


SHAPE_TEXT = st.lists(st.one_of(st.integers(0, 5000).map(str), st.sampled_from(HUGE), JUNK),
                      max_size=5).map("x".join)


# ----------------------------------------------------------------------------- kernels


@fuzz_settings(default=12)
@given(data=st.data())
def test_kernels_build_any_params(data, tmp_path, capsys):
    """`kernels build` with any parameters and --shape: a code object or a clear error; no
    input is made, so any size is fine."""
    name = data.draw(st.sampled_from(NAMES))
    argv = ["kernels", "build", name]
    target = data.draw(st.sampled_from([None, "gfx942", "gfx950", "gfx90a"]))
    if target:
        argv += ["--target", target]
    argv += [f"--param={p}" for p in data.draw(param_pairs(name))]
    shape = data.draw(st.one_of(st.none(), SHAPE_TEXT))
    if shape is not None:
        argv.append(f"--shape={shape}")
    out = tmp_path / "k.hsaco"
    out.unlink(missing_ok=True)
    rc, _, _ = _cli("kernels build", [*argv, "-o", str(out)], capsys)
    assert out.exists() == (rc == 0)


SMALL = {"gemm": {"m": st.sampled_from([128, 160, 64, 32]),  # (the default tiles: 128)
                  "n": st.sampled_from([128, 144, 64]),
                  "k": st.sampled_from([32, 64, 96, 8])},
         "flash_attention_fwd": {"batch": st.integers(1, 2), "heads": st.integers(1, 2),
                                 "seq_q": st.integers(1, 160), "head_dim": st.just(64)}}


@fuzz_settings(default=5)
@given(data=st.data())
def test_kernels_run_small_problems_any_params(data, capsys):
    """`kernels run --check` on the emulator: small problem sizes, every other parameter
    fuzzed; the check passes or the parameters are refused, clearly."""
    name = data.draw(st.sampled_from(NAMES))
    dims = {k: data.draw(v) for k, v in SMALL[name].items()}
    gen = kernels.get(name)
    shape = "x".join(str(dims[p]) for p in gen.shape.params)
    others = [p for p in data.draw(param_pairs(name))
              if p.partition("=")[0] not in gen.shape.params]
    if name == "flash_attention_fwd" and data.draw(st.booleans()):
        others.append(f"seq_k={data.draw(st.integers(0, 200))}")
    argv = ["kernels", "run", name, "--backend", "emu", "--check", "--quiet",
            "--max-instructions", "300000", f"--shape={shape}",
            *[f"--param={p}" for p in others]]
    rc, out, err = _cli("kernels run", argv, capsys)
    assert "FAILED" not in out, (argv, out)


@fuzz_settings(default=20)
@given(name=st.sampled_from(NAMES), data=st.data())
def test_kernel_api_any_python_values(name, data):
    """KernelGenerator.build with Python values of any type: built or KernelParamError (and
    nothing is allocated: the inputs are made on first use)."""
    gen = kernels.get(name)
    values = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40),
                       st.floats(), st.text(max_size=6), st.sampled_from([[], {}, (1,)]))
    params = {}
    for _ in range(data.draw(st.integers(0, 4))):
        param = data.draw(st.sampled_from(gen.params))
        params[param.name] = data.draw(st.one_of(values, st.sampled_from(param.choices or
                                                                          (param.default,))))
    try:
        case = gen.build(None, params)
    except AsterismError:
        return
    assert not case.args.made


# ----------------------------------------------------------------------------- run


@pytest.fixture(scope="module")
def demo_hsaco(tmp_path_factory) -> str:
    from asterism import api

    path = tmp_path_factory.mktemp("demo") / "add_10.hsaco"
    path.write_bytes(api.compile(DEMO.read_text()))
    return str(path)


MAKERS = st.sampled_from(["zeros", "ones", "arange", "rand", "full", "zero", "", "x.npy"])
DIMS = st.lists(st.one_of(st.integers(-2, 5000).map(str),
                          st.sampled_from(["0", "1e9", "268435456", "4000000000", str(2**40),
                                           str(2**64), "", "x", "-0"])),
                max_size=3).map("x".join)
DTYPES = st.sampled_from(["", "i32", "f32", "f16", "bf16", "u8", "i64", "float64", "bool",
                          "str", "object", "V8", "S3", "M8", "complex64", "024", "?", "int"])


@st.composite
def arg_spec(draw) -> str:
    """An --arg spec: maker:DIMS[:DTYPE[:VALUE]] (half of them plausible for the demo's
    int32 output), a scalar, a file name or junk."""
    kind = draw(st.integers(0, 7))
    if kind <= 3:
        maker = draw(st.sampled_from(["zeros", "ones", "arange", "rand", "full"]))
        dims = "x".join(map(str, draw(st.lists(st.integers(1, 1100), min_size=1,
                                               max_size=2))))
        spec = f"{maker}:{dims}:{draw(st.sampled_from(['i32', 'int32', 'f32']))}"
        if maker == "full":
            spec += f":{draw(st.one_of(INT_TEXT, FLOAT_TEXT))}"
        return "out=" + spec
    if kind <= 5:
        parts = [draw(MAKERS), draw(DIMS)]
        if draw(st.booleans()):
            parts.append(draw(DTYPES))
            if draw(st.booleans()):
                parts.append(draw(st.one_of(INT_TEXT, FLOAT_TEXT, JUNK)))
        spec = ":".join(parts)
    elif kind == 4:
        spec = draw(st.one_of(INT_TEXT, FLOAT_TEXT))
    else:
        spec = draw(JUNK)
    return draw(st.sampled_from(["", "out=", "nope="])) + spec


SMALL_GRID = st.lists(st.integers(1, 16), min_size=1, max_size=3).map(
    lambda dims: ",".join(map(str, dims)))
BAD_GRID = st.sampled_from(["0", "-1", "a", "1,2,3,4", "4294967296", str(2**64), "1x0",
                            "1,4294967296", "", ",", "1.5", "67108864", "9" * 40])


@fuzz_settings(default=25)
@given(args=st.lists(arg_spec(), max_size=2), grid=st.one_of(SMALL_GRID, SMALL_GRID, BAD_GRID),
       block=st.sampled_from([None, "64", "128", "2048", "0", "64,1,1", "a"]))
def test_run_any_arg_specs_and_grids(demo_hsaco, args, grid, block, capsys):
    """`asterism run` of the demo kernel with any --arg specs, --grid and --block."""
    argv = ["run", demo_hsaco, f"--grid={grid}", "--quiet", "--max-instructions", "100000",
            *[f"--arg={a}" for a in args]]
    if block:
        argv.append(f"--block={block}")
    _cli("run", argv, capsys)


# ----------------------------------------------------------------------------- findings


@pytest.mark.parametrize("argv, message", [
    # full:N:int32:VALUE with a value no int32 holds stored garbage (NumPy's unsafe cast)
    (["run", str(DEMO), "--arg", "out=full:256:i32:nan"],
     "cannot make 'full:256:i32:nan': nan is not a int32 value"),
    (["run", str(DEMO), "--arg", "out=full:256:i32:1.5"], "1.5 is not a int32 value"),
    (["run", str(DEMO), "--arg", "out=full:256:i32:1e40"], "1e40 is not a int32 value"),
    # an empty --shape was ignored (the kernel's default problem ran)
    (["kernels", "run", "gemm", "--shape="], "--shape for gemm is MxNxK"),
    # rand draws float64 values first: 8 more bytes per element than the array
    (["run", str(DEMO), "--arg", "out=rand:100000000:i32"],
     "--arg out (rand:100000000:i32) needs 1.1 GiB"),
])
def test_campaign_findings(argv, message, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
