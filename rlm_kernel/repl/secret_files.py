"""Recognising files that hold credentials: by directory, by name and by the first bytes of their content.

Pure functions, no I/O but `secret_reason_of_file` (which reads at most `HEAD_BYTES`). Each returns the
reason a file is a secret (a short phrase for the load summary), or None:

- `secret_reason_by_path`: inside a credentials directory (`.ssh`, `.kube`, `.docker`, `.aws`, `.gnupg`,
  `.azure`, `.config/gcloud`, `.git` …), or a well-known name (`.env*`, `.netrc`, `.pgpass`, `secrets.toml`,
  `id_rsa.bak`, `*.pem`, `kubeconfig` …);
- `secret_reason_by_content`: a private-key block (PEM, OpenSSH, PGP, PuTTY), a cloud service-account key
  (`"private_key"`), a kubeconfig's client key, or a token of a common format (AWS access key ids, GitHub,
  GitLab, Slack, OpenAI/Anthropic `sk-…`, Google API keys, Hugging Face, Stripe live keys, npm and PyPI
  tokens, JSON Web Tokens), credentials in configuration (`DB_PASSWORD=…`, `API_KEY: …`, a URL with a
  password, a Docker `"auth"`, an npm/yarn `_authToken=`, an HTTP `Authorization: Bearer …` header, a
  `.netrc` line, an Azure `AccountKey=`) — over the first `HEAD_BYTES` of
  the file, each rule's regex run only when its fixed prefix occurs there;
- `secret_reason_of_text`: the same for text already extracted (archive members, documents, notebooks), over
  its first `SCAN_BYTES` and last `HEAD_BYTES` (the rules whose literals are common words over the head).

A token past the first `HEAD_BYTES` of a plain text file is not found; the directory and name rules do not
depend on the content.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath

__all__ = [
    "HEAD_BYTES",
    "SCAN_BYTES",
    "secret_reason_by_content",
    "secret_reason_by_path",
    "secret_reason_of_file",
    "secret_reason_of_text",
]

# Bytes of a file's head scanned for keys and tokens: key files, .env files, service-account JSON (~2.3 KB)
# and kubeconfigs fit.
HEAD_BYTES = 64 * 1024
# Characters of extracted text (an archive member, a document, a notebook's cells and outputs) scanned from
# its start, and HEAD_BYTES from its end: their heads say nothing (compressed, or a notebook's first outputs).
SCAN_BYTES = 4 * 1024 * 1024

# Directories whose files are credentials or configuration that embeds them (any depth, any file inside).
_SECRET_DIRS: dict[str, str] = {
    ".ssh": "SSH keys and configuration",
    ".gnupg": "GnuPG keys",
    ".kube": "Kubernetes credentials",
    ".docker": "Docker registry credentials",
    ".aws": "AWS credentials",
    ".azure": "Azure credentials",
    ".git": "git internals (remotes may embed tokens)",
    ".password-store": "a password store",
    ".vault": "Vault credentials",
    ".terraform.d": "Terraform credentials",
    ".secrets": "a secrets directory",
}
# Two-level directories (`.config/gcloud`): the last two parts of a parent path.
_SECRET_DIR_PAIRS: dict[tuple[str, str], str] = {
    (".config", "gcloud"): "Google Cloud credentials",
    (".config", "gh"): "GitHub CLI tokens",
    (".config", "hub"): "GitHub CLI tokens",
    (".config", "op"): "1Password CLI configuration",
    (".config", "rclone"): "rclone remotes (with tokens)",
}
_SECRET_NAMES: dict[str, str] = {
    ".netrc": "login credentials (.netrc)",
    "_netrc": "login credentials (_netrc)",
    ".pypirc": "PyPI credentials",
    ".npmrc": "npm credentials",
    ".yarnrc.yml": "yarn credentials",
    ".git-credentials": "git credentials",
    ".pgpass": "PostgreSQL passwords",
    ".my.cnf": "MySQL credentials",
    ".htpasswd": "web-server passwords",
    ".s3cfg": "S3 credentials",
    ".boto": "cloud credentials (boto)",
    ".dockercfg": "Docker registry credentials",
    ".vault-token": "a Vault token",
    ".git-askpass": "git credentials",
    "credentials": "a credentials file",
    "credentials.json": "a credentials file",
    "credentials.db": "a credentials database",
    "access_tokens.db": "a token database",
    "application_default_credentials.json": "Google Cloud credentials",
    "kubeconfig": "Kubernetes credentials",
    "secrets.toml": "a secrets file (secrets.toml)",
    "secrets.yaml": "a secrets file",
    "secrets.yml": "a secrets file",
    "secrets.json": "a secrets file",
    "secret.json": "a secrets file",
    "terraform.tfstate": "Terraform state (holds secrets)",
    "terraform.tfstate.backup": "Terraform state (holds secrets)",
    ".terraformrc": "Terraform CLI credentials",
    "terraform.rc": "Terraform CLI credentials",
    "credentials.tfrc.json": "Terraform CLI credentials",
    "credentials.toml": "a credentials file (Cargo)",
}
_SECRET_SUFFIXES: dict[str, str] = {
    ".pem": "a key or certificate file",
    ".key": "a key file",
    ".p12": "a key store",
    ".pfx": "a key store",
    ".jks": "a key store",
    ".keystore": "a key store",
    ".ppk": "a PuTTY private key",
    ".kdbx": "a password database",
    ".tfstate": "Terraform state (holds secrets)",
    ".gpg": "an encrypted or key file",
    ".asc": "a PGP key or signature",
    ".env": "an environment file (*.env)",
}
_SSH_KEY_NAME = re.compile(r"id_(rsa|dsa|ecdsa|ed25519|ecdsa_sk|ed25519_sk|xmss)(\b|_|\.|$)")
_SERVICE_ACCOUNT_NAME = re.compile(r"(service[-_]?account|client[-_]?secret|sa[-_]key|gcp[-_]key)\S*\.json$")

# Words a setting that holds a credential is named with (`DB_PASSWORD=`, `api_key:`), in the cases they are
# written in; the setting rule's value needs a digit and 8+ characters, and takes the whole rest of the line,
# so code (`password = get_password()`, `token = self.token`) does not match.
_SETTING_LITERALS = (b"passw", b"secret", b"token", b"api_key", b"apikey", b"api-key", b"access_key")

# Content rules: (reason, literals, pattern). A rule's pattern runs only when one of its literals occurs in
# the head (a bytes `in` test is a fast memchr-like scan; a regex with many alternatives is not). Tokens
# are anchored on their fixed prefixes and minimum lengths, so prose ("sk-learn", "ghost_") does not match.
_CONTENT_RULES: tuple[tuple[str, tuple[bytes, ...], re.Pattern[bytes]], ...] = tuple(
    (reason, literals, re.compile(pattern))
    for reason, literals, pattern in (
        (
            "it holds a private key",
            (b"PRIVATE KEY", b"PuTTY-User-Key-File-"),
            rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d:",
        ),
        (
            'it holds a cloud service-account key ("private_key")',
            (b'"private_key',),
            rb'"private_key(?:_id)?"\s*:\s*"[^"]{8}',
        ),
        ("it holds a Kubernetes client key", (b"client-key-data",), rb"client-key-data:\s*\S{16}"),
        (
            "it holds an AWS access key",
            (b"AKIA", b"ASIA", b"AGPA", b"AIDA", b"AROA", b"aws_secret_access_key"),
            rb"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b|aws_secret_access_key\s*=\s*\S{20}",
        ),
        (
            "it holds a GitHub token",
            (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
            rb"\bgh[pousr]_[A-Za-z0-9]{36,}|\bgithub_pat_[A-Za-z0-9_]{40,}",
        ),
        ("it holds a GitLab token", (b"glpat-",), rb"\bglpat-[A-Za-z0-9_-]{20,}"),
        (
            "it holds a Terraform Cloud token",
            (b".atlasv1.",),
            rb"\b[A-Za-z0-9]{6,}\.atlasv1\.[A-Za-z0-9_-]{20,}",
        ),
        (
            "it holds a Slack token",
            (b"xox", b"hooks.slack.com"),
            rb"\bxox[abposr]-[A-Za-z0-9-]{10,}|hooks\.slack\.com/services/T[A-Z0-9]+/",
        ),
        ("it holds an Anthropic API key", (b"sk-ant-",), rb"\bsk-ant-[A-Za-z0-9_-]{20,}"),
        ("it holds an API key (sk-...)", (b"sk-",), rb"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
        ("it holds a Google API key", (b"AIza",), rb"\bAIza[0-9A-Za-z_-]{35}"),
        ("it holds a Hugging Face token", (b"hf_",), rb"\bhf_[A-Za-z0-9]{30,}"),
        ("it holds a Stripe live key", (b"k_live_",), rb"\b[sr]k_live_[0-9A-Za-z]{20,}"),
        ("it holds an npm token", (b"npm_",), rb"\bnpm_[A-Za-z0-9]{36}"),
        ("it holds a PyPI token", (b"pypi-AgEIcHlwaS5vcmc",), rb"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}"),
        (
            "it holds a JSON Web Token",
            (b"eyJ",),
            rb"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
        ),
        (
            "it holds an AWS secret access key",
            (b"aws_secret_access_key", b"AWS_SECRET_ACCESS_KEY", b"SecretAccessKey"),
            rb"(?i)(?:aws_secret_access_key|SecretAccessKey)[\"']?\s*[=:]\s*[\"']?[A-Za-z0-9/+]{30,}",
        ),
        ("it holds an Azure storage key", (b"AccountKey=",), rb"AccountKey=[A-Za-z0-9+/]{40,}"),
        (
            "it holds a package-registry token (_authToken=…)",
            (b"_authToken", b"_auth", b"_password"),
            rb"\b_(?:authToken|auth|password)\s*=\s*[\"']?[A-Za-z0-9+/=._~-]{8,}",
        ),
        # -- from here on: rules whose literals are common words (URLs, "machine", "token"), run on the
        # first HEAD_BYTES only (_DEEP_RULES)
        (
            'it holds a registry login ("auth")',
            (b'"auth"',),
            rb'"auth"\s*:\s*"[A-Za-z0-9+/]{12,}={0,2}"',
        ),
        (
            "it holds a URL with a password",
            (b"://",),
            rb"://[^\s/:@\"'<>]{1,64}:[^\s/@\"'<>]{4,}@[A-Za-z0-9.-]+",
        ),
        (
            "it holds an HTTP Authorization header (Bearer / Basic …)",
            (b"authorization",),
            rb"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+[A-Za-z0-9+/=._~-]{16,}",
        ),
        (
            "it holds login credentials (machine … password …)",
            (b"machine",),
            rb"\bmachine\s+\S+\s+login\s+\S+\s+password\s+\S{4,}",
        ),
        (
            "it holds a password or key setting (NAME_PASSWORD=…, API_KEY: …)",
            _SETTING_LITERALS,
            rb"(?im)^[ \t]*(?:export[ \t]+|set[ \t]+)?[\"']?[A-Za-z0-9_.-]*"
            rb"(?:passw(?:or)?d|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)"
            rb"(?:[_.-][A-Za-z0-9_.-]*)?[\"']?[ \t]*[=:][ \t]*(?=[\"']?[^\s\"']*\d)"
            rb"(?:\"[^\"\s]{8,}\"[ \t]*,?|'[^'\s]{8,}'[ \t]*,?|[^\s\"'$<>{}()\[\],;`.]{8,})[ \t]*$",
        ),
    )
)


# Rules run over all the scanned text (the first _DEEP_RULES: rare literals, looked at line by line); the rest
# only over the first HEAD_BYTES.
_DEEP_RULES = next(i for i, rule in enumerate(_CONTENT_RULES) if rule[0].startswith("it holds a registry"))
_SETTING_RULE = next(i for i, rule in enumerate(_CONTENT_RULES) if rule[0].startswith("it holds a password"))

# The gate before the rules: every token format and every key body holds a run of at least 20 characters of
# [A-Za-z0-9_-] (AKIA + 16, ghp_ + 36, base64 lines of a PEM body …); prose and logs rarely do. Mapping the
# head through this table and looking for one 20-byte needle costs ~20 µs for 16 KiB, the rules ~280 µs.
_TOKEN_CHARS = bytes(
    0x61 if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "_-") else 0x20 for i in range(256)
)
_RUN = b"a" * 20
# Rules whose secret can be shorter than the 20-character run: the gate also opens when these occur.
_NO_RUN_MARKERS = (
    b"private key",
    b"putty-user-key-file-",
    b"://",
    b"machine",
    b'"auth"',
    b"_auth",
    b"_password",
    b"authorization",
    *_SETTING_LITERALS,
)


def secret_reason_by_path(path: str | os.PathLike[str]) -> str | None:
    """Why the file at `path` is a secret judging by its directories and its name, or None."""
    parts = PurePath(os.fspath(path)).parts
    if not parts:
        return None
    lowered = [part.lower() for part in parts]
    directories = lowered[:-1]
    for index, part in enumerate(directories):
        reason = _SECRET_DIRS.get(part)
        if reason:
            return f"inside {parts[index]} ({reason})"
        pair = _SECRET_DIR_PAIRS.get((part, directories[index + 1])) if index + 1 < len(directories) else None
        if pair:
            return f"inside {parts[index]}/{parts[index + 1]} ({pair})"
    name = lowered[-1]
    if name in _SECRET_DIRS:
        return f"{parts[-1]} ({_SECRET_DIRS[name]})"
    if name.startswith(".env"):
        return "an environment file (.env*)"
    reason = _SECRET_NAMES.get(name)
    if reason:
        return reason
    for suffix, reason in _SECRET_SUFFIXES.items():
        if name.endswith(suffix):
            return reason
    if _SSH_KEY_NAME.match(name):
        return "an SSH key (id_*)"
    if _SERVICE_ACCOUNT_NAME.search(name):
        return "a cloud service-account key file"
    if name.startswith(".") and ("secret" in name or "credential" in name or "token" in name):
        return "a hidden credentials file"
    return None


def secret_reason_by_content(head: bytes) -> str | None:
    """Why text holding `head` is a secret (a private-key block, a token of a common format, a credential
    setting), or None. The caller bounds what it passes (`SCAN_BYTES`)."""
    head = bytes(head)
    lowered = head[:HEAD_BYTES].lower()
    if _RUN not in head.translate(_TOKEN_CHARS) and not any(m in lowered for m in _NO_RUN_MARKERS):
        return None  # no 20-character run of token characters: no token, key body or service-account key
    for index, (reason, literals, pattern) in enumerate(_CONTENT_RULES):
        if index == _SETTING_RULE:
            if _setting_found(pattern, lowered, head):
                return reason
        elif index >= _DEEP_RULES:
            found = any(literal in lowered for literal in literals) or any(lit in head for lit in literals)
            if found and pattern.search(head, 0, HEAD_BYTES):
                return reason
        elif any(literal in head for literal in literals) and _found(pattern, literals, head):
            return reason
    return None


def _setting_found(pattern: re.Pattern[bytes], lowered: bytes, head: bytes) -> bool:
    """The setting rule, tried at the start of each line of the head whose lowered text has a setting word."""
    tried = -1
    for word in _SETTING_LITERALS:
        pos = lowered.find(word)
        while pos != -1:
            start = lowered.rfind(b"\n", 0, pos) + 1
            if start != tried and pattern.match(head, start, HEAD_BYTES) is not None:
                return True
            tried = start
            pos = lowered.find(word, lowered.find(b"\n", pos) + 1 or len(lowered))
    return False


_LOOKS = 20_000  # occurrences of one literal looked at one by one; past that, the regex scans the whole text
_BEFORE = {b"PRIVATE KEY": 64, b"k_live_": 1}  # how far before its literal a match can start (else at it)


def _found(pattern: re.Pattern[bytes], literals: tuple[bytes, ...], data: bytes) -> bool:
    """`pattern.search(data)`, tried at each occurrence of a literal (every match starts at one, or within
    `_BEFORE` bytes of it): a regex scan of megabytes costs ~50 ms a rule, one try a microsecond."""
    if len(data) <= HEAD_BYTES:
        return pattern.search(data) is not None
    for literal in literals:
        before = _BEFORE.get(literal, 0)
        pos = data.find(literal)
        looks = 0
        while pos != -1:
            looks += 1
            if looks > _LOOKS:
                return pattern.search(data, pos) is not None
            if before:
                if pattern.search(data, max(0, pos - before), pos + 1024) is not None:
                    return True
            elif pattern.match(data, pos) is not None:
                return True
            pos = data.find(literal, pos + 1)
    return False


def secret_reason_of_file(path: str | os.PathLike[str]) -> str | None:
    """`secret_reason_by_path`, else `secret_reason_by_content` of the file's first `HEAD_BYTES` (an
    unreadable file is judged by its path only: reading it fails later with its own message)."""
    reason = secret_reason_by_path(path)
    if reason is not None:
        return reason
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return None
    return secret_reason_by_content(head)


def secret_reason_of_text(text: str) -> str | None:
    """`secret_reason_by_content` of extracted text (an archive member, a document, a notebook): its first
    `SCAN_BYTES` and last `HEAD_BYTES` characters."""
    if len(text) > SCAN_BYTES + HEAD_BYTES:
        text = text[:SCAN_BYTES] + "\n" + text[-HEAD_BYTES:]
    return secret_reason_by_content(text.encode("utf-8", "replace"))
