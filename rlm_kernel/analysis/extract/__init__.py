"""extract_functions: function definitions of Python, Go, JavaScript or TypeScript source (SPEC-01.13-.17).

Engines: "exact" (Python `ast`, tree-sitter for the others), "regex" (line-anchored patterns) and "auto".
"""

from __future__ import annotations

import bisect

from rlm_kernel.analysis.errors import AnalysisInputError
from rlm_kernel.analysis.extract import python_ast
from rlm_kernel.analysis.extract.common import normalise_newlines, sort_records
from rlm_kernel.analysis.heavy import load

__all__ = [
    "ENGINES",
    "EXACT_SECONDS_PER_MB",
    "LANGUAGES",
    "MAX_EXACT_NESTING",
    "extract_functions",
    "normalise_language",
]

LANGUAGES = ("python", "go", "javascript", "typescript")
ALIASES = {
    "py": "python",
    "python3": "python",
    "go": "go",
    "golang": "go",
    "js": "javascript",
    "javascript": "javascript",
    "node": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "ecmascript": "javascript",
    "ts": "typescript",
    "typescript": "typescript",
    "python": "python",
}
ENGINES = ("auto", "exact", "regex")
# CPU time allowed to the exact tree-sitter parse before falling back to regex: real code parses at 5-12 MB/s
# (0.1-0.2 s/MB), pathological input can take seconds per MB; regex then needs at most ~0.6 s/MB
_SECONDS_PER_MB = 0.35
_MIN_SECONDS = 0.02
# engine="exact" has no fallback: its parse gets a larger budget, and past it the call raises (a clear error
# in bounded time) instead of running on — error recovery on a run of closing brackets or on random bytes
# grows faster than the input (4 s/MB at 1 MB, over 10 s/MB on random Latin-1 bytes)
EXACT_SECONDS_PER_MB = 0.6
_EXACT_MIN_SECONDS = 0.05
# tree-sitter's query over the parse tree costs time growing with the square of the nesting depth (~0.9 s at
# 32,000 levels, ~3 ms at 2,000); real code stays under ~100 levels, so deeper text goes to the linear engine
MAX_EXACT_NESTING = 500
# CPython's parser slows down more than linearly on very long lines (a 1 MB one-line file: ~2.8 s)
MAX_EXACT_PY_LINE = 50_000


def normalise_language(language: object) -> str:
    """The canonical language name for `language` (aliases accepted, case-insensitive)."""
    if not isinstance(language, str):
        raise AnalysisInputError(
            f"extract_functions: language must be a str, got {type(language).__name__}; "
            f"use one of {', '.join(LANGUAGES)}"
        )
    key = language.strip().lower().lstrip(".")
    if key not in ALIASES:
        raise AnalysisInputError(
            f"extract_functions: unsupported language {language!r}; use one of {', '.join(LANGUAGES)} "
            "(aliases: py, golang, js, ts)"
        )
    return ALIASES[key]


def extract_functions(content: str, language: str = "python", engine: str = "auto") -> list[dict]:
    """Extract function definitions from source code.

    Returns a list of dicts {"name", "signature", "start_line", "end_line"} sorted by start line; lines are
    1-based and inclusive (`\\n`, `\\r\\n` and `\\r` all end a line), `start_line` is the line holding the
    function's name (decorators are not included), `end_line` its last line. Covers functions, methods,
    nested and async functions, generators; for JS/TS also arrow functions and function expressions bound
    to names, class fields and object-literal methods, and TS overload signatures; Go functions and methods.
    `engine="auto"` uses the exact parser (Python `ast`, tree-sitter) and falls back to the regex engine on
    malformed input, returning partial results rather than raising; `"exact"` and `"regex"` force one.
    """
    if not isinstance(content, str):
        raise AnalysisInputError(
            f"extract_functions: content must be a str, got {type(content).__name__}; pass source text"
        )
    lang = normalise_language(language)
    if engine not in ENGINES:
        raise AnalysisInputError(
            f"extract_functions: engine must be one of {', '.join(ENGINES)}, got {engine!r}"
        )
    if not content.strip():
        return []
    text = normalise_newlines(content)
    if engine == "regex":
        return _regex(text, lang)
    if lang == "python":
        return _python(text, engine)
    return _tree_sitter(text, lang, engine)


