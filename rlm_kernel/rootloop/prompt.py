"""The root model's system prompt and the first user message (context metadata, never the context itself).

Keeps the RLM reference prompt contract: length + short preview only, ```repl blocks, FINAL to end; states
the configured sub-model's real window and the FINAL gate's rule (see `gate`).
"""

from __future__ import annotations

from rlm_kernel.llm.config import register_setting

__all__ = [
    "DEFAULT_WINDOW_TOKENS",
    "SYSTEM_PROMPT",
    "context_message",
    "describe_context",
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
- `llm_query(prompt, model=None, max_tokens=None, system=None) -> str`: one sub-model call. {window}
  Give it the question together with the chunk of `context` it needs — it sees nothing else.
- `llm_query_batched(prompts, model=None) -> list[str]`: many independent calls at once, in input order;
  if some fail it raises QueryBatchError with `.results` (None where failed) and `.errors` {index: text}.
- `rlm_query(prompt, model=None) -> str`: a recursive sub-RLM whose `context` is `prompt`, for
  sub-problems that are themselves big or need several steps. `rlm_query_batched(prompts, model=None)`.
- `SHOW_VARS()` lists your variables; `repl_set(name, value)` / `repl_get(name, default=None)`.
- `FINAL(answer)` ends the run with `answer`; `FINAL_VAR(name)` ends it with the value of variable `name`.
Only the sandbox's Python subset is allowed: no imports except the allowed modules (re, json, math,
collections, itertools, statistics, …), no file or network access, no names starting with an underscore.

Strategies (combine them):
1. Preview and search with code first: `len(context)`, `context[:2000]`, `context_files`, and searches
   for the words of the question, e.g.
   ```repl
   hits = [line for line in context.splitlines() if "keyword" in line.lower()]
   print(len(hits)); print(hits[:10])
   ```
{delegate}
2. Chunk + batched map-reduce: split the context into chunks (by file, section or size), ask one question
   per chunk with `llm_query_batched`, keep the answers in a variable, then combine them with `llm_query`.
3. Recursive decomposition: hand a sub-problem with its slice of the data to `rlm_query`.
4. Programmatic computation + model interpretation: compute exactly in Python what code can compute
   (counts, filters, joins, arithmetic); use model calls only for what needs reading or judgement.

Ending the run: call `FINAL(answer)` or `FINAL_VAR(name)` inside the block, or write `FINAL(answer)` /
`FINAL_VAR(name)` on its own line outside the block. Your answer must rest on the context, so a FINAL
is ACCEPTED only when one of these holds:
(a) the answer was computed by code that reads `context`, e.g. `n = sum(...context...)` then
    `FINAL(n)` — for what code answers exactly (counts, filters, lookups) no sub-model call is needed;
(b) the answer is what such code printed (write it as FINAL(answer) once you see it);
(c) an llm_query/rlm_query call that was given part of `context` has succeeded — for what needs
    reading or judgement. A call without any of the context (e.g. llm_query(question)) does not count.
As soon as the output answers the question, call FINAL — printing an answer does not end the run, and
running the same code again tells you nothing new. Build a long
answer in a variable and finish with FINAL_VAR.
"""


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
   Then give a sub-model the question WITH the part of `context` you found (a file, or the text around
   a hit), e.g.
   ```repl
   start, end = context_files["data/notes.txt"]  # or around a hit: i = context.find("keyword")
   answer = llm_query("Question: ...\\n\\nText:\\n" + context[start:end])
   print(answer)
   ```"""

# Over one text (a sub-RLM's prompt) the prompt has no delegation example: measured with the coder model, a
# corpus example there was copied verbatim (`context_files["data/notes.txt"]`, a KeyError) and one slicing
# around a hit was copied with its "Question: ..." placeholder, on a counting task code answers exactly.
_DELEGATE_TEXT = ""


def system_prompt(
    window_tokens: int = DEFAULT_WINDOW_TOKENS, answer_tokens: int = 1024, corpus: bool = True
) -> str:
    """The root's system prompt, stating the configured sub-model's real window; a `corpus` (a context loaded
    from files) gets an example of delegating one file to a sub-model."""
    text = _TEMPLATE.replace("{window}", window_line(window_tokens, answer_tokens))
    return text.replace("{delegate}\n", _DELEGATE_CORPUS + "\n" if corpus else _DELEGATE_TEXT)


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
