"""Reading text input: every text file asterism reads is UTF-8, and one that is not gets a
`file:line:col` error at its first bad byte (never a UnicodeDecodeError traceback).

Files from elsewhere (captures, counter files, source maps) are read with
:func:`read_input_file` (a regular file, bounded in size, optionally never through a symbolic
link) and JSON in them with :func:`load_json_bounded` / :func:`parse_json_bounded` (bounded
nesting depth, located errors): one home for those rules.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from typing import Any

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


# ---------------------------------------------------------------------------- untrusted input

# Nesting depth of JSON from elsewhere: the deepest file asterism reads nests about 10 levels
# (a capture's snapshots.json directory tree of a source path); 64 leaves room for deep
# source paths and stays far below Python's recursion limit (json and our own walkers).
JSON_MAX_DEPTH = 64
# Bytes of one input file: a long capture's wave file holds a few tens of MB; the parsed
# objects of a JSON file take ~10x its size in memory.
INPUT_MAX_BYTES = 256 << 20

_JSON_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
# Python refuses to convert integers longer than this from text (json.loads included).
_LONG_NUMBER_RE = re.compile(rf"\d{{{(sys.get_int_max_str_digits() or 4300) + 1},}}")


def text_location(text: str, offset: int, name: str) -> SourceLocation:
    """The line and column (1-based, in characters) of character `offset` of `text`."""
    return SourceLocation(name, text.count("\n", 0, offset) + 1,
                          offset - (text.rfind("\n", 0, offset) + 1) + 1)


def read_input_file(path: str | os.PathLike[str], *, max_bytes: int = INPUT_MAX_BYTES,
                    follow_links: bool = True, error: type[AsterismError] = AsterismError,
                    what: str = "file") -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes` (checked before reading).
    With ``follow_links=False`` a symbolic link is refused (the check and the open are one
    system call, O_NOFOLLOW): the rule for files inside an input folder, where a link could
    point anywhere. A FIFO, device or folder is refused without blocking on it."""
    name = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    links_refused = (f"{name}: {what} is a symbolic link, which is not followed (files "
                     "inside an input folder are read only as regular files)")
    if not follow_links and os.path.islink(name):  # (also where O_NOFOLLOW does not exist)
        raise error(links_refused)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise error(f"{name}: {what} is missing") from None
        if not follow_links and exc.errno == errno.ELOOP:  # replaced by a link meanwhile
            raise error(links_refused) from None
        raise error(f"{name}: cannot read the {what}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise error(f"{name}: {what} is {kind}")
        if info.st_size > max_bytes:
            raise error(f"{name}: {what} is {info.st_size} bytes, more than the {max_bytes} "
                        "bytes asterism reads from one input file")
        if getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)  # (non-blocking only so a FIFO could not hang open)
        chunks, total = [], 0
        while True:  # a file may grow between fstat and read: stop at the bound
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise error(f"{name}: {what} is more than the {max_bytes} bytes asterism "
                            "reads from one input file")
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"{name}: cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def _deepest(text: str) -> int:
    """The deepest running count of ``[``/``{`` minus ``]``/``}`` in `text` (0 if none),
    in C and NumPy: a capture's wave file has a million brackets."""
    import numpy as np

    # (brackets are ASCII: what "replace" makes of anything else is not one)
    brackets = text.encode("utf-8", "replace").translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    opens = np.frombuffer(brackets, dtype=np.uint8) | 0x20 == ord("{")  # [ -> {, ] -> }
    return max(int(np.cumsum(np.where(opens, 1, -1)).max()), 0)


def _too_deep_at(text: str, max_depth: int) -> int | None:
    """Offset of the first bracket nested deeper than `max_depth` (None if none is)."""
    if _deepest(_JSON_STRING_RE.sub("", text)) <= max_depth:
        return None
    depth = 0
    for m in _JSON_TOKEN_RE.finditer(text):  # slow path, on bad input only: where
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > max_depth:
                return m.start()
        elif c in "]}":
            depth -= 1
    return len(text)  # (an unterminated string hid the brackets from the fast check)


