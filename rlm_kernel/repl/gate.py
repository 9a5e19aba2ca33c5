"""The FINAL gate: when a root's answer is accepted, and the checks it rests on.

A FINAL is accepted when its answer is *drawn from the context* (the seed contract), in one of three ways:

1. a value code computed from `context`: `FINAL(n)`, `FINAL_VAR('n')` or a prose `FINAL(n)` where `n` was
   assigned from an expression over `context` or over names drawn from it (`repl.derived` follows the
   blocks' data flow), or `FINAL(expression)` over such names;
2. text code printed from `context`: the answer (or every content word of it — its numbers and the words
   that are neither stop words nor the question's; for an answer of up to six words, its numbers) appears
   in the output of a block that ran after code first read `context` (a block that only prints literal
   text, `print("The answer is 7")`, computes nothing and does not count);
   The facts the kernel itself stated about the context in the first message (its length in characters and
   its number of files, `stated_facts`) count as printed: "How many files are in the email
   package?" is answered by the corpus's file count (coder model, issue 27: its best-effort answer "29 files"
   was right, and no FINAL of it could be accepted).
3. what a sub-call (`llm_query*`, `rlm_query*`) answered when its prompt contained part of `context`: the
   answer appears in that answer as in rule 2 (a call without any of the context, e.g.
   `llm_query(question)`, is a guess and does not count).

Refused whatever the rules say: an empty answer (blank, an empty container, or text that displays one:
`[]`, `{}`, `''`; `None` unless the question asks for a default or return value: `empty_problem`), an
answer without a number to a "how many/much" question, the reference-style `answer` dict while it is not ready
(`FINAL(answer)` with `answer == {"content": None, "ready": False}`), and a text answer of four or more words
that reads as a step: it names nothing the question's wh-phrase asks for and gives a new number for another
thing the question names (`repl.asked.is_step`: "Which room's door ..." answered with the first hop's line
"badge 35415 was issued to Marta Quist" — a step, not the answer), and an answer of the wrong kind where the
kind has a shape in the context (`repl.kinds`: "which class" answered with a `def` line, which names no
class the context's `class` lines define).

The run's question is never evidence, wherever the model finds it: a sub-call that only quotes it does not
count, and the question's lines printed by code do not count for rule 2. A sub-RLM's task lies inside its
own `context` (`rlm_query(prompt)` makes the prompt the context), so its question quotes the task's lines
(`repl.subtask`) and those lines are covered too. The system prompt states the same rule.
"""

from __future__ import annotations

import ast
import re

from rlm_kernel.repl.asked import asked_words, counts_characters, has_number, is_step, wants_number
from rlm_kernel.repl.derived import CONTEXT_NAME, DataFlow
from rlm_kernel.repl.kinds import defined_names, kind_problem
from rlm_kernel.repl.scope import ScopeFlow, scope_file

__all__ = [
    "NOT_DRAWN",
    "FinalGate",
    "answer_in_output",
    "block_facts",
    "content_words",
    "answer_dict_problem",
    "context_text",
    "empty_problem",
    "final_arguments",
    "names_from_sub_calls",
    "rejection",
    "shares_text",
    "stated_facts",
    "without_question",
]

