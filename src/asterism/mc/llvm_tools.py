"""Locate the optional LLVM 22 tools (llvm-mc, ld.lld, llvm-objdump, llvm-readelf).

asterism never needs LLVM at run time; these are used by tests (as the oracle), by
benchmarks (as the reference) and by `tools/` generators.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

LLVM_MAJOR = 22
INSTALL_HINT = (
    "LLVM 22 not found: install it with `apt-get install -y llvm-22 lld-22` "
    "(or put llvm-mc-22 on PATH / set ASTERISM_LLVM_BIN)"
)


def find_llvm_tool(name: str) -> str | None:
    """Return the path of LLVM 22's `name` (e.g. "llvm-mc", "ld.lld"), or None if absent."""
    candidates = []
    env_dir = os.environ.get("ASTERISM_LLVM_BIN")
    if env_dir:
        candidates.append(Path(env_dir) / name)
    candidates.append(Path(f"/usr/lib/llvm-{LLVM_MAJOR}/bin") / name)
    for cand in candidates:
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which(f"{name}-{LLVM_MAJOR}")


def require_llvm_tool(name: str) -> str:
    """Return the path of LLVM 22's `name` or raise FileNotFoundError with an install hint."""
    path = find_llvm_tool(name)
    if path is None:
        raise FileNotFoundError(f"{name}: {INSTALL_HINT}")
    return path
