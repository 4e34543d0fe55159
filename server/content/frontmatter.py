"""Front matter: the YAML mapping between ``---`` lines at the top of a page.

markdown-it's ``front_matter_plugin`` cuts the block out; this reads it (see
:mod:`.yaml_text`); the page schema (:mod:`.page_loader`) checks its keys.
"""

from __future__ import annotations

from .errors import FrontMatterError
from .yaml_text import YamlError, YamlMap, load_yaml

__all__ = ["FrontMatterError", "parse_front_matter"]


def parse_front_matter(text: str, first_line: int = 1) -> YamlMap:
    """The front matter as a mapping; ``first_line`` is the file line the block starts on."""
    if "\t" in text:
        number = first_line + text[: text.index("\t")].count("\n")
        raise FrontMatterError("tabs are not allowed; indent with spaces", number)
    try:
        meta = load_yaml(text, first_line)
    except YamlError as exc:
        raise FrontMatterError(exc.message, exc.line) from None
    if meta is None:
        raise FrontMatterError("the front matter is empty", first_line)
    if not isinstance(meta, YamlMap):
        raise FrontMatterError("the front matter is a mapping of 'key: value' lines", first_line)
    return meta
