"""A root that follows the kernel's hints to the letter, served on the scripted test server: what the root
loop's feedback alone reaches on the long-context cases, with no model time (issue 27 item 4).

Turn 1 runs the system prompt's search example; every later turn replies with the last ```repl block the
feedback showed (a search to run next, or the FINAL it offered), or with no code when it showed none.
Sub-calls answer "NONE". This measures the hints and the gate, not a model: a hint that offers a wrong
answer, or a gate that accepts one, shows up as a wrong accepted answer; a case the hints do not walk to its
end ends best effort.

    python -m benchmarks.hint_follower --out /tmp/follower.json -- --families code,multihop --lengths 32K \\
        --per-length 8 --systems ours

(the arguments after `--` go to `benchmarks.longcontext.run`; `--base-url`, `--mode` and `--store` are set
here: every call is answered fresh by the follower).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

__all__ = ["follow", "main"]

ROOT_MARK = "You are the root of a Recursive Language Model"
_EXAMPLE = re.compile(r"of the question, e\.g\.\n\s*```repl\n(.*?)\n\s*```", re.S)
_BLOCK = re.compile(r"```repl\n(.*?)\n```", re.S)


def follow(rec) -> str:  # noqa: ANN001 - a tests.llm_server RecordedRequest
    """The follower's reply to one request."""
    if ROOT_MARK not in rec.prompt:
        return "NONE"
    last = rec.last_user
    if "Start by looking at the context" in last and (m := _EXAMPLE.search(rec.prompt)):
        code = "\n".join(line.strip() for line in m.group(1).splitlines())
        return f"```repl\n{code}\n```"
    blocks = _BLOCK.findall(last)
    return f"```repl\n{blocks[-1]}\n```" if blocks else "I cannot tell."


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(own)
    from benchmarks.longcontext import run
    from tests.llm_server import LLMTestServer

    server = LLMTestServer().start()
    server.reply_with(follow)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "calls.jsonl"
            return run.main(
                [*rest, "--base-url", server.openai_base_url, "--mode", "record", "--store", str(store)]
                + ["--out", args.out]
            )
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
