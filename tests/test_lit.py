"""Run the lit + FileCheck tests (tests/lit) as part of pytest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LIT_DIR = Path(__file__).resolve().parent / "lit"


def test_lit_suite():
    pytest.importorskip("lit")
    if shutil.which("filecheck") is None:
        pytest.skip("filecheck is not installed (pip install filecheck)")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, lit.main; sys.argv[0] = 'lit'; lit.main.main()",
         "-sv", str(LIT_DIR)],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-4000:]
    assert "Passed:" in proc.stdout
