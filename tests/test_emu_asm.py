"""Assembly helper for the emulator tests (and the tests of the helper itself).

`assemble(text, target)` returns the machine code of an instruction snippet. The bytes come
from asterism's own assembler when it exists, else from LLVM 22's llvm-mc; every result is
cached in tests/data/emu/asm_cache.json (committed), so the emulator tests run without LLVM.
The emulator then decodes the bytes with asterism's decoder: every test also exercises the
decoder, as the real runtime path does.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from asterism.emu import DeviceMemory, Emulator
from asterism.mc.codeobject import make_kernel_descriptor
from asterism.mc.decoder import decode_code

CACHE = Path(__file__).parent / "data" / "emu" / "asm_cache.json"
_cache: dict[str, str] | None = None


def _load() -> dict[str, str]:
    global _cache
    if _cache is None:
        _cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    return _cache


def _key(text: str, target: str) -> str:
    return hashlib.sha256(f"{target}\n{text}".encode()).hexdigest()[:24]


def _llvm_assemble(text: str, target: str) -> bytes:
    from asterism.mc.llvm_tools import find_llvm_tool

    mc = find_llvm_tool("llvm-mc")
    objcopy = find_llvm_tool("llvm-objcopy")
    if mc is None or objcopy is None:
        pytest.skip("snippet not in the assembly cache and LLVM 22 is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        src, obj, binf = (Path(tmp) / n for n in ("a.s", "a.o", "a.bin"))
        src.write_text(text + "\n")
        subprocess.run([mc, "-triple", "amdgcn-amd-amdhsa", f"-mcpu={target}",
                        "-filetype=obj", str(src), "-o", str(obj)], check=True,
                       capture_output=True, text=True)
        subprocess.run([objcopy, "-O", "binary", "-j", ".text", str(obj), str(binf)],
                       check=True)
        return binf.read_bytes()


def assemble(text: str, target: str = "gfx942") -> bytes:
    """Machine code of an assembly snippet (cached)."""
    cache = _load()
    key = _key(text, target)
    if key in cache:
        return bytes.fromhex(cache[key])
    code = _llvm_assemble(text, target)
    cache[key] = code.hex()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=0, sort_keys=True) + "\n")
    os.replace(tmp, CACHE)
    return code


def program(text: str, target: str = "gfx942", base: int = 0x10000):
    """Decoded instructions of a snippet, placed at `base`."""
    return decode_code(assemble(text, target), target, base)


def descriptor(target: str = "gfx942", *, vgprs: int = 32, sgprs: int = 32, agprs: int = 0,
               lds: int = 0, scratch: int = 0, dims: int = 0, denorm32: int = 3, **fields):
    """A kernel descriptor with a kernarg pointer in s[0:1] and workgroup id x in s2."""
    opts = {"enable_sgpr_kernarg_segment_ptr": 1, "group_segment_fixed_size": lds,
                "private_segment_fixed_size": scratch, "enable_vgpr_workitem_id": dims,
                "float_denorm_mode_32": denorm32}
    opts.update(fields)
    total = vgprs + agprs if agprs else vgprs
    acc = vgprs if agprs else None
    return make_kernel_descriptor(target, next_free_vgpr=total, next_free_sgpr=sgprs,
                                  accum_offset=acc, **opts)


def run(text: str, *, target: str = "gfx942", grid=1, block=64, args=(), emu=None,
        kd=None, **kw):
    """Assemble + run a kernel; args are NumPy arrays (uploaded) or ints (8-byte values).

    Returns (emulator, [device addresses of array args], RunStats)."""
    emu = emu or Emulator(target, DeviceMemory(), **kw)
    mem = emu.memory
    addrs = []
    kernarg = bytearray()
    for a in args:
        if isinstance(a, np.ndarray):
            addr = mem.upload(a)
            addrs.append(addr)
            kernarg += addr.to_bytes(8, "little")
        else:
            kernarg += int(a).to_bytes(8, "little", signed=int(a) < 0)
    ka = mem.upload(np.frombuffer(bytes(kernarg) or b"\0" * 8, np.uint8))
    prog = program(text, target)
    stats = emu.run(prog, kd or descriptor(target), grid=grid, block=block,
                    kernarg_address=ka)
    return emu, addrs, stats


# ---------------------------------------------------------------------------- helper tests

def test_assemble_roundtrips_through_the_decoder():
    prog = program("v_add_f32 v1, v2, v3\ns_endpgm")
    assert [str(p.inst) for p in prog] == ["v_add_f32_e32 v1, v2, v3", "s_endpgm"]
    assert prog[1].address == 0x10004
