"""A class of thirty: N simulated learners in one class, each acting about once
a second in their own sandbox, while the instructor's class page is open.

Each learner opens a dive (a sandbox cookie), joins the class by code and
name, keeps the page's live stream open (so the roster shows them online) and
then presses the fan-in's buttons: "Complete child" until the counter reaches
zero, then "Reset", with a random pause around one second between actions.
The class page is the roster stream `/instructor/rooms/<CODE>/events` (the
instructor's Bearer token). Measured:

- roster update: from the moment a learner's action is sent to the first
  roster event in which that learner's `last_seen` has reached it (p50, p99,
  max), i.e. how long the instructor waits to see an action;
- actions: latency and answers by status;
- collisions: a learner whose fan-in ever shows a counter their own actions
  did not produce, or whose queue is another learner's (must be 0).

    python -m bench.bench_class [--learners 30] [--seconds 20] [--write docs/PERFORMANCE.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import httpx

from bench import servers
from bench.stats import distribution
from server.sandboxes.sandbox import COOKIE
from server.valkey.process import ValkeyProcess

TOKEN = "bench-instructor-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
HEADING = "## Classes: thirty learners and the class page"


class Learner:
    def __init__(self, index: int, client: httpx.AsyncClient) -> None:
        self.name = f"Learner {index + 1}"
        self.client = client
        self.sent: list[float] = []  # wall-clock send time of every action, in order
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.expected = 3  # the fan-in lands three children
        self.collisions = 0
        self.queue = ""

    async def act(self) -> None:
        slug = "reset" if self.expected == 0 else "complete-child"
        self.sent.append(time.time())
        started = time.monotonic()
        answer = await self.client.post(f"/api/widgets/fanin/{slug}", json={},
                                        headers={"Referer": str(self.client.base_url) + servers.DIVE})
        self.latencies.append(time.monotonic() - started)
        self.statuses[answer.status_code] = self.statuses.get(answer.status_code, 0) + 1
        if answer.status_code != 200:
            return
        self.expected = 3 if slug == "reset" else self.expected - 1
        # the answer carries no snapshot (every page paints the stream's): a
        # collision shows in the outcome, or in the keys read at the end
        if slug == "complete-child" and not answer.json()["outcome"]["text"].startswith("Completed"):
            self.collisions += 1


async def stream(client: httpx.AsyncClient, path: str, on_event: Any, stop: asyncio.Event,
                 headers: dict[str, str] | None = None) -> None:
    """Read an SSE stream until `stop`, handing (event, data, arrival) on."""
    async with client.stream("GET", path, headers=headers, timeout=None) as response:
        event = ""
        async for line in response.aiter_lines():
            if stop.is_set():
                return
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                on_event(event, line.split(":", 1)[1], time.time())


async def prepare(url: str, count: int) -> tuple[str, list[Learner]]:
    instructor = httpx.AsyncClient(base_url=url, headers=BEARER, timeout=20)
    answer = await instructor.post("/instructor/rooms", json={"name": "Bench class"})
    answer.raise_for_status()
    code = answer.json()["room"]["code"]
    await instructor.aclose()
    learners = []
    for index in range(count):
        client = httpx.AsyncClient(base_url=url, timeout=20)
        (await client.get(servers.DIVE)).raise_for_status()
        learner = Learner(index, client)
        (await client.post("/room/join", json={"code": code, "name": learner.name})).raise_for_status()
        (await client.get("/api/widgets/fanin/state")).raise_for_status()
        # the snapshot shows keys without the sandbox (every learner's reads "fanin"):
        # whose queue it is, is the sandbox the learner's cookie names
        learner.queue = servers.sandbox_of(url, client.cookies[COOKIE])
        learners.append(learner)
    return code, learners


def roster_delays(learners: list[Learner], rosters: list[tuple[float, dict[str, Any]]]) -> list[float]:
    """For every action: the first roster (by arrival) showing it, minus its send time."""
    delays = []
    for learner in learners:
        seen = [(at, next((r["last_seen"] or 0 for r in data["learners"] if r["name"] == learner.name), 0))
                for at, data in rosters]
        for sent in learner.sent:
            arrival = next((at for at, last in seen if last >= sent - 0.002 and at >= sent), None)
            if arrival is not None:
                delays.append(arrival - sent)
    return delays


async def drive(url: str, count: int, seconds: float) -> dict[str, Any]:
    code, learners = await prepare(url, count)
    stop = asyncio.Event()
    rosters: list[tuple[float, dict[str, Any]]] = []
    watcher = httpx.AsyncClient(base_url=url, timeout=None)

    def on_roster(event: str, data: str, at: float) -> None:
        if event == "roster":
            rosters.append((at, json.loads(data)))

    tasks = [asyncio.create_task(stream(watcher, f"/instructor/rooms/{code}/events", on_roster, stop, BEARER))]
    tasks += [asyncio.create_task(stream(who.client, "/api/stream?widgets=fanin", lambda *a: None, stop))
              for who in learners]
    await asyncio.sleep(1.0)  # every stream open: the learners show online

    async def run(learner: Learner) -> None:
        await asyncio.sleep(random.uniform(0, 1))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await learner.act()
            await asyncio.sleep(random.uniform(0.8, 1.2))

    await asyncio.gather(*(run(who) for who in learners))
    await asyncio.sleep(1.5)  # the roster catches up with the last actions
    online = sum(1 for r in (rosters[-1][1]["learners"] if rosters else []) if r["online"])
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for learner in learners:
        final = (await learner.client.get("/api/widgets/fanin/state")).json()["snapshot"]
        if final["picture"]["parent"]["dependencies"] != learner.expected:
            learner.collisions += 1
        await learner.client.aclose()
    await watcher.aclose()
    statuses: dict[str, int] = {}
    for learner in learners:
        for status, n in learner.statuses.items():
            statuses[str(status)] = statuses.get(str(status), 0) + n
    delays = roster_delays(learners, rosters)
    actions = sum(len(who.sent) for who in learners)
    return {
        "learners": count, "seconds": seconds, "actions": actions, "answers": statuses,
        "actions_per_second": round(actions / seconds, 1),
        "action_ms": distribution([x for who in learners for x in who.latencies], 1000),
        "roster_update_ms": distribution(delays, 1000), "actions_seen_on_roster": len(delays),
        "roster_events": len(rosters), "online_at_end": online,
        "collisions": sum(who.collisions for who in learners),
        "distinct_queues": len({who.queue for who in learners}),
    }


def run(learners: int = 30, seconds: float = 20.0) -> dict[str, Any]:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    valkey = ValkeyProcess()
    valkey.start()
    try:
        with servers.serve_site(valkey.url, EMQLAB_INSTRUCTOR_TOKEN=TOKEN) as site:
            result = asyncio.run(drive(site.url, learners, seconds))
            result["tracebacks"] = site.tracebacks()
            result["load_average"] = load
            return result
    finally:
        valkey.stop()


def render(result: dict[str, Any]) -> str:
    r, a = result["roster_update_ms"], result["action_ms"]
    return "\n".join([
        HEADING,
        "",
        f"`bench/bench_class.py`: {result['learners']} simulated learners join one class by code and name, each "
        "keeps a dive's live stream open and presses the fan-in's buttons in their own sandbox (Complete child "
        "until the counter is 0, then Reset) about once a second, for "
        f"{result['seconds']:g} s, while the class page's roster stream is open (one site worker, one "
        "valkey-server, every client on this machine). Roster update: from an action's send to the first roster "
        "event whose `last_seen` for that learner has reached it; the class page reads the roster from Valkey "
        "every 0.5 s, so an action waits up to half a second for the next read by design.",
        "",
        "| figure | p50 ms | p99 ms | max ms | samples |",
        "|---|---|---|---|---|",
        f"| roster update (action → class page) | {r['p50']} | {r['p99']} | {r['max']} | {r['samples']} |",
        f"| learner action (complete-child / reset) | {a['p50']} | {a['p99']} | {a['max']} | {a['samples']} |",
        "",
        f"Actions: {result['actions']} ({result['actions_per_second']}/s), answers "
        f"{', '.join(f'{k}: {v}' for k, v in sorted(result['answers'].items()))}; roster events received: "
        f"{result['roster_events']}; online at the end: {result['online_at_end']} of {result['learners']}. "
        f"**Collisions: {result['collisions']}** (a fan-in showing a counter its own learner's actions did not "
        f"produce); distinct fan-in queues: {result['distinct_queues']} of {result['learners']}. "
        f"Unhandled errors logged by the site: {result['tracebacks']}. Load average at the start: "
        f"{result.get('load_average', '?')} on this 2-CPU machine shared with other work: under such load both "
        "figures are mostly the wait for a CPU (the roster delay includes the action's own time to reach the "
        "server's activity record).",
        "",
    ])


def splice(report: str, section: str) -> str:
    """Put the section into an existing report, replacing an older one (the rest is kept)."""
    if HEADING in report:
        start = report.index(HEADING)
        end = report.find("\n## ", start + len(HEADING))
        return report[:start] + section.rstrip("\n") + "\n" + (report[end:] if end >= 0 else "")
    anchor = "## Notes on the targets"
    if anchor in report:
        at = report.index(anchor)
        return report[:at] + section.rstrip("\n") + "\n\n" + report[at:]
    return report.rstrip("\n") + "\n\n" + section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--write", metavar="REPORT", help="splice the section into this Markdown report")
    args = parser.parse_args(argv)
    result = run(args.learners, args.seconds)
    print(json.dumps(result, indent=2))
    if args.write:
        path = Path(args.write)
        path.write_text(splice(path.read_text() if path.exists() else "# Performance\n", render(result)))
    return 0 if result["collisions"] == 0 and result["tracebacks"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
