"""LLVM 22 as an oracle (and optional alternative path): batch-encode and disassemble.

Used by the differential tests, the vector generator and the benchmarks; never needed at
run time. Each call runs one llvm-mc / llvm-objdump process for a whole batch.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

from asterism.mc.llvm_tools import require_llvm_tool

_ENC_RE = re.compile(r"encoding: \[([^\]]*)\]")
_ERR_RE = re.compile(r"^<stdin>:(\d+):\d+: error: (.*)$", re.M)
_OBJDUMP_RE = re.compile(r"^\s+(.*?)\s*// ([0-9A-F]+): ([0-9A-F ]+?)(?:\s+<.*>)?\s*$")


def llvm_encode(lines: list[str], target: str) -> list[bytes | str]:
    """llvm-mc's encoding of each line, or the error message for lines LLVM rejects."""
    res = subprocess.run([require_llvm_tool("llvm-mc"), "-arch=amdgcn", f"-mcpu={target}",
                          "-show-encoding"], input="\n".join(lines) + "\n",
                         capture_output=True, text=True)
    errors: dict[int, str] = {}
    for m in _ERR_RE.finditer(res.stderr):
        errors.setdefault(int(m.group(1)) - 1, m.group(2))
    encs = _ENC_RE.findall(res.stdout)
    out: list[bytes | str] = []
    it = iter(encs)
    for k in range(len(lines)):
        if k in errors:
            out.append(errors[k])
        else:
            e = next(it, None)
            out.append(bytes(int(x, 16) for x in e.split(",")) if e else "no encoding")
    return out


def llvm_disassemble(blobs: list[bytes], target: str) -> list[str]:
    """llvm-objdump's text for each instruction blob (placed one after another)."""
    if not blobs:
        return []
    body = "\n".join(".byte " + ",".join(f"0x{b:02x}" for b in blob) for blob in blobs)
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = os.path.join(tmp, "in.s"), os.path.join(tmp, "in.o")
        with open(src, "w") as f:
            f.write(".text\n" + body + "\n")
        subprocess.run([require_llvm_tool("llvm-mc"), "-arch=amdgcn", f"-mcpu={target}",
                        "-filetype=obj", src, "-o", obj], check=True, capture_output=True)
        dump = subprocess.run([require_llvm_tool("llvm-objdump"), "-d", f"--mcpu={target}",
                               obj], capture_output=True, text=True, check=True).stdout
    rows: list[tuple[int, str]] = []
    for line in dump.splitlines():
        m = _OBJDUMP_RE.match(line)
        if m:
            rows.append((int(m.group(2), 16), m.group(1).strip()))
    by_addr = dict(rows)
    out = []
    addr = 0
    for blob in blobs:
        out.append(by_addr.get(addr, "<no instruction>"))
        addr += len(blob)
    return out
