"""docs/PERFORMANCE.md from one run's results (bench/run.py measures them).

The machine; one table of every figure beside its same-run baseline, the
ratio, the target and met/missed; the learners the machine holds, level by
level; the round trips and commands of every widget action; then each
benchmark's details. How each was measured is its module's docstring, named
beside it. Nothing here is written by hand between runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench import bench_learners, bench_paint, bench_reset

R = dict[str, Any]  # one benchmark's results, as its run() gives them
Rows = list[list[str]]
LEARNERS_HEADING = "## Learners this machine holds"
WRK_HEADER = ["run", "req/s", "requests", "p50 ms", "p99 ms", "answers", "non-2xx", "socket errors"]


def table(header: list[str], rows: Rows) -> str:
    """The one table writer: a Markdown table."""
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
                      *("| " + " | ".join(str(c) for c in row) + " |" for row in rows)])


def figure(label: str, value: float | str, base: str, target: str = "—", met: bool | None = None,
           ratio: float | None = None, against: float | None = None) -> list[str]:
    """One row of the figures table; `ratio` given, or `value / against`."""
    if ratio is None and against and isinstance(value, int | float):
        ratio = value / against
    shown = f"{value:,}" if isinstance(value, int) else str(value)
    return [label, shown, base, "—" if ratio is None else f"{ratio:.2f}×", target,
            "(reported)" if met is None else ("met" if met else "**missed**")]


def wrk_row(label: str, w: R) -> list[str]:
    codes = ", ".join(f"{k}: {v}" for k, v in sorted(w["status_codes"].items())) or "—"
    errors = sum(w["errors"].values()) - w["errors"].get("status", 0)
    return [label, f"{w['rps']:,.1f}", f"{w['requests']:,}", str(w["latency_ms"]["p50"]),
            str(w["latency_ms"]["p99"]), codes, str(w["non_2xx"]), str(errors)]


def pair(d: R) -> str:
    return f"{d['p50']} / {d['p99']}"


def knee_text(side: R | None) -> str:
    """The last level that held: "≥ top" when every level held, "< first" when none did."""
    if not side or not side.get("levels"):
        return "not measured"
    if side["held_every_level"]:
        return f"≥ {side['top']:,}"
    return f"< {side['levels'][0]['learners']:,}" if side["knee"] == 0 else f"{side['knee']:,}"


# -- the figures table, benchmark by benchmark ------------------------------------------------

def actions(a: R) -> Rows:
    return [figure(f"Action throughput, fan-in mix ({a['mix']}), req/s", f"{a['site_mix']['rps']:,.0f}",
                   f"{a['baseline']['rps']:,.0f} (one-EVALSHA endpoint)", "≥ 0.3×", a["ratio"] >= 0.3, a["ratio"])]


def cluster(c: R) -> Rows:
    return [figure(f"Action throughput on a {c['primaries']}-primary cluster, {n} worker{'s' * (n != '1')} (req/s)",
                   f"{r['site_mix']['rps']:,.0f}", f"{r['baseline']['rps']:,.0f} (one EVALSHA, same cluster)",
                   ratio=r["ratio"]) for n, r in c["workers"].items()]


def pages(pg: R) -> Rows:
    return [figure("Dive page (req/s)", f"{pg['dive']['rps']:,.0f}",
                   f"{pg['baseline_static']['rps']:,.0f} (static file)", "≥ 0.5×", pg["ratio"] >= 0.5, pg["ratio"])]


def paint(pt: R) -> Rows:
    """Click to settled, idle and under load beside the bare page, and while others race beside none racing."""
    race = pt["race"]
    limits = {("idle", "p50"): 20.0, ("idle", "p99"): 60.0, ("loaded", "p99"): 100.0,
              ("race", "p99"): bench_paint.RACE_P99_MS}
    sides = [("idle", "idle", pt["idle"]["site"], pt["idle"]["bare"], "bare page: POST, its stream"),
             ("loaded", "under load", pt["loaded"]["site"], pt["loaded"]["bare"], "bare page: POST, its stream"),
             ("race", f"another learner while {race['racers']} race", race["racing"], race["none"],
              "the same learner, none racing")]
    rows = []
    for phase, label, site, base, why in sides:
        for p in ("p50", "p99"):
            value, against, limit = site["settled_ms"][p], base["settled_ms"][p], limits.get((phase, p))
            rows.append(figure(f"Click to settled {p}, {label} (ms)", value, f"{against} ({why})",
                               f"≤ {limit:.0f} ms" if limit else "—", None if limit is None else value <= limit,
                               against=against))
    return rows


def reset(r: R) -> Rows:
    w, wo = r["with_idle"], r["without"]
    return [figure(f"Reset with {r['crowd']:,} idle sandboxes vs none", f"p50 {w['p50']} / p99 {w['p99']} ms",
                   f"p50 {wo['p50']} / p99 {wo['p99']} ms (no other sandbox)", f"≤ {bench_reset.TARGET}×",
                   r["ratio"] <= bench_reset.TARGET, r["ratio"])]


def fanout(fo: R) -> Rows:
    many, one = fo["many_streams"], fo["baseline_one_stream"]
    p99, rss = many["to_snapshot_ms"]["p99"], many["rss_mb"]
    return [figure(f"Fan-out broadcast p99, {many['clients']:,} streams (ms)", p99,
                   f"{one['to_snapshot_ms']['p99']} (1 stream)", "≤ 250 ms", p99 <= 250,
                   against=one["to_snapshot_ms"]["p99"]),
            figure(f"Site RSS, {many['clients']:,} streams (MB)", rss["peak"], f"{rss['idle']} (no stream)",
                   "≤ 150 MB", rss["peak"] <= 150, against=rss["idle"])]


def commands(c: R) -> Rows:
    trips, sent = c["complete_child"]["round_trips"], c["complete_child"]["commands"]
    return [figure("\"Complete child\" round trips to Valkey", trips, "1 (one-EVALSHA endpoint)", "≤ 4",
                   trips <= 4, trips),
            figure("\"Complete child\" top-level commands", sent, "1 (one-EVALSHA endpoint)", "≤ 8", sent <= 8, sent)]


def learners(lr: R) -> Rows:
    site, bare = lr.get("site") or {}, lr.get("bare") or {}
    rows = [figure(f"Learners this machine holds (probe click→frame p99 ≤ {lr['p99_limit_ms']:.0f} ms, no failed "
                   "answer)", knee_text(site), f"{knee_text(bare)} (bare EVALSHA + SSE)",
                   f"> {bench_learners.TARGET_LEARNERS:,}", site.get("knee", 0) > bench_learners.TARGET_LEARNERS,
                   site["knee"] / bare["knee"] if site.get("knee") and bare.get("knee") else None)]
    flat, bflat = site.get("cpu_flat"), bare.get("cpu_flat")
    if flat:
        base = f"{bflat['low_us']} → {bflat['high_us']} (bare, {bflat['low']:,} → {bflat['high']:,})" if bflat else "—"
        rows.append(figure(f"Valkey CPU per action net of idle, {flat['low']:,} → {flat['high']:,} learners (µs)",
                           f"{flat['low_us']} → {flat['high_us']}", base,
                           f"≤ {bench_learners.CPU_RATIO}× (independent of learners online)",
                           flat["ratio"] <= bench_learners.CPU_RATIO, flat["ratio"]))
    return rows


def fairness(f: R) -> Rows:
    quiet, loud = f["unflooded"]["answer_ms"], f["flooded"]["answer_ms"]
    return [figure("Fairness: another learner's action p50 while one floods reads and console writes (ms)",
                   loud["p50"], f"{quiet['p50']} (the same learner, no flood)", f"≤ {bench_learners.TARGET_RATIO:g}×",
                   f["ratio_p50"] <= bench_learners.TARGET_RATIO, f["ratio_p50"]),
            figure("Fairness: another learner's action p99 while one floods (ms)", loud["p99"],
                   f"{quiet['p99']} (the same learner, no flood)", ratio=f["ratio_p99"])]


def grader(g: R) -> Rows:
    rows = [figure(f"Grader: a run of \"{name}\" ({e['checks']} checks), p50 / p99 (ms)", pair(e["graded_ms"]),
                   f"{pair(e['direct_ms'])} (same scenarios, the course's script direct)",
                   ratio=e["graded_ms"]["p50"] / max(e["direct_ms"]["p50"], 1e-9))
            for name, e in g["exercises"].items()]
    return [*rows, figure(f"Grader: runs per second the pool holds ({g['graders']} graders)",
                          f"{g['runs_per_second']:,.0f}", "—")]


def lighthouse(lh: R) -> Rows:
    """One row per dive and form factor: the four scores against 95 / 100 / 100 / 100."""
    cats = bench_paint.CATEGORIES
    return [figure(f"Lighthouse {run['page']}, {run['form']} (perf / a11y / best practices / SEO)",
                   " / ".join(str(run[c]) for c in cats), f"CLS {run['cls']}", "≥ 95 / 100 / 100 / 100",
                   all(run[c] >= bench_paint.TARGETS[c] for c in cats)) for run in lh["runs"]]


def footprint(fp: R) -> Rows:
    dump = max(w["landed"]["dump_bytes"] for w in fp["widgets"].values())
    left = fp["after_expiry"]
    return [figure("Valkey memory per widget scenario, worst (bytes)", fp["max_landed_bytes"], f"{dump:,} (DUMP size)",
                   "≤ 4,096", fp["max_landed_bytes"] <= 4096, against=dump),
            figure("Left after expiry (keys / bytes)", f"{left['keys']} / {left['bytes']}", "0 / 0", "0",
                   left["keys"] == left["bytes"] == 0)]


def non_2xx(r: R) -> Rows:
    """Every answer outside 2xx where none is expected (the learners' climb and
    the fairness flood are judged in their own rows)."""
    a, pg, pt, c = (ok(r, k) or {} for k in ("actions", "pages", "paint", "cluster"))
    clusters = list(c.get("workers", {}).values())
    site = [a.get("site_mix"), pg.get("dive"), pg.get("dive_first_visit"), pt.get("load"), pt.get("race"),
            *(x["site_mix"] for x in clusters), *((ok(r, "fairness") or {}).get(k) for k in ("unflooded", "flooded"))]
    base = [a.get("baseline"), pg.get("baseline_static"), *(x["baseline"] for x in clusters)]
    count = sum(w.get("non_2xx", 0) for w in site if isinstance(w, dict))
    bases = sum(w["non_2xx"] for w in base if w)
    return [figure("Non-2xx answers (wrk runs, the background load, the racers, the fairness learner)", count,
                   f"{bases} (baselines)", "0", count == bases == 0)]


# (results key, label when it failed, rows), in the table's order
FIGURES: tuple[tuple[str, str, Callable[[R], Rows]], ...] = (
    ("actions", "Action throughput", actions), ("cluster", "Action throughput on a cluster", cluster),
    ("paint", "Click to settled", paint), ("reset", "Reset with 5,000 idle sandboxes vs none", reset),
    ("fanout", "Fan-out and RSS", fanout), ("commands", "\"Complete child\" round trips and commands", commands),
    ("learners", "Learners this machine holds", learners), ("fairness", "Fairness", fairness),
    ("grader", "Grader", grader), ("pages", "Dive page", pages), ("footprint", "Valkey memory", footprint),
    ("lighthouse", "Lighthouse on every dive", lighthouse))


def ok(r: R, key: str) -> R | None:
    found = r.get(key)
    return None if not isinstance(found, dict) or "error" in found else found


def figure_rows(r: R) -> Rows:
    """Every benchmark's rows; one that failed or did not run is a row that says so."""
    rows: Rows = []
    for key, label, build in FIGURES:
        if found := ok(r, key):
            rows += build(found)
        else:
            why = r[key]["error"] if isinstance(r.get(key), dict) else "not run"
            rows.append([label, f"not measured: {why}", "—", "—", "—", "**not measured**"])
    return rows + non_2xx(r)


