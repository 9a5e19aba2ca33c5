"""The root model's system prompt and the first user message (context metadata, never the context itself).

Keeps the RLM reference prompt contract: length + short preview only, ```repl blocks, FINAL to end; states
the configured sub-model's real window and the FINAL gate's rule (see `gate`).
"""

from __future__ import annotations

import json
import re

from rlm_kernel.llm.config import register_setting

__all__ = [
    "DEFAULT_WINDOW_TOKENS",
    "COMMON_WORDS",
    "SYSTEM_PROMPT",
    "chunk_chars",
    "context_message",
    "describe_context",
    "keyword_of",
    "register_window_setting",
    "system_prompt",
    "window_line",
    "window_tokens",
]

_TEMPLATE = """\
You are the root of a Recursive Language Model running in a sandboxed Python REPL (an `rlm` Jupyter
kernel). You answer a question about a context that is too large to read directly. You never see the
context in full: you only know its type, length and a short preview. You explore it by writing code.

Every turn, answer with a fenced block tagged `repl` (several ```repl blocks run in order, stopping
at a FINAL; blocks tagged anything else, e.g. ```python, do NOT run):
```repl
print(len(context))
```
The block runs in a persistent namespace; you then see its printed output (truncated), its last
expression's value and any error. Only what you print comes back to you, so print summaries and short
slices — NEVER print the whole context or other huge values.

Available in the namespace:
- `context` (alias `ctx`): the data (usually a str). `context_files`: for a corpus, path -> (start, end)
  offsets; a corpus joins its files with `=== path ===` marker lines.
- `find_relevant(context, "words of the question", top_k=5)` -> [(chunk, score), ...]: the ~50-line
  sections that best match the words, best first.
- `extract_functions(source_text)` -> [{"name", "signature", "start_line", "end_line"}, ...]: the
  functions defined in Python (or JS/TS/Go) source text.
- `map_reduce(context, "Do X in this text:\\n{chunk}", "Combine these answers:\\n{results}",
  n_chunks=len(context) // {size} + 1)` -> str: one sub-call per chunk, then one that combines them.
- `llm_query(prompt, model=None, max_tokens=None, system=None) -> str`: one sub-model call. {window}
  Give it the question together with the chunk of `context` it needs — it sees nothing else. Keep each
  chunk under about {size:,} characters: `[context[i:i + {size}] for i in range(0, len(context), {size})]`.
- `llm_query_batched(prompts, model=None) -> list[str]`: many independent calls at once, in input order;
{failures}
- `rlm_query(prompt, model=None) -> str`: a recursive sub-RLM whose `context` is `prompt`, for
  sub-problems that are themselves big or need several steps. `rlm_query_batched(prompts, model=None)`.
- `SHOW_VARS()` lists your variables; `repl_set(name, value)` / `repl_get(name, default=None)`.
- `FINAL(value)` ends the run with `value`; `FINAL_VAR("name")` ends it with the value of the variable
  called name.
Only the sandbox's Python subset is allowed: no imports except the allowed modules (re, json, math,
collections, itertools, statistics, …), no file or network access, no names starting with an underscore.

Strategies:
1. Use code first whenever code can answer: search, filter, count, parse, compare. Search for the words
   of the question, e.g.
   ```repl
   hits = [line for line in context.splitlines() if {keyword} in line.lower()]
   print(len(hits)); print(hits[:10])
   ```
   What your code prints from `context` is evidence: when it answers the question, end the run with it
   at once — no sub-model call is needed for what code found.
{delegate}
2. Use sub-model calls (llm_query, map_reduce, rlm_query) only for what needs reading or judgement
   (meaning, sentiment, a summary), always with the part of `context` they need.
3. A sub-model can be wrong: if its answer disagrees with what your code found in `context`, trust the
   code's output.

Ending the run: call `FINAL(value)` or `FINAL_VAR("name")` inside the block, or write `FINAL(...)` on
its own line outside the block, with the answer as the output showed it. The answer must be drawn from
`context`, so a FINAL is ACCEPTED only when it is
(a) a value your code computed from `context`, e.g. `n = sum(...context...)` then `FINAL(n)`;
(b) text your code printed from `context` (copy it into FINAL(...) once you see it); or
(c) what an llm_query/rlm_query call that was given part of `context` answered. A call without any of
    the context (e.g. llm_query(question)) is a guess and does not count.
An answer you type yourself that no output shows is rejected. Printing an answer does not end the run,
and running the same code again tells you nothing new. Build a long answer in a variable and finish
with FINAL_VAR("name").
"""


