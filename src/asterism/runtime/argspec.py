"""Kernel arguments from short text specs: what `asterism run --arg` and a kernel library
manifest (`asterism kernels --library FILE`) accept.

    zeros:256[:i32]  ones:64x4:f32  arange:256:i32  rand:1024:f16  full:16:f32:1.5
    input.npy        a NumPy file
    42, 0x10, 1.5    a by-value scalar

The dtype defaults to the argument's C type in the kernel's metadata (float32 when none);
`rand` draws from a NumPy generator seeded by the caller. Sizes are checked against the
memory budget before anything is allocated.
"""

from __future__ import annotations

from asterism.errors import AsterismError

ARRAY_MAKERS = ("zeros", "ones", "arange", "rand", "full")


def make_arg(spec: str, param: dict | None, seed: int, what: str = "--arg"):
    """A NumPy array or scalar from an argument spec (see the module docstring); errors
    start with `what` and the argument's name."""
    import numpy as np

    from asterism.runtime.kernargs import TYPE_NAME_DTYPES

    name = (param or {}).get(".name", "?")
    tname = str((param or {}).get(".type_name", "")).rstrip("*")
    default = TYPE_NAME_DTYPES.get(tname, "float32")
    parts = spec.split(":")
    if parts[0] in ARRAY_MAKERS:
        if len(parts) < 2:
            raise AsterismError(f"{what} {name}: '{spec}' needs a shape, e.g. {parts[0]}:256")
        try:
            shape = tuple(int(x) for x in parts[1].split("x"))
            dtype = np.dtype(_DTYPE_ALIASES.get(parts[2], parts[2]) if len(parts) > 2
                             else default)
        except (ValueError, TypeError, SyntaxError):  # np.dtype("024") raises SyntaxError
            raise AsterismError(f"{what} {name}: bad shape or dtype in '{spec}'") from None
        if min(shape) < 0:
            raise AsterismError(f"{what} {name}: negative size in '{spec}'")
        if dtype.kind not in "biuf":
            # Kernel arguments are numbers: strings, objects and raw bytes have no meaning.
            raise AsterismError(f"{what} {name}: '{dtype}' is not a numeric dtype in '{spec}'")
        if parts[0] == "full" and len(parts) < 4:
            raise AsterismError(f"{what} {name}: full needs a value: full:N:dtype:VALUE")
        import math

        from asterism.support.limits import check_memory

        # (rand and arange draw int64 / float64 values first, then convert)
        scratch = 8 if parts[0] in ("rand", "arange") else 0
        check_memory(math.prod(shape) * (dtype.itemsize + scratch), f"{what} {name} ({spec})")
        try:
            return _make_array(parts, shape, dtype, seed)
        except (ValueError, OverflowError, MemoryError) as err:
            raise AsterismError(f"{what} {name}: cannot make '{spec}': {err}") from None
    if spec.endswith(".npy"):
        try:
            array = np.load(spec)
        except OSError as err:
            raise AsterismError(f"{what} {name}: cannot read {spec}: {err}") from None
        except (ValueError, EOFError) as err:  # not a .npy file (text, pickle, truncated)
            raise AsterismError(f"{what} {name}: {spec} is not a NumPy .npy file ({err})"
                                ) from None
        if not isinstance(array, np.ndarray):
            raise AsterismError(f"{what} {name}: {spec} does not hold one array")
        return array
    try:
        return float(spec) if any(c in spec for c in ".eE") and not spec.startswith("0x") \
            else int(spec, 0)
    except ValueError:
        raise AsterismError(f"{what} {name}: cannot understand '{spec}' (expected a number, a "
                            f"file.npy or one of {', '.join(ARRAY_MAKERS)}:SHAPE[:DTYPE])"
                            ) from None


def _number(text: str) -> int | float:
    """An integer (decimal, 0x, 0b, 0o) or else a float (1.5, 1e3, inf, nan)."""
    try:
        return int(text, 0)
    except ValueError:
        return float(text)


def _make_array(parts: list[str], shape: tuple[int, ...], dtype, seed: int):
    """The array of a maker spec split at ':' (value errors are the caller's to report)."""
    import numpy as np

    n = int(np.prod(shape))
    if parts[0] == "zeros":
        return np.zeros(shape, dtype)
    if parts[0] == "ones":
        return np.ones(shape, dtype)
    if parts[0] == "arange":
        return np.arange(n).astype(dtype).reshape(shape)
    if parts[0] == "full":
        value = _number(parts[3])
        if dtype.kind in "iu" and isinstance(value, float) and not (
                value.is_integer() and np.iinfo(dtype).min <= value <= np.iinfo(dtype).max):
            # (NumPy casts a float such as nan, 1.5 or 1e40 to some integer without a word;
            # an int out of range it refuses itself)
            raise ValueError(f"{parts[3]} is not a {dtype} value")
        return np.full(shape, value, dtype)
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-100, 100, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


_DTYPE_ALIASES = {"f32": "float32", "f16": "float16", "f64": "float64", "i32": "int32",
                  "u32": "uint32", "i64": "int64", "u64": "uint64", "i16": "int16",
                  "u16": "uint16", "i8": "int8", "u8": "uint8", "bf16": "uint16"}


__all__ = ["ARRAY_MAKERS", "make_arg"]
