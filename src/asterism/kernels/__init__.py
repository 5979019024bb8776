"""The kernel library: parameterized generators (GEMM, attention) with NumPy references, and
code objects the library does not own as entries (AMD AITER's flash attention, yours:
`register_code_object`, `load_library`; kernels/codeobject.py).

    from asterism import kernels
    case = kernels.get("gemm").build("gfx950", {"m": 512, "dtype": "bf16"})
    result = kernels.run_case(case, check=True)     # asterism.kernels.run

Each generator returns a `KernelCase`: the module (built with `asterism.builder`), its
launch geometry, NumPy arguments and reference (the arguments and the reference are made on
first use: building a code object never allocates them). Each declares what `--shape` means
for it (`Shape`: BATCHxHEADSxSEQxDIM for attention, MxNxK for GEMM). Sits above `builder/`
and `passes/`.
"""

from asterism.kernels.base import (
    KernelCase,
    KernelGenerator,
    KernelParamError,
    LazyArgs,
    Param,
    Shape,
    generators,
    get,
    register,
    require,
    unregister,
)
from asterism.kernels.codeobject import load_library, register_code_object
from asterism.kernels.run import (
    KernelCheck,
    KernelRun,
    build_code_object,
    format_list,
    format_run,
    list_rows,
    parse_params,
    parse_shape,
    run_case,
    run_report,
)

__all__ = ["KernelCase", "KernelCheck", "KernelGenerator", "KernelParamError", "KernelRun",
           "LazyArgs", "Param", "Shape", "build_code_object", "format_list", "format_run",
           "generators", "get", "list_rows", "load_library", "parse_params", "parse_shape",
           "register", "register_code_object", "require", "run_case", "run_report",
           "unregister"]
