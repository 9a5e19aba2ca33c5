"""The unconfined processes treat the kernel as hostile: with the sandbox policy off (a full escape inside the
kernel process, only the OS layer left), raw Python in a cell forges broker frames, floods the supervisor,
plants modules, reads the settings file and rewrites the response cache — and the broker, the supervisor and
the launcher keep the start-time configuration. Honest controls run beside each attack."""

from __future__ import annotations

import sqlite3
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker.procs import broker_pids, children
from tests.confine.test_os_layer import REASON
from tests.kernel_client import KernelHarness, ok
from tests.llm_server import LLMTestServer

pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

KEY_CANARY = "sk-file-canary-0123456789abcdef"

# Attacker's prelude: the kernel's own broker link, driven with forged frames.
FORGE = textwrap.dedent(
    """
    from rlm_kernel.llm import event_loop
    from rlm_kernel.llm.session import current_session
    from rlm_kernel.llm.providers.base import ChatRequest
    link = current_session().link
    assert link is not None, "no broker link"

    def engine(**over):
        fields = {"provider": "openai", "base_url": BASE, "proxy": None,
                  "api_key": "broker-key-ref:RLM_API_KEY",
                  "concurrency": 4, "max_connections": 4, "max_retries": 0, "timeout": 10.0,
                  "connect_timeout": 5.0, "retry_after_cap": 1.0, "cache": "off", "cache_dir": "/tmp",
                  "prices": {}, "transport": "aiohttp"}
        fields.update(over)
        return link.request("engine", {"fields": fields})["engine"]

    def batch(eid, n, scope, text="forged"):
        frames = []
        req = ChatRequest(model="m", messages=({"role": "user", "content": text},), max_tokens=8)
        event_loop.submit(link.batch(eid, [req] * n, scope, 1, frames.append)).result(60)
        answered = sum(1 for f in frames if "item" in f and "response" in f)
        refused = sum(1 for f in frames if "item" in f and (f.get("error") or {}).get("kind") == "budget")
        return answered, refused

    def chain(sid, **limits):
        return {"budgets": [{"id": sid, "label": "forged", "limits": limits, "elapsed": 0.0, "used": {}}]}

    def drop_broker():
        # the kernel cannot signal its broker (Landlock scoping) but can close its socket: the broker exits
        # and the next call asks the supervisor for a new one
        event_loop.run_on_loop(_close()).result(10)
        import time
        deadline = time.monotonic() + 30
        while link._writer is not None and time.monotonic() < deadline:
            time.sleep(0.05)

    async def _close():
        link._writer.close()
    """
)


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as s:
        yield s


@pytest.fixture(autouse=True)
def _fresh(server: LLMTestServer) -> None:
    server.reset()


def _kernel(server: LLMTestServer, tmp: Path, remove: tuple[str, ...] = (), **env: str) -> KernelHarness:
    notebook = tmp / "notebook"
    notebook.mkdir(exist_ok=True)
    full = {
        "RLM_UNSAFE_DISABLE_POLICY": "1",
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": "sk-hostile-test",
        "RLM_MODEL": "m",
        "RLM_CACHE": "off",
        "XDG_CONFIG_HOME": str(tmp / "no-config"),
        "XDG_STATE_HOME": str(tmp / "state"),
        **env,
    }
    for name in remove:
        full.pop(name, None)
    gone = ("RLM_CONFIG", "OPENAI_API_KEY", "RLM_PROVIDER", *remove)
    kernel = KernelHarness(env=full, remove_env=gone, cwd=str(notebook))
    ok(kernel, f"BASE = {server.openai_base_url!r}\n" + FORGE)
    return kernel


def test_forged_chains_meet_the_start_time_budget(server: LLMTestServer, tmp_path: Path) -> None:
    kernel = _kernel(server, tmp_path, RLM_BUDGET_MAX_CALLS="3")
    try:
        ok(kernel, "llm_query('honest')")
        assert len(server.requests) == 1  # honest control: a call within the budget
        # a chain with a fresh id and no limits, then more fresh ids, then no chain at all
        first = ok(kernel, "eid = engine(); print(batch(eid, 4, chain('bfresh1')))").stdout
        assert "(2, 2)" in first, first
        again = ok(
            kernel,
            "print(batch(eid, 2, chain('bfresh2')), batch(eid, 2, {}),"
            " batch(eid, 2, chain('b3', max_calls=99)))",
        )
        assert again.stdout.strip() == "(0, 2) (0, 2) (0, 2)", again
        # a new broker (the kernel made the old one exit) keeps the session's spending
        after = ok(kernel, "drop_broker(); print(batch(engine(), 2, chain('bfresh4')))").stdout
        assert "(0, 2)" in after, after
        assert len(server.requests) == 3
        # the honest path reports the start-time limit
        refused = kernel.execute("llm_query('honest again')")
        assert not refused.ok and "max_calls" in refused.all_text, refused
        # %rlm set may tighten a start-time limit, never raise it
        raised = kernel.execute("%rlm set budget_max_calls=100")
        assert not raised.ok and "may only be tightened" in raised.all_text, raised
        ok(kernel, "%rlm set budget_max_calls=2")
    finally:
        kernel.shutdown()


