"""IPython surfaces that would bypass a cell-level policy, each tried against a real rlm kernel.

Shell commands, every refused magic, get_ipython, user_expressions, the debugger, completion and `obj?`.
"""

from __future__ import annotations

import os
import re
import tempfile

import pytest

from tests.kernel_client import KernelHarness

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
CANARY_KEY = "sk-escape-canary-7d41e0c2b9"
CANARY_FILE_TEXT = "file-canary-5a2f9c81"


class CanaryHarness(KernelHarness):
    """A kernel with a fake API key in its environment and a secret file in its working folder;
    every reply is checked for both."""

    def _check(self, text: str) -> None:
        assert CANARY_KEY not in text and CANARY_FILE_TEXT not in text, text[:2000]

    def execute(self, code: str, *args, **kwargs):  # type: ignore[override]
        ex = super().execute(code, *args, **kwargs)
        self._check(ex.all_text)
        return ex

    def complete(self, code: str, cursor_pos: int | None = None) -> dict:
        reply = super().complete(code, cursor_pos)
        self._check(str(reply))
        return reply

    def inspect(self, code: str, cursor_pos: int | None = None, detail_level: int = 0) -> dict:
        reply = super().inspect(code, cursor_pos, detail_level)
        self._check(str(reply))
        return reply


@pytest.fixture(scope="module")
def rlm_kernel():
    cwd = tempfile.mkdtemp(prefix="rlm-escapes-")
    with open(os.path.join(cwd, "secret.txt"), "w") as fh:
        fh.write(CANARY_FILE_TEXT)
    harness = CanaryHarness(env={"OPENAI_API_KEY": CANARY_KEY, "RLM_SECRET_FILE": "secret.txt"}, cwd=cwd)
    yield harness
    harness.shutdown()


REFUSED_MAGICS = [
    "%run x.py",
    "%load x.py",
    "%loadpy x.py",
    "%env",
    "%env HOME=/tmp",
    "%set_env A=1",
    "%pip install requests",
    "%conda list",
    "%sx ls",
    "%sc x=ls",
    "%system ls",
    "%%bash\nls",
    "%%sh\nls",
    "%%script sh\nls",
    "%%writefile out.txt\nhello",
    "%config IPCompleter.evaluation = 'unsafe'",
    "%store x",
    "%debug",
    "%pdb on",
    "%tb",
    "%cd /",
    "%pwd",
    "%save f 1",
    "%edit",
    "%logstart",
    "%alias ll ls -l",
    "%load_ext autoreload",
    "%xmode Verbose",
    "%reset -f",
    "%%html\n<b>x</b>",
    "%%javascript\nalert(1)",
    "%psearch a*",
    "%pdef len",
    "%psource len",
    "%macro m 1",
    "%rerun",
    "%recall 1",
    "%bookmark x",
    "%killbgscripts",
    "%lsmagic",
    "%prun 1",
    "%%capture\n1",
    "%pycat x",
    "%matplotlib inline",
    "%who_ls",
    "%hist -f out.py",
    "%%timeit_typo\n1",
]


def _one_line_refusal(ex, snippet: str) -> None:
    assert ex.status == "error", str(ex)
    assert ex.error_name == "SandboxError", str(ex)
    assert "\n" not in ex.error_value, ex.error_value
    assert ex.error_value.startswith("line "), ex.error_value
    assert f"'{snippet}'" in ex.error_value or repr(snippet) in ex.error_value, ex.error_value
    text = ANSI.sub("", "\n".join(ex.traceback))
    assert "site-packages" not in text and "rlm_kernel" not in text, text


@pytest.mark.parametrize("cell", REFUSED_MAGICS)
def test_refused_magic(rlm_kernel: KernelHarness, cell: str) -> None:
    ex = rlm_kernel.execute(cell)
    _one_line_refusal(ex, cell.splitlines()[0])
    assert "not available in the rlm kernel" in ex.error_value


@pytest.mark.parametrize(
    ("cell", "snippet", "line"),
    [
        ("!ls", "!ls", 1),
        ("x = !ls", "!ls", 1),
        ("a = 1\nb = 2\n!ls -la /", "!ls -la /", 3),
        ("for i in range(2):\n    !echo hi", "!echo hi", 2),
        ("!!ls", "!ls", 1),
    ],
)
def test_shell_commands_refused(rlm_kernel: KernelHarness, cell: str, snippet: str, line: int) -> None:
    ex = rlm_kernel.execute(cell)
    _one_line_refusal(ex, snippet)
    assert ex.error_value.startswith(f"line {line}: ")
    assert "shell commands are not available in the rlm kernel" in ex.error_value


def test_refused_cell_runs_nothing(rlm_kernel: KernelHarness) -> None:
    rlm_kernel.execute("marker = 'before'")
    ex = rlm_kernel.execute("marker = 'after'\n!touch should-not-exist")
    assert ex.error_name == "SandboxError"
    assert rlm_kernel.execute("marker").result == "'before'"
    assert not os.path.exists(os.path.join(rlm_kernel.cwd, "should-not-exist"))


