"""The ``{widget}`` directive: a live widget in a dive; ``questions:`` in its body (:mod:`.questions`),
every other key a text option for its partial."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererProtocol
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from .directive import Directive, directive_plugin
from .errors import DirectiveError
from .questions import QuestionSpec, parse_questions

WIDGET_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


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

