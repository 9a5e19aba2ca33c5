"""What a parser returns: the text of one file and where its units (pages, messages, cells) start."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Extracted", "Member", "TextBuilder"]


@dataclass(frozen=True)
class Extracted:
    """The text of one file. `marks` are (offset in `text`, unit, number): where page 3 or message 2
    starts. For tables, `header_lines` lines come first and record N is line `header_lines + N`."""

    text: str
    unit: str = ""
    marks: tuple[tuple[int, str, int], ...] = ()
    header_lines: int = 0
    format: str = "text"


@dataclass(frozen=True)
class Member:
    """A file inside an archive: its name (`archive.zip!dir/name`) and its bytes."""

    name: str
    data: bytes


@dataclass
class TextBuilder:
    """Collects a file's text piece by piece, marking where each unit starts with a `--- unit N ---` line."""

    unit: str
    format: str
    parts: list[str] = field(default_factory=list)
    marks: list[tuple[int, str, int]] = field(default_factory=list)
    size: int = 0

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def start(self, number: int, note: str = "") -> None:
        """Begin unit `number` (counted from 1): its marker line is part of it."""
        if self.size and not self.parts[-1].endswith("\n"):
            self.add("\n")
        self.marks.append((self.size, self.unit, number))
        self.add(f"--- {self.unit} {number}{' ' + note if note else ''} ---\n")

    def done(self) -> Extracted:
        return Extracted("".join(self.parts), self.unit, tuple(self.marks), 0, self.format)
