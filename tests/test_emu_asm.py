"""Assembly helper for the emulator tests (and the tests of the helper itself).

`assemble(text, target)` returns the machine code of an instruction snippet. The bytes come
from asterism's own parser + encoder, checked against LLVM 22's llvm-mc, whose results are
cached in tests/data/emu/asm_cache.json (committed) so the tests run without LLVM; when the
two disagree or asterism's assembler fails, LLVM's bytes are used (with a warning).
The emulator then decodes the bytes with asterism's decoder: every test also exercises the
decoder, as the real runtime path does.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from asterism.emu import DeviceMemory, Emulator
from asterism.mc.codeobject import make_kernel_descriptor
from asterism.mc.decoder import decode_code
from asterism.mc.printer import format_inst

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
        res = subprocess.run([mc, "-triple", "amdgcn-amd-amdhsa", f"-mcpu={target}",
                              "-filetype=obj", str(src), "-o", str(obj)],
                             capture_output=True, text=True, check=False)
        if res.returncode:
            raise AssertionError(f"llvm-mc rejects the snippet:\n{res.stderr}")
        subprocess.run([objcopy, "-O", "binary", "-j", ".text", str(obj), str(binf)],
                       check=True)
        return binf.read_bytes()


def _own_assemble(text: str, target: str) -> bytes | None:
    """Bytes from asterism's parser + encoder, or None if they fail on the snippet."""
    from asterism.mc.encoder import ENCODER
    from asterism.mc.inst import Inst
    from asterism.mc.parser import parse_asm
    from asterism.mc.program import LabelDef

    try:
        module = parse_asm(text, "<emu-test>", target)
        body = [item for k in module.kernels for item in k.body]
        # Two passes: sizes do not depend on label values (any address will do at first).
        labels = {item.name: 0 for item in body if isinstance(item, LabelDef)}
        code = bytearray()
        for _ in range(2):
            pc, code = 0, bytearray()
            for item in body:
                if isinstance(item, LabelDef):
                    labels[item.name] = pc
                elif isinstance(item, Inst):
                    word = ENCODER.encode(item, pc, labels)
                    code += word
                    pc += len(word)
        return bytes(code)
    except Exception:  # the assembler is another layer: fall back to LLVM's bytes
        return None


def _store(cache: dict[str, str], key: str, code: bytes) -> None:
    cache[key] = code.hex()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=0, sort_keys=True) + "\n")
    os.replace(tmp, CACHE)


def assemble(text: str, target: str = "gfx942") -> bytes:
    """Machine code of an assembly snippet: asterism's assembler, checked against (and
    backed up by) llvm-mc's bytes in the committed cache."""
    cache = _load()
    key = _key(text, target)
    ref = bytes.fromhex(cache[key]) if key in cache else None
    if ref is None:
        from asterism.mc.llvm_tools import find_llvm_tool

        if find_llvm_tool("llvm-mc") is not None:
            ref = _llvm_assemble(text, target)
            _store(cache, key, ref)
    own = _own_assemble(text, target)
    if own is not None and (ref is None or own == ref):
        return own
    if ref is None:
        pytest.skip("asterism's assembler rejects the snippet and LLVM 22 is not installed")
    if own is not None:
        warnings.warn(f"asterism and llvm-mc encode differently (using llvm-mc's bytes):\n"
                      f"{text}", stacklevel=2)
    return ref


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


# ------------------------------------------------------------------ register-level harness

# Registers the harness itself uses; test bodies must leave them alone.
ADDR_V = "v60"
TMP_V = "v61"
IN_BASE = "s[40:41]"
OUT_BASE = "s[42:43]"


def _as_u32(value) -> np.ndarray:
    """64 lanes of raw 32-bit words from a scalar or an array (float32 -> bits)."""
    arr = np.asarray(value)
    if arr.dtype == np.float32:
        arr = arr.view(np.uint32)
    elif arr.dtype.kind == "f":
        arr = arr.astype(np.float32).view(np.uint32)
    elif arr.dtype == np.float16:
        arr = arr.view(np.uint16).astype(np.uint32)
    else:
        arr = arr.astype(np.int64).astype(np.uint32)
    return np.broadcast_to(arr, (64,)).astype(np.uint32)


def _regs(name: str) -> list[str]:
    """Single registers of a register name: v5 -> [v5]; v[4:5] -> [v4, v5]; vcc -> lo/hi."""
    if name in ("vcc", "exec"):
        return [f"{name}_lo", f"{name}_hi"]
    if "[" in name:
        kind = name[0]
        lo, hi = (int(x) for x in name[2:-1].split(":"))
        return [f"{kind}{i}" for i in range(lo, hi + 1)]
    return [name]


