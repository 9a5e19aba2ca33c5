"""The record of a root-loop run: turns, child calls, the result object and its exports.

`RLMResult.to_jsonl(path)` writes a JSON line per turn; `.save("run.ipynb")` a notebook cell per turn.
"""

from __future__ import annotations

import json
import os
import sys
import weakref
from dataclasses import InitVar, asdict, dataclass, field
from pathlib import Path

from rlm_kernel.repl.context import check_allowed
from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.state import ChildCall, Usage
from rlm_kernel.sandbox.origin import model_code_running, require_person_method_call

__all__ = ["ChildCall", "RLMResult", "Turn", "Usage"]


@dataclass
class Turn:
    """One root turn: the model's reply, the code run, what it printed, the calls it made, what it cost."""

    index: int
    reply: str
    code: str | None = None
    stdout: str = ""
    value: str | None = None
    error: str | None = None
    feedback: str = ""
    calls: list[ChildCall] = field(default_factory=list)
    root_usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    final: str | None = None
    note: str = ""
    kind: str = "turn"
    """"turn", or "compaction" for a summary of older turns (see `compaction`)."""

    @property
    def usage(self) -> Usage:
        total = Usage()
        total.add(self.root_usage)
        for call in self.calls:
            total.add(call.usage)
        return total


def _check_target(path: str | os.PathLike, suffix: str, overwrite: bool) -> Path:
    if model_code_running():  # a run's blocks are model code (rootloop.driver.execute); so are its sub-runs'
        raise ReplError("saving files is not available inside a root-loop run; save the result afterwards")
    # trust follows the code: a function or object model code left, or a wrapper it made, that the person's
    # cell runs later must not write (or overwrite) the person's files either
    require_person_method_call("saving a run (RLMResult.save / to_jsonl)", sys._getframe(1).f_code)
    target = Path(path)
    if target.suffix != suffix:
        raise ReplError(f"refused {str(path)!r}: the file name must end in {suffix}") from None
    try:
        resolved = check_allowed(target)
    except ReplError as err:
        raise ReplError(str(err).replace("context may only be read", "runs may only be saved")) from None
    if not resolved.parent.is_dir():
        raise ReplError(f"refused {str(path)!r}: the directory {resolved.parent} does not exist") from None
    if resolved.exists() and not overwrite:
        raise ReplError(
            f"refused {str(path)!r}: the file exists; pass overwrite=True to replace it"
        ) from None
    return resolved


_namespaces: dict[int, tuple[weakref.ref, dict]] = {}


def _remember_namespace(result: object, ns: object) -> None:
    if type(ns) is not dict:
        raise TypeError("RLMResult: the namespace must be a dict")
    key = id(result)
    _namespaces[key] = (weakref.ref(result), ns)
    weakref.finalize(result, _namespaces.pop, key, None)


def _namespace_of(result: object) -> dict:
    """The namespace of the run `result` records ({} for a copy: a copy is the record only)."""
    entry = _namespaces.get(id(result))
    if entry is None or entry[0]() is not result:
        return {}
    return entry[1]