def test_forged_engine_settings_are_refused(server: LLMTestServer, tmp_path: Path) -> None:
    outside = tmp_path / "outside-cache"
    start_cache = tmp_path / "start-cache"
    kernel = _kernel(server, tmp_path, RLM_CACHE="readwrite", RLM_CACHE_DIR=str(start_cache))
    try:
        probe = (
            "def tried(**over):\n"
            "    try:\n"
            "        engine(**over)\n"
            "    except Exception as exc:\n"
            "        return str(exc)[:200]\n"
            "    return 'accepted'\n"
        )
        ok(kernel, probe)
        for over, words in (
            (f"cache='readwrite', cache_dir={str(outside)!r}", "refused cache_dir"),
            ("cache='readwrite', cache_dir='/'", "refused cache_dir"),
            ("max_retries=10**6", "refused max_retries"),
            ("concurrency=-1", "refused concurrency"),
            ("cache='sideways'", "refused cache"),
            ("base_url='http://127.0.0.1:9/v1'", "not configured"),
        ):
            out = ok(kernel, f"print(tried({over}))").stdout
            assert words in out, (over, out)
        assert not outside.exists()  # nothing was made outside the start-time cache place
        # honest control: the start-time cache dir (and a folder below it) is accepted
        assert (
            "accepted"
            in ok(kernel, f"print(tried(cache='readwrite', cache_dir={str(start_cache / 'sub')!r}))").stdout
        )
        ok(kernel, "llm_query('recorded')")
        assert (start_cache / "llm-cache.sqlite3").is_file()
    finally:
        kernel.shutdown()


def test_a_flood_of_supervisor_requests_stays_capped(server: LLMTestServer, tmp_path: Path) -> None:
    kernel = _kernel(server, tmp_path)
    try:
        ok(kernel, "llm_query('before')")  # honest control
        kernel_pid = kernel.km.provisioner.process.pid
        flood = (
            "import time\n"
            "c = link._control\n"
            "for i in range(250):\n"
            "    c.send(b's')\n"
            "c.send(b'x' * 4000)\n"  # malformed requests: dropped without forking
            "time.sleep(3)\n"
        )
        ok(kernel, flood, timeout=120)
        most = 0
        for _ in range(20):
            most = max(most, len(broker_pids(kernel_pid)))
            time.sleep(0.1)
        assert most <= 1, most
        (supervisor,) = children(kernel_pid)  # still there, serving
        assert supervisor
    finally:
        kernel.shutdown()


TRY = "try:\n    {what}\n    print('ALLOWED')\nexcept OSError as e:\n    print('DENIED', e.errno)\n"
PLANT = "import os\nopen(os.path.join({marks!r}, {name!r} + '-' + str(os.getpid())), 'w').close()\n"


