"""docs/PERFORMANCE.md from one run's results (bench/run.py measures them).

Layout (issues 12 and 29): the machine; one table of every figure with its
same-run baseline, the ratio, the target and met/missed; the learners the
machine holds, level by level; the round trips and commands of every widget
action; then notes on how each figure was measured, with this run's
details. Nothing here is written by hand between runs, so no figure in the
report is older than the run that wrote it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.markdown import table
from bench.report_learners import learner_rows, learners_section
from bench.report_notes import CLUSTER_HEADING, notes

TARGETS = {
    "actions": 0.3,             # x the one-EVALSHA endpoint (issue 29)
    "settled_p50_idle": 20.0,   # ms
    "settled_p99_idle": 60.0,   # ms
    "settled_p99_loaded": 100.0,  # ms, 100 other sandboxes at 100 actions/s in all
    "reset_ratio": 1.5,         # x, 5,000 idle sandboxes vs none
    "fanout_p99": 250.0,        # ms, 1,000 streams
    "fanout_rss": 150.0,        # MB
    "round_trips": 4,           # "Complete child"
    "commands": 8,              # "Complete child"
    "pages": 0.5,               # x the static file
    "footprint": 4096,          # bytes per widget scenario
}
CLUSTER_ROW = "Action throughput on a"  # the start of the cluster rows' label (spliced by --cluster-only)


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def ratio(figure: float, base: float) -> str:
    return f"{figure / base:.2f}×" if base else "—"


def throughput_rows(a: dict[str, Any]) -> list[list[str]]:
    site, base, r = a["site_mix"]["rps"], a["baseline"]["rps"], a["ratio"]
    return [[f"Action throughput, fan-in mix ({a['mix']}), req/s", f"{site:,.0f}",
             f"{base:,.0f} (one-EVALSHA endpoint)", f"{r:.3f}×", f"≥ {TARGETS['actions']}×",
             verdict(r >= TARGETS["actions"])]]


def paint_rows(pt: dict[str, Any]) -> list[list[str]]:
    rows = []
    for phase, label in (("idle", "idle"), ("loaded", "under load")):
        for pct in ("p50", "p99"):
            target = TARGETS.get(f"settled_{pct}_{phase}")
            site, bare = pt[phase]["site"]["settled_ms"][pct], pt[phase]["bare"]["settled_ms"][pct]
            rows.append([f"Click to settled {pct}, {label} (ms)", f"{site}", f"{bare} (bare page: POST, its stream)",
                         ratio(site, bare), f"≤ {target:.0f} ms" if target else "—",
                         verdict(site <= target) if target else "(reported)"])
    return rows


def reset_rows(reset: dict[str, Any] | None) -> list[list[str]]:
    label = f"Reset with {int((reset or {}).get('crowd', 5000)):,} idle sandboxes vs none"
    target = f"≤ {TARGETS['reset_ratio']}×"
    if not reset or "ratio" not in reset:
        why = (reset or {}).get("error", "not measured (bench/bench_reset.py is not there)")
        return [[label, why, "—", "—", target, "not measured"]]
    r = float(reset["ratio"])
    return [[label, brief(reset.get("with_idle")), f"{brief(reset.get('without'))} (no other sandbox)",
             f"{r:.2f}×", target, verdict(r <= TARGETS["reset_ratio"])]]


def brief(value: Any) -> str:
    """A timing as bench_reset gives it: a number, or a distribution shown as p50 / p99 ms."""
    if isinstance(value, dict) and "p99" in value:
        return f"p50 {value.get('p50', '—')} / p99 {value['p99']} ms"
    return "—" if value is None else str(value)


def fanout_rows(fo: dict[str, Any]) -> list[list[str]]:
    many, one = fo["many_streams"], fo["baseline_one_stream"]
    p99, base = many["to_snapshot_ms"]["p99"], one["to_snapshot_ms"]["p99"]
    rss = many["rss_mb"]
    return [
        [f"Fan-out broadcast p99, {many['clients']:,} streams (ms)", f"{p99}", f"{base} (1 stream)",
         ratio(p99, base), f"≤ {TARGETS['fanout_p99']:.0f} ms", verdict(p99 <= TARGETS["fanout_p99"])],
        [f"Site RSS, {many['clients']:,} streams (MB)", f"{rss['peak']}", f"{rss['idle']} (no stream)",
         ratio(rss["peak"], rss["idle"]), f"≤ {TARGETS['fanout_rss']:.0f} MB",
         verdict(rss["peak"] <= TARGETS["fanout_rss"])],
    ]


def command_rows(cc: dict[str, Any]) -> list[list[str]]:
    trips, commands = cc["round_trips"], cc["commands"]
    return [
        ["\"Complete child\" round trips to Valkey", str(trips), "1 (one-EVALSHA endpoint)", ratio(trips, 1),
         f"≤ {TARGETS['round_trips']}", verdict(trips <= TARGETS["round_trips"])],
        ["\"Complete child\" top-level commands", str(commands), "1 (one-EVALSHA endpoint)", ratio(commands, 1),
         f"≤ {TARGETS['commands']}", verdict(commands <= TARGETS["commands"])],
    ]


def pages_rows(pg: dict[str, Any]) -> list[list[str]]:
    return [["Dive page (req/s)", f"{pg['dive']['rps']:,.0f}", f"{pg['baseline_static']['rps']:,.0f} (static file)",
             f"{pg['ratio']}×", f"≥ {TARGETS['pages']}×", verdict(pg["ratio"] >= TARGETS["pages"])]]


def footprint_rows(fp: dict[str, Any]) -> list[list[str]]:
    dump = max(w["landed"]["dump_bytes"] for w in fp["widgets"].values())
    left = fp["after_expiry"]
    return [
        ["Valkey memory per widget scenario, worst (bytes)", f"{fp['max_landed_bytes']:,}", f"{dump:,} (DUMP size)",
         ratio(fp["max_landed_bytes"], dump), f"≤ {TARGETS['footprint']:,}",
         verdict(fp["max_landed_bytes"] <= TARGETS["footprint"])],
        ["Left after expiry (keys / bytes)", f"{left['keys']} / {left['bytes']}", "0 / 0", "—", "0",
         verdict(left["keys"] == 0 and left["bytes"] == 0)],
    ]


def non_2xx_row(r: dict[str, Any]) -> list[str]:
    """Every answer outside 2xx where none is expected (the learners' climb
    ends at its first failing level by design, and the fairness flood is
    meant to be refused: both are reported in their own sections)."""
    a, pg, pt, fair = (measured(r, key) or {} for key in ("actions", "pages", "paint", "fairness"))
    clusters = list((measured(r, "cluster") or {}).get("workers", {}).values())
    site_runs = [w for w in (a.get("site_mix"), pg.get("dive"), pg.get("dive_first_visit")) if w]
    site = sum(w["non_2xx"] for w in site_runs + [c["site_mix"] for c in clusters])
    site += pt.get("load", {}).get("non_2xx", 0)
    if fair:
        site += fair["unflooded"]["non_2xx"] + fair["flooded"]["non_2xx"]
    bases = [w for w in (a.get("baseline"), pg.get("baseline_static")) if w] + [c["baseline"] for c in clusters]
    base = sum(w["non_2xx"] for w in bases)
    return ["Non-2xx answers (wrk runs, the background load, the fairness learner)", str(site),
            f"{base} (baselines)", "—", "0", verdict(site == 0 and base == 0)]


def cluster_rows(c: dict[str, Any]) -> list[list[str]]:
    return [[f"{CLUSTER_ROW} {c['primaries']}-primary cluster, {n} worker{'s' if n != '1' else ''} (req/s)",
             f"{run['site_mix']['rps']:,.0f}", f"{run['baseline']['rps']:,.0f} (one EVALSHA, same cluster)",
             f"{run['ratio']:.3f}×", "—", "(reported)"] for n, run in c["workers"].items()]


def measured(r: dict[str, Any], key: str) -> dict[str, Any] | None:
    """A benchmark's results; None when it was not run or failed (its row says which)."""
    found = r.get(key)
    return None if not isinstance(found, dict) or "error" in found else found