@dataclass
class RLMResult:
    """The outcome of `rlm_run` / `%%rlm`.

    `termination`: final, max_iterations, no_code, budget, time_limit, interrupted or error; `message` says
    why.
    Everything computed before the end is kept, whatever the reason: `trajectory` (the turns) and `namespace`
    (the run's variables).
    """

    question: str
    answer: str | None
    termination: str
    message: str
    trajectory: list[Turn]
    _namespace: InitVar[dict]
    """The run's namespace: kept beside the result (`_namespaces`), never in a field, so the walks of
    `dataclasses.asdict`/`astuple`, `copy.deepcopy` and `replace` see the record only."""
    usage: Usage = field(default_factory=Usage)
    depth: int = 1
    model: str | None = None
    answer_kind: str | None = None
    """"final" (an accepted FINAL), "best_effort" (the last tool-free turn's answer) or None (no answer)."""
    model_bound: dict[str, str] = field(default_factory=dict)
    """A `--shared` run: the names model-written code bound, rebound or deleted in the notebook's namespace,
    each with what it did ("new", "rebound your variable", "shadowed a builtin: removed", …;
    `rootloop.bindings`). Their values are model-made: functions and objects among them keep the model's
    trust wherever they run."""
    citations: list = field(default_factory=list)
    """The answer's verified citations (FINAL cite= / answer["cite"]): dicts with quote, span, path, line,
    end_line, where ("report.pdf, page 3, line 12") and page/chapter/message/cell/record when the file has
    them."""
    evidence: list = field(default_factory=list)
    """An accepted answer without citations: the spans of `context` its sub-calls were given and whose
    answers led to it (`repl.evidence`), seen by a sub-call, not quoted as proof: dicts with span, path,
    line, end_line, where, excerpt, by="sub-call", call, item, turn, response (and page/record/… as
    citations have)."""
    _history: tuple = field(default=(), repr=False, compare=False)

    def __post_init__(self, _namespace: dict) -> None:
        _remember_namespace(self, _namespace)

    @property
    def history(self) -> list[dict]:
        """The conversation up to the end of this run (earlier runs it continues included): role/content
        dicts, what a follow-up (`continue_from=`, `%%rlm --continue`) sends first."""
        from rlm_kernel.rootloop.continuation import history_of

        return history_of(self)

    @property
    def answer_text(self) -> str | None:
        """The answer as text (a typed answer's text form), or None."""
        if self.answer is None:
            return None
        if type(self.answer) is str:
            return self.answer
        finals = [t.final for t in self.trajectory if t.final is not None]
        return finals[-1] if finals else None

    @property
    def namespace(self) -> dict:
        """The run's variables: a copy of its namespace without the names that start with an underscore."""
        return {k: v for k, v in _namespace_of(self).items() if not k.startswith("_")}

    @property
    def iterations(self) -> int:
        """Root turns taken (compaction summaries are in `trajectory` but are not turns)."""
        return sum(1 for t in self.trajectory if t.kind == "turn")

    @property
    def calls(self) -> int:
        return self.usage.calls

    @property
    def tokens(self) -> int:
        return self.usage.tokens

    @property
    def cost(self) -> float:
        return self.usage.cost_usd

    def summary_line(self) -> str:
        return (
            f"{self.termination}: {self.iterations} turn(s), {self.calls} call(s), {self.tokens:,} tokens, "
            f"${self.cost:.4f}"
        )

    def __repr__(self) -> str:
        answer = "(none)" if self.answer is None else (self.answer_text or "")[:2000]
        return f"RLMResult({self.summary_line()})\n{self.message}\nanswer: {answer}"

    def _repr_html_(self) -> str:
        from rlm_kernel.rootloop.viewer import tree_html

        return tree_html(self.tree())

    def header(self) -> dict:
        """The run's header record (what `to_jsonl` writes first)."""
        return self.records()[0]

    def tree(self) -> dict:
        """The run as one plain dict {"run": header, "turns": [...]}; sub-RLM runs nest under their calls."""
        head, *turns = self.records()
        return {"run": head, "turns": turns}

    def records(self) -> list[dict]:
        """Plain dicts: a header record then one per turn (what `to_jsonl` writes)."""
        head = {
            "type": "run",
            "question": self.question,
            "answer": self.answer_text,
            "answer_kind": self.answer_kind,
            "termination": self.termination,
            "message": self.message,
            "iterations": self.iterations,
            "depth": self.depth,
            "model": self.model,
            **asdict(self.usage),
            **({"citations": [dict(c) for c in self.citations]} if self.citations else {}),
            **({"evidence": [dict(e) for e in self.evidence]} if self.evidence else {}),
        }
        return [head] + [{"type": "turn", **asdict(t), "usage": asdict(t.usage)} for t in self.trajectory]

    def to_jsonl(self, path: str, overwrite: bool = False) -> str:
        """Write the run as JSON lines (a header line, then one line per turn); returns the path written."""
        target = _check_target(path, ".jsonl", overwrite)
        with open(target, "w", encoding="utf-8") as f:
            for record in self.records():
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
        return str(path)

    def to_notebook(self) -> dict:
        """An nbformat v4 notebook (as a dict): the question, then per turn the reply's prose and its
        code cell with the output it produced, then the answer."""
        import nbformat
        from nbformat import v4

        from rlm_kernel.rootloop.viewer import evidence_markdown, model_markdown

        cells = [
            v4.new_markdown_cell(
                f"# RLM run\n\n**Question:**\n\n{model_markdown(self.question)}\n\n{self.summary_line()}"
            )
        ]
        for t in self.trajectory:
            prose = t.reply if t.code is None else t.reply.replace(t.code, "…")
            cells.append(v4.new_markdown_cell(f"### Turn {t.index}\n\n{model_markdown(prose.strip())}"))
            if t.code is not None:
                outputs = []
                if t.stdout:
                    outputs.append(v4.new_output("stream", name="stdout", text=t.stdout))
                if t.value is not None:
                    outputs.append(
                        v4.new_output("execute_result", data={"text/plain": t.value}, execution_count=t.index)
                    )
                if t.error:
                    outputs.append(v4.new_output("error", ename="Error", evalue=t.error, traceback=[t.error]))
                cells.append(v4.new_code_cell(t.code, outputs=outputs, execution_count=t.index))
            for call in t.calls:  # nested sub-RLM runs, right after the turn that started them
                if call.run is not None:
                    from rlm_kernel.rootloop.viewer import notebook_cells

                    cells.extend(notebook_cells(call.run))
        cells.append(
            v4.new_markdown_cell(
                f"## Answer ({self.termination})\n\n{self.message}\n\n"
                + model_markdown(self.answer_text or "")
                + "".join(
                    model_markdown(f"\n\n{i}. {c.get('where')}: \u201c{c.get('quote')}\u201d")
                    for i, c in enumerate(self.citations, start=1)
                )
                + evidence_markdown(self.evidence)
            )
        )
        nb = v4.new_notebook(
            cells=cells, metadata={"kernelspec": {"name": "rlm", "display_name": "RLM", "language": "python"}}
        )
        nbformat.validate(nb)
        return nb

    def save(self, path: str, overwrite: bool = False) -> str:
        """Write the run as a notebook whose cells are the turns (`path` ends in .ipynb); returns the path."""
        import nbformat

        target = _check_target(path, ".ipynb", overwrite)
        nbformat.write(nbformat.from_dict(self.to_notebook()), str(target))
        return str(path)
