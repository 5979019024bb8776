"""The ISA database loaded through the user cache (asterism/cache.py) equals the generated
JSON it comes from; a corrupted, unwritable or disabled cache changes nothing but speed."""

from __future__ import annotations

import json
import os
import stat
from importlib import resources

import pytest

from asterism import cache
from asterism.isa import database

TARGET = "gfx950"


def _json_text() -> bytes:
    return resources.files("asterism.isa").joinpath("data", f"{TARGET}.json").read_bytes()


def _load(monkeypatch, directory) -> database.IsaDatabase:
    """A fresh database (not get_isa's per-process one) through the cache in `directory`."""
    monkeypatch.setenv("ASTERISM_CACHE_DIR", str(directory))
    return database.IsaDatabase.from_tables(TARGET, database._load_tables(TARGET, _json_text()))


def _assert_matches_json(db: database.IsaDatabase) -> None:
    """Every instruction, alias and (format, encoding, opcode) list as the JSON has them."""
    data = json.loads(_json_text())
    raws = data["instructions"]
    assert list(db.instructions) == [raw["mnemonic"] for raw in raws]
    index: dict[tuple[str, str, int], list] = {}
    for raw in raws:
        inst = db.instructions[raw["mnemonic"]]
        assert inst == database._instruction_from_json(raw, TARGET)
        for alias in raw.get("aliases", ()):
            assert db.aliases[alias] == raw["mnemonic"]
        for f, form in zip(raw["forms"], inst.forms, strict=True):
            index.setdefault((f["format"], f["enc"], f["opcode"]), []).append(form)
    assert set(db.by_opcode) == set(index)
    for key, forms in index.items():
        # (the same objects, in database order: decoders key their tables by form identity)
        assert [id(f) for f in db.by_opcode[key]] == [id(f) for f in forms]
    assert db.llvm_version == data.get("llvm_version", "")


def _cache_files(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith(f"isa-{TARGET}-"))


def test_cached_tables_equal_json(monkeypatch, tmp_path):
    _assert_matches_json(_load(monkeypatch, tmp_path))  # (made, then written)
    assert len(_cache_files(tmp_path)) == 1

    def no_json(*args, **kwargs):
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(database.json, "loads", no_json)
    db = _load(monkeypatch, tmp_path)  # (json.loads is patched away: compare with a reference)
    assert db.instructions == _REFERENCE.instructions
    assert db.aliases == _REFERENCE.aliases
    assert db.by_opcode == _REFERENCE.by_opcode


_REFERENCE = database.IsaDatabase(TARGET, json.loads(_json_text()))