_WINDOW = 24
_MAX_WINDOWS = 160
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def context_text(value: object) -> str:
    """The text a sub-call's prompt is checked against: the context itself, or its items/values as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "\n".join(str(v) for v in value)
    return str(value)


def shares_text(prompt: str, source: str, window: int = _WINDOW, besides: str = "") -> bool:
    """Whether `prompt` contains a piece of `source` of about `window`+ characters (or all of a shorter one)
    that is not also in `besides` (the run's question: quoting the question is not reading the context).

    Up to `_MAX_WINDOWS` windows of `prompt`, spread evenly, are looked up in `source`: any run of `source`
    longer than the spacing plus `window` is always found.
    """
    if not prompt or not source:
        return False
    core = source.strip()
    if len(core) <= 2 * window:
        return bool(core) and core in prompt and core not in besides
    if len(prompt) < window:
        return False
    last = len(prompt) - window
    step = max(1, last // _MAX_WINDOWS + 1, window // 2)
    for start in range(0, last + 1, step):
        piece = prompt[start : start + window]
        if _counts(piece, source, besides):
            return True
    return _counts(prompt[last:], source, besides)


def _counts(piece: str, source: str, besides: str) -> bool:
    return bool(piece.strip()) and len(set(piece)) > 3 and piece in source and piece not in besides


def _normal(text: str) -> str:
    text = text.strip().strip("'\"").strip()
    return text.rstrip(".").strip()


def answer_in_output(answer: str, output: str) -> bool:
    """Whether the answer is something code printed: its text at word boundaries in `output`, a long piece
    of it in `output`, or (for an answer with numbers) every number in it."""
    text = _normal(answer)
    if not text or not output:
        return False
    if verbatim_in(text, output):
        return True
    if len(text) > 2 * _WINDOW and shares_text(text, output):
        return True
    return numbers_in(text, output)


def numbers_in(answer: str, output: str) -> bool:
    """Whether `answer` has numbers and every one of them is a number in `output` (thousands separators
    aside)."""
    numbers = [n.replace(",", "") for n in _NUMBER.findall(answer)]
    plain = output.replace(",", "")
    return bool(numbers) and all(
        re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w])", plain) for n in numbers
    )


def verbatim_in(answer: str, output: str) -> bool:
    """Whether the answer's text is in `output` at word boundaries (a long answer that only shares a piece
    with it is judged by its words: "badge 35415 was issued to Marta Quist in the images room" shares a
    long piece with the printed line and adds the guess "images", coder model, issue 27)."""
    text = _normal(answer)
    if not text or not output:
        return False
    return re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)", output) is not None


def block_facts(code: str) -> tuple[bool, bool]:
    """(reads context, has a FINAL/FINAL_VAR with a literal argument) for one block of code.

    A block that does not parse reads nothing and has no literal FINAL (it will not run anyway).
    """
    tree = _parse(code)
    if tree is None:
        return False, False
    reads = any(isinstance(n, ast.Name) and CONTEXT_NAME.match(n.id) for n in ast.walk(tree))
    literal = False
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "FINAL"
            and node.args
            and _is_literal(node.args[0])
        ):
            literal = True
    return reads, literal


_SUB_CALLS = frozenset({"llm_query", "rlm_query", "llm_query_batched", "rlm_query_batched"})


def names_from_sub_calls(code: str) -> list[str]:
    """The variables a block assigns from one sub-call (`answer = llm_query(...)`, `answers =
    llm_query_batched(...)`), in order."""
    tree = _parse(code)
    names: list[str] = []
    for node in ast.walk(tree) if tree is not None else ():
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in _SUB_CALLS
        ):
            names += [t.id for t in node.targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def prints_only_literals(code: str) -> bool:
    """Whether a block only prints literal text (`print("The answer is 7")`): it computes nothing, so its
    output is the model's own words, not evidence from the context."""
    tree = _parse(code)
    if tree is None or not tree.body:
        return False
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            return False
        value = stmt.value
        if _is_literal(value):
            continue
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "print"
            and all(_is_literal(a) for a in value.args)
        ):
            continue
        return False
    return True


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) for v in node.values)
    return False


_STOP_WORDS = frozenset(
    "the a an is are was were be been of in on at to for from by with and or not no it its this that these "
    "those there here answer final result value which what who whom whose where when how many much does did "
    "do has have had i you we they he she them his her our your their as so than then also only".split()
)
_SHORT_WORDS = 6
"""Up to this many words, an answer whose numbers code printed is accepted with its framing words; a longer
one needs every content word printed (the join's "... 35415 ... in the images room." invented "images")."""
_ASKED_MIN_WORDS = 4
"""From this many words (split at white space: a path is one word), a text answer must name what the
question's wh-phrase asks for (`off_question`)."""
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3})")
_WORD = re.compile(r"[A-Za-z0-9_][\w.-]*\w|\w")


def _words_in(answer: str, evidence: str, question: str) -> bool:
    """Whether every content word of `answer` (not a stop word, not a word of the question; numbers
    included, without thousands separators) is a word of `evidence`, and there is at least one.

    Measured with the coder model (issue 27, protocol/join): "The badge 35415 was issued to Marta Quist in
    the images room." had every number printed by code and was accepted; "images" was its own guess."""
    words = content_words(answer, question)
    if not words:
        return False
    have = {w.lower() for w in _WORD.findall(_DIGIT_COMMA.sub("", evidence))}
    return words <= have


def content_words(answer: str, question: str) -> set[str]:
    """The answer's own words, lower-cased: not stop words, not words of the question (numbers included,
    without thousands separators)."""
    asked = {w.lower() for w in _WORD.findall(_DIGIT_COMMA.sub("", question))}
    return {w.lower() for w in _WORD.findall(_DIGIT_COMMA.sub("", answer))} - _STOP_WORDS - asked


