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


async def test_an_entry_is_read_as_python_reads_json_and_what_cannot_be_sent_is_poison() -> None:
    good = pump.encode_entry(pump.OutboxEntry("completed", "JOBa", MAIL, "ok", "JOBp", Q, "fp"))
    as_before = [good[:-1] + ',"x":NaN}', good[:-1] + ',"x":-Infinity}', '{"kind":"exploded",' + good[1:]]
    assert all(pump.decode_entry(raw).child == "JOBa" for raw in as_before)
    # a 5000-digit number (past Python's int limit), a lone surrogate escape, a byte not UTF-8 (read
    # back with surrogateescape), nesting past the decoder's depth: poison, never an error of another kind
    for raw in [good[:-1] + ',"x":' + "9" * 5000 + "}", good.replace('"ok"', '"\\ud800"'),
                good.replace('"ok"', '"\udcff"'), good[:-1] + ',"x":' + "[" * 5000 + "]" * 5000 + "}"]:
        try:
            pump.decode_entry(raw)
        except pump.PoisonEntry:
            continue
        raise AssertionError(f"{raw[:60]!r} decoded")
