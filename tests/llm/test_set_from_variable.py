"""`%rlm set key={name}` takes a notebook variable's value (how papermill parameters reach settings); only a
bare name and a plain value, so nothing is evaluated and no object's code runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelHarness]:
    with KernelHarness(env={"RLM_PROVIDER": "local", "RLM_CACHE": "off"}, remove_env=("RLM_CONFIG",)) as k:
        yield k


def _setting(kernel: KernelHarness, key: str) -> list[str]:
    shown = kernel.execute("%rlm show").result or ""
    rows = [line.split()[1:] for line in shown.splitlines() if line.startswith(key + " ")]
    return rows[0] if rows else []  # an unset budget limit has no row


def test_a_variable_sets_and_none_unsets(kernel: KernelHarness) -> None:
    ex = kernel.execute("budget_usd = 0.05\nn = 300\n%rlm set budget_max_usd={budget_usd} max_tokens={n}")
    assert ex.ok, ex
    assert _setting(kernel, "budget_max_usd")[:3] == ["0.05", "%rlm", "set"]
    assert _setting(kernel, "max_tokens")[:3] == ["300", "%rlm", "set"]
    assert kernel.execute("budget_usd = None\n%rlm set budget_max_usd={budget_usd}").ok
    assert _setting(kernel, "budget_max_usd") == []


@pytest.mark.parametrize(
    ("cell", "says"),
    [
        ("%rlm set budget_max_usd={undefined_here}", "no variable 'undefined_here' is defined"),
        ("%rlm set budget_max_usd={1+1}", "only a variable name may stand in braces"),
        ("%rlm set budget_max_usd={__import__}", "no variable '__import__' is defined"),
        ("class Sneaky(float):\n    def __str__(self):\n        raise SystemExit\nx = Sneaky(1.0)\n"
         "%rlm set budget_max_usd={x}", "'x' is a Sneaky; only text, numbers"),
        ("y = [0.05]\n%rlm set budget_max_usd={y}", "'y' is a list"),
        ("z = 'lots'\n%rlm set budget_max_usd={z}", "invalid LLM setting 'budget_max_usd' = 'lots'"),
    ],
)  # fmt: skip
def test_only_a_defined_plain_variable_is_taken(kernel: KernelHarness, cell: str, says: str) -> None:
    ex = kernel.execute(cell)
    assert not ex.ok and ex.error_name == "ConfigError" and says in ex.error_value, ex
    assert kernel.execute("1 + 1").result == "2"
