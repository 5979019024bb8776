"""pytest plugin for fuzz campaigns: the time and peak memory of every input.

Wraps each hypothesis test's inner function (hypothesis lets a plugin replace
`test.hypothesis.inner_test`) and writes one line per input to $ASTERISM_FUZZ_STATS:
`test<TAB>seconds<TAB>peak RSS KB so far<TAB>input bytes`. The inputs run one after another in
one process, so an input's memory is at most the peak RSS after it; a jump of the peak names
the input that caused it. Summarize with `python tools/fuzz_campaign.py STATS`.

    ASTERISM_FUZZ_EXAMPLES=500 ASTERISM_FUZZ_STATS=/tmp/stats.tsv PYTHONPATH=src:tools \\
        pytest -p fuzz_campaign tests/test_fuzz_inputs.py tests/test_fuzz_ir_values.py
    python tools/fuzz_campaign.py /tmp/stats.tsv
"""

from __future__ import annotations

import functools
import os
import resource
import sys
import time


def _size(values) -> int:
    """Bytes of the text/bytes arguments of one input."""
    total = 0
    for v in values:
        if isinstance(v, str | bytes):
            total += len(v)
        elif isinstance(v, tuple | list):
            total += _size(v)
    return total


def pytest_collection_modifyitems(items) -> None:
    """Wrap the inner function of every hypothesis test (when ASTERISM_FUZZ_STATS is set)."""
    path = os.environ.get("ASTERISM_FUZZ_STATS")
    if not path:
        return
    for item in items:
        handle = getattr(getattr(item, "obj", None), "hypothesis", None)
        if handle is None or getattr(handle.inner_test, "_measured", False):
            continue
        inner = handle.inner_test
        name = item.originalname if hasattr(item, "originalname") else item.name

        @functools.wraps(inner)
        def measured(*args, _inner=inner, _name=name, **kwargs):
            start = time.perf_counter()
            try:
                return _inner(*args, **kwargs)
            finally:
                seconds = time.perf_counter() - start
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                with open(path, "a") as f:
                    f.write(f"{_name}\t{seconds:.3f}\t{rss}\t"
                            f"{_size([*args, *kwargs.values()])}\n")

        measured._measured = True  # type: ignore[attr-defined]
        handle.inner_test = measured


def summarize(path: str) -> str:
    """Per test: inputs, max and mean seconds per input, largest input; overall peak RSS."""
    rows: dict[str, list[tuple[float, int, int]]] = {}
    with open(path) as f:
        for line in f:
            name, seconds, rss, size = line.rstrip("\n").split("\t")
            rows.setdefault(name, []).append((float(seconds), int(rss), int(size)))
    out = [f"{'test':<48} {'inputs':>7} {'max s':>7} {'mean s':>7} {'max bytes':>10}"]
    for name, rs in sorted(rows.items()):
        out.append(f"{name:<48} {len(rs):>7} {max(r[0] for r in rs):>7.2f} "
                   f"{sum(r[0] for r in rs) / len(rs):>7.3f} {max(r[2] for r in rs):>10}")
    total = sum(len(rs) for rs in rows.values())
    peak = max(r[1] for rs in rows.values() for r in rs)
    slowest = max(r[0] for rs in rows.values() for r in rs)
    out.append(f"{total} inputs; slowest input {slowest:.2f} s; peak RSS {peak / 1024:.0f} MB")
    return "\n".join(out)


if __name__ == "__main__":
    print(summarize(sys.argv[1]))