_FAILURES = {
    "raise": (
        "  if some fail it raises QueryBatchError with `.results` (None where failed) and `.errors` "
        "{index: text}."
    ),
    "string": (
        '  a failed item\'s answer is a string starting with "Error:" (the others are kept). A failed\n'
        '  llm_query/rlm_query call also returns "Error: <reason>" instead of raising: check answers for it.'
    ),
}
"""How failed calls surface, by the `errors_in_model_code` setting (repl/translate.errors_as_text); the
"raise" text is the prompt's original line."""

DEFAULT_WINDOW_TOKENS = 128_000
"""The sub-model window assumed for remote providers when the `context_window` setting is not set."""
_CHARS_PER_TOKEN = 3


def window_line(window_tokens: int, answer_tokens: int = 1024) -> str:
    """What the prompt says about one sub-call's capacity, from the model's window in tokens."""
    room = max(window_tokens - answer_tokens - 500, 256)
    chars = room * _CHARS_PER_TOKEN
    return (
        f"The sub-model's window is {window_tokens:,} tokens: one call reads at most about {chars:,} "
        "characters of prompt" + (" — give it chunks, not the whole context." if chars < 1_000_000 else ".")
    )


_DELEGATE_CORPUS = """\
   To read one file with a sub-model, give it the question WITH that file's text, e.g.
   ```repl
   start, end = context_files[{path}]
   print(llm_query("Question: ...\\n\\nText:\\n" + context[start:end]))
   ```"""
# Every name an example shows exists in the run: measured with the coder model, a corpus example with a
# made-up path was copied verbatim (`context_files["data/notes.txt"]`, a KeyError), so the example names the
# run's own first file, and a run over one text has no delegation example.

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
COMMON_WORDS = frozenset(
    "the and for are was were how many much what which who whose where when does did this that these those "
    "with from into there their about text context file files line lines code answer number value give "
    "find tell list name named final task read asks starts rest print show".split()
)


def keyword_of(question: str, text: str = "") -> str:
    """The search word the prompt's example shows, lower case, so the example a small model copies searches
    for something real: a term the question quotes (`name`, "name"), else its most distinctive word (an
    identifier, an upper-case word or one with digits first), then — given the context's `text` — the
    rarest word that occurs in it, then the longest; "keyword" when the question has none.

    Measured with the coder model (issue 27): it copied the example's `line.lower()` and searched it for
    "ERROR" (no hits); with the question's own word lower case in the example, the copy finds it. A
    needle's rarest word ("override" in "What is the maintenance override code mentioned in the log?")
    finds its line among few hits; the longest word may be on every other line."""
    quoted = re.findall(r"`([^`]{3,60})`|\"([^\"]{3,60})\"", question or "")
    for pair in quoted:
        term = (pair[0] or pair[1]).strip()
        if term:
            return term.lower()
    words = [w for w in _WORD.findall(question or "") if w.lower() not in COMMON_WORDS]
    if not words:
        return "keyword"
    low = text.lower() if text else ""
    hits = {w: low.count(w.lower()) for w in words} if low else {}

    def rank(word: str) -> tuple[bool, bool, int, int]:
        special = "_" in word or any(c.isdigit() for c in word) or (word.isupper() and len(word) > 1)
        found = hits.get(word, 0)
        return special, found > 0, -found, len(word)

    return max(words, key=rank).lower()


