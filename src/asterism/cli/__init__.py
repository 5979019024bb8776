"""The `asterism` command: one verb per job, a module per verb group.

`main.py` holds the parser and the dispatch, `io.py` the reading of inputs and the atomic
writing of outputs; `ir.py`, `mc.py`, `run.py`, `stats.py` and `trace.py` hold the verbs.
"""

from asterism.cli.main import main

__all__ = ["main"]