def test_modules_planted_in_the_notebook_dir_and_a_root_are_never_imported(
    server: LLMTestServer, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    notebook = tmp_path / "notebook"
    root = tmp_path / "root"
    for folder in (notebook, root):
        folder.mkdir()
        for name in ("json", "uuid", "pandas", "socket", "asyncio", "rlm_kernel"):
            target = folder / name / "__init__.py" if name == "rlm_kernel" else folder / f"{name}.py"
            target.parent.mkdir(exist_ok=True)
            target.write_text(PLANT.format(marks=str(marks), name=name))
    kernel = _kernel(server, tmp_path, RLM_CONTEXT_ROOTS=str(root))
    try:
        out = ok(
            kernel, "import pandas, uuid, json\nprint(pandas.__file__, uuid.__file__, json.__file__)"
        ).stdout
        assert str(notebook) not in out and str(root) not in out, out
        ok(kernel, "llm_query('the broker imports its modules now')")
        # an escaped kernel writes a module where the next broker would look, then makes a new broker
        for name in ("uuid", "hmac", "sqlite3"):
            module = PLANT.format(marks=str(marks), name=name)
            ok(kernel, f"open({str(notebook / (name + '.py'))!r}, 'w').write({module!r})")
        ok(kernel, "drop_broker()\nllm_query('a new broker')")
        assert len(server.requests) == 2
        assert not list(marks.iterdir()), sorted(p.name for p in marks.iterdir())
    finally:
        kernel.shutdown()


def test_the_settings_file_and_the_cache_key_are_denied_to_the_kernel(
    server: LLMTestServer, tmp_path: Path
) -> None:
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    settings = notebook / "rlm-settings.toml"  # inside the notebook's directory, a context root
    settings.write_text(f'api_key = "{KEY_CANARY}"\nmax_tokens = 77\n')
    cache = tmp_path / "cache"
    kernel = _kernel(
        server,
        tmp_path,
        remove=("RLM_API_KEY",),
        RLM_CONFIG=str(settings),
        RLM_CACHE="readwrite",
        RLM_CACHE_DIR=str(cache),
    )
    try:
        ok(kernel, "llm_query('records a key and an entry')")  # honest control: the file's key is used
        sent = {k.lower(): v for k, v in server.requests[-1].headers.items()}
        assert sent.get("authorization") == f"Bearer {KEY_CANARY}", sent
        shown = ok(kernel, "%rlm show").all_text
        assert "77" in shown, shown  # the file's settings reach the kernel (without its key)
        state = tmp_path / "state" / "rlm-kernel" / "broker"
        assert (state / "cache-key").is_file()
        for target in (
            settings,
            state / "cache-key",
            cache / "llm-cache.sqlite3",
            cache / "llm-cache.sqlite3-wal",
        ):
            out = ok(kernel, TRY.format(what=f"open({str(target)!r}, 'rb').read()")).stdout
            assert "DENIED" in out, (target, out)
        written = ok(kernel, TRY.format(what=f"open({str(cache / 'x')!r}, 'w')")).stdout
        assert "DENIED" in written
    finally:
        kernel.shutdown()


def _rewrite(cache_file: Path, text: str, tag: str | None = "keep") -> str:
    return (
        "import sqlite3\n"
        f"c = sqlite3.connect({str(cache_file)!r}, isolation_level=None)\n"
        f"c.execute('UPDATE entries SET text = ?', ({text!r},))\n"
        + ("" if tag == "keep" else f"c.execute('UPDATE entries SET tag = ?', ({tag!r},))\n")
        + "c.close()\n"
    )


def test_a_cache_entry_the_kernel_rewrote_is_refused(server: LLMTestServer, tmp_path: Path) -> None:
    cache = tmp_path / "notebook" / "cache"  # a cache inside a context root: the kernel can write the file
    kernel = _kernel(server, tmp_path, RLM_CACHE="readwrite", RLM_CACHE_DIR=str(cache))
    try:
        first = ok(kernel, "print(llm_query('same question'))").stdout
        assert len(server.requests) == 1
        assert "same question" in first, first
        ok(kernel, "print(llm_query('same question'))")
        assert len(server.requests) == 1  # honest control: a hit
        for tag in ("keep", None, "0" * 64):
            ok(kernel, _rewrite(cache / "llm-cache.sqlite3", "POISONED", tag))
            out = ok(kernel, "print(llm_query('same question'))").stdout
            assert "POISONED" not in out, (tag, out)
        assert len(server.requests) == 4  # each refused entry was fetched again (and recorded anew)
    finally:
        kernel.shutdown()


def test_a_replay_is_served_from_the_start_time_copy(server: LLMTestServer, tmp_path: Path) -> None:
    cache = tmp_path / "notebook" / "recorded"
    recorder = _kernel(server, tmp_path, RLM_CACHE="readwrite", RLM_CACHE_DIR=str(cache))
    try:
        ok(recorder, "llm_query('recorded question')")
    finally:
        recorder.shutdown()
    # committed recordings carry no tag of this machine's broker: strip them, as a recording made elsewhere
    with sqlite3.connect(cache / "llm-cache.sqlite3") as conn:
        conn.execute("UPDATE entries SET tag = NULL")
    server.reset()
    kernel = _kernel(server, tmp_path, RLM_CACHE="replay", RLM_CACHE_DIR=str(cache))
    try:
        honest = ok(kernel, "print(llm_query('recorded question'))").stdout
        assert "POISONED" not in honest and honest.strip()
        ok(kernel, _rewrite(cache / "llm-cache.sqlite3", "POISONED", None))
        out = ok(kernel, "print(llm_query('recorded question'))").stdout
        assert out == honest, out  # served from the copy made before the kernel ran
        assert not server.requests  # replay never sends
    finally:
        kernel.shutdown()


@pytest.mark.parametrize("inside_root", [False, True], ids=["home-outside", "home-is-a-root"])
def test_the_default_cache_and_the_key_are_denied_even_inside_a_root(
    server: LLMTestServer, tmp_path: Path, inside_root: bool
) -> None:
    notebook = tmp_path / "notebook"
    (notebook / "data").mkdir(parents=True)
    home = notebook if inside_root else tmp_path / "home"  # a notebook in ~ makes ~ a context root
    kernel = _kernel(
        server,
        tmp_path,
        RLM_CACHE="readwrite",
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
    )
    try:
        ok(kernel, "llm_query('default cache')")  # honest control: recorded in the per-user default
        cached = list((home / ".cache" / "rlm-kernel" / "responses").glob("*/llm-cache.sqlite3"))
        assert len(cached) == 1, cached
        key = home / ".local" / "state" / "rlm-kernel" / "broker" / "cache-key"
        for target in (cached[0], key):
            out = ok(kernel, TRY.format(what=f"open({str(target)!r}, 'rb').read()")).stdout
            assert "DENIED" in out, (target, out)
        out = ok(kernel, TRY.format(what=f"open({str(cached[0].parent / 'planted')!r}, 'w')")).stdout
        assert "DENIED" in out, out
        # honest control: the rest of the root stays writable
        out = ok(
            kernel, TRY.format(what=f"open({str(notebook / 'data' / 'saved.txt')!r}, 'w').write('x')")
        ).stdout
        assert "ALLOWED" in out, out
        ok(kernel, "llm_query('default cache')")
        assert len(server.requests) == 1  # and the broker still serves its recording
    finally:
        kernel.shutdown()


def test_code_inside_a_root_stays_read_only(server: LLMTestServer, tmp_path: Path) -> None:
    """A root that holds our package (an editable checkout) and the venv: readable, never writable."""
    import sysconfig

    import rlm_kernel

    package = Path(rlm_kernel.__file__).resolve().parent
    checkout = package.parent
    site = Path(sysconfig.get_paths()["purelib"])
    kernel = _kernel(server, tmp_path, RLM_CONTEXT_ROOTS=str(checkout))
    try:
        for target in (package / "broker" / "planted.py", package / "planted.py", site / "planted.py"):
            out = ok(kernel, TRY.format(what=f"open({str(target)!r}, 'w').write('x')")).stdout
            assert "DENIED" in out, (target, out)
            assert not target.exists()
        out = ok(kernel, TRY.format(what=f"open({str(package / '__init__.py')!r}).read()")).stdout
        assert "ALLOWED" in out, out  # code stays readable
        shown = ok(kernel, "%rlm security").all_text
        assert str(checkout) in shown, shown
    finally:
        kernel.shutdown()


def test_where_jupyter_and_python_read_launch_code_is_never_writable(
    server: LLMTestServer, tmp_path: Path
) -> None:
    """A notebook in ~ makes ~ a root: the kernelspecs (the Jupyter server runs their argv with the keys), the
    Jupyter config (the server's own *_config.py) and other kernels' connection files stay out of reach."""
    home = tmp_path / "notebook"  # the notebook's directory is ~
    kernels = home / ".local" / "share" / "jupyter" / "kernels"
    (kernels / "python3").mkdir(parents=True)
    spec = kernels / "python3" / "kernel.json"
    spec.write_text('{"argv": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]}')
    (home / ".jupyter").mkdir()
    runtime = home / ".local" / "share" / "jupyter" / "runtime"
    runtime.mkdir()
    other = runtime / "kernel-other.json"
    other.write_text('{"key": "another kernel\'s signing key"}')
    (home / "data").mkdir()
    jupyter_env = ("JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH",
                   "JUPYTER_RUNTIME_DIR", "XDG_DATA_HOME")  # fmt: skip
    kernel = _kernel(server, tmp_path, remove=jupyter_env, HOME=str(home))
    try:
        for what in (
            f"open({str(spec)!r}, 'w').write('{{}}')",  # rewrite a kernelspec's argv
            f"open({str(kernels / 'evil-kernel.json')!r}, 'w')",
            f"open({str(home / '.jupyter' / 'jupyter_server_config.py')!r}, 'w')",
            f"open({str(other)!r}).read()",  # another kernel's key
        ):
            out = ok(kernel, TRY.format(what=what)).stdout
            assert "DENIED" in out, (what, out)
        assert spec.read_text().startswith('{"argv"')
        # honest control: the rest of the root stays writable, the kernel still calls its model
        saved = TRY.format(what=f"open({str(home / 'data' / 'saved.txt')!r}, 'w').write('x')")
        assert "ALLOWED" in ok(kernel, saved).stdout
        ok(kernel, "llm_query('from a notebook in ~')")
    finally:
        kernel.shutdown()
