"""The kernel library's common parts: parameters, the built case, the registry.

A kernel generator is a `KernelGenerator`: a name, the targets it supports, its parameters
with defaults, what `--shape` means for it (`Shape`), and `build(target, params)` returning a
`KernelCase` (the module, the launch geometry, the NumPy arguments and the reference). An
entry whose `origin` is set launches a code object the library does not own (AITER's, a
user's: kernels/codeobject.py) as shipped: its cases carry `code` instead of a module.
Parameters come in as text (CLI `--param k=v`) or Python values and are checked here, so
every generator reports a bad one the same way: the parameter, the value and what was
expected.

Building a case makes the module only: the arguments (`LazyArgs`) and the reference are made
when first used, so writing a code object (`kernels build`, a sweep's build step) costs the
same at any problem size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asterism.errors import AsterismError, shown


class KernelParamError(AsterismError):
    """A kernel parameter that is unknown, malformed or does not fit the problem or the chip."""


@dataclass(frozen=True)
class Param:
    """One parameter of a kernel generator: its type, default, allowed values and meaning."""

    name: str
    default: Any
    help: str
    choices: tuple = ()
    type: type | None = None  # defaults to type(default)

    @property
    def kind(self) -> type:
        """The Python type values of this parameter have."""
        return self.type or type(self.default)

    def convert(self, value: Any) -> Any:
        """`value` (text or Python) as this parameter's type, or a KernelParamError."""
        kind = self.kind
        if isinstance(value, str) and kind is not str:
            text = value.strip()
            try:
                if kind is bool:
                    if text.lower() not in ("1", "0", "true", "false", "yes", "no"):
                        raise ValueError(text)
                    value = text.lower() in ("1", "true", "yes")
                else:
                    value = kind(text)
            except ValueError:
                raise KernelParamError(
                    f"parameter {self.name}: expected {kind.__name__}, got {value!r}") from None
        elif kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise KernelParamError(
                f"parameter {self.name}: expected {kind.__name__}, got {value!r}")
        if self.choices and value not in self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            raise KernelParamError(f"parameter {self.name}: {value!r} is not one of {allowed}")
        return value


class LazyArgs(MutableMapping):
    """Launch arguments made by `make()` on first use of a value (names known up front).

    A generator hands these to its `KernelCase` so that building the case (for a code
    object) never allocates the inputs: only a run, a check or a reference does.
    """

    def __init__(self, names: Sequence[str] | None, make: Callable[[], Mapping[str, Any]]):
        # names None: not known up front (a user's maker): the first use makes the values
        self._names = list(names) if names is not None else None
        self._make = make
        self._values: dict[str, Any] | None = None

    @property
    def made(self) -> bool:
        """True once the values exist."""
        return self._values is not None

    def _data(self) -> dict[str, Any]:
        if self._values is None:
            values = dict(self._make())
            if self._names is None:
                self._names = list(values)
            elif list(values) != self._names:
                raise ValueError(f"the argument maker gave {list(values)}, not {self._names}")
            self._values = values
        return self._values

    def _known(self) -> list[str]:
        if self._names is None:
            self._data()
        return self._names  # type: ignore[return-value]

    def __getitem__(self, name: str) -> Any:
        return self._data()[name]

    def __setitem__(self, name: str, value: Any) -> None:
        data = self._data()
        if name not in data:
            self._known().append(name)
        data[name] = value

    def __delitem__(self, name: str) -> None:
        del self._data()[name]
        self._known().remove(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._known()))

    def __len__(self) -> int:
        return len(self._known())

    def __repr__(self) -> str:
        state = "made" if self.made else "not made yet"
        return f"LazyArgs({', '.join(self._names or ['?'])}; {state})"


