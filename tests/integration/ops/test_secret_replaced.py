"""A deleted or replaced cookie-signing secret is said in the log (real
`emqlab serve` processes on one data directory): a new secret signs every
visitor, class member and instructor out, so it never passes silently; a
restart with the same secret says nothing."""

from __future__ import annotations

from pathlib import Path

import httpx

from server.valkey.datadir import CHANGED
from tests.integration.ops.serving import Serve

MISSING = "was missing from a data directory a site has used"
ACTION = "/api/widgets/fanin/complete-child"


def visitor(site: Serve) -> httpx.Client:
    client = httpx.Client(base_url=site.url, timeout=10)
    assert client.get("/flows/parent-and-children").status_code == 200
    assert client.post(ACTION, json={}).status_code == 200
    return client


def act_again(site: Serve, client: httpx.Client) -> int:
    """The same browser (its cookies) acting on the site started again."""
    with httpx.Client(base_url=site.url, timeout=10, cookies=client.cookies) as again:
        return again.post(ACTION, json={}).status_code


def test_a_deleted_secret_file_is_logged_and_a_restart_with_the_same_secret_logs_nothing(tmp_path: Path) -> None:
    with Serve(tmp_path) as first:
        client = visitor(first)
    assert first.stop() == 0
    with Serve(tmp_path) as same:
        assert act_again(same, client) == 200
        said = same.said()
    assert CHANGED not in said and MISSING not in said
    (tmp_path / "data" / "secret").unlink()
    with Serve(tmp_path) as after:
        refused = act_again(after, client)
        said = after.said()
    assert refused == 403  # the old cookie no longer counts: what the log line warns of
    assert MISSING in said and said.count(CHANGED) == 1


def test_a_replaced_secret_file_is_logged_once_however_many_workers_start(tmp_path: Path) -> None:
    with Serve(tmp_path) as first:
        visitor(first)
    assert first.stop() == 0
    (tmp_path / "data" / "secret").write_text("another-secret-restored-from-a-backup\n")
    with Serve(tmp_path, "--workers", "2") as after:
        said = after.said()
    assert said.count(CHANGED) == 1 and MISSING not in said
