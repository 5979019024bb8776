"""Kernel and module attributes that carry what the IR does not imply about a code object.

A raised kernel keeps, as attributes of its `amdgcn.kernel` op, the descriptor settings and
metadata keys whose values differ from what lowering computes for it (register counts of
hand-allocated kernels, float modes, `.args` the IR argument list cannot spell, ...):

    amdgcn.kernel @k ... attributes {descriptor = {float_denorm_mode_32 = 3 : i64},
                                     metadata = {".kernarg_segment_align" = 4 : i64}} {...}

`descriptor` holds `.amdhsa_*` directive values (without the prefix) laid over the computed
ones; `metadata` holds `amdhsa.kernels` entry keys laid over the computed entry, where a unit
value (`{".reqd_workgroup_size"}`) removes a computed key. The `amdgcn.module` op's
`metadata` attribute does the same for the top-level map (`amdhsa.version`, ...), and its
`code_object_version` attribute (4, 5 or 6; absent: 5) is the version of the code object
written (ELF ABI version, e_flags layout, the metadata's amdhsa.version). An
instruction whose words have bits no operand or modifier gives keeps them in its
`hidden_bits` attribute (a hex string: the XOR of its words and its own encoding; see
mc/lossless.py), which lowering hands to the encoder.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute

from asterism.errors import VerifyError

DESCRIPTOR_ATTR = "descriptor"
METADATA_ATTR = "metadata"
CODE_OBJECT_VERSION_ATTR = "code_object_version"
HIDDEN_BITS_ATTR = "hidden_bits"
# An instruction kept as decoded although the assembler's rules refuse it (constant-bus
# overuse, out-of-range fields, ...): a string saying which rule it breaks. Its operands are
# checked only for their kind, not for the rules; it lowers to the words as they are.
DECODE_ONLY_ATTR = "decode_only"


def value_attr(value: Any, where: str) -> Attribute:
    """A metadata or descriptor value (msgpack types) as an attribute."""
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int):
        width = 64 if -(1 << 63) <= value < (1 << 63) else 128
        return IntegerAttr(value, i64 if width == 64 else IntegerType(width))
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, list | tuple):
        return ArrayAttr([value_attr(v, where) for v in value])
    if isinstance(value, dict):
        return DictionaryAttr({str(k): value_attr(v, where) for k, v in value.items()})
    raise VerifyError(f"{where}: a value of type {type(value).__name__} ({value!r}) has no "
                      "attribute form")


def attr_value(attr: Attribute, where: str) -> Any:
    """The Python value of an attribute made by `value_attr`."""
    if isinstance(attr, IntegerAttr):
        if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return [attr_value(a, where) for a in attr.data]
    if isinstance(attr, DictionaryAttr):
        return {k: attr_value(v, where) for k, v in attr.data.items()}
    raise VerifyError(f"{where}: attribute {attr} is not a metadata value (integer, float, "
                      "string, array or dictionary)")


def overrides_attr(overrides: dict[str, Any], where: str) -> DictionaryAttr:
    """Overrides (None = remove the key) as a dictionary attribute."""
    return DictionaryAttr({k: UnitAttr() if v is None else value_attr(v, where)
                           for k, v in overrides.items()})


def overrides_of(attr: Attribute | None, where: str) -> dict[str, Any]:
    """The overrides of a `descriptor`/`metadata` attribute (None values remove keys)."""
    if attr is None:
        return {}
    if not isinstance(attr, DictionaryAttr):
        raise VerifyError(f"{where} must be a dictionary attribute, got {attr}")
    return {k: None if isinstance(v, UnitAttr) else attr_value(v, f"{where} key '{k}'")
            for k, v in attr.data.items()}


def diff(original: dict[str, Any], computed: dict[str, Any]) -> dict[str, Any]:
    """The overrides that turn `computed` into `original` (None marks a key to remove)."""
    out: dict[str, Any] = {k: v for k, v in original.items()
                           if k not in computed or computed[k] != v
                           or type(computed[k]) is not type(v)}
    out.update({k: None for k in computed if k not in original})
    return out


def apply(computed: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`computed` with the overrides laid over it."""
    out = dict(computed)
    for key, value in overrides.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def sorted_map(value: Any) -> Any:
    """Maps with their keys sorted, recursively (LLVM writes metadata maps sorted)."""
    if isinstance(value, dict):
        return {k: sorted_map(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [sorted_map(v) for v in value]
    return value


def hidden_bits_attr(bits: int) -> StringAttr:
    """The `hidden_bits` attribute of an instruction op."""
    return StringAttr(f"0x{bits:x}")


def hidden_bits_of(attr: Attribute | None, where: str) -> int:
    """The integer of a `hidden_bits` attribute (0 if absent)."""
    if attr is None:
        return 0
    text = attr.data if isinstance(attr, StringAttr) else None
    try:
        return int(text, 16) if text is not None else attr.value.data  # type: ignore
    except (ValueError, AttributeError):
        raise VerifyError(f"{where}: hidden_bits must be a hex string such as \"0x40\", got "
                          f"{attr}") from None


def computed_kernel_metadata(kernel, target: str) -> dict[str, Any]:
    """The metadata entry the assembler makes for an McKernel without an explicit one."""
    from asterism.mc.kernel_abi import kernel_directives, kernel_metadata

    return kernel_metadata(kernel, target, kernel_directives(kernel, target))


def apply_kernel_attributes(op, kernel, target: str) -> None:
    """Lay a kernel op's `descriptor`/`metadata` attributes over what lowering computed for
    its McKernel (explicit descriptor directives and metadata entry)."""
    from asterism.mc.kernel_abi import kernel_directives

    if not op.attributes:
        return
    where = f"kernel @{kernel.name}"
    desc = overrides_of(op.attributes.get(DESCRIPTOR_ATTR), f"{where}: {DESCRIPTOR_ATTR}")
    meta = overrides_of(op.attributes.get(METADATA_ATTR), f"{where}: {METADATA_ATTR}")
    if desc:
        bad = [k for k, v in desc.items() if not isinstance(v, int) or isinstance(v, bool)]
        if bad:
            raise VerifyError(f"{where}: descriptor values are integers; "
                              f"{', '.join(bad)} are not")
        kernel.descriptor_directives = apply(kernel_directives(kernel, target), desc)
    if meta:
        kernel.metadata = sorted_map(apply(computed_kernel_metadata(kernel, target), meta))


def computed_module_metadata(module) -> dict[str, Any]:
    """The metadata map the assembler makes for an McModule without an explicit one."""
    from asterism.mc.codeobject import make_metadata
    from asterism.target import get_target

    target = get_target(module.target + (module.features or ""))
    entries = [getattr(k, "metadata", None) or computed_kernel_metadata(k, target.name)
               for k in module.kernels]
    return make_metadata(entries, target, code_object_version=module.code_object_version)


def code_object_version_attr(version: int) -> IntegerAttr:
    """The module's `code_object_version` attribute."""
    return IntegerAttr(version, i64)


def set_code_object_version(op, version: int) -> None:
    """Give an amdgcn.module op the code object version to write (none for the default)."""
    from asterism.target import DEFAULT_CODE_OBJECT_VERSION

    if version != DEFAULT_CODE_OBJECT_VERSION:
        op.attributes[CODE_OBJECT_VERSION_ATTR] = code_object_version_attr(version)


def apply_module_attributes(op, module) -> None:
    """Lay an amdgcn.module op's attributes over its McModule: `code_object_version`, then
    `metadata` over the computed metadata map."""
    if not op.attributes:
        return
    where = f"module @{op.sym_name.data}"
    version = op.attributes.get(CODE_OBJECT_VERSION_ATTR)
    if version is not None:
        value = attr_value(version, f"{where}: {CODE_OBJECT_VERSION_ATTR}")
        if value not in (4, 5, 6) or isinstance(value, bool):
            raise VerifyError(f"{where}: {CODE_OBJECT_VERSION_ATTR} must be 4, 5 or 6 (the "
                              f"code object versions written), got {version}")
        module.code_object_version = value
    if METADATA_ATTR not in op.attributes:
        return
    meta = overrides_of(op.attributes[METADATA_ATTR], f"{where}: metadata")
    if meta and module.kernels:
        module.metadata = sorted_map(apply(computed_module_metadata(module), meta))


__all__ = ["apply_kernel_attributes", "apply_module_attributes", "computed_kernel_metadata",
           "computed_module_metadata", "DESCRIPTOR_ATTR", "METADATA_ATTR", "HIDDEN_BITS_ATTR",
           "CODE_OBJECT_VERSION_ATTR", "code_object_version_attr", "set_code_object_version",
           "DECODE_ONLY_ATTR",
           "value_attr", "attr_value",
           "overrides_attr", "overrides_of", "diff", "apply", "sorted_map", "hidden_bits_attr",
           "hidden_bits_of"]
