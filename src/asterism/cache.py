"""A per-user cache of data asterism derives from its own files (the ISA tables in a form
that loads fast, generated decoder code), so that a fresh process does not derive it again.

Files live in $ASTERISM_CACHE_DIR, else $XDG_CACHE_HOME/asterism, else ~/.cache/asterism
(ASTERISM_CACHE_DIR set to the empty string turns the cache off). A file's name carries the
key of what it was derived from (the asterism version, a hash of the source data, the Python
version for code); its body follows a magic line and a digest of the body, so a torn,
truncated or corrupted file is ignored and written again. The cache only saves time: every
failure to read or write it is silent, and the result is the same without it.
"""

from __future__ import annotations

import atexit
import marshal
import os
import sys

import msgpack

try:  # (hashlib's import loads OpenSSL, a few ms of a start-up: its blake2b is this one)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Python implementations
    from hashlib import blake2b

from asterism import __version__

MAGIC = b"asterism-cache-1\n"
_DIGEST_SIZE = 16


def cache_dir() -> str | None:
    """The cache directory (None when the cache is turned off)."""
    explicit = os.environ.get("ASTERISM_CACHE_DIR")
    if explicit is not None:
        return explicit or None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home.startswith("~"):  # (no home directory: no cache, rather than one in the cwd)
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "asterism")


def key_of(*parts: bytes | str) -> str:
    """A short hex key for the given source data, with the asterism version in it."""
    h = blake2b(digest_size=12)
    for part in (__version__, *parts):
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _digest(body: bytes) -> bytes:
    return blake2b(body, digest_size=_DIGEST_SIZE).digest()


def read(name: str, verify: bool = True) -> bytes | None:
    """The body of cache file `name`, or None if it is absent, unreadable or corrupted
    (`verify` False: the caller checks the parts it uses, the digest is not computed)."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
    except (OSError, ValueError):
        return None
    head = len(MAGIC) + _DIGEST_SIZE
    if len(data) < head or not data.startswith(MAGIC):
        return None
    body = data[head:]
    if verify and data[len(MAGIC):head] != _digest(body):
        return None
    return body


def write(name: str, body: bytes) -> bool:
    """Store `body` as cache file `name` atomically (a temporary file, then a rename);
    False if the cache is off or cannot be written."""
    directory = cache_dir()
    if directory is None:
        return False
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name)
        tmp = f"{path}.{os.getpid()}.{id(body):x}.tmp"  # (unique per writer)
        with open(tmp, "wb") as f:
            f.write(MAGIC + _digest(body) + body)
        os.replace(tmp, path)
        tmp = None
        return True
    except (OSError, ValueError):
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


# ---------------------------------------------------------------------- generated code
#
# The decoder generates a Python function per instruction form (mc/decoder.py,
# mc/decoded_text.py); compiling them is most of a fresh listing's time. Their code objects
# are kept in one file per Python bytecode version: a msgpack map from a hash of (source,
# name) to the marshalled code, each entry with its own digest, unmarshalled only when used.
# New entries are added to the file when the process exits.

_CODE_FORMAT = "code-1"
_CODE_LIMIT = 32768  # entries kept (about 1.3 KB each; every form of two targets is ~11,000)
_code_entries: dict[str, bytes] | None = None  # (None: the file is not read yet)
_code_new: dict[str, bytes] = {}


def _code_file() -> str:
    import importlib.util

    return f"code-{key_of(_CODE_FORMAT, importlib.util.MAGIC_NUMBER, sys.version)}.msgpack"


def _read_code_entries() -> dict[str, bytes]:
    body = read(_code_file(), verify=False)  # (each entry has its digest)
    if body is not None:
        try:
            entries = msgpack.unpackb(body)
            if isinstance(entries, dict):
                return entries
        except (ValueError, TypeError, msgpack.UnpackException):
            pass
    return {}


def compile_cached(source: str, filename: str):
    """compile(source, filename, "exec"), through the user cache of generated code."""
    global _code_entries
    if _code_entries is None:
        _code_entries = _read_code_entries() if cache_dir() is not None else {}
    key = key_of(filename, source)
    entry = _code_entries.get(key)
    if entry is not None and entry[:_DIGEST_SIZE] == _digest(entry[_DIGEST_SIZE:]):
        try:
            return marshal.loads(entry[_DIGEST_SIZE:])
        except (ValueError, EOFError, TypeError):
            pass
    code = compile(source, filename, "exec")
    if not _code_new and cache_dir() is not None:
        atexit.register(_save_code)
    body = marshal.dumps(code)
    _code_new[key] = _code_entries[key] = _digest(body) + body
    return code


def _save_code() -> None:
    """Add the code compiled by this process to the cache file (merged with what other
    processes added meanwhile)."""
    if not _code_new:
        return
    entries = _read_code_entries()
    if len(entries) + len(_code_new) > _CODE_LIMIT:
        entries = {}  # (start over rather than grow without bound)
    entries.update(_code_new)
    _code_new.clear()
    write(_code_file(), msgpack.packb(entries))
