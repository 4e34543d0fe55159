"""Typed exceptions for the scripts' refusals (``EMQKIND``, ``EMQSTALE``, ``EMQSTATE``); ``str(exc)``
is what Valkey said. ``Gone`` has no error reply: the host raises it on a script's 0."""

from __future__ import annotations

from redis.exceptions import ResponseError


class EmqError(Exception):
    """Base of every EchoMQ refusal; ``message`` is the server's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def code(self) -> str:
        """The reply's first word, e.g. ``EMQKIND``."""
        return self.message.split(" ", 1)[0]


class KindRefused(EmqError):
    """``EMQKIND``: a well-formed id that is not ``JOB``-namespaced."""


class Stale(EmqError):
    """``EMQSTALE``: the token is not the row's current attempt."""


class StateRefused(EmqError):
    """``EMQSTATE``: the row is in a state the transition may not touch."""


class Gone(EmqError):
    """The job row does not exist (never landed, or already completed)."""


_BY_PREFIX: dict[str, type[EmqError]] = {"EMQKIND": KindRefused, "EMQSTALE": Stale, "EMQSTATE": StateRefused}


def translate(exc: ResponseError) -> Exception:
    """The typed exception of an EchoMQ refusal; any other error reply comes back as it is."""
    text = str(exc)
    # Errors raised inside a script may arrive wrapped ("... script: ...");
    # the code is still the first EMQ word of the text, wherever it sits.
    for prefix, cls in _BY_PREFIX.items():
        at = text.find(prefix)
        if at != -1:
            return cls(text[at:])
    return exc
