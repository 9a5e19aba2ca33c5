"""Sphinx configuration of the rlm-kernel documentation (MyST Markdown; tutorials rendered by myst-nb from
their stored outputs, never executed; the reference pages generated from the code by `_ext/rlm_reference`)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import rlm_kernel  # noqa: E402

project = "rlm-kernel"
author = "the rlm-kernel authors"
copyright = "2026, the rlm-kernel authors"  # noqa: A001 - Sphinx's name
version = release = rlm_kernel.__version__

extensions = ["myst_nb", "sphinx.ext.autodoc", "rlm_reference"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "drafts", "contracts.md", "**/.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4
nb_execution_mode = "off"  # the tutorials' stored outputs are what the docs show; CI replays them under nbval
nb_merge_streams = True
suppress_warnings = ["myst.header"]  # pages carved from the former README keep their original heading levels

html_theme = "furo"
html_title = f"rlm-kernel {release}"
html_static_path: list[str] = []
