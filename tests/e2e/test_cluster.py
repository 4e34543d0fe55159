"""Flows Lab on a Valkey Cluster with two web workers, in Chromium.

Its own site: `python -m server.cli serve --cluster --workers 2` (a managed
3-primary cluster joined with valkey-cli, two uvicorn workers), stopped with
SIGINT at the end, leaving no valkey-server and no worker behind. The fan-in
and the outbox work as on one server; "Try it as one script" shows the
cluster's own CROSSSLOT refusal; the key panels name each slot's node; and a
click served by one worker reaches pages whose streams another worker serves.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from server.valkey.process import free_port
from tests.e2e.branch_helpers import press
from tests.e2e.pages import DIVES, WIDGETS, on_dive, region, settled_after, wait_until_live
from tests.support import Events, deps, pid_alive

ROOT = Path(__file__).resolve().parents[2]
CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        out = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(todo.pop())], capture_output=True, text=True, check=False
        )
        kids = [int(p) for p in out.stdout.split()]
        found += kids
        todo += kids
    return found


def running(pid: int) -> bool:
    """Alive and not a zombie (an exited child the init process has yet to reap)."""
    if not pid_alive(pid):
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class ClusterSite:
    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items()
               if k not in ("EMQLAB_VALKEY_URL", "EMQLAB_VALKEY_CLUSTER", "EMQLAB_DATA_DIR")}
        env.update(PYTHONPATH=str(ROOT), EMQLAB_RATE_LIMIT="100000")
        # a data directory of its own: never the repository's .emqlab/, which a second run would find in use
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--cluster", "--workers", "2", "--port", str(self.port),
             "--data-dir", str(data_dir)],
            env=env, cwd=str(ROOT), stdout=subprocess.PIPE, text=True,
        )
        self.lines: list[str] = []
        while self.proc.stdout is not None:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"serve --cluster exited early: {''.join(self.lines)}")
            self.lines.append(line)
            found = re.search(r"open (http://\S+?)/?$", line.strip())
            if found:
                self.url = found.group(1)
                break
        deadline = time.monotonic() + 40
        while True:
            try:
                if httpx.get(self.url + "/flows/cross-queue", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the site on the cluster never answered"
            time.sleep(0.2)

    def stop(self) -> list[int]:
        """SIGINT (Ctrl-C); returns what was running under serve just before."""
        before = descendants(self.proc.pid)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return before


@pytest.fixture(scope="module")
def cluster_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterSite]:
    site = ClusterSite(tmp_path_factory.mktemp("cluster-site"))
    try:
        yield site
    finally:
        before = site.stop()
        assert site.proc.returncode == 0, site.proc.returncode
        time.sleep(0.3)
        left = [p for p in before if running(p)]
        assert not left, f"left behind after Ctrl-C: {[command_of(p) for p in left]}"


def test_serve_started_three_primaries_and_two_workers(cluster_site: ClusterSite) -> None:
    assert "3-primary Valkey cluster" in "".join(cluster_site.lines)
    kids = [command_of(p) for p in descendants(cluster_site.proc.pid)]
    assert sum("valkey-server" in c for c in kids) == 3, kids
    assert sum("spawn_main" in c for c in kids) == 2, kids  # the two uvicorn workers


@pytest.fixture
def context(browser: Browser, cluster_site: ClusterSite) -> Iterator[BrowserContext]:
    ctx = browser.new_context(base_url=cluster_site.url)
    ctx.set_default_timeout(15_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


def widget(page: Page, name: str) -> Locator:
    page.goto(WIDGETS[name].dive)
    wait_until_live(page)
    return region(page, name)


def test_complete_child_on_the_fanin_counts_down_with_each_key_on_its_slots_node(page: Page) -> None:
    fanin = widget(page, "fanin")
    counter = fanin.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(fanin, "Complete child")
    expect(counter).to_have_text("2")
    expect(fanin.locator("table.keys caption").first).to_contain_text(
        re.compile(r"hash slot \d+ · node 127\.0\.0\.1:\d+")
    )


def test_outbox_complete_child_and_pump_tick_then_the_one_script_refusal(page: Page) -> None:
    outbox = widget(page, "outbox")
    counter = outbox.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(outbox, "Complete child")
    expect(counter).to_have_text("3")  # the completion waits in the child's outbox, on its own slot
    press(outbox, "Pump tick")
    expect(counter).to_have_text("2")
    # on a cluster the control shows; it sends the cross-queue add as ONE script
    one = outbox.get_by_role("button", name="Try it as one script", exact=True)
    expect(one).to_be_visible()
    press(outbox, "Try it as one script")
    expect(outbox.locator('[data-role="outcome"]')).to_contain_text(f"the cluster refused it with {CROSSSLOT}")
    expect(outbox.locator('[data-role="outcome"]')).to_contain_text("Nothing was written.")
    expect(counter).to_have_text("2")
    captions = outbox.locator("table.keys caption")
    expect(captions).to_have_count(len(WIDGETS["outbox"].widget.queue_parts))
    for i in range(captions.count()):
        expect(captions.nth(i)).to_contain_text(re.compile(r"· node 127\.0\.0\.1:\d+ ·"))


def test_every_widget_lands_and_answers_its_main_button_on_the_cluster(page: Page) -> None:
    for dive in DIVES:
        page.goto(dive)
        wait_until_live(page)
        for name in on_dive(dive):
            box = region(page, name)
            before = box.get_attribute("data-ver")
            box.locator("button[data-action].primary").click()
            settled_after(box, before)
            expect(box.locator('[data-role="status"]')).to_have_text("")
            expect(box.locator('[data-role="outcome"]')).to_be_visible()


def test_a_click_in_one_tab_reaches_the_other_tab(context: BrowserContext) -> None:
    a, b = context.new_page(), context.new_page()
    one, two = widget(a, "outbox"), widget(b, "outbox")
    a.bring_to_front()
    press(one, "Complete child")
    expect(two.locator('[data-role="outbox-mail"]')).to_contain_text("JOBmail1")
    press(one, "Pump tick")
    expect(two.locator('[data-role="dependencies"]')).to_have_text("2")  # painted by b's stream, not by a click
    expect(two).to_have_attribute("data-ver", one.get_attribute("data-ver") or "")


def serving_pid(port: int, client_port: int) -> int | None:
    """The worker process holding the server side of one TCP connection."""
    out = subprocess.run(
        ["ss", "-tnpH", "state", "established", f"( sport = :{port} and dport = :{client_port} )"],
        capture_output=True, text=True, check=False,
    ).stdout
    found = re.search(r"pid=(\d+)", out)
    return int(found.group(1)) if found else None


def test_every_worker_streams_a_change_made_through_any_worker(cluster_site: ClusterSite) -> None:
    """Streams held by BOTH workers receive the effect of one action."""
    with httpx.Client(base_url=cluster_site.url, timeout=10) as client:
        assert client.get("/flows/parent-and-children").status_code == 200
        assert client.get("/api/widgets/fanin/state").status_code == 200
        cookie = dict(client.cookies)
    streams, workers = [], set()
    try:
        for _ in range(16):
            c = httpx.Client(base_url=cluster_site.url, timeout=10, cookies=cookie)
            response = c.send(c.build_request("GET", "/api/stream", params={"widgets": "fanin"}), stream=True)
            events = Events(response)
            assert events.next()[0] == "status"  # the first status event: the stream is open
            stream = response.extensions["network_stream"]
            local_port = stream.get_extra_info("socket").getsockname()[1]
            pid = serving_pid(cluster_site.port, local_port)
            streams.append((c, response, events, pid))
            workers.add(pid)
            if len(streams) >= 4 and len(workers - {None}) >= 2:
                break
        assert len(workers - {None}) >= 2, f"the streams all landed on one worker: {workers}"
        with httpx.Client(base_url=cluster_site.url, timeout=10, cookies=cookie) as actor:
            assert actor.post("/api/widgets/fanin/reset").status_code == 200
            assert actor.post("/api/widgets/fanin/complete-child").status_code == 200
        for _, _, events, pid in streams:
            # the drawing after the child's completion; its effects log (the `effect` items before it) names the counter
            seen = events.until("widget", timeout=10, widget="fanin", where=lambda d: deps(d) == 2)
            logged = list(itertools.takewhile(lambda item: item[0] == "effect", reversed(seen[:-1])))
            got = any(data["key"].endswith(":dependencies") for _, data in logged)
            assert got, f"the stream served by worker {pid} missed the effect"
    finally:
        for c, response, _, _ in streams:
            response.close()
            c.close()
