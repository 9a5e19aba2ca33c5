"""The systems compared, each answering one case through the recording proxy.

- `ours`: the root loop (`run_rlm`, the code behind `rlm_run` and `%%rlm`), in this process;
- `rlms`: the reference library `rlms==0.1.3`, `environment="local"`, in its own venv (made on first use);
- `bare`: the model alone, the context cut to its window (head kept), one call (the paper's base-model row);
- `pipeline`: a person's pipeline without a root: `map_reduce` for counts, comparisons and pairs,
  `find_relevant` + one `llm_query`-style call for the rest.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import httpx

from benchmarks.longcontext.cases import Case, join_corpus
from benchmarks.longcontext.proxy import RecordingProxy

__all__ = ["SYSTEMS", "Settings", "run_system"]

HERE = Path(__file__).resolve().parent
RLMS_VENV = HERE.parent / ".venv-rlms"
RLMS_PIN = "rlms==0.1.3"


@dataclass(frozen=True)
class Settings:
    """What every system is given: the model name, its window, the root's turn limit and sub-call sizes."""

    model: str = "coder"
    window: int = 16384
    max_iterations: int = 8
    max_depth: int = 1
    max_tokens: int = 512
    chunk_chars: int = 12_000
    """The pipeline's map_reduce part size (~3K tokens: sub-calls see a few thousand tokens)."""
    excerpt_chars: int = 8_000
    """The pipeline's find_relevant excerpts, in chars, sent with the question."""
    rlms_python: str = str(RLMS_VENV / "bin" / "python")
    cite: bool = False
    """Ask our root for citations (`%%rlm --cite`); the rows then say which the context really holds."""


@contextlib.contextmanager
def _session(base_url: str, settings: Settings) -> Iterator[None]:
    """Our LLM layer pointed at `base_url` for the block: the settings a user gives, a fresh session."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("RLM_")}
    os.environ.update(
        {
            "RLM_PROVIDER": "openai",
            "RLM_BASE_URL": base_url,
            "RLM_API_KEY": "sk-local",
            "RLM_MODEL": settings.model,
            "RLM_CONTEXT_WINDOW": str(settings.window),
            "RLM_CACHE": "off",  # the proxy records and replays every system's calls the same way
            "RLM_TIMEOUT": "1800",
            "RLM_MAX_RETRIES": "0",
            "RLM_MAX_TOKENS": str(settings.max_tokens),
            "RLM_WALL_SECONDS": "7200",
            "RLM_CPU_SECONDS": "7200",
        }
    )
    os.environ.pop("RLM_CONFIG", None)
    from rlm_kernel.llm.session import LLMSession, use_session

    session = LLMSession()
    try:
        with use_session(session):
            yield
    finally:
        session.close()
        for k in [k for k in os.environ if k.startswith("RLM_")]:
            del os.environ[k]
        os.environ.update(saved)


def _loaded(case: Case):  # type: ignore[no-untyped-def]
    from rlm_kernel.repl import context as ctxmod

    if case.files is None:
        return ctxmod.load(case.context, kind="text")
    value, spans = join_corpus(case.files)
    return ctxmod.LoadedContext(value, "dir", case.family, MappingProxyType(spans))


def run_ours(case: Case, base_url: str, settings: Settings) -> dict:
    from rlm_kernel.repl.state import RunOptions
    from rlm_kernel.rootloop.driver import run_rlm

    with _session(base_url, settings):
        result = run_rlm(
            case.question,
            _loaded(case),
            options=RunOptions(
                max_iterations=settings.max_iterations, max_depth=settings.max_depth, cite=settings.cite
            ),
        )
    turns = [
        {
            "code": (t.code or "")[:2000],
            "stdout": t.stdout[:800],
            "error": (t.error or "")[:400],
            "note": t.note[:400],
            "feedback": t.feedback[:800],
            "reply": t.reply[:1500],
        }
        for t in result.trajectory
    ]
    return {
        "answer": result.answer_text or "",
        "accepted": result.answer_kind == "final",
        "answer_kind": result.answer_kind,
        "termination": result.termination,
        "iterations": result.iterations,
        "turns": turns,
        **({"citations": _checked_again(result.citations, case)} if settings.cite else {}),
    }


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _checked_again(citations: list[dict], case: Case) -> list[dict]:
    """The kernel's verified citations, each checked again here, independently of the kernel's own check:
    its quote (whitespace-normalised) must occur in the case's context, and its span must hold that quote."""
    whole = _normalised(case.context)
    out = []
    for c in citations[:20]:
        quote = str(c.get("quote", ""))
        start, end = (c.get("span") or [0, 0])[:2]
        in_context = bool(quote.strip()) and _normalised(quote) in whole
        span_holds = _normalised(case.context[start:end]) == _normalised(quote)
        out.append({"quote": quote[:300], "where": c.get("where"), "in_context": in_context and span_holds})
    return out


