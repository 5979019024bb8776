"""The behaviour a refactor must not change, as one JSON document.

    python tools/behaviour_fingerprint.py -o before.json      # on the old tree
    python tools/behaviour_fingerprint.py -o after.json       # on the new tree
    python tools/behaviour_fingerprint.py --diff before.json after.json

It drives the `asterism` command (so it survives moves of modules): the SHA-256 of every code
object compiled from the IR inputs of the repository (examples/, tests/lit, tests/upstream)
under several pipelines, of every library kernel built at a few parameter points on both
targets, of raise + compile of the shared AITER code objects, and the modeled cycles of the
library kernels (`kernels run --timing`) and of the shared captures' replays. Progress goes
to stderr. A refactor that moves code keeps every entry equal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PIPELINES = ["", "auto"]
KERNEL_POINTS = [
    ("gemm", "gfx942", ["--shape", "128x128x64"]),
    ("gemm", "gfx950", ["--shape", "128x128x64"]),
    ("gemm", "gfx950", ["--shape", "128x128x128", "--param", "dtype=bf16",
                        "--param", "layout=tn"]),
    ("gemm", "gfx950", ["--shape", "128x128x128", "--param", "dtype=fp8"]),
    ("gemm", "gfx942", ["--shape", "128x128x64", "--param", "waves=8",
                        "--param", "mfma=16"]),
    ("flash_attention_fwd", "gfx950", ["--param", "seq_q=128"]),
    ("flash_attention_fwd", "gfx942", ["--param", "seq_q=128"]),
    ("flash_attention_fwd", "gfx950", ["--param", "seq_q=128", "--param", "causal=true",
                                       "--param", "head_dim=64"]),
]


def asterism(*args: str) -> subprocess.CompletedProcess:
    """Run `python -m asterism.cli ARGS` from this tree."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run([sys.executable, "-m", "asterism.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True)


def digest(path: Path) -> str:
    """SHA-256 of a file, or the reason it is missing."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"


def _ir_inputs() -> list[Path]:
    roots = [REPO / "examples", REPO / "tests" / "lit", REPO / "tests" / "upstream"]
    return sorted(p for r in roots for p in r.rglob("*.mlir"))


def _compile_entries(tmp: Path) -> dict[str, str]:
    out = {}
    inputs = _ir_inputs()
    for i, src in enumerate(inputs):
        print(f"[compile {i + 1}/{len(inputs)}] {src.relative_to(REPO)}", file=sys.stderr)
        for target in ("gfx942", "gfx950"):
            for pipe in PIPELINES:
                dst = tmp / "o.hsaco"
                dst.unlink(missing_ok=True)
                r = asterism("compile", str(src), "--target", target, "--pipeline", pipe,
                             "-o", str(dst))
                key = f"compile {src.relative_to(REPO)} {target} [{pipe}]"
                out[key] = digest(dst) if r.returncode == 0 else f"error {r.returncode}"
    return out


def _kernel_entries(tmp: Path) -> dict[str, str | int]:
    out: dict[str, str | int] = {}
    for i, (name, target, extra) in enumerate(KERNEL_POINTS):
        print(f"[kernels {i + 1}/{len(KERNEL_POINTS)}] {name} {target} {' '.join(extra)}",
              file=sys.stderr)
        key = f"{name} {target} {' '.join(extra)}"
        dst = tmp / "k.hsaco"
        dst.unlink(missing_ok=True)
        r = asterism("kernels", "build", name, "--target", target, *extra, "-o", str(dst))
        out["build " + key] = digest(dst) if r.returncode == 0 else f"error {r.returncode}"
        r = asterism("kernels", "run", name, "--target", target, *extra, "--timing", "--json")
        if r.returncode != 0:
            out["modeled " + key] = f"error {r.returncode}"
            continue
        report = json.loads(r.stdout)
        out["modeled " + key] = report.get("timing", {}).get("cycles", report.get("cycles"))
    return out


def _raise_entries(tmp: Path) -> dict[str, str]:
    out = {}
    for co in sorted((REPO / "tests" / "data" / "shared" / "codeobjects").glob("*.co")):
        print(f"[raise] {co.name}", file=sys.stderr)
        ir, dst = tmp / "r.mlir", tmp / "r.hsaco"
        for p in (ir, dst):
            p.unlink(missing_ok=True)
        r = asterism("raise", str(co), "-o", str(ir))
        out[f"raise {co.name}"] = digest(ir) if r.returncode == 0 else f"error {r.returncode}"
        if r.returncode == 0:
            r = asterism("compile", str(ir), "-o", str(dst))
            out[f"raise+compile {co.name}"] = (digest(dst) if r.returncode == 0
                                               else f"error {r.returncode}")
    return out


def _replay_entries() -> dict[str, str]:
    out = {}
    for cap in sorted((REPO / "tests" / "data" / "shared" / "att").iterdir()):
        print(f"[replay] {cap.name}", file=sys.stderr)
        r = asterism("trace", "replay", str(cap.relative_to(REPO)), "--json")  # no checkout path
        out[f"replay {cap.name}"] = (hashlib.sha256(r.stdout.encode()).hexdigest()
                                     if r.returncode == 0 else f"error {r.returncode}")
    return out


def fingerprint() -> dict[str, object]:
    """Every entry of the fingerprint, keyed by what produced it."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out: dict[str, object] = {}
        out.update(_compile_entries(tmp))
        out.update(_kernel_entries(tmp))
        out.update(_raise_entries(tmp))
        out.update(_replay_entries())
        return out


def diff(a: dict, b: dict) -> list[str]:
    """Lines naming every entry that differs or exists on one side only."""
    return [f"{k}: {a.get(k, '<absent>')} -> {b.get(k, '<absent>')}"
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", help="write the fingerprint there (default stdout)")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="compare two fingerprints; exit 1 when they differ")
    args = ap.parse_args()
    if args.diff:
        a, b = (json.loads(Path(p).read_text()) for p in args.diff)
        lines = diff(a, b)
        print("\n".join(lines) if lines else f"identical ({len(a)} entries)")
        return 1 if lines else 0
    text = json.dumps(fingerprint(), indent=1, sort_keys=True)
    if args.output:
        Path(args.output).write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
