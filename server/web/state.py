"""Typed reads of what `create_app` puts on `app.state`.

Starlette's `app.state` answers Any for every attribute; the views read the
course and the templates through these, so a view's types hold end to end and
the attribute names are written once.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from server.content import Course
from server.web import guard


def course_of(request: Request) -> Course:
    """The course the site loaded at start."""
    course: Course = request.app.state.course
    return course


def respond(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    """`template` rendered with `context` as the page's response.

    `in_class`: the visitor is a member of a class (not its instructor), so a
    page of theirs without widgets still follows the class's moves (base.html)."""
    templates: Jinja2Templates = request.app.state.templates
    in_class = guard.room_of(request) is not None and not guard.is_instructor(request)
    return templates.TemplateResponse(request, template, {"in_class": in_class, **context}, status_code=status)
