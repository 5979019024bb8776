"""The emulator backend: runs a code object's kernel on the built-in emulator (no GPU)."""

from __future__ import annotations

import numpy as np

from asterism.emu import DeviceMemory, Emulator
from asterism.mc.codeobject import CodeObject
from asterism.mc.decoder import decode_code
from asterism.runtime.kernargs import PackedArgs
from asterism.target import Target

# Decoded kernels kept per backend (a sweep or a test session launches many code objects).
PROGRAM_CACHE_ENTRIES = 64

class EmuBackend:
    """Executes kernels with asterism's emulator; device memory is the emulator's."""

    name = "emu"

    def __init__(self, *, sanitizer: bool | str = True, instruction_budget: int = 10_000_000):
        self.sanitizer = sanitizer  # the default mode (a launch may name another)
        self.instruction_budget = instruction_budget
        self._emulators: dict[str, Emulator] = {}
        self._programs: dict[tuple[str, int, bytes], list] = {}
        self.memory = DeviceMemory()

    def device_name(self) -> str:
        """What runs the kernels."""
        return "asterism emulator (NumPy)"

    def _emulator(self, target: Target, sanitizer: bool | str) -> Emulator:
        # One emulator per target ID and sanitizer mode: the code object's xnack setting
        # (e_flags) decides whether the hazard checker enforces the XNACK soft-clause rules.
        key = (target.processor_id, sanitizer)
        emu = self._emulators.get(key)
        if emu is None:
            emu = Emulator(target, self.memory, sanitizer=sanitizer,
                           instruction_budget=self.instruction_budget)
            self._emulators[key] = emu
        return emu

    def _program(self, obj: CodeObject, kernel) -> list:
        """The decoded instructions of `kernel`, cached by what is decoded (target, address,
        bytes): an id-keyed cache handed a later code object that reused a freed one's id
        the old program (a stale kernel run with a new descriptor)."""
        start = kernel.offset
        end = start + (kernel.size or len(obj.text) - start)
        code = bytes(obj.text[start:end])
        key = (obj.target.name, obj.text_address + start, code)
        program = self._programs.pop(key, None)
        if program is None:
            program = decode_code(code, obj.target.name, base=obj.text_address + start)
        self._programs[key] = program  # (most recent last: the oldest goes first)
        while len(self._programs) > PROGRAM_CACHE_ENTRIES:
            del self._programs[next(iter(self._programs))]
        return program

    def launch(self, obj: CodeObject, kernel, packed: PackedArgs, grid, block,
               iterations: int, timing=None, max_instructions: int | None = None,
               progress=None, sanitizer: bool | str | None = None,
               on_violation=None) -> tuple[list[float], object]:
        """Run `iterations` launches; returns (seconds per launch, stats of the last).
        `timing`: timing.params.TimingOptions to run the timing model (stats.timing);
        `max_instructions`: the per-wave budget of these launches (default the backend's);
        `progress`: an emu.progress.RunProgress for long runs; `sanitizer`: the mode of these
        launches (error, warn, off; default the backend's) and `on_violation` what sees each
        new warn-mode violation (emu.Emulator)."""
        budget = max_instructions or self.instruction_budget
        mode = self.sanitizer if sanitizer is None else sanitizer
        if timing is None:
            emu = self._emulator(obj.target, mode)
            emu.instruction_budget = budget
        else:
            # A timed emulator per launch call: the options differ from call to call.
            from asterism.timing.functional import TimedRun

            emu = Emulator(obj.target, self.memory, sanitizer=mode,
                           instruction_budget=budget, dispatch_hook=TimedRun(timing))
        emu.on_violation = on_violation
        program = self._program(obj, kernel)
        _check_room(kernel.name, packed)
        mem = self.memory
        addresses = []
        try:
            for buf in packed.buffers:
                addr = mem.alloc(max(1, buf.array.nbytes), name=buf.name)
                addresses.append(addr)
                if buf.copy_in:
                    mem.write(addr, buf.array)  # (write_only buffers start as the zeros)
                packed.set_pointer(buf, addr)
            kernarg = mem.alloc(max(16, len(packed.segment)), name="kernarg")
            addresses.append(kernarg)
            mem.write(kernarg, bytes(packed.segment))
            times, stats = [], None
            for _ in range(iterations):
                stats = emu.run(program, kernel.descriptor, grid=grid, block=block,
                                kernarg_address=kernarg, kernel=kernel.name, progress=progress)
                times.append(stats.seconds)
            for buf, addr in zip(packed.buffers, addresses):
                if buf.copy_out and buf.array.nbytes:
                    # Straight from device memory into the caller's array (any layout).
                    device = mem.view(addr, np.uint8, buf.array.nbytes)
                    np.copyto(buf.array, device.view(buf.array.dtype).reshape(buf.array.shape))
            return times, stats
        finally:
            emu.instruction_budget = self.instruction_budget  # (the cached emulator's default)
            emu.on_violation = None
            for addr in addresses:
                mem.free(addr)


def _check_room(kernel: str, packed: PackedArgs) -> None:
    """Refuse, before copying anything, a launch whose device copies of the buffers (plus
    the pages of the output arrays the results land in) do not fit the memory budget."""
    from asterism.support.limits import check_memory, format_bytes

    buffers = sorted(packed.buffers, key=lambda b: -b.array.nbytes)
    need = sum(b.array.nbytes * (2 if b.copy_out else 1) for b in buffers)
    named = ", ".join(f"{b.name} {format_bytes(b.array.nbytes)}" for b in buffers[:3])
    more = f" and {len(buffers) - 3} more" if len(buffers) > 3 else ""
    check_memory(need, f"launching {kernel} on the emulator (device copies of the arguments "
                       f"{named}{more}, and the outputs written back)",
                 hint="use smaller arguments")
