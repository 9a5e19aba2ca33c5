"""Secret files beside the notebook are not context (issue 12, hole 8), in process and through a real kernel.

`load_context` refuses well-known secret files and skips them, with a note, in directory and glob loads,
unless the person's own cell passes `allow_secrets=True` (model code cannot: see test_model_code.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.errors import ContextError
from tests.kernel_client import KernelHarness

CANARY = "secret-canary-5be0d2"
SECRET_FILES = [
    ".env",
    ".env.local",
    ".envrc",
    ".netrc",
    ".pypirc",
    ".git-credentials",
    "server.pem",
    "private.key",
    "id_rsa",
    "id_ed25519",
    "id_ed25519.pub",
    ".git/config",
    "sub/.env.production",
    "sub/tls/cert.pem",
]
ORDINARY_FILES = ["notes.txt", "sub/data.csv", "id_map.csv", "keys.md", "environment.txt", "sub/readme.md"]


def populate(root: Path) -> None:
    for name in SECRET_FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{name}: {CANARY}\n")
    for name in ORDINARY_FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"ordinary {name}\n")
    os.symlink(root / ".env", root / "innocent.txt")


@pytest.mark.parametrize("name", SECRET_FILES)
def test_secret_names_are_recognised(name: str) -> None:
    assert ctxmod.is_secret_file(name)


@pytest.mark.parametrize("name", ORDINARY_FILES)
def test_ordinary_names_are_not_secrets(name: str) -> None:
    assert not ctxmod.is_secret_file(name)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    populate(tmp_path)
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")  # only this root (see sandbox/roots.py)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", [*SECRET_FILES, "innocent.txt", "./.env", "sub/../.env"])
def test_load_refuses_secret_files(tree: Path, name: str) -> None:
    with pytest.raises(ContextError, match="allow_secrets=True") as info:
        ctxmod.load(name, kind="file")
    assert CANARY not in str(info.value)
    assert CANARY in ctxmod.load(name, kind="file", allow_secrets=True).value


@pytest.mark.parametrize("source", [".", "sub", "*", "**/*", ".*", "sub/**/*", "**/.env*", "**/*.pem"])
def test_directory_and_glob_loads_skip_secrets_with_a_note(tree: Path, source: str) -> None:
    try:
        loaded = ctxmod.load(source)
    except ContextError as err:  # every match was a secret: refused, the text says why
        assert CANARY not in str(err)
        assert "allow_secrets=True" in str(err) or "no readable" in str(err)
        return
    assert CANARY not in loaded.value
    assert all(not ctxmod.is_secret_file(name) for name in loaded.files)


def test_loading_a_git_directory_is_refused(tree: Path) -> None:
    with pytest.raises(ContextError, match=r"\.git"):
        ctxmod.load(".git", kind="dir")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory):
    cwd = tmp_path_factory.mktemp("secrets-kernel")
    populate(cwd)
    harness = KernelHarness(cwd=str(cwd))
    harness.execute("keep = 'alive-8'")
    yield harness
    harness.shutdown()


KERNEL_PAYLOADS = [
    "load_context('.env')",
    "load_context('innocent.txt')",
    "load_context('id_rsa', kind='file')",
    "load_context('.git/config')",
    "load_context('sub/tls/cert.pem')",
    "load_context('.', kind='dir')\nprint(context)",
    "load_context('**/*')\nprint(context)",
    "load_context('.env*')\nprint(context)",
    "load_context(['.env'])\nprint(context)",  # data, not a path: the list itself
    "load_context('.env', allow_secrets=1)",
    "load_context('.env', allow_secrets='yes')",
    "%context .env",
    "rlm_run('q', context='.env')",
]


@pytest.mark.parametrize("payload", KERNEL_PAYLOADS)
def test_kernel_never_shows_secret_files(kernel: KernelHarness, payload: str) -> None:
    ex = kernel.execute(payload)
    assert CANARY not in ex.all_text, (payload, str(ex))
    assert kernel.is_alive()
    assert kernel.execute("keep").result == "'alive-8'"


def test_kernel_directory_load_names_what_it_skipped(kernel: KernelHarness) -> None:
    ex = kernel.execute("load_context('.', kind='dir')")
    assert ex.ok, str(ex)
    ex = kernel.execute("load_context('**/*')")
    assert ex.ok and "allow_secrets=True" in ex.all_text and CANARY not in ex.all_text, str(ex)


def test_person_may_read_a_secret_on_purpose(kernel: KernelHarness) -> None:
    ex = kernel.execute("load_context('.env', allow_secrets=True)\nprint(context)")
    assert ex.ok and CANARY in ex.stdout, str(ex)


def test_a_path_like_defined_in_a_cell_is_a_source(kernel: KernelHarness) -> None:
    """An `os.PathLike` written in the cell (its `__fspath__` runs inside the cell) loads like its path;
    one that names a secret file is refused like the path itself."""
    code = (
        "class Where:\n"
        "    def __init__(self, name):\n"
        "        self.name = name\n"
        "    def __fspath__(self):\n"
        "        return self.name\n"
        "load_context(Where('notes.txt'))\n"
        "print(len(context) > 0)"
    )
    ex = kernel.execute(code)
    assert ex.ok and ex.stdout.strip() == "True", str(ex)
    ex = kernel.execute("load_context(Where('.env'))")
    assert ex.status == "error" and CANARY not in ex.all_text, str(ex)
    assert kernel.execute("keep").result == "'alive-8'"
