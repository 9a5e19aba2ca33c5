"""Scripted root-model replies for the local LLM test server: root turns, sub-RLM turns, child answers.

`Script(root=[...], sub=[...] or rule, child=fn)` is a `reply_with` function; exhausted scripts answer
without code.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

ROOT_MARK = "You are the root of a Recursive Language Model"
SUB_MARK = "The task is in `context`"


def repl(code: str, prose: str = "Next step.") -> str:
    """A reply with prose and one ```repl block."""
    return f"{prose}\n```repl\n{code}\n```"


class Script:
    """Answers root requests from `root`, sub-RLM root requests from `sub`, other requests with `child`."""

    def __init__(self, root: list, sub: list | Callable | None = None, child: Callable | None = None) -> None:
        self.root = deque(root)
        # a list is served in arrival order; a rule `sub(rec) -> reply` suits sub-RLMs that run concurrently
        self.sub_rule = sub if callable(sub) else None
        self.sub = deque([] if callable(sub) else sub or [])
        self.child = child or (lambda rec: f"child answer to: {rec.last_user[:60]}")
        self.lock = threading.Lock()
        self.root_prompts: list[str] = []

    def __call__(self, rec):  # noqa: ANN001 - a RecordedRequest
        if ROOT_MARK in rec.prompt:
            with self.lock:
                if SUB_MARK in rec.prompt:
                    if self.sub_rule is not None:
                        return self.sub_rule(rec)
                    return self.sub.popleft() if self.sub else "Nothing more to do."
                self.root_prompts.append(rec.prompt)
                return self.root.popleft() if self.root else "Nothing more to do."
        return self.child(rec)
