"""A shell word as the parser found it: its text, and its value when fixed before the
line runs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Word:
    text: str            # for display: quotes removed, expansions as they were written
    value: str | None    # the literal value; None when an expansion makes it dynamic
    pattern: bool = False  # holds an unquoted pattern character (glob, brace, tilde)
    prefix: str = ""     # the literal text before the first expansion or pattern

    @property
    def literal(self) -> str | None:
        """The value when it is fixed before the line runs, else None."""
        return None if self.pattern else self.value


def literal_word(text: str) -> Word:
    """A word whose value is `text`, fixed before the line runs."""
    return Word(text, text, prefix=text)
