"""What one benchmark case is: a question over a context (a text or a corpus of files) and its scorer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["Case", "join_corpus"]


@dataclass(frozen=True)
class Case:
    """One question over one context, with its expected answer and the scorer that grades an answer (0..1).

    `files` is set for a corpus (code, multi-hop): the context is then those files joined with `=== path ===`
    markers, exactly as `%context DIR` joins a directory. `kind` names the scorer's rule (see `scoring`).
    """

    family: str
    name: str
    question: str
    context: str
    expected: object
    kind: str
    score: Callable[[str], float] = field(repr=False, compare=False)
    length: int = 0
    """The nominal context length in chars (the row of the report); the context is within a few % of it."""
    files: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
    meta: Mapping[str, object] = field(default_factory=dict, compare=False)

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"


def join_corpus(files: Mapping[str, str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """The files joined as `%context DIR` joins them (`=== path ===` markers), and each file's span."""
    parts: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    pos = 0
    for name, text in files.items():
        marker = f"=== {name} ===\n"
        spans[name] = (pos + len(marker), pos + len(marker) + len(text))
        parts += [marker, text, "\n\n"]
        pos += len(marker) + len(text) + 2
    return "".join(parts), spans