def vrun(body: str, inputs: dict[str, object] | None = None, outputs=("v1",), *,
         target: str = "gfx942", block: int = 64, exec_mask: int | None = None,
         **kw) -> dict[str, np.ndarray]:
    """Run `body` on one wave with per-lane VGPR inputs; return the outputs per lane.

    inputs maps VGPR names (v1 or v[2:3]) to 64-lane values (raw uint32 words, or float32
    arrays taken bit-for-bit); a v[a:b] input takes an array of shape (64, n) or a uint64 /
    float64 array (split into dwords). outputs are VGPRs (v5, v[4:5]), SGPRs (s7, vcc,
    exec), read back per lane as uint32 (shape (64,) or (64, n)). Loads happen before `body`
    (waited for), stores after it with EXEC restored to all lanes (unless exec_mask)."""
    inputs = dict(inputs or {})
    words: list[np.ndarray] = []
    pro = ["s_load_dwordx4 s[40:43], s[0:1], 0", "s_waitcnt lgkmcnt(0)",
           f"v_lshlrev_b32 {ADDR_V}, 2, v0"]
    for name, value in inputs.items():
        regs = _regs(name)
        arr = np.asarray(value)
        if len(regs) == 2 and arr.dtype in (np.float64, np.uint64, np.int64) and arr.ndim <= 1:
            arr = np.broadcast_to(arr, (64,)).copy().view(np.uint32).reshape(64, 2)
        elif len(regs) > 1:
            arr = np.asarray(arr)
            arr = np.stack([_as_u32(arr[:, i] if arr.ndim == 2 else arr[i])
                            for i in range(len(regs))], axis=1)
        for i, reg in enumerate(regs):
            col = _as_u32(arr[:, i] if arr.ndim == 2 else arr)
            off = 256 * (len(words) % 15)
            pro.append(f"global_load_dword {reg}, {ADDR_V}, {IN_BASE} offset:{off}")
            words.append(col)
            if len(words) % 15 == 0:
                pro.append(f"s_add_u32 s40, s40, {256 * 15}")
                pro.append("s_addc_u32 s41, s41, 0")
    pro.append("s_waitcnt vmcnt(0)")
    if exec_mask is not None:
        pro.append(f"s_mov_b64 exec, {exec_mask:#x}")
    epi = ["s_waitcnt vmcnt(0) lgkmcnt(0)", "s_mov_b64 exec, -1", "s_nop 4"]
    out_regs: list[tuple[str, list[str]]] = []
    n_out = 0
    for name in outputs:
        regs = _regs(name)
        out_regs.append((name, regs))
        for reg in regs:
            if n_out and n_out % 15 == 0:
                epi.append(f"s_add_u32 s42, s42, {256 * 15}")
                epi.append("s_addc_u32 s43, s43, 0")
            if reg[0] == "v" and reg[1:].isdigit():
                epi.append(f"global_store_dword {ADDR_V}, {reg}, {OUT_BASE} "
                           f"offset:{256 * (n_out % 15)}")
            else:
                epi.append(f"v_mov_b32 {TMP_V}, {reg}")
                epi.append(f"global_store_dword {ADDR_V}, {TMP_V}, {OUT_BASE} "
                           f"offset:{256 * (n_out % 15)}")
            n_out += 1
    epi.append("s_endpgm")
    # Input chunks of 15 words are 15*256 bytes apart, matching the s_add above.
    inbuf = np.zeros(max(len(words), 1) * 64, np.uint32)
    for i, col in enumerate(words):
        inbuf[i * 64:(i + 1) * 64] = col
    outbuf = np.full(max(n_out, 1) * 64, 0xDEADBEEF, np.uint32)
    text = "\n".join(pro + [body] + epi)
    kd = kw.pop("kd", None) or descriptor(target, vgprs=64, sgprs=48,
                                           **kw.pop("kd_fields", {}))
    emu, addrs, _ = run(text, target=target, block=block, kd=kd,
                        args=[inbuf, outbuf], **kw)
    out = emu.memory.download(addrs[1], outbuf.size, np.uint32).reshape(-1, 64)
    result: dict[str, np.ndarray] = {}
    k = 0
    for name, regs in out_regs:
        cols = [out[k + i] for i in range(len(regs))]
        k += len(regs)
        result[name] = cols[0] if len(cols) == 1 else np.stack(cols, axis=1)
    return result


def f32(words: np.ndarray) -> np.ndarray:
    """Reinterpret uint32 lane words as float32."""
    return np.asarray(words, np.uint32).view(np.float32)


def f64(words: np.ndarray) -> np.ndarray:
    """Reinterpret (64, 2) dword pairs as float64."""
    return np.ascontiguousarray(words, np.uint32).view(np.float64).reshape(-1)


def u64(words: np.ndarray) -> np.ndarray:
    """Reinterpret (64, 2) dword pairs as uint64."""
    return np.ascontiguousarray(words, np.uint32).view(np.uint64).reshape(-1)


# ---------------------------------------------------------------------------- helper tests

def test_assemble_roundtrips_through_the_decoder():
    prog = program("v_add_f32 v1, v2, v3\ns_endpgm")
    assert [format_inst(p.inst) for p in prog] == ["v_add_f32_e32 v1, v2, v3", "s_endpgm"]
    assert prog[1].address == 0x10004


def test_vrun_harness_moves_values_through():
    x = np.arange(64, dtype=np.float32) * 1.5
    out = vrun("v_mov_b32 v2, v1\ns_mov_b32 s7, 42", {"v1": x}, ("v2", "s7"))
    assert np.array_equal(f32(out["v2"]), x)
    assert (out["s7"] == 42).all()
