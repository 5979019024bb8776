"""Names from input used as file names: the one rule every writer and reader applies.

A kernel, argument, symbol or source name read from a code object, a capture or IR text is
untrusted: used as is in a path, `../../x` or `/etc/x` would read or write outside the folder
the user named. Wherever such a name becomes part of a path, it must be a plain file name:
one path component, not `.` or `..`, no separator (`/`, and `\\` as on Windows), no NUL or
other control character, not absolute (no drive either), at most NAME_MAX (255) bytes.
`check_file_name` and `safe_child_path` refuse any other name with a one-line error naming
it; callers that prefer a mapping ask `unsafe_reason` and choose a name of their own.
"""

from __future__ import annotations

import os

from asterism.errors import AsterismError, shown

# Longest file name (one path component) in bytes on Linux and macOS file systems (NAME_MAX).
NAME_MAX = 255


def unsafe_reason(name: object) -> str | None:
    """Why `name` cannot be used as one file name inside a folder, or None if it can."""
    if not isinstance(name, str):
        return f"it is not text ({type(name).__name__})"
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return "it is the folder itself" if name == "." else "it is the parent folder"
    for char in ("/", "\\"):
        if char in name:
            return f"it contains the path separator {char!r}"
    bad = next((c for c in name if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        return "it contains NUL" if bad == "\0" else f"it contains the control character {bad!r}"
    if os.path.isabs(name) or os.path.splitdrive(name)[0]:
        return "it is an absolute path"
    try:
        size = len(os.fsencode(name))
    except UnicodeError:
        return "it cannot be encoded as a file name"
    if size > NAME_MAX:
        return f"it is {size} bytes long (at most {NAME_MAX})"
    return None


def check_file_name(name: object, what: str, error: type[AsterismError] = AsterismError,
                    hint: str = "") -> str:
    """`name` if it is a plain file name (see the module docstring); else an `error` saying
    which `what` (e.g. "kernel argument") has the name and why it is refused."""
    reason = unsafe_reason(name)
    if reason is not None:
        shown_name = shown(name) if isinstance(name, str) else repr(name)
        raise error(f"{what} {shown_name} is not a safe file name: {reason}"
                    + (f"; {hint}" if hint else ""))
    return name  # type: ignore[return-value]


def safe_child_path(folder: str | os.PathLike[str], name: object, what: str,
                    error: type[AsterismError] = AsterismError, hint: str = "") -> str:
    """`folder`/`name`, once `check_file_name` accepts `name` (the one rule for a name from
    input that becomes part of a path)."""
    return os.path.join(os.fspath(folder), check_file_name(name, what, error, hint))


__all__ = ["NAME_MAX", "check_file_name", "safe_child_path", "unsafe_reason"]