def answer_dict_problem(value: object) -> str | None:
    """Why `value` cannot be an answer when it is the reference-style `answer` dict that is not ready."""
    if type(value) is dict and set(value) == {"content", "ready"}:
        if value.get("ready") is not True or value.get("content") is None:
            return (
                f"`answer` is the reference-style dict {value!r}, not your answer (the run preloads it): "
                "end with FINAL(x) or FINAL_VAR('x') for a variable x of your own that holds the answer"
            )
    return None


NOT_DRAWN = (
    "this answer was not computed from `context`, printed by code that read it, or given by a sub-call "
    "that saw part of it"
)


class FinalGate:
    """What one run has shown so far, and the decision for a FINAL (see the module docstring)."""

    def __init__(self) -> None:
        self.context_calls = 0
        self.code_read_context = False
        self.final_drawn = False
        """Whether every FINAL(...) of the running block is given a value drawn from the context."""
        self.output = ""
        self.heard = ""
        """What the sub-calls that were given part of `context` answered."""
        self.question = ""
        self.no_context = False
        """Nothing is loaded: the question is the whole task, and a FINAL is accepted once a sub-call
        answered or code computed it."""
        self.stated = ""
        """What the kernel told the root about the context (`stated_facts`): evidence like printed output."""
        self.flow = DataFlow()
        self._source: tuple[int, str] = (0, "")
        self.text = ""
        self.scope: ScopeFlow | None = None
        """For a counting question about one file of a corpus: the names computed over that file's text."""
        self.scoped_output = ""
        """What the blocks that worked on the scope's file printed."""
        self.block_in_scope = False
        self.final_scoped = False
        self.sizes: set[int] = set()
        """The lengths in characters of the texts code measured (`len(text)` of a str) and of the context:
        not a count of anything a question asks about but characters (`note_sizes`)."""
        """The loaded context as text (`load`): what the answer-kind checks read (`repl.kinds`)."""
        self._defined: dict[str, frozenset[str]] = {}

    def load(self, text: str, files: dict | None = None) -> None:
        """The loaded context's text and files, for the checks that read them: the kinds its code defines
        (`repl.kinds`), and for a counting question that names one of the files, that file's scope
        (`repl.scope`). Set after `question`."""
        self.text, self._defined = text, {}
        self.sizes = {len(text)} if text else set()
        path = scope_file(self.question, files) if files and wants_number(self.question) else None
        self.scope = ScopeFlow(path) if path is not None else None
        self.scoped_output, self.block_in_scope, self.final_scoped = "", False, False

    def note_sizes(self, code: str, ns: dict) -> None:
        """Note the length of every str a block measured with `len(NAME)` (read from the namespace `ns`
        after the block ran, by exact type: the cell's objects are not called)."""
        tree = _parse(code)
        for node in ast.walk(tree) if tree is not None else ():
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "len"
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Name)
                and type(ns.get(node.args[0].id)) is str
            ):
                self.sizes.add(len(ns[node.args[0].id]))

    def size_problem(self, answer: str) -> str | None:
        """Why a count is a length in characters (None: it is not, or characters are asked for)."""
        numbers = {int(n) for n in re.findall(r"(?<![\w.])\d+(?![\w.])", answer.replace(",", ""))}
        if not numbers or not numbers <= self.sizes or counts_characters(self.question):
            return None
        return (
            f"{', '.join(map(str, sorted(numbers)))} is the length of a text in characters (len() of a str), "
            "not a count of what the question asks about. Count those things in the text — e.g. the lines "
            "that are one (a filter over text.splitlines()) or extract_functions(text) for functions — print "
            "the count, and end with FINAL of it"
        )

    def in_scope(self, name: str) -> bool:
        """Whether a variable was computed over the scope's file (True when there is no scope)."""
        return self.scope is None or name in self.scope.names

    def expr_in_scope(self, node: ast.AST | None) -> bool:
        """Whether an expression is computed over the scope's file (True when there is no scope)."""
        return self.scope is None or self.scope.drawn(node)

    def defined(self, kind: str) -> frozenset[str]:
        """The names the context's `class` (kind "class") or `def` lines define, found once per run."""
        if kind not in self._defined:
            self._defined[kind] = defined_names(self.text, kind)
        return self._defined[kind]

    @property
    def literal_in_block(self) -> bool:
        """Whether the running block gives FINAL a value not drawn from the context (older name)."""
        return not self.final_drawn

    def source_for(self, value: object) -> str:
        """`context_text(value)`, converted once per context object."""
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if self._source[0] != id(value):
            self._source = (id(value), context_text(value))
        return self._source[1]

    def before_block(self, code: str) -> None:
        """Follow a block's data flow before it runs, and note whether its FINALs are given drawn values."""
        self.flow.add_block(code)
        finals = final_arguments(code)
        self.final_drawn = bool(finals) and all(self.flow.drawn(a) for a in finals)
        if self.scope is not None:
            self.scope.add_block(code)
            self.block_in_scope = self.scope.block_scoped(code)
            self.final_scoped = bool(finals) and all(self.scope.drawn(a) for a in finals)

    def problem(self, answer: str, computed: bool, value: object = None, scoped: bool = False) -> str | None:
        """Why this FINAL is refused (None: accepted). `computed`: its value is drawn from the context by
        the data flow (rule 1); `scoped`: computed over the file a counting question names (`repl.scope`)."""
        why = answer_dict_problem(value)
        if why is not None:
            return why
        why = empty_problem(answer, value, self.question)
        if why is not None:
            return why
        if not self.no_context:
            why = kind_problem(answer, self.question, self.defined)
            if why is not None:
                return why
        why = self.off_question(answer, value)
        if why is not None:
            return why
        if not self.no_context and wants_number(self.question) and not has_number(answer):
            # coder model, tutorial 4 on the plain question "How many times does the word 'else' occur
            # ...?": a printed line of the text (`["else" ":" suite]`) was accepted as the count
            return (
                "the question asks how many (or how much), and this answer has no number. Count with code "
                "(e.g. n = len(hits) or text.count(word)), print it, and end with FINAL(n)"
            )
        if not self.no_context and wants_number(self.question):
            why = self.size_problem(answer)
            if why is not None:
                return why
        if self.scope is not None and not self.no_context and has_number(answer):
            if not ((computed and scoped) or numbers_in(_normal(answer), self.scoped_output)):
                return self.scope_problem()
        if computed:  # drawn from the context (or a tool) by the data flow
            return None
        if self.no_context and self.context_calls:
            return None
        evidence = self.output + "\n" + self.heard + "\n" + self.stated
        if verbatim_in(answer, evidence) or _words_in(answer, evidence, self.question):
            return None
        if len(_WORD.findall(answer)) <= _SHORT_WORDS and numbers_in(_normal(answer), evidence):
            # a short answer around printed numbers ("The count is 4"); not a piece it shares with the
            # output: a path in the located file's directory shares a long one with that file's path
            return None
        return NOT_DRAWN

    def off_question(self, answer: str, value: object = None) -> str | None:
        """Why a text answer does not answer the question (None: it may): four or more words that read as a
        step (`repl.asked.is_step`: naming none of the question's wh-phrase words, and giving a new number
        right after another thing the question names), for a question of a line or two."""
        if not (value is None or isinstance(value, str)) or self.no_context or len(self.question) > 400:
            return None
        if len(answer.split()) < _ASKED_MIN_WORDS or not is_step(answer, self.question):
            return None
        asked = "/".join(asked_words(self.question))
        return (
            f"the question asks for a {asked}, and this answer names no {asked}: it may be a step towards "
            "the answer, not the answer. Search `context` for the next fact (e.g. for a name or number this "
            "text gave), then end with the text that names it"
        )

    def scope_problem(self) -> str:
        """The refusal of a count not computed over the file the question names."""
        path = self.scope.path if self.scope is not None else ""
        return (
            f"the question asks about the file {path!r}, and this number was not computed over that file's "
            "text: code over all of `context` counts in every file of the corpus. Take the file's text first "
            f"— start, end = context_files[{path!r}]; text = context[start:end] — count in `text`, print "
            "the count, and end with FINAL of it"
        )

    def accepts(self, answer: str, computed: bool, value: object = None) -> bool:
        return self.problem(answer, computed, value) is None

    def saw(self, text: str) -> None:
        """Add a block's output (only output after code first read `context` counts for rule 2), without
        the question's lines that code printed (`without_question`)."""
        if self.code_read_context and text:
            text = without_question(text, self.question)
            self.output = (self.output + "\n" + text)[-200_000:]
            if self.block_in_scope:
                self.scoped_output = (self.scoped_output + "\n" + text)[-200_000:]

    def hear(self, text: str) -> None:
        """Add what a sub-call given part of `context` answered (rule 3)."""
        if text:
            self.heard = (self.heard + "\n" + without_question(text, self.question))[-200_000:]


