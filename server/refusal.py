"""The site's one refusal type: what a request asked cannot be done, said with its HTTP status and sentence.

Each package's own refusals subclass it (a guard's, a body's, a class's, a
sandbox's, a widget's, a grader's) and carry their status; the web layer's
exception handlers (server/web/errors.py) answer every one the same way,
JSON or a page. Below every site package, so each can raise one; the host
library (server/emq) stays free of the site and is mapped there instead.
"""

from __future__ import annotations


class Refusal(Exception):
    """Nothing was done: `status` (4xx, or 503 to retry after `retry_after` seconds) and `message`."""

    status: int = 400
    retry_after: int | None = None

    def __init__(self, message: str = "", *, status: int | None = None, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if retry_after is not None:
            self.retry_after = retry_after

    def as_json(self) -> dict[str, object]:
        """The JSON body of the answer: `{"error": <sentence>}`."""
        return {"error": self.message}
