"""One answer for every failure a view can meet: a clear JSON status, never a traceback.

Every view maps what went wrong through `answer_error`, so the same fault gets
the same words and status everywhere: our refusals a 4xx, Valkey away or out of
memory a 503 to retry, a bug of ours a logged 500.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable

from redis.exceptions import (
    BusyLoadingError,
    ClusterError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from server.emq.errors import EmqError
from server.emq.keyspace import BadId
from server.emq.shape import FlowShapeError
from server.exercises import GradeRefused
from server.sandboxes.admission import AddressFull, Full
from server.sandboxes.learners import BadName
from server.sandboxes.rooms import BadRoom, RoomsFull
from server.sandboxes.sandbox import NoSandbox
from server.valkey.long_script import is_busy
from server.valkey.reply import error_text
from server.web.answer import JSONAnswer
from server.web.guards import Refused
from server.widgets import base as widget_base
from server.widgets.turn import Busy

log = logging.getLogger("emqlab.api")
Handler = Callable[[Request], Awaitable[Response]]

WRONG_TYPE = ("A key of this widget holds another type than the key grammar gives it (a console line "
              "changed it), so the action cannot run on it. Press Reset: it removes the keys whatever they hold.")


# Valkey away, loading, a replica after a failover, or a cluster whose topology is changing: retried.
VALKEY_DOWN = (RedisConnectionError, RedisTimeout, BusyLoadingError, ReadOnlyError, OSError,
               RedisClusterException, ClusterError)
UNREACHABLE = "Valkey is unreachable right now; the widget will recover when it returns."
BUSY = ("Valkey is busy with a long-running script right now (the site stops a learner's script past its "
        "budget), so nothing was done: try again in a moment.")
OUT_OF_MEMORY = (
    "Valkey is at its memory limit right now, so nothing was written. A Reset still works there and "
    "frees memory: press Reset on a widget (or ask the instructor to reset the class), then try again."
)

# Valkey refusing writes for a while, said in words (503) rather than a 500:
# it cannot persist (MISCONF: its data directory stopped being writable, or a
# save failed). A script holding it (BUSY) is is_busy's, above.
REFUSING = {
    "MISCONF": ("Valkey cannot save its data right now (writing to its data directory failed), so it refuses "
                "every write and nothing was written; the operator must free or fix that folder. "
                "Try again later.", 30),
}


def problem(status: int, message: str, retry_after: int | None = None) -> JSONAnswer:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return JSONAnswer({"error": message}, status_code=status, headers=headers)


def is_out_of_memory(exc: BaseException | None) -> bool:
    """Valkey's OOM refusal, plain or out of a script (an `EmqError` whose cause is it)."""
    for _ in range(5):  # the failure and its causes, a few links deep
        if exc is None:
            return False
        text = str(exc)
        if isinstance(exc, OutOfMemoryError) or text.startswith("OOM ") or "OOM command not allowed" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def refusing(exc: BaseException | None) -> str | None:
    """The code (a key of REFUSING) of a Valkey refusing writes for a while, plain or out of a script."""
    for _ in range(5):  # the failure and its causes, a few links deep
        if exc is None:
            return None
        code = error_text(exc).split(" ", 1)[0] if isinstance(exc, Exception) else ""
        if code in REFUSING:
            return code
        exc = exc.__cause__ or exc.__context__
    return None


def is_fault(exc: BaseException) -> bool:
    """A fault of Valkey's (away, busy, out of memory or refusing writes) rather than a refusal or a bug."""
    return isinstance(exc, VALKEY_DOWN) or is_busy(exc) or is_out_of_memory(exc) or refusing(exc) is not None


def status_of(exc: Exception) -> tuple[int, str, int | None]:
    """A failure's status, sentence and Retry-After seconds (a bug of ours logged, never shown)."""
    if isinstance(exc, GradeRefused):
        return exc.status, exc.message, None
    if isinstance(exc, LookupError):
        return 404, str(exc).strip("'\""), None
    if isinstance(exc, Refused):  # a guard's, or a body's (BadBody)
        return exc.status, str(exc), 10 if exc.status in (429, 503) else None
    if isinstance(exc, NoSandbox):
        return 403, str(exc), None
    if isinstance(exc, (BadId, FlowShapeError, BadRoom, BadName)):
        return 400, str(exc), None
    if isinstance(exc, (widget_base.Refused, RoomsFull)):
        return 409, str(exc), None
    if isinstance(exc, Full):
        return 429 if isinstance(exc, AddressFull) else 503, str(exc), 60
    if is_busy(exc):
        return 503, BUSY, 1
    if isinstance(exc, ResponseError) and "WRONGTYPE" in str(exc):
        return 409, WRONG_TYPE, None
    if isinstance(exc, Busy):
        return 503, str(exc), 1
    if isinstance(exc, widget_base.ResetStillFull):
        return 503, str(exc), 30
    if is_out_of_memory(exc):
        log.warning("valkey is out of memory: answered 503")
        return 503, OUT_OF_MEMORY, 30
    if code := refusing(exc):
        log.warning("valkey answered %s: answered 503", code)
        return 503, *REFUSING[code]
    if isinstance(exc, EmqError):
        return 409, str(exc), None
    if isinstance(exc, VALKEY_DOWN):
        return 503, UNREACHABLE, 2
    if isinstance(exc, ClientDisconnect):
        # The visitor closed the tab mid-upload: no one is waiting for this answer.
        log.info("client went away before its request body arrived")
        return 400, "the request body did not arrive: the client disconnected", None
    log.exception("widget action failed", exc_info=exc)
    return 500, "the server failed on this action; it has been logged", None


def answer_error(exc: Exception) -> JSONAnswer:
    if isinstance(exc, GradeRefused):  # its body may name the line a script failed on
        return JSONAnswer(exc.as_json(), status_code=exc.status)
    return problem(*status_of(exc))


def answered(handler: Handler) -> Handler:
    """`handler` with every failure answered in words (`answer_error`), never a traceback."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a clear JSON answer
            return answer_error(exc)

    return endpoint
