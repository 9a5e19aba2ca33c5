"""extract_functions: languages, aliases, engines, malformed input, robustness (SPEC-01.13-.17, .20)."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlm_kernel.analysis import AnalysisInputError, extract_functions

ENGINES = ["regex", "exact", "auto"]


def spans(result: list[dict]) -> list[tuple[str, int, int]]:
    return [(r["name"], r["start_line"], r["end_line"]) for r in result]


PYTHON = '''\
import functools


@functools.cache
def top(a, b=1):
    """A docstring that mentions def fake(): inside."""
    x = "def not_a_function(): pass"

    def inner(
        c,
        d,
    ) -> int:
        return c + d

    return inner(a, b)


class Greeter:
    def __init__(self, name):
        self.name = name

    async def greet(self) -> str:
        text = """
def also_not_a_function():
    pass
"""
        return text
    # a trailing comment is not part of the body


def one_liner(x): return x * 2
'''


@pytest.mark.parametrize("engine", ENGINES)
def test_spec_01_13_python_functions_methods_nested_async_decorated(engine: str) -> None:
    got = extract_functions(PYTHON, "python", engine=engine)
    assert spans(got) == [
        ("top", 5, 15),
        ("inner", 9, 13),
        ("__init__", 19, 20),
        ("greet", 22, 27),
        ("one_liner", 31, 31),
    ]
    assert got[0]["signature"] == "def top(a, b=1):"
    assert got[1]["signature"] == "def inner( c, d, ) -> int:"
    assert got[3]["signature"] == "async def greet(self) -> str:"


GO = """\
package demo

// func commented(x int) {}
func Plain(a int, b string) (int, error) {
	s := "func inString() {"
	return 0, nil
}

func (r *Tree[K, V]) Insert(key K, value V) {
	if r == nil {
		return
	}
}

func Generic[T any](x T) T { return x }

func assembly(x int) int

func Multi(
	a int,
	b int,
) map[string]interface{} {
	return nil
}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_spec_01_14_go_functions_methods_generic_receivers(engine: str) -> None:
    got = extract_functions(GO, "go", engine=engine)
    assert spans(got) == [
        ("Plain", 4, 7),
        ("Insert", 9, 13),
        ("Generic", 15, 15),
        ("assembly", 17, 17),
        ("Multi", 19, 24),
    ]
    assert got[1]["signature"] == "func (r *Tree[K, V]) Insert(key K, value V)"


JS = """\
// function commented() {}
function declared(a, b) {
  const s = "function inString() {";
  const re = /function notThis\\(\\) {/g;
  return `${a} function nope() {`;
}

async function* generator() {
  yield 1;
}

const arrow = (x) => x * 2;
const asyncArrow = async (x) => {
  return await x;
};
exports.assigned = function () {
  return 1;
};

class Widget extends Base {
  constructor(props) {
    super(props);
  }
  static create(opts) {
    return new Widget(opts);
  }
  get size() { return 3; }
  handler = (event) => {
    this.go(event);
  };
}

const api = {
  fetch(url) {
    return url;
  },
  'quoted-key': function () {},
  save: async (data) => {
    return data;
  },
};
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_spec_01_14_javascript_declarations_arrows_methods_object_literals(engine: str) -> None:
    got = extract_functions(JS, "javascript", engine=engine)
    assert spans(got) == [
        ("declared", 2, 6),
        ("generator", 8, 10),
        ("arrow", 12, 12),
        ("asyncArrow", 13, 15),
        ("assigned", 16, 18),
        ("constructor", 21, 23),
        ("create", 24, 26),
        ("size", 27, 27),
        ("handler", 28, 30),
        ("fetch", 34, 36),
        ("quoted-key", 37, 37),
        ("save", 38, 40),
    ]


TS = """\
export function parse(input: string): number;
export function parse(input: number): number;
export function parse(input: string | number): number {
  return Number(input);
}

interface Shape {
  area(): number;
  onChange: (value: number) => void;
}

type Handler = (event: Event) => void;