@dataclass
class KernelCase:
    """A built kernel ready to launch: module, geometry, arguments and the NumPy reference.

    `args` are the launch arguments in the kernel's argument order (arrays and scalars; a
    `LazyArgs` makes them on first use); `outputs` names the arrays the kernel writes;
    `reference()` returns the expected value of each output (computed by NumPy from the
    inputs; None: the entry has no reference and cannot be checked); `atol`/`rtol` is the
    check tolerance (`atol` may be given as a function of the inputs: it is called, once,
    when `atol` is first read); `flops` counts the useful floating-point operations of one
    launch (for TFLOPS). A code-object entry's case has `code` (the code object to launch as
    shipped, `module` None) and, when the kernel's metadata cannot lay out its arguments by
    name, `pack(args)`: the runtime.PackedArgs (kernarg segment and buffers) of the launch.
    """

    name: str
    target: str
    params: dict[str, Any]
    module: Any
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: MutableMapping[str, Any]
    outputs: tuple[str, ...]
    reference: Callable[[], dict[str, Any]] | None
    atol: float = field(repr=False)  # (a property below: given as a value or a function)
    rtol: float
    flops: int
    notes: dict[str, Any] = field(default_factory=dict)
    # Outputs held as raw codes (bf16 as uint16) -> float values for the check; None: as is.
    decode: Callable[[str, Any], Any] | None = None
    code: bytes | None = field(default=None, repr=False)  # a code object launched as shipped
    pack: Callable[[Mapping[str, Any]], Any] | None = field(default=None, repr=False)

    def tolerance(self) -> tuple[float, float]:
        """(atol, rtol) of the check."""
        return float(self.atol), float(self.rtol)

    def output_values(self, name: str) -> Any:
        """Output `name` as numbers comparable with the reference (decoded if needed)."""
        value = self.args[name]
        return value if self.decode is None else self.decode(name, value)


def _get_atol(case: KernelCase) -> float:
    if callable(case._atol):
        case._atol = float(case._atol())
    return case._atol


def _set_atol(case: KernelCase, value: float | Callable[[], float]) -> None:
    case._atol = value


# `atol` may depend on the inputs (attention: eps * max|V|): a function given for it is
# called when the tolerance is first read, so building a case never makes the inputs.
KernelCase.atol = property(_get_atol, _set_atol,  # type: ignore[assignment]
                           doc="The absolute tolerance of the check (computed on first use).")


@dataclass(frozen=True)
class Shape:
    """What `--shape` means for a kernel: its dims in order, each a label and the parameter
    it sets (e.g. BATCH -> batch), and an example value."""

    dims: tuple[tuple[str, str], ...] = ()
    example: str = ""

    def __bool__(self) -> bool:
        return bool(self.dims)

    @property
    def form(self) -> str:
        """The dims' labels joined by x, e.g. BATCHxHEADSxSEQxDIM."""
        return "x".join(label for label, _ in self.dims)

    @property
    def params(self) -> tuple[str, ...]:
        """The parameters the dims set, in order."""
        return tuple(param for _, param in self.dims)

    def describe(self) -> str:
        """`FORM (param, ...), e.g. EXAMPLE` (for `kernels list` and errors)."""
        return f"{self.form} ({', '.join(self.params)}), e.g. {self.example}"

    @classmethod
    def of(cls, names: Sequence[str]) -> Shape:
        """A Shape from bare parameter names (labels are the names in capitals)."""
        return cls(tuple((n.upper(), n) for n in names), "x".join(["512"] * len(names)))


def parse_shape(text: str, shape: Shape | Sequence[str] = ("m", "n", "k"),
                kernel: str = "") -> dict[str, str]:
    """`512x256x128` -> {"m": "512", "n": "256", "k": "128"}: exactly one positive decimal
    size per dim of `shape` (the generator converts and checks the values)."""
    if not isinstance(shape, Shape):
        shape = Shape.of(tuple(shape))
    parts = [p.strip() for p in text.lower().split("x")]
    if len(parts) != len(shape.dims) or not all(p.isascii() and p.isdigit() for p in parts):
        owner = f" for {kernel}" if kernel else ""
        raise KernelParamError(f"--shape{owner} is {shape.form}, e.g. {shape.example} "
                               f"(--shape expects {len(shape.dims)} sizes), got {text!r}")
    return dict(zip(shape.params, parts))


