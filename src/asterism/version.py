"""asterism's version and the folder of its package: the facts about asterism itself that
lower layers need (cache keys, the .comment of a code object, sweep cache keys), kept here
so that no module imports the package root `asterism` (which sits above every layer)."""

import os
from pathlib import Path

__version__ = "0.1.0"  # (pyproject.toml's version: keep the two equal)

# The folder of the `asterism` package this process imported (source files and data).
PACKAGE_DIR = Path(__file__).parent


def package_file(*parts: str) -> str:
    """The path of a file or folder inside the `asterism` package (its data: isa/data,
    target/data), as plain os.path (importlib.resources costs ~10 ms of every start-up)."""
    return os.path.join(os.path.dirname(__file__), *parts)
