"""The generated reference pages: preloaded helpers, magics, settings and limits, written from the code itself
(the helper table, the magic registry, the settings schema, `Limits`) at each build, so they cannot drift."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import tokenize
from pathlib import Path
from typing import Any

GENERATED = "_generated"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def helpers_page() -> str:
    """Each preloaded REPL helper with the signature a cell sees and its docstring."""
    import rlm_kernel.analysis as analysis
    from rlm_kernel.repl.helpers import HELPERS
    from rlm_kernel.repl.preload import ANALYSIS_NAMES

    out = [
        "# Preloaded helpers\n",
        "Every `rlm` notebook and every root-loop block starts with these names.\n",
    ]
    for name, fn in HELPERS.items():
        params = list(inspect.signature(fn).parameters.values())[2:]  # (state, ns, ...) as the cell sees it
        sig = inspect.signature(fn).replace(parameters=params)
        out.append(f"## `{name}`\n\n```python\n{name}{sig}\n```\n\n{inspect.cleandoc(fn.__doc__ or '')}\n")
    for name in ANALYSIS_NAMES:
        fn = getattr(analysis, name)
        doc = inspect.cleandoc(fn.__doc__ or "")
        out.append(f"## `{name}`\n\n```python\n{name}{inspect.signature(fn)}\n```\n\n{doc}\n")
    return "\n".join(out)


def magics_page() -> str:
    """The magic allowlist, the `%rlm` subcommands and their one-line docs, from the registry."""
    import rlm_kernel.kernel  # noqa: F401 - importing the kernel (and its shell) registers every magic
    from rlm_kernel import magics

    return (
        "# Magics\n\nThe only magics an `rlm` cell can run; any other is refused with the reason.\n\n"
        "## Line magics\n\n"
        + _table(
            ("magic", "what it does"),
            [(f"`%{n}`", d) for n, d in sorted(magics.allowed_line_magics().items())],
        )
        + "\n## Cell magics\n\n"
        + _table(
            ("magic", "what it does"),
            [(f"`%%{n}`", d) for n, d in sorted(magics.allowed_cell_magics().items())],
        )
        + "\n## `%rlm` subcommands\n\n"
        + _table(
            ("command", "what it does"),
            [(f"`%rlm {n}`", d) for n, d in sorted(magics.rlm_subcommands().items())],
        )
    )


def _field_comments(cls: type) -> dict[str, str]:
    """The comment on (or just above) each field line of a dataclass's source."""
    source = inspect.getsource(cls)
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("# ").strip()
    found: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            text = " ".join(comments[i] for i in lines if i in comments)
            above = []
            i = node.lineno - 1
            while i in comments:
                above.insert(0, comments[i])
                i -= 1
            found[node.target.id] = text or " ".join(above)
    return found


def settings_page() -> str:
    """The LLM settings and budget dimensions from the schema; the sandbox limits from `Limits`."""
    from rlm_kernel.llm.schema import LLM_SETTINGS
    from rlm_kernel.sandbox.limits import Limits

    settings = [
        (f"`{s.name}`", f"`{s.env_var}`" if s.env_var else "(config file only)", _default(s.default), s.what)
        for s in LLM_SETTINGS
    ]
    notes = _field_comments(Limits)
    limits = [
        (f"`RLM_{f.name.upper()}`", _default(f.default), notes.get(f.name, ""))
        for f in dataclasses.fields(Limits)
    ]
    return (
        "# Settings and environment variables\n\n"
        "Generated from the settings schema (`rlm_kernel/llm/schema.py`) and the sandbox's `Limits`.\n\n"
        "## LLM settings\n\n"
        "Each is set at kernel start by its environment variable or a top-level key of the config file "
        "(`RLM_CONFIG`), and in a person's cell by `%rlm set name=value` (never from model-written code).\n\n"
        + _table(("setting", "environment variable", "default", "valid values"), settings)
        + "\n## Sandbox limits\n\n"
        "Read once at kernel start (`0` disables a limit); no cell can change them.\n\n"
        + _table(("environment variable", "default", "what it limits"), limits)
    )


def _default(value: Any) -> str:
    return "—" if value is None else f"`{value!r}`"


PAGES = {"helpers.md": helpers_page, "magics.md": magics_page, "settings.md": settings_page}


def write_pages(reference_dir: Path) -> None:
    target = reference_dir / GENERATED
    target.mkdir(exist_ok=True)
    for name, page in PAGES.items():
        text = page()
        path = target / name
        if (
            not path.exists() or path.read_text(encoding="utf-8") != text
        ):  # unchanged files keep Sphinx's cache
            path.write_text(text, encoding="utf-8")


def copy_notebooks(docs: Path) -> None:
    """The tutorials as they are stored in notebooks/ (outputs included), copied under docs/tutorials/."""
    source = docs.parent / "notebooks"
    target = docs / "tutorials" / GENERATED
    target.mkdir(exist_ok=True)
    for nb in sorted(source.glob("[0-9][0-9]-*.ipynb")):
        data = nb.read_bytes()
        dest = target / nb.name
        if not dest.exists() or dest.read_bytes() != data:
            dest.write_bytes(data)


def _on_builder_inited(app: Any) -> None:
    docs = Path(app.srcdir)
    write_pages(docs / "reference")
    copy_notebooks(docs)


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
