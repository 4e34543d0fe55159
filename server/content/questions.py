"""Questions a dive declares in a ``{widget}`` body (docs/ARCHITECTURE.md): only their shape is
checked here; whether the widget has that action and readings is the widgets layer's."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, replace
from typing import Any, Literal

from .errors import DirectiveError
from .yaml_text import YamlList, YamlMap

NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
# before, before-1, before+2: the reading before the action, moved by a whole number
RELATIVE = re.compile(r"^before(?:(?P<sign>[+-])(?P<step>[0-9]+))?$")
INTEGER = re.compile(r"^-?[0-9]+$")

_REQUIRED = ("id", "action", "legend", "reading", "answer", "says")
_OPTIONAL = ("when", "subject", "choices", "feedback")

AnswerKind = Literal["number", "choice"]


@dataclass(frozen=True)
class FeedbackSpec:
    answer: str  # a literal value, or "before", "before-1", "before+1"
    text: str
    line: int


@dataclass(frozen=True)
class QuestionSpec:
    id: str
    action: str
    legend: str
    reading: str
    when: str | None  # a reading true while the question is open; None: always open
    answer: AnswerKind
    choices: tuple[tuple[str, str], ...]  # (value, label), in the order written; () for a number
    says: str  # the fact in words; "{value}" is what Valkey holds (a choice by its label)
    feedback: tuple[FeedbackSpec, ...]
    line: int
    subject: str | None = None  # a reading naming what the question is about: the legend's {subject}

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "action": self.action, "legend": self.legend, "reading": self.reading,
            "when": self.when, "subject": self.subject, "answer": self.answer,
            "choices": [[value, label] for value, label in self.choices],
            "says": self.says,
            "feedback": [{"answer": f.answer, "text": f.text} for f in self.feedback],
            "line": self.line,
        }


def parse_questions(raw: Any, line: int) -> tuple[QuestionSpec, ...]:
    """The ``questions:`` list of one ``{widget}`` body (``line``: where the key is)."""
    if not isinstance(raw, YamlList):
        raise DirectiveError("questions: is a list of questions, each starting '- id: …'", line)
    found: list[QuestionSpec] = []
    seen: dict[str, int] = {}
    for item, item_line in zip(raw, raw.item_lines, strict=True):
        question = _question(item, item_line)
        if question.id in seen:
            raise DirectiveError(f"question id {question.id!r} is used twice (first on line {seen[question.id]})",
                                 question.line)
        seen[question.id] = question.line
        found.append(question)
    return tuple(found)


def _question(raw: Any, line: int) -> QuestionSpec:
    if not isinstance(raw, YamlMap):
        raise DirectiveError("a question is a mapping: '- id: …' then its fields", line)
    for key in raw:
        if key not in _REQUIRED and key not in _OPTIONAL:
            raise DirectiveError(f"a question has no field {key!r} (fields: {', '.join(_REQUIRED + _OPTIONAL)})",
                                 raw.line_of(key))
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise DirectiveError(f"question {raw.get('id', '(no id)')!r} lacks {', '.join(missing)}", raw.line)
    text = {key: _text(raw, key) for key in _REQUIRED}
    for key in ("id", "action", "reading"):
        if not NAME.match(text[key]):
            raise DirectiveError(f"{key} {text[key]!r} is not a name (a-z, 0-9, '-')", raw.line_of(key))
    if not text["legend"].startswith("Predict"):
        raise DirectiveError(f"a question's legend starts with 'Predict', got {text['legend']!r}",
                             raw.line_of("legend"))
    kind = text["answer"]
    if kind not in ("number", "choice"):
        raise DirectiveError(f"answer is 'number' or 'choice', got {kind!r}", raw.line_of("answer"))
    choices = _choices(raw, kind)
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(text["says"]) if name is not None}
    except ValueError as exc:
        raise DirectiveError(f"says: {exc} (write a literal brace as {{{{ or }}}})", raw.line_of("says")) from None
    if fields != {"value"}:
        raise DirectiveError("says holds {value}, where what Valkey holds goes, and no other {…}",
                             raw.line_of("says"))
    question = QuestionSpec(
        id=text["id"], action=text["action"], legend=text["legend"], reading=text["reading"],
        when=_named(raw, "when"), answer="number" if kind == "number" else "choice", choices=choices,
        says=text["says"], feedback=(), line=raw.line, subject=_named(raw, "subject"),
    )
    # feedback answers are checked against the question (its kind, its choices)
    return replace(question, feedback=_feedback(raw, question))


def _text(raw: YamlMap, key: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        raise DirectiveError(f"{key} is one line of text", raw.line_of(key))
    return value.strip()


def _named(raw: YamlMap, key: str) -> str | None:
    """An optional field naming one of the widget's readings (`when`, `subject`)."""
    if key not in raw:
        return None
    value = _text(raw, key)
    if not NAME.match(value):
        raise DirectiveError(f"{key} names one reading (a-z, 0-9, '-'), got {value!r}", raw.line_of(key))
    return value


def _choices(raw: YamlMap, kind: str) -> tuple[tuple[str, str], ...]:
    value = raw.get("choices")
    if kind == "number":
        if value is not None:
            raise DirectiveError("choices are for answer: choice only", raw.line_of("choices"))
        return ()
    if not isinstance(value, YamlMap) or len(value) < 2:
        raise DirectiveError("answer: choice needs choices: at least two 'value: label' lines",
                             raw.line_of("choices"))
    for key, label in value.items():
        if not isinstance(label, str) or not label.strip():
            raise DirectiveError(f"choice {key!r} needs a label", value.line_of(key))
    return tuple((key, label.strip()) for key, label in value.items())


def _feedback(raw: YamlMap, question: QuestionSpec) -> tuple[FeedbackSpec, ...]:
    value = raw.get("feedback")
    if value is None:
        return ()
    if not isinstance(value, YamlList):
        raise DirectiveError("feedback is a list of '- answer: …' / 'text: …' items", raw.line_of("feedback"))
    items: list[FeedbackSpec] = []
    for item, line in zip(value, value.item_lines, strict=True):
        if not isinstance(item, YamlMap) or set(item) != {"answer", "text"}:
            raise DirectiveError("each feedback item has exactly answer: and text:", line)
        answer, text = _text(item, "answer"), _text(item, "text")
        if question.answer == "choice" and answer not in dict(question.choices):
            raise DirectiveError(f"feedback answer {answer!r} is not one of the choices", item.line_of("answer"))
        if question.answer != "choice" and not RELATIVE.match(answer) and not INTEGER.match(answer):
            raise DirectiveError(f"feedback answer {answer!r} is a whole number, before, before-N or before+N",
                                 item.line_of("answer"))
        if any(f.answer == answer for f in items):
            raise DirectiveError(f"feedback for answer {answer!r} is given twice", line)
        items.append(FeedbackSpec(answer, text, line))
    return tuple(items)


