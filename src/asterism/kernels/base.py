"""The kernel library's common parts: parameters, the built case, the registry.

A kernel generator is a `KernelGenerator`: a name, the targets it supports, its parameters
with defaults, and `build(target, params)` returning a `KernelCase` (the module, the launch
geometry, the NumPy arguments and the reference). Parameters come in as text (CLI `--param
k=v`) or Python values and are checked here, so every generator reports a bad one the same
way: the parameter, the value and what was expected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


@dataclass
class KernelCase:
    """A built kernel ready to launch: module, geometry, arguments and the NumPy reference.

    `args` are the launch arguments in the kernel's argument order (arrays and scalars);
    `outputs` names the arrays the kernel writes; `reference()` returns the expected value of
    each output (computed by NumPy from the inputs); `atol`/`rtol` is the check tolerance;
    `flops` counts the useful floating-point operations of one launch (for TFLOPS).
    """

    name: str
    target: str
    params: dict[str, Any]
    module: Any
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: dict[str, Any]
    outputs: tuple[str, ...]
    reference: Callable[[], dict[str, Any]]
    atol: float
    rtol: float
    flops: int
    notes: dict[str, Any] = field(default_factory=dict)
    # Outputs held as raw codes (bf16 as uint16) -> float values for the check; None: as is.
    decode: Callable[[str, Any], Any] | None = None

    def output_values(self, name: str) -> Any:
        """Output `name` as numbers comparable with the reference (decoded if needed)."""
        value = self.args[name]
        return value if self.decode is None else self.decode(name, value)


@dataclass(frozen=True)
class KernelGenerator:
    """A parameterized kernel: `build(target, params)` makes a `KernelCase`."""

    name: str
    description: str
    targets: tuple[str, ...]
    params: tuple[Param, ...]
    build_case: Callable[[str, dict[str, Any]], KernelCase]
    shape: tuple[str, ...] = ()  # the parameters `--shape AxBxC` sets, in order

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

    def build(self, target: str | None = None, params: Mapping[str, Any] | None = None,
              **kwargs: Any) -> KernelCase:
        """Build the kernel for `target` (default: the first supported one)."""
        target = target or self.targets[0]
        if target not in self.targets:
            raise KernelParamError(f"{self.name} supports targets {', '.join(self.targets)}, "
                                   f"not {shown(target)}")
        merged = dict(params or {})
        merged.update(kwargs)
        return self.build_case(target, self.resolve(merged))


_REGISTRY: dict[str, KernelGenerator] = {}


def register(generator: KernelGenerator) -> KernelGenerator:
    """Add a generator to the library (its name must be new)."""
    if generator.name in _REGISTRY:
        raise ValueError(f"kernel {generator.name} is registered twice")
    _REGISTRY[generator.name] = generator
    return generator


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
_LIBRARY_MODULES: list[str] = ["asterism.kernels.attention", "asterism.kernels.gemm"]