@dataclass(frozen=True)
class KernelGenerator:
    """A parameterized kernel: `build(target, params)` makes a `KernelCase`."""

    name: str
    description: str
    targets: tuple[str, ...]
    params: tuple[Param, ...]
    build_case: Callable[[str, dict[str, Any]], KernelCase]
    shape: Shape = Shape()  # what `--shape` sets (empty: the kernel takes no --shape)
    # Where the kernel comes from: "" for asterism's own generators; for a code object the
    # library does not own, what it is and where it comes from (shown by `kernels list`).
    origin: str = ""

    def describe_origin(self) -> str:
        """`asterism generator (module)` for our own kernels, else `code object: ORIGIN`."""
        if self.origin:
            return f"code object: {self.origin}"
        module = getattr(self.build_case, "__module__", "") or ""
        return f"asterism generator ({module})" if module else "asterism generator"

    def shape_params(self, text: str) -> dict[str, str]:
        """The parameters a `--shape` value sets, or a KernelParamError naming the form."""
        if not self.shape:
            raise KernelParamError(f"{self.name} takes no --shape; use --param")
        return parse_shape(text, self.shape, self.name)

    def param(self, name: str) -> Param:
        """The parameter called `name`, or a KernelParamError listing the known ones."""
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params)
        raise KernelParamError(f"{self.name} has no parameter {name!r} (known: {known})")

    def resolve(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults updated by `overrides` (text or values), each checked and converted."""
        values = {p.name: p.default for p in self.params}
        for key, value in (overrides or {}).items():
            values[key] = self.param(key).convert(value)
        return values

    def pick_target(self, target: str | None,
                    error: type[AsterismError] = KernelParamError) -> str:
        """`target`, or the first supported one by default; `error` if it is not supported."""
        target = target or self.targets[0]
        if target not in self.targets:
            raise error(f"{self.name} supports targets {', '.join(self.targets)}, "
                        f"not {shown(target)}")
        return target

    def build(self, target: str | None = None, params: Mapping[str, Any] | None = None,
              **kwargs: Any) -> KernelCase:
        """Build the kernel for `target` (default: the first supported one)."""
        target = self.pick_target(target)
        merged = dict(params or {})
        merged.update(kwargs)
        return self.build_case(target, self.resolve(merged))


_REGISTRY: dict[str, KernelGenerator] = {}


def register(generator: KernelGenerator) -> KernelGenerator:
    """Add a generator to the library (its name must be new)."""
    if generator.name in _REGISTRY:
        raise KernelParamError(f"kernel {generator.name} is registered twice")
    _REGISTRY[generator.name] = generator
    return generator


def unregister(name: str) -> None:
    """Remove the entry called `name` (e.g. a user entry registered for one session)."""
    _load_library()
    if name not in _REGISTRY:
        raise KernelParamError(f"unknown kernel {name!r}")
    del _REGISTRY[name]


def generators() -> Sequence[KernelGenerator]:
    """Every registered kernel generator, by name."""
    _load_library()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def get(name: str) -> KernelGenerator:
    """The generator called `name`, or a KernelParamError listing the library."""
    _load_library()
    if name not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KernelParamError(f"unknown kernel {name!r} (known: {known})")
    return _REGISTRY[name]


def require(condition: bool, param: str, message: str) -> None:
    """Raise a KernelParamError naming `param` when `condition` does not hold."""
    if not condition:
        raise KernelParamError(f"parameter {param}: {message}")


def _load_library() -> None:
    # Importing the generator modules registers them; done lazily so `import asterism`
    # stays cheap.
    import importlib

    for module in _LIBRARY_MODULES:
        importlib.import_module(module)


# Each kernel module registers its generator(s) on import.
_LIBRARY_MODULES: list[str] = ["asterism.kernels.aiter", "asterism.kernels.attention",
                                "asterism.kernels.gemm"]
