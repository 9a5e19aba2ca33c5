"""What the root model reads after a turn: the block's output, the notes, the turns left, and the hints
(a repeated block, a sub-call that saw none of `context`, output that looks like the answer, how to end).

Functions of the running run (a `rootloop.turn_loop.TurnLoop`: its options, turns, context, namespace).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from rlm_kernel.repl.asked import asked_words, wants_number
from rlm_kernel.repl.gate import answer_in_output, names_from_sub_calls, prints_only_literals
from rlm_kernel.repl.kinds import code_kind, names_defined
from rlm_kernel.repl.subtask import quotes_task
from rlm_kernel.rootloop.found import (
    best_line,
    candidates,
    defining_lines,
    enclosing_classes,
    files_of,
    next_key,
    shape,
    wants_file,
)
from rlm_kernel.rootloop.named_file import named_file_hint
from rlm_kernel.rootloop.prompt import COMMON_WORDS, window_tokens
from rlm_kernel.rootloop.search_fix import case_mismatch, no_hits, rerun_note, rerun_view
from rlm_kernel.rootloop.textcut import truncate
from rlm_kernel.rootloop.trajectory import Turn

__all__ = [
    "assigned_names",
    "case_mismatch",
    "counted_lines",
    "file_count_hint",
    "feedback",
    "found_by_code",
    "hints",
    "near_miss",
    "offered_final",
    "repeat_feedback",
]

_ANSWER_LIKE_CHARS = 200
_ANSWER_LIKE_LINES = 4
_FOUND_CHARS = 600
"""A search's output up to this long (the count and a few hits) can be what code found for the question."""


def _same_code(a: str, b: str) -> bool:
    def norm(code: str) -> str:
        return "\n".join(line.rstrip() for line in code.strip().splitlines() if line.strip())

    return norm(a) == norm(b)


