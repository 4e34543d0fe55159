"""Front matter: the YAML mapping between ``---`` lines at the top of a page.

markdown-it's ``front_matter_plugin`` cuts the block out; this module reads
it with PyYAML (see :mod:`.yaml_text` for why every value stays text and
keeps its line). The page schema (:mod:`.pages`) says which keys a page of
each kind takes and converts what it needs (``order`` to an int).

A typical block::

    title: Parent and children
    order: 1
    lede: >
      one paragraph, folded
      from several lines
    next:
      page: /flows/reading-the-results
      note: the three reads
    sources:
      - title: Valkey — SET
        href: https://valkey.io/commands/set/
        note: the counter.

Text that YAML would read otherwise is quoted: a value starting with ``[``,
``{``, ``*``, ``&``, ``!``, ``|``, ``>``, ``%``, ``@`` or a backquote, or
holding ``": "`` or ``" #"``. An error names the file line it is on.
"""

from __future__ import annotations

from .errors import FrontMatterError
from .yaml_text import YamlError, YamlMap, load_yaml

__all__ = ["FrontMatterError", "parse_front_matter"]


def parse_front_matter(text: str, first_line: int = 1) -> YamlMap:
    """The front matter as a mapping of text, lists and mappings.

    ``first_line`` is the file line the block's text starts on (2 in a page,
    right after the opening ``---``), so errors name lines of the file."""
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
