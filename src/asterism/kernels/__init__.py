"""The kernel library: parameterized generators (GEMM, attention) with NumPy references.

    from asterism import kernels
    case = kernels.get("gemm").build("gfx950", {"m": 512, "dtype": "bf16"})
    result = kernels.run(case, check=True)

Each generator returns a `KernelCase`: the module (built with `asterism.builder`), its
launch geometry, NumPy arguments and reference. Sits above `builder/` and `passes/`.
"""

from asterism.kernels.base import (
    KernelCase,
    KernelGenerator,
    KernelParamError,
    Param,
    generators,
    get,
    register,
    require,
)

__all__ = ["KernelCase", "KernelGenerator", "KernelParamError", "Param", "generators", "get",
           "register", "require"]
