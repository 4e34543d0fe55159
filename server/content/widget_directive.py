"""The ``{widget}`` directive: a live widget placed in a dive.

Markdown::

    ```{widget} fanin
    questions:
      - id: deps-after-complete
        action: complete-child
        …
    ```

    ```{widget} console
    try-1: GET emq:{fanin}:job:JOBparent:dependencies
    ```

The body is a YAML mapping (:mod:`.directive`). ``questions:`` is the list of
questions asked on the widget (:mod:`.questions`); every other key is a plain
text option for the widget's partial (the console's ``try-N`` examples).

Parse (core rule ``widget_directive``): every ``{widget}`` fence becomes a
``widget`` token whose ``meta`` is ``{"name", "options", "placement"}``,
``placement`` a :class:`Placement`. A name outside the known set is an error
at load time. The known set comes from the plugin parameter ``known`` or from
``env["known_widgets"]``; when neither is given, any well-formed name is
accepted.

Render (rule ``widget``): ``env["render_placement"](placement)`` when the app
gives it, else ``env["render_widget"](name, options)``; with neither, an empty
slot, ``<div class="widget-slot" data-widget="name"></div>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererProtocol
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from .directive import Directive, as_leaf, find_directive
from .errors import DirectiveError
from .questions import QuestionSpec, parse_questions

WIDGET_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class Placement:
    """One ``{widget}`` fence: which widget, its text options, its questions.

    ``line`` is the fence's line in the dive's Markdown file."""

    name: str
    options: dict[str, str] = field(default_factory=dict)
    questions: tuple[QuestionSpec, ...] = ()
    line: int | None = None

    def question(self, question_id: str) -> QuestionSpec | None:
        return next((q for q in self.questions if q.id == question_id), None)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "options": dict(self.options),
                "questions": [q.as_json() for q in self.questions], "line": self.line}


def placement_of(directive: Directive) -> Placement:
    """The placement a ``{widget}`` fence declares (its name checked elsewhere)."""
    body = directive.body
    questions: tuple[QuestionSpec, ...] = ()
    if "questions" in body:
        questions = parse_questions(body["questions"], body.line_of("questions"))
    plain = Directive(directive.name, directive.argument, _without(body, "questions"), directive.line)
    return Placement(directive.argument, plain.text_options(), questions, directive.line)


def widget_plugin(md: MarkdownIt, known: Iterable[str] | None = None) -> None:
    plugin_known = frozenset(known) if known is not None else None

    def widget_directive(state: StateCore) -> None:
        env_known = state.env.get("known_widgets") if isinstance(state.env, dict) else None
        allowed = plugin_known
        if allowed is None and env_known is not None:
            allowed = frozenset(env_known)
        for token in state.tokens:
            directive = find_directive(token, "widget")
            if directive is None:
                continue
            name = directive.argument
            if not WIDGET_NAME.match(name):
                raise DirectiveError(
                    f"{{widget}} needs one widget name, got {name!r}", directive.line
                )
            if allowed is not None and name not in allowed:
                raise DirectiveError(
                    f"unknown widget {name!r} (known: {', '.join(sorted(allowed))})",
                    directive.line,
                )
            placement = placement_of(directive)
            as_leaf(token, "widget", "div")
            token.meta = {"name": name, "options": placement.options, "placement": placement}

    md.core.ruler.after("block", "widget_directive", widget_directive)
    md.add_render_rule("widget", render_widget)


def render_widget(self: RendererProtocol, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    meta = tokens[idx].meta
    hooks = env if isinstance(env, dict) else {}
    html: str | None = None
    if hooks.get("render_placement") is not None:
        html = hooks["render_placement"](meta["placement"])
    elif hooks.get("render_widget") is not None:
        html = hooks["render_widget"](meta["name"], dict(meta["options"]))
    if html is None:
        return f'<div class="widget-slot" data-widget="{escapeHtml(meta["name"])}"></div>\n'
    return html if html.endswith("\n") else html + "\n"


def _without(body: Any, key: str) -> Any:
    """A copy of the body mapping without ``key``, its line numbers kept."""
    copy = type(body)((k, v) for k, v in body.items() if k != key)
    copy.line = body.line
    copy.key_lines = {k: n for k, n in body.key_lines.items() if k != key}
    return copy
