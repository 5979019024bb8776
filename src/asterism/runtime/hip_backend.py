"""The HIP backend: runs code objects on a real AMD GPU through libamdhip64 (ctypes).

The library is found through ROCM_PATH, then the loader path (ldconfig / LD_LIBRARY_PATH),
then /opt/rocm. Every HIP call is checked; failures become `HipError` with the call, the
error name and its description.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

from asterism.errors import AsterismError
from asterism.mc.codeobject import CodeObject
from asterism.runtime.kernargs import PackedArgs

HIP_MEMCPY_HOST_TO_DEVICE = 1
HIP_MEMCPY_DEVICE_TO_HOST = 2
# hipModuleLaunchKernel "extra" markers for passing the kernarg buffer in one piece.
HIP_LAUNCH_PARAM_BUFFER_POINTER = ctypes.c_void_p(1)
HIP_LAUNCH_PARAM_BUFFER_SIZE = ctypes.c_void_p(2)
HIP_LAUNCH_PARAM_END = ctypes.c_void_p(3)
DEVICE_PROP_BUFFER = 4096  # hipDeviceProp_t is < 2 KiB; gcnArchName is a char[256] inside it


class HipError(AsterismError):
    """A HIP runtime call failed, or HIP is not usable here."""


def find_hip_library() -> str | None:
    """Path of libamdhip64.so, or None if it cannot be found."""
    candidates = []
    for env in ("ROCM_PATH", "HIP_PATH"):
        root = os.environ.get(env)
        if root:
            candidates += [Path(root) / "lib" / "libamdhip64.so",
                           Path(root) / "lib64" / "libamdhip64.so"]
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d:
            candidates.append(Path(d) / "libamdhip64.so")
    found = ctypes.util.find_library("amdhip64")
    if found:
        candidates.append(Path(found))
    candidates.append(Path("/opt/rocm/lib/libamdhip64.so"))
    for cand in candidates:
        if cand.is_absolute() and cand.exists():
            return str(cand)
        if not cand.is_absolute():
            return str(cand)  # a soname the loader resolves
    return None


class HipRuntime:
    """Thin checked wrappers over the HIP calls asterism needs."""

    def __init__(self, path: str | None = None):
        path = path or find_hip_library()
        if path is None:
            raise HipError("HIP runtime not found: install ROCm (libamdhip64.so) or set "
                           "ROCM_PATH; without a GPU use backend='emu'")
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as err:
            raise HipError(f"cannot load {path}: {err}") from None
        self.lib.hipGetErrorName.restype = ctypes.c_char_p
        self.lib.hipGetErrorString.restype = ctypes.c_char_p

    def check(self, status: int, call: str) -> None:
        """Raise HipError if a HIP call returned an error."""
        if status != 0:
            name = self.lib.hipGetErrorName(status) or b"?"
            text = self.lib.hipGetErrorString(status) or b""
            raise HipError(f"{call} failed: {name.decode()} ({text.decode()})")

    def device_count(self) -> int:
        """Number of visible HIP devices (0 when none)."""
        n = ctypes.c_int(0)
        status = self.lib.hipGetDeviceCount(ctypes.byref(n))
        return n.value if status == 0 else 0

    def arch_name(self, device: int = 0) -> str:
        """The device's gcnArchName, e.g. 'gfx942:sramecc+:xnack-'."""
        buf = ctypes.create_string_buffer(DEVICE_PROP_BUFFER)
        getter = getattr(self.lib, "hipGetDevicePropertiesR0600", None) or \
            self.lib.hipGetDeviceProperties
        self.check(getter(buf, device), "hipGetDeviceProperties")
        raw = buf.raw
        # gcnArchName is the only 'gfx...' string in the structure.
        start = raw.find(b"gfx")
        if start < 0:
            raise HipError("cannot read the device's gcnArchName")
        return raw[start:raw.index(b"\0", start)].decode()


def hip_device_matches(target: str) -> bool:
    """True if HIP is available and device 0 is a `target` GPU."""
    try:
        rt = HipRuntime()
        return rt.device_count() > 0 and rt.arch_name().split(":")[0] == target
    except HipError:
        return False


