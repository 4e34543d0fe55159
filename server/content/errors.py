"""Errors the content pipeline raises while loading the course.

Every problem is found when the site starts (or when a test loads the
course), never while a visitor is reading a page.
"""

from __future__ import annotations


class ContentError(Exception):
    """A content file cannot be turned into a page (bad front matter, a
    directive naming something that does not exist, a dead internal link)."""


class DirectiveError(ContentError):
    """A ``{widget}`` or ``{listing}`` fence is malformed or names something
    unknown. ``line`` is the 1-based line of the fence in its Markdown file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"{where}{message}")
