"""The README's 60-second tour runs as written: every code block of the section, in a real `rlm` kernel
started at the repository's root, against the local LLM test server (a scripted root model for `%%rlm`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def tour_blocks() -> list[str]:
    """The code blocks of the README section `## A 60-second tour`, in order."""
    section = README.read_text(encoding="utf-8").split("## A 60-second tour", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```[a-z]*\n(.*?)^```", section, re.S | re.M)


@pytest.fixture(scope="module")
def tour_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    config = tmp_path_factory.mktemp("cfg") / "none.toml"
    config.write_text("")
    with LLMTestServer() as server:
        env = {
            "RLM_PROVIDER": "openai",
            "RLM_BASE_URL": server.openai_base_url,
            "RLM_API_KEY": "sk-test-not-a-key",
            "RLM_MODEL": "test-model",
            "RLM_CACHE": "off",
            "RLM_CONFIG": str(config),
        }
        kernel = KernelHarness(env=env, cwd=str(ROOT), remove_env=("RLM_CONTEXT_ROOTS", "RLM_CACHE_DIR"))
        try:
            yield server, kernel
        finally:
            kernel.shutdown()


def test_the_tour_has_the_blocks_the_prose_describes() -> None:
    blocks = tour_blocks()
    assert len(blocks) == 2
    assert blocks[0].lstrip().startswith("# load a corpus") and blocks[1].startswith("%%rlm")


def test_every_tour_block_runs_as_written(tour_kernel: tuple[LLMTestServer, KernelHarness]) -> None:
    server, kernel = tour_kernel
    you_drive, model_drives = tour_blocks()
    r = kernel.execute(you_drive, timeout=240)
    assert r.ok, r
    chars, files = r.stdout.splitlines()[0].split(" ", 1)
    assert int(chars) > 100_000 and files.startswith("['")
    assert kernel.execute("len(hits), len(answers), len(summary) > 0", timeout=30).result == "(3, 3, True)"

    script = Script(
        root=[
            repl(
                "spans = context_files.items()\n"
                "counts = {p: context[slice(*span)].count('\\nclass ') for p, span in spans}\n"
                "top = sorted(counts, key=counts.get, reverse=True)[:3]\n"
                "about = llm_query('What are these modules for?\\n' + context[:3000])\n"
                "print(top, about[:40])"
            ),
            repl("FINAL(f'{top}: {about}')"),
        ]
    )
    server.reply_with(script)
    try:
        r = kernel.execute(model_drives, timeout=240)
    finally:
        server.reset()
    assert r.ok, r
    done = kernel.execute("rlm_result.termination, rlm_result.answer.startswith('[')", timeout=30)
    assert done.result == "('final', True)", done
