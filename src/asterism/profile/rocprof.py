"""Thread traces on real GPUs: run a kernel under rocprofv3 --att, then analyze the capture.

The kernel runs through `asterism run --backend hip` in a child process that rocprofv3
watches; only the chosen launch of the chosen kernel is traced (by default the 3rd of 5, so
that the instruction cache is warm). rocprofv3's decoder writes `ui_output_agent_*` folders,
which `asterism trace report` reads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from asterism.errors import AsterismError

INSTALL_HINT = ("rocprofv3 not found: install ROCm's rocprofiler-sdk (rocprofv3 is in "
                "/opt/rocm/bin) or put it on PATH. Without a GPU, use the emulator's timing "
                "model instead: `asterism run --timing` (see `asterism run --help`).")


class ProfileError(AsterismError):
    """rocprofv3 is missing or the capture failed."""


def find_rocprofv3() -> str | None:
    """Path of rocprofv3 (PATH, then ROCM_PATH/bin, then /opt/rocm/bin), or None."""
    found = shutil.which("rocprofv3")
    if found:
        return found
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root and (Path(root) / "bin" / "rocprofv3").exists():
            return str(Path(root) / "bin" / "rocprofv3")
    return None


@dataclass
class ProfileRequest:
    """What to run and what to capture."""

    input: str  # .mlir, .s or .hsaco
    kernel: str
    grid: str = "1"
    block: str | None = None
    args: list[str] = field(default_factory=list)
    iterations: int = 5
    capture: int = 3  # which launch to trace (1-based)
    output_dir: str = "asterism-profile"
    target_cu: int | None = None
    extra: list[str] = field(default_factory=list)  # more rocprofv3 options


def build_command(req: ProfileRequest, rocprofv3: str) -> list[str]:
    """The rocprofv3 command line for a request."""
    if not 1 <= req.capture <= req.iterations:
        raise ProfileError(f"--capture {req.capture} must be between 1 and --iterations "
                           f"{req.iterations}")
    cmd = [rocprofv3, "--att", "--kernel-include-regex", f"^{req.kernel}$",
           "--kernel-iteration-range", f"[{req.capture}-{req.capture}]",
           "-d", req.output_dir]
    if req.target_cu is not None:
        cmd += ["--att-target-cu", str(req.target_cu)]
    cmd += list(req.extra)
    app = [sys.executable, "-m", "asterism.cli", "run", req.input, "--kernel", req.kernel,
           "--grid", req.grid, "--backend", "hip", "--iterations", str(req.iterations)]
    if req.block:
        app += ["--block", req.block]
    for a in req.args:
        app += ["--arg", a]
    return [*cmd, "--", *app]


def find_captures(output_dir: str | Path) -> list[Path]:
    """The decoded ATT folders under an output directory (newest last)."""
    root = Path(output_dir)
    found = [p for p in root.rglob("ui_output_agent_*") if p.is_dir()]
    return sorted(found, key=lambda p: p.stat().st_mtime)


def profile(req: ProfileRequest) -> list[Path]:
    """Run the capture; returns the ATT folders it produced."""
    rocprofv3 = find_rocprofv3()
    if rocprofv3 is None:
        raise ProfileError(INSTALL_HINT)
    cmd = build_command(req, rocprofv3)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-8:]
        raise ProfileError("rocprofv3 failed (exit code "
                           f"{res.returncode}):\n  " + "\n  ".join(tail))
    captures = find_captures(req.output_dir)
    if not captures:
        raise ProfileError(f"rocprofv3 ran but wrote no ATT folder under {req.output_dir} "
                           "(was the kernel launched? is librocprof-trace-decoder installed?)")
    return captures
