"""A widget's lock key holding what no lock writes (another type, or a string without a lease: an
operator's command or a fault put it there) would hold every action as Busy for ever. An action
meeting it is refused at once as the wrong-type fault it is (409, "Press Reset"); Reset, Start over
and the dive page's way out remove it, while a lock an action holds is still waited for, never broken.
The stray keys are set directly in Valkey: no learner reaches lab:{…}:lock through the console's ACL.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
import redis

from server.sandboxes import keys
from server.sandboxes.sandbox import queue_name
from server.widgets.turn import LOCK_WAIT_S
from tests.support import DIVE, LiveSite, sandbox_of

BROWSER = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}

STRAYS: dict[str, Callable[[redis.Redis, str], object]] = {
    "a hash": lambda r, name: r.hset(name, "held", "1"),
    "a list": lambda r, name: r.rpush(name, "oops"),
    "a string without a lease": lambda r, name: r.set(name, "oops"),
}


def lock_of(client: httpx.Client, widget: str = "fanin") -> str:
    return keys.lock_key(queue_name(sandbox_of(client), widget))


@pytest.mark.parametrize("stray", sorted(STRAYS))
def test_an_action_meeting_a_stray_lock_is_refused_at_once_as_a_wrong_type_and_reset_removes_it(
        site: LiveSite, stray: str) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200  # landed
    lock = lock_of(client)
    STRAYS[stray](site.redis(), lock)

    started = time.monotonic()
    action = client.post("/api/widgets/fanin/claim", json={})
    assert action.status_code == 409, action.text  # not Busy: waiting would never end
    assert time.monotonic() - started < LOCK_WAIT_S / 2
    assert "Press Reset" in action.json()["error"] and "still running" not in action.json()["error"]

    reset = client.post("/api/widgets/fanin/reset", json={})
    assert reset.status_code == 200, reset.text
    assert site.redis().exists(lock) == 0  # the Reset let go of its own lock: nothing stray is left
    assert client.post("/api/widgets/fanin/claim", json={}).status_code == 200


def pttl_calls(site: LiveSite) -> int:
    """PTTL calls Valkey has answered (INFO commandstats): the site's, as nothing else runs here."""
    return int(site.redis().info("commandstats").get("cmdstat_pttl", {}).get("calls", 0))


def test_reset_still_waits_for_a_lock_an_action_holds_rather_than_removing_it(site: LiveSite) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    lock = lock_of(client)
    site.redis().hset(lock, "held", "1")
    assert client.post("/api/widgets/fanin/claim", json={}).status_code == 409
    # what a lock writes (a token with a lease), as another action holds it: Reset queues behind it
    site.redis().delete(lock)
    site.redis().set(lock, "another-actions-token", px=1500)

    asked = pttl_calls(site)
    started = time.monotonic()
    reset = client.post("/api/widgets/fanin/reset", json={})
    assert reset.status_code == 200, reset.text
    assert time.monotonic() - started > 1.0  # it waited for the lease, it did not break the lock
    # the holder's lease is asked once, not at each of the wait's hundreds of polls
    assert pttl_calls(site) - asked == 1


def test_start_over_removes_a_stray_lock_so_the_widgets_actions_run_again(site: LiveSite) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    lock = lock_of(client)
    site.redis().rpush(lock, "oops")
    assert client.post("/api/widgets/fanin/claim", json={}).status_code == 409

    done = client.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303, done.text
    assert site.redis().exists(lock) == 0
    assert client.post("/api/widgets/fanin/claim", json={}).status_code == 200


def test_a_dive_whose_widget_cannot_land_past_a_stray_lock_says_so_and_start_over_lands_it(site: LiveSite) -> None:
    client = site.visitor("/")  # a sandbox whose widgets never showed
    lock = lock_of(client)
    site.redis().hset(lock, "held", "1")

    started = time.monotonic()
    page = client.get(DIVE, headers=BROWSER)
    assert page.status_code == 409, page.text[:300]
    assert time.monotonic() - started < LOCK_WAIT_S / 2
    assert "holds another type than the site keeps there" in page.text
    assert 'action="/progress/start-over"' in page.text

    done = client.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303, done.text
    again = client.get(DIVE, headers=BROWSER)
    assert again.status_code == 200 and 'data-widget="fanin"' in again.text
    assert site.redis().hget(keys.state_key(queue_name(sandbox_of(client), "fanin")), "landed") == "1"


LINE = {"command": "SET emq:{fanin}:job:JOBparent:dependencies 9"}  # a write, under the fanin widget's lock


@pytest.mark.parametrize("stray", sorted(STRAYS))
def test_a_console_write_meeting_a_stray_lock_is_refused_at_once_in_words_and_reset_lets_it_run(
        site: LiveSite, stray: str) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    lock = lock_of(client)
    STRAYS[stray](site.redis(), lock)
    dependencies = lock.replace("lab:", "emq:").replace(":lock", ":job:JOBparent:dependencies")
    before = site.redis().get(dependencies)

    started = time.monotonic()
    line = client.post("/api/console", json=LINE)
    assert line.status_code == 409, line.text  # not a Busy after the wait: waiting would never end
    assert time.monotonic() - started < LOCK_WAIT_S / 2
    assert "Press Reset" in line.json()["error"] and "nothing was written" in line.json()["error"]
    assert site.redis().get(dependencies) == before and site.redis().exists(lock) == 1

    assert client.post("/api/widgets/fanin/reset", json={}).status_code == 200
    again = client.post("/api/console", json=LINE)
    assert again.status_code == 200, again.text
    assert site.redis().get(dependencies) == "9" and site.redis().exists(lock) == 0


def test_a_console_write_waits_out_a_lock_a_crashed_action_left_with_its_lease(site: LiveSite) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    site.redis().set(lock_of(client), "a-crashed-actions-token", px=1500)

    started = time.monotonic()
    line = client.post("/api/console", json=LINE)
    assert line.status_code == 200, line.text
    assert time.monotonic() - started > 1.0  # it waited for the lease to end, it did not break the lock
