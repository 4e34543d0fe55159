"""The prediction rules that need no Valkey: which widgets ask, that no page,
module or dive holds an answer, and that a question has no field for one."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from server.widgets import WIDGETS
from server.widgets.predict import Question

SANDBOX = "s0123456789"
SITE = Path(__file__).resolve().parents[2] / "site"


def predict(question: str, answer: Any) -> dict[str, Any]:
    return {"predict": {"question": question, "answer": answer}}


# Widgets built alongside the predictions, whose questions are still to come.
ASKS_NOTHING_YET = {"console"}


def test_every_widget_but_the_newest_declares_questions() -> None:
    assert {name for name, w in WIDGETS.items() if not w.questions} <= ASKS_NOTHING_YET


# An answer written down: a data attribute for it, a word for it, a literal
# answer value, or a verdict said by the page itself.
STORED_ANSWER = re.compile(r"data-(answer|correct|truth|expected)|\b(correct|truth|expected|solution)\b"
                           r"|\banswers?\s*[:=]\s*[\"'\d-]|Right:|Not quite", re.IGNORECASE)


COMMENTS = ("//", "/*", "* ", "{#")  # words about the truth, not answers


def test_no_template_script_or_dive_holds_an_answer_or_a_verdict() -> None:
    """Verdicts are the server's words from Valkey's keys: no page, module or
    dive may carry an answer to compare with, nor say Right or Not quite itself."""
    for planted in ('<input data-answer="2">', "const answer = 2;", "{ truth: q.value }", "'Right: yes'"):
        assert STORED_ANSWER.search(planted), planted  # the scan would see one
    found = []
    for path in [*SITE.joinpath("templates").rglob("*.html"), *SITE.joinpath("static").rglob("*.js"),
                 *SITE.joinpath("content").rglob("*.md")]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip().startswith(COMMENTS) and STORED_ANSWER.search(line):
                found.append(f"{path.relative_to(SITE)}:{n}: {line.strip()}")
    assert found == []


def test_a_question_has_no_field_that_could_hold_its_answer() -> None:
    fields = {f.name for f in dataclasses.fields(Question)}
    assert fields == {"id", "action", "legend", "measure", "fact", "when", "choices"}
    for widget in WIDGETS.values():
        for question in widget.questions:
            assert set(question.as_json()) == {"id", "action", "legend", "kind", "choices"}
