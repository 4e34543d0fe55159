"""The class page and the instructor's class controls.

    GET  /instructor/rooms/{code}                  the class page (live roster; ?confirm=reset asks first)
    GET  /instructor/rooms/{code}/roster.json      {"code", "mode", "learners": [...]}
    GET  /instructor/rooms/{code}/events           SSE: the roster each time it changes
    POST /instructor/rooms/{code}/mode             {mode: own|demo|together}
    POST /instructor/rooms/{code}/demo             {demo: true|false} (demo or own)
    POST /instructor/rooms/{code}/bring            {page: a dive's path}: open pages go there
    POST /instructor/rooms/{code}/reset-learners   {confirm: true}: every learner's sandbox
    POST /instructor/rooms/{code}/learners/{sandbox}/reset
    GET  /instructor/rooms/{code}/learners/{sandbox}/watch   the learner's page, read-only
    POST /instructor/watch/stop
    POST /instructor/rooms/{code}/join | close

Every one is the instructor's (instructor.guarded: 403 off or for a learner,
401 not signed in). A mode change or a close is a `room` event to every sandbox
a member's page may be listening on: pages reconnect, resolved afresh.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from server.live import events
from server.sandboxes import learners, lifecycle, rooms, roster
from server.sandboxes.sandbox import REGISTRY_KEY, SANDBOX_RE
from server.web import body, forms, guard
from server.web.answer import JSONAnswer
from server.web.state import course_of, respond
from server.web.views.instructor import ago, done, guarded, instructor_only
from server.web.views.instructor import render as render_instructor

ROSTER_EVERY = 0.5  # seconds between roster reads of one open class page
MODE_TEXT = {
    "own": "The class is back in own sandboxes: each of you acts in your own.",
    "demo": "Demo: you are watching the instructor's sandbox, read-only; the controls are disabled.",
    "together": "Together: the whole class shares one sandbox; every click shows on every page.",
}
CLOSED_TEXT = "The class was closed: you are back in your own sandbox."


async def the_room(request: Request) -> rooms.Room:
    code = rooms.normalize_code(request.path_params["code"])
    room = await rooms.get(request.app.state.conn, code)
    if room is None:
        raise guard.Refused(404, "no open room has that code")
    return room


def back(room: rooms.Room) -> str:
    return f"/instructor/rooms/{room.code}"


def rows(data: roster.Roster) -> list[dict[str, Any]]:
    now = time.time()
    return [{**row, "ago": ago(row["last_seen"], now) if row["last_seen"] else "—",
             "progress_text": roster.progress_words(row["progress"])} for row in data["learners"]]


async def page(request: Request) -> Response:
    async def run(request: Request) -> Response:
        room = await the_room(request)
        data = await roster.read(request.app.state.conn, room)
        ctx: dict[str, Any] = {
            "room": room, "learners": rows(data), "modes": rooms.MODE_WORDS,
            "dives": course_of(request).dives,
            "confirm": request.query_params.get("confirm") == "reset",
        }
        flash = request.app.state.flash_cookie.read(request)
        flash = flash if isinstance(flash, str) else None
        response = respond(request, "class.html", {
            "course": course_of(request), "error": None, "flash": flash, **ctx,
        })
        if flash is not None:
            request.app.state.flash_cookie.clear(response)
        return response

    if not guard.is_instructor(request) and request.app.state.settings.instructor_token and not guard.room_of(request):
        return render_instructor(request, 401)
    return await guarded(request, run)


@instructor_only
async def roster_json(request: Request) -> Response:
    room = await the_room(request)
    return JSONAnswer(roster.public(await roster.read(request.app.state.conn, room)))


@instructor_only
async def roster_events(request: Request) -> Response:
    room = await the_room(request)
    settings = request.app.state.settings
    return EventSourceResponse(
        follow(request, room), ping=settings.stream_ping, send_timeout=settings.stream_send_timeout,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def follow(request: Request, room: rooms.Room) -> AsyncIterator[dict[str, Any]]:
    """The roster as it changes: read every ROSTER_EVERY s, sent when it differs.

    Polling one pipeline per open class page keeps the learners' paths free of
    any extra write; the read is two round trips for a class of thirty."""
    conn = request.app.state.conn
    deadline = time.monotonic() + request.app.state.settings.stream_lifetime
    last = ""
    while time.monotonic() < deadline:
        current = await rooms.get(conn, room.code)
        if current is None:
            yield {"event": "closed", "data": json.dumps({"code": room.code}), "retry": 1000}
            return
        data = await roster.read(conn, current)
        encoded = json.dumps({**data, "learners": rows(data)}, sort_keys=True)
        if encoded != last:
            last = encoded
            yield {"event": "roster", "data": encoded, "retry": 1000}
        await asyncio.sleep(ROSTER_EVERY)


# -- changes -------------------------------------------------------------------------


async def announce(request: Request, room: rooms.Room, data: dict[str, Any]) -> None:
    """A `room` event to every page of the class."""
    conn = request.app.state.conn
    await events.publish(conn, "room", await rooms.audience(conn, room), {"code": room.code, **data})


async def switch(request: Request, room: rooms.Room, mode: str) -> Response:
    host = None
    if mode == "demo":
        try:
            host = guard.visitor_of(request)  # the instructor's own sandbox is the one shown
        except guard.NoSandbox:
            host = room.host or None
        if not host:
            raise guard.Refused(409, "open a page of the course in this browser first: the demo shows its sandbox")
    changed = await rooms.set_mode(request.app.state.conn, room.code, mode, host)
    assert changed is not None
    await announce(request, changed, {"action": "mode", "mode": mode, "reconnect": True, "text": MODE_TEXT[mode]})
    return done(request, f"Class {room.code}: {rooms.MODE_WORDS[mode]}.", {"room": room.code, "mode": mode},
                back=back(room))


@instructor_only
async def mode(request: Request) -> Response:
    fields = await forms.read_fields(request)
    room = await the_room(request)
    return await switch(request, room, rooms.clean_mode(fields.get("mode")))


@instructor_only
async def demo(request: Request) -> Response:
    fields = await forms.read_fields(request)
    room = await the_room(request)
    if "demo" not in fields:
        raise body.BadBody("'demo' is required: true (start the demo) or false (stop it)")
    return await switch(request, room, "demo" if forms.as_flag(fields["demo"], "demo") else "own")


@instructor_only
async def bring(request: Request) -> Response:
    fields = await forms.read_fields(request)
    room = await the_room(request)
    dives = {d.path: d for d in course_of(request).dives}
    wanted = fields.get("page")
    if not isinstance(wanted, str) or wanted not in dives:
        raise body.BadBody(f"'page' must be one of the course's dives: {', '.join(sorted(dives))}")
    title = dives[wanted].title
    await announce(request, room, {"action": "goto", "page": wanted,
                                   "text": f"Your instructor brings everyone to {title}."})
    return done(request, f"Everyone in class {room.code} was sent to {title}.", {"page": wanted},
                back=back(room))


@instructor_only
async def reset_learners(request: Request) -> Response:
    fields = await forms.read_fields(request)
    room = await the_room(request)
    if not forms.as_flag(fields.get("confirm", "no"), "confirm"):
        raise body.BadBody("'confirm' must be true: this resets every learner's sandbox")
    ids = await learners.learner_ids(request.app.state.conn, room.code)
    removed = await lifecycle.reset_sandboxes(request.app.state.conn, [*ids, room.sandbox])
    many = f"{len(ids)} learner{'' if len(ids) == 1 else 's'}"
    return done(request, f"Every learner of class {room.code} was reset ({many}, {removed} keys removed).",
                {"reset": len(ids), "removed": removed}, back=back(room))


async def learner_of(request: Request, room: rooms.Room) -> str:
    sandbox = request.path_params["sandbox"]
    if not SANDBOX_RE.match(sandbox) or sandbox not in await learners.learner_ids(request.app.state.conn, room.code):
        raise guard.Refused(404, f"class {room.code} has no such learner")
    return str(sandbox)


@instructor_only
async def reset_learner(request: Request) -> Response:
    room = await the_room(request)
    sandbox = await learner_of(request, room)
    conn = request.app.state.conn
    name = await learners.name_of(conn, sandbox)
    removed = await lifecycle.reset_sandboxes(conn, [sandbox])
    return done(request, f"{name or sandbox} was reset: {removed} keys removed.",
                {"reset": sandbox, "removed": removed}, back=back(room))


@instructor_only
async def watch(request: Request) -> Response:
    room = await the_room(request)
    sandbox = await learner_of(request, room)
    meta = await request.app.state.conn.hget(learners.meta_key(sandbox), "page")
    dives = {d.path for d in course_of(request).dives}
    target = meta if meta in dives else course_of(request).dives[0].path
    response = RedirectResponse(str(target), status_code=303)
    request.app.state.watch_cookie.attach(response, sandbox)
    return response


@instructor_only
async def stop_watching(request: Request) -> Response:
    response = done(request, "You stopped watching: your pages act in your own sandbox again.", {})
    request.app.state.watch_cookie.clear(response)
    return response


@instructor_only
async def join(request: Request) -> Response:
    room = await the_room(request)
    conn = request.app.state.conn
    visitor = guard.visitor_of(request)
    if room.host != visitor:
        await conn.hset(rooms.room_key(room.code), "host", visitor)
    response = done(request, f"You are in class {room.code} ({room.name}).", {"room": room.code}, back=back(room))
    request.app.state.room_cookie.attach(response, room.code)
    return response


@instructor_only
async def close(request: Request) -> Response:
    room = await the_room(request)
    conn = request.app.state.conn
    audience = await rooms.audience(conn, room)
    await rooms.close(conn, room.code)
    removed = await lifecycle.reset_sandboxes(conn, [room.sandbox])
    await conn.zrem(REGISTRY_KEY, room.sandbox)
    await events.publish(conn, "room", audience, {"code": room.code, "action": "closed", "reconnect": True,
                                                  "text": CLOSED_TEXT})
    return done(request, f"Class {room.code} was closed: {removed} keys removed.",
                {"room": room.code, "removed": removed})


def routes() -> list[Route]:
    base = "/instructor/rooms/{code}"
    return [
        Route(base, page, methods=["GET"]),
        Route(f"{base}/roster.json", roster_json, methods=["GET"]),
        Route(f"{base}/events", roster_events, methods=["GET"]),
        Route(f"{base}/mode", mode, methods=["POST"]),
        Route(f"{base}/demo", demo, methods=["POST"]),
        Route(f"{base}/bring", bring, methods=["POST"]),
        Route(f"{base}/reset-learners", reset_learners, methods=["POST"]),
        Route(base + "/learners/{sandbox}/reset", reset_learner, methods=["POST"]),
        Route(base + "/learners/{sandbox}/watch", watch, methods=["GET"]),
        Route("/instructor/watch/stop", stop_watching, methods=["POST"]),
        Route(f"{base}/join", join, methods=["POST"]),
        Route(f"{base}/close", close, methods=["POST"]),
    ]
