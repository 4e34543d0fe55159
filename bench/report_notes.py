"""The notes of docs/PERFORMANCE.md: how each figure was measured, with this
run's details (wrk runs, distributions, the load, the profile). Written from
the results of the run, never by hand, so none of it goes stale."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench import report_learners, servers
from bench.markdown import WRK_HEADER, profile_table, table, wrk_row

CLUSTER_HEADING = "### Cluster: action throughput with 1 and 2 workers"


def throughput(r: dict[str, Any]) -> list[str]:
    a = r["actions"]
    out = ["### Action throughput", "",
           f"wrk, {a['connections']} connections, 2 threads, {r['params']['seconds']} s per side, against "
           "`POST /api/widgets/fanin/<action>` with a sandbox cookie; `bench/wrk/actions.lua` writes the Host "
           f"header itself and walks {a['sandboxes']} sandboxes (cookies from first visits to the dive), never two "
           "requests in flight on one sandbox, each one step further along its walk per round: `reset`, then the "
           f"actions the fan-in's tour replays (`bench/mix.py`: {', '.join(a.get('walk', []))}). The answer "
           "carries the outcome, `ver` and progress, no snapshot. Baseline: "
           "`bench/baseline_app.py`, a Starlette endpoint running one registered script (EVALSHA: an INCR) on "
           "the same Valkey, served the same way, in the same run. The site runs with its rate limits off. "
           "Every answer is counted by status on both sides.", "",
           table(WRK_HEADER, [wrk_row("baseline: one EVALSHA", a["baseline"]), wrk_row(f"site: {a['mix']}",
                                                                                      a["site_mix"])]), ""]
    cpu = a.get("cpu_us_per_request") or {}
    if cpu.get("site") and cpu.get("baseline"):
        site, base = cpu["site"], cpu["baseline"]
        out += ["CPU per request, in µs, over the same wrk runs (valkey-server from INFO cpu, the servers from /proc): "
                f"Valkey {site.get('valkey', '—')} for the site's mix against {base.get('valkey', '—')} for one "
                f"EVALSHA; the site's process {site.get('site', '—')} against the baseline app's "
                f"{base.get('baseline', '—')}. (wrk's own CPU is not counted.)", ""]
    commands = (a.get("valkey_commands_per_request") or {}).get("site")
    if commands:
        out += ["Valkey's own time per action of the mix, by command (INFO commandstats over the same runs; a "
                "script's inner calls are counted both in it and as themselves):", "",
                table(["command", "calls per action", "µs per action"],
                      [[c["command"], str(c["calls"]), str(c["us"])] for c in commands]), ""]
    rounds = a.get("round_ratios") or []
    if len(rounds) > 1:
        out += [f"The two loads took turns in {len(rounds)} rounds of an equal share of that time each (baseline, then "
                "site), so a drift of the machine's speed falls on both sides alike; the figures above are over "
                "the whole time. Each round's own ratio: " + ", ".join(f"{x}×" for x in rounds) + ".", ""]
    prof = a.get("profile")
    if prof:
        out += [f"Where the site's time went during the mix (py-spy, {prof.get('samples', 0):,} samples):", "",
                profile_table(prof), ""]
    return out


def paint(r: dict[str, Any]) -> list[str]:
    pt, load = r["paint"], r["paint"]["load"]
    rows = []
    for phase, label in (("idle", "idle"), ("loaded", "under load")):
        for page, name in (("site", "fan-in widget"), ("bare", "bare page (baseline)")):
            for what, to in (("answer_ms", "answer"), ("painted_ms", "stream's paint"), ("settled_ms", "settled")):
                s = pt[phase][page][what]
                rows.append([label, name, to, str(s["samples"]), str(s["p50"]), str(s["p95"]), str(s["p99"]),
                             str(s["max"])])
    return ["### Click to settled", "",
            f"Chromium ({r['machine'].get('chromium', 'Chromium')}) on `{servers.DIVE}`, a fresh sandbox: in the "
            "page, `performance.now()` from `element.click()` on \"Complete child\" (a Reset after every third, not "
            "timed). The page's `fetch` is wrapped for the click, so the answer's `ver` and its arrival are seen; a "
            "MutationObserver on the widget notes every paint. *Answer*: the answer arrived. *Stream's paint*: the "
            "widget painted a snapshot whose `data-ver` is at least the answer's, with the expected "
            "`[data-role=\"dependencies\"]`: the stream's snapshot of the action, the only paint there is (it may "
            "come before the answer). *Settled*: the later of the two, the figure. Baseline: `/paint` of the "
            "baseline app, a bare page whose button POSTs `/act/<learner>` (one EVALSHA that INCRs and PUBLISHes) "
            "and paints what its bare SSE stream brings, timed by the same script, idle and under the same load.",
            "",
            f"Load (`bench/load.py`, its own process): {load.get('sandboxes', 0)} other sandboxes, each with its "
            f"page's stream open, walking the fan-in's tour at {load.get('target_rate', 0)} actions/s in all; "
            f"achieved {load.get('achieved_rate', 0)} actions/s, {load.get('non_2xx', 0)} non-2xx answers, "
            f"{load.get('errors', 0)} connection errors, {load.get('events', 0):,} stream events received.", "",
            table(["", "page", "to", "clicks", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows), ""]


def reset(r: dict[str, Any]) -> list[str]:
    found = r.get("reset")
    out = [f"### Reset with {int((found or {}).get('crowd', 5000)):,} idle sandboxes", ""]
    if not found:
        return [*out, "Not measured: `bench/bench_reset.py` is not in this tree.", ""]
    scalars = [[k, str(v)] for k, v in found.items() if not isinstance(v, dict)]
    out += ["`bench/bench_reset.py` (its docstring says how), this run:", "", table(["", ""], scalars), ""]
    alone, crowded, ratios = found.get("alone"), found.get("crowded"), found.get("ratios", {})
    if isinstance(alone, dict) and isinstance(crowded, dict):
        rows = [[kind, f"{alone[kind].get('p50_ms')} / {alone[kind].get('p99_ms')}",
                 f"{crowded[kind].get('p50_ms')} / {crowded[kind].get('p99_ms')}",
                 f"{ratios.get(kind, {}).get('p50', '—')}× / {ratios.get(kind, {}).get('p99', '—')}×"]
                for kind in alone if kind in crowded]
        out += [table(["reset", "no other sandbox p50 / p99 ms", "with the idle crowd p50 / p99 ms",
                       "ratio p50 / p99"], rows), ""]
    return out


def fanout(r: dict[str, Any]) -> list[str]:
    fo = r["fanout"]
    many, one = fo["many_streams"], fo["baseline_one_stream"]
    rows = []
    for label, res in (("1 stream (baseline)", one), (f"{many['clients']:,} streams", many)):
        s, e, rss = res["to_snapshot_ms"], res["to_first_effect_ms"], res["rss_mb"]
        rows.append([label, str(s["samples"]), str(s["p50"]), str(s["p99"]), str(s["max"]), str(e["p50"]),
                     str(e["p99"]), f"{rss['idle']} / {rss['streams_open']} / {rss['peak']}"])
    return ["### Fan-out", "",
            f"{many['clients']:,} concurrent SSE streams on one uvicorn worker (a fresh site process), all on one "
            f"sandbox, each the stream the dive's page opens (every widget it shows, each landed before: the "
            f"instructor's page was there first), opened in "
            f"{many['connect_seconds']} s ({many.get('without_first_snapshot', 0)} of them without their first "
            f"snapshot after 60 s, {many.get('said_valkey_down', 0)} told \"Valkey is down\" while opening). "
            f"For each of {many['actions']} \"Complete child\" actions: from sending the POST to each client "
            "receiving the snapshot with the new `:dependencies` "
            "(and its first `effect` event). Clients: one asyncio process on raw sockets (`bench/rawhttp.py`). "
            "Baseline: the same with one stream.", "",
            table(["", "deliveries", "snapshot p50 ms", "p99 ms", "max ms", "first effect p50 ms", "p99 ms",
                   "RSS MB idle / open / peak"], rows), ""]


def pages(r: dict[str, Any]) -> list[str]:
    pg = r["pages"]
    return ["### Pages", "",
            f"wrk, 50 connections, the dive `{pg['page']}` ({pg['page_bytes']:,} bytes) against `{pg['static']}` "
            "served by the same app (Starlette `StaticFiles`).", "",
            table(WRK_HEADER, [wrk_row("baseline: static file", pg["baseline_static"]),
                               wrk_row("dive, returning visitor (cookie)", pg["dive"]),
                               wrk_row("dive, first visit (new signed cookie)", pg["dive_first_visit"])]), ""]


def footprint(r: dict[str, Any]) -> list[str]:
    fp = r["footprint"]
    widgets = [[name, str(w["landed"]["keys"]), f"{w['landed']['bytes']:,}", f"{w['landed']['dump_bytes']:,}",
                str(w["after_actions"]["keys"]), f"{w['after_actions']['bytes']:,}"]
               for name, w in fp["widgets"].items()]
    left = fp["after_expiry"]
    return ["### Footprint", "",
            "Per widget, a fresh sandbox: its state read lands the scenario; every key of the sandbox priced with "
            "`MEMORY USAGE`, again after each of its actions ran once. Baseline: the same keys' `DUMP` size. Then "
            "`reaper.expire_idle(conn, catalog, 0)`.", "",
            table(["widget", "keys", "bytes (MEMORY USAGE)", "DUMP bytes", "keys after actions",
                   "bytes after actions"], widgets), "",
            f"After expiry: {fp['expired_sandboxes']} of {len(fp['widgets'])} sandboxes expired; {left['keys']} keys, "
            f"{left['bytes']} bytes left under them; {left['still_registered']} still in the registry.", ""]


def bulk(r: dict[str, Any]) -> list[str]:
    b = r["bulk"]
    singles = b["variants"].get("flows.add x N", {}).get("flows_per_second", 0) or 1
    return ["### Bulk flows (host library)", "",
            f"`bench/bench_bulk.py`: {b['flows']:,} flows × {b['children_per_flow']} children into a fresh queue, "
            "best round; baseline: one `flows.add` per flow. `add_bulk` adds one flow at a time on the new core; "
            "the reference row is the same flows' calls sent in one pipeline by the bench itself (what a "
            "pipelined bulk add in the host library would win).", "",
            table(["variant", "flows/s", "ratio to flows.add × N"],
                  [[k, f"{v['flows_per_second']:,.1f}", f"{v['flows_per_second'] / singles:.1f}×"]
                   for k, v in b["variants"].items()]), ""]


def render_cluster(c: dict[str, Any], seconds: float) -> str:
    """1 and 2 workers on a managed cluster, each beside the one-EVALSHA
    baseline on the same cluster with as many workers."""
    rows = []
    for n, run in c["workers"].items():
        label = f"{n} worker{'s' if n != '1' else ''}"
        rows += [wrk_row(f"baseline, {label}: one EVALSHA", run["baseline"]),
                 wrk_row(f"site, {label}: {c['mix']}", run["site_mix"])]
    ref = c.get("single_server_1_worker")
    if ref:
        rows += [wrk_row("reference: baseline on one valkey-server, 1 worker", ref["baseline"]),
                 wrk_row("reference: site on one valkey-server, 1 worker", ref["site_mix"])]
    errors = sum(run.get("site_errors", 0) for run in c["workers"].values())
    return "\n".join([
        CLUSTER_HEADING, "",
        f"`bench/bench_cluster.py`: a managed {c['primaries']}-primary Valkey Cluster, the site started as `emqlab "
        "serve --cluster --workers N` starts it (every widget talks through redis-py's `RedisCluster`), and the "
        f"throughput mix above: {c['connections']} connections, {seconds} s per run, {c['sandboxes']} sandboxes. "
        "Baseline: the one-EVALSHA app on the same cluster with as many workers, same run. Every process shares "
        "this machine's CPUs, so a second worker competes with the nodes and wrk for the same cores.", "",
        table(WRK_HEADER, rows), "",
        f"Two workers against one: {c['scaling_2_over_1']}× the actions per second. Unhandled errors logged by "
        f"the site: {errors}.", ""])


def cluster(r: dict[str, Any]) -> list[str]:
    return [render_cluster(r["cluster"], r["params"]["seconds"])]


# Each benchmark's notes, in order: (results key, heading when it failed, notes)
NOTES: tuple[tuple[str, str, Callable[[dict[str, Any]], list[str]]], ...] = (
    ("actions", "### Action throughput", throughput),
    ("cluster", CLUSTER_HEADING, cluster),
    ("paint", "### Click to settled", paint),
    ("reset", "### Reset with idle sandboxes", reset),
    ("fanout", "### Fan-out", fanout),
    ("learners", "### Learners this machine holds", report_learners.learners_notes),
    ("fairness", "### Fairness", report_learners.fairness_notes),
    ("grader", "### The exercise grader", report_learners.grader_notes),
    ("pages", "### Pages", pages),
    ("footprint", "### Footprint", footprint),
    ("bulk", "### Bulk flows (host library)", bulk),
)


def notes(r: dict[str, Any]) -> str:
    out = ["## Notes: how each figure was measured", ""]
    for key, heading, write in NOTES:
        found = r.get(key)
        if isinstance(found, dict) and "error" in found:
            out += [heading, "", f"Not measured in this run: {found['error']}", ""]
        elif found:
            out += write(r)
    out += report_learners.dropped_notes()
    return "\n".join(out)