_EMPTY_TYPES = (list, dict, tuple, set, frozenset, str, bytes)
_EMPTY_SHOWN = frozenset({"[]", "{}", "()", "''", '""', "set()", "frozenset()", "b''"})
_NONE_ASKED = re.compile(r"\b(default|defaults|return|returns|returned|value|none)\b", re.I)
"""A question whose answer may be None (a parameter's default, what a function returns)."""


_NON_ANSWERS = frozenset(
    "none|n/a|na|nothing|unknown|not found|no answer|not mentioned|not specified|not stated|not given|"
    "i don't know|i do not know|i cannot tell|cannot tell|i can't tell|i cannot answer|cannot be determined|"
    "no information".split("|")
)
"""Whole answers that say the text did not answer (case and end punctuation aside). `None` as written is
kept for a question that asks for a default or a return value. Measured with the hint follower
(code/128K-where-0): a sub-model given a file's text answered `NONE` and the gate accepted it (rule (c))."""
_NON_ANSWER_TRIM = re.compile(r"^[\s\"'`*.]+|[\s\"'`*.!]+$")


def empty_problem(answer: str, value: object = None, question: str = "") -> str | None:
    """Why an answer is empty (None: it is not): blank text, an empty container, text that only displays
    one (`FINAL("[]")`, `FINAL(str(hits))` of no hits), or None — unless the question asks for a default,
    a return value or a value, which None may be. Judged by the value's exact type and the answer's text,
    never by calling the value's methods (it is the cell's object)."""
    shown = answer.strip()
    empty = not shown or shown in _EMPTY_SHOWN or (type(value) in _EMPTY_TYPES and not value)
    if shown == "None" and not _NONE_ASKED.search(question):
        empty = True
    said = _NON_ANSWER_TRIM.sub("", shown.lower())
    if said in _NON_ANSWERS and shown != "None":
        empty = True  # what a sub-model says when the text it was given does not answer
    if not empty:
        return None
    what = f"it displays as {shown}" if shown else "it is blank"
    return (
        f"the answer is empty ({what}): that is what a search that found nothing gives, not an answer. "
        "Search `context` again (another word of the question; mind upper and lower case), print what it "
        "finds, and end with FINAL of the line or value that answers"
    )


