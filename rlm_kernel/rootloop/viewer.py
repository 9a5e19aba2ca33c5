"""The trajectory viewer: a run (or a saved .jsonl run) as a collapsible HTML timeline with a text twin.

Plain `<details>`/`<summary>` and inline CSS only — no script, no network, no build step — so the same
HTML works live in JupyterLab and as static output in an nbconvert export. Nested sub-RLM runs are
rendered inside the call that started them.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from rlm_kernel.output import is_owned, own
from rlm_kernel.output.sanitise import markdown_html, no_math
from rlm_kernel.repl.evidence import render_text as render_evidence

__all__ = ["evidence_markdown", "load_tree", "notebook_cells", "tree_html", "tree_text", "view"]

_SHOW = 4000
_STYLE = (
    "<style>.rlmv{font-family:system-ui,sans-serif;font-size:13px;line-height:1.35}"
    ".rlmv details{border-left:3px solid #c8d1dc;margin:3px 0 3px 4px;padding-left:8px}"
    ".rlmv details.child{border-left-color:#8e6bbf}.rlmv details.compaction{border-left-color:#b26a00}"
    ".rlmv summary{cursor:pointer}.rlmv pre{background:#f6f8fa;padding:4px 6px;margin:3px 0;"
    "white-space:pre-wrap;max-height:24em;overflow:auto}.rlmv .m{color:#57606a}"
    ".rlmv .final{border:2px solid #2e7d32;border-radius:6px;padding:6px 10px;margin-top:6px}"
    ".rlmv .nofinal{border:2px solid #b26a00;border-radius:6px;padding:6px 10px;margin-top:6px}</style>"
)


def _e(text: object) -> str:
    return html.escape(str(text))


def _cut(text: str, limit: int = _SHOW) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit:,} more chars]"


def _usage(u: dict) -> str:
    hits = int(u.get("cache_hits", 0) or 0)
    return (
        f"{int(u.get('calls', 0) or 0)} call(s)"
        + (f" + {hits} cache hit(s)" if hits else "")
        + f" · {int(u.get('input_tokens', 0) or 0) + int(u.get('output_tokens', 0) or 0):,} tokens"
        + f" · ${float(u.get('cost_usd', 0.0) or 0.0):.4f}"
    )


def _call_html(call: dict) -> str:
    kind = call.get("kind", "call")
    items = int(call.get("items", 1) or 1)
    status = "ok" if call.get("ok") else "failed"
    head = (
        f"{_e(kind)}{' ×' + str(items) if items > 1 else ''} — {status} — {_e(call.get('model') or '?')} — "
        f"{_usage(call.get('usage') or {})} — {float(call.get('seconds', 0.0) or 0.0):.1f}s"
    )
    prompt = call.get("prompt") or call.get("prompt_preview") or ""
    answer = call.get("response") or call.get("response_preview") or ""
    body = [f"<div class='m'>prompt{' (first of ' + str(items) + ')' if items > 1 else ''}:</div>"]
    body.append(f"<pre>{_e(_cut(prompt))}</pre>")
    if answer:
        body.append(f"<div class='m'>answer:</div><pre>{_e(_cut(answer))}</pre>")
    if call.get("error"):
        body.append(f"<div class='m'>error: {_e(call['error'])}</div>")
    if call.get("cache_keys"):
        body.append(f"<div class='m'>cache keys: {_e(', '.join(call['cache_keys'][:8]))}</div>")
    nested = call.get("run")
    if isinstance(nested, dict):
        body.append(_run_html(nested, child=True))
    cls = " class='child'" if isinstance(nested, dict) else ""
    return f"<details{cls}><summary>{head}</summary>{''.join(body)}</details>"


def _turn_html(turn: dict) -> str:
    kind = turn.get("kind", "turn")
    if turn.get("code") is None:
        status = "no code"
    else:
        status = "error" if turn.get("error") else "ok"
    if kind == "compaction":
        status = "compaction"
    calls = turn.get("calls") or []
    head = (
        f"Turn {turn.get('index')} — {status} — {len(calls)} child call(s) — "
        f"{_usage(turn.get('usage') or {})} — {float(turn.get('seconds', 0.0) or 0.0):.1f}s"
    )
    if turn.get("final") is not None:
        head += " — FINAL"
    opening = "<details>" if kind == "turn" else f"<details class='{_e(kind)}'>"
    parts = [f"{opening}<summary>{_e(head)}</summary>"]
    if kind == "compaction":
        parts.append(
            f"<div class='m'>summary of earlier turns:</div><pre>{_e(_cut(turn.get('reply', '')))}</pre>"
        )
    elif turn.get("code") is None:
        parts.append(f"<div class='m'>reply:</div><pre>{_e(_cut(turn.get('reply', '')))}</pre>")
    else:
        parts.append(f"<div class='m'>code:</div><pre>{_e(_cut(turn['code']))}</pre>")
        out = (turn.get("stdout") or "") + (f"\n→ {turn['value']}" if turn.get("value") else "")
        if turn.get("error"):
            out += f"\n{turn['error']}"
        if out.strip():
            parts.append(f"<div class='m'>output:</div><pre>{_e(_cut(out.strip()))}</pre>")
    parts.extend(_call_html(c) for c in calls)
    if turn.get("note"):
        parts.append(f"<div class='m'><i>{_e(turn['note'])}</i></div>")
    parts.append("</details>")
    return "".join(parts)


def _citations_html(head: dict) -> str:
    """The answer's verified citations: each quote with its file, page and line (all escaped)."""
    cites = head.get("citations") or []
    if not isinstance(cites, list) or not cites:
        return ""
    rows = "".join(
        f"<li><span class='m'>{_e(c.get('where', ''))}</span> "
        f"<q>{_e(_cut(str(c.get('quote', '')), 600))}</q></li>"
        for c in cites
        if isinstance(c, dict)
    )
    return f"<div class='m'>citations:</div><ol class='rlm-citations'>{rows}</ol>"