export abstract class Base<T> implements Shape {
  constructor(private readonly name: string) {
    super();
  }
  abstract area(): number;
  protected compute<K extends keyof T>(key: K): Promise<{ value: T[K] }> {
    return this.load(key);
  }
  private handle = async (event: Event): Promise<void> => {
    await this.compute(event);
  };
}

export const generic = <T,>(items: T[]): T[] =>
  items.filter(Boolean);
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_spec_01_14_typescript_overloads_classes_generics_and_types_ignored(engine: str) -> None:
    got = extract_functions(TS, "typescript", engine=engine)
    assert spans(got) == [
        ("parse", 1, 1),
        ("parse", 2, 2),
        ("parse", 3, 5),
        ("constructor", 15, 17),
        ("area", 18, 18),
        ("compute", 19, 21),
        ("handle", 22, 24),
        ("generic", 27, 28),
    ]


def test_spec_01_15_result_dicts_have_exactly_the_four_keys_of_plain_types() -> None:
    for source, lang in ((PYTHON, "python"), (GO, "go"), (JS, "javascript"), (TS, "typescript")):
        for r in extract_functions(source, lang):
            assert set(r) == {"name", "signature", "start_line", "end_line"}
            assert type(r) is dict and type(r["name"]) is str and type(r["signature"]) is str
            assert type(r["start_line"]) is int and type(r["end_line"]) is int
            assert 1 <= r["start_line"] <= r["end_line"]


@pytest.mark.parametrize(
    ("alias", "language"),
    [
        ("py", "python"),
        ("PY", "python"),
        ("golang", "go"),
        ("js", "javascript"),
        ("ts", "typescript"),
        ("TypeScript", "typescript"),
    ],
)
def test_spec_01_14_language_aliases(alias: str, language: str) -> None:
    source = {"python": PYTHON, "go": GO, "javascript": JS, "typescript": TS}[language]
    assert extract_functions(source, alias) == extract_functions(source, language)


def test_unsupported_language_and_bad_arguments_say_what_to_pass() -> None:
    with pytest.raises(
        AnalysisInputError, match="unsupported language 'rust'.*python, go, javascript, typescript"
    ):
        extract_functions("fn main() {}", "rust")
    with pytest.raises(AnalysisInputError, match="content must be a str"):
        extract_functions(b"def f(): pass")
    with pytest.raises(AnalysisInputError, match="engine"):
        extract_functions("def f(): pass", engine="llm")
    with pytest.raises(AnalysisInputError, match="regex"):
        extract_functions("def f(:\n", engine="exact")


def test_spec_01_20_empty_and_whitespace_content() -> None:
    for lang in ("python", "go", "javascript", "typescript"):
        assert extract_functions("", lang) == []
        assert extract_functions("  \n\n", lang) == []


def test_spec_01_17_malformed_python_gives_partial_results() -> None:
    source = (
        "def good(a):\n    return a\n\ndef broken(:\n    pass\n\n"
        "class K:\n    def method(self):\n        pass\n"
    )
    got = extract_functions(source, "python")
    assert spans(got) == [("good", 1, 2), ("broken", 4, 5), ("method", 8, 9)]


def test_spec_01_17_malformed_javascript_keeps_good_functions() -> None:
    source = (
        "function good(a) {\n  return a;\n}\n\nfunction broken(a, b {\n  return;\n\nfunction later() {\n}\n"
    )
    got = extract_functions(source, "javascript")
    names = [r["name"] for r in got]
    assert names[0] == "good" and spans(got)[0] == ("good", 1, 3)
    assert "later" in names


def test_line_numbers_with_mixed_line_endings_and_nul_bytes() -> None:
    source = "def a():\r\n    pass\rdef b():\n    x = '\x00'\r\n    return x\n"
    for engine in ENGINES:
        assert spans(extract_functions(source, "python", engine=engine)) == [("a", 1, 2), ("b", 3, 5)]
    go = "package p\r\nfunc A() {\r}\nfunc B() {\x00}\n"
    assert [(n, s) for n, s, _ in spans(extract_functions(go, "go"))] == [("A", 2), ("B", 4)]


