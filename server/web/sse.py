"""The stream's response: sse-starlette's, plus a clean end for a reader that stalls.

A browser tab that stops reading (a suspended laptop, a hostile client that
sends the GET and never reads) makes every send wait. sse-starlette gives up
on a send after `send_timeout` seconds, but the ASGI server then closes the
connection politely: it keeps the unsent bytes and the socket open until the
peer reads them, which a stalled peer never does.

So `StalledSafeResponse` does two things with the connection's transport
(found behind the ASGI `send`, see `transport_of`):

* at the start, it gives the socket and the transport small send buffers
  (`SEND_BUFFER`): a stream sends small events, and a reader that stops then
  stalls after tens of kilobytes instead of the kernel's four megabytes;
* when a send times out, it aborts the connection: SO_LINGER zero, then
  `abort()`, so the unsent bytes are dropped on both sides (the kernel sends
  a reset) instead of waiting for a reader that never comes. One log line
  says so; no traceback.

Without a transport to reach (another ASGI server), the socket is looked up by
its two addresses among the process's descriptors and shut down instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat
import struct
from typing import Any

import anyio
from sse_starlette.sse import EventSourceResponse, SendTimeoutError
from starlette.types import Message, Receive, Scope, Send

log = logging.getLogger("emqlab.stream")

SEND_BUFFER = 16 * 1024  # bytes asked of the kernel (Linux doubles it)
NO_LINGER = struct.pack("ii", 1, 0)


def transport_of(send: Any) -> Any | None:
    """The asyncio transport behind an ASGI `send`: uvicorn's is a bound method
    of an object holding `.transport`; middlewares wrap it in closures."""
    pending, looked = [send], 0
    while pending and looked < 32:
        fn = pending.pop()
        looked += 1
        transport = getattr(getattr(fn, "__self__", None), "transport", None)
        if transport is not None and hasattr(transport, "abort"):
            return transport
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if callable(value):
                pending.append(value)
    return None


def shut_by_address(scope: Scope) -> bool:
    """Shut down the connection of `scope` found among our descriptors (no flush)."""
    local, peer = scope.get("server"), scope.get("client")
    if not local or not peer:
        return False
    wanted = (tuple(local), tuple(peer))
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=os.dup(fd))  # a duplicate: ours to close
        except (OSError, ValueError):
            continue
        with sock:
            try:
                if (tuple(sock.getsockname()[:2]), tuple(sock.getpeername()[:2])) == wanted:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, NO_LINGER)
                    sock.shutdown(socket.SHUT_RDWR)
                    return True
            except OSError:
                continue
    return False


def small_buffers(transport: Any) -> None:
    """Bound what one stream may hold unsent: in the kernel and in the transport."""
    sock = transport.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        transport.set_write_buffer_limits(high=SEND_BUFFER)
    except (OSError, AttributeError, ValueError):
        pass


def abort(transport: Any | None, scope: Scope) -> bool:
    if transport is None:
        return shut_by_address(scope)
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, NO_LINGER)
    transport.abort()
    return True


class StalledSafeResponse(EventSourceResponse):
    """An EventSourceResponse whose stalled connections are reset, not kept."""

    stalled = False

    async def _send_with_timeout(self, send: Send, message: Message) -> None:
        # sse-starlette's one place where a send gives up (data and pings alike).
        try:
            await super()._send_with_timeout(send, message)
        except SendTimeoutError:
            self.stalled = True
            raise

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport = transport_of(send)
        if transport is not None:
            small_buffers(transport)
        finished = False

        async def tracked(message: Message) -> None:
            nonlocal finished
            if message.get("type") == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            await super().__call__(scope, receive, tracked)
        except* SendTimeoutError:
            pass  # the data send, the ping, or both at once (a group): handled below
        if finished or not self.stalled:
            return  # done, or the client went away by itself
        peer = scope.get("client") or ("?", 0)
        reset = abort(transport, scope)
        log.warning("stream to %s:%s stalled past the %s s send timeout: connection %s", peer[0], peer[1],
                    self.send_timeout, "reset, buffers freed" if reset else "closed")
        # The server now knows the peer is gone, so this last message returns at once.
        with anyio.move_on_after(1):
            await send({"type": "http.response.body", "body": b"", "more_body": False})


__all__ = ["StalledSafeResponse", "transport_of"]
