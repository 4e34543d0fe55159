"""The outbox entry encoding, without Valkey: entries round-trip and malformed
ones are poison. The Pump on Valkey is in tests/integration/test_pump.py."""

from __future__ import annotations

from server.emq import pump

Q, MAIL = "orders", "mail"


async def test_entries_round_trip_and_malformed_ones_are_poison() -> None:
    entry = pump.OutboxEntry("completed", "JOBa", MAIL, "ok", "JOBp", Q, "fp")
    assert pump.decode_entry(pump.encode_entry(entry)) == entry
    good = pump.encode_entry(entry)
    bad = [
        "not json", "[1,2]", "{}", good.replace("completed", "exploded"),
        good.replace('"JOBa"', '"JOB:a"'), good.replace('"orders"', '"or{d}ers"'),
        good.replace('"ok"', "7"), b"\xff\xfe", "",
    ]
    for raw in bad:
        try:
            pump.decode_entry(raw)
        except pump.PoisonEntry:
            continue
        raise AssertionError(f"{raw!r} decoded")