def test_unicode_names_and_content() -> None:
    source = "def grüße(名前):\n    return f'{名前} ☃'\n"
    assert spans(extract_functions(source)) == [("grüße", 1, 2)]
    assert spans(extract_functions(source, engine="regex")) == [("grüße", 1, 2)]


def _per_mb(text: str, language: str) -> float:
    """CPU seconds per MB (CPU, not wall time: other processes share this machine's cores), the best of two
    runs after a warm-up call (the extractors' patterns load on first use: a one-time cost, not per MB)."""
    extract_functions("x", language)
    best = float("inf")
    for _ in range(2):
        t0 = time.process_time()
        extract_functions(text, language)
        best = min(best, time.process_time() - t0)
    return best / (len(text.encode("utf-8", "surrogatepass")) / 1e6)


@pytest.mark.parametrize(
    ("case", "language", "text"),
    [
        ("random bytes", "javascript", os.urandom(300_000).decode("latin-1")),
        ("random bytes", "python", os.urandom(300_000).decode("latin-1")),
        ("unclosed function 100KB", "javascript", "function f(a, b {\n" * 5600),
        ("unclosed function 100KB", "typescript", "function f(a, b {\n" * 5600),
        ("deep braces", "go", "func f() " + "{" * 100_000 + "}" * 100_000),
        ("deep brackets", "python", "x = " + "[" * 100_000),
        (
            "deep nesting",
            "python",
            "".join("    " * i + f"def f{i}():\n" for i in range(90)) + "    " * 90 + "pass\n",
        ),
    ],
)
def test_robustness_pathological_input_stays_under_one_second_per_mb(
    case: str, language: str, text: str
) -> None:
    per_mb = _per_mb(text, language)
    assert per_mb < 1.0 or len(text) < 200_000 and per_mb * len(text) / 1e6 < 0.3, (
        f"{case}: {per_mb:.2f} s/MB"
    )


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "def f(x):",
                "    return x",
                "async def g(",
                "):",
                "function h() {",
                "}",
                "{",
                "(",
                "'",
                '"""',
                "// c",
                "# c",
                "class A:",
                "  m() {}",
                "func (r T) M() {",
                "=>",
                "x = () => 1;",
                "\r",
                "\x00",
                "é",
            ]
        ),
        max_size=60,
    ).map("\n".join),
    st.sampled_from(["python", "go", "javascript", "typescript"]),
    st.sampled_from(ENGINES[::2]),
)
def test_line_numbers_always_lie_within_the_content(source: str, language: str, engine: str) -> None:
    n_lines = max(1, len(source.replace("\r\n", "\n").replace("\r", "\n").split("\n")))
    got = extract_functions(source, language, engine=engine)
    starts = [r["start_line"] for r in got]
    assert starts == sorted(starts)
    for r in got:
        assert 1 <= r["start_line"] <= r["end_line"] <= n_lines
        assert r["name"]


@pytest.mark.parametrize("engine", ENGINES)
def test_go_unicode_names_nested_receivers_and_multiline_type_parameters(engine: str) -> None:
    source = (
        "package p\n"
        "func Äbar(x int) int { return x }\n"
        "func ((*(T1))) m1() {}\n"
        "func _[\n\tA any,\n\tB ~int | ~string,\n](a A, b B) {\n}\n"
        "func\nold() {\n}\n"
    )
    assert spans(extract_functions(source, "go", engine=engine)) == [
        ("Äbar", 2, 2),
        ("m1", 3, 3),
        ("_", 4, 8),
        ("old", 10, 11),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_js_inline_object_methods_parameter_defaults_and_multiline_templates(engine: str) -> None:
    source = (
        "function shortcut(callback, mapper = (issue) => issue.message) {\n"
        "  return { dispose() { callback(); } };\n"
        "}\n"
        "const render = (id) => `\n"
        "  line ${id}\n"
        "`;\n"
    )
    assert spans(extract_functions(source, "javascript", engine=engine)) == [
        ("shortcut", 1, 3),
        ("dispose", 2, 2),
        ("render", 4, 6),
    ]
