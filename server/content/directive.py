"""MyST-style directive fences (```` ```{name} argument ````) whose body is a YAML mapping
(:mod:`.yaml_text`): :func:`directive_plugin` turns a directive's fences into tokens. Here also
the ``{widget}`` directive: a live widget in a dive; ``questions:`` in its body (:mod:`.questions`),
every other key a text option for its partial."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererProtocol
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from .errors import DirectiveError
from .questions import QuestionSpec, parse_questions
from .yaml_text import YamlError, YamlMap, load_yaml

_INFO = re.compile(r"^\{(?P<name>[a-z][a-z0-9_-]*)\}(?:\s+(?P<arg>.*?))?\s*$")
OPTION_KEY = re.compile(r"^[a-z][a-z0-9_-]*$")
WIDGET_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class Directive:
    name: str
    argument: str
    body: YamlMap  # the fence's body, parsed; {} when empty
    line: int | None

    def text_options(self, known: set[str] | None = None, skip: str = "") -> dict[str, str]:
        """The body's keys but ``skip`` as text options; ``known`` limits the names."""
        options: dict[str, str] = {}
        for key, value in self.body.items():
            if key == skip:
                continue
            line = self.body.line_of(key)
            if known is not None and key not in known:
                raise DirectiveError(f"{{{self.name}}} has no option {key!r}", line)
            if not OPTION_KEY.match(key):
                raise DirectiveError(f"{{{self.name}}} option {key!r} is not a name (a-z, 0-9, '-', '_')", line)
            if not isinstance(value, str):
                raise DirectiveError(f"{{{self.name}}} option {key!r} is one line of text", line)
            options[key] = value
        return options


def directive_plugin(md: MarkdownIt, name: str, tag: str, build: Callable[[Directive, StateCore], dict[str, object]],
                     render: Callable[..., str]) -> None:
    """Every ```` ```{name} ```` fence becomes a token of type ``name`` with meta
    ``build(directive, state)``, which ``render`` draws it from."""

    def directive_rule(state: StateCore) -> None:
        for token in state.tokens:
            match = _INFO.match(token.info.strip()) if token.type == "fence" else None
            if not match or match.group("name") != name:
                continue
            line = token.map[0] + 1 if token.map else None
            body = parse_body(token.content, name, line)
            token.meta = build(Directive(name, (match.group("arg") or "").strip(), body, line), state)
            token.type = name  # a fence is already a block of nesting 0: only its kind and text change
            token.tag = tag
            token.info = ""
            token.content = ""

    md.core.ruler.after("block", f"{name}_directive", directive_rule)
    md.add_render_rule(name, render)


def parse_body(body: str, directive: str, line: int | None) -> YamlMap:
    """A fence's body as a YAML mapping; ``line`` is the fence's own (the body starts below)."""
    first = line + 1 if line is not None else 1
    try:
        value = load_yaml(body, first)
    except YamlError as exc:
        raise DirectiveError(f"{{{directive}}} body: {exc.message}", exc.line if line is not None else None) from None
    if value is None:
        empty = YamlMap()
        empty.line, empty.key_lines = first, {}
        return empty
    if not isinstance(value, YamlMap):
        raise DirectiveError(f"{{{directive}}} body lines read 'key: value'", first if line is not None else None)
    return value


@dataclass(frozen=True)
class Placement:
    name: str
    options: dict[str, str] = field(default_factory=dict)
    questions: tuple[QuestionSpec, ...] = ()
    line: int | None = None


def widget_plugin(md: MarkdownIt, known: Iterable[str] | None = None) -> None:
    allowed = frozenset(known) if known is not None else None

    def build(directive: Directive, state: StateCore) -> dict[str, object]:
        name = directive.argument
        if not WIDGET_NAME.match(name):
            raise DirectiveError(f"{{widget}} needs one widget name, got {name!r}", directive.line)
        if allowed is not None and name not in allowed:
            raise DirectiveError(f"unknown widget {name!r} (known: {', '.join(sorted(allowed))})", directive.line)
        body = directive.body
        questions = parse_questions(body["questions"], body.line_of("questions")) if "questions" in body else ()
        placement = Placement(name, directive.text_options(skip="questions"), questions, directive.line)
        return {"name": name, "options": placement.options, "placement": placement}

    directive_plugin(md, "widget", "div", build, render_widget)


def render_widget(self: RendererProtocol, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    meta = tokens[idx].meta
    draw = env.get("render_widget") if isinstance(env, dict) else None
    html: str | None = draw(meta["name"], dict(meta["options"])) if draw is not None else None
    if html is None:
        return f'<div class="widget-slot" data-widget="{escapeHtml(meta["name"])}"></div>\n'
    return html if html.endswith("\n") else html + "\n"
