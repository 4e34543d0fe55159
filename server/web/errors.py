"""The site's JSON answers (msgspec encodes them), and one answer for every failure a view can meet, in
Starlette's exception handlers: never a traceback.

A view raises; the handlers answer the same fault with the same words everywhere: a `Refusal` at its
status, Valkey away, busy, out of memory or refusing writes a 503 to retry, a bug of ours a logged 500.
Whether the answer is JSON or a page is decided here alone (`wants_page`): a script gets JSON; a
browser's page request gets its path's own page (the instructor's, the room's), else the site's error
page, in the site's layout.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import msgspec
from redis.exceptions import (
    BusyLoadingError,
    ClusterError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from server.emq.errors import EmqError
from server.emq.keyspace import BadId
from server.emq.shape import FlowShapeError
from server.live.hub import UNREACHABLE
from server.refusal import Refusal
from server.valkey.client import is_busy
from server.valkey.reply import error_text, wrong_type
from server.web.bodies import wants_json
from server.widgets.turn import StrayLock

log = logging.getLogger("emqlab.api")
dumps: Callable[[Any], bytes] = msgspec.json.Encoder().encode  # typed structs and plain data alike
# A path's own page for a refusal (the instructor's, the room's): the sentence said on it, at its status
PageAnswer = Callable[[Request, Refusal], Awaitable[Response]]
ExceptionHandler = Callable[[Request, Exception], Awaitable[Response]]

WRONG_TYPE = ("A key of this widget holds another type than the key grammar gives it (a console line, an "
              "operator's command or a fault changed it), so the action cannot run on it. Press Reset: it "
              "removes the widget's keys whatever they hold. If the fault stays, the key is your progress "
              "record's: Start over on /progress removes every key of your sandbox.")
# The same fault met drawing a page (a widget's key, or the sandbox's progress record, which no Reset
# touches): what a page can offer is the learner's Start over, which removes every key of the sandbox.
WRONG_TYPE_PAGE = ("A key of your sandbox holds another type than the site keeps there (an operator's command "
                   "or a fault changed it), so this page cannot be drawn. Start over: it removes your sandbox's "
                   "keys whatever they hold and lands every scenario afresh (your progress record is forgotten). "
                   "If this page comes back after that, the operator must look at the Valkey.")


class WrongType(Refusal):
    """A key of the wrong type: 409, with the words a page says apart from an action's."""

    status = 409

    def __init__(self) -> None:
        super().__init__(WRONG_TYPE)
        self.on_page = WRONG_TYPE_PAGE


# Valkey away, loading, a replica after a failover, or a cluster whose topology is changing: retried.
VALKEY_DOWN = (RedisConnectionError, RedisTimeout, BusyLoadingError, ReadOnlyError, OSError,
               RedisClusterException, ClusterError)
# What a view that degrades rather than refuses (a stream, a page's first paint) catches: a refusal or
# any of Valkey's faults (is_fault tells which), never a bug
FAULTS = (Refusal, EmqError, RedisError, RedisClusterException, OSError)
BUSY = ("Valkey is busy with a long-running script right now (the site stops a learner's script past its "
        "budget), so nothing was done: try again in a moment.")
OUT_OF_MEMORY = (
    "Valkey is at its memory limit right now, so nothing was written. A Reset still works there and "
    "frees memory: press Reset on a widget (or ask the instructor to reset the class), then try again."
)

# Valkey refusing writes for a while (MISCONF: its data directory stopped being writable, or a save
# failed), said in words (503) rather than a 500. A script holding it (BUSY) is is_busy's.
MISCONF = ("Valkey cannot save its data right now (writing to its data directory failed), so it refuses "
           "every write and nothing was written; the operator must free or fix that folder. Try again later.")


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """The failure and its causes, a few links deep (out of a script: an `EmqError` whose cause is Valkey's)."""
    for _ in range(5):
        if exc is None:
            return
        yield exc
        exc = exc.__cause__ or exc.__context__


def _out_of_memory(exc: BaseException) -> bool:
    return any(isinstance(e, OutOfMemoryError) or str(e).startswith("OOM ") or "OOM command not allowed" in str(e)
               for e in _chain(exc))


