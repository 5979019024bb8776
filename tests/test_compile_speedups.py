"""The compile and raise speed-ups (issue 25) must not change answers or leak state.

* the `asterism` process leaves a parsed or raised module out of the collector's scans
  (gc.freeze), but a caller's in-process `main([...])` never freezes anything;
* the CLI verbs that hand a module to asterism.api verify it once, and still report a rule
  broken by the input at its line.
"""

from __future__ import annotations

import gc
from pathlib import Path

from asterism import api
from asterism.cli import main
from asterism.ir import print_ir

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tests" / "data" / "shared" / "codeobjects" / \
    "aiter_gfx942_bf16gemm_tn_32x64_bshuffle_splitk.co"


def test_in_process_main_freezes_nothing(tmp_path):
    raised = tmp_path / "k.mlir"
    before = gc.get_freeze_count()
    assert main(["raise", str(SAMPLE), "-o", str(raised)]) == 0
    assert main(["compile", str(raised), "-o", str(tmp_path / "k.co")]) == 0
    assert main(["translate", str(raised), "-o", str(tmp_path / "k.s")]) == 0
    assert gc.get_freeze_count() == before
    assert gc.isenabled()
    assert (tmp_path / "k.co").read_bytes() == api.compile(api.raise_kernel(SAMPLE))


def test_compile_reports_a_broken_rule_at_its_line(tmp_path, capsys):
    text = print_ir(api.raise_kernel(SAMPLE))
    lines = text.split("\n")
    # an instruction that does not exist on the target, far into the kernel
    k = next(i for i, line in enumerate(lines) if "amdgcn.vop2 v_add_u32_e32" in line)
    lines[k] = lines[k].replace("v_add_u32_e32", "v_add_u32_e99", 1)
    bad = tmp_path / "bad.mlir"
    bad.write_text("\n".join(lines))
    out = tmp_path / "bad.co"
    assert main(["compile", str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:{k + 1}:"), err
    assert "v_add_u32_e99" in err
    assert not out.exists()
