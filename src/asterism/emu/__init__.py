"""asterism.emu: the built-in emulator (the default backend when no AMD GPU is present).

It executes the decoded machine code of a kernel for gfx942 (CDNA3) and gfx950 (CDNA4),
wave64. Waves that share a program counter run together as NumPy arrays (waves x 64 lanes).

API
    emu = Emulator("gfx942", DeviceMemory(), sanitizer=True, instruction_budget=10_000_000)
    addr = emu.memory.upload(array)                  # device memory with its own allocator
    stats = emu.run(program, descriptor, grid=(gx, gy, gz), block=(bx, by, bz),
                    kernarg_address=ka, kernel="name")
`program` is the decoder's output (`decode_code(bytes, target, base)`: instructions with
addresses) or `emu.compile(program)` (reusable); `descriptor` a `KernelDescriptor`; `grid`
counts workgroups. `RunStats` reports waves, wave-instructions, time, splits/merges.
Errors (all `AsterismError`): `EmulatorFault` (bad address, s_trap...), `SanitizerError`
(missing s_waitcnt / s_nop, with `.needed`), `BudgetExceeded`, `UnsupportedInstruction`,
`DeadlockError`; each names kernel, pc, instruction text, workgroup, wave (lane, address).
`Emulator(..., dispatch_hook=hook)` hands each prepared dispatch (`emulator.Dispatch`) to
`hook.run_dispatch` instead of the plain batch loop: the timing model
(asterism.timing.functional.TimedRun) runs its modeled workgroups that way. The emulator
imports no timing code.

Modules: emulator.py (dispatch ABI, scheduler, barriers), info.py (what is known of each
instruction before the run: `OpInfo`, `make_infos`), compiler.py (pre-decoding every
instruction into a closure with resolved operand accessors), semantics/ (one module per
family behind a registry: SALU, branches, VALU, conversions, MFMA adapter to mfma.py,
SMEM/VMEM, LDS), sops.py / vops.py (scalar and vector operands), spaces.py / memory.py
(address spaces, allocator), sanitizer.py (s_waitcnt model), hazard_check.py (wait-state
rules of asterism.target.hazards), bench.py (`python -m asterism.emu.bench`).

Execution model and assumptions
* Memory instructions access memory when they issue, in program order; the sanitizer models
  when their results may be read: vmcnt returns in issue order (loads, stores, atomics),
  lgkmcnt is in order for LDS and out of order for SMEM. Reading or overwriting a register a
  pending load will write is an error naming the smallest `s_waitcnt` that fixes it. Store
  data is read at issue as on GFX9 hardware; `strict_store_data=True` additionally locks the
  data registers of a store until its counter retires it. Every program the sanitizer accepts
  computes the same result on the hardware, whatever the memory latencies (for one wave;
  races between waves are not detected).
* Wait states (hazards) follow LLVM's GCNHazardRecognizer for gfx942/gfx950 (the table is in
  asterism/target/hazards.py); only the latest writer of a register counts.
* Sanitizer modes (`Emulator(sanitizer=...)`): "error" (True, the default) raises the first
  violation; "warn" reports each distinct one once (RunStats.sanitizer) and runs on; "off"
  (False). What the emulator computes when a rule is not honoured: sanitizer.KINDS
  (docs/sanitizer.md).
* Float arithmetic rounds to nearest even; f32 and f16/f64 denormals follow the MODE register
  (descriptor float_denorm_mode_*; s_setreg of MODE updates it); FMA is fused (single
  rounding); transcendentals are the exactly rounded results (hardware: within 1 ULP);
  v_min/v_max follow IEEE mode (NaN loses against a number, -0 < +0); clamp maps NaN to 0.
  bf16 conversion rounds to nearest even. fp8/bf8 are FNUZ on gfx942, OCP on gfx950
  (numerics.py).
* Transposed LDS reads (ds_read_b64_tr_b*): each 16-lane group reads an (E x 16) tile whose
  rows are spread over 16/E consecutive lanes; lane j receives column j.
* LDS accesses outside the workgroup's allocation fault (the hardware would return 0 /
  drop them); buffer (MUBUF) accesses outside num_records return 0 / are dropped as on
  hardware (soffset is not part of the range check); swizzled buffers are not modeled.
* MFMA results are written under EXEC as other VALU results.

Not implemented (stops with UnsupportedInstruction): s_sendmsg/s_sendmsghalt, GPR index mode
(s_set_gpr_idx_*), s_cbranch_g_fork/i_fork/join and the cdbg branches, s_setvskip, s_rfe_*
(no trap handler: s_trap is an EmulatorFault), s_endpgm_saved/ordered_ps_done, s_setreg of
hardware registers other than MODE/TRAPSTS, s_scratch_* (scalar scratch), GDS/GWS,
ds_append/consume/condxchg, v_screen_partition_4se_b32, a standalone v_mfma_ld_scale_b32.
Non-nearest rounding modes (descriptor or s_setreg) are rejected with an error.
"""

from asterism.emu.emulator import Compiled, Emulator, RunStats
from asterism.emu.errors import (
    BudgetExceeded,
    DeadlockError,
    EmulatorError,
    EmulatorFault,
    SanitizerError,
    UnsupportedInstruction,
)
from asterism.emu.memory import DeviceMemory, MemoryAccessError

__all__ = [
    "BudgetExceeded",
    "Compiled",
    "DeadlockError",
    "DeviceMemory",
    "Emulator",
    "EmulatorError",
    "EmulatorFault",
    "MemoryAccessError",
    "RunStats",
    "SanitizerError",
    "UnsupportedInstruction",
]
