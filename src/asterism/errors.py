"""The error types users see. Every user-facing failure is an `AsterismError`; the CLI prints
its message (with location) and exits with code 1, never a traceback."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    """A position in an input file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def shown(text: str, limit: int = 100) -> str:
    """`text` quoted for a one-line message: a name from input may be of any length (a
    long one is cut in the middle, with its length)."""
    if len(text) <= limit:
        return repr(text)
    half = limit // 2
    return f"{text[:half]!r}...{text[-half:]!r} ({len(text)} characters)"


class AsterismError(Exception):
    """Base of all errors meant for people: the message says what was wrong and where."""

    def __init__(self, message: str, location: SourceLocation | None = None):
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)


class ParseError(AsterismError):
    """Malformed text input (IR, assembly, pipeline strings, argument specs)."""


class VerifyError(AsterismError):
    """Well-formed input that breaks a rule (wrong register class, out-of-range immediate...)."""


class EncodeError(AsterismError):
    """An instruction that cannot be encoded for the target."""


class DecodeError(AsterismError):
    """Bytes that do not decode to an instruction of the target."""


class CodeObjectError(AsterismError):
    """A code object (HSACO / ELF) that is truncated, corrupt or not for AMDGPU."""


class TargetError(AsterismError):
    """An unknown target or a request the target cannot satisfy."""

    @classmethod
    def unknown(cls, name: object, known: list[str] | tuple[str, ...]) -> TargetError:
        """The error for a target name that is not one of `known` (e.g. from IR text)."""
        text = shown(name) if isinstance(name, str) else repr(name)
        return cls(f"unknown target {text}; known targets: {', '.join(known)}")
