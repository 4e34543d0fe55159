"""Error replies as the installed redis-py parses them, printed as valkey-cli prints them.

Each error is made for real on the session's valkey-server. Its raw line is
read off a plain socket (valkey-cli prints `(error) ` and exactly that line);
the same command through redis-py, with its C parser (hiredis) and with its
Python one, must come back through `reply.error_text` as that line. redis-py
8.2 changed how it splits a code it does not know off the message (the code
then printed twice); a relock that changes the split again fails here.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import redis
from redis._parsers import _HiredisParser, _RESP2Parser
from redis.exceptions import ResponseError

from server.valkey import reply
from server.valkey.process import ValkeyProcess

USER, PASSWORD = "replies-user", "replies-password-1"

# (what it shows, the command's words, whether it runs as the confined user)
ERRORS = [
    ("a script's own code", ("EVAL", "return redis.error_reply('EMQSTALE complete token mismatch')", "0"), False),
    ("a module's own code", ("EMQ.COMPLETE", "5", "a", "b", "c", "d", "e"), False),
    ("a wrong type", ("HGET", "replies:list", "f"), False),
    ("a denied key", ("GET", "other:key"), True),
    ("a plain error", ("NOSUCHCOMMAND", "x"), False),
    ("an unknown script", ("EVALSHA", "0" * 40, "0"), False),
    ("a bad argument", ("INCRBY", "replies:n", "abc"), False),
]


def _frame(words: tuple[str, ...]) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w.encode()), w.encode()) for w in words)


def raw_error(port: int, words: tuple[str, ...], user: bool) -> str:
    """The error line exactly as Valkey sends it (what valkey-cli prints after `(error) `)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        if user:
            sock.sendall(_frame(("AUTH", USER, PASSWORD)))
            assert sock.recv(100) == b"+OK\r\n"
        sock.sendall(_frame(words))
        line = sock.recv(4096)
    assert line.startswith(b"-"), line
    return line[1:].split(b"\r\n", 1)[0].decode()


@pytest.fixture(scope="module")
def server(valkey: ValkeyProcess) -> Iterator[ValkeyProcess]:
    admin = redis.Redis.from_url(valkey.url)
    admin.delete("replies:list")
    admin.rpush("replies:list", "x")
    admin.acl_setuser(USER, enabled=True, passwords=[f"+{PASSWORD}"], keys=["replies:*"], commands=["+@all"])
    try:
        yield valkey
    finally:
        admin.acl_deluser(USER)
        admin.delete("replies:list")
        admin.close()


@pytest.mark.parametrize("parser", [_HiredisParser, _RESP2Parser], ids=["hiredis", "python"])
@pytest.mark.parametrize(("shows", "words", "user"), ERRORS, ids=[shows for shows, _, _ in ERRORS])
def test_an_error_reply_reads_as_valkey_cli_prints_it_whichever_parser_split_it(
        server: ValkeyProcess, parser: type, shows: str, words: tuple[str, ...], user: bool) -> None:
    expected = raw_error(server.port, words, user)
    auth = {"username": USER, "password": PASSWORD} if user else {}
    client = redis.Redis(connection_pool=redis.ConnectionPool(port=server.port, parser_class=parser, **auth))
    try:
        with pytest.raises(ResponseError) as raised:
            client.execute_command(*words)
    finally:
        client.close()
    assert reply.error_text(raised.value) == expected
    assert reply.lines(raised.value) == [f"(error) {expected}"]


def test_out_of_memory_reads_as_valkey_cli_prints_it() -> None:
    with ValkeyProcess(load_module=False) as small:
        admin = redis.Redis(port=small.port)
        admin.config_set("maxmemory", 1)
        expected = raw_error(small.port, ("SET", "k", "v"), user=False)
        assert expected.startswith("OOM ")
        for parser in (_HiredisParser, _RESP2Parser):
            client = redis.Redis(connection_pool=redis.ConnectionPool(port=small.port, parser_class=parser))
            with pytest.raises(ResponseError) as raised:
                client.set("k", "v")
            client.close()
            assert reply.error_text(raised.value) == expected
        admin.close()


async def test_the_redis_py_behaviours_the_site_relies_on_hold_in_the_installed_library(
        server: ValkeyProcess) -> None:
    import redis.asyncio as aioredis

    # Since 8.2 a client gives up on a reply after 5 s unless told otherwise (it waited
    # for ever before). The site's clients that may wait longer say so (the pool of
    # server/valkey/client.py; the stream reads on a connection of its own, live/hub.py).
    assert aioredis.Redis(port=server.port).connection_pool.connection_kwargs.get("socket_timeout") == 5
    # driver_info=None (server/valkey/client.py): a new connection sends no CLIENT SETINFO,
    # one round trip fewer, so the server knows no library name for it.
    client = aioredis.Redis(port=server.port, decode_responses=True, driver_info=None)
    try:
        info = await client.client_info()
        assert info.get("lib-name", "") == ""
    finally:
        await client.aclose()
    # An error's code and message as redis-py splits them: the start of error_text.
    assert hasattr(ResponseError("x", status_code="X"), "status_code")
