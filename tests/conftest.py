"""Shared fixtures: the LLVM 22 oracle, the shared sample data and the import graph."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from asterism.mc.llvm_tools import INSTALL_HINT, find_llvm_tool

REPO = Path(__file__).resolve().parent.parent
# An unmodified copy of ../shared/data (real samples made elsewhere), vendored so that a
# clean clone (CI) has them too.
SHARED_DATA = REPO / "tests" / "data" / "shared"


def _llvm(name: str) -> str:
    path = find_llvm_tool(name)
    if path is None:
        if os.environ.get("ASTERISM_REQUIRE_LLVM") == "1":
            pytest.fail(f"ASTERISM_REQUIRE_LLVM=1 but {name} is missing. {INSTALL_HINT}")
        pytest.skip(INSTALL_HINT)
    return path


@pytest.fixture(scope="session")
def llvm_mc() -> str:
    """Path of llvm-mc (LLVM 22); skips (or fails under ASTERISM_REQUIRE_LLVM=1) if absent."""
    return _llvm("llvm-mc")


@pytest.fixture(scope="session")
def ld_lld() -> str:
    """Path of ld.lld (LLVM 22)."""
    return _llvm("ld.lld")


@pytest.fixture(scope="session")
def llvm_objdump() -> str:
    """Path of llvm-objdump (LLVM 22)."""
    return _llvm("llvm-objdump")


@pytest.fixture(scope="session")
def llvm_readelf() -> str:
    """Path of llvm-readelf (LLVM 22)."""
    return _llvm("llvm-readelf")


@pytest.fixture(scope="session")
def llc() -> str:
    """Path of llc (LLVM 22), the compiler whose hazard recognizer the hazards pass follows."""
    return _llvm("llc")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared sample data folder (ATT capture, code objects)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared sample data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def mlir_opt() -> str:
    """Path of mlir-opt (LLVM 22), the oracle of what upstream MLIR accepts."""
    return _llvm("mlir-opt")


@pytest.fixture(scope="session")
def import_graph():
    """(tools/import_graph.py as a module, its graph of the package's imports)."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import import_graph as tool
    finally:
        sys.path.remove(str(REPO / "tools"))
    return tool, tool.build_graph()
