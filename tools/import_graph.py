"""asterism's import graph: import circles and imports that go up the layer order.

    python tools/import_graph.py            # circles and upward imports, exit 1 if any
    python tools/import_graph.py --json     # the same as data

Every import counts, the deferred ones inside functions too (a circle of lazy imports is
still a circle: the layers cannot be read or tested one at a time); only imports under
`if TYPE_CHECKING:` are left out (annotations, never executed). The layer order is
`LAYERS` below, the same as docs/design.md's table.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "asterism"

# Lowest first. A module may import modules of its own layer or of earlier layers only.
# Top-level modules of the package (errors, textio, paths, cache, version) are `support`.
# `frontend` (upstream MLIR -> amdgcn IR) emits through the builder, and `passes` registers
# its pass.
LAYERS = ["support", "isa", "target", "mc", "ir", "builder", "frontend", "passes", "api",
          "emu", "timing", "profile", "runtime", "kernels", "sweep", "cli"]
SUPPORT_MODULES = {"errors", "textio", "paths", "cache", "version", "support"}
ROOT_LAYER = len(LAYERS)  # `asterism` itself and `asterism.__main__` sit above everything


@dataclass
class Graph:
    """Modules of the package and the asterism modules each one imports."""

    files: dict[str, Path]
    edges: dict[str, set[str]] = field(default_factory=dict)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Line numbers of statements under `if TYPE_CHECKING:`."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                for sub in ast.walk(stmt):
                    if hasattr(sub, "lineno"):
                        lines.add(sub.lineno)
    return lines


def _resolve(name: str, files: dict[str, Path]) -> str | None:
    while name and name not in files:
        name = name.rpartition(".")[0]
    return name or None


def build_graph(package: Path = PACKAGE) -> Graph:
    """Parse every module of the package and collect its imports of asterism modules."""
    files = {_module_name(p): p for p in sorted(package.rglob("*.py"))}
    graph = Graph(files, {m: set() for m in files})
    for mod, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_lines(tree)
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in files else origin
                           for a in node.names]
            for t in targets:
                r = _resolve(t, files)
                if r and r != mod:
                    graph.edges[mod].add(r)
    return graph


def circles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph.edges:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.edges[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found, key=lambda c: (len(c), c))


def layer_of(module: str) -> int:
    """Position of a module's layer in LAYERS (ROOT_LAYER for the package root)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return ROOT_LAYER
    top = parts[1]
    if top in SUPPORT_MODULES:
        return 0
    if top not in LAYERS:
        raise SystemExit(f"{module}: its folder {top!r} is in no layer of tools/import_graph.py")
    return LAYERS.index(top)


def upward_imports(graph: Graph) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    return sorted((m, t) for m, ts in graph.edges.items() for t in ts
                  if layer_of(t) > layer_of(m))


def finding_lines(found: list[list[str]], up: list[tuple[str, str]]) -> list[str]:
    """One line per circle and per upward import, as the command prints them."""
    lines = [f"circle of {len(comp)}: {' '.join(comp)}" for comp in found]
    lines += [f"upward: {m} -> {t} ({LAYERS[layer_of(m)]} below "
              f"{LAYERS[layer_of(t)] if layer_of(t) < ROOT_LAYER else 'root'})" for m, t in up]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the findings as JSON")
    args = ap.parse_args()
    graph = build_graph()
    found, up = circles(graph), upward_imports(graph)
    if args.json:
        print(json.dumps({"circles": found, "upward": up}, indent=1))
    else:
        for line in finding_lines(found, up):
            print(line)
        print(f"{len(found)} circles, {len(up)} upward imports, {len(graph.files)} modules")
    return 1 if found or up else 0


if __name__ == "__main__":
    sys.exit(main())
