"""The result cache: one JSON file per finished point, so re-runs and interrupted sweeps resume.

The key is a SHA-256 of (kernel, parameters, target, asterism version and code digest, and
the options that change the figures: metric, backend, check, iterations, pipeline). Each
entry is written atomically (temporary file + rename) as soon as its point finishes, so an
interrupted sweep keeps everything it finished and never leaves a half-written entry.
Points that fail for a reason of the point (build, compile, run, check) are cached too:
they fail the same way again. A lost worker is not cached.

Location: `--cache DIR`, else $ASTERISM_CACHE_DIR, else $XDG_CACHE_HOME/asterism/sweep, else
~/.cache/asterism/sweep.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from asterism.errors import AsterismError
from asterism.sweep.worker import PointResult, PointTask, code_version, generator_id


def default_cache_dir() -> Path:
    """Where results are cached when no directory is given."""
    env = os.environ.get("ASTERISM_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "asterism" / "sweep"


def cache_key(task: PointTask) -> str:
    """The key of a task's result (see the module docstring for what it covers)."""
    material = {
        "kernel": generator_id(task.generator), "params": task.params, "target": task.target,
        "asterism": task.version or code_version(), "metric": task.metric,
        "backend": task.backend, "check": task.check, "pipeline": task.pipeline,
        "iterations": task.iterations if task.metric == "measured" else None,
    }
    if task.timing_params is not None:  # (absent otherwise: earlier keys stay valid)
        material["timing_params"] = {t: dict(v) for t, v in task.timing_params.values.items()}
    text = json.dumps(material, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


class ResultCache:
    """Finished points on disk, by cache key."""

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> PointResult | None:
        """The cached result of `key`, or None (a corrupt entry counts as missing)."""
        try:
            data: dict[str, Any] = json.loads(self._path(key).read_text())
            return PointResult.from_json(data["result"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, task: PointTask, result: PointResult) -> None:
        """Store a finished point (atomically; a failed write only loses the cache entry)."""
        from asterism.textio import write_file_atomic

        entry = {"key": key, "kernel": generator_id(task.generator), "target": task.target,
                 "asterism": task.version, "result": result.to_json()}
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_file_atomic(path, (json.dumps(entry, default=repr) + "\n").encode())
        except (OSError, AsterismError):
            pass  # an unwritable cache slows the next run down but must not stop this one


__all__ = ["ResultCache", "cache_key", "default_cache_dir"]
