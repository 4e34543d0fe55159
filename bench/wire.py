"""Count what one widget action sends to Valkey: round trips and commands.

Round trips and commands do not drift with machine noise, so a test may
assert them (tests/integration/test_click_path.py) and the bench reports
them beside the timings. The count is taken on the wire: every
`send_packed_command` of redis-py's asyncio connections is one round trip,
and the RESP arrays in it are its top-level commands (a script's inner
`redis.call`s are not: they never cross the wire). Only what mentions the
acting sandbox is counted, so the hub, the reaper and other visitors'
traffic in the same process stay out of the figure.

    with WireCount(sandbox) as wire:
        client.post("/api/widgets/fanin/complete-child", json={})
    wire.round_trips, wire.commands, wire.names
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from redis.asyncio.connection import AbstractConnection

SENDERS: tuple[type[AbstractConnection], ...] = (AbstractConnection,)  # whose send_packed_command writes bytes


def parse(payload: bytes) -> list[list[bytes]]:
    """The RESP arrays of one packed payload, as lists of arguments."""
    commands, pos = [], 0
    while pos < len(payload):
        if payload[pos:pos + 1] != b"*":
            break  # not a command array (never sent by redis-py)
        end = payload.index(b"\r\n", pos)
        count, pos = int(payload[pos + 1:end]), end + 2
        args = []
        for _ in range(count):
            end = payload.index(b"\r\n", pos)
            size = int(payload[pos + 1:end])
            args.append(payload[end + 2:end + 2 + size])
            pos = end + 2 + size + 2
        commands.append(args)
    return commands


@dataclass
class WireCount:
    """Counts the round trips and commands that mention `marker`."""

    marker: str
    round_trips: int = 0
    commands: int = 0
    names: list[str] = field(default_factory=list)
    _originals: dict[type[AbstractConnection], Any] = field(default_factory=dict, repr=False)

    def __enter__(self) -> WireCount:
        self._originals = {cls: cls.__dict__["send_packed_command"] for cls in SENDERS}
        for cls, original in self._originals.items():
            cls.send_packed_command = self._counting(original)  # type: ignore[method-assign]
        return self

    def _counting(self, original: Any) -> Any:
        counter, marker = self, self.marker.encode()

        async def counted(conn: Any, command: Any, check_health: bool = True) -> None:
            payload = command if isinstance(command, bytes | bytearray) else b"".join(
                c if isinstance(c, bytes | bytearray) else str(c).encode() for c in command
            )
            if marker in payload:
                sent = parse(bytes(payload))
                counter.round_trips += 1
                counter.commands += len(sent)
                counter.names.extend(args[0].decode().upper() for args in sent if args)
            await original(conn, command, check_health)

        return counted

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        for cls, original in self._originals.items():
            cls.send_packed_command = original  # type: ignore[method-assign]
