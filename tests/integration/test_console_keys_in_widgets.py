"""A key the console writes under a name no rule finds still belongs to its
widget: the widget's snapshot shows it and the widget's Reset removes it
(the console names it in the queue's index; nothing is found by SCAN)."""

from __future__ import annotations

from tests.support import LiveSite, sandbox_of


def test_a_console_key_shows_in_the_widget_and_goes_with_its_reset(site: LiveSite) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    answer = visitor.post("/api/console", json={"command": "SET emq:{fanin}:my-note hello"})
    assert answer.status_code == 200, answer.text
    name = f"emq:{{{sandbox}.fanin}}:my-note"
    keys = visitor.get("/api/widgets/fanin/state").json()["snapshot"]["queues"][0]["keys"]
    assert {"name": name, "type": "string", "value": "hello"} in [
        {k: key[k] for k in ("name", "type", "value")} for key in keys]
    assert visitor.post("/api/widgets/fanin/reset", json={}).status_code == 200
    assert not site.redis().exists(name)