EVIDENCE_TITLE = "evidence (seen by the sub-call, not quoted as proof)"


def _evidence_html(head: dict) -> str:
    """The spans of `context` the sub-calls saw that led to an answer without citations: each with its
    file, page and line, the helper and turn, and an excerpt (all escaped: they come from the corpus)."""
    seen = head.get("evidence") or []
    if not isinstance(seen, list) or not seen:
        return ""
    rows = "".join(
        f"<li><span class='m'>{_e(e.get('where', ''))} · {_e(e.get('call', ''))}"
        + (f" item {_e(e['item'])}" if e.get("item") not in (None, 1) else "")
        + (f" · turn {_e(e['turn'])}" if e.get("turn") is not None else "")
        + f"</span> <span>{_e(_cut(str(e.get('excerpt', '')), 600))}</span></li>"
        for e in seen
        if isinstance(e, dict)
    )
    return f"<div class='m'>{EVIDENCE_TITLE}:</div><ol class='rlm-evidence'>{rows}</ol>"


def evidence_markdown(evidence: list) -> str:
    """The evidence list under a saved notebook's answer (model-made text rendered sanitised)."""
    if not evidence:
        return ""
    items = "".join(
        model_markdown(
            f"\n\n{i}. {e.get('where')} ({e.get('call')}"
            + (f" item {e.get('item')}" if e.get("item") not in (None, 1) else "")
            + f"): {e.get('excerpt')}"
        )
        for i, e in enumerate(evidence, start=1)
        if isinstance(e, dict)
    )
    return f"\n\n**{EVIDENCE_TITLE.capitalize()}:**\n\n{items}"


def _run_html(tree: dict, child: bool = False) -> str:
    head = tree.get("run") or {}
    turns = tree.get("turns") or []
    answer = head.get("answer")
    final = head.get("termination") == "final"
    kind = "Sub-RLM" if child else "RLM run"
    summary = _e(
        f"{kind} (depth {head.get('depth', 1)}, {head.get('model') or '?'}) — "
        f"{head.get('termination')}: {sum(t.get('kind', 'turn') == 'turn' for t in turns)} turn(s) · "
        f"{_usage(head)}"
    )
    shown = _cut("(no answer)" if answer is None else str(answer), 20000)
    body = [
        f"<div class='m'>question:</div><pre>{_e(_cut(str(head.get('question', ''))))}</pre>",
        *(_turn_html(t) for t in turns),
        f"<div class='{'final' if final else 'nofinal'}'><b>{summary}</b>"
        f"<div class='m'>rlm kernel · {'answer accepted by the FINAL gate' if final else 'no gated answer'}"
        "</div>"
        f"<div>{_e(head.get('message', ''))}</div>"
        f"<div style='white-space:pre-wrap'>{_e(shown)}</div>{_citations_html(head)}{_evidence_html(head)}"
        "</div>",
    ]
    opened = "" if child else " open"
    cls = "child" if child else "run"
    return f"<details class='{cls}'{opened}><summary>{summary}</summary>{''.join(body)}</details>"


def model_markdown(text: object) -> str:
    """Model-written text for a markdown cell of a saved notebook: rendered to sanitised HTML (a markdown
    cell may hold HTML), so the notebook carries no script for whoever opens or exports it later."""
    return markdown_html(str(text)).strip()


def tree_html(tree: dict) -> str:
    """A run's `tree()` (or a loaded .jsonl) as self-contained HTML. Almost all of it is model-written
    (replies, code, outputs, sub-call prompts and answers), so no frontend finds math in it to typeset
    (`no_math`): TeX shows as written, as in the output of model-written code (docs/security/outputs.md)."""
    return f"<div class='rlmv'>{_STYLE}{no_math(_run_html(tree))}</div>"


