"""End to end with the `auto` pipeline: the kernels of examples/auto (vector add, a row
reduction, the runtime GEMM rewritten, a 64x64 MFMA GEMM tile with LDS double
buffering, and the GEMM written with register pieces) are written with relocatable registers and no s_waitcnt or s_nop; compiled with
`auto` they match NumPy on the emulator with the sanitizer on. Then every wait and nop that
`auto` placed is removed in turn, and the sanitizer must catch each removal: the tests can
fail, and none of the placed waits or nops is unnecessary.
"""

from __future__ import annotations

import pytest
from test_examples import load

from asterism import api
from asterism.emu.errors import SanitizerError
from asterism.ir import parse_ir, print_ir

TARGETS = ("gfx942", "gfx950")

# example file, build() arguments and run() arguments of a small size, run() arguments of
# the full-size check
KERNELS = {
    "vector_add": ("examples/auto/vector_add.py", (), dict(n=300), dict(n=5000)),
    "row_sum": ("examples/auto/row_sum.py", (16, 4), dict(rows=64, cols=16, unroll=4),
                dict(rows=256, cols=64, unroll=8)),
    "gemm_f16": ("examples/auto/gemm_f16.py", (32, 32, 32), dict(m=32, n=32, k=32),
                 dict(m=256, n=256, k=256)),
    "gemm_lds_64x64": ("examples/auto/gemm_lds_64x64.py", (64, 64, 64),
                       dict(m=64, n=64, k=64), dict(m=128, n=192, k=256)),
    "gemm_pieces": ("examples/auto/gemm_pieces.py", (32, 32, 32), dict(m=32, n=32, k=32),
                    dict(m=64, n=48, k=64)),
}


def placed_lines(text: list[str]) -> list[int]:
    """Lines of the IR text that hold an s_waitcnt or s_nop."""
    return [i for i, line in enumerate(text)
            if "amdgcn.sopp s_waitcnt" in line or "amdgcn.sopp s_nop" in line]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_auto_kernel_matches_numpy(name, target):
    path, build_args, _small, full = KERNELS[name]
    example = load(path)
    written = print_ir(example.build(*build_args, target=target)).splitlines()
    assert placed_lines(written) == []  # nothing hand-placed
    example.run(**full, target=target, backend="emu")  # asserts against NumPy


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_every_placed_wait_and_nop_is_needed(name, target):
    path, build_args, small, _full = KERNELS[name]
    example = load(path)
    build = example.build
    text = print_ir(api.optimize(build(*build_args, target=target), "auto")).splitlines()
    placed = placed_lines(text)
    assert placed
    example.run(**small, target=target, backend="emu")
    missed = []
    for k in placed:
        weaker = "\n".join(text[:k] + text[k + 1:])
        example.build = lambda *_a, _weaker=weaker, **_kw: parse_ir(_weaker)
        try:
            example.run(**small, target=target, backend="emu", pipeline="")
        except SanitizerError:
            continue
        missed.append(text[k].strip())
    assert missed == []
