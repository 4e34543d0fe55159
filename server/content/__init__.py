"""Markdown content pipeline: front matter, directives, sections, the course.

``load_course()`` reads ``site/content/**/*.md`` once; ``course.page(path)``
returns a :class:`Page`. Directives: ``{widget}`` (whose body may declare
questions) and ``{listing}``; front matter and directive bodies are YAML.
"""

from .course import Course, load_course
from .errors import ContentError
from .pages import Page
from .widget_directive import Placement

__all__ = ["ContentError", "Course", "Page", "Placement", "load_course"]