def feedback(
    run: Any, turn: Turn, ignored: dict[str, int], notes: list[str], no_code: int, hints: list[str] = ()
) -> str:
    """What the root reads after a turn: the output, the notes, the turns left, then the hints (last, so
    a small model reads them right before it writes)."""
    limit = run.options.output_chars
    if turn.code is None:
        body = (
            "Your reply had no ```repl block, so nothing ran. Reply with a ```repl block "
            f"(turn {no_code} of at most {run.options.max_no_code_turns} in a row without code)."
        )
    else:
        parts = [f"Output of turn {turn.index}:"]
        parts.append(truncate(turn.stdout, limit) if turn.stdout.strip() else "(nothing printed)")
        if turn.value is not None:
            parts.append("Value: " + truncate(turn.value, limit // 2))
        if turn.error:
            parts.append("Error: " + truncate(turn.error, limit // 2))
        body = "\n".join(parts)
    ran = "```repl" if not ignored or "repl" not in ignored else "```python"
    if ignored:
        kinds = ", ".join(f"{n} {kind} block{'s' if n > 1 else ''}" for kind, n in ignored.items())
        notes = [f"Ignored {kinds}: only {ran} blocks ran. Put all code in ```repl blocks."] + notes
    notes = list(dict.fromkeys(notes))  # one copy of each note
    left = run.options.max_iterations - turn.index
    tail = (
        f"\n\n{left} turn(s) left. Continue with a ```repl block, or end with FINAL(...) giving the answer "
        "your code found."
    )
    text = body + ("\n\n" + "\n".join(notes) if notes else "") + tail
    return text + ("\n\n" + "\n\n".join(dict.fromkeys(hints)) if hints else "")


_OFFER = re.compile(r"reply with just:\n```repl\n(FINAL(?:_VAR)?\(.*?\))\n```", re.S)


def offered_final(feedback_text: str) -> str | None:
    """The last `FINAL(...)` block a feedback told the root to reply with, or None."""
    offers = _OFFER.findall(feedback_text or "")
    return offers[-1] if offers else None


def repeat_feedback(run: Any, turn: Turn) -> str | None:
    """The whole feedback for a block that repeats the previous one, printed the same output and had been
    offered a FINAL for that output: the offer alone, without the output again (None otherwise).

    Measured with the coder model (long-context AFTER run, 2026-12-06): after the found hint, 3 of 12
    needle runs re-ran the same search seven times in a row, each feedback showing the same output, the
    hint to stop and the FINAL block last; each ended at the turn limit with the right line unaccepted.
    """
    if turn.code is None or turn.error or not turn.stdout.strip():
        return None
    earlier = [t for t in run.turns if t is not turn and t.code is not None]
    if not earlier:
        return None
    last = earlier[-1]
    if not _same_code(last.code or "", turn.code) or last.stdout.strip() != turn.stdout.strip():
        return None
    offer = offered_final(last.feedback)
    if offer is None:
        return None
    left = run.options.max_iterations - turn.index
    return (
        f"Turn {turn.index} ran the same block as turn {last.index} and printed the same output: code has "
        "already found the answer in `context`, and running the block again tells you nothing new. "
        f"Do not run it again. End the run now ({left} turn(s) left) — reply with just:"
        f"\n```repl\n{offer}\n```"
    )


def hints(run: Any, turn: Turn) -> list[str]:
    """Nudges for a turn that did not end the run: a repeated block, output that looks like the answer."""
    out: list[str] = []
    near = near_miss(turn.error or "")
    if near:
        out.append(near)
    if turn.code is None:
        return out
    earlier = [t for t in run.turns if t is not turn and t.code is not None]
    if earlier and _same_code(earlier[-1].code or "", turn.code):
        out.append(
            f"This block is the same as the one in turn {earlier[-1].index}: running it again tells you "
            "nothing new. If its output answers the question, call FINAL now; otherwise do something "
            "different."
        )
    fix = getattr(run, "search_fixes", {}).get(turn.index)  # the loop re-ran the block fixed (search_fix.py)
    case = rerun_note(fix) if fix is not None else case_mismatch(turn.code)
    if case:
        out.append(case)
    if fix is not None:
        turn = rerun_view(turn, fix)  # the hints below read the block the loop ran and what it printed
    blind = [c.kind for c in turn.calls if c.ok and not c.saw_context]
    if blind:
        # Measured with the coder model: a hint with a code template is copied literally ('word' and all)
        # and a search suggestion is ignored; naming where start and end come from is acted on.
        where = "`context_files[name]` or " if run.loaded.files else ""
        out.append(
            f"That {blind[0]} call had none of `context` in it, so its answer is a guess: the sub-model "
            "sees only the prompt you pass. Pass it the part of `context` it needs: "
            f'{blind[0]}("<the question>\\n\\nText:\\n" + context[start:end]), with start, end from '
            f"{where}around a search hit (i = context.find(...))."
        )
    if not turn.error and any(c.ok and c.saw_context for c in turn.calls):
        out.append(_read_hint(run, turn))
    task = run.task
    if task is not None and quotes_task(turn.stdout, task[0]):
        # Measured with the coder model on two sub-RLMs whose search printed their task's own line next to
        # the hits: with no hint one asked llm_query without the text, the other re-ran its search; told
        # only where the text starts, the second still re-ran it; told "search and work in context[N:]",
        # the first re-ran its search there without ending; with this wording the first counted in
        # context[N:] and the second searched there.
        start = task[1]
        out.append(
            "Your search also matched the task itself (the start of `context`); the text the task is "
            f"about is `context[{start}:]`. Do the task on `context[{start}:]`, not on `context`."
        )
    files = file_count_hint(run, turn)
    if files:
        out.append(files)
    named = named_file_hint(run, turn, _window())
    if named:
        out.append(named)
    printed = turn.stdout.strip()
    lines = [line for line in printed.splitlines() if line.strip()]
    tracker = run.state.run
    if not turn.error and printed and tracker is not None and tracker.gate.code_read_context:
        short = len(printed) <= _ANSWER_LIKE_CHARS and len(lines) <= _ANSWER_LIKE_LINES
        if short and prints_only_literals(turn.code):
            out.append(
                "You printed your answer as text, but printing does not end the run. Submit it — reply "
                f"with just:\n```repl\nFINAL({printed[:300]!r})\n```"
            )
        elif (count := counted_lines(run, turn)) is not None:
            run.found = (turn.index, count)
            out.append(_count_hint(run, count))
        elif (path := defining_file(run, turn)) is not None:
            run.found = (turn.index, path)
            out.append(_file_hint(run, path))
        elif classes := defining_classes(run, turn):
            out.append(_class_hint(run, classes))
        elif wants_number(run.question) and _one_number(lines) and tracker.gate.size_problem(lines[0]):
            # coder model (code/32K-count-1, after the file-scope refusal): it printed len(text) of the file's
            # text, 8541, and the found hint offered FINAL('8541'), which was accepted
            out.append(f"That number is not the answer: {tracker.gate.size_problem(lines[0])}.")
        elif found_by_code(run, turn) and (not wants_number(run.question) or _one_number(lines)):
            # for "how many", only a printed count: the found hint offers a printed line, and a line is not a
            # count (tutorial 4 on the coder model: FINAL('["else" ":" suite]') offered, refused, again ...)
            # Measured with the coder model (issue 27): turn 1's search printed `the secret code is 48213`
            # and, with no hint, the root went on to ask sub-models, which invented another answer. Only for
            # code that searched for the question's own words: after `print(len(context))` a hint to end was
            # followed by re-running the block (measured earlier).
            run.found = (turn.index, printed)
            out.append(_found_hint(run, printed))
        elif any(t.stdout.strip() == printed for t in earlier):
            # Only once the root prints the same output again: a first short output is as often a step
            # (a length, a count of hits) as the answer, and a small model told "reply with just
            # FINAL('468615')" after `print(len(context))` re-runs that block instead of searching. Any
            # length: a sub-RLM that printed its count above the matching lines (230 characters) re-ran
            # the block until told this, then ended with FINAL(4) (coder model, measured).
            one = len(lines) == 1 and short
            argument = _example(lines) if one else _holder(run, turn)
            if argument is None and short:
                best = best_line(run.question, candidates(printed))
                argument = repr(best) if best is not None else None
            if argument is None:
                # No line or variable to name: a placeholder here (`FINAL("<the part of the output that
                # answers>")`) was sent back as written, turn after turn, by the coder model (tutorial 5,
                # measured), so the hint says what to do next instead of showing a template to copy.
                out.append(
                    f"Printing an answer does not end the run, and this output has {len(lines)} lines. "
                    "Narrow it down with code: filter the lines for more words of the question, and print "
                    "only the line or the few lines that answer it. Then end with FINAL of that text."
                )
            else:
                out.append(
                    "Printing an answer does not end the run. If this output answers the question, reply "
                    f"with just:\n```repl\nFINAL({argument})\n```\n"
                    "(or FINAL_VAR('name') for a variable holding the answer)."
                )
    return out


def _window() -> int:
    """The configured sub-model window in tokens (prompt.window_tokens)."""
    from rlm_kernel import llm

    return window_tokens(llm.get_client().config)


_FILE_NOUNS = frozenset({"file", "files", "module", "modules"})


def file_count_hint(run: Any, turn: Turn) -> str:
    """For a question counting the files of a loaded corpus: after a block that did not look at
    `context_files`, how to count them; after one that printed a count from it first, that count as the
    FINAL to reply with ("" otherwise).

    Measured with the coder model (issue 27, protocol/email-files): "How many files are in the email
    package?" searched the lines for 'email' eight times (203 lines, not files) and ended best effort."""
    spans = run.loaded.files
    if not spans or not _FILE_NOUNS.intersection(_counted(run.question)) or turn.error:
        return ""
    if "context_files" in (turn.code or ""):
        first = next((line.strip() for line in turn.stdout.splitlines() if line.strip()), "")
        if not first.isdigit():
            return ""
        return (
            f"Your code counted {first} files in `context_files`. If that count answers exactly this "
            f"question: {truncate(run.question, 300)!r}, end the run now — reply with just:\n```repl\n"
            f"FINAL({first!r})\n```"
        )
    return (
        f"Lines are not files. `context_files` maps each loaded file's path to its (start, end) in "
        f"`context`: it holds {len(spans)} files. To count files, count them there, e.g.\n```repl\n"
        "print(len(context_files)); print(list(context_files)[:5])\n```"
    )


def _one_number(lines: list[str]) -> bool:
    """Whether the output is one number (a count: "537")."""
    return len(lines) == 1 and re.fullmatch(r"\s*\d[\d,]*\s*", lines[0]) is not None


def _count_hint(run: Any, count: str) -> str:
    """The hint after a line search printed its count first, for a question that counts lines or times."""
    per_line = ""
    if "times" in _counted(run.question):
        per_line = (
            " It counts lines, each once: if a line can hold the word more than once, count the word in "
            "each line instead (sum(line.count(word) for line in hits))."
        )
    return (
        f"Your code counted {count} matching lines of `context` (the first number it printed).{per_line} If "
        f"that count answers exactly this question: {truncate(run.question, 300)!r}, end the run now "
        f"— reply with just:\n```repl\nFINAL({count!r})\n```\nNo sub-model call is needed for what "
        "code counted. If the search was not the right one, fix it and count again."
    )


def _found_hint(run: Any, printed: str) -> str:
    """The hint after code printed something short for the question's words: end with the line (or the
    corpus file) that answers, copied from this output; or, when the line names nothing the question asks
    for, search for what it gave next (a multi-hop question's next fact)."""
    question = truncate(run.question, 300)
    lines = candidates(printed)
    task = run.task[0] if run.task is not None else ""
    # a sub-RLM's search also prints its task's own line: offered as FINAL, it was copied (coder model)
    hops = getattr(run, "steps", [])
    answers = [line for line in lines if line not in run.question and (not task or line not in task)]
    # a chain's next search prints the hop before it again ("Marta Holm has joined the Heron project team."
    # among the Heron lines): a line already taken as a step is not the best line again, and neither are its
    # siblings, lines of the same shape ("Anika Holm has joined the Heron project team.": followed, the next
    # search was for another person's name; hint follower, multihop/128K-3hop-7)
    shapes = {shape(h[0]) for h in hops}
    answers = [line for line in answers if shape(line) not in shapes] or answers
    best = best_line(run.question, answers)
    if best is None and len(lines) == 1:
        best = lines[0]  # the one thing printed: a count ("537"), a value
    context = run.loaded.value if isinstance(run.loaded.value, str) else ""
    files = files_of(lines, context, run.loaded.files) if run.loaded.files and context else []
    if wants_file(run.question) and len(files) == 1:
        # Measured with the coder model (issue 27, `_fold_mime_parameters`): the search printed the `def` line
        # and the model, which cannot see which file a line is in, ended with a guessed file 7 times. The
        # kernel located the printed lines in the corpus: that file is drawn from `context` (gate rule 2).
        return _file_hint(run, files[0])
    tracker = run.state.run
    if context and tracker is not None and code_kind(run.question) == "class":
        classes = enclosing_classes(lines, context)
        if classes and not (best is not None and names_defined(best, tracker.gate.defined("class"))):
            return _class_hint(run, classes)
    key = next_key(best, run.question, tuple(h[1] for h in hops)) if best is not None else None
    if key is not None:
        # Measured with the coder model (issue 27, protocol/join): the first hop's line was ended with as
        # the answer ("... issued to Marta Quist in the images room", "images" its own guess); a generic
        # "search for a name or number the output gave" was not acted on, so the search is spelt out.
        run.next_key = key
        if isinstance(hops, list):
            hops.append((best, key))
        asked = "/".join(asked_words(run.question))
        return (
            f"Your code's output comes from `context`, but it names no {asked}, which this question asks "
            f"for: {question!r}. It is a step towards the answer: search `context` for what it gave — reply "
            f"with:\n```repl\nhits = [line for line in context.splitlines() if {key!r} in line]\n"
            "print(len(hits)); print(hits[:10])\n```"
        )
    end = (
        f"— reply with just:\n```repl\nFINAL({best!r})\n```\n"
        if best is not None
        else "with FINAL of the line that answers it, copied from the output as text. "
    )
    return (
        "Your code's output comes from `context` and it searched for the question's words. Does it answer "
        f"exactly this question: {question!r}? If it does, end the run now {end}No sub-model call is needed "
        "for what code found. If the question asks for something the output does not show yet, search "
        "`context` for it next (e.g. for a name or number the output gave)."
    )


_CLASS_NAME = re.compile(r"class\s+([A-Za-z_]\w*)")


def _class_hint(run: Any, classes: list[str]) -> str:
    """The hint for "which class" when the printed lines lie in classes (a method's `def` line): the `class`
    lines the kernel found them in (drawn from `context`: the gate is told it saw them), and FINAL of the one
    class the question does not name already, if there is one.

    Measured with the coder model (long-context AFTER run, 2026-12-06, code/32K-override-2): the found hint
    offered the printed `def header_fetch_parse(...)` line for "which class overrides ...", and it was
    accepted; the line is inside a class and names none."""
    tracker = run.state.run
    tracker.gate.saw("\n".join(classes))
    question = truncate(run.question, 300)
    named = set(re.findall(r"\w+", run.question))
    names = [m.group(1) for c in classes if (m := _CLASS_NAME.match(c))]
    rest = [n for n in names if n not in named]
    shown = "\n".join(f"  {c}" for c in classes)
    head = (
        "Your code's output comes from `context`, but a line inside a class is not the class: this question "
        f"asks which class ({question!r}). The printed lines are inside these classes of `context` (the "
        f"kernel found each line's `class` line):\n{shown}\n"
    )
    if len(rest) == 1:
        return head + (
            f"Of them only {rest[0]!r} is not already named in the question. If it answers the question, end "
            f"the run now — reply with just:\n```repl\nFINAL({rest[0]!r})\n```"
        )
    return head + "End with FINAL of the class name that answers the question, copied from these lines."


def _file_hint(run: Any, path: str) -> str:
    """The hint offering the corpus file the kernel located printed lines in (drawn from `context`: the
    gate is told it was seen)."""
    tracker = run.state.run
    if tracker is not None:
        tracker.gate.saw(f"file: {path}")
    question = truncate(run.question, 300)
    return (
        "Your code's output comes from `context`: the lines it printed are in the corpus file "
        f"{path!r} (context_files). If that answers exactly this question: {question!r}, end the "
        f"run now — reply with just:\n```repl\nFINAL({path!r})\n```\nNo sub-model call is needed for "
        "what code found."
    )


def defining_file(run: Any, turn: Turn) -> str | None:
    """For a "which file defines `X`" question over a corpus: the one file holding the printed lines that
    define X (`class X`, `def X`, `X = ...`), when the search also printed X's uses in other files.

    Measured with the coder model (long-context AFTER run, 2026-12-06, code/32K-where-0): the search printed
    five hits in three files (the `class MIMENonMultipart(MIMEBase):` line among them), too many for the found
    hint; with no hint the model went back to a search that could not match until the turn limit."""
    spans = run.loaded.files
    context = run.loaded.value if isinstance(run.loaded.value, str) else ""
    if not spans or not context or turn.calls or turn.error or not wants_file(run.question):
        return None
    files = files_of(defining_lines(candidates(turn.stdout), run.question), context, spans)
    return files[0] if len(files) == 1 else None


def defining_classes(run: Any, turn: Turn) -> list[str]:
    """For a "which class" question: the `class` lines of `context` holding the printed lines that define a
    name the question quotes (`def set_content(...)`), when the output is too long for the found hint.

    Measured with the hint follower (code/128K-override-2, seed 1): the search for `set_content` printed
    nine hits, its two `def` lines among calls and docs, and no hint came."""
    context = run.loaded.value if isinstance(run.loaded.value, str) else ""
    if not context or turn.calls or turn.error or code_kind(run.question) != "class":
        return []
    return enclosing_classes(defining_lines(candidates(turn.stdout), run.question), context)


def _read_hint(run: Any, turn: Turn) -> str:
    """After a sub-call that was given part of `context` answered: the FINAL gate is open, say how to end.

    Measured with the coder model: without it, the root re-sent the same call turn after turn."""
    names = [n for n in names_from_sub_calls(turn.code or "") if isinstance(run.ns.get(n), str)]
    if names:
        end = f"FINAL_VAR({names[-1]!r})"
    elif turn.value is not None and len(turn.value) <= _ANSWER_LIKE_CHARS * 2:
        end = f"FINAL({turn.value})"
    else:  # no variable holds it: FINAL(answer) here was a NameError, turn after turn (measured)
        kind = next(c.kind for c in turn.calls if c.ok and c.saw_context)
        return (
            f"Your {kind} call was given part of `context` and answered, but no variable holds its "
            f"answer. If it answers the question, run the call as `reply = {kind}(...)` and end with "
            "FINAL_VAR('reply')."
        )
    kind = next(c.kind for c in turn.calls if c.ok and c.saw_context)
    found = getattr(run, "found", None)
    said = "\n".join(c.response for c in turn.calls if c.ok and c.saw_context)
    if found is not None and not answer_in_output(found[1], said):
        # Measured with the coder model (issue 27): told "If that answer answers the question, end the run
        # now", the root accepted a sub-model's invented timestamp over the code it had run in turn 1.
        return (
            f"Your {kind} call answered, but its answer does not contain what your code found in `context` "
            f"at turn {found[0]}:\n{found[1][:300]}\nCode output over `context` is exact and a sub-model can "
            "be wrong: if that output answers the question, end with it — reply with just:\n```repl\n"
            f"FINAL({found[1].strip()[:300]!r})\n```"
        )
    return (
        f"Your {kind} call was given part of `context` and answered. If that answer answers the "
        f"question and agrees with what your code found, end the run — reply with just:\n```repl\n{end}"
        "\n```\nOtherwise ask about another part of `context`."
    )


_FINAL_NAMES = {"final": "FINAL", "finalvar": "FINAL_VAR", "finalanswer": "FINAL", "finalans": "FINAL"}
_NAME_ERROR = re.compile(r"NameError: name '(\w+)' is not defined")


def near_miss(error: str) -> str:
    """The hint for a NameError on a near-miss of FINAL/FINAL_VAR (`Final`, `final_var`, `FINALVAR`...):
    CPython's "Did you mean" misses the all-lower-case ones, and the coder model wrote `Final(...)` six
    times in one run without learning that `FINAL` exists (issue 27)."""
    m = _NAME_ERROR.search(error)
    if not m:
        return ""
    wrong = m.group(1)
    right = _FINAL_NAMES.get(wrong.lower().replace("_", ""))
    if right is None or wrong == right:
        return ""
    return f"`{wrong}` does not exist: did you mean {right}? End the run with {right}(...) — upper case."


def found_by_code(run: Any, turn: Turn) -> bool:
    """Whether this turn's short output came from code that searched `context` for the question's words
    (a string of the code shares a word with the question, or is the next key a hint suggested) with no
    sub-call: what code found."""
    if turn.calls or turn.error:
        return False
    printed = turn.stdout.strip()
    lines = [line for line in printed.splitlines() if line.strip()]
    if not printed or len(printed) > _FOUND_CHARS or len(lines) > _ANSWER_LIKE_LINES:
        return False
    # a few hits, each short (a printed list of them is one line); the count printed above them aside
    found = [c for c in candidates(printed) if not re.fullmatch(r"\d+", c)]
    if len(found) > _ANSWER_LIKE_LINES + 1 or any(len(c) > _ANSWER_LIKE_CHARS for c in found):
        return False
    if no_hits(lines):  # a search that found nothing is not an answer (coder model: then it guessed)
        return False
    words = {w.lower() for w in re.findall(r"\w{3,}", run.question)} - COMMON_WORDS
    keys = {getattr(run, "next_key", None)} | {h[1] for h in getattr(run, "steps", [])}
    try:
        tree = ast.parse(turn.code or "")
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
            if node.value.strip() in keys:
                return True
            if {w.lower() for w in re.findall(r"\w{3,}", node.value)} & words:
                return True
    return False


_LINE_NOUNS = frozenset({"line", "lines", "entries", "entry", "rows", "row", "times"})
_HOW_MANY = re.compile(r"\bhow many ((?:[a-z-]+\s+){0,2}[a-z-]+)", re.I)


def _counted(question: str) -> list[str]:
    """The words after "how many" (up to three): what the question counts."""
    m = _HOW_MANY.search(question)
    return m.group(1).lower().split() if m is not None else []


def counted_lines(run: Any, turn: Turn) -> str | None:
    """The count a line search printed first (`print(len(hits))`, hits being lines of `context`), when the
    question asks how many lines: None otherwise.

    Measured with the coder model (issue 27, protocol/count): the search printed 215 and ten of the lines,
    too long for the found hint, and the run went on. Only for questions that count lines ("How many log
    lines have the level ERROR?") or times (tutorial 4: "How many times does the word 'else' occur ...?",
    where the found hint offered a printed line as the count): a count of lines that mention "email" is
    not the number of files. Comes before the found hint."""
    if not _LINE_NOUNS.intersection(_counted(run.question)) or turn.calls or turn.error:
        return None
    if run.task is not None and quotes_task(turn.stdout, run.task[0]):
        return None  # the count includes the task's own line: the task hint says where to count instead
    code = turn.code or ""
    if "splitlines()" not in code or "len(" not in code or not _filters(code):
        return None
    first = next((line.strip() for line in turn.stdout.splitlines() if line.strip()), "")
    if not first.isdigit() or first == "0":
        return None
    return first


def _filters(code: str) -> bool:
    """Whether a block keeps only some items: a comprehension with an `if`, or an `if` in a loop."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension) and node.ifs:
            return True
        if isinstance(node, ast.For) and any(isinstance(n, ast.If) for n in ast.walk(node)):
            return True
    return False


def _example(lines: list[str]) -> str | None:
    """FINAL's argument in a hint: the one printed line, quoted; else None (no template to copy)."""
    return repr(lines[0].strip()) if len(lines) == 1 else None


def _holder(run: Any, turn: Turn) -> str | None:
    """FINAL's argument for a long output: a variable the block assigned whose value was printed (a name
    that exists in this run, never the preloaded `answer` dict), else None."""
    for name in reversed(assigned_names(turn.code or "")):
        value = run.ns.get(name)
        if type(value) in (str, int, float) and str(value) and str(value) in turn.stdout:
            return name
    return None


def assigned_names(code: str) -> list[str]:
    """The plain names a block assigns, in order."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    return [
        t.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    ]
