"""On a Valkey that loads no module (a managed service: `EMQLAB_VALKEY_URL` to
a plain valkey-server), the console works: its lines run as the sandbox's own
ACL user, made without the module's commands, and confined as ever;
EMQ.COMPLETE answers Valkey's own "unknown command"; the native widget says
in words why its executor cannot run there. Real site, real Valkey."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from server.valkey.process import ValkeyProcess
from tests.support import LiveSite, running


@pytest.fixture(scope="module")
def plain() -> Iterator[LiveSite]:
    # no --loadmodule, and MODULE LOAD off (its default): the site cannot load it either
    with ValkeyProcess(load_module=False, home=None) as valkey, running(valkey.url) as site:
        yield site


def line(client: httpx.Client, command: str) -> dict[str, Any]:
    answer = client.post("/api/console", json={"command": command})
    assert answer.status_code == 200, (command, answer.text)
    body: dict[str, Any] = answer.json()
    return body


def said(body: dict[str, Any]) -> str:
    return str(body)


def test_the_console_runs_lines_as_the_sandboxs_own_user_on_a_valkey_without_the_module(plain: LiveSite) -> None:
    r = plain.redis()
    assert "emq" not in {m["name"] for m in r.execute_command("MODULE", "LIST")}  # (9.x lists its Lua engine)
    client = plain.visitor()
    wrote = line(client, "HSET emq:{fanin}:job:JOBmine state pending")
    assert "(integer) 1" in said(wrote)
    assert "pending" in said(line(client, "HGET emq:{fanin}:job:JOBmine state"))
    # the line ran as the sandbox's ACL user, which exists now and reaches only its own keys
    users = [str(u) for u in r.execute_command("ACL", "USERS")]
    mine = [u for u in users if u.startswith("sbx-")]
    assert len(mine) == 1
    rules = " ".join(str(part) for part in r.execute_command("ACL", "GETUSER", mine[0]))
    assert "emq.complete" not in rules.lower()
    sandbox = mine[0].removeprefix("sbx-")
    assert r.hget(f"emq:{{{sandbox}.fanin}}:job:JOBmine", "state") == "pending"


def test_emq_complete_from_the_console_answers_unknown_command_not_a_refusal_of_the_console(plain: LiveSite) -> None:
    client = plain.visitor()
    body = said(line(client, "EMQ.COMPLETE 2 emq:{native}:active emq:{native}:job:JOBx JOBx 1 emq:{native}:"))
    assert "unknown command" in body.lower() and "ACL users" not in body


def test_the_native_widget_says_in_words_that_no_emq_module_is_loaded(plain: LiveSite) -> None:
    client = plain.visitor("/flows/parent-and-children")
    state = client.get("/api/widgets/native/state")
    assert state.status_code == 200
    assert "no EMQ module loaded" in state.text and "native executor is absent" in state.text
    acted = client.post("/api/widgets/native/native", json={})
    assert acted.status_code == 200 and "no EMQ module" in acted.json()["outcome"]["text"]