class HipBackend:
    """Executes kernels on device 0 through HIP."""

    name = "hip"

    def __init__(self):
        self.rt = HipRuntime()
        if self.rt.device_count() == 0:
            raise HipError("HIP found no GPU; use backend='emu'")
        self._modules: dict[int, ctypes.c_void_p] = {}

    def device_name(self) -> str:
        """The device's architecture name."""
        return self.rt.arch_name()

    def _function(self, obj: CodeObject, data: bytes, name: str) -> ctypes.c_void_p:
        arch = self.rt.arch_name().split(":")[0]
        if arch != obj.target.name:
            raise HipError(f"the code object is for {obj.target.name} but the GPU is {arch}")
        module = self._modules.get(id(obj))
        if module is None:
            module = ctypes.c_void_p()
            self._image = ctypes.create_string_buffer(data, len(data))
            self.rt.check(self.rt.lib.hipModuleLoadData(ctypes.byref(module), self._image),
                          "hipModuleLoadData")
            self._modules[id(obj)] = module
        fn = ctypes.c_void_p()
        self.rt.check(self.rt.lib.hipModuleGetFunction(ctypes.byref(fn), module,
                                                       name.encode()), "hipModuleGetFunction")
        return fn

    def launch(self, obj: CodeObject, kernel, packed: PackedArgs, grid, block,
               iterations: int, data: bytes) -> tuple[list[float], None]:
        """Copy in, launch `iterations` times (timed with HIP events), copy out."""
        lib, check = self.rt.lib, self.rt.check
        fn = self._function(obj, data, kernel.name)
        ptrs = []
        try:
            for buf in packed.buffers:
                p = ctypes.c_void_p()
                check(lib.hipMalloc(ctypes.byref(p), ctypes.c_size_t(max(1, buf.array.nbytes))),
                      "hipMalloc")
                ptrs.append(p)
                if buf.copy_in and buf.array.nbytes:
                    check(lib.hipMemcpy(p, buf.array.ctypes.data_as(ctypes.c_void_p),
                                        ctypes.c_size_t(buf.array.nbytes),
                                        HIP_MEMCPY_HOST_TO_DEVICE), "hipMemcpy")
                packed.set_pointer(buf, p.value or 0)
            seg = ctypes.create_string_buffer(bytes(packed.segment), len(packed.segment))
            size = ctypes.c_size_t(len(packed.segment))
            extra = (ctypes.c_void_p * 5)(HIP_LAUNCH_PARAM_BUFFER_POINTER,
                                          ctypes.cast(seg, ctypes.c_void_p),
                                          HIP_LAUNCH_PARAM_BUFFER_SIZE,
                                          ctypes.cast(ctypes.pointer(size), ctypes.c_void_p),
                                          HIP_LAUNCH_PARAM_END)
            start, stop = ctypes.c_void_p(), ctypes.c_void_p()
            check(lib.hipEventCreate(ctypes.byref(start)), "hipEventCreate")
            check(lib.hipEventCreate(ctypes.byref(stop)), "hipEventCreate")
            times = []
            for _ in range(iterations):
                check(lib.hipEventRecord(start, None), "hipEventRecord")
                check(lib.hipModuleLaunchKernel(fn, *grid, *block, 0, None, None, extra),
                      "hipModuleLaunchKernel")
                check(lib.hipEventRecord(stop, None), "hipEventRecord")
                check(lib.hipEventSynchronize(stop), "hipEventSynchronize")
                ms = ctypes.c_float()
                check(lib.hipEventElapsedTime(ctypes.byref(ms), start, stop),
                      "hipEventElapsedTime")
                times.append(ms.value / 1000.0)
            for buf, p in zip(packed.buffers, ptrs):
                if buf.copy_out and buf.array.nbytes:
                    check(lib.hipMemcpy(buf.array.ctypes.data_as(ctypes.c_void_p), p,
                                        ctypes.c_size_t(buf.array.nbytes),
                                        HIP_MEMCPY_DEVICE_TO_HOST), "hipMemcpy")
            return times, None
        finally:
            for p in ptrs:
                lib.hipFree(p)