def _python(text: str, engine: str) -> list[dict]:
    if engine == "auto" and _longest_line(text) > MAX_EXACT_PY_LINE:
        return _regex(text, "python")
    try:
        return python_ast.extract(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        if engine == "exact":
            raise AnalysisInputError(
                f"extract_functions: Python's parser rejected the source ({type(exc).__name__}: {exc}); "
                'use engine="auto" or "regex" for partial results'
            ) from None
        return _regex(text, "python")


def _regex(text: str, lang: str) -> list[dict]:
    """The regex engine's records (its compiled patterns and numpy load on first use)."""
    return load("rlm_kernel.analysis.extract.regex_engine").extract(text, lang)


def _longest_line(text: str) -> int:
    if len(text) <= MAX_EXACT_PY_LINE:
        return len(text)
    return max(map(len, text.split("\n")))


def _looks_binary(text: str) -> bool:
    """More than 1% control characters (other than tab, newline, form feed) in a sample: not source code."""
    sample = text[:65536]
    controls = len(sample) - len(sample.translate(_CONTROL_CHARS))
    return controls * 100 > len(sample)


_CONTROL_CHARS = {c: None for c in (*range(0, 9), 11, *range(14, 32), 127)}


def _tree_sitter(text: str, lang: str, engine: str) -> list[dict]:
    if engine == "auto" and _looks_binary(text):
        return _regex(text, lang)  # tree-sitter spends seconds per MB recovering from garbage
    depth = load("rlm_kernel.analysis.extract.brackets").max_nesting(text)
    if depth > MAX_EXACT_NESTING:
        if engine == "exact":
            raise AnalysisInputError(
                f"extract_functions: brackets nest {depth} deep, past what the exact parser handles in time "
                f'({MAX_EXACT_NESTING}); use engine="auto" or "regex" for the linear engine\'s results'
            )
        return _regex(text, lang)
    per_mb, floor = (
        (EXACT_SECONDS_PER_MB, _EXACT_MIN_SECONDS) if engine == "exact" else (_SECONDS_PER_MB, _MIN_SECONDS)
    )
    seconds = max(floor, len(text) / 1e6 * per_mb)
    treesitter = load("rlm_kernel.analysis.extract.treesitter")
    try:
        parsed = treesitter.parse(text, lang, seconds)
        exact = treesitter.extract(text, lang, parsed=parsed)
    except treesitter.ParseTimeout:
        if engine == "exact":
            raise AnalysisInputError(
                f"extract_functions: the exact {lang} parser did not finish within its time limit "
                f"({seconds:.2f} s CPU for {len(text):,} characters: the text is far from valid {lang}, e.g. "
                'random bytes or long runs of unmatched brackets); use engine="auto" or "regex" for the '
                "linear engine's results"
            ) from None
        return _regex(text, lang)
    if engine == "exact" or not parsed.has_error:
        return exact
    # malformed input: keep what tree-sitter found outside its error regions, take regex finds inside them
    merged: list[list[int]] = []
    for a, b in sorted(parsed.error_line_spans()):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    firsts = [a for a, _ in merged]

    def in_error(line: int) -> bool:
        i = bisect.bisect_right(firsts, line) - 1
        return i >= 0 and line <= merged[i][1]

    kept = [r for r in exact if not in_error(r["start_line"])]
    taken = {r["start_line"] for r in kept}
    extra = [r for r in _regex(text, lang) if in_error(r["start_line"]) and r["start_line"] not in taken]
    return sort_records(kept + extra)
