"""The Markdown pipeline: ``load_course()`` reads ``site/content/**/*.md`` once (YAML front matter,
the ``{widget}`` and ``{listing}`` directives, sections); ``course.page(path)`` is a :class:`Page`."""

from .course import Course, load_course
from .directive import Placement
from .errors import ContentError
from .pages import Page

__all__ = ["ContentError", "Course", "Page", "Placement", "load_course"]
