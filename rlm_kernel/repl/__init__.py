"""The RLM REPL: context loading, the preloaded query helpers, FINAL semantics, preload and repair.

`preload.install(ns, shell)` fills a notebook namespace; `preload.repair(ns)` restores what a cell rebound.
"""

__all__: list[str] = []