def test_corrupted_cache_is_ignored_and_rewritten(monkeypatch, tmp_path):
    _load(monkeypatch, tmp_path)
    (name,) = _cache_files(tmp_path)
    path = tmp_path / name
    good = path.read_bytes()
    for bad in (good[: len(good) // 2], good[:-1] + bytes([good[-1] ^ 1]), b"", b"garbage"):
        path.write_bytes(bad)
        _assert_matches_json(_load(monkeypatch, tmp_path))
        assert path.read_bytes() == good  # (written again)


def test_body_of_another_layout_is_ignored(monkeypatch, tmp_path):
    _load(monkeypatch, tmp_path)
    (name,) = _cache_files(tmp_path)
    cache.write(name, b"\x93\x01\x02\x03")  # (a valid file whose body is not the tables)
    _assert_matches_json(_load(monkeypatch, tmp_path))


@pytest.mark.parametrize("setting", ["file", "off"])
def test_unwritable_or_disabled_cache(monkeypatch, tmp_path, setting):
    if setting == "file":
        blocker = tmp_path / "not-a-directory"
        blocker.write_text("")
        directory = blocker / "asterism"  # (cannot be created)
    else:
        directory = ""
    db = _load(monkeypatch, directory)
    assert db.instructions == _REFERENCE.instructions
    assert not cache.write("x", b"y")
    assert cache.read("x") is None


def test_cache_dir_default(monkeypatch, tmp_path):
    monkeypatch.delenv("ASTERISM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == os.path.join(str(tmp_path), "asterism")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "asterism")


def test_key_changes_with_content():
    assert cache.key_of(b"a") != cache.key_of(b"b")
    assert cache.key_of(b"a", b"b") != cache.key_of(b"ab")


# ---------------------------------------------------------------------- generated code


def _fresh_code_cache(monkeypatch, directory) -> None:
    monkeypatch.setenv("ASTERISM_CACHE_DIR", str(directory))
    monkeypatch.setattr(cache, "_code_entries", None)
    monkeypatch.setattr(cache, "_code_new", {})
    monkeypatch.setattr(cache, "_code_used", set())


def test_compiled_code_round_trips_through_the_cache(monkeypatch, tmp_path):
    source = "def f(x):\n    return x * 3 + 1\n"
    _fresh_code_cache(monkeypatch, tmp_path)
    made = cache.compile_cached(source, "<test f>")
    cache._save_code()
    _fresh_code_cache(monkeypatch, tmp_path)

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(cache, "compile", no_compile, raising=False)
    loaded = cache.compile_cached(source, "<test f>")
    assert loaded == made and loaded is not made
    env: dict = {}
    exec(loaded, env)
    assert env["f"](4) == 13


def test_corrupted_code_entry_is_compiled_again(monkeypatch, tmp_path):
    source = "def g():\n    return 'fresh'\n"
    _fresh_code_cache(monkeypatch, tmp_path)
    cache.compile_cached(source, "<test g>")
    cache._save_code()
    _fresh_code_cache(monkeypatch, tmp_path)
    entries = dict(cache._read_code_entries())
    (key,) = entries
    # (flip a bit of the marshalled code: the entry's digest no longer matches)
    entry = entries[key]
    entries[key] = entry[:-1] + bytes([entry[-1] ^ 1])
    monkeypatch.setattr(cache, "_code_entries", entries)
    env: dict = {}
    exec(cache.compile_cached(source, "<test g>"), env)
    assert env["g"]() == "fresh"


def test_code_table_maps_each_key_to_its_entry():
    entries = {cache.key_of(str(i)): os.urandom(i % 50 + 17) for i in range(300)}
    table = cache._CodeTable(cache.code_table_body(entries))
    assert dict(table) == entries and len(table) == 300
    assert table.get(cache.key_of("absent")) is None and table.get("not hex") is None


def test_damaged_code_table_reads_as_fewer_entries():
    entries = {cache.key_of(str(i)): os.urandom(40) for i in range(20)}
    body = cache.code_table_body(entries)
    rng = __import__("random").Random(3)
    for bad in [body[:n] for n in (0, 3, 8, 100, len(body) // 2, len(body) - 1)] + [
            bytes(b ^ (rng.random() < 0.01) * rng.randrange(256) for b in body)
            for _ in range(5)]:
        table = cache._CodeTable(bad)
        for key in table:  # (what reads back is a prefix or damaged: never an error)
            assert isinstance(table.get(key, b""), bytes)
        for key in entries:
            assert table.get(key) in (None, entries[key]) or len(bad) == len(body)


def test_full_code_file_keeps_what_the_process_used(monkeypatch, tmp_path):
    _fresh_code_cache(monkeypatch, tmp_path)
    for i in range(6):
        cache.compile_cached(f"x = {i}\n", "<test n>")
    cache._save_code()
    _fresh_code_cache(monkeypatch, tmp_path)
    monkeypatch.setattr(cache, "_code_used", set())
    monkeypatch.setattr(cache, "_CODE_LIMIT", 7)
    cache.compile_cached("x = 1\n", "<test n>")  # (used: read from the file)
    cache.compile_cached("x = 10\n", "<test n>")  # (new)
    cache.compile_cached("x = 11\n", "<test n>")  # (new: 6 + 2 > 7)
    cache._save_code()
    kept = set(cache._read_code_entries())
    assert kept == {cache.key_of("<test n>", f"x = {i}\n") for i in (1, 10, 11)}


def test_listing_is_the_same_with_and_without_caches(tmp_path, shared_data):
    """A fresh listing (caches being written) equals one read back from the caches."""
    import subprocess
    import sys

    sample = sorted((shared_data / "codeobjects").glob("*.co"))[0]
    code = ("import sys; from asterism import api; "
            "sys.stdout.write(api.disassembly_listing(sys.argv[1]))")
    outputs = []
    for setting in (str(tmp_path), str(tmp_path), ""):  # (cold, warm, off)
        env = {**os.environ, "ASTERISM_CACHE_DIR": setting}
        outputs.append(subprocess.run([sys.executable, "-c", code, str(sample)], env=env,
                                      capture_output=True, check=True).stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert any(n.startswith("code-") for n in os.listdir(tmp_path))


def test_no_cache_without_a_home(monkeypatch):
    for name in ("ASTERISM_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # (as without any home)
    assert cache.cache_dir() is None


# ---------------------------------------------------------------------- trust


@pytest.fixture
def own_cache(monkeypatch, tmp_path):
    """A fresh cache folder and key folder under tmp_path (nothing checked yet)."""
    monkeypatch.setattr(cache, "_setups", {}, raising=False)
    monkeypatch.setattr(cache, "_warned", set(), raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    directory = tmp_path / "cache"
    _fresh_code_cache(monkeypatch, directory)
    return directory


_EVIL = "open({marker!r}, 'w').write('ran')\ndef f():\n    return 'evil'\n"
_GOOD = "def f():\n    return 'good'\n"


def _plant_code_entry(directory, source: str, filename: str, code_source: str, mac) -> None:
    """Put an entry for (source, filename) into the cache's code file, as whoever can write
    the cache folder could: `code_source` compiled, with `mac(key, body)` as its check."""
    import marshal

    key = cache.key_of(filename, source)
    body = marshal.dumps(compile(code_source, filename, "exec"))
    data = cache.code_table_body({key: mac(key, body) + body})
    os.makedirs(directory, exist_ok=True)
    (directory / cache._code_file()).write_bytes(
        cache.MAGIC + _unkeyed(data) + data)


def _unkeyed(body: bytes) -> bytes:
    from hashlib import blake2b

    return blake2b(body, digest_size=cache._DIGEST_SIZE).digest()


def _run(code) -> str:
    env: dict = {}
    exec(code, env)
    return env["f"]()


def test_tampered_code_entry_is_not_executed(own_cache, tmp_path):
    marker = tmp_path / "marker"
    # The digest anyone can compute (no key): the entry's code would write the marker.
    _plant_code_entry(own_cache, _GOOD, "<test f>", _EVIL.format(marker=str(marker)),
                      lambda key, body: _unkeyed(body))
    assert _run(cache.compile_cached(_GOOD, "<test f>")) == "good"
    assert not marker.exists()


def test_entry_made_with_another_key_is_not_executed(own_cache, monkeypatch, tmp_path):
    """A copied or restored cache folder (a CI cache) brings entries made under another key:
    they are compiled again, never run. The same entry under its own key runs (which shows
    that the planted code would have written the marker)."""
    marker = tmp_path / "marker"
    other_key = b"k" * 32
    _plant_code_entry(own_cache, _GOOD, "<test f>", _EVIL.format(marker=str(marker)),
                      lambda key, body: cache._mac(other_key, "code:" + key, body))
    assert _run(cache.compile_cached(_GOOD, "<test f>")) == "good"
    assert not marker.exists()
    monkeypatch.setattr(cache, "_setups", {str(own_cache): None})  # (the planted key:)
    monkeypatch.setattr(cache, "_setup", lambda: (str(own_cache), other_key))
    _fresh_code_cache(monkeypatch, own_cache)
    assert _run(cache.compile_cached(_GOOD, "<test f>")) == "evil" and marker.exists()


def test_files_are_authenticated_with_the_key(own_cache, monkeypatch):
    assert cache.write("x", b"body") and cache.read("x") == b"body"
    data = (own_cache / "x").read_bytes()
    # (the same body under the digest anyone can compute: refused)
    (own_cache / "x").write_bytes(cache.MAGIC + _unkeyed(b"evil") + b"evil")
    assert cache.read("x") is None
    # (a file moved to another name: refused, the name is part of the MAC)
    (own_cache / "y").write_bytes(data)
    assert cache.read("y") is None


def test_new_cache_and_key_are_owner_only(own_cache, tmp_path):
    assert cache.write("x", b"body")
    assert stat.S_IMODE(os.stat(own_cache).st_mode) & 0o077 == 0
    key = tmp_path / "state" / "asterism" / "cache-key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(key.parent).st_mode) & 0o077 == 0
    assert len(key.read_bytes()) == 32


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o1777])
def test_group_or_world_writable_cache_folder_is_refused(own_cache, capsys, mode):
    own_cache.mkdir()
    os.chmod(own_cache, mode)
    assert not cache.write("x", b"body") and cache.read("x") is None
    assert _run(cache.compile_cached(_GOOD, "<test f>")) == "good"
    cache._save_code()
    assert os.listdir(own_cache) == []  # (nothing read or written there)
    err = capsys.readouterr().err
    assert err == (f"asterism: warning: folder {own_cache} is writable by group or others "
                   f"(mode {mode:o}); `chmod go-w {own_cache}` to use it; running without the "
                   "cache\n")
    cache.read("x")
    assert capsys.readouterr().err == ""  # (once per process)


def test_cache_folder_of_another_user_is_refused(own_cache, monkeypatch, capsys):
    own_cache.mkdir()
    owner = os.stat(own_cache).st_uid
    monkeypatch.setattr(cache.os, "getuid", lambda: owner + 1)
    assert not cache.write("x", b"body") and cache.read("x") is None
    assert f"belongs to another user (uid {owner})" in capsys.readouterr().err


def test_key_readable_by_others_is_refused(own_cache, tmp_path, capsys):
    assert cache.write("x", b"body")
    key = tmp_path / "state" / "asterism" / "cache-key"
    os.chmod(key, 0o644)
    cache._setups.clear()
    assert cache.read("x") is None and not cache.write("x", b"body")
    assert "readable by group or others (remove it: a new one is made)" in \
        capsys.readouterr().err
    os.chmod(key, 0o600)
    key.write_bytes(b"short")
    cache._setups.clear()
    assert cache.read("x") is None
    assert "is damaged (5 bytes)" in capsys.readouterr().err
    key.unlink()  # (as the warning says: a new key, and the old entries are made again)
    cache._setups.clear()
    assert cache.read("x") is None and cache.write("x", b"body") and cache.read("x") == b"body"
