"""A per-user cache of data asterism derives from its own files (the ISA tables in a form
that loads fast, generated decoder code), so that a fresh process does not derive it again.

Files live in $ASTERISM_CACHE_DIR, else $XDG_CACHE_HOME/asterism, else ~/.cache/asterism
(ASTERISM_CACHE_DIR set to the empty string turns the cache off). A file's name carries the
key of what it was derived from (the asterism version, a hash of the source data, the Python
version for code); its body follows a magic line and a MAC of the name and body, so a torn,
truncated or corrupted file is ignored and written again. The cache only saves time: every
failure to read or write it is silent, and the result is the same without it.

Whoever can write the cache folder must not be able to run code as the user (the folder
holds marshalled code objects): the folder is used only when the user owns it and neither
group nor others can write to it (it is made owner-only; otherwise the cache is off, with a
one-line warning), and every file and every code entry carries a keyed BLAKE2b MAC whose
key is in a file only the user can read, outside the cache folder
($XDG_STATE_HOME/asterism/cache-key, else ~/.local/state/asterism/cache-key, made 0600 in
an owner-only folder): a cache folder that is shared, copied or restored (a CI cache) holds
no key, and an entry that fails its MAC is ignored and made again, never executed.
"""

from __future__ import annotations

import atexit
import errno
import marshal
import os
import stat
import struct
import sys
from collections.abc import Mapping

try:  # (hashlib's import loads OpenSSL, a few ms of a start-up: its blake2b is this one)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Python implementations
    from hashlib import blake2b

from asterism.version import __version__

MAGIC = b"asterism-cache-2\n"  # (2: keyed MACs; files of format 1 are ignored)
_DIGEST_SIZE = 16
_KEY_SIZE = 32


def cache_dir() -> str | None:
    """The configured cache directory (None when the cache is turned off; used only when it
    can be trusted, see the module docstring)."""
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


def key_file() -> str | None:
    """Where the MAC key of the cache is kept (None without a home directory)."""
    base = os.environ.get("XDG_STATE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home.startswith("~"):
            return None
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "asterism", "cache-key")


def key_of(*parts: bytes | str) -> str:
    """A short hex key for the given source data, with the asterism version in it."""
    h = blake2b(digest_size=12)
    for part in (__version__, MAGIC, *parts):
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


# ---------------------------------------------------------------------- trust

_warned: set[str] = set()
# (cache folder, key file) -> (folder, key) when usable, else None; checked once per process
_setups: dict[tuple[str, str | None], tuple[str, bytes] | None] = {}


def _warn(message: str) -> None:
    """One line on stderr, once per process and message: the cache is off, nothing failed."""
    if message not in _warned:
        _warned.add(message)
        sys.stderr.write(f"asterism: warning: {message}; running without the cache\n")


def _trust_problem(st: os.stat_result, what: str) -> str | None:
    """Why a folder or file with status `st` cannot be trusted by this user, or None."""
    if not hasattr(os, "getuid"):  # (no POSIX owners and modes: nothing to check)
        return None
    if st.st_uid != os.getuid():
        return f"{what} belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"{what} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _own_folder(path: str) -> bool:
    """True if `path` is a folder only this user can write (made owner-only when absent)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return False  # (cannot be made: no cache, silently)
    if not stat.S_ISDIR(st.st_mode):
        return False
    problem = _trust_problem(st, f"folder {path}")
    if problem is not None:
        # (a folder made by an older asterism under umask 002 is 775: say how to keep it)
        fix = f"; `chmod go-w {path}` to use it" if "writable" in problem else ""
        _warn(problem + fix)
        return False
    return True


def _read_key(path: str) -> bytes | None:
    """The key in `path` if only this user can read or write it (None: absent or refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as err:
        if err.errno == errno.ELOOP:
            _warn(f"cache key {path} is a symbolic link")
        return None
    try:
        st = os.fstat(fd)
        problem = _trust_problem(st, f"cache key {path}")
        if problem is None and hasattr(os, "getuid") and st.st_mode & 0o077:
            problem = f"cache key {path} is readable by group or others"
        key = os.read(fd, _KEY_SIZE + 1) if problem is None else b""
        if problem is None and len(key) != _KEY_SIZE:
            problem = f"cache key {path} is damaged ({len(key)} bytes)"
    except OSError:
        return None
    finally:
        os.close(fd)
    if problem is not None:
        _warn(problem + " (remove it: a new one is made)")
        return None
    return key


def _make_key(path: str) -> bytes | None:
    """A new random key in `path` (0600); the other one if a concurrent process won."""
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, os.urandom(_KEY_SIZE))
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # (never replaces a key another process made meanwhile)
        except FileExistsError:
            pass
        except OSError:  # (no hard links on this file system)
            if not os.path.exists(path):
                os.replace(tmp, path)
    except OSError:
        return None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return _read_key(path)


