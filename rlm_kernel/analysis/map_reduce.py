"""map_reduce: split a text, ask the model about each part in parallel, combine the answers (SPEC-01.01-.06).

Map calls use the batched path with role "map", reduce calls role "synthesis" (what `auto` resolves by).
"""

from __future__ import annotations

from collections.abc import Callable

from rlm_kernel.analysis.corpus import Corpus, partition_parts, partitions_of, plain_int
from rlm_kernel.analysis.errors import AnalysisInputError, MapReduceError
from rlm_kernel.analysis.executor import imap
from rlm_kernel.analysis.heavy import load
from rlm_kernel.analysis.llm_calls import complete_batch
from rlm_kernel.llm.errors import BatchError

__all__ = ["MAX_CHUNK_CHARS", "MAX_REDUCE_CHARS", "fill", "map_reduce"]

MAX_CHUNK_CHARS = 200_000
"""A part never exceeds this (about 50K tokens): `n_chunks` is raised for larger content."""
MAX_REDUCE_CHARS = 200_000
"""Combined map results longer than this are reduced in groups first (hierarchical reduce)."""
MAX_LEVELS = 8


def fill(template: str, placeholder: str, value: str) -> str:
    """`template` with every `placeholder` replaced by `value`, or `value` appended after a blank line.

    Plain text substitution: other braces in the template are left alone (no str.format).
    """
    if placeholder in template:
        return template.replace(placeholder, value)
    return f"{template}\n\n{value}" if template else value


def combine(results: list[str], first_index: int = 0) -> str:
    """Map results joined with numbered separators, in input order."""
    return "\n\n".join(f"--- part {first_index + i + 1} ---\n{r}" for i, r in enumerate(results))


