"""asterism: AMD GPU assembly with the rigor of a compiler and the control of hand-written code.

One-call functions (loaded on first use, so `import asterism` stays cheap):
    asterism.parse(text)        amdgcn IR text -> module
    asterism.translate(module)  IR -> LLVM-syntax assembly
    asterism.compile(module)    IR -> code object bytes (no external tool)
    asterism.assemble(asm)      assembly -> code object bytes
    asterism.disassemble(co)    code object -> decoded instructions
    asterism.raise_kernel(co)   code object / assembly -> editable amdgcn IR
    asterism.launch(co, "kernel", grid=..., block=..., args=[...])   run it (emulator / HIP)
    asterism.sweep("gemm", {"tile_m": [64, 128]})   parameter sweep (asterism/sweep/api.py)
"""

from asterism.version import __version__ as __version__

_API = {"parse", "translate", "compile", "assemble", "disassemble", "optimize", "lower",
        "retarget", "raise_kernel"}


def __getattr__(name: str):
    if name in _API:
        from asterism import api

        return getattr(api, name)
    if name == "launch":
        from asterism.runtime import launch

        return launch
    if name == "sweep":  # the package asterism.sweep, callable as asterism.sweep(...)
        import importlib

        return importlib.import_module("asterism.sweep")
    raise AttributeError(f"module 'asterism' has no attribute {name!r}")