def stated_facts(value: object, files: dict | None = None) -> str:
    """The facts about a context the kernel states to the root (`rootloop.prompt.describe_context`), as text
    the gate takes as evidence: its length, and for a corpus its file count. Not the files' paths: the
    coder model ended "Which file defines `_fold_mime_parameters`?" with the first path it was shown
    (`email/__init__.py`, wrong) four times in one run (issue 27)."""
    size = len(value) if isinstance(value, str | list | tuple | dict) else None
    facts = [f"{size} characters" if isinstance(value, str) else f"{size} items"] if size is not None else []
    if files:
        facts.append(f"{len(files)} files")
    return "\n".join(facts)


def final_arguments(code: str) -> list[ast.expr]:
    """The first argument of every `FINAL(...)` call in a block."""
    tree = _parse(code)
    if tree is None:
        return []
    return [
        node.args[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "FINAL"
        and node.args
    ]


def without_question(output: str, question: str) -> str:
    """`output` without what quotes the question: each of its lines (of `_WINDOW`+ characters) removed
    where it appears, and output lines (as long) that are part of the question dropped."""
    if not question:
        return output
    lines = {ln.strip() for ln in question.splitlines() if len(ln.strip()) >= _WINDOW}
    for line in sorted(lines, key=len, reverse=True):
        output = output.replace(line, " ")
    return "\n".join(
        ln for ln in output.splitlines() if not (len(ln.strip()) >= _WINDOW and ln.strip() in question)
    )


def rejection(how: str, blind_calls: bool, why: str | None = None) -> str:
    """The one message a rejected FINAL feeds back (`why`: the gate's reason, see `FinalGate.problem`;
    `blind_calls`: sub-calls succeeded but none was given part of `context`)."""
    if why is None or why == NOT_DRAWN:
        why = "the sub-calls so far did not include any of `context`" if blind_calls else NOT_DRAWN
    return (
        f"{how}(...) rejected: {why}. A FINAL is accepted when its answer is drawn from `context`: a "
        "value your code computed from `context` (n = ...context... then FINAL(n)), text your code printed "
        "from `context` (write it as FINAL(that text)), or what an llm_query/rlm_query call given part of "
        "`context` answered."
    )