def learners_section(lr: R) -> list[str]:
    sides = {kind: {lv["learners"]: lv for lv in (lr.get(kind) or {}).get("levels", [])} for kind in ("site", "bare")}
    rows = []
    for n in sorted(set(sides["site"]) | set(sides["bare"])):
        site, bare = sides["site"].get(n), sides["bare"].get(n)
        probe = [pair(x["probe"]["click_to_frame_ms"]) if x else "—" for x in (site, bare)]
        net = [str(x["valkey_net_us_per_action"]) if x else "—" for x in (site, bare)]
        held = ["—" if x is None else ("held" if x["held"] else "**no**") for x in (site, bare)]
        rows.append([f"{n:,}", *probe, str(site["actions_per_second"]) if site else "—", " / ".join(net),
                     str(site["server_cpu_us_per_action"]) if site else "—",
                     f"{site['valkey_cpu_share']:.0%} / {site['server_cpu_share']:.0%}" if site else "—",
                     " / ".join(held)])
    return [LEARNERS_HEADING, "",
            f"Simulated learners (`bench/bench_learners.py`: wrk holds their streams and sends their actions), each "
            f"with its page's stream open and one action every {lr['period_seconds']:g} s on average, at moments of "
            f"its own (each pause drawn at random, not in lockstep with the crowd), in its own sandbox "
            f"({lr['mix']}), raised level by level; at each level a probe learner acts every "
            f"{lr['probe_every_seconds']:g} s for {lr['window_seconds']:g} s and times each click to its frame. A "
            f"level holds while the probe's p99 stays within {lr['p99_limit_ms']:.0f} ms and nothing fails. The "
            f"site holds **{knee_text(lr.get('site'))}** learners; the bare one-EVALSHA endpoint with a bare SSE "
            f"stream, **{knee_text(lr.get('bare'))}** (same run, same Valkey, same load generator, "
            f"{lr['workers']} uvicorn workers on each side).", "",
            table(["learners online", "site: probe click→frame p50 / p99 ms", "bare: p50 / p99 ms", "site actions/s",
                   "Valkey CPU µs per action (net of idle), site / bare", "site process CPU µs per action",
                   "site: Valkey / site process, share of a core", "held: site / bare"], rows), ""]