def parse_json_bounded(text: str, name: str, error: type[AsterismError] = ParseError,
                       max_depth: int = JSON_MAX_DEPTH) -> Any:
    """The JSON document `text` (from the file `name`). Arrays and objects nested deeper
    than `max_depth`, malformed JSON and integers too long to convert are an `error` located
    at the offending character."""
    at = _too_deep_at(text, max_depth)
    if at is not None:
        raise error(f"JSON nested deeper than {max_depth} levels",
                    text_location(text, at, name))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"invalid JSON: {exc.msg}",
                    SourceLocation(name, exc.lineno, exc.colno)) from None
    except ValueError:  # an integer past Python's int-from-string digit limit
        m = _LONG_NUMBER_RE.search(text)
        raise error(f"invalid JSON: a number of {len(m.group()) if m else 'too many'} digits",
                    text_location(text, m.start() if m else 0, name)) from None
    except RecursionError:  # cannot happen below the depth bound; kept as a net
        raise error(f"JSON nested too deeply (limit {max_depth})",
                    SourceLocation(name, 1, 1)) from None


def load_json_bounded(path: str | os.PathLike[str], *, max_depth: int = JSON_MAX_DEPTH,
                      max_bytes: int = INPUT_MAX_BYTES, follow_links: bool = True,
                      error: type[AsterismError] = ParseError, what: str = "file") -> Any:
    """The JSON document in the file `path`: read by :func:`read_input_file`, decoded as
    UTF-8 and parsed by :func:`parse_json_bounded`, every failure an `error` naming the file
    (and line:col where there is one)."""
    name = os.fspath(path)
    raw = read_input_file(name, max_bytes=max_bytes, follow_links=follow_links, error=error,
                          what=what)
    return parse_json_bounded(decode_text(raw, name, error), name, error, max_depth)


# ---------------------------------------------------------------------------- TOML

# A TOML file from elsewhere (a `--params` parameter file) is small: the timing model has
# about 50 parameters per target.
TOML_MAX_BYTES = 1 << 20
_TOML_AT_RE = re.compile(r"\(at line (\d+), column (\d+)\)")
_TOML_HEADER_RE = re.compile(r"^\s*\[\s*([^\[\]#]+?)\s*\]\s*(?:#.*)?$")
_TOML_KEY_RE = re.compile(r"^(\s*)([A-Za-z0-9_\-\"'. ]+?)\s*=")


def _toml_path(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in text.split("."))


def toml_key_locations(text: str, name: str) -> dict[tuple[str, ...], SourceLocation]:
    """Where each table header and `key = value` line of a TOML document is: dotted path
    (table path + key) -> location. For messages only: keys this simple scan cannot place
    (multi-line values, inline tables) are left out."""
    out: dict[tuple[str, ...], SourceLocation] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        header = _TOML_HEADER_RE.match(line)
        if header and not line.lstrip().startswith("[["):
            table = _toml_path(header.group(1))
            out.setdefault(table, SourceLocation(name, number, line.index("[") + 1))
            continue
        key = _TOML_KEY_RE.match(line)
        if key and not line.lstrip().startswith("#"):
            out.setdefault(table + _toml_path(key.group(2)),
                           SourceLocation(name, number, len(key.group(1)) + 1))
    return out


def parse_toml(text: str, name: str, error: type[AsterismError] = ParseError) -> dict[str, Any]:
    """The TOML document `text` (from the file `name`); malformed TOML (and nesting too
    deep for the parser) is an `error` located where the parser stopped."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _TOML_AT_RE.search(message)
        where = SourceLocation(name, int(at.group(1)), int(at.group(2))) if at else \
            SourceLocation(name, text.count("\n") + 1, 1)
        raise error(f"invalid TOML: {_TOML_AT_RE.sub('', message).strip()}", where) from None
    except RecursionError:
        raise error("TOML nested too deeply", SourceLocation(name, 1, 1)) from None
