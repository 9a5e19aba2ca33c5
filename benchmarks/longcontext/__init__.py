"""A long-context benchmark after the RLM paper's Table 1 (issue 27): generators, scorers, systems and runner.

Families: `needle` (S-NIAH), `aggregation` (OOLONG), `pairs` (OOLONG-Pairs), `code` (CodeQA over the installed
standard library), `multihop` (BrowseComp-Plus-like chains over a document corpus) and `protocol` (the five
plain questions of the issue's failing run). `python -m benchmarks.longcontext.run --help` runs them;
docs/drafts/bench-longcontext.md describes the suite.
"""