def _open_cache(directory: str, key_path: str | None) -> tuple[str, bytes] | None:
    if key_path is None or not _own_folder(directory):
        return None
    if not _own_folder(os.path.dirname(key_path)):
        return None
    key = _read_key(key_path)
    if key is None and not os.path.lexists(key_path):
        key = _make_key(key_path)
    return None if key is None else (directory, key)


def _setup() -> tuple[str, bytes] | None:
    """(cache folder, MAC key) when the cache is on and trusted, else None."""
    env = os.environ
    where = (env.get("ASTERISM_CACHE_DIR"), env.get("XDG_CACHE_HOME"),
             env.get("XDG_STATE_HOME"), env.get("HOME"))  # (what the paths are made of)
    paths = _paths.get(where)
    if paths is None:
        directory = cache_dir()
        paths = _paths[where] = None if directory is None else (directory, key_file())
    if paths is None:
        return None
    if paths not in _setups:
        _setups[paths] = _open_cache(*paths)
    return _setups[paths]


_paths: dict[tuple, tuple[str, str | None] | None] = {}  # environment -> (folder, key file)


def _mac(key: bytes, name: str, body: bytes) -> bytes:
    """The keyed MAC of `body` stored under `name` (so an entry cannot be moved either)."""
    h = blake2b(key=key, digest_size=_DIGEST_SIZE)
    label = name.encode()
    h.update(len(label).to_bytes(8, "little"))
    h.update(label)
    h.update(body)
    return h.digest()


def read(name: str, verify: bool = True) -> bytes | None:
    """The body of cache file `name`, or None if it is absent, unreadable or fails its MAC
    (`verify` False: the caller authenticates the parts it uses; the MAC is not computed)."""
    setup = _setup()
    if setup is None:
        return None
    directory, key = setup
    try:
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
    except (OSError, ValueError):
        return None
    head = len(MAGIC) + _DIGEST_SIZE
    if len(data) < head or not data.startswith(MAGIC):
        return None
    body = data[head:]
    if verify and data[len(MAGIC):head] != _mac(key, name, body):
        return None
    return body


def write(name: str, body: bytes) -> bool:
    """Store `body` as cache file `name` atomically (a temporary file, then a rename);
    False if the cache is off or cannot be written."""
    setup = _setup()
    if setup is None:
        return False
    directory, key = setup
    tmp = None
    try:
        path = os.path.join(directory, name)
        tmp = f"{path}.{os.getpid()}.{id(body):x}.tmp"  # (unique per writer)
        with open(tmp, "wb") as f:
            f.write(MAGIC + _mac(key, name, body) + body)
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
# mc/decoded_text.py, mc/listing.py); compiling them is most of a fresh listing's time.
# Their code objects are kept in one file per Python bytecode version, a hash table on
# disk that a process maps and probes for the entries it needs (reading all of a file that
# many runs have filled would cost more than the entries save): a header, `slots` slots of
# (12-byte key, offset, length), then the entries. The key is a hash of (source, name); an
# entry is a MAC and the marshalled code, checked before it is unmarshalled (only when
# used). New entries are added to the file when the process exits; past _CODE_LIMIT
# entries, the file keeps only those this process used or made.

_CODE_FORMAT = "code-2"
_CODE_LIMIT = 16384  # entries kept (about 1.3 KB each; every form of two targets is ~11,000)
_TABLE_MAGIC = b"ASTC"
_TABLE_HEAD = struct.Struct("<4sI")  # magic, slots (a power of two)
_SLOT = struct.Struct("<12sII")  # key, offset of the entry in the body, its length
_code_entries: Mapping[str, bytes] | None = None  # (None: the file is not opened yet)
_code_new: dict[str, bytes] = {}
_code_used: set[str] = set()
_code_setup: tuple[str, bytes] | None = None  # (the _setup() of the open code file)


def _code_file() -> str:
    import importlib.util

    return f"code-{key_of(_CODE_FORMAT, importlib.util.MAGIC_NUMBER, sys.version)}.bin"