def chunk_chars(window_tokens: int, answer_tokens: int = 1024) -> int:
    """A sub-call chunk's size in characters: about four fifths of what one call reads, in thousands."""
    room = max(window_tokens - answer_tokens - 500, 256) * _CHARS_PER_TOKEN
    return max(1000, int(room * 0.8) // 1000 * 1000)


def system_prompt(
    window_tokens: int = DEFAULT_WINDOW_TOKENS,
    answer_tokens: int = 1024,
    corpus: bool = True,
    errors: str = "raise",
    example_file: str | None = None,
    question: str = "",
    context: str = "",
) -> str:
    """The root's system prompt, stating the configured sub-model's window and the chunk size it allows;
    a `corpus` (a context loaded from files) whose file `example_file` is named gets an example of
    delegating that file to a sub-model (no example without a real name); the search example looks for a
    word of `question` (the rarest in `context`, the run's text); `errors` (the `errors_in_model_code`
    setting) says how failed calls surface."""
    text = _TEMPLATE.replace("{window}", window_line(window_tokens, answer_tokens))
    size = chunk_chars(window_tokens, answer_tokens)
    text = text.replace("{size:,}", f"{size:,}").replace("{size}", str(size))
    text = text.replace("{keyword}", repr(keyword_of(question, context)))
    text = text.replace("{failures}", _FAILURES.get(errors, _FAILURES["raise"]))
    delegate = ""
    if corpus and example_file:
        delegate = _DELEGATE_CORPUS.replace("{path}", json.dumps(example_file)) + "\n"
    return text.replace("{delegate}\n", delegate)


SYSTEM_PROMPT = system_prompt()
"""The prompt with the default window (what `system_prompt()` returns without a configured model)."""

_LOCAL_FALLBACK_TOKENS = 8192


def _parse_window(value: object) -> int:
    try:
        tokens = int(str(value).replace("_", "").replace(",", "").strip())
    except ValueError:
        raise ValueError(f"context_window must be a whole number of tokens, got {value!r}") from None
    if tokens < 512:
        raise ValueError(f"context_window must be at least 512 tokens, got {tokens}")
    return tokens


def register_window_setting() -> None:
    """Make `context_window` (the sub-model's window in tokens) a setting (`%rlm set`, env, TOML)."""
    register_setting(
        "context_window",
        _parse_window,
        None,
        "the sub-model's context window in tokens (default: the local model's, else "
        f"{DEFAULT_WINDOW_TOKENS:,})",
    )


def window_tokens(config: object) -> int:
    """The window the prompt states: the `context_window` setting, else the local model's, else 128K."""
    extra = getattr(config, "extra", None) or {}
    if extra.get("context_window"):
        return int(extra["context_window"])
    if getattr(config, "provider", None) == "local":
        try:
            from rlm_kernel.llm import local

            server = local.local_server()
            tokens = getattr(server, "n_ctx", None) if server is not None else None
            if not tokens:
                size = getattr(local, "context_size", None) or getattr(local, "_context_size", None)
                tokens = size() if callable(size) else None
            return int(tokens) if tokens else _LOCAL_FALLBACK_TOKENS
        except Exception:  # noqa: BLE001 - a prompt line must never break a run
            return _LOCAL_FALLBACK_TOKENS
    return DEFAULT_WINDOW_TOKENS


def describe_context(value: object, preview_chars: int = 500, files: dict | None = None) -> str:
    """Type, length, file count and a short preview of `value` — what the root is allowed to see."""
    if isinstance(value, str):
        kind, length, preview = "str", f"{len(value):,} characters", value[:preview_chars]
    elif isinstance(value, list | tuple):
        kind, length = type(value).__name__, f"{len(value):,} items"
        preview = repr(value[:5])[:preview_chars]
    elif isinstance(value, dict):
        kind, length = "dict", f"{len(value):,} keys"
        preview = repr(list(value)[:20])[:preview_chars]
    else:
        kind, length, preview = type(value).__name__, "unknown size", repr(value)[:preview_chars]
    lines = [f"The context is a {kind} of {length}."]
    if files:
        names = list(files)
        lines.append(f"It is a corpus of {len(names)} file(s), e.g. {', '.join(names[:8])}.")
    lines.append(f"Preview (first {preview_chars} chars):\n<<<\n{preview}\n>>>")
    return "\n".join(lines)


def context_message(question: str, value: object, preview_chars: int = 500, files: dict | None = None) -> str:
    """The first user message of a run."""
    return (
        f"{describe_context(value, preview_chars, files)}\n\n"
        f"Question: {question}\n\n"
        "Start by looking at the context with code (it is in the variable `context`; search it for the "
        "question's key words). Reply with a ```repl block."
    )