@pytest.mark.parametrize(
    "cell",
    [
        "get_ipython()",
        "get_ipython().system('ls')",
        "ip = get_ipython",
        "get_ipython().run_line_magic('env', '')",
        "get_ipython().ev('1')",
        "exit()",
        "quit()",
        "open('/etc/passwd').read()",
        "__import__('os')",
        "In.__class__",
    ],
)
def test_ipython_escape_names(rlm_kernel: KernelHarness, cell: str) -> None:
    ex = rlm_kernel.execute(cell)
    assert ex.status == "error" and ex.error_name == "SandboxError", str(ex)
    assert "\n" not in ex.error_value


def test_handwritten_magic_call_goes_through_the_allowlist(rlm_kernel: KernelHarness) -> None:
    # indistinguishable from `%time 1 + 1` once IPython has transformed the cell: allowed, body restricted
    assert rlm_kernel.execute("get_ipython().run_line_magic('time', '1 + 1')").ok
    ex = rlm_kernel.execute("get_ipython().run_line_magic('time', '().__class__')")
    assert ex.error_name == "SandboxError"
    ex = rlm_kernel.execute("get_ipython().run_line_magic('env', '')")
    assert ex.error_name == "SandboxError"
    ex = rlm_kernel.execute("get_ipython().run_line_magic(*['env', ''])")
    assert ex.error_name == "SandboxError"


def test_history_file_option_refused(rlm_kernel: KernelHarness) -> None:
    rlm_kernel.execute("1 + 1")
    target = os.path.join(tempfile.mkdtemp(), "hist.py")
    ex = rlm_kernel.execute(f"%history -f {target}")
    assert ex.status == "error" and ex.error_name == "SandboxError", str(ex)
    assert not os.path.exists(target)
    ex = rlm_kernel.execute("%history -n -l 2")
    assert ex.ok, str(ex)


def test_user_expressions_are_restricted(rlm_kernel: KernelHarness) -> None:
    rlm_kernel.execute("ux = [1, 2, 3]")
    ex = rlm_kernel.execute(
        "pass",
        user_expressions={
            "ok": "len(ux) * 2",
            "dunder": "ux.__class__",
            "import": "__import__('os').getcwd()",
            "shell": "get_ipython()",
            "eval": "eval('1')",
            "getattr": "getattr(ux, '__class__')",
            "statement": "ux.append(4); ux",
            "side": "ux.append(99)",
        },
    )
    assert ex.ok, str(ex)
    out = ex.user_expressions
    assert out["ok"]["status"] == "ok" and out["ok"]["data"]["text/plain"] == "6"
    for key in ("dunder", "import", "shell", "eval", "statement"):
        assert out[key]["status"] == "error", (key, out[key])
        assert out[key]["ename"] == "SandboxError", (key, out[key])
    assert out["getattr"]["status"] == "error", out["getattr"]
    assert "class" not in str(out["getattr"].get("data", "")).lower()
    # the one side-effecting but allowed expression ran restricted; the refused ones never ran
    assert rlm_kernel.execute("ux").result == "[1, 2, 3, 99]"


DAP_REQUESTS = [
    {
        "type": "request",
        "seq": 1,
        "command": "initialize",
        "arguments": {"clientID": "test", "adapterID": "x"},
    },
    {"type": "request", "seq": 2, "command": "attach", "arguments": {}},
    {"type": "request", "seq": 3, "command": "evaluate", "arguments": {"expression": "__import__('os')"}},
    {"type": "request", "seq": 4, "command": "debugInfo", "arguments": {}},
    {"type": "request", "seq": 5, "command": "inspectVariables", "arguments": {}},
]


@pytest.mark.parametrize("request_", DAP_REQUESTS, ids=lambda r: r["command"])
def test_debug_request_refused(rlm_kernel: KernelHarness, request_: dict) -> None:
    reply = rlm_kernel.request("debug_request", request_, channel="control")
    content = reply["content"]
    assert reply["msg_type"] == "debug_reply"
    assert content["success"] is False
    assert "debugger is not available" in content["message"]
    assert content["request_seq"] == request_["seq"]
    assert rlm_kernel.execute("1 + 1").result == "2"


def test_kernel_info_and_spec_advertise_no_debugger(rlm_kernel: KernelHarness) -> None:
    reply = rlm_kernel.request("kernel_info_request")
    assert "debugger" not in reply["content"].get("supported_features", [])
    assert reply["content"]["implementation"] == "rlm_kernel"
    assert rlm_kernel.km.kernel_spec.metadata.get("debugger") is False