# Each benchmark's rows, in the table's order: (results key, label when it failed, rows)
SECTIONS: tuple[tuple[str, str, Callable[[dict[str, Any]], list[list[str]]]], ...] = (
    ("actions", "Action throughput", throughput_rows),
    ("cluster", CLUSTER_ROW + " cluster", cluster_rows),
    ("paint", "Click to settled", paint_rows),
    ("fanout", "Fan-out and RSS", fanout_rows),
    ("commands", "\"Complete child\" round trips and commands", lambda c: command_rows(c["complete_child"])),
    ("pages", "Dive page", pages_rows),
    ("footprint", "Valkey memory per widget scenario", footprint_rows),
)


def failed_row(label: str, error: str) -> list[str]:
    return [label, f"not measured: {error}", "—", "—", "—", "**not measured**"]


def figure_rows(r: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    for key, label, build in SECTIONS:
        found = r.get(key)
        if isinstance(found, dict) and "error" in found:
            rows.append(failed_row(label, found["error"]))
        elif found:
            rows += build(found)
        if key == "paint":
            rows += reset_rows(r.get("reset"))
        if key == "commands":
            rows += learner_rows(r)
    return [*rows, non_2xx_row(r)]


def span(values: list[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)}–{max(values)}"


def commands_table(tours: dict[str, list[dict[str, Any]]]) -> str:
    """One row per widget action; a range where its tour reaches it in more than one state."""
    rows = []
    for widget, steps in tours.items():
        seen: dict[str, list[dict[str, Any]]] = {}
        for step in steps:
            seen.setdefault(step["action"], []).append(step)
        rows += [[widget, action, str(len(runs)), span([r["round_trips"] for r in runs]),
                  span([r["commands"] for r in runs])] for action, runs in seen.items()]
    return table(["widget", "action", "times in its tour", "round trips", "top-level commands"], rows)


def load_line(r: dict[str, Any]) -> str:
    """The machine's load average (1, 5, 15 min) as each benchmark started: other work shares these CPUs."""
    loads = r.get("load") or {}
    if not loads:
        return ""
    return ("Load average (1, 5, 15 minutes) as each benchmark started: "
            + "; ".join(f"{name} {value}" for name, value in loads.items()) + ".\n")


def render(r: dict[str, Any]) -> str:
    out = ["# Performance", "",
           "Regenerated by `make bench` (`python -m bench.run`): it starts its own valkey-server, the site and a "
           "baseline app, runs every benchmark under `bench/`, and rewrites this file. Every figure stands beside a "
           "baseline measured in the same run on the same machine, and the ratio between them. Tests never assert "
           "a time; `make test` only runs each benchmark for about a second."]
    if r["quick"]:
        out += ["", "> **This is a `--quick` run** (about a second per benchmark, small counts): it shows the "
                "harness works, its numbers are not the figures. Run `make bench` for those."]
    out += ["", "## Machine", "", table(["", ""], [[k, v] for k, v in r["machine"].items()]), "",
            load_line(r),
            "Every process — valkey-server, the site, the baseline app, wrk, the load generator, Chromium — runs "
            "on this one machine and shares its CPUs; their own CPU use is part of every figure.", "",
            "## Figures", "",
            table(["figure", "Flows Lab", "same-run baseline", "ratio", "target", ""], figure_rows(r)), "",
            f"Unhandled errors logged by the site during the whole run: {r.get('site_errors', 0)}.", "",
            *learners_section(r),
            "## Round trips and commands per action", "",
            "Counted on the wire (`bench/bench_commands.py`, `bench/wire.py`): the real app in-process on a real "
            "Valkey; every packet redis-py sends that names the acting sandbox is one round trip, the RESP "
            "arrays in it its top-level commands (a script's inner calls never cross the wire). Each widget's "
            "tour is walked from its Reset; an action its tour reaches more than once shows the range. The figures "
            "table's \"Complete child\" is the fan-in's first, right after Reset (it claims, then completes). "
            "Same-run baseline: the one-EVALSHA endpoint, 1 round trip and 1 command.", "",
            commands_table(r["commands"]["tours"]) if measured(r, "commands") else "Not measured in this run: "
            + str((r.get("commands") or {}).get("error", "")), "",
            notes(r)]
    return "\n".join(out) + "\n"


def next_heading(report: str, start: int) -> int:
    ends = [at for at in (report.find("\n### ", start), report.find("\n## ", start)) if at >= 0]
    return min(ends) if ends else len(report)


def splice_cluster(report: str, section: str, rows: list[list[str]] | None = None) -> str:
    """Put the cluster notes (and its rows of the figures table) into an
    existing report, replacing older ones (`python -m bench.run --cluster-only`)."""
    if rows:
        lines = [line for line in report.split("\n") if not line.startswith("| " + CLUSTER_ROW)]
        at = next((i for i, line in enumerate(lines) if line.startswith("| Action throughput, fan-in")), None)
        if at is not None:
            lines[at + 1:at + 1] = ["| " + " | ".join(row) + " |" for row in rows]
        report = "\n".join(lines)
    if CLUSTER_HEADING in report:
        start = report.index(CLUSTER_HEADING)
        return report[:start] + section.rstrip("\n") + "\n" + report[next_heading(report, start + 1):]
    anchor = "### Click to settled"
    if anchor in report:
        at = report.index(anchor)
        return report[:at] + section.rstrip("\n") + "\n\n" + report[at:]
    return report.rstrip("\n") + "\n\n" + section