def map_reduce(
    content: str | Corpus,
    map_prompt: str,
    reduce_prompt: str,
    n_chunks: int = 4,
    model: str = "auto",
    part_label: Callable[[int, int], str] | None = None,
) -> str:
    """Apply `map_prompt` to each of `n_chunks` parts of `content` in parallel, then `reduce_prompt`.

    The part is inserted where the map prompt says `{chunk}` (else appended); the numbered map results
    where the reduce prompt says `{results}` (else appended); other braces are left alone. Parts are cut at
    line breaks (else whitespace), roughly equal; `n_chunks` is raised so no part exceeds 200,000
    characters. `model`: "fast", "balanced", "powerful", a literal model name (used for map and reduce), or
    "auto" (default): map calls use the fast tier (balanced for prompts over the configured token threshold),
    reduce calls the powerful tier. Combined results too long for one reduce call are reduced in groups,
    then again. Returns the reduce answer (str). Raises MapReduceError when calls fail or the budget runs
    out; its `.map_results` keeps every finished map answer (None where a call failed).
    `content` may be a Corpus from `load_corpus`: each partition is cut as a string would be (into
    n_chunks / partitions parts at least) by the Dask cluster when RLM_DASK_SCHEDULER is set, and its map
    calls are made from the kernel before the next partition is read, so the corpus is never in memory whole.
    With where=True (the loaded `context` only), each part starts with the line
    `[from report.pdf, page 2, lines 1-40]`: where it comes from, for the model to cite.
    """
    if isinstance(content, Corpus):
        return _map_reduce_corpus(content, map_prompt, reduce_prompt, n_chunks, model)
    _check(content, map_prompt, reduce_prompt, n_chunks, model)
    if not content:
        return ""
    n = max(n_chunks, -(-len(content) // MAX_CHUNK_CHARS))
    spans = load("rlm_kernel.analysis.chunking").split_even(content, n, max_part=MAX_CHUNK_CHARS)
    label = part_label or (lambda a, b: "")
    prompts = [fill(map_prompt, "{chunk}", label(a, b) + content[a:b]) for a, b in spans]
    try:
        results = complete_batch(
            prompts, model=model, role="map", label=f"map_reduce: map ({len(prompts)} parts)"
        )
    except BatchError as exc:
        done = sum(r is not None for r in exc.results)
        raise MapReduceError(
            f"map_reduce: {len(prompts) - done} of {len(prompts)} map calls did not finish ({exc}). "
            "The finished map results are in the error's .map_results (None where a call failed); "
            "retry, or raise the budget (%rlm budget) if it ran out.",
            map_results=exc.texts(),
            errors=exc.errors,
            stage="map",
        ) from None
    return _reduce(results, reduce_prompt, model)


def _map_reduce_corpus(corpus: Corpus, map_prompt: str, reduce_prompt: str, n_chunks: int, model: str) -> str:
    parts = partitions_of(corpus, "map_reduce")
    _check("", map_prompt, reduce_prompt, n_chunks, model)
    n_chunks = plain_int(n_chunks)
    per_partition = max(1, -(-n_chunks // max(len(parts), 1)))
    results: list[str | None] = []
    for index, texts in enumerate(imap(partition_parts, parts, per_partition, MAX_CHUNK_CHARS), start=1):
        if not texts:
            continue
        prompts = [fill(map_prompt, "{chunk}", t) for t in texts]
        del texts
        label = f"map_reduce: map (partition {index} of {len(parts)}, {len(prompts)} parts)"
        try:
            results += complete_batch(prompts, model=model, role="map", label=label)
        except BatchError as exc:
            done = sum(r is not None for r in exc.results)
            raise MapReduceError(
                f"map_reduce: {len(prompts) - done} of {len(prompts)} map calls of partition {index} did not "
                f"finish ({exc}). The finished map results are in the error's .map_results (None "
                "where a call failed); retry, or raise the budget (%rlm budget) if it ran out.",
                map_results=results + exc.texts(),
                errors=exc.errors,
                stage="map",
            ) from None
    if not results:
        return ""
    return _reduce([r or "" for r in results], reduce_prompt, model)


def _reduce(results: list[str], reduce_prompt: str, model: str) -> str:
    level_inputs = results
    for level in range(MAX_LEVELS):
        groups = _groups(level_inputs, reduce_prompt)
        prompts = [fill(reduce_prompt, "{results}", combine(g, first)) for first, g in groups]
        label = "map_reduce: reduce" if len(prompts) == 1 else f"map_reduce: reduce level {level + 1}"
        try:
            outputs = complete_batch(prompts, model=model, role="synthesis", label=label)
        except BatchError as exc:
            raise MapReduceError(
                f"map_reduce: the reduce step failed ({exc}). All map results finished and are in "
                "the error's .map_results; combine them yourself or retry.",
                map_results=results,
                errors=exc.errors,
                stage="reduce",
            ) from None
        if len(outputs) == 1:
            return outputs[0]
        level_inputs = outputs
    raise MapReduceError(
        f"map_reduce: the reduce answers stayed longer than {MAX_REDUCE_CHARS} characters after {MAX_LEVELS} "
        "levels of hierarchical reduce; ask the reduce prompt for a shorter answer. The map results are in "
        "the error's .map_results.",
        map_results=results,
        errors={},
        stage="reduce",
    )


def _groups(results: list[str], reduce_prompt: str) -> list[tuple[int, list[str]]]:
    """Consecutive groups of results whose reduce prompt stays within MAX_REDUCE_CHARS (a result longer than
    that on its own forms a group by itself). Returns (index of the group's first result, group)."""
    budget = MAX_REDUCE_CHARS - len(reduce_prompt)
    groups: list[tuple[int, list[str]]] = []
    current: list[str] = []
    size = 0
    first = 0
    for i, r in enumerate(results):
        cost = len(r) + 20
        if current and size + cost > budget:
            groups.append((first, current))
            current, size, first = [], 0, i
        current.append(r)
        size += cost
    if current:
        groups.append((first, current))
    return groups


def _check(
    content: object, map_prompt: object, reduce_prompt: object, n_chunks: object, model: object
) -> None:
    if not isinstance(content, str):
        raise AnalysisInputError(
            f"map_reduce: content must be a str or a Corpus from load_corpus(), got {type(content).__name__}"
        )
    for name, value in (("map_prompt", map_prompt), ("reduce_prompt", reduce_prompt)):
        if not isinstance(value, str):
            raise AnalysisInputError(f"map_reduce: {name} must be a str, got {type(value).__name__}")
    if isinstance(n_chunks, bool) or not isinstance(n_chunks, int) or n_chunks < 1:
        raise AnalysisInputError(f"map_reduce: n_chunks must be a whole number >= 1, got {n_chunks!r}")
    if not isinstance(model, str) or not model.strip():
        raise AnalysisInputError(
            f"map_reduce: model must be 'fast', 'balanced', 'powerful', 'auto' or a model name, got {model!r}"
        )
