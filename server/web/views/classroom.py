"""A class: its page, its live stream, and the instructor's class controls (modes, bring, resets, Watch,
close); `routes` lists every URL of the class, its asking (`asking`), its results (`class_state`) and
the learner's room page (`room`) included.

A mode change or a close is a `room` event to every sandbox a member's page may listen on: the pages
reconnect, resolved afresh by the guards. The class page's stream sends the class whenever it changed:
at once on an answer's event, else on a read every `EVERY` seconds for what no event announces.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import msgspec
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from server.lifecycle import resets
from server.live import events
from server.live.streams import frame
from server.sandboxes import answers, closed_classes, keys, learners, presence, rooms, roster
from server.sandboxes.sandbox import SANDBOX_RE
from server.web import bodies, guards
from server.web.errors import FAULTS, JSONAnswer, dumps, is_fault
from server.web.services import services
from server.web.views.asking import announce, ask, askable, current, end, press, reveal, second_round
from server.web.views.class_box import answer, ask_state
from server.web.views.class_state import drawn, read_class, results, results_file, roster_rows, tours
from server.web.views.instructor import done, for_class, instructor_only, render
from server.web.views.room import join_room, leave_room
from server.web.views.room import page as room_page  # `page`: the name tests find every page by
from server.web.views.stream import sse
from server.widgets.flow import plural

EVERY = 1.0  # seconds between the class stream's reads when no event came
READ_WITHIN = 3.0  # seconds a read of the class may take before the page is told Valkey is away


class ModeBody(msgspec.Struct, forbid_unknown_fields=True):
    mode: str = ""


class DemoBody(msgspec.Struct, forbid_unknown_fields=True):
    demo: bool


class BringBody(msgspec.Struct, forbid_unknown_fields=True):
    page: str = ""


class ConfirmBody(msgspec.Struct, forbid_unknown_fields=True):
    confirm: bool = False


class Empty(msgspec.Struct, forbid_unknown_fields=True):
    pass


@for_class
async def page(request: Request, room: rooms.Room) -> Response:
    state = await read_class(request, room)
    projector = request.url.path.endswith("/projector")
    now = drawn(request, room, state, projector)
    return render(request, "class.html", {
        "room": room, "learners": roster_rows(state), "modes": rooms.MODE_WORDS,
        "answers": now.shown["answers"], "projector": projector, "drawn": now.digest,
        "askable": await askable(services(request).lab), "ask": room.ask,
        "asked": (await current(request, room))[0] if room.ask else None,
        "dives": services(request).course.dives, "confirm": request.query_params.get("confirm") == "reset",
    })


@for_class
async def follow(request: Request, room: rooms.Room) -> Response:
    """The class page's stream (and the projector's: `?view=projector`, no names)."""
    return sse(request, _class_events(request, room.code, request.query_params.get("view") == "projector"))


async def _class_events(request: Request, code: str, projector: bool) -> AsyncIterator[bytes]:
    conn, hub = services(request).conn, services(request).hub
    deadline = time.monotonic() + services(request).settings.stream_lifetime
    last = b""
    with hub.streams.open(answers.class_stream(code), ()) as sub:
        while time.monotonic() < deadline:
            try:
                async with asyncio.timeout(READ_WITHIN):
                    room = await rooms.get(conn, code)
                    state = None if room is None else await read_class(request, room)
                if room is None or state is None:
                    yield frame("closed", dumps({"code": code}))
                    return
                # the page fetches its HTML again only when `drawn` is not what it drew last
                now = drawn(request, room, state, projector)
                encoded = dumps({**now.shown, "learners": now.learners, "drawn": now.digest,
                                 "seen": {r["id"]: r["seen"] for r in now.learners}})
            except (*FAULTS, TimeoutError) as exc:  # mid-stream: Valkey's faults said in the frame, a bug ends it
                if not (isinstance(exc, TimeoutError) or is_fault(exc)):
                    raise
                encoded = dumps({"down": "Valkey is unreachable right now; the class page recovers when it returns."})
            if encoded != last:
                last = encoded
                yield frame("roster", encoded)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(EVERY):
                    await sub.queue.get()
                sub.drain()  # a burst of answers is one read


@for_class
async def roster_json(request: Request, room: rooms.Room) -> Response:
    """roster.json: exactly the documented fields."""
    rows = await roster.read(services(request).conn, room.code, tours(services(request).catalog))
    return JSONAnswer({"code": room.code, "mode": room.mode, "learners": [row.public() for row in rows]})


async def switch(request: Request, room: rooms.Room, mode: str) -> Response:
    host = None
    if mode == "demo":
        host = room.host or None
        with contextlib.suppress(guards.Refused):
            host = guards.visitor_of(request)  # the instructor's own sandbox is the one shown
        if not host:
            raise guards.Refused(409, "open a page of the course in this browser first: the demo shows its sandbox")
    conn = services(request).conn
    changed = await rooms.set_mode(conn, room.code, mode, host)
    assert changed is not None
    await conn.expire(rooms.room_key(room.code), services(request).settings.room_ttl)  # the class lives on
    await announce(request, changed, {"action": "mode", "mode": mode, "reconnect": True})
    return done(request, f"Class {room.code}: {rooms.MODE_WORDS[mode]}.", {"room": room.code, "mode": mode}, room=room)


@for_class
async def mode(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, ModeBody)
    return await switch(request, room, rooms.clean_mode(body.mode))


@for_class
async def demo(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, DemoBody)
    return await switch(request, room, "demo" if body.demo else "own")


@for_class
async def bring(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, BringBody)
    dives = {d.path: d for d in services(request).course.dives}
    if body.page not in dives:
        raise bodies.BadBody(400, f"'page' must be one of the course's dives: {', '.join(sorted(dives))}")
    title = dives[body.page].title
    await announce(request, room, {"action": "goto", "page": body.page,
                                   "text": f"Your instructor brought everyone to {title}."})
    return done(request, f"Everyone in class {room.code} was sent to {title}.", {"page": body.page}, room=room)


@for_class
async def reset_learners(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, ConfirmBody)
    if not body.confirm:
        raise bodies.BadBody(400, "'confirm' must be true: this resets every learner's sandbox")
    conn = services(request).conn
    ids = await learners.learner_ids(conn, room.code)
    names = {s: await learners.name_of(conn, s) for s in ids}
    report = await resets.reset_sandboxes(services(request).lab, [*ids, room.sandbox])
    return done(request, f"Every learner of class {room.code} was reset ({plural(len(ids), 'learner')}; "
                         f"{report.words(names)}).",
                {"reset": len([s for s in ids if s in report.reset]), "failed": report.failed}, room=room)


async def learner_of(request: Request, room: rooms.Room) -> str:
    sandbox = str(request.path_params["sandbox"])
    if not SANDBOX_RE.fullmatch(sandbox) or sandbox not in await learners.learner_ids(services(request).conn,
                                                                                      room.code):
        raise guards.Refused(404, f"class {room.code} has no such learner")
    return sandbox


@for_class
async def reset_learner(request: Request, room: rooms.Room) -> Response:
    await bodies.read_form(request, Empty)
    sandbox = await learner_of(request, room)
    name = await learners.name_of(services(request).conn, sandbox)
    failed = (await resets.reset_sandboxes(services(request).lab, [sandbox])).failed
    said = f"could not be reset: {failed[sandbox]}" if failed else "was reset."
    return done(request, f"{name or sandbox} {said}", {"reset": None if failed else sandbox, "failed": failed},
                room=room)


@for_class
async def watch(request: Request, room: rooms.Room) -> Response:
    sandbox = await learner_of(request, room)
    dives = [d.path for d in services(request).course.dives]
    seen = presence.page((await learners.records(services(request).conn, [sandbox]))[0])
    response = RedirectResponse(seen if seen is not None and seen in dives else dives[0], status_code=303)
    services(request).cookies.watch.attach(response, sandbox)
    return response


@instructor_only
async def stop_watching(request: Request) -> Response:
    response = done(request, "You stopped watching: your pages act in your own sandbox again.")
    services(request).cookies.watch.clear(response)
    return response


@for_class
async def join(request: Request, room: rooms.Room) -> Response:
    visitor = guards.visitor_of(request)
    if room.host != visitor:
        await services(request).conn.hset(rooms.room_key(room.code), "host", visitor)
    response = done(request, f"You are in class {room.code} ({room.name}).", {"room": room.code}, room=room)
    services(request).cookies.room.attach(response, room.code)
    return response


@for_class
async def close(request: Request, room: rooms.Room) -> Response:
    conn, days = services(request).conn, services(request).settings.results_days
    await closed_classes.keep_results(conn, room.code, room.name, *await results(request, room), days)
    audience = await rooms.audience(conn, room)
    await rooms.close(conn, room.code)
    report = await resets.reset_sandboxes(services(request).lab, [room.sandbox])
    await conn.zrem(keys.REGISTRY_KEY, room.sandbox)
    # each page draws its banner again (class_box.py: "The class was closed…")
    await events.publish(conn, "room", audience, {"code": room.code, "action": "closed", "reconnect": True})
    await answers.tell(conn, room.code, "closed")
    return done(request, f"Class {room.code} was closed; its results stay downloadable for {days} days.",
                {"room": room.code, "failed": report.failed})


def routes() -> list[BaseRoute]:
    base = "/instructor/rooms/{code}"
    return [
        Route(base, page, methods=["GET"]),
        Route(f"{base}/projector", page, methods=["GET"]),
        Route(f"{base}/roster.json", roster_json, methods=["GET"]),
        Route(f"{base}/mode", mode, methods=["POST"]),
        Route(f"{base}/demo", demo, methods=["POST"]),
        Route(f"{base}/bring", bring, methods=["POST"]),
        Route(f"{base}/reset-learners", reset_learners, methods=["POST"]),
        Route(base + "/learners/{sandbox}/reset", reset_learner, methods=["POST"]),
        Route(base + "/learners/{sandbox}/watch", watch, methods=["GET"]),
        Route("/instructor/watch/stop", stop_watching, methods=["POST"]),
        Route(f"{base}/join", join, methods=["POST"]),
        Route(f"{base}/close", close, methods=["POST"]),
        Route(f"{base}/events", follow, methods=["GET"]),
        Route(f"{base}/results.csv", results_file, methods=["GET"]),
        Route(f"{base}/answers.json", results_file, methods=["GET"]),
        Route(f"{base}/ask", ask, methods=["POST"]),
        Route(f"{base}/reveal", reveal, methods=["POST"]),
        Route(f"{base}/second-round", second_round, methods=["POST"]),
        Route(f"{base}/ask/end", end, methods=["POST"]),
        Route(f"{base}/press", press, methods=["POST"]),
        Route("/room", room_page, methods=["GET"]),
        Route("/room/join", join_room, methods=["POST"]),
        Route("/room/leave", leave_room, methods=["POST"]),
        Route("/room/ask", ask_state, methods=["GET"]),
        Route("/room/answer", answer, methods=["POST"]),
    ]
