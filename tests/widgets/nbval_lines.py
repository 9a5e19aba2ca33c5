"""The widgets' nbval sanitizer (`rlm_kernel/widgets/` `SANITIZE_CFG`) applied to one line, as nbval does."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from rlm_kernel.widgets import text

__all__ = ["sanitize"]


def sanitize(line: str) -> str:
    """`line` with every replacement of the shipped sanitizer file applied, in its order."""
    cfg = configparser.ConfigParser()
    cfg.read(Path(text.__file__).with_name(text.SANITIZE_CFG))
    for section in cfg.sections():
        line = re.sub(cfg[section]["regex"], cfg[section]["replace"], line)
    return line