@pytest.mark.parametrize(
    "code",
    [
        "().__cl",
        "().__",
        "()._",
        "ux.__",
        "ux._",
        "zip.__",
        "_",
        "__bui",
        "get_ip",
        "ope",
        "rlm",
        "In.__cl",
        "(1).__class__.__bas",
    ],
)
def test_completion_offers_no_private_names(rlm_kernel: KernelHarness, code: str) -> None:
    rlm_kernel.execute("ux = [1, 2]")
    reply = rlm_kernel.complete(code)
    assert reply["status"] == "ok"
    for match in reply["matches"]:
        assert not match.startswith("_") and " " not in match, reply["matches"]
        assert match not in ("get_ipython", "open", "rlm line magic"), reply["matches"]


def test_completion_of_public_names(rlm_kernel: KernelHarness) -> None:
    rlm_kernel.execute(
        "cdict = {'a': 1}\nclass Box:\n    def __init__(self):\n        self.width = 3\nbox = Box()"
    )
    assert rlm_kernel.complete("cdi")["matches"] == ["cdict"]
    reply = rlm_kernel.complete("cdict.ke")
    assert reply["matches"] == ["keys"]
    assert reply["cursor_start"] == len("cdict.")
    assert "width" in rlm_kernel.complete("box.")["matches"]
    assert set(rlm_kernel.complete("%ti")["matches"]) == {"%time", "%timeit"}
    assert rlm_kernel.complete("%ru")["matches"] == []
    assert rlm_kernel.complete("sorted(cdict).ap")["matches"] == []  # never evaluated
    assert rlm_kernel.complete("cdict['a'].re")["matches"] == []
    assert rlm_kernel.complete("%%ti")["matches"] == ["%%time", "%%timeit"]


@pytest.mark.parametrize(
    "name",
    [
        "().__class__",
        "ux.__class__",
        "ux.__class__.__bases__",
        "zip.__self__",
        "In.__class__",
        "box.__dict__",
        "__builtins__",
        "_getattr_",
        "ux.append.__self__",
    ],
)
def test_inspect_of_guarded_paths(rlm_kernel: KernelHarness, name: str) -> None:
    rlm_kernel.execute("ux = [1]\nclass Box:\n    pass\nbox = Box()")
    reply = rlm_kernel.inspect(name)
    assert reply["status"] == "ok"
    assert reply["found"] is False, reply
    ex = rlm_kernel.execute(f"{name}?")
    assert ex.status == "ok", str(ex)
    assert not ex.reply.get("payload"), ex.reply
    assert "not found" in ex.stdout


@pytest.mark.parametrize("cell", ["%pinfo a*", "%pinfo *", "%pinfo2 _* -a", "a*?"])
def test_wildcard_search_refused(rlm_kernel: KernelHarness, cell: str) -> None:
    ex = rlm_kernel.execute(cell)
    assert ex.error_name == "SandboxError", str(ex)
    assert "getattr" not in ex.all_text


def test_inspect_runs_user_reprs_under_limits(rlm_kernel_factory) -> None:
    harness = rlm_kernel_factory(env={"RLM_CPU_SECONDS": "1"})
    harness.execute(  # a repr that never returns: Shift-Tab on it must still get a reply
        "class Slow:\n    def __repr__(self):\n        while True:\n            pass\n\nslow = Slow()"
    )
    reply = harness.inspect("slow")
    assert reply["status"] == "error" and reply["ename"] == "CellTimeout", reply
    assert harness.execute("1 + 1", timeout=30).result == "2"


def test_inspect_and_help_of_public_names(rlm_kernel: KernelHarness) -> None:
    rlm_kernel.execute("data = {'k': [1, 2]}")
    reply = rlm_kernel.inspect("data")
    assert reply["found"] is True and "dict" in reply["data"]["text/plain"]
    assert rlm_kernel.inspect("data.keys")["found"] is True
    ex = rlm_kernel.execute("len?")
    assert ex.ok and ex.reply["payload"], str(ex)
    assert "Return the number of items" in str(ex.reply["payload"][0]["data"])
    printed = rlm_kernel.execute("print?")  # issue 21: a newcomer saw "not found" here
    assert printed.ok and printed.reply["payload"], str(printed)
    assert "Prints the values to a stream" in str(printed.reply["payload"][0]["data"])
    assert rlm_kernel.inspect("print")["found"] is True
    assert rlm_kernel.inspect("%time")["found"] is True
    assert rlm_kernel.inspect("%run")["found"] is False


@pytest.mark.parametrize(
    "cell",
    [
        "!cat secret.txt",
        "%load secret.txt",
        "%pycat secret.txt",
        "%env OPENAI_API_KEY",
        "%sx env",
        "%%bash\nenv",
        "open('secret.txt').read()",
        "%run secret.txt",
    ],
)
def test_canaries_never_leak(rlm_kernel: KernelHarness, cell: str) -> None:
    ex = rlm_kernel.execute(cell)  # CanaryHarness asserts the canaries are absent from every reply
    assert ex.status == "error"
