"""Markdown content pipeline: front matter, directives, sections, the course.

``load_course()`` reads ``site/content/**/*.md`` once; ``course.page(path)``
returns a :class:`Page` (title, kicker, lede, body, section links, widgets,
placements, front matter fields). Directives: ``{widget}`` (widget_directive,
whose body may declare questions: :mod:`.questions`) and ``{listing}``
(listing_directive); ``sections`` groups a body by ``## ``. Front matter and
directive bodies are YAML (:mod:`.yaml_text`).
"""

from .course import CheckPlacement, Course, load_course
from .errors import ContentError, DirectiveError, FrontMatterError
from .frontmatter import parse_front_matter
from .markdown import make_markdown
from .pages import CONTENT_DIR, Link, Page, RenderPlacement, RenderWidget, SectionLink
from .questions import FeedbackSpec, QuestionSpec
from .widget_directive import Placement

__all__ = [
    "CONTENT_DIR",
    "CheckPlacement",
    "ContentError",
    "Course",
    "DirectiveError",
    "FeedbackSpec",
    "FrontMatterError",
    "Link",
    "Page",
    "Placement",
    "QuestionSpec",
    "RenderPlacement",
    "RenderWidget",
    "SectionLink",
    "load_course",
    "make_markdown",
    "parse_front_matter",
]
