"""asterism's version and the folder of its package: the facts about asterism itself that
lower layers need (cache keys, the .comment of a code object, sweep cache keys), kept here
so that no module imports the package root `asterism` (which sits above every layer)."""

import os

__version__ = "0.1.0"  # (pyproject.toml's version: keep the two equal)


def __getattr__(name: str):
    """PACKAGE_DIR, the folder (a pathlib.Path) of the `asterism` package this process
    imported, made on first use: pathlib costs ~5 ms of a start-up that does not need it
    (`asterism disasm`)."""
    if name == "PACKAGE_DIR":
        from pathlib import Path

        return Path(__file__).parent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def package_file(*parts: str) -> str:
    """The path of a file or folder inside the `asterism` package (its data: isa/data,
    target/data), as plain os.path (importlib.resources costs ~10 ms of every start-up)."""
    return os.path.join(os.path.dirname(__file__), *parts)
