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


SLOT = 32  # bytes per blob: the longest instruction (16) + literal, padded with s_nop 0
S_NOP_0 = (0xBF800000).to_bytes(4, "little")


def llvm_disassemble(blobs: list[bytes], target: str) -> list[str]:
    """llvm-objdump's text for each instruction blob.

    Each blob sits in its own 32-byte slot padded with `s_nop 0`, so a blob LLVM reads with
    another length cannot shift the others. A batch that crashes llvm-objdump is split until
    the crashing blob is isolated (its text is then "<objdump crashed>").
    """
    if not blobs:
        return []
    try:
        return _disassemble_slots(blobs, target)
    except subprocess.CalledProcessError:
        if len(blobs) == 1:
            return ["<objdump crashed>"]
        mid = len(blobs) // 2
        return llvm_disassemble(blobs[:mid], target) + llvm_disassemble(blobs[mid:], target)


def _disassemble_slots(blobs: list[bytes], target: str) -> list[str]:
    data = bytearray()
    for blob in blobs:
        if len(blob) > SLOT - 4:
            raise ValueError(f"instruction blob of {len(blob)} bytes is too long")
        data += blob + S_NOP_0 * ((SLOT - len(blob)) // 4)
    body = "\n".join(".byte " + ",".join(f"0x{b:02x}" for b in data[i:i + 64])
                     for i in range(0, len(data), 64))
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = os.path.join(tmp, "in.s"), os.path.join(tmp, "in.o")
        with open(src, "w") as f:
            f.write(".text\n" + body + "\n")
        subprocess.run([require_llvm_tool("llvm-mc"), "-arch=amdgcn", f"-mcpu={target}",
                        "-filetype=obj", src, "-o", obj], check=True, capture_output=True)
        dump = subprocess.run([require_llvm_tool("llvm-objdump"), "-d", f"--mcpu={target}",
                               obj], capture_output=True, text=True, check=True).stdout
    by_addr: dict[int, str] = {}
    for line in dump.splitlines():
        m = _OBJDUMP_RE.match(line)
        if m:
            by_addr[int(m.group(2), 16)] = m.group(1).strip()
    return [by_addr.get(k * SLOT, "<no instruction>") for k in range(len(blobs))]
