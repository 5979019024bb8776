"""Emulator throughput benchmark: `python -m asterism.emu.bench [--target gfx942] [--repeat N]`.

Runs the demo's `add_10` kernel (address math, 10 dependent v_add_u32, one store) on 304
workgroups of one wave each and prints wave-instructions per second, with the sanitizer
and hazard checks on (the default) and off, and a divergent variant where every wave takes
its own path (the worst case for grouping waves by PC).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from asterism.emu.emulator import Emulator
from asterism.emu.memory import DeviceMemory
from asterism.mc.codeobject import make_kernel_descriptor
from asterism.mc.decoder import decode_code
from asterism.mc.encoder import ENCODER
from asterism.mc.inst import Inst
from asterism.mc.parser import parse_asm
from asterism.mc.program import LabelDef

ADD_10 = "\n".join([
    "s_load_dwordx2 s[4:5], s[0:1], 0",
    "v_lshl_add_u32 v1, s2, 6, v0",
    "v_lshlrev_b32 v2, 2, v1",
    *["v_add_u32 v1, 1, v1"] * 10,
    "s_waitcnt lgkmcnt(0)",
    "global_store_dword v2, v1, s[4:5]",
    "s_endpgm",
])

# Each wave loops (workgroup id % 8) + 1 times: waves split into 8 groups by PC.
DIVERGENT = "\n".join([
    "s_load_dwordx2 s[4:5], s[0:1], 0",
    "v_lshl_add_u32 v1, s2, 6, v0",
    "v_lshlrev_b32 v2, 2, v1",
    "s_and_b32 s6, s2, 7",
    "loop:",
    *["v_add_u32 v1, 1, v1"] * 10,
    "s_sub_u32 s6, s6, 1",
    "s_cmp_lg_u32 s6, -1",
    "s_cbranch_scc1 loop",
    "s_waitcnt lgkmcnt(0)",
    "global_store_dword v2, v1, s[4:5]",
    "s_endpgm",
])


def assemble_snippet(text: str, target: str) -> bytes:
    """Machine code of an instruction snippet (labels allowed) with asterism's encoder."""
    body = [item for k in parse_asm(text, "<bench>", target).kernels for item in k.body]
    labels = {item.name: 0 for item in body if isinstance(item, LabelDef)}
    code = bytearray()
    for _ in range(2):  # sizes do not depend on label values: the second pass is exact
        code = bytearray()
        for item in body:
            if isinstance(item, LabelDef):
                labels[item.name] = len(code)
            elif isinstance(item, Inst):
                code += ENCODER.encode(item, len(code), labels)
    return bytes(code)


def measure(text: str, target: str, *, sanitizer: bool, workgroups: int = 304,
            repeat: int = 5) -> tuple[float, int]:
    """(best wave-instructions per second, wave-instructions per launch)."""
    program = decode_code(assemble_snippet(text, target), target, 0x1000)
    kd = make_kernel_descriptor(target, next_free_vgpr=8, next_free_sgpr=16,
                                enable_sgpr_kernarg_segment_ptr=1,
                                enable_sgpr_workgroup_id_x=1)
    mem = DeviceMemory()
    out = mem.alloc(workgroups * 64 * 4)
    kernarg = mem.upload(np.array([out], np.uint64))
    emu = Emulator(target, mem, sanitizer=sanitizer)
    comp = emu.compile(program)
    best = 0.0
    count = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        stats = emu.run(comp, kd, grid=workgroups, block=64, kernarg_address=kernarg)
        dt = time.perf_counter() - t0
        count = stats.wave_instructions
        best = max(best, count / dt)
    got = mem.download(out, workgroups * 64, np.uint32)
    ids = np.arange(workgroups * 64, dtype=np.uint32)
    adds = 10 if text is ADD_10 else 10 * ((ids // 64) % 8 + 1)
    if not np.array_equal(got, ids + adds):
        raise AssertionError("benchmark kernel computed a wrong result")
    return best, count


def main(argv: list[str] | None = None) -> None:
    """Print the throughput table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="gfx942")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    for name, text in (("add_10", ADD_10), ("divergent", DIVERGENT)):
        for san in (True, False):
            rate, n = measure(text, args.target, sanitizer=san, repeat=args.repeat)
            print(f"{name:10s} sanitizer={'on ' if san else 'off'} {n:7d} wave-insts/launch  "
                  f"{rate / 1e6:7.2f} M wave-insts/s")


if __name__ == "__main__":
    main()