def commands_table(tours: dict[str, list[R]]) -> str:
    """One row per widget action; a range where its tour reaches it in more than one state."""
    def span(values: list[int]) -> str:
        return str(values[0]) if min(values) == max(values) else f"{min(values)}–{max(values)}"

    rows = []
    for widget, steps in tours.items():
        seen: dict[str, list[R]] = {}
        for step in steps:
            seen.setdefault(step["action"], []).append(step)
        rows += [[widget, action, str(len(runs)), span([x["round_trips"] for x in runs]),
                  span([x["commands"] for x in runs])] for action, runs in seen.items()]
    return table(["widget", "action", "times in its tour", "round trips", "top-level commands"], rows)


def details(r: R) -> list[str]:
    """Each benchmark's own numbers behind its figures; how it measured is its module's docstring."""
    out = ["## Details", "", "How each benchmark measures is the docstring of its module, named in each heading.", ""]
    if a := ok(r, "actions"):
        out += ["### Action throughput (`bench/throughput.py`)", "", table(WRK_HEADER, [
            wrk_row("baseline: one EVALSHA", a["baseline"]), wrk_row(f"site: {a['mix']}", a["site_mix"])]), "",
            "Each round's own ratio: " + ", ".join(f"{x}×" for x in a["round_ratios"]) + ".", ""]
    if pt := ok(r, "paint"):
        rows = [[phase, page, to, *(str(d[k]) for k in ("samples", "p50", "p95", "p99", "max"))]
                for phase, pages_ in (("idle", pt["idle"]), ("under load", pt["loaded"]),
                                      ("none racing", {"site": pt["race"]["none"]}),
                                      (f"{pt['race']['racers']} racing", {"site": pt["race"]["racing"]}))
                for page, run in pages_.items()
                for to, d in (("answer", run["answer_ms"]), ("stream's paint", run["painted_ms"]),
                              ("settled", run["settled_ms"]))]
        load, race = pt["load"], pt["race"]
        out += ["### Click to settled (`bench/bench_paint.py`)", "",
                f"{r['machine'].get('chromium', 'Chromium')}. Load: {load['sandboxes']} sandboxes at "
                f"{load['target_rate']} actions/s asked, {load.get('achieved_rate')} achieved, "
                f"{load.get('non_2xx')} non-2xx, {load.get('errors')} socket errors. Racers: {race['racers']}, "
                f"{race.get('runs')} runs, {race.get('non_2xx')} non-2xx, {race.get('errors')} socket errors.", "",
                table(["", "page", "to", "clicks", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows), ""]
    if fo := ok(r, "fanout"):
        rows = [[label, str(x["to_snapshot_ms"]["samples"]), pair(x["to_snapshot_ms"]), pair(x["to_first_effect_ms"]),
                 f"{x['rss_mb']['idle']} / {x['rss_mb']['streams_open']} / {x['rss_mb']['peak']}",
                 f"{x['connect_seconds']} s, {x['without_first_snapshot']} without a first frame"]
                for label, x in (("1 stream", fo["baseline_one_stream"]), ("many", fo["many_streams"]))]
        out += ["### Fan-out (`bench/bench_fanout.py`)", "", table(
            ["streams", "deliveries", "frame p50 / p99 ms", "first effect p50 / p99 ms", "RSS MB idle / open / peak",
             "opened in"], rows), ""]
    if f := ok(r, "fairness"):
        rows = [[label, str(x["actions"]), pair(x["answer_ms"]), pair(x["click_to_frame_ms"]),
                 ", ".join(f"{k}: {v}" for k, v in sorted(x["statuses"].items()))]
                for label, x in (("no flood", f["unflooded"]), ("one learner flooding", f["flooded"]))]
        flood = "; ".join(f"{k}: {v['rate']} a second of {v['target_rate']} asked ({v['statuses']})"
                          for k, v in f["flood"].items())
        out += ["### Fairness (`bench/bench_learners.py`)", "", table(
            ["the other learner", "actions", "answer p50 / p99 ms", "click→frame p50 / p99 ms", "answers"], rows), "",
            f"The flood: {flood}.", ""]
    if g := ok(r, "grader"):
        out += ["### The exercise grader (`bench/bench_grader.py`)", "",
                f"Watchdog ({g['tries']} tries, ms p50 / p99): a runaway answered in {pair(g['runaway_answered_ms'])}"
                f"; a SIGKILLed grader back in the pool {pair(g['sigkilled_back_ms'])} after its answer.", ""]
    if pg := ok(r, "pages"):
        out += [f"### Pages (`bench/throughput.py`: `{pg['page']}`, {pg['page_bytes']:,} bytes)", "",
                table(WRK_HEADER, [wrk_row("baseline: static file", pg["baseline_static"]),
                                   wrk_row("dive, returning visitor", pg["dive"]),
                                   wrk_row("dive, first visit", pg["dive_first_visit"])]), ""]
    if lh := ok(r, "lighthouse"):
        out += [f"### Lighthouse (`bench/bench_paint.py`: {lh['version']})", "",
                table(["page", "form", "what cost points"], [[x["page"], x["form"], "; ".join(x["lost"]) or "—"]
                                                              for x in lh["runs"]]), ""]
    return out


def render(r: R) -> str:
    out = ["# Performance", "",
           "Regenerated by `make bench` (`python -m bench.run`): it starts its own valkey-server, the site and a "
           "baseline app, runs every benchmark under `bench/` (HTTP load by wrk, clicks in Chromium), and rewrites "
           "this file. Every figure stands beside a baseline measured in the same run on the same machine. Tests "
           "never assert a time; `make bench-smoke` only runs each benchmark for about a second."]
    if r["quick"]:
        out += ["", "> **This is a `--quick` run**: it shows the harness works; its numbers are not the figures."]
    loads = "; ".join(f"{k} {v}" for k, v in r.get("load", {}).items())
    out += ["", "## Machine", "", table(["", ""], [[k, v] for k, v in r["machine"].items()]), "",
            f"Load average (1, 5, 15 minutes) as each benchmark started: {loads}. Every process runs on this one "
            "machine and shares its CPUs.", "", "## Figures", "",
            table(["figure", "Flows Lab", "same-run baseline", "ratio", "target", ""], figure_rows(r)), "",
            f"Unhandled errors logged by the site during the whole run: {r.get('site_errors', 0)}.", ""]
    if lr := ok(r, "learners"):
        out += learners_section(lr)
    if c := ok(r, "commands"):
        out += ["## Round trips and commands per action", "",
                "Counted on the wire (`bench/bench_commands.py`, `bench/wire.py`): every packet redis-py sends that "
                "names the acting sandbox is one round trip, the RESP arrays in it its top-level commands. Each "
                "widget's tour is walked from its Reset; an action reached more than once shows the range.", "",
                commands_table(c["tours"]), ""]
    return "\n".join(out + details(r)) + "\n"
