"""The live view of a root-loop run: one collapsible entry per turn, then the final answer.

Rendered as HTML `<details>` (with a text/plain twin) in one display that is updated after every turn.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from rlm_kernel.output import kernel_display, kernel_update
from rlm_kernel.widgets.budget import budget_mimebundle, get_monitor
from rlm_kernel.widgets.display_mode import resolve_mode

if TYPE_CHECKING:
    from rlm_kernel.rootloop.trajectory import RLMResult, Turn

__all__ = ["LiveDisplay", "RunBudgetDisplay", "turn_html", "turn_text"]

_SHOW = 3000


def _cut(text: str, limit: int = _SHOW) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit:,} more chars]"


def _status(turn: Turn) -> str:
    if turn.code is None:
        return "no code"
    return "error" if turn.error else "ok"


def turn_html(turn: Turn) -> str:
    u = turn.usage
    summary = (
        f"Turn {turn.index} — {_status(turn)} — {len(turn.calls)} child call(s) — "
        f"{u.tokens:,} tokens — ${u.cost_usd:.4f} — {turn.seconds:.1f}s"
    )
    parts = [f"<details><summary>{html.escape(summary)}</summary>"]
    if turn.code is not None:
        parts.append(f"<pre style='background:#f6f8fa;padding:4px'>{html.escape(_cut(turn.code))}</pre>")
    out = (
        turn.stdout + (f"\n→ {turn.value}" if turn.value else "") + (f"\n{turn.error}" if turn.error else "")
    )
    if out.strip():
        parts.append(f"<pre>{html.escape(_cut(out.strip()))}</pre>")
    if turn.calls:
        items = "".join(
            f"<li>{html.escape(c.kind)} ×{c.items}{' (' + str(c.failed) + ' failed)' if c.failed else ''}"
            f" — {html.escape(c.prompt_preview[:120])} — ${c.usage.cost_usd:.4f}"
            f"{' — ' + html.escape(c.error) if c.error else ''}</li>"
            for c in turn.calls
        )
        parts.append(f"<ul>{items}</ul>")
    if turn.note:
        parts.append(f"<div><i>{html.escape(turn.note)}</i></div>")
    parts.append("</details>")
    return "".join(parts)


def turn_text(turn: Turn) -> str:
    u = turn.usage
    return (
        f"Turn {turn.index}: {_status(turn)}, {len(turn.calls)} child call(s), {u.tokens} tokens, "
        f"${u.cost_usd:.4f}" + (f" — {turn.note}" if turn.note else "")
    )


class LiveDisplay:
    """Shows a run as it goes (in a kernel); does nothing outside one."""

    def __init__(self, question: str) -> None:
        self.question = question
        self.handle = None
        self.turns: list[Turn] = []
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover
            return
        if get_ipython() is None:
            return
        self.handle = kernel_display(self._bundle("starting…"), display_id=True)

    def _bundle(self, status: str, final_html: str = "", final_text: str = "") -> dict:
        head = f"<div><b>RLM run</b>: {html.escape(self.question[:300])} — <i>{html.escape(status)}</i></div>"
        body = "".join(turn_html(t) for t in self.turns)
        text = "\n".join([f"RLM run: {self.question[:300]} — {status}"] + [turn_text(t) for t in self.turns])
        return {
            "text/html": head + body + final_html,
            "text/plain": text + ("\n" + final_text if final_text else ""),
        }

    def turn(self, turn: Turn, status: str) -> None:
        self.turns.append(turn)
        if self.handle is not None:
            kernel_update(self._bundle(status), self.handle.display_id)

    def finish(self, result: RLMResult) -> None:
        if self.handle is None:
            return
        answer = "(no answer)" if result.answer is None else result.answer_text or ""
        colour = "#2e7d32" if result.termination == "final" else "#b26a00"
        final_html = (
            f"<div style='border:2px solid {colour};border-radius:6px;padding:8px 12px;margin-top:6px'>"
            f"<div style='font-weight:bold;color:{colour}'>{html.escape(result.summary_line())}</div>"
            f"<div>{html.escape(result.message)}</div>"
            "<div style='white-space:pre-wrap;font-size:1.1em'>"
            f"{html.escape(_cut(answer, 20000))}</div></div>"
        )
        final_text = f"{result.summary_line()}\n{result.message}\nANSWER: {answer}"
        bundle = self._bundle("done", final_html, final_text)
        # the finished run as the trajectory viewer: nested sub-RLM runs, prompts, answers, cost per step
        from rlm_kernel.rootloop.viewer import tree_html

        bundle["text/html"] = tree_html(result.tree())
        kernel_update(bundle, self.handle.display_id)


class RunBudgetDisplay:
    """A run's own budget in its cell (in a kernel; nothing outside one).

    widgets mode: the live budget widget, shown when the run starts (`display(budget)`) and refreshed as its
    calls settle; text mode: one final line `rlm run budget: N calls · … · depth D` (deterministic: calls,
    tokens, USD, cache hits and depth only); off: nothing.
    """

    PREFIX = "rlm run "

    def __init__(self, budget: object) -> None:
        self.budget = budget
        self.mode = "off"
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover
            return
        if get_ipython() is None or budget is None:
            return
        try:
            self.mode = resolve_mode()[0]
        except ValueError:  # an invalid display setting: `%rlm display` says what to fix
            self.mode = "text"
        if self.mode == "widgets":
            kernel_display(budget_mimebundle(budget, "widgets"))

    def finish(self) -> None:
        """The final figures: the widget flushed at once (widgets mode) or the text line printed."""
        if self.mode == "off":
            return
        if self.mode == "widgets":
            get_monitor().view_for(self.budget)  # flushes pending figures now, not an interval later
        else:
            print(self.PREFIX + budget_mimebundle(self.budget, "text")["text/plain"], flush=True)
