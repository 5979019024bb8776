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

import hashlib
import os

from asterism import __version__

MAGIC = b"asterism-cache-1\n"
_DIGEST_SIZE = 16


def cache_dir() -> str | None:
    """The cache directory (None when the cache is turned off)."""
    explicit = os.environ.get("ASTERISM_CACHE_DIR")
    if explicit is not None:
        return explicit or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "asterism")


def key_of(*parts: bytes | str) -> str:
    """A short hex key for the given source data, with the asterism version in it."""
    h = hashlib.blake2b(digest_size=12)
    for part in (__version__, *parts):
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _digest(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=_DIGEST_SIZE).digest()


def read(name: str) -> bytes | None:
    """The body of cache file `name`, or None if it is absent, unreadable or corrupted."""
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
    if data[len(MAGIC):head] != _digest(body):
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
