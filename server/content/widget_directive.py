"""The ``{widget}`` directive: a live widget placed in a dive.

Markdown::

    ```{widget} fanin
    ```

Parse (core rule ``widget_directive``): every ``{widget}`` fence becomes a
``widget`` token whose ``meta`` is ``{"name": ..., "options": {...}}``. A name
outside the known set is an error at load time. The known set comes from the
plugin parameter ``known`` or from ``env["known_widgets"]``; when neither is
given, any well-formed name is accepted.

Render (rule ``widget``): calls ``env["render_widget"](name, options)`` and
inserts the HTML the app returns; without that callable it leaves an empty
slot, ``<div class="widget-slot" data-widget="name"></div>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererProtocol
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from .directive import as_leaf, find_directive
from .errors import DirectiveError

WIDGET_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


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
            as_leaf(token, "widget", "div")
            token.meta = {"name": name, "options": directive.options}

    md.core.ruler.after("block", "widget_directive", widget_directive)
    md.add_render_rule("widget", render_widget)


def render_widget(self: RendererProtocol, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    meta = tokens[idx].meta
    render = env.get("render_widget") if isinstance(env, dict) else None
    if render is not None:
        html: str = render(meta["name"], dict(meta["options"]))
        return html if html.endswith("\n") else html + "\n"
    return f'<div class="widget-slot" data-widget="{escapeHtml(meta["name"])}"></div>\n'