def tree_text(tree: dict, indent: str = "") -> str:
    """The plain-text twin: one line per turn and per call, nested runs indented."""
    head = tree.get("run") or {}
    lines = [
        f"{indent}{'Sub-RLM' if int(head.get('depth', 1) or 1) > 1 else 'RLM run'} "
        f"(depth {head.get('depth', 1)}, {head.get('model') or '?'}): "
        f"{head.get('termination')} — {_usage(head)}"
    ]
    for t in tree.get("turns") or []:
        lines.append(
            f"{indent}  Turn {t.get('index')} [{t.get('kind', 'turn')}]: {_usage(t.get('usage') or {})}"
        )
        for c in t.get("calls") or []:
            lines.append(f"{indent}    {c.get('kind')}: {_usage(c.get('usage') or {})}")
            if isinstance(c.get("run"), dict):
                lines.append(tree_text(c["run"], indent + "      "))
    lines.append(f"{indent}answer: {head.get('answer')}")
    for i, c in enumerate(head.get("citations") or [], start=1):
        if isinstance(c, dict):
            lines.append(f"{indent}  [{i}] {c.get('where')}: \u201c{c.get('quote')}\u201d")
    evidence = [e for e in head.get("evidence") or [] if isinstance(e, dict)]
    if evidence:
        lines.append(f"{indent}  {EVIDENCE_TITLE}:")
        lines += [f"{indent}  {line}" for line in render_evidence(evidence).splitlines()]
    return "\n".join(lines)


def notebook_cells(tree: dict, depth: int = 2) -> list:
    """A nested run as notebook cells (for `RLMResult.to_notebook`): its prompt, its turns as markdown and
    code cells with their output, its answer, and its own nested runs in turn, quoted one level deeper."""
    from nbformat import v4

    head = tree.get("run") or {}
    quote = "> " * (depth - 1)

    def md(text: str) -> object:
        return v4.new_markdown_cell("\n".join(quote + line for line in text.splitlines()))

    cells = [
        md(
            f"#### Sub-RLM (depth {head.get('depth', depth)}, {head.get('model') or '?'})\n\n"
            f"**Prompt:**\n\n{model_markdown(head.get('question', ''))}"
        )
    ]
    for t in tree.get("turns") or []:
        if t.get("code") is None:
            reply = model_markdown(t.get("reply", ""))
            cells.append(md(f"Turn {t.get('index')} ({t.get('kind', 'turn')}):\n\n{reply}"))
            continue
        outputs = []
        if t.get("stdout"):
            outputs.append(v4.new_output("stream", name="stdout", text=t["stdout"]))
        if t.get("error"):
            outputs.append(v4.new_output("stream", name="stderr", text=t["error"]))
        cells.append(v4.new_code_cell(t["code"], outputs=outputs))
        for call in t.get("calls") or []:
            if isinstance(call.get("run"), dict):
                cells.extend(notebook_cells(call["run"], depth + 1))
    cells.append(
        md(f"**Sub-RLM answer** ({head.get('termination')}):\n\n{model_markdown(head.get('answer'))}")
    )
    return cells


def load_tree(path: str) -> dict:
    """A run saved with `to_jsonl` as a tree: the header line, then the turn lines."""
    records = []
    with open(Path(path), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(
                    f"{path}: line {n} is not JSON ({err.msg}); is this a run saved with to_jsonl?"
                ) from None
    if not records or records[0].get("type") != "run":
        raise ValueError(
            f"{path}: the first line is not a run header; save runs with rlm_result.to_jsonl(path)"
        )
    return {"run": records[0], "turns": [r for r in records[1:] if r.get("type") == "turn"]}


class _View:
    def __init__(self, tree: dict) -> None:
        self.tree = tree

    def _repr_html_(self) -> str:
        return tree_html(self.tree)

    def __repr__(self) -> str:
        return tree_text(self.tree)


def view(source: object) -> _View:
    """The viewer for an `RLMResult` or a saved run (`view("runs/x.jsonl")`): displays as the timeline."""
    if hasattr(source, "tree"):
        shown = _View(source.tree())  # type: ignore[union-attr]
        # a run the kernel made shows as the kernel's own viewer; a saved file or a dict is shown sanitised
        return own(shown) if is_owned(source) else shown
    if isinstance(source, dict) and "run" in source:
        return _View(source)
    if isinstance(source, str | Path):
        return _View(load_tree(str(source)))
    raise TypeError(
        f"view() takes an RLMResult or the path of a run saved with to_jsonl, got {type(source).__name__}"
    )
