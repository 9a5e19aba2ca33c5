"""Runs one case through the reference library (PyPI `rlms` 0.1.3), executed by its own venv's python.

    benchmarks/.venv-rlms/bin/python benchmarks/longcontext/rlms_worker.py < request.json > result.json

Reads {"context", "question", "base_url", "model", "max_iterations"} as JSON on stdin and writes
{"answer", "error", "seconds"}: the library's failure (e.g. the server refusing two assistant messages in a
row at its iteration limit) is the outcome, reported as it was raised. Imports nothing from this repository.
"""

import json
import sys
import time


def main() -> int:
    req = json.load(sys.stdin)
    from rlm import RLM

    started = time.monotonic()
    answer, error = "", None
    try:
        rlm = RLM(
            backend="openai",
            backend_kwargs={"model_name": req["model"], "base_url": req["base_url"], "api_key": "sk-local"},
            environment="local",
            max_iterations=req["max_iterations"],
            verbose=False,
        )
        out = rlm.completion(req["context"], root_prompt=req["question"])
        answer = str(getattr(out, "response", out))
    except Exception as err:  # noqa: BLE001 - the library's failure is the outcome
        error = f"{type(err).__name__}: {str(err)[:500]}"
    json.dump({"answer": answer, "error": error, "seconds": round(time.monotonic() - started, 1)}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
