"""Reading text input: every text file asterism reads is UTF-8, and one that is not gets a
`file:line:col` error at its first bad byte (never a UnicodeDecodeError traceback)."""

from __future__ import annotations

import os
import stat
import sys

from asterism.errors import AsterismError, ParseError, SourceLocation


def decode_text(data: bytes, name: str, error: type[AsterismError] = ParseError) -> str:
    """UTF-8 text of `data`; an `error` located at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(f"not UTF-8 text: byte 0x{data[err.start]:02x} {err.reason}",
                         byte_location(data, err.start, name)) from None


def byte_location(data: bytes, offset: int, name: str) -> SourceLocation:
    """The line and column (1-based, in characters) of byte `offset` of UTF-8 `data`."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    # the bytes before the first bad one are valid UTF-8, so they decode to whole characters
    col = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return SourceLocation(name, data.count(b"\n", 0, offset) + 1, col)


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a file ('-' is stdin); an AsterismError naming the file if unreadable."""
    name = os.fspath(path)
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        with open(name, "rb") as f:
            return f.read()
    except OSError as err:
        raise AsterismError(f"cannot read {name}: {err.strerror}") from None


def read_text(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of a file ('-' is stdin), with located errors for bytes that are not."""
    name = os.fspath(path)
    return decode_text(read_bytes(name), "<stdin>" if name == "-" else name)


def write_file_atomic(path: str | os.PathLike[str], data: bytes,
                      error: type[AsterismError] = AsterismError) -> None:
    """Write `data` to `path` through a temporary file and a rename: never a partial file.
    A failure raises `error` naming the file. A path that is not a regular file (/dev/null,
    /dev/stdout, a FIFO) is written directly: renaming over it would replace the device."""
    target = os.path.realpath(os.fspath(path))  # through symlinks: keep the link
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        special = False  # does not exist yet
    if special:
        try:
            with open(target, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise error(f"{path}: cannot write: {exc.strerror or exc}") from None
        return
    directory, base = os.path.split(target)
    # (a name of our own instead of tempfile: that module costs ~10 ms of start-up)
    name = os.path.join(directory, f".{base}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = tmp = None
    try:
        # O_EXCL: never write through someone else's file; mode 0o666 minus the umask,
        # the permissions a plain open() gives
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o666)
        tmp = name  # ours from here: removed if anything below fails
        with os.fdopen(fd, "wb") as fh:
            fd = None
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise error(f"{target}: cannot write: {exc.strerror or exc}") from None
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
