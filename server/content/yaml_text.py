"""YAML as the course's authors write it: every scalar the string written (``no:`` is not ``False``),
every value's line kept, and a key given twice an error (PyYAML would keep the last)."""

from __future__ import annotations

from typing import Any

import yaml

from .errors import ContentError

# Deeper than any page needs; it stops an alias that refers to itself.
_MAX_DEPTH = 12


class YamlError(ContentError):
    """The text is not YAML, or not YAML this pipeline accepts; ``line`` is 1-based."""


class YamlMap(dict[str, Any]):
    """A mapping, with ``line`` (where it starts) and ``key_lines`` (each key's line)."""

    line: int
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class YamlList(list[Any]):
    """A list, with ``line`` (where it starts) and ``item_lines`` (each item's line)."""

    line: int
    item_lines: list[int]


def load_yaml(text: str, first_line: int = 1) -> Any:
    """The YAML document in ``text`` (empty: ``None``); ``first_line``: the file line it starts on."""
    try:
        node = yaml.compose(text, Loader=yaml.BaseLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + first_line if mark is not None else None
        problem = exc.problem or exc.context or "not valid YAML"
        if "mapping values are not allowed" in problem:
            problem += " (a value holding ': ' is written in quotes)"
        raise YamlError(f"not valid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"not valid YAML: {exc}", first_line) from None
    if node is None:
        return None
    return _value(node, first_line, 0)


def _value(node: yaml.Node, first_line: int, depth: int) -> Any:
    line = node.start_mark.line + first_line
    if depth > _MAX_DEPTH:
        raise YamlError("nested too deeply (an alias that refers to itself?)", line)
    if isinstance(node, yaml.ScalarNode):
        return str(node.value)
    if isinstance(node, yaml.SequenceNode):
        items = YamlList(_value(item, first_line, depth + 1) for item in node.value)
        items.line, items.item_lines = line, [item.start_mark.line + first_line for item in node.value]
        return items
    if not isinstance(node, yaml.MappingNode):
        raise YamlError(f"unexpected YAML node {type(node).__name__}", line)
    mapping = YamlMap()
    mapping.line, mapping.key_lines = line, {}
    for key_node, value_node in node.value:
        key_line = key_node.start_mark.line + first_line
        if not isinstance(key_node, yaml.ScalarNode) or not str(key_node.value):
            raise YamlError("a key is a plain word, not a list or a mapping", key_line)
        key = str(key_node.value)
        if key in mapping:
            raise YamlError(f"key {key!r} given twice (first on line {mapping.key_lines[key]})", key_line)
        mapping[key] = _value(value_node, first_line, depth + 1)
        mapping.key_lines[key] = key_line
    return mapping
