"""The examples run on the emulator and match NumPy; broken variants are caught."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from asterism.emu import SanitizerError

ROOT = Path(__file__).resolve().parent.parent


def load(path: str, replace: tuple[str, str] | None = None) -> types.ModuleType:
    """Import an example script (optionally with a line edited out)."""
    src = (ROOT / path).read_text()
    if replace:
        assert replace[0] in src
        src = src.replace(*replace)
    mod = types.ModuleType(Path(path).stem)
    mod.__file__ = str(ROOT / path)
    exec(compile(src, str(ROOT / path), "exec"), mod.__dict__)
    return mod


def test_vector_add_matches_numpy():
    c = load("examples/vector_add/vector_add.py").run(1000, backend="emu")
    assert c.shape == (1000,)


def test_gemm_256_matches_numpy():
    c, _seconds = load("examples/gemm/gemm_f16.py").run(256, 256, 256, backend="emu")
    assert c.shape == (256, 256)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_gemm_small_both_targets(target):
    load("examples/gemm/gemm_f16.py").run(32, 48, 64, target=target, backend="emu")


def test_missing_nop_is_caught_by_the_sanitizer():
    mod = load("examples/gemm/gemm_f16.py",
               ('    kb.s_nop(2 if target == "gfx942" else 3)\n', ""))
    with pytest.raises(SanitizerError, match="needs 7 .*insert s_nop 2"):
        mod.run(16, 16, 16, backend="emu")


def test_missing_wait_is_caught_by_the_sanitizer():
    mod = load("examples/vector_add/vector_add.py", ("    kb.s_waitcnt(vmcnt=0)\n", ""))
    with pytest.raises(SanitizerError, match="s_waitcnt vmcnt"):
        mod.run(64, backend="emu")