class _CodeTable(Mapping):
    """key -> entry of a code file's body (a mapped file, or bytes); unreadable slots and
    entries are absent (a damaged entry then fails its MAC where it is used)."""

    def __init__(self, body):
        self._body = body
        magic, slots = _TABLE_HEAD.unpack_from(body, 0) if len(body) >= _TABLE_HEAD.size \
            else (b"", 0)
        fits = _TABLE_HEAD.size + slots * _SLOT.size <= len(body)
        self._slots = slots if magic == _TABLE_MAGIC and slots & (slots - 1) == 0 and fits \
            else 0

    def _probe(self, raw: bytes):
        """(slot position, its key, offset, length) of `raw`'s slot or of the empty slot
        where it would go (None if the table is full of other keys)."""
        slots = self._slots
        start = int.from_bytes(raw[:4], "little") & (slots - 1)
        for i in range(slots):
            at = _TABLE_HEAD.size + ((start + i) & (slots - 1)) * _SLOT.size
            key, offset, length = _SLOT.unpack_from(self._body, at)
            if key == raw or not length:
                return key, offset, length
        return None

    def __getitem__(self, key: str) -> bytes:
        try:
            raw = bytes.fromhex(key)
        except ValueError:
            raise KeyError(key) from None
        found = self._probe(raw) if self._slots and len(raw) == 12 else None
        if found is None or found[0] != raw or found[1] + found[2] > len(self._body):
            raise KeyError(key)
        return bytes(self._body[found[1]:found[1] + found[2]])

    def __iter__(self):
        for i in range(self._slots):
            key, _offset, length = _SLOT.unpack_from(self._body,
                                                     _TABLE_HEAD.size + i * _SLOT.size)
            if length:
                yield key.hex()

    def __len__(self) -> int:
        return sum(1 for _ in self)


def code_table_body(entries: Mapping[str, bytes]) -> bytes:
    """The body of a code file holding `entries` (hex key of 12 bytes -> entry)."""
    slots = 1 << max(4, (2 * len(entries)).bit_length())  # (at most half full)
    table = bytearray(_TABLE_HEAD.pack(_TABLE_MAGIC, slots) + bytes(slots * _SLOT.size))
    blobs = bytearray()
    base = len(table)
    for key, entry in entries.items():
        raw = bytes.fromhex(key)
        start = int.from_bytes(raw[:4], "little") & (slots - 1)
        i = 0
        while _SLOT.unpack_from(table, _TABLE_HEAD.size + ((start + i) & (slots - 1))
                                * _SLOT.size)[2]:
            i += 1
        _SLOT.pack_into(table, _TABLE_HEAD.size + ((start + i) & (slots - 1)) * _SLOT.size,
                        raw, base + len(blobs), len(entry))
        blobs += entry
    return bytes(table + blobs)


def _read_code_entries() -> Mapping[str, bytes]:
    """The entries of the code file (mapped, read only where used), or none."""
    import mmap

    setup = _setup()
    if setup is None:
        return {}
    try:
        with open(os.path.join(setup[0], _code_file()), "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return {}
    head = len(MAGIC) + _DIGEST_SIZE  # (the file's MAC is not checked: each entry has its own)
    if mapped[:len(MAGIC)] != MAGIC:
        return {}
    return _CodeTable(memoryview(mapped)[head:])


def _cached_code(entry: object, key: str, mac_key: bytes):
    """The code object of a cache entry, or None unless its MAC is this user's."""
    if not isinstance(entry, bytes) or len(entry) <= _DIGEST_SIZE:
        return None
    body = entry[_DIGEST_SIZE:]
    if entry[:_DIGEST_SIZE] != _mac(mac_key, "code:" + key, body):
        return None  # (made elsewhere, or altered: compiled again, never executed)
    try:
        return marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return None


def compile_cached(source: str, filename: str):
    """compile(source, filename, "exec"), through the user cache of generated code (the
    cache folder as it was when the code file was opened: once per process)."""
    global _code_entries, _code_setup
    if _code_entries is None:
        _code_setup = _setup()
        _code_entries = _read_code_entries() if _code_setup is not None else {}
    setup = _code_setup
    key = key_of(filename, source)
    if setup is not None:
        code = _cached_code(_code_new.get(key) or _code_entries.get(key), key, setup[1])
        if code is not None:
            _code_used.add(key)
            return code
    code = compile(source, filename, "exec")
    if setup is None:
        return code
    if not _code_new:
        atexit.register(_save_code)
    body = marshal.dumps(code)
    _code_new[key] = _mac(setup[1], "code:" + key, body) + body
    return code


def _save_code() -> None:
    """Add the code compiled by this process to the cache file (merged with what other
    processes added meanwhile; past _CODE_LIMIT entries, only what this process used)."""
    if not _code_new:
        return
    entries = dict(_read_code_entries())
    if len(entries) + len(_code_new) > _CODE_LIMIT:
        entries = {key: entries[key] for key in _code_used if key in entries}
    entries.update(_code_new)
    _code_new.clear()
    write(_code_file(), code_table_body(entries))
