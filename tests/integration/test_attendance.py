"""The worker's attendance (server/live/presence.py): a visitor with any
stream open is beaten for every few seconds, all visitors in one round trip;
the stream count in their meta follows their streams, and a visitor whose
last stream closed is no longer beaten for."""

from __future__ import annotations

import asyncio
import contextlib

from server.live import presence


async def beat_of(conn, visitor: str) -> int:  # type: ignore[no-untyped-def]
    return int(await conn.hget(presence.meta_key(visitor), "beat") or 0)


async def test_open_streams_are_counted_and_beaten_for_per_visitor_until_the_last_closes(conn) -> None:
    attendance = presence.Attendance(conn, every=0.05)
    await attendance.start()
    try:
        async with contextlib.AsyncExitStack() as ada_pages:
            for _ in range(3):
                await ada_pages.enter_async_context(attendance.present("sada0000001", "/flows/x"))
            async with attendance.present("sgrace000001", None):
                assert await conn.hget(presence.meta_key("sada0000001"), "streams") == "3"
                first = {v: await beat_of(conn, v) for v in ("sada0000001", "sgrace000001")}
                await asyncio.sleep(0.2)
                assert [await beat_of(conn, v) > first[v] for v in first] == [True, True]
                assert dict(attendance.open) == {"sada0000001": 3, "sgrace000001": 1}
        assert await conn.hget(presence.meta_key("sada0000001"), "streams") == "0"
        assert dict(attendance.open) == {}
        await asyncio.sleep(0.3)  # a beat already in flight when the last stream closed lands by now
        gone = await beat_of(conn, "sada0000001")
        await asyncio.sleep(0.15)
        assert await beat_of(conn, "sada0000001") == gone
    finally:
        await attendance.stop()


async def test_one_beat_writes_every_visitor_in_one_pipeline(conn) -> None:
    sent: list[int] = []
    original = conn.pipeline

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        pipe = original(*args, **kwargs)
        execute = pipe.execute

        async def execute_counted(*a, **k):  # type: ignore[no-untyped-def]
            sent.append(len(pipe.command_stack))
            return await execute(*a, **k)

        pipe.execute = execute_counted
        return pipe

    conn.pipeline = counted
    try:
        await presence.beat(conn, [f"s{i:010d}" for i in range(50)])
    finally:
        conn.pipeline = original
    assert sent == [50]
    assert [await beat_of(conn, f"s{i:010d}") > 0 for i in range(50)] == [True] * 50
