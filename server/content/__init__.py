"""Markdown content pipeline: front matter, directives, sections, the course.

``Course.load()`` reads ``site/content/**/*.md`` once; ``course.page(path)``
returns a :class:`Page` (title, kicker, lede, body, section links, widgets,
front matter fields). Directives: ``{widget}`` (widget_directive) and
``{listing}`` (listing_directive); ``sections`` groups a body by ``## ``.
"""

from .course import Course, load_course
from .errors import ContentError, DirectiveError
from .frontmatter import FrontMatterError, parse_front_matter
from .markdown import make_markdown
from .pages import CONTENT_DIR, Link, Page, SectionLink

__all__ = [
    "CONTENT_DIR",
    "ContentError",
    "Course",
    "DirectiveError",
    "FrontMatterError",
    "Link",
    "Page",
    "SectionLink",
    "load_course",
    "make_markdown",
    "parse_front_matter",
]
