"""Errors the content pipeline raises while loading the course.

Every problem is found when the site starts (or when a test loads the
course), never while a visitor is reading a page. A message names where the
problem is the way a compiler does, ``site/content/flows/cross-queue.md:42:
…``, so an author can jump to the line.
"""

from __future__ import annotations

from pathlib import Path


class ContentError(Exception):
    """A content file cannot be turned into a page (bad front matter, a
    directive naming something that does not exist, a dead internal link).

    ``path`` and ``line`` (1-based, in the Markdown file) say where, when known.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(_located(message, self.path, line))


class DirectiveError(ContentError):
    """A ``{widget}`` or ``{listing}`` fence is malformed or names something
    unknown. ``line`` is the 1-based line of the problem in its Markdown file
    (the fence, or the line inside its body)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message, line=line)


class FrontMatterError(ContentError):
    """The front matter between the ``---`` lines is not the YAML a page needs.
    ``line`` is the 1-based line in the Markdown file."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message, line=line)


def in_file(error: ContentError, path: str | Path) -> ContentError:
    """The same problem, now naming the file it was found in (the parsers that
    find it do not know the file; the page loader does)."""
    return ContentError(error.message, path=path, line=error.line)


def _located(message: str, path: str | None, line: int | None) -> str:
    if path is not None and line is not None:
        return f"{path}:{line}: {message}"
    if path is not None:
        return f"{path}: {message}"
    if line is not None:
        return f"line {line}: {message}"
    return message
