"""What the kernel lets reach the browser: every display bundle a cell (a person's or model-written
code) makes is cut to inert MIME types with its HTML, SVG and Markdown sanitised (`clean_bundle`); the
kernel's own displays carry a mark no cell can make (`trust`) and keep their styling.

See docs/drafts/s1-output-sanitising.md for the policy and why it is what it is.
"""

from __future__ import annotations

from rlm_kernel.output.bundles import MODEL_LABEL, clean_bundle, clean_payload_data, label_model_output
from rlm_kernel.output.trust import is_owned, kernel_display, kernel_update, mark, own, own_type, take_mark

__all__ = [
    "MODEL_LABEL",
    "clean_bundle",
    "clean_payload_data",
    "is_owned",
    "kernel_display",
    "kernel_update",
    "label_model_output",
    "mark",
    "own",
    "own_type",
    "take_mark",
]
