"""Code objects the library does not own, as library entries like any other.

An entry made here is a `KernelGenerator` whose cases launch a code object as shipped
(`KernelCase.code`: no module, no pipeline): `kernels list` shows where it comes from, and
`kernels run NAME --check --timing` runs it on the emulator against its reference, under the
timing model, exactly as it runs asterism's own kernels. The sanitizer defaults to warn for
such code objects (runtime.default_sanitizer). Two ways to add one:

* Python: `register_code_object(name, code, args=..., grid=..., reference=...)`. Every
  argument that depends on the problem is a function of (target, params), so an entry can
  take parameters and a `--shape` as asterism's generators do (kernels/aiter.py registers
  AMD's AITER flash-attention objects this way):

      from asterism import kernels
      kernels.register_code_object(
          "add_10_user", "add_10.hsaco", kernel="add_10", grid=(4, 1, 1),
          args=lambda target, p: {"out": np.zeros(256, np.int32)}, outputs=("out",),
          reference=lambda args, p: {"out": np.arange(256) + 10})
      run = kernels.run_case(kernels.get("add_10_user").build(), check=True)

* A manifest, a JSON file that `asterism kernels list|run|build --library FILE` loads
  (`load_library(path)` in Python): fixed-size entries whose arguments are written in the
  `asterism run --arg` spec language (runtime/argspec.py) and whose reference is a .npy file
  per checked output:

      {"asterism_kernels": 1,
       "kernels": [{"name": "add_10_user", "code_object": "add_10.hsaco",
                    "kernel": "add_10", "grid": [4], "block": [64],
                    "args": {"out": "zeros:256:i32"},
                    "expected": {"out": "add_10_expected.npy"},
                    "description": "out[i] = i + 10", "origin": "examples/demo/add_10.mlir"}]}

  Keys: name, code_object (required), kernel (the symbol; optional when the code object
  has one kernel), grid (1 to 3 workgroup counts), block (optional: the metadata's
  reqd_workgroup_size, else 64), args (metadata argument name -> spec; required for every
  explicit argument), expected (output -> .npy; the outputs `--check` compares),
  tolerance ([atol, rtol], default exact), description, origin. Files are plain names in
  the manifest's folder (no paths, no symbolic links), read with the size bounds of every
  input file; `rand` specs are seeded by the entry's `seed` parameter.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from typing import Any

from asterism.kernels.base import (
    KernelCase,
    KernelGenerator,
    KernelParamError,
    LazyArgs,
    Param,
    Shape,
    register,
)

# A code object given as bytes, a path, or a function of (target, params) giving either.
CodeSource = Any
NO_SHAPE = Shape()  # an entry without --shape
MANIFEST_VERSION = 1
MANIFEST_MAX_BYTES = 1 << 20  # a manifest is a short list of entries
MANIFEST_MAX_DEPTH = 8  # {"kernels": [{"args": {...}}]} nests 4 deep
CODE_OBJECT_MAX_BYTES = 64 << 20
_MANIFEST_KEYS = {"name", "code_object", "kernel", "grid", "block", "args", "expected",
                  "tolerance", "description", "origin"}


def register_code_object(name: str, code: CodeSource, **options: Any) -> KernelGenerator:
    """Register a code object as the library entry `name` (see the module docstring) and
    return its generator. What may depend on the problem is a value or a function of `p`:
    the entry's parameters (a dict), or whatever `check` returns for them:

    check     f(target, params) -> p: raises KernelParamError for a problem the kernel
              cannot run, and returns what the other functions receive as `p` (a config
              derived from the parameters; None: the parameters themselves);
    code      bytes or a path (.hsaco/.co), or f(target, p) giving one;
    args      f(target, p) -> {argument name: array or scalar}, made on first use
              (`arg_names` lists the names up front; without it the maker runs once to
              learn them); the names are the metadata's unless `pack` lays them out;
    grid      (x, y, z) workgroups or f(target, p); block likewise (default: the
              metadata's reqd_workgroup_size, else 64);
    outputs   the arguments the kernel writes that `--check` compares, or f(target, p);
    reference f(args, p) -> {output: expected values} (None: cannot be checked);
    pack      f(args, p) -> runtime.PackedArgs, for a kernarg layout the metadata cannot
              describe by name (AITER's struct); None: packed from the metadata by name;
    atol      a number or f(args, p); rtol a number; decode f(name, array) -> the values
              to compare (e.g. bf16 codes -> floats); flops a number or f(p);
    params / shape / targets / description / origin as KernelGenerator's (origin: what the
    code object is and where it comes from, shown by `kernels list`).
    """
    return register(code_object_entry(name, code, **options))


def code_object_entry(name: str, code: CodeSource, *, args: Any, grid: Any,
                      outputs: Sequence[str] = (), reference: Any = None,
                      kernel: str | None = None, block: Any = None, pack: Any = None,
                      params: Sequence[Param] = (), shape: Shape = NO_SHAPE,
                      targets: Sequence[str] | None = None, atol: Any = 0.0,
                      rtol: float = 0.0, decode: Any = None, flops: Any = 0,
                      check: Any = None, arg_names: Sequence[str] | None = None,
                      description: str = "", origin: str = "") -> KernelGenerator:
    """The generator `register_code_object` registers (its options, as keywords), not
    registered."""
    if targets is None:
        if callable(code):
            raise KernelParamError(f"kernel {name}: a code object given as a function needs "
                                   "targets=")
        targets = (_code_object(name, code).target.name,)

    def build_case(target: str, params: dict[str, Any]) -> KernelCase:
        p = check(target, params) if check is not None else None
        p = params if p is None else p
        data = _bytes(name, code(target, p) if callable(code) else code)
        obj = _code_object(name, data)
        if obj.target.name != target:
            raise KernelParamError(f"kernel {name}: its code object is for {obj.target.name}, "
                                   f"not {target}")
        symbol = _symbol(name, obj, kernel)
        meta = next(k for k in obj.kernels if k.name == symbol).metadata or {}
        made = LazyArgs(list(arg_names) if arg_names is not None else None,
                        lambda: args(target, p))

        def expected() -> dict[str, Any]:
            return reference(made, p)

        reqd = meta.get(".reqd_workgroup_size")
        return KernelCase(
            name=name, target=target, params=dict(params), module=None, kernel=symbol,
            grid=_dim3(name, "grid", _value(grid, target, p)),
            block=_dim3(name, "block", _value(block, target, p) if block is not None
                        else tuple(reqd or (64,))),
            args=made, outputs=tuple(_value(outputs, target, p)),
            reference=expected if reference is not None else None,
            atol=(lambda: atol(made, p)) if callable(atol) else float(atol), rtol=float(rtol),
            flops=int(flops(p) if callable(flops) else flops), decode=decode, code=data,
            pack=(lambda values: pack(values, p)) if pack is not None else None,
            notes={"origin": origin})

    return KernelGenerator(name=name, description=description or f"code object {name}",
                           targets=tuple(targets), params=tuple(params), build_case=build_case,
                           shape=shape, origin=origin or name)


# ------------------------------------------------------------------------------ manifest


def load_library(path: str | os.PathLike[str]) -> list[KernelGenerator]:
    """Register every entry of a manifest (see the module docstring); returns them."""
    from asterism.textio import load_json_bounded

    name = os.fspath(path)
    doc = load_json_bounded(name, max_depth=MANIFEST_MAX_DEPTH, max_bytes=MANIFEST_MAX_BYTES,
                            error=KernelParamError)
    if not isinstance(doc, dict) or doc.get("asterism_kernels") != MANIFEST_VERSION:
        raise KernelParamError(f"{name}: not a kernel library manifest (expected an object "
                               f'with "asterism_kernels": {MANIFEST_VERSION} and "kernels")')
    entries = doc.get("kernels")
    if not isinstance(entries, list):
        raise KernelParamError(f'{name}: "kernels" must be a list of entries')
    folder = os.path.dirname(os.path.abspath(name))
    gens = [_manifest_entry(name, folder, i, entry) for i, entry in enumerate(entries)]
    return [register(g) for g in gens]


def _manifest_entry(manifest: str, folder: str, index: int, entry: Any) -> KernelGenerator:
    """The generator of one manifest entry (checked; nothing is run or allocated)."""
    where = f"{manifest}: kernels[{index}]"
    if not isinstance(entry, dict):
        raise KernelParamError(f"{where}: an entry must be an object")
    unknown = sorted(set(entry) - _MANIFEST_KEYS)
    if unknown:
        raise KernelParamError(f"{where}: unknown key(s) {', '.join(unknown)} (known: "
                               f"{', '.join(sorted(_MANIFEST_KEYS))})")
    name = _text(entry, "name", where, required=True)
    where = f"{manifest}: kernel {name}"
    code_path = _file(folder, _text(entry, "code_object", where, required=True), where,
                      "code_object")
    data = _read(code_path, where, "code object", CODE_OBJECT_MAX_BYTES)
    obj = _code_object(name, data)
    symbol = _symbol(name, obj, _text(entry, "kernel", where))
    meta = next(k for k in obj.kernels if k.name == symbol).metadata or {}
    specs = _mapping(entry, "args", where, str | int | float)
    from asterism.runtime.kernargs import explicit_args

    params_meta = {a.get(".name"): a for a in explicit_args(meta)}
    missing = [n for n in params_meta if n not in specs]
    extra = [n for n in specs if n not in params_meta]
    if missing or extra:
        raise KernelParamError(f"{where}: args must name each argument of {symbol} "
                               f"({', '.join(map(str, params_meta)) or 'none'})"
                               + (f"; missing {', '.join(map(str, missing))}" if missing else "")
                               + (f"; unknown {', '.join(extra)}" if extra else ""))
    expected = {k: _file(folder, v, where, f"expected.{k}")
                for k, v in _mapping(entry, "expected", where, str).items()}
    for out in expected:
        if out not in specs:
            raise KernelParamError(f"{where}: expected.{out} is not an argument of {symbol}")
    tolerance = entry.get("tolerance", [0, 0])
    if not (isinstance(tolerance, list) and len(tolerance) == 2 and all(
            isinstance(t, int | float) and not isinstance(t, bool) and t >= 0
            for t in tolerance)):
        raise KernelParamError(f"{where}: tolerance must be [atol, rtol], two numbers >= 0")
    grid = _dims(entry.get("grid"), where, "grid")
    block = _dims(entry["block"], where, "block") if "block" in entry else None

    def make_args(target: str, p: dict[str, Any]) -> dict[str, Any]:
        from asterism.runtime.argspec import make_arg

        out = {}
        for i, (arg, spec) in enumerate(specs.items()):
            text = str(spec)
            if text.endswith(".npy"):
                text = _file(folder, text, where, f"args.{arg}")
                out[arg] = _npy(text, where)
            else:
                out[arg] = make_arg(text, params_meta[arg], p["seed"] + i,
                                    what=f"{where}: args")
        return out

    def reference(args: Mapping[str, Any], p: dict[str, Any]) -> dict[str, Any]:
        return {out: _npy(path, where) for out, path in expected.items()}

    return code_object_entry(
        name, data, kernel=symbol, args=make_args, arg_names=list(specs), grid=grid,
        block=block, outputs=tuple(expected), reference=reference if expected else None,
        atol=float(tolerance[0]), rtol=float(tolerance[1]),
        params=(Param("seed", 0, "seed of the rand: argument specs"),),
        description=_text(entry, "description", where) or f"code object {entry['code_object']}",
        origin=_text(entry, "origin", where) or f"{entry['code_object']} (manifest {manifest})")


def _text(entry: dict, key: str, where: str, required: bool = False) -> str:
    value = entry.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value:
        raise KernelParamError(f"{where}: {key} must be a non-empty string")
    return value


def _mapping(entry: dict, key: str, where: str, kinds: Any) -> dict[str, Any]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(
            isinstance(v, kinds) and not isinstance(v, bool) for v in value.values()):
        raise KernelParamError(f"{where}: {key} must map names to specs (text or numbers)")
    return value


def _dims(value: Any, where: str, what: str) -> tuple[int, ...]:
    if not (isinstance(value, list) and 1 <= len(value) <= 3 and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)):
        raise KernelParamError(f"{where}: {what} must be 1 to 3 positive integers, got "
                               f"{value!r}")
    return tuple(value)


def _file(folder: str, name: str, where: str, key: str) -> str:
    """A file named in a manifest: a plain file name in the manifest's folder."""
    from asterism.paths import safe_child_path

    return safe_child_path(folder, name, f"{where}: {key}", KernelParamError,
                           hint="files sit beside the manifest")


def _read(path: str, where: str, what: str, limit: int) -> bytes:
    from asterism.textio import read_input_file

    return read_input_file(path, max_bytes=limit, follow_links=False, error=KernelParamError,
                           what=f"{what} of {where}")


def _npy(path: str, where: str) -> Any:
    """One array from a .npy file of a manifest (no pickles; bounded as any input)."""
    import numpy as np

    from asterism.textio import INPUT_MAX_BYTES

    data = _read(path, where, "NumPy file", INPUT_MAX_BYTES)
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as err:
        raise KernelParamError(f"{path}: not a NumPy .npy file ({err}) ({where})") from None
    if not isinstance(array, np.ndarray):
        raise KernelParamError(f"{path}: does not hold one array ({where})")
    return array


# ------------------------------------------------------------------------------ helpers


def _bytes(name: str, code: Any) -> bytes:
    """The code object's bytes from bytes or a path."""
    if isinstance(code, bytes | bytearray):
        return bytes(code)
    if isinstance(code, str | os.PathLike):
        from asterism.textio import read_input_file

        return read_input_file(code, max_bytes=CODE_OBJECT_MAX_BYTES, error=KernelParamError,
                               what=f"code object of kernel {name}")
    raise KernelParamError(f"kernel {name}: code must be bytes or a path to a code object, "
                           f"got {type(code).__name__}")


def _code_object(name: str, code: Any):
    """The parsed code object (a CodeObjectError names what is wrong with it)."""
    from asterism.mc.codeobject import read_code_object

    return read_code_object(_bytes(name, code))


def _symbol(name: str, obj, kernel: str | None) -> str:
    """The kernel symbol to launch: `kernel`, or the only one in the code object."""
    names = [k.name for k in obj.kernels]
    if kernel is None:
        if len(names) != 1:
            raise KernelParamError(f"kernel {name}: its code object has {len(names)} kernels "
                                   f"({', '.join(names) or 'none'}): name one with kernel=")
        return names[0]
    if kernel not in names:
        raise KernelParamError(f"kernel {name}: no kernel {kernel!r} in its code object "
                               f"(kernels: {', '.join(names) or 'none'})")
    return kernel


def _value(value: Any, target: str, p: dict[str, Any]) -> Any:
    return value(target, p) if callable(value) else value


def _dim3(name: str, what: str, value: Any) -> tuple[int, int, int]:
    vals = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(vals) <= 3 or not all(isinstance(v, int) and v >= 1 for v in vals):
        raise KernelParamError(f"kernel {name}: {what} must be 1 to 3 positive integers, got "
                               f"{value!r}")
    return (*vals, *(1,) * (3 - len(vals)))  # type: ignore[return-value]


__all__ = ["code_object_entry", "load_library", "register_code_object"]

