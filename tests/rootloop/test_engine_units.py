"""In-process tests of the pure parts of issue 17's engine features: answer-type conversion, tool signatures
and refusals, the answer-dict literal rule, conversation joining."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rlm_kernel.repl.state import RunOptions, RunTracker
from rlm_kernel.rootloop import answer_dict, answer_types, continuation, prompt_control, tools

_SENTINEL = object()


@dataclass
class Pair:
    name: str
    count: int


@pytest.mark.parametrize(
    ("value", "t", "expected"),
    [
        ("42", int, 42),
        (42.0, int, 42),
        (" 3.5 ", float, 3.5),
        (3, float, 3.0),
        ("TRUE", bool, True),
        ("[1, 2]", list[int], [1, 2]),
        ("['a', 'b']", list[str], ["a", "b"]),
        ((1, 2), list[int], [1, 2]),
        ('{"1": [2]}', dict[int, list[int]], {1: [2]}),
        ({"a": 1}, dict, {"a": 1}),
        ('{"name": "x", "count": "3"}', Pair, Pair("x", 3)),
    ],
)
def test_conversions(value: object, t: object, expected: object) -> None:
    assert answer_types.convert(value, t) == expected


@pytest.mark.parametrize(
    ("value", "t", "reason"),
    [
        (True, int, "True is not an int"),
        (1.5, int, "1.5 is not an int"),
        ("seven", int, "'seven' is not JSON"),
        (7, str, "got a int, not a str"),
        ([1, "x"], list[int], "item 1: 'x' is not an int"),
        ({"name": "x", "cnt": 1}, Pair, "Pair has no field 'cnt'"),
        ({"name": "x"}, Pair, "missing 1 required positional argument"),
        ([object()], list, "pass plain data"),
    ],
)
def test_rejections_say_why(value: object, t: object, reason: str) -> None:
    with pytest.raises(answer_types.AnswerTypeError) as info:
        answer_types.convert(value, t)
    assert reason in str(info.value)


def test_unsupported_types_are_refused() -> None:
    for t in (set, list[int, str], tuple[int], object, "int"):
        with pytest.raises(ValueError, match="returns"):
            answer_types.check_type(t)
    assert answer_types.check_type(dict[str, list[Pair]]) == dict[str, list[Pair]]
    assert "Pair has the fields name: str, count: int" in answer_types.prompt_line(Pair)


def test_only_notebook_functions_can_be_tools() -> None:
    def local(x: int) -> int:
        return x

    with pytest.raises(tools.ToolError, match="defined with `def` or `lambda` in a notebook cell"):
        tools.check_tools({"local": local})  # compiled by Python, not by the sandbox
    with pytest.raises(tools.ToolError, match="reserves"):
        tools.check_tools({"FINAL_VAR": local})
    with pytest.raises(tools.ToolError, match="builtin"):
        tools.check_tools({"sorted": local})
    with pytest.raises(tools.ToolError, match="underscore"):
        tools.check_tools({"_x": local})
    with pytest.raises(tools.ToolError, match="dict"):
        tools.check_tools("local")


def test_signature_from_the_code_object() -> None:
    def f(a: int, b: str = "x", *rest, key: list[int] | None = None, flag=True, **more) -> dict[str, int]:
        """Doc line."""

    text = tools.signature("f", f)
    assert (
        text
        == "f(a: int, b: str = 'x', *rest, key: list[int] | None = None, flag=True, **more) -> dict[str, int]"
    )

    def g(x, *, y=_SENTINEL):
        pass

    assert tools.signature("g", g) == "g(x, *, y=…)"
    described = tools.describe((("f", f, None), ("g", g, None)))
    assert "- `f(a: int" in described and "Doc line." in described and "(no docstring)" in described


def test_answer_dict_literal_content_is_not_computed() -> None:
    tracker = RunTracker()
    tracker.gate.code_read_context = True
    ns = {"answer": {"content": "seven", "ready": True}}
    answer_dict.check(ns, tracker, "answer['content'] = 'seven'\nanswer['ready'] = True")
    assert not tracker.final_set and ns["answer"]["ready"] is False and "rejected" in tracker.rejections[0]
    ns["answer"] = {"content": 7, "ready": True}
    answer_dict.check(ns, tracker, "answer['content'] = len(context)\nanswer['ready'] = True")
    assert tracker.final_set and tracker.final == "7" and tracker.final_value == 7
    other = RunTracker()
    answer_dict.check({"answer": "not a dict"}, other, "")
    assert not other.final_set and not other.rejections


def test_consecutive_user_messages_are_joined() -> None:
    joined = continuation.join_users(
        [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "c"},
        ]
    )
    assert joined == [{"role": "user", "content": "a\n\nb"}, {"role": "assistant", "content": "c"}]


def test_prompt_parts_in_order() -> None:
    opts = RunOptions(system_prompt="BASE", system_prompt_extra="EXTRA", returns=list[int])
    text = prompt_control.build(opts, 16_384, 1024)
    assert text.startswith("BASE\n\nThe answer must be a list[int]") and text.rstrip().endswith("EXTRA")
    assert "16,384 tokens" in prompt_control.build(RunOptions(), 16_384, 1024)


def test_an_answer_left_ready_does_not_end_the_next_run() -> None:
    tracker = RunTracker()
    tracker.gate.code_read_context = True
    ns = {"answer": {"content": 5, "ready": True}}  # left by an earlier run (a follow-up's namespace)
    armed = answer_dict.before(ns)
    answer_dict.check(ns, tracker, "x = 1", armed)
    assert not tracker.final_set
    answer_dict.check(ns, tracker, "answer['content'] = len(context)\nanswer['ready'] = True", armed)
    assert tracker.final_set and tracker.final == "5"