def _misconf(exc: BaseException) -> bool:
    return any(isinstance(e, Exception) and error_text(e).split(" ", 1)[0] == "MISCONF" for e in _chain(exc))


def _held_otherwise(exc: Exception) -> bool:
    """A script's own wrong type (`EMQTYPE … but it holds a string`): it checks a key's type before it
    writes, so the fault Valkey says as WRONGTYPE reaches a widget in these words. (`… but the key
    grammar makes that key a …` is a key named wrong, a bug of ours: not this.)"""
    text = error_text(exc) if isinstance(exc, RedisError) else ""
    return text.startswith("EMQTYPE ") and ", but it holds a " in text


def is_fault(exc: BaseException) -> bool:
    """A fault of Valkey's (away, busy, out of memory or refusing writes) rather than a refusal or a bug."""
    return isinstance(exc, VALKEY_DOWN) or is_busy(exc) or _out_of_memory(exc) or _misconf(exc)


def refusal_of(exc: Exception) -> Refusal | None:
    """What went wrong as a refusal: the packages' own as they are, Valkey's faults and the host
    library's refusals in words; None for a bug of ours."""
    if isinstance(exc, Refusal):
        return exc
    if isinstance(exc, (BadId, FlowShapeError)):
        return Refusal(str(exc))
    if is_busy(exc):
        return Refusal(BUSY, status=503, retry_after=1)
    if isinstance(exc, StrayLock) or wrong_type(exc) or _held_otherwise(exc):
        return WrongType()
    if _out_of_memory(exc):
        log.warning("valkey is out of memory: answered 503")
        return Refusal(OUT_OF_MEMORY, status=503, retry_after=30)
    if _misconf(exc):
        log.warning("valkey answered MISCONF: answered 503")
        return Refusal(MISCONF, status=503, retry_after=30)
    if isinstance(exc, EmqError):
        return Refusal(str(exc), status=409)
    if isinstance(exc, VALKEY_DOWN):
        return Refusal(UNREACHABLE, status=503, retry_after=2)
    if isinstance(exc, ClientDisconnect):
        # The visitor closed the tab mid-upload: no one is waiting for this answer.
        log.info("client went away before its request body arrived")
        return Refusal("the request body did not arrive: the client disconnected")
    return None


def wants_page(request: Request) -> bool:
    """A browser's request for a page (answered in HTML) rather than a script's (JSON): the one place
    that decides it. A GET (or HEAD) outside /api/, not asking for JSON, and not a download (.json,
    .csv); a refused form's POST keeps its JSON answer (the instructor's and the room's forms have
    their own pages above)."""
    path = request.url.path
    return (request.method in ("GET", "HEAD") and not path.startswith("/api/")
            and not path.endswith((".json", ".csv")) and not wants_json(request))


class JSONAnswer(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def json_answer(refusal: Refusal) -> JSONAnswer:
    headers = {"Retry-After": str(refusal.retry_after)} if refusal.retry_after is not None else None
    return JSONAnswer(refusal.as_json(), status_code=refusal.status, headers=headers)


def exception_handlers(pages: Mapping[str, PageAnswer], error_page: PageAnswer) -> dict[Any, ExceptionHandler]:
    """The app's handlers: every failure a view raises, answered on its path's page, else JSON to a
    script and `error_page` to a browser (`wants_page`). `pages` keys are paths, or prefixes when they
    end with "/"; their answers tell a script from a browser themselves."""

    async def answer(request: Request, exc: Exception) -> Response:
        refusal = refusal_of(exc)
        if refusal is None:
            log.error("widget action failed", exc_info=exc)
            refusal = Refusal("the server failed on this action; it has been logged", status=500)
        path = request.url.path
        page = pages.get(path) or next((p for k, p in pages.items() if k.endswith("/") and path.startswith(k)), None)
        page = page or (error_page if wants_page(request) else None)
        return await page(request, refusal) if page is not None else json_answer(refusal)

    # Each family by its class, so Starlette answers it inside the site's middleware; a bug
    # (`Exception`) is Starlette's outermost handler's, which also logs its traceback.
    answered = (Refusal, BadId, FlowShapeError, EmqError, RedisError, RedisClusterException,
                OSError, ClientDisconnect, StrayLock, Exception)
    return dict.fromkeys(answered, answer)