def _ensure_rlms(python: str) -> None:
    if Path(python).exists():
        return
    subprocess.run([sys.executable, "-m", "venv", str(RLMS_VENV)], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", RLMS_PIN], check=True)


RLMS_ENDINGS = {
    # the library's kind -> (accepted, termination, answer_kind)
    "final": (True, "final", "final"),
    "best_effort": (False, "max_iterations", "best_effort"),
    "library-error": (False, "library-error", "none"),
}


def rlms_row(out: dict) -> dict:
    """A row's fields from the worker's report: accepted only when the library's own FINAL ended the run
    (`answer["ready"] = True` in a code block); its default answer at the iteration limit is best effort
    (scored, not accepted); a failure it raised is `library-error`, with the reason as raised."""
    accepted, termination, answer_kind = RLMS_ENDINGS[out["kind"]]
    row = {
        "answer": out["answer"] if out["kind"] != "library-error" else "",
        "accepted": accepted,
        "answer_kind": answer_kind,
        "termination": termination,
        "iterations": out.get("iterations"),
        "at_limit": out.get("at_limit"),
        "turns": out.get("turns", []),
    }
    if out.get("error"):
        row["error"] = out["error"]
    return row


def run_rlms(case: Case, base_url: str, settings: Settings) -> dict:
    _ensure_rlms(settings.rlms_python)
    req = {
        "context": case.context,
        "question": case.question,
        "base_url": base_url,
        "model": settings.model,
        "max_iterations": settings.max_iterations,
        "timeout": 3600,
    }
    proc = subprocess.run(
        [settings.rlms_python, str(HERE / "rlms_worker.py")],
        input=json.dumps(req),
        capture_output=True,
        text=True,
        cwd=str(HERE.parent.parent),
        timeout=7200,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"the rlms worker failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    return rlms_row(json.loads(proc.stdout.strip().splitlines()[-1]))


def _chat(base_url: str, settings: Settings, prompt: str) -> str:
    body = {
        "model": settings.model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": settings.max_tokens,
    }
    r = httpx.post(f"{base_url}/chat/completions", json=body, timeout=3600)
    if r.status_code != 200:
        raise RuntimeError(f"HTTP {r.status_code}: {r.text[:300]}")
    return r.json()["choices"][0]["message"]["content"] or ""


def _tokens(base_url: str, text: str) -> int | None:
    """Tokens of `text` by the server's tokenizer (llama.cpp `/tokenize`), or None if it has none."""
    try:
        r = httpx.post(base_url.removesuffix("/v1") + "/tokenize", json={"content": text}, timeout=600)
    except httpx.HTTPError:
        return None
    return len(r.json()["tokens"]) if r.status_code == 200 else None


def _bare_prompt(context: str, question: str) -> str:
    return f"{context}\n\nQuestion: {question}\nAnswer briefly."


def cut_to_window(base_url: str, case: Case, settings: Settings) -> str:
    """The context's head that fits the window with the question and the answer's tokens."""
    budget = settings.window - settings.max_tokens - 64
    text = case.context
    for _ in range(4):
        n = _tokens(base_url, _bare_prompt(text, case.question))
        if n is None:
            n = math.ceil(len(text) / 3)  # no tokenizer: ~3 chars a token, on the safe side
        if n <= budget:
            return text
        text = text[: int(len(text) * budget / n * 0.97)]
    return text


def run_bare(case: Case, base_url: str, settings: Settings) -> dict:
    context = cut_to_window(base_url, case, settings)
    answer = _chat(base_url, settings, _bare_prompt(context, case.question))
    return {"answer": answer, "accepted": True, "termination": "returned", "kept_chars": len(context)}


def run_pipeline(case: Case, base_url: str, settings: Settings) -> dict:
    from rlm_kernel.analysis.find_relevant import find_relevant
    from rlm_kernel.analysis.map_reduce import map_reduce

    with _session(base_url, settings):
        return _pipeline(case, base_url, settings, find_relevant, map_reduce)


def _pipeline(case: Case, base_url: str, settings: Settings, find_relevant, map_reduce) -> dict:  # noqa: ANN001
    if case.kind in ("number", "label", "pairs") and case.files is None:
        n = max(1, math.ceil(len(case.context) / settings.chunk_chars))
        answer = map_reduce(
            case.context,
            f"{case.question}\n\nAnswer for this part of the data only, briefly.\n\n{{chunk}}",
            f"{case.question}\n\nThe answers for each part of the data:\n{{results}}\n\n"
            "Combine them into one answer to the question (add the counts up; keep every pair).",
            n_chunks=n,
            model=settings.model,
        )
        return {"answer": answer, "accepted": True, "termination": "returned", "how": f"map_reduce x{n}"}
    excerpts, total = [], 0
    for chunk, _score in find_relevant(case.context, case.question, top_k=10):
        if total >= settings.excerpt_chars:
            break
        chunk = chunk[: settings.excerpt_chars - total]
        excerpts.append(chunk)
        total += len(chunk)
    prompt = (
        "Excerpts:\n\n" + "\n\n---\n\n".join(excerpts) + f"\n\nQuestion: {case.question}\nAnswer briefly."
    )
    answer = _chat(base_url, settings, prompt)
    return {
        "answer": answer,
        "accepted": True,
        "termination": "returned",
        "how": f"find_relevant {len(excerpts)}",
    }


SYSTEMS = {"ours": run_ours, "rlms": run_rlms, "bare": run_bare, "pipeline": run_pipeline}


def run_system(system: str, case: Case, proxy: RecordingProxy, settings: Settings) -> dict:
    """One case through one system: the answer, its score and the calls/tokens the proxy counted."""
    tag = f"{system}|{case.id}"
    started = time.monotonic()
    try:
        out = SYSTEMS[system](case, proxy.url(tag), settings)
    except Exception as err:  # noqa: BLE001 - a system's failure is its outcome, the run goes on
        out = {
            "answer": "",
            "accepted": False,
            "termination": "error",
            "error": f"{type(err).__name__}: {err}"[:800],
        }
    seconds = time.monotonic() - started
    answer = out.get("answer") or ""
    score = case.score(answer) if answer else 0.0
    return {
        "system": system,
        "case": case.id,
        "family": case.family,
        "length": case.length,
        "chars": len(case.context),
        "question": case.question,
        "expected": case.expected if isinstance(case.expected, str | int) else repr(case.expected),
        **{k: v for k, v in out.items() if k != "answer"},
        "answer": answer[:1500],
        "score": round(score, 4),
        "wall_seconds": round(seconds, 1),
        **proxy.stats(tag).as_dict(),
    }
