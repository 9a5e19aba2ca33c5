"""Secrets recognised by directory and by content, not only by name (issue 26, class 6).

In process (secret_files.py's pure rules, load_context, load_corpus) and through a real kernel: credentials
directories (`.ssh`, `.kube`, `.docker`, `.aws`, `.config/gcloud` …), renamed keys (`id_rsa.bak`) and files
whose head holds a private key or a token of a common format are refused when named, skipped with the reason
in directory and glob loads; ordinary text that merely mentions such formats still loads.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl import corpus as corpusmod
from rlm_kernel.repl.errors import ContextError
from rlm_kernel.repl.secret_files import (
    HEAD_BYTES,
    secret_reason_by_content,
    secret_reason_by_path,
    secret_reason_of_file,
)
from tests.kernel_client import KernelHarness

CANARY = "canary-3f9a17"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + CANARY + "\n-----END RSA PRIVATE KEY-----\n"
SERVICE_ACCOUNT = (
    '{\n  "type": "service_account",\n  "project_id": "p",\n  "private_key_id": "0123456789abcdef",\n'
    '  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIE' + CANARY + '\\n-----END PRIVATE KEY-----\\n"\n}\n'
)
# Files that are secrets by their directory or name, whatever they hold.
BY_PATH = {
    ".ssh/id_rsa.bak": f"key {CANARY}\n",
    ".ssh/config": f"Host x\n  IdentityFile {CANARY}\n",
    ".kube/config": f"users:\n- name: {CANARY}\n",
    ".docker/config.json": f'{{"auths": {{"r": {{"auth": "{CANARY}"}}}}}}\n',
    ".aws/credentials": f"[default]\nkey = {CANARY}\n",
    ".azure/accessTokens.json": f'["{CANARY}"]\n',  # JSON files hold JSON: load_context reads it as records
    ".gnupg/secring.gpg": f"{CANARY}\n",
    ".config/gcloud/legacy_credentials/me/adc.json": f'{{"refresh_token": "{CANARY}"}}\n',
    ".config/gh/hosts.yml": f"token: {CANARY}\n",
    ".streamlit/secrets.toml": f"password = '{CANARY}'\n",
    ".pgpass": f"h:5432:db:user:{CANARY}\n",
    ".npmrc": f"//registry/:_authToken={CANARY}\n",
    "id_ed25519_old": f"{CANARY}\n",
    "backup/id_rsa.bak": f"{CANARY}\n",
    "deploy/terraform.tfstate": f"{CANARY}\n",
    "keys/my-service-account.json": f'{{"key": "{CANARY}"}}\n',
    "client_secret_123.apps.json": f'{{"installed": {{"client_secret": "{CANARY}"}}}}\n',
    # third red team: Terraform's and Cargo's CLI credential files
    "home/.terraformrc": f'credentials "app.terraform.io" {{ token = "{CANARY}" }}\n',
    "terraform.rc": f"# {CANARY}\n",
    "home/.cargo/credentials.toml": f'[registry]\ntoken = "{CANARY}"\n',
}
# Files with ordinary names whose content is a secret.
BY_CONTENT = {
    "notes/deploy.txt": "the key we use:\n" + PEM,
    "notes/project-1234.json": SERVICE_ACCOUNT,
    "notes/aws.txt": f"export AWS_ACCESS_KEY_ID=AKIA{'Q' * 16}\n# {CANARY}\n",
    "notes/gh.txt": f"GH=ghp_{'a1B2' * 9}\n# {CANARY}\n",
    "notes/pat.txt": f"github_pat_{'A1_b' * 15}\n# {CANARY}\n",
    "notes/slack.txt": f"xoxb-123456789012-abcdefABCDEF\n# {CANARY}\n",
    "notes/openai.txt": f"key: sk-proj-{'x9Y8' * 10}\n# {CANARY}\n",
    "notes/anthropic.txt": f"key: sk-ant-api03-{'Zz09' * 10}\n# {CANARY}\n",
    "notes/google.txt": f"AIza{'B' * 35}\n# {CANARY}\n",
    "notes/hf.txt": f"HF=hf_{'aBcD' * 9}\n# {CANARY}\n",
    "notes/gitlab.txt": f"glpat-{'a' * 20}\n# {CANARY}\n",
    "notes/tfc.hcl": 'credentials "app.terraform.io" { token = "abcdefghijklmn.atlasv1.'
    + "aB3_" * 17
    + f'" }}\n# {CANARY}\n',
    "notes/putty.txt": f"PuTTY-User-Key-File-3: ssh-ed25519\n# {CANARY}\n",
    "notes/kube.yaml": f"users:\n- user:\n    client-key-data: LS0tLS1CRUdJTiBSU0Eg{CANARY}\n",
    "notes/jwt.txt": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    f"dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n# {CANARY}\n",
}
# Honest files that mention the formats without holding one.
ORDINARY = {
    "docs/ml.txt": "We use sk-learn and scikit-learn; ghost_town and xox are words.\n",
    "docs/cert.txt": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    "docs/pubkey.txt": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI user@host\n",
    "docs/keys.md": "# Keys\nThe private_key field of a service account is a PEM string.\n",
    "docs/id_map.csv": "id,name\n1,a\n",
    "docs/environment.txt": "no secrets here\n",
    "docs/aws.md": "Access key ids start with AKIA followed by 16 characters.\n",
    "notes/plain.txt": "plain\n",
}


def populate(root: Path) -> None:
    for table in (BY_PATH, BY_CONTENT, ORDINARY):
        for name, text in table.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


@pytest.mark.parametrize("name", sorted(BY_PATH))
def test_secret_paths_are_recognised(name: str) -> None:
    assert secret_reason_by_path(name) is not None
    assert ctxmod.is_secret_file(name)


@pytest.mark.parametrize("name", sorted(BY_CONTENT))
def test_secret_contents_are_recognised(name: str) -> None:
    assert secret_reason_by_path(name) is None
    assert secret_reason_by_content(BY_CONTENT[name].encode()) is not None


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_ordinary_files_are_not_secrets(name: str) -> None:
    assert secret_reason_by_path(name) is None
    assert secret_reason_by_content(ORDINARY[name].encode()) is None


def test_only_the_head_is_scanned(tmp_path: Path) -> None:
    """A key past HEAD_BYTES is not looked for (the scan is bounded); one inside is found."""
    late = tmp_path / "late.txt"
    late.write_text("x" * HEAD_BYTES + "\n" + PEM)
    early = tmp_path / "early.txt"
    early.write_text("x" * (HEAD_BYTES - len(PEM) - 1) + "\n" + PEM)
    assert secret_reason_of_file(late) is None
    assert secret_reason_of_file(early) == "it holds a private key"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    populate(tmp_path)
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", sorted({**BY_PATH, **BY_CONTENT}))
def test_load_refuses_each_secret_and_says_why(tree: Path, name: str) -> None:
    with pytest.raises(ContextError, match="allow_secrets=True") as info:
        ctxmod.load(name, kind="file")
    assert CANARY not in str(info.value)
    assert "refused" in str(info.value)
    assert CANARY in ctxmod.load(name, kind="file", allow_secrets=True).value


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_load_reads_ordinary_files(tree: Path, name: str) -> None:
    assert ctxmod.load(name, kind="file").value == ORDINARY[name]


@pytest.mark.parametrize("source", ["notes", "notes/*", ".ssh/*", ".kube/*", "**/*.json", ".config/**/*"])
def test_directory_and_glob_loads_skip_secrets_with_the_reason(tree: Path, source: str) -> None:
    try:
        loaded = ctxmod.load(source)
    except ContextError as err:  # every match was a secret: refused, the text says why
        assert CANARY not in str(err)
        assert "allow_secrets=True" in str(err)
        return
    assert CANARY not in loaded.value
    assert loaded.skipped and all("allow_secrets=True" in note for note in loaded.skipped)


def test_skip_notes_name_the_rule(tree: Path) -> None:
    loaded = ctxmod.load("notes")
    text = "\n".join(loaded.skipped)
    assert "it holds a private key" in text and "AWS access key" in text and "Slack token" in text
    assert all(name in text for name in BY_CONTENT if name.startswith("notes/"))
    assert list(loaded.files) == ["notes/plain.txt"]


def test_load_corpus_skips_and_refuses_secrets(tree: Path) -> None:
    corpus = corpusmod.load_corpus("notes")
    assert corpus.files == ("notes/plain.txt",)
    with pytest.raises(ContextError, match="private key"):
        corpusmod.load_corpus("notes/deploy.txt")
    with pytest.raises(ContextError, match=r"\.kube"):
        corpusmod.load_corpus(".kube/config")


def _bytes_read() -> int:
    """Bytes this process has read through read(2) so far (`rchar` of /proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_content_scan_is_cheap(tmp_path: Path) -> None:
    """The content scan reads at most HEAD_BYTES whatever the file's size: judging a 4 MiB file reads a small
    fraction of it (counted by the kernel, so load on the machine cannot change the figure)."""
    big = tmp_path / "big.log"
    big.write_bytes((b"2026-12-03 INFO request served in 12ms path=/api/items/4711 status=200\n") * 60_000)
    start = _bytes_read()
    assert secret_reason_of_file(big) is None
    scanned = _bytes_read() - start
    start = _bytes_read()
    big.read_bytes()
    whole = _bytes_read() - start
    assert whole >= big.stat().st_size
    assert scanned <= 2 * HEAD_BYTES < whole // 16, (scanned, whole)


# -- through a real kernel -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory):
    cwd = tmp_path_factory.mktemp("secret-files-kernel")
    populate(cwd)
    harness = KernelHarness(cwd=str(cwd))
    harness.execute("keep = 'alive-26'")
    yield harness
    harness.shutdown()


KERNEL_PAYLOADS = [
    *(f"load_context({name!r})\nprint(context)" for name in sorted({**BY_PATH, **BY_CONTENT})),
    "load_context('notes')\nprint(context)",
    "load_context('.ssh/*')\nprint(context)",
    "load_context('**/*.json')\nprint(context)",
    "load_context('.config/**/*')\nprint(context)",
    "c = load_corpus('notes')\nprint(c)",
]


@pytest.mark.parametrize("payload", KERNEL_PAYLOADS)
def test_kernel_never_loads_secret_files(kernel: KernelHarness, payload: str) -> None:
    ex = kernel.execute(payload)
    assert CANARY not in ex.all_text, (payload, str(ex))
    assert kernel.is_alive()
    assert kernel.execute("keep").result == "'alive-26'"


def test_kernel_summary_says_what_was_skipped_and_why(kernel: KernelHarness) -> None:
    ex = kernel.execute("load_context('notes')")
    assert ex.ok, str(ex)
    assert "skipped" in ex.all_text and "private key" in ex.all_text, str(ex)
    assert CANARY not in ex.all_text


def test_kernel_loads_ordinary_files(kernel: KernelHarness) -> None:
    ex = kernel.execute("load_context('docs')\nprint(len(context.splitlines()) > 5, 'sk-learn' in context)")
    assert ex.ok and ex.stdout.strip() == "True True", str(ex)


# -- issue 26 red team: secrets inside archives and documents, late in a file, in configuration settings -----
def _zip(members: dict[str, str]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for member, text in members.items():
            z.writestr(member, text)
    return buf.getvalue()


def _tar_gz(members: dict[str, str]) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for member, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _notebook(output: str) -> str:
    import json

    cell = {"cell_type": "code", "source": "print(x)", "metadata": {}, "execution_count": 1}
    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": output}]
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


# Files whose head or name says nothing: the secret is an archive member, a compressed document's text, or
# past the first screen of a notebook.
INSIDE = {
    "bundle/backup.zip": _zip({".ssh/id_rsa": PEM, "readme.txt": "plain\n"}),
    "bundle/env.zip": _zip({"app/.env": f"DB_PASSWORD={CANARY}\n"}),
    "bundle/aws.zip": _zip({"home/.aws/credentials": f"[default]\nkey = {CANARY}\n"}),
    "bundle/home.tar.gz": _tar_gz({"u/.kube/config": f"users:\n- name: {CANARY}\n"}),
    "bundle/key.txt.gz": __import__("gzip").compress(PEM.encode()),
    "bundle/notes.zip": _zip({"notes/deploy.txt": "x" * 100_000 + "\n" + PEM}),
    "bundle/analysis.ipynb": _notebook("y" * (HEAD_BYTES + 5000) + "\n" + PEM).encode(),
    # a member judged by its whole path in the archive: "!" is legal in a name, "\\" separates on Windows
    "bundle/bang.zip": _zip({".ssh/config!notes.txt": f"Host x\n  IdentityFile {CANARY}\n"}),
    "bundle/windows.zip": _zip({".ssh\\config": f"Host x\n  IdentityFile {CANARY}\n"}),
    "bundle/nested.zip": _zip({"inner.zip": _zip({"a!b/.pgpass": f"h:5432:db:u:{CANARY}\n"})}),
}
# Credentials in configuration that no token format covers (the head of an ordinary-named file).
SETTINGS = {
    "conf/prod.env": f"DB_PASSWORD={CANARY}\n",
    "conf/app.cfg": f"[db]\nexport API_KEY='{CANARY}'\n",
    "conf/values.yaml": f"db:\n  password: {CANARY}\n",
    "conf/deploy.yaml": f"env:\n  AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLE # {CANARY}\n",
    "conf/registry.json": '{"auths": {"ghcr.io": {"auth": "dXNlcjpwYXNzd29yZDEyMw=="}}, "x": "'
    + CANARY
    + '"}',
    "conf/netrc.txt": f"machine api.example.com login bob password {CANARY}\n",
    "conf/creds.txt": f"https://bob:{CANARY}@github.com\n",
    "conf/db.txt": f"DATABASE_URL=postgres://admin:{CANARY}@db.internal:5432/app\n",
    "conf/azure.txt": f"DefaultEndpointsProtocol=https;AccountKey={'A1b2' * 15}==;{CANARY}\n",
    "conf/late.txt": "x" * 17_000 + "\n" + PEM,
    "conf/npm.txt": f"//registry.npmjs.org/:_authToken=0b3c6a2e-7c4d-4f5e-9a1b-2c3d4e5f6a7b\n# {CANARY}\n",
    "conf/yarn.txt": f"_auth = dXNlcjpwYXNz\n# {CANARY}\n",
    "conf/curl.sh": f"curl -H 'Authorization: Bearer abcdef0123456789abcdef01' https://x # {CANARY}\n",
    "conf/headers.json": f'{{"Authorization": "Basic dXNlcjpwYXNzd29yZA==", "x": "{CANARY}"}}\n',
}
# Code and prose that name credential settings without holding one.
CODE = {
    "conf/plain.txt": "plain\n",
    "src/settings.py": (
        "password = get_password()\ntoken = self.token\nSECRET_KEY = os.environ['SECRET_KEY']\n"
        "api_key = settings.api_key\ntokenizer: gpt2-large-v2\nmax_tokens: 1000\nsecret = None\n"
        "private_key: PKCS7PrivateKeyTypes,\nsee https://example.com/path and http://localhost:8080/api\n"
        "The machine learning password problem.\n"
        "headers['Authorization'] = f'Bearer {token}'\nauth = _auth(user)\n_password = None\n"
    ),
}


@pytest.fixture
def inside_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for table in (INSIDE, SETTINGS, CODE):
        for name, content in table.items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", sorted({**INSIDE, **SETTINGS}))
def test_secrets_inside_archives_documents_and_settings_never_load(inside_tree: Path, name: str) -> None:
    try:
        loaded = ctxmod.load(name, kind="file")
    except ContextError as err:
        assert CANARY not in str(err) and "allow_secrets=True" in str(err), str(err)
    else:
        assert CANARY not in loaded.value
        assert any("allow_secrets=True" in note for note in loaded.skipped), loaded.skipped
    assert CANARY in repr(ctxmod.load(name, kind="file", allow_secrets=True).value) or name.endswith(
        "registry.json"
    )


@pytest.mark.parametrize("source", ["bundle", "conf", "**/*"])
def test_directory_loads_skip_what_is_inside_with_the_reason(inside_tree: Path, source: str) -> None:
    loaded = ctxmod.load(source)
    assert CANARY not in loaded.value
    text = "\n".join(loaded.skipped)
    if source == "bundle":
        assert (
            "backup.zip!.ssh/id_rsa (inside .ssh" in text and "analysis.ipynb (it holds a private key" in text
        )
        assert "bundle/backup.zip!readme.txt" in loaded.files  # the archive's other members load
    if source == "**/*":
        assert "src/settings.py" in loaded.files


def test_load_corpus_skips_secret_members(inside_tree: Path) -> None:
    corpus = corpusmod.load_corpus("bundle")
    assert not any(".ssh" in name or "analysis" in name or ".env" in name for name in corpus.files)
    assert "bundle/backup.zip!readme.txt" in corpus.files


def test_code_naming_settings_is_not_a_secret() -> None:
    for text in CODE.values():
        assert secret_reason_by_content(text.encode()) is None
