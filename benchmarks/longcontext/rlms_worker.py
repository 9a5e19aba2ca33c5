"""Runs one case through the reference library (PyPI `rlms` 0.1.3), executed by its own venv's python.

    benchmarks/.venv-rlms/bin/python benchmarks/longcontext/rlms_worker.py < request.json > result.json

Reads {"context", "question", "base_url", "model", "max_iterations", "timeout"} as JSON on stdin and writes
{"answer", "kind", "error", "iterations", "at_limit", "turns", "seconds"}. `kind` says how the library ended:

- `final`: one of its own code blocks set `answer["ready"] = True` (0.1.3's FINAL); `answer` is its content;
- `best_effort`: it ran out of iterations and its default-answer call returned (`answer` is that reply);
- `library-error`: it raised; `error` is the exception as raised (e.g. at its iteration limit 0.1.3 sends two
  assistant messages in a row, which llama.cpp's server refuses with HTTP 400) and `at_limit` says whether
  every iteration had been used. We report that, we do not patch it.

The kind is read from the library's own trajectory (its `RLMLogger`, kept in memory), not guessed from the
answer's text. The OpenAI client gets the benchmark's timeout and no retries (a retried slow call would be
sent twice). Imports nothing from this repository.
"""

import json
import sys
import time


def _turns(iterations: list[dict]) -> list[dict]:
    out = []
    for it in iterations:
        blocks = it.get("code_blocks") or []
        out.append(
            {
                "reply": str(it.get("response") or "")[:1500],
                "code": "\n# ---\n".join(str(b.get("code", "")) for b in blocks)[:2000],
                "stdout": "".join(str((b.get("result") or {}).get("stdout", "")) for b in blocks)[:800],
                "error": "".join(str((b.get("result") or {}).get("stderr", "")) for b in blocks)[:400],
                "final": it.get("final_answer") if blocks else None,
            }
        )
    return out


def classify(iterations: list[dict], max_iterations: int, error: str | None) -> tuple[str, bool]:
    """(kind, at_limit) from the library's logged iterations: it logs each loop turn, and after the last
    allowed one its default-answer call as one more (without code blocks); a FINAL ends the loop at once."""
    at_limit = len(iterations) >= max_iterations
    if error is not None:
        return "library-error", at_limit
    last = iterations[-1] if iterations else {}
    if len(iterations) <= max_iterations and last.get("code_blocks") and last.get("final_answer") is not None:
        return "final", False
    return "best_effort", at_limit


def main() -> int:
    req = json.load(sys.stdin)
    from rlm import RLM
    from rlm.logger import RLMLogger

    started = time.monotonic()
    logger = RLMLogger()
    answer, error = "", None
    try:
        rlm = RLM(
            backend="openai",
            backend_kwargs={
                "model_name": req["model"],
                "base_url": req["base_url"],
                "api_key": "sk-local",
                "timeout": float(req.get("timeout", 3600)),
                "max_retries": 0,
            },
            environment="local",
            max_iterations=req["max_iterations"],
            logger=logger,
            verbose=False,
        )
        out = rlm.completion(req["context"], root_prompt=req["question"])
        answer = str(getattr(out, "response", out))
    except Exception as err:  # noqa: BLE001 - the library's failure is the outcome
        error = f"{type(err).__name__}: {str(err)[:500]}"
    iterations = (logger.get_trajectory() or {}).get("iterations", [])
    kind, at_limit = classify(iterations, req["max_iterations"], error)
    sys.stdout.write("\n")  # the report is the last line, whatever the library printed
    json.dump(
        {
            "answer": answer,
            "kind": kind,
            "error": error,
            "iterations": min(len(iterations), req["max_iterations"]),
            "at_limit": at_limit,
            "turns": _turns(iterations),
            "seconds": round(time.monotonic() - started, 1),
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
