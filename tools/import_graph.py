"""Import graph of rlm_kernel, function-level imports included: prints module and package cycles.

Usage: python tools/import_graph.py [--packages] [--edges PKG_A PKG_B]
Exit status 1 when the module graph has a cycle (so a test or CI can use it).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "rlm_kernel"


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in (ROOT / PACKAGE).rglob("*.py")}


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of name that is one of our modules."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(mod: str, path: Path, modules: dict[str, Path]) -> set[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import of ours in the file."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    out: set[tuple[str, int, bool]] = set()
    top_level = {id(n) for n in tree.body}
    type_only = {
        id(sub)
        for n in ast.walk(tree)
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
        for sub in ast.walk(n)
    }
    for node in ast.walk(tree):
        if id(node) in type_only:  # annotations only (import-linter skips them too)
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                prefix = ".".join(base[: len(base) - node.level + 1])
                src = f"{prefix}.{node.module}" if node.module else prefix
            else:
                src = node.module or ""
            names = [f"{src}.{a.name}" for a in node.names] + [src]
        for n in names:
            if not n.startswith(PACKAGE):
                continue
            target = resolve(n, modules)
            if target and target != mod:
                out.add((target, node.lineno, id(node) in top_level))
    return out


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of size > 1."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def group(mod: str) -> str:
    parts = mod.split(".")
    return ".".join(parts[:2])


def main(argv: list[str]) -> int:
    modules = all_modules()
    edges: dict[str, dict[str, list[tuple[int, bool]]]] = defaultdict(lambda: defaultdict(list))
    for mod, path in modules.items():
        for target, line, top in imports_of(mod, path, modules):
            # a package's __init__ importing its own submodules is not a layering edge
            edges[mod][target].append((line, top))
    graph = {m: set(t) for m, t in edges.items()}
    if "--edges" in argv:
        a, b = argv[argv.index("--edges") + 1 : argv.index("--edges") + 3]
        for mod in sorted(edges):
            for target, where in sorted(edges[mod].items()):
                if group(mod) == a and group(target) == b:
                    lines = ", ".join(f"{ln}{'' if top else ' (in function)'}" for ln, top in sorted(where))
                    print(f"{mod} -> {target}  [line {lines}]")
        return 0
    found = 0
    pkg_graph: dict[str, set[str]] = defaultdict(set)
    for m, ts in graph.items():
        for t in ts:
            # an __init__ re-exporting its submodules points inward, not across packages
            if group(m) != group(t) and not (m == group(m) and t.startswith(m + ".")):
                pkg_graph[group(m)].add(group(t))
    if "--packages" in argv:
        for m in sorted(pkg_graph):
            print(f"{m} -> {', '.join(sorted(pkg_graph[m]))}")
    for comp in sccs(pkg_graph):
        found += 1
        print("package cycle:", " <-> ".join(comp))
    for comp in sccs(graph):
        found += 1
        print(f"module cycle ({len(comp)}):", ", ".join(comp))
    if not found:
        print("no cycles")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
