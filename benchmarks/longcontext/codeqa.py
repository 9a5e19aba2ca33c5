"""Code questions (CodeQA-like) over the installed standard library's own sources, answered from `ast`.

The corpus of a length is the `email` package's files (a seeded subset when the length is smaller), then
whole further packages until the length is reached. Questions: which file defines a function or class; how
many top-level functions a file defines; which class overrides a base class's method; a parameter's default.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Mapping
from pathlib import Path

from benchmarks.longcontext.cases import Case, join_corpus
from benchmarks.longcontext.scoring import score_number, score_token
from benchmarks.longcontext.text import stdlib_root

__all__ = ["KINDS", "PACKAGES", "corpus", "make", "package_files"]

PACKAGES = (
    "email",
    "json",
    "http",
    "urllib",
    "logging",
    "concurrent",
    "importlib",
    "xml",
    "asyncio",
    "multiprocessing",
)
KINDS = ("where", "count", "override", "default")


def package_files(package: str) -> dict[str, str]:
    """A package's .py files, `package/...` relative names in sorted order, with their text."""
    root = stdlib_root()
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted((root / package).rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def corpus(length: int, rng: random.Random) -> dict[str, str]:
    """Files of about `length` chars at most: email's (a seeded subset if too big), then more packages."""
    email = package_files("email")
    if sum(len(t) for t in email.values()) > length:
        names = list(email)
        rng.shuffle(names)
        chosen: dict[str, str] = {}
        total = 0
        for name in names:
            if total + len(email[name]) <= length:
                chosen[name] = email[name]
                total += len(email[name])
        return {n: chosen[n] for n in sorted(chosen)}
    files = dict(email)
    total = sum(len(t) for t in files.values())
    for package in PACKAGES[1:]:
        for name, text in package_files(package).items():
            if total + len(text) > length:
                return files
            files[name] = text
            total += len(text)
    return files


def _defs(files: Mapping[str, str]) -> dict[str, ast.Module]:
    return {name: ast.parse(text) for name, text in files.items()}


def _where(trees: dict[str, ast.Module], rng: random.Random) -> tuple[str, str, list[str]] | None:
    where: dict[str, list[str]] = {}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                where.setdefault(node.name, []).append(name)
    top = [
        (node.name, name)
        for name, tree in trees.items()
        if not name.endswith("__init__.py")
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and len(where[node.name]) == 1
    ]
    if not top:
        return None
    symbol, file = rng.choice(sorted(top))
    return symbol, file, [Path(n).name for n in trees if Path(n).name != Path(file).name]


def _override(trees: dict[str, ast.Module], rng: random.Random) -> tuple[str, str, str] | None:
    classes: dict[str, set[str]] = {}
    bases: dict[str, list[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
                if node.name in classes:
                    classes[node.name] = set()  # two classes of one name: ambiguous, not asked
                    continue
                classes[node.name] = methods
                bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]
    found: dict[tuple[str, str], list[str]] = {}
    for cls, parents in bases.items():
        for base in parents:
            for method in classes.get(cls, set()) & classes.get(base, set()):
                if not method.startswith("__"):
                    found.setdefault((base, method), []).append(cls)
    unique = sorted((b, m, c[0]) for (b, m), c in found.items() if len(c) == 1)
    return rng.choice(unique) if unique else None


def _default(trees: dict[str, ast.Module], rng: random.Random) -> tuple[str, str, str, str] | None:
    names = {}
    for file, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                names.setdefault(node.name, []).append((file, node))
    options = []
    for fname, defs in names.items():
        if len(defs) != 1:
            continue
        file, node = defs[0]
        args = node.args.args + node.args.kwonlyargs
        defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + list(node.args.defaults)
        defaults += list(node.args.kw_defaults)
        for arg, default in zip(args, defaults, strict=True):
            value = default.value if isinstance(default, ast.Constant) else None
            if (type(value) in (int, float) and value not in (0, 1)) or (
                type(value) is str and len(value) >= 2 and value.strip() == value
            ):
                options.append((file, fname, arg.arg, repr(default.value)))
    return rng.choice(sorted(options)) if options else None


def _unquote(answer: str) -> str:
    return answer.replace("`", " ").replace('"', "'")


def make(lengths: list[int], per_length: int, seed: int = 1) -> list[Case]:
    cases = []
    for length in lengths:
        rng = random.Random(f"code:{seed}:{length}")
        files = corpus(length, rng)
        trees = _defs(files)
        context, _ = join_corpus(files)
        k = f"{length // 1000}K"
        for i in range(per_length):
            kind = KINDS[i % len(KINDS)]
            case = None
            if kind == "where" and (w := _where(trees, rng)):
                symbol, file, rivals = w
                base = Path(file).name
                case = Case(
                    "code",
                    f"{k}-where-{i}",
                    f"Which file defines `{symbol}`?",
                    context,
                    file,
                    "file",
                    lambda a, b=base, r=tuple(rivals): score_token(a, b, r),
                    length,
                    files,
                    {"symbol": symbol},
                )
            elif kind == "count":
                file = rng.choice(sorted(n for n in files if not n.endswith("__init__.py")))
                n = sum(isinstance(d, ast.FunctionDef | ast.AsyncFunctionDef) for d in trees[file].body)
                q = f"How many top-level functions does `{file}` define? Answer with a number."
                case = Case(
                    "code",
                    f"{k}-count-{i}",
                    q,
                    context,
                    n,
                    "number",
                    lambda a, n=n: score_number(a, n),
                    length,
                    files,
                    {"file": file},
                )
            elif kind == "override" and (o := _override(trees, rng)):
                base, method, cls = o
                q = f"Which class overrides the method `{method}` of its base class `{base}`?"
                case = Case(
                    "code",
                    f"{k}-override-{i}",
                    q,
                    context,
                    cls,
                    "token",
                    lambda a, c=cls: score_token(a, c),
                    length,
                    files,
                    {"base": base, "method": method},
                )
            elif kind == "default" and (d := _default(trees, rng)):
                file, fname, arg, value = d
                q = f"What is the default value of the parameter `{arg}` of `{fname}` in `{file}`?"
                want = value.replace('"', "'")
                case = Case(
                    "code",
                    f"{k}-default-{i}",
                    q,
                    context,
                    value,
                    "token",
                    lambda a, w=want: max(
                        score_token(_unquote(a), w), score_token(_unquote(a), w.strip("'"))
                    ),
                    length,
                    files,
                    {"file": file, "function": fname},
                )
            if case is not None:
                cases.append(case)
    return cases
